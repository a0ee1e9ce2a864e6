"""Indexing: ``x[index]`` with basic (slices, ints, None, ...) and integer-array indices."""

from .. import backend
from ..function import Function
from ..tensor import Tensor


def _is_advanced(index):
    parts = index if isinstance(index, tuple) else (index,)
    return any(not isinstance(p, (int, slice, type(None), type(Ellipsis))) for p in parts)


class GetItem(Function):
    """Basic indices select each element at most once, so backward assigns; integer arrays
    may repeat an element, so backward adds with the shim's ``scatter_add``."""

    def __init__(self, index):
        self.index = index

    def forward(self, x):
        self.x_shape, self.x_dtype = x.shape, x.dtype
        return x[self.index]

    def backward(self, gy):
        xp = backend.get_array_module(gy)
        gx = xp.zeros(self.x_shape, dtype=gy.dtype)
        if _is_advanced(self.index):
            backend.scatter_add(gx, self.index, gy)
        else:
            gx[self.index] = gy
        return gx


def _plain_index(index):
    """Replace tensors inside an index by their arrays."""
    if isinstance(index, tuple):
        return tuple(_plain_index(i) for i in index)
    return index.data if isinstance(index, Tensor) else index


def getitem(x, index):
    return GetItem(_plain_index(index))(x)
