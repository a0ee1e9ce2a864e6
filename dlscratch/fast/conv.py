"""Fast 2-D convolution: the reference's im2col and one GEMM (``operations/conv.py``), with the same numbers.

- **The bias inside the GEMMs** (CPU): ``[W | b] @ [cols; 1]`` adds the bias and ``gy @ [cols; 1].T`` ends with
  its gradient, two passes over the output fewer. On a GPU, where the ones row and the concatenation would cost
  launches, the bias is added after the GEMM; in float16 too, to round as the reference does.
- **col2im in bands** (CPU): the input's gradient a band of output rows at a time, so each band's slice of
  ``W.T @ gy`` (``tuning.BAND_NUMBERS``) is still in cache when col2im reads it. On a GPU with the ``kernel``
  method, one GEMM and one gather kernel that writes ``gx`` itself.
- **No transposes**: the output is a view of the product's batch-last memory (``layout.py``).
- **New gradients**, which a leaf adopts without a copy (``returns_unshared_grads``).

``python -m dlscratch.bench conv`` times this path beside the reference path.
"""

from dataclasses import replace

import numpy

from .. import backend
from ..engine.function import Function
from ..engine.switch import fast_version_of
from ..engine.tensor import data_of
from ..operations import conv as reference
from ..operations.conv_algorithms import registered_algorithm
from ..operations.conv_checks import check_conv2d
from ..operations.products import gemm
from . import tuning
from .im2col import COL2IM, IM2COL, resolve_method
from .layout import is_batch_last, to_batch_last, unpad_batch_last
from .threads import in_parts


class Conv2dFunction(Function):
    """x: (N, C, H, W), weight: (O, C, kh, kw), bias: (O,) or absent -> (N, O, Ho, Wo).

    The reference's class name on purpose: a program that reads ``type(y.grad_fn).__name__`` sees one name on both
    paths."""

    name = "conv2d"  # the name errors and drawings use

    returns_unshared_grads = True

    def __init__(self, geometry, method):
        self.geometry, self.method = geometry, method

    def forward(self, x, weight, bias=None):
        geometry = self.geometry
        rows, columns = geometry.cols_shape
        # the bias as a ones row of cols and a column of the weight matrix (not on a GPU or in float16: see above)
        self.bias_row = bias is not None and not backend.is_gpu_array(x) and x.dtype != numpy.float16
        shape = (rows + self.bias_row, columns)
        cols = backend.get_array_module(x).empty(shape, dtype=x.dtype)
        IM2COL[self.method](x, geometry, cols[:rows])
        matrix = weight.reshape(len(weight), -1)
        if self.bias_row:
            cols[rows] = 1
            matrix = backend.get_array_module(x).concatenate([matrix, bias[:, None]], axis=1)
        self.cols, self.weight = cols, weight
        y = gemm(matrix, cols)
        if bias is not None and not self.bias_row:
            y += bias[:, None]
        y = y.reshape(len(weight), geometry.Ho, geometry.Wo, geometry.N)  # O, not -1: N may be 0
        return y.transpose(3, 0, 1, 2)

    def backward(self, gy):
        out_channels = gy.shape[1]
        gy = (gy.transpose(1, 2, 3, 0) if is_batch_last(gy) else to_batch_last(gy)).reshape(out_channels, -1)
        weight = self.weight.reshape(out_channels, -1)
        gx = self.input_gradient(weight, gy) if self.needs_input_grad[0] else None
        has_bias = len(self.inputs) == 3
        gw = gb = None
        if self.needs_input_grad[1] or (has_bias and self.needs_input_grad[2]):
            g_matrix = weight_gradient(gy, self.cols)  # (O, C*kh*kw [+ 1 for the bias])
            gw = g_matrix[:, : weight.shape[1]].reshape(self.weight.shape)
            if has_bias:
                gb = g_matrix[:, -1].copy() if self.bias_row else gy.sum(axis=1)
        return (gx, gw, gb) if has_bias else (gx, gw)

    def input_gradient(self, weight, gy):
        """``col2im(weight.T @ gy)`` for ``weight: (O, C*kh*kw)``, ``gy: (O, Ho*Wo*N)``, in bands of output rows."""
        geometry = self.geometry
        xp = backend.get_array_module(gy)
        on_gpu = backend.is_gpu_array(gy)
        if on_gpu and self.method == "kernel":  # the gather kernel writes every number of gx: nothing to zero
            return COL2IM["kernel"](gemm(weight.T, gy), geometry)
        (N, C, H, W), Ho, Wo = geometry.x_shape, geometry.Ho, geometry.Wo
        per_row = weight.shape[1] * Wo * N
        band = Ho if on_gpu or per_row == 0 else max(1, tuning.BAND_NUMBERS // per_row)  # per_row is 0 for N = 0
        padded = xp.zeros((C, H + 2 * geometry.ph, W + 2 * geometry.pw, N), dtype=gy.dtype)
        for r0 in range(0, Ho, band):
            r1 = min(r0 + band, Ho)
            rows = slice(r0 * geometry.sh, (r1 - 1) * geometry.sh + geometry.kh)  # the padded rows they read
            band_geometry = replace(geometry, H=rows.stop - rows.start, W=padded.shape[2], ph=0, pw=0)
            gcols = gemm(weight.T, gy[:, r0 * Wo * N : r1 * Wo * N])
            if on_gpu:
                padded[:, rows] += COL2IM[self.method](gcols, band_geometry).transpose(1, 2, 3, 0)
            else:
                add_columns(padded[:, rows], gcols, band_geometry)
        return unpad_batch_last(padded, geometry)


def add_columns(target, gcols, g):
    """col2im on the CPU, added in place: ``target: (C, Hp, Wp, N)`` += col2im of ``gcols``.

    One strided-slice addition per kernel offset, on one part of the channels per core.
    """
    blocks = gcols.reshape(g.C, g.kh, g.kw, g.Ho, g.Wo, g.N)

    def add(c0, c1):
        for i in range(g.kh):
            for j in range(g.kw):
                target[c0:c1, g.rows(i), g.columns(j)] += blocks[c0:c1, i, j]

    in_parts(add, g.C, gcols.size)


def weight_gradient(gy, cols):
    """``gy @ cols.T`` for ``gy: (O, M)``, ``cols: (R, M)``, computed on the CPU as ``(cols @ gy.T).T``.

    With a long inner dimension ``M``, OpenBLAS's threads wait for each other in ``gy @ cols.T`` and it runs many
    times slower when other processes share the cores. On a GPU the product is made C-ordered, as a leaf's gradient
    must be.
    """
    if backend.is_gpu_array(gy):
        return gemm(gy, cols.T)
    return gemm(cols, gy.T).T



@fast_version_of(reference.conv2d)
def conv2d(x, weight, bias=None, stride=1, padding=0, im2col_method=None, algorithm="im2col"):
    geometry = check_conv2d(x, weight, bias, stride, padding, im2col_method, algorithm, im2col_methods=True)
    if algorithm == "im2col":
        convolution = Conv2dFunction(geometry, resolve_method(im2col_method, data_of(x), "conv2d"))
    else:  # FFT and Winograd have one implementation, the reference's
        convolution = registered_algorithm(algorithm, (geometry.ph, geometry.pw))
    return convolution(x, weight) if bias is None else convolution(x, weight, bias)
