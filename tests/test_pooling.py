"""max_pool2d and avg_pool2d: the seminar's example, a loop reference, padding that never wins,
gradient checks, the max-pool backward variants, ties, and the error messages."""

import contextlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_strategies import batch_last, window_geometries

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as B
from dlscratch.engine import switch
from dlscratch.fast.pooling import MAX_POOL_BACKWARDS

pytestmark = pytest.mark.usefixtures("path")  # every test on the reference path and on the fast path

SEMINAR = [[1, 2, 1, 0], [0, 1, 2, 3], [3, 0, 1, 2], [2, 4, 0, 1]]

# (x shape, kernel_size, stride, padding): tiling, overlapping, remainders, non-square, batch of one.
CASES = [
    ((2, 3, 4, 6), 2, None, 0),
    ((1, 2, 7, 5), 3, 2, 1),
    ((2, 1, 5, 5), 2, 1, 1),
    ((1, 3, 6, 7), (3, 2), (3, 1), (1, 0)),
    ((2, 2, 5, 4), (1, 2), (2, 2), 0),
    ((1, 1, 3, 3), 3, None, 1),
]


def pair(v):
    return (v, v) if isinstance(v, int) else v


def pool_reference(x, kernel_size, stride, padding, op):
    """The definition, one window at a time (max pads with -inf, avg with zeros)."""
    (kh, kw), (ph, pw) = pair(kernel_size), pair(padding)
    sh, sw = pair(kernel_size if stride is None else stride)
    fill = -np.inf if op == "max" else 0.0
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    Ho, Wo = (padded.shape[2] - kh) // sh + 1, (padded.shape[3] - kw) // sw + 1
    y = np.empty(x.shape[:2] + (Ho, Wo), dtype=x.dtype)
    for oy, ox in np.ndindex(Ho, Wo):
        window = padded[:, :, oy * sh : oy * sh + kh, ox * sw : ox * sw + kw]
        y[:, :, oy, ox] = window.max(axis=(2, 3)) if op == "max" else window.mean(axis=(2, 3))
    return y


def distinct(shape, seed=0, low=-1000):
    """Distinct float32 values: no ties in any window."""
    size = int(np.prod(shape))
    values = np.random.default_rng(seed).permutation(size) + low
    return (values.reshape(shape) / 8).astype(np.float32)


def test_seminar_max_pooling_example():
    x = dlscratch.tensor([[SEMINAR]], dtype=np.float32)
    assert F.max_pool2d(x, 2, 2).data[0, 0].tolist() == [[2, 3], [4, 2]]
    assert F.avg_pool2d(x, 2).data[0, 0].tolist() == [[1, 1.5], [2.25, 1]]


@pytest.mark.parametrize("layout", [np.asarray, batch_last])
@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("shape, k, s, p", CASES)
def test_pooling_equals_the_loop_definition(layout, op, shape, k, s, p):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    pool = F.max_pool2d if op == "max" else F.avg_pool2d
    y = pool(layout(x), k, s, p)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.data, pool_reference(x, k, s, p, op), rtol=1e-6, atol=1e-7)


@given(geometry=window_geometries(max_kernel=3, batch=(1, 2), pooling=True), last=st.booleans())
def test_property_pooling_matches_the_definition_and_variants_agree(geometry, last):
    shape, k, s, p = geometry
    x = distinct(shape, seed=7)
    x_in = batch_last(x) if last else x
    for op, pool in (("max", F.max_pool2d), ("avg", F.avg_pool2d)):
        np.testing.assert_allclose(pool(x_in, k, s, p).data, pool_reference(x, k, s, p, op), rtol=1e-6)
    gy = np.random.default_rng(8).integers(-9, 10, F.max_pool2d(x, k, s, p).shape).astype(np.float32)
    grads = [_max_pool_grad(x_in, k, s, p, how, gy) for how in (None, "offsets", "mask", "scatter_add")]
    for grad in grads[1:]:
        assert np.array_equal(grad, grads[0])


def test_output_sizes_are_pytorchs_with_ceil_mode_false():
    x = np.zeros((1, 1, 7, 5), np.float32)
    assert F.max_pool2d(x, 2).shape == (1, 1, 3, 2)
    assert F.max_pool2d(x, 3, 2, 1).shape == (1, 1, 4, 3)
    assert F.avg_pool2d(x, (2, 3), (1, 2)).shape == (1, 1, 6, 2)


def test_max_pool_padding_never_wins_over_negative_inputs():
    x = -np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)  # -1 ... -16
    y = F.max_pool2d(x, 2, 2, padding=1).data[0, 0]
    # Zero padding would give 0 everywhere on the border.
    assert y.tolist() == [[-1, -2, -4], [-5, -6, -8], [-13, -14, -16]]


def test_avg_pool_counts_the_zero_padding():
    x = np.ones((1, 1, 2, 2), np.float32)
    assert F.avg_pool2d(x, 2, 2, padding=1).data[0, 0].tolist() == [[0.25, 0.25], [0.25, 0.25]]


@pytest.mark.parametrize("shape, k, s, p", CASES)
def test_max_pool_gradcheck(shape, k, s, p):
    x = dlscratch.tensor(distinct(shape, seed=2))
    dlscratch.gradcheck(lambda t: F.max_pool2d(t, k, s, p), x)


@pytest.mark.parametrize("shape, k, s, p", CASES)
def test_avg_pool_gradcheck(shape, k, s, p):
    x = dlscratch.randn(*shape)
    dlscratch.gradcheck(lambda t: F.avg_pool2d(t, k, s, p), x)


def _max_pool_grad(x, k, s, p, how, gy=None):
    """The input gradient of max pooling with backward variant ``how`` (a fast-path variant), or
    of the current path's max pooling when ``how`` is None."""
    x = dlscratch.tensor(x, requires_grad=True)
    with switch.fast_path() if how else contextlib.nullcontext():
        y = F.max_pool2d(x, k, s, p, backward=how)
    y.backward(dlscratch.tensor(np.ones(y.shape, np.float32) if gy is None else gy))
    return x.grad.data


@pytest.mark.parametrize("layout", [np.asarray, batch_last])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_backward_variants_agree_without_ties(layout, case):
    shape, k, s, p = CASES[case]
    x = layout(distinct(shape, seed=3))
    y_shape = F.max_pool2d(x, k, s, p).shape
    gy = np.random.default_rng(4).integers(-9, 10, y_shape).astype(np.float32)  # small integers: exact sums
    (kh, kw), (sh, sw) = pair(k), pair(k if s is None else s)
    overlapping = sh < kh or sw < kw
    variants = [None] + [how for how in MAX_POOL_BACKWARDS if not (how == "argmax_scatter" and overlapping)]
    grads = [_max_pool_grad(x, k, s, p, how, gy) for how in variants]
    assert len(grads) >= 3
    for how, grad in zip(variants, grads):
        assert np.array_equal(grad, grads[0]), how


def test_ties_mask_gives_every_maximum_the_gradient_the_others_give_one():
    x = np.array([[[[5, 5], [5, 5]]]], np.float32)
    assert _max_pool_grad(x, 2, 2, 0, "mask").tolist() == [[[[1, 1], [1, 1]]]]
    for how in (None, "offsets", "argmax_scatter", "scatter_add"):  # None: the path under test
        assert _max_pool_grad(x, 2, 2, 0, how).tolist() == [[[[1, 0], [0, 0]]]], how
    # A partial tie: the leftmost column holding the maximum wins, then its topmost element.
    x = np.array([[[[1, 2], [2, 0]]]], np.float32)
    assert _max_pool_grad(x, 2, 2, 0, "mask").tolist() == [[[[0, 1], [1, 0]]]]
    for how in (None, "offsets", "argmax_scatter", "scatter_add"):
        assert _max_pool_grad(x, 2, 2, 0, how).tolist() == [[[[0, 0], [1, 0]]]], how


def test_overlapping_windows_add_up_in_the_gradient():
    x = np.array([[[[0, 9, 0], [0, 0, 0]]]], np.float32)  # 9 is the maximum of both 2x2 windows
    for how in (None, "offsets", "mask", "scatter_add"):
        assert _max_pool_grad(x, 2, 1, 0, how).tolist() == [[[[0, 2, 0], [0, 0, 0]]]], how


def test_backward_does_not_modify_the_incoming_gradient():
    x = dlscratch.tensor(distinct((1, 2, 4, 4)), requires_grad=True)
    gy = dlscratch.tensor(np.ones((1, 2, 2, 2), np.float32))
    for pool in (F.max_pool2d, F.avg_pool2d):
        pool(x, 2).backward(gy)
    assert gy.data.tolist() == np.ones((1, 2, 2, 2)).tolist()


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda x: F.max_pool2d(x[0], 2), ValueError, r"max_pool2d: expected a 4-D input \(N, C, H, W\), got"),
        (lambda x: F.avg_pool2d(x, 5), ValueError, r"avg_pool2d: kernel 5x5 is larger than the padded input 4x4"),
        (lambda x: F.max_pool2d(x, 2, padding=2), ValueError, r"padding \(2, 2\) must be at most half the kernel"),
        (lambda x: F.max_pool2d(x, 2, backward="fancy"), ValueError, r"unknown backward 'fancy'; choose one of"),
        (lambda x: F.max_pool2d(x, 3, 1, backward="argmax_scatter"), ValueError, r"'argmax_scatter' assigns.*overlap"),
        (lambda x: F.max_pool2d(x.astype(np.int64), 2), TypeError, r"expected a floating-point input, got int64"),
    ],
)
def test_bad_input_is_rejected_with_a_clear_message(fast_path, call, error, message):
    with pytest.raises(error, match=message):
        call(np.zeros((1, 1, 4, 4), np.float32))


@pytest.mark.gpu
@pytest.mark.parametrize("how", MAX_POOL_BACKWARDS)
def test_pooling_on_the_gpu_matches_numpy(fast_path, backend, how):
    if backend is np:
        pytest.skip("CuPy only")
    shape, k, s, p = CASES[0]
    x = distinct(shape, seed=5)
    gy = np.random.default_rng(6).standard_normal(F.max_pool2d(x, k, s, p).shape).astype(np.float32)
    expected = _max_pool_grad(x, k, s, p, how, gy)
    xg = dlscratch.tensor(B.to_gpu(x), requires_grad=True)
    y = F.max_pool2d(xg, k, s, p, backward=how)
    np.testing.assert_array_equal(B.to_cpu(y.data), F.max_pool2d(x, k, s, p).data)
    y.backward(dlscratch.tensor(B.to_gpu(gy)))
    np.testing.assert_array_equal(B.to_cpu(xg.grad.data), expected)
    np.testing.assert_allclose(B.to_cpu(F.avg_pool2d(B.to_gpu(x), 3, 2, 1).data), F.avg_pool2d(x, 3, 2, 1).data)
