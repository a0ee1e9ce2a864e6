"""Copies split over threads: the parts cover the range once, errors propagate, and the threaded
im2col, batch-last transpose and conv input gradient equal their one-thread results."""

import os
import signal
import threading
import time

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
def test_a_forked_child_gets_threads_of_its_own(always_threaded):
    both_started = threading.Barrier(2, timeout=10)
    threads.in_parts(lambda a, b: both_started.wait(), 2, numbers=10**9)  # the parent's pool: two idle threads
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child inherits the pool without its threads; reusing it would wait forever
        seen = []
        threads.in_parts(lambda a, b: seen.extend(range(a, b)), 4, numbers=10**9)
        os.write(write, bytes(sorted(seen)))
        os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 10
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung on the parent's thread pool")
        time.sleep(0.01)
    assert os.read(read, 16) == bytes([0, 1, 2, 3])


def test_a_fork_sees_no_copy_threads_and_both_sides_copy_again(always_threaded):
    """The copy threads stop before os.fork(): the child starts single-threaded (no lock held by a
    thread that does not exist there) and both processes start new threads at their next copy."""
    x = np.random.default_rng(2).standard_normal((4, 3, 8, 8)).astype(np.float32)
    expected = np.ascontiguousarray(x.transpose(1, 2, 3, 0))
    to_batch_last(x)  # the threads are running now
    assert any(t.name.startswith("dlscratch-copy") for t in threading.enumerate())
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running pytest's teardown
        ok = not any(t.name.startswith("dlscratch-copy") for t in threading.enumerate())
        ok = ok and np.array_equal(to_batch_last(x), expected)
        os.write(write, b"ok" if ok else b"no")
        os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    assert os.read(read, 2) == b"ok" and os.waitstatus_to_exitcode(status) == 0
    os.close(read)
    assert np.array_equal(to_batch_last(x), expected)  # the parent copies in threads again
    assert any(t.name.startswith("dlscratch-copy") for t in threading.enumerate())
