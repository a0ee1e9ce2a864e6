"""``fit(..., capture=True)``: each training step replayed from a CUDA graph, one launch where it made dozens.

A step on the device (``fit_steps.py``) queues the forward, the loss and its row of metrics, the checks of the loss
and of every gradient, the backward and the fused update, and never waits for the device; its time on the host is
then the launches themselves. Captured once (``dlscratch/cuda/graphs.py``), the whole step is one launch. The graph
replays on fixed memory, so each batch is copied into the static input tensors first, and each replay's row is
copied out before the next replay overwrites it. The checks' step number lives on the device too (``counter``),
advanced by the graph itself, because a number passed from the host would be fixed at the capture.

The first step of the epoch runs eagerly (the warm-up that makes the optimizer's state), and so does every batch
whose shapes differ from the captured one's (a last, smaller batch): a graph replays fixed shapes only.
``why_not`` says when a capture cannot give the eager steps' results, and ``fit`` then trains eagerly and says why.
What a replay cannot repeat is Python: the model's ``forward``, the loss function and their hooks run once, at
the capture, and a replay redoes only the device work they queued then.
"""

import warnings

from .. import backend
from ..cuda.graphs import CUDAGraph, graph
from ..engine.grad_mode import no_grad
from ..optim.adam import Adam
from ..optim.rmsprop import RMSprop
from .optim_halt import halting_on


def why_not(optimizer, on_the_device):
    """Why ``fit`` cannot capture this training step (a sentence), or None when it can. ``on_the_device``: whether
    the step's checks run on the device (``fit.runs_on_the_device``)."""
    if not backend.gpu_available():
        return f"capturing needs a GPU ({backend.gpu_unavailable_reason()})"
    if not all(backend.is_gpu_array(p.data) for g in optimizer.param_groups for p in g["params"]):
        return "the parameters are on the CPU, and a CUDA graph captures GPU work; move the model with .to('cuda')"
    if not on_the_device:
        return ("the step's checks read the host: the optimizer must be a stock SGD, Adam or Adadelta on the fast "
                "path, with every parameter on the GPU")
    if isinstance(optimizer, (Adam, RMSprop)) and not all(g["capturable"] for g in optimizer.param_groups):
        return f"{type(optimizer).__name__} counts its steps on the host; build it with capturable=True"
    return None


class CapturedStep:
    """A training step captured in a CUDA graph, with the static tensors it reads and writes.

    ``body(inputs, targets, step)`` runs one step on the device and returns ``(row, loss, grads)``, ``grads`` a dict
    parameter -> its gradient; ``step`` is the checks' step number, here a device array. ``halt``: the flag that the
    checks set and the fused updates read (``fit_steps.py``), the same array at every replay."""

    def __init__(self, body, halt):
        self.body, self.halt = body, halt
        self.graph, self.tried = None, False
        self.counter = backend.get_array_module(halt).zeros((), dtype=halt.dtype)
        self.next_step = None  # the step number the counter holds, after the last replay

    def capture(self, inputs, targets):
        """Capture ``body`` on static copies of a batch (after an eager step of the same shapes: the warm-up), once;
        where CUDA or CuPy refuses the capture, warn with their reason: the training goes on eagerly."""
        self.tried = True
        self.static = [t.detach().clone() for t in (*inputs, targets)]
        self.shapes = [(t.shape, t.dtype, t.device) for t in self.static]
        g = CUDAGraph()
        try:
            with graph(g), halting_on(self.halt):
                self.row, self.loss, self.grads = self.body(self.static[:-1], self.static[-1], self.counter)
                self.counter += 1
        except (NotImplementedError, RuntimeError) as error:  # CuPy's refusal of a library, CUDA's of an operation
            warnings.warn(f"fit(capture=True) trains without a CUDA graph: the step could not be captured "
                          f"({type(error).__name__}: {error})", stacklevel=4)
            return
        self.graph = g

    def fits(self, inputs, targets):
        """Whether a batch has the captured shapes, dtypes and devices."""
        return self.graph is not None and [(t.shape, t.dtype, t.device) for t in (*inputs, targets)] == self.shapes

    def replay(self, inputs, targets, step):
        """Run the captured step on a batch as step number ``step``; returns a copy of its row."""
        self.copy_in(inputs, targets)
        if step != self.next_step:
            self.counter.fill(step)
        self.graph.replay()
        self.next_step = step + 1
        for p, grad in self.grads.items():  # as after an eager step: the gradients this step computed
            p.grad = grad
        return self.row.copy()

    def check_of(self, inputs, targets):
        """The loss's deferred check (``engine/extensions/deferred_checks.py``) for the step replayed on this batch:
        by the time the host runs it, later replays have overwritten the static tensors it reads, so it puts this
        batch back in them first (the training stops there anyway)."""
        check = self.loss.deferred_check
        if check is None:
            return None

        def check_this_batch():
            self.copy_in(inputs, targets)
            check()

        return check_this_batch

    def copy_in(self, inputs, targets):
        """Copy a batch into the static tensors the graph reads."""
        with no_grad():
            for static, t in zip(self.static, (*inputs, targets)):
                static.copy_(t)
