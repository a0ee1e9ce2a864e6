"""Nothing GPU-only runs on the CPU path: a CPU training run (a CNN with pooling, an LSTM, every optimizer, ``fit``)
never enters the fast path's CUDA kernels, fit's checks on the device or the stand-in. Whether a GPU version runs
is decided in the module that also holds the CPU version (``backend.is_gpu_array(x) and backend.has_kernels()``)."""

import collections
import os
import sys

import dlscratch
from dlscratch import nn, optim
from dlscratch.data import DataLoader, TensorDataset
from dlscratch.training import fit

PACKAGE = os.path.dirname(os.path.abspath(dlscratch.__file__)) + os.sep
GPU_ONLY = ("fast/conv_kernels.py", "fast/lstm_kernels.py", "fast/optim_kernels.py", "fast/pooling_kernels.py",
            "fast/fit_steps.py", "fast/optim_halt.py")


def gpu_only_calls(program):
    """``Counter`` of the calls into the GPU-only modules that ``program()`` makes, as ``file:function``."""
    seen = collections.Counter()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(PACKAGE):
            where = frame.f_code.co_filename[len(PACKAGE):].replace(os.sep, "/")
            if where.startswith(GPU_ONLY):
                seen[f"{where}:{frame.f_code.co_name}"] += 1

    sys.setprofile(profile)
    try:
        program()
    finally:
        sys.setprofile(None)
    return seen


def test_a_cpu_training_run_calls_nothing_gpu_only():
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(36, 10)).to("cpu")
    lstm = nn.LSTM(5, 6).to("cpu")
    x, y = dlscratch.randn(16, 1, 8, 8, device="cpu"), dlscratch.randint(0, 10, (16,), device="cpu")
    sequence = dlscratch.randn(3, 2, 5, device="cpu")

    def train():
        for make in (optim.SGD, optim.Adam, optim.Adadelta, optim.RMSprop):
            optimizer = make([*cnn.parameters(), *lstm.parameters()], lr=0.01)
            loss = nn.functional.cross_entropy(cnn(x), y) + lstm(sequence)[0].sum()
            loss.backward()
            optimizer.step()
        fit(cnn, nn.CrossEntropyLoss(), optim.SGD(cnn.parameters(), lr=0.01, momentum=0.9),
            DataLoader(TensorDataset(x, y), batch_size=8), 1, progress=False)

    train()  # the first run imports what it uses (the stand-in, where it plays the GPU)
    assert gpu_only_calls(train) == {}


def test_the_check_sees_a_gpu_only_call():
    from dlscratch.fast import optim_halt

    def enter():
        with optim_halt.halting_on(None):
            pass

    assert "fast/optim_halt.py:halting_on" in gpu_only_calls(enter)
