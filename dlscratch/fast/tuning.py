"""The fast path's machine-tuned sizes, in one place, each with the measurement behind it.

All were measured on a 2-core AMD EPYC with NumPy 2 and OpenBLAS (the CI machine kind). They
change speed only, never results: the tests run with other values (``monkeypatch`` on this
module) and compare with the reference path. On another machine, ``python -m dlscratch.bench conv``
and ``cnn`` show whether a different value pays. The allocator thresholds that keep freed memory
in the process are glibc's parameters and live with their switch, in ``dlscratch/memory.py``.
"""

# threads.py: a copy of fewer numbers than this stays on one thread. Handing a part to another
# thread costs tens of microseconds; at a million numbers (4 MB of float32) the split starts to
# pay (im2col of conv 32 -> 64 at batch 128, 115 MB: 12.4 -> 8.4 ms on two threads). Measured
# again with freed memory kept (``memory.py``), the split no longer shows in whole steps here:
# conv 32 -> 64 forward+backward at batch 128 74.6-76.5 ms threaded against 75.0-75.8 ms on one
# thread, the Keras CNN step 76.6-77.5 against 75.0-76.2 ms (four rounds each). With one core
# held by another process both settings swing between about 140 and 250 ms from round to round,
# as PyTorch does (107-188 ms): BLAS's own threads wait on the busy core, copy threads or not.
MIN_THREADED_NUMBERS = 2**20

# layout.py: the transposing copy into batch-last memory goes in tiles of TILE_IMAGES images by
# as many channels as make about TILE_NUMBERS numbers of one image. A tile's reads stay in cache
# while its writes, TILE_IMAGES numbers apart, fill whole cache lines (a 25 MB gradient at batch
# 128: 12 ms in tiles, 29 ms copying all channels at once).
TILE_IMAGES = 16
TILE_NUMBERS = 2048

# conv.py: col2im of the input gradient runs in bands of output rows whose slice of W.T @ gy has
# about this many numbers (4 MB of float32), so the slice is still in cache when col2im reads it;
# about a fifth off that step for conv 32 -> 64 at batch 128, against one product as large as cols.
BAND_NUMBERS = 2**20

# matmul.py: an outer product (a weight gradient at batch 1) goes to BLAS as a GEMM padded to
# inner dimension 2 when it has at least PADDED_GEMM_MIN_ROWS rows of at most PADDED_GEMM_MAX_ROW
# numbers; otherwise NumPy's broadcast multiply is as fast or faster. Measured (broadcast against
# padded GEMM): 512 x 1024 107 -> 53 us, 128 x 1024 24 -> 18 us, 128 x 256 6.2 -> 6.2 us,
# 32 x 256 2.3 -> 3.0 us, 512 x 4096 89 -> 158 us.
PADDED_GEMM_MIN_ROWS = 128
PADDED_GEMM_MAX_ROW = 1024
