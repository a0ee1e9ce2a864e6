"""Joining tensors: ``concatenate`` (PyTorch's ``cat``) and ``stack``."""

from ..backend import get_array_module
from ..function import Function


class Concatenate(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, axis=0):
        self.axis = axis

    def forward(self, *xs):
        self.sizes = [x.shape[self.axis] for x in xs]
        return get_array_module(*xs).concatenate(xs, axis=self.axis)

    def backward(self, gy):
        grads, start = [], 0
        for size in self.sizes:
            index = [slice(None)] * gy.ndim
            index[self.axis] = slice(start, start + size)
            grads.append(gy[tuple(index)])
            start += size
        return tuple(grads)


class Stack(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, axis=0):
        self.axis = axis

    def forward(self, *xs):
        return get_array_module(*xs).stack(xs, axis=self.axis)

    def backward(self, gy):
        axis = self.axis % gy.ndim
        return tuple(gy[(slice(None),) * axis + (i,)] for i in range(gy.shape[axis]))


def concatenate(tensors, axis=0):
    """Join a sequence of tensors along an existing axis."""
    if len(tensors) == 0:
        raise ValueError("concatenate: expected a non-empty sequence of tensors")
    return Concatenate(axis)(*tensors)


def stack(tensors, axis=0):
    """Join a sequence of same-shaped tensors along a new axis."""
    if len(tensors) == 0:
        raise ValueError("stack: expected a non-empty sequence of tensors")
    return Stack(axis)(*tensors)
