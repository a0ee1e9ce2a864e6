"""Int8 layers for inference, and ``quantize_model``, which calibrates a trained float model and swaps its
``Linear`` and ``Conv2d`` layers for them.

A quantised layer takes and returns float32 tensors. Inside, the input becomes int8 with the scale and zero point
calibrated for it, the product runs in integers (``int8_matmul``: int32 sums), and the int32 result returns to
float32 with one multiplication per output channel, ``input scale * weight scale``, before the float32 bias. With
``x = sx (qx - zx)`` and ``w = sw qw``::

    x @ w.T = sx sw (qx @ qw.T - zx * qw.sum(axis=1))

so the zero point costs one correction per output channel, not a subtraction per input.
"""

import copy

import numpy

from .. import backend
from ..functions.im2col import geometry, im2col_array
from ..grad_mode import no_grad
from ..nn.binary import _Binary
from ..nn.conv import Conv2d
from ..nn.linear import Linear
from ..nn.module import Module
from ..tensor import Tensor
from .affine import activation_params, quantize, weight_scales
from .int_gemm import INT8_MATMUL_METHODS, int8_matmul


class _QuantizedLayer(Module):
    """What the int8 layers share: the int8 weight and its per-channel scales, the float32 bias, the input's
    scale and zero point, and how the products run (``method``: see ``int8_matmul``)."""

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

    def _quantized_input(self, x, expected):
        """``x`` as int8, once ``_fits`` accepts its shape (``expected``: what fits, for the refusal)."""
        if not isinstance(x, Tensor):
            raise TypeError(f"{type(self).__name__}: expected a Tensor, got {type(x).__name__}")
        if not self._fits(x.shape):
            raise ValueError(f"{type(self).__name__}: input of shape {tuple(x.shape)} {expected}")
        zero_point = self.input_zero_point.data.astype(numpy.float32)  # float32 + int32 would widen to float64
        return quantize(x.data, self.input_scale.data, zero_point)

    def extra_repr(self):
        return (f"{tuple(self.weight.shape)}, input scale={float(self.input_scale.data):.4g}, "
                f"zero point={int(self.input_zero_point.data)}, method={self.method!r}")


class QuantizedLinear(_QuantizedLayer):
    """An int8 ``Linear``: ``x: (N, in_features)`` float32 -> ``(N, out_features)`` float32. Inference only."""

    def __init__(self, linear, input_scale, input_zero_point, method="integer"):
        super().__init__(linear, input_scale, input_zero_point, method)

    def _fits(self, shape):
        return len(shape) >= 1 and shape[-1] == self.weight.shape[1]

    def forward(self, x):
        """``x: (..., in_features)`` -> ``(..., out_features)``."""
        (out_features, in_features), shape = self.weight.shape, tuple(x.shape)
        q = self._quantized_input(x, f"does not fit; expected (..., {in_features})")
        y = self._integer_product(q.reshape(-1, in_features).T).T
        y = y if self.bias is None else y + self.bias.data
        return Tensor(y.reshape(shape[:-1] + (out_features,)))


class QuantizedConv2d(_QuantizedLayer):
    """An int8 ``Conv2d`` by im2col: ``x: (N, C, H, W)`` float32 -> ``(N, O, Ho, Wo)`` float32. Inference only.
    The input is padded with its zero point (the int8 code of 0), then unrolled without padding."""

    def __init__(self, conv, input_scale, input_zero_point, method="integer"):
        super().__init__(conv, input_scale, input_zero_point, method)
        self.kernel_size, self.stride, self.padding = conv.kernel_size, conv.stride, conv.padding

    def _fits(self, shape):
        return len(shape) == 4 and shape[1] == self.weight.shape[1]

    def forward(self, x):
        q = self._quantized_input(x, f"does not fit; expected (N, {self.weight.shape[1]}, H, W)")
        xp = backend.get_array_module(q)
        (ph, pw), (N, C, H, W) = self.padding, q.shape
        padded = xp.empty((N, C, H + 2 * ph, W + 2 * pw), dtype=numpy.int8)
        padded[...] = self.input_zero_point.data
        padded[:, :, ph:ph + H, pw:pw + W] = q
        g = geometry(padded.shape, self.kernel_size, self.stride, 0, "QuantizedConv2d")
        y = self._integer_product(im2col_array(padded, self.kernel_size, self.stride, 0))  # (O, Ho*Wo*N)
        if self.bias is not None:
            y = y + self.bias.data[:, None]
        y = y.reshape(len(y), g.Ho, g.Wo, N).transpose(3, 0, 1, 2)
        return Tensor(xp.ascontiguousarray(y))


class _Observer(Module):
    """Wraps a layer during calibration and records the smallest and largest input it sees."""

    def __init__(self, layer):
        super().__init__()
        self.layer, self.low, self.high = layer, numpy.inf, -numpy.inf

    def forward(self, x):
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
    for parent in list(quantized.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, (Linear, Conv2d)):
                observer = _Observer(child)
                parent._modules[name] = observer
                observers.append((parent, name, observer))
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
    for parent, name, observer in observers:
        kind = QuantizedLinear if isinstance(observer.layer, Linear) else QuantizedConv2d
        parent._modules[name] = kind(observer.layer, *activation_params(observer.low, observer.high), method)
    return quantized


def stored_bytes(model):
    """The bytes of a model's parameters and buffers: what it takes to store or ship."""
    tensors = list(model.parameters()) + [b for _, b in model.named_buffers()]
    return sum(int(t.data.nbytes) for t in tensors)
