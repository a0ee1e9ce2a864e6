"""The fast path's machine-tuned sizes, each with the reason for its value.

Tuned on a 2-core CPU with NumPy 2 and OpenBLAS (docs/measurements/library-design-notes.md). They change speed,
never results: the tests run other values and compare with the reference path. ``python -m dlscratch.bench conv``
and ``cnn`` show whether another value pays on another machine.
"""

# threads.py: smaller copies stay on one thread; handing a part to another costs tens of microseconds.
MIN_THREADED_NUMBERS = 2**20

# layout.py: the batch-last copy goes in tiles of TILE_IMAGES images by about TILE_NUMBERS numbers of one image,
# so a tile's reads stay in cache while its writes fill whole cache lines.
TILE_IMAGES = 16
TILE_NUMBERS = 2048

# conv.py: col2im runs in bands whose slice of W.T @ gy (about 4 MB) is still in cache when col2im reads it.
BAND_NUMBERS = 2**20

# matmul.py: an outer product of at least PADDED_GEMM_MIN_ROWS rows of at most PADDED_GEMM_MAX_ROW numbers goes to
# BLAS as a GEMM padded to inner dimension 2; otherwise NumPy's broadcast multiply is as fast or faster.
PADDED_GEMM_MIN_ROWS = 128
PADDED_GEMM_MAX_ROW = 1024
