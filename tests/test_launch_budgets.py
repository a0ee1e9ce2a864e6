"""What a training step makes the GPU do, counted by the ledger on the strict CuPy stand-in (issue 28's budgets).

Issue 28 sets each workload's budget at eager PyTorch's own count. The fast path is not there yet everywhere;
``REACHED`` holds what it launches today, so that no change makes a step launch more again, and ``BUDGET``
the goal. Every fast training step already waits for the device zero times.
"""

import pytest

from dlscratch import backend as B
from dlscratch.bench.workloads import WORKLOADS

#: issue 28's budget: launches per step (kernels, memsets and copies), PyTorch's count on an H100
BUDGET = {"MLP": 23, "Keras CNN": 52, "Qiita CNN": 33, "nn.LSTM ": 416, "nn.LSTMCell": 15}
#: launches per step the fast path reaches now (was at commit 8262fe3: 63, 105, 149, 1301, 23)
REACHED = {"MLP": 25, "Keras CNN": 60, "Qiita CNN": 39, "nn.LSTM ": 423, "nn.LSTMCell": 21}


def key_of(name):
    return next(key for key in REACHED if name.startswith(key))


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: key_of(w.name).strip())
def test_a_fast_training_step_never_waits_and_launches_no_more_than_reached(stand_in, fast_path, workload):
    step = workload.build()
    step()  # the first step makes the optimizer's state and the kept buffers
    with B.ledger() as book:
        step()
    key = key_of(workload.name)
    assert book.waits == 0 and book.copies_to_host == 0, book.table()
    assert book.launches <= REACHED[key], (
        f"{workload.name}: {book.launches} launches per step, more than the {REACHED[key]} reached before "
        f"(issue 28's budget: {BUDGET[key]})\n{book.table()}")
