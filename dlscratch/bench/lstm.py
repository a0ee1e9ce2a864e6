"""Suite "lstm": one LSTM layer's forward and forward+backward, in GFLOP/s next to the GEMM peak.

The workload of the MATLAB Answers forum thread: input 700, hidden 500, 80 time steps, at batch 1,
32 and 128, float32. "forward" runs under ``no_grad``; "forward+backward" is ``zero_grad``, the
forward pass, ``output.sum()`` as the loss and its backward. The variants, interleaved per batch size:

- ``dlscratch nn.LSTM``: the library's layer (one 4H-wide GEMM per step, the input GEMM hoisted).
- ``dlscratch nn.LSTM, reference path``: the same layer under ``dlscratch.reference()``; what the
  fast path adds (on the GPU, the fused point-wise kernel) is the difference.
- ``dlscratch per-gate loop, peepholes``: the forum's model written with dlscratch's autograd ops,
  eight products per step (four gates times input and recurrent weights) and diagonal peepholes;
  the naive reference that shows what the layer saves.
- PyTorch's ``nn.LSTM`` where it is importable, on dlscratch's device (CUDA with cuDNN on the GPU; see
  ``torch_device``), and DeZero 0.0.13's per-step ``layers.LSTM`` on the CPU where it imports (see
  ``dezero_models``).

FLOPs count the gate GEMMs only: ``2*T*N*4H*(I+H)`` per forward, three times that for
forward+backward. The peak is NumPy's (or CuPy's) own matrix product at the LSTM's GEMM shapes and a
large square one, measured first in the same run; the best is reported. Targets are judged on the
ratio in each round, as in the mlp suite: met when they hold in at least ``MET_SHARE`` of the rounds.
On the GPU only the PyTorch targets are judged, and only against PyTorch on CUDA.
"""

import ctypes
import math
import os

import numpy

from .. import backend, nn
from .. import functional as F
from ..engine.creation import manual_seed, zeros
from ..engine.grad_mode import no_grad
from ..engine.tensor import Tensor
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

SIZES = (700, 500, 80)  # input_size, hidden_size, steps
BATCHES = [1, 32, 128]
QUICK_SIZES, QUICK_BATCHES = (12, 8, 5), [1, 4]
SQUARE_GEMM, QUICK_SQUARE_GEMM = 2048, 128
REPEAT, QUICK_REPEAT = 5, 1
HEADERS = ["batch", "variant", "pass", "ms", "GFLOP/s", "% of GEMM peak", "x PyTorch"]
FORWARD, FORWARD_BACKWARD = "forward", "forward+backward"
NN_LSTM = "dlscratch nn.LSTM"
NN_LSTM_REFERENCE = "dlscratch nn.LSTM, reference path"
PER_GATE = "dlscratch per-gate loop, peepholes"
DEZERO = "DeZero 0.0.13 LSTM"
PYTORCH_BATCH_1_TARGET = 1.0  # at batch 1: no slower than PyTorch
PYTORCH_BATCH_128_TARGET = 1.15  # at batch 128: within 1.15x of PyTorch
DEZERO_TARGET = 10.0  # at batch 1: at least 10x faster than DeZero
MET_SHARE = 0.75  # a target is met when it holds in at least this share of the rounds
# the names under which an OpenBLAS build exports its core-type query (scipy-openblas adds a prefix and,
# with 64-bit integers, a suffix)
CORENAME_SYMBOLS = ["openblas_get_corename", "openblas_get_corename64_", "scipy_openblas_get_corename",
                    "scipy_openblas_get_corename64_"]
AVX2_ON_AVX512 = "OpenBLAS runs its Haswell (AVX2) kernels on a CPU with AVX-512"
SKYLAKEX_GAIN = "made NumPy's GEMM ~2x faster on such a machine"


def lstm_flops(sizes, batch):
    """FLOPs of one forward pass: the gate GEMMs, ``2*T*N*4H*(I+H)``; point-wise work is not counted."""
    input_size, hidden_size, steps = sizes
    return 2 * steps * batch * 4 * hidden_size * (input_size + hidden_size)


def random_sequence(sizes, batch):
    """A seeded float32 input sequence ``(T, batch, input_size)`` as a NumPy array."""
    input_size, _, steps = sizes
    return numpy.random.default_rng(batch).standard_normal((steps, batch, input_size), dtype=numpy.float32)


class PerGateLSTM(nn.Module):
    """The forum's LSTM with peepholes, one autograd op at a time: ``x: (T, N, I)`` to
    ``output: (T, N, H), (h_T, c_T)``, like ``nn.LSTM``. Per step, with ``x, h, c`` the step's input
    and the previous state (zeros at first):

        i = σ(x @ W_xi.T + b_i + h @ W_hi.T + p_i * c)      g = tanh(x @ W_xg.T + b_g + h @ W_hg.T)
        f = σ(x @ W_xf.T + b_f + h @ W_hf.T + p_f * c)      c' = f * c + i * g
        o = σ(x @ W_xo.T + b_o + h @ W_ho.T + p_o * c')     h' = o * tanh(c')

    ``W_x*: (H, I)``, ``W_h*: (H, H)``, ``b_*: (H,)`` and the diagonal peepholes ``p_i, p_f, p_o: (H,)``,
    all uniform on ``[-1/sqrt(H), 1/sqrt(H)]``.
    """

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        bound = 1 / math.sqrt(hidden_size)
        shapes = {}
        for gate in "ifgo":
            shapes[f"W_x{gate}"], shapes[f"W_h{gate}"] = (hidden_size, input_size), (hidden_size, hidden_size)
            shapes[f"b_{gate}"] = (hidden_size,)
        shapes.update({f"p_{gate}": (hidden_size,) for gate in "ifo"})
        for name, shape in shapes.items():
            p = nn.Parameter(backend.xp.empty(shape, dtype=numpy.float32))
            setattr(self, name, nn.init.uniform_(p, -bound, bound))

    def forward(self, x):
        h = c = zeros(x.shape[1], self.hidden_size, dtype=x.dtype, device=x.device)
        outputs = []
        for t in range(x.shape[0]):
            h, c = self.step(x[t], h, c)
            outputs.append(h)
        return F.stack(outputs), (h, c)

    def step(self, x, h, c):
        """One step: ``x: (N, I)``, ``h, c: (N, H)`` to ``(h', c')``, eight separate products."""
        def gate(name):
            return (F.linear(x, getattr(self, f"W_x{name}"), getattr(self, f"b_{name}"))
                    + F.linear(h, getattr(self, f"W_h{name}")))

        i = F.sigmoid(gate("i") + self.p_i * c)
        f = F.sigmoid(gate("f") + self.p_f * c)
        g = F.tanh(gate("g"))
        c = f * c + i * g
        o = F.sigmoid(gate("o") + self.p_o * c)
        return o * F.tanh(c), c


def timed_passes(model, x):
    """``{pass: callable}`` for a dlscratch model whose output comes first: forward under ``no_grad``,
    and ``zero_grad``, forward, ``output.sum()``, backward."""
    def forward():
        with no_grad():
            model(x)

    def forward_backward():
        model.zero_grad()
        model(x)[0].sum().backward()

    return {FORWARD: forward, FORWARD_BACKWARD: forward_backward}


def dlscratch_variants(sizes, batch):
    """``{(variant, pass): callable}`` for ``nn.LSTM`` and the per-gate loop, on dlscratch's device."""
    input_size, hidden_size, _ = sizes
    x = Tensor(backend.xp.asarray(random_sequence(sizes, batch)))
    variants = {}
    for name, model, path in ((NN_LSTM, nn.LSTM(input_size, hidden_size), on_the_fast_path),
                              (NN_LSTM_REFERENCE, nn.LSTM(input_size, hidden_size), on_the_reference_path),
                              (PER_GATE, PerGateLSTM(input_size, hidden_size), on_the_fast_path)):
        variants.update({(name, pass_): path(fn) for pass_, fn in timed_passes(model, x).items()})
    return variants


def torch_label(pt):
    """The PyTorch rows' variant name; ``pt``: PyTorch's side (a ``TorchDevice``)."""
    return f"{pt.label} nn.LSTM"


def torch_variants(sizes, batch, pt):
    """``{(variant, pass): callable}`` for ``torch.nn.LSTM`` on ``pt``'s device; on CUDA each call ends synchronised."""
    import torch

    input_size, hidden_size, _ = sizes
    model = torch.nn.LSTM(input_size, hidden_size).to(pt.device)
    x = pt.tensor(random_sequence(sizes, batch))

    def forward():
        with torch.no_grad():
            model(x)

    def forward_backward():
        model.zero_grad()
        model(x)[0].sum().backward()

    label = torch_label(pt)
    return {(label, FORWARD): pt.timed(forward), (label, FORWARD_BACKWARD): pt.timed(forward_backward)}


def dezero_variants(sizes, batch):
    """``{(variant, pass): callable}`` for DeZero 0.0.13's LSTM, step by step, on the CPU."""
    fns = dezero_models.lstm_variants(random_sequence(sizes, batch), hidden_size=sizes[1])
    return {(DEZERO, pass_): fn for pass_, fn in fns.items()}


def gemm_variants(sizes, batches, square):
    """NumPy's (or CuPy's) own matrix products: ``{(batch, name): (callable, FLOPs)}`` for each batch's
    input GEMM ``(T*N, I) @ (I, 4H)`` and recurrent GEMM ``(N, H) @ (H, 4H)``, and one square GEMM
    (batch ``"-"``)."""
    input_size, hidden_size, steps = sizes
    xp, gates = backend.xp, 4 * hidden_size
    variants = {}
    for batch in batches:
        for m, k in ((steps * batch, input_size), (batch, hidden_size)):
            a, b = xp.ones((m, k), dtype=numpy.float32), xp.ones((k, gates), dtype=numpy.float32)
            variants[str(batch), f"GEMM ({m}, {k}) @ ({k}, {gates})"] = (lambda a=a, b=b: a @ b, 2 * m * k * gates)
    sq = xp.ones((square, square), dtype=numpy.float32)
    variants["-", f"GEMM {square}^3"] = (lambda: sq @ sq, 2 * square**3)
    return variants


def gemm_rows(sizes, batches, square, repeat, quick):
    """Time the GEMMs, interleaved: their table rows, and the peak (the best GFLOP/s of them)."""
    gemms = gemm_variants(sizes, batches, square)
    times = measure_interleaved({key: fn for key, (fn, _) in gemms.items()}, repeat=repeat,
                                number=1 if quick else None, pause=0 if quick else 0.2)
    gflops = {key: gemms[key][1] / median(times[key]) / 1e9 for key in gemms}
    peak = max(gflops.values())
    rows = [[batch, name, "-", f"{median(times[batch, name]) * 1e3:.4g}", f"{gflops[batch, name]:.3g}",
             f"{gflops[batch, name] / peak * 100:.1f}", "-"] for batch, name in gemms]
    return rows, peak


def per_round(times, reference):
    """Each round's time over the reference's time in the same round."""
    return [t / r for t, r in zip(times, reference)]


def rows_for(sizes, batch, repeat, quick, peak, pt):
    """Table rows for one batch size, every variant's two passes interleaved; and the per-round ratios of
    ``nn.LSTM``'s forward+backward time to each reference that ran: ``{"PyTorch" | "DeZero": [ratio, ...]}``.
    ``pt``: PyTorch's side (a ``TorchDevice``).

    The "x PyTorch" column is the median over the rounds of each row's time over PyTorch's same pass.
    """
    variants = dlscratch_variants(sizes, batch)
    reference = None
    if pt.runs:
        reference = torch_label(pt)
        variants.update(torch_variants(sizes, batch, pt))
    if dezero_available():
        variants.update(dezero_variants(sizes, batch))
    times = measure_interleaved(variants, repeat=repeat, number=1 if quick else None, pause=0 if quick else 0.2)
    rows = []
    for (variant, pass_), t in times.items():
        seconds = median(t)
        gflops = lstm_flops(sizes, batch) * (3 if pass_ == FORWARD_BACKWARD else 1) / seconds / 1e9
        ratio = "-" if reference is None else f"{median(per_round(t, times[reference, pass_])):.2f}"
        rows.append([str(batch), variant, pass_, f"{seconds * 1e3:.4g}", f"{gflops:.3g}", f"{gflops / peak * 100:.1f}",
                     ratio])
    ours = times[NN_LSTM, FORWARD_BACKWARD]
    ratios = {"reference path": per_round(times[NN_LSTM_REFERENCE, FORWARD_BACKWARD], ours)}
    if reference is not None:
        ratios["PyTorch"] = per_round(ours, times[reference, FORWARD_BACKWARD])
    if (DEZERO, FORWARD_BACKWARD) in times:
        ratios["DeZero"] = per_round(ours, times[DEZERO, FORWARD_BACKWARD])
    return rows, ratios


def run(repeat=None, quick=False):
    """Time the GEMMs, then every variant at every batch size; print the table and the targets; return
    ``(headers, rows)``."""
    sizes, batches = (QUICK_SIZES, QUICK_BATCHES) if quick else (SIZES, BATCHES)
    square = QUICK_SQUARE_GEMM if quick else SQUARE_GEMM
    repeat = repeat or (QUICK_REPEAT if quick else REPEAT)
    manual_seed(0)  # repeatable initial weights
    pt = torch_device.choose()
    input_size, hidden_size, steps = sizes
    print(f"lstm: one LSTM layer, input {input_size}, hidden {hidden_size}, {steps} steps, batch "
          f"{', '.join(map(str, batches))}, float32, device {backend.device()}; forward under no_grad, "
          f"forward+backward with output.sum() as the loss; median of {repeat} interleaved repeats, and of "
          "the ratio in each round")
    print(pt.header)
    if backend.name() == "numpy":
        for line in blas_lines():
            print(line)
    rows, peak = gemm_rows(sizes, batches, square, repeat, quick)
    ratios = {}
    for batch in batches:
        batch_rows, batch_ratios = rows_for(sizes, batch, repeat, quick, peak, pt)
        rows += batch_rows
        ratios.update({(batch, reference): paired for reference, paired in batch_ratios.items()})
    print(format_table(HEADERS, rows))
    for line in [reference_line(ratios)] + summary(ratios, quick, pt):
        print(line)
    library = "NumPy" if backend.name() == "numpy" else "CuPy"
    print(f"GEMM peak: the best of {library}'s own matrix products above, measured in this run ({peak:.0f} GFLOP/s; "
          "PyTorch brings its own GEMM, which can exceed it); GFLOP/s count the gate GEMMs only, 2*T*N*4H*(I+H) "
          "per forward and 3x that for forward+backward")
    return HEADERS, rows


def reference_line(ratios):
    """The reference path's forward+backward time over the fast path's, at each batch size."""
    parts = [f"{median(paired):.2f} at batch {batch}" for (batch, name), paired in ratios.items()
             if name == "reference path"]
    return (f"nn.LSTM forward+backward, reference path time / fast path time: {', '.join(parts)} "
            "(what the fast path's tricks buy)")


def summary(ratios, quick, pt):
    """One line per target. ``ratios``: ``(batch, "PyTorch" | "DeZero")`` -> per round, ``nn.LSTM``'s
    forward+backward time over the reference's; ``pt``: PyTorch's side (a ``TorchDevice``). A target is
    met when it holds in at least ``MET_SHARE`` of the rounds: on a noisy machine a median a hair below 1
    is a tie, not a win. DeZero runs on the CPU: a GPU run does not judge against it."""
    if quick:
        return ["quick mode: tiny sizes, a smoke test, not a measurement"]
    targets = [
        (1, "PyTorch", PYTORCH_BATCH_1_TARGET, "no slower than PyTorch"),
        (128, "PyTorch", PYTORCH_BATCH_128_TARGET, f"within {PYTORCH_BATCH_128_TARGET:g}x of PyTorch"),
        (1, "DeZero", DEZERO_TARGET, f">= {DEZERO_TARGET:g}x faster than DeZero 0.0.13"),
    ]
    missing = {"PyTorch": pt.missing, "DeZero": "DeZero 0.0.13 does not import here"}
    if pt.gpu:
        missing["DeZero"] = "DeZero 0.0.13 runs on the CPU, dlscratch on the GPU"
    lines = []
    for batch, reference, bound, target in targets:
        head = f"nn.LSTM forward+backward at batch {batch}"
        paired = None if reference == "DeZero" and pt.gpu else ratios.get((batch, reference))
        if paired is None:
            lines.append(f"{head} against {reference}: not judged ({missing[reference]})")
            continue
        if reference == "DeZero":
            speedups = [1 / r for r in paired]
            holds = [s >= bound for s in speedups]
            figure = f"{median(speedups):.1f}x faster than DeZero 0.0.13"
        else:
            holds = [r <= bound for r in paired]
            figure = f"{median(paired):.2f}x PyTorch's time"
        met = sum(holds) >= MET_SHARE * len(holds)
        lines.append(f"{head}: {figure}, holds in {sum(holds)} of {len(holds)} rounds {verdict(met, target)}")
    return lines


def blas_lines(maps="/proc/self/maps", cpuinfo="/proc/cpuinfo", environ=os.environ):
    """What to print about NumPy's BLAS: the OpenBLAS core type and who chose it, and a hint when it leaves
    AVX-512 unused. ``environ``: the environment this process started with."""
    core = openblas_corename(maps)
    if core is None:
        return []
    forced = environ.get("OPENBLAS_CORETYPE")
    chosen = f"as OPENBLAS_CORETYPE={forced} in the environment asks" if forced else "chosen by OpenBLAS for this CPU"
    lines = [f"NumPy's BLAS: OpenBLAS, running its {core!r} kernels, {chosen}"]
    if core.lower() == "haswell" and cpu_has_avx512(cpuinfo):
        fix = "unsetting OPENBLAS_CORETYPE (or setting it to SKYLAKEX)" if forced else "OPENBLAS_CORETYPE=SKYLAKEX"
        lines.append(f"hint: {AVX2_ON_AVX512}; {fix} before starting Python {SKYLAKEX_GAIN}")
    return lines


def openblas_corename(maps="/proc/self/maps"):
    """The core type OpenBLAS picked when it loaded (``'Haswell'``, ``'SkylakeX'``, ...), asked of the
    library NumPy already loaded; None when NumPy's BLAS is not OpenBLAS or on any failure."""
    try:
        if "openblas" not in numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"].lower():
            return None
        for path in mapped_libraries(maps, "openblas"):
            library = ctypes.CDLL(path)  # already loaded: the same handle, nothing is initialised again
            for symbol in CORENAME_SYMBOLS:
                corename = getattr(library, symbol, None)
                if corename is not None:
                    corename.restype = ctypes.c_char_p
                    return corename().decode()
    except Exception:  # no /proc, an older NumPy's show_config, a library that does not load: no name
        return None
    return None


def mapped_libraries(maps, word):
    """Paths of the files mapped into this process (``/proc/self/maps``) whose names contain ``word``."""
    with open(maps) as lines:
        paths = [fields[5] for fields in map(str.split, lines) if len(fields) >= 6]  # the sixth field: the path
    return list(dict.fromkeys(p for p in paths if word in os.path.basename(p).lower()))


def cpu_has_avx512(cpuinfo="/proc/cpuinfo"):
    """True when the CPU's flags (``/proc/cpuinfo``) include ``avx512f``; False when they cannot be read."""
    try:
        with open(cpuinfo) as lines:
            return any(line.startswith("flags") and "avx512f" in line.split() for line in lines)
    except OSError:
        return False
