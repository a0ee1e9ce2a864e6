"""Broadcasting: ``broadcast_to`` and its adjoint ``sum_to``.

Every binary operation broadcasts in forward, so in backward each input's gradient is summed
back over the dimensions that were broadcast (``sum_to``).
"""

from ..backend import get_array_module
from ..engine.function import Function
from .sums import sum_over


def sum_to(g, shape):
    """Sum array ``g`` down to ``shape``, undoing NumPy broadcasting. ``g: (..., *shape')``.

    ``shape`` must broadcast to ``g.shape``: aligned from the right, each of its dimensions is 1
    or equal to ``g``'s. The core's ``sum_to`` (``core/arithmetic.py``), kept apart so that the core runs alone,
    with two additions: the shapes are checked, and the sum is ``sums.py``'s blocked one."""
    if g.shape == shape:
        return g
    if not _expandable(shape, g.shape):
        raise ValueError(
            f"target shape {shape} is not expandable to the input's shape {g.shape}; aligned from the "
            f"right, each target dimension must be 1 or equal to the input's (as broadcasting allows)"
        )
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1
    )
    return sum_over(g, axes, keepdims=True).reshape(shape)


def _expandable(shape, to):
    """Whether ``shape`` broadcasts to ``to``."""
    if len(shape) > len(to):
        return False
    return all(n in (1, m) for n, m in zip(shape[::-1], to[::-1]))


class BroadcastTo(Function):
    saves_inputs = False  # backward does not read the inputs' values

    name = "broadcast_to"

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        self.x_shape = x.shape
        return get_array_module(x).broadcast_to(x, self.shape)

    def backward(self, gy):
        return sum_to(gy, self.x_shape)


class SumTo(Function):
    saves_inputs = False  # backward does not read the inputs' values

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
