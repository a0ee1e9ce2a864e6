"""The arithmetic operators: ``+ - * / **`` and unary minus, with NumPy broadcasting.

Twins of the core's (``core/arithmetic.py``), which must run without the library: the same forward and backward,
with the library's ``sum_to`` (checked, blocked sums) and the flags its extensions read (``saves_inputs``,
``float_result``).
"""

import numpy

from ..backend import get_array_module
from ..engine.function import Function
from .broadcast import sum_to


class Add(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def forward(self, a, b):
        self.a_shape, self.b_shape = a.shape, b.shape
        return a + b

    def backward(self, gy):
        need_a, need_b = self.needs_input_grad
        return (
            sum_to(gy, self.a_shape) if need_a else None,
            sum_to(gy, self.b_shape) if need_b else None,
        )


class Sub(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def forward(self, a, b):
        self.a_shape, self.b_shape = a.shape, b.shape
        return a - b

    def backward(self, gy):
        need_a, need_b = self.needs_input_grad
        return (
            sum_to(gy, self.a_shape) if need_a else None,
            sum_to(-gy, self.b_shape) if need_b else None,
        )


class Mul(Function):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, gy):
        need_a, need_b = self.needs_input_grad
        return (
            sum_to(gy * self.b, self.a.shape) if need_a else None,
            sum_to(gy * self.a, self.b.shape) if need_b else None,
        )


class Div(Function):
    float_result = True  # integers in, float32 out (engine/extensions/dtypes.py)

    def forward(self, a, b):
        self.a, self.b = a, b
        return a / b

    def backward(self, gy):
        a, b = self.a, self.b
        ga = gy / b
        return (
            sum_to(ga, a.shape) if self.needs_input_grad[0] else None,
            sum_to(-ga * a / b, b.shape) if self.needs_input_grad[1] else None,
        )


class Neg(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def forward(self, x):
        return -x

    def backward(self, gy):
        return -gy


class Pow(Function):
    """``x ** p``, with PyTorch's derivatives at the special points, computed without warnings::

        d/dx = p * x**(p-1), and 0 where p == 0 (not 0 * 0**-1 = NaN at x == 0)
        d/dp = x**p * log(x), and 0 where x == 0 and p >= 0 (not 0 * log(0) = NaN)

    Elsewhere infinities and NaN pass through, as in PyTorch (``0 ** -1`` is ``inf``, ``log(-2)`` NaN).
    The gradient for the exponent is computed only when it requires grad.
    """

    saves_outputs = True  # backward reads the output too

    def forward(self, x, p):
        self.x, self.p = x, p
        with numpy.errstate(divide="ignore", invalid="ignore"):  # 0 ** -1 is inf, as in PyTorch
            self.y = x**p
        return self.y

    def backward(self, gy):
        x, p, xp = self.x, self.p, get_array_module(self.x)
        with numpy.errstate(divide="ignore", invalid="ignore"):
            gx = sum_to(xp.where(p == 0, 0, gy * p * x ** (p - 1)), x.shape)
            gp = None
            if self.needs_input_grad[1]:
                dp = xp.where((x == 0) & (p >= 0), 0, gy * self.y * xp.log(x))
                gp = sum_to(dp, p.shape)
        return gx, gp


def add(a, b):
    return Add()(a, b)


def sub(a, b):
    return Sub()(a, b)


def mul(a, b):
    return Mul()(a, b)


def div(a, b):
    return Div()(a, b)


def neg(x):
    return Neg()(x)


def pow(x, exponent):
    return Pow()(x, exponent)
