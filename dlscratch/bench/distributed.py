"""Suite "distributed": data-parallel training steps on 1, 2, ... ranks, run under ``mpiexec``.

    OMP_NUM_THREADS=1 mpiexec -n 2 python -m dlscratch.bench distributed   # one BLAS thread per rank

For each k from 1 to the number of processes started, the first k ranks train the MLP 784-1000-10 with
``DistributedDataParallel`` at a global batch of 128 (128 / k per rank), SGD with momentum, and the table
gives per step: the median time, the time of one all-reduce of the gradients' bytes alone (MPI's
``Allreduce`` on a float32 array of that size), the bytes each rank sends into it, and the samples per
second. Where PyTorch is importable, ``torch.nn.parallel.DistributedDataParallel`` on the gloo backend
runs the same step on the same ranks, in the same run.

Data parallel pays when a rank's share of the computation shrinks faster than the all-reduce grows:
on a machine with fewer cores than ranks, the ranks only take turns.
"""

import os
import socket
import time

import numpy

from .. import backend, distributed, nn, optim
from ..creation import manual_seed
from ..distributed import process_group
from ..functions.loss import cross_entropy
from ..tensor import Tensor
from .timing import format_table, median

SIZES, GLOBAL_BATCH, REPEAT = (784, 1000, 10), 128, 20
QUICK_SIZES, QUICK_BATCH, QUICK_REPEAT = (20, 16, 10), 8, 2
HEADERS = ["ranks", "batch per rank", "framework", "ms/step", "all-reduce ms", "MB per step", "samples/s"]


def mlp(sizes):
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def step_times(comm, sizes, batch, repeat):
    """Median seconds of a DDP step on the ranks of ``comm``, and the gradients' bytes per rank."""
    manual_seed(0)
    model = distributed.DistributedDataParallel(mlp(sizes))
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = numpy.random.default_rng(comm.Get_rank())
    x = Tensor(backend.xp.asarray(rng.random((batch, sizes[0]), dtype=numpy.float32)))
    y = Tensor(backend.xp.asarray(rng.integers(0, sizes[-1], size=batch)))

    def step():
        optimizer.zero_grad()
        cross_entropy(model(x), y).backward()
        optimizer.step()
        backend.synchronize()

    step()
    times = []
    for _ in range(repeat):
        comm.Barrier()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    nbytes = sum(p.data.nbytes for p in model.parameters())
    return median(times), nbytes


def allreduce_time(comm, nbytes, repeat):
    """Median seconds of one in-place all-reduce of ``nbytes`` of float32 on ``comm``."""
    from mpi4py import MPI

    buffer = numpy.ones(nbytes // 4, dtype=numpy.float32)
    times = []
    for _ in range(repeat + 1):
        comm.Barrier()
        start = time.perf_counter()
        comm.Allreduce(MPI.IN_PLACE, buffer, op=MPI.SUM)
        times.append(time.perf_counter() - start)
    return median(times[1:])


def torch_step_time(k, rank, sizes, batch, repeat):
    """Median seconds of PyTorch's DDP (gloo) step on ranks 0..k-1, or None without PyTorch."""
    try:
        import torch
        import torch.distributed as tdist
    except ImportError:
        return None
    group = tdist.new_group(list(range(k)))  # every rank must take part in making each group
    if rank >= k:
        return None
    torch.manual_seed(0)
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(n_in, n_out), torch.nn.ReLU()]
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers[:-1]), process_group=group)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.rand(batch, sizes[0]), torch.randint(0, sizes[-1], (batch,))

    def step():
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    step()
    times = []
    for _ in range(repeat):
        tdist.barrier(group)
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return median(times)


def start_torch(world, rank):
    """PyTorch's gloo group over this machine's loopback, beside MPI's; False without PyTorch."""
    try:
        import torch.distributed as tdist
    except ImportError:
        return False
    from mpi4py import MPI

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if "MASTER_PORT" not in os.environ:  # a port free now, rather than a fixed one that an earlier run may still hold
        os.environ["MASTER_PORT"] = str(MPI.COMM_WORLD.bcast(_free_port() if rank == 0 else None, root=0))
    tdist.init_process_group("gloo", rank=rank, world_size=world)
    return True


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_without_spinning(comm, interval=0.001):
    """A barrier that sleeps while it waits: MPI's own waits spin on a core, which would slow the ranks that
    are being measured when there are fewer cores than processes."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(interval)


def run(repeat=None, quick=False):
    """Measure 1..N ranks; rank 0 prints the table and returns ``(headers, rows)`` (other ranks: rows empty)."""
    from mpi4py import MPI

    distributed.init_process_group()
    world, rank = MPI.COMM_WORLD.Get_size(), MPI.COMM_WORLD.Get_rank()
    sizes, batch = (QUICK_SIZES, QUICK_BATCH) if quick else (SIZES, GLOBAL_BATCH)
    repeat = repeat or (QUICK_REPEAT if quick else REPEAT)
    with_torch = start_torch(world, rank)
    if rank == 0:
        print(f"distributed: MLP {'-'.join(map(str, sizes))}, global batch {batch}, SGD momentum, "
              f"{world} process(es) started, {os.cpu_count()} CPU cores; median of {repeat} steps")
        if world > 1 and not any(os.environ.get(name) for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")):
            print("note: each rank's BLAS may use every core, so the ranks compete for them; start with "
                  "OMP_NUM_THREADS=1 (or cores / ranks) to give each rank its own")
    rows = []
    for k in range(1, world + 1):
        if batch % k:
            continue
        part = MPI.COMM_WORLD.Split(0 if rank < k else MPI.UNDEFINED, rank)
        mine = None
        if rank < k:
            with process_group.using(part):
                seconds, nbytes = step_times(part, sizes, batch // k, repeat)
                reduce_seconds = allreduce_time(part, nbytes, repeat) if k > 1 else 0.0
            mine = (seconds, reduce_seconds, nbytes)
            part.Free()
        theirs = torch_step_time(k, rank, sizes, batch // k, repeat) if with_torch else None
        _wait_without_spinning(MPI.COMM_WORLD)
        mine = MPI.COMM_WORLD.bcast(mine, root=0)
        theirs = MPI.COMM_WORLD.bcast(theirs, root=0)
        seconds, reduce_seconds, nbytes = mine
        megabytes = nbytes / 2**20 if k > 1 else 0.0
        rows.append([k, batch // k, "dlscratch", f"{seconds * 1e3:.2f}", f"{reduce_seconds * 1e3:.2f}",
                     f"{megabytes:.2f}", f"{batch / seconds:.0f}"])
        if theirs is not None:
            rows.append([k, batch // k, "PyTorch (gloo)", f"{theirs * 1e3:.2f}", "-", f"{megabytes:.2f}",
                         f"{batch / theirs:.0f}"])
    if rank == 0:
        print(format_table(HEADERS, rows))
        if world == 1:
            print("one process: start it as `mpiexec -n 2 python -m dlscratch.bench distributed` to compare ranks")
    return HEADERS, rows if rank == 0 else []
