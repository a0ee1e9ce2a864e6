"""PyTorch's ``torch.cuda`` questions, answered by the backend: is there a GPU dlscratch can use (CuPy and a
device), and waiting for its queued work."""

from . import backend


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


class CUDAGraph:
    """PyTorch's ``torch.cuda.CUDAGraph``: GPU work captured once (``capture_begin``/``capture_end``, or the
    ``graph`` context manager) and run again by ``replay()`` as one launch, on the same memory every time.

    The captured arrays stay the graph's: feed new inputs by copying them into the tensors the capture read
    (``static_x.copy_(x)``), and read the results from the tensors it wrote. Inside a capture nothing may wait for
    the GPU or read a value on the host (``float(loss)``, ``.item()``, ``print``): CUDA refuses it, and so does the
    strict stand-in, by CUDA's error name."""

    def __init__(self):
        self._graph = self._stream = None

    def capture_begin(self, pool=None, capture_error_mode="global"):
        """Start capturing the GPU work issued from here on, on a stream of the graph's own."""
        if not backend.gpu_available():
            raise RuntimeError(f"CUDAGraph: capturing needs a GPU: {backend.gpu_unavailable_reason()}")
        if self._graph is not None or self._stream is not None:
            raise RuntimeError("CUDAGraph: this graph already holds a capture; call reset() before capturing again")
        stream = backend.cupy.cuda.Stream(non_blocking=True)
        stream.__enter__()
        try:
            stream.begin_capture()
        except BaseException:
            stream.__exit__(None, None, None)
            raise
        self._stream = stream

    def capture_end(self):
        """Stop capturing; from now on ``replay()`` runs what was captured."""
        if self._stream is None:
            raise RuntimeError("CUDAGraph.capture_end: no capture in progress; call capture_begin() first")
        stream, self._stream = self._stream, None
        try:
            self._graph = stream.end_capture()
        finally:
            stream.__exit__(None, None, None)

    def replay(self):
        """Run the captured work again, on the memory it was captured with."""
        if self._graph is None:
            raise RuntimeError("CUDAGraph.replay: nothing captured yet; capture with dlscratch.cuda.graph(g) first")
        self._graph.launch(backend.cupy.cuda.get_current_stream())

    def reset(self):
        """Drop the capture (and the memory it holds)."""
        if self._stream is not None:
            raise RuntimeError("CUDAGraph.reset: a capture is in progress; end it first")
        self._graph = None


class graph:  # noqa: N801 (PyTorch's name)
    """PyTorch's ``torch.cuda.graph``: ``with dlscratch.cuda.graph(g):`` captures the block's GPU work into
    CUDAGraph ``g`` instead of running it. Warm up first (run the same code eagerly once or twice), so that
    everything made once (constants, optimizer state, kernels) exists before the capture."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"graph: expected a dlscratch.cuda.CUDAGraph, got {type(cuda_graph).__name__}")
        self.cuda_graph = cuda_graph

    def __enter__(self):
        backend.synchronize()  # the capture starts after the work queued before it
        self.cuda_graph.capture_begin()
        return self

    def __exit__(self, kind, error, traceback):
        if kind is None:
            self.cuda_graph.capture_end()
            return False
        try:  # a failed capture is invalid, as on CUDA: end it and keep nothing
            self.cuda_graph.capture_end()
        except Exception:  # noqa: BLE001  (the block's own error is the one to report)
            self.cuda_graph._stream = None
        self.cuda_graph.reset()
        return False
