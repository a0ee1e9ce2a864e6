"""Large copies split over the CPU's cores in Python threads.

NumPy copies on one core but releases the global lock while it copies, so threads can each fill one part of
im2col's column matrix or a batch-last copy. Small copies stay on one thread (``tuning.MIN_THREADED_NUMBERS``);
CuPy arrays never come here. The threads stop before every ``os.fork()``, because forking a process that runs
threads can deadlock the child; the next large copy starts them again.
"""

import os
from concurrent.futures import ThreadPoolExecutor

from . import tuning

_pool = None


def cores():
    """The number of CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def in_parts(fn, length, numbers):
    """Call ``fn(start, stop)`` on consecutive parts of ``range(length)``, one per core, in threads.

    A job of fewer than ``tuning.MIN_THREADED_NUMBERS`` numbers is one call. The parts must write disjoint memory.
    """
    global _pool
    parts = min(cores(), length)
    if numbers < tuning.MIN_THREADED_NUMBERS or parts < 2:
        fn(0, length)
        return
    if _pool is None:
        _pool = ThreadPoolExecutor(cores(), thread_name_prefix="dlscratch-copy")
    bounds = [length * k // parts for k in range(parts + 1)]
    futures = [_pool.submit(fn, a, b) for a, b in zip(bounds, bounds[1:])]
    for f in futures:
        f.result()


def stop_threads():
    """Stop the copy threads (waiting for running copies); the next large copy starts them again."""
    global _pool
    if _pool is not None:
        _pool.shutdown(wait=True)
        _pool = None


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(before=stop_threads)
