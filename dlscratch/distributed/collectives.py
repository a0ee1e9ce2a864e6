"""Collectives on tensors, in place, over the process group: ``all_reduce``, ``broadcast``, ``barrier``.

Host arrays go to MPI as they are (mpi4py reads NumPy's buffer directly), except float16: not every MPI has
a float16 type (Open MPI has none), so float16 travels as its 16-bit patterns and is reduced in float32. GPU
arrays go through NCCL (``cupy.cuda.nccl``) when every rank has a GPU of its own, and through host memory
otherwise: copied to the host, reduced by MPI, copied back. Outside a group (one process) every collective
leaves the tensor as it is. An op that a dtype cannot hold is refused on every rank before any message: the
tensor is left as it was, and the ranks still in step.
"""

import functools

import numpy

from .. import backend
from ..engine.tensor import Tensor
from . import nccl
from .process_group import communicator, get_world_size, mpi, start_collective, watched


class ReduceOp:
    """How ``all_reduce`` combines the ranks' values (PyTorch's names)."""

    SUM, PRODUCT, MIN, MAX, AVG = "sum", "product", "min", "max", "avg"


_OPS = (ReduceOp.SUM, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.AVG)


def message_buffer(tensor, caller):
    """The array that ``tensor`` (a Tensor or an array) holds, checked to be sent or received in place:
    a host or GPU array, contiguous."""
    array = tensor.data if isinstance(tensor, Tensor) else tensor
    if not (isinstance(array, numpy.ndarray) or backend.is_gpu_array(array)):
        raise TypeError(f"{caller}: expected a Tensor or an array, got {type(tensor).__name__}")
    if not array.flags.c_contiguous:
        raise ValueError(f"{caller}: the tensor must be contiguous (C order) to be sent in place; "
                         "use .contiguous() first")
    return array


def all_reduce(tensor, op=ReduceOp.SUM):
    """Replace ``tensor``'s values by their combination over every rank (``op``: sum by default), in place.
    Bool tensors combine as PyTorch's do: sum and max are "or", product and min "and"; avg needs floats."""
    if op not in _OPS:
        raise ValueError(f"all_reduce: op must be one of {list(_OPS)}, got {op!r}")
    array = message_buffer(tensor, "all_reduce")
    _check_reducible(op, array.dtype)
    comm = communicator()
    if comm is None or get_world_size() == 1:
        return tensor
    if backend.is_gpu_array(array) and nccl.takes(array.dtype) and nccl.usable():
        nccl.all_reduce(array, op)
    else:
        through_host(array, lambda host: _reduce_on_host(comm, host, op))
    return tensor


def _check_reducible(op, dtype):
    """Refuse, before any message, a dtype that cannot be reduced, and the mean of integers or bools (PyTorch's
    NCCL backend refuses it too)."""
    if dtype.kind not in "biuf":
        raise TypeError(f"all_reduce: cannot reduce a {dtype} tensor; use a bool, integer or floating-point one")
    if op == ReduceOp.AVG and dtype.kind != "f":
        raise TypeError(f"all_reduce: op 'avg' needs a floating-point tensor, got {dtype} (the mean of integers or "
                        "booleans is not one); convert first with .float(), or reduce with 'sum' and divide")


def _reduce_on_host(comm, host, op):
    ops, in_place = _mpi_ops()
    values = widened(host)
    watched(start_collective(), "all_reduce", comm.Allreduce, in_place, values, op=ops[op, host.dtype.kind == "b"])
    if op == ReduceOp.AVG:
        values /= get_world_size()
    if values is not host:
        with numpy.errstate(over="ignore"):  # past float16's range is inf, as a float16 sum would give
            host[...] = values  # rounded to float16 once


def widened(host):
    """``host`` itself, or for float16 a float32 copy to reduce: MPI then needs no float16 type."""
    return host.astype(numpy.float32) if host.dtype == numpy.float16 else host


def on_the_wire(host):
    """The buffer MPI sends or fills for host array ``host``: a float16 array as its 16-bit patterns (a view,
    so a message received lands in ``host``), any other as it is."""
    return host.view(numpy.uint16) if host.dtype == numpy.float16 else host


def broadcast(tensor, src=0):
    """Replace ``tensor``'s values on every rank by rank ``src``'s, in place."""
    array = message_buffer(tensor, "broadcast")
    comm = communicator()
    if not (isinstance(src, int) and 0 <= src < get_world_size()):
        raise ValueError(f"broadcast: src must be a rank in [0, {get_world_size()}), got {src!r}")
    if comm is None or get_world_size() == 1:
        return tensor
    if backend.is_gpu_array(array) and nccl.takes(array.dtype) and nccl.usable():
        nccl.broadcast(array, src)
    else:
        through_host(array, lambda host: watched(start_collective(), "broadcast", comm.Bcast, on_the_wire(host),
                                                 root=src))
    return tensor


def through_host(array, mpi_call, write_back=True):
    """Run ``mpi_call`` on ``array`` itself when it lives on the host; for a GPU array, on a host copy,
    written back to the device afterwards unless ``write_back`` is false (the array was only sent)."""
    if not backend.is_gpu_array(array):
        return mpi_call(array)
    host = backend.to_cpu(array)
    result = mpi_call(host)
    if write_back:
        array[...] = backend.get_array_module(array).asarray(host)
    return result


def barrier():
    """Wait until every rank has reached this point."""
    comm = communicator()
    if comm is not None:
        watched(start_collective(), "barrier", comm.Barrier)


def all_gather_object(value):
    """Every rank's ``value`` (any picklable object), as a list indexed by rank."""
    comm = communicator()
    return [value] if comm is None else watched(start_collective(), "all_gather_object", comm.allgather, value)


@functools.cache
def _mpi_ops():
    """MPI's op for each (op, whether the values are bools) and MPI's in-place marker, made once. MPI has no sum
    of bools: "or" and "and"."""
    MPI = mpi()
    ops = {(ReduceOp.SUM, False): MPI.SUM, (ReduceOp.AVG, False): MPI.SUM, (ReduceOp.PRODUCT, False): MPI.PROD,
           (ReduceOp.MIN, False): MPI.MIN, (ReduceOp.MAX, False): MPI.MAX, (ReduceOp.SUM, True): MPI.LOR,
           (ReduceOp.PRODUCT, True): MPI.LAND, (ReduceOp.MIN, True): MPI.LAND, (ReduceOp.MAX, True): MPI.LOR}
    return ops, MPI.IN_PLACE
