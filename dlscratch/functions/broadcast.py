"""Broadcasting: ``broadcast_to`` and its adjoint ``sum_to``.

Every binary operation broadcasts in forward, so in backward each input's gradient is summed
back over the dimensions that were broadcast (``sum_to``).
"""

from ..backend import get_array_module
from ..function import Function


def sum_to(g, shape):
    """Sum array ``g`` down to ``shape``, undoing NumPy broadcasting. ``g: (..., *shape')``."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1
    )
    return g.sum(axis=axes, keepdims=True).reshape(shape)


class BroadcastTo(Function):
    name = "broadcast_to"

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        self.x_shape = x.shape
        return get_array_module(x).broadcast_to(x, self.shape)

    def backward(self, gy):
        return sum_to(gy, self.x_shape)


class SumTo(Function):
    name = "sum_to_shape"

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        self.x_shape = x.shape
        return sum_to(x, self.shape)

    def backward(self, gy):
        return get_array_module(gy).broadcast_to(gy, self.x_shape)


def broadcast_to(x, shape):
    """Broadcast ``x`` to ``shape`` (a read-only view in forward)."""
    return BroadcastTo(shape)(x)


def sum_to_shape(x, shape):
    """Sum tensor ``x`` down to ``shape`` (the adjoint of ``broadcast_to``)."""
    return SumTo(shape)(x)
