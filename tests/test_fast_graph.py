"""The engine's one-frame recording and walk (``dlscratch/fast/graph.py``) against the core's, which the reference
path runs through the extensions: the same tensors, gradients and errors, the one frame taken in the usual case and
chosen where a reader looks (``Function.__call__``, ``autograd.propagate``), and a user's extension points called on
both paths."""

import numpy as np
import pytest

import dlscratch
from dlscratch import Function, Tensor, autograd
from dlscratch.core import backprop
from dlscratch.engine import switch
from dlscratch.fast import graph


def on_both_paths(compute):
    """``compute()`` on the fast path and on the reference path: (fast result, reference result)."""
    with switch.fast_path():
        fast = compute()
    with dlscratch.reference():
        reference = compute()
    return fast, reference


def error_on_both_paths(compute, kind):
    messages = []
    for path in (switch.fast_path, dlscratch.reference):
        with path(), pytest.raises(kind) as caught:
            compute()
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    return messages[0]


def leaves():
    rng = np.random.default_rng(0)
    x = dlscratch.tensor(rng.standard_normal((3, 4)).astype(np.float32), requires_grad=True)
    w = dlscratch.tensor(rng.standard_normal(4).astype(np.float32), requires_grad=True)
    return x, w


OPERATIONS = {
    "tensor * tensor, broadcast": lambda x, w: x * w,
    "tensor / tensor": lambda x, w: x / (w * w + 1),
    "tensor - tensor": lambda x, w: w - x,
    "tensor * float": lambda x, w: x * 0.5,
    "int * tensor": lambda x, w: 3 * x,
    "tensor + numpy float64": lambda x, w: x + np.float64(2.5),
    "tensor * numpy array": lambda x, w: x * np.arange(4.0),
    "tensor * float64 tensor": lambda x, w: x * w.double(),
    "0-d tensors": lambda x, w: x.sum() * w.sum(),
    "a tensor used twice": lambda x, w: x * x + x,
    "a chain": lambda x, w: ((x * w) / 3.0 - w) * x,
    "matmul": lambda x, w: x @ w,
    "a view": lambda x, w: x.reshape(4, 3) * 2.0,
}


@pytest.mark.parametrize("name", OPERATIONS)
def test_both_paths_give_the_same_values_dtypes_and_gradients(name):
    def compute():
        x, w = leaves()
        y = OPERATIONS[name](x, w)
        y.sum().backward()
        return y.data.copy(), y.dtype, y.requires_grad, y.creator.name, x.grad.data, w.grad

    fast, reference = on_both_paths(compute)
    np.testing.assert_array_equal(fast[0], reference[0])
    assert fast[1:4] == reference[1:4]
    np.testing.assert_array_equal(fast[4], reference[4])
    assert (fast[5] is None) == (reference[5] is None)
    if fast[5] is not None:
        np.testing.assert_array_equal(fast[5].data, reference[5].data)


def test_the_usual_operation_takes_the_fast_graph_and_the_reference_path_the_extension_points(monkeypatch):
    assert vars(Function)["__call__"].__module__ == "dlscratch.engine.function"  # the choice is the class's own method
    calls = []
    for name in ("prepare", "output", "link", "run_backward"):
        real = getattr(dlscratch.Function, name)
        monkeypatch.setattr(dlscratch.Function, name, lambda *a, real=real, name=name: calls.append(name) or real(*a))
    for name in ("record", "walk"):
        real = getattr(graph, name)
        monkeypatch.setattr(graph, name, lambda *a, real=real, name=name: calls.append(name) or real(*a))
    x, w = leaves()
    with switch.fast_path():
        (x * w * 2.0).sum().backward()
    # only the sum, a one-input operation, goes on from the one frame to the core's call
    assert calls == ["record", "record", "record", "prepare", "output", "link", "walk"]
    calls.clear()
    with dlscratch.reference():
        (x * w * 2.0).sum().backward()
    assert calls == ["prepare", "output", "link"] * 3 + ["run_backward"] * 3


def test_integers_divided_give_float32_on_both_paths():
    def compute():
        y = dlscratch.tensor(np.array([1, 2, 3])) / dlscratch.tensor(np.array([2, 2, 2]))
        return y.dtype, y.tolist()

    fast, reference = on_both_paths(compute)
    assert fast == reference == (np.float32, [0.5, 1.0, 1.5])


def test_no_grad_records_nothing_on_both_paths():
    def compute():
        x, w = leaves()
        with dlscratch.no_grad():
            y = x * w
        return y.requires_grad, y.creator

    assert on_both_paths(compute) == ((False, None), (False, None))


@pytest.mark.parametrize("case, kind, words", [
    ("a second call", RuntimeError, "already a node of a recorded graph"),
    ("shapes that do not broadcast", ValueError, "input shapes: (3, 4), (3,)"),
    ("an operand that is no number", TypeError, "mul"),
    ("a saved input changed in place", RuntimeError, "changed in place after mul used it"),
    ("a user's gradient of the wrong shape", RuntimeError, "returned a gradient of shape (4,)"),
])
def test_both_paths_refuse_the_same_things_with_the_same_words(case, kind, words):
    def compute():
        x, w = leaves()
        if case == "a second call":
            mul = dlscratch.operations.arithmetic.Mul()
            mul(x, w)
            mul(x, w)
        elif case == "shapes that do not broadcast":
            x * dlscratch.ones(3)
        elif case == "an operand that is no number":
            x * [None]
        elif case == "a saved input changed in place":
            y = x * w
            with dlscratch.no_grad():
                w.mul_(2.0)
            y.sum().backward()
        else:
            WrongShape()(x, w).sum().backward()

    assert words in error_on_both_paths(compute, kind)


class WrongShape(Function):
    """A user's function whose backward returns a gradient of the wrong shape for ``x``."""

    def forward(self, x, w):
        return x * w

    def backward(self, gy):
        return gy.sum(axis=0), gy.sum(axis=0)


class Halves(Function):
    """A user's function with two outputs, the first and the second half of ``x * w``'s columns."""

    def forward(self, x, w):
        self.w = w
        y = x * w
        return y[:, :2].copy(), y[:, 2:].copy()

    def backward(self, g_first, g_second):
        gy = np.zeros((g_first if g_first is not None else g_second).shape[:1] + (4,), dtype=np.float32)
        if g_first is not None:
            gy[:, :2] = g_first
        if g_second is not None:
            gy[:, 2:] = g_second
        return gy * self.w, None


@pytest.mark.parametrize("used", ["both outputs", "the first output", "the second, the first gone"])
def test_a_function_with_two_outputs_gets_the_gradients_that_reached_it(used):
    def compute():
        x, w = leaves()
        first, second = Halves()(x, w)
        if used == "both outputs":
            loss = (first * 2.0).sum() + second.sum()
        elif used == "the first output":
            loss = first.sum()
        else:
            del first
            loss = (second * 3.0).sum()
        loss.backward()
        return x.grad.data

    fast, reference = on_both_paths(compute)
    np.testing.assert_array_equal(fast, reference)
    assert np.any(fast != 0)


def test_retain_grad_hooks_and_fresh_gradients_on_both_paths():
    def compute():
        x, w = leaves()
        dlscratch.manual_seed(1)
        layer = dlscratch.nn.Linear(4, 2)
        seen = []
        layer.weight.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.shape))
        h = (x * w).retain_grad()
        loss = (layer(h) * h.sum()).sum()
        loss.backward()
        return h.grad.data, layer.weight.grad.data, x.grad.data, seen

    fast, reference = on_both_paths(compute)
    for a, b in zip(fast[:3], reference[:3]):
        np.testing.assert_array_equal(a, b)
    assert fast[3] == reference[3] == [(2, 4)]


def test_the_walk_is_chosen_by_the_path_in_autograd_propagate(monkeypatch):
    taken = []
    monkeypatch.setattr(backprop, "_take_grads", lambda *a, real=backprop._take_grads: taken.append(1) or real(*a))
    x, w = leaves()
    with switch.fast_path():
        (x * w).sum().backward()
    assert taken == []  # every function has one output: the one-frame walk takes its gradient inline
    with dlscratch.reference():
        (x * w).sum().backward()
    assert len(taken) == 2
    walks = []
    monkeypatch.setattr(backprop, "walk", lambda *a: walks.append("core"))
    monkeypatch.setattr(graph, "walk", lambda *a: walks.append("one frame"))
    for path in (switch.fast_path, dlscratch.reference):
        with path():
            autograd.backward(x * w, np.ones((3, 4), dtype=np.float32))
    assert walks == ["one frame", "core"]


def test_parameters_and_subclasses_of_tensor_take_the_fast_graph():
    p = dlscratch.nn.Parameter(dlscratch.ones(3))
    y = p * dlscratch.ones(3)
    assert type(y) is Tensor and y.requires_grad and y.creator.inputs[0] is p


class Audited(Function):
    """A user's function that overrides every extension point, counting the calls of each (the library's
    ``Function``'s named, so that one method can be lent to another class)."""

    calls = []

    def forward(self, x, w):
        return x * w

    def backward(self, gy):
        return gy * self.inputs[1].data, None

    def prepare(self, inputs):
        self.calls.append("prepare")
        return Function.prepare(self, inputs)

    def failed(self, error, inputs):
        self.calls.append("failed")
        return Function.failed(self, error, inputs)

    def output(self, y, record, inputs):
        self.calls.append("output")
        return Function.output(self, y, record, inputs)

    def link(self, inputs, outputs):
        self.calls.append("link")
        return Function.link(self, inputs, outputs)

    def run_backward(self, gys):
        self.calls.append(f"run_backward {type(gys).__name__}")
        return Function.run_backward(self, gys)


@pytest.mark.parametrize("point", ["prepare", "failed", "output", "link", "run_backward"])
def test_a_users_extension_point_is_called_on_both_paths(point):
    only = type(f"Only_{point}", (Function,), {"forward": Audited.forward, "backward": Audited.backward,
                                               point: getattr(Audited, point), "calls": []})
    assert not only.keeps_stock_extension_points and dlscratch.operations.arithmetic.Mul.keeps_stock_extension_points

    def compute():
        only.calls.clear()
        x, w = leaves()
        only()(x, w).sum().backward()
        if point == "failed":
            with pytest.raises(ValueError):
                only()(x, dlscratch.ones(3))
        return list(only.calls), x.grad.data

    fast, reference = on_both_paths(compute)
    assert fast[0] == reference[0] and len(fast[0]) == 1, (fast[0], reference[0])
    np.testing.assert_array_equal(fast[1], reference[1])


def test_a_subclass_of_a_users_function_with_extension_points_keeps_them():
    class Child(Audited):
        calls = []

    assert not Child.keeps_stock_extension_points

    def compute():
        Child.calls.clear()
        x, w = leaves()
        Child()(x, w).sum().backward()
        return list(Child.calls)

    fast, reference = on_both_paths(compute)
    assert fast == reference == ["prepare", "output", "link", "run_backward list"]
