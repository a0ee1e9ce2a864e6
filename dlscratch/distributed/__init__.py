"""Data-parallel training over MPI: PyTorch's ``torch.distributed`` names, on ``mpi4py``.

    import dlscratch.distributed as dist
    dist.init_process_group()                          # mpiexec -n 4 python train.py
    model = dist.DistributedDataParallel(net)
    loader = DataLoader(data, batch_size=32, sampler=dist.DistributedSampler(data))
    fit(model, F.cross_entropy, optimizer, loader, epochs=3)   # progress printed by rank 0 only

Without mpi4py, or started without ``mpiexec``, a process is rank 0 of a world of 1 and all of this
runs as one process. ``send``/``recv`` (and ``isend``/``irecv``) move tensors between two ranks, for
models split over processes.
"""

from .collectives import ReduceOp, all_gather_object, all_reduce, barrier, broadcast
from .ddp import DistributedDataParallel
from .point_to_point import Work, irecv, isend, recv, send
from .process_group import (
    destroy_process_group,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
    mpiexec_path,
)
from .sampler import DistributedSampler

__all__ = ["DistributedDataParallel", "DistributedSampler", "ReduceOp", "Work", "all_gather_object", "all_reduce",
           "barrier", "broadcast", "destroy_process_group", "get_rank", "get_world_size", "init_process_group",
           "irecv", "is_available", "is_initialized", "isend", "mpiexec_path", "recv", "send"]
