"""Shape changes that move no values: reshape and permute (and helpers built on them)."""

import numbers

from ..engine.function import Function


def is_int(value):
    """True for a Python or NumPy integer (not a bool): what PyTorch takes as one dim."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


_SEVERAL_DIMS = {"max": "; for several dims use amax(dims)"}  # one-dim operations with a several-dims sibling


def wrap_dim(op, dim, ndim):
    """``dim`` (negatives count from the end) as an index in ``[0, ndim)``; a 0-d tensor takes
    dims -1 and 0, as in PyTorch. Raises ``TypeError`` naming ``op`` for a dim that is not one int,
    ``IndexError`` when out of range."""
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{op}: dim must be one int, got {dim!r}{_SEVERAL_DIMS.get(op, '')}")
    if not is_int(dim):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__} {dim!r}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return int(dim) % n


class Reshape(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        self.x_shape = x.shape
        try:
            return x.reshape(self.shape)
        except ValueError:
            raise ValueError(f"cannot reshape {x.size} elements of shape {x.shape} into {self.shape}") from None

    def backward(self, gy):
        return gy.reshape(self.x_shape)


class Permute(Function):
    """Reorder dimensions: output dimension i is input dimension ``dims[i]``."""

    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, dims):
        self.dims = tuple(dims)

    def forward(self, x):
        if len(self.dims) != x.ndim:
            raise ValueError(f"dims {self.dims} are not a permutation of the {x.ndim} dimensions")
        dims = [wrap_dim("permute", d, x.ndim) for d in self.dims]
        if sorted(dims) != list(range(x.ndim)):
            raise ValueError(f"dims {self.dims} are not a permutation of the {x.ndim} dimensions")
        self.dims = tuple(dims)
        return x.transpose(self.dims)

    def backward(self, gy):
        inverse = [0] * len(self.dims)
        for i, d in enumerate(self.dims):
            inverse[d] = i
        return gy.transpose(inverse)


def _shape_args(shape):
    """Accept ``f(2, 3)`` and ``f((2, 3))`` alike."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return shape


def reshape(x, *shape):
    return Reshape(_shape_args(shape))(x)


def permute(x, *dims):
    return Permute(_shape_args(dims))(x)


def transpose(x, dim0=None, dim1=None):
    """Swap two dimensions (PyTorch); with no dims, reverse them all (NumPy's ``.T``)."""
    if dim0 is None and dim1 is None:
        return Permute(tuple(reversed(range(x.ndim))))(x)
    if dim0 is None or dim1 is None:
        raise ValueError("transpose: give both dimensions to swap, or neither to reverse all")
    dim0, dim1 = wrap_dim("transpose", dim0, x.ndim), wrap_dim("transpose", dim1, x.ndim)
    if x.ndim == 0:
        return Permute(())(x)
    dims = list(range(x.ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return Permute(dims)(x)


def flatten(x, start_dim=0, end_dim=-1):
    """Merge dimensions ``start_dim..end_dim`` into one (a 0-d tensor becomes shape ``(1,)``)."""
    start, end = wrap_dim("flatten", start_dim, x.ndim), wrap_dim("flatten", end_dim, x.ndim)
    if start > end:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}; give start_dim <= end_dim")
    shape = x.shape
    merged = 1
    for n in shape[start : end + 1]:
        merged *= n
    return Reshape(shape[:start] + (merged,) + shape[end + 1 :])(x)


def unsqueeze(x, dim):
    """Insert a dimension of size 1 at ``dim`` (in ``[-ndim - 1, ndim]``)."""
    dim = wrap_dim("unsqueeze", dim, x.ndim + 1)
    return Reshape(x.shape[:dim] + (1,) + x.shape[dim:])(x)


def squeeze(x, dim=None):
    """Remove dimensions of size 1 (only ``dim`` when given)."""
    if dim is None:
        shape = tuple(n for n in x.shape if n != 1)
    else:
        dim = wrap_dim("squeeze", dim, x.ndim)
        if x.ndim == 0 or x.shape[dim] != 1:
            return x
        shape = x.shape[:dim] + x.shape[dim + 1 :]
    return Reshape(shape)(x)
