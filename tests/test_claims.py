"""Timing claims judged with their noise (dlscratch/bench/claims.py) and the machine they ask (machine.py)."""

import os
import time
from types import SimpleNamespace

import numpy as np
import pytest

from dlscratch.bench import claims, machine, timing

QUIET, BUSY = machine.Load(others=0.0), machine.Load(others=0.9)


def test_the_median_interval_of_equal_samples_is_that_value():
    assert claims.median_interval([2.0] * 7) == (2.0, 2.0, 2.0)
    assert claims.median_interval([1, 2, 3, 4, 5, 6, 100]) == (4, 1, 100)  # 7 rounds: the range, 98.4%


def test_the_interval_is_the_order_statistics_that_hold_the_median_95_percent_of_the_time():
    # below 6 rounds even the range falls short of 95%: 1 - 2 * 2**-n
    assert [round(claims.coverage(n), 4) for n in (3, 4, 5, 6)] == [0.75, 0.875, 0.9375, 0.9688]
    assert claims.ROUNDS_FOR_95 == 6
    assert claims.median_interval(list(range(1, 10))) == (5, 2, 8)  # 9 rounds: 2nd to 8th, 96.1%
    assert round(claims.coverage(9), 4) == 0.9609 and claims.coverage(9) >= claims.CONFIDENCE
    many = claims.median_interval([1.0, 1.2, 0.9, 1.1, 1.05] * 8)
    assert many[2] - many[1] < 0.3  # 40 rounds: the interval narrows inside the range


def test_a_simulated_median_interval_holds_the_true_median_as_often_as_it_says():
    rng = np.random.default_rng(0)
    for n in (3, 5, 9):
        samples = rng.lognormal(0.0, 0.5, size=(4000, n))  # a skewed timing distribution, true median 1
        lows, highs = zip(*(claims.median_interval(row)[1:] for row in samples))
        hit = np.mean((np.array(lows) <= 1) & (np.array(highs) >= 1))
        assert abs(hit - claims.coverage(n)) < 0.02, (n, hit)


def test_fewer_rounds_than_95_percent_needs_print_a_range_with_its_coverage():
    few = claims.judge("A beats B", 2.0, 1.5, 2.5, 3, at_least=1, load=QUIET)
    assert few.holds and "95% interval 1.5x" not in str(few)
    assert "(range 1.5x to 2.5x over 3 rounds, which holds the median 75% of the time; a 95% interval needs 6 " \
           "rounds)" in str(few)
    sizes = claims.bounded("a latency or two", [1.2, 1.9, 1.4], at_least=1, at_most=2, load=QUIET, over="sizes")
    assert sizes.holds and (sizes.low, sizes.high) == (1.2, 1.9)
    assert "(range 1.2x to 1.9x over 3 sizes, each measured once: not an interval)" in str(sizes)
    assert claims.bounded("a latency or two", [1.2, 2.1, 1.4], at_most=2, load=QUIET, over="sizes").outcome \
        == claims.INCONCLUSIVE


@pytest.mark.parametrize(("low", "high", "outcome"), [
    (3.5, 4.5, claims.HOLDS), (2.5, 3.5, claims.INCONCLUSIVE), (1.5, 2.5, claims.CONTRADICTED)])
def test_a_lower_bound_holds_straddles_or_is_contradicted(low, high, outcome):
    verdict = claims.judge("A is at least 3x faster than B", (low + high) / 2, low, high, 7, at_least=3, load=QUIET)
    assert verdict.outcome == outcome
    assert str(verdict).startswith(f"{outcome}: A is at least 3x faster than B: ")
    assert "95% interval" in str(verdict) and "7 rounds" in str(verdict)


def test_two_bounds_and_both_sides():
    kwargs = dict(rounds=7, at_least=1 / 1.2, at_most=1.2, load=QUIET)
    assert claims.judge("same", 1.0, 0.95, 1.05, **kwargs).holds
    assert claims.judge("same", 1.5, 1.4, 1.6, **kwargs).contradicted
    assert claims.judge("same", 0.5, 0.4, 0.6, **kwargs).contradicted
    assert claims.judge("same", 1.2, 1.1, 1.3, **kwargs).outcome == claims.INCONCLUSIVE
    assert "both sides of 1.2x" in claims.judge("same", 1.2, 1.1, 1.3, **kwargs).reason
    with pytest.raises(ValueError, match="give at_least, at_most or both"):
        claims.judge("no bound", 1, 1, 1, 7)


def test_a_busy_machine_or_too_few_rounds_make_a_contradiction_inconclusive():
    busy = claims.judge("A beats B", 0.5, 0.4, 0.6, 7, at_least=1, load=BUSY)
    assert busy.outcome == claims.INCONCLUSIVE and "looks wrong" in busy.reason and "90%" in busy.reason
    assert claims.judge("A beats B", 0.5, 0.4, 0.6, 2, at_least=1, load=QUIET).outcome == claims.INCONCLUSIVE
    assert claims.judge("A beats B", 0.5, 0.4, 0.6, 7, at_least=1, load=machine.Load()).contradicted


def test_check_fails_only_on_a_contradiction_unless_strict(capsys, monkeypatch):
    monkeypatch.delenv("DLSCRATCH_STRICT_CLAIMS", raising=False)
    inconclusive = claims.judge("A beats B", 1.0, 0.8, 1.2, 7, at_least=1, load=QUIET)
    assert inconclusive.check() is None
    assert capsys.readouterr().out.startswith("inconclusive on this machine: A beats B")
    with pytest.raises(AssertionError, match="CONTRADICTED: A beats B: 0.5x"):
        claims.judge("A beats B", 0.5, 0.4, 0.6, 7, at_least=1, load=QUIET).check()
    monkeypatch.setenv("DLSCRATCH_STRICT_CLAIMS", "1")
    with pytest.raises(AssertionError, match="inconclusive"):
        inconclusive.check()


def test_paired_rounds_cancel_a_slow_spell():
    base = [1.0, 1.0, 3.0, 1.0, 3.0, 1.0, 1.0]  # slow spells in rounds 3 and 5 hit both variants
    fast, slow = [b * 1e-3 for b in base], [b * 2e-3 for b in base]
    paired = claims.faster(fast, slow, by=1.5, load=QUIET)
    assert paired.holds and paired.low == paired.high == 2.0


def test_a_slow_spell_on_one_side_of_back_to_back_runs_is_no_speed_up_once_the_runs_take_turns():
    """A and B do the same work (1 ms); from halfway through the calls a slow spell adds 3 ms to each. Run back
    to back, as two `%timeit -r 7` lines run, every timed call of B falls in the spell and a bare comparison
    finds A 4x faster; claims refuses such runs, and in interleaved rounds the spell hits both sides."""
    def measured(order):
        calls = {"n": 0}

        def work():
            calls["n"] += 1
            time.sleep(0.001 if calls["n"] <= 8 else 0.004)  # 16 calls in all: 2 warm-ups and 7 rounds of each

        variants = {"A": work, "B": lambda: work()}
        if order == "back to back":
            return {name: timing.measure_interleaved({name: fn}, repeat=7, number=1, settle=0)[name]
                    for name, fn in variants.items()}
        return timing.measure_interleaved(variants, repeat=7, number=1, settle=0, pause=0)

    apart = measured("back to back")
    assert timing.median(apart["B"]) / timing.median(apart["A"]) > 2.5  # what a bare comparison would claim
    with pytest.raises(ValueError, match="ran them all before the other side's; time the two in interleaved"):
        claims.faster(SimpleNamespace(all_runs=apart["A"], loops=1), SimpleNamespace(all_runs=apart["B"], loops=1))
    interleaved = claims.Timings(measured("interleaved"), QUIET).faster("A", than="B", by=1.5)
    assert not interleaved.holds and interleaved.estimate < 1.2, str(interleaved)


def test_within_and_units():
    verdict = claims.within([1.0, 1.0, 1.0], [1.1, 1.1, 1.1], 0.2, load=QUIET)
    assert verdict.holds and verdict.claim == "within 20% of each other"
    share = claims.bounded("busy share below 70%", [0.5, 0.52, 0.49, 0.51, 0.55, 0.5], at_most=0.7, load=QUIET,
                           unit="%")
    assert share.holds and "50% (95% interval 49% to 55%, 6 rounds)" in str(share)
    assert claims.format_value(0.0012, "s") == "1.2 ms" and claims.format_value(3.14159, "x") == "3.14x"


def test_one_run_of_timeit_is_one_round_and_sides_of_unequal_rounds_are_refused():
    one = SimpleNamespace(all_runs=[0.2], loops=100)
    assert claims.faster([one.all_runs[0] / 100] * 3, [0.02] * 3, by=5, load=QUIET).holds
    with pytest.raises(ValueError, match="fast has 1 rounds and slow 3"):
        claims.faster(one, [0.02] * 3, load=QUIET)


def test_a_slowed_down_fast_variant_fails_its_check_on_a_quiet_machine():
    times = claims.compare({"quick": lambda: None, "slowed": lambda: time.sleep(0.002)}, rounds=5)
    assert times.faster("quick", than="slowed", by=2).holds  # 2 ms of sleep against nothing
    wrong = times.faster("slowed", than="quick", by=2)
    if times.load.others is not None and times.load.others >= claims.BUSY:
        assert wrong.outcome == claims.INCONCLUSIVE  # the machine was busy: no proof either way
    else:
        assert wrong.contradicted
        with pytest.raises(AssertionError, match="CONTRADICTED: slowed is at least 2x faster than quick"):
            wrong.check()
    assert "quick" in times.table() and "rounds" in times.table()


def test_physical_cores_count_hyperthreads_once(tmp_path, monkeypatch):
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no CPU affinity on this system (macOS, Windows): machine.py counts logical CPUs there")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    for cpu, core in enumerate([0, 0, 1, 1]):  # two cores with two hyperthreads each
        topology = tmp_path / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text("0\n")
        (topology / "core_id").write_text(f"{core}\n")
    monkeypatch.setattr(machine, "SYSFS_CPU", tmp_path)
    monkeypatch.setattr(machine, "CGROUP_CPU_MAX", tmp_path / "absent")
    assert machine.logical_cpus() == 4 and machine.physical_cores() == 2
    quota = tmp_path / "cpu.max"
    quota.write_text("150000 100000\n")  # a container allowed 1.5 CPUs' worth of time
    monkeypatch.setattr(machine, "CGROUP_CPU_MAX", quota)
    assert machine.physical_cores() == 2
    quota.write_text("50000 100000\n")
    assert machine.physical_cores() == 1
    quota.write_text("max 100000\n")
    assert machine.physical_cores() == 2


def test_the_real_machine_answers():
    assert 1 <= machine.physical_cores() <= machine.logical_cpus()
    speedup = machine.parallel_speedup(processes=2, seconds=0.1)
    assert 0.2 < speedup <= 2
    load = machine.background_load(0.05)
    assert load.others is None or 0 <= load.others <= 1
    assert "physical cores" in machine.describe()
