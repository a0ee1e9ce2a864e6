"""Large copies split over the CPU's cores.

NumPy runs each copy and each elementwise operation on one core, while its matrix products
(BLAS) use them all. NumPy lets go of Python's global lock while it copies, so Python threads
can each copy one part of an array at the same time: im2col's column matrix and the batch-last
copies of large activations fill faster. Small arrays stay on one thread
(``tuning.MIN_THREADED_NUMBERS``): handing work to another costs tens of microseconds. CuPy arrays
never come here: the GPU is parallel already.

Forking a process that runs threads can deadlock the child (a lock held by a thread that does not
exist there; Python 3.12+ warns about it). So the threads stop before every ``os.fork()`` (a
``DataLoader`` worker, ``multiprocessing`` with the fork method) and start again at the next large copy,
in the parent and in the child alike: a fork always sees a process without copy threads.
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

    ``numbers`` is the size of the whole job; below ``tuning.MIN_THREADED_NUMBERS``, or with one core, it is a
    single call ``fn(0, length)``. The parts must write to disjoint memory. Exceptions propagate.
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
