"""The five model benchmark suites (mlp, conv, pool, cnn, lstm) as one contract, and the CLI that runs them.

Each suite's quick run must return its documented headers and rows with positive, finite timings,
and must cover every dlscratch variant it times at full size. ``torch_available`` and
``dezero_available`` are patched to False everywhere, so these tests behave alike with and without
PyTorch or DeZero installed; the PyTorch rows are checked by running the suites by hand, the DeZero
rows by one test that runs only where DeZero imports. Nothing here asserts on speed.
"""

import math

import numpy
import pytest

from dlscratch.bench import SUITES, cnn, conv, dezero_models, load_suite, lstm, mlp, pool, timing
from dlscratch.bench.__main__ import main
from dlscratch.fast.pooling import DEFAULT_MAX_POOL_BACKWARD, MAX_POOL_BACKWARDS

# suite -> (module, expected headers, index of the time column, index of the "x PyTorch" column)
CONTRACT = {
    "mlp": (mlp, ["model", "batch", "framework", "ms/step", "samples/s", "x PyTorch"], 3, 5),
    "conv": (conv, ["variant", "ms", "GFLOP/s", "% of GEMM peak"], 1, None),
    "pool": (pool, ["variant", "ms", "x PyTorch"], 1, 2),
    "cnn": (cnn, ["network", "batch", "framework", "ms/step", "x PyTorch"], 3, 4),
    "lstm": (lstm, ["batch", "variant", "pass", "ms", "GFLOP/s", "% of GEMM peak", "x PyTorch"], 3, 6),
}


# suite -> the leading cells of its DeZero rows in a quick run
DEZERO_ROWS = {
    "cnn": [["Keras CNN", str(cnn.QUICK_KERAS_BATCH), cnn.DEZERO]],
    "conv": [["DeZero 0.0.13 CPU forward"], ["DeZero 0.0.13 CPU forward+backward"]],
    "pool": [["DeZero 0.0.13 CPU max forward+backward"]],
    "lstm": [[str(batch), lstm.DEZERO, how] for batch in lstm.QUICK_BATCHES for how in ("forward", "forward+backward")],
}
real_dezero_available = timing.dezero_available  # the autouse fixture hides it


@pytest.fixture(autouse=True)
def no_torch(monkeypatch):
    """Every suite sees no PyTorch and no DeZero, whether or not they are installed."""
    monkeypatch.setattr(timing, "torch_available", lambda: False)
    monkeypatch.setattr(timing, "dezero_available", lambda: False)
    for module, *_ in CONTRACT.values():
        monkeypatch.setattr(module, "torch_available", lambda: False)
    for name in DEZERO_ROWS:
        monkeypatch.setattr(CONTRACT[name][0], "dezero_available", lambda: False)


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
        assert "DeZero" not in " ".join(row), f"{name}: a DeZero row without DeZero: {row}"
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
    assert [(row[0], row[2]) for row in rows] == [
        (network, path) for network in ("Keras CNN", "article net") for path in ("dlscratch", cnn.REFERENCE_PATH)
    ]


def test_full_size_workloads_are_the_issues():
    assert mlp.MODELS == [(784, 1000, 10), (784, 256, 256, 10)] and mlp.BATCHES == [1, 8, 128, 1024]
    assert (conv.SHAPE, conv.OUT, conv.KERNEL, conv.PADDING) == ((128, 32, 28, 28), 64, 3, 1)
    assert pool.SHAPE == (128, 32, 28, 28)
    assert (cnn.KERAS_BATCH, cnn.ARTICLE_BATCH) == (128, 8)
    assert cnn.NETWORKS["Keras CNN"][1] == "SGD" and cnn.NETWORKS["article net"][1] == "Adam"
    assert lstm.SIZES == (700, 500, 80) and lstm.BATCHES == [1, 32, 128]


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


@pytest.mark.parametrize("name", sorted(DEZERO_ROWS))
def test_quick_run_adds_dezero_rows_where_it_imports(name, backend, monkeypatch, capsys):
    if not real_dezero_available():
        pytest.skip("DeZero 0.0.13 does not import here (a benchmark-only reference, never a dependency)")
    module, headers, time_col, ratio_col = CONTRACT[name]
    monkeypatch.setattr(module, "dezero_available", lambda: True)
    _, rows = module.run(quick=True)
    expected = DEZERO_ROWS[name]
    dezero_rows = [row for row in rows if "DeZero" in " ".join(row)]
    assert [row[:len(expected[0])] for row in dezero_rows] == expected
    for row in dezero_rows:
        assert len(row) == len(headers) and is_positive_finite(row[time_col]), f"{name}: bad DeZero row {row}"
        if ratio_col is not None:
            assert row[ratio_col] == "-", f"{name}: a ratio to PyTorch without PyTorch: {row}"
    assert any("dlscratch" in " ".join(row) for row in rows), f"{name}: no dlscratch rows"
    assert "quick mode" in capsys.readouterr().out


def test_dezero_available_is_false_when_the_import_fails(monkeypatch):
    def broken():
        raise AttributeError("module 'numpy' has no attribute 'int'")

    monkeypatch.setattr(dezero_models, "import_dezero", broken)
    real_dezero_available.cache_clear()
    try:
        assert real_dezero_available() is False
    finally:
        real_dezero_available.cache_clear()  # the next caller imports for real


def test_without_dezero_numpy_is_left_alone(monkeypatch):
    # the np.int alias DeZero needs is put back only when DeZero is there to import
    monkeypatch.setattr(dezero_models.importlib.util, "find_spec", lambda name: None)
    monkeypatch.delattr(numpy, "int", raising=False)
    with pytest.raises(ImportError, match="DeZero is not installed"):
        dezero_models.import_dezero()
    assert not hasattr(numpy, "int")


def test_verdict_says_met_or_not_met():
    assert timing.verdict(True, "<= 1.5") == "(target <= 1.5: met)"
    assert timing.verdict(False, ">= 3x faster") == "(target >= 3x faster: NOT met)"


def keras_seconds(ours_ms, dezero_ms=None):
    """``cnn.summary``'s input without PyTorch: our Keras CNN step, and DeZero's where measured."""
    seconds = {("Keras CNN", "dlscratch"): ours_ms / 1e3, ("article net", "dlscratch"): 0.001}
    if dezero_ms is not None:
        seconds["Keras CNN", cnn.DEZERO] = dezero_ms / 1e3
    return seconds


def test_cnn_judges_dezero_measured_in_this_run_when_it_was():
    line = cnn.summary(keras_seconds(100, dezero_ms=400), quick=False)[0]
    assert line == ("Keras CNN step: 100 ms, 4.0x faster than DeZero 0.0.13's 400 ms, measured in this run "
                    "(target >= 3x faster: met)")
    line = cnn.summary(keras_seconds(200, dezero_ms=400), quick=False)[0]
    assert "2.0x faster than DeZero 0.0.13's 400 ms, measured in this run (target >= 3x faster: NOT met)" in line


def test_cnn_falls_back_to_the_earlier_dezero_constant():
    lines = cnn.summary(keras_seconds(880), quick=False)
    assert lines[0].startswith(f"Keras CNN step: 880 ms, 2.0x slower than DeZero 0.0.13's {cnn.DEZERO_KERAS_MS:g} ms, "
                               "an earlier 2-core measurement, not this run")
    assert lines[0].endswith("(target >= 3x faster: NOT met)")
    assert "PyTorch is not importable here" in lines[1]


def test_suite_verdicts_use_the_shared_wording():
    default = f"dlscratch max forward+backward, {DEFAULT_MAX_POOL_BACKWARD} (default)"
    pool_lines = pool.summary({default: 0.02, "PyTorch CPU max forward+backward": 0.01}, quick=False)
    assert pool_lines[0] == "default max pool forward+backward / PyTorch: 2.00 (target <= 1.5: NOT met)"
    conv_lines = conv.summary({"dlscratch forward+backward": 0.1, "PyTorch CPU forward+backward": 0.1},
                              {"dlscratch forward+backward": 90.0}, quick=False)
    assert conv_lines[:2] == ["dlscratch forward+backward: 90 GFLOP/s (target >= 80: met)",
                              "dlscratch / PyTorch forward+backward time: 1.00 (target <= 1.5: met)"]
    assert mlp.summary({("784-1000-10", 1): [0.8], ("784-1000-10", 128): [1.4]}, quick=False) == [
        "784-1000-10 at batch 1: 0.80x PyTorch's step time, holds in 1 of 1 rounds (target faster than PyTorch: met)",
        "784-1000-10 at batch 128: 1.40x PyTorch's step time, holds in 0 of 1 rounds "
        "(target within 1.3x of PyTorch: NOT met)",
    ]
