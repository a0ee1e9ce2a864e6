"""Suite "cnn": one training step (forward, loss, backward, optimizer step) of two CNNs.

- The classic Keras MNIST CNN at batch 128 with SGD (the issue's reference figures use SGD): conv 32
  3x3, ReLU, conv 64 3x3, ReLU, 2x2 max pool, dropout 0.25, dense 128, ReLU, dropout 0.5, dense 10.
- The article's small network at batch 8 with Adam: conv 10 3x3 pad 1, ReLU, 2x2 max pool, dense
  100, ReLU, dense 10.

Both are built from the same layer names in dlscratch and in PyTorch (the APIs match), and run
interleaved when PyTorch is importable.
"""

import numpy

from .. import backend, nn, optim
from ..creation import manual_seed
from ..functions.loss import cross_entropy
from ..tensor import Tensor
from .timing import format_table, measure_interleaved, median, torch_available

KERAS_BATCH, ARTICLE_BATCH = 128, 8
QUICK_KERAS_BATCH, QUICK_ARTICLE_BATCH = 2, 2
REPEAT, QUICK_REPEAT = 5, 1
DEZERO_KERAS_MS = 440.0  # DeZero 0.0.13's Keras CNN SGD step at batch 128 on a 2-core CPU: the issue's figure
TARGET_RATIO, TARGET_VS_DEZERO = 1.5, 3.0
HEADERS = ["network", "batch", "framework", "ms/step", "x PyTorch"]


def keras_cnn(layers):
    """The Keras MNIST CNN from ``layers`` (``dlscratch.nn`` or ``torch.nn``)."""
    return layers.Sequential(
        layers.Conv2d(1, 32, 3), layers.ReLU(), layers.Conv2d(32, 64, 3), layers.ReLU(),
        layers.MaxPool2d(2), layers.Dropout(0.25), layers.Flatten(),
        layers.Linear(9216, 128), layers.ReLU(), layers.Dropout(0.5), layers.Linear(128, 10),
    )


def article_net(layers):
    """The article's small CNN from ``layers``."""
    return layers.Sequential(
        layers.Conv2d(1, 10, 3, padding=1), layers.ReLU(), layers.MaxPool2d(2), layers.Flatten(),
        layers.Linear(1960, 100), layers.ReLU(), layers.Linear(100, 10),
    )


NETWORKS = {  # name -> (builder, optimizer name, learning rate)
    "Keras CNN": (keras_cnn, "SGD", 0.01),
    "article net": (article_net, "Adam", 1e-3),
}


def batch_of(size):
    """A seeded batch of MNIST-shaped images (size, 1, 28, 28) and labels, as NumPy arrays."""
    rng = numpy.random.default_rng(size)
    return rng.random((size, 1, 28, 28), dtype=numpy.float32), rng.integers(0, 10, size=size)


def dlscratch_step(network, batch):
    """One dlscratch training step of ``network`` on a fixed batch."""
    build, opt_name, lr = NETWORKS[network]
    model = build(nn)
    opt = getattr(optim, opt_name)(model.parameters(), lr=lr)
    x, y = (Tensor(backend.xp.asarray(a)) for a in batch_of(batch))

    def step():
        opt.zero_grad()
        cross_entropy(model(x), y).backward()
        opt.step()

    return step


def torch_step(network, batch):
    """The same step in PyTorch on the CPU."""
    import torch

    build, opt_name, lr = NETWORKS[network]
    model = build(torch.nn)
    opt = getattr(torch.optim, opt_name)(model.parameters(), lr=lr)
    x, y = (torch.from_numpy(a) for a in batch_of(batch))

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def run(repeat=None, quick=False):
    """Time both networks' steps, print the table and the verdicts; return ``(headers, rows)``."""
    batches = {"Keras CNN": QUICK_KERAS_BATCH if quick else KERAS_BATCH,
               "article net": QUICK_ARTICLE_BATCH if quick else ARTICLE_BATCH}
    repeat = repeat or (QUICK_REPEAT if quick else REPEAT)
    manual_seed(0)
    print(f"cnn: one training step on MNIST-shaped float32 data, device {backend.device()}; "
          f"median of {repeat} interleaved repeats")
    rows, seconds = [], {}
    for network, batch in batches.items():
        variants = {"dlscratch": dlscratch_step(network, batch)}
        if torch_available():
            variants["PyTorch CPU"] = torch_step(network, batch)
        times = measure_interleaved(variants, repeat=repeat, number=1 if quick else None,
                                    pause=0 if quick else 0.2)
        for name, t in times.items():
            seconds[network, name] = median(t)
        for name in variants:
            ref = seconds.get((network, "PyTorch CPU"))
            ratio = f"{seconds[network, name] / ref:.2f}" if ref else "-"
            rows.append([network, str(batch), name, f"{seconds[network, name] * 1e3:.2f}", ratio])
    print(format_table(HEADERS, rows))
    for line in summary(seconds, quick):
        print(line)
    return HEADERS, rows


def summary(seconds, quick):
    """Verdicts against the issue's targets."""
    if quick:
        return ["quick mode: tiny batches, a smoke test, not a measurement"]
    keras_ms = seconds["Keras CNN", "dlscratch"] * 1e3
    speedup = DEZERO_KERAS_MS / keras_ms
    versus = f"{speedup:.1f}x faster than" if speedup >= 1 else f"{1 / speedup:.1f}x slower than"
    lines = [f"Keras CNN step: {keras_ms:.0f} ms, {versus} DeZero 0.0.13's {DEZERO_KERAS_MS:g} ms "
             f"(a constant from the issue, not measured in this run; target >= {TARGET_VS_DEZERO:g}x faster: "
             f"{'met' if speedup >= TARGET_VS_DEZERO else 'NOT met'})"]
    if ("Keras CNN", "PyTorch CPU") in seconds:
        ratio = seconds["Keras CNN", "dlscratch"] / seconds["Keras CNN", "PyTorch CPU"]
        lines.append(f"Keras CNN step / PyTorch: {ratio:.2f} (target <= {TARGET_RATIO:g}: "
                     f"{'met' if ratio <= TARGET_RATIO else 'NOT met'})")
        ratio = seconds["article net", "dlscratch"] / seconds["article net", "PyTorch CPU"]
        lines.append(f"article net step at batch 8 / PyTorch: {ratio:.2f} (target < 1: "
                     f"{'met' if ratio < 1 else 'NOT met'})")
    else:
        lines.append("PyTorch is not importable here: the PyTorch targets are not judged")
    lines.append("reference (issue, same machine kind): PyTorch ~98 ms per Keras CNN SGD step")
    return lines
