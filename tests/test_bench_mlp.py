"""The mlp benchmark suite in quick mode: its table and its verdicts (nothing is asserted on speed).

PyTorch is installed on some machines and not others; ``torch_available`` is patched to False
so that the suite's own rows are checked alike everywhere, and the verdict logic is checked on
made-up rows.
"""

import math

import pytest

from dlscratch.bench import SUITES, load_suite, mlp
from dlscratch.functions.loss import cross_entropy
from dlscratch.tensor import Tensor


@pytest.fixture(autouse=True)
def no_torch(monkeypatch):
    monkeypatch.setattr(mlp, "torch_available", lambda: False)


def test_suite_is_registered():
    assert SUITES["mlp"] == "dlscratch.bench.mlp"
    assert load_suite("mlp") is mlp


def test_quick_table(backend, capsys):
    headers, rows = mlp.run(quick=True)
    assert headers == mlp.HEADERS
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("20-16-10", "1", "dlscratch"), ("20-16-10", "1", mlp.REFERENCE_PATH),
        ("20-16-10", "4", "dlscratch"), ("20-16-10", "4", mlp.REFERENCE_PATH),
    ]
    for row in rows:
        ms, per_second = float(row[3]), float(row[4])
        assert ms > 0 and math.isfinite(ms)
        assert per_second == pytest.approx(int(row[1]) / (ms / 1e3), rel=0.01)
        assert row[5] == "-"
    out = capsys.readouterr().out
    assert "quick mode" in out
    assert "20-16-10: reference path time / fast path time: " in out


def test_reference_lines_give_each_batch_its_ratio():
    lines = mlp.reference_lines({("784-1000-10", 1): 1.234, ("784-1000-10", 128): 0.996, ("20-10", 8): 2.0})
    assert lines == [
        "784-1000-10: reference path time / fast path time: 1.23 at batch 1, 1.00 at batch 128 "
        "(what the fast path's tricks buy)",
        "20-10: reference path time / fast path time: 2.00 at batch 8 (what the fast path's tricks buy)",
    ]


def test_step_trains_the_model(backend):
    sizes, batch = (12, 8, 3), 16
    step = mlp.dlscratch_step(sizes, batch)
    x, y = (Tensor(backend.asarray(a)) for a in mlp.random_batch(sizes, batch))

    def loss():
        return float(cross_entropy(step.model(x), y).item())

    before = loss()
    for _ in range(200):
        step()
    assert loss() < 0.8 * before


def test_verdicts():
    ratios = {
        ("784-1000-10", 1): [0.8, 0.9, 0.7, 1.1],  # faster in 3 of 4 rounds
        ("784-1000-10", 8): [0.99, 1.02, 0.98, 1.01],  # a tie: the median is below 1, the rounds split
        ("784-1000-10", 128): [1.3, 1.2, 1.25, 1.4],
        ("784-1000-10", 1024): [2.0, 2.0, 2.0, 2.0],
    }
    lines = mlp.summary(ratios, quick=False)
    assert len(lines) == 3  # batch 1024 has no target
    assert lines[0] == (
        "784-1000-10 at batch 1: 0.85x PyTorch's step time, holds in 3 of 4 rounds (target faster than PyTorch: met)"
    )
    assert lines[1].startswith("784-1000-10 at batch 8: 1.00x PyTorch's step time, holds in 2 of 4 rounds")
    assert lines[1].endswith("(target faster than PyTorch: NOT met)")
    assert "holds in 3 of 4 rounds (target within 1.3x of PyTorch: met)" in lines[2]
    assert mlp.summary({}, quick=False) == ["PyTorch is not importable here: no reference rows, targets not judged"]


def test_ratio_column_is_the_median_of_paired_rounds(monkeypatch):
    """Each round's dlscratch time is divided by PyTorch's from the same round, not median by median."""
    times = {"dlscratch": [1.0, 4.0, 9.0], mlp.REFERENCE_PATH: [3.0, 8.0, 9.0], "PyTorch CPU": [2.0, 2.0, 10.0]}
    monkeypatch.setattr(mlp, "torch_available", lambda: True)
    monkeypatch.setattr(mlp, "torch_step", lambda sizes, batch: None)
    monkeypatch.setattr(mlp, "measure_interleaved", lambda variants, **kwargs: times)
    rows, paired, reference_ratio = mlp.rows_for((12, 8, 3), 2, repeat=3, quick=True)
    assert paired == [0.5, 2.0, 0.9]
    assert reference_ratio == 2.0  # medians: 8 s over 4 s
    assert rows == [
        ["12-8-3", "2", "dlscratch", "4000.000", "0", "0.90"],  # medians: 4 s and 2 s, but the rounds give 0.9
        ["12-8-3", "2", mlp.REFERENCE_PATH, "8000.000", "0", "1.50"],
        ["12-8-3", "2", "PyTorch CPU", "2000.000", "1", "1.00"],
    ]
