"""Suite "graphs": what capturing a training step in a CUDA graph gives on this GPU (or on the strict stand-in).

First the rules that decide what can be captured, checked against the CuPy in use: a GEMM (cuBLAS) and a legacy
random draw (cuRAND) are refused inside a capture by CuPy 14, which is why no Linear, Conv2d or LSTM step captures
yet. Then a training step without GEMMs, a stack of per-feature affine layers (``y = tanh(x * w + b)``, so each
layer is a few elementwise launches), with SGD and momentum and with capturable Adam: its replays must give the
eager steps' losses and weights bit for bit, and are timed against them (medians of interleaved repeats,
synchronized). On the stand-in the times say nothing about a GPU; the launch counts do.
"""

import numpy

from .. import backend, nn, optim
from ..cuda.graphs import CUDAGraph, graph
from ..engine.creation import manual_seed
from ..engine.grad_mode import no_grad
from ..engine.tensor import Tensor
from ..operations.loss import mse_loss
from .timing import format_table, measure_interleaved, median

FEATURES, LAYERS, BATCH = 256, 8, 64
HEADERS = ["check or step", "result"]


class Affine(nn.Module):
    """``tanh(x * weight + bias)``, feature by feature: a layer with no matrix product."""

    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(numpy.full(features, 0.9, numpy.float32))
        self.bias = nn.Parameter(numpy.zeros(features, numpy.float32))

    def forward(self, x):
        return (x * self.weight + self.bias).tanh()


OPTIMIZERS = {
    "SGD with momentum": lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9),
    "capturable Adam": lambda ps: optim.Adam(ps, lr=1e-3, capturable=True),
}


def refusals():
    """``[(what, CuPy's answer)]`` for a GEMM and a legacy draw inside a capture."""
    xp = backend.cupy
    a = xp.ones((4, 4), dtype=numpy.float32)
    rows = []
    for what, call in (("a GEMM (cuBLAS)", lambda: a @ a), ("a legacy draw (cuRAND)", lambda: xp.random.rand(4))):
        stream = xp.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            try:
                call()
                answer = "captured"
            except NotImplementedError as error:
                answer = f"refused: {error}"
            stream.end_capture()
        rows.append((what, answer))
    return rows


def training(name, steps):
    """``(eager losses, replayed losses, same weights?, eager step, replayed step, ledgers)`` of one optimizer."""
    data = [numpy.random.default_rng(i).standard_normal((BATCH, FEATURES)).astype(numpy.float32)
            for i in range(steps + 1)]
    target = Tensor(backend.to_gpu(numpy.zeros((BATCH, FEATURES), numpy.float32)))
    models = []
    for _ in range(2):
        manual_seed(0)
        model = nn.Sequential(*[Affine(FEATURES) for _ in range(LAYERS)]).to("gpu")
        models.append((model, OPTIMIZERS[name](model.parameters())))

    def step(model, optimizer, x):
        optimizer.zero_grad(set_to_none=False)
        loss = mse_loss(model(x), target)
        loss.backward()
        optimizer.step()
        return loss

    (eager, eager_optimizer), (model, optimizer) = models
    eager_losses = [float(step(eager, eager_optimizer, Tensor(backend.to_gpu(x)))) for x in data]
    static_x = Tensor(backend.to_gpu(data[0]))
    replayed = [float(step(model, optimizer, static_x))]  # the warm-up
    g = CUDAGraph()
    with graph(g):
        static_loss = step(model, optimizer, static_x)
    for x in data[1:]:
        with no_grad():
            static_x.copy_(Tensor(backend.to_gpu(x)))
        g.replay()
        replayed.append(float(static_loss))
    same = all(numpy.array_equal(backend.to_cpu(p.data), backend.to_cpu(q.data))
               for p, q in zip(eager.parameters(), model.parameters()))
    return eager_losses, replayed, same, (lambda: step(eager, eager_optimizer, static_x)), g.replay


def run(repeat=None, quick=False):
    """Check the rules, check and time the captured step; print the table; return ``(headers, rows)``."""
    if not backend.gpu_available():
        print(f"graphs: no GPU ({backend.gpu_unavailable_reason()}); run it on a GPU, or with DLSCRATCH_STRICT_GPU=1")
        return HEADERS, []
    repeat = repeat or (3 if quick else 7)
    steps = 3 if quick else 20
    where = "the strict stand-in (its times say nothing about a GPU)" if backend.strict_stand_in() else "the GPU"
    print(f"graphs: a {LAYERS}-layer per-feature affine network, batch {BATCH} x {FEATURES}, on {where}; median of "
          f"{repeat} interleaved repeats")
    rows = [list(row) for row in refusals()]
    for name in OPTIMIZERS:
        eager_losses, replayed, same, eager_step, replay = training(name, steps)
        rows.append([f"{name}: {steps} replays = eager steps", "bit for bit" if replayed == eager_losses and same
                     else "DIFFERENT"])
        if backend.strict_stand_in():
            with backend.ledger() as eager_book:
                eager_step()
            with backend.ledger() as replay_book:
                replay()
            rows.append([f"{name}: launches per step", f"{eager_book.launches} eager, {replay_book.launches} replayed "
                         f"({replay_book.by_site()[0][2]})"])
        times = measure_interleaved({"eager": eager_step, "replay": replay}, repeat=repeat,
                                    number=1 if quick else None, pause=0 if quick else 0.1)
        eager_ms, replay_ms = (median(times[k]) * 1e3 for k in ("eager", "replay"))
        rows.append([f"{name}: ms per step", f"{eager_ms:.3f} eager, {replay_ms:.3f} replayed "
                     f"({eager_ms / replay_ms:.1f}x)"])
    print(format_table(HEADERS, rows))
    return HEADERS, rows
