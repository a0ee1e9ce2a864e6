"""The benchmark suites and their command: quick tables, FLOP counts, verdicts, the phase timer and the CLI.

One class per part (the command and the timing helpers, the phase timer, the contract every suite keeps, then
each suite's own checks); a fixture inside a class applies to that class only. Nothing here asserts on speed:
the suites run in quick mode, and verdicts are checked on made-up times.
"""

import ctypes
import gc
import math
import os
import platform
import re
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy
import pytest

from dlscratch import backend as dl_backend
from dlscratch.backend import to_cpu
from dlscratch.bench import (
    SUITES,
    autograd,
    cnn,
    conv,
    dezero_models,
    load_suite,
    lstm,
    mlp,
    pool,
    timing,
    torch_device,
)
from dlscratch.bench.__main__ import main
from dlscratch.bench.phases import measure_phases, median_phases
from dlscratch.bench.timing import format_table, format_time, measure, measure_interleaved, median, torch_available
from dlscratch.engine import settings, switch
from dlscratch.engine.creation import manual_seed
from dlscratch.engine.tensor import Tensor
from dlscratch.fast.pooling import DEFAULT_MAX_POOL_BACKWARD, MAX_POOL_BACKWARDS
from dlscratch.operations.loss import cross_entropy

BASELINES = {"dlscratch forward, no_grad": "forward", "dlscratch forward": "forward",
             "dlscratch forward+backward": "forward+backward",
             autograd.REFERENCE_ROW: "forward+backward"}  # row -> the raw-array row it is compared with


# PyTorch's side of a comparison, made up (nothing is imported): on the CPU, absent on the CPU, and on the GPU
CPU_TORCH = torch_device.on_cpu("2.13.0")
NO_TORCH = torch_device.absent(torch_device.NOT_IMPORTABLE, gpu=False)
GPU_NO_CUDA = torch_device.absent(torch_device.NO_CUDA, gpu=True)
CUDA_TORCH = torch_device.on_cuda("2.11.0", 91900, synchronize=lambda: None)


def hide_torch(monkeypatch):
    """Every suite sees no PyTorch, whether or not it is installed."""
    monkeypatch.setattr(torch_device, "torch_available", lambda: False)


def fake_torch(cuda, log):
    """A stand-in for the ``torch`` module as far as ``torch_device.choose`` looks at it: its version, whether
    it has CUDA, cuDNN's version, and a ``torch.cuda.synchronize`` that writes "synchronize" into ``log``."""
    return types.SimpleNamespace(
        __version__="2.11.0",
        cuda=types.SimpleNamespace(is_available=lambda: cuda, synchronize=lambda: log.append("synchronize")),
        backends=types.SimpleNamespace(cudnn=types.SimpleNamespace(version=lambda: 91900)),
    )


# a verdict on a target, met or not: "(target <= 1.5: met)"
VERDICT = re.compile(r"\(target [^)]*: (met|NOT met)\)")


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "dlscratch.bench", *args], capture_output=True, text=True,
                          timeout=60)


def keeps_memory_here():
    """Whether a new process keeps freed memory when asked: glibc, and the variable not off."""
    on_glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    return on_glibc and os.environ.get("DLSCRATCH_KEEP_MEMORY", "").strip().lower() not in settings.FALSE_WORDS


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


def _with_clock(measure, clock):
    def measure_on_clock(*args, **kwargs):
        return measure(*args, clock=clock, **kwargs)

    return measure_on_clock


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


def is_positive_finite(text):
    value = float(text)
    return value > 0 and math.isfinite(value)


def keras_seconds(ours_ms, dezero_ms=None):
    """``cnn.summary``'s input without PyTorch: our Keras CNN step, and DeZero's where measured."""
    seconds = {("Keras CNN", "dlscratch"): ours_ms / 1e3, ("article net", "dlscratch"): 0.001}
    if dezero_ms is not None:
        seconds["Keras CNN", cnn.DEZERO] = dezero_ms / 1e3
    return seconds


def positive(text):
    value = float(text)
    return value > 0 and math.isfinite(value)


FB = lstm.FORWARD_BACKWARD


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


class TestCommandAndTiming:
    """The benchmark command and its helpers: tables, timing, the autograd suite in quick mode.

    These check that the benchmarks run and report sensible tables; they assert nothing on speed."""

    def test_autograd_suite_quick_table(self, backend, capsys):
        headers, rows = autograd.run(repeat=1, quick=True)
        raw = backend.__name__  # rows of raw arrays are named after the array module
        assert headers == ["size", "ops", "variant", "µs/op", "overhead µs/op", "x raw"]
        assert [(r[0], r[1]) for r in rows] == [("4x4", "20")] * 6 + [("32x32", "10")] * 6
        assert [r[2] for r in rows] == [f"{raw} forward", f"{raw} forward+backward", *BASELINES] * 2
        assert all(len(row) == len(headers) and float(row[3]) > 0 for row in rows)
        table = {(row[0], row[2]): row for row in rows}
        for size in ("4x4", "32x32"):
            for name, base in BASELINES.items():
                row, base_row = table[(size, name)], table[(size, f"{raw} {base}")]
                assert base_row[4:] == ["-", "-"]
                # cells are rounded to two decimals (a ratio too: a hiccup of one timing can make it 0.03)
                assert float(row[4]) == pytest.approx(float(row[3]) - float(base_row[3]), abs=0.016)
                assert float(row[5]) == pytest.approx(float(row[3]) / float(base_row[3]), rel=0.03, abs=0.0051)
        out = capsys.readouterr().out
        assert "dlscratch forward+backward" in out and "DeZero 0.0.13: about 10.7 µs" in out
        assert f"forward+backward, 4x4: {rows[4][4]} µs (target < 5 µs on a 2-core CPU: quick mode" in out
        ratios = re.search(r"reference path time / fast path time: (\S+) at 4x4, (\S+) at 32x32 \(add, mul", out)
        assert ratios and all(is_positive_finite(r) for r in ratios.groups())

    def test_autograd_reference_ratio_is_the_median_of_paired_rounds(self, monkeypatch):
        times = {name: [1e-6, 1e-6, 1e-6] for name in autograd.variants((2, 2), 5)}
        times[autograd.FAST_ROW] = [1e-6, 2e-6, 4e-6]
        times[autograd.REFERENCE_ROW] = [3e-6, 2e-6, 2e-6]  # rounds: 3, 1, 0.5; medians: 2 over 2
        monkeypatch.setattr(autograd, "measure_interleaved", lambda variants, **kwargs: times)
        rows, reference_ratio = autograd.rows_for((2, 2), 5, repeat=3, quick=True)
        assert reference_ratio == 1.0
        assert [r[2:4] for r in rows[-2:]] == [[autograd.FAST_ROW, "0.40"], [autograd.REFERENCE_ROW, "0.40"]]

    def test_autograd_reference_line_gives_each_size_its_ratio(self):
        assert autograd.reference_line({"16x16": 1.004, "256x256": 0.951}) == (
            "forward+backward, reference path time / fast path time: 1.00 at 16x16, 0.95 at 256x256 (add, mul and "
            "tanh have no fast version: the ratio is what recording and walking back in one frame save, and noise)"
        )

    def test_autograd_rows_run_on_their_own_path_whatever_the_callers(self, monkeypatch):
        fns = autograd.variants((2, 2), 5)
        real_forward, seen = autograd.forward, []

        def forward(*args):
            seen.append(switch.fast_path_enabled())
            return real_forward(*args)

        monkeypatch.setattr(autograd, "forward", forward)
        for caller in (switch.fast_path, switch.reference):
            for name, expected in (("dlscratch forward, no_grad", True), ("dlscratch forward", True),
                                   (autograd.FAST_ROW, True), (autograd.REFERENCE_ROW, False)):
                seen.clear()
                with caller():
                    fns[name]()
                assert seen == [expected], (caller.__name__, name)

    def test_autograd_chain_forward_and_hand_written_backward(self):
        import dlscratch

        ops = list(autograd.PATTERN) * 3
        x = numpy.linspace(-1, 1, 6, dtype=numpy.float32)
        c, k, seed = numpy.full(6, 0.1, numpy.float32), numpy.full(6, 0.9, numpy.float32), numpy.ones(6, numpy.float32)
        y = autograd.forward(x, ops[:5], c, k, numpy.tanh)
        numpy.testing.assert_allclose(y, numpy.tanh(((x + 0.1) * 0.9 + 0.1) * 0.9), rtol=1e-6)
        xt = dlscratch.Tensor(x, requires_grad=True)
        autograd.forward(xt, ops, dlscratch.Tensor(c), dlscratch.Tensor(k), dlscratch.Tensor.tanh).backward(seed)
        expected = autograd.raw_forward_backward(x, ops, c, k, seed, numpy.tanh)
        assert expected.dtype == numpy.float32
        numpy.testing.assert_allclose(xt.grad.numpy(), expected, rtol=1e-6)

    def test_measure_returns_one_positive_time_per_repeat(self):
        calls = []
        times = measure(lambda: calls.append(1), repeat=3, number=4, warmup=2)
        assert len(times) == 3 and all(t > 0 for t in times)
        assert len(calls) == 2 + 3 * 4

    def test_measure_interleaves_the_variants(self):
        order = []
        times = measure_interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, repeat=3,
                                    number=1, warmup=0, settle=0, pause=0)
        assert order == ["a", "b"] * 3
        assert {name: len(t) for name, t in times.items()} == {"a": 3, "b": 3}

    def test_each_turn_settles_with_untimed_calls_after_a_pause(self, monkeypatch):
        order, pauses = [], []
        monkeypatch.setattr("dlscratch.bench.timing.time.sleep", pauses.append)
        measure_interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, repeat=2, number=1,
                            warmup=0, settle=1, pause=0.25)
        assert order == ["a", "a", "b", "b"] * 2  # one untimed call, then the timed one, per turn
        assert pauses == [0.25] * 4
        pauses.clear()
        measure_interleaved({"a": lambda: None}, repeat=2, number=1, warmup=0, pause=0.25)
        assert pauses == [0, 0]  # a single variant has nobody to wait for

    def test_median_and_format_time(self):
        assert median([3.0, 1.0, 2.0]) == 2.0
        assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
        assert [format_time(t) for t in (2.5, 0.0123, 4.56e-6, 8.5e-7)] == ["2.5 s", "12.3 ms", "4.56 µs", "850 ns"]

    def test_format_table_aligns_text_left_and_numbers_right(self):
        text = format_table(["name", "µs"], [["add", "1.5"], ["matmul", "12.25"], ["none", "-"]])
        assert text.splitlines() == [
            "name       µs",
            "------  -----",
            "add       1.5",
            "matmul  12.25",
            "none        -",
        ]

    def test_torch_available_is_a_bool(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            expected = False
        else:
            expected = True
        assert torch_available() is expected

    @pytest.mark.parametrize("name, module", [("autograd", autograd), ("mlp", mlp), ("conv", conv), ("pool", pool),
                                              ("cnn", cnn), ("lstm", lstm)])
    def test_suite_is_registered(self, name, module):
        assert SUITES[name] == module.__name__ == f"dlscratch.bench.{name}"
        assert load_suite(name) is module
        assert callable(module.run)

    def test_an_unknown_suite_is_refused_with_the_list_of_suites(self):
        assert sorted(SUITES) == ["autograd", "cnn", "conv", "convmethods", "distributed", "graphs", "launches", "lstm",
                                  "mlp", "pool", "precision", "trace"]
        with pytest.raises(ValueError, match="^unknown benchmark suite 'nosuch'; choose one of: autograd, cnn, conv, "
                                             "convmethods, distributed, graphs, launches, lstm, mlp, pool, precision, "
                                             "trace$"):
            load_suite("nosuch")

    def test_cli_rejects_an_unknown_suite(self):
        result = run_cli("nosuch")
        assert result.returncode == 2
        assert "invalid choice: 'nosuch'" in result.stderr
        assert all(f"'{name}'" in result.stderr for name in SUITES)

    def test_cli_help_lists_the_suites(self):
        result = run_cli("--help")
        assert result.returncode == 0
        assert "the suite to run: " + ", ".join(sorted(SUITES)) in " ".join(result.stdout.split())  # unwrapped
        assert "--quick" in result.stdout and "--device {cpu,gpu,auto}" in result.stdout

    def test_cli_rejects_a_bad_repeat(self):
        result = run_cli("autograd", "--repeat", "0")
        assert result.returncode == 2 and "must be at least 1, got 0" in result.stderr

    def test_cli_runs_the_quick_suite(self):
        result = run_cli("autograd", "--quick", "--repeat", "1", "--device", "cpu")
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0].startswith("backend: numpy")
        assert lines[1] == "freed memory kept in the process: " + ("yes" if keeps_memory_here() else
                                                                  "no (DLSCRATCH_KEEP_MEMORY=0, or not glibc)")
        assert sum(line.startswith(("4x4", "32x32")) for line in lines) == 12

    def test_cli_says_why_there_is_no_gpu(self, no_gpu):
        result = run_cli("autograd", "--quick", "--device", "gpu")
        assert result.returncode == 2 and "no usable GPU" in result.stderr

    def test_busy_cores_keep_cores_busy_and_stop_with_the_block(self):
        from dlscratch.bench.busy import busy_cores

        def cpu_seconds(pid):  # user time of a process, from /proc (Linux)
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return int(fields[11]) / os.sysconf("SC_CLK_TCK")

        with busy_cores(1) as workers:
            assert len(workers) == 1 and workers[0].poll() is None
            time.sleep(0.5)  # past the interpreter's start
            before = cpu_seconds(workers[0].pid)
            time.sleep(1.0)
            # a sleeping process gains ~0 s; a spinning one its share of the cores, which on a loaded
            # 2-core machine (load 8) is still ~0.25 s a second
            assert cpu_seconds(workers[0].pid) - before > 0.1, "the worker should burn a core"
        assert workers[0].poll() is not None  # stopped with the block
        with busy_cores(0) as none:
            assert none == []

    def test_cli_runs_a_suite_beside_busy_processes(self):
        result = run_cli("autograd", "--quick", "--busy", "1")
        assert result.returncode == 0, result.stderr
        assert "busy machine: 1 other process(es) each keep one CPU core busy" in result.stdout
        assert "autograd:" in result.stdout
        bad = run_cli("autograd", "--busy", "-1")
        assert bad.returncode == 2 and "must be 0 or more, got -1" in bad.stderr


class TestPhaseTimer:
    """The phase timer of the benchmarks, on a fake clock, and the mlp suite's phase table (quick mode)."""

    def test_each_phase_gets_its_own_time(self):
        clock = FakeClock()
        variants = {"a": [clock.phase("a1", 1e-3), clock.phase("a2", 3e-3)], "b": [clock.phase("b1", 5e-3)]}
        figures = measure_phases(variants, repeat=2, number=4, pause=0, clock=clock)
        assert figures["a"] == [pytest.approx([1e-3, 1e-3]), pytest.approx([3e-3, 3e-3])]
        assert figures["b"] == [pytest.approx([5e-3, 5e-3])]
        # per round: one untimed step, then a burst of 4, variant after variant, phases in order
        round_ = ["a1", "a2"] * 5 + ["b1"] * 5
        assert clock.log == round_ * 2

    def test_medians_per_phase(self):
        figures = {"a": [[3.0, 1.0, 2.0], [10.0, 30.0, 20.0]]}
        assert median_phases(figures) == {"a": [2.0, 20.0]}

    def test_garbage_collector_restored_after_an_error(self):
        def broken():
            raise ZeroDivisionError("in a phase")

        assert gc.isenabled()
        with pytest.raises(ZeroDivisionError):
            measure_phases({"a": [lambda: None, broken]}, repeat=1, number=1, pause=0)
        assert gc.isenabled()

    def test_phases_make_the_same_step(self, backend, monkeypatch):
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

    def test_phase_table_without_pytorch(self, backend):
        rows = mlp.phase_rows((12, 8, 3), 1, repeat=1, quick=True, pt=NO_TORCH)
        assert [r[0] for r in rows] == mlp.PHASES + ["whole step"]
        assert all(r[2:] == ["-", "-"] for r in rows)
        parts, whole = sum(float(r[1]) for r in rows[:-1]), float(rows[-1][1])
        assert whole > 0 and abs(whole - parts) <= len(mlp.PHASES)  # each part rounded to 1 µs

    def test_phase_table_ratios(self, monkeypatch):
        """With a reference framework the table gives its times and our ratio to them, phase by phase."""
        clock = FakeClock()
        ours = [clock.phase(name, seconds) for name, seconds in zip(mlp.PHASES, (1e-6, 2e-4, 3e-4, 4e-4))]
        theirs = [clock.phase(name, seconds) for name, seconds in zip(mlp.PHASES, (2e-6, 1e-4, 6e-4, 4e-4))]
        monkeypatch.setattr(mlp, "dlscratch_phases", lambda sizes, batch: ours)
        monkeypatch.setattr(mlp, "torch_phases", lambda sizes, batch, pt: theirs)
        monkeypatch.setattr(mlp, "measure_phases", _with_clock(mlp.measure_phases, clock))
        rows = mlp.phase_rows((12, 8, 3), 1, repeat=3, quick=True, pt=CPU_TORCH)
        assert rows == [
            ["zero_grad", "1", "2", "0.50"],
            ["forward + loss", "200", "100", "2.00"],
            ["backward", "300", "600", "0.50"],
            ["optimizer step", "400", "400", "1.00"],
            ["whole step", "901", "1102", "0.82"],
        ]

    def test_quick_run_prints_the_phase_table(self, backend, monkeypatch, capsys):
        hide_torch(monkeypatch)
        mlp.run(quick=True)
        out = capsys.readouterr().out
        assert "where one step's time goes, 20-16-10 at batch 1" in out
        for phase in mlp.PHASES + ["whole step"]:
            assert phase in out


class TestSuiteContract:
    """The five model benchmark suites (mlp, conv, pool, cnn, lstm) as one contract, and the CLI that runs them.

    Each suite's quick run must return its documented headers and rows with positive, finite timings,
    and must cover every dlscratch variant it times at full size. ``torch_device.torch_available`` and
    ``dezero_available`` are patched to False everywhere, so these tests behave alike with and without
    PyTorch or DeZero installed; the PyTorch rows are checked by running the suites by hand, the DeZero
    rows by one test that runs only where DeZero imports. Nothing here asserts on speed."""

    @pytest.fixture(autouse=True)
    def no_torch(self, monkeypatch):
        """Every suite sees no PyTorch and no DeZero, whether or not they are installed."""
        hide_torch(monkeypatch)
        monkeypatch.setattr(timing, "dezero_available", lambda: False)
        for name in DEZERO_ROWS:
            monkeypatch.setattr(CONTRACT[name][0], "dezero_available", lambda: False)

    @pytest.mark.parametrize("name", sorted(CONTRACT))
    def test_quick_run_returns_the_table_without_torch_rows(self, name, backend, capsys):
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

    def test_quick_runs_cover_every_variant(self, backend):
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

    def test_full_size_workloads_are_the_issues(self):
        assert mlp.MODELS == [(784, 1000, 10), (784, 256, 256, 10)] and mlp.BATCHES == [1, 8, 128, 1024]
        assert (conv.SHAPE, conv.OUT, conv.KERNEL, conv.PADDING) == ((128, 32, 28, 28), 64, 3, 1)
        assert pool.SHAPE == (128, 32, 28, 28)
        assert (cnn.KERAS_BATCH, cnn.ARTICLE_BATCH) == (128, 8)
        assert cnn.NETWORKS["Keras CNN"][1] == "SGD" and cnn.NETWORKS["article net"][1] == "Adam"
        assert lstm.SIZES == (700, 500, 80) and lstm.BATCHES == [1, 32, 128]

    def test_cli_passes_quick_and_repeat_to_the_suite(self, backend, capsys):
        main(["pool", "--quick", "--repeat", "2"])
        out = capsys.readouterr().out
        assert "median of 2 interleaved repeats" in out
        assert f"pool: 2x2 pooling, stride 2, on {pool.QUICK_SHAPE}" in out
        assert "dlscratch max forward" in out and "PyTorch CPU" not in out

    @pytest.mark.parametrize("name", sorted(DEZERO_ROWS))
    def test_quick_run_adds_dezero_rows_where_it_imports(self, name, backend, monkeypatch, capsys):
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

    def test_dezero_available_is_false_when_the_import_fails(self, monkeypatch):
        def broken():
            raise AttributeError("module 'numpy' has no attribute 'int'")

        monkeypatch.setattr(dezero_models, "import_dezero", broken)
        real_dezero_available.cache_clear()
        try:
            assert real_dezero_available() is False
        finally:
            real_dezero_available.cache_clear()  # the next caller imports for real

    def test_without_dezero_numpy_is_left_alone(self, monkeypatch):
        # the numpy.int alias DeZero needs is put back only when DeZero is there to import
        monkeypatch.setattr(dezero_models.importlib.util, "find_spec", lambda name: None)
        monkeypatch.delattr(numpy, "int", raising=False)
        with pytest.raises(ImportError, match="DeZero is not installed"):
            dezero_models.import_dezero()
        assert not hasattr(numpy, "int")

    def test_verdict_says_met_or_not_met(self):
        assert timing.verdict(True, "<= 1.5") == "(target <= 1.5: met)"
        assert timing.verdict(False, ">= 3x faster") == "(target >= 3x faster: NOT met)"

    def test_cnn_judges_dezero_measured_in_this_run_when_it_was(self):
        line = cnn.summary(keras_seconds(100, dezero_ms=400), quick=False, pt=NO_TORCH)[0]
        assert line == ("Keras CNN step: 100 ms, 4.0x faster than DeZero 0.0.13's 400 ms, measured in this run "
                        "(target >= 3x faster: met)")
        line = cnn.summary(keras_seconds(200, dezero_ms=400), quick=False, pt=NO_TORCH)[0]
        assert "2.0x faster than DeZero 0.0.13's 400 ms, measured in this run (target >= 3x faster: NOT met)" in line

    def test_cnn_falls_back_to_the_earlier_dezero_constant(self):
        lines = cnn.summary(keras_seconds(880), quick=False, pt=NO_TORCH)
        assert lines[0].startswith(f"Keras CNN step: 880 ms, 2.0x slower than DeZero 0.0.13's "
                                   f"{cnn.DEZERO_KERAS_MS:g} ms, "
                                   "an earlier 2-core measurement, not this run")
        assert lines[0].endswith("(target >= 3x faster: NOT met)")
        assert "PyTorch is not importable here" in lines[1]

    def test_suite_verdicts_use_the_shared_wording(self):
        default = f"dlscratch max forward+backward, {DEFAULT_MAX_POOL_BACKWARD} (default)"
        pool_lines = pool.summary({default: 0.02, "PyTorch CPU max forward+backward": 0.01}, quick=False,
                                  pt=CPU_TORCH)
        assert pool_lines[0] == "default max pool forward+backward / PyTorch: 2.00 (target <= 1.5: NOT met)"
        conv_lines = conv.summary({"dlscratch forward+backward": 0.1, "PyTorch CPU forward+backward": 0.1},
                                  {"dlscratch forward+backward": 90.0}, quick=False, pt=CPU_TORCH)
        assert conv_lines[:2] == ["dlscratch forward+backward: 90 GFLOP/s (target >= 80: met)",
                                  "dlscratch / PyTorch forward+backward time: 1.00 (target <= 1.5: met)"]
        assert mlp.summary({("784-1000-10", 1): [0.8], ("784-1000-10", 128): [1.4]}, quick=False, pt=CPU_TORCH) == [
            "784-1000-10 at batch 1: 0.80x PyTorch's step time, holds in 1 of 1 rounds "
            "(target faster than PyTorch: met)",
            "784-1000-10 at batch 128: 1.40x PyTorch's step time, holds in 0 of 1 rounds "
            "(target within 1.3x of PyTorch: NOT met)",
        ]


def run_with_made_up_times(name, monkeypatch):
    """Suite ``name``'s rows in quick mode, without DeZero, each variant given a made-up millisecond (the stand-in
    computes slowly, and these tests are about which rows there are and what is said of them)."""
    module = CONTRACT[name][0]
    monkeypatch.setattr(timing, "dezero_available", lambda: False)
    if name in DEZERO_ROWS:
        monkeypatch.setattr(module, "dezero_available", lambda: False)
    monkeypatch.setattr(module, "measure_interleaved", lambda variants, **kwargs: {v: [1e-3] for v in variants})
    return module.run(quick=True)[1]


class TestTorchDevice:
    """Where the PyTorch rows run: on the CPU beside dlscratch on the CPU, on CUDA (synchronised) beside
    dlscratch on the GPU, and nowhere when dlscratch runs on the GPU and PyTorch has no CUDA: then nothing is
    judged. The strict CuPy stand-in plays the GPU and a fake ``torch`` module plays PyTorch, so every branch
    runs on any machine; the PyTorch calls themselves are run where PyTorch is installed."""

    @pytest.fixture
    def stand_in(self, monkeypatch):
        """The strict CuPy stand-in playing the GPU for one test; the backend as it was afterwards."""
        for name in ("cupy", "cupyx", "_gpu_status", "xp"):
            monkeypatch.setattr(dl_backend, name, getattr(dl_backend, name))
        dl_backend.use_strict_stand_in()
        dl_backend.use("gpu")

    @pytest.fixture
    def torch_log(self):
        return []

    @pytest.fixture
    def torch_with_cuda(self, monkeypatch, torch_log):
        monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda=True, log=torch_log))
        monkeypatch.setattr(torch_device, "torch_available", lambda: True)

    @pytest.fixture
    def torch_without_cuda(self, monkeypatch, torch_log):
        monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda=False, log=torch_log))
        monkeypatch.setattr(torch_device, "torch_available", lambda: True)

    def test_on_the_gpu_pytorch_runs_on_cuda_and_says_which_cudnn(self, stand_in, torch_with_cuda, torch_log):
        pt = torch_device.choose()
        assert (pt.device, pt.label, pt.runs, pt.gpu) == ("cuda", "PyTorch CUDA", True, True)
        assert pt.header == ("compared with PyTorch CUDA (cuDNN 9.19.0; torch 2.11.0), synchronised: each timed "
                             "PyTorch call ends with torch.cuda.synchronize()")
        pt.synchronize()
        assert torch_log == ["synchronize"]

    def test_cuda_timings_synchronise_inside_the_timed_region(self, stand_in, torch_with_cuda, torch_log,
                                                               monkeypatch):
        def clock():
            torch_log.append("clock")
            return 0.0

        monkeypatch.setattr(timing.time, "perf_counter", clock)
        step = torch_device.choose().timed(lambda: torch_log.append("step"))
        measure(step, repeat=2, number=3, warmup=0)
        assert torch_log == (["clock"] + ["step", "synchronize"] * 3 + ["clock"]) * 2

    def test_on_the_cpu_pytorch_runs_on_the_cpu_unsynchronised(self, torch_with_cuda, torch_log):
        pt = torch_device.choose()
        assert (pt.device, pt.label, pt.runs, pt.gpu) == ("cpu", "PyTorch CPU", True, False)
        assert pt.header == "compared with PyTorch CPU (torch 2.11.0)"
        step = lambda: torch_log.append("step")  # noqa: E731
        assert pt.timed(step) is step

    def test_on_the_gpu_without_cuda_nothing_is_judged(self, stand_in, torch_without_cuda):
        pt = torch_device.choose()
        assert pt == GPU_NO_CUDA and not pt.runs
        assert pt.header == ("PyTorch has no CUDA here: nothing judged (dlscratch runs on the GPU; PyTorch on the "
                             "CPU would be no comparison)")

    def test_without_pytorch_there_are_no_rows(self, monkeypatch):
        hide_torch(monkeypatch)
        pt = torch_device.choose()
        assert pt == NO_TORCH and not pt.runs
        assert pt.header == ("PyTorch is not importable here: no PyTorch rows; "
                             "pip install torch adds them (README.md, Benchmarks)")

    def test_cudnn_versions_in_words(self):
        assert torch_device.cudnn_words(91900) == "cuDNN 9.19.0"
        assert torch_device.cudnn_words(90100) == "cuDNN 9.1.0"
        assert torch_device.cudnn_words(8902) == "cuDNN 8.9.2"
        assert torch_device.cudnn_words(None) == "no cuDNN"

    @pytest.mark.parametrize("name", sorted(CONTRACT))
    def test_a_gpu_run_without_cuda_in_pytorch_has_no_pytorch_rows(self, name, stand_in, torch_without_cuda,
                                                                   monkeypatch, capsys):
        module, headers, _, ratio_col = CONTRACT[name]
        rows = run_with_made_up_times(name, monkeypatch)
        assert not any("PyTorch" in " ".join(row) for row in rows)
        assert ratio_col is None or all(row[ratio_col] == "-" for row in rows)
        out = capsys.readouterr().out
        assert out.splitlines()[1] == GPU_NO_CUDA.header  # under the suite's title
        assert "PyTorch CPU" not in out and not VERDICT.search(out)

    def test_a_gpu_run_without_cuda_in_pytorch_judges_nothing(self):
        default = f"dlscratch max forward+backward, {DEFAULT_MAX_POOL_BACKWARD} (default)"
        nothing = "PyTorch has no CUDA here: nothing judged"
        assert conv.summary({"dlscratch forward+backward": 0.1}, {"dlscratch forward+backward": 9000.0},
                            quick=False, pt=GPU_NO_CUDA) == [
            "dlscratch forward+backward: 9000 GFLOP/s (target >= 80, set for a CPU: not judged on the GPU)", nothing]
        assert pool.summary({default: 0.001}, quick=False, pt=GPU_NO_CUDA) == [nothing]
        assert cnn.summary(keras_seconds(5, dezero_ms=400), quick=False, pt=GPU_NO_CUDA) == [
            "Keras CNN step: 5 ms, 80.0x faster than DeZero 0.0.13's 400 ms, measured in this run "
            "(target >= 3x faster, set for a CPU: not judged on the GPU)", nothing]
        assert mlp.summary({}, quick=False, pt=GPU_NO_CUDA) == [nothing]
        assert lstm.summary({(1, "DeZero"): [0.05]}, quick=False, pt=GPU_NO_CUDA) == [
            "nn.LSTM forward+backward at batch 1 against PyTorch: not judged (PyTorch has no CUDA here)",
            "nn.LSTM forward+backward at batch 128 against PyTorch: not judged (PyTorch has no CUDA here)",
            "nn.LSTM forward+backward at batch 1 against DeZero: not judged (DeZero 0.0.13 runs on the CPU, "
            "dlscratch on the GPU)",
        ]

    def test_a_gpu_run_judges_only_against_pytorch_on_cuda(self):
        default = f"dlscratch max forward+backward, {DEFAULT_MAX_POOL_BACKWARD} (default)"
        assert conv.summary({"dlscratch forward+backward": 0.1, "PyTorch CUDA forward+backward": 0.1},
                            {"dlscratch forward+backward": 9000.0}, quick=False, pt=CUDA_TORCH) == [
            "dlscratch forward+backward: 9000 GFLOP/s (target >= 80, set for a CPU: not judged on the GPU)",
            "dlscratch / PyTorch forward+backward time: 1.00 (target <= 1.5: met)"]
        assert pool.summary({default: 0.002, "PyTorch CUDA max forward+backward": 0.001}, quick=False,
                            pt=CUDA_TORCH) == [
            "default max pool forward+backward / PyTorch: 2.00 (target <= 1.5: NOT met)"]
        seconds = keras_seconds(5, dezero_ms=400)
        seconds.update({("Keras CNN", "PyTorch CUDA"): 0.005, ("article net", "PyTorch CUDA"): 0.002})
        assert cnn.summary(seconds, quick=False, pt=CUDA_TORCH)[1:] == [
            "Keras CNN step / PyTorch: 1.00 (target <= 1.5: met)",
            "article net step at batch 8 / PyTorch: 0.50 (target < 1: met)"]
        assert mlp.summary({("784-1000-10", 1): [2.0]}, quick=False, pt=CUDA_TORCH) == [
            "784-1000-10 at batch 1: 2.00x PyTorch's step time, holds in 0 of 1 rounds "
            "(target faster than PyTorch: NOT met)"]
        assert lstm.summary({(1, "PyTorch"): [0.9], (1, "DeZero"): [0.05]}, quick=False, pt=CUDA_TORCH)[::2] == [
            "nn.LSTM forward+backward at batch 1: 0.90x PyTorch's time, holds in 1 of 1 rounds "
            "(target no slower than PyTorch: met)",
            "nn.LSTM forward+backward at batch 1 against DeZero: not judged (DeZero 0.0.13 runs on the CPU, "
            "dlscratch on the GPU)"]

    @pytest.mark.parametrize("name", sorted(CONTRACT))
    def test_a_cpu_run_compares_with_pytorch_on_the_cpu_as_before(self, name, monkeypatch, capsys):
        torch = pytest.importorskip("torch")
        module, headers, _, ratio_col = CONTRACT[name]
        rows = run_with_made_up_times(name, monkeypatch)
        torch_rows = [" ".join(row) for row in rows if "PyTorch" in " ".join(row)]
        assert torch_rows and all("PyTorch CPU" in row for row in torch_rows)
        if ratio_col is not None:  # every dlscratch row is compared: all take the same made-up time here
            assert {row[ratio_col] for row in rows if "dlscratch" in " ".join(row)} == {"1.00"}
        assert capsys.readouterr().out.splitlines()[1] == f"compared with PyTorch CPU (torch {torch.__version__})"

    def test_every_pytorch_row_is_timed_synchronised(self, torch_log):
        """Each suite's PyTorch callables end with ``pt.synchronize()``: here a spy, around PyTorch on the CPU."""
        pytest.importorskip("torch")
        pt = torch_device.TorchDevice("cpu", "PyTorch spy", "", synchronize=lambda: torch_log.append("synchronize"))
        fns = [*conv.torch_variants(conv.QUICK_SHAPE, conv.QUICK_OUT, pt).values(),
               *pool.torch_variants(numpy.zeros(pool.QUICK_SHAPE, dtype=numpy.float32), pt).values(),
               cnn.torch_step("article net", 2, pt), mlp.torch_step((20, 16, 10), 2, pt),
               *mlp.torch_phases((20, 16, 10), 2, pt), *lstm.torch_variants(lstm.QUICK_SIZES, 2, pt).values()]
        for fn in fns:
            torch_log.clear()
            fn()
            assert torch_log == ["synchronize"], fn

    def test_the_cli_on_the_stand_in_says_where_pytorch_runs(self):
        """``DLSCRATCH_STRICT_GPU=1 python -m dlscratch.bench pool --device gpu``: whatever PyTorch is here."""
        env = {**os.environ, "DLSCRATCH_STRICT_GPU": "1"}
        result = subprocess.run([sys.executable, "-m", "dlscratch.bench", "pool", "--quick", "--device", "gpu"],
                                capture_output=True, text=True, timeout=60, env=env)
        assert result.returncode == 0, result.stderr
        header = result.stdout.splitlines()[3]  # after the backend, the memory and the suite's title
        if not torch_available():
            assert header == torch_device.absent(torch_device.NOT_IMPORTABLE, gpu=True).header
        else:
            import torch

            assert header.startswith("compared with PyTorch CUDA (") if torch.cuda.is_available() else (
                header == GPU_NO_CUDA.header)
        assert "PyTorch CPU" not in result.stdout


class TestConvPoolCnn:
    """The conv, pool and cnn benchmark suites in quick mode: tables, FLOP arithmetic and verdicts.

    Nothing is asserted on speed. PyTorch is hidden and ``dezero_available`` is patched to False so
    that the suites' own rows are checked alike on machines with and without the reference frameworks
    (their rows are tested in TestSuiteContract)."""

    @pytest.fixture(autouse=True)
    def no_reference_frameworks(self, monkeypatch):
        hide_torch(monkeypatch)
        for suite in (conv, pool, cnn):
            monkeypatch.setattr(suite, "dezero_available", lambda: False)

    def test_conv_quick_table(self, backend, capsys):
        headers, rows = conv.run(quick=True)
        assert headers == conv.HEADERS
        names = [row[0] for row in rows]
        assert names[:2] == ["GEMM (8, 36) @ (36, 576)", "GEMM 512^3"]
        assert "dlscratch forward" in names and "dlscratch forward+backward" in names
        assert "dlscratch reference path forward" in names and "dlscratch reference path forward+backward" in names
        assert not any(name.startswith("PyTorch") for name in names)
        assert all(positive(row[1]) and positive(row[2]) for row in rows)
        table = {row[0]: row for row in rows}
        peak = max(float(table[name][2]) for name in names[:2])
        assert max(float(row[3]) for row in rows[:2]) == 100  # the best GEMM defines the peak
        ms = float(table["dlscratch forward+backward"][1])
        expected = 3 * conv.conv_flops(conv.QUICK_SHAPE, conv.QUICK_OUT) / (ms / 1e3) / 1e9
        assert float(table["dlscratch forward+backward"][2]) == pytest.approx(expected, rel=0.05, abs=0.06)
        assert float(table["dlscratch forward"][3]) == pytest.approx(float(table["dlscratch forward"][2]) / peak * 100,
                                                                     abs=0.6)
        assert "quick mode" in capsys.readouterr().out

    def test_conv_flops_of_the_issue_workload(self):
        # 2 * N * O * Ho * Wo * C * kh * kw for conv 32 -> 64, 3x3, pad 1, batch 128 on 28x28
        assert conv.conv_flops((128, 32, 28, 28), 64) == 2 * 128 * 64 * 28 * 28 * 32 * 9

    def test_pool_quick_table(self, backend):
        headers, rows = pool.run(quick=True)
        assert headers == pool.HEADERS
        names = [row[0] for row in rows]
        assert names[0] == "dlscratch max forward"
        assert sum(n.startswith("dlscratch max forward+backward") for n in names) == 4  # the fast path's variants
        assert sum("(default)" in n for n in names) == 1
        assert "dlscratch reference path max forward+backward" in names  # what the variants are measured against
        assert "dlscratch reference path avg forward+backward" in names
        assert all(positive(row[1]) and row[2] == "-" for row in rows)

    def test_cnn_quick_table(self, backend):
        headers, rows = cnn.run(quick=True)
        assert headers == cnn.HEADERS
        expected = [("Keras CNN", "2", "dlscratch"), ("Keras CNN", "2", cnn.REFERENCE_PATH),
                    ("article net", "2", "dlscratch"), ("article net", "2", cnn.REFERENCE_PATH)]
        assert [(row[0], row[1], row[2]) for row in rows] == expected
        assert all(positive(row[3]) and row[4] == "-" for row in rows)

    def test_cnn_networks_have_the_published_sizes(self):
        from dlscratch import nn

        def count(model):
            return sum(p.data.size for p in model.parameters())

        assert count(cnn.keras_cnn(nn)) == 1_199_882  # Keras's model.summary() of the MNIST CNN
        assert count(cnn.article_net(nn)) == 100 + 196_100 + 1_010

    def test_verdicts_name_each_target(self):
        lines = cnn.summary({("Keras CNN", "dlscratch"): 0.120, ("Keras CNN", "PyTorch CPU"): 0.100,
                             ("article net", "dlscratch"): 0.002, ("article net", "PyTorch CPU"): 0.001}, quick=False,
                            pt=CPU_TORCH)
        assert "3.7x faster than DeZero" in lines[0] and lines[0].endswith("met)") and "NOT" not in lines[0]
        assert "1.20" in lines[1] and "NOT" not in lines[1]
        assert "NOT met" in lines[2]
        lines = pool.summary({"dlscratch max forward+backward, offsets (default)": 0.02,
                              "PyTorch CPU max forward+backward": 0.01}, quick=False, pt=CPU_TORCH)
        assert "2.00" in lines[0] and "NOT met" in lines[0]
        lines = conv.summary({"dlscratch forward+backward": 0.1}, {"dlscratch forward+backward": 90.0}, quick=False,
                             pt=NO_TORCH)
        assert "90 GFLOP/s" in lines[0] and "NOT" not in lines[0]


class TestMlp:
    """The mlp benchmark suite in quick mode: its table and its verdicts (nothing is asserted on speed).

    PyTorch is installed on some machines and not others; it is hidden
    so that the suite's own rows are checked alike everywhere, and the verdict logic is checked on
    made-up rows."""

    @pytest.fixture(autouse=True)
    def no_torch(self, monkeypatch):
        hide_torch(monkeypatch)

    def test_quick_table(self, backend, capsys):
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
        ratios = re.search(r"20-16-10: reference path time / fast path time: (\S+) at batch 1, (\S+) at batch 4 \(",
                           out)
        assert ratios and all(is_positive_finite(r) for r in ratios.groups())

    def test_reference_lines_give_each_batch_its_ratio(self):
        lines = mlp.reference_lines({("784-1000-10", 1): 1.234, ("784-1000-10", 128): 0.996, ("20-10", 8): 2.0})
        assert lines == [
            "784-1000-10: reference path time / fast path time: 1.23 at batch 1, 1.00 at batch 128 "
            "(what the fast path's tricks buy)",
            "20-10: reference path time / fast path time: 2.00 at batch 8 (what the fast path's tricks buy)",
        ]

    def test_step_trains_the_model(self, backend):
        sizes, batch = (12, 8, 3), 16
        step = mlp.dlscratch_step(sizes, batch)
        x, y = (Tensor(backend.asarray(a)) for a in mlp.random_batch(sizes, batch))

        def loss():
            return float(cross_entropy(step.model(x), y).item())

        before = loss()
        for _ in range(200):
            step()
        assert loss() < 0.8 * before

    def test_verdicts(self):
        ratios = {
            ("784-1000-10", 1): [0.8, 0.9, 0.7, 1.1],  # faster in 3 of 4 rounds
            ("784-1000-10", 8): [0.99, 1.02, 0.98, 1.01],  # a tie: the median is below 1, the rounds split
            ("784-1000-10", 128): [1.3, 1.2, 1.25, 1.4],
            ("784-1000-10", 1024): [2.0, 2.0, 2.0, 2.0],
        }
        lines = mlp.summary(ratios, quick=False, pt=CPU_TORCH)
        assert len(lines) == 3  # batch 1024 has no target
        assert lines[0] == (
            "784-1000-10 at batch 1: 0.85x PyTorch's step time, holds in 3 of 4 rounds "
            "(target faster than PyTorch: met)"
        )
        assert lines[1].startswith("784-1000-10 at batch 8: 1.00x PyTorch's step time, holds in 2 of 4 rounds")
        assert lines[1].endswith("(target faster than PyTorch: NOT met)")
        assert "holds in 3 of 4 rounds (target within 1.3x of PyTorch: met)" in lines[2]
        assert mlp.summary({}, quick=False, pt=NO_TORCH) == [
            "PyTorch is not importable here: no reference rows, targets not judged; "
            "pip install torch adds them (README.md, Benchmarks)"]

    def test_ratio_column_is_the_median_of_paired_rounds(self, monkeypatch):
        """Each round's dlscratch time is divided by PyTorch's from the same round, not median by median."""
        times = {"dlscratch": [1.0, 4.0, 9.0], mlp.REFERENCE_PATH: [3.0, 8.0, 27.0], "PyTorch CPU": [2.0, 2.0, 10.0]}
        monkeypatch.setattr(mlp, "torch_step", lambda sizes, batch, pt: None)
        monkeypatch.setattr(mlp, "measure_interleaved", lambda variants, **kwargs: times)
        rows, paired, reference_ratio = mlp.rows_for((12, 8, 3), 2, repeat=3, quick=True, pt=CPU_TORCH)
        assert paired == [0.5, 2.0, 0.9]
        assert reference_ratio == 3.0  # rounds: 3, 2 and 3; the medians would give 8 s over 4 s
        assert rows == [
            ["12-8-3", "2", "dlscratch", "4000.000", "0", "0.90"],  # medians: 4 s and 2 s, but the rounds give 0.9
            ["12-8-3", "2", mlp.REFERENCE_PATH, "8000.000", "0", "2.70"],
            ["12-8-3", "2", "PyTorch CPU", "2000.000", "1", "1.00"],
        ]


class TestLstm:
    """The lstm benchmark suite: its quick table, its verdicts, its naive model and its FLOP count (nothing is
    asserted on speed).

    PyTorch and DeZero are installed on some machines and not others; PyTorch is hidden and
    ``dezero_available`` is patched to False so that the suite's own rows are checked alike everywhere,
    and the verdict and ratio logic is checked on made-up times."""

    @pytest.fixture(autouse=True)
    def no_references(self, monkeypatch):
        hide_torch(monkeypatch)
        monkeypatch.setattr(lstm, "dezero_available", lambda: False)

    def test_quick_table(self, backend, capsys):
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
            for variant in (lstm.NN_LSTM, lstm.NN_LSTM_REFERENCE, lstm.PER_GATE) for pass_ in (lstm.FORWARD, FB)
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
        ratios = re.search(r"reference path time / fast path time: (\S+) at batch 1, (\S+) at batch 4 \(what", out)
        assert ratios and all(is_positive_finite(r) for r in ratios.groups())

    def test_reference_line_gives_each_batch_the_median_ratio(self):
        ratios = {(1, "reference path"): [1.0, 1.2, 1.1], (1, "PyTorch"): [9.0],
                  (32, "reference path"): [0.9, 1.0, 2.0]}
        assert lstm.reference_line(ratios) == (
            "nn.LSTM forward+backward, reference path time / fast path time: 1.10 at batch 1, 1.00 at batch 32 "
            "(what the fast path's tricks buy)"
        )

    def test_lstm_flops_are_the_gate_gemms(self):
        assert lstm.lstm_flops((700, 500, 80), 1) == 2 * 80 * 4 * 500 * 1200
        # the same as the input GEMM over all steps plus one recurrent GEMM per step
        sizes, batch = (12, 8, 5), 3
        gemms = lstm.gemm_variants(sizes, [batch], square=4)
        input_gemm, recurrent_gemm = gemms["3", "GEMM (15, 12) @ (12, 32)"][1], gemms["3", "GEMM (3, 8) @ (8, 32)"][1]
        assert lstm.lstm_flops(sizes, batch) == input_gemm + sizes[2] * recurrent_gemm

    def test_per_gate_loop_is_the_forums_lstm_with_peepholes(self, backend):
        manual_seed(0)
        model = lstm.PerGateLSTM(input_size=5, hidden_size=3)
        x = numpy.random.default_rng(1).standard_normal((4, 2, 5)).astype(numpy.float32)
        output, (h, c) = model(Tensor(backend.asarray(x)))
        params = {name: p.detach().numpy().astype(numpy.float64) for name, p in model.named_parameters()}
        expected = [f"{w}{g}" for w in ("W_x", "W_h", "b_") for g in "ifgo"] + ["p_i", "p_f", "p_o"]
        assert sorted(params) == sorted(expected)
        expected, c_expected = forum_lstm(x.astype(numpy.float64), params)
        numpy.testing.assert_allclose(output.detach().numpy(), expected, rtol=1e-5, atol=1e-6)
        numpy.testing.assert_allclose(h.detach().numpy(), expected[-1], rtol=1e-5, atol=1e-6)
        numpy.testing.assert_allclose(c.detach().numpy(), c_expected, rtol=1e-5, atol=1e-6)

    def test_forward_backward_reaches_every_parameter(self, backend):
        model = lstm.PerGateLSTM(input_size=5, hidden_size=3)
        x = Tensor(backend.asarray(lstm.random_sequence((5, 3, 4), batch=2)))
        passes = lstm.timed_passes(model, x)
        passes[lstm.FORWARD]()
        assert all(p.grad is None for p in model.parameters())  # under no_grad
        passes[FB]()
        for name, p in model.named_parameters():
            assert p.grad is not None and p.grad.shape == p.shape, name

    def test_verdicts(self):
        ratios = {
            (1, "PyTorch"): [0.9, 0.95, 1.05, 0.97],  # no slower in 3 of 4 rounds
            (128, "PyTorch"): [1.1, 1.2, 1.18, 1.1],  # within 1.15x in 2 of 4 rounds
            (1, "DeZero"): [0.05, 0.08, 0.125, 0.04],  # 20x, 12.5x, 8x and 25x faster
        }
        lines = lstm.summary(ratios, quick=False, pt=CPU_TORCH)
        assert lines == [
            "nn.LSTM forward+backward at batch 1: 0.96x PyTorch's time, holds in 3 of 4 rounds "
            "(target no slower than PyTorch: met)",
            "nn.LSTM forward+backward at batch 128: 1.14x PyTorch's time, holds in 2 of 4 rounds "
            "(target within 1.15x of PyTorch: NOT met)",
            "nn.LSTM forward+backward at batch 1: 16.2x faster than DeZero 0.0.13, holds in 3 of 4 rounds "
            "(target >= 10x faster than DeZero 0.0.13: met)",
        ]

    def test_a_tie_is_not_a_win(self):
        line = lstm.summary({(1, "PyTorch"): [0.99, 1.02, 0.98, 1.01]}, quick=False, pt=CPU_TORCH)[0]
        assert line.startswith("nn.LSTM forward+backward at batch 1: 1.00x PyTorch's time, holds in 2 of 4 rounds")
        assert line.endswith("(target no slower than PyTorch: NOT met)")

    def test_targets_without_references_are_not_judged(self):
        assert lstm.summary({}, quick=False, pt=NO_TORCH) == [
            "nn.LSTM forward+backward at batch 1 against PyTorch: not judged (PyTorch is not importable here)",
            "nn.LSTM forward+backward at batch 128 against PyTorch: not judged (PyTorch is not importable here)",
            "nn.LSTM forward+backward at batch 1 against DeZero: not judged (DeZero 0.0.13 does not import here)",
        ]
        assert lstm.summary({}, quick=True, pt=NO_TORCH) == ["quick mode: tiny sizes, a smoke test, not a measurement"]

    def test_ratio_column_is_the_median_of_paired_rounds(self, monkeypatch):
        """Each round's time is divided by PyTorch's same pass from the same round, not median by median."""
        torch = lstm.torch_label(CPU_TORCH)
        times = {
            (lstm.NN_LSTM, lstm.FORWARD): [1.0, 1.0, 1.0], (lstm.NN_LSTM, FB): [1.0, 4.0, 9.0],
            (lstm.NN_LSTM_REFERENCE, lstm.FORWARD): [1.0, 1.0, 1.0], (lstm.NN_LSTM_REFERENCE, FB): [2.0, 4.0, 9.0],
            (torch, lstm.FORWARD): [2.0, 2.0, 2.0], (torch, FB): [2.0, 2.0, 10.0],
            (lstm.DEZERO, lstm.FORWARD): [8.0, 8.0, 8.0], (lstm.DEZERO, FB): [20.0, 20.0, 20.0],
        }
        monkeypatch.setattr(lstm, "dezero_available", lambda: True)
        for builder in ("dlscratch_variants", "torch_variants", "dezero_variants"):
            monkeypatch.setattr(lstm, builder, lambda *args: {})
        monkeypatch.setattr(lstm, "measure_interleaved", lambda variants, **kwargs: times)
        peak = lstm.lstm_flops((12, 8, 5), 2) / 1e9  # GFLOP/s of a forward pass in 1 s
        rows, ratios = lstm.rows_for((12, 8, 5), 2, repeat=3, quick=True, peak=peak, pt=CPU_TORCH)
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

    def test_torch_rows_run_where_pytorch_imports(self):
        torch = pytest.importorskip("torch")
        variants = lstm.torch_variants((6, 4, 3), batch=2, pt=torch_device.on_cpu(torch.__version__))
        assert list(variants) == [("PyTorch CPU nn.LSTM", lstm.FORWARD), ("PyTorch CPU nn.LSTM", FB)]
        for fn in variants.values():
            fn()

    @pytest.fixture
    def fake_openblas(self, monkeypatch, tmp_path):
        """A process map naming an OpenBLAS, NumPy built on scipy-openblas, and a fake library loader."""
        maps = tmp_path / "maps"
        maps.write_text(MAPS)
        config = {"Build Dependencies": {"blas": {"name": "scipy-openblas"}}}
        monkeypatch.setattr(lstm.numpy, "show_config", lambda mode: config)
        monkeypatch.setattr(lstm.ctypes, "CDLL", FakeOpenBLAS)
        return maps, config

    def test_mapped_libraries_reads_the_path_column(self, fake_openblas):
        maps, _ = fake_openblas
        assert lstm.mapped_libraries(maps, "openblas") == ["/site-packages/numpy.libs/libscipy_openblas64_-32a4.so"]
        assert lstm.mapped_libraries(maps, "libm") == ["/usr/lib/libm.so.6"]

    def test_openblas_corename_asks_the_loaded_library(self, fake_openblas, monkeypatch):
        maps, config = fake_openblas
        assert lstm.openblas_corename(maps) == "Haswell"
        monkeypatch.setattr(ctypes, "CDLL", lambda path: FakeOpenBLAS(path, "openblas_get_corename", b"SkylakeX"))
        assert lstm.openblas_corename(maps) == "SkylakeX"

    def test_openblas_corename_is_none_when_unknown(self, fake_openblas, monkeypatch, tmp_path):
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

    def test_blas_lines_hint_only_for_haswell_kernels_on_an_avx512_cpu(self, fake_openblas, monkeypatch, tmp_path):
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

    def test_blas_lines_name_a_core_type_forced_by_the_environment(self, fake_openblas, tmp_path):
        maps, _ = fake_openblas
        avx512 = tmp_path / "cpuinfo"
        avx512.write_text("flags\t\t: avx2 avx512f\n")
        assert lstm.blas_lines(maps, avx512, environ={"OPENBLAS_CORETYPE": "Haswell"}) == [
            "NumPy's BLAS: OpenBLAS, running its 'Haswell' kernels, as OPENBLAS_CORETYPE=Haswell "
            "in the environment asks",
            "hint: OpenBLAS runs its Haswell (AVX2) kernels on a CPU with AVX-512; unsetting OPENBLAS_CORETYPE "
            "(or setting it to SKYLAKEX) before starting Python made NumPy's GEMM ~2x faster on such a machine",
        ]
