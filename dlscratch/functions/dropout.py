"""Inverted dropout as one graph node: the forward draws a mask, the backward reuses it."""

import numbers

from ..backend import get_array_module
from ..creation import generator
from ..function import Function
from .im2col import memory_order
from .pooling import in_layout_of


class Dropout(Function):
    """``y = x * mask``, where ``mask`` is 0 with probability ``p`` and ``1 / (1 - p)`` otherwise;
    so ``dy/dx = mask``. The mask comes from dlscratch's seeded generator.

    The mask is drawn in ``x``'s memory order (a convolution's output is stored batch-last), so
    the product runs over two arrays of one layout and keeps it: mixing a batch-last ``x`` with a
    C-ordered mask made the multiply about 15x slower here (3.3 ms against 0.2 ms on the Keras
    CNN's (128, 64, 12, 12) activations). ``Flatten`` then takes a batch-last input as a view.
    """

    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, p):
        self.p = p

    def forward(self, x):
        xp = get_array_module(x)
        order = memory_order(x)
        uniform = generator(xp).random(
            tuple(x.shape[axis] for axis in order), dtype=x.dtype if x.dtype == xp.float64 else xp.float32
        )
        mask = xp.greater_equal(uniform, self.p, out=uniform.astype(x.dtype, copy=False))  # 0/1 in place
        mask *= 1 / (1 - self.p)
        self.mask = mask.transpose([order.index(axis) for axis in range(x.ndim)])
        return x * self.mask

    def backward(self, gy):
        # gy often comes C-ordered from Flatten's backward: one transposing copy into the mask's
        # layout, then a contiguous product, is faster than a mixed-layout product
        return in_layout_of(gy, self.mask) * self.mask


def check_probability(p):
    """``p`` as a float, or a ValueError when it is not a probability in [0, 1)."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p < 1:
        raise ValueError(f"dropout: p must be a probability in [0, 1), got {p!r}")
    return float(p)


def dropout(x, p=0.5, training=True):
    """Inverted dropout of ``x`` (any shape) when ``training``; the identity otherwise (or for p=0)."""
    p = check_probability(p)
    if not training or p == 0:
        return x
    if x.dtype.kind != "f":
        raise TypeError(f"dropout: expected a floating-point tensor, got {x.dtype}")
    return Dropout(p)(x)
