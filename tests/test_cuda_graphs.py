"""CUDA graphs with PyTorch's names (``dlscratch.cuda.CUDAGraph``, ``dlscratch.cuda.graph``), checked on the strict
stand-in, which captures as CUDA does (``bench/strict_cupy/capture.py``): a captured training step replayed gives
the eager steps' weights bit for bit, the capture itself changes nothing, and what CUDA refuses inside a capture is
refused with CUDA's error name."""

import re

import numpy as np
import pytest

import dlscratch
import dlscratch.nn.functional as F
from dlscratch import backend, nn, optim
from dlscratch.engine import switch

STEPS = 5  # replays compared with as many eager steps


@pytest.fixture(autouse=True)
def fast_path():
    """Captures run on the fast path, which checks labels on the device; the reference path reads them on the host
    (``operations/loss.py``), which a capture refuses (the last test)."""
    with switch.fast_path():
        yield


def batches(shape, classes, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape).astype(np.float32), rng.integers(0, classes, shape[0]))
            for _ in range(STEPS + 1)]


def mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 3))


MODELS = {
    "MLP, SGD with momentum": (mlp, lambda p: optim.SGD(p, lr=0.1, momentum=0.9), (5, 8), 4),
    "CNN with pooling, SGD": (cnn, lambda p: optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4), (4, 1, 8, 8), 3),
    "MLP, Adadelta": (mlp, lambda p: optim.Adadelta(p, lr=1.0), (5, 8), 4),
}


def build(name):
    make_model, make_optimizer, _, _ = MODELS[name]
    dlscratch.manual_seed(0)
    model = make_model().to("gpu")
    return model, make_optimizer(model.parameters())


def step(model, optimizer, x, y):
    optimizer.zero_grad(set_to_none=False)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def on_gpu(array):
    return dlscratch.tensor(array).to("gpu")


def host(t):
    return t.detach().to("cpu").numpy()


@pytest.mark.parametrize("name", MODELS)
def test_replays_of_a_captured_step_give_the_eager_steps_weights_bit_for_bit(stand_in, name):
    data = batches(MODELS[name][2], MODELS[name][3])
    eager, eager_optimizer = build(name)
    losses = [float(step(eager, eager_optimizer, on_gpu(x), on_gpu(y))) for x, y in data]

    model, optimizer = build(name)
    static_x, static_y = on_gpu(data[0][0]), on_gpu(data[0][1])
    first = step(model, optimizer, static_x, static_y)  # the warm-up: state, constants and kernels made once
    before = [host(p) for p in model.parameters()]
    graph = dlscratch.cuda.CUDAGraph()
    with dlscratch.cuda.graph(graph):
        static_loss = step(model, optimizer, static_x, static_y)
    assert all(np.array_equal(b, host(p)) for b, p in zip(before, model.parameters())), "the capture ran the step"
    replayed = [float(first)]
    for x, y in data[1:]:
        with dlscratch.no_grad():
            static_x.copy_(on_gpu(x))
            static_y.copy_(on_gpu(y))
        graph.replay()
        replayed.append(float(static_loss))
    assert replayed == losses
    for p, q in zip(eager.parameters(), model.parameters()):
        assert np.array_equal(host(p), host(q))
    for state, other in zip(eager_optimizer.state.values(), optimizer.state.values()):
        for key, value in state.items():
            assert np.array_equal(backend.to_cpu(value), backend.to_cpu(other[key])), key


@pytest.mark.parametrize("what, inside", [
    ("a read on the host (", lambda loss: float(loss)),
    ("a read on the host (get)", lambda loss: loss.detach().to("cpu")),
    ("a wait for the device", lambda loss: dlscratch.cuda.synchronize()),
    ("a copy from the host", lambda loss: dlscratch.tensor([1.0]).to("gpu")),
])
def test_what_cuda_refuses_inside_a_capture_is_refused_by_its_name(stand_in, what, inside):
    model, optimizer = build("MLP, SGD with momentum")
    x, y = on_gpu(np.ones((5, 8), np.float32)), on_gpu(np.zeros(5, np.int64))
    step(model, optimizer, x, y)
    graph = dlscratch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match=f"^cudaErrorStreamCaptureUnsupported: .*\\({re.escape(what)}"):
        with dlscratch.cuda.graph(graph):
            inside(step(model, optimizer, x, y))
    with pytest.raises(RuntimeError, match="nothing captured yet"):
        graph.replay()  # a failed capture keeps nothing
    with dlscratch.cuda.graph(graph):  # and the graph can capture again
        step(model, optimizer, x, y)
    graph.replay()


@pytest.mark.parametrize("make", [optim.Adam, optim.RMSprop])
def test_an_optimizer_that_counts_steps_on_the_host_is_refused_inside_a_capture(stand_in, make):
    dlscratch.manual_seed(0)
    model = mlp().to("gpu")
    optimizer = make(model.parameters(), lr=0.01)
    x, y = on_gpu(np.ones((5, 8), np.float32)), on_gpu(np.zeros(5, np.int64))
    step(model, optimizer, x, y)
    with pytest.raises(RuntimeError, match="step inside a CUDA graph capture: its step is a number on the host"):
        with dlscratch.cuda.graph(dlscratch.cuda.CUDAGraph()):
            step(model, optimizer, x, y)


def test_the_stand_in_refuses_the_legacy_stream_and_work_on_another_stream(stand_in):
    cupy = stand_in
    with pytest.raises(cupy.cuda.runtime.CUDARuntimeError, match="^cudaErrorStreamCaptureUnsupported"):
        cupy.cuda.get_current_stream().begin_capture()  # the legacy default stream
    stream = cupy.cuda.Stream(non_blocking=True)
    a = cupy.ones(3, dtype=np.float32)
    stream.begin_capture()
    with pytest.raises(cupy.cuda.runtime.CUDARuntimeError, match="^cudaErrorStreamCaptureImplicit"):
        a + 1  # issued on the current stream, the legacy one, not the capturing one
    graph = stream.end_capture()
    assert len(graph) == 0


def test_a_graph_replays_on_the_memory_it_captured(stand_in):
    cupy = stand_in
    a = cupy.arange(4, dtype=np.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        b = a * 2
        a += 1
        graph = stream.end_capture()
    assert np.array_equal(a.get(), [0, 1, 2, 3])  # the capture ran nothing
    assert np.isnan(b.get()).all()  # what it made holds no value yet
    graph.launch()
    assert np.array_equal(b.get(), [0, 2, 4, 6]) and np.array_equal(a.get(), [1, 2, 3, 4])
    graph.launch()
    assert np.array_equal(b.get(), [2, 4, 6, 8]) and np.array_equal(a.get(), [2, 3, 4, 5])


def test_without_a_gpu_capturing_is_refused_naming_why(monkeypatch):
    monkeypatch.setattr(backend, "gpu_available", lambda: False)
    monkeypatch.setattr(backend, "gpu_unavailable_reason", lambda: "CuPy is not installed")
    with pytest.raises(RuntimeError, match="capturing needs a GPU: CuPy is not installed"):
        dlscratch.cuda.CUDAGraph().capture_begin()
    with pytest.raises(TypeError, match="expected a dlscratch.cuda.CUDAGraph"):
        dlscratch.cuda.graph(object())


def test_the_reference_paths_label_check_reads_the_host_so_its_capture_is_refused(stand_in):
    model, optimizer = build("MLP, SGD with momentum")
    x, y = on_gpu(np.ones((5, 8), np.float32)), on_gpu(np.zeros(5, np.int64))
    with dlscratch.reference():
        step(model, optimizer, x, y)
        with pytest.raises(RuntimeError, match=r"^cudaErrorStreamCaptureUnsupported: .*\(a read on the host \(int\)"):
            with dlscratch.cuda.graph(dlscratch.cuda.CUDAGraph()):
                step(model, optimizer, x, y)


def squares_step(model, optimizer, x):
    optimizer.zero_grad(set_to_none=False)
    (model(x) ** 2).mean().backward()
    optimizer.step()


def test_the_reference_path_captures_a_step_that_reads_nothing_on_the_host(stand_in):
    """Its optimizer makes new state arrays at each step; inside a capture they go into the arrays held so far."""
    x = on_gpu(np.linspace(-1, 1, 40, dtype=np.float32).reshape(5, 8))
    with dlscratch.reference():
        eager, eager_optimizer = build("MLP, SGD with momentum")
        for _ in range(STEPS + 1):
            squares_step(eager, eager_optimizer, x)
        model, optimizer = build("MLP, SGD with momentum")
        squares_step(model, optimizer, x)
        graph = dlscratch.cuda.CUDAGraph()
        with dlscratch.cuda.graph(graph):
            squares_step(model, optimizer, x)
        for _ in range(STEPS):
            graph.replay()
    for p, q in zip(eager.parameters(), model.parameters()):
        assert np.array_equal(host(p), host(q))
