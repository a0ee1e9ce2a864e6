"""Inverted dropout as one graph node: the forward draws a mask, the backward reuses it."""

import numbers

from ..backend import get_array_module
from ..engine.creation import generator
from ..engine.function import Function
from ..engine.switch import switched


class Dropout(Function):
    """``y = x * mask``, where ``mask`` is 0 with probability ``p`` and ``1 / (1 - p)`` otherwise;
    so ``dy/dx = mask``. The mask comes from dlscratch's seeded generator, drawn in C order."""

    saves_inputs = False  # backward reads the mask, not the input

    def __init__(self, p):
        self.p = p

    def forward(self, x):
        xp = get_array_module(x)
        uniform = generator(xp).random(x.shape, dtype=x.dtype if x.dtype == xp.float64 else xp.float32)
        self.mask = (uniform >= self.p).astype(x.dtype) / (1 - self.p)
        return x * self.mask

    def backward(self, gy):
        return gy * self.mask


def check_probability(p):
    """``p`` as a float, or a ValueError when it is not a probability in [0, 1)."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p < 1:
        raise ValueError(f"dropout: p must be a probability in [0, 1), got {p!r}")
    return float(p)


def apply_dropout(node, x, p, training):
    """``node(p)(x)`` (a dropout Function) after checking the arguments; ``x`` itself when not
    ``training`` or for ``p = 0``. Shared by both paths."""
    p = check_probability(p)
    if not training or p == 0:
        return x
    if x.dtype.kind != "f":
        raise TypeError(f"dropout: expected a floating-point tensor, got {x.dtype}")
    return node(p)(x)


@switched
def dropout(x, p=0.5, training=True):
    """Inverted dropout of ``x`` (any shape) when ``training``; the identity otherwise (or for p=0)."""
    return apply_dropout(Dropout, x, p, training)
