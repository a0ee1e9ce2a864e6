"""Suite "precision": one MNIST-sized model in float32, float16, int8 and binary weights: its size, its speed and
how far its logits move from float32's.

Two models: an MLP 784-1024-1024-10 and the small CNN of the Qiita post "深層学習外伝 ~GPUプログラミング編~"
(2020; ``cnn.article_net``), on seeded random MNIST-shaped batches. Each runs as

- **float32**: the default; an SGD training step, and inference under ``no_grad``;
- **float16 autocast**: ``amp.autocast`` with float32 master weights and a ``GradScaler`` (the training step), and
  inference in the same block; the weights stored are still float32;
- **float16 half()**: a ``.half()`` copy fed float16 inputs, inference only, stored in half the bytes;
- **int8**: ``quantization.quantize_model`` calibrated on a few batches, inference only;
- **binary**: ``nn.binary`` layers with the float32 model's weights as shadow weights, inference only, one bit a
  weight as deployed (``deployed_bytes``). Its logits are far from float32's: BinaryConnect trains a network
  with binary weights, it does not round a float32 one.

Columns: the weights' bytes (``quantization.stored_bytes``; ``nn.binary.deployed_bytes`` for binary), the median
milliseconds of one inference batch and of one training step, and the largest absolute difference of the
inference logits from float32's. On the CPU the last line says how much slower float16 is: NumPy has no
float16 arithmetic, so every operation converts to float32 and back (the fast path's GEMMs through float32 BLAS).
"""

import copy
import types

import numpy

from .. import backend, nn, optim
from ..amp import GradScaler, autocast
from ..device import get_default_device
from ..engine.creation import manual_seed
from ..engine.grad_mode import no_grad
from ..engine.tensor import Tensor
from ..nn.binary import BinaryConv2d, BinaryLinear, deployed_bytes
from ..operations.loss import cross_entropy
from ..quantization import quantize_model, stored_bytes
from .cnn import article_net
from .timing import format_table, measure_interleaved, median, on_the_fast_path

BATCH, QUICK_BATCH = 64, 2
REPEAT, QUICK_REPEAT = 3, 1
CALIBRATION_BATCHES = 4
LR = 0.01
HEADERS = ["model", "precision", "weight bytes", "inference ms", "train step ms", "max |logit - float32|"]
PRECISIONS = ["float32", "float16 autocast", "float16 half()", "int8", "binary"]


def mlp(layers):
    """The MLP 784-1024-1024-10 from ``layers`` (``dlscratch.nn`` or a namespace like it); input (N, 1, 28, 28)."""
    return layers.Sequential(layers.Flatten(), layers.Linear(784, 1024), layers.ReLU(), layers.Linear(1024, 1024),
                             layers.ReLU(), layers.Linear(1024, 10))


MODELS = {"MLP 784-1024-1024-10": mlp, "article CNN": article_net}
#: ``dlscratch.nn`` with the binary layers in place of Linear and Conv2d
BINARY_LAYERS = types.SimpleNamespace(**{**vars(nn), "Linear": BinaryLinear, "Conv2d": BinaryConv2d})


def batch(size, seed=0):
    """Seeded MNIST-shaped images ``(size, 1, 28, 28)`` in [0, 1) and labels ``(size,)``, on the current device."""
    rng = numpy.random.default_rng(seed)
    x = rng.random((size, 1, 28, 28), dtype=numpy.float32)
    return Tensor(backend.xp.asarray(x)), Tensor(backend.xp.asarray(rng.integers(0, 10, size)))


def inference(model, x, mixed=False):
    """``model(x)`` without a graph, inside ``autocast`` when ``mixed``; a callable that returns the logits."""
    def forward():
        with no_grad(), autocast(device_type(), dtype=numpy.float16, enabled=mixed):
            return model(x)

    return forward


def training_step(model, x, y, mixed):
    """One SGD step on ``(x, y)``; with ``mixed``, in ``autocast`` and through a ``GradScaler``."""
    opt = optim.SGD(model.parameters(), lr=LR)
    scaler = GradScaler(device_type(), enabled=mixed)

    def step():
        opt.zero_grad()
        with autocast(device_type(), dtype=numpy.float16, enabled=mixed):
            loss = cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    return step


def device_type():
    """Where the backend computes, as autocast and GradScaler name it: "cuda" or "cpu"."""
    return get_default_device().type


def variants_of(build, size):
    """``{precision: (weight bytes, inference callable, training callable or None)}`` of one model."""
    manual_seed(0)
    model = build(nn)
    x, y = batch(size)
    binary = build(BINARY_LAYERS)
    binary.load_state_dict(model.state_dict())
    int8 = quantize_model(model, [batch(size, seed)[0] for seed in range(1, CALIBRATION_BATCHES + 1)])
    half = copy.deepcopy(model).half()
    return {
        "float32": (stored_bytes(model), inference(model, x), training_step(copy.deepcopy(model), x, y, False)),
        "float16 autocast": (stored_bytes(model), inference(model, x, mixed=True),
                             training_step(copy.deepcopy(model), x, y, True)),
        "float16 half()": (stored_bytes(half), inference(half, x.astype(numpy.float16)), None),
        "int8": (stored_bytes(int8), inference(int8, x), None),
        "binary": (deployed_bytes(binary), inference(binary, x), None),
    }


def largest_differences(variants):
    """``{precision: largest |logits - float32 logits|}``, in float64."""
    def logits(precision):
        return backend.to_cpu(variants[precision][1]().data).astype(numpy.float64)

    exact = logits("float32")
    return {precision: float(numpy.abs(logits(precision) - exact).max()) for precision in variants}


def timings(name, variants, repeat, quick):
    """``{(name, precision, "inference" or "train"): median seconds}``."""
    timed = {}
    for precision, (_, forward, step) in variants.items():
        timed[name, precision, "inference"] = on_the_fast_path(forward)
        if step is not None:
            timed[name, precision, "train"] = on_the_fast_path(step)
    times = measure_interleaved(timed, repeat=repeat, number=1 if quick else None, pause=0 if quick else 0.1)
    return {key: median(t) for key, t in times.items()}


def rows_of(name, variants, seconds, differences):
    """The table's rows of model ``name``: bytes, milliseconds (``-`` where it does not train) and differences."""
    rows = []
    for precision, (nbytes, _, step) in variants.items():
        train = f"{seconds[name, precision, 'train'] * 1e3:.2f}" if step is not None else "-"
        rows.append([name, precision, str(nbytes), f"{seconds[name, precision, 'inference'] * 1e3:.2f}", train,
                     f"{differences[precision]:.2e}"])
    return rows


def float16_line(seconds, names):
    """What float16 costs or buys against float32 on this device, measured."""
    def ratio(name, what):
        return seconds[name, "float16 autocast", what] / seconds[name, "float32", what]

    ratios = ", ".join(f"{name}: inference x{ratio(name, 'inference'):.1f}, training step x{ratio(name, 'train'):.1f}"
                       for name in names)
    if backend.device() == "cpu":
        return ("float16 is slower in NumPy on a CPU: it has no float16 arithmetic, so every operation converts each "
                "element to float32 and back (the fast path's GEMMs run in float32 BLAS and round once; NumPy's own "
                f"float16 matmul is a plain loop, hundreds of times slower); autocast time over float32's: {ratios}")
    return f"float16 on the GPU (CuPy's float16 GEMMs, tensor cores where cuBLAS picks them); over float32: {ratios}"


def run(repeat=None, quick=False):
    """Build, measure and time every model in every precision, print the table; return ``(headers, rows)``."""
    size = QUICK_BATCH if quick else BATCH
    repeat = repeat or (QUICK_REPEAT if quick else REPEAT)
    print(f"precision: MNIST-sized models in float32, float16, int8 and binary weights, batch {size}, "
          f"device {backend.device()}; median of {repeat} interleaved repeats; PyTorch not compared here")
    rows, seconds = [], {}
    for name, build in MODELS.items():
        variants = variants_of(build, size)
        seconds.update(timings(name, variants, repeat, quick))
        rows += rows_of(name, variants, seconds, largest_differences(variants))
    print(format_table(HEADERS, rows))
    print(float16_line(seconds, list(MODELS)))
    return HEADERS, rows
