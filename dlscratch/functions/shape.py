"""Shape changes that move no values: reshape and permute (and helpers built on them)."""

from ..function import Function


class Reshape(Function):
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

    def __init__(self, dims):
        self.dims = tuple(dims)

    def forward(self, x):
        if sorted(d % x.ndim for d in self.dims) != list(range(x.ndim)) or len(self.dims) != x.ndim:
            raise ValueError(f"dims {self.dims} are not a permutation of the {x.ndim} dimensions")
        return x.transpose(self.dims)

    def backward(self, gy):
        inverse = [0] * len(self.dims)
        for i, d in enumerate(self.dims):
            inverse[d % len(self.dims)] = i
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
    dims = list(range(x.ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return Permute(dims)(x)


def flatten(x, start_dim=0, end_dim=-1):
    """Merge dimensions ``start_dim..end_dim`` into one."""
    shape = x.shape
    start, end = start_dim % max(x.ndim, 1), end_dim % max(x.ndim, 1)
    merged = 1
    for n in shape[start : end + 1]:
        merged *= n
    return Reshape(shape[:start] + (merged,) + shape[end + 1 :])(x)


def unsqueeze(x, dim):
    """Insert a dimension of size 1 at ``dim``."""
    dim = dim % (x.ndim + 1)
    return Reshape(x.shape[:dim] + (1,) + x.shape[dim:])(x)


def squeeze(x, dim=None):
    """Remove dimensions of size 1 (only ``dim`` when given)."""
    if dim is None:
        shape = tuple(n for n in x.shape if n != 1)
    else:
        dim = dim % x.ndim
        if x.shape[dim] != 1:
            return x
        shape = x.shape[:dim] + x.shape[dim + 1 :]
    return Reshape(shape)(x)
