"""Joining tensors: ``concatenate`` (PyTorch's ``cat``) and ``stack``."""

from ..backend import get_array_module
from ..function import Function


class Concatenate(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, dim=0):
        self.dim = dim

    def forward(self, *xs):
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
        return get_array_module(*xs).stack(xs, axis=self.dim)

    def backward(self, gy):
        dim = self.dim % gy.ndim
        return tuple(gy[(slice(None),) * dim + (i,)] for i in range(gy.shape[dim]))


def concatenate(tensors, dim=0):
    """Join a sequence of tensors along an existing dimension (PyTorch's ``cat``)."""
    if len(tensors) == 0:
        raise ValueError("concatenate: expected a non-empty sequence of tensors")
    return Concatenate(dim)(*tensors)


def stack(tensors, dim=0):
    """Join a sequence of same-shaped tensors along a new dimension."""
    if len(tensors) == 0:
        raise ValueError("stack: expected a non-empty sequence of tensors")
    return Stack(dim)(*tensors)
