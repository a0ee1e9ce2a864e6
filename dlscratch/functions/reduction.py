"""Reductions: sum, mean and max over axes, with ``keepdims``."""

from ..backend import get_array_module
from ..function import Function


def normalize_axes(axis, ndim):
    """``axis`` (None, int or tuple, negatives allowed) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for a tensor of {ndim} dimensions")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis}")
    return tuple(sorted(out))


def _expand_like(gy, x_shape, axes, keepdims):
    """Reshape a reduced gradient so that it broadcasts against the input's shape."""
    if not keepdims:
        shape = [1 if i in axes else n for i, n in enumerate(x_shape)]
        gy = gy.reshape(shape)
    return gy


class Sum(Function):
    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.x_shape = x.shape
        self.axes = normalize_axes(self.axis, x.ndim)
        return x.sum(axis=self.axes, keepdims=self.keepdims)

    def backward(self, gy):
        gy = _expand_like(gy, self.x_shape, self.axes, self.keepdims)
        return get_array_module(gy).broadcast_to(gy, self.x_shape)


class Mean(Function):
    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.x_shape = x.shape
        self.axes = normalize_axes(self.axis, x.ndim)
        self.count = 1
        for a in self.axes:
            self.count *= x.shape[a]
        return x.mean(axis=self.axes, keepdims=self.keepdims)

    def backward(self, gy):
        gy = _expand_like(gy, self.x_shape, self.axes, self.keepdims) / self.count
        return get_array_module(gy).broadcast_to(gy, self.x_shape)


class Max(Function):
    """Maximum over one axis (or all elements). With ties, the gradient goes to the first
    maximal element, the one ``argmax`` returns (as PyTorch's ``max(dim)`` does)."""

    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        if self.axis is not None and not isinstance(self.axis, int):
            raise ValueError("max reduces over one axis or all of them (axis=None)")
        if x.size == 0:
            raise ValueError("max of an empty tensor")
        self.x_shape = x.shape
        flat = x.reshape(-1) if self.axis is None else x
        self.axis_used = 0 if self.axis is None else normalize_axes(self.axis, x.ndim)[0]
        self.index = flat.argmax(axis=self.axis_used, keepdims=True)
        self.flat_shape = flat.shape
        y = get_array_module(x).take_along_axis(flat, self.index, axis=self.axis_used)
        if self.axis is None:
            return y.reshape((1,) * x.ndim if self.keepdims else ())
        return y if self.keepdims else y.squeeze(self.axis_used)

    def backward(self, gy):
        xp = get_array_module(gy)
        n = self.flat_shape[self.axis_used]
        positions = xp.arange(n).reshape([n if i == self.axis_used else 1 for i in range(len(self.flat_shape))])
        mask = positions == self.index
        gy = gy.reshape(self.index.shape)
        return (mask * gy).reshape(self.x_shape)


def sum(x, axis=None, keepdims=False):
    return Sum(axis, keepdims)(x)


def mean(x, axis=None, keepdims=False):
    return Mean(axis, keepdims)(x)


def amax(x, axis=None, keepdims=False):
    return Max(axis, keepdims)(x)
