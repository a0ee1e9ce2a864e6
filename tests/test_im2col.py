"""im2col and col2im: every implementation equals the Python loops, col2im is the adjoint of
im2col, the documented column layout holds, and both are differentiable."""

import numpy as np
import pytest
from hypothesis import given
from property_strategies import batch_last, window_geometries

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as B
from dlscratch.fast.im2col import IM2COL, col2im_array, im2col_array
from dlscratch.operations.im2col import Im2col as ReferenceIm2col
from dlscratch.operations.im2col import col2im_reference, geometry, im2col_reference

pytestmark = pytest.mark.usefixtures("fast_path")  # the methods are fast-path variants; the reference is tested below

CPU_METHODS = ["slices", "strided"]

# (x shape, kernel_size, stride, padding): stride, padding, non-square, odd sizes, batch of one,
# a kernel as large as the padded input, a 1x1 kernel.
CASES = [
    ((2, 3, 5, 7), (3, 2), (2, 1), (1, 2)),
    ((1, 1, 4, 4), 3, 1, 0),
    ((3, 2, 6, 6), 2, 2, 0),
    ((2, 2, 5, 5), 3, 2, 1),
    ((1, 3, 7, 4), (1, 3), (3, 1), (0, 1)),
    ((2, 1, 3, 3), 5, 1, 1),
    ((2, 4, 3, 5), 1, 1, 0),
]


def integers(shape, seed=0, xp=np):
    """Small integers as float32: every sum is exact, so methods must agree bit for bit."""
    return xp.asarray(np.random.default_rng(seed).integers(-9, 10, shape).astype(np.float32))


def out_size(n, k, s, p):
    return (n + 2 * p - k) // s + 1


@pytest.mark.parametrize("method", CPU_METHODS)
@pytest.mark.parametrize("shape, k, s, p", CASES)
def test_im2col_equals_loops(method, shape, k, s, p):
    x = integers(shape)
    expected = im2col_array(x, k, s, p, method="loops")
    assert np.array_equal(im2col_array(x, k, s, p, method=method), expected)


@pytest.mark.parametrize("method", CPU_METHODS)
@pytest.mark.parametrize("shape, k, s, p", CASES)
def test_col2im_equals_loops(method, shape, k, s, p):
    cols_shape = im2col_array(np.zeros(shape, np.float32), k, s, p).shape
    cols = integers(cols_shape, seed=1)
    expected = col2im_array(cols, shape, k, s, p, method="loops")
    got = col2im_array(cols, shape, k, s, p, method=method)
    assert got.shape == shape and np.array_equal(got, expected)


@pytest.mark.parametrize("method", ["loops", *CPU_METHODS])
@pytest.mark.parametrize("shape, k, s, p", CASES)
def test_col2im_is_the_adjoint_of_im2col(method, shape, k, s, p):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape)
    cols = im2col_array(x, k, s, p, method=method)
    c = rng.standard_normal(cols.shape)
    assert np.isclose(np.sum(cols * c), np.sum(x * col2im_array(c, shape, k, s, p, method=method)), rtol=1e-12)


def test_column_layout_by_hand():
    """Rows: kernel offsets (0,0), (0,1), (1,0), (1,1); columns: windows, the image index fastest."""
    x = np.stack([np.arange(6.0).reshape(1, 2, 3), 10 + np.arange(6.0).reshape(1, 2, 3)]).astype(np.float32)
    expected = [[0, 10, 1, 11], [1, 11, 2, 12], [3, 13, 4, 14], [4, 14, 5, 15]]
    for method in ["loops", *CPU_METHODS]:
        assert im2col_array(x, 2, method=method).tolist() == expected


def test_column_layout_formula_with_padding_and_stride():
    x = integers((2, 3, 5, 4))
    kh, kw, sh, sw, ph, pw = 3, 2, 2, 1, 1, 1
    cols = im2col_array(x, (kh, kw), (sh, sw), (ph, pw))
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    Ho, Wo, N = out_size(5, kh, sh, ph), out_size(4, kw, sw, pw), 2
    assert cols.shape == (3 * kh * kw, Ho * Wo * N)
    for c, i, j, oy, ox, n in np.ndindex(3, kh, kw, Ho, Wo, N):
        assert cols[(c * kh + i) * kw + j, (oy * Wo + ox) * N + n] == padded[n, c, oy * sh + i, ox * sw + j]


@pytest.mark.parametrize("method", ["loops", *CPU_METHODS])
def test_im2col_fills_a_given_array(method):
    x = integers((2, 3, 5, 4))
    g = geometry(x.shape, 3, 2, 1, "test")
    out = np.full(g.cols_shape, np.nan, np.float32)
    assert IM2COL[method](x, g, out) is out
    assert np.array_equal(out, im2col_array(x, 3, 2, 1, method="loops"))


def test_methods_accept_a_batch_last_input():
    """A convolution's output is an (N, C, H, W) view of (C, H, W, N) memory: same numbers."""
    x = integers((3, 2, 5, 6))
    expected = im2col_array(x, 3, 2, 1, method="loops")
    for method in ["loops", *CPU_METHODS]:
        assert np.array_equal(im2col_array(batch_last(x), 3, 2, 1, method=method), expected)


@given(geometry=window_geometries(batch=(1, 3)))
def test_property_every_method_equals_loops_and_is_adjoint(geometry):
    shape, (kh, kw), (sh, sw), (ph, pw) = geometry
    x = integers(shape)
    expected = im2col_array(x, (kh, kw), (sh, sw), (ph, pw), method="loops")
    cols = integers(expected.shape, seed=3)
    back = col2im_array(cols, x.shape, (kh, kw), (sh, sw), (ph, pw), method="loops")
    for method in CPU_METHODS:
        assert np.array_equal(im2col_array(x, (kh, kw), (sh, sw), (ph, pw), method=method), expected)
        assert np.array_equal(col2im_array(cols, x.shape, (kh, kw), (sh, sw), (ph, pw), method=method), back)
    assert np.sum(expected * cols) == np.sum(x * back)


@pytest.mark.parametrize("method", ["loops", *CPU_METHODS])
def test_im2col_and_col2im_tensors_pass_gradcheck(method):
    x = dlscratch.randn(2, 2, 4, 5)
    dlscratch.gradcheck(lambda t: F.im2col(t, (3, 2), (2, 1), 1, method=method), x)
    cols = dlscratch.randn(2 * 3 * 2, 2 * 6 * 2)  # (C*kh*kw, Ho*Wo*N)
    dlscratch.gradcheck(lambda t: F.col2im(t, (2, 2, 4, 5), (3, 2), (2, 1), 1, method=method), cols)


def test_tensor_versions_return_float32_tensors_with_the_array_values():
    x = dlscratch.tensor(integers((2, 3, 4, 4)), requires_grad=True)
    cols = F.im2col(x, 3, padding=1)
    assert isinstance(cols, dlscratch.Tensor) and cols.dtype == np.float32
    assert np.array_equal(cols.data, im2col_array(x.data, 3, padding=1, method="loops"))
    cols.sum().backward()  # each pixel's gradient: how many windows read it
    assert np.array_equal(x.grad.data, col2im_array(np.ones(cols.shape, np.float32), x.shape, 3, 1, 1))
    assert x.grad.data[0, 0].tolist() == [[4, 6, 6, 4], [6, 9, 9, 6], [6, 9, 9, 6], [4, 6, 6, 4]]


Z = np.zeros((1, 1, 4, 4), np.float32)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: im2col_array(Z[0], 2), r"im2col: expected a 4-D input \(N, C, H, W\), got shape \(1, 4, 4\)"),
        (lambda: im2col_array(Z, 7, 1, 1), r"7x7 is larger than the padded input 6x6 \(input shape \(1, 1, 4, 4\)"),
        (lambda: im2col_array(Z, 2.5), r"kernel_size must be an int or a pair of ints.*2\.5"),
        (lambda: im2col_array(Z, (1, 2, 3)), r"kernel_size must be an int or a pair"),
        (lambda: im2col_array(Z, 2, stride=0), r"stride must be positive.*stride \(0, 0\)"),
        (lambda: im2col_array(Z, 2, padding=-1), r"padding non-negative"),
        (lambda: im2col_array(Z, 2, method="fast"), r"unknown method 'fast'.*'loops', 'slices', 'strided', 'kernel'"),
        (lambda: im2col_array(Z, 2, method="kernel"), r"'kernel' needs CuPy arrays.*'slices'"),
        (lambda: col2im_array(np.zeros((4, 10)), Z.shape, 2), r"cols of shape \(4, 10\) do not.*expected \(4, 9\)"),
    ],
)
def test_bad_input_is_rejected_with_a_clear_message(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_elementwise_kernel_without_a_gpu_says_why(no_gpu):
    with pytest.raises(RuntimeError, match="elementwise_kernel 'k' needs CuPy and a GPU"):
        B.elementwise_kernel("T x", "T y", "y = x", "k")


@pytest.mark.gpu
@pytest.mark.parametrize("shape, k, s, p", CASES)
def test_gpu_kernels_equal_loops(cuda_kernels, shape, k, s, p):
    x = integers(shape)
    expected = im2col_array(x, k, s, p, method="loops")
    for source in (x, batch_last(x)):
        got = im2col_array(B.to_gpu(source), k, s, p, method="kernel")
        assert np.array_equal(B.to_cpu(got), expected)
    cols = integers(expected.shape, seed=1)
    back = col2im_array(cols, shape, k, s, p, method="loops")
    for method in ("kernel", "slices", "strided"):
        assert np.array_equal(B.to_cpu(col2im_array(B.to_gpu(cols), shape, k, s, p, method=method)), back)
    assert im2col_array(B.to_gpu(x), k, s, p).shape == expected.shape  # the default on CuPy: "kernel"


@pytest.mark.gpu
def test_gpu_tensor_im2col_gradcheck(backend):
    if backend is np:
        pytest.skip("CuPy only")
    x = dlscratch.randn(2, 2, 4, 5)
    dlscratch.gradcheck(lambda t: F.im2col(t, (3, 2), (2, 1), 1), x)


# ----- the reference implementation -----
@pytest.mark.parametrize("shape, k, s, p", CASES)
def test_the_reference_equals_the_loops_and_is_the_adjoint(shape, k, s, p):
    x = integers(shape, 5)
    g = geometry(shape, k, s, p, "im2col")
    cols = im2col_reference(x, g)
    assert np.array_equal(cols, im2col_array(x, k, s, p, method="loops"))
    c = integers(cols.shape, 6)
    assert np.array_equal(col2im_reference(c, g), col2im_array(c, shape, k, s, p, method="loops"))


def test_the_reference_path_runs_the_reference_and_refuses_methods():
    x = dlscratch.tensor(integers((2, 3, 5, 5), 7), dtype=np.float64, requires_grad=True)
    with dlscratch.reference():
        cols = F.im2col(x, 3, 2, 1)
        assert type(cols.creator) is ReferenceIm2col
        dlscratch.gradcheck(lambda t: F.im2col(t, (3, 2), (2, 1), 1), x)
        dlscratch.gradcheck(lambda t: F.col2im(t, (2, 3, 5, 5), 3, 2, 1), cols.detach().requires_grad_())
        with pytest.raises(ValueError, match="method='slices' picks a fast-path variant"):
            F.im2col(x, 3, method="slices")
    assert type(F.im2col(x, 3, 2, 1).creator) is not ReferenceIm2col
