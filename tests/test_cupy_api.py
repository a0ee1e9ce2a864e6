"""The library against CuPy's API: every array-module call it makes, read from its source, must exist in CuPy and
take the arguments it is given (``dlscratch/bench/strict_cupy/cupy_api.py``, generated from CuPy by
``tools/cupy_api.py``); the strict stand-in refuses, at run time, what CuPy refuses and lays out new arrays as
CuPy does."""

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from repo_tools import TOOLS, load_tool

from dlscratch.bench import strict_cupy as sc
from dlscratch.bench.strict_cupy import signatures as strict_signatures
from dlscratch.bench.strict_cupy.cupy_api import API

ROOT = TOOLS.parent
PACKAGE = ROOT / "dlscratch"
STAND_IN = PACKAGE / "bench" / "strict_cupy"  # the stand-in and its table
ARRAY_MODULE_CALLS = {"get_array_module", "_xp", "module_for"}  # functions that return numpy or cupy
ROOT_NAMESPACES = {"xp": "cupy", "cupy": "cupy", "cupyx": "cupyx"}
SUBSPACES = {("cupy", "random"): "cupy.random", ("cupy", "linalg"): "cupy.linalg", ("cupy", "fft"): "cupy.fft",
             ("cupy", "lib"): "cupy.lib", ("cupy.lib", "stride_tricks"): "cupy.lib.stride_tricks"}


def _namespace_of(node):
    """The CuPy namespace an expression stands for (``xp``, ``backend.xp``, ``get_array_module(x)``,
    ``xp.random``, ``generator(xp)``), or None."""
    if isinstance(node, ast.Name):
        return ROOT_NAMESPACES.get(node.id)
    if isinstance(node, ast.Attribute):
        if node.attr == "xp" and isinstance(node.value, ast.Name) and node.value.id in ("backend", "self"):
            return "cupy"
        parent = _namespace_of(node.value)
        return SUBSPACES.get((parent, node.attr)) if parent else None
    if isinstance(node, ast.Call):
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if called in ARRAY_MODULE_CALLS:
            return "cupy"
        if called == "generator" or (called == "default_rng" and _namespace_of(node.func.value) == "cupy.random"):
            return "cupy.random.Generator"
    return None


def _calls_in(source, where):
    """``(where, line, namespace, name, call)`` for every array-module call in Python ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            namespace = _namespace_of(node.func.value)
            if namespace is not None:
                found.append((where, node.lineno, namespace, node.func.attr, node))
    return found


def array_module_calls():
    """Every call of an array-module function in the library."""
    return [call for path in sorted(PACKAGE.rglob("*.py")) if STAND_IN not in path.parents
            for call in _calls_in(path.read_text(encoding="utf-8"), path.relative_to(ROOT))]


def lesson_array_module_calls():
    """Every call of an array-module function in the lessons' code cells (what a magic times is not read)."""
    found = []
    for lesson in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(lesson.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                source = TransformerManager().transform_cell("".join(cell["source"]))  # magics as Python calls
                found += _calls_in(source, f"{lesson.name} cell {cell.get('id')}")
    return found


def _static_problem(namespace, name, call):
    """Why CuPy would refuse ``call`` (read from the source: keyword names and positional count), or None."""
    if name not in API[namespace]:
        return f"CuPy has no {namespace}.{name}"
    if API[namespace][name] is None:
        return None  # a class or dtype used as a function (cupy.float32(...)): NumPy's own
    spec = strict_signatures.signature(namespace, name)
    keywords = [k.arg for k in call.keywords if k.arg is not None]
    unknown = [k for k in keywords if k not in spec.keywords]
    if unknown and not spec.any_keyword:
        return f"{namespace}.{name}{API[namespace][name]} takes no keyword {unknown[0]!r}"
    starred = any(isinstance(a, ast.Starred) for a in call.args)
    if not starred and len(call.args) > len(spec.positional) and not spec.any_positional:
        return f"{namespace}.{name}{API[namespace][name]} takes at most {len(spec.positional)} positional arguments"
    return None


@pytest.mark.parametrize("where, find, at_least", [("the library", array_module_calls, 150),
                                                    ("the lessons", lesson_array_module_calls, 200)])
def test_every_array_module_call_is_one_cupy_takes(where, find, at_least):
    calls = find()
    assert len(calls) > at_least, f"only {len(calls)} array-module calls found in {where}: the search has gone blind"
    problems = [f"{place} line {line}: {problem}" for place, line, namespace, name, call in calls
                if (problem := _static_problem(namespace, name, call))]
    assert not problems, f"calls in {where} that CuPy refuses:\n" + "\n".join(problems)


def test_the_static_check_finds_the_calls_cupy_refused_on_a_real_gpu():
    source = ("def f(indices, x):\n"
              "    a = backend.get_array_module(indices).indices(indices.shape, sparse=True)\n"
              "    b = xp.add(x, 1, where=x > 0)\n"
              "    c = generator(xp).permutation(3)\n"
              "    d = xp.lib.stride_tricks.as_strided(x, (2,), (4,), writeable=False)\n"
              "    return xp.zeros((2,), dtype=float, order='C')\n")
    calls = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and _namespace_of(node.func.value)]
    problems = [_static_problem(_namespace_of(c.func.value), c.func.attr, c) for c in calls]
    assert problems[:4] == [
        "cupy.indices(dimensions, dtype=...) takes no keyword 'sparse'",
        "cupy.add(x1, x2, /, out=None, *, casting='same_kind', dtype=None) takes no keyword 'where'",
        "CuPy has no cupy.random.Generator.permutation",
        "cupy.lib.stride_tricks.as_strided(x, shape=None, strides=None) takes no keyword 'writeable'",
    ]
    assert problems[4] is None


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None,
                    reason="CuPy is not installed here (CI's newest-Python run installs it: pip install cupy-cuda12x)")
def test_the_committed_table_is_the_installed_cupys():
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "cupy_api.py"), "--check"], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]


def test_the_table_reads_cupys_own_signatures():
    tool = load_tool("cupy_api")
    assert tool.docstring_signature(type("M", (), {"__doc__": "_ndarray_base.swapaxes(self, Py_ssize_t axis1, "
                                                              "Py_ssize_t axis2) -> _ndarray_base\n"}), "swapaxes") \
        == "(axis1, axis2)"
    assert tool.normalised("(shape, dtype=numpy.float64, order='C')") == "(shape, dtype=..., order='C')"
    assert API["cupy"]["indices"] == "(dimensions, dtype=...)"
    assert "permutation" not in API["cupy.random.Generator"] and "random" in API["cupy.random.Generator"]


# --- the stand-in refuses at run time what CuPy refuses ---------------------------------------------------------


def test_the_stand_in_refuses_unknown_keywords_names_and_values_as_cupy_does():
    a = sc.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(TypeError, match="unexpected keyword argument 'sparse'"):
        sc.indices((2, 3), sparse=True)
    with pytest.raises(TypeError, match="Wrong arguments"):
        sc.add(a, 1, where=a > 2)
    with pytest.raises(TypeError, match="Wrong arguments"):
        np.add(a, 1, order="F")  # NumPy's ufunc on a GPU array goes to CuPy's
    with pytest.raises(TypeError, match="unexpected keyword argument 'initial'"):
        a.max(initial=0)
    with pytest.raises(AttributeError, match="has no attribute 'permutation'"):
        sc.random.default_rng(0).permutation(3)
    with pytest.raises(AttributeError, match="has no attribute 'itemset'"):
        a.itemset(0, 1)
    with pytest.raises(AttributeError, match="has no attribute 'vecdot'"):
        sc.vecdot(a, a)
    with pytest.raises(TypeError, match="Unsupported dtype"):
        sc.random.default_rng(0).random((2,), dtype=np.float16)
    with pytest.raises(TypeError, match="subok is not supported"):
        sc.empty_like(a, subok=True)
    with pytest.raises(TypeError, match="at most 3 positional"):
        sc.random.default_rng(0).random((2,), np.float32, None, 4)
    with pytest.raises(TypeError, match="NotImplemented"):
        np.vecdot(a, a)  # CuPy has no vecdot: NumPy's dispatch finds no one to answer
    with pytest.raises(TypeError, match="no implementation found"):
        np.insert(a, 0, 1.0)  # a NumPy function that CuPy has not got


def test_the_stand_in_lays_out_new_arrays_as_cupy_does():
    stored = sc.asarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    x = stored.transpose(2, 0, 1)  # a view: it stays one
    assert x.base is stored and not x.flags.c_contiguous
    for result in (x * 2, sc.exp(x), np.exp(x), x.sum(axis=1), sc.where(x > 3, x, 0), x.copy(), -x):
        assert result.flags.c_contiguous, "CuPy writes every new array C-contiguous"
    kept = [x.astype(np.float64), sc.empty_like(x), sc.zeros_like(x), x.copy(order="K")]
    assert all(np.argsort(k.strides).tolist() == np.argsort(x.strides).tolist() for k in kept), \
        "order='K' keeps the layout, in CuPy as in NumPy"
    out = sc.empty((2, 3, 4), dtype=np.float32).transpose(2, 0, 1)
    assert sc.multiply(x, 2, out=out) is out and not out.flags.c_contiguous, "out= keeps its own layout"
    np.testing.assert_array_equal((x * 2).get(), x.get() * 2)


def test_the_generator_script_is_runnable_documentation():
    text = (ROOT / "tools" / "cupy_api.py").read_text(encoding="utf-8")
    assert "pip install cupy-cuda12x" in text and "--check" in text
    assert Path(PACKAGE / "bench" / "strict_cupy" / "cupy_api.py").read_text(encoding="utf-8").startswith('"""CuPy ')
