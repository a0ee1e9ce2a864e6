"""Suite "graphs": what capturing a training step in a CUDA graph gives on this GPU (or on the strict stand-in).

First the rules that decide what can be captured, checked against the CuPy in use: CuPy 14 refuses its own cuBLAS
calls (every GEMM) and its legacy random draws (cuRAND) inside a capture. Then the way around the first:
``dlscratch.cuda.blas`` makes CuPy's cuBLAS call itself, which a capture records, and its products must equal
CuPy's ``matmul`` bit for bit (2-D and batched, float16, float32 and float64, C-ordered, transposed and strided
operands), eagerly and replayed. Last, the training steps of the issue's targets, the MLP 784-1000-10 with SGD and
momentum at batch 1 and 8 and the same with capturable Adam: each step's replays must give the eager steps' losses
and weights bit for bit, and are timed against them and, where PyTorch has CUDA, against PyTorch's eager step and
PyTorch's own captured step (``torch.cuda.graph``), medians of interleaved repeats, each call synchronized. And
the precision suite's MLP in float32 and under float16 ``autocast``, eager and captured: what capturing the casts
changes. On the stand-in the times say nothing about a GPU; the launch counts do.
"""

import itertools

import numpy

from .. import backend, nn, optim
from ..amp import autocast
from ..cuda import blas
from ..cuda.graphs import CUDAGraph, graph
from ..engine.creation import manual_seed
from ..engine.grad_mode import no_grad
from ..engine.tensor import Tensor
from ..nn.functional import cross_entropy
from . import precision, torch_device
from .mlp import mlp, random_batch
from .timing import format_table, measure_interleaved, median

SIZES, BATCHES = (784, 1000, 10), (1, 8)
QUICK_SIZES, QUICK_BATCHES = (20, 16, 10), (4,)
LR, MOMENTUM = 0.01, 0.9
HEADERS = ["check or step", "result"]
OPTIMIZERS = {
    "SGD with momentum": lambda ps: optim.SGD(ps, lr=LR, momentum=MOMENTUM),
    "capturable Adam": lambda ps: optim.Adam(ps, lr=1e-3, capturable=True),
}
#: item 5 of the issue: float16 under autocast against float32, eager and captured, on the precision suite's MLP
#: and batch (``bench/precision.py``), with SGD and momentum and no GradScaler (it reads the host at each step)
PRECISION_MODEL, PRECISION_BATCH, PRECISION_QUICK_BATCH = "MLP 784-1024-1024-10", 64, 2
PRODUCT_SHAPES = ((3, 4, 5), (1, 784, 1000), (8, 1000, 10), (1000, 8, 784), (64, 200, 17), (9, 7, 1))


def refusals():
    """``[(what, CuPy's answer)]`` for a GEMM and a legacy draw inside a capture, and for dlscratch's GEMM."""
    xp = backend.cupy
    a = xp.ones((4, 4), dtype=numpy.float32)
    rows = []
    for what, call in (("a GEMM through CuPy (cuBLAS)", lambda: a @ a),
                       ("a legacy draw (cuRAND)", lambda: xp.random.rand(4)),
                       ("a GEMM through dlscratch.cuda.blas", lambda: blas.matmul(a, a))):
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


def products(shapes=PRODUCT_SHAPES):
    """``(checked, [the products whose bits differ from CuPy's matmul, eagerly or replayed])``."""
    xp, rng = backend.cupy, numpy.random.default_rng(0)
    cases = []
    for dtype, (m, k, n) in itertools.product((numpy.float16, numpy.float32, numpy.float64), shapes):
        def draw(*shape, dtype=dtype):
            return xp.asarray(rng.standard_normal(shape).astype(dtype))
        lefts = {"C": draw(m, k), "F": draw(k, m).T, "strided": draw(m, 2 * k)[:, ::2]}
        rights = {"C": draw(k, n), "F": draw(n, k).T}
        cases += [(f"{numpy.dtype(dtype).name} {m}x{k}x{n} {p}@{q}", lefts[p], rights[q])
                  for p, q in itertools.product(lefts, rights)]
        cases.append((f"{numpy.dtype(dtype).name} 3x({m}x{k}x{n}) batched", draw(3, m, k), draw(3, k, n)))
    g = CUDAGraph()
    with graph(g):
        captured = [blas.matmul(a, b) for _, a, b in cases]
    g.replay()
    backend.synchronize()
    differ = []
    for (name, a, b), replayed in zip(cases, captured):
        theirs = xp.matmul(a, b).get()
        if not numpy.array_equal(blas.matmul(a, b).get(), theirs):
            differ.append(f"{name} (eager)")
        if not numpy.array_equal(replayed.get(), theirs):
            differ.append(f"{name} (replayed)")
    return len(cases), differ


def training(build, optimizer_of, shape, classes, steps, mixed=False):
    """``(eager losses, replayed losses, same weights?, eager step, replay)``: two copies of ``build()`` trained
    by ``optimizer_of``, one eagerly, one replaying a captured step, on batches of ``shape`` with labels below
    ``classes``; the forward under float16 ``autocast`` where ``mixed``."""
    rng = numpy.random.default_rng(shape[0])
    batches = [(backend.to_gpu(rng.random(shape, dtype=numpy.float32)),
                backend.to_gpu(rng.integers(0, classes, size=shape[0]))) for _ in range(steps + 1)]
    models = []
    for _ in range(2):
        manual_seed(0)
        model = build().to("gpu")
        models.append((model, optimizer_of(model.parameters())))

    def step(model, optimizer, x, y):
        optimizer.zero_grad(set_to_none=False)
        with autocast(enabled=mixed):
            loss = cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    (eager, eager_optimizer), (model, optimizer) = models
    eager_losses = [float(step(eager, eager_optimizer, Tensor(x), Tensor(y))) for x, y in batches]
    static_x, static_y = (Tensor(a.copy()) for a in batches[0])
    replayed = [float(step(model, optimizer, static_x, static_y))]  # the warm-up
    g = CUDAGraph()
    with graph(g):
        static_loss = step(model, optimizer, static_x, static_y)
    for x, y in batches[1:]:
        with no_grad():
            static_x.copy_(Tensor(x))
            static_y.copy_(Tensor(y))
        g.replay()
        replayed.append(float(static_loss))
    same = all(numpy.array_equal(backend.to_cpu(p.data), backend.to_cpu(q.data))
               for p, q in zip(eager.parameters(), model.parameters()))
    return eager_losses, replayed, same, (lambda: step(eager, eager_optimizer, static_x, static_y)), g.replay


def torch_steps(name, sizes, batch, pt):
    """``{"PyTorch eager": step, "PyTorch replay": step}``: PyTorch's eager step and its captured step
    (``torch.cuda.graph``, after a warm-up on a side stream, as PyTorch's documentation does it) of the same model,
    both synchronized by ``pt``."""
    import torch

    def build():
        layers = []
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            layers += [torch.nn.Linear(n_in, n_out), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers[:-1]).to(pt.device)
        optimizer = (torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM) if name == "SGD with momentum"
                     else torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True))
        return model, optimizer

    x, y = (pt.tensor(a) for a in random_batch(sizes, batch))

    def step(model, optimizer):
        optimizer.zero_grad(set_to_none=False)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    eager, captured = build(), build()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(*captured)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step(*captured)
    return {"PyTorch eager": pt.timed(lambda: step(*eager)), "PyTorch replay": pt.timed(g.replay)}


def run(repeat=None, quick=False):
    """Check the rules and the products, check and time the captured steps; print the table; return
    ``(headers, rows)``."""
    if not backend.gpu_available():
        print(f"graphs: no GPU ({backend.gpu_unavailable_reason()}); run it on a GPU, or with DLSCRATCH_STRICT_GPU=1")
        return HEADERS, []
    repeat = repeat or (3 if quick else 7)
    steps = 3 if quick else 20
    sizes, batches = (QUICK_SIZES, QUICK_BATCHES) if quick else (SIZES, BATCHES)
    pt = torch_device.choose()
    where = "the strict stand-in (its times say nothing about a GPU)" if backend.strict_stand_in() else "the GPU"
    print(f"graphs: MLP {'-'.join(map(str, sizes))} on {where}; median of {repeat} interleaved repeats")
    if pt.gpu:  # PyTorch's rows beside dlscratch's GPU backend (--device gpu), on CUDA
        print(pt.header)
    rows = [list(row) for row in refusals()]
    checked, differ = products(PRODUCT_SHAPES[:1] if quick else PRODUCT_SHAPES)
    rows.append([f"dlscratch's cuBLAS call = CuPy's matmul ({checked} products, eager and replayed)",
                 "bit for bit" if not differ else f"DIFFERENT: {', '.join(differ)}"])
    for name, batch in itertools.product(OPTIMIZERS, batches):
        trained = training(lambda: mlp(sizes), OPTIMIZERS[name], (batch, sizes[0]), sizes[-1], steps)
        torch = torch_steps(name, sizes, batch, pt) if pt.gpu and pt.runs else {}
        rows += step_rows(f"{name}, batch {batch}", trained, steps, repeat, quick, torch)
    precision_batch = PRECISION_QUICK_BATCH if quick else PRECISION_BATCH
    medians = {}
    for mixed in (False, True):
        label = f"{PRECISION_MODEL}, batch {precision_batch}, {'float16 autocast' if mixed else 'float32'}"
        trained = training(lambda: precision.mlp(nn), OPTIMIZERS["SGD with momentum"], (precision_batch, 1, 28, 28),
                           10, steps, mixed=mixed)
        rows += step_rows(label, trained, steps, repeat, quick, {}, medians.setdefault(mixed, {}))
    rows.append([f"{PRECISION_MODEL}: float16 autocast / float32, eager and replayed",
                 f"{medians[True]['eager'] / medians[False]['eager']:.2f}x, "
                 f"{medians[True]['replay'] / medians[False]['replay']:.2f}x"])
    print(format_table(HEADERS, rows))
    return HEADERS, rows


def step_rows(label, trained, steps, repeat, quick, torch, medians=None):
    """The rows of one captured step: replays against eager steps, launches (on the stand-in), milliseconds
    (beside PyTorch's eager and captured steps where ``torch`` has them); ``medians`` gets the milliseconds."""
    eager_losses, replayed, same, eager_step, replay = trained
    rows = [[f"{label}: {steps} replays = eager steps", "bit for bit" if replayed == eager_losses and same
             else "DIFFERENT"]]
    if backend.strict_stand_in():
        with backend.ledger() as eager_book:
            eager_step()
        with backend.ledger() as replay_book:
            replay()
        rows.append([f"{label}: launches per step", f"{eager_book.launches} eager, {replay_book.launches} "
                     f"replayed ({replay_book.by_site()[0][2]})"])
    variants = {"eager": _synchronized(eager_step), "replay": _synchronized(replay), **torch}
    times = measure_interleaved(variants, repeat=repeat, number=1 if quick else None, pause=0 if quick else 0.1)
    ms = {k: median(v) * 1e3 for k, v in times.items()}
    if medians is not None:
        medians.update(ms)
    rows.append([f"{label}: ms per step", f"{ms['eager']:.3f} eager, {ms['replay']:.3f} replayed "
                 f"({ms['eager'] / ms['replay']:.1f}x)"])
    if "PyTorch eager" in ms:
        rows.append([f"{label}: replayed / PyTorch's eager, / PyTorch's replayed",
                     f"{ms['replay'] / ms['PyTorch eager']:.2f}x ({ms['PyTorch eager']:.3f} ms), "
                     f"{ms['replay'] / ms['PyTorch replay']:.2f}x ({ms['PyTorch replay']:.3f} ms)"])
    return rows


def _synchronized(fn):
    def call_and_wait():
        fn()
        backend.synchronize()
    return call_and_wait
