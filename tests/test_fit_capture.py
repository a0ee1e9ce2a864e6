"""``fit(..., capture=True)`` (``fast/fit_capture.py``) on the strict stand-in, which captures as CUDA does: each
step after the warm-up is one graph launch, and the training is the eager one bit for bit, losses, accuracies,
weights, optimizer state and a divergence's report alike; where a capture cannot give that, ``fit`` says why and
trains eagerly."""

import numpy
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as B
from dlscratch import nn, optim
from dlscratch.data import DataLoader, TensorDataset, blobs
from dlscratch.training import TrainingDiverged, fit

OPTIMIZERS = {
    "SGD": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "capturable Adam": lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.01, capturable=True),
    "Adadelta": lambda ps: optim.AdaDelta(ps, lr=1.0),
}


def data(poisoned_at=None):
    x, y = blobs(n_per_class=50, n_classes=3, std=0.8, seed=0)  # 150 samples: 9 batches of 16, then one of 6
    if poisoned_at is not None:
        x = x.copy()
        x[poisoned_at] = numpy.inf
    return x, y


def train(name, capture, epochs=2, poisoned_at=None):
    dlscratch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 3)).to("gpu")
    optimizer = OPTIMIZERS[name](model.parameters())
    x, y = data(poisoned_at)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=poisoned_at is None, seed=0)
    with B.ledger() as book:
        history = fit(model, F.cross_entropy, optimizer, loader, epochs=epochs, progress=False, capture=capture)
    return model, optimizer, history, book


def host(tensors):
    return [t.detach().to("cpu").numpy() for t in tensors]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_a_captured_fit_is_the_eager_fit_bit_for_bit_in_one_launch_per_step(stand_in, fast_path, name):
    model, optimizer, history, book = train(name, capture=True)
    eager, eager_optimizer, eager_history, eager_book = train(name, capture=False)
    assert history.step_losses == eager_history.step_losses
    assert history["accuracy"] == eager_history["accuracy"]
    for got, expected in zip(host(model.parameters()), host(eager.parameters()), strict=True):
        assert numpy.array_equal(got, expected)
    for p, q in zip(model.parameters(), eager.parameters()):
        assert numpy.array_equal(B.to_cpu(p.grad.data), B.to_cpu(q.grad.data))  # the last step's gradients
        for key, value in eager_optimizer.state[q].items():
            assert numpy.array_equal(B.to_cpu(optimizer.state[p][key]), B.to_cpu(value)), key
    # epoch 1: the warm-up, 8 replays, the short last batch; epoch 2: 9 replays, the short batch
    assert book.graphs == 17 and book.copies_device >= 2 * 17  # each replay: the batch into the static inputs
    assert book.kernels < eager_book.kernels / 4, (book.summary(), eager_book.summary())


def test_a_divergence_in_a_replayed_step_is_reported_as_in_an_eager_fit(stand_in, fast_path):
    reports = []
    for capture in (True, False):
        with pytest.raises(TrainingDiverged) as caught:
            train("SGD", capture, epochs=1, poisoned_at=16 * 4 + 3)  # in step 5, a replayed one
        reports.append((caught.value.step, caught.value.global_step, caught.value.history.step_losses))
    assert reports[0] == reports[1] and reports[0][0] == 5


@pytest.mark.parametrize("make, why", [
    (lambda ps: optim.Adam(ps, lr=0.01), "Adam counts its steps on the host; build it with capturable=True"),
    (lambda ps: optim.RMSprop(ps, lr=0.01), "the step's checks read the host"),
    ("on the CPU", "the parameters are on the CPU"),
])
def test_fit_says_why_it_cannot_capture_and_trains_eagerly(stand_in, fast_path, make, why):
    dlscratch.manual_seed(0)
    if make == "on the CPU":
        make = OPTIMIZERS["SGD"]
        B.use("cpu")  # the model and the batches on the CPU, while the stand-in plays a GPU
    model = nn.Sequential(nn.Linear(2, 3))
    x, y = data()
    with pytest.warns(UserWarning, match=f"fit\\(capture=True\\) trains without a CUDA graph: {why}"):
        history = fit(model, F.cross_entropy, make(model.parameters()), DataLoader(TensorDataset(x, y), batch_size=16),
                      epochs=1, progress=False, capture=True)
    assert len(history.step_losses) == 10


def test_where_cublas_cannot_be_called_directly_fit_says_cupys_refusal_and_trains_eagerly(stand_in, fast_path,
                                                                                          monkeypatch):
    monkeypatch.setattr(B, "cublas_library", lambda: None)  # ROCm, or a platform where the library is not found
    with pytest.warns(UserWarning, match=r"the step could not be captured \(NotImplementedError: calling cuBLAS API"):
        model, _, history, book = train("SGD", capture=True, epochs=1)
    eager, _, eager_history, _ = train("SGD", capture=False, epochs=1)
    assert history.step_losses == eager_history.step_losses and book.graphs == 0
    for got, expected in zip(host(model.parameters()), host(eager.parameters()), strict=True):
        assert numpy.array_equal(got, expected)


def test_without_a_gpu_fit_says_capturing_needs_one(monkeypatch):
    monkeypatch.setattr(B, "gpu_available", lambda: False)
    monkeypatch.setattr(B, "gpu_unavailable_reason", lambda: "CuPy is not installed")
    model = nn.Linear(2, 3)
    x, y = data()
    with pytest.warns(UserWarning, match=r"capturing needs a GPU \(CuPy is not installed\)"):
        fit(model, F.cross_entropy, optim.SGD(model.parameters(), lr=0.1),
            DataLoader(TensorDataset(x, y), batch_size=50), epochs=1, progress=False, capture=True)


def test_a_label_out_of_range_in_a_replayed_step_is_named_as_in_an_eager_fit(stand_in, fast_path):
    """The loss's check reads the labels of the step that went wrong, not those the graph holds by then."""
    x, y = data()
    y = y.copy()
    y[16 * 2 + 5] = 7  # in the third batch (no shuffling): a replayed step, with good batches after it
    results = []
    for capture in (True, False):
        dlscratch.manual_seed(0)
        model = nn.Sequential(nn.Linear(2, 3)).to("gpu")
        optimizer = OPTIMIZERS["SGD"](model.parameters())
        with pytest.raises(ValueError, match="7"):
            fit(model, F.cross_entropy, optimizer, DataLoader(TensorDataset(x, y), batch_size=16), epochs=1,
                progress=False, capture=capture)
        results.append(host(model.parameters()))
    for got, expected in zip(*results, strict=True):
        assert numpy.array_equal(got, expected)
