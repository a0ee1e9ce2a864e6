"""PyTorch's two ways of using CUDA graphs, as its CUDA semantics notes show them, written in PyTorch's spelling
with only the import changed (``import dlscratch as torch``): a whole training step captured after a warm-up on a
side stream (``torch.cuda.Stream``, ``wait_stream``, ``torch.cuda.stream``, ``torch.cuda.graph``), and parts of a
network graphed by ``make_graphed_callables`` around Python control flow that reads the device; then both under
mixed precision, as the notes' AMP section says (``torch.autocast``, ``torch.amp.GradScaler``; the scaler's step
stays outside the graphs, and a graphed callable takes autocast without its cache). On the strict stand-in, which
captures as CUDA does, and on a real GPU where there is one, each program's losses and weights equal those of the
same program run eagerly, bit for bit; the dropout masks of each replay are those of the eager step, and a
gradient's overflow halves the scale that the next replay multiplies by."""

import contextlib
from itertools import chain

import numpy as np
import pytest

import dlscratch as torch
from dlscratch import backend
from dlscratch.engine import switch

N, D_IN, H, D_OUT, STEPS = 16, 12, 8, 3, 6


@pytest.fixture(autouse=True, params=["stand-in", pytest.param("gpu", marks=pytest.mark.gpu)])
def on_a_gpu(request):
    """The strict stand-in, then CuPy on a real GPU (skipped without one); on the fast path, whose losses keep
    their targets on the device (a capture refuses the reference path's host read)."""
    if request.param == "gpu":
        if not backend.gpu_available() or backend.strict_stand_in():
            pytest.skip(f"no real GPU: {backend.gpu_unavailable_reason() or 'the strict stand-in plays it'}")
        backend.use("gpu")
        place = contextlib.nullcontext()
    else:
        place = backend.on_the_stand_in()
    try:
        with place, switch.fast_path():
            yield request.param
    finally:
        if request.param == "gpu":
            backend.use("numpy")


def weights(*modules):
    return [p.detach().cpu().numpy() for m in modules for p in m.parameters()]


def whole_network(captured):
    """Warm up on a side stream, capture forward, backward and step into one graph, replay it on each batch."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(D_IN, H), torch.nn.Dropout(p=0.25), torch.nn.Linear(H, D_OUT),
                                torch.nn.Dropout(p=0.1)).cuda()
    loss_fn = torch.nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    static_input = torch.randn(N, D_IN, device="cuda")
    static_target = torch.randn(N, D_OUT, device="cuda")

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # the warm-up makes the optimizer's state before the capture
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(static_input), static_target).backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)

    if captured:
        g = torch.cuda.CUDAGraph()
        optimizer.zero_grad(set_to_none=True)  # the captured backward makes the .grad tensors, in the graph's pool
        with torch.cuda.graph(g):
            static_loss = loss_fn(model(static_input), static_target)
            static_loss.backward()
            optimizer.step()

    inputs = [torch.rand_like(static_input) for _ in range(STEPS)]
    targets = [torch.rand_like(static_target) for _ in range(STEPS)]
    losses = []
    for data, target in zip(inputs, targets):
        if captured:
            static_input.copy_(data)
            static_target.copy_(target)
            g.replay()  # forward, backward and step; no zero_grad: the replay writes the .grad tensors afresh
            losses.append(static_loss.item())
        else:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(data), target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses, weights(model)


def partial_network(graphed):
    """Three Linear layers, each graphed on its own; which of the last two runs depends on a value read on the
    host, outside every graph."""
    torch.manual_seed(1)
    first, second, third = (torch.nn.Linear(*sizes).cuda() for sizes in ((D_IN, H), (H, D_OUT), (H, D_OUT)))
    loss_fn = torch.nn.MSELoss()
    optimizer = torch.optim.SGD(chain(first.parameters(), second.parameters(), third.parameters()), lr=0.1)
    x = torch.randn(N, D_IN, device="cuda")
    h = torch.randn(N, H, device="cuda", requires_grad=True)
    layers = (first, second, third)
    if graphed:
        layers = (torch.cuda.make_graphed_callables(first, (x,)), torch.cuda.make_graphed_callables(second, (h,)),
                  torch.cuda.make_graphed_callables(third, (h,)))

    inputs = [torch.randn_like(x) for _ in range(STEPS)]
    targets = [torch.randn(N, D_OUT, device="cuda") for _ in range(STEPS)]
    losses, branches = [], []
    for data, target in zip(inputs, targets):
        optimizer.zero_grad(set_to_none=True)
        hidden = layers[0](data)
        branch = 1 if hidden.sum().item() > 0 else 2
        loss = loss_fn(layers[branch](hidden), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        branches.append(branch)
    return losses, branches, weights(first, second, third)


def batches(static_input, static_target, overflow_at=None):
    """``STEPS`` batches like the static ones; at ``overflow_at`` one whose float16 gradients overflow."""
    inputs = [torch.randn_like(static_input) * (3000.0 if step == overflow_at else 1.0) for step in range(STEPS)]
    return inputs, [torch.randn_like(static_target) for _ in range(STEPS)]


def mixed_whole_network(captured):
    """Forward, loss and scaled backward captured under autocast; the scaler's step and update stay eager, since
    ``scaler.step`` reads on the host whether a gradient overflowed."""
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(D_IN, H), torch.nn.ReLU(), torch.nn.Linear(H, D_OUT)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    static_input, static_target = torch.randn(N, D_IN, device="cuda"), torch.randn(N, D_OUT, device="cuda")

    def forward_backward():
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(static_input), static_target)
        scaler.scale(loss).backward()
        return loss

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # the warm-up makes the scaler's device scale and the optimizer's state
            optimizer.zero_grad(set_to_none=True)
            forward_backward()
            scaler.step(optimizer)
            scaler.update()
    torch.cuda.current_stream().wait_stream(side)
    if captured:
        g = torch.cuda.CUDAGraph()
        optimizer.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            static_loss = forward_backward()

    losses, stepped, scales = [], [], []
    for data, target in zip(*batches(static_input, static_target, overflow_at=2)):
        static_input.copy_(data)
        static_target.copy_(target)
        if captured:
            g.replay()
            loss = static_loss
        else:
            optimizer.zero_grad(set_to_none=True)
            loss = forward_backward()
        stepped.append(scaler.step(optimizer))
        scaler.update()
        losses.append(loss.item())
        scales.append(scaler.get_scale())
    return losses, stepped, scales, weights(model)


def mixed_partial_network(graphed):
    """Two Linear layers, each graphed under autocast with its cache off (PyTorch's rule), trained with a scaler."""
    torch.manual_seed(3)
    first, second = torch.nn.Linear(D_IN, H).cuda(), torch.nn.Linear(H, D_OUT).cuda()
    optimizer = torch.optim.SGD(chain(first.parameters(), second.parameters()), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    x, target = torch.randn(N, D_IN, device="cuda"), torch.randn(N, D_OUT, device="cuda")
    h = torch.randn(N, H, device="cuda", dtype=torch.float16, requires_grad=True)  # as the first layer's output
    layers = (first, second)
    with torch.autocast("cuda", dtype=torch.float16, cache_enabled=False):
        if graphed:
            layers = torch.cuda.make_graphed_callables((first, second), ((x,), (h,)))
        losses, stepped = [], []
        for data, label in zip(*batches(x, target, overflow_at=3)):
            optimizer.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(layers[1](layers[0](data).relu()), label)
            scaler.scale(loss).backward()
            stepped.append(scaler.step(optimizer))
            scaler.update()
            losses.append(loss.item())
    return losses, stepped, scaler.get_scale(), weights(first, second)


def test_pytorchs_whole_network_capture_gives_the_eager_training_bit_for_bit():
    eager_losses, eager_weights = whole_network(captured=False)
    losses, replayed_weights = whole_network(captured=True)
    assert len(set(eager_losses)) == STEPS, "each batch should give its own loss"
    assert losses == eager_losses
    assert all(np.array_equal(a, b) for a, b in zip(eager_weights, replayed_weights))


def test_pytorchs_partial_network_capture_gives_the_eager_training_bit_for_bit():
    eager_losses, eager_branches, eager_weights = partial_network(graphed=False)
    losses, branches, graphed_weights = partial_network(graphed=True)
    assert set(eager_branches) == {1, 2}, "the data should take both branches"
    assert (losses, branches) == (eager_losses, eager_branches)
    assert all(np.array_equal(a, b) for a, b in zip(eager_weights, graphed_weights))


@pytest.fixture
def overflows_are_quiet():
    """One batch overflows float16 on purpose: NumPy warns of it (on the stand-in), a GPU does not."""
    with np.errstate(over="ignore", invalid="ignore"):
        yield


def test_pytorchs_mixed_precision_captures_give_the_eager_training_bit_for_bit(overflows_are_quiet):
    eager = mixed_whole_network(captured=False)
    assert eager[1] == [True, True, False, True, True, True], "the third batch's gradients should overflow"
    assert eager[2] == [65536.0] * 2 + [32768.0] * 4
    replayed = mixed_whole_network(captured=True)
    assert replayed[:3] == eager[:3]
    assert all(np.array_equal(a, b) for a, b in zip(eager[3], replayed[3]))
    eager, graphed = mixed_partial_network(graphed=False), mixed_partial_network(graphed=True)
    assert eager[1].count(False) == 1 and eager[2] == 32768.0
    assert graphed[:3] == eager[:3]
    assert all(np.array_equal(a, b) for a, b in zip(eager[3], graphed[3]))


def test_graphed_callables_refuse_autocasts_cache():
    layer, x = torch.nn.Linear(D_IN, H).cuda(), torch.randn(N, D_IN, device="cuda")
    with torch.autocast("cuda"), pytest.raises(RuntimeError, match="cache_enabled=False"):
        torch.cuda.make_graphed_callables(layer, (x,))


def test_streams_and_events_have_pytorchs_rules():
    """A wait and a query inside a capture are what CUDA refuses; an event marks a stream's work for another."""
    side, main = torch.cuda.Stream(), torch.cuda.current_stream()
    assert main == torch.cuda.default_stream() and main.cuda_stream == 0 and side != main
    assert side.device == torch.device("cuda:0") and side.query()
    done = side.record_event()
    main.wait_event(done)
    assert done.query()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        torch.cuda.Event().elapsed_time(end)
    with torch.cuda.stream(side):
        assert torch.cuda.current_stream() == side and not torch.cuda.is_current_stream_capturing()
    assert torch.cuda.current_stream() == main
    g = torch.cuda.CUDAGraph()
    for breach in (lambda s: s.synchronize(), lambda s: s.query(), lambda s: s.record_event().query()):
        with pytest.raises(RuntimeError, match="^cudaErrorStreamCaptureUnsupported"):
            with torch.cuda.graph(g, stream=side):
                assert torch.cuda.is_current_stream_capturing() and torch.cuda.current_stream() == side
                breach(side)
    with torch.cuda.graph(g, stream=side):
        other = torch.cuda.Stream()
        other.wait_stream(side)  # a dependency, which a graph records
        other.query()  # another stream than the capturing one: CuPy captures in relaxed mode
    with pytest.raises(TypeError, match="dlscratch.cuda.Stream"):
        torch.cuda.graph(torch.cuda.CUDAGraph(), stream="side").__enter__()
    with pytest.raises(ValueError, match="expected a GPU"):
        torch.cuda.Stream(device="cpu")
