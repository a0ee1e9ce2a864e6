"""Indexing: ``x[index]`` with basic (slices, ints, None, ...) and integer-array indices."""

from .. import backend
from ..engine.function import Function
from ..engine.tensor import Tensor


def _is_advanced(index):
    parts = index if isinstance(index, tuple) else (index,)
    return any(not isinstance(p, (int, slice, type(None), type(Ellipsis))) for p in parts)


class GetItem(Function):
    """Basic indices select each element at most once, so backward assigns; integer arrays
    may repeat an element, so backward adds with the shim's ``scatter_add``."""

    saves_inputs = False  # backward does not read the inputs' values

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


class TakeRows(Function):
    """``x[rows]`` for a 1-D integer array ``rows`` without repeats: the backward puts the rows back
    by assignment, not by the scatter-add that repeated indices would need (much slower on NumPy)."""

    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, rows):
        self.rows = rows

    def forward(self, x):
        self.n_rows = x.shape[0]
        return x[self.rows]

    def backward(self, gy):
        return _put(gy, self.rows, self.n_rows, 0)


class PutRows(Function):
    """A new array of ``n_rows`` rows, ``fill`` everywhere except ``out[rows] = x`` (``rows`` without
    repeats); the inverse of ``TakeRows``."""

    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, rows, n_rows, fill=0.0):
        self.rows, self.n_rows, self.fill = rows, n_rows, fill

    def forward(self, x):
        return _put(x, self.rows, self.n_rows, self.fill)

    def backward(self, gy):
        return gy[self.rows]


def _put(x, rows, n_rows, fill):
    out = backend.get_array_module(x).full((n_rows,) + x.shape[1:], fill, dtype=x.dtype)
    out[rows] = x
    return out


def take_rows(x, rows):
    """Rows ``rows`` (distinct integers) of ``x``, differentiable; see ``TakeRows``."""
    return TakeRows(rows)(x)


def put_rows(x, rows, n_rows, fill=0.0):
    """``x``'s rows placed at ``rows`` (distinct) of ``n_rows`` rows of ``fill``; see ``PutRows``."""
    return PutRows(rows, n_rows, fill)(x)
