"""Re-execute the lessons in full mode from a fresh kernel, and record which library functions made their outputs.

    python tools/execute_lessons.py                 # every lesson, full mode, on the CPU (Python 3.12+)
    python tools/execute_lessons.py 05 07           # the lessons whose file names start with these
    python tools/execute_lessons.py --device auto   # on the GPU where there is one
    python tools/execute_lessons.py --check         # list the lessons whose outputs are older than the library

A lesson's stored outputs are what a learner reads first, so they must come from the library as it is.
While a lesson runs, every Python process it starts (its kernel, ``mpiexec``'s ranks, subprocesses,
DataLoader workers) records each ``dlscratch`` function and method that runs (``tools/lesson_trace/``).
The notebook's metadata then holds a fingerprint of each, and of the top-level code of each module
the lesson imported:

    metadata["dlscratch"]["library"] = {
        "dlscratch.nn.conv": {"<module>": "3f0c...", "Conv2d.__init__": "9a1b...", "Conv2d.forward": "cd34..."},
        ...
    }

A key is a top-level function (``im2col``) or a method (``Conv2d.forward``, ``Outer.Inner.method``) by its
qualified name; a lambda, comprehension or nested function belongs to the function or method around it
(``im2col.<locals>.<lambda>`` to ``im2col``). ``"<module>"`` is the module's code without the bodies of its
functions and methods: imports, constants, class bodies, decorators, signatures and default values, which
run on import. A private constant (``_SGD = ...`` at the top level, assigned once) that only function bodies
read, and that no other library file imports, is a unit of its own, recorded with the functions that ran and
read it: a CUDA kernel's source changes the lessons that ran its kernel, not every lesson that imported it.
A fingerprint hashes tokens, leaving out comments, docstrings and layout: the same on every
supported Python. ``tests/test_notebooks_conventions.py`` fails when the code of something a lesson ran
changed or no longer exists, until the lesson is executed again; changing a function the lesson never ran,
a docstring or a comment leaves the lesson current.

Executing needs Python 3.12+: ``sys.monitoring`` calls back once per code object, so the recording leaves the
timings the lessons store as they are, where Python 3.11's profile hook ran a small training loop 2.4 times
slower. ``--check`` runs on every supported Python. The full mode is what a learner gets: ``DLSCRATCH_QUICK``
is removed from the kernel's environment.

A learner reads the stored figures too, so the kernel draws with matplotlib's inline backend whatever
``MPLBACKEND`` says here (CI exports ``Agg``, under which ``plt.show()`` stores nothing), and a run in which
a cell that draws stored fewer figures than it draws is refused, the notebook left as it was
(``tools/lesson_figures.py``).
"""

import argparse
import ast
import hashlib
import io
import json
import os
import platform
import sys
import tempfile
import time
import tokenize
from collections import defaultdict
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lesson_figures import INLINE_BACKEND, describe_missing, missing_figures  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
TRACER = Path(__file__).resolve().parent / "lesson_trace"  # its sitecustomize.py records what runs
MODULE_CODE = "<module>"  # the unit of a module's code outside its functions' and methods' bodies
LAYOUT = ("NEWLINE", "INDENT", "DEDENT")  # kept without their text, which is layout


def code_fingerprints(path):
    """``{unit: fingerprint}`` of a Python file: ``"<module>"`` for its code without the bodies of its functions
    and methods, each top-level function and method, by qualified name, for its decorators, signature
    and body, and each private constant of its own (``private_constants``) for its assignment. A fingerprint
    is a short hash of tokens without comments, docstrings or layout."""
    path = Path(path)
    return _fingerprints(path.read_text(encoding="utf-8"), _imported_names(_library_folder(path)))


@cache
def _fingerprints(source, imported):
    """``code_fingerprints`` of a file's text, cached: the check of every lesson reads the same files."""
    tokens = defaultdict(list, {MODULE_CODE: []})
    for kind, text, units in _owned_tokens(source, imported):
        for unit in units:
            tokens[unit].append((kind, "" if kind in LAYOUT else text))
    return {unit: hashlib.sha256(json.dumps(kept).encode("utf-8")).hexdigest()[:16]
            for unit, kept in sorted(tokens.items())}


def _owned_tokens(source, imported):
    """``(kind, text, units)`` of each token that counts, with the units that hold it: a function's body is its
    function's, its header (decorators and signature) its function's and ``"<module>"``'s, a private
    constant's assignment its own, the rest ``"<module>"``'s. ``NEWLINE``, ``INDENT`` and ``DEDENT`` go where
    the token before them went."""
    spans = _unit_spans(source, imported)
    i, units = 0, (MODULE_CODE,)
    for kind, text, start in _code_tokens(source):
        if kind not in LAYOUT:
            while i < len(spans) and spans[i][1] <= start:
                i += 1
            units = spans[i][2] if i < len(spans) and spans[i][0] <= start else (MODULE_CODE,)
        yield kind, text, units


def _code_tokens(source):
    """``(kind, text, start)`` of each token but comments, docstrings, the line breaks of layout (``NL``)
    and the ``NEWLINE`` that ends a docstring: the same on every supported Python."""
    docstrings = _docstring_spans(source)
    after_docstring = False
    for kind, text, start, end in _tokens(source):
        if kind in ("COMMENT", "NL", "ENDMARKER"):
            continue
        if kind == "STRING" and any(first <= start and end <= last for first, last in docstrings):
            after_docstring = True
        elif kind == "NEWLINE" and after_docstring:
            after_docstring = False
        else:
            after_docstring = False
            yield kind, text, start


def _unit_spans(source, imported):
    """``[(start, end, units)]``, in order, of the header and of the body of each top-level function and
    method, and of each private constant's assignment, as ``(line, column)`` positions that count characters,
    as ``tokenize`` does."""
    lines = io.StringIO(source).readlines()
    tree = ast.parse(source)
    spans = []
    for name, node in top_level_functions(tree):
        first_line = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
        body = _char_position(lines, node.body[0].lineno, node.body[0].col_offset)
        end = _char_position(lines, node.end_lineno, node.end_col_offset)
        spans += [((first_line, 0), body, (MODULE_CODE, name)), (body, end, (name,))]
    for name, node in private_constants(tree, imported).items():
        spans.append(((node.lineno, 0), _char_position(lines, node.end_lineno, node.end_col_offset), (name,)))
    return sorted(spans)


def private_constants(tree, imported=frozenset()):
    """``{name: assignment}`` of the module's private constants that are units of their own: a name with one
    leading underscore, assigned once at the top level by a plain ``=``, that no code outside function bodies
    reads (the import would run it) and that no other library file imports (``imported``)."""
    assigned = defaultdict(list)
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            if isinstance(target, ast.Name):
                assigned[target.id].append(node)
    read_on_import = _names_read(tree, into_function_bodies=False)
    return {name: nodes[0] for name, nodes in assigned.items()
            if name.startswith("_") and not name.startswith("__") and len(nodes) == 1
            and isinstance(nodes[0], ast.Assign) and len(nodes[0].targets) == 1
            and name not in read_on_import and name not in imported}


def _names_read(node, into_function_bodies=True):
    """The names that code under ``node`` reads; without what function bodies read, if not
    ``into_function_bodies`` (their decorators, defaults and annotations run on import, and count)."""
    names = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)) and not into_function_bodies:
            stack += [*current.decorator_list, current.args, *([current.returns] if current.returns else [])]
            continue
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Load):
            names.add(current.id)
        stack += ast.iter_child_nodes(current)
    return names


def _library_folder(path):
    """The folder of the library that ``path`` belongs to: its outermost ancestor named ``dlscratch``, else its
    own folder."""
    folders = [folder for folder in Path(path).resolve().parents if folder.name == "dlscratch"]
    return folders[-1] if folders else Path(path).resolve().parent


@cache
def _imported_names(folder):
    """Every name that a Python file under ``folder`` imports with ``from ... import name``."""
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names.update(alias.name for alias in node.names)
    return frozenset(names)


def constants_read(path, functions):
    """The private constants of the file ``path`` that are units of their own and that the bodies of
    ``functions`` (top-level functions and methods, by qualified name) read."""
    path = Path(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = private_constants(tree, _imported_names(_library_folder(path)))
    read = set()
    for name, node in top_level_functions(tree):
        if name in functions:
            read |= _names_read(node)
    return read & set(constants)


def top_level_functions(node, prefix=""):
    """``(qualified name, node)`` of each top-level function and method under ``node``, in or out of ``if`` and
    ``try`` blocks; the functions and classes inside a function are part of it."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + child.name, child
        else:
            inside = f"{prefix}{child.name}." if isinstance(child, ast.ClassDef) else prefix
            yield from top_level_functions(child, inside)


def unit_of(qualname, units):
    """The unit among ``units`` that holds the code object named ``qualname``: ``f.<locals>.g`` and
    ``f.<locals>.<lambda>`` are ``f``'s; a class body (``Conv2d``), and what runs in it that is not a method
    (``Conv2d.<genexpr>``), is ``"<module>"``'s."""
    parts = qualname.split(".<locals>.")[0].split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in units:
            return ".".join(parts[:n])
    return MODULE_CODE


def _tokens(source):
    """``(kind, text, start, end)`` of each token, as Python 3.11 gives them: from 3.12 on, ``tokenize``
    splits an f-string into pieces (``FSTRING_START``, ``FSTRING_MIDDLE``, ``{``, ..., ``FSTRING_END``), and
    these are joined back into the one ``STRING`` token, with its source text, that older Pythons give."""
    lines = io.StringIO(source).readlines()
    depth = 0
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        kind = tokenize.tok_name[tok.type]
        if kind == "FSTRING_START":
            depth += 1
            if depth == 1:
                fstring_start = tok.start
        elif kind == "FSTRING_END":
            depth -= 1
            if depth == 0:
                yield "STRING", _source_between(lines, fstring_start, tok.end), fstring_start, tok.end
                fstring_start = None
        elif depth == 0:
            yield kind, tok.string, tok.start, tok.end


def _docstring_spans(source):
    """``[(start, end)]`` of the module, class and function docstrings, as ``(line, column)`` positions
    that count characters, as ``tokenize`` does (``ast`` counts UTF-8 bytes)."""
    lines = io.StringIO(source).readlines()
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docs = [node.body[0] for node in ast.walk(ast.parse(source))
            if isinstance(node, documented) and ast.get_docstring(node, clean=False) is not None]
    return [(_char_position(lines, d.lineno, d.col_offset), _char_position(lines, d.end_lineno, d.end_col_offset))
            for d in docs]


def _char_position(lines, line, byte):
    """The ``(line, column)`` position, counting characters, of the UTF-8 ``byte`` offset in ``line``."""
    return line, len(lines[line - 1].encode("utf-8")[:byte].decode("utf-8"))


def _source_between(lines, start, end):
    """The source text between two ``(line, column)`` positions."""
    (first, begin), (last, stop) = start, end
    if first == last:
        return lines[first - 1][begin:stop]
    return lines[first - 1][begin:] + "".join(lines[first:last - 1]) + lines[last - 1][:stop]


def module_path(name, root=ROOT):
    """The file of module ``name`` (``dlscratch.nn.rnn``) in the repository, or None if there is none."""
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_name(path, root=ROOT):
    """``dlscratch.nn.conv`` for the file ``<root>/dlscratch/nn/conv.py``, ``dlscratch.nn`` for its ``__init__.py``."""
    parts = Path(path).resolve().relative_to(root.resolve()).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def library_record(ran, root=ROOT):
    """What to store for a run: ``{module: {unit: fingerprint}}`` of the units that hold the code objects
    ``ran`` (``(file, qualname)`` pairs), with the ``"<module>"`` of each module they come from."""
    qualnames = defaultdict(set)
    for file, qualname in ran:
        qualnames[file].add(qualname)
    record = {}
    for file, names in qualnames.items():
        fingerprints = code_fingerprints(file)
        units = {MODULE_CODE} | {unit_of(name, fingerprints) for name in names}
        units |= constants_read(file, units)
        record[module_name(file, root)] = {unit: fingerprints[unit] for unit in sorted(units)}
    return dict(sorted(record.items()))


def stale_functions(notebook, root=ROOT):
    """Why the stored outputs of ``notebook`` (a dict, as read from JSON) may not come from the current library:
    each recorded unit whose code changed or is gone; ``[]`` when there is none."""
    recorded = notebook.get("metadata", {}).get("dlscratch", {}).get("library")
    if not recorded:
        return ["never executed by tools/execute_lessons.py"]
    if not all(isinstance(units, dict) for units in recorded.values()):
        return ["executed by an older tools/execute_lessons.py, which recorded the modules it imported, "
                "not the functions it ran"]
    problems = []
    for module, units in recorded.items():
        path = module_path(module, root)
        if path is None:
            problems.append(f"{module} (no longer exists)")
            continue
        now = code_fingerprints(path)
        for unit, fingerprint in units.items():
            if unit not in now:
                problems.append(f"{module}: {unit} (no longer exists)")
            elif now[unit] != fingerprint:
                problems.append(f"{module}: {unit} (its code changed)")
    return problems


def kernel_environment(device, trace, root=ROOT):
    """The environment of a lesson's kernel, which its children inherit: this one in full mode on ``device``,
    drawing with the inline backend (so that figures are stored), importing ``root``'s library (whatever copy
    pip installed elsewhere), recording into the folder ``trace`` the code of it that runs."""
    environment = {name: value for name, value in os.environ.items() if name != "DLSCRATCH_QUICK"}
    paths = [str(TRACER), str(root), *filter(None, [os.environ.get("PYTHONPATH")])]
    environment.update(DLSCRATCH_DEVICE=device, MPLBACKEND=INLINE_BACKEND, PYTHONPATH=os.pathsep.join(paths),
                       DLSCRATCH_TRACE_DIR=str(trace), DLSCRATCH_TRACE_LIBRARY=str(root / "dlscratch"))
    return environment


def read_trace(trace):
    """The ``(file, qualname)`` pairs that the processes of a run recorded in the folder ``trace``; refuses a
    run in which one could not record."""
    unrecorded = sorted(Path(trace).glob("*.unrecorded"))
    if unrecorded:
        note = unrecorded[0].read_text(encoding="utf-8").strip()
        raise SystemExit(f"execute_lessons: a process of the lesson ran unrecorded: {note}")
    lines = (line for path in Path(trace).glob("*.tsv") for line in path.read_text(encoding="utf-8").splitlines())
    return {tuple(line.split("\t")) for line in lines}


def execute(path, device, timeout):
    """Execute one lesson in full mode from a fresh kernel and store the fingerprints of the library code it ran;
    refuse to store a run whose cells that draw stored fewer figures than they draw."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    where = {"metadata": {"path": str(path.parent)}}  # the kernel starts in notebooks/, as in Jupyter
    with tempfile.TemporaryDirectory(prefix="lesson-trace-") as trace:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources=where)
        client.execute(env=kernel_environment(device, trace))
        record = library_record(read_trace(trace))
    if "dlscratch" not in record:
        raise SystemExit(f"execute_lessons: {path.name} ran no code of {ROOT / 'dlscratch'}: "
                         "its kernel imported dlscratch from another copy")
    missing = missing_figures(nb)
    if missing:
        raise SystemExit(f"execute_lessons: {describe_missing(path.name, missing)}; {path.name} left as it was")
    nb.metadata["dlscratch"] = {"library": record}
    nbformat.write(nb, path)


def require_sys_monitoring():
    """Refuse to execute lessons on a Python without ``sys.monitoring`` (3.11 and older), saying why and how."""
    if sys.version_info < (3, 12):
        raise SystemExit(
            f"execute_lessons: executing lessons needs Python 3.12 or newer; this is {platform.python_version()}.\n"
            "It records which library functions a lesson runs through sys.monitoring, at one call per function;\n"
            "older Pythons have only a profile hook, which ran a small training loop 2.4 times slower and would\n"
            "falsify the timings the lessons store. In a Python 3.12+ environment:\n"
            "    python3.12 -m venv .venv312 && .venv312/bin/pip install -r requirements.txt\n"
            "    .venv312/bin/python tools/execute_lessons.py\n"
            "(--check runs on any supported Python.)")


def lessons(prefixes):
    """The notebooks whose file names start with one of ``prefixes`` (all of them when there are none)."""
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    chosen = [p for p in paths if not prefixes or p.name.startswith(tuple(prefixes))]
    if prefixes and not chosen:
        raise SystemExit(f"execute_lessons: no notebook in notebooks/ starts with {', '.join(prefixes)}")
    return chosen


def check(paths):
    """Print the lessons whose outputs are older than the library, and why; 1 if there is one, else 0."""
    stale = {p.name: stale_functions(json.loads(p.read_text(encoding="utf-8"))) for p in paths}
    stale = {name: why for name, why in stale.items() if why}
    for name, why in stale.items():
        print(f"{name}: outputs older than the library: {', '.join(why)}")
    print("every lesson's outputs come from the current library" if not stale else
          f"re-execute with: python tools/execute_lessons.py {' '.join(n[:2] for n in stale)}")
    return 1 if stale else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description="\n\n".join(__doc__.split("\n\n")[:2]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Executing needs Python 3.12+ (sys.monitoring); --check runs on any.")
    parser.add_argument("lessons", nargs="*", help="file-name prefixes of the lessons to run (default: all)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu", "auto"], help="DLSCRATCH_DEVICE (cpu)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds allowed per cell (3600)")
    parser.add_argument("--check", action="store_true", help="only list the lessons whose outputs are stale, and why")
    args = parser.parse_args(argv)
    if args.check:
        return check(lessons(args.lessons))
    require_sys_monitoring()
    for path in lessons(args.lessons):
        start = time.perf_counter()
        execute(path, args.device, args.timeout)
        print(f"{path.name}: executed in full mode on {args.device} in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
