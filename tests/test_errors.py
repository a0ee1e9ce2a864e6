"""Bad input: every error names the operation and the shapes (or devices), and says how to fix it."""

import re
import types

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import Tensor
from dlscratch import backend as B


def _raises(exc, fn, *fragments):
    """Check that ``fn()`` raises ``exc`` whose message contains every fragment."""
    with pytest.raises(exc) as info:
        fn()
    for fragment in fragments:
        assert fragment in str(info.value), f"{fragment!r} not in {str(info.value)!r}"


@pytest.mark.parametrize(
    "a_shape, b_shape", [((2, 3), (4, 5)), ((3,), (4, 5)), ((2, 3), (2,)), ((5, 2, 3), (5, 4, 2))], ids=str
)
def test_matmul_shape_mismatch(backend, a_shape, b_shape):
    a, b = dlscratch.ones(*a_shape), dlscratch.ones(*b_shape)
    _raises(ValueError, lambda: a @ b, "matmul", str(a_shape), str(b_shape), "must equal")


def test_matmul_of_a_scalar():
    _raises(ValueError, lambda: F.matmul(dlscratch.tensor(2.0), dlscratch.ones(2)), "matmul", "use *")


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_broadcasting_mismatch(backend, op):
    a, b = dlscratch.ones(2, 3), dlscratch.ones(4)
    _raises(ValueError, lambda: getattr(F, op)(a, b), f"{op}:", "(2, 3)", "(4,)", "broadcast")


def test_broadcast_to_an_incompatible_shape():
    _raises(ValueError, lambda: dlscratch.ones(2, 3).broadcast_to(3, 3), "broadcast_to", "(2, 3)")


def test_cross_entropy_label_dtype():
    logits, labels = dlscratch.ones(2, 3), np.array([0.0, 1.0])
    _raises(ValueError, lambda: F.cross_entropy(logits, labels), "cross_entropy", "integer class indices", "float")


@pytest.mark.parametrize("labels", [[0, 3], [-1, 0]], ids=["too-large", "negative"])
def test_cross_entropy_label_range(labels):
    logits, labels = dlscratch.ones(2, 3), np.array(labels)
    _raises(ValueError, lambda: F.cross_entropy(logits, labels), "cross_entropy", "[0, 3)", f"from {min(labels)} to")


@pytest.mark.parametrize("logits_shape, labels", [((2, 3), [0, 1, 2]), ((3,), [0]), ((2, 3), [[0], [1]])], ids=str)
def test_cross_entropy_shapes(logits_shape, labels):
    logits, labels = dlscratch.ones(*logits_shape), np.array(labels)
    expected = ("cross_entropy", "(N, C)", str(logits_shape), str(labels.shape))
    _raises(ValueError, lambda: F.cross_entropy(logits, labels), *expected)


def test_unknown_reduction():
    _raises(ValueError, lambda: F.cross_entropy(dlscratch.ones(2, 3), [0, 1], reduction="avg"), "'avg'", "'mean'")
    _raises(ValueError, lambda: F.mse_loss(dlscratch.ones(2), dlscratch.ones(2), reduction="max"), "mse_loss")


def test_mse_loss_shape_mismatch():
    _raises(ValueError, lambda: F.mse_loss(dlscratch.ones(2, 3), dlscratch.ones(3, 2)), "mse_loss", "(2, 3)", "(3, 2)")


@pytest.mark.parametrize("shape", [(4,), (4, -1), (5, 2)], ids=str)
def test_reshape_impossible(shape):
    _raises(ValueError, lambda: dlscratch.ones(2, 3).reshape(*shape), "reshape", "6 elements", "(2, 3)", str(shape))


def test_backward_with_wrong_grad_shape():
    y = dlscratch.ones(2, 3, requires_grad=True) * 2
    _raises(ValueError, lambda: y.backward(np.ones(3)), "backward", "(3,)", "(2, 3)")


def test_linear_shapes():
    x = dlscratch.ones(2, 3)
    _raises(ValueError, lambda: F.linear(x, dlscratch.ones(4, 2)), "linear", "(2, 3)", "(4, 2)")
    W, b = dlscratch.ones(4, 3), dlscratch.ones(3)
    _raises(ValueError, lambda: F.linear(x, W, b), "linear", "bias", "(3,)", "(4,)")


def test_joining_errors():
    _raises(ValueError, lambda: F.cat([]), "concatenate", "non-empty")
    _raises(ValueError, lambda: F.stack([]), "stack", "non-empty")
    _raises(ValueError, lambda: F.cat([dlscratch.ones(2, 3), dlscratch.ones(3, 2)]), "concatenate", "(2, 3)", "(3, 2)")
    _raises(ValueError, lambda: F.stack([dlscratch.ones(2, 3), dlscratch.ones(3, 2)]), "stack", "(2, 3)", "(3, 2)")


def test_axis_errors():
    x = dlscratch.ones(2, 3)
    _raises(IndexError, lambda: x.sum(2), "sum", "Dimension out of range", "[-2, 1]", "got 2")
    _raises(ValueError, lambda: x.mean((0, -2)), "mean", "repeated dim")
    _raises(ValueError, lambda: x.permute(0, 0), "permute", "(0, 0)", "not a permutation")
    _raises(ValueError, lambda: x.transpose(0), "transpose", "both dimensions")
    _raises(ValueError, lambda: x.amax((0, 0)), "amax", "repeated dim")


# ----- mixing devices -----


class FakeGpuArray(np.ndarray):
    """Host memory that the patched shim below reports as living on the GPU."""


@pytest.fixture
def fake_gpu(monkeypatch):
    """Pretend CuPy is loaded and arrays of type ``FakeGpuArray`` are on the GPU."""
    monkeypatch.setattr(B, "cupy", types.ModuleType("cupy"))
    monkeypatch.setattr(B, "is_gpu_array", lambda a: isinstance(a, FakeGpuArray))
    return lambda values: Tensor._make(np.asarray(values, dtype=np.float32).view(FakeGpuArray), False)


@pytest.mark.parametrize("op", ["add", "mul", "matmul"])
def test_mixing_devices_says_which_is_where(fake_gpu, op):
    on_cpu = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    on_gpu = fake_gpu([3.0, 4.0])
    assert on_cpu.device == "cpu" and on_gpu.device == "gpu"
    with pytest.raises(RuntimeError) as info:
        getattr(F, op)(on_cpu, on_gpu)
    message = str(info.value)
    assert message.startswith(f"{op}: tensors are on different devices")
    assert "input 0 is on cpu, input 1 is on gpu" in message
    assert "x.to('gpu')" in message and "x.to('cpu')" in message


def test_mixing_devices_reports_every_input(fake_gpu):
    a, b, c = fake_gpu([1.0]), dlscratch.tensor([2.0]), fake_gpu([3.0])
    with pytest.raises(RuntimeError, match=re.escape("input 0 is on gpu, input 1 is on cpu, input 2 is on gpu")):
        F.cat([a, b, c])


def test_same_device_passes_the_check(fake_gpu):
    a, b = dlscratch.tensor([1.0]), dlscratch.tensor([2.0])
    assert (a + b).item() == 3.0


def test_mixing_real_devices(gpu):
    on_cpu, on_gpu = dlscratch.ones(2), dlscratch.ones(2, device="gpu")
    with pytest.raises(RuntimeError, match=r"add: .*input 0 is on cpu, input 1 is on gpu.*x.to\('gpu'\)"):
        on_cpu + on_gpu
