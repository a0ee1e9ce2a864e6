"""2-D convolution (PyTorch's cross-correlation) as im2col and one matrix product.

Forward, with ``cols = im2col(x)`` of shape ``(C*kh*kw, Ho*Wo*N)`` (layout in ``im2col.py``)::

    y = W.reshape(O, C*kh*kw) @ cols + b[:, None]        (O, Ho*Wo*N) -> (N, O, Ho, Wo)

Backward, with ``gy`` laid out the same way, ``(O, Ho*Wo*N)``::

    gW = gy @ cols.T          gb = gy.sum(axis=1)          gx = col2im(W.reshape(O, -1).T @ gy)

Three matrix products carry all the arithmetic; everything else moves numbers. The fast path
(``dlscratch/fast/conv.py``) computes the same numbers with fewer passes over memory. The argument checks are
in ``conv_checks.py``; lesson 12's other algorithms (FFT, Winograd) in ``conv_algorithms.py``.
"""

from ..engine.function import Function
from ..engine.switch import switched
from ..engine.wrappable import wrappable
from .conv_algorithms import registered_algorithm
from .conv_checks import check_conv2d
from .im2col import col2im_reference, im2col_reference
from .products import gemm


class Conv2dFunction(Function):
    """x: (N, C, H, W), weight: (O, C, kh, kw), bias: (O,) or absent -> (N, O, Ho, Wo)."""

    name = "conv2d"  # the name errors and drawings use

    def __init__(self, geometry):
        self.geometry = geometry

    def forward(self, x, weight, bias=None):
        geometry = self.geometry
        self.cols = im2col_reference(x, geometry)  # (C*kh*kw, Ho*Wo*N)
        self.weight = weight
        y = gemm(weight.reshape(len(weight), -1), self.cols)  # (O, Ho*Wo*N)
        if bias is not None:
            y += bias[:, None]
        y = y.reshape(len(weight), geometry.Ho, geometry.Wo, geometry.N)  # O, not -1: N may be 0
        return y.transpose(3, 0, 1, 2)

    def backward(self, gy):
        out_channels = gy.shape[1]
        gy = gy.transpose(1, 2, 3, 0).reshape(out_channels, -1)  # (O, Ho*Wo*N), the layout of cols
        weight = self.weight.reshape(out_channels, -1)
        gx = col2im_reference(gemm(weight.T, gy), self.geometry) if self.needs_input_grad[0] else None
        gw = gemm(gy, self.cols.T).reshape(self.weight.shape) if self.needs_input_grad[1] else None
        if len(self.inputs) == 2:
            return gx, gw
        return gx, gw, gy.sum(axis=1) if self.needs_input_grad[2] else None


@wrappable
@switched
def conv2d(x, weight, bias=None, stride=1, padding=0, im2col_method=None, algorithm="im2col"):
    """2-D convolution. ``x: (N, C, H, W)``, ``weight: (O, C, kh, kw)``, ``bias: (O,)`` or None.

    ``stride`` and ``padding`` (zeros) are ints or ``(height, width)`` pairs. Returns
    ``(N, O, Ho, Wo)`` with ``Ho = (H + 2*ph - kh) // sh + 1``. ``algorithm`` (cuDNN's word for it) is how
    the arithmetic is done: ``"im2col"`` and one GEMM, ``"fft"``, or Winograd's ``"winograd2"`` /
    ``"winograd4"`` (``conv_algorithms.py``; lesson 12 measures where each wins). ``im2col_method`` picks a
    fast-path im2col variant (see ``dlscratch/fast/im2col.py``); the reference path has one.
    """
    geometry = check_conv2d(x, weight, bias, stride, padding, im2col_method, algorithm)
    if algorithm == "im2col":
        convolution = Conv2dFunction(geometry)
    else:
        convolution = registered_algorithm(algorithm, (geometry.ph, geometry.pw))
    return convolution(x, weight) if bias is None else convolution(x, weight, bias)
