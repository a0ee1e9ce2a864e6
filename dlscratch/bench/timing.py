"""Timing helpers shared by the benchmark suites: measure, interleave, summarise, print tables, judge.

GPU work is asynchronous, so every measured call ends with ``backend.synchronize()``. The
machines these run on are noisy, so suites interleave the variants they compare (one repeat
of each in turn) and report medians.
"""

import functools
import gc
import time

from .. import backend
from ..engine import switch


def measure(fn, repeat=5, number=None, warmup=1):
    """Seconds per call of ``fn()``: ``repeat`` figures, each the mean over ``number`` calls.

    ``number=None`` picks enough calls for about 20 ms per figure. ``warmup`` calls run first
    (and are not timed): they fill caches and let the allocator settle. The garbage collector
    is off while timing, as in ``timeit``.
    """
    for _ in range(warmup):
        fn()
        backend.synchronize()
    if number is None:
        number = calibrate(fn)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                fn()
                backend.synchronize()
            times.append((time.perf_counter() - start) / number)
    finally:
        if was_enabled:
            gc.enable()
    return times


def calibrate(fn, min_time=0.02):
    """How many calls of ``fn()`` take at least ``min_time`` seconds (1, 2, 5, 10, 20, ...)."""
    number = 1
    while True:
        for step in (1, 2, 5):
            start = time.perf_counter()
            for _ in range(number * step):
                fn()
                backend.synchronize()
            if time.perf_counter() - start >= min_time:
                return number * step
        number *= 10


def measure_interleaved(variants, repeat=5, number=None, warmup=1, settle=1, pause=0.2):
    """Per-call seconds of each variant (a dict name -> fn), ``repeat`` figures each.

    The variants take turns, one figure each per round, so that a slow spell of a noisy
    machine hits all of them alike. ``number=None`` calibrates each variant once. Each turn
    starts with a ``pause`` in seconds and ``settle`` untimed calls. The pause lets the
    thread pools of the previous turn stop spinning: OpenBLAS's idle threads busy-wait for a
    while after each call, taking a core from whoever runs next (without it, PyTorch's steps
    after a NumPy turn ran 2-10x slower on a 2-core machine). With one variant there is no pause.
    """
    numbers = {}
    for name, fn in variants.items():
        for _ in range(warmup):
            fn()
            backend.synchronize()
        numbers[name] = number or calibrate(fn)
    times = {name: [] for name in variants}
    pause = pause if len(variants) > 1 else 0
    for _ in range(repeat):
        for name, fn in variants.items():
            time.sleep(pause)
            times[name] += measure(fn, repeat=1, number=numbers[name], warmup=settle)
    return times


def median(values):
    """The median of a non-empty sequence of numbers."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def format_time(seconds):
    """A duration with a fitting unit: ``'850 ns'``, ``'12.3 µs'``, ``'4.56 ms'``, ``'1.23 s'``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_table(headers, rows):
    """Rows of cells as aligned text: text columns left-aligned, numeric ones right-aligned."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [all(_is_number(row[i]) for row in cells[1:]) and len(cells) > 1 for i in range(len(headers))]
    lines = []
    for r, row in enumerate(cells):
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(row, widths, numeric)]
        lines.append("  ".join(parts).rstrip())
        if r == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def print_table(headers, rows):
    """Print ``format_table(headers, rows)``."""
    print(format_table(headers, rows))


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return text in ("", "-")
    return True


@functools.cache
def torch_available():
    """True when PyTorch imports (suites then add it as a reference; it is never a dependency)."""
    try:
        import torch  # noqa: F401
    except Exception:  # ImportError, or a broken install failing to load its libraries
        return False
    return True


@functools.cache
def dezero_available():
    """True when DeZero 0.0.13 imports (suites then measure it as the from-scratch reference; never a dependency)."""
    from .dezero_models import import_dezero

    try:
        import_dezero()
    except Exception:  # not installed, or an import that fails on this NumPy
        return False
    return True


def verdict(met, target):
    """A target's verdict in parentheses: ``verdict(True, "<= 1.5")`` is ``'(target <= 1.5: met)'``."""
    return f"(target {target}: {'met' if met else 'NOT met'})"


def cpu_verdict(met, target, gpu):
    """``verdict(met, target)`` of a target set for a CPU; in a GPU run (``gpu``), the words that it is not judged."""
    return f"(target {target}, set for a CPU: not judged on the GPU)" if gpu else verdict(met, target)


def on_the_fast_path(fn):
    """``fn`` run on the fast path (the default), whatever path the caller is on."""

    def run():
        with switch.fast_path():
            return fn()

    return run


def on_the_reference_path(fn):
    """``fn`` run on the reference path: what the fast path's tricks buy is the difference."""

    def run():
        with switch.reference():
            return fn()

    return run
