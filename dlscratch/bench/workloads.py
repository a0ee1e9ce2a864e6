"""The five training steps of the GPU profile that docs/gpu.md describes, and what CUPTI counted.

Each builder returns ``step()``, one full training step on the current backend; ``quick=True`` gives the
same step on tiny sizes. The launches suite counts them with ``backend.ledger()``, and
``tools/calibrate_ledger.py`` runs this module on the library as it was when profiled (the tool's ``COMMIT``),
so it uses only API that existed there.

The counts per step are CUPTI's, through ``torch.profiler``, in that profile (one NVIDIA H100 80GB, PyTorch 2.11
with CUDA 13), copied here from its logs, which are not part of the repository: ``Workload.pytorch`` for eager
PyTorch, ``Workload.cupti_profiled`` for the profiled dlscratch (``waits`` there are its
``cudaStreamSynchronize`` calls). Keys are the ledger's attribute names; a category that is absent was counted
as 0.
"""

from collections.abc import Callable
from typing import NamedTuple

import numpy

from .. import Tensor, backend, nn  # from the package: tools/calibrate_ledger.py runs this on an older layout
from . import cnn, mlp


def mlp_step(quick=False):
    """MLP 784-1000-10 with ReLU, SGD with momentum, batch 128."""
    sizes, batch = ((20, 16, 10), 4) if quick else ((784, 1000, 10), 128)
    return mlp.dlscratch_step(sizes, batch)


def keras_cnn_step(quick=False):
    """The Keras MNIST CNN (with dropout), SGD, batch 128."""
    return cnn.dlscratch_step("Keras CNN", 2 if quick else 128)


def article_cnn_step(quick=False):
    """The Qiita article's small CNN, Adam, batch 8."""
    return cnn.dlscratch_step("article net", 2 if quick else 8)


def lstm_sizes(quick):
    """``(input_size, hidden_size, steps, batch)`` of the LSTM workloads."""
    return (20, 16, 5, 2) if quick else (700, 500, 80, 32)


def lstm_step(quick=False):
    """``nn.LSTM`` 700->500 over 80 time steps at batch 32: forward, ``output.sum()``, backward, the input's
    gradient included (the profiled step computed it: its kernels include that GEMM)."""
    input_size, hidden_size, steps, batch = lstm_sizes(quick)
    model = nn.LSTM(input_size, hidden_size)
    x = _leaf((steps, batch, input_size))

    def step():
        model.zero_grad()
        x.grad = None
        model(x)[0].sum().backward()

    return step


def lstm_cell_step(quick=False):
    """``nn.LSTMCell`` 700->500, one step at batch 32 inside a sequence: the input and the state need
    gradients; forward, ``h.sum() + c.sum()``, backward. (This is the variant whose kernels match the
    profile's by name and number: six GEMMs, four reductions, four additions.)"""
    input_size, hidden_size, _, batch = lstm_sizes(quick)
    cell = nn.LSTMCell(input_size, hidden_size)
    x, h0, c0 = _leaf((batch, input_size)), _leaf((batch, hidden_size)), _leaf((batch, hidden_size))

    def step():
        cell.zero_grad()
        x.grad = h0.grad = c0.grad = None
        h, c = cell(x, (h0, c0))
        (h.sum() + c.sum()).backward()

    return step


def _leaf(shape):
    """A seeded standard-normal float32 ``Tensor`` of ``shape`` on the current backend, needing a gradient."""
    host = numpy.random.default_rng(0).standard_normal(shape, dtype=numpy.float32)
    return Tensor(backend.xp.asarray(host), requires_grad=True)


class Workload(NamedTuple):
    """One profiled training step: its builder, how many steps to count, and CUPTI's counts per step."""

    name: str
    build: Callable  # build(quick=False) -> step()
    counted_steps: int
    pytorch: dict  # eager PyTorch on the same step
    cupti_profiled: dict  # the profiled dlscratch on the same step
    pytorch_note: str = ""


WORKLOADS = [
    Workload("MLP 784-1000-10, SGD momentum, batch 128", mlp_step, 3,
             {"kernels": 22, "memsets": 1},
             {"kernels": 58, "memsets": 3, "copies_to_host": 2, "waits": 2}),
    Workload("Keras CNN, SGD, batch 128", keras_cnn_step, 3,
             {"kernels": 46, "memsets": 6},
             {"kernels": 98, "memsets": 5, "copies_to_host": 2, "waits": 2}),
    Workload("Qiita CNN, Adam, batch 8", article_cnn_step, 3,
             {"kernels": 33},
             {"kernels": 143, "memsets": 4, "copies_to_host": 2, "waits": 2},
             pytorch_note="PyTorch's foreach Adam; 68 kernels with a per-parameter loop"),
    Workload("nn.LSTM 700->500, 80 steps, batch 32, fwd+bwd", lstm_step, 1,
             {"kernels": 334, "memsets": 82},
             {"kernels": 738, "memsets": 163, "copies_device": 400}),
    Workload("nn.LSTMCell 700->500, one step, batch 32, fwd+bwd", lstm_cell_step, 3,
             {"kernels": 14, "copies_device": 1},
             {"kernels": 20, "memsets": 3}),
]

#: the categories CUPTI counted, in the ledger's attribute names
CATEGORIES = ["kernels", "memsets", "copies_device", "copies_to_host", "copies_to_device", "waits"]
COPIES = ["copies_device", "copies_to_host", "copies_to_device"]


def cupti_launches(counts):
    """What the GPU queued per step in ``counts`` (a ``pytorch`` or ``cupti_profiled`` dict): kernels, memsets
    and copies, as the ledger's ``launches`` counts them."""
    return sum(counts.get(category, 0) for category in ["kernels", "memsets"] + COPIES)
