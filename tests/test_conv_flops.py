"""The FLOP counts of the convolution methods (dlscratch/bench/conv_flops.py): im2col's is the GEMM's, Winograd's
multiplications fall by 9 m^2 / (m + 2)^2 against im2col's, FFT's count depends on channels and kernel size."""

import pytest

from dlscratch.bench.conv_flops import conv_flops


def test_im2col_counts_the_gemm():
    assert conv_flops("im2col", (2, 3, 8, 8), (4, 3, 3, 3), (1, 1)) == 2 * 2 * 4 * 3 * 9 * 8 * 8


@pytest.mark.parametrize("m, fewer", [(2, 2.25), (4, 4.0)])
def test_winograd_multiplies_fewer_times_by_the_known_factor(m, fewer):
    x, w = (32, 64, 56, 56), (64, 64, 3, 3)
    gemm_only = 2 * (m + 2) ** 2 * 64 * 64 * 32 * (56 // m) ** 2
    assert conv_flops("im2col", x, w, (1, 1)) / gemm_only == pytest.approx(fewer)
    assert gemm_only < conv_flops("winograd", x, w, (1, 1), m=m) < 2 * gemm_only  # with the transforms


@pytest.mark.parametrize("m", [2, 4])
def test_winograd_counts_the_products_winograd_conv2d_computes(m):
    """Each transform is one product with a Kronecker matrix: (n^2, n^2) on the tiles, (n^2, 9) on the filters,
    (m^2, n^2) on the outputs; here 2 x 3 x 8 x 8 inputs, 5 filters, padding 1."""
    n, tiles = m + 2, 2 * (8 // m) ** 2
    gemms = 2 * n * n * 5 * 3 * tiles
    inputs, filters, outputs = 2 * n ** 4 * 3 * tiles, 2 * n * n * 9 * 5 * 3, 2 * m * m * n * n * 5 * tiles
    assert conv_flops("winograd", (2, 3, 8, 8), (5, 3, 3, 3), (1, 1), m=m) == gemms + inputs + filters + outputs


def test_fft_loses_with_one_channel_and_wins_with_many_or_with_large_kernels():
    """Each transform serves every pairing of channels, so many channels amortise it; its cost does not grow
    with the kernel's area."""
    def ratio(x, w, padding):
        return conv_flops("fft", x, w, padding) / conv_flops("im2col", x, w, padding)

    assert ratio((8, 1, 32, 32), (1, 1, 3, 3), (1, 1)) > 2
    assert ratio((8, 16, 32, 32), (16, 16, 3, 3), (1, 1)) < 1
    assert ratio((8, 16, 64, 64), (16, 16, 15, 15), (7, 7)) < 0.1


def test_bad_methods_and_kernels_are_refused():
    with pytest.raises(ValueError, match="must be 'im2col', 'winograd' or 'fft'"):
        conv_flops("direct", (1, 1, 4, 4), (1, 1, 3, 3))
    with pytest.raises(ValueError, match="winograd is for 3 x 3 kernels"):
        conv_flops("winograd", (1, 1, 6, 6), (1, 1, 5, 5))
