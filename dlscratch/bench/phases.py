"""Where a training step's time goes: a clock read between the phases of whole steps.

Timing a phase on its own (only the optimizer update, say) runs it in conditions that a real step
never has: its arrays stay hot in the cache and no thread pool of the phase before is still busy.
Here every step runs all its phases in order, as training does, and the clock is read between them,
so the phases add up to the step.
"""

import functools
import gc
import time

from .. import backend
from .timing import calibrate, median


def measure_phases(variants, repeat=5, number=None, pause=0.2, clock=time.perf_counter):
    """Seconds per step spent in each phase, for each variant.

    ``variants``: name -> list of phase callables, which run in order as one step. Each round runs
    a burst of ``number`` steps of each variant in turn (``None``: about 20 ms of steps), after a
    ``pause`` that lets the previous variant's thread pools stop spinning, and one untimed step.
    Returns name -> one list per phase of ``repeat`` figures, each the mean over a burst. The garbage
    collector is off meanwhile, as in ``timeit``.
    """
    numbers = {name: number or calibrate(functools.partial(_run_step, phases)) for name, phases in variants.items()}
    figures = {name: [[] for _ in phases] for name, phases in variants.items()}
    pause = pause if len(variants) > 1 else 0
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            for name, phases in variants.items():
                time.sleep(pause)
                _run_step(phases)
                totals = _timed_burst(phases, numbers[name], clock)
                for per_phase, total in zip(figures[name], totals):
                    per_phase.append(total / numbers[name])
    finally:
        if was_enabled:
            gc.enable()
    return figures


def _run_step(phases):
    for phase in phases:
        phase()
    backend.synchronize()


def _timed_burst(phases, number, clock):
    """Total seconds of each phase over ``number`` steps."""
    totals = [0.0] * len(phases)
    for _ in range(number):
        for i, phase in enumerate(phases):
            start = clock()
            phase()
            backend.synchronize()
            totals[i] += clock() - start
    return totals


def median_phases(figures):
    """name -> one median per phase, from ``measure_phases``'s figures."""
    return {name: [median(f) for f in per_phase] for name, per_phase in figures.items()}
