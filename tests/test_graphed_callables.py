"""``dlscratch.cuda.make_graphed_callables`` (PyTorch's name), checked on the strict stand-in, which captures as CUDA
does: a graphed module trained with an eager loss and optimizer gives the eager training's losses and weights bit
for bit, a graphed function gives the eager gradients, and what a graph cannot replay is refused by its rule."""

import numpy as np
import pytest

import dlscratch
import dlscratch.nn.functional as F
from dlscratch import nn, optim
from dlscratch.cuda import make_graphed_callables
from dlscratch.engine import switch

STEPS = 5


@pytest.fixture(autouse=True)
def fast_path():
    """The fast path checks labels on the device; the reference path's cross-entropy reads them on the host."""
    with switch.fast_path():
        yield


def on_gpu(array, requires_grad=False):
    return dlscratch.tensor(array).to("gpu").requires_grad_(requires_grad)


def host(t):
    return t.detach().to("cpu").numpy()


def batches(n=STEPS, batch=5, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((batch, 8)).astype(np.float32), rng.integers(0, 4, batch)) for _ in range(n)]


def mlp():
    dlscratch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to("gpu")


def train(forward, parameters, data):
    """SGD with momentum, eager; ``forward`` may be graphed. Returns the losses, read after each step."""
    optimizer = optim.SGD(parameters, lr=0.1, momentum=0.9)
    losses = []
    for x, y in data:
        optimizer.zero_grad()
        loss = F.cross_entropy(forward(on_gpu(x)), on_gpu(y))
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses


def test_a_graphed_mlp_trains_as_the_eager_one_bit_for_bit(stand_in):
    data = batches()
    eager = mlp()
    eager_losses = train(eager, eager.parameters(), data)

    model = mlp()
    before = [host(p) for p in model.parameters()]
    assert make_graphed_callables(model, (on_gpu(data[0][0]),)) is model
    assert all(np.array_equal(b, host(p)) for b, p in zip(before, model.parameters())), "graphing trained the model"
    assert all(p.grad is None for p in model.parameters()), "the warm-up or the capture left gradients behind"
    assert type(model(on_gpu(data[0][0])).grad_fn).__name__ == "GraphedBackward"
    assert train(model, model.parameters(), data) == eager_losses
    for p, q in zip(eager.parameters(), model.parameters()):
        assert np.array_equal(host(p), host(q))


def two_outputs(a, b):
    return (a @ b).tanh(), a.exp() * b.sum()


def test_a_graphed_function_of_two_tensors_gives_the_eager_gradients(stand_in):
    rng = np.random.default_rng(1)
    values = [(rng.standard_normal((3, 4)), rng.standard_normal((4, 2))) for _ in range(3)]
    w1, w2 = on_gpu(rng.standard_normal((3, 2))), on_gpu(rng.standard_normal((3, 4)))
    graphed = make_graphed_callables(two_outputs, (on_gpu(values[0][0], True), on_gpu(values[0][1], True)))
    for av, bv in values[1:]:  # new tensors each call: copied into the captured ones
        results = []
        for f in (two_outputs, graphed):
            a, b = on_gpu(av, True), on_gpu(bv, True)
            y1, y2 = f(a, b)
            ((y1 * w1).sum() + (y2 * w2).sum()).backward()
            results.append([host(t) for t in (y1, y2, a.grad, b.grad)])
        for eager, replayed in zip(*results):
            assert np.array_equal(eager, replayed)


def test_an_input_the_outputs_do_not_use_is_refused_unless_allowed(stand_in):
    a, b = on_gpu(np.ones(3), True), on_gpu(np.ones(3), True)
    with pytest.raises(RuntimeError, match="argument 1 .* the outputs do not depend on it; pass allow_unused_input"):
        make_graphed_callables(lambda a, b: a * 2, (a, b))
    graphed = make_graphed_callables(lambda a, b: a * 2, (a, b), allow_unused_input=True)
    x, y = on_gpu([1.0, 2.0, 3.0], True), on_gpu(np.ones(3), True)
    graphed(x, y).sum().backward()
    assert np.array_equal(host(x.grad), [2, 2, 2]) and y.grad is None


@pytest.mark.parametrize("bad, message", [
    (lambda: on_gpu(np.ones((3, 8), np.float32)), r"argument 0 has shape \(3, 8\), but the graph was captured with "
                                                  r"\(5, 8\): a CUDA graph replays on the fixed shapes and memory"),
    (lambda: on_gpu(np.ones((5, 8))).double(), "argument 0 has dtype float64, but the graph was captured with float32"),
    (lambda: dlscratch.ones(5, 8, device="cpu"), r"argument 0 is on the CPU, but a CUDA graph runs on the GPU"),
    (lambda: on_gpu(np.ones((5, 8), np.float32), True), "argument 0 has requires_grad True, but the graph was"),
])
def test_an_argument_unlike_the_sample_is_refused_by_the_rule(stand_in, bad, message):
    model = mlp()
    make_graphed_callables(model, (on_gpu(np.ones((5, 8), np.float32)),))
    with pytest.raises(RuntimeError, match=message):
        model(bad())


def test_sample_args_or_a_module_on_the_cpu_are_refused_naming_why(stand_in):
    with pytest.raises(RuntimeError, match="sample arg 0 is on the CPU, but CUDA graphs capture GPU work"):
        make_graphed_callables(lambda x: x * 2, (dlscratch.ones(5, 8, device="cpu"),))
    dlscratch.manual_seed(0)
    with pytest.raises(RuntimeError, match="parameter '0.weight' is on the CPU"):
        make_graphed_callables(nn.Sequential(nn.Linear(8, 4)).to("cpu"), (on_gpu(np.ones((5, 8), np.float32)),))


def test_a_module_with_a_hook_is_refused(stand_in):
    model = mlp()
    model[0].register_forward_pre_hook(lambda module, args: None)
    with pytest.raises(RuntimeError, match=r"modules must have no hooks when they are graphed \(0 has some\)"):
        make_graphed_callables(model, (on_gpu(np.ones((5, 8), np.float32)),))


def test_a_tuple_of_two_modules_trains_as_the_eager_pair_bit_for_bit(stand_in):
    data = batches()
    eager = mlp()
    eager_losses = train(eager, eager.parameters(), data)

    model = mlp()
    first, second = model[:2], model[2]
    samples = ((on_gpu(data[0][0]),), (on_gpu(np.zeros((5, 16), np.float32), True),))
    graphed = make_graphed_callables((first, second), samples)
    assert graphed == (first, second)
    assert train(lambda x: second(first(x)), model.parameters(), data) == eager_losses
    for p, q in zip(eager.parameters(), model.parameters()):
        assert np.array_equal(host(p), host(q))


def test_a_graphed_module_in_eval_mode_runs_its_forward_eagerly(stand_in):
    model, eager = mlp(), mlp()
    make_graphed_callables(model, (on_gpu(np.ones((5, 8), np.float32)),))
    x = on_gpu(np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 8))  # a batch size the graph was not captured for
    model.eval()
    out = model(x)
    assert type(out.grad_fn).__name__ != "GraphedBackward"
    assert np.array_equal(host(out), host(eager(x)))
    model.train()
    with pytest.raises(RuntimeError, match="fixed shapes"):
        model(x)
