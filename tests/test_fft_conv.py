"""Convolution by FFT (dlscratch/operations/fft_conv.py) equals im2col's, forward and backward, for any kernel size
and padding at stride 1; gradients checked against float64 central differences; float32 stays float32."""

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch.operations.fft_conv import FFTConv2d

CASES = [((2, 3, 7, 6), (4, 3, 3, 3), (1, 1)), ((1, 2, 5, 5), (3, 2, 5, 5), (2, 2)),
         ((3, 4, 8, 9), (5, 4, 3, 2), (0, 1)), ((1, 1, 3, 3), (1, 1, 3, 3), (0, 0)),
         ((2, 1, 12, 10), (2, 1, 7, 7), (3, 3))]


@pytest.mark.parametrize("x_shape, w_shape, padding", CASES)
def test_fft_equals_im2col_forward_and_backward_in_float64(x_shape, w_shape, padding):
    rng = np.random.default_rng(sum(x_shape) + sum(w_shape))
    arrays = rng.standard_normal(x_shape), rng.standard_normal(w_shape), rng.standard_normal(w_shape[0])
    results = []
    for conv in (lambda x, w, b: FFTConv2d(padding)(x, w, b), lambda x, w, b: F.conv2d(x, w, b, padding=padding)):
        inputs = [dlscratch.tensor(a, dtype=np.float64, requires_grad=True) for a in arrays]
        y = conv(*inputs)
        (y * dlscratch.tensor(np.cos(np.arange(y.numel())).reshape(y.shape))).sum().backward()
        results.append([y.detach().numpy()] + [t.grad.numpy() for t in inputs])
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_fft_gradcheck_and_float32():
    rng = np.random.default_rng(5)
    x, w, b = (dlscratch.tensor(rng.standard_normal(s), dtype=np.float64, requires_grad=True)
               for s in ((2, 2, 6, 5), (3, 2, 3, 3), (3,)))
    dlscratch.gradcheck(lambda x, w, b: FFTConv2d((1, 1))(x, w, b), x, w, b)
    x, w = dlscratch.tensor(rng.standard_normal((1, 2, 5, 5))), dlscratch.tensor(rng.standard_normal((2, 2, 3, 3)))
    y = FFTConv2d((1, 0))(x, w)
    assert y.dtype == np.float32 and y.shape == (1, 2, 5, 3)
