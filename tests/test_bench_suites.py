"""The four model benchmark suites (mlp, conv, pool, cnn) as one contract, and the CLI that runs them.

Each suite's quick run must return its documented headers and rows with positive, finite timings,
and must cover every dlscratch variant it times at full size. ``torch_available`` is patched to
False everywhere, so these tests behave alike with and without PyTorch installed; the PyTorch rows
are checked by running the suites by hand. Nothing here asserts on speed.
"""

import math

import pytest

from dlscratch.bench import SUITES, cnn, conv, load_suite, mlp, pool, timing
from dlscratch.bench.__main__ import main
from dlscratch.functions.pooling import DEFAULT_MAX_POOL_BACKWARD, MAX_POOL_BACKWARDS

# suite -> (module, expected headers, index of the time column, index of the "x PyTorch" column)
CONTRACT = {
    "mlp": (mlp, ["model", "batch", "framework", "ms/step", "samples/s", "x PyTorch"], 3, 5),
    "conv": (conv, ["variant", "ms", "GFLOP/s", "% of GEMM peak"], 1, None),
    "pool": (pool, ["variant", "ms", "x PyTorch"], 1, 2),
    "cnn": (cnn, ["network", "batch", "framework", "ms/step", "x PyTorch"], 3, 4),
}


@pytest.fixture(autouse=True)
def no_torch(monkeypatch):
    """Every suite sees no PyTorch, whether or not it is installed."""
    monkeypatch.setattr(timing, "torch_available", lambda: False)
    for module, *_ in CONTRACT.values():
        monkeypatch.setattr(module, "torch_available", lambda: False)


def is_positive_finite(text):
    value = float(text)
    return value > 0 and math.isfinite(value)


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_quick_run_returns_the_table_without_torch_rows(name, backend, capsys):
    module, headers, time_col, ratio_col = CONTRACT[name]
    got_headers, rows = module.run(quick=True)
    assert got_headers == headers
    assert rows, f"{name}: no rows"
    for row in rows:
        assert len(row) == len(headers), f"{name}: row {row} does not match headers {headers}"
        assert is_positive_finite(row[time_col]), f"{name}: bad time in {row}"
        assert "PyTorch" not in " ".join(row), f"{name}: a PyTorch row without PyTorch: {row}"
        if ratio_col is not None:
            assert row[ratio_col] == "-", f"{name}: a ratio without a reference: {row}"
    out = capsys.readouterr().out
    assert out.startswith(f"{name}: ") and "quick mode" in out  # the explanation, then the verdict


def test_quick_runs_cover_every_variant(backend):
    _, rows = pool.run(quick=True)
    names = [row[0] for row in rows]
    for how in MAX_POOL_BACKWARDS:
        mark = " (default)" if how == DEFAULT_MAX_POOL_BACKWARD else ""
        assert f"dlscratch max forward+backward, {how}{mark}" in names
    assert "dlscratch avg forward+backward" in names

    _, rows = conv.run(quick=True)
    names = [row[0] for row in rows]
    assert sum(name.startswith("GEMM") for name in names) == 2
    assert {"dlscratch forward", "dlscratch forward+backward"} <= set(names)
    if backend.__name__ == "numpy":  # the im2col layout comparison is a CPU row
        assert "dlscratch forward+backward, im2col 'strided'" in names

    _, rows = cnn.run(quick=True)
    assert [row[0] for row in rows] == ["Keras CNN", "article net"]


def test_full_size_workloads_are_the_issues():
    assert mlp.MODELS == [(784, 1000, 10), (784, 256, 256, 10)] and mlp.BATCHES == [1, 8, 128, 1024]
    assert (conv.SHAPE, conv.OUT, conv.KERNEL, conv.PADDING) == ((128, 32, 28, 28), 64, 3, 1)
    assert pool.SHAPE == (128, 32, 28, 28)
    assert (cnn.KERAS_BATCH, cnn.ARTICLE_BATCH) == (128, 8)
    assert cnn.NETWORKS["Keras CNN"][1] == "SGD" and cnn.NETWORKS["article net"][1] == "Adam"


def test_cli_help_lists_the_new_suites(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for name in CONTRACT:
        assert SUITES[name] == f"dlscratch.bench.{name}"
        assert name in out.split("the suite to run:")[1]


def test_cli_rejects_an_unknown_suite(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["nosuch"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'nosuch'" in err and "mlp" in err and "cnn" in err
    with pytest.raises(ValueError, match="unknown benchmark suite 'nosuch'; choose one of: .*conv.*pool"):
        load_suite("nosuch")


def test_cli_passes_quick_and_repeat_to_the_suite(backend, capsys):
    main(["pool", "--quick", "--repeat", "2"])
    out = capsys.readouterr().out
    assert "median of 2 interleaved repeats" in out
    assert f"pool: 2x2 pooling, stride 2, on {pool.QUICK_SHAPE}" in out
    assert "dlscratch max forward" in out and "PyTorch CPU" not in out
