"""Reductions: sum, mean and max over dimensions (``dim``), with ``keepdim``, as in PyTorch."""

from ..backend import get_array_module
from ..entry_points import entry_point
from ..function import Function
from .shape import is_int, wrap_dim


def normalize_axes(dim, ndim, op):
    """``dim`` (None, an int or a tuple of ints, NumPy integers too, negatives allowed) as a sorted tuple
    of non-negative axes; ``TypeError`` naming ``op`` for anything else, ``IndexError`` for a dim out of
    range, as in PyTorch."""
    if dim is None:
        return tuple(range(ndim))
    if is_int(dim):
        axes = (dim,)
    elif isinstance(dim, (tuple, list)) and all(map(is_int, dim)):
        axes = tuple(dim)
    else:
        got = repr(dim) if isinstance(dim, (tuple, list)) else f"{type(dim).__name__} {dim!r}"
        raise TypeError(f"{op}: dim must be an int or a tuple of ints, got {got}")
    out = [wrap_dim(op, a, ndim) for a in axes]
    if len(set(out)) != len(out):
        raise ValueError(f"repeated dim in {dim}")
    return () if ndim == 0 else tuple(sorted(out))  # a 0-d tensor takes dim 0 or -1 and has nothing to reduce


def _expand_like(gy, x_shape, axes, keepdim):
    """Reshape a reduced gradient so that it broadcasts against the input's shape."""
    if not keepdim:
        shape = [1 if i in axes else n for i, n in enumerate(x_shape)]
        gy = gy.reshape(shape)
    return gy


class Sum(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, dim=None, keepdim=False):
        self.dim, self.keepdim = dim, keepdim

    def forward(self, x):
        self.x_shape = x.shape
        self.axes = normalize_axes(self.dim, x.ndim, self.name)
        return x.sum(axis=self.axes, keepdims=self.keepdim)

    def backward(self, gy):
        gy = _expand_like(gy, self.x_shape, self.axes, self.keepdim)
        return get_array_module(gy).broadcast_to(gy, self.x_shape)


class Mean(Function):
    float_result = True  # integers in, float32 out (layers/dtypes.py)
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, dim=None, keepdim=False):
        self.dim, self.keepdim = dim, keepdim

    def forward(self, x):
        self.x_shape = x.shape
        self.axes = normalize_axes(self.dim, x.ndim, self.name)
        self.count = 1
        for a in self.axes:
            self.count *= x.shape[a]
        return x.mean(axis=self.axes, keepdims=self.keepdim)

    def backward(self, gy):
        gy = _expand_like(gy, self.x_shape, self.axes, self.keepdim) / self.count
        return get_array_module(gy).broadcast_to(gy, self.x_shape)


class Max(Function):
    """Maximum over ``dim`` (int, tuple, or all elements when None). With ties, the gradient is
    split evenly among the tied maxima (as PyTorch's ``amax`` and ``max()`` do)."""

    saves_inputs = False  # backward does not read the inputs' values
    name = "amax"

    def __init__(self, dim=None, keepdim=False):
        self.dim, self.keepdim = dim, keepdim

    def forward(self, x):
        self.x_shape = x.shape
        self.axes = normalize_axes(self.dim, x.ndim, self.name)
        empty = [a for a in self.axes if x.shape[a] == 0]
        if empty:
            raise ValueError(
                f"cannot take the maximum over dimension {empty[0]} of size 0 (shape {x.shape}); "
                "reduce over non-empty dimensions only"
            )
        y = x.max(axis=self.axes, keepdims=True)
        self.mask = x == y
        return y if self.keepdim else y.reshape([n for i, n in enumerate(x.shape) if i not in self.axes])

    def backward(self, gy):
        gy = _expand_like(gy, self.x_shape, self.axes, self.keepdim)
        ties = self.mask.sum(axis=self.axes, keepdims=True).astype(gy.dtype)
        return gy * self.mask / ties


@entry_point
def sum(x, dim=None, keepdim=False):
    return Sum(dim, keepdim)(x)


@entry_point
def mean(x, dim=None, keepdim=False):
    return Mean(dim, keepdim)(x)


def amax(x, dim=None, keepdim=False):
    return Max(dim, keepdim)(x)
