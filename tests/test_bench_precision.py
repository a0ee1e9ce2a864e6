"""Suite "precision" (dlscratch/bench/precision.py) in quick mode: its table's rows and columns, the weights' bytes
of every precision counted by hand, the logit differences it measures and the float16 line. Nothing is asserted on
speed."""

import re

from dlscratch import backend as dl_backend
from dlscratch.bench import SUITES, load_suite, precision

# (in, out) of each Linear, and (out, in, k) of each Conv2d; biases are float32 in every precision but half()
MLP_LINEARS, MLP_CONVS = [(784, 1024), (1024, 1024), (1024, 10)], []
CNN_LINEARS, CNN_CONVS = [(1960, 100), (100, 10)], [(10, 1, 3)]


def expected_bytes(linears, convs):
    """``{precision: bytes}`` of a model's weights, counted layer by layer."""
    weights = [i * o for i, o in linears] + [o * c * k * k for o, c, k in convs]
    biases = [o for _, o in linears] + [o for o, _, _ in convs]
    numbers = sum(weights) + sum(biases)
    return {
        "float32": 4 * numbers,
        "float16 autocast": 4 * numbers,  # float32 master weights
        "float16 half()": 2 * numbers,
        # int8 weights; a float32 scale and a float32 bias per output channel; the input's scale and zero point a layer
        "int8": sum(weights) + 8 * sum(biases) + 8 * len(weights),
        "binary": sum(-(-w // 8) + 4 for w in weights) + 4 * sum(biases),  # a bit a weight, a float32 scale a layer
    }


def test_the_suite_is_registered():
    assert SUITES["precision"] == precision.__name__ and load_suite("precision") is precision


def test_the_byte_counts_by_hand():
    assert expected_bytes(MLP_LINEARS, MLP_CONVS) == {"float32": 7454760, "float16 autocast": 7454760,
                                                      "float16 half()": 3727380, "int8": 1878120, "binary": 240948}
    assert expected_bytes(CNN_LINEARS, CNN_CONVS) == {"float32": 788840, "float16 autocast": 788840,
                                                      "float16 half()": 394420, "int8": 198074, "binary": 25129}


def test_quick_table(backend, capsys):
    headers, rows = precision.run(quick=True)
    assert headers == precision.HEADERS == ["model", "precision", "weight bytes", "inference ms", "train step ms",
                                            "max |logit - float32|"]
    assert [row[:2] for row in rows] == [[model, p] for model in precision.MODELS for p in precision.PRECISIONS]
    expected = {"MLP 784-1024-1024-10": expected_bytes(MLP_LINEARS, MLP_CONVS),
                "article CNN": expected_bytes(CNN_LINEARS, CNN_CONVS)}
    for model, p, nbytes, inference_ms, train_ms, difference in rows:
        assert int(nbytes) == expected[model][p], (model, p)
        assert float(inference_ms) > 0
        assert (float(train_ms) > 0) if p in ("float32", "float16 autocast") else train_ms == "-"
        difference = float(difference)
        if p == "float32":
            assert difference == 0
        elif p.startswith("float16"):
            assert 0 < difference < 1e-2  # float16 round-off on logits of size ~0.1-1
        elif p == "int8":
            assert 0 < difference < 0.2
        else:
            assert difference > 0.1  # binary weights are not a rounding of float32 ones
    out = capsys.readouterr().out
    assert out.startswith(f"precision: MNIST-sized models in float32, float16, int8 and binary weights, batch "
                          f"{precision.QUICK_BATCH}, device {dl_backend.device()}; median of 1 interleaved repeats")
    ratio = r"inference x\d+\.\d, training step x\d+\.\d"
    if dl_backend.device() == "cpu":
        assert re.search(rf"^float16 is slower in NumPy on a CPU: .+ autocast time over float32's: "
                         rf"MLP 784-1024-1024-10: {ratio}, article CNN: {ratio}$", out, re.M)
    else:
        assert re.search(rf"^float16 on the GPU .+: MLP 784-1024-1024-10: {ratio}, article CNN: {ratio}$", out, re.M)
