"""Joining tensors: ``concatenate`` (PyTorch's ``cat``) and ``stack``."""

from collections.abc import Iterator

from ..backend import get_array_module
from ..engine.function import Function
from .shape import wrap_dim


class Concatenate(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, dim=0):
        self.dim = dim

    def forward(self, *xs):
        self.dim = wrap_dim("concatenate", self.dim, xs[0].ndim)
        self.sizes = [x.shape[self.dim] for x in xs]
        return get_array_module(*xs).concatenate(xs, axis=self.dim)

    def backward(self, gy):
        grads, start = [], 0
        for size in self.sizes:
            index = [slice(None)] * gy.ndim
            index[self.dim] = slice(start, start + size)
            grads.append(gy[tuple(index)])
            start += size
        return tuple(grads)


class Stack(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, dim=0):
        self.dim = dim

    def forward(self, *xs):
        wrap_dim("stack", self.dim, xs[0].ndim + 1)
        return get_array_module(*xs).stack(xs, axis=self.dim)

    def backward(self, gy):
        dim = self.dim % gy.ndim
        return tuple(gy[(slice(None),) * dim + (i,)] for i in range(gy.shape[dim]))


def _check_sequence(tensors, op):
    if not isinstance(tensors, (list, tuple)):
        hint = "; pass list(...) of it" if isinstance(tensors, Iterator) else ""
        raise TypeError(f"{op}: expected a sequence of tensors (a list or tuple), got {type(tensors).__name__}{hint}")
    if len(tensors) == 0:
        raise ValueError(f"{op}: expected a non-empty sequence of tensors")


def concatenate(tensors, dim=0):
    """Join a sequence of tensors along an existing dimension (PyTorch's ``cat``)."""
    _check_sequence(tensors, "concatenate")
    return Concatenate(dim)(*tensors)


def stack(tensors, dim=0):
    """Join a sequence of same-shaped tensors along a new dimension."""
    _check_sequence(tensors, "stack")
    return Stack(dim)(*tensors)
