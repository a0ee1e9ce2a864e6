"""Floating-point operations of one convolution forward, per method (a multiply and an add count two).

    x: (N, C, H, W), weight: (O, C, kh, kw), stride 1, padding (ph, pw), output (N, O, Ho, Wo)

- ``im2col``: the GEMM, ``2 N O C kh kw Ho Wo``; the copies do no arithmetic.
- ``winograd`` F(m x m, 3 x 3), ``n = m + 2``, ``T = N ceil(Ho/m) ceil(Wo/m)`` tiles: the ``n^2`` GEMMs,
  ``2 n^2 O C T``, plus the transforms as ``WinogradConv2d`` computes them, each one product with a Kronecker
  matrix: input ``kron(BT, BT)`` (n^2, n^2), ``2 n^4`` per tile and channel; filter ``kron(G, G)`` (n^2, 9),
  ``2 * 9 n^2`` per filter; output ``kron(AT, AT)`` (m^2, n^2), ``2 m^2 n^2`` per tile and output channel.
  Nested (``BT @ d @ BT.T``, ``2 * 2 n^3``) the input transform would cost ``n / 2`` times less, and whole-number
  entries need no multiplication at all: this counts the arithmetic the library does, not the least possible.
- ``fft`` on the padded ``Hp x Wp`` grid: a real 2-D transform taken as ``2.5 Hp Wp log2(Hp Wp)`` (half of
  the complex ``5 n log2 n``), one per input image and channel, per filter, and one inverse per output image
  and channel; and the products, ``8 N O C Hp (Wp // 2 + 1)`` (a complex multiply and add is eight). Each
  transform serves every pairing of channels, so with many channels FFT counts fewer operations than im2col
  even at 3 x 3; whether the time follows (complex arrays, memory traffic) is what lesson 12 measures.
"""

import math


def conv_flops(method, x_shape, w_shape, padding=(0, 0), m=2):
    """The floating-point operations of ``method`` ("im2col", "winograd" with tile ``m``, "fft")."""
    (N, C, H, W), (O, _, kh, kw), (ph, pw) = x_shape, w_shape, padding
    Hp, Wp = H + 2 * ph, W + 2 * pw
    Ho, Wo = Hp - kh + 1, Wp - kw + 1
    if method == "im2col":
        return 2 * N * O * C * kh * kw * Ho * Wo
    if method == "winograd":
        if (kh, kw) != (3, 3):
            raise ValueError(f"conv_flops: winograd is for 3 x 3 kernels, got {kh} x {kw}")
        n = m + 2
        tiles = N * math.ceil(Ho / m) * math.ceil(Wo / m)
        gemms = 2 * n * n * O * C * tiles
        transforms = 2 * n ** 4 * C * tiles + 2 * 9 * n * n * O * C + 2 * m * m * n * n * O * tiles
        return gemms + transforms
    if method == "fft":
        transform = 2.5 * Hp * Wp * math.log2(Hp * Wp)
        return round(transform * (N * C + O * C + N * O) + 8 * N * O * C * Hp * (Wp // 2 + 1))
    raise ValueError(f"conv_flops: method must be 'im2col', 'winograd' or 'fft', got {method!r}")
