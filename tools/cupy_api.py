"""Write ``dlscratch/bench/strict_cupy/cupy_api.py``, the table of CuPy's API the strict stand-in enforces, from a CuPy.

    pip install cupy-cuda12x                 # no GPU needed: `import cupy` works, nothing runs
    python tools/cupy_api.py                 # (re)write dlscratch/bench/strict_cupy/cupy_api.py
    python tools/cupy_api.py --check         # exit 1, with the differences, when the committed table is stale

The strict CuPy stand-in (``dlscratch/strict_cupy.py``) refuses what CuPy refuses; which names exist and which
arguments each call takes must come from CuPy itself, not from memory. For every public name of the namespaces in
``NAMESPACES`` the table keeps a signature, taken from ``inspect.signature`` where Python can read one and otherwise
from the first line of the docstring, which Cython writes for CuPy's compiled functions and methods
(``_ndarray_base.astype(self, dtype, order='K', casting=None, subok=None, copy=True)``). A ufunc's signature is
built from its ``nin`` and ``nout``, as CuPy's own docstring formatter builds it. Names that are not callable
(constants, dtypes, properties) are kept with ``None``. Defaults are kept where they are plain literals
(``'K'``, ``None``, ``0``) and written ``...`` otherwise.
"""

import argparse
import ast
import difflib
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "dlscratch" / "bench" / "strict_cupy" / "cupy_api.py"

#: Table key -> how to reach it from the ``cupy`` and ``cupyx`` modules.
NAMESPACES = {
    "cupy": lambda cupy, cupyx: cupy,
    "cupy.ndarray": lambda cupy, cupyx: cupy.ndarray,
    "cupy.ufunc": lambda cupy, cupyx: cupy.ufunc,
    "cupy.random": lambda cupy, cupyx: cupy.random,
    "cupy.random.Generator": lambda cupy, cupyx: cupy.random.Generator,
    "cupy.linalg": lambda cupy, cupyx: cupy.linalg,
    "cupy.fft": lambda cupy, cupyx: cupy.fft,
    "cupy.lib.stride_tricks": lambda cupy, cupyx: cupy.lib.stride_tricks,
    "cupyx": lambda cupy, cupyx: cupyx,
}
UNREADABLE = "(*args, **kwargs)"  # what a callable whose signature cannot be read is given: anything goes


def ufunc_signature(ufunc):
    """``(x1, x2, /, out=None, *, casting='same_kind', dtype=None)`` for a ufunc with two inputs and one output."""
    inputs = ", ".join(["x"] if ufunc.nin == 1 else [f"x{i + 1}" for i in range(ufunc.nin)])
    out = "out=None" if ufunc.nout == 1 else f"out={(None,) * ufunc.nout!r}"
    return f"({inputs}, /, {out}, *, casting='same_kind', dtype=None)"


def docstring_signature(obj, name):
    """The parameters written on the first line of a Cython docstring (``name(self, a, b=1) -> type``), or None."""
    lines = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    match = re.match(rf"^[\w.]*\b{re.escape(name)}(\(.*\))", lines[0].strip()) if lines else None
    if not match:
        return None
    text, depth, end = match.group(1), 0, 0
    while end == 0 or depth > 0:  # to the parenthesis that closes the first
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        end += 1
    parameters = []
    for part in split_parameters(text[1 : end - 1].replace("\\*", "*")):
        head, equals, default = part.partition("=")
        words = head.split()
        if not words or words[-1] == "self":
            continue
        parameters.append(words[-1] + (f"={default.strip()}" if equals else ""))  # drop Cython's types
    return "(" + ", ".join(parameters) + ")"


def split_parameters(text):
    """Split a parameter list at the commas that are not inside brackets or quotes."""
    parts, depth, quote, current = [], 0, None, ""
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += char
    return [p.strip() for p in parts + [current] if p.strip()]


def normalised(signature):
    """A signature's text with every default that is not a plain literal written ``...``, or None if unparsable."""
    try:
        function = ast.parse(f"def f{signature}: pass").body[0]
    except SyntaxError:
        return None
    arguments = function.args
    for default in [*arguments.defaults, *[d for d in arguments.kw_defaults if d is not None]]:
        try:
            ast.literal_eval(default)
        except ValueError:
            default.__class__, default.value = ast.Constant, ...
            for field in ("id", "attr", "func", "args", "keywords", "elts", "ctx"):
                if hasattr(default, field):
                    delattr(default, field)
    for argument in ast.walk(arguments):
        if isinstance(argument, ast.arg):
            argument.annotation = None
    return "(" + ast.unparse(arguments) + ")"


def parameters_text(signature):
    """An ``inspect.Signature`` as text without annotations, defaults that are not literals written ``...``."""
    parts, star_done = [], False
    parameters = list(signature.parameters.values())
    if parameters and parameters[0].name == "self":  # a compiled method (Python 3.13 reads its ``$self``)
        parameters = parameters[1:]
    for index, parameter in enumerate(parameters):
        kind = parameter.kind
        if kind is parameter.KEYWORD_ONLY and not star_done:
            parts.append("*")
        star_done = star_done or kind in (parameter.KEYWORD_ONLY, parameter.VAR_POSITIONAL)
        prefix = {parameter.VAR_POSITIONAL: "*", parameter.VAR_KEYWORD: "**"}.get(kind, "")
        text = prefix + parameter.name
        if parameter.default is not parameter.empty:
            default = repr(parameter.default)
            try:
                ast.literal_eval(default)
            except (ValueError, SyntaxError):
                default = "..."
            text += f"={default}"
        parts.append(text)
        if kind is parameter.POSITIONAL_ONLY and (
            index + 1 == len(parameters) or parameters[index + 1].kind is not parameter.POSITIONAL_ONLY
        ):
            parts.append("/")
    return "(" + ", ".join(parts) + ")"


def signature_of(obj, name, cupy):
    """The normalised signature of a callable of CuPy's, or ``UNREADABLE``."""
    if isinstance(obj, cupy.ufunc):
        return ufunc_signature(obj)
    try:
        text = parameters_text(inspect.signature(obj))
    except (TypeError, ValueError):
        text = None
    if text in (None, UNREADABLE):  # a compiled function: Cython wrote its signature into the docstring
        text = docstring_signature(obj, name) or text
    return (normalised(text) if text else None) or UNREADABLE


def is_numpy_type(obj):
    """NumPy's own classes that CuPy re-exports (dtypes such as ``cupy.float32``, ``cupy.dtype``)."""
    return inspect.isclass(obj) and obj.__module__.partition(".")[0] == "numpy"


def build_table():
    """``{namespace: {name: signature or None}}`` read off the installed CuPy."""
    import cupy
    import cupyx

    table = {}
    for key, reach in NAMESPACES.items():
        namespace, entries = reach(cupy, cupyx), {}
        for name in sorted(dir(namespace)):
            if name.startswith("_"):
                continue
            try:
                obj = getattr(namespace, name)
            except Exception:  # a lazily imported submodule that needs CUDA libraries
                continue
            if type(obj).__module__ == "__future__":  # ``from __future__ import annotations`` leaves a name
                continue
            if inspect.ismodule(obj) or is_numpy_type(obj) or not callable(obj):
                entries[name] = None
            else:
                entries[name] = signature_of(obj, name, cupy)
        table[key] = entries
    return cupy.__version__, table


def render(version, table):
    """The text of ``dlscratch/bench/strict_cupy/cupy_api.py``."""
    lines = [
        f'"""CuPy {version}\'s API as the strict stand-in enforces it. Generated by tools/cupy_api.py: do not edit.',
        "",
        "``API[namespace][name]`` is the signature of CuPy's callable (defaults that are not plain literals are",
        "written ``...``; ``(*args, **kwargs)`` where CuPy's signature cannot be read), or None for a name that is",
        "not callable (a constant, a dtype, a submodule, a property).",
        '"""',
        "",
        f"CUPY_VERSION = {version!r}",
        "",
        "API = {",
    ]
    for key, entries in table.items():
        lines.append(f"    {key!r}: {{")
        lines.extend(f"        {name!r}: {signature!r}," for name, signature in entries.items())
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed table instead of writing it")
    args = parser.parse_args(argv)
    text = render(*build_table())
    if not args.check:
        TABLE.write_text(text, encoding="utf-8")
        print(f"wrote {TABLE.relative_to(ROOT)}")
        return 0
    committed = TABLE.read_text(encoding="utf-8")
    if committed == text:
        print(f"{TABLE.relative_to(ROOT)} matches the installed CuPy")
        return 0
    sys.stdout.writelines(difflib.unified_diff(committed.splitlines(True), text.splitlines(True),
                                               "committed", "installed CuPy", n=0))
    print(f"\n{TABLE.relative_to(ROOT)} differs from the installed CuPy: run python tools/cupy_api.py")
    return 1


if __name__ == "__main__":
    sys.exit(main())
