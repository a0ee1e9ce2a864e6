"""Suite "pool": 2x2 max pooling (forward, and forward+backward with each backward variant) and
average pooling, on the benchmark workload: (128, 32, 28, 28) float32. PyTorch rows where importable, on
dlscratch's device (CUDA on the GPU; see ``torch_device``); a DeZero 0.0.13 max-pool forward+backward row
on the CPU (the from-scratch reference, see ``dezero_models``) where it imports.

The max-pool backward variants are those of ``F.max_pool2d(..., backward=...)`` (see
``dlscratch/fast/pooling.py``): "argmax_scatter" is the Qiita article's slow original, "mask" its
fix, "scatter_add" the argmax with the shim's scatter-add, "offsets" the library's default.
"""

import numpy

from .. import backend
from ..engine.tensor import Tensor
from ..fast.pooling import DEFAULT_MAX_POOL_BACKWARD, MAX_POOL_BACKWARDS
from ..operations.pooling import avg_pool2d, max_pool2d
from . import dezero_models, torch_device
from .timing import (
    dezero_available,
    format_table,
    measure_interleaved,
    median,
    on_the_fast_path,
    on_the_reference_path,
    verdict,
)

SHAPE, QUICK_SHAPE = (128, 32, 28, 28), (2, 3, 8, 8)
REPEAT, QUICK_REPEAT = 7, 1
TARGET_RATIO = 1.5
HEADERS = ["variant", "ms", "x PyTorch"]


def dlscratch_variants(x):
    """dlscratch's rows: max-pool forward, forward+backward per variant, avg-pool forward+backward."""
    xt = Tensor(x, requires_grad=True)
    seed = backend.xp.ones((x.shape[0], x.shape[1], x.shape[2] // 2, x.shape[3] // 2), dtype=numpy.float32)

    def forward():
        max_pool2d(Tensor(x), 2)

    def forward_backward(pool):
        xt.zero_grad()
        pool(xt).backward(seed)

    variants = {"dlscratch max forward": forward}
    for how in MAX_POOL_BACKWARDS:
        mark = " (default)" if how == DEFAULT_MAX_POOL_BACKWARD else ""
        variants[f"dlscratch max forward+backward, {how}{mark}"] = (
            lambda how=how: forward_backward(lambda t: max_pool2d(t, 2, backward=how))
        )
    variants["dlscratch avg forward+backward"] = lambda: forward_backward(lambda t: avg_pool2d(t, 2))
    variants = {name: on_the_fast_path(fn) for name, fn in variants.items()}
    # what the fast path's tricks buy: the same operations on the reference implementation
    variants["dlscratch reference path max forward+backward"] = on_the_reference_path(
        lambda: forward_backward(lambda t: max_pool2d(t, 2))
    )
    variants["dlscratch reference path avg forward+backward"] = on_the_reference_path(
        lambda: forward_backward(lambda t: avg_pool2d(t, 2))
    )
    return variants


def torch_variants(x, pt):
    """The same in PyTorch, on ``pt``'s device (a ``TorchDevice``)."""
    import torch

    data = pt.tensor(backend.to_cpu(x))
    xt = data.clone().requires_grad_(True)
    seed = torch.ones((x.shape[0], x.shape[1], x.shape[2] // 2, x.shape[3] // 2), device=pt.device)

    def forward():
        with torch.no_grad():
            torch.nn.functional.max_pool2d(data, 2)

    def forward_backward(pool):
        xt.grad = None
        pool(xt, 2).backward(seed)

    return {
        f"{pt.label} max forward": pt.timed(forward),
        f"{pt.label} max forward+backward": pt.timed(lambda: forward_backward(torch.nn.functional.max_pool2d)),
        f"{pt.label} avg forward+backward": pt.timed(lambda: forward_backward(torch.nn.functional.avg_pool2d)),
    }


def reference_of(name, pt):
    """The PyTorch row a dlscratch row is compared with; ``pt``: PyTorch's side (a ``TorchDevice``)."""
    if "avg" in name:
        return f"{pt.label} avg forward+backward"
    return f"{pt.label} max forward+backward" if "backward" in name else f"{pt.label} max forward"


def run(repeat=None, quick=False):
    """Time every variant, print the table and the verdict; return ``(headers, rows)``."""
    shape = QUICK_SHAPE if quick else SHAPE
    repeat = repeat or (QUICK_REPEAT if quick else REPEAT)
    x = backend.xp.asarray(numpy.random.default_rng(0).standard_normal(shape, dtype=numpy.float32))
    pt = torch_device.choose()
    print(f"pool: 2x2 pooling, stride 2, on {shape} float32, device {backend.device()}; "
          f"median of {repeat} interleaved repeats")
    print(pt.header)
    variants = dlscratch_variants(x)
    if pt.runs:
        variants.update(torch_variants(x, pt))
    if dezero_available():
        variants["DeZero 0.0.13 CPU max forward+backward"] = dezero_models.max_pool_forward_backward(backend.to_cpu(x))
    times = measure_interleaved(variants, repeat=repeat, number=1 if quick else None, pause=0 if quick else 0.2)
    seconds = {name: median(t) for name, t in times.items()}
    rows = []
    for name, s in seconds.items():
        ref = reference_of(name, pt)
        ratio = f"{s / seconds[ref]:.2f}" if ref in seconds and not name.startswith("PyTorch") else "-"
        rows.append([name, f"{s * 1e3:.3f}", ratio])
    print(format_table(HEADERS, rows))
    for line in summary(seconds, quick, pt):
        print(line)
    return HEADERS, rows


def summary(seconds, quick, pt):
    """The verdict for the default max-pool forward+backward; ``pt``: PyTorch's side (a ``TorchDevice``)."""
    if quick:
        return ["quick mode: tiny shapes, a smoke test, not a measurement"]
    lines = []
    default = f"dlscratch max forward+backward, {DEFAULT_MAX_POOL_BACKWARD} (default)"
    if f"{pt.label} max forward+backward" in seconds:
        ratio = seconds[default] / seconds[f"{pt.label} max forward+backward"]
        lines.append(f"default max pool forward+backward / PyTorch: {ratio:.2f} "
                     f"{verdict(ratio <= TARGET_RATIO, f'<= {TARGET_RATIO:g}')}")
    elif pt.gpu:
        lines.append(torch_device.unjudged(pt))
    else:
        lines.append(f"{pt.missing}: target not judged")
    if not pt.gpu:
        lines.append("earlier measurement (same machine kind, which may differ from this one): "
                     "PyTorch ~10 ms, DeZero 0.0.13 67 ms")
    return lines
