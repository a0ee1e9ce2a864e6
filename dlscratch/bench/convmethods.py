"""Suite "convmethods": one convolution computed four ways, im2col, FFT and Winograd F(2x2, 3x3) and
F(4x4, 3x3), on shapes from small kernels to large ones, with the FLOPs each method counts, its forward error
and its time; PyTorch's ``conv2d`` on the same device where it is importable.

Every case is a stride-1 convolution with "same" padding (``k // 2``), float32. For each method the table gives
the FLOPs of one forward (``functions.conv_flops``), the median time of a forward and of a forward+backward
(every gradient: input, weight, bias), the forward+backward time over im2col's, and the forward's largest error
against a float64 im2col of the same float32 numbers, relative to the output's largest magnitude.
Winograd rows appear for 3 x 3 kernels only. The last lines name each case's fastest method.
"""

import numpy

from .. import backend
from ..engine.creation import tensor
from ..engine.tensor import Tensor
from ..operations.conv import conv2d
from . import torch_device
from .conv_flops import conv_flops
from .timing import format_table, measure_interleaved, median, on_the_fast_path

# (name, (N, C, H, W), O, k): a small CNN's layers, deeper ones with more channels, then larger kernels
CASES = [
    ("3x3, 16->16, 28x28", (64, 16, 28, 28), 16, 3),
    ("3x3, 64->64, 28x28", (32, 64, 28, 28), 64, 3),
    ("3x3, 128->128, 14x14", (32, 128, 14, 14), 128, 3),
    ("3x3, 256->256, 7x7", (32, 256, 7, 7), 256, 3),
    ("5x5, 32->32, 28x28", (32, 32, 28, 28), 32, 5),
    ("7x7, 16->16, 56x56", (16, 16, 56, 56), 16, 7),
    ("11x11, 8->8, 64x64", (8, 8, 64, 64), 8, 11),
]
QUICK_CASES = [("3x3, 3->4, 8x8", (2, 3, 8, 8), 4, 3), ("5x5, 3->4, 9x9", (2, 3, 9, 9), 4, 5)]
REPEAT, QUICK_REPEAT = 5, 1
HEADERS = ["case", "method", "GFLOP", "forward ms", "fwd+bwd ms", "x im2col", "max rel error"]


def methods(k, padding):
    """``{name: (conv(x, w, b) on Tensors, FLOP-count arguments)}`` for a ``k x k`` kernel."""
    found = {"im2col": (lambda x, w, b: conv2d(x, w, b, padding=padding), ("im2col", 2)),
             "fft": (lambda x, w, b: conv2d(x, w, b, padding=padding, algorithm="fft"), ("fft", 2))}
    if k == 3:
        for m in (2, 4):
            found[f"winograd F({m}x{m},3x3)"] = (
                lambda x, w, b, m=m: conv2d(x, w, b, padding=padding, algorithm=f"winograd{m}"), ("winograd", m))
    return found


def case_arrays(shape, out, k):
    """Seeded float32 input, weight (scaled as He's initialisation would) and bias, as NumPy arrays."""
    rng = numpy.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=numpy.float32)
    w = rng.standard_normal((out, shape[1], k, k), dtype=numpy.float32) * numpy.float32((2 / (shape[1] * k * k)) ** .5)
    b = rng.standard_normal(out, dtype=numpy.float32)
    return x, w, b


def relative_error(got, arrays, padding):
    """The largest error of ``got`` (an array) against float64 im2col on the same ``arrays``, over the
    output's largest magnitude."""
    exact = conv2d(*(tensor(a, dtype=numpy.float64) for a in arrays), padding=padding).numpy()
    return float(numpy.abs(backend.to_cpu(got) - exact).max() / numpy.abs(exact).max())


def case_variants(name, shape, out, k, pt):
    """The timed callables of one case, and each method's (GFLOP, error)."""
    padding = k // 2
    arrays = case_arrays(shape, out, k)
    x, w, b = (backend.xp.asarray(a) for a in arrays)
    leaves = [Tensor(a, requires_grad=True) for a in (x, w, b)]
    seed = backend.xp.ones((shape[0], out, shape[2], shape[3]), dtype=numpy.float32)
    variants, figures = {}, {}
    for method, (conv, (kind, m)) in methods(k, padding).items():
        def forward(conv=conv):
            return conv(Tensor(x), Tensor(w), Tensor(b))

        def forward_backward(conv=conv):
            for t in leaves:
                t.zero_grad()
            conv(*leaves).backward(seed)

        variants[name, method, "forward"] = on_the_fast_path(forward)
        variants[name, method, "fwd+bwd"] = on_the_fast_path(forward_backward)
        flops = conv_flops(kind, shape, (out, shape[1], k, k), (padding, padding), m)
        figures[method] = (flops / 1e9, relative_error(forward().data, arrays, padding))
    if pt.runs:
        variants.update(torch_variants(name, arrays, padding, pt))
        figures[pt.label] = (conv_flops("im2col", shape, (out, shape[1], k, k), (padding, padding)) / 1e9, None)
    return variants, figures


def torch_variants(name, arrays, padding, pt):
    """PyTorch's ``conv2d`` forward and forward+backward on ``pt``'s device."""
    import torch

    x, w, b = (pt.tensor(a) for a in arrays)
    leaves = [t.clone().requires_grad_(True) for t in (x, w, b)]
    seed = torch.ones_like(torch.nn.functional.conv2d(x, w, b, padding=padding))

    def forward():
        with torch.no_grad():
            torch.nn.functional.conv2d(x, w, b, padding=padding)

    def forward_backward():
        for t in leaves:
            t.grad = None
        torch.nn.functional.conv2d(*leaves, padding=padding).backward(seed)

    return {(name, pt.label, "forward"): pt.timed(forward), (name, pt.label, "fwd+bwd"): pt.timed(forward_backward)}


def rows_of(cases, seconds, figures):
    """The table's rows, and the summary lines naming each case's fastest dlscratch method."""
    rows, lines = [], []
    for name in cases:
        base = seconds[name, "im2col", "fwd+bwd"]
        for method, (gflop, error) in figures[name].items():
            both = seconds[name, method, "fwd+bwd"]
            rows.append([name, method, f"{gflop:.4g}", f"{seconds[name, method, 'forward'] * 1e3:.3f}",
                         f"{both * 1e3:.3f}", f"{both / base:.2f}", "-" if error is None else f"{error:.1e}"])
        ours = [method for method in figures[name] if not method.startswith("PyTorch")]
        best = min(ours, key=lambda method: seconds[name, method, "fwd+bwd"])
        lines.append(f"{name}: fastest here {best} "
                     f"({base / seconds[name, best, 'fwd+bwd']:.2f}x im2col, forward+backward)")
    return rows, lines


def run(repeat=None, quick=False):
    """Time every case and method, print the table and the winners; return ``(headers, rows)``."""
    cases = QUICK_CASES if quick else CASES
    repeat = repeat or (QUICK_REPEAT if quick else REPEAT)
    pt = torch_device.choose()
    print(f"convmethods: stride-1 'same' convolutions, float32, device {backend.device()}; "
          f"median of {repeat} interleaved repeats per case")
    print(pt.header)
    seconds, figures = {}, {}
    for name, shape, out, k in cases:
        variants, figures[name] = case_variants(name, shape, out, k, pt)
        times = measure_interleaved(variants, repeat=repeat, number=1 if quick else None, pause=0 if quick else 0.1)
        seconds.update({key: median(t) for key, t in times.items()})
    rows, lines = rows_of([name for name, *_ in cases], seconds, figures)
    print(format_table(HEADERS, rows))
    for line in lines:
        print(line)
    return HEADERS, rows
