"""Timing claims judged with their noise: each one holds, is contradicted, or is inconclusive on this machine.

A lesson that says "im2col is at least 3x faster than the loops" should prove it, but two medians compared
bare prove little on a shared laptop, a Colab runtime or a CI runner: one slow spell flips them. So, as pyperf
and Google Benchmark do, a claim here is judged on its spread:

1. the variants run **interleaved**, one figure each per round (``compare``), so a slow spell hits all alike;
2. each round gives one value of the claimed quantity (a ratio of two times, a share, ...), and the claim's
   **interval** is a bootstrap of the median over the rounds (95%, resampled with a fixed seed);
3. the **verdict**: *holds* when the whole interval lies on the claim's side, *contradicted* when it lies
   wholly on the other side, and *inconclusive on this machine* when it straddles the bound: the noise is
   too large to tell. A contradiction seen while other processes kept the CPUs busy (``machine.watch``) is
   also only inconclusive: a busy machine is no proof that the claim is wrong.

``Verdict.check()`` prints the verdict and fails (``AssertionError``) only on a contradiction, so a lesson
goes on when the machine is too noisy to tell, and still stops when a claim is confidently wrong. A claim
that is inconclusive even on a quiet machine is a weak claim: measure longer, or claim less.
``DLSCRATCH_STRICT_CLAIMS=1`` makes ``check()`` fail on inconclusive verdicts too, to find such claims.

    times = compare({"loops": by_loops, "im2col": by_im2col}, rounds=7)
    print(times.table())
    times.faster("im2col", than="loops", by=3).check()
"""

import os
from dataclasses import dataclass

import numpy as np

from . import machine, timing

HOLDS, CONTRADICTED, INCONCLUSIVE = "holds", "CONTRADICTED", "inconclusive on this machine"
CONFIDENCE = 0.95
BUSY = 0.25  # other processes using a quarter of the CPUs: too busy to call a claim wrong
MIN_ROUNDS = 3
RESAMPLES = 4000


@dataclass(frozen=True)
class Verdict:
    """The judgement of one claim: its outcome, the median estimate and its interval over ``rounds``."""

    claim: str
    outcome: str
    estimate: float
    low: float
    high: float
    rounds: int
    reason: str = ""
    unit: str = "x"

    def __str__(self):
        figures = (f"{self.show(self.estimate)} (95% interval {self.show(self.low)} to {self.show(self.high)}, "
                   f"{self.rounds} rounds)")
        reason = f"; {self.reason}" if self.reason else ""
        return f"{self.outcome}: {self.claim}: {figures}{reason}"

    def show(self, value):
        return format_value(value, self.unit)

    @property
    def holds(self):
        return self.outcome == HOLDS

    @property
    def contradicted(self):
        return self.outcome == CONTRADICTED

    def check(self):
        """Print the verdict; raise ``AssertionError`` on a contradiction (and, with
        ``DLSCRATCH_STRICT_CLAIMS=1``, on an inconclusive verdict). Returns nothing, so that a cell ending in
        ``.check()`` shows the printed line only."""
        print(self)
        strict = os.environ.get("DLSCRATCH_STRICT_CLAIMS", "") not in ("", "0")
        if self.contradicted or (strict and not self.holds):
            raise AssertionError(str(self))


def median_interval(samples, confidence=CONFIDENCE, resamples=RESAMPLES, seed=0):
    """``(median, low, high)``: the median of ``samples`` and a bootstrap percentile interval around it."""
    values = np.asarray(samples, dtype=np.float64)
    rng = np.random.default_rng(seed)
    medians = np.median(values[rng.integers(0, len(values), (resamples, len(values)))], axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(medians, [tail, 100 - tail])
    return float(np.median(values)), float(low), float(high)


def ratio_interval(numerators, denominators, confidence=CONFIDENCE, resamples=RESAMPLES, seed=0):
    """``(ratio, low, high)`` of ``median(numerators) / median(denominators)`` for samples that are not paired
    by round (e.g. two ``%timeit`` results): each is resampled on its own."""
    top, bottom = np.asarray(numerators, np.float64), np.asarray(denominators, np.float64)
    rng = np.random.default_rng(seed)
    ratios = (np.median(top[rng.integers(0, len(top), (resamples, len(top)))], axis=1)
              / np.median(bottom[rng.integers(0, len(bottom), (resamples, len(bottom)))], axis=1))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(np.median(top) / np.median(bottom)), float(low), float(high)


def judge(claim, estimate, low, high, rounds, at_least=None, at_most=None, load=None, unit="x"):
    """The verdict on "the quantity lies in [``at_least``, ``at_most``]" (either bound may be None), given its
    ``estimate`` and interval ``[low, high]`` over ``rounds`` rounds, and the other processes' ``load``
    (a ``machine.Load``, or None when unknown) while it was measured."""
    if at_least is None and at_most is None:
        raise ValueError(f"claim {claim!r}: give at_least, at_most or both")
    below = at_least is not None and high < at_least
    above = at_most is not None and low > at_most
    inside = (at_least is None or low >= at_least) and (at_most is None or high <= at_most)
    verdict = dict(claim=claim, estimate=estimate, low=low, high=high, rounds=rounds, unit=unit)
    if rounds < MIN_ROUNDS:
        return Verdict(outcome=INCONCLUSIVE, reason=f"fewer than {MIN_ROUNDS} rounds", **verdict)
    if inside:
        return Verdict(outcome=HOLDS, **verdict)
    bound = at_least if below or (at_least is not None and low < at_least) else at_most
    if not (below or above):
        return Verdict(outcome=INCONCLUSIVE, reason=f"the interval reaches both sides of {format_value(bound, unit)}: "
                       "too noisy here to tell", **verdict)
    if load is not None and load.others is not None and load.others >= BUSY:
        return Verdict(outcome=INCONCLUSIVE, reason=f"it looks wrong, but {load} while it was measured",
                       **verdict)
    side = "below" if below else "above"
    return Verdict(outcome=CONTRADICTED, reason=f"the whole interval is {side} {format_value(bound, unit)}", **verdict)


def format_value(value, unit):
    """``value`` in a claim's unit: ``'3.2x'`` (a ratio), ``'71%'`` (a share), ``'1.2 ms'`` (seconds)."""
    if unit == "%":
        return f"{value:.0%}"
    if unit == "s":
        return timing.format_time(value)
    return f"{value:.3g}{unit}"


def bounded(claim, samples, at_least=None, at_most=None, load=None, unit="x"):
    """The verdict on a quantity measured once per round (a share, a ratio to a model, ...): its median's
    interval over the rounds against the bounds. Without ``load``, other processes are sampled now."""
    load = machine.background_load() if load is None else load
    return judge(claim, *median_interval(samples), len(samples), at_least, at_most, load, unit)


def _from_timeit(times):
    return hasattr(times, "all_runs") and hasattr(times, "loops")


def _seconds(times):
    """Seconds per call from a list of them, or from IPython's ``%timeit -o`` result (one figure per run)."""
    if _from_timeit(times):
        return [run / times.loops for run in times.all_runs]
    return list(times)


def _paired(a, b, paired):
    """Whether two series of seconds came from the same rounds: as given, else when both have as many figures
    and neither is a ``%timeit`` result (whose runs all ran before the other's)."""
    if paired is not None:
        return paired
    return len(_seconds(a)) == len(_seconds(b)) and not (_from_timeit(a) or _from_timeit(b))


def faster(fast, slow, by=1.0, claim=None, paired=None, load=None):
    """The verdict on "``fast`` is at least ``by`` times faster than ``slow``": ``slow / fast`` >= ``by``.

    ``fast`` and ``slow`` are seconds per call, one per round (or ``%timeit -o`` results). Rounds that ran
    interleaved are ``paired`` (the default when both have as many figures, unless either is a ``%timeit``
    result): each round gives one ratio. Otherwise the two medians are resampled apart. Without ``load``, other
    processes are sampled now."""
    paired = _paired(fast, slow, paired)
    fast, slow = _seconds(fast), _seconds(slow)
    claim = claim or f"at least {by:g}x faster"
    load = machine.background_load() if load is None else load
    if paired:
        figures = median_interval([s / f for s, f in zip(slow, fast)])
    else:
        figures = ratio_interval(slow, fast)
    return judge(claim, *figures, min(len(fast), len(slow)), at_least=by, load=load)


def within(a, b, tolerance, claim=None, paired=None, load=None):
    """The verdict on "``a`` and ``b`` take the same time within ``tolerance``" (0.2: either at most 1.2x the
    other), from seconds per call as in ``faster``."""
    paired = _paired(a, b, paired)
    a, b = _seconds(a), _seconds(b)
    claim = claim or f"within {tolerance:.0%} of each other"
    load = machine.background_load() if load is None else load
    figures = median_interval([y / x for x, y in zip(a, b)]) if paired else ratio_interval(b, a)
    return judge(claim, *figures, min(len(a), len(b)), at_least=1 / (1 + tolerance), at_most=1 + tolerance,
                 load=load)


class Timings:
    """Seconds per call of named variants, one figure per round, measured interleaved by ``compare``, and the
    other processes' load while they ran."""

    def __init__(self, seconds, load=None):
        self.seconds = {name: list(values) for name, values in seconds.items()}
        self.load = load

    def __getitem__(self, name):
        return self.seconds[name]

    def median(self, name):
        """The median seconds per call of variant ``name``."""
        return timing.median(self.seconds[name])

    def faster(self, fast, than, by=1.0, claim=None):
        """The verdict on "variant ``fast`` is at least ``by`` times faster than variant ``than``"."""
        claim = claim or f"{fast} is at least {by:g}x faster than {than}"
        return faster(self.seconds[fast], self.seconds[than], by, claim, paired=True, load=self.load)

    def within(self, a, b, tolerance, claim=None):
        """The verdict on "variants ``a`` and ``b`` take the same time within ``tolerance``"."""
        claim = claim or f"{a} and {b} take the same time within {tolerance:.0%}"
        return within(self.seconds[a], self.seconds[b], tolerance, claim, paired=True, load=self.load)

    def table(self):
        """Each variant's median and its range over the rounds, as aligned text."""
        rows = [(name, timing.format_time(self.median(name)), timing.format_time(min(values)),
                 timing.format_time(max(values)), len(values)) for name, values in self.seconds.items()]
        text = timing.format_table(["variant", "median", "fastest round", "slowest round", "rounds"], rows)
        return text if self.load is None or self.load.others is None else f"{text}\n({self.load})"


def compare(variants, rounds=7, number=None, warmup=1):
    """Time ``variants`` (a dict name -> function of no arguments) interleaved for ``rounds`` rounds and return
    their ``Timings``, with the other processes' load while they ran. GPU work is synchronised."""
    with machine.watch() as load:
        seconds = timing.measure_interleaved(variants, repeat=rounds, number=number, warmup=warmup)
    return Timings(seconds, load)
