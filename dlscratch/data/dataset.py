"""Datasets: what a DataLoader draws samples from.

A ``Dataset`` has a length and gives sample ``i`` as ``dataset[i]``. ``TensorDataset`` wraps
arrays that share their first dimension and also gives a whole batch at once,
``dataset[index_array]``, with one vectorised gather per array instead of a Python loop.
``Subset`` is a part of a dataset; ``random_split`` cuts a dataset into random, disjoint parts
(a validation set off the training set, say).
"""

import math
import numbers
from abc import ABC, abstractmethod

import numpy

from .. import backend, random
from ..engine.tensor import Tensor


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
        for k, a in enumerate(arrays):
            if hasattr(a, "__next__"):
                raise TypeError(f"TensorDataset: argument {k} is a {type(a).__name__}, which is used up after one "
                                "pass; give an array, a Tensor or a list (list() of it)")
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


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``: ``Subset(d, [4, 1])[0] == d[4]``.

    indices: a sequence or integer array of positions in ``dataset`` (kept as a NumPy int64 array).
    Gives whole batches (``subset[index_array]``, one gather) when ``dataset`` does.
    """

    def __init__(self, dataset, indices):
        if isinstance(indices, Tensor):
            indices = indices.data
        indices = backend.to_cpu(indices)
        if indices.ndim != 1 or (indices.size and indices.dtype.kind not in "iu"):
            raise ValueError(f"Subset: indices must be a 1-D sequence of integers, got {indices.dtype} of shape "
                             f"{indices.shape}")
        n = len(dataset)
        if indices.size and not (0 <= indices.min() and indices.max() < n):
            bad = indices[(indices < 0) | (indices >= n)][0]
            raise IndexError(f"Subset: index {bad} is out of range for a dataset of {n} samples (0 to {n - 1})")
        self.dataset = dataset
        self.indices = indices.astype(numpy.int64)
        self.batch_indexing = getattr(dataset, "batch_indexing", False)

    def __len__(self):
        return len(self.indices)

    def __getitem__(self, index):
        """Sample ``index`` (an int), or the batch at ``index`` (an int array or a slice) when the
        underlying dataset gives batches."""
        if isinstance(index, Tensor):
            index = backend.to_cpu(index.data)
        if isinstance(index, (int, numpy.integer)):
            return self.dataset[int(self.indices[index])]
        if not self.batch_indexing:
            raise TypeError(
                f"Subset: {type(self.dataset).__name__} gives one sample at a time; index the subset with an "
                "int, or wrap a dataset with batch indexing (such as TensorDataset)"
            )
        return self.dataset[self.indices[index if isinstance(index, slice) else backend.to_cpu(index)]]

    def __repr__(self):
        return f"Subset({len(self)} of the {len(self.dataset)} samples of {type(self.dataset).__name__})"


def random_split(dataset, lengths, generator=None, seed=None):
    """Split ``dataset`` into non-overlapping ``Subset``s of random samples, which together hold every sample.

    lengths: the sizes of the parts (integers summing to ``len(dataset)``), or fractions summing to 1
        (each part gets ``floor(fraction * len(dataset))`` samples, and the samples left over go one
        each to the first parts, as in PyTorch).
    generator: a CPU ``dlscratch.Generator`` (PyTorch's ``generator=``) or a ``numpy.random.Generator`` to
        draw the permutation from; seed: an integer, the same as ``generator=numpy.random.default_rng(seed)``.
        With neither, dlscratch's generator (``dlscratch.manual_seed``) is used.

        train, val = random_split(MNIST(train=True), [55000, 5000], seed=0)
    """
    n = len(dataset)
    sizes = _split_sizes(lengths, n)
    if generator is not None and seed is not None:
        raise ValueError("random_split: give generator or seed, not both")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError(f"random_split: seed must be a non-negative integer, got {seed!r}")
        generator = numpy.random.default_rng(seed)
    elif not isinstance(generator, numpy.random.Generator):
        generator = random.array_generator(generator, numpy, "random_split")
    order = generator.permutation(n)
    ends = numpy.cumsum(sizes)
    return [Subset(dataset, order[end - size:end]) for size, end in zip(sizes, ends)]


def _split_sizes(lengths, n):
    """The integer part sizes for ``lengths`` (integers or fractions) of a dataset of ``n`` samples."""
    lengths = list(lengths)
    if not lengths or not all(isinstance(x, numbers.Real) and not isinstance(x, bool) and x >= 0 for x in lengths):
        raise ValueError(f"random_split: lengths must be non-negative numbers, got {lengths}")
    if all(isinstance(x, numbers.Integral) for x in lengths):
        sizes = [int(x) for x in lengths]
    elif math.isclose(sum(lengths), 1) and all(x <= 1 for x in lengths):
        sizes = [math.floor(n * x) for x in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
    else:
        raise ValueError(f"random_split: fractions must sum to 1, got {lengths} (sum {sum(lengths)})")
    if sum(sizes) != n:
        raise ValueError(
            f"random_split: the lengths {lengths} sum to {sum(sizes)}, but the dataset has {n} samples; "
            "give integers that sum to len(dataset), or fractions that sum to 1"
        )
    return sizes
