"""Datasets: what a DataLoader draws samples from.

A ``Dataset`` has a length and gives sample ``i`` as ``dataset[i]``. ``TensorDataset`` wraps
arrays that share their first dimension and also gives a whole batch at once,
``dataset[index_array]``, with one vectorised gather per array instead of a Python loop.
"""

from abc import ABC, abstractmethod

import numpy

from .. import backend
from ..tensor import Tensor


class Dataset(ABC):
    """A collection of samples: subclasses define ``__len__`` and ``__getitem__(i)``.

    A subclass whose ``__getitem__`` also takes an integer array of indices and returns the whole
    batch sets ``batch_indexing = True``; a DataLoader then fetches each batch in one call.
    """

    batch_indexing = False

    @abstractmethod
    def __len__(self):
        """The number of samples."""

    @abstractmethod
    def __getitem__(self, i):
        """Sample ``i``: usually a tuple such as (input, label)."""


def _as_array(x):
    """The array behind ``x``: a Tensor's data, a NumPy or CuPy array as it is, else a NumPy array."""
    if isinstance(x, Tensor):
        return x.data
    if isinstance(x, numpy.ndarray) or backend.is_gpu_array(x):
        return x
    return numpy.asarray(x)


def _on_device_of(a, index):
    """Index array ``index`` on the device of array ``a``."""
    return backend.to_gpu(index) if backend.is_gpu_array(a) else backend.to_cpu(index)


class TensorDataset(Dataset):
    """Samples are rows of arrays: ``TensorDataset(x, y)[i] == (x[i], y[i])``.

    arrays: NumPy or CuPy arrays, Tensors, or lists, all of the same length N (first dimension).
    ``dataset[indices]`` with an integer array or a slice gives the whole batch: (x[indices], y[indices]).
    """

    batch_indexing = True

    def __init__(self, *arrays):
        if not arrays:
            raise ValueError("TensorDataset: give at least one array, e.g. TensorDataset(images, labels)")
        self.arrays = tuple(_as_array(a) for a in arrays)
        if any(a.ndim == 0 for a in self.arrays):
            raise ValueError("TensorDataset: every array needs a first (sample) dimension; got a scalar")
        lengths = [len(a) for a in self.arrays]
        if len(set(lengths)) > 1:
            shapes = ", ".join(str(a.shape) for a in self.arrays)
            raise ValueError(
                f"TensorDataset: the arrays must have the same first dimension (number of samples); "
                f"got shapes {shapes}"
            )

    def __len__(self):
        return len(self.arrays[0])

    def __getitem__(self, index):
        """Sample ``index`` (an int), or the batch of samples at ``index`` (an int array or a slice)."""
        if isinstance(index, Tensor):
            index = index.data
        if isinstance(index, (int, numpy.integer, slice)):
            return tuple(a[index] for a in self.arrays)
        return tuple(a[_on_device_of(a, index)] for a in self.arrays)
