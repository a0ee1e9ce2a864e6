"""The affine map between real numbers and int8: ``real = scale * (q - zero_point)``, ``q`` in [-128, 127].

Weights are symmetric (zero point 0) with one scale per output channel, ``max |w| / 127``: each filter keeps its
own range, so a filter of small weights is not rounded away beside a large one. Activations take one scale and a
zero point per tensor from the range seen in calibration, widened to contain 0 so that 0 (padding, a ReLU's
output) is exact.
"""

import numpy

from .. import backend

QMIN, QMAX = -128, 127


def weight_scales(weight):
    """``weight: (O, ...)`` array -> ``(O,)`` float32 scales: ``max |w| / 127`` per output channel (1 where all
    zero)."""
    xp = backend.get_array_module(weight)
    largest = xp.abs(weight.reshape(len(weight), -1)).max(axis=1)
    return xp.where(largest > 0, largest / QMAX, 1).astype(numpy.float32)


def activation_params(low, high):
    """``(scale, zero_point)`` that map ``[min(low, 0), max(high, 0)]`` onto [-128, 127]."""
    low, high = min(float(low), 0.0), max(float(high), 0.0)
    if high == low:
        return 1.0, 0
    scale = (high - low) / (QMAX - QMIN)
    zero_point = int(numpy.clip(round(QMIN - low / scale), QMIN, QMAX))
    return scale, zero_point


def quantize(x, scale, zero_point=0):
    """``round(x / scale) + zero_point``, saturated to int8; ``scale`` broadcasts against ``x`` (per channel)."""
    xp = backend.get_array_module(x)
    q = xp.rint(x / scale) + zero_point
    return xp.clip(q, QMIN, QMAX).astype(numpy.int8)


def dequantize(q, scale, zero_point=0):
    """``scale * (q - zero_point)`` as float32."""
    return ((q.astype(numpy.int32) - zero_point) * scale).astype(numpy.float32)
