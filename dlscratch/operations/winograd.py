"""Convolution by Winograd's minimal filtering F(m x m, 3 x 3) (A. Lavin and S. Gray, "Fast Algorithms for
Convolutional Neural Networks", CVPR 2016), for stride-1 3 x 3 kernels.

In one dimension, F(m, r) computes ``m`` outputs of an ``r``-tap filter ``g`` over ``n = m + r - 1`` inputs
``d`` with ``n`` multiplications instead of ``m * r``::

    y = AT @ ((G @ g) * (BT @ d))                  AT: (m, n), G: (n, r), BT: (n, n)

The matrices come from polynomial interpolation (Toom-Cook): a correlation is the transpose of a linear
convolution, and a linear convolution is "evaluate both polynomials at n points, multiply, interpolate".
With ``V_k`` the n x k matrix that evaluates a polynomial of k coefficients at the points (a row
``[1, a, a^2, ...]`` per finite point ``a``, and a last row that picks the leading coefficient, the point at
infinity)::

    AT = V_m.T,   G = V_r,   BT = inverse(V_n).T

Row j of ``BT`` and of ``G`` may trade a factor (``BT[j] * c``, ``G[j] / c``): ``transforms`` picks the
factors that make ``BT`` whole numbers, as Lavin and Gray's published matrices do. In two dimensions the
transforms apply on both sides of each ``n x n`` input tile and ``3 x 3`` filter::

    Y = AT @ ((G @ g @ G.T) * (BT @ d @ BT.T)) @ AT.T          (m x m outputs per tile)

and the product ``*`` summed over input channels is, for each of the ``n * n`` tile positions, one matrix
product ``(O, C) @ (C, tiles)``: n^2 GEMMs replace im2col's one, each ``m^2 * 9 / n^2`` times smaller
(2.25x fewer multiplications for F(2x2, 3x3), 4x for F(4x4, 3x3)). The price is accuracy: the transforms'
entries grow with m, and float32 loses more digits (``tests/test_winograd.py`` measures it). Float16
inputs (a ``.half()`` model, or ``conv2d`` under ``amp.autocast``) are transformed and multiplied in float32 and
only the output is rounded to float16: in float16 throughout, F(4x4)'s error would be many times im2col's.
"""

import functools
from fractions import Fraction
from math import lcm

import numpy

from .. import backend
from ..engine.function import Function
from .conv_algorithms import register_algorithm
from .products import gemm
from .sums import sum_over

DEFAULT_POINTS = (0, 1, -1, 2, -2, Fraction(1, 2), Fraction(-1, 2), 3, -3)


def transforms(m, r=3, points=None):
    """``(AT (m, n), G (n, r), BT (n, n))`` of F(m, r), n = m + r - 1, as exact ``Fraction`` lists of rows.

    ``points``: the n - 1 finite interpolation points (distinct); infinity is the n-th. By default the
    first n - 1 of 0, 1, -1, 2, -2, 1/2, -1/2, 3, -3 (Lavin and Gray's choice for F(2, 3) and F(4, 3))."""
    n = m + r - 1
    if points is None:
        if n - 1 > len(DEFAULT_POINTS):
            raise ValueError(f"transforms: F({m}, {r}) needs {n - 1} points; give them")
        points = DEFAULT_POINTS[:n - 1]
    points = [Fraction(p) for p in points]
    if len(points) != n - 1 or len(set(points)) != n - 1:
        raise ValueError(f"transforms: F({m}, {r}) needs {n - 1} distinct finite points, got {len(points)}")
    AT = _transpose(_evaluation(points, m))
    G = _evaluation(points, r)
    BT = _transpose(_inverse(_evaluation(points, n)))
    for j, row in enumerate(BT):  # make BT's rows whole numbers, moving the factor into G
        factor = lcm(*(x.denominator for x in row))
        BT[j] = [x * factor for x in row]
        G[j] = [x / factor for x in G[j]]
    return AT, G, BT


def as_arrays(matrices, xp=numpy, dtype=numpy.float32):
    """The exact matrices of ``transforms`` as arrays of ``dtype``."""
    return tuple(xp.asarray([[float(x) for x in row] for row in matrix], dtype=dtype) for matrix in matrices)


@functools.cache
def kron_transforms(m, xp, dtype, device=None):
    """``(kron(AT, AT) (m*m, n*n), kron(G, G) (n*n, 9), kron(BT, BT) (n*n, n*n))`` of F(m x m, 3 x 3) as ``xp``
    arrays of ``dtype``, made once per tile size, array module, dtype and device: the exact arithmetic of
    ``transforms`` takes longer than a small convolution. Read them, never write into them."""
    AT, G, BT = as_arrays(transforms(m), xp, dtype)
    return xp.kron(AT, AT), xp.kron(G, G), xp.kron(BT, BT)


def _evaluation(points, k):
    """V_k: (n, k); row [1, a, ..., a^(k-1)] per finite point a, and [0, ..., 0, 1] for infinity."""
    return [[a ** i for i in range(k)] for a in points] + [[Fraction(0)] * (k - 1) + [Fraction(1)]]


def _transpose(matrix):
    return [list(column) for column in zip(*matrix)]


def _inverse(matrix):
    """Gauss-Jordan elimination on exact fractions."""
    n = len(matrix)
    rows = [list(row) + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(matrix)]
    for c in range(n):
        pivot = next(r for r in range(c, n) if rows[r][c] != 0)
        rows[c], rows[pivot] = rows[pivot], rows[c]
        rows[c] = [x / rows[c][c] for x in rows[c]]
        for r in range(n):
            if r != c and rows[r][c] != 0:
                rows[r] = [x - rows[r][c] * y for x, y in zip(rows[r], rows[c])]
    return [row[n:] for row in rows]


class WinogradConv2d(Function):
    """x: (N, C, H, W), weight: (O, C, 3, 3), bias: (O,) or absent -> (N, O, Ho, Wo), stride 1, by F(m x m, 3 x 3).

    The output is cut into ``th x tw`` tiles of ``m x m``; tile (t, s) reads the ``n x n`` input patch at
    ``(t*m, s*m)`` of the input padded by ``padding = (ph, pw)`` (and by zeros on the bottom and right up to
    whole tiles). ``B @ d @ B.T`` on a tile is one matrix ``kron(B, B)`` times the tile read as a vector of
    ``n*n``, so each transform is one GEMM over all the tiles at once (``Q = n*n`` rows), not one tiny product
    per tile.
    """

    def __init__(self, m, padding):
        self.m, self.padding = m, padding

    def forward(self, x, weight, bias=None):
        xp = backend.get_array_module(x)
        self.dtypes = [a.dtype for a in (x, weight, bias) if a is not None]
        compute = numpy.promote_types(x.dtype, numpy.float32)  # float16 is transformed in float32 (above)
        x, weight = x.astype(compute, copy=False), weight.astype(compute, copy=False)
        device = getattr(getattr(x, "device", None), "id", None)  # a CuPy array's GPU
        self.A2, self.G2, self.B2 = kron_transforms(self.m, xp, compute, device)  # (m*m, Q), (Q, 9), (Q, Q)
        N, C, H, W = x.shape
        O, m, n = len(weight), self.m, self.m + 2
        (ph, pw), Q = self.padding, n * n
        self.Ho, self.Wo = H + 2 * ph - 2, W + 2 * pw - 2
        self.th, self.tw = -(-self.Ho // m), -(-self.Wo // m)
        padded = xp.zeros((C, N, self.th * m + 2, self.tw * m + 2), dtype=x.dtype)
        padded[:, :, ph:ph + H, pw:pw + W] = x.transpose(1, 0, 2, 3)
        tiles = xp.empty((n, n, C, N, self.th, self.tw), dtype=x.dtype)
        for i in range(n):  # n*n strided copies, as im2col's kh*kw
            for j in range(n):
                tiles[i, j] = padded[:, :, i:i + self.th * m:m, j:j + self.tw * m:m]
        P = N * self.th * self.tw  # not -1 below: C may be 0
        self.V = gemm(self.B2, tiles.reshape(Q, -1)).reshape(Q, C, P)  # input transform, (Q, C, P)
        self.U = gemm(self.G2, weight.reshape(O * C, 9).T).reshape(Q, O, C)  # filter transform
        M = gemm(self.U, self.V)  # Q GEMMs (O, C) @ (C, P)
        Y = gemm(self.A2, M.reshape(Q, -1)).reshape(m, m, O, N, self.th, self.tw)  # output transform
        y = Y.transpose(3, 2, 4, 0, 5, 1).reshape(N, O, self.th * m, self.tw * m)[:, :, :self.Ho, :self.Wo]
        y = xp.ascontiguousarray(y)
        if bias is not None:
            y += bias[None, :, None, None]
        self.x_shape = x.shape
        return y.astype(self.dtypes[0], copy=False)

    def backward(self, gy):
        xp = backend.get_array_module(gy)
        gy = gy.astype(self.A2.dtype, copy=False)
        N, O = gy.shape[:2]
        C, m, n, (ph, pw) = self.x_shape[1], self.m, self.m + 2, self.padding
        Q = n * n
        whole = xp.zeros((N, O, self.th * m, self.tw * m), dtype=gy.dtype)
        whole[:, :, :self.Ho, :self.Wo] = gy
        gY = whole.reshape(N, O, self.th, m, self.tw, m).transpose(3, 5, 1, 0, 2, 4).reshape(m * m, -1)
        gM = gemm(self.A2.T, gY).reshape(Q, O, -1)  # (Q, O, P)
        gx = gw = gb = None
        if self.needs_input_grad[1]:
            gU = gemm(gM, self.V.transpose(0, 2, 1))  # (Q, O, C)
            gw = gemm(self.G2.T, gU.reshape(Q, -1)).T.reshape(O, C, 3, 3)
        if self.needs_input_grad[0]:
            gV = gemm(self.U.transpose(0, 2, 1), gM)  # (Q, C, P)
            gtiles = gemm(self.B2.T, gV.reshape(Q, -1)).reshape(n, n, C, N, self.th, self.tw)
            padded = xp.zeros((C, N, self.th * m + 2, self.tw * m + 2), dtype=gy.dtype)
            for i in range(n):  # tiles overlap by 2: add each back where it was read (col2im's way)
                for j in range(n):
                    padded[:, :, i:i + self.th * m:m, j:j + self.tw * m:m] += gtiles[i, j]
            H, W = self.x_shape[2:]
            gx = xp.ascontiguousarray(padded[:, :, ph:ph + H, pw:pw + W].transpose(1, 0, 2, 3))
        if len(self.inputs) == 3 and self.needs_input_grad[2]:
            gb = sum_over(gy, (0, 2, 3))
        return tuple(None if g is None else g.astype(dtype, copy=False) for g, dtype in zip((gx, gw, gb), self.dtypes))


register_algorithm("winograd2", functools.partial(WinogradConv2d, 2), kernel=(3, 3))  # F(2x2, 3x3)
register_algorithm("winograd4", functools.partial(WinogradConv2d, 4), kernel=(3, 3))  # F(4x4, 3x3)
