"""The engine on one screen (``dlscratch/core/``): it runs on its own, and the library is the core plus layers."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dlscratch
import dlscratch.autograd
import dlscratch.core
from dlscratch.core import backprop

CORE = Path(dlscratch.core.__file__).parent

# A graph that uses every core operation and broadcasting, a tensor used twice, and a constant; the same source
# runs on the core alone (a fresh process that imports only the core) and on the library.
GRAPH = """
x = Tensor(numpy.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]), requires_grad=True)   # (2, 3)
w = Tensor(numpy.array([[0.2, -0.4], [1.0, 0.3], [-0.6, 0.8]]), requires_grad=True)  # (3, 2)
b = Tensor(numpy.array([0.1, -0.2]), requires_grad=True)                              # (2,), broadcast
h = x @ w + b
y = (h * h - h / (2.0 + b * b) - (-h) * 3.0).sum()
y.backward()
grads = {"x": x.grad.data.tolist(), "w": w.grad.data.tolist(), "b": b.grad.data.tolist(), "y": float(y.data)}
"""


def _core_alone(source):
    """Run ``source`` in a fresh process that imports the core as a package of its own, never ``dlscratch``."""
    program = "\n".join([
        "import sys, json, numpy", f"sys.path.insert(0, {str(CORE.parent)!r})", "from core import Tensor, no_grad",
        source, "assert not [m for m in sys.modules if m.startswith('dlscratch')], 'the core imported dlscratch'",
        "print(json.dumps(grads))"])
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _graph_by_hand(x, w, b):
    """GRAPH's output in plain NumPy, for central differences."""
    h = x @ w + b
    return float((h * h - h / (2.0 + b * b) + 3.0 * h).sum())


def test_the_core_alone_computes_the_librarys_gradients():
    core = _core_alone(GRAPH)
    scope = {"numpy": np}
    scope["Tensor"] = lambda data, requires_grad=False: dlscratch.tensor(data, dtype=np.float64,
                                                                         requires_grad=requires_grad)
    exec(GRAPH, scope)
    library = scope["grads"]
    for name in ("x", "w", "b", "y"):
        np.testing.assert_allclose(core[name], library[name], rtol=1e-12)
    # and both against float64 central differences
    values = {name: np.array(v, dtype=np.float64) for name, v in
              (("x", [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]), ("w", [[0.2, -0.4], [1.0, 0.3], [-0.6, 0.8]]),
               ("b", [0.1, -0.2]))}
    for name, value in values.items():
        numeric = np.zeros_like(value)
        for i in np.ndindex(value.shape):
            step = np.zeros_like(value)
            step[i] = 1e-6
            up = _graph_by_hand(**{**values, name: value + step})
            down = _graph_by_hand(**{**values, name: value - step})
            numeric[i] = (up - down) / 2e-6
        np.testing.assert_allclose(core[name], numeric, rtol=1e-6, atol=1e-8)


def test_the_core_records_nothing_under_no_grad():
    core = _core_alone("x = Tensor(numpy.ones(3), requires_grad=True)\nwith no_grad():\n    y = (x * 2.0).sum()\n"
                       "grads = {'creator': y.creator is None, 'requires_grad': y.requires_grad}")
    assert core == {"creator": True, "requires_grad": False}


def test_the_core_imports_nothing_but_numpy_and_itself():
    for path in CORE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [] if node.level else [node.module]
            else:
                continue
            outside = [n for n in names if n.split(".")[0] not in ("numpy", "contextlib", "threading", "itertools",
                                                                       "weakref", "operator")]
            assert not outside, f"{path.name} imports {outside}: the core stands alone"


def test_the_core_fits_on_a_screen_or_two():
    lines = sum(len(path.read_text(encoding="utf-8").splitlines()) for path in CORE.glob("*.py"))
    assert lines <= 420, f"dlscratch/core/ has {lines} lines: move what is not the idea into engine/extensions/"


def test_the_library_is_the_core_plus_layers():
    assert issubclass(dlscratch.Tensor, dlscratch.core.Tensor)
    assert issubclass(dlscratch.Function, dlscratch.core.Function)
    # the library's layers fill in the core's extension points; on the reference path the library runs the core's
    # __call__ and the core's walk through them (the fast path's one-frame versions: tests/test_fast_graph.py)
    for point in ("prepare", "failed", "output", "run_backward"):
        assert point in vars(dlscratch.core.Function) and point in vars(dlscratch.Function), point
    calls = []

    def spy(name):
        real = getattr(dlscratch.Function, name)
        return lambda *args: calls.append(name) or real(*args)

    x = dlscratch.ones(3, requires_grad=True)
    with pytest.MonkeyPatch.context() as patch, dlscratch.reference():
        for name in ("prepare", "output", "link", "run_backward"):
            patch.setattr(dlscratch.Function, name, spy(name))
        real_take = backprop._take_grads
        patch.setattr(backprop, "_take_grads", lambda *args: calls.append("walk") or real_take(*args))
        (x * x).sum().backward()
    assert calls == ["prepare", "output", "link"] * 2 + ["walk", "run_backward"] * 2
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
