"""``dlscratch.cuda.blas.matmul``: CuPy's cuBLAS call made by dlscratch, so that a CUDA graph captures products.

Checked on the strict stand-in, whose cuBLAS (``bench/strict_cupy/cublas.py``) reads and writes the memory the
pointers name in column-major order: a product through it equals CuPy's ``matmul`` bit for bit only when the call
(operands' order, transposes, leading dimensions, strides) is the one CuPy makes. On a GPU,
``python -m dlscratch.bench graphs`` checks the same against the real cuBLAS."""

import ctypes
import itertools

import numpy as np
import pytest

import dlscratch
from dlscratch import backend
from dlscratch.cuda import blas

DTYPES = (np.float16, np.float32, np.float64, np.complex64, np.complex128)  # complex: the FFT convolution's
SHAPES = ((3, 4, 5), (1, 7, 9), (9, 7, 1), (64, 200, 17), (2, 1, 3))  # (M, K, N); (64, 200, 17) splits K on a GPU

#: name -> (left's shape, right's shape): the products past a 2-D matrix by a 2-D matrix or one batch shape
FORMS = {"batch @ matrix": ((2, 3, 4), (4, 5)), "matrix @ batch": ((3, 4), (2, 4, 5)),
         "batches broadcast both ways": ((2, 1, 3, 4), (5, 4, 6)), "a batch of one @ matrix": ((1, 3, 4), (4, 5)),
         "vector @ matrix": ((4,), (4, 5)), "matrix @ vector": ((3, 4), (4,)), "batch @ vector": ((2, 3, 4), (4,)),
         "vector @ batch": ((4,), (2, 4, 5)), "batch of one row @ batch of one column": ((3, 1, 7), (3, 7, 1))}


def drawn(rng, shape, dtype):
    """Standard normal numbers of ``dtype``; a complex one's imaginary parts drawn too."""
    numbers = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        numbers = numbers + 1j * rng.standard_normal(shape)
    return numbers.astype(dtype)


def layouts(cupy, rng, rows, cols, dtype):
    """The matrix ``rows x cols`` C-contiguous, transposed (F-contiguous) and strided (neither)."""
    def draw(shape):
        return cupy.asarray(drawn(rng, shape, dtype))
    return {"C": draw((rows, cols)), "F": draw((cols, rows)).T, "strided": draw((rows, 2 * cols))[:, ::2]}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_2d_product_is_cupys_bit_for_bit_in_every_layout(stand_in, dtype, shape):
    cupy, rng = stand_in, np.random.default_rng(sum(shape))
    m, k, n = shape
    lefts, rights = layouts(cupy, rng, m, k, dtype), layouts(cupy, rng, k, n, dtype)
    for (left, a), (right, b) in itertools.product(lefts.items(), rights.items()):
        got, expected = blas.matmul(a, b).get(), cupy.matmul(a, b).get()
        assert got.dtype == expected.dtype == dtype and got.shape == (m, n), (left, right)
        assert np.array_equal(got, expected), (left, right)


@pytest.mark.parametrize("dtypes", [(np.float32, np.float16), (np.float16, np.float32), (np.float64, np.float32),
                                    (np.complex64, np.float32), (np.float64, np.complex64)])
def test_a_product_of_two_dtypes_casts_as_cupy_does(stand_in, dtypes):
    """An autocast backward multiplies float32 gradients by float16 weights: CuPy casts to the wider dtype, in the
    operand's own memory order, before its GEMM."""
    cupy, rng = stand_in, np.random.default_rng(5)
    lefts, rights = layouts(cupy, rng, 6, 20, dtypes[0]), layouts(cupy, rng, 20, 3, dtypes[1])
    for (left, a), (right, b) in itertools.product(lefts.items(), rights.items()):
        got, expected = blas.matmul(a, b).get(), cupy.matmul(a, b).get()
        assert got.dtype == expected.dtype == np.promote_types(*dtypes) and np.array_equal(got, expected), (left, right)
    for shape_a, shape_b in [((2, 6, 20), (2, 20, 3))] + list(FORMS.values()):
        a, b = cupy.asarray(drawn(rng, shape_a, dtypes[0])), cupy.asarray(drawn(rng, shape_b, dtypes[1]))
        assert np.array_equal(blas.matmul(a, b).get(), cupy.matmul(a, b).get()), (shape_a, shape_b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_batched_product_is_cupys_bit_for_bit_also_into_out(stand_in, dtype):
    cupy, rng = stand_in, np.random.default_rng(1)
    a, b = cupy.asarray(drawn(rng, (2, 3, 6, 5), dtype)), cupy.asarray(drawn(rng, (2, 3, 5, 4), dtype))
    expected = cupy.matmul(a, b).get()
    assert np.array_equal(blas.matmul(a, b).get(), expected)
    transposed = b.transpose(0, 1, 3, 2).copy().transpose(0, 1, 3, 2)  # the same numbers, not C-contiguous
    assert np.array_equal(blas.matmul(a, transposed).get(), expected)
    out = cupy.empty((2, 3, 6, 4), dtype)
    assert blas.matmul(a, b, out) is out and np.array_equal(out.get(), expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_product_into_out_even_one_sharing_an_operands_memory_is_cupys(stand_in, dtype):
    cupy, rng = stand_in, np.random.default_rng(2)
    a, b = cupy.asarray(drawn(rng, (4, 4), dtype)), cupy.asarray(drawn(rng, (4, 4), dtype))
    expected = cupy.matmul(a, b).get()
    row = cupy.empty((3, 4, 4), dtype)[1]
    assert blas.matmul(a, b, row) is row and np.array_equal(row.get(), expected)
    assert blas.matmul(a, b, a) is a and np.array_equal(a.get(), expected)  # read before it is written


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", FORMS)
def test_broadcast_and_vector_products_are_cupys_bit_for_bit_eager_into_out_and_replayed(stand_in, dtype, form):
    """CuPy makes a broadcast batch with a batched GEMM on arrays of the matrices' addresses, which blas.py
    computes on the device; a vector as a one-row or one-column matrix."""
    cupy, rng = stand_in, np.random.default_rng(6)
    shape_a, shape_b = FORMS[form]
    a = cupy.asarray(drawn(rng, (2,) + shape_a, dtype))[1]  # not where its memory starts
    b = cupy.asarray(drawn(rng, shape_b[:-1] + (2 * shape_b[-1],), dtype))[..., ::2]  # strided
    expected = cupy.matmul(a, b).get()
    assert np.array_equal(blas.matmul(a, b).get(), expected)
    out = cupy.empty(expected.shape, dtype)
    assert blas.matmul(a, b, out) is out and np.array_equal(out.get(), expected)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        captured = blas.matmul(a, b)
        graph = stream.end_capture()
    a *= 2
    graph.launch()
    assert np.array_equal(captured.get(), cupy.matmul(a, b).get())


@pytest.mark.parametrize("case", ["integers", "(1, k) @ (k, 1)", "vector @ vector", "k = 0"])
def test_a_product_it_does_not_make_goes_to_cupys_matmul(stand_in, case):
    """CuPy makes these without cuBLAS, and so captures them itself."""
    cupy, rng = stand_in, np.random.default_rng(3)
    draw = {"float32": lambda *s: cupy.asarray(rng.standard_normal(s).astype(np.float32)),
            "int32": lambda *s: cupy.asarray(rng.integers(-9, 9, s).astype(np.int32))}
    a, b = {"integers": (draw["int32"](3, 4), draw["int32"](4, 5)),
            "(1, k) @ (k, 1)": (draw["float32"](1, 4), draw["float32"](4, 1)),
            "vector @ vector": (draw["float32"](4), draw["float32"](4)),
            "k = 0": (draw["float32"](3, 0), draw["float32"](0, 5))}[case]
    assert np.array_equal(blas.matmul(a, b).get(), cupy.matmul(a, b).get())
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            blas.matmul(a, b)
        finally:
            stream.end_capture()


def test_cupys_own_matmul_is_still_refused_inside_a_capture(stand_in):
    cupy = stand_in
    a = cupy.ones((2, 3, 4), dtype=np.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            with pytest.raises(NotImplementedError, match="calling cuBLAS API during stream capture"):
                cupy.matmul(a, a[0].T)
        finally:
            stream.end_capture()


def test_captured_products_replay_what_the_eager_products_give(stand_in):
    cupy, rng = stand_in, np.random.default_rng(4)
    a = cupy.asarray(rng.standard_normal((6, 5)).astype(np.float32))
    w = cupy.asarray(rng.standard_normal((7, 5)).astype(np.float32))
    batch = cupy.asarray(rng.standard_normal((3, 6, 5)).astype(np.float16))
    batch_w = cupy.asarray(rng.standard_normal((3, 5, 2)).astype(np.float16))
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        y, z = blas.matmul(a, w.T), blas.matmul(batch, batch_w)
        graph = stream.end_capture()
    for seed in range(3):
        a[...] = cupy.asarray(np.random.default_rng(seed).standard_normal((6, 5)).astype(np.float32))
        batch *= 2
        graph.launch()
        assert np.array_equal(y.get(), cupy.matmul(a, w.T).get())
        assert np.array_equal(z.get(), cupy.matmul(batch, batch_w).get())


def test_the_stand_ins_cublas_counts_the_kernels_cupys_gemm_launches(stand_in):
    cupy = stand_in
    a, b = cupy.ones((64, 200), dtype=np.float32), cupy.ones((200, 17), dtype=np.float32)
    with backend.ledger() as theirs:
        cupy.matmul(a, b)
    with backend.ledger() as ours:
        blas.matmul(a, b)
    assert ours.launches == theirs.launches == 2  # the GEMM and cuBLAS's split-K reduction
    assert ours.total("allocation") == theirs.total("allocation") == 1  # the output


def test_the_stand_ins_cublas_refuses_what_cublas_and_the_gpu_refuse(stand_in):
    """A leading dimension shorter than a column, memory outside every array (a kernel's fault on a GPU), a call
    unlike its C prototype; and what the stand-in does not compute, by name."""
    library, cupy = backend.cublas_library(), stand_in
    a = cupy.ones((4, 4), dtype=np.float32)
    one, zero = ctypes.c_float(1), ctypes.c_float(0)
    p = a.data.ptr

    def gemm(lda=4, pointer=p, m=4, alpha=one):
        return library.cublasGemmEx(1, blas.OP_N, blas.OP_N, m, 4, 4, ctypes.addressof(alpha), pointer, 0, lda, p,
                                    0, 4, ctypes.addressof(zero), p, 0, 4, blas.COMPUTE_32F, blas.GEMM_DEFAULT)

    assert gemm() == 0
    assert gemm(lda=3) == 7  # CUBLAS_STATUS_INVALID_VALUE
    with pytest.raises(cupy.cuda.runtime.CUDARuntimeError, match="^cudaErrorIllegalAddress"):
        gemm(pointer=p + 4)  # the last column would run past the array
    with pytest.raises(TypeError, match="not a C c_int"):
        gemm(m=2 ** 31)
    with pytest.raises(NotImplementedError, match="alpha 1, beta 0"):
        gemm(alpha=ctypes.c_float(2))
    with pytest.raises(blas.CublasError, match="^CUBLAS_STATUS_INVALID_VALUE"):
        blas._check(gemm(lda=3))


def test_the_stand_ins_batched_gemm_reads_the_addresses_on_the_device_and_refuses_as_cublas(stand_in):
    """``cublasSgemmBatched`` takes device arrays of matrix addresses: a wrong address is a kernel's fault on a GPU,
    and an address array that is no array's too."""
    library, cupy = backend.cublas_library(), stand_in
    a, c = cupy.ones((2, 4, 4), dtype=np.float32), cupy.zeros((2, 4, 4), dtype=np.float32)
    one, zero = ctypes.c_float(1), ctypes.c_float(0)
    good = cupy.asarray(np.array([a.data.ptr, a.data.ptr + 64], np.uint64))
    into = cupy.asarray(np.array([c.data.ptr, c.data.ptr + 64], np.uint64))
    bad = cupy.asarray(np.array([a.data.ptr, a.data.ptr + 68], np.uint64))  # the second runs past the array

    def batched(addresses=good, lda=4, alpha=one, count=2):
        return library.cublasSgemmBatched(1, blas.OP_N, blas.OP_N, 4, 4, 4, ctypes.addressof(alpha),
                                          addresses.data.ptr, lda, good.data.ptr, 4, ctypes.addressof(zero),
                                          into.data.ptr, 4, count)

    assert batched() == 0 and np.array_equal(c.get(), np.full((2, 4, 4), 4, np.float32))
    assert batched(lda=3) == 7  # CUBLAS_STATUS_INVALID_VALUE
    with pytest.raises(cupy.cuda.runtime.CUDARuntimeError, match="^cudaErrorIllegalAddress"):
        batched(addresses=bad)
    with pytest.raises(cupy.cuda.runtime.CUDARuntimeError, match="^cudaErrorIllegalAddress"):
        batched(count=3)  # the address arrays hold two
    with pytest.raises(NotImplementedError, match="alpha 1, beta 0"):
        batched(alpha=ctypes.c_float(2))


def test_the_stand_ins_cublas_finds_memory_whose_first_address_a_dead_array_had():
    """NumPy hands freed memory to new arrays: an entry left by a dead array at an address inside a live one must
    not hide the live one (a replay's GEMM was refused so, now and then, before this was seen)."""
    import weakref

    from dlscratch.bench.strict_cupy.cublas import _Memory

    memory, live = _Memory(), np.zeros(8, np.float32)
    memory.note(live)
    start = live.__array_interface__["data"][0]
    gone = np.zeros(2, np.float32)
    dead = weakref.ref(gone)
    del gone
    memory._blocks[start + 8] = (start + 16, dead)  # as if a 2-float array had lived there
    assert memory.owner(start + 8, start + 16) is live
    assert memory.owner(start + 8, start + 40) is None  # past the live array's end


def test_a_gemm_on_another_stream_than_the_capturing_one_is_refused(stand_in):
    cupy = stand_in
    a = cupy.ones((4, 4), dtype=np.float32)
    library, one, zero = backend.cublas_library(), ctypes.c_float(1), ctypes.c_float(0)
    library.cublasSetStream_v2(1, 0)  # the legacy default stream
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            with pytest.raises(NotImplementedError, match="^a GEMM on another stream than the capturing one"):
                library.cublasGemmEx(1, 0, 0, 4, 4, 4, ctypes.addressof(one), a.data.ptr, 0, 4, a.data.ptr, 0, 4,
                                     ctypes.addressof(zero), a.data.ptr, 0, 4, blas.COMPUTE_32F, blas.GEMM_DEFAULT)
        finally:
            stream.end_capture()


def test_a_linear_layer_captures_and_replays_its_eager_output(stand_in):
    layer = dlscratch.nn.Linear(5, 3).to("gpu")
    x = dlscratch.tensor(np.ones((2, 5), np.float32)).to("gpu")
    eager = layer(x).detach().to("cpu").numpy()
    graph = dlscratch.cuda.CUDAGraph()
    with dlscratch.cuda.graph(graph):
        y = layer(x)
    with backend.ledger() as book:
        graph.replay()
    assert np.array_equal(y.detach().to("cpu").numpy(), eager) and book.graphs == 1


def test_the_prototypes_declared_are_cublas_headers_as_the_stand_in_reads_them():
    """``blas.PROTOTYPES`` is what ``ctypes`` passes; the stand-in's ``HEADER`` is cublas_api.h's text (checked
    against the headers of cuBLAS 12.9 and 13.10, from NVIDIA's pip packages)."""
    from dlscratch.bench.strict_cupy import cublas

    assert blas.PROTOTYPES.keys() == cublas.HEADER.keys()
    for name, argtypes in blas.PROTOTYPES.items():
        assert argtypes == cublas.prototype(name), name


def test_there_is_no_cublas_without_a_gpu(monkeypatch):
    monkeypatch.setattr(backend, "gpu_available", lambda: False)
    assert backend.cublas_library() is None
