"""Elementwise functions of one tensor: exp, log, log10, sqrt, abs, tanh, sigmoid, relu, sin, cos, tan, clamp."""

import math

from ..backend import get_array_module
from ..engine.function import Function
from ..engine.switch import switched


class Exp(Function):
    float_result = True  # integers in, float32 out (engine/extensions/dtypes.py)
    saves_inputs, saves_outputs = False, True  # backward reads the output, not the input

    def forward(self, x):
        self.y = get_array_module(x).exp(x)
        return self.y

    def backward(self, gy):
        return gy * self.y


class Log(Function):
    float_result = True  # integers in, float32 out (engine/extensions/dtypes.py)

    def forward(self, x):
        self.x = x
        return get_array_module(x).log(x)

    def backward(self, gy):
        return gy / self.x


LN10 = math.log(10)


class Log10(Function):
    float_result = True  # integers in, float32 out (engine/extensions/dtypes.py)

    def forward(self, x):
        self.x = x
        return get_array_module(x).log10(x)

    def backward(self, gy):
        return gy / (self.x * LN10)


class Sqrt(Function):
    float_result = True  # integers in, float32 out (engine/extensions/dtypes.py)
    saves_inputs, saves_outputs = False, True  # backward reads the output, not the input

    def forward(self, x):
        self.y = get_array_module(x).sqrt(x)
        return self.y

    def backward(self, gy):
        return gy * 0.5 / self.y


class Abs(Function):
    """``|x|``; the gradient at 0 is taken as 0 (the sign function)."""

    def forward(self, x):
        self.x = x
        return abs(x)

    def backward(self, gy):
        return gy * get_array_module(self.x).sign(self.x)


class Tanh(Function):
    float_result = True  # integers in, float32 out (engine/extensions/dtypes.py)
    saves_inputs, saves_outputs = False, True  # backward reads the output, not the input

    def forward(self, x):
        self.y = get_array_module(x).tanh(x)
        return self.y

    def backward(self, gy):
        y = self.y
        return gy * (1 - y * y)


class Sigmoid(Function):
    """``1 / (1 + exp(-x))`` without overflow: only ``exp(-|x|)`` is ever computed.

    For x < 0 it uses the equal form ``exp(x) / (1 + exp(x))``, which keeps tiny values exact.
    """

    float_result = True  # integers in, float32 out (engine/extensions/dtypes.py)
    saves_inputs, saves_outputs = False, True  # backward reads the output, not the input

    def forward(self, x):
        xp = get_array_module(x)
        e = xp.exp(-abs(x))
        self.y = xp.where(x >= 0, 1 / (1 + e), e / (1 + e))
        return self.y

    def backward(self, gy):
        y = self.y
        return gy * y * (1 - y)


class ReLU(Function):
    """``max(x, 0)``; the gradient at 0 is taken as 0."""

    saves_inputs, saves_outputs = False, True  # backward reads the output, not the input

    def forward(self, x):
        self.y = get_array_module(x).maximum(x, 0)
        return self.y

    def backward(self, gy):
        return gy * (self.y > 0)


class InPlaceReLU(ReLU):
    """``ReLU`` writing its output into its input's memory (``inplace.relu_`` makes that memory the output's)."""

    name = "relu_"

    def forward(self, x):
        self.y = get_array_module(x).maximum(x, 0, out=x)
        return self.y


class Sin(Function):
    float_result = True  # integers in, float32 out (engine/extensions/dtypes.py)

    def forward(self, x):
        self.x = x
        return get_array_module(x).sin(x)

    def backward(self, gy):
        return gy * get_array_module(self.x).cos(self.x)


class Cos(Function):
    float_result = True

    def forward(self, x):
        self.x = x
        return get_array_module(x).cos(x)

    def backward(self, gy):
        return -gy * get_array_module(self.x).sin(self.x)


class Tan(Function):
    float_result = True
    saves_inputs, saves_outputs = False, True  # d tan = 1 + tan^2: backward reads the output

    def forward(self, x):
        self.y = get_array_module(x).tan(x)
        return self.y

    def backward(self, gy):
        return gy * (1 + self.y * self.y)


class Clamp(Function):
    """``min(max(x, low), high)``, either bound may be None. The gradient passes where ``low <= x <= high``,
    the bounds included, as PyTorch's does."""

    def __init__(self, low, high):
        self.low, self.high = low, high

    def forward(self, x):
        self.x = x
        return get_array_module(x).clip(x, self.low, self.high)

    def backward(self, gy):
        inside = True
        if self.low is not None:
            inside = self.x >= self.low
        if self.high is not None:
            inside = inside & (self.x <= self.high)
        return gy * inside


def exp(x):
    return Exp()(x)


def log(x):
    return Log()(x)


def log10(x):
    return Log10()(x)


def sqrt(x):
    return Sqrt()(x)


def abs_(x):
    return Abs()(x)


def tanh(x):
    return Tanh()(x)


def sigmoid(x):
    return Sigmoid()(x)


@switched
def relu(x, inplace=False):
    """``max(x, 0)``; ``inplace=True`` writes it into ``x`` (``Tensor.relu_``)."""
    return x.relu_() if inplace else ReLU()(x)


def sin(x):
    return Sin()(x)


def cos(x):
    return Cos()(x)


def tan(x):
    return Tan()(x)


def clamp(x, min=None, max=None):  # noqa: A002 (PyTorch's argument names)
    """``x`` limited to [``min``, ``max``] (numbers; either may be None, not both)."""
    if min is None and max is None:
        raise ValueError("clamp: give min, max or both (at least one must not be None), as PyTorch requires")
    if min is not None and max is not None and min > max:
        raise ValueError(f"clamp: min ({min}) must not exceed max ({max})")
    return Clamp(min, max)(x)
