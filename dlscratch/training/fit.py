"""``fit`` and ``evaluate``: the training loop of the lessons, packaged with its bookkeeping.

    history = fit(model, F.cross_entropy, optimizer, train_loader, epochs=5, val_loader=test_loader)
    evaluate(model, test_loader, F.cross_entropy)        # {'loss': 0.08, 'accuracy': 0.975}

Each step of ``fit`` is the loop a lesson writes by hand::

    model.train()
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

The batch's loss and its number of correct predictions are computed on the device and brought
to the host together, right after the forward pass: one transfer per batch, which is also where a
NaN loss is caught, before its backward pass and update can reach the weights. After the backward
pass, one more transfer says whether every gradient is finite (one flag per parameter), so an
infinite gradient of a finite loss is caught before its update too.

On a GPU each transfer makes the host wait for the device. With an optimizer of ``dlscratch.optim``
there, the same checks run on the device instead, and the fused update writes nothing after a failed
one; the host reads the losses and the checks at the progress updates only (``fit_steps.py``).
``evaluate`` reads its batches' numbers once at its end there.

An optimizer of ``dlscratch.optim`` applies a step whole or not at all, whatever raises inside it
(``optim/optimizer.py``); ``fit`` holds back the signals that Python handles (Ctrl-C, a ``SIGALRM``
timeout, ...) while a step is applied and recorded, so the history counts exactly the steps the
weights have had. A ``KeyboardInterrupt`` then becomes ``TrainingInterrupted``, which carries the
history measured so far.
"""

import math
import numbers
import warnings

import numpy

from .. import backend
from ..distributed.process_group import get_rank
from ..engine import switch
from ..engine.grad_mode import no_grad
from ..engine.tensor import Tensor
from ..fast import fit_capture, fit_steps, malloc
from ..optim.adadelta import AdaDelta
from ..optim.adam import Adam
from ..optim.optimizer import Optimizer
from ..optim.sgd import SGD
from ..optim.signals import signals_deferred
from .history import History
from .progress import progress_bar


class TrainingDiverged(FloatingPointError):
    """The training loss, or the gradient of one parameter, became NaN or infinite: ``loss``,
    ``epoch``, ``step`` (within the epoch) and ``global_step`` (since the start of ``fit``) say when;
    all counts start at 1. ``parameter`` names the parameter whose gradient was not finite (its name
    in ``model.named_parameters()``), or is None when the loss was not. That step's update is not
    applied: the parameters hold the weights after step ``global_step - 1``. ``history`` holds what
    was recorded before (plot it to see the loss take off)."""

    def __init__(self, loss, epoch, step, global_step, lr=None, history=None, parameter=None):
        self.loss, self.epoch, self.step, self.global_step = loss, epoch, step, global_step
        self.history, self.parameter = history, parameter
        when = f"at epoch {epoch}, step {step} (step {global_step} overall)"
        kept = (f"that step's update was not applied, and the parameters hold the weights after step "
                f"{global_step - 1}")
        if parameter is None:
            now = "" if lr is None else f" than lr={lr}"
            super().__init__(
                f"fit: the training loss became {loss} {when}, so training has diverged; {kept}. Try a lower "
                f"learning rate{now} (a tenth, say), and check that the inputs hold no NaN or infinite values "
                "and are normalised."
            )
        else:
            super().__init__(
                f"fit: the gradient of {parameter} holds NaN or infinite values {when}, though the loss, {loss}, "
                f"is finite; {kept}. Look in the model and the loss for an operation evaluated where its slope "
                "is infinite (sqrt or x ** 0.5 at 0, log at 0, division by 0); if the gradients grew step after "
                "step, lower the learning rate."
            )


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C (or another ``KeyboardInterrupt``) stopped ``fit`` in epoch ``epoch`` (counted from 1)
    after ``global_step`` complete optimizer steps. With an optimizer of ``dlscratch.optim``, the
    model holds the weights after that step, whatever raised the interrupt (a signal handler, the
    loss, the loader): such an optimizer computes every update before it writes any, and the
    signals that Python handles are held back while a step is written and recorded. ``history``
    holds every complete step's loss and every complete epoch's means. A ``KeyboardInterrupt``, so a
    script still stops unless it catches it::

        try:
            history = fit(model, F.cross_entropy, optimizer, train_loader, epochs=20)
        except TrainingInterrupted as stop:
            history = stop.history
    """

    def __init__(self, history):
        self.history = history
        self.epoch, self.global_step = len(history) + 1, len(history.step_losses)
        in_epoch = self.global_step - sum(history.epoch_steps)
        where = (f"after {in_epoch} of its steps ({self.global_step} in all); the model holds the weights after "
                 f"step {self.global_step}, the last complete one," if self.global_step else
                 "before its first step; the model holds the weights it had before fit,")
        super().__init__(
            f"fit: interrupted in epoch {self.epoch} {where} and this exception's .history what was measured up "
            "to then (catch TrainingInterrupted to keep it)."
        )


def correct_count(outputs, targets):
    """How many rows of ``outputs: (N, C)`` (logits or probabilities) have their largest value at
    the integer label ``targets: (N,)``; a 0-d array on the device of ``outputs``."""
    if outputs.ndim != 2 or targets.shape != (outputs.shape[0],) or targets.dtype.kind not in "iu":
        raise ValueError(
            f"accuracy: needs outputs of shape (N, C) and integer labels of shape (N,), got outputs "
            f"{outputs.shape} and labels {targets.shape} of dtype {targets.dtype}; pass metrics=() when the "
            "task is not classification"
        )
    return (outputs.argmax(axis=1) == targets).sum()


#: Metrics by name: a function of the batch's output and target arrays that returns a sum over the
#: batch (a device array); the value reported for a pass is that sum over all samples divided by N.
METRICS = {"accuracy": correct_count}


def fit(model, loss_fn, optimizer, train_loader, epochs, val_loader=None, metrics=("accuracy",), progress=True,
        max_steps=None, scheduler=None, capture=False):
    """Train ``model`` for ``epochs`` passes over ``train_loader``; returns a ``History``.

    loss_fn: ``loss_fn(outputs, targets)`` -> a scalar Tensor, the batch mean (``F.cross_entropy``).
    train_loader, val_loader: iterables of batches ``(inputs..., targets)``; ``model(*inputs)``
        gives the outputs. With ``val_loader`` each epoch ends with ``evaluate`` (keys ``val_...``).
        A loader's ``sampler`` with ``set_epoch`` (``distributed.DistributedSampler``) is set to each epoch.
    metrics: names from ``METRICS`` ("accuracy": argmax of outputs (N, C) against labels (N,)), or ().
    progress: a bar per epoch with the running loss and metrics (``tqdm.auto``); under ``mpiexec``, rank 0's only.
    max_steps: stop after this many optimizer steps in all (the last epoch is then partial).
    scheduler: a learning-rate schedule (``optim.lr_scheduler``), stepped after each epoch; the
        history then records each epoch's learning rate as ``"lr"`` (the first parameter group's).
    Raises ``TrainingDiverged`` (a ``FloatingPointError``) when the loss or a gradient becomes NaN or
    infinite, before that step's update, and ``TrainingInterrupted`` (a ``KeyboardInterrupt`` that
    carries the history so far) on Ctrl-C; either way the model holds the weights after the last
    complete step.
    capture: on a GPU, replay each step from a CUDA graph, one launch per step (``fast/fit_capture.py``), with
        the results of eager steps; where it cannot, ``fit`` warns why and trains eagerly. Python in the model's
        ``forward`` and in ``loss_fn`` then runs once, at the capture: a replay redoes only their device work.
    Keeps freed memory in the process from then on (``dlscratch.fast.malloc.keep_freed_memory``; set
    ``DLSCRATCH_KEEP_MEMORY=0`` to leave the allocator alone).
    """
    metric_fns = _metric_functions("fit", metrics)
    _check_count("fit: epochs", epochs)
    _check_reiterable("fit: train_loader", train_loader, epochs)
    if val_loader is not None:
        _check_reiterable("fit: val_loader", val_loader, epochs)
    if max_steps is not None:
        _check_count("fit: max_steps", max_steps)
    if scheduler is not None:
        _check_scheduler(scheduler, optimizer)
    malloc.keep_freed_memory()  # a step reuses the large arrays the last one freed
    captured = _captured_step(model, loss_fn, optimizer, metric_fns) if capture else None
    history = History()
    try:
        for epoch in range(1, epochs + 1):
            sampler = getattr(train_loader, "sampler", None)
            if hasattr(sampler, "set_epoch"):
                sampler.set_epoch(epoch - 1)  # a fresh share for each rank, the same permutation on every rank
            # fit checks every loss itself, so NumPy's overflow warnings would only bury TrainingDiverged.
            shown = progress and get_rank() == 0  # under mpiexec, one bar: rank 0's
            with progress_bar(train_loader, f"epoch {epoch}/{epochs}", shown) as bar, numpy.errstate(all="ignore"):
                meter = _train_epoch(model, loss_fn, optimizer, train_loader, bar, metric_fns, history, epoch,
                                     max_steps, captured)
                results = meter.means("fit: train_loader")
                if val_loader is not None:
                    scores = evaluate(model, val_loader, loss_fn, metrics)
                    results.update({f"val_{name}": value for name, value in scores.items()})
                bar.set_postfix_str(_describe(results))
            with signals_deferred():  # the schedule moves on exactly when the epoch is recorded
                if scheduler is not None:
                    results["lr"] = optimizer.param_groups[0]["lr"]  # the rate this epoch trained at
                    scheduler.step()
                history.record_epoch(meter.batches, **results)
            if max_steps is not None and len(history.step_losses) >= max_steps:
                break
    except KeyboardInterrupt:
        raise TrainingInterrupted(history) from None
    return history


def runs_on_the_device(optimizer):
    """True when ``optimizer``'s steps can be checked on the device: a stock SGD, Adam or AdaDelta of the
    fast path whose every parameter is a GPU array, with kernels."""
    if not isinstance(optimizer, (SGD, Adam, AdaDelta)) or type(optimizer).step is not Optimizer.step:
        return False
    update = type(optimizer)._update
    if update not in (SGD._update, Adam._update, AdaDelta._update) or switch.implementation(update) is update:
        return False  # a rule of its own, or the reference path (no fused kernels)
    params = [p for g in optimizer.param_groups for p in g["params"]]
    return bool(params) and backend.has_kernels() and all(backend.is_gpu_array(p.data) for p in params)


def _captured_step(model, loss_fn, optimizer, metric_fns):
    """The ``fit_capture.CapturedStep`` of this training step, or None, with a warning that says why not."""
    reason = fit_capture.why_not(optimizer, runs_on_the_device(optimizer))
    if reason is not None:
        warnings.warn(f"fit(capture=True) trains without a CUDA graph: {reason}", stacklevel=3)
        return None
    params = [p for g in optimizer.param_groups for p in g["params"]]
    halt = backend.get_array_module(params[0].data).zeros(2, dtype=numpy.float64)

    def body(inputs, targets, step):  # the device path's step, with the step number on the device
        outputs = model(*inputs)
        loss = _check_loss("fit", loss_fn(outputs, targets))
        row = _values(loss, outputs, targets, metric_fns)
        fit_steps.halt_if_not_finite(loss.data, halt, step, 0)
        optimizer.zero_grad()
        loss.backward()
        for k, p in enumerate(params, start=1):
            if p.grad is not None:
                fit_steps.halt_if_not_finite(p.grad.data, halt, step, k)
        optimizer.step()
        return row, loss, {p: p.grad for p in params}

    return fit_capture.CapturedStep(body, halt)


def _train_epoch(model, loss_fn, optimizer, loader, bar, metric_fns, history, epoch, max_steps, captured=None):
    """One pass over the batches of ``loader``, one optimizer step each; returns the pass's ``_Meter``."""
    meter = _Meter(metric_fns, with_loss=True)
    model.train()
    if runs_on_the_device(optimizer):
        return _train_epoch_on_the_device(model, loss_fn, optimizer, loader, bar, metric_fns, history, epoch,
                                          max_steps, meter, captured)
    for batch in loader:
        inputs, targets = _split("fit", batch)
        outputs = model(*inputs)
        loss = _check_loss("fit", loss_fn(outputs, targets))
        loss_value, counts = _fetch(loss, outputs, targets, metric_fns)
        if not math.isfinite(loss_value):
            loss._read(loss_value)  # a check the loss left on the device (the GPU cross-entropy's labels) raises first
            lr = getattr(optimizer, "param_groups", [{}])[0].get("lr")
            raise TrainingDiverged(loss_value, epoch, meter.batches + 1, len(history.step_losses) + 1, lr, history)
        optimizer.zero_grad()
        loss.backward()
        parameter = _nonfinite_gradient(model, optimizer)
        if parameter is not None:
            raise TrainingDiverged(loss_value, epoch, meter.batches + 1, len(history.step_losses) + 1,
                                   history=history, parameter=parameter)
        with signals_deferred():  # the update and its record: all or nothing
            optimizer.step()
            history.record_step(loss_value)
            meter.add(len(targets), loss_value, counts)
        if not bar.disable:
            bar.set_postfix_str(_describe(meter.means()), refresh=False)
        bar.update()
        if max_steps is not None and len(history.step_losses) >= max_steps:
            break
    return meter


def _train_epoch_on_the_device(model, loss_fn, optimizer, loader, bar, metric_fns, history, epoch, max_steps,
                               meter, captured=None):
    """``_train_epoch`` with the checks on the device (``fit_steps.py``): no wait between two reads. With
    ``captured`` (a ``fit_capture.CapturedStep``), steps after the first are replayed from its graph."""
    steps = fit_steps.Steps(optimizer, len(history.step_losses) + 1, None if captured is None else captured.halt)
    done = False
    try:
        for batch in loader:
            inputs, targets = _split("fit", batch)
            if captured is not None and captured.fits(inputs, targets):
                with signals_deferred():
                    steps.replay(captured, inputs, targets)
            else:
                outputs = model(*inputs)
                loss = _check_loss("fit", loss_fn(outputs, targets))
                steps.check_loss(loss, _values(loss, outputs, targets, metric_fns))
                optimizer.zero_grad()
                loss.backward()
                steps.check_gradients()
                with signals_deferred():  # the update and its place among the pending steps: all or nothing
                    steps.step(loss, len(targets))
                if captured is not None and not captured.tried:  # that step was the warm-up
                    captured.capture(inputs, targets)
            bar.update()
            if steps.due():
                _record_pending(steps, model, optimizer, bar, history, epoch, meter)
            if max_steps is not None and len(history.step_losses) + len(steps.rows) >= max_steps:
                break
        done = True
    finally:
        if done:
            _record_pending(steps, model, optimizer, bar, history, epoch, meter)
        elif steps.rows:  # an error or an interrupt: record what the weights have had, then let it go on
            try:
                _record_pending(steps, model, optimizer, bar, history, epoch, meter)
            except (TrainingDiverged, ValueError):
                pass
    return meter


def _record_pending(steps, model, optimizer, bar, history, epoch, meter):
    """Read the pending steps (one copy) into the history and ``meter``; raise for a step that went wrong,
    after putting the optimizer's state back as it was before it."""
    rows, halted, which = steps.read()
    applied = rows if halted is None else rows[:halted]
    with signals_deferred():
        for row, size in zip(applied, steps.sizes):
            history.record_step(row[0])
            meter.add(size, row[0], row[1:])
        if halted is not None:
            steps.restore(halted)
    failed = None if halted is None else (rows[halted][0], steps.checks[halted])
    steps.forget()
    if not bar.disable and meter.samples:
        bar.set_postfix_str(_describe(meter.means()), refresh=False)
    if failed is None:
        return
    loss_value, deferred_check = failed
    step, global_step = meter.batches + 1, len(history.step_losses) + 1
    if which == 0:
        if deferred_check is not None:
            deferred_check()  # the GPU cross-entropy's labels: its error names the label
        lr = getattr(optimizer, "param_groups", [{}])[0].get("lr")
        raise TrainingDiverged(loss_value, epoch, step, global_step, lr, history)
    bad = steps.parameter_number(which)
    names = {id(p): name for name, p in model.named_parameters()}
    parameter = names.get(id(bad), f"a parameter of shape {bad.shape} that is not in the model")
    raise TrainingDiverged(loss_value, epoch, step, global_step, history=history, parameter=parameter)


def _nonfinite_gradient(model, optimizer):
    """The name of the first parameter (``model.named_parameters()``) that ``optimizer`` updates and
    whose gradient holds a NaN or an infinity, or None: one flag per parameter, computed on the
    device and brought to the host in one copy."""
    groups = getattr(optimizer, "param_groups", None)
    params = [p for g in groups for p in g["params"]] if groups is not None else list(model.parameters())
    params = [p for p in params if p.grad is not None]
    if not params:
        return None
    xp = backend.get_array_module(params[0].grad.data)
    finite = backend.to_cpu(xp.stack([xp.isfinite(p.grad.data).all() for p in params]))
    if finite.all():
        return None
    bad = params[int(finite.argmin())]
    names = {id(p): name for name, p in model.named_parameters()}
    return names.get(id(bad), f"a parameter of shape {bad.shape} that is not in the model")


def evaluate(model, loader, loss_fn=None, metrics=("accuracy",)):
    """The mean loss (with ``loss_fn``) and metrics of ``model`` over all batches of ``loader``,
    as a dict such as ``{"loss": 0.08, "accuracy": 0.975}``.

    Runs in evaluation mode (dropout off) under ``no_grad()``, so no graph is recorded; every
    module's training flag is restored afterwards.
    """
    metric_fns = _metric_functions("evaluate", metrics)
    if loss_fn is None and not metric_fns:
        raise ValueError("evaluate: nothing to measure; give a loss_fn, or metrics such as ('accuracy',)")
    modes = [(module, module.training) for module in model.modules()]
    meter = _Meter(metric_fns, with_loss=loss_fn is not None)
    try:
        model.eval()
        pending = []  # on a GPU: (batch size, values on the device, loss), read together
        with no_grad():
            for batch in loader:
                inputs, targets = _split("evaluate", batch)
                outputs = model(*inputs)
                loss = None if loss_fn is None else _check_loss("evaluate", loss_fn(outputs, targets))
                if backend.is_gpu_array(outputs.data):
                    pending.append((len(targets), _values(loss, outputs, targets, metric_fns), loss))
                    if len(pending) >= fit_steps.MOST_PENDING:
                        _add_pending(pending, meter)
                    continue
                loss_value, counts = _fetch(loss, outputs, targets, metric_fns)
                if loss is not None:
                    loss._read(loss_value)  # a check the loss left on the device (the labels) raises here
                meter.add(len(targets), loss_value, counts)
            _add_pending(pending, meter)
    finally:
        for module, mode in modes:
            module.training = mode
    return meter.means("evaluate: the loader")


def _add_pending(pending, meter):
    """Read ``evaluate``'s pending batches in one copy into ``meter``, and empty ``pending``."""
    if not pending:
        return
    xp = backend.get_array_module(pending[0][1])
    rows = backend.to_cpu(xp.stack([values for _, values, _ in pending])).tolist()
    for (size, _, loss), row in zip(pending, rows):
        if loss is not None:
            loss._read(row[0])  # a check the loss left on the device (the labels) raises here
        meter.add(size, row[0] if loss is not None else None, row[1:] if loss is not None else row)
    pending.clear()


class _Meter:
    """Sums over the batches of one pass: the loss weighted by batch size, and each metric's sum."""

    def __init__(self, metric_fns, with_loss):
        self.loss_sum = 0.0 if with_loss else None
        self.sums = dict.fromkeys(metric_fns, 0.0)
        self.samples = self.batches = 0

    def add(self, n, loss, counts):
        self.samples += n
        self.batches += 1
        if loss is not None:
            self.loss_sum += loss * n
        for name, count in zip(self.sums, counts):
            self.sums[name] += count

    def means(self, source="the loader"):
        """Name -> mean per sample so far."""
        if not self.samples:
            raise ValueError(f"{source} gave no samples; is the dataset empty, or smaller than batch_size with "
                             "drop_last=True?")
        results = {} if self.loss_sum is None else {"loss": self.loss_sum / self.samples}
        results.update({name: total / self.samples for name, total in self.sums.items()})
        return results


def _values(loss, outputs, targets, metric_fns):
    """The batch's loss (if any) and metric sums, as one float64 array on the outputs' device."""
    xp = backend.get_array_module(outputs.data)
    values = [] if loss is None else [loss.data.reshape(())]
    values += [fn(outputs.data, targets.data) for fn in metric_fns.values()]
    return xp.stack([xp.asarray(v, dtype=xp.float64) for v in values])


def _fetch(loss, outputs, targets, metric_fns):
    """The batch's loss (None without one) and metric sums as Python floats, in one device-to-host copy."""
    host = backend.to_cpu(_values(loss, outputs, targets, metric_fns)).tolist()
    return (None, host) if loss is None else (host[0], host[1:])


def _split(caller, batch):
    """``(inputs, targets)`` of a batch ``(inputs..., targets)``."""
    if not isinstance(batch, (tuple, list)) or len(batch) < 2:
        raise TypeError(
            f"{caller}: each batch must be a tuple (inputs..., targets), as a DataLoader over "
            f"TensorDataset(x, y) gives; got a {type(batch).__name__}"
        )
    return batch[:-1], batch[-1]


def _check_loss(caller, loss):
    if not isinstance(loss, Tensor) or loss.data.size != 1:
        got = f"shape {loss.shape}" if isinstance(loss, Tensor) else type(loss).__name__
        raise ValueError(
            f"{caller}: loss_fn must return a scalar Tensor (the batch mean, as F.cross_entropy does), got {got}"
        )
    return loss


def _metric_functions(caller, metrics):
    names = (metrics,) if isinstance(metrics, str) else tuple(metrics)
    unknown = [name for name in names if name not in METRICS]
    if unknown:
        raise ValueError(f"{caller}: unknown metrics {unknown}; available: {sorted(METRICS)}, or () for none")
    return {name: METRICS[name] for name in names}


def _check_scheduler(scheduler, optimizer):
    if not (callable(getattr(scheduler, "step", None)) and hasattr(scheduler, "optimizer")):
        raise TypeError(
            "fit: scheduler must be a learning-rate schedule such as optim.lr_scheduler.StepLR(optimizer, "
            f"step_size=5), got {type(scheduler).__name__}"
        )
    if scheduler.optimizer is not optimizer:
        raise ValueError("fit: the scheduler was built on another optimizer; build it on the one given to fit")


def _check_count(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check_reiterable(name, loader, epochs):
    """Refuse a one-shot iterator (a generator, ``iter(...)``) that more than one epoch would read:
    the first pass would use it up, and every later epoch would see no batches."""
    if epochs > 1 and iter(loader) is loader:
        raise TypeError(
            f"{name} is a {type(loader).__name__}, used up after one pass: epochs 2 to {epochs} would see no "
            "batches; pass something that can be read again, e.g. a DataLoader or a list of batches"
        )


def _describe(results):
    """``loss=0.4123, acc=0.8812`` for a progress bar."""
    return ", ".join(f"{name.replace('accuracy', 'acc')}={value:.4f}" for name, value in results.items())
