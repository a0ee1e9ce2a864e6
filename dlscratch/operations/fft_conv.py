"""Convolution by the fast Fourier transform (M. Mathieu, M. Henaff and Y. LeCun, "Fast Training of
Convolutional Networks through FFTs", ICLR 2014), stride 1, any kernel size.

A correlation of two signals is a product of their transforms, one of them conjugated. Over the padded input's
``Hp x Wp`` grid, with ``X = rfft2(x_padded)`` and ``Wf = rfft2(weight)`` zero-filled to the same grid::

    y[n, o] = irfft2( sum_c X[n, c] * conj(Wf[o, c]) )[:Ho, :Wo]

The transform is circular, so outputs near the far edges would wrap around; those past ``Ho x Wo`` are the
ones that wrap, and they are cut off. The sum over channels is, per frequency, a complex matrix product
``(N, C) @ (C, O)``. The arithmetic is ``O(Hp Wp log(Hp Wp))`` per transform instead of ``O(Ho Wo kh kw)`` per
channel pair: FFT wins for large kernels, loses for 3 x 3 ones (lesson 12 measures where).

Backward uses the same transforms: the input's gradient is a convolution of ``gy`` with the weight (the
product without the conjugate), the weight's gradient a correlation of the input with ``gy``. Neither wraps
into the part that is kept.
"""

from .. import backend
from ..engine.function import Function
from .conv_algorithms import register_algorithm
from .products import gemm
from .sums import sum_over


class FFTConv2d(Function):
    """x: (N, C, H, W), weight: (O, C, kh, kw), bias: (O,) or absent -> (N, O, Ho, Wo), stride 1."""

    def __init__(self, padding):
        self.padding = padding  # (ph, pw)

    def forward(self, x, weight, bias=None):
        xp = backend.get_array_module(x)
        (H, W), (kh, kw), (ph, pw) = x.shape[2:], weight.shape[2:], self.padding
        self.grid = (H + 2 * ph, W + 2 * pw)
        self.Ho, self.Wo = self.grid[0] - kh + 1, self.grid[1] - kw + 1
        padded = xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
        self.X = xp.fft.rfft2(padded)  # (N, C, Hp, Wp // 2 + 1)
        self.Wf = xp.fft.rfft2(weight, s=self.grid)  # (O, C, Hp, Wp // 2 + 1)
        Y = _per_frequency(self.X, self.Wf.conj(), transpose_b=True)  # (N, C) @ (C, O)
        y = xp.fft.irfft2(Y, s=self.grid)[:, :, :self.Ho, :self.Wo].astype(x.dtype)
        if bias is not None:
            y += bias[None, :, None, None]
        self.x_shape, self.kernel = x.shape, (kh, kw)
        return xp.ascontiguousarray(y)

    def backward(self, gy):
        xp = backend.get_array_module(gy)
        (H, W), (ph, pw) = self.x_shape[2:], self.padding
        G = xp.fft.rfft2(gy, s=self.grid)  # gy zero-filled to the grid
        gx = gw = gb = None
        if self.needs_input_grad[0]:
            gx = xp.fft.irfft2(_per_frequency(G, self.Wf), s=self.grid)
            gx = xp.ascontiguousarray(gx[:, :, ph:ph + H, pw:pw + W]).astype(gy.dtype)
        if self.needs_input_grad[1]:
            gw = xp.fft.irfft2(_per_frequency(G.conj(), self.X, transpose_a=True), s=self.grid)
            gw = xp.ascontiguousarray(gw[:, :, :self.kernel[0], :self.kernel[1]]).astype(gy.dtype)
        if len(self.inputs) == 3 and self.needs_input_grad[2]:
            gb = sum_over(gy, (0, 2, 3))
        return (gx, gw) if len(self.inputs) == 2 else (gx, gw, gb)


register_algorithm("fft", FFTConv2d)  # conv2d(algorithm="fft"): any kernel


def _per_frequency(a, b, transpose_a=False, transpose_b=False):
    """At every frequency, the product of ``a``'s ``(i, k)`` matrix and ``b``'s ``(k, j)`` one (either transposed
    first): ``a: (i, k, Hf, Wf)``, ``b: (k, j, Hf, Wf)`` -> ``(i, j, Hf, Wf)``, one batched complex GEMM."""
    lhs, rhs = _frequency_major(a), _frequency_major(b)
    if transpose_a:
        lhs = lhs.transpose(0, 2, 1)
    if transpose_b:
        rhs = rhs.transpose(0, 2, 1)
    product = gemm(lhs, rhs)  # (Hf*Wf, i, j)
    return product.transpose(1, 2, 0).reshape(*product.shape[1:], *a.shape[2:])


def _frequency_major(a):
    """``(i, j, Hf, Wf)`` -> ``(Hf*Wf, i, j)``: one matrix per frequency."""
    return a.reshape(a.shape[0], a.shape[1], a.shape[2] * a.shape[3]).transpose(2, 0, 1)  # not -1: i may be 0
