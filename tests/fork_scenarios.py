"""The fork scenarios of tests/test_threads.py, each run in a fresh Python: ``python fork_scenarios.py NAME``.

A test process runs threads of its own (tqdm's monitor, a test server's handlers), and forking it is what
Python 3.12+ warns about ("This process is multi-threaded, use of fork() may lead to deadlocks in the
child"), whatever dlscratch does. A fresh process has no thread but dlscratch's copy threads, so here
``forked`` fails when a copy thread still runs in the parent as it forks (seen by a hook that runs right
after, on every Python), and when Python warns about the fork (3.12+). A scenario prints ``ok`` and exits 0,
or fails with an ``AssertionError``.
"""

import os
import signal
import sys
import threading
import time
import warnings

import numpy as np

from dlscratch.fast import threads, tuning
from dlscratch.fast.layout import to_batch_last

CHILD_DEADLINE = 10  # seconds for a forked child to report
threads_at_forks = []  # the copy threads running in the parent at each fork, seen right after it


def set_up():
    """Every job counts as large, and two cores are assumed, so even tiny arrays go to threads; and every
    fork records the copy threads of the parent."""
    tuning.MIN_THREADED_NUMBERS = 0
    threads.cores = lambda: 2
    os.register_at_fork(after_in_parent=lambda: threads_at_forks.append(copy_threads()))


def copy_threads():
    """The names of the running copy threads."""
    return [t.name for t in threading.enumerate() if t.name.startswith("dlscratch-copy")]


def forked(child):
    """Fork; in the child, run ``child()`` (bytes) and send its result through a pipe; in the parent, return
    those bytes. Fails when Python warns about the fork, or when the child does not report in time."""
    read, write = os.pipe()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pid = os.fork()
    if pid == 0:  # the child: report, then leave without running the parent's cleanup
        try:
            os.write(write, child())
        finally:
            os._exit(0)
    os.close(write)
    assert not threads_at_forks[-1], f"copy threads ran as the process forked: {threads_at_forks[-1]}"
    assert not caught, f"Python warned about the fork: {[str(w.message) for w in caught]}"
    deadline = time.monotonic() + CHILD_DEADLINE
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError("the forked child hung on the parent's thread pool")
        time.sleep(0.01)
    with os.fdopen(read, "rb") as pipe:
        return pipe.read()


def a_forked_child_gets_threads_of_its_own():
    """The child inherits the parent's pool object without its threads; reusing it would wait forever."""
    both_started = threading.Barrier(2, timeout=10)
    threads.in_parts(lambda a, b: both_started.wait(), 2, numbers=10**9)  # the parent's pool: two idle threads

    def child():
        seen = []
        threads.in_parts(lambda a, b: seen.extend(range(a, b)), 4, numbers=10**9)
        return bytes(sorted(seen))

    assert forked(child) == bytes([0, 1, 2, 3])


def a_fork_sees_no_copy_threads_and_both_sides_copy_again():
    """The copy threads stop before os.fork(): the child starts single-threaded (no lock held by a thread
    that does not exist there) and both processes start new threads at their next copy."""
    x = np.random.default_rng(2).standard_normal((4, 3, 8, 8)).astype(np.float32)
    expected = np.ascontiguousarray(x.transpose(1, 2, 3, 0))
    to_batch_last(x)
    assert copy_threads(), "the copy threads should be running before the fork"

    def child():
        alone = not copy_threads()
        return b"ok" if alone and np.array_equal(to_batch_last(x), expected) else b"no"

    assert forked(child) == b"ok", "the child saw a copy thread, or its own copy went wrong"
    assert np.array_equal(to_batch_last(x), expected)  # the parent copies in threads again
    assert copy_threads()


SCENARIOS = {f.__name__: f for f in [a_forked_child_gets_threads_of_its_own,
                                     a_fork_sees_no_copy_threads_and_both_sides_copy_again]}

if __name__ == "__main__":
    set_up()
    SCENARIOS[sys.argv[1]]()
    print("ok")
