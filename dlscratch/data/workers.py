"""Loading batches in worker processes: what ``DataLoader(num_workers=n)`` runs.

Each pass over a loader starts ``n`` processes (a ``concurrent.futures.ProcessPoolExecutor``), hands them
the batches' indices, keeping ``prefetch_factor`` batches per worker in flight, and yields the batches in
order; a worker gathers and collates its batch on the host and sends it back, pickled. So loading (reading
files, decoding, augmenting in Python) overlaps the training step, as in PyTorch. Host-only code: workers
never touch a GPU (the main process moves each batch to the device).

How processes start is the platform's default, or ``multiprocessing_context``: ``fork`` (Linux up to Python
3.13) lets the workers inherit the dataset; ``spawn`` (macOS, Windows) and ``forkserver`` (Linux from Python
3.14) pickle the dataset and ``collate_fn`` to each worker, so both must be picklable (no lambdas) and a script
needs an ``if __name__ == "__main__":`` guard, as with PyTorch.

Every batch seeds Python's ``random``, NumPy's global generator and dlscratch's (``manual_seed``) from the
pass's seed and the batch's number, so random augmentation in ``__getitem__`` differs from batch to batch
(forked workers would otherwise repeat each other's numbers) and is the same for the same seed, whichever
worker loads the batch. An exception in a worker is raised in the main process, the worker's traceback as its
cause; a worker that dies (killed, out of memory) raises ``RuntimeError``. Leaving the loop early, or Ctrl-C
(which the workers ignore), stops the workers.
"""

import multiprocessing
import random
import signal
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import numpy

from .. import backend
from ..engine import creation

_load = None  # in a worker: the function that loads one batch from its indices


def _start_worker(load):
    global _load
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    backend.use("numpy")  # tensors a collate_fn makes here stay on the host
    _load = load


def _load_batch(indices, seed):
    random.seed(seed)
    numpy.random.seed(seed)
    creation.manual_seed(seed)
    return _load(indices)


def load_in_workers(load, index_batches, num_workers, prefetch_factor, base_seed, context=None):
    """Yield ``load(indices)`` for each array of ``indices`` in ``index_batches``, in order, computed in
    ``num_workers`` processes (``context``: a start method's name, or None for the default)."""
    pool = ProcessPoolExecutor(num_workers, mp_context=multiprocessing.get_context(context),
                               initializer=_start_worker, initargs=(load,))
    pending = []
    try:
        for number, indices in enumerate(index_batches):
            pending.append(pool.submit(_load_batch, indices, (base_seed + number) % 2**32))
            if len(pending) >= num_workers * prefetch_factor:
                yield _result(pending.pop(0))
        while pending:
            yield _result(pending.pop(0))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _result(future):
    try:
        return future.result()
    except BrokenProcessPool as error:
        raise RuntimeError("DataLoader: a worker process died unexpectedly (killed, or out of memory?); run with "
                           "num_workers=0 to see the error in this process") from error
