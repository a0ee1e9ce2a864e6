"""The conv, pool and cnn benchmark suites in quick mode: tables, FLOP arithmetic and verdicts.

Nothing is asserted on speed. ``torch_available`` and ``dezero_available`` are patched to False so
that the suites' own rows are checked alike on machines with and without the reference frameworks
(their rows are tested in test_bench_suites.py).
"""

import math

import pytest

from dlscratch.bench import SUITES, cnn, conv, load_suite, pool


@pytest.fixture(autouse=True)
def no_reference_frameworks(monkeypatch):
    for suite in (conv, pool, cnn):
        monkeypatch.setattr(suite, "torch_available", lambda: False)
        monkeypatch.setattr(suite, "dezero_available", lambda: False)


def positive(text):
    value = float(text)
    return value > 0 and math.isfinite(value)


@pytest.mark.parametrize("name, module", [("conv", conv), ("pool", pool), ("cnn", cnn)])
def test_suites_are_registered(name, module):
    assert SUITES[name] == module.__name__
    assert load_suite(name) is module


def test_conv_quick_table(backend, capsys):
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


def test_conv_flops_of_the_issue_workload():
    # 2 * N * O * Ho * Wo * C * kh * kw for conv 32 -> 64, 3x3, pad 1, batch 128 on 28x28
    assert conv.conv_flops((128, 32, 28, 28), 64) == 2 * 128 * 64 * 28 * 28 * 32 * 9


def test_pool_quick_table(backend):
    headers, rows = pool.run(quick=True)
    assert headers == pool.HEADERS
    names = [row[0] for row in rows]
    assert names[0] == "dlscratch max forward"
    assert sum(n.startswith("dlscratch max forward+backward") for n in names) == 4  # the fast path's variants
    assert sum("(default)" in n for n in names) == 1
    assert "dlscratch reference path max forward+backward" in names  # what the variants are measured against
    assert "dlscratch reference path avg forward+backward" in names
    assert all(positive(row[1]) and row[2] == "-" for row in rows)


def test_cnn_quick_table(backend):
    headers, rows = cnn.run(quick=True)
    assert headers == cnn.HEADERS
    expected = [("Keras CNN", "2", "dlscratch"), ("Keras CNN", "2", cnn.REFERENCE_PATH),
                ("article net", "2", "dlscratch"), ("article net", "2", cnn.REFERENCE_PATH)]
    assert [(row[0], row[1], row[2]) for row in rows] == expected
    assert all(positive(row[3]) and row[4] == "-" for row in rows)


def test_cnn_networks_have_the_published_sizes():
    from dlscratch import nn

    def count(model):
        return sum(p.data.size for p in model.parameters())

    assert count(cnn.keras_cnn(nn)) == 1_199_882  # Keras's model.summary() of the MNIST CNN
    assert count(cnn.article_net(nn)) == 100 + 196_100 + 1_010


def test_verdicts_name_each_target():
    lines = cnn.summary({("Keras CNN", "dlscratch"): 0.120, ("Keras CNN", "PyTorch CPU"): 0.100,
                         ("article net", "dlscratch"): 0.002, ("article net", "PyTorch CPU"): 0.001}, quick=False)
    assert "3.7x faster than DeZero" in lines[0] and lines[0].endswith("met)") and "NOT" not in lines[0]
    assert "1.20" in lines[1] and "NOT" not in lines[1]
    assert "NOT met" in lines[2]
    lines = pool.summary({"dlscratch max forward+backward, offsets (default)": 0.02,
                          "PyTorch CPU max forward+backward": 0.01}, quick=False)
    assert "2.00" in lines[0] and "NOT met" in lines[0]
    lines = conv.summary({"dlscratch forward+backward": 0.1}, {"dlscratch forward+backward": 90.0}, quick=False)
    assert "90 GFLOP/s" in lines[0] and "NOT" not in lines[0]
