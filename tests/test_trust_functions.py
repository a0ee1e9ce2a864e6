"""Issue 26, round two of "trustworthy": the power's derivatives at special points, max pooling
that never picks its padding and propagates NaN, and one-line errors for bad dims, bad ``cat``
arguments, a non-tensor convolution input and bad pooling windows (PyTorch 2.13's behaviour)."""

import re
import warnings

import numpy as np
import pytest

import dlscratch
import dlscratch.fast.pooling  # noqa: F401  (registers the fast versions)
import dlscratch.functional as F
from dlscratch import nn

inf, nan = float("inf"), float("nan")


def tensor(values, requires_grad=False, xp=np):
    return dlscratch.tensor(xp.asarray(np.array(values, dtype=np.float32)), requires_grad=requires_grad)


# ----- 1. x ** p at special points -----


def test_power_zero_has_zero_gradient_everywhere_without_warnings(backend):
    x = tensor([0.0, -1.0, 2.0], requires_grad=True, xp=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x**0).sum().backward()
    assert x.grad.data.tolist() == [0.0, 0.0, 0.0]


def test_power_gradients_at_a_zero_base_are_pytorchs_without_warnings(backend):
    # torch: d/dx = where(p == 0, 0, p * x**(p-1)); d/dp = where(x == 0 & p >= 0, 0, x**p * log(x))
    x = tensor([0.0, 0.0, 2.0, 0.0, 0.0], requires_grad=True, xp=backend)
    p = tensor([2.0, 0.0, 3.0, -1.0, 0.5], requires_grad=True, xp=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = x**p
        y.sum().backward()
    assert y.data.tolist() == [0.0, 1.0, 8.0, inf, 0.0]
    assert x.grad.data.tolist() == [0.0, 0.0, 12.0, -inf, inf]
    np.testing.assert_allclose(p.grad.data.tolist(), [0.0, 0.0, 8 * np.log(2), -inf, 0.0], rtol=1e-6)


def test_power_of_a_negative_base_gives_nan_exponent_gradient_silently(backend):
    x, p = tensor([-2.0], requires_grad=True, xp=backend), tensor([2.0], requires_grad=True, xp=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x**p).sum().backward()
    assert x.grad.data.tolist() == [-4.0] and np.isnan(p.grad.data.tolist()).all()


# ----- 2. max pooling: padding never wins, NaN propagates -----


def test_max_pool_over_minus_infinity_sends_no_gradient_into_the_padding(path, backend):
    x = tensor(np.full((1, 1, 2, 2), -inf), requires_grad=True, xp=backend)
    y = F.max_pool2d(x, 2, 2, 1)
    y.sum().backward()
    assert y.data.reshape(-1).tolist() == [-inf] * 4
    assert x.grad.data.reshape(-1).tolist() == [1.0, 1.0, 1.0, 1.0]


def test_max_pool_over_minus_infinity_with_overlapping_windows_picks_each_windows_first_real_element(path, backend):
    # torch: each window's gradient goes to its top-left real element
    x = tensor(np.full((1, 1, 3, 3), -inf), requires_grad=True, xp=backend)
    F.max_pool2d(x, 3, 1, 1).sum().backward()
    assert x.grad.data[0, 0].tolist() == [[4, 2, 0], [2, 1, 0], [0, 0, 0]]


@pytest.mark.parametrize("how", ["offsets", "mask", "argmax_scatter", "scatter_add"])
def test_max_pool_backward_variants_send_no_gradient_into_the_padding(fast_path, backend, how):
    x = tensor(np.full((1, 1, 2, 2), -inf), requires_grad=True, xp=backend)
    F.max_pool2d(x, 2, 2, 1, backward=how).sum().backward()
    assert x.grad.data.reshape(-1).tolist() == [1.0, 1.0, 1.0, 1.0]


def test_max_pool_propagates_nan_and_sends_its_gradient_to_the_nan(path, backend):
    x = tensor([[[[1.0, nan, 0.0, 5.0], [3.0, 2.0, 4.0, 1.0]]]], requires_grad=True, xp=backend)
    y = F.max_pool2d(x, 2)
    y.sum().backward()
    assert np.isnan(y.data[0, 0, 0, 0].item()) and y.data[0, 0, 0, 1].item() == 5.0
    assert x.grad.data[0, 0].tolist() == [[0, 1, 0, 1], [0, 0, 0, 0]]


# ----- 3. clear errors -----

REDUCTIONS = {
    "sum": lambda x, d: x.sum(d),
    "mean": lambda x, d: x.mean(d),
    "amax": lambda x, d: x.amax(d),
    "max": lambda x, d: x.max(d).values,
    "F.sum": lambda x, d: F.sum(x, d),
    "F.mean": lambda x, d: F.mean(x, d),
    "F.amax": lambda x, d: F.amax(x, d),
}


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_take_a_numpy_integer_dim_like_an_int(name):
    x = tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    reduce = REDUCTIONS[name]
    assert reduce(x, np.int64(1)).data.tolist() == reduce(x, 1).data.tolist()
    assert reduce(x, np.int32(-2)).data.tolist() == reduce(x, 0).data.tolist()


def test_argmax_and_softmax_take_a_numpy_integer_dim():
    x = tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    assert x.argmax(np.int64(1)).tolist() == [1, 2]
    np.testing.assert_allclose(x.softmax(np.int64(0)).data, x.softmax(0).data)


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "F.sum"])
def test_reductions_refuse_a_float_dim_naming_dim(name):
    with pytest.raises(TypeError, match=r"dim must be an int or a tuple of ints, got float 1\.0$"):
        REDUCTIONS[name](tensor([[1.0, 2.0]]), 1.0)


def test_sum_refuses_a_float_inside_a_tuple_of_dims():
    with pytest.raises(TypeError, match=r"^sum: dim must be an int or a tuple of ints, got \(0, 1\.0\)$"):
        tensor([[1.0, 2.0]]).sum((0, 1.0))


def test_max_over_several_dims_points_to_amax():
    message = "max: dim must be one int, got (0, 1); for several dims use amax(dims)"
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        tensor([[1.0, 2.0]]).max((0, 1))


def test_a_one_dim_operation_refuses_a_float_dim():
    with pytest.raises(TypeError, match=r"^softmax: dim must be an int, got float 1\.0$"):
        tensor([[1.0, 2.0]]).softmax(1.0)


def test_cat_refuses_a_dim_out_of_range_like_pytorch():
    x = tensor([[1.0, 2.0]])
    message = "concatenate: Dimension out of range (expected to be in range of [-2, 1], but got 5)"
    with pytest.raises(IndexError, match=re.escape(message)):
        F.cat([x, x], dim=5)
    with pytest.raises(IndexError, match=re.escape(message.replace("concatenate", "stack").replace("-2, 1", "-3, 2"))):
        F.stack([x, x], dim=5)


def test_cat_refuses_a_generator():
    x = tensor([[1.0, 2.0]])
    expected = r": expected a sequence of tensors \(a list or tuple\), got generator; pass list\(\.\.\.\) of it$"
    with pytest.raises(TypeError, match="^concatenate" + expected):
        F.cat(t for t in [x, x])
    with pytest.raises(TypeError, match="^stack" + expected):
        F.stack(t for t in [x, x])
    with pytest.raises(TypeError, match=r"^concatenate: expected a sequence .* got Tensor$"):
        F.cat(x)


def test_cat_with_a_negative_dim_still_joins_and_differentiates():
    a, b = tensor([[1.0, 2.0]], requires_grad=True), tensor([[3.0]], requires_grad=True)
    y = F.cat([a, b], dim=-1)
    (y * tensor([[1.0, 2.0, 3.0]])).sum().backward()
    assert y.data.tolist() == [[1.0, 2.0, 3.0]]
    assert a.grad.data.tolist() == [[1.0, 2.0]] and b.grad.data.tolist() == [[3.0]]


def test_conv2d_refuses_a_list_input(path):
    weight = dlscratch.ones(1, 1, 1, 1)
    with pytest.raises(TypeError, match=r"^conv2d: input must be a Tensor, got list$"):
        F.conv2d([[[[1.0]]]], weight)
    with pytest.raises(TypeError, match=r"^conv2d: weight must be a Tensor, got list$"):
        F.conv2d(dlscratch.ones(1, 1, 1, 1), [[[[1.0]]]])


BAD_WINDOWS = [
    (dict(kernel_size=0), "kernel_size must be positive, got (0, 0)"),
    (dict(kernel_size=(2, -1)), "kernel_size must be positive, got (2, -1)"),
    (dict(kernel_size=2, stride=0), "stride must be positive, got (0, 0)"),
    (dict(kernel_size=2, stride=-1), "stride must be positive, got (-1, -1)"),
    (dict(kernel_size=2, padding=-1), "padding must be non-negative, got (-1, -1)"),
    (dict(kernel_size=2, padding=2), "padding (2, 2) must be at most half the kernel (2, 2)"),
    (dict(kernel_size=(4, 2), padding=(2, 2)), "padding (2, 2) must be at most half the kernel (4, 2)"),
]


@pytest.mark.parametrize("layer", [nn.MaxPool2d, nn.AvgPool2d])
@pytest.mark.parametrize("arguments, message", BAD_WINDOWS, ids=[str(a) for a, _ in BAD_WINDOWS])
def test_pooling_layers_refuse_a_bad_window_at_construction(layer, arguments, message):
    with pytest.raises(ValueError, match=f"^{layer.__name__}: {re.escape(message)}"):
        layer(**arguments)


@pytest.mark.parametrize("pool", [F.max_pool2d, F.avg_pool2d])
@pytest.mark.parametrize("arguments, message", BAD_WINDOWS, ids=[str(a) for a, _ in BAD_WINDOWS])
def test_pooling_functions_refuse_a_bad_window(path, pool, arguments, message):
    with pytest.raises(ValueError, match=f"^{pool.__name__}: {re.escape(message)}"):
        pool(dlscratch.ones(1, 1, 4, 4), **arguments)
