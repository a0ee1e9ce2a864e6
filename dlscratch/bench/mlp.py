"""Suite "mlp": samples per second of one MLP training step against the batch size.

One step is what a training loop does per batch: ``zero_grad``, forward, cross-entropy, backward and
an SGD-with-momentum update. Two MLPs with ReLU, 784-1000-10 and 784-256-256-10, run at batch 1, 8,
128 and 1024 on random MNIST-shaped data. Where PyTorch is importable the same step runs in PyTorch
on the CPU, interleaved with ours, and the ratio column is dlscratch's time over PyTorch's.

Small batches measure each framework's fixed cost per step (Python, the graph, the optimizer
loop); large ones measure GEMM throughput, which both get from a BLAS library.
"""

import numpy

from .. import backend, nn, optim
from ..creation import manual_seed
from ..functions.loss import cross_entropy
from ..tensor import Tensor
from .timing import format_table, measure_interleaved, median, torch_available, verdict

MODELS = [(784, 1000, 10), (784, 256, 256, 10)]
BATCHES = [1, 8, 128, 1024]
QUICK_MODELS = [(20, 16, 10)]
QUICK_BATCHES = [1, 4]
REPEAT, QUICK_REPEAT = 7, 1
LR, MOMENTUM = 0.01, 0.9
HEADERS = ["model", "batch", "framework", "ms/step", "samples/s", "x PyTorch"]
SMALL_BATCH_TARGET = 1.0  # at batch 1 and 8: faster than PyTorch
BATCH_128_TARGET = 1.3  # at batch 128: within 1.3x of PyTorch


def random_batch(sizes, batch):
    """Inputs ``(batch, sizes[0])`` float32 and integer labels ``(batch,)`` below ``sizes[-1]``, as NumPy."""
    rng = numpy.random.default_rng(batch)
    x = rng.random((batch, sizes[0]), dtype=numpy.float32)
    y = rng.integers(0, sizes[-1], size=batch)
    return x, y


def mlp(sizes):
    """``Linear``/``ReLU`` layers for the widths in ``sizes`` (no ReLU after the last)."""
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def dlscratch_step(sizes, batch):
    """A callable that runs one dlscratch training step of the MLP on a fixed batch (``.model``: the model)."""
    model = mlp(sizes)
    opt = optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    x, y = random_batch(sizes, batch)
    x, y = Tensor(backend.xp.asarray(x)), Tensor(backend.xp.asarray(y))

    def step():
        opt.zero_grad()
        cross_entropy(model(x), y).backward()
        opt.step()

    step.model = model
    return step


def torch_step(sizes, batch):
    """The same step in PyTorch on the CPU."""
    import torch

    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(n_in, n_out), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    x, y = (torch.from_numpy(a) for a in random_batch(sizes, batch))

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def rows_for(sizes, batch, repeat, quick):
    """Table rows for one model and batch: dlscratch, then PyTorch when importable."""
    variants = {"dlscratch": dlscratch_step(sizes, batch)}
    if torch_available():
        variants["PyTorch CPU"] = torch_step(sizes, batch)
    times = measure_interleaved(variants, repeat=repeat, number=1 if quick else None, pause=0 if quick else 0.2)
    seconds = {name: median(t) for name, t in times.items()}
    model = "-".join(map(str, sizes))
    rows = []
    for name, s in seconds.items():
        ratio = f"{s / seconds['PyTorch CPU']:.2f}" if "PyTorch CPU" in seconds else "-"
        rows.append([model, str(batch), name, f"{s * 1e3:.3f}", f"{batch / s:.0f}", ratio])
    return rows


def run(repeat=None, quick=False):
    """Time every model at every batch size, print the table and the targets; return ``(headers, rows)``."""
    models, batches = (QUICK_MODELS, QUICK_BATCHES) if quick else (MODELS, BATCHES)
    repeat = repeat or (QUICK_REPEAT if quick else REPEAT)
    manual_seed(0)  # repeatable initial weights
    print(
        f"mlp: one training step (zero_grad, forward, cross-entropy, backward, SGD momentum {MOMENTUM}) on "
        f"float32 data, device {backend.device()}; median of {repeat} interleaved repeats"
    )
    rows = [row for sizes in models for batch in batches for row in rows_for(sizes, batch, repeat, quick)]
    print(format_table(HEADERS, rows))
    for line in summary(rows, quick):
        print(line)
    return HEADERS, rows


def summary(rows, quick):
    """One line per target, or why none can be judged."""
    if quick:
        return ["quick mode: tiny models, a smoke test, not a measurement"]
    ratios = {(r[0], int(r[1])): float(r[5]) for r in rows if r[2] == "dlscratch" and r[5] != "-"}
    if not ratios:
        return ["PyTorch is not importable here: no reference rows, targets not judged"]
    lines = []
    for (model, batch), ratio in ratios.items():
        limit = SMALL_BATCH_TARGET if batch in (1, 8) else BATCH_128_TARGET if batch == 128 else None
        if limit is not None:
            met = ratio < limit if batch in (1, 8) else ratio <= limit
            target = "faster than PyTorch" if batch in (1, 8) else f"within {limit:g}x of PyTorch"
            lines.append(f"{model} at batch {batch}: {ratio:.2f}x PyTorch's step time {verdict(met, target)}")
    return lines
