"""Conversions that stay in the graph: a change of dtype, a move between CPU and GPU, a copy."""

from .. import backend
from ..function import Function


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
    return Cast(dtype)(x)


def to_device(x, device):
    return ToDevice(device)(x)


def clone(x):
    return Clone()(x)
