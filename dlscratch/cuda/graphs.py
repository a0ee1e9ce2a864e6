"""CUDA graphs with PyTorch's names: ``CUDAGraph``, the ``graph`` context manager and ``graph_pool_handle``.

A captured graph replays its kernels as one launch, so the host pays for one launch where it paid for each. What
it replays is fixed at the capture: the same kernels, with the same arguments, on the same memory. So inputs go in
by copying into the tensors the capture read, results come out of the tensors it wrote, and nothing inside may
read a value on the host or wait for the device (CUDA refuses both; so does the strict stand-in, by CUDA's error
name). ``docs/gpu.md`` lists the rules; ``tests/test_cuda_graphs.py`` checks them.

Memory: everything a capture allocates comes from a memory pool of the graph's own (PyTorch's "private pool").
The graph writes into that memory at every replay, so none of it may ever be handed to other work, not even after
the tensors made in the capture are dropped. Two graphs may share a pool (``pool=other.pool()``) when they replay in
the order they were captured. A pool outlives its graph while any tensor made in the capture holds its memory.
A captured FFT (the FFT convolution's) also runs on memory of its cuFFT plan, which CuPy frees when its plan
cache drops the plan: the graph keeps the cached plans alive while it holds its capture.
"""

from .. import backend
from .streams import Stream

CAPTURE_ERROR_MODES = ("global", "thread_local", "relaxed")
_retired_pools = []  # pools of graphs reset or dropped, kept while a tensor still holds their memory


def _retire(pool):
    _retired_pools[:] = [p for p in _retired_pools if p.used_bytes()]
    if pool is not None and pool.used_bytes():
        _retired_pools.append(pool)


def graph_pool_handle():
    """A new memory pool for ``capture_begin(pool=...)``: the graphs captured with it share its memory."""
    _need_gpu("graph_pool_handle")
    return backend.cupy.cuda.MemoryPool()


def _need_gpu(where):
    if not backend.gpu_available():
        raise RuntimeError(f"{where}: capturing needs a GPU: {backend.gpu_unavailable_reason()}")


class CUDAGraph:
    """PyTorch's ``torch.cuda.CUDAGraph``: GPU work captured once (``capture_begin``/``capture_end``, or the
    ``graph`` context manager) and run again by ``replay()`` as one launch, on the same memory every time.

    Feed new inputs by copying them into the tensors the capture read (``static_x.copy_(x)``), and read the
    results from the tensors it wrote."""

    def __init__(self):
        self._graph = self._stream = self._allocator = self._pool = self._fft_plans = None

    def capture_begin(self, pool=None, capture_error_mode="global", stream=None):
        """Start capturing the GPU work issued from here on, on ``stream`` (a ``dlscratch.cuda.Stream``; default: a
        stream of the graph's own), allocating from ``pool`` (default: a new pool of the graph's own).

        ``capture_error_mode`` is PyTorch's argument and is checked, but CuPy captures in CUDA's relaxed mode
        whatever it says: its memory pool grows with ``cudaMalloc``, which the other modes refuse during a capture
        (PyTorch relaxes the mode around its own allocator's calls). The rules of the capturing stream itself
        (no host reads, no waits) hold in every mode."""
        _need_gpu("CUDAGraph")
        if capture_error_mode not in CAPTURE_ERROR_MODES:
            raise ValueError(f"CUDAGraph.capture_begin: capture_error_mode must be one of {CAPTURE_ERROR_MODES}, "
                             f"got {capture_error_mode!r}")
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"CUDAGraph.capture_begin: stream must be a dlscratch.cuda.Stream, got "
                            f"{type(stream).__name__}")
        if self._graph is not None or self._stream is not None:
            raise RuntimeError("CUDAGraph: this graph already holds a capture; call reset() before capturing again")
        cuda = backend.cupy.cuda
        pool = cuda.MemoryPool() if pool is None else pool
        stream = cuda.Stream(non_blocking=True) if stream is None else stream._cupy
        allocator = cuda.using_allocator(pool.malloc)
        stream.__enter__()
        allocator.__enter__()
        try:
            stream.begin_capture()
        except BaseException:
            allocator.__exit__(None, None, None)
            stream.__exit__(None, None, None)
            raise
        self._stream, self._allocator, self._pool = stream, allocator, pool

    def capture_end(self):
        """Stop capturing; from now on ``replay()`` runs what was captured."""
        if self._stream is None:
            raise RuntimeError("CUDAGraph.capture_end: no capture in progress; call capture_begin() first")
        stream, allocator, self._stream, self._allocator = self._stream, self._allocator, None, None
        try:
            self._graph = stream.end_capture()
        finally:
            allocator.__exit__(None, None, None)
            stream.__exit__(None, None, None)
        # A captured FFT runs on its cuFFT plan's twiddle factors and work area, which CuPy frees when its plan
        # cache drops the plan (past 16 plans, by default): the graph keeps the cached plans. The stand-in's FFT is
        # NumPy's, without plans.
        config = getattr(backend.cupy.fft, "config", None)
        self._fft_plans = [node.plan for _, node in config.get_plan_cache()] if config is not None else []

    def replay(self):
        """Run the captured work again, on the memory it was captured with."""
        if self._graph is None:
            raise RuntimeError("CUDAGraph.replay: nothing captured yet; capture with dlscratch.cuda.graph(g) first")
        self._graph.launch(backend.cupy.cuda.get_current_stream())

    def pool(self):
        """The memory pool of this graph's capture, to share with the next one (``capture_begin(pool=...)``)."""
        if self._pool is None:
            raise RuntimeError("CUDAGraph.pool: nothing captured yet")
        return self._pool

    def reset(self):
        """Drop the capture, and its memory pool once no tensor made in the capture holds its memory."""
        if self._stream is not None:
            raise RuntimeError("CUDAGraph.reset: a capture is in progress; end it first")
        _retire(self._pool)
        self._graph = self._pool = self._fft_plans = None

    def __del__(self):
        if self._pool is not None:
            _retire(self._pool)

    def _abandon(self):
        """End a capture that failed, keeping nothing (CUDA has invalidated it)."""
        try:
            self.capture_end()
        except Exception:  # noqa: BLE001  (the block's own error is the one to report)
            pass
        self.reset()


class graph:  # noqa: N801 (PyTorch's name)
    """PyTorch's ``torch.cuda.graph``: ``with dlscratch.cuda.graph(g):`` captures the block's GPU work into
    CUDAGraph ``g`` instead of running it. Warm up first: run the same code eagerly once or twice, so that what
    is made once (optimizer state, kept constants, compiled kernels) exists before the capture; an optimizer
    refuses to make its state inside one."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"graph: expected a dlscratch.cuda.CUDAGraph, got {type(cuda_graph).__name__}")
        self.cuda_graph, self.pool, self.stream, self.capture_error_mode = cuda_graph, pool, stream, capture_error_mode

    def __enter__(self):
        backend.synchronize()  # the capture starts after the work queued before it
        self.cuda_graph.capture_begin(self.pool, self.capture_error_mode, self.stream)
        return self

    def __exit__(self, kind, error, traceback):
        if kind is None:
            self.cuda_graph.capture_end()
        else:  # a failed capture is invalid, as on CUDA: end it and keep nothing
            self.cuda_graph._abandon()
        return False
