"""Suite "cnn": one training step (forward, loss, backward, optimizer step) of two CNNs.

- The classic Keras MNIST CNN at batch 128 with SGD (the reference figures use SGD): conv 32
  3x3, ReLU, conv 64 3x3, ReLU, 2x2 max pool, dropout 0.25, dense 128, ReLU, dropout 0.5, dense 10.
- The small network of the Qiita article "深層学習外伝 ~GPUプログラミング編~" (2020; lesson 05) at batch 8
  with Adam: conv 10 3x3 pad 1, ReLU, 2x2 max pool, dense
  100, ReLU, dense 10.

Both are built from the same layer names in dlscratch and in PyTorch (the APIs match), and run
interleaved when PyTorch is importable, PyTorch on dlscratch's device (CUDA on the GPU; see
``torch_device``). Where DeZero 0.0.13 imports, its Keras CNN step (see ``dezero_models``) runs
interleaved too, on the CPU, and the "faster than DeZero" target is judged against it in a CPU run.
"""

import numpy

from .. import backend, nn, optim
from ..engine.creation import manual_seed
from ..engine.tensor import Tensor
from ..operations.loss import cross_entropy
from . import dezero_models, torch_device
from .timing import (
    cpu_verdict,
    dezero_available,
    format_table,
    measure_interleaved,
    median,
    on_the_fast_path,
    on_the_reference_path,
    verdict,
)

KERAS_BATCH, ARTICLE_BATCH = 128, 8
QUICK_KERAS_BATCH, QUICK_ARTICLE_BATCH = 2, 2
REPEAT, QUICK_REPEAT = 5, 1
# DeZero 0.0.13's Keras CNN SGD step at batch 128 measured earlier on a 2-core CPU: used only when DeZero does not
# import here, since this machine may be slower or faster than that one
DEZERO_KERAS_MS = 440.0
DEZERO = "DeZero 0.0.13 CPU"
REFERENCE_PATH = "dlscratch, reference path"
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
    """The Qiita article's small CNN (lesson 05) from ``layers``."""
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


def torch_step(network, batch, pt):
    """The same step in PyTorch, on ``pt``'s device (a ``TorchDevice``)."""
    import torch

    build, opt_name, lr = NETWORKS[network]
    model = build(torch.nn).to(pt.device)
    opt = getattr(torch.optim, opt_name)(model.parameters(), lr=lr)
    x, y = (pt.tensor(a) for a in batch_of(batch))

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return pt.timed(step)


def run(repeat=None, quick=False):
    """Time both networks' steps, print the table and the verdicts; return ``(headers, rows)``."""
    batches = {"Keras CNN": QUICK_KERAS_BATCH if quick else KERAS_BATCH,
               "article net": QUICK_ARTICLE_BATCH if quick else ARTICLE_BATCH}
    repeat = repeat or (QUICK_REPEAT if quick else REPEAT)
    manual_seed(0)
    pt = torch_device.choose()
    print(f"cnn: one training step on MNIST-shaped float32 data, device {backend.device()}; "
          f"median of {repeat} interleaved repeats")
    print(pt.header)
    rows, seconds = [], {}
    for network, batch in batches.items():
        variants = {
            "dlscratch": on_the_fast_path(dlscratch_step(network, batch)),
            REFERENCE_PATH: on_the_reference_path(dlscratch_step(network, batch)),  # what the fast path buys
        }
        if pt.runs:
            variants[pt.label] = torch_step(network, batch, pt)
        if network == "Keras CNN" and dezero_available():
            variants[DEZERO] = dezero_models.keras_cnn_step(*batch_of(batch), lr=NETWORKS[network][2])
        times = measure_interleaved(variants, repeat=repeat, number=1 if quick else None,
                                    pause=0 if quick else 0.2)
        for name, t in times.items():
            seconds[network, name] = median(t)
        for name in variants:
            ref = seconds.get((network, pt.label))
            ratio = f"{seconds[network, name] / ref:.2f}" if ref else "-"
            rows.append([network, str(batch), name, f"{seconds[network, name] * 1e3:.2f}", ratio])
    print(format_table(HEADERS, rows))
    for line in summary(seconds, quick, pt):
        print(line)
    return HEADERS, rows


def summary(seconds, quick, pt):
    """Verdicts against the project's benchmark targets; ``pt``: PyTorch's side (a ``TorchDevice``)."""
    if quick:
        return ["quick mode: tiny batches, a smoke test, not a measurement"]
    lines = [versus_dezero(seconds, pt.gpu)]
    for network in ("Keras CNN", "article net"):
        if (network, REFERENCE_PATH) in seconds:
            ratio = seconds[network, REFERENCE_PATH] / seconds[network, "dlscratch"]
            lines.append(f"{network}: the reference path takes {ratio:.2f}x the fast path's time "
                         "(what the fast path's tricks buy)")
    if ("Keras CNN", pt.label) in seconds:
        ratio = seconds["Keras CNN", "dlscratch"] / seconds["Keras CNN", pt.label]
        lines.append(f"Keras CNN step / PyTorch: {ratio:.2f} {verdict(ratio <= TARGET_RATIO, f'<= {TARGET_RATIO:g}')}")
        ratio = seconds["article net", "dlscratch"] / seconds["article net", pt.label]
        lines.append(f"article net step at batch 8 / PyTorch: {ratio:.2f} {verdict(ratio < 1, '< 1')}")
    elif pt.gpu:
        lines.append(torch_device.unjudged(pt))
    else:
        lines.append(f"{pt.missing}: the PyTorch targets are not judged")
    if not pt.gpu:
        lines.append(f"earlier measurement (same machine kind, which may differ from this one): PyTorch ~98 ms, "
                     f"DeZero 0.0.13 {DEZERO_KERAS_MS:g} ms per Keras CNN SGD step")
    return lines


def versus_dezero(seconds, gpu):
    """The Keras CNN step against DeZero's: measured in this run where it was, else the constant measured earlier.
    DeZero runs on the CPU: ``gpu`` (dlscratch ran on the GPU) gives the figure unjudged."""
    ours = seconds["Keras CNN", "dlscratch"] * 1e3
    if ("Keras CNN", DEZERO) in seconds:
        theirs, source = seconds["Keras CNN", DEZERO] * 1e3, "measured in this run"
    else:
        theirs, source = DEZERO_KERAS_MS, "an earlier 2-core measurement, not this run (DeZero does not import)"
    speedup = theirs / ours
    versus = f"{speedup:.1f}x faster than" if speedup >= 1 else f"{1 / speedup:.1f}x slower than"
    return (f"Keras CNN step: {ours:.0f} ms, {versus} DeZero 0.0.13's {theirs:.0f} ms, {source} "
            f"{cpu_verdict(speedup >= TARGET_VS_DEZERO, f'>= {TARGET_VS_DEZERO:g}x faster', gpu)}")
