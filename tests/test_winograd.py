"""Winograd's minimal filtering (dlscratch/operations/winograd.py): the transforms are exact, and the 2-D
convolution equals im2col's, forward and backward, with gradients checked against float64 central differences."""

from fractions import Fraction

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch.operations.winograd import WinogradConv2d, transforms


@pytest.mark.parametrize("m, r", [(2, 3), (4, 3), (3, 2), (6, 3)])
def test_the_transforms_compute_a_correlation_exactly(m, r):
    AT, G, BT = transforms(m, r)
    n = m + r - 1
    rng = np.random.default_rng(m * 10 + r)
    d = [Fraction(int(v)) for v in rng.integers(-9, 10, size=n)]
    g = [Fraction(int(v)) for v in rng.integers(-9, 10, size=r)]
    Gg = [sum(G[j][k] * g[k] for k in range(r)) for j in range(n)]
    Bd = [sum(BT[j][k] * d[k] for k in range(n)) for j in range(n)]
    y = [sum(AT[i][j] * Gg[j] * Bd[j] for j in range(n)) for i in range(m)]
    assert y == [sum(d[i + k] * g[k] for k in range(r)) for i in range(m)]
    assert all(x.denominator == 1 for row in BT for x in row)  # the input transform is whole numbers


def test_f2_3_is_lavin_and_grays_up_to_the_sign_of_a_row():
    AT, G, BT = transforms(2)
    assert BT == [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, -1, 0, 1]]
    assert G == [[1, 0, 0], [Fraction(1, 2)] * 3, [Fraction(1, 2), Fraction(-1, 2), Fraction(1, 2)], [0, 0, 1]]
    assert AT == [[1, 1, 1, 0], [0, 1, -1, 1]]


def test_points_must_be_distinct_and_enough():
    with pytest.raises(ValueError, match="distinct"):
        transforms(2, 3, points=[0, 1, 1])
    with pytest.raises(ValueError, match="needs 3 distinct"):
        transforms(2, 3, points=[0, 1])


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("shape, padding", [((2, 3, 7, 6), 1), ((1, 2, 5, 5), 0), ((3, 4, 8, 9), 2), ((1, 1, 3, 3), 0)])
def test_winograd_equals_im2col_forward_and_backward_in_float64(m, shape, padding):
    rng = np.random.default_rng(sum(shape) + m)
    x, w, b = rng.standard_normal(shape), rng.standard_normal((5, shape[1], 3, 3)), rng.standard_normal(5)
    results = []
    for conv in (lambda x, w, b: WinogradConv2d(m, (padding, padding))(x, w, b),
                 lambda x, w, b: F.conv2d(x, w, b, padding=padding)):
        inputs = [dlscratch.tensor(a, dtype=np.float64, requires_grad=True) for a in (x, w, b)]
        y = conv(*inputs)
        (y * dlscratch.tensor(np.cos(np.arange(y.numel())).reshape(y.shape))).sum().backward()
        results.append([y.detach().numpy()] + [t.grad.numpy() for t in inputs])
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("m", [2, 4])
def test_winograd_gradcheck(m):
    rng = np.random.default_rng(m)
    x, w, b = (dlscratch.tensor(rng.standard_normal(s), dtype=np.float64, requires_grad=True)
               for s in ((2, 2, 6, 5), (3, 2, 3, 3), (3,)))
    dlscratch.gradcheck(lambda x, w, b: WinogradConv2d(m, (1, 1))(x, w, b), x, w, b)
    dlscratch.gradcheck(lambda x, w: WinogradConv2d(m, (0, 0))(x, w), x, w)


@pytest.mark.parametrize("m", [2, 4])
def test_winograd_takes_an_input_of_no_channels_as_im2col_does(m):
    x, w, b = np.zeros((2, 0, 5, 4)), np.zeros((3, 0, 3, 3)), np.arange(3.0)
    got = F.conv2d(dlscratch.tensor(x), dlscratch.tensor(w), dlscratch.tensor(b), padding=1, algorithm=f"winograd{m}")
    expected = F.conv2d(dlscratch.tensor(x), dlscratch.tensor(w), dlscratch.tensor(b), padding=1)
    assert got.shape == (2, 3, 5, 4)
    np.testing.assert_array_equal(dlscratch.backend.to_cpu(got.data), dlscratch.backend.to_cpu(expected.data))


def relative_error(got, exact):
    return float(np.abs(got.astype(np.float64) - exact).max() / np.abs(exact).max())


def test_under_autocast_every_algorithm_is_as_accurate_as_im2col_and_gives_float16():
    rng = np.random.default_rng(7)
    x, w, b = rng.standard_normal((4, 16, 12, 12)), rng.standard_normal((16, 16, 3, 3)) / 12, rng.standard_normal(16)
    exact = F.conv2d(*(dlscratch.tensor(a, dtype=np.float64) for a in (x, w, b)), padding=1).numpy()
    errors = {}
    for algorithm in ("im2col", "winograd2", "winograd4", "fft"):
        inputs = [dlscratch.tensor(a, dtype=np.float32, requires_grad=True) for a in (x, w, b)]
        with dlscratch.amp.autocast("cpu", dtype=np.float16):
            y = F.conv2d(*inputs, padding=1, algorithm=algorithm)
        y.float().sum().backward()
        assert y.dtype == np.float16 and all(t.grad.dtype == np.float32 for t in inputs)
        errors[algorithm] = relative_error(y.detach().numpy(), exact)
    # float16 inputs and output, float32 tiles: one rounding of each input and of the output. In float16
    # throughout, F(4x4) was 1.1% off, 20x im2col (issue 39).
    assert max(errors.values()) <= 2 * errors["im2col"], errors


def test_float16_gradients_come_back_in_float16_close_to_float64():
    rng = np.random.default_rng(8)
    arrays = rng.standard_normal((2, 3, 8, 8)), rng.standard_normal((4, 3, 3, 3)) / 5, rng.standard_normal(4)
    grads = {}
    for dtype in (np.float16, np.float64):
        inputs = [dlscratch.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
        y = WinogradConv2d(4, (1, 1))(*inputs)
        assert y.dtype == dtype
        (y.float() * dlscratch.tensor(np.cos(np.arange(y.numel())).reshape(y.shape))).sum().backward()
        grads[dtype] = [t.grad.numpy() for t in inputs]
    for half, exact in zip(grads[np.float16], grads[np.float64]):
        assert half.dtype == np.float16 and relative_error(half, exact) < 2e-3


def test_the_exact_transforms_are_computed_once_per_tile_size(monkeypatch):
    import dlscratch.operations.winograd as winograd
    calls = []
    monkeypatch.setattr(winograd, "transforms", lambda m: calls.append(m) or transforms(m))
    winograd.kron_transforms.cache_clear()
    x, w = dlscratch.tensor(np.ones((1, 2, 6, 6))), dlscratch.tensor(np.ones((3, 2, 3, 3)))
    for _ in range(3):
        for algorithm in ("winograd2", "winograd4"):
            F.conv2d(x, w, padding=1, algorithm=algorithm)
    assert calls == [2, 4]
    winograd.kron_transforms.cache_clear()
