"""dlscratch.quantization: the affine int8 map, exact int8 matrix products, the int8 Linear and Conv2d against the
float64 arithmetic they stand for, quantize_model on a small CNN, and
what they refuse: an uncalibrated layer, NaN inputs, a backward."""

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as dl_backend
from dlscratch import nn
from dlscratch.quantization import (
    QuantizedConv2d,
    QuantizedLinear,
    activation_params,
    dequantize,
    int8_matmul,
    quantize,
    quantize_model,
    stored_bytes,
    weight_scales,
)


def test_the_affine_map_rounds_within_half_a_step_and_keeps_zero_exact(backend):
    x = backend.asarray(np.linspace(-0.7, 2.9, 1001, dtype=np.float32))
    scale, zero_point = activation_params(-0.7, 2.9)
    assert scale == pytest.approx(3.6 / 255) and -128 <= zero_point <= 127
    q = quantize(x, scale, zero_point)
    assert q.dtype == np.int8 and int(q.min()) == -128 and int(q.max()) == 127
    assert float(abs(dequantize(q, scale, zero_point) - x).max()) <= scale / 2 + 1e-6
    assert float(dequantize(backend.asarray(np.int8(zero_point)), scale, zero_point)) == 0.0
    assert activation_params(0.5, 2.0)[1] == -128  # the range is widened to contain 0, which maps to -128
    assert activation_params(0.0, 0.0) == (1.0, 0)
    assert int(quantize(backend.asarray(np.float32(1e9)), scale, zero_point)) == 127  # saturates


def test_weight_scales_are_per_output_channel(backend):
    w = backend.asarray(np.array([[[0.5, -1.0]], [[0.01, 0.04]], [[0.0, 0.0]]], dtype=np.float32))
    scales = weight_scales(w)
    np.testing.assert_allclose(dl_backend.to_cpu(scales), [1 / 127, 0.04 / 127, 1.0], rtol=1e-6)
    q = dl_backend.to_cpu(quantize(w, scales[:, None, None]))
    assert q.tolist() == [[[64, -127]], [[32, 127]], [[0, 0]]]  # the small filter keeps its 8 bits


@pytest.mark.parametrize("method", ["integer", "float32"])
@pytest.mark.parametrize("k", [1, 1024, 3001])
def test_int8_matmul_is_exact(backend, method, k):
    rng = np.random.default_rng(k)
    a, b = rng.integers(-128, 128, size=(5, k)), rng.integers(-128, 128, size=(k, 7))
    a[0], b[:, 0] = -128, -128  # the largest products: row 0 by column 0 sums k * 2^14
    got = int8_matmul(backend.asarray(a.astype(np.int8)), backend.asarray(b.astype(np.int8)), method)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(dl_backend.to_cpu(got), a @ b)


def test_int8_matmul_refusals():
    a = np.zeros((2, 3), np.int8)
    with pytest.raises(TypeError, match="expected int8 arrays, got float32 and int8"):
        int8_matmul(a.astype(np.float32), a.T)
    with pytest.raises(ValueError, match=r"cannot multiply \(2, 3\) by \(2, 3\)"):
        int8_matmul(a, a)
    with pytest.raises(ValueError, match="method must be one of"):
        int8_matmul(a, a.T, "int4")


def simulated(layer, x, scale, zero_point):
    """The float64 arithmetic an int8 layer stands for: its input and weight rounded to their int8 grids."""
    x = dl_backend.to_cpu(dequantize(quantize(x.data, np.float32(scale), zero_point), scale, zero_point))
    w = dl_backend.to_cpu(layer.weight.data)
    scales = dl_backend.to_cpu(weight_scales(layer.weight.data)).reshape((-1,) + (1,) * (w.ndim - 1))
    w = np.rint(w / scales).clip(-128, 127) * scales
    args = [dlscratch.tensor(a, dtype=np.float64) for a in (x, w, dl_backend.to_cpu(layer.bias.data))]
    if isinstance(layer, nn.Linear):
        return F.linear(*args).numpy()
    return F.conv2d(*args, stride=layer.stride, padding=layer.padding).numpy()


@pytest.mark.parametrize("method", ["integer", "float32"])
def test_quantized_linear_computes_the_rounded_arithmetic(backend, method):
    dlscratch.manual_seed(0)
    linear = nn.Linear(20, 6)
    x = dlscratch.tensor(backend.asarray(np.random.default_rng(1).uniform(-1, 3, (8, 20)).astype(np.float32)))
    scale, zero_point = activation_params(-1, 3)
    layer = QuantizedLinear(linear, scale, zero_point, method)
    got = dl_backend.to_cpu(layer(x).data)
    assert got.dtype == np.float32 and layer.weight.dtype == np.int8
    np.testing.assert_allclose(got, simulated(linear, x, scale, zero_point), rtol=1e-5, atol=1e-5)
    exact = dl_backend.to_cpu(linear(x).data)
    assert np.abs(got - exact).max() / np.abs(exact).max() < 0.02  # and close to the float layer


@pytest.mark.parametrize("stride, padding", [(1, 1), (2, 2), (1, 0)])
def test_quantized_conv2d_pads_with_the_zero_point(backend, stride, padding):
    dlscratch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3, stride=stride, padding=padding)
    # all positive (after a ReLU): zero point -128, so padding with int8 zeros would pad with 128 steps
    x = dlscratch.tensor(backend.asarray(np.random.default_rng(2).uniform(0, 2, (2, 3, 7, 6)).astype(np.float32)))
    scale, zero_point = activation_params(0, 2)
    assert zero_point == -128
    got = dl_backend.to_cpu(QuantizedConv2d(conv, scale, zero_point)(x).data)
    np.testing.assert_allclose(got, simulated(conv, x, scale, zero_point), rtol=1e-5, atol=1e-5)


def small_cnn():
    dlscratch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(8 * 4 * 4, 10))


def test_quantize_model_calibrates_swaps_and_shrinks(backend):
    model = small_cnn()
    rng = np.random.default_rng(3)
    batches = [(backend.asarray(rng.uniform(0, 1, (16, 1, 8, 8)).astype(np.float32)), None) for _ in range(3)]
    quantized = quantize_model(model, batches)
    assert isinstance(model[0], nn.Conv2d) and isinstance(model[4], nn.Linear)  # the original is untouched
    assert isinstance(quantized[0], QuantizedConv2d) and isinstance(quantized[4], QuantizedLinear)
    assert int(quantized[0].input_zero_point.item()) == -128  # the images are in [0, 1]
    x = dlscratch.tensor(batches[0][0])
    exact, got = (dl_backend.to_cpu(m(x).data) for m in (model.eval(), quantized))
    assert np.abs(got - exact).max() / np.abs(exact).max() < 0.05
    float_bytes, int8_bytes = stored_bytes(model), stored_bytes(quantized)
    assert float_bytes == 4 * (8 * 9 + 8 + 128 * 10 + 10)
    # int8 weights, float32 scales and biases, and each layer's input scale (float32) and zero point (int32)
    assert int8_bytes == (8 * 9 + 128 * 10) + 4 * (8 + 10) + 4 * (8 + 10) + 2 * 8


def test_quantize_model_refusals():
    with pytest.raises(ValueError, match="no Linear or Conv2d"):
        quantize_model(nn.Sequential(nn.ReLU()), [np.zeros((1, 2), np.float32)])
    with pytest.raises(ValueError, match="gave no batch"):
        quantize_model(small_cnn(), [])
    with pytest.raises(ValueError, match="method must be one of"):
        QuantizedLinear(nn.Linear(2, 2), 1.0, 0, "int4")


def test_quantize_model_quantizes_the_signs_a_binary_layer_computes_with(backend):
    from dlscratch.nn.binary import BinaryConv2d, BinaryLinear
    dlscratch.manual_seed(0)
    model = nn.Sequential(BinaryConv2d(2, 3, 3, padding=1), nn.ReLU(), nn.Flatten(), BinaryLinear(3 * 5 * 5, 4))
    x = dlscratch.tensor(backend.asarray(np.random.default_rng(4).uniform(0, 1, (6, 2, 5, 5)).astype(np.float32)))
    exact, got = (dl_backend.to_cpu(m(x).data) for m in (model.eval(), quantize_model(model, [x])))
    assert np.abs(got - exact).max() / np.abs(exact).max() < 0.05  # the shadow weights gave 40-70% errors


def test_quantized_layers_take_what_the_float_layers_take_and_name_a_wrong_shape(backend):
    dlscratch.manual_seed(0)
    linear, conv = nn.Linear(3, 2), nn.Conv2d(2, 3, 3)
    x = dlscratch.tensor(backend.asarray(np.random.default_rng(5).uniform(-1, 1, (5, 4, 3)).astype(np.float32)))
    quantized = QuantizedLinear(linear, *activation_params(-1, 1))
    got, exact = dl_backend.to_cpu(quantized(x).data), dl_backend.to_cpu(linear(x).data)
    assert got.shape == (5, 4, 2) and np.abs(got - exact).max() < 0.05
    with pytest.raises(ValueError, match=r"QuantizedLinear: input of shape \(5, 4, 3\).*\(\.\.\., 2\)"):
        QuantizedLinear(nn.Linear(2, 2), 1.0, 0)(x)
    with pytest.raises(ValueError, match=r"QuantizedConv2d: input of shape \(5, 4, 3\).*\(N, 2, H, W\)"):
        QuantizedConv2d(conv, 1.0, 0)(x)


def test_quantize_model_of_a_bare_layer_says_to_wrap_it():
    with pytest.raises(ValueError, match=r"quantize_model: the model is itself a Linear.*nn\.Sequential\(model\)"):
        quantize_model(nn.Linear(2, 2), [np.zeros((1, 2), np.float32)])


def test_a_state_dict_carries_the_calibration():
    dlscratch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    rng = np.random.default_rng(7)
    wide, narrow = (rng.standard_normal((16, 4)).astype(np.float32) * s for s in (5.0, 0.5))
    source = quantize_model(model, [dlscratch.tensor(wide)])
    target = quantize_model(model, [dlscratch.tensor(narrow)])
    x = dlscratch.tensor(wide[:5])
    assert not np.array_equal(target(x).numpy(), source(x).numpy())  # different ranges, different outputs
    target.load_state_dict(source.state_dict())
    np.testing.assert_array_equal(target(x).numpy(), source(x).numpy())
    assert {"0.input_scale", "0.input_zero_point"} <= {name for name, _ in source.named_buffers()}


def test_a_calibration_batch_with_nan_is_refused():
    model = nn.Sequential(nn.Linear(3, 2))
    batch = np.ones((4, 3), dtype=np.float32)
    batch[1, 2] = np.nan
    with pytest.raises(ValueError, match="reached Linear with inf or NaN"):
        quantize_model(model, [dlscratch.tensor(batch)])


class TwoHeads(nn.Module):
    """Calibration runs ``forward(x)``, which takes head 0: head 1 is never reached."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.heads = nn.Sequential(nn.Linear(4, 2), nn.Linear(4, 2))

    def forward(self, x, head=0):
        return self.heads[head](self.features(x))


def test_a_layer_calibration_never_reached_is_refused_by_name():
    dlscratch.manual_seed(0)
    batch = dlscratch.tensor(np.random.default_rng(8).standard_normal((16, 4)).astype(np.float32))
    with pytest.raises(ValueError, match=r"quantize_model: calibration never reached heads\.1 \(Linear\)"):
        quantize_model(TwoHeads(), [batch])


@pytest.mark.parametrize("cast", [nn.Module.half, nn.Module.double, lambda m: m.to(np.float16)])
def test_a_float_cast_leaves_the_int8_layers_as_they_are(backend, cast):
    model = small_cnn()
    x = dlscratch.tensor(backend.asarray(np.random.default_rng(9).uniform(0, 1, (4, 1, 8, 8)).astype(np.float32)))
    quantized = quantize_model(model, [x])
    before = dl_backend.to_cpu(quantized(x).data)
    cast(quantized)
    assert {name: str(b.dtype) for name, b in quantized[4].named_buffers()} == {
        "weight": "int8", "weight_scale": "float32", "bias": "float32", "input_scale": "float32",
        "input_zero_point": "int32"}
    np.testing.assert_array_equal(dl_backend.to_cpu(quantized(x).data), before)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_an_int8_layer_refuses_nan_and_inf(backend, bad):
    dlscratch.manual_seed(0)
    conv = QuantizedConv2d(nn.Conv2d(1, 2, 3), *activation_params(0, 1))
    x = backend.zeros((1, 1, 5, 5), dtype=np.float32)
    x[0, 0, 2, 3] = bad
    with pytest.raises(ValueError, match="QuantizedConv2d: the input holds NaN or inf"):
        conv(dlscratch.tensor(x))


def test_backward_into_an_int8_layer_names_it_and_says_to_train_the_float_model():
    dlscratch.manual_seed(0)
    first, int8 = nn.Linear(3, 4), QuantizedLinear(nn.Linear(4, 2), *activation_params(-2, 2))
    x = dlscratch.tensor(np.ones((2, 3), np.float32))
    out = int8(first(x))
    with dlscratch.no_grad():
        np.testing.assert_array_equal(out.detach().numpy(), int8(first(x)).numpy())
    with pytest.raises(RuntimeError, match=r"QuantizedLinear \(2, 4\) is int8 and has no backward.*train the float "
                                           r"model, then quantize"):
        out.sum().backward()
