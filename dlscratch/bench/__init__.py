"""Benchmarks, run as ``python -m dlscratch.bench SUITE`` (see ``--help``); they print tables.

Each suite is a module with ``run(repeat=None, quick=False)`` that prints its report and returns
``(headers, rows)``. Adding a suite is one line in ``SUITES``. Shared helpers are in ``timing``.
"""

import importlib

#: suite name -> module that implements it
SUITES = {
    "autograd": "dlscratch.bench.autograd",
    "mlp": "dlscratch.bench.mlp",
    "conv": "dlscratch.bench.conv",
    "convmethods": "dlscratch.bench.convmethods",
    "precision": "dlscratch.bench.precision",
    "pool": "dlscratch.bench.pool",
    "cnn": "dlscratch.bench.cnn",
    "lstm": "dlscratch.bench.lstm",
    "launches": "dlscratch.bench.launches",
    "distributed": "dlscratch.bench.distributed",
    "trace": "dlscratch.bench.trace",
    "graphs": "dlscratch.bench.graphs",
}


def load_suite(name):
    """The module of suite ``name``."""
    if name not in SUITES:
        raise ValueError(f"unknown benchmark suite {name!r}; choose one of: {', '.join(sorted(SUITES))}")
    return importlib.import_module(SUITES[name])
