"""``fit`` on a GPU (the strict stand-in) checks its steps on the device (training/fit_steps.py): no wait
between two progress updates, and a step with a NaN or an infinity still stops ``fit`` before its update,
as on the CPU (tests/test_trust_training.py), with the optimizer's state as it was before that step."""

import contextlib

import numpy
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as B
from dlscratch import nn, optim
from dlscratch.data import DataLoader, TensorDataset, blobs
from dlscratch.fast import fit_steps
from dlscratch.training import TrainingDiverged, TrainingInterrupted, evaluate, fit
from dlscratch.training.fit import runs_on_the_device

OPTIMIZERS = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.01),
    "capturable adam": lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.01, capturable=True),
    "adadelta": lambda ps: optim.AdaDelta(ps, lr=1.0, weight_decay=0.01),
}


def loader(batch_size=16):
    x, y = blobs(n_per_class=50, n_classes=3, std=0.8, seed=0)  # 150 samples: 10 steps of 16
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True, seed=0)


def small_mlp():
    dlscratch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3)).to("gpu")


def host(tensors):
    return [t.detach().to("cpu").numpy() for t in tensors]


def host_state(optimizer):
    return {i: {k: B.to_cpu(v) if hasattr(v, "shape") else v for k, v in s.items()}
            for i, s in optimizer.state_dict()["state"].items()}


def assert_same_state(got, expected):
    assert got.keys() == expected.keys()
    for i in got:
        assert got[i].keys() == expected[i].keys()
        for key in got[i]:
            numpy.testing.assert_array_equal(got[i][key], expected[i][key], err_msg=f"state {i} {key}")


@contextlib.contextmanager
def on_the_cpu():
    """The current device is the CPU inside (the loaders' batches are NumPy arrays), the stand-in after."""
    B.use("cpu")
    try:
        yield
    finally:
        B.use("gpu")


@pytest.fixture
def reads_every(monkeypatch):
    """Make ``fit`` read the device every ``n`` steps, whatever the time."""
    def every(n):
        monkeypatch.setattr(fit_steps, "READ_EVERY_SECONDS", float("inf"))
        monkeypatch.setattr(fit_steps, "MOST_PENDING", n)
    return every


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_fit_waits_only_when_it_reads_and_trains_as_the_cpu_does(stand_in, fast_path, reads_every, name):
    reads_every(4)
    model = small_mlp()
    optimizer = OPTIMIZERS[name](model.parameters())
    assert runs_on_the_device(optimizer)
    with B.ledger() as book:
        history = fit(model, F.cross_entropy, optimizer, loader(), epochs=2, progress=False)
    assert len(history.step_losses) == 20
    assert book.waits == 2 * 3, book.table()  # steps 4, 8 and the epoch's end (10), twice
    assert book.copies_to_host == book.waits
    with on_the_cpu():
        cpu_model = small_mlp().to("cpu")
        cpu_history = fit(cpu_model, F.cross_entropy, OPTIMIZERS[name](cpu_model.parameters()), loader(),
                          epochs=2, progress=False)
    numpy.testing.assert_allclose(history.step_losses, cpu_history.step_losses, rtol=1e-5)
    numpy.testing.assert_allclose(history["accuracy"], cpu_history["accuracy"])
    for got, expected in zip(host(model.parameters()), host(cpu_model.parameters()), strict=True):
        numpy.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)


def poisoned_loss(bias, at_step):
    """Cross-entropy that, at call ``at_step``, adds 0 with an infinite slope for ``bias``."""
    calls = [0]

    def loss_fn(outputs, targets):
        calls[0] += 1
        loss = F.cross_entropy(outputs, targets)
        return loss + ((bias - bias.detach()) ** 0.5).sum() if calls[0] == at_step else loss

    return loss_fn


@pytest.mark.parametrize("name", OPTIMIZERS)
@pytest.mark.parametrize("bad_step, every", [(5, 3), (5, 100), (1, 4)])
def test_an_infinite_gradient_stops_fit_before_its_update_on_the_device(stand_in, fast_path, reads_every, name,
                                                                         bad_step, every):
    reads_every(every)  # the bad step first, in the middle or last of the steps read together
    model = small_mlp()
    optimizer = OPTIMIZERS[name](model.parameters())
    with pytest.raises(TrainingDiverged) as info:
        fit(model, poisoned_loss(model[2].bias, bad_step), optimizer, loader(), epochs=2, progress=False)
    assert info.value.parameter == "2.bias" and info.value.global_step == bad_step
    assert f"step {bad_step}" in str(info.value) and len(info.value.history.step_losses) == bad_step - 1
    reference = small_mlp()
    reference_optimizer = OPTIMIZERS[name](reference.parameters())
    losses = [] if bad_step == 1 else fit(reference, F.cross_entropy, reference_optimizer, loader(), epochs=2,
                                          progress=False, max_steps=bad_step - 1).step_losses
    for got, expected in zip(host(model.parameters()), host(reference.parameters()), strict=True):
        numpy.testing.assert_array_equal(got, expected)  # the weights after the last good step
    assert_same_state(host_state(optimizer), host_state(reference_optimizer))
    assert info.value.history.step_losses == losses
    # the optimizer goes on from there as an uninterrupted one does
    for opt, net in ((optimizer, model), (reference_optimizer, reference)):
        fit(net, F.cross_entropy, opt, loader(), epochs=1, progress=False, max_steps=2)
    for got, expected in zip(host(model.parameters()), host(reference.parameters()), strict=True):
        numpy.testing.assert_array_equal(got, expected)


def test_a_label_out_of_range_is_named_and_no_update_is_applied(stand_in, fast_path, reads_every):
    reads_every(100)
    x, y = blobs(n_per_class=50, n_classes=3, std=0.8, seed=0)
    y = y.copy()
    y[40] = 7  # in the third batch of 16 (no shuffling)
    model = small_mlp()
    optimizer = OPTIMIZERS["adam"](model.parameters())
    with pytest.raises(ValueError, match="7"):
        fit(model, F.cross_entropy, optimizer, DataLoader(TensorDataset(x, y), batch_size=16), epochs=1,
            progress=False)
    reference = small_mlp()
    reference_optimizer = OPTIMIZERS["adam"](reference.parameters())
    fit(reference, F.cross_entropy, reference_optimizer, DataLoader(TensorDataset(x, y), batch_size=16), epochs=1,
        progress=False, max_steps=2)
    for got, expected in zip(host(model.parameters()), host(reference.parameters()), strict=True):
        numpy.testing.assert_array_equal(got, expected)
    assert_same_state(host_state(optimizer), host_state(reference_optimizer))


def test_evaluate_reads_the_device_once(stand_in, fast_path):
    model = small_mlp()
    with B.ledger() as book:
        scores = evaluate(model, loader(), F.cross_entropy)
    assert book.waits == 1, book.table()
    with on_the_cpu():
        cpu_scores = evaluate(small_mlp().to("cpu"), loader(), F.cross_entropy)
    assert scores.keys() == cpu_scores.keys()
    for key in scores:
        assert scores[key] == pytest.approx(cpu_scores[key], rel=1e-5)


def test_an_optimizer_of_its_own_keeps_the_hosts_checks(stand_in, fast_path):
    class Halved(optim.SGD):
        def _update(self, staged, grad, state, group):
            staged.delta = grad * (group["lr"] / 2)

    model = small_mlp()
    assert not runs_on_the_device(Halved(model.parameters(), lr=0.1))
    with dlscratch.reference():
        assert not runs_on_the_device(optim.SGD(model.parameters(), lr=0.1))
    assert runs_on_the_device(optim.SGD(model.parameters(), lr=0.1))


@pytest.mark.parametrize("at_call", [3, 7])
def test_an_interrupt_records_the_steps_the_weights_have_had(stand_in, fast_path, reads_every, at_call):
    reads_every(4)  # steps 1-4 were read; 5 and 6 (at call 7) are pending when the interrupt comes
    calls = [0]

    def interrupting_loss(outputs, targets):
        calls[0] += 1
        if calls[0] == at_call:
            raise KeyboardInterrupt
        return F.cross_entropy(outputs, targets)

    model = small_mlp()
    optimizer = OPTIMIZERS["adam"](model.parameters())
    with pytest.raises(TrainingInterrupted) as info:
        fit(model, interrupting_loss, optimizer, loader(), epochs=2, progress=False)
    reference = small_mlp()
    reference_optimizer = OPTIMIZERS["adam"](reference.parameters())
    losses = fit(reference, F.cross_entropy, reference_optimizer, loader(), epochs=2, progress=False,
                 max_steps=at_call - 1).step_losses
    assert info.value.history.step_losses == losses
    for got, expected in zip(host(model.parameters()), host(reference.parameters()), strict=True):
        numpy.testing.assert_array_equal(got, expected)
    assert_same_state(host_state(optimizer), host_state(reference_optimizer))
