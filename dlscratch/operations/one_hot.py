"""``one_hot``: class indices as rows of the identity matrix, as PyTorch's ``F.one_hot``. Not a graph node: its
result is integer, so no gradient flows through it."""

import numbers

import numpy

from .. import backend
from ..engine.tensor import Tensor


def one_hot(tensor, num_classes=-1):
    """int64 class indices of any shape (*) as an int64 tensor (*, num_classes): 1 at each index, 0 elsewhere.
    ``num_classes=-1`` takes the largest index + 1; every index must lie in [0, num_classes)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"one_hot: expected a tensor of class indices, got {type(tensor).__name__}")
    if tensor.dtype != numpy.int64:
        raise TypeError(f"one_hot: expected int64 class indices, got {tensor.dtype}; convert with .to(dlscratch.int64)")
    if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral) or num_classes < -1:
        raise ValueError(f"one_hot: num_classes must be a non-negative integer, or -1 to infer it, got {num_classes!r}")
    indices = tensor.data
    xp = backend.get_array_module(indices)
    if indices.size == 0:
        if num_classes == -1:
            raise ValueError("one_hot: cannot infer the number of classes from an empty tensor; pass num_classes")
    else:
        lowest, highest = (int(v) for v in backend.to_cpu(xp.stack([indices.min(), indices.max()])))
        if lowest < 0:
            raise ValueError(f"one_hot: class indices must be non-negative, got {lowest}")
        if num_classes == -1:
            num_classes = highest + 1
        elif highest >= num_classes:
            raise ValueError(f"one_hot: class indices must be smaller than num_classes={num_classes}, got {highest}")
    return Tensor((indices[..., None] == xp.arange(int(num_classes))).astype(xp.int64))
