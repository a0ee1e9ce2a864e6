"""The steps the "graphs" suite captures (``bench/graphs.py``), each run twice from the same weights: eagerly, and
as a warm-up, one capture and a replay per new input copied into the captured tensors; and PyTorch's same steps,
eager and captured (``torch.cuda.graph``, after a warm-up on a side stream, as PyTorch's documentation does it).

Each dlscratch builder returns ``(eager results, replayed results, same?, eager call, replay)``: the results are
host arrays, one per input (a training step's loss; a forward and backward's gradients), and ``same`` says whether
the two models' parameters agree bit for bit at the end.
"""

import numpy

from .. import backend, nn
from ..amp import autocast
from ..cuda.graphs import CUDAGraph, graph
from ..engine.creation import manual_seed
from ..engine.grad_mode import no_grad
from ..engine.tensor import Tensor
from ..nn.functional import cross_entropy


def training(build, optimizer_of, shape, classes, steps, mixed=False):
    """Training steps of ``build()`` by ``optimizer_of``, on ``steps + 1`` batches of ``shape`` with labels below
    ``classes`` (the forward under float16 ``autocast`` where ``mixed``); the results are the losses."""
    rng = numpy.random.default_rng(shape[0])
    inputs = [(backend.to_gpu(rng.random(shape, dtype=numpy.float32)),
               backend.to_gpu(rng.integers(0, classes, size=shape[0]))) for _ in range(steps + 1)]

    def make():
        model = build().to("gpu")
        return model, optimizer_of(model.parameters())

    def step(model, optimizer, x, y):
        optimizer.zero_grad(set_to_none=False)
        with autocast("cuda", enabled=mixed):
            loss = cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    def results(loss):
        return backend.to_cpu(loss.data)

    return _eager_and_replayed(make, step, inputs, results)


def lstm_passes(sizes, batch, steps):
    """Forward and backward of ``nn.LSTM(input_size, hidden_size)`` over ``T`` steps (``sizes``), as the lstm suite
    times them (``model(x)[0].sum().backward()``), on ``steps + 1`` sequences; the results are the gradients."""
    input_size, hidden_size, length = sizes
    rng = numpy.random.default_rng(batch)
    inputs = [(backend.to_gpu(rng.standard_normal((length, batch, input_size), dtype=numpy.float32)),)
              for _ in range(steps + 1)]

    def make():
        return (nn.LSTM(input_size, hidden_size).to("gpu"),)

    def passes(model, x):
        model.zero_grad()  # the gradients made anew, in the graph's memory when captured, as PyTorch's examples do
        model(x)[0].sum().backward()
        return model

    def results(model):
        return [backend.to_cpu(p.grad.data) for p in model.parameters()]

    return _eager_and_replayed(make, passes, inputs, results)


def _eager_and_replayed(make, step, inputs, results):
    """``step(*state, *tensors)`` on each input: by one ``make()`` eagerly, by another replayed from a graph."""
    manual_seed(0)
    eager = make()
    manual_seed(0)
    captured = make()
    manual_seed(1)  # the same random numbers (dropout's masks) for both runs
    eager_results = [results(step(*eager, *(Tensor(a) for a in arrays))) for arrays in inputs]
    manual_seed(1)
    static = [Tensor(a.copy()) for a in inputs[0]]
    replayed = [results(step(*captured, *static))]  # the warm-up
    g = CUDAGraph()
    with graph(g):
        out = step(*captured, *static)
    for arrays in inputs[1:]:
        with no_grad():
            for tensor, a in zip(static, arrays):
                tensor.copy_(Tensor(a))
        g.replay()
        replayed.append(results(out))
    same = all(numpy.array_equal(backend.to_cpu(p.data), backend.to_cpu(q.data))
               for p, q in zip(eager[0].parameters(), captured[0].parameters()))
    return eager_results, replayed, same, (lambda: step(*eager, *static)), g.replay


def torch_pair(make, step, pt):
    """``{"PyTorch eager": call, "PyTorch replay": call}``: ``step(*make())`` eagerly and replayed from PyTorch's
    own CUDA graph, both synchronized by ``pt``; without the replay, and why, where PyTorch refuses the capture."""
    import torch

    eager, captured = make(), make()
    calls = {"PyTorch eager": pt.timed(lambda: step(*eager))}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(*captured)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            step(*captured)
    except RuntimeError as refusal:
        print(f"PyTorch refused to capture the step: {refusal}")
        return calls
    calls["PyTorch replay"] = pt.timed(g.replay)
    return calls
