"""``DataLoader``: mini-batches of Tensors on the current device.

    loader = DataLoader(TensorDataset(images, labels), batch_size=128, shuffle=True, seed=0)
    for x, y in loader:          # x: (128, 1, 28, 28) float32, y: (128,) int64
        ...

A batch is gathered with one vectorised index per array (``images[indices]``) when the dataset
allows it (``batch_indexing``), else by stacking its samples one by one, and is moved to the
device once. Floating-point arrays become float32; integer arrays keep their dtype (uint8 pixels
stay uint8 on the way, a quarter of int64's bytes, and become float32 in the first layer).

With ``num_workers > 0`` the batches are gathered in worker processes (``workers.py``) and moved to the
device here.
"""

import numpy

from .. import backend
from ..engine import creation
from ..engine.tensor import Tensor
from .dataset import _as_array
from .workers import load_in_workers


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size`` samples (PyTorch's arguments, by the same names).

    shuffle: visit the samples in a fresh random order each epoch (each pass of a ``for`` loop).
    sampler: an iterable of dataset indices with a length, which sets the order instead (such as
        ``distributed.DistributedSampler``, each rank's share); it excludes ``shuffle`` and ``seed``.
    num_workers: 0 loads in this process; n > 0 loads in n worker processes (``workers.py``: the dataset and
        ``collate_fn`` must be picklable where processes are spawned, as in PyTorch).
    collate_fn: makes a batch from the list of its samples; the batch is then what it returns (PyTorch's rule),
        made on the host when in a worker. Without it, fields are stacked and become Tensors on the current device.
    pin_memory: accepted and ignored: CuPy copies batches from ordinary host memory.
    drop_last: skip the last batch when it has fewer than ``batch_size`` samples.
    seed: seeds this loader's own random generator, so the same seed gives the same batches;
        with None the order comes from dlscratch's generator (``dlscratch.manual_seed``).
    prefetch_factor: batches loaded ahead per worker (default 2, as in PyTorch).
    multiprocessing_context: how workers start: "fork", "spawn", "forkserver", or None for the default.
    Yields a tuple of Tensors when the dataset's samples are tuples, else one Tensor.
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, *, num_workers=0, collate_fn=None,
                 pin_memory=False, drop_last=False, seed=None, prefetch_factor=None, multiprocessing_context=None):
        _check_arguments(dataset, batch_size, shuffle, drop_last, seed)
        if sampler is not None and (shuffle or seed is not None):
            raise ValueError("DataLoader: sampler= sets the order itself; it cannot go with shuffle=True or seed=")
        if sampler is not None and not (hasattr(sampler, "__iter__") and hasattr(sampler, "__len__")):
            raise TypeError(f"DataLoader: sampler must be an iterable of indices with a length, "
                            f"got {type(sampler).__name__}")
        _check_workers(dataset, num_workers, collate_fn, prefetch_factor, multiprocessing_context)
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.seed = seed
        self.sampler = sampler
        self.num_workers, self.collate_fn, self.pin_memory = int(num_workers), collate_fn, bool(pin_memory)
        self.prefetch_factor = 2 if prefetch_factor is None else int(prefetch_factor)
        self.multiprocessing_context = multiprocessing_context
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
        starts = range(0, len(self) * self.batch_size, self.batch_size)
        batches = self._load(order[start:start + self.batch_size] for start in starts)
        try:
            for batch in batches:
                yield batch if self.collate_fn is not None else _to_tensors(batch)
        finally:
            batches.close()  # a loop left early stops the workers now

    def _load(self, index_batches):
        """The batches of ``index_batches`` (arrays of indices), gathered here or in worker processes."""
        if self.num_workers == 0:
            yield from map(self._gather, index_batches)
        else:  # each pass seeds its workers from this loader's generator (or dlscratch's), as PyTorch's does
            rng = self._rng if self._rng is not None else creation.generator(numpy)
            base_seed = int(rng.integers(2**32))
            yield from load_in_workers(self._gather, index_batches, self.num_workers, self.prefetch_factor,
                                       base_seed, self.multiprocessing_context)

    def _gather(self, indices):
        """The batch of the samples at ``indices``: what ``collate_fn`` makes of them, or their fields stacked
        into arrays (still on the host, or wherever the dataset keeps them)."""
        if self.collate_fn is not None:
            return self.collate_fn([self.dataset[int(i)] for i in indices])
        if getattr(self.dataset, "batch_indexing", False):
            return self.dataset[indices]
        return _collate([self.dataset[int(i)] for i in indices], indices)

    def __repr__(self):
        sampler = "" if self.sampler is None else f", sampler={self.sampler!r}"
        workers = "" if self.num_workers == 0 else f", num_workers={self.num_workers}"
        return (
            f"DataLoader({type(self.dataset).__name__} of {len(self.dataset)}, batch_size={self.batch_size}, "
            f"shuffle={self.shuffle}, drop_last={self.drop_last}, seed={self.seed}{sampler}{workers})"
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


def _check_workers(dataset, num_workers, collate_fn, prefetch_factor, context):
    if isinstance(num_workers, bool) or not isinstance(num_workers, (int, numpy.integer)) or num_workers < 0:
        raise ValueError(f"DataLoader: num_workers must be an integer >= 0 (0: load in this process), "
                         f"got {num_workers!r}")
    if collate_fn is not None and not callable(collate_fn):
        raise TypeError(f"DataLoader: collate_fn must be a function of a list of samples, got {collate_fn!r}")
    if prefetch_factor is not None and (num_workers == 0 or isinstance(prefetch_factor, bool)
                                        or not isinstance(prefetch_factor, int) or prefetch_factor < 1):
        raise ValueError(f"DataLoader: prefetch_factor must be a positive integer, and only goes with num_workers "
                         f"> 0 (as in PyTorch); got prefetch_factor={prefetch_factor!r}, num_workers={num_workers}")
    if context is not None and num_workers == 0:
        raise ValueError("DataLoader: multiprocessing_context only goes with num_workers > 0")
    if num_workers and _holds_gpu_arrays(dataset):
        raise ValueError("DataLoader: this dataset keeps its arrays on the GPU, where batches are gathered without "
                         "copies; worker processes cannot use the GPU: use num_workers=0")


def _holds_gpu_arrays(dataset):
    """True for a TensorDataset (or a Subset of one) whose arrays are on the GPU."""
    while hasattr(dataset, "dataset"):  # a Subset
        dataset = dataset.dataset
    return any(backend.is_gpu_array(a) for a in getattr(dataset, "arrays", ()))


def _to_tensors(batch):
    if isinstance(batch, (tuple, list)):
        return tuple(_to_tensor(a) for a in batch)
    return _to_tensor(batch)


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
