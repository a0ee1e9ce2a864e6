"""Suite "graphs": what capturing a training step in a CUDA graph gives on this GPU (or on the strict stand-in).

First the rules that decide what can be captured, checked against the CuPy in use: CuPy 14 refuses its own cuBLAS
calls (every GEMM) and its legacy random draws (cuRAND) inside a capture. Then the way around the first:
``dlscratch.cuda.blas`` makes CuPy's cuBLAS call itself, which a capture records, and its products must equal
CuPy's ``matmul`` bit for bit (2-D and batched, float16, float32, float64, complex64 and complex128, C-ordered,
transposed and strided operands), eagerly and replayed.

Then issue 56's targets, each captured (``captured_steps.py``), its replays checked against the eager steps bit
for bit, and timed against them and, where PyTorch has CUDA, against PyTorch's eager step and PyTorch's own captured
step: the MLP 784-1000-10 (SGD with momentum, capturable Adam) at batch 1 and 8, the Keras CNN with SGD at batch
128, and ``nn.LSTM`` 700 -> 500 over 80 steps at batch 1, forward and backward, beside cuDNN's. Last, the precision
suite's MLP in float32 and under float16 ``autocast``, eager and captured: what capturing the casts changes.
Medians of interleaved repeats, each call synchronized. On the stand-in the times say nothing about a GPU; the
launch counts do.
"""

import itertools

import numpy

from .. import backend, nn, optim
from ..cuda import blas
from ..cuda.graphs import CUDAGraph, graph
from . import captured_steps, precision, torch_device
from .cnn import batch_of, keras_cnn
from .mlp import mlp, random_batch
from .timing import format_table, measure_interleaved, median

SIZES, BATCHES = (784, 1000, 10), (1, 8)  # the MLP of issue 56's targets, as the mlp suite runs it
QUICK_SIZES, QUICK_BATCHES = (20, 16, 10), (4,)
CNN_BATCH = 128  # the Keras CNN's step, as the cnn suite runs it
LSTM_SIZES, QUICK_LSTM_SIZES, LSTM_BATCH = (700, 500, 80), (40, 30, 12), 1  # the lstm suite's: input, hidden, steps
LR, MOMENTUM = 0.01, 0.9
HEADERS = ["check or step", "result"]
OPTIMIZERS = {
    "SGD with momentum": lambda ps: optim.SGD(ps, lr=LR, momentum=MOMENTUM),
    "capturable Adam": lambda ps: optim.Adam(ps, lr=1e-3, capturable=True),
    "SGD": lambda ps: optim.SGD(ps, lr=LR),
}
TORCH_OPTIMIZERS = {
    "SGD with momentum": lambda torch, ps: torch.optim.SGD(ps, lr=LR, momentum=MOMENTUM),
    "capturable Adam": lambda torch, ps: torch.optim.Adam(ps, lr=1e-3, capturable=True),
    "SGD": lambda torch, ps: torch.optim.SGD(ps, lr=LR),
}
#: item 5 of issue 56: float16 under autocast against float32, eager and captured, on the precision suite's MLP
#: and batch (``bench/precision.py``), with SGD and momentum and no GradScaler (it reads the host at each step)
PRECISION_MODEL, PRECISION_BATCH, PRECISION_QUICK_BATCH = "MLP 784-1024-1024-10", 64, 2
PRODUCT_SHAPES = ((3, 4, 5), (1, 784, 1000), (8, 1000, 10), (1000, 8, 784), (64, 200, 17), (9, 7, 1))
PRODUCT_DTYPES = (numpy.float16, numpy.float32, numpy.float64, numpy.complex64, numpy.complex128)


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
    for dtype, (m, k, n) in itertools.product(PRODUCT_DTYPES, shapes):
        def draw(*shape, dtype=dtype):
            numbers = rng.standard_normal(shape)
            if numpy.dtype(dtype).kind == "c":
                numbers = numbers + 1j * rng.standard_normal(shape)
            return xp.asarray(numbers.astype(dtype))
        lefts = {"C": draw(m, k), "F": draw(k, m).T, "strided": draw(m, 2 * k)[:, ::2]}
        rights = {"C": draw(k, n), "F": draw(n, k).T}
        cases += [(f"{numpy.dtype(dtype).name} {m}x{k}x{n} {p}@{q}", lefts[p], rights[q])
                  for p, q in itertools.product(lefts, rights)]
        name = f"{numpy.dtype(dtype).name} {m}x{k}x{n}"
        cases += [(f"{name} batched 3x", draw(3, m, k), draw(3, k, n)),
                  (f"{name} broadcast (3 batches @ one)", draw(3, m, k), draw(k, n)),
                  (f"{name} @ a vector", draw(m, k), draw(k))]
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
    torch_runs = pt.gpu and pt.runs  # PyTorch's rows beside dlscratch's GPU backend (--device gpu), on CUDA
    where = "the strict stand-in (its times say nothing about a GPU)" if backend.strict_stand_in() else "the GPU"
    print(f"graphs: captured steps on {where}; median of {repeat} interleaved repeats")
    if pt.gpu:
        print(pt.header)
    rows = [list(row) for row in refusals()]
    checked, differ = products(PRODUCT_SHAPES[:1] if quick else PRODUCT_SHAPES)
    rows.append([f"dlscratch's cuBLAS call = CuPy's matmul ({checked} products, eager and replayed)",
                 "bit for bit" if not differ else f"DIFFERENT: {', '.join(differ)}"])
    for name, batch in itertools.product(("SGD with momentum", "capturable Adam"), batches):
        trained = captured_steps.training(lambda: mlp(sizes), OPTIMIZERS[name], (batch, sizes[0]), sizes[-1], steps)
        torch = torch_training(lambda t: mlp(sizes, t.nn), TORCH_OPTIMIZERS[name], random_batch(sizes, batch), pt) \
            if torch_runs else {}
        rows += step_rows(f"MLP {'-'.join(map(str, sizes))}, {name}, batch {batch}", trained, steps, repeat, quick,
                          torch)
    cnn_batch = 2 if quick else CNN_BATCH
    trained = captured_steps.training(lambda: keras_cnn(nn), OPTIMIZERS["SGD"], (cnn_batch, 1, 28, 28), 10, steps)
    torch = torch_training(lambda t: keras_cnn(t.nn), TORCH_OPTIMIZERS["SGD"], batch_of(cnn_batch), pt) \
        if torch_runs else {}
    rows += step_rows(f"Keras CNN, SGD, batch {cnn_batch}", trained, steps, repeat, quick, torch)
    lstm_sizes = QUICK_LSTM_SIZES if quick else LSTM_SIZES
    passes = captured_steps.lstm_passes(lstm_sizes, LSTM_BATCH, steps)
    torch = torch_lstm(lstm_sizes, LSTM_BATCH, pt) if torch_runs else {}
    rows += step_rows(f"nn.LSTM {lstm_sizes[0]}->{lstm_sizes[1]}, {lstm_sizes[2]} steps, batch {LSTM_BATCH}, forward "
                      "+ backward", passes, steps, repeat, quick, torch)
    precision_batch = PRECISION_QUICK_BATCH if quick else PRECISION_BATCH
    medians = {}
    for mixed in (False, True):
        label = f"{PRECISION_MODEL}, batch {precision_batch}, {'float16 autocast' if mixed else 'float32'}"
        trained = captured_steps.training(lambda: precision.mlp(nn), OPTIMIZERS["SGD with momentum"],
                                          (precision_batch, 1, 28, 28), 10, steps, mixed=mixed)
        rows += step_rows(label, trained, steps, repeat, quick, {}, medians.setdefault(mixed, {}))
    rows.append([f"{PRECISION_MODEL}: float16 autocast / float32, eager and replayed",
                 f"{medians[True]['eager'] / medians[False]['eager']:.2f}x, "
                 f"{medians[True]['replay'] / medians[False]['replay']:.2f}x"])
    print(format_table(HEADERS, rows))
    return HEADERS, rows


def torch_training(build, optimizer_of, batch, pt):
    """PyTorch's eager and captured training steps of ``build(torch)`` on ``batch`` (NumPy inputs and labels)."""
    import torch

    x, y = (pt.tensor(a) for a in batch)

    def make():
        model = build(torch).to(pt.device)
        return model, optimizer_of(torch, model.parameters())

    def step(model, optimizer):
        optimizer.zero_grad(set_to_none=False)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return captured_steps.torch_pair(make, step, pt)


def torch_lstm(sizes, batch, pt):
    """PyTorch's (cuDNN's) ``nn.LSTM`` forward and backward, eager and captured, as ``captured_steps.lstm_passes``."""
    import torch

    input_size, hidden_size, length = sizes
    x = pt.tensor(numpy.random.default_rng(batch).standard_normal((length, batch, input_size), dtype=numpy.float32))

    def passes(model):
        model.zero_grad()
        model(x)[0].sum().backward()

    return captured_steps.torch_pair(lambda: (torch.nn.LSTM(input_size, hidden_size).to(pt.device),), passes, pt)


def step_rows(label, trained, steps, repeat, quick, torch, medians=None):
    """The rows of one captured step: replays against eager steps, launches (on the stand-in), milliseconds
    (beside PyTorch's eager and captured steps where ``torch`` has them); ``medians`` gets the milliseconds."""
    eager_results, replayed, same, eager_step, replay = trained
    agree = same and all(numpy.array_equal(a, b) for a, b in zip(_flat(eager_results), _flat(replayed), strict=True))
    rows = [[f"{label}: {steps} replays = eager steps", "bit for bit" if agree else "DIFFERENT"]]
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
    for theirs in ("PyTorch eager", "PyTorch replay"):
        if theirs in ms:
            rows.append([f"{label}: replayed / {theirs}", f"{ms['replay'] / ms[theirs]:.2f}x ({ms[theirs]:.3f} ms)"])
    return rows


def _flat(results):
    """The arrays of a list of results (an array, or a list of arrays, each)."""
    return [a for r in results for a in (r if isinstance(r, list) else [r])]


def _synchronized(fn):
    def call_and_wait():
        fn()
        backend.synchronize()
    return call_and_wait
