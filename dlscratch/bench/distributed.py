"""Suite "distributed": data-parallel training steps on 1, 2, ... ranks, run under ``mpiexec``.

    OMP_NUM_THREADS=1 mpiexec -n 2 python -m dlscratch.bench distributed   # one BLAS thread per rank

For each k from 1 to the number of processes started, the first k ranks train the MLP 784-1000-10 with
``DistributedDataParallel`` at a global batch of 128 (128 / k per rank), SGD with momentum. The numbers of
ranks take turns for ``ROUNDS`` rounds, so that a slow spell of a shared machine hits them all; a round's
figure is the median of ``repeat`` steps. Per number of ranks the table gives the median step over the
rounds and the fastest and slowest round, the time of one all-reduce of the gradients' bytes alone (MPI's
``Allreduce`` on a float32 array of that size, median over the rounds), the bytes each rank sends into it,
and the samples per second at the median step. Where PyTorch is importable,
``torch.nn.parallel.DistributedDataParallel`` on the gloo backend runs the same step on the same ranks, in
the same rounds.

The last lines compare k ranks with one, round by round: the speed-up of each round (one rank's step over
k ranks' step in that round), their median and range, and in how many rounds k ranks were faster. They claim
nothing more: data parallel pays when a rank's share of the computation shrinks faster than the all-reduce
grows, and on a machine with fewer cores than ranks, or cores that wait on one memory bus, it may not.
"""

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy

from .. import backend, distributed, optim
from ..distributed import process_group
from ..engine.creation import manual_seed
from ..engine.tensor import Tensor
from ..operations.loss import cross_entropy
from .mlp import mlp
from .timing import format_table, median

SIZES, GLOBAL_BATCH, REPEAT, ROUNDS = (784, 1000, 10), 128, 20, 5
QUICK_SIZES, QUICK_BATCH, QUICK_REPEAT, QUICK_ROUNDS = (20, 16, 10), 8, 2, 2
HEADERS = ["ranks", "batch per rank", "framework", "median ms/step", "fastest-slowest", "all-reduce ms", "MB per step",
           "samples/s"]
COMMAND = "OMP_NUM_THREADS=1 mpiexec -n 2 python -m dlscratch.bench distributed"


def ddp_step(comm, sizes, batch):
    """A DDP training step on the ranks of ``comm``, warmed up: ``(step, gradient bytes per rank)``."""
    with process_group.using(comm):
        manual_seed(0)
        model = distributed.DistributedDataParallel(mlp(sizes))
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = numpy.random.default_rng(comm.Get_rank())
    x = Tensor(backend.xp.asarray(rng.random((batch, sizes[0]), dtype=numpy.float32)))
    y = Tensor(backend.xp.asarray(rng.integers(0, sizes[-1], size=batch)))

    def step():
        with process_group.using(comm):
            optimizer.zero_grad()
            cross_entropy(model(x), y).backward()
            optimizer.step()
        backend.synchronize()

    step()
    return step, sum(p.data.nbytes for p in model.parameters())


def torch_ddp_step(group, sizes, batch):
    """PyTorch's DDP (gloo) training step on the ranks of ``group``, warmed up."""
    import torch

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
    return step


def allreduce(comm, nbytes):
    """One in-place all-reduce of ``nbytes`` of float32 on ``comm``, as a function of no arguments."""
    from mpi4py import MPI

    buffer = numpy.ones(nbytes // 4, dtype=numpy.float32)
    return lambda: comm.Allreduce(MPI.IN_PLACE, buffer, op=MPI.SUM)


def median_seconds(fn, barrier, repeat):
    """Median seconds of ``repeat`` calls of ``fn`` after one untimed call, each call started together on every
    rank of the group (``barrier()``)."""
    fn()
    times = []
    for _ in range(repeat):
        barrier()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return median(times)


@dataclass
class Ranks:
    """The first ``k`` ranks of the world training together. On the other ranks the functions are None."""

    k: int
    batch: int  # per rank
    nbytes: int = 0  # the gradients' bytes each rank sends into an all-reduce
    step: Callable | None = None
    allreduce: Callable | None = None
    barrier: Callable | None = None
    torch_step: Callable | None = None
    torch_barrier: Callable | None = None


def set_up(k, rank, sizes, batch, with_torch):
    """Every rank's part in ``Ranks`` of ``k``: the MPI communicator and the models of the first ``k`` ranks,
    and PyTorch's group (every rank must take part in making each)."""
    from mpi4py import MPI

    ranks = Ranks(k, batch // k)
    part = MPI.COMM_WORLD.Split(0 if rank < k else MPI.UNDEFINED, rank)
    if rank < k:
        ranks.step, ranks.nbytes = ddp_step(part, sizes, ranks.batch)
        ranks.allreduce, ranks.barrier = allreduce(part, ranks.nbytes), part.Barrier
    if with_torch:
        import torch.distributed as tdist

        group = tdist.new_group(list(range(k)))
        if rank < k:
            ranks.torch_step = torch_ddp_step(group, sizes, ranks.batch)
            ranks.torch_barrier = lambda: tdist.barrier(group)
    return ranks


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


def one_round(configurations, repeat):
    """Each configuration's turn: ``{(k, "dlscratch" | "PyTorch (gloo)" | "all-reduce"): median seconds}`` of
    this rank's steps (the ranks outside a configuration wait, sleeping)."""
    from mpi4py import MPI

    seconds = {}
    for ranks in configurations:
        for name, fn, barrier in [("dlscratch", ranks.step, ranks.barrier),
                                  ("all-reduce", ranks.allreduce if ranks.k > 1 else None, ranks.barrier),
                                  ("PyTorch (gloo)", ranks.torch_step, ranks.torch_barrier)]:
            if fn is not None:
                seconds[ranks.k, name] = median_seconds(fn, barrier, repeat)
            _wait_without_spinning(MPI.COMM_WORLD)
    return seconds


def rows(configurations, rounds, global_batch):
    """The table's rows: per configuration and framework, the median over ``rounds`` (a list of ``one_round``
    results) and the fastest and slowest round, in milliseconds."""
    table = []
    for ranks in configurations:
        megabytes = ranks.nbytes / 2**20 if ranks.k > 1 else 0.0
        reduce_ms = median([r[ranks.k, "all-reduce"] for r in rounds]) * 1e3 if ranks.k > 1 else 0.0
        for framework in ("dlscratch", "PyTorch (gloo)"):
            if (ranks.k, framework) not in rounds[0]:
                continue
            times = [r[ranks.k, framework] for r in rounds]
            table.append([ranks.k, ranks.batch, framework, f"{median(times) * 1e3:.2f}",
                          f"{min(times) * 1e3:.2f}-{max(times) * 1e3:.2f}",
                          f"{reduce_ms:.2f}" if framework == "dlscratch" else "-", f"{megabytes:.2f}",
                          f"{global_batch / median(times):.0f}"])
    return table


def speedups(rounds, k, framework):
    """One line on ``k`` ranks against one for ``framework``: the speed-up of each round (one rank's step over
    ``k`` ranks' step in the same round), their median and range, and how many rounds ``k`` ranks won."""
    each = [r[1, framework] / r[k, framework] for r in rounds]
    faster = sum(s > 1 for s in each)
    return (f"{framework}, {k} ranks against 1: speed-up {median(each):.2f}x (median of {len(each)} rounds; "
            f"{min(each):.2f}x to {max(each):.2f}x), {k} ranks faster in {faster} of {len(each)} rounds")


def run(repeat=None, quick=False):
    """Measure 1..N ranks; rank 0 prints the table and returns ``(headers, rows)`` (other ranks: rows empty)."""
    from mpi4py import MPI

    distributed.init_process_group()
    world, rank = MPI.COMM_WORLD.Get_size(), MPI.COMM_WORLD.Get_rank()
    sizes, batch = (QUICK_SIZES, QUICK_BATCH) if quick else (SIZES, GLOBAL_BATCH)
    repeat = repeat or (QUICK_REPEAT if quick else REPEAT)
    rounds = QUICK_ROUNDS if quick else ROUNDS
    with_torch = start_torch(world, rank)
    if rank == 0:
        print(f"distributed: MLP {'-'.join(map(str, sizes))}, global batch {batch}, SGD momentum, "
              f"{world} process(es) started, {os.cpu_count()} CPU cores; {rounds} rounds, the numbers of ranks "
              f"taking turns; a round's figure is the median of {repeat} steps")
        if world > 1 and not any(os.environ.get(name) for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")):
            print("note: each rank's BLAS may use every core, so the ranks compete for them; start with "
                  "OMP_NUM_THREADS=1 (or cores / ranks) to give each rank its own")
    configurations = [set_up(k, rank, sizes, batch, with_torch) for k in range(1, world + 1) if batch % k == 0]
    _wait_without_spinning(MPI.COMM_WORLD)
    measured = [one_round(configurations, repeat) for _ in range(rounds)]
    if rank != 0:
        return HEADERS, []
    table = rows(configurations, measured, batch)
    print(format_table(HEADERS, table))
    frameworks = ["dlscratch"] + (["PyTorch (gloo)"] if with_torch else [])
    for ranks in configurations[1:]:
        print("\n".join(speedups(measured, ranks.k, framework) for framework in frameworks))
    if world == 1:
        print(f"one process: start it as `{COMMAND}` to compare ranks")
    return HEADERS, table
