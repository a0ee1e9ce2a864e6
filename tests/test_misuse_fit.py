"""``fit`` under misuse: a loss that turns NaN, and Ctrl-C at any moment of training.

A NaN loss must stop ``fit`` before its update reaches the weights; an interrupt (a
``KeyboardInterrupt`` from a loss function or a loader, or a real SIGINT during an optimizer step)
must leave the model with the weights after the last complete step and hand back the history.
"""

import contextlib
import os
import signal
import threading

import matplotlib
import numpy
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dlscratch
import dlscratch.functional as F
from dlscratch import nn, optim
from dlscratch.data import DataLoader, TensorDataset, blobs
from dlscratch.engine import switch
from dlscratch.training import TrainingDiverged, fit, plot_history
from dlscratch.training.fit import TrainingInterrupted

matplotlib.use("Agg")

STEPS_PER_EPOCH = 3  # 150 samples in batches of 64, 64 and 22


def loader():
    x, y = blobs(n_per_class=50, n_classes=3, std=0.8, seed=0)
    return DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, seed=0)


def mlp():
    dlscratch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))


def weights(model):
    return [p.data.copy() for p in model.parameters()]


def assert_weights_equal(model, expected):
    for p, e in zip(model.parameters(), expected, strict=True):
        numpy.testing.assert_array_equal(p.data, e)


def trained(steps, make_optimizer=lambda params: optim.SGD(params, lr=0.1, momentum=0.9)):
    """A model after ``steps`` uninterrupted steps of fit (its initial weights for 0), and the history."""
    model = mlp()
    if steps == 0:
        return model, None
    history = fit(model, F.cross_entropy, make_optimizer(model.parameters()), loader(), epochs=10, progress=False,
                  max_steps=steps)
    return model, history


class Recorder:
    """Cross-entropy that copies the weights at each call (those after the previous step) and, at
    the k-th call (1-based), multiplies the loss by ``poison`` or raises ``interrupt``."""

    def __init__(self, model, k, poison=None, interrupt=None):
        self.model, self.k, self.poison, self.interrupt = model, k, poison, interrupt
        self.seen = []

    def __call__(self, outputs, targets):
        self.seen.append(weights(self.model))
        loss = F.cross_entropy(outputs, targets)
        if len(self.seen) == self.k and self.interrupt is not None:
            raise self.interrupt
        return loss * self.poison if len(self.seen) >= self.k and self.poison is not None else loss


def interrupting_loader(k):
    """The batches of ``loader()``, epoch after epoch; getting the k-th batch in all raises KeyboardInterrupt."""
    count = [0]

    class Interrupting:
        def __len__(self):
            return STEPS_PER_EPOCH

        def __iter__(self):
            for batch in loader_copy:
                count[0] += 1
                if count[0] == k:
                    raise KeyboardInterrupt
                yield batch

    loader_copy = loader()
    return Interrupting()


@contextlib.contextmanager
def python_sigint_handler():
    """Python's own Ctrl-C handler (raises ``KeyboardInterrupt``) for the block. A process started in the
    background by a non-interactive shell (as CI runners may start pytest) inherits SIGINT ignored, and then
    Python installs no handler of its own; fit rightly keeps an ignored SIGINT ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def sigint_during_step(optimizer, k):
    """Make the k-th optimizer step send SIGINT to this process after updating its first parameter."""
    update, calls = switch.implementation(type(optimizer)._update), [0]  # the update of the path under test
    per_step = sum(1 for _ in optimizer._params())

    class Interrupting(type(optimizer)):
        def _update(self, staged, grad, state, group):
            update(self, staged, grad, state, group)
            calls[0] += 1
            if calls[0] == (k - 1) * per_step + 1:
                os.kill(os.getpid(), signal.SIGINT)

    optimizer.__class__ = Interrupting


# ----- a NaN loss -----
@pytest.mark.parametrize("make_optimizer", [lambda params: optim.SGD(params, lr=0.1, momentum=0.9),
                                            lambda params: optim.Adam(params, lr=0.01)], ids=["SGD", "Adam"])
def test_a_nan_loss_stops_fit_before_its_update_reaches_the_weights(make_optimizer):
    model = mlp()
    optimizer = make_optimizer(model.parameters())
    loss_fn = Recorder(model, k=5, poison=float("nan"))
    with pytest.raises(TrainingDiverged, match=r"epoch 2, step 2 \(step 5 overall\)") as info:
        fit(model, loss_fn, optimizer, loader(), epochs=3, progress=False)
    assert_weights_equal(model, loss_fn.seen[4])  # copied when step 5's loss was computed: after step 4
    reference, _ = trained(4, make_optimizer)
    assert_weights_equal(model, weights(reference))
    assert "weights after step 4" in str(info.value)
    assert all(p.grad is None or numpy.isfinite(p.grad.data).all() for p in model.parameters())


def test_the_history_of_a_diverged_fit_can_be_plotted():
    import matplotlib.pyplot as plt

    model = mlp()
    with pytest.raises(TrainingDiverged) as info:
        fit(model, Recorder(model, k=6, poison=float("inf")), optim.SGD(model.parameters(), lr=0.1), loader(),
            epochs=3, progress=False)
    history = info.value.history
    assert len(history.step_losses) == 5 and history.epoch_steps == [3]
    try:
        steps = next(line for line in plot_history(history)[0].get_lines() if line.get_label() == "loss (step)")
        # The two steps of the unfinished second epoch continue at the first epoch's spacing.
        numpy.testing.assert_allclose(steps.get_xdata(), [1 / 3, 2 / 3, 1, 4 / 3, 5 / 3])
        numpy.testing.assert_allclose(steps.get_ydata(), history.step_losses)
    finally:
        plt.close("all")


# ----- Ctrl-C -----
def check_interrupted(info, model, k, completed):
    """``info`` holds a TrainingInterrupted raised in step ``k`` (1-based, in all) after ``completed``
    complete steps: the model and the history equal those of an uninterrupted fit of that many steps."""
    reference, history = trained(completed)
    assert_weights_equal(model, weights(reference))
    stop = info.value
    assert isinstance(stop, TrainingInterrupted), f"fit let a bare {type(stop).__name__} through"
    assert stop.history.step_losses == ([] if history is None else history.step_losses)
    epochs = (k - 1) // STEPS_PER_EPOCH  # those before step k's
    assert stop.history.epoch_steps == [STEPS_PER_EPOCH] * epochs
    assert list(stop.history.keys()) == (["loss", "accuracy"] if epochs else [])
    assert len(stop.history) == epochs and all(len(stop.history[name]) == epochs for name in stop.history.keys())
    assert (stop.epoch, stop.global_step) == (epochs + 1, completed)
    return stop


def test_a_keyboard_interrupt_in_the_loss_keeps_the_last_complete_step_and_the_history():
    model = mlp()
    loss_fn = Recorder(model, k=5, interrupt=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt) as info:
        fit(model, loss_fn, optim.SGD(model.parameters(), lr=0.1, momentum=0.9), loader(), epochs=3, progress=False)
    stop = check_interrupted(info, model, k=5, completed=4)
    assert_weights_equal(model, loss_fn.seen[4])
    assert str(stop).startswith("fit: interrupted in epoch 2 after 1 of its steps (4 in all); the model holds "
                                "the weights after step 4")
    assert ".history" in str(stop)


def test_an_interrupt_before_the_first_step_leaves_the_weights_as_they_were():
    model = mlp()
    before = weights(model)
    with pytest.raises(KeyboardInterrupt) as info:
        fit(model, Recorder(model, k=1, interrupt=KeyboardInterrupt()), optim.SGD(model.parameters(), lr=0.1),
            loader(), epochs=3, progress=False)
    assert_weights_equal(model, before)
    assert "interrupted in epoch 1 before its first step; the model holds the weights it had before fit" in str(
        info.value)


def test_a_keyboard_interrupt_in_the_loader_keeps_the_last_complete_step_and_the_history():
    model = mlp()
    with pytest.raises(KeyboardInterrupt) as info:
        fit(model, F.cross_entropy, optim.SGD(model.parameters(), lr=0.1, momentum=0.9), interrupting_loader(7),
            epochs=3, progress=False)
    check_interrupted(info, model, k=7, completed=6)  # the first batch of epoch 3 never came


def test_an_interrupt_during_validation_keeps_the_epochs_steps_but_not_the_epoch():
    x, y = blobs(n_per_class=10, n_classes=3, std=0.8, seed=1)
    val_batches = DataLoader(TensorDataset(x, y), batch_size=30)
    passes = [0]

    def val_loader():  # the second validation pass is interrupted
        passes[0] += 1
        if passes[0] == 2:
            raise KeyboardInterrupt
        yield from val_batches

    class Validation:
        def __iter__(self):
            return val_loader()

    model = mlp()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    with pytest.raises(KeyboardInterrupt) as info:
        fit(model, F.cross_entropy, optimizer, loader(), epochs=3, val_loader=Validation(), progress=False,
            scheduler=scheduler)
    reference = mlp()
    ref_optimizer = optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    expected = fit(reference, F.cross_entropy, ref_optimizer, loader(), epochs=3, progress=False, max_steps=6,
                   scheduler=optim.lr_scheduler.StepLR(ref_optimizer, step_size=1, gamma=0.5))
    assert_weights_equal(model, weights(reference))
    stop = info.value
    assert isinstance(stop, TrainingInterrupted) and (stop.epoch, stop.global_step) == (2, 6)
    assert stop.history.step_losses == expected.step_losses and stop.history.epoch_steps == [3]
    assert stop.history.lr == [0.1] and scheduler.last_epoch == 1  # stepped after epoch 1 only
    assert "interrupted in epoch 2 after 3 of its steps (6 in all)" in str(stop)


def test_sigint_during_an_optimizer_step_lets_the_step_finish():
    model = mlp()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sigint_during_step(optimizer, k=2)
    with python_sigint_handler():
        with pytest.raises(KeyboardInterrupt) as info:
            fit(model, F.cross_entropy, optimizer, loader(), epochs=3, progress=False)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # fit put it back
    check_interrupted(info, model, k=2, completed=2)  # all of step 2, not only its first parameter


def test_an_ignored_sigint_does_not_stop_fit():
    model = mlp()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sigint_during_step(optimizer, k=2)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        history = fit(model, F.cross_entropy, optimizer, loader(), epochs=2, progress=False)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    reference, expected = trained(6)
    assert history.step_losses == expected.step_losses
    assert_weights_equal(model, weights(reference))


def test_fit_runs_outside_the_main_thread():
    model, errors = mlp(), []

    def train():
        try:
            fit(model, F.cross_entropy, optim.SGD(model.parameters(), lr=0.1, momentum=0.9), loader(), epochs=2,
                progress=False)
        except Exception as error:  # reported below, in the test's thread
            errors.append(error)

    worker = threading.Thread(target=train)
    worker.start()
    worker.join()
    assert errors == []
    assert_weights_equal(model, weights(trained(6)[0]))


WHERE = st.sampled_from(["loss", "loader", "step"])


@given(k=st.integers(1, 3 * STEPS_PER_EPOCH), where=WHERE)
def test_an_interrupt_anywhere_leaves_the_weights_of_a_complete_step(k, where):
    model = mlp()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn, train_loader = F.cross_entropy, loader()
    if where == "loss":
        loss_fn = Recorder(model, k, interrupt=KeyboardInterrupt())
    elif where == "loader":
        train_loader = interrupting_loader(k)
    else:
        sigint_during_step(optimizer, k)
    with python_sigint_handler(), pytest.raises(KeyboardInterrupt) as info:
        fit(model, loss_fn, optimizer, train_loader, epochs=3, progress=False, max_steps=3 * STEPS_PER_EPOCH)
    check_interrupted(info, model, k, completed=k if where == "step" else k - 1)
