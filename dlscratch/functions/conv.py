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
from ..function import Function
from ..paths import dispatch
from ..tensor import Tensor
from .im2col import col2im_reference, geometry, im2col_reference, no_method


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


@dispatch
def conv2d(x, weight, bias=None, stride=1, padding=0, method=None):
    """2-D convolution. ``x: (N, C, H, W)``, ``weight: (O, C, kh, kw)``, ``bias: (O,)`` or None.

    ``stride`` and ``padding`` (zeros) are ints or ``(height, width)`` pairs. Returns
    ``(N, O, Ho, Wo)`` with ``Ho = (H + 2*ph - kh) // sh + 1``. ``method`` picks a fast-path
    im2col variant (see ``dlscratch/fast/im2col.py``); the reference path has one.
    """
    g = check(x, weight, bias, stride, padding)
    no_method(method, "conv2d")
    return Conv2d(g)(x, weight) if bias is None else Conv2d(g)(x, weight, bias)
