"""A busy machine, on purpose: processes that each keep one CPU core fully occupied.

Measured speed on a quiet machine can hide a design that degrades badly when the machine is
shared (a classroom server, a laptop running a browser, a CI runner): work split evenly over
threads waits for its slowest part, and a core taken by another process makes that part slow.
``python -m dlscratch.bench SUITE --busy 1`` runs the suite beside one such process, so dlscratch
and PyTorch are compared in the same conditions.
"""

import contextlib
import subprocess
import sys

SPIN = "while True: pass"


@contextlib.contextmanager
def busy_cores(count):
    """Keep ``count`` cores busy inside the ``with`` block (``count`` plain Python processes, each
    spinning on one core, stopped when the block ends; 0: none)."""
    workers = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]
    try:
        yield workers
    finally:
        for worker in workers:
            worker.kill()
            worker.wait()
