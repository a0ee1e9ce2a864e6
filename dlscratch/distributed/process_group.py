"""The process group: which process this is (its rank) among how many (the world size), over MPI.

    mpiexec -n 4 python train.py          # four processes, ranks 0 to 3

``init_process_group()`` joins the processes that ``mpiexec`` started, through ``mpi4py``. MPI comes from
a wheel (``pip install mpi4py mpich``), so no system MPI is needed; on a cluster, mpi4py built against
the cluster's MPI works the same. Without mpi4py, or started without ``mpiexec``, this process is the
whole world: rank 0 of 1, and every collective is the identity.

A rank that raises and does not catch the exception aborts the whole run (``MPI_Abort``), after printing
its traceback with its rank: the other ranks would otherwise wait forever in their next collective. A rank
that leaves the group while the others still wait for it, or a collective that waits past ``timeout``, aborts
the run too, with a message naming the collective and the ranks (``watchdog.py``).
"""

import atexit
import contextlib
import functools
import os
import sys
import time
import traceback
from datetime import timedelta

from .watchdog import Watchdog, abort

#: how long a collective waits for the other ranks before the run is aborted (PyTorch's default for gloo)
DEFAULT_TIMEOUT = timedelta(minutes=30)

#: the group: its communicator, how many collectives this rank has started, and its watchdog (None outside a
#: group of several, or with an MPI that does not allow threads to call it, MPI_THREAD_MULTIPLE)
_world = {"comm": None, "initialized": False, "started": 0, "watchdog": None}
#: the watchdogs of the groups this process has left, to finish at exit
_left = []

#: the variables that MPI launchers set in each process they start (MPICH's PMI, Open MPI, Slurm)
_LAUNCHER_SIZES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")


def is_available():
    """True when mpi4py and an MPI library load (this process could join a group of several)."""
    try:
        from mpi4py import MPI  # noqa: F401
    except Exception:  # ImportError, or an MPI library that fails to load (RuntimeError)
        return False
    return True


def launched_size():
    """How many processes the launcher says it started (1 when started without one)."""
    for name in _LAUNCHER_SIZES:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 1


def mpiexec_path():
    """The ``mpiexec`` to start ranks with: the one installed beside this Python (the ``mpich`` wheel puts it in
    the environment's ``bin``), else the first on the PATH; None when there is none."""
    import shutil

    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.access(beside, os.X_OK) else shutil.which("mpiexec")


def launched_rank():
    """This process's rank as the launcher set it (0 when started without one), readable before MPI starts."""
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0


def init_process_group(backend="mpi", *, timeout=None):
    """Join the processes started together (``mpiexec -n N``); PyTorch's name. ``backend``: "mpi" (the only
    one; GPU arrays go through NCCL or host memory by themselves, ``collectives.py``). ``timeout``: a
    ``datetime.timedelta``, how long a collective may wait for the other ranks before the run is aborted (30
    minutes when None, as PyTorch's). Every rank must call it, as in PyTorch (the ranks meet in it); calling it
    again does nothing. Raises RuntimeError when started by a launcher with several processes but mpi4py is
    missing, since the ranks could not meet."""
    if backend != "mpi":
        raise ValueError(f"init_process_group: backend must be 'mpi', got {backend!r}")
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout
    if not isinstance(timeout, timedelta) or timeout <= timedelta(0):
        raise ValueError(f"init_process_group: timeout must be a datetime.timedelta > 0 (PyTorch's type), "
                         f"got {timeout!r}; for example timeout=datetime.timedelta(minutes=5)")
    if _world["initialized"]:
        return
    if not is_available():
        if launched_size() > 1:
            raise RuntimeError(f"init_process_group: started as one of {launched_size()} processes, but mpi4py is "
                               "not installed, so they cannot meet; pip install mpi4py mpich")
        _world.update(comm=None, initialized=True)
        return
    comm = mpi().COMM_WORLD
    _world.update(comm=comm, initialized=True, started=0)
    if comm.Get_size() > 1:
        if mpi().Query_thread() == mpi().THREAD_MULTIPLE:
            _world["watchdog"] = Watchdog(comm, timeout.total_seconds())
        _abort_on_uncaught_exceptions(comm)


@functools.cache
def mpi():
    """mpi4py's MPI module, imported once (an import inside a function costs more than a small all-reduce)."""
    from mpi4py import MPI

    return MPI


@contextlib.contextmanager
def using(comm):
    """Inside, the group is the MPI communicator ``comm`` (a part of the world, say, as the distributed
    benchmark measures 1, 2, ... ranks in one run); afterwards the group is as it was."""
    saved = dict(_world)
    _world.update(comm=comm, initialized=True, watchdog=None)  # unwatched: the watchdog numbers the world's only
    try:
        yield
    finally:
        _world.update(saved)


def destroy_process_group():
    """Leave the group (PyTorch's name): every other rank gets this rank's notice (``watchdog.py``), and
    afterwards this process is rank 0 of 1 again. MPI itself stays initialised until the process ends, as
    mpi4py arranges."""
    if _world["watchdog"] is not None:
        _world["watchdog"].leave(_world["started"])
        _left.append(_world["watchdog"])
    _world.update(comm=None, initialized=False, started=0, watchdog=None)


def _leave_at_exit():
    """Leave the group, and wait for the other ranks' notices (``Watchdog.finish``)."""
    destroy_process_group()
    for watchdog in _left:
        watchdog.finish()


atexit.register(_leave_at_exit)


def start_collective():
    """This rank's number for the collective it starts now (1, 2, ...; every rank numbers its collectives alike)."""
    _world["started"] += 1
    return _world["started"]


def watched(number, name, call, *args, peer=None, **kwargs):
    """``call(*args, **kwargs)``: a blocking MPI call in which this rank waits for the others in its collective
    ``number``, called ``name`` in the watchdog's errors; the watchdog knows it meanwhile. For a message
    (``number`` None) ``peer`` is the rank it waits for (None: any other rank)."""
    watchdog = _world["watchdog"]
    if watchdog is None:
        return call(*args, **kwargs)
    watchdog.waiting = (number, name, time.monotonic(), peer)
    try:
        return call(*args, **kwargs)
    finally:
        watchdog.waiting = None


def is_initialized():
    return _world["initialized"]


def communicator():
    """The MPI communicator of the group, or None when this process is the whole world."""
    return _world["comm"]


def get_rank():
    """This process's number in the group, 0 to ``get_world_size() - 1`` (0 outside a group)."""
    comm = _world["comm"]
    return 0 if comm is None else comm.Get_rank()


def get_world_size():
    """How many processes the group has (1 outside a group)."""
    comm = _world["comm"]
    return 1 if comm is None else comm.Get_size()


def _abort_on_uncaught_exceptions(comm):
    sys.excepthook = lambda kind, value, trace: abort(comm, "".join(traceback.format_exception(kind, value, trace)))
