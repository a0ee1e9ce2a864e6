"""The fast path's machine-tuned sizes, in one place, each with the reason for its value.

They were chosen on a 2-core CPU with NumPy 2 and OpenBLAS (the CI machine kind); the measurements behind
them are in ``docs/measurements/library-design-notes.md``. They change speed only, never results: the tests
run with other values (``monkeypatch`` on this module) and compare with the reference path. On another
machine, ``python -m dlscratch.bench conv`` and ``cnn`` show whether a different value pays. The allocator
thresholds that keep freed memory in the process are glibc's parameters and live with their switch, in
``dlscratch/memory.py``.
"""

# threads.py: a copy of fewer numbers than this stays on one thread. Handing a part to another thread costs
# tens of microseconds, so only copies of about a million numbers (4 MB of float32) and more gain from the split.
MIN_THREADED_NUMBERS = 2**20

# layout.py: the transposing copy into batch-last memory goes in tiles of TILE_IMAGES images by as many
# channels as make about TILE_NUMBERS numbers of one image. A tile's reads stay in cache while its writes,
# TILE_IMAGES numbers apart, fill whole cache lines.
TILE_IMAGES = 16
TILE_NUMBERS = 2048

# conv.py: col2im of the input gradient runs in bands of output rows whose slice of W.T @ gy has about this many
# numbers (4 MB of float32), so the slice is still in cache when col2im reads it.
BAND_NUMBERS = 2**20

# matmul.py: an outer product (a weight gradient at batch 1) goes to BLAS as a GEMM padded to inner dimension 2
# when it has at least PADDED_GEMM_MIN_ROWS rows of at most PADDED_GEMM_MAX_ROW numbers. Otherwise NumPy's
# broadcast multiply is as fast or faster: its fixed cost per output row matters only for many short rows.
PADDED_GEMM_MIN_ROWS = 128
PADDED_GEMM_MAX_ROW = 1024
