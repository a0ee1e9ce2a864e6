"""Initialisers: fans, gains, and the statistics of the values they draw."""

import math

import numpy as np
import pytest

import dlscratch
from dlscratch.nn import init


def _empty(*shape, xp=np, dtype=np.float32):
    return dlscratch.Tensor(xp.full(shape, np.nan, dtype=dtype), dtype=dtype)


def test_fans_of_linear_and_conv_weights():
    assert init.calculate_fan_in_and_fan_out(_empty(256, 784)) == (784, 256)
    # a conv weight (out, in, kh, kw): each input channel brings kh * kw products
    assert init.calculate_fan_in_and_fan_out(_empty(8, 3, 5, 5)) == (3 * 25, 8 * 25)
    with pytest.raises(ValueError, match=r"at least 2 dimensions .* got shape \(5,\)"):
        init.calculate_fan_in_and_fan_out(_empty(5))


def test_gains():
    assert init.calculate_gain("linear") == 1.0
    assert init.calculate_gain("sigmoid") == 1.0
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01**2)))
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == pytest.approx(math.sqrt(1 / 3))
    with pytest.raises(ValueError, match="unknown nonlinearity 'swish'"):
        init.calculate_gain("swish")


def _check_uniform(values, bound):
    """Inside [-bound, bound], reaching near both ends, with the mean 0 and variance bound**2 / 3
    of U(-b, b) (within 5 standard errors of the sample statistics)."""
    n = values.size
    assert values.min() >= -bound and values.max() <= bound
    assert values.min() < -0.99 * bound and values.max() > 0.99 * bound
    assert abs(values.mean()) < 5 * bound / math.sqrt(3 * n)
    assert values.var() == pytest.approx(bound**2 / 3, rel=5 * math.sqrt(0.8 / n))


def test_kaiming_uniform_bounds_in_place_float32(backend):
    w = _empty(400, 300, xp=backend)
    array = w.data
    assert init.kaiming_uniform_(w, nonlinearity="relu") is w
    assert w.data is array and w.dtype == np.float32 and w.device == dlscratch.backend.device()
    _check_uniform(w.numpy(), math.sqrt(2) * math.sqrt(3 / 300))


def test_kaiming_uniform_pytorch_default_and_fan_out_and_4d():
    w = init.kaiming_uniform_(_empty(400, 300), a=math.sqrt(5))  # PyTorch's Linear: 1/sqrt(fan_in)
    _check_uniform(w.numpy(), 1 / math.sqrt(300))
    w = init.kaiming_uniform_(_empty(400, 300), mode="fan_out", nonlinearity="relu")
    _check_uniform(w.numpy(), math.sqrt(2) * math.sqrt(3 / 400))
    conv = init.kaiming_uniform_(_empty(64, 32, 3, 3), nonlinearity="relu")
    _check_uniform(conv.numpy(), math.sqrt(2) * math.sqrt(3 / (32 * 9)))
    with pytest.raises(ValueError, match="mode must be 'fan_in' or 'fan_out'"):
        init.kaiming_uniform_(_empty(4, 4), mode="fan_avg")


def test_xavier_uniform_bounds():
    w = init.xavier_uniform_(_empty(500, 300))
    _check_uniform(w.numpy(), math.sqrt(6 / 800))
    w = init.xavier_uniform_(_empty(16, 8, 5, 5), gain=init.calculate_gain("tanh"))
    _check_uniform(w.numpy(), 5 / 3 * math.sqrt(6 / (8 * 25 + 16 * 25)))


def test_normal_initialisers_have_the_right_spread():
    w = init.normal_(_empty(500, 400), mean=1.0, std=0.5).numpy()
    assert w.mean() == pytest.approx(1.0, abs=0.005) and w.std() == pytest.approx(0.5, rel=0.01)
    w = init.kaiming_normal_(_empty(500, 400), nonlinearity="relu").numpy()
    assert w.std() == pytest.approx(math.sqrt(2 / 400), rel=0.01)
    w = init.xavier_normal_(_empty(500, 400)).numpy()
    assert w.std() == pytest.approx(math.sqrt(2 / 900), rel=0.01)
    assert w.dtype == np.float32


def test_uniform_zeros_ones_and_float64():
    w = init.uniform_(_empty(1000), -2.0, 3.0).numpy()
    assert w.min() >= -2.0 and w.max() < 3.0 and w.mean() == pytest.approx(0.5, abs=0.15)
    assert np.all(init.zeros_(_empty(3, 2)).numpy() == 0)
    assert np.all(init.ones_(_empty(3, 2)).numpy() == 1)
    w64 = init.xavier_uniform_(_empty(20, 10, dtype=np.float64))
    assert w64.dtype == np.float64 and np.abs(w64.numpy()).max() <= math.sqrt(6 / 30)


def test_seeded_initialisation_repeats():
    dlscratch.manual_seed(3)
    a = init.kaiming_uniform_(_empty(5, 4)).numpy()
    dlscratch.manual_seed(3)
    b = init.kaiming_uniform_(_empty(5, 4)).numpy()
    np.testing.assert_array_equal(a, b)


def test_bad_targets_are_rejected():
    with pytest.raises(TypeError, match="fill a Tensor in place; got ndarray"):
        init.uniform_(np.zeros(3))
    with pytest.raises(TypeError, match="floating-point tensors, not int64"):
        init.zeros_(dlscratch.tensor([1, 2]))
