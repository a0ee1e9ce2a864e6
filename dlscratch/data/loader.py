"""``DataLoader``: mini-batches of Tensors on the current device.

    loader = DataLoader(TensorDataset(images, labels), batch_size=128, shuffle=True, seed=0)
    for x, y in loader:          # x: (128, 1, 28, 28) float32, y: (128,) int64
        ...

A batch is gathered with one vectorised index per array (``images[indices]``) when the dataset
allows it (``batch_indexing``), else by stacking its samples one by one, and is moved to the
device once. Floating-point arrays become float32; integer arrays keep their dtype (uint8 pixels
stay uint8 on the way, a quarter of int64's bytes, and become float32 in the first layer).
"""

import numpy

from .. import backend, creation
from ..tensor import Tensor
from .dataset import _as_array


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size`` samples.

    shuffle: visit the samples in a fresh random order each epoch (each pass of a ``for`` loop).
    drop_last: skip the last batch when it has fewer than ``batch_size`` samples.
    seed: seeds this loader's own random generator, so the same seed gives the same batches;
        with None the order comes from dlscratch's generator (``dlscratch.manual_seed``).
    sampler: an iterable of dataset indices with a length, which sets the order instead (such as
        ``distributed.DistributedSampler``, each rank's share); it excludes ``shuffle`` and ``seed``.
    Yields a tuple of Tensors when the dataset's samples are tuples, else one Tensor.
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, seed=None, sampler=None):
        _check_arguments(dataset, batch_size, shuffle, drop_last, seed)
        if sampler is not None and (shuffle or seed is not None):
            raise ValueError("DataLoader: sampler= sets the order itself; it cannot go with shuffle=True or seed=")
        if sampler is not None and not (hasattr(sampler, "__iter__") and hasattr(sampler, "__len__")):
            raise TypeError(f"DataLoader: sampler must be an iterable of indices with a length, "
                            f"got {type(sampler).__name__}")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.seed = seed
        self.sampler = sampler
        self._rng = None if seed is None else numpy.random.default_rng(seed)

    def __len__(self):
        """The number of batches per epoch."""
        n = len(self.dataset) if self.sampler is None else len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        if self.sampler is not None:
            order = numpy.fromiter(self.sampler, dtype=numpy.int64, count=len(self.sampler))
        else:
            n = len(self.dataset)
            rng = self._rng if self._rng is not None else creation.generator(numpy)
            order = rng.permutation(n) if self.shuffle else numpy.arange(n)
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            yield self._batch(order[start:start + self.batch_size])

    def _batch(self, indices):
        if getattr(self.dataset, "batch_indexing", False):
            batch = self.dataset[indices]
        else:
            batch = _collate([self.dataset[int(i)] for i in indices], indices)
        if isinstance(batch, (tuple, list)):
            return tuple(_to_tensor(a) for a in batch)
        return _to_tensor(batch)

    def __repr__(self):
        sampler = "" if self.sampler is None else f", sampler={self.sampler!r}"
        return (
            f"DataLoader({type(self.dataset).__name__} of {len(self.dataset)}, batch_size={self.batch_size}, "
            f"shuffle={self.shuffle}, drop_last={self.drop_last}, seed={self.seed}{sampler})"
        )


def _check_arguments(dataset, batch_size, shuffle, drop_last, seed):
    if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
        one_shot = (f"a {type(dataset).__name__}, which is used up after one pass (a second epoch would see "
                    "nothing); make a list of its samples, or a TensorDataset") if hasattr(dataset, "__next__") \
            else type(dataset).__name__
        raise TypeError(
            f"DataLoader: the dataset needs __len__ and __getitem__ (e.g. a TensorDataset), got {one_shot}"
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, numpy.integer)) or batch_size < 1:
        raise ValueError(f"DataLoader: batch_size must be a positive integer, got {batch_size!r}")
    for name, value in (("shuffle", shuffle), ("drop_last", drop_last)):
        if not isinstance(value, (bool, numpy.bool_)):
            raise TypeError(f"DataLoader: {name} must be True or False, got {value!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, numpy.integer)) or seed < 0):
        raise ValueError(f"DataLoader: seed must be None or a non-negative integer, got {seed!r}")


def _collate(samples, indices):
    """One batch from a list of samples (those at ``indices`` of the dataset): tuples of fields are
    stacked field by field."""
    if not isinstance(samples[0], (tuple, list)):
        return _stack(samples, indices, "sample")
    fields = len(samples[0])
    for sample, i in zip(samples, indices):
        if len(sample) != fields:
            raise ValueError(f"DataLoader: cannot batch sample {indices[0]} with sample {i}: sample {indices[0]} "
                             f"has {fields} fields but sample {i} has {len(sample)}")
    return tuple(_stack([s[k] for s in samples], indices, f"field {k} of sample") for k in range(fields))


def _stack(items, indices, what):
    """``items`` (what the samples at ``indices`` hold) stacked into one array, or a ValueError naming
    the first two of different shapes."""
    arrays = [_as_array(x) for x in items]
    for array, i in zip(arrays, indices):
        if array.shape != arrays[0].shape:
            raise ValueError(
                f"DataLoader: cannot stack the samples of a batch: {what} {indices[0]} has shape {arrays[0].shape} "
                f"but {what} {i} has shape {array.shape}; make every sample the same shape (pad, crop or resize), "
                "or use batch_size=1"
            )
    return backend.get_array_module(*arrays).stack(arrays)


def _to_tensor(array):
    """A batch array as a Tensor on the current device: floats as float32, integers as they are."""
    array = _as_array(array)
    if array.dtype.kind == "f":
        array = array.astype(numpy.float32, copy=False)
    array = backend.to_cpu(array) if backend.xp is numpy else backend.to_gpu(array)
    return Tensor(array)
