"""Dtype policy: a float32 graph stays float32 end to end, forward and backward, whatever
scalars and labels it meets (NumPy 2 promotion rules); float64 appears only when asked for."""

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F


def _graph_tensors(output):
    """Every tensor of ``output``'s graph: the output, the intermediates and the inputs."""
    tensors, seen, stack = [output], set(), [output.creator]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        tensors.extend(fn.inputs)
        stack.extend(x.creator for x in fn.inputs)
    return tensors


def _assert_graph_dtype(output, dtype):
    """Run backward and check the dtype of every forward value and every gradient of the graph."""
    tensors = _graph_tensors(output)
    for t in tensors:
        if t.creator is not None:
            t.retain_grad()
    output.backward() if output.ndim == 0 else output.backward(np.ones(output.shape, dtype=dtype))
    for t in tensors:
        if t.dtype.kind == "f":
            assert t.dtype == dtype, f"a {t.dtype} value in the graph: {t!r}"
        if t.requires_grad:
            assert t.grad is not None and t.grad.dtype == dtype, f"gradient of {t!r}"


@pytest.fixture
def x(backend):
    dlscratch.manual_seed(0)
    return dlscratch.rand(3, 4, requires_grad=True) + 0.5  # positive, for log, sqrt and pow


@pytest.fixture
def w(backend):
    return dlscratch.randn(4, 2, requires_grad=True)


EXPRESSIONS = {
    "python-scalars": lambda x, w: (x * 2 + 1.5 - 0.5 / x) * 3.0 - 1,
    "numpy-float64-scalars": lambda x, w: x * np.float64(2) + np.float64(0.1) - np.float64(3) / x,
    "numpy-float64-scalar-first": lambda x, w: np.float64(2) * x - np.float64(1),
    "numpy-0d-float64": lambda x, w: x * np.array(2.0),
    "float64-array-constant": lambda x, w: x * np.ones(4),
    "numpy-int-scalars": lambda x, w: x / np.int64(3) + np.int32(1),
    "pow": lambda x, w: x**2 + x**0.5 + x ** np.float64(1.5) + 2.0**x,
    "pow-tensor-exponent": lambda x, w: x ** (x * 0.5),
    "unary": lambda x, w: x.exp() + x.log() + x.sqrt() + x.tanh() + x.sigmoid() + (-x).relu() + abs(x),
    "mean": lambda x, w: x.mean() + x.mean(0).sum() + x.mean((0, 1), keepdims=True),
    "sum-amax": lambda x, w: x.sum(1) + x.amax(1),
    "matmul": lambda x, w: x @ w,
    "linear": lambda x, w: F.linear(x, w.T, w[0] * 0.5),
    "softmax": lambda x, w: F.softmax(x, dim=1) * F.log_softmax(x, dim=0),
    "cross-entropy-numpy-labels": lambda x, w: F.cross_entropy(x, np.array([0, 3, 1])),
    "cross-entropy-tensor-labels": lambda x, w: F.cross_entropy(x @ w, dlscratch.tensor([1, 0, 1]), reduction="sum"),
    "cross-entropy-none": lambda x, w: F.cross_entropy(x, dlscratch.tensor([2, 2, 0], device=x.device),
                                                       reduction="none"),
    "mse-float64-target": lambda x, w: F.mse_loss(x, np.zeros((3, 4))),
    "indexing": lambda x, w: x[[0, 0, 2]] * x[1:, ::-1].sum(),
    "joining": lambda x, w: F.cat([x, x * 2], dim=0).sum(0) + F.stack([x, x], dim=1).mean((0, 1)),
    "shapes": lambda x, w: x.T.reshape(2, 6).permute(1, 0).unsqueeze(0).squeeze().broadcast_to(2, 6, 2),
}


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_float32_graph_stays_float32(x, w, name):
    _assert_graph_dtype(EXPRESSIONS[name](x, w), np.float32)


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_float64_graph_stays_float64(x, w, name):
    x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    _assert_graph_dtype(EXPRESSIONS[name](x64, w64), np.float64)


def test_integer_labels_do_not_upcast_the_gradient(backend):
    logits = dlscratch.zeros(2, 3, requires_grad=True)
    for labels in ([0, 2], np.array([0, 2], dtype=np.int64), np.array([0, 2], dtype=np.int32)):
        F.cross_entropy(logits, labels).backward()
    assert logits.grad.dtype == np.float32
    np.testing.assert_allclose(logits.grad.numpy(), 3 * np.array([[-1 / 3, 1 / 6, 1 / 6], [1 / 6, 1 / 6, -1 / 3]]))


def test_float64_only_when_asked(backend):
    assert dlscratch.tensor(np.ones(2)).dtype == np.float32
    assert dlscratch.tensor(np.ones(2), dtype=np.float64).dtype == np.float64
    assert dlscratch.randn(2, dtype=dlscratch.float64).dtype == np.float64
    x = dlscratch.ones(2, requires_grad=True)
    y = x.double()
    assert y.dtype == np.float64
    (y * 2).sum().backward()
    assert x.grad.dtype == np.float32  # the cast's backward returns to the input's dtype


def test_integer_tensors_follow_pytorch():
    i = dlscratch.tensor([1, 2])
    assert (i + 1).dtype == np.int64 and (i * i).dtype == np.int64 and (i**2).dtype == np.int64
    # floats made from integers alone are float32 (NumPy would give float64)
    for result in (i * 0.5, i / 2, i / i, i.exp(), i.log(), i.sqrt(), i.tanh(), i.sigmoid(), i.mean(), i.softmax(0)):
        assert result.dtype == np.float32, result
    np.testing.assert_allclose((i / 2).numpy(), [0.5, 1.0])
    assert (i.astype(np.float64) * 0.5).dtype == np.float64


def test_float_array_constants_join_the_graph_precision(backend):
    one64 = dlscratch.ones(2, dtype=np.float64, requires_grad=True)
    np.testing.assert_array_equal((one64 * np.array([0.1, 0.2])).detach().numpy(), [0.1, 0.2])  # not rounded to float32
    one32 = dlscratch.ones(2, requires_grad=True)
    y = one32 * np.array([0.1, 0.2])
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.detach().numpy(), np.array([0.1, 0.2], dtype=np.float32))
    assert (one32 * [0.5, 0.25]).dtype == np.float32
