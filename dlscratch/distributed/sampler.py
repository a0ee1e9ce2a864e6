"""``DistributedSampler``: each rank's disjoint share of every epoch (PyTorch's name and rules).

    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)   # 64 per rank
    for epoch in range(epochs):
        sampler.set_epoch(epoch)                                   # fit() does this itself

Every rank draws the same permutation (from ``seed + epoch``) and takes every ``num_replicas``-th index
of it, starting at its rank. So batch k of the ranks together is positions ``k*B .. (k+1)*B - 1`` of
the permutation, ``B`` being the ranks' batches together: exactly the batch one process would read with
``batch_size=B`` from a ``DistributedSampler`` of one replica. Unless ``drop_last``, the permutation is
padded with its own first indices to a multiple of ``num_replicas``, so that every rank has as many
batches (a rank with fewer would leave the others waiting in a collective).
"""

import math

import numpy

from .process_group import get_rank, get_world_size


class DistributedSampler:
    """Rank ``rank``'s share of ``dataset``'s indices, a new permutation each epoch when ``shuffle``. The lengths,
    the padding and how the permutation is dealt out follow PyTorch's rules, but the shuffled order differs from
    PyTorch's: the permutation comes from NumPy's generator, not torch's (with ``shuffle=False`` the order is
    PyTorch's)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        num_replicas = get_world_size() if num_replicas is None else num_replicas
        rank = get_rank() if rank is None else rank
        for name, value in (("num_replicas", num_replicas), ("seed", seed)):
            if isinstance(value, bool) or not isinstance(value, (int, numpy.integer)) or value < (name != "seed"):
                raise ValueError(f"DistributedSampler: {name} must be a whole number >= {int(name != 'seed')}, "
                                 f"got {value!r}")
        if isinstance(rank, bool) or not isinstance(rank, (int, numpy.integer)) or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: rank must be in [0, {num_replicas}), got {rank!r}")
        if not hasattr(dataset, "__len__"):
            raise TypeError(f"DistributedSampler: the dataset needs __len__, got {type(dataset).__name__}")
        self.dataset, self.num_replicas, self.rank = dataset, int(num_replicas), int(rank)
        self.shuffle, self.seed, self.drop_last = bool(shuffle), int(seed), bool(drop_last)
        self.epoch = 0

    def set_epoch(self, epoch):
        """Draw the next epoch's permutation from ``seed + epoch`` (the same on every rank)."""
        self.epoch = int(epoch)

    def __len__(self):
        """How many indices this rank gets per epoch."""
        n = len(self.dataset)
        return n // self.num_replicas if self.drop_last else math.ceil(n / self.num_replicas)

    def __iter__(self):
        n = len(self.dataset)
        order = numpy.random.default_rng(self.seed + self.epoch).permutation(n) if self.shuffle else numpy.arange(n)
        total = len(self) * self.num_replicas
        if total > n:  # pad with the permutation's own first indices (repeated if needed)
            order = numpy.resize(order, total)
        return iter(order[self.rank:total:self.num_replicas].tolist())

    def __repr__(self):
        return (f"DistributedSampler({type(self.dataset).__name__} of {len(self.dataset)}, "
                f"num_replicas={self.num_replicas}, rank={self.rank}, shuffle={self.shuffle}, seed={self.seed}, "
                f"drop_last={self.drop_last})")
