"""Every differentiable operation, gradient-checked against float64 central differences
(``dlscratch.gradcheck``) on tiny shapes, broadcasting included; values of the numerically
delicate ones (sigmoid, log_softmax, cross_entropy) against float64 NumPy references."""

import warnings

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import Function, GradcheckError, gradcheck
from dlscratch import backend as B


@pytest.fixture
def make(backend):
    """``make(*shape, low=-2, high=2, away=0)``: a float64 array of uniform values on the current
    backend; with ``away`` > 0 every value is at least that far from zero (kinks of abs and relu)."""
    rng = np.random.default_rng(0)

    def make_array(*shape, low=-2.0, high=2.0, away=0.0):
        values = rng.uniform(low, high, size=shape)
        if away:
            values = np.sign(values) * (away + np.abs(values))
        return backend.asarray(values)

    return make_array


# ----- arithmetic, with broadcasting -----

BROADCAST_PAIRS = [
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((2, 1), (1, 3)),
    ((3,), (2, 1, 3)),
    ((), (2, 3)),
    ((2, 3, 1), (4,)),
]
BINARY_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "F.add": F.add,
    "F.sub": F.sub,
    "F.mul": F.mul,
    "F.div": F.div,
}


@pytest.mark.parametrize("shapes", BROADCAST_PAIRS, ids=str)
@pytest.mark.parametrize("op", BINARY_OPS)
def test_binary_op(make, op, shapes):
    a = make(*shapes[0])
    b = make(*shapes[1], low=0.5, high=2.0) if "div" in op else make(*shapes[1])
    gradcheck(BINARY_OPS[op], a, b)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x + 1.5,
        lambda x: 2 - x,
        lambda x: x * 3,
        lambda x: 3.0 / x,
        lambda x: x / 4,
        lambda x: -x,
        F.neg,
    ],
    ids=["add-scalar", "rsub-scalar", "mul-scalar", "rdiv-scalar", "div-scalar", "neg", "F.neg"],
)
def test_with_python_scalars(make, fn):
    gradcheck(fn, make(2, 3, low=0.5, high=2.0))


@pytest.mark.parametrize("exponent", [2, 3, -1.5, 0.5, 1.0])
def test_pow_scalar_exponent(make, exponent):
    low = -2.0 if isinstance(exponent, int) else 0.5  # fractional powers need a positive base
    gradcheck(lambda x: x**exponent, make(2, 3, low=low, high=2.0))


@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 3), (3,)), ((3,), (2, 1)), ((2, 3), ())], ids=str)
def test_pow_tensor_exponent(make, shapes):
    gradcheck(lambda x, p: x**p, make(*shapes[0], low=0.5, high=2.0), make(*shapes[1], low=-2.0, high=2.0))
    gradcheck(F.pow, make(*shapes[0], low=0.5, high=2.0), make(*shapes[1]))


def test_pow_scalar_base(make):
    gradcheck(lambda p: 2.0**p, make(2, 3))


# ----- elementwise -----

ELEMENTWISE = {
    "exp": (lambda x: x.exp(), {}),
    "F.exp": (F.exp, {}),
    "log": (lambda x: x.log(), {"low": 0.2, "high": 3.0}),
    "F.log": (F.log, {"low": 0.2, "high": 3.0}),
    "sqrt": (lambda x: x.sqrt(), {"low": 0.2, "high": 3.0}),
    "F.sqrt": (F.sqrt, {"low": 0.2, "high": 3.0}),
    "abs": (lambda x: abs(x), {"away": 0.1}),
    "F.abs": (F.abs, {"away": 0.1}),
    "tanh": (lambda x: x.tanh(), {}),
    "F.tanh": (F.tanh, {}),
    "sigmoid": (lambda x: x.sigmoid(), {"low": -6.0, "high": 6.0}),
    "F.sigmoid": (F.sigmoid, {"low": -6.0, "high": 6.0}),
    "relu": (lambda x: x.relu(), {"away": 0.1}),
    "F.relu": (F.relu, {"away": 0.1}),
    "log10": (lambda x: x.log10(), {"low": 0.2, "high": 3.0}),
    "dlscratch.log10": (dlscratch.log10, {"low": 0.2, "high": 3.0}),
    "amin": (lambda x: x.amin(1), {}),
    "min over dim": (lambda x: x.min(0).values, {}),
    "min": (lambda x: x.min(), {}),
    "sin": (lambda x: x.sin(), {}),
    "dlscratch.sin": (dlscratch.sin, {}),
    "cos": (lambda x: x.cos(), {}),
    "F.cos": (F.cos, {}),
    "tan": (lambda x: x.tan(), {"low": -1.2, "high": 1.2}),
    "dlscratch.tan": (dlscratch.tan, {"low": -1.2, "high": 1.2}),
    "clamp below": (lambda x: x.clamp(min=0.0), {"away": 0.1}),
    "clamp above": (lambda x: dlscratch.clamp(x, max=0.0), {"away": 0.1}),
    "clamp inside": (lambda x: F.clamp(x, -3.0, 3.0), {}),
}


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise(make, name):
    fn, ranges = ELEMENTWISE[name]
    gradcheck(fn, make(3, 4, **ranges))


def test_trigonometry_and_clamp_values_and_clamps_gradient_at_its_bounds(backend):
    ref = np.array([-2.0, -1.0, -0.25, 0.0, 1.0, 1.5])
    x = dlscratch.tensor(backend.asarray(ref), dtype=np.float64, requires_grad=True)
    for name in ("sin", "cos", "tan"):
        np.testing.assert_allclose(getattr(x, name)().detach().numpy(), getattr(np, name)(ref), rtol=1e-12)
    y = x.clamp(-1.0, 1.0)
    np.testing.assert_array_equal(y.detach().numpy(), np.clip(ref, -1.0, 1.0))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 1, 1, 1, 0])  # at a bound the gradient passes, as PyTorch's
    with pytest.raises(ValueError, match="give min, max or both"):
        x.clamp()
    with pytest.raises(ValueError, match="min .2.0. must not exceed max"):
        x.clamp(2.0, 1.0)


def test_elementwise_values(backend):
    x = dlscratch.tensor([-2.0, -0.5, 0.0, 1.5])
    ref = np.array([-2.0, -0.5, 0.0, 1.5])
    np.testing.assert_allclose(x.abs().numpy(), np.abs(ref))
    np.testing.assert_allclose(x.relu().numpy(), np.maximum(ref, 0))
    np.testing.assert_allclose(x.tanh().numpy(), np.tanh(ref), rtol=1e-6)
    np.testing.assert_allclose(x.exp().numpy(), np.exp(ref), rtol=1e-6)
    np.testing.assert_allclose(x.sigmoid().numpy(), 1 / (1 + np.exp(-ref)), rtol=1e-6)
    np.testing.assert_allclose(x.abs().sqrt().numpy(), np.sqrt(np.abs(ref)), rtol=1e-6)


def test_relu_and_abs_gradient_at_zero_is_zero():
    x = dlscratch.tensor([0.0, 0.0], requires_grad=True)
    (x.relu() + abs(x)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_is_stable_for_large_inputs(backend, dtype):
    values = np.array([-1000.0, -100.0, -30.0, 0.0, 30.0, 100.0, 1000.0])
    x = dlscratch.tensor(values, dtype=dtype, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = x.sigmoid()
        y.sum().backward()
    got = y.detach().numpy()
    ref = np.exp(-np.logaddexp(0.0, -values))  # float64 reference
    assert np.isfinite(got).all() and np.isfinite(x.grad.numpy()).all()
    assert got[-1] == 1.0 and got[-2] == 1.0 and got[0] == 0.0 and got[3] == 0.5
    assert 0 < got[1] < 1e-40  # exp(-100) survives, as a float32 subnormal
    # Away from the subnormal range, values are exact to a few units in the last place.
    tiny = np.finfo(dtype).tiny
    np.testing.assert_allclose(got, ref, rtol=16 * np.finfo(dtype).eps, atol=tiny if dtype == np.float32 else 0)
    # The gradient y (1 - y) loses what y rounds away: absolute error up to one epsilon.
    np.testing.assert_allclose(x.grad.numpy(), ref * (1 - ref), rtol=1e-5, atol=np.finfo(dtype).eps)


# ----- matmul and linear -----

MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 2)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((2, 1, 2, 3), (3, 3, 2)),
    ((2, 3), (4, 3, 2)),
    ((4, 2, 3), (3, 2)),
    ((3,), (2, 3, 4)),
    ((2, 4, 3), (3,)),
    ((3, 1), (1, 4)),
    ((1, 3), (3, 2)),
    ((2, 3, 1), (1, 4)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(make, shapes):
    a, b = make(*shapes[0]), make(*shapes[1])
    expected = B.to_cpu(a) @ B.to_cpu(b)
    np.testing.assert_allclose((dlscratch.tensor(a) @ dlscratch.tensor(b)).numpy(), expected, rtol=1e-5, atol=1e-6)
    gradcheck(lambda x, y: x @ y, a, b)
    gradcheck(F.matmul, a, b)


def test_matmul_with_one_constant_side(make):
    w = dlscratch.tensor(make(3, 2))
    gradcheck(lambda x: x @ w, make(4, 3))
    gradcheck(lambda x: w.T @ x, make(3, 2))


@pytest.mark.parametrize("x_shape", [(4, 3), (2, 3, 3), (3,), (1, 3)], ids=str)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_linear(make, x_shape, bias):
    x, W, b = make(*x_shape), make(2, 3), make(2)
    args = (x, W, b) if bias else (x, W)
    expected = B.to_cpu(x) @ B.to_cpu(W).T + (B.to_cpu(b) if bias else 0)
    got = F.linear(*(dlscratch.tensor(a, dtype=np.float64) for a in args))
    assert got.shape == x_shape[:-1] + (2,)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    gradcheck(F.linear, *args)


# ----- reductions -----

AXES = [None, 0, 1, -1, (0, 2), (-1, 0), ()]


@pytest.mark.parametrize("keepdims", [False, True], ids=["", "keepdims"])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_sum_and_mean(make, op, axis, keepdims):
    x = make(2, 3, 4)
    expected = getattr(np, op)(B.to_cpu(x), axis=axis, keepdims=keepdims)
    got = getattr(dlscratch.tensor(x, dtype=np.float64), op)(dim=axis, keepdim=keepdims)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    gradcheck(lambda t: getattr(t, op)(axis=axis, keepdims=keepdims), x)
    gradcheck(lambda t: getattr(F, op)(t, axis, keepdims), x)


@pytest.mark.parametrize("keepdims", [False, True], ids=["", "keepdims"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1], ids=str)
def test_amax(make, axis, keepdims):
    x = make(2, 3, 4)
    expected = np.max(B.to_cpu(x), axis=axis, keepdims=keepdims)
    got = dlscratch.tensor(x, dtype=np.float64).amax(axis, keepdims)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected)
    gradcheck(lambda t: F.amax(t, axis, keepdims), x)


def test_amax_ties_split_the_gradient_evenly(backend):
    x = dlscratch.tensor([[3.0, 1.0, 3.0], [2.0, 2.0, 0.0]], requires_grad=True)
    x.amax(1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.5, 0, 0.5], [0.5, 0.5, 0]])
    x.zero_grad()
    x.amax(0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 0, 1], [0, 1, 0]])
    x.zero_grad()
    x.amax().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.5, 0, 0.5], [0, 0, 0]])


# ----- shapes -----

SHAPE_OPS = {
    "reshape": lambda x: x.reshape(4, -1),
    "reshape-tuple": lambda x: x.reshape((6, 4)),
    "F.reshape": lambda x: F.reshape(x, (3, 8)),
    "view": lambda x: x.view(24),
    "permute": lambda x: x.permute(2, 0, 1),
    "permute-negative": lambda x: x.permute(-1, 0, -2),
    "F.permute": lambda x: F.permute(x, (1, 2, 0)),
    "transpose": lambda x: x.transpose(0, 2),
    "transpose-negative": lambda x: x.transpose(-1, -2),
    "F.transpose": lambda x: F.transpose(x, 0, 1),
    "T": lambda x: x.T,
    "flatten": lambda x: x.flatten(),
    "flatten-1": lambda x: x.flatten(1),
    "flatten-0-1": lambda x: F.flatten(x, 0, 1),
    "unsqueeze": lambda x: x.unsqueeze(0),
    "unsqueeze-negative": lambda x: F.unsqueeze(x, -1),
    "squeeze-all": lambda x: x.reshape(1, 2, 1, 12).squeeze(),
    "squeeze-dim": lambda x: x.unsqueeze(1).squeeze(1),
    "squeeze-not-one": lambda x: F.squeeze(x, 0),
    "broadcast_to": lambda x: x[:, :1, :].broadcast_to(3, 2, 3, 4),
    "expand": lambda x: x[:1].expand((2, 2, 3, 4)),
    "F.broadcast_to": lambda x: F.broadcast_to(x[0, 0], (3, 4)),
    "sum_to_shape": lambda x: F.sum_to_shape(x, (3, 1)),
    "sum_to_shape-lead": lambda x: F.sum_to_shape(x, (1, 4)),
    "sum_to_shape-scalar": lambda x: F.sum_to_shape(x, ()),
}


@pytest.mark.parametrize("name", SHAPE_OPS)
def test_shape_op(make, name):
    gradcheck(SHAPE_OPS[name], make(2, 3, 4))


def test_shape_op_values(backend):
    a = np.arange(24.0).reshape(2, 3, 4)
    x = dlscratch.tensor(a)
    np.testing.assert_array_equal(x.permute(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(x.transpose(0, 2).numpy(), a.swapaxes(0, 2))
    np.testing.assert_array_equal(x.T.numpy(), a.T)
    np.testing.assert_array_equal(x.flatten(1).numpy(), a.reshape(2, 12))
    assert x.unsqueeze(-1).shape == (2, 3, 4, 1) and x.unsqueeze(1).shape == (2, 1, 3, 4)
    assert x.reshape(1, 2, 1, 12).squeeze().shape == (2, 12)
    np.testing.assert_array_equal(F.sum_to_shape(x, (3, 1)).numpy(), a.sum(axis=(0, 2))[:, None])
    np.testing.assert_array_equal(x[:, :1].broadcast_to(2, 3, 4).numpy(), np.broadcast_to(a[:, :1], (2, 3, 4)))


# ----- indexing -----

INDICES = {
    "int": lambda xp: 1,
    "negative-int": lambda xp: -1,
    "slices": lambda xp: (slice(1, None), slice(None, 2)),
    "negative-steps": lambda xp: (slice(None, None, -1), slice(None, None, -2)),
    "ellipsis-newaxis": lambda xp: (Ellipsis, None, 2),
    "int-and-slice": lambda xp: (0, slice(1, 3)),
    "array-with-repeats": lambda xp: xp.asarray([0, 2, 0, 0]),
    "list-with-repeats": lambda xp: [1, 1, 2],
    "2d-array": lambda xp: xp.asarray([[0, 1], [1, 1]]),
    "arrays-per-axis": lambda xp: (xp.asarray([0, 2, 2]), xp.asarray([3, 1, 3])),
    "slice-and-array": lambda xp: (slice(None), xp.asarray([3, 0, 3])),
    "boolean-mask": lambda xp: xp.asarray([[True, False, True, False], [False] * 4, [True] * 4]),
    "boolean-rows": lambda xp: xp.asarray([True, False, True]),
}


@pytest.mark.parametrize("name", INDICES)
def test_getitem(make, backend, name):
    x = make(3, 4)
    index = INDICES[name](backend)
    np.testing.assert_array_equal(dlscratch.tensor(x, dtype=np.float64)[index].numpy(), B.to_cpu(x[index]))
    gradcheck(lambda t: t[index], x)


def test_getitem_repeated_indices_add_up(backend):
    x = dlscratch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[backend.asarray([2, 0, 2, 2])].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 3.0])


def test_getitem_with_a_tensor_index(backend):
    x = dlscratch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    picked = x[dlscratch.tensor([1, 1]), dlscratch.tensor([0, 1])]
    np.testing.assert_array_equal(picked.detach().numpy(), [3.0, 4.0])
    picked.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [1, 1]])


# ----- joining -----


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_concatenate(make, dim):
    shapes = {0: [(1, 2, 3), (2, 2, 3), (3, 2, 3)], 1: [(2, 1, 3), (2, 2, 3), (2, 3, 3)]}
    shapes[-1] = [(2, 2, 1), (2, 2, 2), (2, 2, 3)]
    a, b, c = (make(*s) for s in shapes[dim])
    expected = np.concatenate([B.to_cpu(a), B.to_cpu(b), B.to_cpu(c)], axis=dim)
    got = F.cat([dlscratch.tensor(t, dtype=np.float64) for t in (a, b, c)], dim=dim)
    np.testing.assert_array_equal(got.numpy(), expected)
    gradcheck(lambda *ts: F.cat(ts, dim=dim), a, b, c)
    gradcheck(lambda *ts: F.concatenate(list(ts), dim), a, b, c)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(make, dim):
    a, b = make(2, 3), make(2, 3)
    expected = np.stack([B.to_cpu(a), B.to_cpu(b)], axis=dim)
    got = F.stack([dlscratch.tensor(a, dtype=np.float64), dlscratch.tensor(b, dtype=np.float64)], dim=dim)
    np.testing.assert_array_equal(got.numpy(), expected)
    gradcheck(lambda *ts: F.stack(ts, dim=dim), a, b)


def test_cat_with_a_constant(make):
    c = dlscratch.tensor(make(2, 2))
    gradcheck(lambda x: F.cat([c, x, c], dim=1), make(2, 3))


# ----- softmax, log_softmax, losses -----


def _log_softmax_ref(x, axis):
    x = np.asarray(x, dtype=np.float64)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_gradients(make, op, dim):
    x = make(2, 3, 4, low=-3.0, high=3.0)
    gradcheck(lambda t: getattr(t, op)(dim), x)
    gradcheck(lambda t: getattr(F, op)(t, dim=dim), x)


@pytest.mark.parametrize("dim", [0, -1])
def test_softmax_values(backend, dim):
    values = np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0], [50.0, 50.0, 50.0]])
    ref = np.exp(_log_softmax_ref(values, dim))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = F.softmax(dlscratch.tensor(values), dim=dim).numpy()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got.sum(axis=dim), 1.0, rtol=1e-6)


def test_log_softmax_is_stable_for_large_logits(backend):
    values = np.array([[1000.0, 0.0, -1000.0], [1e4, 1e4, 0.0], [-3e4, -3e4 + 1, -3e4 + 2], [0.1, 0.2, 0.3]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = F.log_softmax(dlscratch.tensor(values), dim=1).numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, _log_softmax_ref(values, 1), rtol=1e-6, atol=1e-6)


def _cross_entropy_ref(logits, labels, reduction):
    losses = -_log_softmax_ref(logits, 1)[np.arange(len(labels)), labels]
    return {"mean": losses.mean(), "sum": losses.sum(), "none": losses}[reduction]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy(make, backend, reduction):
    logits = make(4, 3, low=-3.0, high=3.0)
    labels = backend.asarray([2, 0, 0, 1])
    got = F.cross_entropy(dlscratch.tensor(logits, dtype=np.float64), labels, reduction=reduction)
    np.testing.assert_allclose(got.numpy(), _cross_entropy_ref(B.to_cpu(logits), [2, 0, 0, 1], reduction), rtol=1e-12)
    gradcheck(lambda t, y: F.cross_entropy(t, y, reduction=reduction), logits, labels)
    gradcheck(lambda t: F.cross_entropy(t, dlscratch.tensor(labels), reduction=reduction), logits)


def test_cross_entropy_hand_computed_and_large_logits(backend):
    # Uniform logits: the loss is log(C). A confident right answer with huge logits: about 0.
    uniform = F.cross_entropy(dlscratch.zeros(2, 4), backend.asarray([0, 3]))
    assert uniform.item() == pytest.approx(np.log(4), rel=1e-6)
    logits = np.array([[1e4, 0.0, -1e4], [0.0, -1e4, 1e4]])
    loss = F.cross_entropy(dlscratch.tensor(logits, requires_grad=True), backend.asarray([0, 1]), reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(), _cross_entropy_ref(logits, [0, 1], "none"), rtol=1e-6)
    assert loss.detach().numpy()[0] == 0.0 and loss.detach().numpy()[1] == pytest.approx(2e4)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(make, reduction):
    x, target = make(3, 4), make(3, 4)
    diff = B.to_cpu(x) - B.to_cpu(target)
    expected = {"mean": (diff**2).mean(), "sum": (diff**2).sum(), "none": diff**2}[reduction]
    got = F.mse_loss(dlscratch.tensor(x, dtype=np.float64), dlscratch.tensor(target, dtype=np.float64), reduction)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    gradcheck(lambda a, b: F.mse_loss(a, b, reduction=reduction), x, target)


# ----- conversions -----


def test_astype(make):
    # A float32 round trip: the numerical derivative needs a step far above float32's rounding.
    gradcheck(lambda x: x.astype(np.float32) * 2, make(2, 3), eps=1e-2, atol=1e-4)
    gradcheck(lambda x: x.to(np.float32).double(), make(3), eps=1e-2, atol=1e-4)


# ----- gradcheck itself -----


class WrongSquare(Function):
    """``x ** 2`` with the factor 2 forgotten in backward."""

    def forward(self, x):
        self.x = x
        return x * x

    def backward(self, gy):
        return gy * self.x


def test_gradcheck_raises_on_a_wrong_backward():
    with pytest.raises(GradcheckError, match=r"gradcheck FAILED: 3 elements checked; worst at input 0, element \(1,\)"):
        gradcheck(lambda x: WrongSquare()(x).sum(), np.array([0.5, 3.0, 1.0]))


def test_gradcheck_report_names_the_worst_element():
    report = gradcheck(lambda x: WrongSquare()(x).sum(), np.array([0.5, 3.0, 1.0]), raise_exception=False)
    assert not report and not report.ok
    assert report.input_index == 0 and report.element == (1,) and report.checked == 3
    assert report.numeric == pytest.approx(2 * report.analytic, rel=1e-6)
    assert report.abs_error == pytest.approx(abs(report.analytic), rel=1e-6)
    assert report.abs_error > report.tolerance
    assert "FAILED" in str(report) and "element (1,)" in str(report)


def test_gradcheck_finds_the_wrong_input():
    class WrongSecondInput(Function):
        def forward(self, a, b):
            return a * b

        def backward(self, gy):
            a, b = self.inputs
            return gy * b.data, gy * 2 * a.data

    report = gradcheck(lambda a, b: WrongSecondInput()(a, b), np.ones((2, 2)), np.ones((2, 2)), raise_exception=False)
    assert not report and report.input_index == 1


def test_gradcheck_passes_integer_inputs_through_and_reports_success():
    report = gradcheck(lambda x, i: x[i] * 3, np.arange(4.0), np.array([3, 1]))
    assert report and report.ok and report.checked == 4
    assert "passed" in str(report)


def test_gradcheck_needs_a_floating_point_input():
    with pytest.raises(ValueError, match="no floating-point input"):
        gradcheck(lambda i: i * 2, np.array([1, 2]))
