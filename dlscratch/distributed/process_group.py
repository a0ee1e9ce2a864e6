"""The process group: which process this is (its rank) among how many (the world size), over MPI.

    mpiexec -n 4 python train.py          # four processes, ranks 0 to 3

``init_process_group()`` joins the processes that ``mpiexec`` started, through ``mpi4py``. MPI comes from
a wheel (``pip install mpi4py mpich``), so no system MPI is needed; on a cluster, mpi4py built against
the cluster's MPI works the same. Without mpi4py, or started without ``mpiexec``, this process is the
whole world: rank 0 of 1, and every collective is the identity.

A rank that raises and does not catch the exception aborts the whole run (``MPI_Abort``), after printing
its traceback with its rank: the other ranks would otherwise wait forever in their next collective.
"""

import contextlib
import os
import sys
import time
import traceback

_world = {"comm": None, "initialized": False}

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


def init_process_group(backend="mpi"):
    """Join the processes started together (``mpiexec -n N``); PyTorch's name. ``backend``: "mpi" (the only
    one; GPU arrays go through NCCL or host memory by themselves, ``collectives.py``). Calling it again
    does nothing. Raises RuntimeError when started by a launcher with several processes but mpi4py is
    missing, since the ranks could not meet."""
    if backend != "mpi":
        raise ValueError(f"init_process_group: backend must be 'mpi', got {backend!r}")
    if _world["initialized"]:
        return
    if not is_available():
        if launched_size() > 1:
            raise RuntimeError(f"init_process_group: started as one of {launched_size()} processes, but mpi4py is "
                               "not installed, so they cannot meet; pip install mpi4py mpich")
        _world.update(comm=None, initialized=True)
        return
    from mpi4py import MPI

    _world.update(comm=MPI.COMM_WORLD, initialized=True)
    if MPI.COMM_WORLD.Get_size() > 1:
        _abort_on_uncaught_exceptions(MPI.COMM_WORLD)


@contextlib.contextmanager
def using(comm):
    """Inside, the group is the MPI communicator ``comm`` (a part of the world, say, as the distributed
    benchmark measures 1, 2, ... ranks in one run); afterwards the group is as it was."""
    saved = dict(_world)
    _world.update(comm=comm, initialized=True)
    try:
        yield
    finally:
        _world.clear()
        _world.update(saved)


def destroy_process_group():
    """Leave the group (PyTorch's name): afterwards this process is rank 0 of 1 again. MPI itself stays
    initialised until the process ends, as mpi4py arranges."""
    _world.update(comm=None, initialized=False)


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


#: seconds between printing a rank's error and aborting: MPI_Abort stops the launcher's relays too, and
#: an error written just before could be lost on its way to the terminal (seen with MPICH's mpiexec)
ABORT_DELAY = 0.5


def _abort_on_uncaught_exceptions(comm):
    def abort(kind, value, trace):
        message = "".join(traceback.format_exception(kind, value, trace))
        sys.stderr.write(f"[rank {comm.Get_rank()} of {comm.Get_size()}] {message}"
                         f"[rank {comm.Get_rank()}] aborting every rank (MPI_Abort), so that none waits forever\n")
        sys.stderr.flush()
        time.sleep(ABORT_DELAY)
        comm.Abort(1)

    sys.excepthook = abort
