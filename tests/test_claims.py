"""Timing claims judged with their noise (dlscratch/bench/claims.py) and the machine they ask (machine.py)."""

import os
import time
from types import SimpleNamespace

import pytest

from dlscratch.bench import claims, machine

QUIET, BUSY = machine.Load(others=0.0), machine.Load(others=0.9)


def test_the_median_interval_of_equal_samples_is_that_value():
    assert claims.median_interval([2.0] * 7) == (2.0, 2.0, 2.0)
    median, low, high = claims.median_interval([1, 2, 3, 4, 5, 6, 100])
    assert median == 4 and 1 <= low <= 4 <= high <= 100


def test_the_interval_is_reproducible_and_narrows_with_more_rounds():
    few = claims.median_interval([1.0, 1.2, 0.9, 1.1, 1.05])
    assert claims.median_interval([1.0, 1.2, 0.9, 1.1, 1.05]) == few
    many = claims.median_interval([1.0, 1.2, 0.9, 1.1, 1.05] * 8)
    assert many[2] - many[1] < few[2] - few[1]


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


def test_paired_rounds_cancel_a_slow_spell_that_unpaired_ones_cannot():
    base = [1.0, 1.0, 3.0, 1.0, 3.0, 1.0, 1.0]  # slow spells in rounds 3 and 5 hit both variants
    fast, slow = [b * 1e-3 for b in base], [b * 2e-3 for b in base]
    paired = claims.faster(fast, slow, by=1.5, load=QUIET)
    assert paired.holds and paired.low == paired.high == 2.0
    unpaired = claims.faster(fast, slow, by=1.5, paired=False, load=QUIET)
    assert unpaired.estimate == 2.0 and unpaired.high - unpaired.low > 1


def test_within_and_units():
    verdict = claims.within([1.0, 1.0, 1.0], [1.1, 1.1, 1.1], 0.2, load=QUIET)
    assert verdict.holds and verdict.claim == "within 20% of each other"
    share = claims.bounded("busy share below 70%", [0.5, 0.52, 0.49, 0.51, 0.55], at_most=0.7, load=QUIET, unit="%")
    assert share.holds and "51% (95% interval 49% to 55%" in str(share)
    assert claims.format_value(0.0012, "s") == "1.2 ms" and claims.format_value(3.14159, "x") == "3.14x"


def test_timeit_results_count_one_figure_per_run():
    result = SimpleNamespace(all_runs=[0.2, 0.3, 0.25], loops=100)
    slow = SimpleNamespace(all_runs=[2.0, 2.1, 2.2], loops=100)
    verdict = claims.faster(result, slow, by=5, load=QUIET)
    assert verdict.holds and verdict.rounds == 3 and 7 < verdict.estimate < 9
    unpaired = claims.ratio_interval([0.02, 0.021, 0.022], [0.002, 0.003, 0.0025])
    assert (verdict.estimate, verdict.low, verdict.high) == unpaired  # %timeit's runs are not rounds in turn


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
