"""Suite "conv": a 3x3 convolution's forward and forward+backward, in GFLOP/s next to the GEMM peak.

The benchmark workload: conv2d 32 -> 64 channels, 3x3, padding 1, on a batch of 128 28x28 images,
float32. FLOPs count the three GEMM-equivalents of forward+backward (forward, dW, dx), each
``2*N*O*Ho*Wo*C*kh*kw``. The peak is NumPy's (or CuPy's) own matrix product measured in the same
run, on the convolution's GEMM shape and on a large square one; the best is reported. PyTorch's
``conv2d`` with autograd runs interleaved where it is importable, on dlscratch's device (CUDA on the
GPU; see ``torch_device``), and so does DeZero 0.0.13's on the CPU (the from-scratch framework of
Saito's *Deep Learning from Scratch 3*; see ``dezero_models``) where it imports.
"""

import numpy

from .. import backend
from ..engine.creation import manual_seed
from ..engine.tensor import Tensor
from ..fast.im2col import resolve_method
from ..operations.conv import conv2d
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

SHAPE, OUT, KERNEL, PADDING = (128, 32, 28, 28), 64, 3, 1
QUICK_SHAPE, QUICK_OUT = (4, 4, 12, 12), 8
REPEAT, QUICK_REPEAT = 5, 1
TARGET_GFLOPS, TARGET_RATIO = 80.0, 1.5
HEADERS = ["variant", "ms", "GFLOP/s", "% of GEMM peak"]


def conv_flops(shape, out):
    """FLOPs of one forward pass (one GEMM-equivalent)."""
    n, c, h, w = shape
    ho, wo = h + 2 * PADDING - KERNEL + 1, w + 2 * PADDING - KERNEL + 1
    return 2 * n * out * ho * wo * c * KERNEL * KERNEL


def inputs(shape, out):
    """Seeded float32 input, weight, bias and output gradient as NumPy arrays."""
    rng = numpy.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=numpy.float32)
    w = rng.standard_normal((out, shape[1], KERNEL, KERNEL), dtype=numpy.float32) * 0.1
    b = rng.standard_normal(out, dtype=numpy.float32)
    return x, w, b


def gemm_variants(shape, out):
    """Matrix products to measure the peak: the convolution's own GEMM shape and a square one."""
    xp = backend.xp
    n, c, h, w = shape
    k = c * KERNEL * KERNEL
    a = xp.ones((out, k), dtype=numpy.float32)
    cols = xp.ones((k, n * h * w), dtype=numpy.float32)
    size = 512 if n < 16 else 2048
    sq = xp.ones((size, size), dtype=numpy.float32)
    return {
        f"GEMM ({out}, {k}) @ ({k}, {n * h * w})": (lambda: a @ cols, 2 * out * k * n * h * w),
        f"GEMM {size}^3": (lambda: sq @ sq, 2 * size**3),
    }


def dlscratch_variants(shape, out):
    """dlscratch forward, and forward+backward with each CPU im2col method (or the GPU default)."""
    x, w, b = (backend.xp.asarray(a) for a in inputs(shape, out))
    xt, wt, bt = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True), Tensor(b, requires_grad=True)
    seed = backend.xp.ones((shape[0], out, shape[2], shape[3]), dtype=numpy.float32)

    def forward():
        conv2d(Tensor(x), Tensor(w), Tensor(b), padding=PADDING)

    def forward_backward(method=None):
        for t in (xt, wt, bt):
            t.zero_grad()
        conv2d(xt, wt, bt, padding=PADDING, im2col_method=method).backward(seed)

    variants = {"dlscratch forward": forward, "dlscratch forward+backward": forward_backward}
    if backend.name() == "numpy":
        variants["dlscratch forward+backward, im2col 'strided'"] = lambda: forward_backward("strided")
    variants = {name: on_the_fast_path(fn) for name, fn in variants.items()}
    # what the fast path's tricks buy: the same operation on the reference implementation
    variants["dlscratch reference path forward"] = on_the_reference_path(forward)
    variants["dlscratch reference path forward+backward"] = on_the_reference_path(forward_backward)
    return variants


def torch_variants(shape, out, pt):
    """PyTorch's forward and forward+backward of the same convolution, on ``pt``'s device (a ``TorchDevice``)."""
    import torch

    x, w, b = (pt.tensor(a) for a in inputs(shape, out))
    xt, wt, bt = (t.clone().requires_grad_(True) for t in (x, w, b))
    seed = torch.ones((shape[0], out, shape[2], shape[3]), device=pt.device)

    def forward():
        with torch.no_grad():
            torch.nn.functional.conv2d(x, w, b, padding=PADDING)

    def forward_backward():
        for t in (xt, wt, bt):
            t.grad = None
        torch.nn.functional.conv2d(xt, wt, bt, padding=PADDING).backward(seed)

    return {f"{pt.label} forward": pt.timed(forward), f"{pt.label} forward+backward": pt.timed(forward_backward)}


def dezero_variants(shape, out):
    """DeZero 0.0.13 forward and forward+backward of the same convolution, on the CPU."""
    fns = dezero_models.conv2d_variants(*inputs(shape, out), pad=PADDING)
    return {f"DeZero 0.0.13 CPU {name}": fn for name, fn in fns.items()}


def run(repeat=None, quick=False):
    """Time the GEMMs and the convolutions, print the table and the verdict; return ``(headers, rows)``."""
    shape, out = (QUICK_SHAPE, QUICK_OUT) if quick else (SHAPE, OUT)
    repeat = repeat or (QUICK_REPEAT if quick else REPEAT)
    manual_seed(0)
    default = resolve_method(None, backend.xp.empty(0), "conv")
    pt = torch_device.choose()
    print(f"conv: conv2d {shape[1]} -> {out}, {KERNEL}x{KERNEL}, padding {PADDING}, input {shape}, float32, "
          f"device {backend.device()}; median of {repeat} interleaved repeats; "
          f"unnamed dlscratch rows use the default im2col method {default!r}")
    print(pt.header)
    gemms = gemm_variants(shape, out)
    variants = {name: fn for name, (fn, _) in gemms.items()}
    variants.update(dlscratch_variants(shape, out))
    if pt.runs:
        variants.update(torch_variants(shape, out, pt))
    if dezero_available():
        variants.update(dezero_variants(shape, out))
    times = measure_interleaved(variants, repeat=repeat, number=1 if quick else None, pause=0 if quick else 0.2)
    seconds = {name: median(t) for name, t in times.items()}
    flops = conv_flops(shape, out)
    gflops = {name: (gemms[name][1] if name in gemms else flops * (3 if "backward" in name else 1)) / s / 1e9
              for name, s in seconds.items()}
    peak = max(gflops[name] for name in gemms)
    # significant digits rather than fixed decimals: quick mode's shapes take hundredths of a millisecond
    rows = [[name, f"{seconds[name] * 1e3:.4g}", f"{gflops[name]:.3g}", f"{gflops[name] / peak * 100:.1f}"]
            for name in variants]
    print(format_table(HEADERS, rows))
    for line in summary(seconds, gflops, quick, pt):
        print(line)
    return HEADERS, rows


def summary(seconds, gflops, quick, pt):
    """Verdicts against the project's benchmark targets; ``pt``: PyTorch's side (a ``TorchDevice``). The
    GFLOP/s target is a CPU's: a GPU run gives the figure unjudged."""
    if quick:
        return ["quick mode: tiny shapes, a smoke test, not a measurement"]
    ours = gflops["dlscratch forward+backward"]
    lines = [f"dlscratch forward+backward: {ours:.0f} GFLOP/s "
             f"{cpu_verdict(ours >= TARGET_GFLOPS, f'>= {TARGET_GFLOPS:g}', pt.gpu)}"]
    if f"{pt.label} forward+backward" in seconds:
        ratio = seconds["dlscratch forward+backward"] / seconds[f"{pt.label} forward+backward"]
        lines.append(f"dlscratch / PyTorch forward+backward time: {ratio:.2f} "
                     f"{verdict(ratio <= TARGET_RATIO, f'<= {TARGET_RATIO:g}')}")
    elif pt.gpu:
        lines.append(torch_device.unjudged(pt))
    slow = seconds.get("dlscratch reference path forward+backward")
    if slow:
        ratio = slow / seconds["dlscratch forward+backward"]
        lines.append(f"what the fast path's tricks buy: the reference path takes {ratio:.2f}x the fast path's time")
    if not pt.gpu:
        lines.append("earlier measurement (same machine kind, which may differ from this one): "
                     "PyTorch ~90 ms (~120 GFLOP/s), DeZero 0.0.13 378 ms")
    return lines
