"""conv2d: the seminar's worked example, a direct loop convolution, gradient checks, layouts,
every im2col method, and the error messages."""

import contextlib

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as B
from dlscratch.engine import switch
from dlscratch.fast import conv as conv_module
from dlscratch.fast import tuning
from dlscratch.fast.im2col import col2im_array

pytestmark = pytest.mark.usefixtures("path")  # every test on the reference path and on the fast path

SEMINAR_X = [[1, 1, 2, 0], [0, 2, 1, 3], [2, 0, 1, 2], [3, 2, 0, 1]]
SEMINAR_W = [[2, 0, 1], [0, 2, 1], [1, 0, 1]]

# (x shape, weight shape, stride, padding): stride, padding, non-square, odd sizes, batch of one.
CASES = [
    ((2, 3, 5, 7), (4, 3, 3, 2), (2, 1), (1, 2)),
    ((1, 1, 4, 4), (2, 1, 3, 3), 1, 0),
    ((3, 2, 6, 6), (3, 2, 2, 2), 2, 0),
    ((2, 2, 7, 5), (2, 2, 3, 3), 3, 1),
    ((1, 3, 5, 4), (2, 3, 1, 3), (1, 2), (0, 1)),
    ((2, 4, 3, 3), (5, 4, 1, 1), 1, 0),
]


def conv_reference(x, w, b, stride, padding):
    """The definition, one output pixel at a time."""
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    kh, kw = w.shape[2:]
    Ho, Wo = (padded.shape[2] - kh) // sh + 1, (padded.shape[3] - kw) // sw + 1
    y = np.zeros((x.shape[0], w.shape[0], Ho, Wo), dtype=np.float64)
    for oy in range(Ho):
        for ox in range(Wo):
            window = padded[:, :, oy * sh : oy * sh + kh, ox * sw : ox * sw + kw]
            y[:, :, oy, ox] = np.einsum("nchw,ochw->no", window, w)
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def random(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_seminar_worked_example():
    x = dlscratch.tensor([[SEMINAR_X]], dtype=np.float32)
    w = dlscratch.tensor([[SEMINAR_W]], dtype=np.float32)
    assert F.conv2d(x, w).data[0, 0].tolist() == [[12, 9], [5, 14]]
    assert F.conv2d(x, w, dlscratch.tensor([3.0])).data[0, 0].tolist() == [[15, 12], [8, 17]]


@pytest.mark.parametrize("method", [None, "loops", "slices", "strided"])
@pytest.mark.parametrize("x_shape, w_shape, stride, padding", CASES)
def test_conv2d_equals_the_loop_definition(method, x_shape, w_shape, stride, padding):
    x, w, b = random(x_shape, 0), random(w_shape, 1), random(w_shape[:1], 2)
    with switch.fast_path() if method else contextlib.nullcontext():  # a method is a fast-path variant
        y = F.conv2d(x, w, b, stride, padding, im2col_method=method)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.data, conv_reference(x, w, b, stride, padding), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("x_shape, w_shape, stride, padding", CASES)
def test_conv2d_gradcheck(x_shape, w_shape, stride, padding):
    x = dlscratch.tensor(random(x_shape, 3))
    w = dlscratch.tensor(random(w_shape, 4))
    b = dlscratch.tensor(random(w_shape[:1], 5))
    dlscratch.gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride, padding), x, w, b)


def test_conv2d_gradcheck_without_bias_and_with_the_strided_method():
    x, w = dlscratch.tensor(random((1, 2, 5, 6), 6)), dlscratch.tensor(random((3, 2, 2, 3), 7))
    with switch.fast_path():
        dlscratch.gradcheck(lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=1, im2col_method="strided"), x, w)


def test_gradients_agree_with_the_definition_in_float32():
    x = dlscratch.tensor(random((2, 3, 6, 5), 8), requires_grad=True)
    w = dlscratch.tensor(random((4, 3, 3, 3), 9), requires_grad=True)
    b = dlscratch.tensor(random((4,), 10), requires_grad=True)
    gy = random((2, 4, 3, 3), 11)
    F.conv2d(x, w, b, stride=2, padding=1).backward(dlscratch.tensor(gy))
    assert x.grad.dtype == w.grad.dtype == b.grad.dtype == np.float32
    # dW[o, c, i, j] = sum gy[n, o, oy, ox] * x_padded[n, c, 2 oy + i, 2 ox + j]
    padded = np.pad(x.data, ((0, 0), (0, 0), (1, 1), (1, 1)))
    dw = np.zeros((4, 3, 3, 3))
    for i, j in np.ndindex(3, 3):
        dw[:, :, i, j] = np.einsum("nohw,nchw->oc", gy, padded[:, :, i : i + 5 : 2, j : j + 5 : 2])
    np.testing.assert_allclose(w.grad.data, dw, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.grad.data, gy.sum(axis=(0, 2, 3)), rtol=1e-5)


def test_output_is_a_batch_last_view_and_backward_accepts_any_layout():
    x = dlscratch.tensor(random((3, 2, 5, 5), 12), requires_grad=True)
    w = dlscratch.tensor(random((4, 2, 3, 3), 13), requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    assert y.shape == (3, 4, 5, 5) and y.data.strides[0] == 4  # images fastest in memory
    gy = random(y.shape, 14)
    grads = []
    for g in (gy, np.ascontiguousarray(gy.transpose(1, 2, 3, 0)).transpose(3, 0, 1, 2)):
        x.grad = w.grad = None
        F.conv2d(x, w, padding=1).backward(dlscratch.tensor(g))
        grads.append((x.grad.data, w.grad.data))
    assert np.array_equal(grads[0][0], grads[1][0]) and np.array_equal(grads[0][1], grads[1][1])


def test_two_convolutions_in_a_row_keep_working_on_the_batch_last_layout():
    x = dlscratch.tensor(random((2, 1, 6, 6), 15), requires_grad=True)
    w1 = dlscratch.tensor(random((3, 1, 3, 3), 16), requires_grad=True)
    w2 = dlscratch.tensor(random((2, 3, 3, 3), 17), requires_grad=True)
    dlscratch.gradcheck(lambda x, w1, w2: F.conv2d(F.conv2d(x, w1, padding=1).relu(), w2), x, w1, w2)


@pytest.mark.parametrize("x_shape, w_shape, stride, padding", CASES)
def test_input_gradient_in_bands_of_one_output_row(fast_path, monkeypatch, x_shape, w_shape, stride, padding):
    monkeypatch.setattr(tuning, "BAND_NUMBERS", 1)  # one output row per band
    x = dlscratch.tensor(random(x_shape, 25), requires_grad=True)
    w = random(w_shape, 26)
    y = F.conv2d(x, w, None, stride, padding)
    gy = random(y.shape, 27)
    y.backward(dlscratch.tensor(gy))
    gy_cols = gy.transpose(1, 2, 3, 0).reshape(w_shape[0], -1)  # (O, Ho*Wo*N)
    expected = col2im_array(w.reshape(w_shape[0], -1).T @ gy_cols, x_shape, w_shape[2:], stride, padding, "loops")
    np.testing.assert_allclose(x.grad.data, expected, rtol=1e-5, atol=1e-5)


def test_leaves_keep_conv_gradients_that_no_later_step_overwrites(fast_path):
    # Conv2dFunction hands its gradients over without a copy (returns_unshared_grads): none may alias the column
    # matrix or any other buffer that a later step writes.
    assert conv_module.Conv2dFunction.returns_unshared_grads
    x = dlscratch.tensor(random((2, 2, 5, 5), 33), requires_grad=True)
    w = dlscratch.tensor(random((3, 2, 3, 3), 34), requires_grad=True)
    b = dlscratch.tensor(random((3,), 35), requires_grad=True)
    y = F.conv2d(x, w, b, padding=1)
    cols = y.creator.cols
    y.backward(dlscratch.tensor(random(y.shape, 36)))
    kept = [t.grad.data for t in (x, w, b)]
    before = [g.copy() for g in kept]
    assert not any(np.shares_memory(g, cols) for g in kept)
    for t in (x, w, b):
        t.grad = None
    y = F.conv2d(dlscratch.tensor(random((2, 2, 5, 5), 37)), w, b, padding=1)
    y.backward(dlscratch.tensor(random(y.shape, 38)))
    for got, want in zip(kept, before):
        np.testing.assert_array_equal(got, want)
    assert not any(np.shares_memory(t.grad.data, g) for t in (w, b) for g in kept)

def test_weight_gradient_is_the_product_with_the_columns():
    gy, cols = random((4, 50), 39), random((6, 50), 40)
    np.testing.assert_allclose(conv_module.weight_gradient(gy, cols), gy @ cols.T, rtol=1e-5, atol=1e-5)


def test_only_the_needed_gradients_are_computed():
    x = dlscratch.tensor(random((1, 2, 4, 4), 18))  # an input image: no gradient
    w = dlscratch.tensor(random((3, 2, 3, 3), 19), requires_grad=True)
    F.conv2d(x, w).sum().backward()
    assert x.grad is None and w.grad.shape == (3, 2, 3, 3)


def test_batch_of_ten_equals_ten_batches_of_one():
    x, w = random((10, 2, 5, 5), 20), random((3, 2, 3, 3), 21)
    whole = F.conv2d(x, w, stride=2, padding=1).data
    for n in range(10):
        np.testing.assert_allclose(whole[n : n + 1], F.conv2d(x[n : n + 1], w, stride=2, padding=1).data, rtol=1e-6)


@pytest.mark.parametrize(
    "shapes, message",
    [
        (
            ((2, 3, 5, 5), (4, 2, 3, 3)),
            r"input of shape \(2, 3, 5, 5\) has 3 channels but weight of shape \(4, 2, 3, 3\) expects 2",
        ),
        (((3, 5, 5), (4, 3, 3, 3)), r"conv2d: expected a 4-D input \(N, C, H, W\), got shape \(3, 5, 5\).*unsqueeze"),
        (((1, 1, 2, 2), (1, 1, 5, 5)), r"conv2d: kernel 5x5 is larger than the padded input 2x2"),
        (((1, 1, 4, 4), (1, 9)), r"weight must be 4-D \(out_channels, in_channels, kh, kw\), got shape \(1, 9\)"),
        (((1, 1, 4, 4), (2, 1, 3, 3), (3,)), r"bias of shape \(3,\) does not match weight \(2, 1, 3, 3\); expected"),
    ],
)
def test_bad_shapes_are_rejected_with_a_clear_message(shapes, message):
    arrays = [np.zeros(shape, np.float32) for shape in shapes] + [None]
    with pytest.raises(ValueError, match=message):
        F.conv2d(arrays[0], arrays[1], arrays[2])


def test_mixed_dtypes_are_rejected():
    with pytest.raises(TypeError, match=r"share one floating-point dtype, got input float64, weight float32"):
        F.conv2d(np.zeros((1, 1, 3, 3)), np.zeros((1, 1, 2, 2), np.float32))


@pytest.mark.gpu
def test_conv2d_on_the_gpu_matches_numpy(backend):
    if backend is np:
        pytest.skip("CuPy only")
    x, w, b = random((2, 3, 7, 6), 22), random((4, 3, 3, 2), 23), random((4,), 24)
    expected = F.conv2d(x, w, b, 2, 1).data
    xg = dlscratch.tensor(B.to_gpu(x), requires_grad=True)
    y = F.conv2d(xg, dlscratch.tensor(B.to_gpu(w)), dlscratch.tensor(B.to_gpu(b)), 2, 1)
    np.testing.assert_allclose(B.to_cpu(y.data), expected, rtol=1e-5, atol=1e-5)
    dlscratch.gradcheck(lambda x: F.conv2d(x, dlscratch.tensor(B.to_gpu(w), dtype=np.float64), None, 2, 1), xg)


def test_the_convolution_node_is_named_conv2d_on_both_paths():
    """Errors, graph drawings and lesson 05's statement timings name the node ``conv2d``, as PyTorch's ``conv2d``."""
    x = dlscratch.randn(1, 2, 5, 5, requires_grad=True)
    w = dlscratch.randn(3, 2, 3, 3, requires_grad=True)
    assert F.conv2d(x, w).creator.name == "conv2d"
    with dlscratch.reference():
        assert F.conv2d(x, w).creator.name == "conv2d"
