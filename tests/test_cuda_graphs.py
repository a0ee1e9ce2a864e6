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


def qiita_cnn():
    """The Qiita article's CNN (``bench/cnn.py``), on 8x8 images."""
    return nn.Sequential(nn.Conv2d(1, 10, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(160, 100), nn.ReLU(), nn.Linear(100, 10))


def mlp_with_dropout():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 4))


MODELS = {
    "MLP, SGD with momentum": (mlp, lambda p: optim.SGD(p, lr=0.1, momentum=0.9), (5, 8), 4),
    "CNN with pooling, SGD": (cnn, lambda p: optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4), (4, 1, 8, 8), 3),
    "MLP, Adadelta": (mlp, lambda p: optim.Adadelta(p, lr=1.0), (5, 8), 4),
    "Qiita CNN, capturable Adam": (qiita_cnn, lambda p: optim.Adam(p, lr=1e-3, capturable=True), (3, 1, 8, 8), 10),
    "MLP, capturable RMSprop": (mlp, lambda p: optim.RMSprop(p, lr=0.01, momentum=0.5, capturable=True), (5, 8), 4),
    "MLP with dropout, SGD": (mlp_with_dropout, lambda p: optim.SGD(p, lr=0.1), (5, 8), 4),
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
    with pytest.raises(RuntimeError, match=r"its step is a number on the host.*capturable=True"):
        with dlscratch.cuda.graph(dlscratch.cuda.CUDAGraph()):
            step(model, optimizer, x, y)


def test_a_step_that_would_make_the_optimizers_state_inside_a_capture_is_refused(stand_in):
    """Without a warm-up the graph would replay the first step (momentum buffer = gradient) every time."""
    model, optimizer = build("MLP, SGD with momentum")
    x, y = on_gpu(np.ones((5, 8), np.float32)), on_gpu(np.zeros(5, np.int64))
    with dlscratch.no_grad():
        model(x)  # the forward's constants exist; the optimizer's state does not
    with pytest.raises(RuntimeError, match=r"would make the state of parameter 0 .*warm up first"):
        with dlscratch.cuda.graph(dlscratch.cuda.CUDAGraph()):
            step(model, optimizer, x, y)
    assert not optimizer.state


def test_control_flow_on_a_value_of_the_step_is_refused_as_a_read_on_the_host(stand_in):
    model, optimizer = build("MLP, SGD with momentum")
    x, y = on_gpu(np.ones((5, 8), np.float32)), on_gpu(np.zeros(5, np.int64))
    step(model, optimizer, x, y)
    with pytest.raises(RuntimeError, match=r"^cudaErrorStreamCaptureUnsupported: .*\(a read on the host \(bool\)"):
        with dlscratch.cuda.graph(dlscratch.cuda.CUDAGraph()):
            if step(model, optimizer, x, y) > 1:
                pass


def test_a_capturable_optimizers_count_is_saved_and_loaded_on_the_device(stand_in):
    model, optimizer = build("Qiita CNN, capturable Adam")
    x, y = on_gpu(np.ones((3, 1, 8, 8), np.float32)), on_gpu(np.zeros(3, np.int64))
    for _ in range(3):
        step(model, optimizer, x, y)
    saved = optimizer.state_dict()
    assert float(saved["state"][0]["step"]) == 3.0
    other = optim.Adam(model.parameters(), lr=1e-3)  # not capturable: the count comes back as an integer
    other.load_state_dict({**saved, "param_groups": [{**saved["param_groups"][0], "capturable": False}]})
    assert type(other.state[model[0].weight]["step"]) is int and other.state[model[0].weight]["step"] == 3
    optimizer.load_state_dict(other.state_dict() | {"param_groups": saved["param_groups"]})
    count = optimizer.state[model[0].weight]["step"]
    assert backend.is_gpu_array(count) and count.dtype == np.float32 and count.shape == ()


def test_a_replay_is_one_graph_launch_in_the_ledger(stand_in):
    model, optimizer = build("MLP, SGD with momentum")
    x, y = on_gpu(np.ones((5, 8), np.float32)), on_gpu(np.zeros(5, np.int64))
    step(model, optimizer, x, y)
    with backend.ledger() as eager:
        step(model, optimizer, x, y)
    graph = dlscratch.cuda.CUDAGraph()
    with backend.ledger() as capturing:
        with dlscratch.cuda.graph(graph):
            step(model, optimizer, x, y)
    with backend.ledger() as replaying:
        graph.replay()
    assert capturing.launches == 0  # a capture launches nothing
    assert (replaying.launches, replaying.graphs, replaying.kernels) == (1, 1, 0)
    (_, _, what, _), = replaying.by_site()
    assert what.startswith(f"CUDA graph of {eager.launches} nodes (") and f"{eager.kernels} kernels" in what


def test_random_numbers_in_a_capture_advance_at_each_replay(stand_in):
    """CuPy's Generator keeps its state on the device, so a replay draws the next numbers, as eager draws do."""
    cupy = stand_in
    eager = cupy.random.default_rng(7)
    expected = [eager.random(4, dtype=np.float32).get() for _ in range(3)]
    rng = cupy.random.default_rng(7)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        drawn = rng.random(4, dtype=np.float32)
        graph = stream.end_capture()
    assert np.array_equal(rng.random(4, dtype=np.float32).get(), expected[0])  # the capture drew nothing
    rng = cupy.random.default_rng(7)  # the captured draw reads the first generator's state, as on a GPU
    replays = []
    for _ in range(2):
        graph.launch()
        replays.append(drawn.get().copy())
    assert np.array_equal(replays[0], expected[1]) and np.array_equal(replays[1], expected[2])


@pytest.mark.parametrize("library, call", [
    ("cuBLAS", lambda cupy, a: a @ a),
    ("cuBLAS", lambda cupy, a: cupy.matmul(a, a)),
    ("cuRAND", lambda cupy, a: cupy.random.rand(3)),
])
def test_cupy_refuses_cublas_and_curand_inside_a_capture_and_so_does_the_stand_in(stand_in, library, call):
    cupy = stand_in
    a = cupy.ones((3, 3), dtype=np.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        with pytest.raises(NotImplementedError, match=f"^calling {library} API during stream capture is currently "
                                                      "unsupported$"):
            call(cupy, a)
        a += 1  # the capture is still valid: CuPy refused before CUDA saw the call
        graph = stream.end_capture()
    graph.launch()
    assert np.array_equal(a.get(), np.full((3, 3), 2, np.float32))


def test_a_users_broadcast_product_and_its_backward_capture_and_replay_the_eager_numbers(stand_in):
    """``x @ w`` with ``x: (2, 5, 8)`` and ``w: (8, 4)``: CuPy makes the forward and the input's gradient as
    broadcast batches, which it refuses inside a capture; dlscratch makes CuPy's call itself (``cuda/blas.py``)."""
    w = on_gpu(np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4)).requires_grad_()
    x = on_gpu(np.linspace(0, 2, 80, dtype=np.float32).reshape(2, 5, 8)).requires_grad_()

    def grads():
        x.grad = w.grad = None
        ((x @ w) ** 2).sum().backward()
        return x.grad, w.grad

    eager = [backend.to_cpu(g.data) for g in grads()]
    graph = dlscratch.cuda.CUDAGraph()
    with dlscratch.cuda.graph(graph):
        captured = grads()
    graph.replay()
    assert all(np.array_equal(e, backend.to_cpu(c.data)) for e, c in zip(eager, captured))
    assert np.any(eager[0] != 0) and np.any(eager[1] != 0)


def test_the_stand_in_refuses_the_legacy_stream_and_work_on_another_stream(stand_in):
    """CUDA cannot capture the legacy default stream, and refuses its work while a blocking stream captures; other
    work on another stream it runs outside the graph, which the stand-in, capturing one stream, refuses by name."""
    cupy = stand_in
    with pytest.raises(cupy.cuda.runtime.CUDARuntimeError, match="^cudaErrorStreamCaptureUnsupported"):
        cupy.cuda.get_current_stream().begin_capture()  # the legacy default stream
    a = cupy.ones(3, dtype=np.float32)
    for stream, refusal, message in (
            (cupy.cuda.Stream(), cupy.cuda.runtime.CUDARuntimeError, "^cudaErrorStreamCaptureImplicit"),
            (cupy.cuda.Stream(non_blocking=True), NotImplementedError, "^work on another stream than the capturing")):
        stream.begin_capture()
        with pytest.raises(refusal, match=message):
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


def test_a_graph_keeps_the_cufft_plans_its_capture_may_run_on_until_it_is_reset(stand_in, monkeypatch):
    """A captured FFT runs on its cuFFT plan's memory; CuPy's plan cache frees a plan it drops (the stand-in's FFT
    is NumPy's and has no plans: a cache in CuPy's shape stands in for it here)."""
    import types
    import weakref

    class Plan:
        pass

    cache = [(("R2C", (2, 8, 8)), types.SimpleNamespace(plan=Plan()))]
    monkeypatch.setattr(stand_in.fft, "config", types.SimpleNamespace(get_plan_cache=lambda: list(cache)),
                        raising=False)
    plan = weakref.ref(cache[0][1].plan)
    x = dlscratch.ones(4).to("gpu")
    g = dlscratch.cuda.CUDAGraph()
    with dlscratch.cuda.graph(g):
        x.mul_(2)
    cache.clear()  # the cache drops the plan, as past its 16 plans
    assert plan() is not None, "the graph let the plan its replay runs on be freed"
    g.replay()
    g.reset()
    assert plan() is None, "a reset graph still holds the plan"


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


@pytest.mark.parametrize("name", ["MLP, SGD with momentum", "Qiita CNN, capturable Adam"])
def test_the_reference_path_captures_a_step_that_reads_nothing_on_the_host(stand_in, name):
    """Its optimizer makes new state arrays at each step; inside a capture they go into the arrays held so far."""
    shape = MODELS[name][2]
    x = on_gpu(np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape))
    with dlscratch.reference():
        eager, eager_optimizer = build(name)
        for _ in range(STEPS + 1):
            squares_step(eager, eager_optimizer, x)
        model, optimizer = build(name)
        squares_step(model, optimizer, x)
        graph = dlscratch.cuda.CUDAGraph()
        with dlscratch.cuda.graph(graph):
            squares_step(model, optimizer, x)
        for _ in range(STEPS):
            graph.replay()
    for p, q in zip(eager.parameters(), model.parameters()):
        assert np.array_equal(host(p), host(q))
    for state, other in zip(eager_optimizer.state.values(), optimizer.state.values()):
        assert all(np.array_equal(backend.to_cpu(v), backend.to_cpu(other[k])) for k, v in state.items())
