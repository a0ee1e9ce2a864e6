"""NCCL for GPU arrays, when every rank has a GPU of its own (``cupy.cuda.nccl``).

Rank 0 makes NCCL's unique id and MPI broadcasts it; each rank then joins the NCCL communicator on its
own GPU (its rank among the processes of its machine). NCCL reduces on the GPU, on the current stream,
without the host waiting. Not run in CI, which has no GPU: the strict stand-in takes the host path.
"""

from .. import backend
from .process_group import communicator, get_rank, get_world_size

_state = {"comm": None, "checked": False}


def local_rank():
    """This process's number among the ranks on its machine (MPI's shared-memory split)."""
    comm = communicator()
    if comm is None:
        return 0
    from mpi4py import MPI

    return comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()


def usable():
    """True when GPU arrays can go through NCCL: a real GPU, NCCL in CuPy, and a GPU per rank of this machine.
    Decided once per process (every rank decides alike: the answer is agreed over MPI)."""
    if not _state["checked"]:
        _state["checked"] = True
        mine = _can_use_nccl()
        agreed = communicator().allreduce(int(mine), op=_min()) if communicator() is not None else int(mine)
        if agreed:
            _state["comm"] = _join()
    return _state["comm"] is not None


def _can_use_nccl():
    if backend.nccl_module() is None:
        return False
    from mpi4py import MPI

    local = communicator().Split_type(MPI.COMM_TYPE_SHARED)
    return backend.cupy.cuda.runtime.getDeviceCount() >= local.Get_size()


def _join():
    nccl = backend.nccl_module()
    backend.cupy.cuda.Device(local_rank()).use()
    uid = nccl.get_unique_id() if get_rank() == 0 else None
    uid = communicator().bcast(uid, root=0)
    return nccl.NcclCommunicator(get_world_size(), uid, get_rank())


def _min():
    from mpi4py import MPI

    return MPI.MIN


def _types():
    nccl = backend.nccl_module()
    return {"float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32, "float64": nccl.NCCL_FLOAT64,
            "int32": nccl.NCCL_INT32, "int64": nccl.NCCL_INT64}


def takes(dtype):
    """Whether NCCL reduces ``dtype`` values here (others go through host memory)."""
    return backend.nccl_module() is not None and dtype.name in _types()


def all_reduce(array, op):
    nccl = backend.nccl_module()
    ops = {"sum": nccl.NCCL_SUM, "avg": nccl.NCCL_SUM, "product": nccl.NCCL_PROD, "min": nccl.NCCL_MIN,
           "max": nccl.NCCL_MAX}
    stream = backend.cupy.cuda.get_current_stream().ptr
    _state["comm"].allReduce(array.data.ptr, array.data.ptr, array.size, _types()[array.dtype.name], ops[op],
                            stream)
    if op == "avg":
        array /= get_world_size()


def broadcast(array, src):
    stream = backend.cupy.cuda.get_current_stream().ptr
    _state["comm"].bcast(array.data.ptr, array.size, _types()[array.dtype.name], src, stream)
