"""``Tensor``: construction and dtype rules, properties, repr, conversions, comparisons."""

import numpy as np
import pytest

import dlscratch
from dlscratch import Tensor
from dlscratch import backend as B

# ----- construction -----


def test_python_floats_become_float32(backend):
    x = dlscratch.tensor([1.5, 2.0])
    assert x.dtype == np.float32
    assert type(x.data) is backend.ndarray and x.device == ("cpu" if backend is np else "gpu")
    np.testing.assert_array_equal(x.numpy(), [1.5, 2.0])


def test_float64_array_becomes_float32():
    x = Tensor(np.array([0.1, 0.2]))
    assert x.dtype == np.float32
    np.testing.assert_array_equal(x.numpy(), np.array([0.1, 0.2], dtype=np.float32))


def test_integers_stay_integers():
    assert Tensor([1, 2]).dtype == np.int64
    assert Tensor(3).dtype == np.int64 and Tensor(3).shape == ()
    assert Tensor(np.array([1, 2], dtype=np.int32)).dtype == np.int32


def test_explicit_dtype_is_kept():
    assert Tensor([1.0, 2.0], dtype=np.float64).dtype == np.float64
    assert Tensor(np.array([0.1]), dtype=np.float64).item() == 0.1
    assert Tensor([1, 2], dtype=np.float32).dtype == np.float32


def test_scalar_tensor():
    x = Tensor(2.5)
    assert x.shape == () and x.ndim == 0 and x.dtype == np.float32 and x.item() == 2.5


def test_requires_grad_needs_floating_point():
    message = r"only Tensors of floating point dtype can require gradients \(this one is int64\)"
    with pytest.raises(RuntimeError, match=message):
        Tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        Tensor([1, 2]).requires_grad_()
    assert Tensor([1.0]).requires_grad_().requires_grad


def test_tensor_from_tensor_keeps_values_not_graph():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    y = Tensor(x * 2)
    assert y.creator is None and not y.requires_grad
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])


def test_factories(backend):
    dlscratch.manual_seed(0)
    checks = [
        (dlscratch.zeros(2, 3), (2, 3), np.float32),
        (dlscratch.ones((2, 3)), (2, 3), np.float32),
        (dlscratch.randn(4, 2), (4, 2), np.float32),
        (dlscratch.rand(5, dtype=np.float64), (5,), np.float64),
        (dlscratch.randint(0, 3, (6,)), (6,), np.int64),
        (dlscratch.arange(5), (5,), np.int64),
    ]
    for t, shape, dtype in checks:
        assert t.shape == shape and t.dtype == dtype and type(t.data) is backend.ndarray
    np.testing.assert_array_equal(dlscratch.ones(2).numpy(), [1, 1])
    r = dlscratch.rand(1000).numpy()
    assert 0 <= r.min() and r.max() < 1
    assert set(dlscratch.randint(0, 3, (100,)).tolist()) <= {0, 1, 2}
    z = dlscratch.zeros_like(dlscratch.ones(2, 2, dtype=np.float64), requires_grad=True)
    assert z.dtype == np.float64 and z.requires_grad and z.detach().numpy().sum() == 0


def test_manual_seed_makes_random_tensors_repeat(backend):
    dlscratch.manual_seed(123)
    a = dlscratch.randn(3, 4).numpy()
    dlscratch.manual_seed(123)
    b = dlscratch.randn(3, 4).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, dlscratch.randn(3, 4).numpy())


# ----- properties and conversions -----


def test_properties():
    x = dlscratch.zeros(2, 3, 4, requires_grad=True)
    assert x.shape == (2, 3, 4) and x.ndim == 3 and x.dtype == np.float32
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.numel() == 24 and len(x) == 2
    assert x.T.shape == (4, 3, 2)
    assert x.is_leaf and x.grad_fn is None and x.grad is None
    y = x.sum()
    assert not y.is_leaf and type(y.grad_fn).__name__ == "Sum"


def test_item_numpy_tolist(backend):
    x = dlscratch.tensor([[1.5, 2.0], [3.0, 4.0]])
    n = x.numpy()
    assert type(n) is np.ndarray and n.dtype == np.float32
    assert x.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert x[0, 0].item() == 1.5 and type(x[0, 0].item()) is float
    assert type(dlscratch.tensor([7]).item()) is int
    with pytest.raises(ValueError):
        x.item()


def test_repr_shows_data_dtype_device_and_grad():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "Tensor([1., 2.], dtype=float32, device=cpu, requires_grad=True)"
    y = (x * 3).sum()
    assert repr(y) == "Tensor(9., dtype=float32, device=cpu, grad_fn=<Sum>)"
    y.backward()
    assert repr(x) == "Tensor([1., 2.], dtype=float32, device=cpu, requires_grad=True, grad=[3., 3.])"
    assert repr(Tensor([1, 2])) == "Tensor([1, 2], dtype=int64, device=cpu)"


def test_comparisons_return_boolean_tensors_outside_the_graph(backend):
    x = dlscratch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = dlscratch.tensor([3.0, 2.0, 1.0])
    results = {
        "<": (x < 2, [True, False, False]),
        "<=": (x <= y, [True, True, False]),
        ">": (x > y, [False, False, True]),
        ">=": (x >= 2.0, [False, True, True]),
        "==": (x == y, [False, True, False]),
        "!=": (x != 2, [True, False, True]),
    }
    for op, (result, expected) in results.items():
        assert type(result) is dlscratch.Tensor and result.dtype == bool and type(result.data) is backend.ndarray, op
        assert not result.requires_grad and result.grad_fn is None, op
        np.testing.assert_array_equal(B.to_cpu(result.data), expected, err_msg=op)
    scalar = dlscratch.tensor(2.0) > 1  # NumPy compares 0-d arrays into a scalar: still a 0-d tensor here
    assert type(scalar) is dlscratch.Tensor and scalar.shape == () and scalar.item() is True and bool(scalar)
    hits = x > 1.5  # what a training loop's accuracy does with it: .float(), .sum(), .item()
    assert hits.sum().item() == 2 and hits.sum().dtype == np.int64
    assert hits.float().mean().item() == pytest.approx(2 / 3)


def test_tensors_stay_hashable():
    x, y = dlscratch.tensor([1.0]), dlscratch.tensor([1.0])
    assert len({x, y, x}) == 2


def test_max_over_dim_returns_values_and_indices(backend):
    x = dlscratch.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]], requires_grad=True)
    values, indices = x.max(1)
    np.testing.assert_array_equal(values.detach().numpy(), [5.0, 7.0])
    assert type(indices) is dlscratch.Tensor and indices.dtype == np.int64 and indices.tolist() == [1, 0]
    result = x.max(dim=0, keepdim=True)
    assert result.values.shape == (1, 3) and result.indices.shape == (1, 3)
    assert result.indices.tolist() == [[1, 0, 1]]
    values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[0], [0, 1, 0])  # row 1's tie: see test_misuse_shapes.py
    assert x.max().item() == 7.0
    assert x.argmax().item() == 3


def test_to_dtype_and_astype_stay_in_the_graph():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    y = x.to(np.float64)
    assert y.dtype == np.float64 and y.creator is not None
    (y * y).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
    assert x.astype(np.float32) is x
    assert x.double().dtype == np.float64 and x.double().float().dtype == np.float32


def test_to_device():
    x = dlscratch.tensor([1.0, 2.0])
    assert x.to("cpu") is x and x.cpu() is x
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        x.to("tpu")


def test_to_gpu_without_gpu_raises(no_gpu):
    with pytest.raises(RuntimeError, match="no usable GPU"):
        dlscratch.tensor([1.0]).to("gpu")


def test_to_gpu_and_back_carries_gradients(gpu):
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    g = x.to("gpu")
    assert g.device == "gpu" and B.is_gpu_array(g.data)
    y = (g * g).sum().to("cpu")
    assert y.device == "cpu"
    y.backward()
    assert x.grad.device == "cpu"
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_detach_shares_data_but_not_graph():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.data is y.data and not d.requires_grad and d.creator is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        d.sum().backward()
