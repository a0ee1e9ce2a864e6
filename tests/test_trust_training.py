"""Issue 26, items 7 and 8: an optimizer step is applied whole or not at all whatever raises inside it
(a ``KeyboardInterrupt`` from a ``SIGALRM`` handler, an error in an update rule), on both paths; and a
non-finite gradient stops ``fit`` before its update, naming the parameter.

The step under an exception must leave the weights and the optimizer state of no step or of a complete
one: raised after each parameter's update in turn, from a signal handler while the step is written, from
a timer at random moments, and from NumPy for an update that overflows.
"""

import contextlib
import contextvars
import random
import signal
import time
import warnings

import numpy
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import nn, optim
from dlscratch.data import DataLoader, TensorDataset, blobs
from dlscratch.engine import switch
from dlscratch.training import TrainingDiverged, fit
from dlscratch.training.fit import TrainingInterrupted

OPTIMIZERS = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.01),
    "adadelta": lambda ps: optim.AdaDelta(ps, lr=1.0, weight_decay=0.01),
}


def mlp():
    dlscratch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def with_gradients(params):
    rng = numpy.random.default_rng(1)
    for p in params:
        p.grad = dlscratch.tensor(rng.standard_normal(p.shape).astype(numpy.float32))
    return params


def snapshot(params, optimizer):
    """Copies of the weights and of the optimizer's state."""
    return [p.data.copy() for p in params], optimizer.state_dict()["state"]


def assert_same(got, expected):
    (weights, state), (expected_weights, expected_state) = got, expected
    for w, e in zip(weights, expected_weights, strict=True):
        numpy.testing.assert_array_equal(w, e)
    assert state.keys() == expected_state.keys()
    for i in state:
        assert state[i].keys() == expected_state[i].keys()
        for key in state[i]:
            numpy.testing.assert_array_equal(state[i][key], expected_state[i][key], err_msg=f"state {i} {key}")


def snapshots_of_steps(name, steps):
    """The snapshots after 0, 1, ..., ``steps`` uninterrupted steps."""
    params = with_gradients(list(mlp().parameters()))
    optimizer = OPTIMIZERS[name](params)
    found = [snapshot(params, optimizer)]
    for _ in range(steps):
        optimizer.step()
        found.append(snapshot(params, optimizer))
    return found


def raise_in_update(optimizer, k, when, error):
    """Make the next step's k-th parameter update (1-based) raise ``error`` before or after it runs."""
    update, calls = switch.implementation(type(optimizer)._update), [0]  # the update of the path under test

    class Raising(type(optimizer)):
        def _update(self, *args):
            calls[0] += 1
            if calls[0] == k and when == "before":
                raise error
            update(self, *args)
            if calls[0] == k and when == "after":
                raise error

    optimizer.__class__ = Raising


@contextlib.contextmanager
def alarm_raises(error=KeyboardInterrupt):
    """SIGALRM raises ``error`` while ``armed[0]``; the handler that was there before is put back after."""
    armed = [True]

    def handler(signum, frame):
        if armed[0]:
            raise error

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        yield armed
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ----- item 7: an exception inside a step -----
@pytest.mark.parametrize("name", OPTIMIZERS)
@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_an_exception_from_any_parameters_update_leaves_no_step_applied(name, error, path):
    before_steps = 1  # the state exists already; see the test below for the first step
    expected = snapshots_of_steps(name, before_steps + 1)
    n = len(expected[0][0])
    for k in range(1, n + 1):
        for when in ("before", "after"):
            params = with_gradients(list(mlp().parameters()))
            optimizer = OPTIMIZERS[name](params)
            optimizer.step()
            raise_in_update(optimizer, k, when, error("raised inside the step"))
            with pytest.raises(error):
                optimizer.step()
            assert_same(snapshot(params, optimizer), expected[before_steps])
            optimizer.__class__ = type(optimizer).__mro__[1]
            optimizer.step()  # nothing was left half done: the next step is the one an uninterrupted run takes
            assert_same(snapshot(params, optimizer), expected[before_steps + 1])


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_an_exception_in_the_first_step_leaves_no_state(name, path):
    params = with_gradients(list(mlp().parameters()))
    optimizer = OPTIMIZERS[name](params)
    before = snapshot(params, optimizer)
    raise_in_update(optimizer, 3, "after", KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        optimizer.step()
    assert_same(snapshot(params, optimizer), before)
    assert not any(optimizer.state.values())


class SignallingParameter(nn.Parameter):
    """A parameter that sends this process SIGALRM when its ``.data`` is assigned (as an update writes it)."""

    __slots__ = ()

    @property
    def data(self):
        return nn.Parameter.data.fget(self)

    @data.setter
    def data(self, array):
        nn.Parameter.data.fset(self, array)
        signal.raise_signal(signal.SIGALRM)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_a_signal_while_the_step_is_written_lets_it_finish(name, path):
    expected = snapshots_of_steps(name, 2)
    for k in range(len(expected[0][0])):  # the k-th parameter signals
        params = with_gradients([SignallingParameter(p.data) if i == k else p
                                 for i, p in enumerate(mlp().parameters())])
        optimizer = OPTIMIZERS[name](params)
        with alarm_raises():
            with pytest.raises(KeyboardInterrupt):
                optimizer.step()
            assert_same(snapshot(params, optimizer), expected[1])
            with pytest.raises(KeyboardInterrupt):
                optimizer.step()
            assert_same(snapshot(params, optimizer), expected[2])


@pytest.mark.parametrize("name", ["sgd", "adam"])
def test_a_timer_interrupt_at_random_moments_never_splits_a_step(name, path):
    steps, runs = 4, 30
    expected = snapshots_of_steps(name, steps)  # also the warm-up: first calls compile, import, allocate

    def steps_from_scratch():
        start = time.perf_counter()
        optimizer = OPTIMIZERS[name](with_gradients(list(mlp().parameters())))
        for _ in range(steps):
            optimizer.step()
        return time.perf_counter() - start

    duration = min(steps_from_scratch() for _ in range(3))  # what one run below takes, warm
    rng, interrupted = random.Random(0), 0
    with alarm_raises() as armed:
        for _ in range(runs):
            params = with_gradients(list(mlp().parameters()))
            optimizer, done = OPTIMIZERS[name](params), 0
            armed[0] = True
            try:
                signal.setitimer(signal.ITIMER_REAL, rng.uniform(1e-6, duration))
                for _ in range(steps):
                    optimizer.step()
                    done += 1
                signal.setitimer(signal.ITIMER_REAL, 0)
                armed[0] = False
            except KeyboardInterrupt:
                interrupted += 1
            armed[0] = False
            got = snapshot(params, optimizer)
            try:
                assert_same(got, expected[done])
            except AssertionError:  # the interrupt came after the step returned, before it was counted
                assert_same(got, expected[min(done + 1, steps)])
    assert interrupted >= runs // 4, f"only {interrupted} of {runs} runs were interrupted: the timer missed"


@pytest.mark.parametrize("name", OPTIMIZERS)
@pytest.mark.parametrize("mode", ["raise", "warn as error", "warn"])
def test_a_floating_point_error_in_a_step_arrives_before_it_or_once_it_is_whole(name, mode, path):
    """A gradient of 3e38 in the third of four parameters overflows its update. Alike on both paths: a
    ``FloatingPointError`` (``numpy.errstate(all="raise")``) comes before anything is written (the fast path
    computes with the reference rule then); a warning, and one turned into an error by the warnings filters,
    comes once the step is whole."""

    def with_an_overflow():
        params = with_gradients(list(mlp().parameters()))
        params[2].grad.data[0, 0] = 3e38
        return params, OPTIMIZERS[name](params)

    params, optimizer = with_an_overflow()
    with numpy.errstate(all="ignore"):
        optimizer.step()
    whole = snapshot(params, optimizer)
    params, optimizer = with_an_overflow()
    before, settings = snapshot(params, optimizer), numpy.geterr()
    with warnings.catch_warnings(record=mode == "warn") as caught, numpy.errstate(all=mode.split()[0]):
        warnings.simplefilter("always" if mode == "warn" else "error", RuntimeWarning)
        if mode == "warn":
            optimizer.step()
        else:
            with pytest.raises(FloatingPointError if mode == "raise" else RuntimeWarning, match="overflow"):
                optimizer.step()
    assert_same(snapshot(params, optimizer), before if mode == "raise" else whole)
    assert numpy.geterr() == settings
    if mode == "warn":
        assert any("overflow" in str(w.message) for w in caught)


def loader():
    x, y = blobs(n_per_class=50, n_classes=3, std=0.8, seed=0)
    return DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, seed=0)


def small_mlp():
    dlscratch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))


def test_a_timer_interrupt_during_fit_leaves_the_weights_its_message_reports(path):
    steps, runs = 12, 20
    references = [small_mlp()]
    for n in range(1, steps + 1):
        model = small_mlp()
        fit(model, F.cross_entropy, optim.Adam(model.parameters(), lr=0.01), loader(), epochs=2, progress=False,
            max_steps=n)
        references.append(model)
    start = time.perf_counter()
    model = small_mlp()
    fit(model, F.cross_entropy, optim.Adam(model.parameters(), lr=0.01), loader(), epochs=2, progress=False,
        max_steps=steps)
    duration, rng, interrupted = time.perf_counter() - start, random.Random(1), 0
    with alarm_raises() as armed:
        for _ in range(runs):
            model, stop = small_mlp(), None
            armed[0] = True
            try:
                signal.setitimer(signal.ITIMER_REAL, rng.uniform(0.1, 0.9) * duration)
                # in a copy of the context: an interrupt inside numpy.errstate's exit cannot leave its mode set
                contextvars.copy_context().run(fit, model, F.cross_entropy, optim.Adam(model.parameters(), lr=0.01),
                                               loader(), epochs=2, progress=False, max_steps=steps)
                signal.setitimer(signal.ITIMER_REAL, 0)
                armed[0] = False
            except KeyboardInterrupt as error:  # a bare one came before or after fit: nothing to check
                stop = error if isinstance(error, TrainingInterrupted) else None
            armed[0] = False
            if stop is None:
                continue
            interrupted += 1
            completed = stop.global_step
            assert f"the weights after step {completed}," in str(stop) or completed == 0
            for p, r in zip(model.parameters(), references[completed].parameters(), strict=True):
                numpy.testing.assert_array_equal(p.data, r.data)
    assert interrupted >= runs // 4, f"only {interrupted} of {runs} runs were interrupted in fit: the timer missed"


# ----- item 8: a non-finite gradient with a finite loss -----
def test_an_infinite_gradient_stops_fit_before_its_update_and_names_the_parameter(path):
    model = small_mlp()
    bias, calls = model[2].bias, [0]

    def loss_fn(outputs, targets):  # at the 5th step, adds 0 to the loss, with an infinite slope
        calls[0] += 1
        loss = F.cross_entropy(outputs, targets)
        return loss + ((bias - bias.detach()) ** 0.5).sum() if calls[0] == 5 else loss

    with pytest.raises(TrainingDiverged) as info:
        fit(model, loss_fn, optim.SGD(model.parameters(), lr=0.1, momentum=0.9), loader(), epochs=2,
            progress=False)
    reference = small_mlp()
    fit(reference, F.cross_entropy, optim.SGD(reference.parameters(), lr=0.1, momentum=0.9), loader(), epochs=2,
        progress=False, max_steps=4)
    for p, r in zip(model.parameters(), reference.parameters(), strict=True):
        numpy.testing.assert_array_equal(p.data, r.data)  # the weights after step 4, all finite
    message = str(info.value)
    assert "gradient of 2.bias" in message and "step 5" in message and "weights after step 4" in message
    assert info.value.parameter == "2.bias" and info.value.global_step == 5
    assert len(info.value.history.step_losses) == 4
