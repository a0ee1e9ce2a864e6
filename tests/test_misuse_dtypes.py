"""Integer operands never widen a float tensor (PyTorch's rule, dtypes.py): float32 mixed with any
integer or bool tensor, array, list or number stays float32, forward and backward, and gives the
values of the same computation with the integers converted first."""

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import nn, optim
from dlscratch.data import DataLoader, TensorDataset

FLOATS = [np.float32, np.float64]
INTEGERS = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64]

# binary operations f(float operand, integer operand), both orders where the order matters
BINARY = {
    "add": lambda a, b: a + b,
    "radd": lambda a, b: b + a,
    "sub": lambda a, b: a - b,
    "rsub": lambda a, b: b - a,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b + 1),
    "rdiv": lambda a, b: (b + 1) / (a + 3),
    "pow": lambda a, b: (a + 3) ** (b + 1),
    "matmul": lambda a, b: a.reshape(2, 3) @ b.reshape(3, 2),
    "rmatmul": lambda a, b: b.reshape(2, 3) @ a.reshape(3, 2),
    "linear": lambda a, b: F.linear(b.reshape(2, 3), a.reshape(2, 3)),
    "mse_loss": lambda a, b: F.mse_loss(a, b),
    "concatenate": lambda a, b: F.concatenate([a, b]),
    "stack": lambda a, b: F.stack([b, a]),
}


def _operands(float_dtype, int_dtype):
    rng = np.random.default_rng(0)
    a = dlscratch.tensor(rng.uniform(0.5, 1.5, 6).astype(float_dtype), dtype=float_dtype, requires_grad=True)
    ints = rng.integers(0, 2 if int_dtype is np.bool_ else 5, 6).astype(int_dtype)
    return a, ints


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("int_dtype", INTEGERS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("float_dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("as_", ["tensor", "array"])
def test_integer_operands_take_the_float_dtype(op, int_dtype, float_dtype, as_):
    a, ints = _operands(float_dtype, int_dtype)
    b = dlscratch.tensor(ints) if as_ == "tensor" else ints
    if as_ == "array" and op in ("radd", "rsub", "rdiv", "rmatmul", "linear", "concatenate", "stack"):
        b = dlscratch.tensor(ints)  # a bare NumPy array on the left is NumPy's business, not ours
    y = BINARY[op](a, b)
    assert y.dtype == float_dtype
    y.sum().backward()
    assert a.grad.dtype == float_dtype
    # the values are those of the float computation
    a_ref = dlscratch.tensor(a.detach().numpy(), dtype=float_dtype)
    expected = BINARY[op](a_ref, dlscratch.tensor(ints.astype(float_dtype), dtype=float_dtype))
    np.testing.assert_allclose(y.detach().numpy(), expected.numpy(), rtol=1e-6)


@pytest.mark.parametrize("int_dtype", INTEGERS, ids=lambda d: np.dtype(d).name)
def test_lists_and_python_numbers_keep_float32(int_dtype):
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    for y in (x + [1, 2], [1, 2] - x, x * [True, False], F.mse_loss(x, [1, 2]), x * 3, x / np.int64(2)):
        assert y.dtype == np.float32, y
    i = dlscratch.tensor(np.array([1, 2], dtype=int_dtype))
    for y in (i * 0.5, 0.5 + i, i / 2, i * np.float64(0.5)):
        assert y.dtype == np.float32, y  # floats made from integers alone: float32, as in PyTorch


@pytest.mark.parametrize("int_dtype", [np.uint8, np.int64], ids=lambda d: np.dtype(d).name)
def test_layers_fed_integers_run_in_float32(int_dtype):
    dlscratch.manual_seed(0)
    pixels = np.random.default_rng(0).integers(0, 256, (4, 1, 6, 6)).astype(int_dtype)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    out = model(dlscratch.tensor(pixels))
    assert out.dtype == np.float32
    F.cross_entropy(out, np.array([0, 1, 2, 0], dtype=int_dtype)).backward()
    assert all(p.grad.dtype == np.float32 for p in model.parameters())
    expected = model(dlscratch.tensor(pixels.astype(np.float32)))
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())


def test_raw_uint8_pixels_train_in_float32_through_the_data_loader():
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (32, 8)).astype(np.uint8)
    labels = (images[:, 0] > 127).astype(np.uint8)
    loader = DataLoader(TensorDataset(images, labels), batch_size=8)
    dlscratch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4), nn.Tanh(), nn.Linear(4, 2))
    opt = optim.SGD(model.parameters(), lr=1e-4)
    for xb, yb in loader:
        assert xb.dtype == np.uint8  # a quarter of int64's bytes on the way to the model
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        assert loss.dtype == np.float32
        loss.backward()
        opt.step()
    assert all(p.dtype == np.float32 and p.grad.dtype == np.float32 for p in model.parameters())


def test_labels_stay_integers_and_float_labels_are_still_refused():
    logits = dlscratch.tensor([[1.0, 2.0], [0.5, 0.1]], requires_grad=True)
    for labels in (np.array([1, 0], dtype=np.uint8), dlscratch.tensor([1, 0])):
        loss = F.cross_entropy(logits, labels)
        assert loss.dtype == np.float32
    with pytest.raises(ValueError, match="labels must be integer class indices"):
        F.cross_entropy(logits, np.array([1.0, 0.0]))


def test_float_operands_still_decide_among_themselves():
    a = dlscratch.ones(2, requires_grad=True)
    b = dlscratch.ones(2, dtype=np.float64)
    assert (a + b).dtype == np.float64  # a float64 tensor asked for float64, as in PyTorch
    with pytest.raises(TypeError, match="share one floating-point dtype"):
        F.conv2d(dlscratch.ones(1, 1, 3, 3, dtype=np.float64), dlscratch.ones(1, 1, 2, 2))
