"""Which cells of a lesson draw, and whether each stored the figures it draws.

A learner opening a lesson on GitHub, in JupyterLab or in Colab reads its stored outputs first, figures
included. A figure is stored only when the kernel's matplotlib backend is the inline one: under a
non-interactive backend such as ``Agg`` (which CI exports) ``plt.show()`` draws nothing, silently.
``tools/execute_lessons.py`` forces the inline backend and refuses a run that stored too few figures;
``tests/test_notebooks_conventions.py`` checks the stored lessons with the same rule.

The rule: a code cell draws when it calls ``plt.show()`` (the guide ends every plotting cell with it); it
draws at least one figure per ``plt.show()`` in its code (a call inside a loop or a function counts once),
and must store at least that many PNG images.

    python tools/lesson_figures.py          # the lessons whose drawing cells stored too few figures
    python tools/lesson_figures.py 05 11    # the lessons whose file names start with these
"""

import argparse
import ast
import json
import sys
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def cell_source(cell):
    """A notebook cell's source as one string (nbformat stores a string or a list of lines)."""
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def figures_drawn(source):
    """How many figures a code cell draws at the least: its ``plt.show()`` calls. IPython's syntax
    (``%timeit``, ``!pip``) is turned into Python first, as the kernel does."""
    from IPython.core.inputtransformer2 import TransformerManager  # imported here: --help answers at once

    tree = ast.parse(TransformerManager().transform_cell(source))
    return sum(1 for node in ast.walk(tree)
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "show"
               and isinstance(node.func.value, ast.Name) and node.func.value.id == "plt")


def figures_stored(cell):
    """How many PNG images a code cell's stored outputs hold."""
    return sum("image/png" in output.get("data", {}) for output in cell.get("outputs", []))


def missing_figures(notebook):
    """``[(cell index, drawn, stored)]`` of each code cell of ``notebook`` (a dict, as read from JSON) that
    stored fewer figures than it draws; ``[]`` when every drawing cell stored its figures."""
    missing = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        drawn, stored = figures_drawn(cell_source(cell)), figures_stored(cell)
        if stored < drawn:
            missing.append((index, drawn, stored))
    return missing


def describe_missing(name, missing):
    """One line naming the cells of lesson ``name`` that stored too few figures."""
    cells = ", ".join(f"cell {index} draws {drawn}, stored {stored}" for index, drawn, stored in missing)
    return f"{name}: cells that draw stored too few figures ({cells})"


def main(argv=None):
    parser = argparse.ArgumentParser(description="List the lessons whose cells that draw stored too few figures "
                                                 "(exit 1 when there is one).")
    parser.add_argument("lessons", nargs="*", help="file-name prefixes of the lessons to check (default: all)")
    args = parser.parse_args(argv)
    paths = [p for p in sorted(NOTEBOOKS.glob("*.ipynb")) if not args.lessons or p.name.startswith(tuple(args.lessons))]
    missing = {p.name: missing_figures(json.loads(p.read_text(encoding="utf-8"))) for p in paths}
    for name, cells in missing.items():
        if cells:
            print(describe_missing(name, cells))
    if not any(missing.values()):
        print(f"every cell that draws stored its figures ({len(paths)} lessons)")
    return 1 if any(missing.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
