"""The argument checks of ``conv2d``, one call shared by both paths: ``check_conv2d`` returns the call's
geometry, or raises an error that names the argument, its shape or dtype, and the fix."""

import numpy

from .. import backend
from ..engine.tensor import Tensor
from .conv_algorithms import check_algorithm
from .im2col import geometry, refuse_method


def check_conv2d(x, weight, bias, stride, padding, im2col_method, algorithm, im2col_methods=False):
    """Check ``conv2d``'s arguments; return its ``Geometry``. ``im2col_methods``: whether the calling path
    offers im2col variants by ``im2col_method`` (the fast path does); otherwise an ``im2col_method`` is refused."""
    _check_types(x, weight, bias)
    x, weight, bias = (getattr(a, "_data", a) for a in (x, weight, bias))  # a tensor's array: no property calls
    if len(weight.shape) != 4:
        raise ValueError(
            f"conv2d: weight must be 4-D (out_channels, in_channels, kh, kw), got shape {tuple(weight.shape)}"
        )
    windows = geometry(x.shape, tuple(weight.shape[2:]), stride, padding, "conv2d")
    _check_shapes(x, weight, bias)
    _check_dtypes(x, weight, bias)
    if algorithm != "im2col":
        check_algorithm(algorithm, (windows.kh, windows.kw), (windows.sh, windows.sw), im2col_method)
    if not im2col_methods:
        refuse_method(im2col_method, "conv2d", "im2col_method")
    return windows


def _check_types(x, weight, bias):
    for name, a in (("input", x), ("weight", weight), ("bias", bias)):
        if not (isinstance(a, (Tensor, numpy.ndarray)) or backend.is_gpu_array(a) or a is None and name == "bias"):
            raise TypeError(f"conv2d: {name} must be a Tensor, got {type(a).__name__}")


def _check_shapes(x, weight, bias):
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


def _check_dtypes(x, weight, bias):
    arrays = {"input": x, "weight": weight, "bias": bias}
    floats = {a.dtype for a in arrays.values() if a is not None and a.dtype.kind == "f"}
    # an integer input (uint8 pixels) becomes the weight's dtype (engine/extensions/dtypes.py); floats must agree
    if len(floats) != 1 or weight.dtype.kind != "f" or (bias is not None and bias.dtype.kind != "f"):
        got = ", ".join(f"{name} {a.dtype}" for name, a in arrays.items() if a is not None)
        raise TypeError(f"conv2d: input, weight and bias must share one floating-point dtype, got {got}; use .astype()")
