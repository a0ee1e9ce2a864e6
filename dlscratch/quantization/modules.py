"""Int8 layers for inference, and ``quantize_model``, which calibrates a trained float model and swaps its
``Linear`` and ``Conv2d`` layers for them.

A quantised layer takes and returns float32 tensors. Inside, the input becomes int8 with the scale and zero point
calibrated for it, the product runs in integers (``int8_matmul``: int32 sums), and the int32 result returns to
float32 with one multiplication per output channel, ``input scale * weight scale``, before the float32 bias. With
``x = sx (qx - zx)`` and ``w = sw qw``::

    x @ w.T = sx sw (qx @ qw.T - zx * qw.sum(axis=1))

so the zero point costs one correction per output channel, not a subtraction per input.

The layers compute, they do not learn: a gradient that reaches one stops there with an error that names it
(train the float model, then quantise). A float cast of the model (``half()``) leaves them as they are, and an
input holding NaN or inf is refused: int8 has no code for either, and rounding would turn them into finite
numbers without a word.
"""

import copy

import numpy

from .. import backend
from ..engine.function import Function
from ..engine.grad_mode import no_grad
from ..engine.tensor import Tensor
from ..nn.binary import _Binary
from ..nn.conv import Conv2d
from ..nn.linear import Linear
from ..nn.module import Module
from ..operations.im2col import geometry, im2col_array
from .affine import activation_params, quantize, weight_scales
from .int_gemm import INT8_MATMUL_METHODS, int8_matmul


class _Int8Forward(Function):
    """An int8 layer's forward as an operation: where its input requires grad, it is recorded as a node whose
    backward refuses by name, so the graph is cut there with a reason, not at an output that seems computed
    under ``no_grad()``."""

    saves_inputs = False

    def __init__(self, layer):
        self.layer = layer

    def forward(self, x):
        return self.layer._int8_forward(x)

    def backward(self, gy):
        layer = self.layer
        raise RuntimeError(f"backward: {type(layer).__name__} {tuple(layer.weight.shape)} is int8 and has no "
                           "backward, so no gradient can pass it to the layers before it; train the float model, "
                           "then quantize it with quantize_model")


class _QuantizedLayer(Module):
    """What the int8 layers share: the int8 weight and its per-channel scales, the float32 bias, the input's
    scale and zero point, and how the products run (``method``: see ``int8_matmul``). ``forward`` takes a
    float tensor without NaN or inf (refused: see the module docstring)."""

    fixed_dtype_buffers = ("weight_scale", "bias", "input_scale")  # float32 under half(), as PyTorch's are

    def __init__(self, layer, input_scale, input_zero_point, method):
        super().__init__()
        if method not in INT8_MATMUL_METHODS:
            raise ValueError(f"{type(self).__name__}: method must be one of {INT8_MATMUL_METHODS}, got {method!r}")
        layer._recompute_derived()  # a pruned weight as its weight_orig is now, not as the last forward saw it
        with no_grad():  # the weight the forward uses: a binary layer's signs, not its shadow weight
            w = (layer.binary_weight() if isinstance(layer, _Binary) else layer.weight).data
        scales = weight_scales(w)
        self.register_buffer("weight", Tensor(quantize(w, scales.reshape((-1,) + (1,) * (w.ndim - 1)))))
        self.register_buffer("weight_scale", Tensor(scales))
        self.register_buffer("bias", None if layer.bias is None else Tensor(layer.bias.data.copy()))
        # buffers, not attributes: a state_dict carries the calibration, so a loaded model uses the loaded ranges
        xp = backend.get_array_module(w)
        self.register_buffer("input_scale", Tensor(xp.asarray(input_scale, dtype=numpy.float32)))
        self.register_buffer("input_zero_point", Tensor(xp.asarray(input_zero_point, dtype=numpy.int32)))
        self.method = method

    def _integer_product(self, qx_rows):
        """``(O, K) int8 weight @ (K, L) int8 input`` -> ``(O, L)`` float32: the real product, before the bias."""
        rows = self.weight.data.reshape(len(self.weight.data), -1)
        # the zero point's correction, from the weight itself (so a loaded state_dict cannot leave it stale)
        row_sums = rows.sum(axis=1, dtype=numpy.int32)
        acc = int8_matmul(rows, qx_rows, self.method) - self.input_zero_point.data * row_sums[:, None]
        return acc.astype(numpy.float32) * (self.input_scale.data * self.weight_scale.data)[:, None]

    def forward(self, x):
        """A float tensor of the shape the float layer took -> float32 (see the subclasses)."""
        if not isinstance(x, Tensor):
            raise TypeError(f"{type(self).__name__}: expected a Tensor, got {type(x).__name__}")
        self._check_shape(tuple(x.shape))
        if not bool(backend.get_array_module(x.data).isfinite(x.data).all()):
            raise ValueError(f"{type(self).__name__}: the input holds NaN or inf, which int8 cannot represent "
                             "(they would round to arbitrary finite numbers); find where they come from, or run "
                             "the float model to see them propagate")
        return _Int8Forward(self)(x)

    def _quantized_input(self, x):
        """Array ``x`` as int8, with the calibrated scale and zero point."""
        zero_point = self.input_zero_point.data.astype(numpy.float32)  # float32 + int32 would widen to float64
        return quantize(x, self.input_scale.data, zero_point)

    def extra_repr(self):
        return (f"{tuple(self.weight.shape)}, input scale={float(self.input_scale.data):.4g}, "
                f"zero point={int(self.input_zero_point.data)}, method={self.method!r}")


class QuantizedLinear(_QuantizedLayer):
    """An int8 ``Linear``: ``x: (N, in_features)`` float32 -> ``(N, out_features)`` float32. Inference only."""

    def __init__(self, linear, input_scale, input_zero_point, method="integer"):
        super().__init__(linear, input_scale, input_zero_point, method)

    def _check_shape(self, shape):
        if not (len(shape) >= 1 and shape[-1] == self.weight.shape[1]):
            raise ValueError(f"QuantizedLinear: input of shape {shape} does not fit; expected "
                             f"(..., {self.weight.shape[1]})")

    def _int8_forward(self, x):
        """``x: (..., in_features)`` array -> ``(..., out_features)``."""
        out_features, in_features = self.weight.shape
        y = self._integer_product(self._quantized_input(x).reshape(-1, in_features).T).T
        y = y if self.bias is None else y + self.bias.data
        return y.reshape(x.shape[:-1] + (out_features,))


class QuantizedConv2d(_QuantizedLayer):
    """An int8 ``Conv2d`` by im2col: ``x: (N, C, H, W)`` float32 -> ``(N, O, Ho, Wo)`` float32. Inference only.
    The input is padded with its zero point (the int8 code of 0), then unrolled without padding."""

    def __init__(self, conv, input_scale, input_zero_point, method="integer"):
        super().__init__(conv, input_scale, input_zero_point, method)
        self.kernel_size, self.stride, self.padding = conv.kernel_size, conv.stride, conv.padding

    def _check_shape(self, shape):
        if not (len(shape) == 4 and shape[1] == self.weight.shape[1]):
            raise ValueError(f"QuantizedConv2d: input of shape {shape} does not fit; expected "
                             f"(N, {self.weight.shape[1]}, H, W)")
        self._geometry(shape)

    def _geometry(self, shape):
        """The output size for an input of ``shape`` (a kernel larger than the padded input is refused)."""
        return geometry(shape, self.kernel_size, self.stride, self.padding, "QuantizedConv2d")

    def _int8_forward(self, x):
        """``x: (N, C, H, W)`` array -> ``(N, O, Ho, Wo)``."""
        q = self._quantized_input(x)
        xp = backend.get_array_module(q)
        (ph, pw), (N, C, H, W) = self.padding, q.shape
        padded = xp.empty((N, C, H + 2 * ph, W + 2 * pw), dtype=numpy.int8)
        padded[...] = self.input_zero_point.data
        padded[:, :, ph:ph + H, pw:pw + W] = q
        g = self._geometry(x.shape)
        y = self._integer_product(im2col_array(padded, self.kernel_size, self.stride, 0))  # (O, Ho*Wo*N)
        if self.bias is not None:
            y = y + self.bias.data[:, None]
        y = y.reshape(len(y), g.Ho, g.Wo, N).transpose(3, 0, 1, 2)
        return xp.ascontiguousarray(y)


class _Observer(Module):
    """Wraps a layer during calibration and records the smallest and largest input it sees (an empty batch
    adds nothing)."""

    def __init__(self, layer):
        super().__init__()
        self.layer, self.low, self.high = layer, numpy.inf, -numpy.inf

    def forward(self, x):
        if x.data.size == 0:  # an empty batch has no range to record (PyTorch's observers skip it too)
            return self.layer(x)
        low, high = float(x.data.min()), float(x.data.max())
        if not (numpy.isfinite(low) and numpy.isfinite(high)):  # min() and max() of Python would skip a NaN
            raise ValueError(f"quantize_model: a calibration batch reached {type(self.layer).__name__} with inf or NaN "
                             "in it; calibrate on finite inputs")
        self.low, self.high = min(self.low, low), max(self.high, high)
        return self.layer(x)


def quantize_model(model, calibration, method="integer"):
    """An int8 copy of ``model`` (the original is untouched): each ``Linear`` and ``Conv2d`` becomes a
    ``QuantizedLinear`` or ``QuantizedConv2d`` whose input range is the one seen while ``model`` ran, in eval
    mode, on ``calibration``: an iterable of input batches, or of ``(inputs, targets)`` pairs (a DataLoader)."""
    if isinstance(model, (Linear, Conv2d)):
        raise ValueError(f"quantize_model: the model is itself a {type(model).__name__}, and quantize_model swaps the "
                         "layers inside a model; pass nn.Sequential(model)")
    quantized = copy.deepcopy(model).eval()
    observers = []
    for prefix, parent in list(quantized.named_modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, (Linear, Conv2d)):
                observer = _Observer(child)
                parent._modules[name] = observer
                observers.append((parent, name, observer, f"{prefix}.{name}" if prefix else name))
    if not observers:
        raise ValueError("quantize_model: the model has no Linear or Conv2d layer to quantise")
    seen = 0
    with no_grad():
        for batch in calibration:
            x = batch[0] if isinstance(batch, (tuple, list)) else batch
            quantized(x if isinstance(x, Tensor) else Tensor(backend.xp.asarray(x)))
            seen += 1
    if not seen:
        raise ValueError("quantize_model: the calibration data gave no batch")
    # An error, not a warning: PyTorch's observer only warns here and quantises with scale 1 and zero point 0,
    # which puts inputs below 1 on a grid of 1 (the model's outputs then come out far from the float model's);
    # a warning scrolled past leaves a learner a wrong model, an error now costs a calibration batch.
    missed = [f"{qualified} ({type(observer.layer).__name__})" for _, _, observer, qualified in observers
              if observer.low > observer.high]
    if missed:
        raise ValueError(f"quantize_model: calibration never reached {', '.join(missed)} with a non-empty batch, so "
                         "there is no input range "
                         "to quantise it with; calibrate on batches that take every branch, or, if the layer never "
                         "runs in eval mode (a training-only head), remove it from the model first")
    for parent, name, observer, _ in observers:
        kind = QuantizedLinear if isinstance(observer.layer, Linear) else QuantizedConv2d
        parent._modules[name] = kind(observer.layer, *activation_params(observer.low, observer.high), method)
    return quantized


def stored_bytes(model):
    """The bytes of a model's parameters and buffers: what it takes to store or ship."""
    tensors = list(model.parameters()) + [b for _, b in model.named_buffers()]
    return sum(int(t.data.nbytes) for t in tensors)
