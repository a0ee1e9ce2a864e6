"""Dependency rules, checked on the source: only ``dlscratch/backend.py`` imports CuPy, the backend imports nothing
from the rest of dlscratch, the stand-in (``strict_cupy/``) nothing but NumPy and the ledger, no two modules
import each other outside the engine, and no module sets an attribute of a class from another module at import."""

import ast
import importlib
import textwrap
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
    assert {"backend.py", "engine/tensor.py", "engine/function.py", "operations/arithmetic.py"} <= names
    assert "cupy" in {m for _, m in imported_modules(BACKEND)}  # the backend's lazy import is found


def test_imported_modules_resolves_every_form(tmp_path):
    sub = tmp_path / "dlscratch" / "operations"
    sub.mkdir(parents=True)
    source = sub / "example.py"
    source.write_text(
        "import cupy.cuda as cc\nfrom .. import backend\nfrom ..engine.tensor import Tensor\n"
        "def f():\n    from cupyx import scatter_add\n"
    )
    modules = {m for _, m in imported_modules(source, root=tmp_path)}
    assert {"cupy.cuda", "dlscratch", "dlscratch.backend", "dlscratch.engine.tensor", "cupyx"} <= modules


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
    allowed = ("dlscratch", "dlscratch.bench", "dlscratch.bench.strict_cupy", "dlscratch.bench.strict_cupy.nvrtc",
               "dlscratch.bench.ledger")
    inside = [f"line {line}: {name}" for line, name in imported_modules(BACKEND)
              if name.split(".")[0] == "dlscratch" and name not in allowed]
    assert not inside, f"dlscratch/backend.py must not import the rest of dlscratch: {inside}"


STAND_IN = PACKAGE / "bench" / "strict_cupy"


def test_the_strict_stand_in_imports_only_numpy_the_standard_library_its_own_modules_and_the_ledger():
    modules = sorted(STAND_IN.glob("*.py"))
    assert {p.name for p in modules} == {"__init__.py", "arrays.py", "capture.py", "cublas.py", "cupy_api.py",
                                         "kernel_parser.py", "kernel_threads.py", "kernels.py", "nvrtc.py",
                                         "signatures.py"}
    for path in modules + [PACKAGE / "bench" / "ledger.py"]:
        imported = {name for _, name in imported_modules(path)
                    if name not in ("dlscratch", "dlscratch.bench", "dlscratch.bench.ledger")
                    and not name.startswith("dlscratch.bench.strict_cupy")}
        allowed = {"ast", "contextlib", "ctypes", "dataclasses", "functools", "math", "numpy", "os", "re", "sys",
                   "threading", "time", "types", "weakref"}
        if path.name == "ledger.py":
            allowed.add("torch")  # on a real GPU only, optionally: CUPTI's counts through torch.profiler
        if path.name == "arrays.py":
            allowed.add("scipy")  # cupyx.scipy.sparse's stand-in computes with SciPy, imported when first used
        assert {n.split(".")[0] for n in imported} <= allowed, (path.name, imported)


def import_graph():
    """``{module: modules of dlscratch it imports}``, every import counted (inside functions too); a package's
    ``__init__`` importing its own modules is left out (that is what a package does)."""
    names = {}
    for path in SOURCES:
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names[path] = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    known = set(names.values())
    graph = {}
    for path, name in names.items():
        targets = set()
        for _, imported in imported_modules(path):
            while imported and imported not in known:  # ``from .x import f`` names f: its module is x
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not (path.name == "__init__.py" and imported.startswith(name)):
                targets.add(imported)
        graph[name] = targets
    return graph


def cycles(graph):
    """The strongly connected sets of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


ENGINE = {"dlscratch.engine.tensor", "dlscratch.engine.function", "dlscratch.operations.arithmetic",
          "dlscratch.operations.broadcast", "dlscratch.engine.inplace", "dlscratch.core.tensor",
          "dlscratch.core.function", "dlscratch.core.arithmetic",
          "dlscratch.fast.graph", "dlscratch.autograd",  # the engine's fast path makes tensors; the walk uses it
          "dlscratch.autograd_function",  # torch.autograd.Function, which dlscratch.autograd re-exports
          "dlscratch.random"}  # Tensor.normal_ draws from the generators; a generator's state is a tensor


def test_no_import_circle_outside_the_engine():
    """The engine's modules refer to each other (a Tensor's operators make Functions, which make Tensors); no other
    modules do: the stand-in, the fast path's kernels and their NumPy twins import one way."""
    for group in cycles(import_graph()):
        assert group <= ENGINE, f"an import circle outside the engine: {sorted(group - ENGINE)}"


def test_the_circle_check_finds_a_planted_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [{"a", "b", "c"}]


REFERENCE_OPERATIONS = sorted((PACKAGE / "operations").glob("*.py"))


def _imports_of(path, module, root=PACKAGE.parent):
    """The lines of ``path`` that import ``module`` or a module inside it, as ``line N: name``."""
    found = {}
    for line, name in imported_modules(path, root):
        if name == module or name.startswith(module + "."):
            found.setdefault(line, name)
    return [f"line {line}: {name}" for line, name in sorted(found.items())]


@pytest.mark.parametrize("path", REFERENCE_OPERATIONS, ids=lambda p: p.name)
def test_no_reference_operation_imports_autocast(path):
    """Autocast (lesson 13) wraps the operations on its casting lists itself (``amp/casting_lists.py``): the
    operations of the earlier lessons never lead into it."""
    later = _imports_of(path, "dlscratch.amp")
    assert not later, f"operations/{path.name} imports dlscratch.amp ({', '.join(later)}); wrap_calls it from amp/"


@pytest.mark.parametrize("name", ["conv.py", "conv_checks.py", "conv_algorithms.py"])
def test_the_reference_convolution_imports_no_other_algorithm(name):
    """FFT and Winograd (lesson 12) register themselves in ``conv_algorithms.py``; lesson 4's convolution, its
    checks and that registry import neither."""
    path = PACKAGE / "operations" / name
    later = _imports_of(path, "dlscratch.operations.fft_conv") + _imports_of(path, "dlscratch.operations.winograd")
    assert not later, f"operations/{name} imports a later lesson's algorithm: {later}"


def test_the_later_lesson_scan_sees_every_form(tmp_path):
    sub = tmp_path / "dlscratch" / "operations"
    sub.mkdir(parents=True)
    source = sub / "example.py"
    source.write_text("from ..amp.autocast import casts_to_float32\nfrom .. import amp\nfrom .winograd import W\n"
                      "from . import fft_conv\n")
    assert _imports_of(source, "dlscratch.amp", tmp_path) == ["line 1: dlscratch.amp.autocast", "line 2: dlscratch.amp"]
    assert _imports_of(source, "dlscratch.operations.winograd", tmp_path) == ["line 3: dlscratch.operations.winograd"]
    assert _imports_of(source, "dlscratch.operations.fft_conv", tmp_path) == ["line 4: dlscratch.operations.fft_conv"]


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_time_statements(tree):
    """The nodes of a module that run when it is imported: everything but the bodies of functions and classes
    (a class body sets its own class's attributes)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def foreign_class_attribute_writes(source, namespace, name):
    """``line: code`` of each import-time assignment, deletion or ``setattr`` in ``source`` (the module ``name``,
    whose globals are ``namespace``) whose target is an attribute of a class defined in another module."""

    def foreign_class(expression):
        try:
            target = eval(compile(ast.Expression(expression), name, "eval"), dict(namespace))  # names, dots only
        except Exception:
            return False
        return isinstance(target, type) and target.__module__ != name

    found = []
    for node in import_time_statements(ast.parse(source)):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            objects = [t.value for t in targets if isinstance(t, ast.Attribute)]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr")
              and node.args):
            objects = [node.args[0]]
        else:
            continue
        plain = [o for o in objects if all(isinstance(n, (ast.Name, ast.Attribute, ast.Load)) for n in ast.walk(o))]
        if any(foreign_class(o) for o in plain):
            found.append((node.lineno, ast.unparse(node)))
    return [f"line {line}: {code}" for line, code in sorted(found)]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_module_sets_an_attribute_of_another_modules_class_at_import(path):
    """A class's methods and attributes are those its own module gives it: a reader of ``Function`` sees what
    ``Function.__call__`` runs. (Tests and lessons may patch; the library does not.)"""
    name = module_name(path)
    assert not foreign_class_attribute_writes(path.read_text(), vars(importlib.import_module(name)), name)


def test_the_class_attribute_scan_finds_a_planted_write():
    import dlscratch.engine.function as function_module

    source = textwrap.dedent("""
        from dlscratch.engine.function import Function
        from dlscratch.engine import function
        Function.__call__ = print
        if True:
            function.Function.name = "planted"
        setattr(Function, "prepare", print)
        del Function.link
        Local.attribute = 1
        def later():
            Function.failed = None
    """)
    local = type("Local", (), {"__module__": "dlscratch.planted"})  # a class of the module itself
    namespace = {"Function": function_module.Function, "function": function_module, "Local": local}
    found = foreign_class_attribute_writes(source, namespace, "dlscratch.planted")
    assert [line.split(":")[0] for line in found] == ["line 4", "line 6", "line 7", "line 8"]
