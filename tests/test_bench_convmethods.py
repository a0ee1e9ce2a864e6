"""Suite "convmethods" (dlscratch/bench/convmethods.py) in quick mode: its table, the methods per kernel size, the
FLOP counts it prints, the forward errors it measures and the fastest method it names. Nothing is asserted on
speed. PyTorch is hidden, so the suite's own rows are checked alike with and without it."""

import re

import pytest

from dlscratch.bench import SUITES, convmethods, load_suite, torch_device
from dlscratch.bench.conv_flops import conv_flops

WINOGRAD = ["winograd F(2x2,3x3)", "winograd F(4x4,3x3)"]


@pytest.fixture(autouse=True)
def no_torch(monkeypatch):
    monkeypatch.setattr(torch_device, "torch_available", lambda: False)


def test_the_suite_is_registered():
    assert SUITES["convmethods"] == convmethods.__name__ and load_suite("convmethods") is convmethods


def test_quick_table(backend, capsys):
    headers, rows = convmethods.run(quick=True)
    assert headers == convmethods.HEADERS
    by_case = {}
    for row in rows:
        by_case.setdefault(row[0], []).append(row)
    assert list(by_case) == [name for name, *_ in convmethods.QUICK_CASES]
    three, five = by_case.values()
    assert [row[1] for row in three] == ["im2col", "fft"] + WINOGRAD  # Winograd for 3 x 3 kernels only
    assert [row[1] for row in five] == ["im2col", "fft"]
    for name, shape, out, k in convmethods.QUICK_CASES:
        for row in by_case[name]:
            kind, m = ("winograd", int(row[1][11])) if row[1].startswith("winograd") else (row[1], 2)
            flops = conv_flops(kind, shape, (out, shape[1], k, k), (k // 2, k // 2), m)
            assert row[2] == f"{flops / 1e9:.4g}" and float(row[2]) > 0
            assert float(row[3]) > 0 and float(row[4]) > 0
    errors = {(row[0], row[1]): float(row[6]) for row in rows}
    # float32 round-off against float64: about 1e-7 of the output's size; F(4x4) loses about an order more
    assert all(0 < e < 2e-6 for (_, method), e in errors.items() if method != WINOGRAD[1])
    assert 0 < errors["3x3, 3->4, 8x8", WINOGRAD[1]] < 2e-5
    assert all(row[5] == "1.00" for row in rows if row[1] == "im2col")
    out = capsys.readouterr().out
    assert "PyTorch is not importable here: no PyTorch rows" in out
    for name in by_case:
        named = re.search(rf"^{re.escape(name)}: fastest here (.+) \((\d+\.\d\d)x im2col, forward\+backward\)$", out,
                          re.M)
        assert named and named.group(1) in [row[1] for row in by_case[name]]


def test_rows_and_winners_from_given_times():
    cases = ["a"]
    seconds = {("a", "im2col", "forward"): 1e-3, ("a", "im2col", "fwd+bwd"): 4e-3,
               ("a", "fft", "forward"): 0.5e-3, ("a", "fft", "fwd+bwd"): 2e-3,
               ("a", "PyTorch CPU", "forward"): 0.1e-3, ("a", "PyTorch CPU", "fwd+bwd"): 1e-3}
    figures = {"a": {"im2col": (0.5, 1e-7), "fft": (0.25, 2e-7), "PyTorch CPU": (0.5, None)}}
    rows, lines = convmethods.rows_of(cases, seconds, figures)
    assert rows == [["a", "im2col", "0.5", "1.000", "4.000", "1.00", "1.0e-07"],
                    ["a", "fft", "0.25", "0.500", "2.000", "0.50", "2.0e-07"],
                    ["a", "PyTorch CPU", "0.5", "0.100", "1.000", "0.25", "-"]]
    assert lines == ["a: fastest here fft (2.00x im2col, forward+backward)"]  # PyTorch is not one of ours
