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
    assert [(r[0], r[1], r[2]) for r in rows] == [("20-16-10", "1", "dlscratch"), ("20-16-10", "4", "dlscratch")]
    for row in rows:
        ms, per_second = float(row[3]), float(row[4])
        assert ms > 0 and math.isfinite(ms)
        assert per_second == pytest.approx(int(row[1]) / (ms / 1e3), rel=0.01)
        assert row[5] == "-"
    assert "quick mode" in capsys.readouterr().out


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
    rows = [
        ["784-1000-10", "1", "dlscratch", "1", "1000", "0.80"],
        ["784-1000-10", "1", "PyTorch CPU", "1.25", "800", "1.00"],
        ["784-1000-10", "8", "dlscratch", "1", "8000", "1.10"],
        ["784-1000-10", "128", "dlscratch", "1", "128000", "1.30"],
        ["784-1000-10", "1024", "dlscratch", "1", "1024000", "2.00"],
    ]
    lines = mlp.summary(rows, quick=False)
    assert len(lines) == 3  # batch 1024 has no target
    assert lines[0].endswith("met)") and "NOT" not in lines[0]
    assert "NOT met" in lines[1]
    assert "within 1.3x" in lines[2] and "NOT" not in lines[2]
    no_reference = [row[:5] + ["-"] for row in rows if row[2] == "dlscratch"]
    assert mlp.summary(no_reference, quick=False) == [
        "PyTorch is not importable here: no reference rows, targets not judged"
    ]
