"""Messages between two ranks: ``send`` and ``recv`` wait until the message is through; ``isend`` and
``irecv`` return at once with a ``Work`` to ``wait()`` on, so a rank can compute while its message travels.

    if dist.get_rank() == 0:
        dist.send(activations, dst=1)        # rank 1 must post a recv of the same shape and dtype
    else:
        dist.recv(activations, src=0)        # filled in place

A model split over ranks (pipeline parallelism) sends its activations forward and their gradients back this
way. GPU arrays travel through host memory (a copy each way); host arrays go to MPI as they are.
"""

from .. import backend
from .collectives import message_buffer, on_the_wire, through_host
from .process_group import communicator, get_rank, get_world_size, watched


class Work:
    """A message under way; ``wait()`` returns once it is done (for ``irecv``: once the tensor holds it)."""

    def __init__(self, request, name, peer, finish=None, host_copy=None):
        self._request, self._finish, self._done = request, finish, False
        self._name, self._peer = name, peer  # for the watchdog, while wait() waits
        self._host_copy = host_copy  # MPI reads or writes it until the message is through: keep it alive

    def is_completed(self):
        """Whether the message is through, without waiting."""
        if not self._done and self._request.Test():
            self._complete()
        return self._done

    def wait(self):
        if not self._done:
            watched(None, f"{self._name}'s wait", self._request.Wait, peer=self._peer)
            self._complete()
        return True

    def _complete(self):
        self._done = True
        if self._finish is not None:
            self._finish()
        self._host_copy = None


def send(tensor, dst, tag=0):
    """Send ``tensor``'s values to rank ``dst``; returns when the buffer may be reused."""
    array, comm = _checked(tensor, dst, "send", "dst")
    through_host(array, lambda host: watched(None, f"send to rank {dst}", comm.Send, on_the_wire(host), dest=dst,
                                             tag=tag, peer=dst), write_back=False)


def recv(tensor, src=None, tag=0):
    """Fill ``tensor`` in place with a message from rank ``src`` (any rank when None); returns the sender."""
    from mpi4py import MPI

    array, comm = _checked(tensor, src, "recv", "src")
    status = MPI.Status()
    source = MPI.ANY_SOURCE if src is None else src
    name = "recv from any rank" if src is None else f"recv from rank {src}"
    through_host(array, lambda host: watched(None, name, comm.Recv, on_the_wire(host), source=source, tag=tag,
                                             status=status, peer=src))
    return status.Get_source()


def isend(tensor, dst, tag=0):
    """Start sending ``tensor`` to rank ``dst``; do not change it before ``wait()`` on the returned ``Work``."""
    array, comm = _checked(tensor, dst, "isend", "dst")
    name = f"isend to rank {dst}"
    if not backend.is_gpu_array(array):
        return Work(comm.Isend(on_the_wire(array), dest=dst, tag=tag), name, dst)
    host = backend.to_cpu(array)
    return Work(comm.Isend(on_the_wire(host), dest=dst, tag=tag), name, dst, host_copy=host)


def irecv(tensor, src=None, tag=0):
    """Start receiving into ``tensor`` from rank ``src`` (any rank when None); it holds the message after
    ``wait()`` on the returned ``Work``."""
    from mpi4py import MPI

    array, comm = _checked(tensor, src, "irecv", "src")
    source = MPI.ANY_SOURCE if src is None else src
    name = "irecv from any rank" if src is None else f"irecv from rank {src}"
    if not backend.is_gpu_array(array):
        return Work(comm.Irecv(on_the_wire(array), source=source, tag=tag), name, src)
    host = backend.to_cpu(array)

    def to_device():
        array[...] = backend.get_array_module(array).asarray(host)

    return Work(comm.Irecv(on_the_wire(host), source=source, tag=tag), name, src, finish=to_device, host_copy=host)


def _checked(tensor, peer, caller, role):
    """The array to send or fill, and the communicator; clear errors for a bad peer or a world of one."""
    array = message_buffer(tensor, caller)
    comm, world = communicator(), get_world_size()
    if comm is None or world == 1:
        raise RuntimeError(f"{caller}: a message needs two processes; start them with mpiexec -n 2 (or more)")
    if peer is None and role == "src":
        return array, comm
    if isinstance(peer, bool) or not isinstance(peer, int) or not 0 <= peer < world:
        raise ValueError(f"{caller}: {role} must be a rank in [0, {world}), got {peer!r}")
    if peer == get_rank():
        raise ValueError(f"{caller}: rank {peer} cannot message itself; {role} must be another rank")
    return array, comm
