"""What a training step makes the GPU do, counted by the ledger on the strict CuPy stand-in.

Issue 28 brought each workload down to eager PyTorch's own count on an H100 (``bench/workloads.py``); issue 42
asked for fewer launches than PyTorch, which an eager framework reaches only by launching kernels that do more: a
bias and its ReLU in one kernel (``fast/bias_relu.py``), the LSTM cell's biases inside its point-wise kernel
(``fast/lstm.py``), no split-K reduce in the LSTM layer's backward step (``fast/lstm_layer.py``), no fill for
backward's seed (``fast/kept_arrays.py``) and one fused optimizer kernel per parameter (``fast/optim.py``). Issue 51
gave back one launch per parameter but the first (MLP 16 -> 19, Keras CNN 41 -> 48, Qiita CNN 25 -> 30): the one
launch for all parameters needed them moved into a flat buffer behind the user's references. Every fast training
step must also wait for the device zero times; ``fit`` adds no wait between two progress updates:
tests/test_fit_on_the_device.py.
"""

import pytest

from dlscratch import backend as B
from dlscratch.bench.workloads import WORKLOADS, cupti_launches

#: launches per step (kernels, memsets and copies): issue 42's targets, with issue 51's optimizer launch per parameter
TARGET = {"MLP": 19, "Keras CNN": 48, "Qiita CNN": 30, "nn.LSTMCell": 15, "nn.LSTM ": 340}


def key_of(name):
    return next(key for key in TARGET if name.startswith(key))


def test_every_target_is_below_pytorchs_count_but_the_cells():
    """The targets are fewer launches than eager PyTorch's (CUPTI's counts), but for the LSTM cell: its target is
    PyTorch's own 15."""
    for workload in WORKLOADS:
        key = key_of(workload.name)
        pytorch = cupti_launches(workload.pytorch)
        assert TARGET[key] <= pytorch and (TARGET[key] < pytorch or key == "nn.LSTMCell"), (workload.name, pytorch)


@pytest.mark.slow
@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: key_of(w.name).strip())
def test_a_fast_training_step_never_waits_and_keeps_to_its_target(stand_in, fast_path, workload):
    step = workload.build()
    step()  # the first step makes the optimizer's state and the kept buffers
    with B.ledger() as book:
        step()
    assert book.waits == 0 and book.copies_to_host == 0, book.table()
    most = TARGET[key_of(workload.name)]
    assert book.launches <= most, f"{workload.name}: {book.launches} launches per step, over {most}\n{book.table()}"
