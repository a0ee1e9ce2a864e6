"""Timing claims judged with their noise: each one holds, is contradicted, or is inconclusive on this machine.

A lesson that says "im2col is at least 3x faster than the loops" should prove it, but two medians compared
bare prove little on a shared laptop, a Colab runtime or a CI runner: one slow spell flips them. So, as pyperf
and Google Benchmark do, a claim here is judged on its spread:

1. **Rounds.** The variants a claim compares run **interleaved**, A, B, A, B, ... (``compare``, or one
   ``%timeit -r 1`` of each variant per round), so that a slow spell hits both alike, and each round gives one
   value of the claimed quantity (a ratio of two times, a share, ...). A round is an independent repetition:
   pieces of one run (the fifths of one job's steps) are one round, not five. ``faster`` and ``within`` take
   one figure per round for each side and refuse a ``%timeit`` result of several runs, whose runs all ran
   before the other side's.
2. **The interval** of the median over the rounds is distribution-free, from the order statistics: the
   ``k``-th smallest and ``k``-th largest round, where ``k`` is the largest for which the true median lies
   between them with at least 95% probability (a binomial count; nothing is resampled). It needs 6 rounds:
   with ``n`` < 6 even the range, slowest to fastest round, holds the median only ``1 - 2**(1 - n)`` of the
   time (75% for 3 rounds, 94% for 5), and the verdict prints it as a range with that figure, not as a 95%
   interval. Figures that are not rounds at all (one per message size, say) are judged as a range, each one
   against the bound, and labelled so (``bounded(..., over="sizes")``).
3. **The verdict**: *holds* when the whole interval lies on the claim's side, *contradicted* when it lies
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

import math
import os
from dataclasses import dataclass

import numpy as np

from . import machine, timing

HOLDS, CONTRADICTED, INCONCLUSIVE = "holds", "CONTRADICTED", "inconclusive on this machine"
CONFIDENCE = 0.95
BUSY = 0.25  # other processes using a quarter of the CPUs: too busy to call a claim wrong
MIN_ROUNDS = 3


@dataclass(frozen=True)
class Verdict:
    """The judgement of one claim: its outcome, the median estimate and its interval over ``rounds`` (or, with
    ``over`` other than "rounds", the range of figures that are not independent rounds)."""

    claim: str
    outcome: str
    estimate: float
    low: float
    high: float
    rounds: int
    reason: str = ""
    unit: str = "x"
    over: str = "rounds"

    def __str__(self):
        span = f"{self.show(self.low)} to {self.show(self.high)}"
        if self.over != "rounds":
            figures = f"{self.show(self.estimate)} (range {span} over {self.rounds} {self.over}, each measured " \
                      "once: not an interval)"
        elif coverage(self.rounds) >= CONFIDENCE:
            figures = f"{self.show(self.estimate)} (95% interval {span}, {self.rounds} rounds)"
        else:
            figures = (f"{self.show(self.estimate)} (range {span} over {self.rounds} rounds, which holds the median "
                       f"{coverage(self.rounds):.0%} of the time; a 95% interval needs {ROUNDS_FOR_95} rounds)")
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


def _outside(n, k):
    """The probability that the median of ``n`` independent rounds lies below the ``k``-th smallest of them
    (or, alike, above the ``k``-th largest): fewer than ``k`` rounds fall below it, a binomial count."""
    return sum(math.comb(n, i) for i in range(k)) / 2 ** n


def _depth(n, confidence=CONFIDENCE):
    """The largest ``k`` for which [k-th smallest, k-th largest] of ``n`` rounds holds the median with at least
    ``confidence``; 1 (the range) when no ``k`` does."""
    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * _outside(n, k + 1) >= confidence:
        k += 1
    return k


def coverage(n, confidence=CONFIDENCE):
    """How often the interval of ``median_interval`` over ``n`` independent rounds holds the true median."""
    return 1 - 2 * _outside(n, _depth(n, confidence)) if n else 0.0


ROUNDS_FOR_95 = next(n for n in range(1, 20) if coverage(n) >= CONFIDENCE)  # 6


def median_interval(samples, confidence=CONFIDENCE):
    """``(median, low, high)``: the median of ``samples`` (one per independent round) and the order-statistic
    interval around it (``coverage(len(samples))`` says how often such an interval holds the true median)."""
    values = np.sort(np.asarray(samples, dtype=np.float64))
    k = _depth(len(values), confidence)
    return float(np.median(values)), float(values[k - 1]), float(values[len(values) - k])


def judge(claim, estimate, low, high, rounds, at_least=None, at_most=None, load=None, unit="x", over="rounds"):
    """The verdict on "the quantity lies in [``at_least``, ``at_most``]" (either bound may be None), given its
    ``estimate`` and interval ``[low, high]`` over ``rounds`` rounds (or ``over`` figures of another kind), and
    the other processes' ``load`` (a ``machine.Load``, or None when unknown) while it was measured."""
    if at_least is None and at_most is None:
        raise ValueError(f"claim {claim!r}: give at_least, at_most or both")
    below = at_least is not None and high < at_least
    above = at_most is not None and low > at_most
    inside = (at_least is None or low >= at_least) and (at_most is None or high <= at_most)
    verdict = dict(claim=claim, estimate=estimate, low=low, high=high, rounds=rounds, unit=unit, over=over)
    if rounds < MIN_ROUNDS:
        return Verdict(outcome=INCONCLUSIVE, reason=f"fewer than {MIN_ROUNDS} {over}", **verdict)
    if inside:
        return Verdict(outcome=HOLDS, **verdict)
    bound = at_least if below or (at_least is not None and low < at_least) else at_most
    if not (below or above):
        return Verdict(outcome=INCONCLUSIVE, reason=f"the {'interval' if over == 'rounds' else 'range'} reaches "
                       f"both sides of {format_value(bound, unit)}: too noisy here to tell", **verdict)
    if load is not None and load.others is not None and load.others >= BUSY:
        return Verdict(outcome=INCONCLUSIVE, reason=f"it looks wrong, but {load} while it was measured",
                       **verdict)
    side = "below" if below else "above"
    kind = "interval" if over == "rounds" else "range"
    return Verdict(outcome=CONTRADICTED, reason=f"the whole {kind} is {side} {format_value(bound, unit)}", **verdict)


def format_value(value, unit):
    """``value`` in a claim's unit: ``'3.2x'`` (a ratio), ``'71%'`` (a share), ``'1.2 ms'`` (seconds)."""
    if unit == "%":
        return f"{value:.0%}"
    if unit == "s":
        return timing.format_time(value)
    return f"{value:.3g}{unit}"


def bounded(claim, samples, at_least=None, at_most=None, load=None, unit="x", over="rounds"):
    """The verdict on a quantity measured once per round (a share, a ratio to a model, ...): its median's
    interval over the rounds against the bounds. ``over`` names what the figures are when they are not
    independent rounds ("sizes": one per message size): then every figure is held against the bounds, as a
    range. Without ``load``, other processes are sampled now."""
    load = machine.background_load() if load is None else load
    if over == "rounds":
        figures = median_interval(samples)
    else:
        figures = float(np.median(samples)), float(np.min(samples)), float(np.max(samples))
    return judge(claim, *figures, len(samples), at_least, at_most, load, unit, over)


def _per_round(times, side):
    """Seconds per call, one per round, as a list; a ``%timeit -o`` result of several runs is refused: its runs
    all ran before (or after) the other side's, so one slow spell could fall on one side only."""
    if hasattr(times, "all_runs") and hasattr(times, "loops"):
        if len(times.all_runs) != 1:
            raise ValueError(f"{side}: a %timeit result of {len(times.all_runs)} runs ran them all before the other "
                             "side's; time the two in interleaved rounds (claims.compare, or one `%timeit -r 1` "
                             "of each per round) and pass one figure per round")
        return [times.all_runs[0] / times.loops]
    return list(times)


def _rounds(a, b, names):
    a, b = _per_round(a, names[0]), _per_round(b, names[1])
    if len(a) != len(b):
        raise ValueError(f"{names[0]} has {len(a)} rounds and {names[1]} {len(b)}: give one figure per round for "
                         "each, from the same interleaved rounds")
    return a, b


def faster(fast, slow, by=1.0, claim=None, load=None):
    """The verdict on "``fast`` is at least ``by`` times faster than ``slow``": ``slow / fast`` >= ``by``.

    ``fast`` and ``slow`` are seconds per call, one per round, from the same interleaved rounds: each round
    gives one ratio. Without ``load``, other processes are sampled now."""
    fast, slow = _rounds(fast, slow, ("fast", "slow"))
    claim = claim or f"at least {by:g}x faster"
    load = machine.background_load() if load is None else load
    return judge(claim, *median_interval([s / f for s, f in zip(slow, fast)]), len(fast), at_least=by, load=load)


def within(a, b, tolerance, claim=None, load=None):
    """The verdict on "``a`` and ``b`` take the same time within ``tolerance``" (0.2: either at most 1.2x the
    other), from seconds per call, one per round, as in ``faster``."""
    a, b = _rounds(a, b, ("a", "b"))
    claim = claim or f"within {tolerance:.0%} of each other"
    load = machine.background_load() if load is None else load
    return judge(claim, *median_interval([y / x for x, y in zip(a, b)]), len(a), at_least=1 / (1 + tolerance),
                 at_most=1 + tolerance, load=load)


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
        return faster(self.seconds[fast], self.seconds[than], by, claim, load=self.load)

    def within(self, a, b, tolerance, claim=None):
        """The verdict on "variants ``a`` and ``b`` take the same time within ``tolerance``"."""
        claim = claim or f"{a} and {b} take the same time within {tolerance:.0%}"
        return within(self.seconds[a], self.seconds[b], tolerance, claim, load=self.load)

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
