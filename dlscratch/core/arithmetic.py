"""The core's operations: ``+ * /``, unary minus (so ``-``), ``@`` and ``sum``, with NumPy broadcasting.

Every binary operation broadcasts in forward, so in backward each input's gradient is summed
back over the dimensions that were broadcast (``sum_to``).
"""

from .function import Function
from .tensor import array_module


def sum_to(g, shape):
    """Sum array ``g`` down to ``shape``, undoing broadcasting. ``shape`` broadcasts to ``g.shape``."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)  # dimensions broadcasting added in front
    stretched = tuple(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    return g.sum(axis=tuple(range(lead)) + stretched, keepdims=True).reshape(shape)


class Add(Function):
    def forward(self, a, b):
        self.a_shape, self.b_shape = a.shape, b.shape
        return a + b

    def backward(self, gy):
        need_a, need_b = self.needs_input_grad
        return (sum_to(gy, self.a_shape) if need_a else None,
                sum_to(gy, self.b_shape) if need_b else None)


class Mul(Function):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, gy):
        need_a, need_b = self.needs_input_grad
        return (sum_to(gy * self.b, self.a.shape) if need_a else None,
                sum_to(gy * self.a, self.b.shape) if need_b else None)


class Div(Function):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a / b

    def backward(self, gy):
        need_a, need_b = self.needs_input_grad
        ga = gy / self.b
        return (sum_to(ga, self.a.shape) if need_a else None,
                sum_to(-ga * self.a / self.b, self.b.shape) if need_b else None)


class Neg(Function):
    def forward(self, x):
        return -x

    def backward(self, gy):
        return -gy


class MatMul(Function):
    """``a @ b`` of two matrices: ``a (n, k) @ b (k, m) -> (n, m)``."""

    def forward(self, a, b):
        self.a, self.b = a, b
        return a @ b

    def backward(self, gy):  # gy: (n, m)
        need_a, need_b = self.needs_input_grad
        return gy @ self.b.T if need_a else None, self.a.T @ gy if need_b else None


class Sum(Function):
    """The sum of all elements: a 0-d array."""

    def forward(self, x):
        self.shape = x.shape
        return x.sum(keepdims=True).reshape(())

    def backward(self, gy):  # every element added once: each gets the sum's gradient
        return gy + array_module(gy).zeros(self.shape, dtype=gy.dtype)
