"""2-D convolution (PyTorch's cross-correlation) as im2col and one matrix product.

Forward, with ``cols = im2col(x)`` of shape ``(C*kh*kw, Ho*Wo*N)`` (layout in ``im2col.py``)::

    y = W.reshape(O, C*kh*kw) @ cols + b[:, None]        (O, Ho*Wo*N) -> (N, O, Ho, Wo)

Backward, with ``gy`` laid out the same way, ``(O, Ho*Wo*N)``::

    gW = gy @ cols.T          gb = gy.sum(axis=1)          gx = col2im(W.reshape(O, -1).T @ gy)

Three matrix products carry all the arithmetic; everything else moves numbers. The fast path
(``dlscratch/fast/conv.py``) computes the same numbers with fewer passes over memory.
"""

import numpy

from .. import backend
from ..amp.autocast import casts_to_low_precision
from ..function import Function
from ..paths import dispatch
from ..tensor import Tensor
from .fft_conv import FFTConv2d
from .im2col import col2im_reference, geometry, im2col_reference, no_method
from .winograd import WinogradConv2d

ALGORITHMS = ("im2col", "fft", "winograd2", "winograd4")


class Conv2d(Function):
    """x: (N, C, H, W), weight: (O, C, kh, kw), bias: (O,) or absent -> (N, O, Ho, Wo)."""

    def __init__(self, g):
        self.g = g

    def forward(self, x, weight, bias=None):
        g = self.g
        self.cols = im2col_reference(x, g)  # (C*kh*kw, Ho*Wo*N)
        self.weight = weight
        y = weight.reshape(len(weight), -1) @ self.cols  # (O, Ho*Wo*N)
        if bias is not None:
            y += bias[:, None]
        return y.reshape(len(weight), g.Ho, g.Wo, g.N).transpose(3, 0, 1, 2)  # O, not -1: N may be 0

    def backward(self, gy):
        out_channels = gy.shape[1]
        gy = gy.transpose(1, 2, 3, 0).reshape(out_channels, -1)  # (O, Ho*Wo*N), the layout of cols
        weight = self.weight.reshape(out_channels, -1)
        gx = col2im_reference(weight.T @ gy, self.g) if self.needs_input_grad[0] else None
        gw = (gy @ self.cols.T).reshape(self.weight.shape) if self.needs_input_grad[1] else None
        if len(self.inputs) == 2:
            return gx, gw
        return gx, gw, gy.sum(axis=1) if self.needs_input_grad[2] else None


def _check(x, weight, bias):
    if weight.shape[0] == 0:
        raise ValueError(f"conv2d: weight of shape {tuple(weight.shape)} has no output channels; it needs at least one")
    if x.shape[1] != weight.shape[1]:
        raise ValueError(
            f"conv2d: input of shape {tuple(x.shape)} has {x.shape[1]} channels but weight of shape "
            f"{tuple(weight.shape)} expects {weight.shape[1]}; the weight is (out_channels, in_channels, kh, kw)"
        )
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ValueError(
            f"conv2d: bias of shape {tuple(bias.shape)} does not match weight {tuple(weight.shape)}; "
            f"expected ({weight.shape[0]},)"
        )
    arrays = {"input": x, "weight": weight, "bias": bias}
    floats = {a.dtype for a in arrays.values() if a is not None and a.dtype.kind == "f"}
    # an integer input (uint8 pixels) is converted to the weight's dtype (dtypes.py); floats must agree
    if len(floats) != 1 or weight.dtype.kind != "f" or (bias is not None and bias.dtype.kind != "f"):
        got = ", ".join(f"{name} {a.dtype}" for name, a in arrays.items() if a is not None)
        raise TypeError(f"conv2d: input, weight and bias must share one floating-point dtype, got {got}; use .astype()")


def check(x, weight, bias, stride, padding):
    """Check a convolution's arguments; return its geometry."""
    for name, a in (("input", x), ("weight", weight), ("bias", bias)):
        if not (isinstance(a, (Tensor, numpy.ndarray)) or backend.is_gpu_array(a) or a is None and name == "bias"):
            raise TypeError(f"conv2d: {name} must be a Tensor, got {type(a).__name__}")
    if len(weight.shape) != 4:
        raise ValueError(
            f"conv2d: weight must be 4-D (out_channels, in_channels, kh, kw), got shape {tuple(weight.shape)}"
        )
    g = geometry(x.shape, tuple(weight.shape[2:]), stride, padding, "conv2d")
    _check(x, weight, bias)
    return g


def by_algorithm(algorithm, kernel, stride, padding, method=None):
    """The ``Function`` that convolves by ``algorithm``, or None for im2col (each path has its own).
    ``kernel``, ``stride``, ``padding``: ``(height, width)`` pairs.

    ``"fft"``: stride 1, any kernel (``fft_conv.py``); ``"winograd2"`` and ``"winograd4"``: F(2x2, 3x3) and
    F(4x4, 3x3), stride 1, 3 x 3 kernels (``winograd.py``). ``ValueError`` naming what does not fit."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"conv2d: unknown algorithm {algorithm!r}; choose one of {', '.join(map(repr, ALGORITHMS))}")
    if algorithm == "im2col":
        return None
    if method is not None:
        raise ValueError(
            f"conv2d: method={method!r} picks how im2col copies its windows; algorithm={algorithm!r} uses no im2col, "
            "so leave method=None"
        )
    if tuple(stride) != (1, 1):
        raise ValueError(f"conv2d: algorithm={algorithm!r} needs stride 1, got stride {tuple(stride)}; use 'im2col'")
    if algorithm == "fft":
        return FFTConv2d(tuple(padding))
    if tuple(kernel) != (3, 3):
        raise ValueError(
            f"conv2d: algorithm={algorithm!r} is Winograd's F(m x m, 3 x 3), for 3 x 3 kernels; got "
            f"{kernel[0]} x {kernel[1]}"
        )
    return WinogradConv2d(int(algorithm[-1]), tuple(padding))


@casts_to_low_precision
@dispatch
def conv2d(x, weight, bias=None, stride=1, padding=0, method=None, algorithm="im2col"):
    """2-D convolution. ``x: (N, C, H, W)``, ``weight: (O, C, kh, kw)``, ``bias: (O,)`` or None.

    ``stride`` and ``padding`` (zeros) are ints or ``(height, width)`` pairs. Returns
    ``(N, O, Ho, Wo)`` with ``Ho = (H + 2*ph - kh) // sh + 1``. ``algorithm`` (cuDNN's word for it) is how
    the arithmetic is done: ``"im2col"`` and one GEMM, ``"fft"``, or Winograd's ``"winograd2"`` /
    ``"winograd4"`` (see ``by_algorithm``; lesson 12 measures where each wins). ``method`` picks a
    fast-path im2col variant (see ``dlscratch/fast/im2col.py``); the reference path has one.
    """
    g = check(x, weight, bias, stride, padding)
    fn = by_algorithm(algorithm, (g.kh, g.kw), (g.sh, g.sw), (g.ph, g.pw), method)
    if fn is None:
        no_method(method, "conv2d")
        fn = Conv2d(g)
    return fn(x, weight) if bias is None else fn(x, weight, bias)
