"""PyTorch's ``torch.cuda`` questions, answered by the backend: is there a GPU dlscratch can use (CuPy and a
device), and waiting for its queued work. Streams and events are in ``streams.py``, CUDA graphs in ``graphs.py``,
as in PyTorch, and ``amp.py`` keeps the older ``torch.cuda.amp`` spellings; ``blas.py`` makes the matrix products
a capture records (CuPy refuses its own cuBLAS calls inside one)."""

from .. import backend
from . import amp  # noqa: F401  (dlscratch.cuda.amp, as torch.cuda.amp)
from .graphed_callables import make_graphed_callables
from .graphs import CUDAGraph, graph, graph_pool_handle
from .streams import Event, Stream, current_stream, default_stream, is_current_stream_capturing, set_stream, stream

__all__ = ["is_available", "device_count", "current_device", "synchronize", "Stream", "Event", "stream",
           "current_stream", "default_stream", "set_stream", "is_current_stream_capturing", "CUDAGraph", "graph",
           "graph_pool_handle", "make_graphed_callables"]


def is_available():
    """Whether CuPy is installed and sees a GPU (the strict CuPy stand-in, which plays one on the CPU, counts)."""
    return backend.gpu_available()


def device_count():
    """How many GPUs dlscratch uses: 1 where one is available (always CuPy's current device), else 0."""
    return 1 if is_available() else 0


def current_device():
    """The index of the GPU dlscratch uses."""
    if not is_available():
        raise RuntimeError(f"no usable GPU: {backend.gpu_unavailable_reason()}")
    return 0


def synchronize():
    """Wait until the GPU has finished the work queued so far (nothing to wait for on the CPU)."""
    backend.synchronize()
