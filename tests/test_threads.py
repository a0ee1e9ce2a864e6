"""Copies split over threads: the parts cover the range once, errors propagate, and the threaded
im2col, batch-last transpose and conv input gradient equal their one-thread results."""

import os
import subprocess
import sys
import threading
from pathlib import Path

import fork_scenarios
import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch.fast import threads, tuning
from dlscratch.fast.im2col import im2col_array
from dlscratch.fast.layout import to_batch_last


@pytest.fixture
def always_threaded(monkeypatch):
    """Every job counts as large, and two cores are assumed, so even tiny arrays go to threads."""
    monkeypatch.setattr(tuning, "MIN_THREADED_NUMBERS", 0)
    monkeypatch.setattr(threads, "cores", lambda: 2)


@pytest.mark.parametrize("length", [1, 2, 3, 7])
def test_parts_cover_the_range_once_on_other_threads(always_threaded, length):
    seen, names, lock = [], set(), threading.Lock()

    def record(a, b):
        with lock:
            seen.extend(range(a, b))
            names.add(threading.current_thread().name)

    threads.in_parts(record, length, numbers=10**9)
    assert sorted(seen) == list(range(length))
    if length == 1:  # one part: no thread to hand it to
        assert names == {threading.current_thread().name}
    else:
        assert len(names) >= 1 and all(name.startswith("dlscratch-copy") for name in names)


def test_small_jobs_stay_on_the_calling_thread(monkeypatch):
    monkeypatch.setattr(threads, "cores", lambda: 2)
    calls = []
    threads.in_parts(lambda a, b: calls.append((a, b, threading.current_thread())), 10, numbers=100)
    assert calls == [(0, 10, threading.current_thread())]


def test_an_error_in_a_part_reaches_the_caller(always_threaded):
    def fail(a, b):
        if a > 0:
            raise ValueError(f"part {a}:{b} failed")

    with pytest.raises(ValueError, match="part 2:4 failed"):
        threads.in_parts(fail, 4, numbers=10**9)


@pytest.mark.parametrize("method", ["slices", "strided"])
@pytest.mark.parametrize("shape, k, s, p", [((3, 5, 7, 6), 3, 1, 1), ((2, 3, 9, 8), (2, 3), (2, 1), (1, 0))])
def test_threaded_im2col_equals_the_loops(always_threaded, method, shape, k, s, p):
    x = np.random.default_rng(0).integers(-9, 10, shape).astype(np.float32)
    assert np.array_equal(im2col_array(x, k, s, p, method=method), im2col_array(x, k, s, p, method="loops"))


@pytest.mark.parametrize("shape", [(3, 5, 4, 6), (33, 3, 2, 2), (1, 7, 50, 50)])
def test_threaded_batch_last_copy_equals_a_transpose(always_threaded, shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    out = to_batch_last(x)
    assert out.shape == shape[1:] + shape[:1]
    assert np.array_equal(out, x.transpose(1, 2, 3, 0))


def test_threaded_conv_gradients_equal_one_thread(monkeypatch):
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((4, 5, 9, 7)).astype(np.float32), rng.standard_normal((6, 5, 3, 3)).astype(np.float32)
    gy = rng.standard_normal((4, 6, 9, 7)).astype(np.float32)

    def gradients():
        xt, wt = dlscratch.tensor(x, requires_grad=True), dlscratch.tensor(w, requires_grad=True)
        y = F.conv2d(xt, wt, padding=1)
        y.backward(gy)
        return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()

    one = gradients()
    monkeypatch.setattr(tuning, "MIN_THREADED_NUMBERS", 0)
    monkeypatch.setattr(threads, "cores", lambda: 2)
    for a, b in zip(gradients(), one):
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork exists only on POSIX systems")
@pytest.mark.parametrize("scenario", sorted(fork_scenarios.SCENARIOS))
def test_forks_in_a_fresh_process(scenario):
    """Each scenario of tests/fork_scenarios.py (a forked child gets copy threads of its own; a fork sees no
    copy thread and both sides copy again) in a fresh Python, where no other thread runs: forking this
    process, whose other tests leave threads running, would be unsafe whatever dlscratch does."""
    root = str(Path(dlscratch.__file__).parent.parent)  # the child imports the dlscratch under test
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, fork_scenarios.__file__, scenario], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stdout + done.stderr
