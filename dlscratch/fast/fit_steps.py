"""``fit``'s steps on a GPU with no wait between two progress updates: the checks run on the device.

On NumPy, ``fit`` reads each step's loss and metrics, and asks whether every gradient is finite, before
the update (``fit.py``): two small copies to the host, free on a CPU. On a GPU each is a wait: the host
stops until the device has finished the step, and the GPU then idles while the host prepares the next.
So with a GPU optimizer of ``dlscratch.optim`` on the fast path, ``fit`` keeps the checks and the numbers on
the device:

- each step's loss and metrics go into a row that stays on the device;
- one kernel per checked array (the loss, then each gradient) sets ``halt = [step, which]`` on the
  device when the array holds a NaN or an infinity and no earlier step did (``which``: 0 for the loss,
  k for the optimizer's k-th parameter, counted from 1);
- the fused optimizer kernels read ``halt`` and write nothing once it is set (``fast/optim_kernels.py``),
  so the step that went wrong, and every step after it, leaves the weights as they were, as if the host
  had stopped before it;
- at a progress update (every ``READ_EVERY_SECONDS``, at most ``MOST_PENDING`` steps apart, and at the
  end of the epoch) one copy brings ``halt`` and the rows to the host: the history, the running means
  and, when a step went wrong, ``TrainingDiverged`` for that step, with the optimizer's state put back
  as it was before it (``Steps.restore``).

PyTorch's fused Adam takes its ``found_inf`` flag on the device in the same way.
"""

import time

import numpy

from .. import backend
from .optim_halt import halting_on

READ_EVERY_SECONDS = 0.1  # tqdm's own shortest refresh interval
MOST_PENDING = 256

_HALT_IF_NOT_FINITE = """
if (!isfinite(x) && halt[0] == 0) {
    halt[0] = step;
    halt[1] = which;
}
"""


def halt_if_not_finite(x, halt, step, which):
    """One kernel: ``halt[:] = step, which`` where ``x`` (a device array) holds a NaN or an infinity and
    ``halt[0]`` is still 0. ``step``: a number, or a 0-d device array (a captured step's, ``fit_capture.py``)."""
    kernel = backend.elementwise_kernel("T x, float64 step, float64 which", "raw float64 halt",
                                        _HALT_IF_NOT_FINITE, "dlscratch_halt_if_not_finite")
    kernel(x, step if hasattr(step, "shape") else float(step), float(which), halt)


class Steps:
    """The steps of ``fit`` that the host has not read yet, for one optimizer on the device."""

    def __init__(self, optimizer, first_step, halt=None):
        self.optimizer = optimizer
        self.params = [p for g in optimizer.param_groups for p in g["params"]]
        xp = backend.get_array_module(self.params[0].data)
        self.xp, self.halt = xp, xp.zeros(2, dtype=numpy.float64) if halt is None else halt
        self.first_step = first_step  # the global number of the first pending step
        self.rows, self.sizes, self.checks, self.states = [], [], [], []
        self.last_read = time.perf_counter()

    def check_loss(self, loss, row):
        """Before the backward pass: keep the step's ``row`` (its loss and metrics, float64 on the device) and
        check the loss on the device."""
        self._step_row = row
        halt_if_not_finite(loss.data, self.halt, self.first_step + len(self.rows), 0)

    def check_gradients(self):
        """After the backward pass: check every gradient the optimizer will use."""
        step = self.first_step + len(self.rows)
        for k, p in enumerate(self.params, start=1):
            if p.grad is not None:
                halt_if_not_finite(p.grad.data, self.halt, step, k)

    def step(self, loss, batch_size):
        """The optimizer's step, written only when ``halt`` is clear; the step is then pending. Call it with
        signals deferred, so that a step and its record are made together."""
        self.states.append({p: dict(s) for p, s in self.optimizer.state.items()})
        with halting_on(self.halt):
            self.optimizer.step()
        self.rows.append(self._step_row)
        self.sizes.append(batch_size)
        self.checks.append(loss.deferred_check)

    def replay(self, captured, inputs, targets):
        """A whole step replayed from ``captured`` (a ``fit_capture.CapturedStep`` sharing ``halt``); the step is
        then pending. Call it with signals deferred, as ``step``."""
        self.states.append({p: dict(s) for p, s in self.optimizer.state.items()})
        self.rows.append(captured.replay(inputs, targets, self.first_step + len(self.rows)))
        self.sizes.append(len(targets))
        self.checks.append(captured.check_of(inputs, targets))

    def due(self):
        return (len(self.rows) >= MOST_PENDING
                or time.perf_counter() - self.last_read >= READ_EVERY_SECONDS)

    def read(self):
        """One copy to the host: ``(rows, halted)``, the pending rows (loss, then metrics) as lists of floats and
        the position among them of the step that went wrong, or None. Forgets nothing yet."""
        host = backend.to_cpu(self.xp.concatenate([self.halt, *self.rows]) if self.rows else self.halt)
        self.last_read = time.perf_counter()
        width = len(host[2:]) // len(self.rows) if self.rows else 0
        rows = host[2:].reshape(len(self.rows), width).tolist()
        halted = None if host[0] == 0 else int(host[0]) - self.first_step
        return rows, halted, int(host[1])

    def restore(self, position):
        """Put the optimizer's state back as it was before pending step ``position``: the steps from there on
        wrote nothing, so the state arrays of then hold their values still."""
        self.optimizer.state = self.states[position]

    def forget(self):
        """The pending steps are recorded: start a new window after them."""
        self.first_step += len(self.rows)
        self.rows, self.sizes, self.checks, self.states = [], [], [], []

    def parameter_number(self, which):
        """The parameter that ``which`` (from ``halt``) names: the optimizer's ``which``-th, counted from 1."""
        return self.params[which - 1]
