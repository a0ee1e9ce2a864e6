"""Conversions that stay in the graph: a change of dtype, a move between CPU and GPU, a copy.
A cast to an integer or bool dtype is the exception: it cuts the graph, as in PyTorch."""

import numpy

from .. import backend
from ..engine import grad_mode
from ..engine.function import Function
from ..engine.tensor import Tensor


class Cast(Function):
    """Change the dtype; the gradient is cast back to the input's dtype."""

    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, dtype):
        self.dtype = dtype

    def forward(self, x):
        self.x_dtype = x.dtype
        return x.astype(self.dtype, copy=False)

    def backward(self, gy):
        return gy.astype(self.x_dtype, copy=False)


class ToDevice(Function):
    """Copy to ``"cpu"`` or ``"gpu"``; the gradient travels back to where the input was."""

    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, device):
        self.device = device

    def forward(self, x):
        self.x_on_gpu = backend.is_gpu_array(x)
        return backend.to_gpu(x) if self.device == "gpu" else backend.to_cpu(x)

    def backward(self, gy):
        return backend.to_gpu(gy) if self.x_on_gpu else backend.to_cpu(gy)


class Clone(Function):
    """A copy with memory of its own (safe to change in place); the gradient passes through."""

    saves_inputs = False  # backward does not read the inputs' values

    def forward(self, x):
        return x.copy()

    def backward(self, gy):
        return gy


def astype(x, dtype):
    """``x`` cast to ``dtype``. To an integer or bool dtype the result is a constant: rounding has
    no useful derivative, so no gradient flows back through it (PyTorch's rule). A tensor that requires
    grad is not cast to a complex dtype while the graph is recorded: complex gradients are not supported."""
    kind = numpy.dtype(dtype).kind
    if kind not in "fc":
        return Tensor._make(x.data.astype(dtype), False)
    if kind == "c" and x.requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError(
            f"astype({numpy.dtype(dtype)}): dlscratch computes gradients of real floating-point tensors only, and "
            "this tensor requires grad; cast x.detach() to work with complex values"
        )
    return Cast(dtype)(x)


def to_device(x, device):
    return ToDevice(device)(x)


def clone(x):
    return Clone()(x)
