"""Dependency rules, checked on the source: only ``dlscratch/backend.py`` imports CuPy, and
the backend imports nothing from the rest of dlscratch."""

import ast
from pathlib import Path

import pytest

import dlscratch

PACKAGE = Path(dlscratch.__file__).parent
SOURCES = sorted(PACKAGE.rglob("*.py"))
BACKEND = PACKAGE / "backend.py"


def imported_modules(path, root=PACKAGE.parent):
    """Every module that ``path`` imports, anywhere in the file (functions included), as
    ``(line, absolute dotted name)``; relative imports are resolved from ``root``."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def test_the_scan_sees_the_package():
    names = {p.relative_to(PACKAGE).as_posix() for p in SOURCES}
    assert {"backend.py", "tensor.py", "function.py", "functions/arithmetic.py"} <= names
    assert "cupy" in {m for _, m in imported_modules(BACKEND)}  # the backend's lazy import is found


def test_imported_modules_resolves_every_form(tmp_path):
    sub = tmp_path / "dlscratch" / "functions"
    sub.mkdir(parents=True)
    source = sub / "example.py"
    source.write_text(
        "import cupy.cuda as cc\nfrom .. import backend\nfrom ..tensor import Tensor\n"
        "def f():\n    from cupyx import scatter_add\n"
    )
    modules = {m for _, m in imported_modules(source, root=tmp_path)}
    assert {"cupy.cuda", "dlscratch", "dlscratch.backend", "dlscratch.tensor", "cupyx"} <= modules


@pytest.mark.parametrize("path", [p for p in SOURCES if p != BACKEND], ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_only_the_backend_imports_cupy(path):
    offending = [
        f"line {line}: {name}" for line, name in imported_modules(path) if name.split(".")[0] in ("cupy", "cupyx")
    ]
    assert not offending, (
        f"{path.relative_to(PACKAGE.parent)} imports CuPy ({', '.join(offending)}); "
        "reach array functions through dlscratch.backend instead"
    )


def test_backend_imports_nothing_from_dlscratch_but_the_strict_stand_in_and_the_ledger():
    allowed = ("dlscratch", "dlscratch.strict_cupy", "dlscratch.ledger")
    inside = [f"line {line}: {name}" for line, name in imported_modules(BACKEND)
              if name.split(".")[0] == "dlscratch" and name not in allowed]
    assert not inside, f"dlscratch/backend.py must not import the rest of dlscratch: {inside}"


def test_the_strict_stand_in_imports_only_numpy_the_standard_library_and_its_own_modules():
    own = ("dlscratch.strict_signatures", "dlscratch.cupy_api", "dlscratch.ledger", "dlscratch.strict_")
    for module in ("strict_cupy.py", "strict_signatures.py", "cupy_api.py", "ledger.py", "strict_kernels.py",
                   "strict_kernel_parser.py", "strict_kernel_threads.py"):
        imported = {name for _, name in imported_modules(PACKAGE / module)
                    if name != "dlscratch" and not name.startswith(own)}
        allowed = {"ast", "contextlib", "math", "numpy", "os", "re", "sys", "threading", "time", "types", "weakref"}
        if module == "ledger.py":
            allowed.add("torch")  # on a real GPU only, optionally: CUPTI's counts through torch.profiler
        if module == "strict_cupy.py":
            allowed.add("scipy")  # cupyx.scipy.sparse's stand-in computes with SciPy, imported when first used
        assert {n.split(".")[0] for n in imported} <= allowed, (module, imported)
