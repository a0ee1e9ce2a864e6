"""Stream capture on the stand-in: a CUDA graph recorded and replayed without a GPU.

On a GPU, ``stream.begin_capture()`` makes the work issued on that stream a graph instead of running it, and
``stream.end_capture()`` returns the graph, which ``graph.launch()`` then runs as one launch: the same kernels on
the same memory, every time. Here each operation issued during a capture is recorded as a node (what it computes,
from which arrays, into which arrays) and ``launch()`` redoes the nodes in order, writing into the arrays the
capture made, so that the arrays a captured step leaves behind are the ones each replay fills.

As on a GPU, the captured work does not count as done: at ``end_capture`` every array that existed before the
capture holds what it held before it (each is copied at its first use inside the capture, and copied back), the
arrays made inside hold nothing meaningful (NaN where a float can say so), and the random generators are as they
were: NumPy's global state and every ``cupy.random.Generator`` drawn from (CuPy keeps such a generator's state on
the device, so a replay advances it as an eager draw would). A draw of CuPy's legacy functions
(``cupy.random.rand``...) replays the numbers it drew at the capture, as cuRAND's host-side generator does on a GPU.
What CUDA refuses while a stream captures, the stand-in refuses with CUDA's error name (``CUDARuntimeError``):
reading a value on the host (``float(x)``, ``.get()``, ``bool(x)``), waiting for the device, copying from the host,
capturing the legacy default stream, or its work while a blocking stream captures. Work on any other stream than
the capturing one, which CUDA would run outside the graph, the stand-in refuses by name (``refuse_other_stream``).

The launch ledger (``bench/ledger.py``) sees no launch while a stream captures: the capture's events go to a ledger
of its own, and each ``launch()`` counts one "graph" event that names the nodes.
"""

import numpy

from .. import ledger

CAPTURE_UNSUPPORTED = "cudaErrorStreamCaptureUnsupported: operation not permitted when stream is capturing"

CAPTURE_IMPLICIT = ("cudaErrorStreamCaptureImplicit: operation would make the legacy stream depend on a capturing "
                    "blocking stream")


class CUDARuntimeError(RuntimeError):
    """CuPy's ``cupy.cuda.runtime.CUDARuntimeError``: CUDA refused a call; the message starts with its error name."""


class Capture:
    """A capture in progress on ``stream``: its nodes, the arrays it made, and the arrays it found, as they were."""

    def __init__(self, stream):
        self.stream = stream
        self.nodes = []  # (redo, outputs): redo() gives the operation's fresh results; outputs, where they go
        self.made = {}  # id -> NumPy array made inside the capture (kept alive: a graph's memory is its own)
        self.before = {}  # id -> (NumPy array that existed before, its copy at first use)
        self.random_state = numpy.random.get_state()
        self.generators = {}  # id -> (numpy.random.Generator drawn from, its state at first use)
        self.book = ledger.Ledger()  # the capture's events: the graph's nodes
        self.outer_ledgers = ledger.open_ledgers


active = None  # the capture in progress: one at a time, as on one device


def refuse(message, what):
    """Raise CUDA's error for ``what`` (a host read, a wait...), issued while a stream captures."""
    raise CUDARuntimeError(f"{message} ({what} inside a CUDA graph capture: capture the work on the device only, "
                           "and read results after the capture ends or after a replay)")


def refuse_library(library):
    """Raise CuPy's refusal of ``library`` ("cuBLAS", "cuRAND") while a stream captures: CuPy 14 disables the
    calls of most CUDA libraries during a capture, before CUDA sees them, so the capture itself stays valid."""
    raise NotImplementedError(f"calling {library} API during stream capture is currently unsupported")


def refuse_other_stream(pointer, what):
    """Refuse ``what``, issued on the stream whose handle is ``pointer`` while another stream captures. CUDA refuses
    the legacy default stream's work while a blocking stream captures (it would wait for the capture). Any other
    such work CUDA runs at once, outside the graph, unless its stream joined the capture by waiting for an event
    recorded in it; the stand-in captures one stream, and refuses both rather than run work that a replay would
    leave out."""
    if pointer == 0 and active.stream.blocking:
        refuse(CAPTURE_IMPLICIT, f"{what} on the legacy default stream")
    raise NotImplementedError(
        f"{what} on another stream than the capturing one, inside a CUDA graph capture: on a GPU it would run now, "
        "outside the graph, and no replay would redo it (or, if its stream waited for an event of the capture, be "
        "captured too); the stand-in captures one stream and refuses it. Issue the capture's work on the stream "
        "that captures (dlscratch.cuda.graph makes it the current stream)")


def begin(stream, null):
    """Start capturing ``stream``; ``null``: it is the legacy default stream, which CUDA cannot capture."""
    global active
    if null:
        refuse(CAPTURE_UNSUPPORTED, "capturing the legacy default stream; capture a Stream(non_blocking=True)")
    if active is not None:
        refuse(CAPTURE_UNSUPPORTED, "a second capture")
    active = Capture(stream)
    ledger.open_ledgers = (active.book,)


def end(stream):
    """Stop capturing ``stream``: undo what the capture ran, and return its ``Graph``."""
    global active
    if active is None or active.stream is not stream:
        raise CUDARuntimeError("cudaErrorIllegalState: the stream is not capturing")
    capture, active = active, None
    ledger.open_ledgers = capture.outer_ledgers
    for array, copy in capture.before.values():
        numpy.copyto(array, copy)
    for array in capture.made.values():
        if array.flags.owndata and array.dtype.kind in "fc":
            array.fill(numpy.nan)
    numpy.random.set_state(capture.random_state)
    for generator, state in capture.generators.values():
        generator.bit_generator.state = state
    return Graph(capture.nodes, capture.book)


def run(operation, inputs, current_stream):
    """``operation()`` run inside the capture in progress; ``inputs``: the NumPy arrays it reads or writes, each
    copied at its first use so that ``end`` can undo the capture."""
    if current_stream is not active.stream:
        refuse_other_stream(current_stream.ptr, "work")
    for array in inputs:
        if array.flags.writeable and id(array) not in active.made and id(array) not in active.before:
            active.before[id(array)] = (array, array.copy())
    return operation()


def draws_from(generator):
    """Note that the capture in progress draws from ``generator`` (a ``numpy.random.Generator``, CuPy's on the
    device), so that ``end`` sets it back."""
    if id(generator) not in active.generators:
        active.generators[id(generator)] = (generator, generator.bit_generator.state)


def record(redo, outputs, inputs):
    """Add a node: ``redo()`` gives fresh results, laid out as ``outputs`` (the NumPy arrays the captured call
    returned); those of them that are new, not views of ``inputs`` (NumPy arrays), are the graph's and are written
    at a replay."""
    targets = []
    for array in outputs:
        if any(array is a or numpy.may_share_memory(array, a) for a in inputs):
            targets.append(None)  # written in place, or a view: the redone operation reaches it by itself
        else:
            active.made[id(array)] = array
            targets.append(array)
    active.nodes.append((redo, targets))


class Graph:
    """CuPy's ``cupy.cuda.graph.Graph``: ``launch()`` runs the captured nodes in order (they hold the memory the
    capture made); ``book``: the capture's ledger."""

    def __init__(self, nodes, book):
        self._nodes = nodes
        names = {"kernel": "kernels", "memset": "memsets", "copy_device": "device copies",
                 "copy_to_host": "copies to host", "copy_to_device": "copies to device"}
        launched = [f"{_count(book.total(c))} {name}" for c, name in names.items() if book.total(c)]
        self.description = f"CUDA graph of {_count(book.launches)} nodes ({', '.join(launched) or 'empty'})"

    def launch(self, stream=None):
        if active is not None:
            refuse(CAPTURE_UNSUPPORTED, "launching a graph")
        if ledger.open_ledgers:
            ledger.record("graph", self.description)
        for redo, targets in self._nodes:
            fresh = redo()
            if any(t is not None for t in targets):
                for target, value in zip(targets, _results(fresh)):
                    if target is not None:
                        numpy.copyto(target, value)

    def upload(self, stream=None):
        """CUDA uploads a graph's work before its first launch; nothing to do here."""

    def __len__(self):
        return len(self._nodes)


def _count(n):
    return str(int(n)) if float(n).is_integer() else f"{n:.2f}"


def _results(value):
    """The arrays of a fresh result, in the order ``arrays._arrays_in`` finds the captured ones (scalars as 0-d
    arrays)."""
    if isinstance(value, (numpy.ndarray, numpy.generic)):
        return [numpy.asarray(value)]
    if type(value) in (tuple, list):
        return [a for v in value for a in _results(v)]
    return []

