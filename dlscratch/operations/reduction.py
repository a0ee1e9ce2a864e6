"""Reductions: sum, mean and max over dimensions (``dim``), with ``keepdim``, as in PyTorch."""

import numpy

from ..backend import get_array_module
from ..engine.function import Function
from ..engine.wrappable import wrappable
from .shape import is_int, wrap_dim
from .sums import sum_over


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
        return sum_over(x, self.axes, self.keepdim)

    def backward(self, gy):
        gy = _expand_like(gy, self.x_shape, self.axes, self.keepdim)
        return get_array_module(gy).broadcast_to(gy, self.x_shape)


class Mean(Function):
    float_result = True  # integers in, float32 out (engine/extensions/dtypes.py)
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, dim=None, keepdim=False):
        self.dim, self.keepdim = dim, keepdim

    def forward(self, x):
        self.x_shape = x.shape
        self.axes = normalize_axes(self.dim, x.ndim, self.name)
        self.count = 1
        for a in self.axes:
            self.count *= x.shape[a]
        return _mean(x, self.axes, self.keepdim, self.count)

    def backward(self, gy):
        gy = _expand_like(gy, self.x_shape, self.axes, self.keepdim) / self.count
        return get_array_module(gy).broadcast_to(gy, self.x_shape)


def _mean(x, axes, keepdims, count):
    """``x.mean(axes)`` as ``sum_over``'s sum divided by ``count``: NumPy's mean adds row by row as its sum does;
    float64 keeps NumPy's own."""
    if x.dtype.kind != "f" or x.dtype == "float64" or not count:
        return x.mean(axis=axes, keepdims=keepdims)
    if x.dtype == "float16":  # in float32, as NumPy's float16 mean: the sum alone could pass float16's range
        return (sum_over(x.astype("float32"), axes, keepdims) / count).astype(x.dtype)
    return sum_over(x, axes, keepdims) / count


class Max(Function):
    """Maximum over ``dim`` (int, tuple, or all elements when None). With ties, the gradient is
    split evenly among the tied maxima (as PyTorch's ``amax`` and ``max()`` do)."""

    saves_inputs = False  # backward does not read the inputs' values
    name = "amax"
    reduce = "max"  # the array method that reduces

    def __init__(self, dim=None, keepdim=False):
        self.dim, self.keepdim = dim, keepdim

    def forward(self, x):
        self.x_shape = x.shape
        self.axes = normalize_axes(self.dim, x.ndim, self.name)
        empty = [a for a in self.axes if x.shape[a] == 0]
        if empty:
            raise ValueError(
                f"cannot take the {self.reduce}imum over dimension {empty[0]} of size 0 (shape {x.shape}); "
                "reduce over non-empty dimensions only"
            )
        y = getattr(x, self.reduce)(axis=self.axes, keepdims=True)
        self.mask = x == y
        return y if self.keepdim else y.reshape([n for i, n in enumerate(x.shape) if i not in self.axes])

    def backward(self, gy):
        gy = _expand_like(gy, self.x_shape, self.axes, self.keepdim)
        ties = self.mask.sum(axis=self.axes, keepdims=True).astype(gy.dtype)
        return gy * self.mask / ties


@wrappable
def sum(x, dim=None, keepdim=False):
    return Sum(dim, keepdim)(x)


@wrappable
def mean(x, dim=None, keepdim=False):
    return Mean(dim, keepdim)(x)


class Min(Max):
    """Minimum over ``dim``, as ``Max``: tied minima share the gradient."""

    name = "amin"
    reduce = "min"


def amax(x, dim=None, keepdim=False):
    return Max(dim, keepdim)(x)


def amin(x, dim=None, keepdim=False):
    return Min(dim, keepdim)(x)


def var(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The variance over ``dim`` (int, tuple, or all elements when None), PyTorch's: the squared deviations
    from the mean summed and divided by ``n - correction``, ``n`` the count of elements reduced. The default,
    ``correction=1`` (Bessel's, the unbiased estimate), is PyTorch's; NumPy's ``var`` divides by ``n``
    (``correction=0``). ``unbiased=True/False`` is PyTorch's older spelling of ``correction=1/0``. Where
    ``n <= correction`` the result is inf or NaN, as in PyTorch."""
    if unbiased is not None and correction is not None:
        raise TypeError("var: pass correction or unbiased, not both (unbiased=False is correction=0)")
    if correction is None:
        correction = 1 if unbiased is None else int(bool(unbiased))
    axes = normalize_axes(dim, x.ndim, "var")
    count = 1
    for a in axes:
        count *= x.shape[a]
    deviation = x - mean(x, axes, keepdim=True)
    with numpy.errstate(divide="ignore", invalid="ignore"):  # n <= correction: inf or NaN, as PyTorch gives
        return sum(deviation * deviation, axes, keepdim) / max(count - correction, 0)


def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The standard deviation, ``sqrt(var(...))``, with ``var``'s arguments and default (``correction=1``)."""
    return var(x, dim, unbiased, keepdim, correction=correction).sqrt()
