"""Suite "mlp": samples per second of one MLP training step against the batch size.

One step is what a training loop does per batch: ``zero_grad``, forward, cross-entropy, backward and
an SGD-with-momentum update. Two MLPs with ReLU, 784-1000-10 and 784-256-256-10, run at batch 1, 8,
128 and 1024 on random MNIST-shaped data. Where PyTorch is importable the same step runs in PyTorch
on dlscratch's device (CUDA on the GPU; see ``torch_device``), interleaved with ours, and the ratio
column is the median over the rounds of dlscratch's time over PyTorch's in the same round.

Small batches measure each framework's fixed cost per step (Python, the graph, the optimizer
loop); large ones measure GEMM throughput, which both get from a BLAS library. A second table cuts
the step of 784-1000-10 at batch 1 into its phases, to show where each framework spends its time.
"""

import numpy

from .. import backend, nn, optim
from ..engine.creation import manual_seed
from ..engine.tensor import Tensor
from ..operations.loss import cross_entropy
from . import torch_device
from .phases import measure_phases, median_phases
from .timing import (
    format_table,
    measure_interleaved,
    median,
    on_the_fast_path,
    on_the_reference_path,
    verdict,
)

MODELS = [(784, 1000, 10), (784, 256, 256, 10)]
BATCHES = [1, 8, 128, 1024]
QUICK_MODELS = [(20, 16, 10)]
QUICK_BATCHES = [1, 4]
REPEAT, QUICK_REPEAT = 7, 1
LR, MOMENTUM = 0.01, 0.9
HEADERS = ["model", "batch", "framework", "ms/step", "samples/s", "x PyTorch"]
PHASES = ["zero_grad", "forward + loss", "backward", "optimizer step"]
PHASE_HEADERS = ["phase", "dlscratch µs", "PyTorch µs", "x PyTorch"]
PHASE_MODEL, PHASE_BATCH = (784, 1000, 10), 1
SMALL_BATCH_TARGET = 1.0  # at batch 1 and 8: faster than PyTorch
BATCH_128_TARGET = 1.3  # at batch 128: within 1.3x of PyTorch
MET_SHARE = 0.75  # a target is met when it holds in at least this share of the rounds
REFERENCE_PATH = "dlscratch, reference path"


def random_batch(sizes, batch):
    """Inputs ``(batch, sizes[0])`` float32 and integer labels ``(batch,)`` below ``sizes[-1]``, as NumPy."""
    rng = numpy.random.default_rng(batch)
    x = rng.random((batch, sizes[0]), dtype=numpy.float32)
    y = rng.integers(0, sizes[-1], size=batch)
    return x, y


def mlp(sizes, layers=nn):
    """``Linear``/``ReLU`` layers for the widths in ``sizes`` (no ReLU after the last), from ``layers``
    (``dlscratch.nn`` or ``torch.nn``)."""
    stack = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        stack += [layers.Linear(n_in, n_out), layers.ReLU()]
    return layers.Sequential(*stack[:-1])


def dlscratch_step(sizes, batch):
    """A callable that runs one dlscratch training step of the MLP on a fixed batch (``.model``: the model)."""
    model, opt, x, y = _dlscratch_setup(sizes, batch)

    def step():
        opt.zero_grad()
        cross_entropy(model(x), y).backward()
        opt.step()

    step.model = model
    return step


def dlscratch_phases(sizes, batch):
    """The same step cut into ``PHASES``: four callables to run in order."""
    model, opt, x, y = _dlscratch_setup(sizes, batch)
    return _cut_into_phases(opt.zero_grad, lambda: cross_entropy(model(x), y), opt.step)


def _dlscratch_setup(sizes, batch):
    model = mlp(sizes)
    opt = optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    x, y = random_batch(sizes, batch)
    return model, opt, Tensor(backend.xp.asarray(x)), Tensor(backend.xp.asarray(y))


def torch_step(sizes, batch, pt):
    """The same step in PyTorch, on ``pt``'s device (a ``TorchDevice``)."""
    import torch

    model, opt, x, y = _torch_setup(sizes, batch, pt)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return pt.timed(step)


def torch_phases(sizes, batch, pt):
    """PyTorch's step cut into ``PHASES``, each phase timed as ``pt`` says (on CUDA, ending synchronised)."""
    import torch

    model, opt, x, y = _torch_setup(sizes, batch, pt)
    phases = _cut_into_phases(opt.zero_grad, lambda: torch.nn.functional.cross_entropy(model(x), y), opt.step)
    return [pt.timed(phase) for phase in phases]


def _cut_into_phases(zero_grad, compute_loss, step):
    """``PHASES`` as callables: zero_grad, the loss kept for backward, backward, the update."""
    held = {}

    def forward():
        held["loss"] = compute_loss()

    def backward():
        held.pop("loss").backward()  # the graph is freed here, as in the whole step

    return [zero_grad, forward, backward, step]


def _torch_setup(sizes, batch, pt):
    import torch

    model = mlp(sizes, torch.nn).to(pt.device)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    x, y = (pt.tensor(a) for a in random_batch(sizes, batch))
    return model, opt, x, y


def rows_for(sizes, batch, repeat, quick, pt):
    """Table rows for one model and batch (dlscratch on the fast path, on the reference path, then
    PyTorch where ``pt``, a ``TorchDevice``, runs); returns ``(rows, paired, reference_ratio)``: the
    ratio of dlscratch's time to PyTorch's in each round (None without PyTorch rows), and the median
    over the rounds of the reference path's time over the fast path's."""
    variants = {
        "dlscratch": on_the_fast_path(dlscratch_step(sizes, batch)),
        REFERENCE_PATH: on_the_reference_path(dlscratch_step(sizes, batch)),  # what the fast path buys
    }
    if pt.runs:
        variants[pt.label] = torch_step(sizes, batch, pt)
    times = measure_interleaved(variants, repeat=repeat, number=1 if quick else None, pause=0 if quick else 0.2)
    per_round = {}
    if pt.label in times:
        torch_times = times[pt.label]
        per_round = {name: [ours / theirs for ours, theirs in zip(t, torch_times)] for name, t in times.items()}
    model = "-".join(map(str, sizes))
    rows = []
    for name, t in times.items():
        s = median(t)
        ratio = f"{median(per_round[name]):.2f}" if per_round else "-"
        rows.append([model, str(batch), name, f"{s * 1e3:.3f}", f"{batch / s:.0f}", ratio])
    reference_ratio = median([r / f for r, f in zip(times[REFERENCE_PATH], times["dlscratch"])])
    return rows, per_round.get("dlscratch"), reference_ratio


def reference_lines(reference_ratios):
    """One line per model: the reference path's time over the fast path's at each batch size.
    ``reference_ratios``: ``{(model, batch): ratio}``."""
    by_model = {}
    for (model, batch), ratio in reference_ratios.items():
        by_model.setdefault(model, []).append(f"{ratio:.2f} at batch {batch}")
    return [f"{model}: reference path time / fast path time: {', '.join(parts)} (what the fast path's tricks buy)"
            for model, parts in by_model.items()]


def run(repeat=None, quick=False):
    """Time every model at every batch size, print the table and the targets; return ``(headers, rows)``."""
    models, batches = (QUICK_MODELS, QUICK_BATCHES) if quick else (MODELS, BATCHES)
    repeat = repeat or (QUICK_REPEAT if quick else REPEAT)
    manual_seed(0)  # repeatable initial weights
    pt = torch_device.choose()
    print(
        f"mlp: one training step (zero_grad, forward, cross-entropy, backward, SGD momentum {MOMENTUM}) on "
        f"float32 data, device {backend.device()}; median of {repeat} interleaved repeats, and of the "
        "ratio in each round"
    )
    print(pt.header)
    rows, ratios, reference_ratios = [], {}, {}
    for sizes in models:
        for batch in batches:
            case_rows, paired, reference_ratio = rows_for(sizes, batch, repeat, quick, pt)
            rows += case_rows
            if paired is not None:
                ratios["-".join(map(str, sizes)), batch] = paired
            reference_ratios["-".join(map(str, sizes)), batch] = reference_ratio
    print(format_table(HEADERS, rows))
    for line in reference_lines(reference_ratios) + summary(ratios, quick, pt):
        print(line)
    sizes, batch = (QUICK_MODELS[0], 1) if quick else (PHASE_MODEL, PHASE_BATCH)
    print(f"\nwhere one step's time goes, {'-'.join(map(str, sizes))} at batch {batch} (median of {repeat} bursts):")
    print(format_table(PHASE_HEADERS, phase_rows(sizes, batch, repeat, quick, pt)))
    return HEADERS, rows


def phase_rows(sizes, batch, repeat, quick, pt):
    """One row per phase of the step, then the whole step: microseconds in each framework, and the ratio."""
    variants = {"dlscratch": dlscratch_phases(sizes, batch)}
    if pt.runs:
        variants[pt.label] = torch_phases(sizes, batch, pt)
    figures = measure_phases(variants, repeat=repeat, number=1 if quick else None, pause=0 if quick else 0.2)
    medians = median_phases(figures)
    ours, theirs = medians["dlscratch"], medians.get(pt.label)
    rows = []
    for i, phase in enumerate(PHASES + ["whole step"]):
        mine = ours[i] if i < len(PHASES) else sum(ours)
        cells = [phase, f"{mine * 1e6:.0f}", "-", "-"]
        if theirs is not None:
            reference = theirs[i] if i < len(PHASES) else sum(theirs)
            cells[2:] = [f"{reference * 1e6:.0f}", f"{mine / reference:.2f}"]
        rows.append(cells)
    return rows


def summary(ratios, quick, pt):
    """One line per target, or why none can be judged. ``ratios``: (model, batch) -> dlscratch's time
    over PyTorch's in each round; ``pt``: PyTorch's side (a ``TorchDevice``). A target is met when it
    holds in at least ``MET_SHARE`` of the rounds: on a noisy machine a median a hair below 1 is a tie,
    not a win."""
    if quick:
        return ["quick mode: tiny models, a smoke test, not a measurement"]
    if not ratios:
        if pt.gpu:
            return [torch_device.unjudged(pt)]
        return [f"{pt.missing}: no reference rows, targets not judged; {torch_device.INSTALL_HINT}"]
    lines = []
    for (model, batch), paired in ratios.items():
        if batch in (1, 8):
            holds, target = [r < SMALL_BATCH_TARGET for r in paired], "faster than PyTorch"
        elif batch == 128:
            holds, target = [r <= BATCH_128_TARGET for r in paired], f"within {BATCH_128_TARGET:g}x of PyTorch"
        else:
            continue
        met = sum(holds) >= MET_SHARE * len(holds)
        lines.append(
            f"{model} at batch {batch}: {median(paired):.2f}x PyTorch's step time, holds in {sum(holds)} of "
            f"{len(holds)} rounds {verdict(met, target)}"
        )
    return lines
