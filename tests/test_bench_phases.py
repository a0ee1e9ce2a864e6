"""The phase timer of the benchmarks, on a fake clock, and the mlp suite's phase table (quick mode)."""

import gc

import numpy
import pytest

from dlscratch.backend import to_cpu
from dlscratch.bench import mlp
from dlscratch.bench.phases import measure_phases, median_phases
from dlscratch.creation import manual_seed


class FakeClock:
    """A clock that only moves when a phase says so, and a log of the phases run."""

    def __init__(self):
        self.now = 0.0
        self.log = []

    def __call__(self):
        return self.now

    def phase(self, name, seconds):
        def run():
            self.log.append(name)
            self.now += seconds

        return run


def test_each_phase_gets_its_own_time():
    clock = FakeClock()
    variants = {"a": [clock.phase("a1", 1e-3), clock.phase("a2", 3e-3)], "b": [clock.phase("b1", 5e-3)]}
    figures = measure_phases(variants, repeat=2, number=4, pause=0, clock=clock)
    assert figures["a"] == [pytest.approx([1e-3, 1e-3]), pytest.approx([3e-3, 3e-3])]
    assert figures["b"] == [pytest.approx([5e-3, 5e-3])]
    # per round: one untimed step, then a burst of 4, variant after variant, phases in order
    round_ = ["a1", "a2"] * 5 + ["b1"] * 5
    assert clock.log == round_ * 2


def test_medians_per_phase():
    figures = {"a": [[3.0, 1.0, 2.0], [10.0, 30.0, 20.0]]}
    assert median_phases(figures) == {"a": [2.0, 20.0]}


def test_garbage_collector_restored_after_an_error():
    def broken():
        raise ZeroDivisionError("in a phase")

    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError):
        measure_phases({"a": [lambda: None, broken]}, repeat=1, number=1, pause=0)
    assert gc.isenabled()


def test_phases_make_the_same_step(backend, monkeypatch):
    """Running the four phases in order trains exactly as the whole step does."""
    built = []
    original = mlp.mlp
    monkeypatch.setattr(mlp, "mlp", lambda sizes: built.append(original(sizes)) or built[-1])
    sizes, batch = (12, 8, 3), 4
    manual_seed(0)
    step = mlp.dlscratch_step(sizes, batch)
    manual_seed(0)
    phases = mlp.dlscratch_phases(sizes, batch)
    before = [p.data.copy() for p in built[1].parameters()]
    for _ in range(5):
        step()
        for phase in phases:
            phase()
    for whole, phased, start in zip(built[0].parameters(), built[1].parameters(), before):
        numpy.testing.assert_array_equal(to_cpu(whole.data), to_cpu(phased.data))
        assert not numpy.array_equal(to_cpu(phased.data), to_cpu(start))


def test_phase_table_without_pytorch(backend, monkeypatch):
    monkeypatch.setattr(mlp, "torch_available", lambda: False)
    rows = mlp.phase_rows((12, 8, 3), 1, repeat=1, quick=True)
    assert [r[0] for r in rows] == mlp.PHASES + ["whole step"]
    assert all(r[2:] == ["-", "-"] for r in rows)
    parts, whole = sum(float(r[1]) for r in rows[:-1]), float(rows[-1][1])
    assert whole > 0 and abs(whole - parts) <= len(mlp.PHASES)  # each part rounded to 1 µs


def test_phase_table_ratios(monkeypatch):
    """With a reference framework the table gives its times and our ratio to them, phase by phase."""
    clock = FakeClock()
    ours = [clock.phase(name, seconds) for name, seconds in zip(mlp.PHASES, (1e-6, 2e-4, 3e-4, 4e-4))]
    theirs = [clock.phase(name, seconds) for name, seconds in zip(mlp.PHASES, (2e-6, 1e-4, 6e-4, 4e-4))]
    monkeypatch.setattr(mlp, "torch_available", lambda: True)
    monkeypatch.setattr(mlp, "dlscratch_phases", lambda sizes, batch: ours)
    monkeypatch.setattr(mlp, "torch_phases", lambda sizes, batch: theirs)
    monkeypatch.setattr(mlp, "measure_phases", _with_clock(mlp.measure_phases, clock))
    rows = mlp.phase_rows((12, 8, 3), 1, repeat=3, quick=True)
    assert rows == [
        ["zero_grad", "1", "2", "0.50"],
        ["forward + loss", "200", "100", "2.00"],
        ["backward", "300", "600", "0.50"],
        ["optimizer step", "400", "400", "1.00"],
        ["whole step", "901", "1102", "0.82"],
    ]


def _with_clock(measure, clock):
    def measure_on_clock(*args, **kwargs):
        return measure(*args, clock=clock, **kwargs)

    return measure_on_clock


def test_quick_run_prints_the_phase_table(backend, monkeypatch, capsys):
    monkeypatch.setattr(mlp, "torch_available", lambda: False)
    mlp.run(quick=True)
    out = capsys.readouterr().out
    assert "where one step's time goes, 20-16-10 at batch 1" in out
    for phase in mlp.PHASES + ["whole step"]:
        assert phase in out
