"""The benchmark command and its helpers: tables, timing, the autograd suite in quick mode.

These check that the benchmarks run and report sensible tables; they assert nothing on speed.
"""

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dlscratch import memory
from dlscratch.bench import SUITES, autograd, load_suite
from dlscratch.bench.timing import format_table, format_time, measure, measure_interleaved, median, torch_available

BASELINES = {"dlscratch forward, no_grad": "forward", "dlscratch forward": "forward",
             "dlscratch forward+backward": "forward+backward",
             autograd.REFERENCE_ROW: "forward+backward"}  # row -> the raw-array row it is compared with


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "dlscratch.bench", *args], capture_output=True, text=True,
                          timeout=60)


def test_autograd_suite_quick_table(backend, capsys):
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
            assert float(row[4]) == pytest.approx(float(row[3]) - float(base_row[3]), abs=0.016)  # cells are rounded
            assert float(row[5]) == pytest.approx(float(row[3]) / float(base_row[3]), rel=0.03)
    out = capsys.readouterr().out
    assert "dlscratch forward+backward" in out and "DeZero 0.0.13: about 10.7 µs" in out
    assert f"forward+backward, 4x4: {rows[4][4]} µs (target < 5 µs on a 2-core CPU: quick mode" in out
    assert f"reference path, 4x4: {rows[5][3]} µs/op against {rows[4][3]} on the fast path" in out


def test_autograd_chain_forward_and_hand_written_backward():
    import dlscratch

    ops = list(autograd.PATTERN) * 3
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    c, k, seed = np.full(6, 0.1, np.float32), np.full(6, 0.9, np.float32), np.ones(6, np.float32)
    y = autograd.forward(x, ops[:5], c, k, np.tanh)
    np.testing.assert_allclose(y, np.tanh(((x + 0.1) * 0.9 + 0.1) * 0.9), rtol=1e-6)
    xt = dlscratch.Tensor(x, requires_grad=True)
    autograd.forward(xt, ops, dlscratch.Tensor(c), dlscratch.Tensor(k), dlscratch.Tensor.tanh).backward(seed)
    expected = autograd.raw_forward_backward(x, ops, c, k, seed, np.tanh)
    assert expected.dtype == np.float32
    np.testing.assert_allclose(xt.grad.numpy(), expected, rtol=1e-6)


def test_measure_returns_one_positive_time_per_repeat():
    calls = []
    times = measure(lambda: calls.append(1), repeat=3, number=4, warmup=2)
    assert len(times) == 3 and all(t > 0 for t in times)
    assert len(calls) == 2 + 3 * 4


def test_measure_interleaves_the_variants():
    order = []
    times = measure_interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, repeat=3,
                                number=1, warmup=0, settle=0, pause=0)
    assert order == ["a", "b"] * 3
    assert {name: len(t) for name, t in times.items()} == {"a": 3, "b": 3}


def test_each_turn_settles_with_untimed_calls_after_a_pause(monkeypatch):
    order, pauses = [], []
    monkeypatch.setattr("dlscratch.bench.timing.time.sleep", pauses.append)
    measure_interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, repeat=2, number=1,
                        warmup=0, settle=1, pause=0.25)
    assert order == ["a", "a", "b", "b"] * 2  # one untimed call, then the timed one, per turn
    assert pauses == [0.25] * 4
    pauses.clear()
    measure_interleaved({"a": lambda: None}, repeat=2, number=1, warmup=0, pause=0.25)
    assert pauses == [0, 0]  # a single variant has nobody to wait for


def test_median_and_format_time():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert [format_time(t) for t in (2.5, 0.0123, 4.56e-6, 8.5e-7)] == ["2.5 s", "12.3 ms", "4.56 µs", "850 ns"]


def test_format_table_aligns_text_left_and_numbers_right():
    text = format_table(["name", "µs"], [["add", "1.5"], ["matmul", "12.25"], ["none", "-"]])
    assert text.splitlines() == [
        "name       µs",
        "------  -----",
        "add       1.5",
        "matmul  12.25",
        "none        -",
    ]


def test_torch_available_is_a_bool():
    try:
        import torch  # noqa: F401
    except ImportError:
        expected = False
    else:
        expected = True
    assert torch_available() is expected


def test_every_registered_suite_has_a_run_function():
    for name in SUITES:
        assert callable(load_suite(name).run)
    with pytest.raises(ValueError, match="unknown benchmark suite 'nosuch'; choose one of: autograd"):
        load_suite("nosuch")


def test_cli_rejects_an_unknown_suite():
    result = run_cli("nosuch")
    assert result.returncode == 2
    assert "invalid choice: 'nosuch'" in result.stderr and "autograd" in result.stderr


def test_cli_help_lists_the_suites():
    result = run_cli("--help")
    assert result.returncode == 0
    assert "the suite to run: " + ", ".join(sorted(SUITES)) in result.stdout
    assert "--quick" in result.stdout and "--device {cpu,gpu,auto}" in result.stdout


def test_cli_rejects_a_bad_repeat():
    result = run_cli("autograd", "--repeat", "0")
    assert result.returncode == 2 and "must be at least 1, got 0" in result.stderr


def test_cli_runs_the_quick_suite():
    result = run_cli("autograd", "--quick", "--repeat", "1", "--device", "cpu")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("backend: numpy")
    assert lines[1] == "freed memory kept in the process: " + ("yes" if keeps_memory_here() else
                                                              "no (DLSCRATCH_KEEP_MEMORY=0, or not glibc)")
    assert sum(line.startswith(("4x4", "32x32")) for line in lines) == 12


def keeps_memory_here():
    """Whether a new process keeps freed memory when asked: glibc, and the variable not off."""
    on_glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    return on_glibc and os.environ.get("DLSCRATCH_KEEP_MEMORY", "").strip().lower() not in memory.FALSE_WORDS


def test_cli_says_why_there_is_no_gpu(no_gpu):
    result = run_cli("autograd", "--quick", "--device", "gpu")
    assert result.returncode == 2 and "no usable GPU" in result.stderr


def test_busy_cores_keep_cores_busy_and_stop_with_the_block():
    from dlscratch.bench.busy import busy_cores

    def cpu_seconds(pid):  # user time of a process, from /proc (Linux)
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) / os.sysconf("SC_CLK_TCK")

    with busy_cores(1) as workers:
        assert len(workers) == 1 and workers[0].poll() is None
        time.sleep(0.5)  # past the interpreter's start
        before = cpu_seconds(workers[0].pid)
        time.sleep(0.5)
        assert cpu_seconds(workers[0].pid) - before > 0.25, "the worker should burn a core"
    assert workers[0].poll() is not None  # stopped with the block
    with busy_cores(0) as none:
        assert none == []


def test_cli_runs_a_suite_beside_busy_processes():
    result = run_cli("autograd", "--quick", "--busy", "1")
    assert result.returncode == 0, result.stderr
    assert "busy machine: 1 other process(es) each keep one CPU core busy" in result.stdout
    assert "autograd:" in result.stdout
    bad = run_cli("autograd", "--busy", "-1")
    assert bad.returncode == 2 and "must be 0 or more, got -1" in bad.stderr
