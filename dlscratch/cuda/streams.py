"""CUDA streams and events with PyTorch's names: ``Stream``, ``Event``, ``stream``, ``current_stream``,
``default_stream``, ``set_stream`` and ``is_current_stream_capturing``, over CuPy's streams and events.

A stream is a queue of GPU work: what one stream queues runs in order, and two streams may run side by side. An
event is a mark in a stream's queue, which the host or another stream can wait for. PyTorch's examples of CUDA graphs
warm up on a side stream before they capture::

    s = dlscratch.cuda.Stream()
    s.wait_stream(dlscratch.cuda.current_stream())   # s starts after the work queued so far
    with dlscratch.cuda.stream(s):
        ...                                          # warm-up steps, queued on s
    dlscratch.cuda.current_stream().wait_stream(s)   # and the main stream after them

Every kernel dlscratch launches goes to CuPy's current stream, which ``stream(s)`` sets. Inside a capture, a host
wait (``synchronize``) and a query (``query``) are what CUDA refuses; ``wait_stream`` and ``Event.record`` are
graph dependencies and are allowed.
"""

import contextlib

from .. import backend
from ..device import cuda_device


def _cuda():
    if not backend.gpu_available():
        raise RuntimeError(f"CUDA streams need a GPU: {backend.gpu_unavailable_reason()}")
    return backend.cupy.cuda


class Stream:
    """PyTorch's ``torch.cuda.Stream``: a new CUDA stream (non-blocking: it does not wait for the legacy default
    stream). ``priority``: lower numbers run first where the device has work of several priorities."""

    def __init__(self, device=None, priority=0):
        cuda_device(device)  # refuses another device
        self._cupy = _cuda().Stream(non_blocking=True, priority=priority)

    @classmethod
    def _of(cls, cupy_stream):
        """The stream ``cupy_stream`` (CuPy's), as a ``Stream``."""
        stream = cls.__new__(cls)
        stream._cupy = cupy_stream
        return stream

    @property
    def cuda_stream(self):
        """CUDA's handle of this stream (0: the legacy default stream)."""
        return self._cupy.ptr

    @property
    def device(self):
        """The GPU whose stream this is: dlscratch uses one, ``cuda:0``."""
        return cuda_device(0)

    def wait_event(self, event):
        """Make the work queued on this stream from now on wait for ``event``; the host does not wait."""
        if not isinstance(event, Event):
            raise TypeError(f"Stream.wait_event: expected a dlscratch.cuda.Event, got {type(event).__name__}")
        self._cupy.wait_event(event._cupy)

    def wait_stream(self, stream):
        """Make the work queued on this stream from now on wait for the work queued on ``stream`` so far."""
        if not isinstance(stream, Stream):
            raise TypeError(f"Stream.wait_stream: expected a dlscratch.cuda.Stream, got {type(stream).__name__}")
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Mark the work queued on this stream so far with ``event`` (a new one if None); returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self):
        """Whether all the work queued on this stream has finished (the host does not wait)."""
        return bool(self._cupy.done)

    def synchronize(self):
        """Wait on the host until all the work queued on this stream has finished."""
        self._cupy.synchronize()

    def __eq__(self, other):
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream

    def __hash__(self):
        return hash(self.cuda_stream)

    def __repr__(self):
        return f"<dlscratch.cuda.Stream device=cuda:0 cuda_stream={self.cuda_stream:#x}>"


class Event:
    """PyTorch's ``torch.cuda.Event``: a mark in a stream's queue. ``enable_timing``: ``elapsed_time`` can
    measure between two such events (timing costs a little, so PyTorch leaves it off by default); ``blocking``:
    ``synchronize`` sleeps instead of spinning."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise ValueError("Event: dlscratch shares no events between processes (interprocess=True)")
        self.enable_timing = bool(enable_timing)
        self._cupy = _cuda().Event(block=bool(blocking), disable_timing=not enable_timing)
        self._recorded = False

    def record(self, stream=None):
        """Mark the work queued so far on ``stream`` (default: the current stream)."""
        stream = current_stream() if stream is None else stream
        if not isinstance(stream, Stream):
            raise TypeError(f"Event.record: expected a dlscratch.cuda.Stream, got {type(stream).__name__}")
        self._cupy.record(stream._cupy)
        self._recorded = True

    def wait(self, stream=None):
        """Make the work queued from now on on ``stream`` (default: the current stream) wait for this event."""
        stream = current_stream() if stream is None else stream
        if not isinstance(stream, Stream):
            raise TypeError(f"Event.wait: expected a dlscratch.cuda.Stream, got {type(stream).__name__}")
        stream.wait_event(self)

    def query(self):
        """Whether the work this event marks has finished (True if it was never recorded)."""
        return bool(self._cupy.done)

    def synchronize(self):
        """Wait on the host until the work this event marks has finished."""
        self._cupy.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds of GPU time from this event to ``end_event``, both recorded with ``enable_timing=True``."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Event.elapsed_time: both events must be made with enable_timing=True")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Event.elapsed_time: record both events first (Event.record)")
        return float(backend.cupy.cuda.get_elapsed_time(self._cupy, end_event._cupy))


def current_stream(device=None):
    """The stream dlscratch queues its GPU work on now."""
    return Stream._of(_cuda().get_current_stream())


def default_stream(device=None):
    """CUDA's legacy default stream, the current one unless ``stream(s)`` or ``set_stream`` chose another."""
    return Stream._of(_cuda().Stream.null)


def set_stream(stream):
    """Queue GPU work on ``stream`` from now on (``stream(s)`` does so for a ``with`` block only)."""
    if not isinstance(stream, Stream):
        raise TypeError(f"set_stream: expected a dlscratch.cuda.Stream, got {type(stream).__name__}")
    stream._cupy.use()


@contextlib.contextmanager
def stream(stream):
    """PyTorch's ``torch.cuda.stream``: ``with stream(s):`` queues the block's GPU work on ``s``; ``None`` keeps
    the current stream."""
    if stream is None:
        yield
        return
    if not isinstance(stream, Stream):
        raise TypeError(f"stream: expected a dlscratch.cuda.Stream or None, got {type(stream).__name__}")
    with stream._cupy:
        yield


def is_current_stream_capturing():
    """Whether the current stream is capturing a CUDA graph (False on the CPU)."""
    return backend.capturing()
