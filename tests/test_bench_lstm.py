"""The lstm benchmark suite: its quick table, its verdicts, its naive model and its FLOP count (nothing is
asserted on speed).

PyTorch and DeZero are installed on some machines and not others; ``torch_available`` and
``dezero_available`` are patched to False so that the suite's own rows are checked alike everywhere,
and the verdict and ratio logic is checked on made-up times.
"""

import ctypes
import math

import numpy
import pytest

from dlscratch.bench import SUITES, load_suite, lstm
from dlscratch.creation import manual_seed
from dlscratch.tensor import Tensor

FB = lstm.FORWARD_BACKWARD


@pytest.fixture(autouse=True)
def no_references(monkeypatch):
    monkeypatch.setattr(lstm, "torch_available", lambda: False)
    monkeypatch.setattr(lstm, "dezero_available", lambda: False)


def test_suite_is_registered():
    assert SUITES["lstm"] == "dlscratch.bench.lstm"
    assert load_suite("lstm") is lstm


def test_quick_table(backend, capsys):
    headers, rows = lstm.run(quick=True)
    assert headers == lstm.HEADERS
    gemms, models = rows[:5], rows[5:]
    assert [(r[0], r[1]) for r in gemms] == [
        ("1", "GEMM (5, 12) @ (12, 32)"), ("1", "GEMM (1, 8) @ (8, 32)"),
        ("4", "GEMM (20, 12) @ (12, 32)"), ("4", "GEMM (4, 8) @ (8, 32)"), ("-", "GEMM 128^3"),
    ]
    assert max(float(r[5]) for r in gemms) == 100.0  # the peak is the best GEMM
    assert [(r[0], r[1], r[2]) for r in models] == [
        (batch, variant, pass_) for batch in ("1", "4")
        for variant in (lstm.NN_LSTM, lstm.PER_GATE, lstm.NN_LSTM_REFERENCE) for pass_ in (lstm.FORWARD, FB)
    ]
    for row in models:
        ms, gflops = float(row[3]), float(row[4])
        assert ms > 0 and math.isfinite(ms)
        flops = lstm.lstm_flops(lstm.QUICK_SIZES, int(row[0])) * (3 if row[2] == FB else 1)
        assert gflops == pytest.approx(flops / (ms / 1e3) / 1e9, rel=0.01)
        assert row[6] == "-"
    out = capsys.readouterr().out
    assert out.startswith("lstm: one LSTM layer, input 12, hidden 8, 5 steps, batch 1, 4")
    assert "quick mode" in out and "GEMM peak: the best of" in out
    assert "nn.LSTM forward+backward, reference path time / fast path time: " in out


def test_reference_line_gives_each_batch_the_median_ratio():
    ratios = {(1, "reference path"): [1.0, 1.2, 1.1], (1, "PyTorch"): [9.0], (32, "reference path"): [0.9, 1.0, 2.0]}
    assert lstm.reference_line(ratios) == (
        "nn.LSTM forward+backward, reference path time / fast path time: 1.10 at batch 1, 1.00 at batch 32"
    )


def test_lstm_flops_are_the_gate_gemms():
    assert lstm.lstm_flops((700, 500, 80), 1) == 2 * 80 * 4 * 500 * 1200
    # the same as the input GEMM over all steps plus one recurrent GEMM per step
    sizes, batch = (12, 8, 5), 3
    gemms = lstm.gemm_variants(sizes, [batch], square=4)
    input_gemm, recurrent_gemm = gemms["3", "GEMM (15, 12) @ (12, 32)"][1], gemms["3", "GEMM (3, 8) @ (8, 32)"][1]
    assert lstm.lstm_flops(sizes, batch) == input_gemm + sizes[2] * recurrent_gemm


def sigmoid(a):
    return 1 / (1 + numpy.exp(-a))


def forum_lstm(x, p):
    """The forum's LSTM with peepholes in plain float64 NumPy: ``x: (T, N, I)`` -> outputs ``(T, N, H)``, ``c_T``.
    ``p``: the parameters by name, as arrays."""
    def gate(name, x_t, h):
        return x_t @ p[f"W_x{name}"].T + p[f"b_{name}"] + h @ p[f"W_h{name}"].T

    h = c = numpy.zeros((x.shape[1], p["b_i"].shape[0]))
    outputs = []
    for x_t in x:
        i = sigmoid(gate("i", x_t, h) + p["p_i"] * c)
        f = sigmoid(gate("f", x_t, h) + p["p_f"] * c)
        g = numpy.tanh(gate("g", x_t, h))
        c = f * c + i * g
        h = sigmoid(gate("o", x_t, h) + p["p_o"] * c) * numpy.tanh(c)
        outputs.append(h)
    return numpy.stack(outputs), c


def test_per_gate_loop_is_the_forums_lstm_with_peepholes(backend):
    manual_seed(0)
    model = lstm.PerGateLSTM(input_size=5, hidden_size=3)
    x = numpy.random.default_rng(1).standard_normal((4, 2, 5)).astype(numpy.float32)
    output, (h, c) = model(Tensor(backend.asarray(x)))
    params = {name: p.numpy().astype(numpy.float64) for name, p in model.named_parameters()}
    assert sorted(params) == sorted([f"{w}{g}" for w in ("W_x", "W_h", "b_") for g in "ifgo"] + ["p_i", "p_f", "p_o"])
    expected, c_expected = forum_lstm(x.astype(numpy.float64), params)
    numpy.testing.assert_allclose(output.numpy(), expected, rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(h.numpy(), expected[-1], rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(c.numpy(), c_expected, rtol=1e-5, atol=1e-6)


def test_forward_backward_reaches_every_parameter(backend):
    model = lstm.PerGateLSTM(input_size=5, hidden_size=3)
    x = Tensor(backend.asarray(lstm.random_sequence((5, 3, 4), batch=2)))
    passes = lstm.timed_passes(model, x)
    passes[lstm.FORWARD]()
    assert all(p.grad is None for p in model.parameters())  # under no_grad
    passes[FB]()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, name


def test_verdicts():
    ratios = {
        (1, "PyTorch"): [0.9, 0.95, 1.05, 0.97],  # no slower in 3 of 4 rounds
        (128, "PyTorch"): [1.1, 1.2, 1.18, 1.1],  # within 1.15x in 2 of 4 rounds
        (1, "DeZero"): [0.05, 0.08, 0.125, 0.04],  # 20x, 12.5x, 8x and 25x faster
    }
    lines = lstm.summary(ratios, quick=False)
    assert lines == [
        "nn.LSTM forward+backward at batch 1: 0.96x PyTorch's time, holds in 3 of 4 rounds "
        "(target no slower than PyTorch: met)",
        "nn.LSTM forward+backward at batch 128: 1.14x PyTorch's time, holds in 2 of 4 rounds "
        "(target within 1.15x of PyTorch: NOT met)",
        "nn.LSTM forward+backward at batch 1: 16.2x faster than DeZero 0.0.13, holds in 3 of 4 rounds "
        "(target >= 10x faster than DeZero 0.0.13: met)",
    ]


def test_a_tie_is_not_a_win():
    line = lstm.summary({(1, "PyTorch"): [0.99, 1.02, 0.98, 1.01]}, quick=False)[0]
    assert line.startswith("nn.LSTM forward+backward at batch 1: 1.00x PyTorch's time, holds in 2 of 4 rounds")
    assert line.endswith("(target no slower than PyTorch: NOT met)")


def test_targets_without_references_are_not_judged():
    assert lstm.summary({}, quick=False) == [
        "nn.LSTM forward+backward at batch 1 against PyTorch: not judged (PyTorch is not importable here)",
        "nn.LSTM forward+backward at batch 128 against PyTorch: not judged (PyTorch is not importable here)",
        "nn.LSTM forward+backward at batch 1 against DeZero: not judged (DeZero 0.0.13 does not import here)",
    ]
    assert lstm.summary({}, quick=True) == ["quick mode: tiny sizes, a smoke test, not a measurement"]


def test_ratio_column_is_the_median_of_paired_rounds(monkeypatch):
    """Each round's time is divided by PyTorch's same pass from the same round, not median by median."""
    torch = lstm.torch_label("cpu")
    times = {
        (lstm.NN_LSTM, lstm.FORWARD): [1.0, 1.0, 1.0], (lstm.NN_LSTM, FB): [1.0, 4.0, 9.0],
        (lstm.NN_LSTM_REFERENCE, lstm.FORWARD): [1.0, 1.0, 1.0], (lstm.NN_LSTM_REFERENCE, FB): [2.0, 4.0, 9.0],
        (torch, lstm.FORWARD): [2.0, 2.0, 2.0], (torch, FB): [2.0, 2.0, 10.0],
        (lstm.DEZERO, lstm.FORWARD): [8.0, 8.0, 8.0], (lstm.DEZERO, FB): [20.0, 20.0, 20.0],
    }
    monkeypatch.setattr(lstm, "torch_available", lambda: True)
    monkeypatch.setattr(lstm, "dezero_available", lambda: True)
    monkeypatch.setattr(lstm, "torch_device", lambda: "cpu")
    for builder in ("dlscratch_variants", "torch_variants", "dezero_variants"):
        monkeypatch.setattr(lstm, builder, lambda *args: {})
    monkeypatch.setattr(lstm, "measure_interleaved", lambda variants, **kwargs: times)
    peak = lstm.lstm_flops((12, 8, 5), 2) / 1e9  # GFLOP/s of a forward pass in 1 s
    rows, ratios = lstm.rows_for((12, 8, 5), 2, repeat=3, quick=True, peak=peak)
    assert ratios == {"reference path": [2.0, 1.0, 1.0], "PyTorch": [0.5, 2.0, 0.9], "DeZero": [0.05, 0.2, 0.45]}
    assert [(r[1], r[2], r[3], r[6]) for r in rows] == [
        (lstm.NN_LSTM, lstm.FORWARD, "1000", "0.50"),
        (lstm.NN_LSTM, FB, "4000", "0.90"),  # medians: 4 s and 2 s, but the rounds give 0.9
        (lstm.NN_LSTM_REFERENCE, lstm.FORWARD, "1000", "0.50"),
        (lstm.NN_LSTM_REFERENCE, FB, "4000", "1.00"),
        (torch, lstm.FORWARD, "2000", "1.00"),
        (torch, FB, "2000", "1.00"),
        (lstm.DEZERO, lstm.FORWARD, "8000", "4.00"),
        (lstm.DEZERO, FB, "2e+04", "10.00"),
    ]
    assert [r[5] for r in rows[:2]] == ["100.0", "75.0"]  # forward+backward counts three passes' FLOPs


def test_torch_rows_run_where_pytorch_imports():
    pytest.importorskip("torch")
    variants = lstm.torch_variants((6, 4, 3), batch=2, device="cpu")
    assert list(variants) == [("PyTorch CPU nn.LSTM", lstm.FORWARD), ("PyTorch CPU nn.LSTM", FB)]
    for fn in variants.values():
        fn()


class FakeOpenBLAS:
    """A stand-in for ``ctypes.CDLL`` on a library that exports ``symbol`` returning ``core``."""

    def __init__(self, path, symbol="scipy_openblas_get_corename64_", core=b"Haswell"):
        assert "openblas" in path
        get_corename = lambda: core  # noqa: E731
        setattr(self, symbol, get_corename)


MAPS = (
    "7f00-7f10 r-xp 00000000 08:01 12 /site-packages/numpy.libs/libscipy_openblas64_-32a4.so\n"
    "7f10-7f20 rw-p 00000000 00:00 0 \n"
    "7f20-7f30 r-xp 00000000 08:01 13 /usr/lib/libm.so.6\n"
)


@pytest.fixture
def fake_openblas(monkeypatch, tmp_path):
    """A process map naming an OpenBLAS, NumPy built on scipy-openblas, and a fake library loader."""
    maps = tmp_path / "maps"
    maps.write_text(MAPS)
    config = {"Build Dependencies": {"blas": {"name": "scipy-openblas"}}}
    monkeypatch.setattr(lstm.numpy, "show_config", lambda mode: config)
    monkeypatch.setattr(lstm.ctypes, "CDLL", FakeOpenBLAS)
    return maps, config


def test_mapped_libraries_reads_the_path_column(fake_openblas):
    maps, _ = fake_openblas
    assert lstm.mapped_libraries(maps, "openblas") == ["/site-packages/numpy.libs/libscipy_openblas64_-32a4.so"]
    assert lstm.mapped_libraries(maps, "libm") == ["/usr/lib/libm.so.6"]


def test_openblas_corename_asks_the_loaded_library(fake_openblas, monkeypatch):
    maps, config = fake_openblas
    assert lstm.openblas_corename(maps) == "Haswell"
    monkeypatch.setattr(ctypes, "CDLL", lambda path: FakeOpenBLAS(path, "openblas_get_corename", b"SkylakeX"))
    assert lstm.openblas_corename(maps) == "SkylakeX"


def test_openblas_corename_is_none_when_unknown(fake_openblas, monkeypatch, tmp_path):
    maps, config = fake_openblas
    assert lstm.openblas_corename(tmp_path / "no such file") is None
    monkeypatch.setattr(ctypes, "CDLL", lambda path: FakeOpenBLAS(path, "some_other_symbol"))
    assert lstm.openblas_corename(maps) is None

    def fails_to_load(path):
        raise OSError(f"{path}: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", fails_to_load)
    assert lstm.openblas_corename(maps) is None
    config["Build Dependencies"]["blas"]["name"] = "accelerate"
    assert lstm.openblas_corename(maps) is None


def test_blas_lines_hint_only_for_haswell_kernels_on_an_avx512_cpu(fake_openblas, monkeypatch, tmp_path):
    maps, _ = fake_openblas
    avx512, avx2 = tmp_path / "avx512", tmp_path / "avx2"
    avx512.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512bw\n")
    avx2.write_text("processor\t: 0\nflags\t\t: fpu sse avx2\n")
    assert lstm.cpu_has_avx512(avx512) and not lstm.cpu_has_avx512(avx2)
    assert not lstm.cpu_has_avx512(tmp_path / "no such file")
    haswell = "NumPy's BLAS: OpenBLAS, running its 'Haswell' kernels, chosen by OpenBLAS for this CPU"
    assert lstm.blas_lines(maps, avx512, environ={}) == [
        haswell,
        "hint: OpenBLAS runs its Haswell (AVX2) kernels on a CPU with AVX-512; OPENBLAS_CORETYPE=SKYLAKEX before "
        "starting Python made NumPy's GEMM ~2x faster on such a machine",
    ]
    assert lstm.blas_lines(maps, avx2, environ={}) == [haswell]
    monkeypatch.setattr(ctypes, "CDLL", lambda path: FakeOpenBLAS(path, core=b"SkylakeX"))
    assert lstm.blas_lines(maps, avx512, environ={}) == [
        "NumPy's BLAS: OpenBLAS, running its 'SkylakeX' kernels, chosen by OpenBLAS for this CPU"]
    monkeypatch.setattr(lstm, "openblas_corename", lambda maps: None)
    assert lstm.blas_lines(maps, avx512, environ={}) == []


def test_blas_lines_name_a_core_type_forced_by_the_environment(fake_openblas, tmp_path):
    maps, _ = fake_openblas
    avx512 = tmp_path / "cpuinfo"
    avx512.write_text("flags\t\t: avx2 avx512f\n")
    assert lstm.blas_lines(maps, avx512, environ={"OPENBLAS_CORETYPE": "Haswell"}) == [
        "NumPy's BLAS: OpenBLAS, running its 'Haswell' kernels, as OPENBLAS_CORETYPE=Haswell in the environment asks",
        "hint: OpenBLAS runs its Haswell (AVX2) kernels on a CPU with AVX-512; unsetting OPENBLAS_CORETYPE "
        "(or setting it to SKYLAKEX) before starting Python made NumPy's GEMM ~2x faster on such a machine",
    ]
