"""Captured training steps of whole models, checked on the strict stand-in, which captures as CUDA does
(``bench/strict_cupy/capture.py``): ``nn.LSTM`` and an unrolled ``nn.LSTMCell`` with a Linear head, the Keras
MNIST CNN (``bench/cnn.py``) with its two dropouts, an MLP under float16 ``autocast``, a CNN of the other
convolution algorithms (Winograd's two, the FFT's complex products) and adaptive average pooling, and an attention
head of products written with ``@`` (broadcast batches, a vector operand). One model takes eager
steps; an identical one takes a warm-up step, captures the next, and replays it on each new batch copied into the
captured inputs: losses, weights and optimizer state agree bit for bit. The dropout masks come from a CuPy
``Generator``, whose state lives on the device, so a replay draws the mask that the eager step draws.

Every one of these steps multiplies matrices. CuPy 14 refuses cuBLAS inside a capture (``test_cuda_graphs.py``
checks that refusal), so inside one dlscratch makes CuPy's cuBLAS call itself (``dlscratch/cuda/blas.py``; the
stand-in plays cuBLAS on the memory the pointers name).

The reference path's cross-entropy reads the labels on the host, which a capture refuses
(``tests/test_cuda_graphs.py`` checks that); on that path the steps use the mean squared error."""

import numpy as np
import pytest

import dlscratch
import dlscratch.nn.functional as F
from dlscratch import backend, nn, optim
from dlscratch.bench.cnn import keras_cnn
from dlscratch.engine import switch

STEPS = 3  # replays compared with as many eager steps
T, N, INPUT, HIDDEN = 6, 3, 12, 8  # the LSTMs' sequences: (T, N, INPUT)
PATHS = {"fast": switch.fast_path, "reference": switch.reference}


class LSTMHead(nn.Module):
    """``nn.LSTM(12, 8)`` and a Linear head on the last step's output: ``x: (T, N, 12) -> (N, outputs)``."""

    def __init__(self, outputs):
        super().__init__()
        self.lstm, self.head = nn.LSTM(INPUT, HIDDEN), nn.Linear(HIDDEN, outputs)

    def forward(self, x):
        return self.head(self.lstm(x)[0][-1])


class LSTMCellHead(nn.Module):
    """``nn.LSTMCell(12, 8)`` unrolled in Python over the steps, and a Linear head on the last hidden state."""

    def __init__(self, outputs):
        super().__init__()
        self.cell, self.head = nn.LSTMCell(INPUT, HIDDEN), nn.Linear(HIDDEN, outputs)

    def forward(self, x):
        state = None
        for x_t in x:
            state = self.cell(x_t, state)
        return self.head(state[0])


class AutocastMLP(nn.Module):
    """``Linear(12, 16)``, ``ReLU``, ``Linear(16, outputs)`` run under float16 ``autocast`` (float32 weights, float16
    products: the casts are in the graph too)."""

    def __init__(self, outputs):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(INPUT, 16), nn.ReLU(), nn.Linear(16, outputs))

    def forward(self, x):
        with dlscratch.amp.autocast("cuda"):
            return self.layers(x)


class OtherProductsCNN(nn.Module):
    """Every product of the library that is not im2col's or a Linear's: Winograd F(2x2, 3x3) and F(4x4, 3x3), the
    FFT convolution (batched complex GEMMs) and adaptive average pooling, then a Linear head:
    ``x: (N, 1, 9, 9) -> (N, outputs)``."""

    def __init__(self, outputs):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(1, 3, 3, padding=1, algorithm="winograd2"), nn.ReLU(),
            nn.Conv2d(3, 3, 3, padding=1, algorithm="winograd4"), nn.ReLU(),
            nn.Conv2d(3, 2, 5, padding=2, algorithm="fft"),
            nn.AdaptiveAvgPool2d((2, 3)), nn.Flatten(), nn.Linear(12, outputs))

    def forward(self, x):
        return self.layers(x)


class AttentionHead(nn.Module):
    """Products a user writes with ``@``, of the forms a broadcast or a vector gives: ``x: (N, T, 12)`` projected by
    ``(12, 8)`` matrices (a batch against one matrix), scores ``q @ k^T`` (batches of one shape), a softmax,
    ``scores @ v``, a vector ``(8,)`` read from every step (a 1-D right operand), then a Linear head over the steps:
    ``(N, T, 12) -> (N, outputs)``."""

    def __init__(self, outputs, steps):
        super().__init__()
        self.query, self.key, self.value = (nn.Parameter(dlscratch.randn(INPUT, HIDDEN) * 0.3) for _ in range(3))
        self.readout = nn.Parameter(dlscratch.randn(HIDDEN) * 0.3)
        self.head = nn.Linear(steps, outputs)

    def forward(self, x):
        q, k, v = x @ self.query, x @ self.key, x @ self.value
        attended = F.softmax(q @ k.transpose(1, 2), dim=-1) @ v
        return self.head(attended @ self.readout)


def momentum(parameters):
    return optim.SGD(parameters, lr=0.1, momentum=0.9)


def cnn_sgd(parameters):
    """The workload's SGD (``bench/cnn.py``), with momentum so that the optimizer has state to compare."""
    return optim.SGD(parameters, lr=0.01, momentum=0.9)


def adadelta(parameters):
    return optim.Adadelta(parameters, lr=1.0)


def labels(classes, n):
    return lambda rng: rng.integers(0, classes, n)


def targets(shape):
    return lambda rng: rng.standard_normal(shape).astype(np.float32)


# name -> (model, optimizer, loss, input shape, the batch's labels or targets from a NumPy Generator)
CASES = {
    "LSTM, cross-entropy": (lambda: LSTMHead(4), momentum, F.cross_entropy, (T, N, INPUT), labels(4, N)),
    "LSTM, MSE": (lambda: LSTMHead(2), momentum, F.mse_loss, (T, N, INPUT), targets((N, 2))),
    "LSTMCell, cross-entropy": (lambda: LSTMCellHead(4), momentum, F.cross_entropy, (T, N, INPUT), labels(4, N)),
    "LSTMCell, MSE": (lambda: LSTMCellHead(2), momentum, F.mse_loss, (T, N, INPUT), targets((N, 2))),
    "Keras CNN, cross-entropy, SGD": (lambda: keras_cnn(nn), cnn_sgd, F.cross_entropy, (2, 1, 28, 28), labels(10, 2)),
    "Keras CNN, MSE, Adadelta": (lambda: keras_cnn(nn), adadelta, F.mse_loss, (2, 1, 28, 28), targets((2, 10))),
    "MLP, float16 autocast, cross-entropy": (lambda: AutocastMLP(4), momentum, F.cross_entropy, (N, INPUT),
                                             labels(4, N)),
    "MLP, float16 autocast, MSE": (lambda: AutocastMLP(2), momentum, F.mse_loss, (N, INPUT), targets((N, 2))),
    "Winograd, FFT, adaptive pooling, cross-entropy": (lambda: OtherProductsCNN(4), momentum, F.cross_entropy,
                                                       (2, 1, 9, 9), labels(4, 2)),
    "Winograd, FFT, adaptive pooling, MSE": (lambda: OtherProductsCNN(2), momentum, F.mse_loss, (2, 1, 9, 9),
                                             targets((2, 2))),
    "Attention by @, cross-entropy": (lambda: AttentionHead(4, T), momentum, F.cross_entropy, (N, T, INPUT),
                                      labels(4, N)),
    "Attention by @, MSE": (lambda: AttentionHead(2, T), momentum, F.mse_loss, (N, T, INPUT), targets((N, 2))),
}
ON_THE_HOST = {name for name, case in CASES.items() if case[2] is F.cross_entropy}  # refused on the reference path


def batches(name):
    _, _, _, shape, make_y = CASES[name]
    rng = np.random.default_rng(0)
    return [(rng.standard_normal(shape).astype(np.float32), make_y(rng)) for _ in range(STEPS + 1)]


def build(name):
    make_model, make_optimizer, _, _, _ = CASES[name]
    dlscratch.manual_seed(0)  # the same weights, and the same dropout masks to come
    model = make_model().to("gpu")
    return model, make_optimizer(model.parameters())


def step(name, model, optimizer, x, y):
    optimizer.zero_grad(set_to_none=False)
    loss = CASES[name][2](model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def on_gpu(array):
    return dlscratch.tensor(array).to("gpu")


def host(value):
    return backend.to_cpu(value.detach().data if isinstance(value, dlscratch.Tensor) else value)


def state_of(optimizer):
    return [(key, host(value)) for state in optimizer.state.values() for key, value in state.items()]


def eager_run(name):
    model, optimizer = build(name)
    losses = [host(step(name, model, optimizer, on_gpu(x), on_gpu(y))) for x, y in batches(name)]
    return model, optimizer, losses


def replayed_run(name):
    """A warm-up step on the first batch, a captured step, then one replay per next batch."""
    data = batches(name)
    model, optimizer = build(name)
    static_x, static_y = on_gpu(data[0][0]), on_gpu(data[0][1])
    losses = [host(step(name, model, optimizer, static_x, static_y))]  # the warm-up: state and constants made
    weights, state = [host(p) for p in model.parameters()], state_of(optimizer)
    graph = dlscratch.cuda.CUDAGraph()
    with dlscratch.cuda.graph(graph):
        static_loss = step(name, model, optimizer, static_x, static_y)
    assert all(np.array_equal(w, host(p)) for w, p in zip(weights, model.parameters())), "the capture ran the step"
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(state, state_of(optimizer))), "the capture stepped"
    for x, y in data[1:]:
        with dlscratch.no_grad():
            static_x.copy_(on_gpu(x))
            static_y.copy_(on_gpu(y))
        graph.replay()
        losses.append(host(static_loss))
    return model, optimizer, losses


def assert_replays_match_eager_steps(name):
    eager, eager_optimizer, eager_losses = eager_run(name)
    model, optimizer, losses = replayed_run(name)
    assert len({float(loss) for loss in eager_losses}) == STEPS + 1, "each batch should give its own loss"
    assert all(np.array_equal(a, b) for a, b in zip(eager_losses, losses)), (eager_losses, losses)
    for (key, p), q in zip(eager.named_parameters(), model.parameters()):
        assert np.array_equal(host(p), host(q)), key
    eager_state, state = state_of(eager_optimizer), state_of(optimizer)
    assert eager_state and len(state) == len(eager_state)
    for (key, a), (_, b) in zip(eager_state, state):
        assert np.array_equal(a, b), key


@pytest.mark.parametrize("name", CASES)
def test_replays_of_a_captured_step_give_the_eager_steps_bit_for_bit_on_the_fast_path(stand_in, name):
    with switch.fast_path():
        assert_replays_match_eager_steps(name)


@pytest.mark.parametrize("name", sorted(set(CASES) - ON_THE_HOST))
def test_replays_of_a_captured_step_give_the_eager_steps_bit_for_bit_on_the_reference_path(stand_in, name):
    with switch.reference():
        assert_replays_match_eager_steps(name)


@pytest.mark.parametrize("path", PATHS)
def test_each_replay_draws_the_dropout_mask_of_the_eager_step(stand_in, path):
    """The Keras CNN's dropout alone, forward and backward: a replay that reused the capture's mask, or drew one
    step ahead, would give other numbers."""
    x = np.linspace(0.5, 2.0, 4 * 6, dtype=np.float32).reshape(4, 6)

    def dropped(leaf):
        out = F.dropout(leaf, 0.5)
        (out * out).sum().backward()
        return out

    with PATHS[path]():
        dlscratch.manual_seed(0)
        eager = []
        for _ in range(STEPS + 1):
            leaf = on_gpu(x).requires_grad_()
            eager.append((host(dropped(leaf)), host(leaf.grad)))
        dlscratch.manual_seed(0)
        leaf = on_gpu(x).requires_grad_()
        replayed = [(host(dropped(leaf)), host(leaf.grad))]  # the warm-up
        graph = dlscratch.cuda.CUDAGraph()
        leaf.grad = None
        with dlscratch.cuda.graph(graph):
            out = dropped(leaf)
        for _ in range(STEPS):
            graph.replay()
            replayed.append((host(out), host(leaf.grad)))
    assert len({a.tobytes() for a, _ in eager}) == STEPS + 1, "each step should draw its own mask"
    for (a, ga), (b, gb) in zip(eager, replayed):
        assert np.array_equal(a, b) and np.array_equal(ga, gb)
