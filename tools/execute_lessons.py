"""Re-execute the lessons in full mode from a fresh kernel, and record which library code made their outputs.

    python tools/execute_lessons.py                 # every lesson, full mode, on the CPU
    python tools/execute_lessons.py 05 07           # the lessons whose file names start with these
    python tools/execute_lessons.py --device auto   # on the GPU where there is one
    python tools/execute_lessons.py --check         # list lessons whose outputs are older than the library

A lesson's stored outputs are what a learner reads first, so they must come from the library as it is.
After executing a lesson, this script asks its kernel which ``dlscratch`` modules it imported and stores,
in the notebook's metadata (``metadata["dlscratch"]["library"]``), a fingerprint of each: a hash of the
module's tokens with comments, docstrings and layout left out, the same on every supported Python.
Changing what a module does changes its fingerprint, and ``tests/test_notebooks_conventions.py`` then
fails until the lessons that import it are executed again; editing a docstring or a comment does not.

The full mode is what a learner gets: ``DLSCRATCH_QUICK`` is removed from the kernel's environment.
"""

import argparse
import ast
import hashlib
import io
import json
import os
import sys
import time
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
# Run in the lesson's kernel after its last cell, then removed: where dlscratch came from, and the
# dlscratch modules the lesson imported.
LOADED_MODULES = (
    "import json as _json, sys as _sys\n"
    "print(_json.dumps([_sys.modules['dlscratch'].__file__,\n"
    "                   sorted(n for n in list(_sys.modules) if n == 'dlscratch' or n.startswith('dlscratch.'))]))"
)


def code_fingerprint(path):
    """A short hash of a Python file's tokens, without comments, docstrings or layout: the same on every
    supported Python. Indentation and line breaks inside brackets are left out; the ``NEWLINE``,
    ``INDENT`` and ``DEDENT`` that place a statement are kept, without their text."""
    source = Path(path).read_text(encoding="utf-8")
    docstrings = _docstring_spans(source)
    kept, after_docstring = [], False
    for kind, text, start, end in _tokens(source):
        if kind in ("COMMENT", "NL", "ENDMARKER"):
            continue
        if kind == "STRING" and any(first <= start and end <= last for first, last in docstrings):
            after_docstring = True
        elif kind == "NEWLINE" and after_docstring:
            after_docstring = False
        else:
            after_docstring = False
            kept.append((kind, "" if kind in ("NEWLINE", "INDENT", "DEDENT") else text))
    return hashlib.sha256(json.dumps(kept).encode("utf-8")).hexdigest()[:16]


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

    def position(line, byte):
        return line, len(lines[line - 1].encode("utf-8")[:byte].decode("utf-8"))

    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docs = [node.body[0] for node in ast.walk(ast.parse(source))
            if isinstance(node, documented) and ast.get_docstring(node, clean=False) is not None]
    return [(position(d.lineno, d.col_offset), position(d.end_lineno, d.end_col_offset)) for d in docs]


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


def library_fingerprints(modules, root=ROOT):
    """``{module: fingerprint}`` for the given module names that are files of this repository."""
    paths = {name: module_path(name, root) for name in modules}
    return {name: code_fingerprint(path) for name, path in sorted(paths.items()) if path is not None}


def stale_modules(notebook, root=ROOT):
    """The modules whose code changed since ``notebook`` (a dict, as read from JSON) was executed, with
    why; ``["never executed by tools/execute_lessons.py"]`` when it carries no record."""
    recorded = notebook.get("metadata", {}).get("dlscratch", {}).get("library")
    if not recorded:
        return ["never executed by tools/execute_lessons.py"]
    problems = []
    for name, fingerprint in sorted(recorded.items()):
        path = module_path(name, root)
        if path is None:
            problems.append(f"{name} (no longer exists)")
        elif code_fingerprint(path) != fingerprint:
            problems.append(f"{name} (its code changed)")
    return problems


def execute(path, device, timeout):
    """Execute one lesson in full mode from a fresh kernel and record the fingerprints of what it imported."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    probe = nbformat.v4.new_code_cell(LOADED_MODULES)
    nb.cells.append(probe)
    os.environ.pop("DLSCRATCH_QUICK", None)
    os.environ["DLSCRATCH_DEVICE"] = device
    # this checkout's library, whatever copy pip has installed elsewhere
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    where = {"metadata": {"path": str(path.parent)}}  # the kernel starts in notebooks/, as in Jupyter
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources=where).execute()
    origin, modules = json.loads("".join(out.get("text", "") for out in probe.outputs if out.get("name") == "stdout"))
    if Path(origin).resolve().parent.parent != ROOT:
        raise SystemExit(f"execute_lessons: {path.name} imported dlscratch from {origin}, not from {ROOT}")
    nb.cells.remove(probe)
    nb.metadata["dlscratch"] = {"library": library_fingerprints(modules)}
    nbformat.write(nb, path)


def lessons(prefixes):
    """The notebooks whose file names start with one of ``prefixes`` (all of them when there are none)."""
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    chosen = [p for p in paths if not prefixes or p.name.startswith(tuple(prefixes))]
    if prefixes and not chosen:
        raise SystemExit(f"execute_lessons: no notebook in notebooks/ starts with {', '.join(prefixes)}")
    return chosen


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="file-name prefixes of the lessons to run (default: all)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu", "auto"], help="DLSCRATCH_DEVICE (cpu)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds allowed per cell (3600)")
    parser.add_argument("--check", action="store_true", help="only list the lessons whose outputs are stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = {p.name: stale_modules(json.loads(p.read_text(encoding="utf-8"))) for p in lessons(args.lessons)}
        stale = {name: why for name, why in stale.items() if why}
        for name, why in stale.items():
            print(f"{name}: outputs older than the library: {', '.join(why)}")
        print("every lesson's outputs come from the current library" if not stale else
              f"re-execute with: python tools/execute_lessons.py {' '.join(n[:2] for n in stale)}")
        return 1 if stale else 0
    for path in lessons(args.lessons):
        start = time.perf_counter()
        execute(path, args.device, args.timeout)
        print(f"{path.name}: executed in full mode on {args.device} in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
