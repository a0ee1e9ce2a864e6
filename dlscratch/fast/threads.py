"""Large copies split over the CPU's cores.

NumPy runs each copy and each elementwise operation on one core, while its matrix products
(BLAS) use them all. NumPy lets go of Python's global lock while it copies, so Python threads
can each copy one part of an array at the same time. Measured on a 2-core machine: im2col of
conv 32 -> 64 at batch 128 (a 115 MB column matrix) went from 12.4 to 8.4 ms, and the batch-last
copy of a 25 MB gradient from 11.6 to 6.8 ms. Small arrays stay on one thread: handing work to
another costs tens of microseconds. CuPy arrays never come here: the GPU is parallel already.
"""

import os
from concurrent.futures import ThreadPoolExecutor

MIN_NUMBERS = 2**20  # below a million numbers (4 MB of float32) one thread is as fast

_pool, _pool_pid = None, None


def cores():
    """The number of CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def in_parts(fn, length, numbers):
    """Call ``fn(start, stop)`` on consecutive parts of ``range(length)``, one per core, in threads.

    ``numbers`` is the size of the whole job; below ``MIN_NUMBERS``, or with one core, it is a
    single call ``fn(0, length)``. The parts must write to disjoint memory. Exceptions propagate.
    """
    global _pool, _pool_pid
    parts = min(cores(), length)
    if numbers < MIN_NUMBERS or parts < 2:
        fn(0, length)
        return
    if _pool is None or _pool_pid != os.getpid():  # a forked child inherits the pool but not its threads
        _pool, _pool_pid = ThreadPoolExecutor(cores(), thread_name_prefix="dlscratch-copy"), os.getpid()
    bounds = [length * k // parts for k in range(parts + 1)]
    futures = [_pool.submit(fn, a, b) for a, b in zip(bounds, bounds[1:])]
    for f in futures:
        f.result()
