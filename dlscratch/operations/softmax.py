"""Softmax and log-softmax along one dimension, shifted by the maximum so that exp never overflows."""

from ..backend import get_array_module
from ..engine.function import Function
from ..engine.wrappable import wrappable
from .shape import wrap_dim


class Softmax(Function):
    float_result = True  # integers in, float32 out (dtypes.py)
    saves_inputs, saves_outputs = False, True  # backward reads the output, not the input

    def __init__(self, dim=-1):
        self.dim = dim

    def forward(self, x):
        xp = get_array_module(x)
        e = xp.exp(x - x.max(axis=self.dim, keepdims=True))
        self.y = e / e.sum(axis=self.dim, keepdims=True)
        return self.y

    def backward(self, gy):
        y = self.y
        return y * (gy - (gy * y).sum(axis=self.dim, keepdims=True))


def log_softmax_array(x, axis=-1):
    """``x - logsumexp(x)`` along ``axis`` on a raw array, computed stably."""
    xp = get_array_module(x)
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))


class LogSoftmax(Function):
    float_result = True  # integers in, float32 out (dtypes.py)
    saves_inputs, saves_outputs = False, True  # backward reads the output, not the input

    name = "log_softmax"

    def __init__(self, dim=-1):
        self.dim = dim

    def forward(self, x):
        self.y = log_softmax_array(x, self.dim)
        return self.y

    def backward(self, gy):
        xp = get_array_module(gy)
        return gy - xp.exp(self.y) * gy.sum(axis=self.dim, keepdims=True)


@wrappable
def softmax(x, dim=-1):
    return Softmax(wrap_dim("softmax", dim, x.ndim))(x)


@wrappable
def log_softmax(x, dim=-1):
    return LogSoftmax(wrap_dim("log_softmax", dim, x.ndim))(x)
