"""Tests of dlscratch.training: fit, evaluate, History and plot_history."""

import math
import warnings

import matplotlib
import numpy
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import nn, optim
from dlscratch.data import DataLoader, TensorDataset, blobs
from dlscratch.training import History, TrainingDiverged, correct_count, evaluate, fit, plot_history

matplotlib.use("Agg")


def blob_loaders(batch_size=32, seed=0):
    """Three well separated Gaussian clusters in 2-D: 150 training and 60 validation samples."""
    x, y = blobs(n_per_class=70, n_classes=3, std=0.8, seed=seed)
    order = numpy.random.default_rng(seed).permutation(len(y))
    train, val = order[:150], order[150:]
    train_loader = DataLoader(TensorDataset(x[train], y[train]), batch_size=batch_size, shuffle=True, seed=seed)
    return train_loader, DataLoader(TensorDataset(x[val], y[val]), batch_size=25)


def mlp():
    dlscratch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))


class Logits(nn.Module):
    """A 'model' that returns its input: evaluate then scores fixed logits."""

    def forward(self, x):
        return x


# ----- fit -----
def test_fit_learns_a_small_classification_problem(backend):
    train_loader, val_loader = blob_loaders()
    model = mlp()
    history = fit(model, F.cross_entropy, optim.Adam(model.parameters(), lr=0.05), train_loader, epochs=8,
                  val_loader=val_loader, progress=False)
    assert history.loss[-1] < 0.3 * history.loss[0]
    assert history.accuracy[-1] >= 0.95
    assert history.val_accuracy[-1] >= 0.95
    assert model.training  # fit leaves the model in training mode, although validation ran in eval mode
    # The last validation ran on the final parameters: evaluate gives the same numbers.
    final = evaluate(model, val_loader, F.cross_entropy)
    assert final["loss"] == pytest.approx(history.val_loss[-1], rel=1e-6)
    assert final["accuracy"] == history.val_accuracy[-1]


def test_fit_makes_the_same_updates_as_the_hand_written_loop():
    by_fit, by_hand = mlp(), mlp()
    assert all(numpy.array_equal(a.data, b.data) for a, b in zip(by_fit.parameters(), by_hand.parameters()))
    loader_a, _ = blob_loaders()
    loader_b, _ = blob_loaders()
    fit(by_fit, F.cross_entropy, optim.SGD(by_fit.parameters(), lr=0.1, momentum=0.9), loader_a, epochs=2,
        progress=False)
    optimizer = optim.SGD(by_hand.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        by_hand.train()
        for x, y in loader_b:
            loss = F.cross_entropy(by_hand(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    for a, b in zip(by_fit.parameters(), by_hand.parameters()):
        numpy.testing.assert_array_equal(a.data, b.data)


def test_history_records_epoch_means_and_every_step():
    train_loader, val_loader = blob_loaders(batch_size=64)  # 150 samples: batches of 64, 64 and 22
    model = mlp()
    history = fit(model, F.cross_entropy, optim.SGD(model.parameters(), lr=0.1), train_loader, epochs=3,
                  val_loader=val_loader, progress=False)
    assert list(history.keys()) == ["loss", "accuracy", "val_loss", "val_accuracy"]
    assert len(history) == 3 and history.epoch_steps == [3, 3, 3]
    assert len(history.step_losses) == 9
    sizes = numpy.array([64, 64, 22])
    for epoch in range(3):
        steps = numpy.array(history.step_losses[3 * epoch:3 * epoch + 3])
        assert history.loss[epoch] == pytest.approx((steps * sizes).sum() / 150, rel=1e-6)
    assert all(0.0 <= a <= 1.0 for a in history.accuracy + history.val_accuracy)
    assert all(isinstance(v, float) for v in history.step_losses + history.loss)
    assert history["val_loss"] is history.val_loss
    assert "val_accuracy" in history and "precision" not in history


def test_training_accuracy_counts_the_argmax_of_each_step():
    # A model that always predicts class 0, and a learning rate of 0: the accuracy is the share of label 0.
    x = numpy.zeros((10, 2), dtype=numpy.float32)
    y = numpy.array([0, 0, 0, 1, 2, 0, 1, 1, 2, 0])
    model = nn.Linear(2, 3)
    with dlscratch.no_grad():
        model.weight.data[...] = 0
        model.bias.data[...] = numpy.array([1.0, 0.0, -1.0], dtype=numpy.float32)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    history = fit(model, F.cross_entropy, optim.SGD(model.parameters(), lr=0.0), loader, epochs=1, progress=False)
    assert history.accuracy == [0.5]
    p = numpy.exp([1.0, 0.0, -1.0]) / numpy.exp([1.0, 0.0, -1.0]).sum()
    expected = -numpy.log(p[y]).mean()
    assert history.loss[0] == pytest.approx(expected, rel=1e-6)


def test_fit_without_metrics_trains_a_regression():
    rng = numpy.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(numpy.float32)
    y = x @ numpy.array([[1.0], [-2.0], [0.5]], dtype=numpy.float32)
    model = nn.Linear(3, 1)
    history = fit(model, F.mse_loss, optim.SGD(model.parameters(), lr=0.1), DataLoader(TensorDataset(x, y), 16),
                  epochs=10, metrics=(), progress=False)
    assert list(history.keys()) == ["loss"]
    assert history.loss[-1] < 1e-3 < history.loss[0]


def test_max_steps_stops_inside_an_epoch():
    train_loader, _ = blob_loaders(batch_size=64)  # 3 steps per epoch
    model = mlp()
    history = fit(model, F.cross_entropy, optim.SGD(model.parameters(), lr=0.1), train_loader, epochs=5,
                  progress=False, max_steps=4)
    assert len(history.step_losses) == 4
    assert history.epoch_steps == [3, 1] and len(history.loss) == 2


def test_scheduler_steps_after_each_epoch_and_history_records_the_rates():
    train_loader, val_loader = blob_loaders(batch_size=64)  # 3 steps per epoch
    model = mlp()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    history = fit(model, F.cross_entropy, optimizer, train_loader, epochs=5, val_loader=val_loader, progress=False,
                  scheduler=scheduler)
    assert history.lr == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.025])  # 0.1 * 0.5 ** (epoch // 2)
    assert scheduler.last_epoch == 5 and optimizer.param_groups[0]["lr"] == pytest.approx(0.025)
    assert list(history.keys())[-1] == "lr"


def test_fit_with_a_scheduler_makes_the_updates_of_the_hand_written_loop():
    by_fit, by_hand = mlp(), mlp()
    loader_a, _ = blob_loaders()
    loader_b, _ = blob_loaders()
    opt_a = optim.SGD(by_fit.parameters(), lr=0.1, momentum=0.9)
    fit(by_fit, F.cross_entropy, opt_a, loader_a, epochs=3, progress=False,
        scheduler=optim.lr_scheduler.MultiStepLR(opt_a, milestones=[1, 2], gamma=0.1))
    opt_b = optim.SGD(by_hand.parameters(), lr=0.1, momentum=0.9)
    for lr in (0.1, 0.01, 0.001):
        for group in opt_b.param_groups:
            group["lr"] = lr
        for x, y in loader_b:
            loss = F.cross_entropy(by_hand(x), y)
            opt_b.zero_grad()
            loss.backward()
            opt_b.step()
    for a, b in zip(by_fit.parameters(), by_hand.parameters()):
        numpy.testing.assert_allclose(a.data, b.data, rtol=1e-6, atol=1e-7)


def test_without_a_scheduler_no_lr_is_recorded():
    train_loader, _ = blob_loaders()
    model = mlp()
    history = fit(model, F.cross_entropy, optim.SGD(model.parameters(), lr=0.1), train_loader, epochs=1,
                  progress=False)
    assert "lr" not in history


# ----- divergence -----
def nan_at_step(k, value=float("nan")):
    """Cross-entropy, poisoned with ``value`` from the k-th call on (1-based)."""
    calls = []

    def loss_fn(outputs, targets):
        calls.append(1)
        loss = F.cross_entropy(outputs, targets)
        return loss * value if len(calls) >= k else loss

    return loss_fn


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_non_finite_loss_stops_with_epoch_and_step(value):
    train_loader, _ = blob_loaders(batch_size=64)  # 3 steps per epoch: step 5 is epoch 2, step 2
    model = mlp()
    with pytest.raises(TrainingDiverged, match=r"epoch 2, step 2 \(step 5 overall\)") as info:
        fit(model, nan_at_step(5, value), optim.SGD(model.parameters(), lr=0.1), train_loader, epochs=3,
            progress=False)
    assert isinstance(info.value, FloatingPointError)
    assert "lower learning rate than lr=0.1" in str(info.value)
    assert (info.value.epoch, info.value.step, info.value.global_step) == (2, 2, 5)
    assert len(info.value.history.step_losses) == 4 and len(info.value.history.loss) == 1  # what came before
    assert math.isnan(info.value.loss) if value != value else info.value.loss == math.inf


def test_a_huge_learning_rate_diverges_with_a_clear_error_and_no_warnings():
    train_loader, _ = blob_loaders()
    model = mlp()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's overflow warnings must not bury the error
        with pytest.raises(TrainingDiverged, match="epoch 1, step .* lower learning rate than lr=1000000.0"):
            fit(model, F.cross_entropy, optim.SGD(model.parameters(), lr=1e6), train_loader, epochs=5, progress=False)


# ----- evaluate -----
def test_evaluate_gives_loss_and_accuracy_weighted_by_batch_size():
    logits = numpy.array([[2.0, 1.0], [0.0, 3.0], [1.0, 0.5], [0.2, 0.1], [0.0, 1.0]], dtype=numpy.float32)
    labels = numpy.array([0, 1, 1, 1, 1])
    loader = DataLoader(TensorDataset(logits, labels), batch_size=2)  # batches of 2, 2 and 1
    scores = evaluate(Logits(), loader, F.cross_entropy)
    log_p = logits - numpy.log(numpy.exp(logits).sum(axis=1, keepdims=True))
    assert scores["loss"] == pytest.approx(-log_p[numpy.arange(5), labels].mean(), rel=1e-6)
    assert scores["accuracy"] == pytest.approx(3 / 5)
    assert evaluate(Logits(), loader) == {"accuracy": pytest.approx(3 / 5)}


class Probe(nn.Module):
    """Records the training flag and whether a graph is being recorded at each call."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2, 3)
        self.seen = []

    def forward(self, x):
        out = self.linear(x)
        self.seen.append((self.training, self.linear.training, out.creator is not None))
        return out


def test_evaluate_runs_in_eval_mode_without_a_graph_and_restores_the_modes():
    model = Probe()
    model.linear.eval()  # a mixed state: it must come back exactly
    _, val_loader = blob_loaders()
    evaluate(model, val_loader, F.cross_entropy)
    assert model.seen and all(seen == (False, False, False) for seen in model.seen)
    assert model.training and not model.linear.training
    assert all(p.grad is None for p in model.parameters())


def test_evaluate_restores_the_mode_when_a_batch_fails():
    model = Probe()

    def broken_loader():
        yield dlscratch.zeros(2, 2), dlscratch.tensor(numpy.array([0, 1]))
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError, match="disk gone"):
        evaluate(model, broken_loader(), F.cross_entropy)
    assert model.training and model.linear.training and model.seen[0][0] is False


def test_correct_count_compares_the_argmax_with_the_labels():
    outputs = numpy.array([[1.0, 2.0], [3.0, 0.0], [0.0, 1.0]], dtype=numpy.float32)
    assert int(correct_count(outputs, numpy.array([1, 0, 0]))) == 2
    with pytest.raises(ValueError, match=r"accuracy: needs outputs of shape \(N, C\).*got outputs \(3,\).*metrics"):
        correct_count(outputs[:, 0], numpy.array([1, 0, 0]))
    with pytest.raises(ValueError, match="integer labels.*float32"):
        correct_count(outputs, numpy.zeros(3, dtype=numpy.float32))


# ----- bad input -----
def test_fit_rejects_bad_arguments():
    train_loader, _ = blob_loaders()
    model = mlp()
    sgd = optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match=r"unknown metrics \['f1'\]; available: \['accuracy'\]"):
        fit(model, F.cross_entropy, sgd, train_loader, epochs=1, metrics=("f1",), progress=False)
    with pytest.raises(ValueError, match="fit: epochs must be a positive integer, got 0"):
        fit(model, F.cross_entropy, sgd, train_loader, epochs=0, progress=False)
    with pytest.raises(ValueError, match="fit: max_steps must be a positive integer"):
        fit(model, F.cross_entropy, sgd, train_loader, epochs=1, max_steps=2.5, progress=False)
    with pytest.raises(ValueError, match=r"loss_fn must return a scalar Tensor.*shape \(32,\)"):
        fit(model, lambda o, t: F.cross_entropy(o, t, reduction="none"), sgd, train_loader, epochs=1, progress=False)
    with pytest.raises(TypeError, match=r"each batch must be a tuple \(inputs..., targets\)"):
        fit(model, F.cross_entropy, sgd, [dlscratch.zeros(4, 2)], epochs=1, progress=False)
    with pytest.raises(ValueError, match="fit: train_loader gave no samples"):
        fit(model, F.cross_entropy, sgd, [], epochs=1, progress=False)
    with pytest.raises(ValueError, match="evaluate: nothing to measure"):
        evaluate(model, train_loader, metrics=())
    with pytest.raises(TypeError, match="fit: scheduler must be a learning-rate schedule"):
        fit(model, F.cross_entropy, sgd, train_loader, epochs=1, progress=False, scheduler=0.5)
    other = optim.lr_scheduler.StepLR(optim.SGD(model.parameters(), lr=0.1), step_size=1)
    with pytest.raises(ValueError, match="fit: the scheduler was built on another optimizer"):
        fit(model, F.cross_entropy, sgd, train_loader, epochs=1, progress=False, scheduler=other)


# ----- progress bar -----
def test_progress_bar_shows_loss_and_accuracy_and_is_silent_when_off(capfd):
    train_loader, val_loader = blob_loaders()
    model = mlp()
    sgd = optim.SGD(model.parameters(), lr=0.1)
    fit(model, F.cross_entropy, sgd, train_loader, epochs=1, val_loader=val_loader, progress=False)
    assert capfd.readouterr().err == ""
    fit(model, F.cross_entropy, sgd, train_loader, epochs=2, val_loader=val_loader)
    err = capfd.readouterr().err
    assert "epoch 1/2" in err and "epoch 2/2" in err and "5/5" in err
    assert "loss=" in err and "acc=" in err and "val_acc=" in err


# ----- History and plot_history -----
def filled_history():
    history = History()
    for epoch, steps in enumerate(([1.0, 0.8], [0.6, 0.5, 0.4])):
        for loss in steps:
            history.record_step(loss)
        history.record_epoch(len(steps), loss=sum(steps) / len(steps), accuracy=0.5 + 0.2 * epoch,
                             val_loss=0.7 - 0.2 * epoch, val_accuracy=0.6 + 0.1 * epoch)
    return history


def test_history_access_and_repr():
    history = filled_history()
    assert history["accuracy"] == [0.5, 0.7] and history.val_loss == pytest.approx([0.7, 0.5])
    with pytest.raises(KeyError, match=r"History has no 'f1'; it recorded \['accuracy', 'loss'"):
        history["f1"]
    with pytest.raises(AttributeError, match="no attribute 'f1'"):
        _ = history.f1
    lines = repr(history).splitlines()
    assert lines[0] == "History(2 epochs, 5 steps)"
    assert lines[1].split() == ["epoch", "loss", "accuracy", "val_loss", "val_accuracy"]
    assert lines[3].split() == ["2", "0.5000", "0.7000", "0.5000", "0.7000"]
    assert repr(History()) == "History(0 epochs, 0 steps)"


def test_plot_history_draws_loss_and_accuracy_panels():
    import matplotlib.pyplot as plt

    history = filled_history()
    axes = plot_history(history)
    try:
        assert len(axes) == 2 and axes[0].figure is axes[1].figure
        lines = {line.get_label(): line for line in axes[0].get_lines()}
        assert set(lines) == {"loss (step)", "loss", "val_loss"}
        # Steps sit at fractions of their epoch: 2 steps in epoch 1, 3 in epoch 2.
        numpy.testing.assert_allclose(lines["loss (step)"].get_xdata(), [0.5, 1.0, 1 + 1 / 3, 1 + 2 / 3, 2.0])
        numpy.testing.assert_allclose(lines["loss"].get_ydata(), history.loss)
        accuracy = {line.get_label(): list(line.get_ydata()) for line in axes[1].get_lines()}
        assert accuracy == {"accuracy": history.accuracy, "val_accuracy": history.val_accuracy}
        assert axes[1].get_ylabel() == "accuracy"

        _, ax = plt.subplots()
        assert plot_history(history, ax=ax) == [ax]
        assert {line.get_label() for line in ax.get_lines()} == {"loss (step)", "loss", "val_loss"}
    finally:
        plt.close("all")
    with pytest.raises(ValueError, match="history is empty"):
        plot_history(History())
