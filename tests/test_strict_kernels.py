"""The strict CuPy stand-in runs ElementwiseKernels by translating their C (dlscratch/bench/strict_cupy/kernels.py): C's
arithmetic, the faults a GPU would not report, and every kernel of dlscratch/fast/ against the reference path."""


import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as B
from dlscratch.bench import strict_cupy as sc
from dlscratch.bench.strict_cupy import kernels as sk
from dlscratch.bench.strict_cupy import nvrtc as strict_nvrtc
from dlscratch.fast import conv_kernels
from dlscratch.fast.im2col import col2im_array, im2col_array
from dlscratch.fast.lstm import lstm_pointwise_backward, lstm_pointwise_forward
from dlscratch.operations.im2col import col2im_array as reference_col2im_array
from dlscratch.operations.im2col import im2col_array as reference_im2col_array


@pytest.fixture(autouse=True)
def the_stand_in_on_its_own(monkeypatch):
    """These tests are of the stand-in's own reading of C: without NVRTC's verdict first, wherever it is installed
    (``with_nvrtc`` turns it back on; tests/test_strict_nvrtc.py tests the compile check)."""
    monkeypatch.setenv("DLSCRATCH_NVRTC", "0")


@pytest.fixture
def with_nvrtc(monkeypatch, request):
    monkeypatch.delenv("DLSCRATCH_NVRTC")
    return request.getfixturevalue("nvrtc")  # conftest.py: skipped where NVRTC is missing


def run(body, *args, params="T x", out="T y", preamble="", **kwargs):
    """``body`` as a kernel over ``args`` (NumPy arrays are moved to the stand-in); the result on the host."""
    kernel = sc.ElementwiseKernel(params, out, body, "test_kernel", preamble=preamble)
    moved = [sc.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    result = kernel(*moved, **kwargs)
    return [r.get() for r in result] if isinstance(result, tuple) else result.get()


# ----- C's arithmetic -----
def test_integer_division_and_modulo_round_towards_zero_as_in_c():
    a = np.array([7, -7, 7, -7, 6, 0], np.int32)
    b = np.array([2, 2, -2, -2, 3, 5], np.int32)
    assert run("q = a / b", a, b, params="int32 a, int32 b", out="int32 q").tolist() == [3, -3, -3, 3, 2, 0]
    assert run("r = a % b", a, b, params="int32 a, int32 b", out="int32 r").tolist() == [1, -1, 1, -1, 0, 0]


def test_float_arithmetic_rounds_to_float32_after_every_operation():
    big = np.array([16777216.0], np.float32)  # 2**24: adding 1 in float32 changes nothing
    assert run("y = x + 1.0f - x", big)[0] == 0.0
    assert run("y = (T)((double)x + 1.0 - (double)x)", big)[0] == 1.0  # in double it survives
    tenth = np.array([3.0], np.float32)
    # float * double literal computes in double, then rounds once on assignment
    assert run("y = x * 0.1", tenth)[0] == np.float32(3.0 * 0.1)
    assert run("y = x * 0.1f", tenth)[0] == np.float32(3.0) * np.float32(0.1)


def test_integers_mix_with_floats_by_the_usual_arithmetic_conversions():
    x = np.array([1.5, -2.5], np.float32)
    assert run("y = 1 - x", x).tolist() == [-0.5, 3.5]
    assert run("y = (int)x", x, out="int32 y").tolist() == [1, -2]  # a cast truncates towards zero
    assert run("int k = x; y = k / 2", x).tolist() == [0.0, -1.0]  # integer division, then to float
    assert run("y = x / 2", x).tolist() == [0.75, -1.25]


def test_float16_keeps_its_own_arithmetic_and_meets_integers_in_float():
    # float16 with float16 rounds to float16 (2048 + 1 is 2048 there); with an int it computes in float
    x = np.array([2048.0], np.float16)
    assert run("y = x + x", x)[0] == 4096.0
    assert run("y = x + (T)1 - x", x)[0] == 0.0
    assert run("float z = x + 1; y = z - x", x, out="float32 y")[0] == 1.0
    half = np.array([1.5, -2.5], np.float16)
    assert run("y = 1 - x", half).dtype == np.float16
    assert run("y = 1 - x", half).tolist() == [-0.5, 3.5]


def test_control_flow_loops_and_local_arrays():
    x = np.arange(6, dtype=np.int32)
    body = """
    int total = 0;
    for (int k = 0; k < x; ++k) {
        if (k % 2 == 0) continue;
        if (k > 3) break;
        total += k;
    }
    int steps = 0;
    while (steps * steps < x) steps++;
    const ptrdiff_t pair[] = {x, total};
    y = x > 2 ? pair[1] * 100 + steps : -pair[0];
    """
    # the odd k below x, stopping past 3: x=3 -> 1, x=4 -> 1+3, x=5 -> 1+3
    expected = [0, -1, -2, 1 * 100 + 2, 4 * 100 + 2, 4 * 100 + 3]
    assert run(body, x, params="int32 x", out="int32 y").tolist() == expected


def test_short_circuit_keeps_a_thread_from_reading_out_of_bounds():
    table = np.array([10.0, 20.0], np.float32)
    k = np.array([0, 1, 2, 5], np.int64)
    body = "y = (k < 2 && table[k] > 15) ? 1 : 0"
    assert run(body, table, k, params="raw T table, int64 k", out="int32 y").tolist() == [0, 1, 0, 0]


def test_math_functions_helpers_and_templates():
    x = np.linspace(-3, 3, 13).astype(np.float32)
    preamble = """
    template <typename T> __device__ T sigmoid(T v) {
        const T half = 0.5;
        return tanh(v * half) * half + half;
    }
    __device__ float clip(float v, float low, float high) {
        if (v < low) return low;
        return fminf(v, high);
    }
    """
    y = run("y = sigmoid(x) + clip(x, -1, 1) + exp(x) * 0 + fabs(x)", x, preamble=preamble)
    expected = 1 / (1 + np.exp(-x.astype(np.float64))) + np.clip(x, -1, 1) + np.abs(x)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)
    assert y.dtype == np.float32


def test_plain_arguments_broadcast_scalars_are_shared_and_outputs_are_allocated():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    row = np.array([10, 20, 30], np.float32)
    kernel = sc.ElementwiseKernel("T x, T row, float32 scale", "T y, int64 index", "y = (x + row) * scale; index = i",
                                  "broadcast")
    y, index = kernel(sc.asarray(x), sc.asarray(row), 2)
    np.testing.assert_array_equal(y.get(), (x + row) * 2)
    assert index.get().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert run("y = _ind.size()", params="", size=4, out="int64 y").tolist() == [4] * 4


def test_outputs_are_references_and_non_contiguous_outputs_are_written_in_place():
    z = np.arange(8, dtype=np.float32).reshape(2, 4)
    gz = sc.asarray(z)
    kernel = sc.ElementwiseKernel("T add", "T a, T b", "a = a + add; b = a * 2", "in_place")
    kernel(1, gz[:, :2], gz[:, 2:])  # two strided views of one array
    assert gz.get().tolist() == [[1, 2, 2 * 1, 2 * 2], [5, 6, 2 * 5, 2 * 6]]


def test_a_large_launch_runs_its_c_body_on_a_sample_checked_against_its_twin(monkeypatch):
    monkeypatch.setattr(sk, "FULL_RUN_THREADS", 1000)
    monkeypatch.setattr(sk, "_SAMPLE_ENDS", 10)
    monkeypatch.setattr(sk, "_SAMPLE_SPREAD", 50)
    x = sc.asarray(np.arange(5000, dtype=np.float32))

    def twin(x, y):
        y[...] = x * 2

    doubled = sc.ElementwiseKernel("T x", "T y", "y = x * 2", "twice", twin=twin)(x)
    assert doubled.get().tolist() == (np.arange(5000) * 2).tolist()
    off = sc.ElementwiseKernel("T x", "T y", "y = i % 100 == 7 ? 0 : x * 2", "planted", twin=twin)
    with pytest.raises(sk.KernelFault, match=r"'planted': thread i=7 computes y = 0.0 in C, its NumPy twin 14.0"):
        off(x)


def test_a_repeated_large_launch_checks_its_c_body_the_first_times_and_then_every_so_often(monkeypatch):
    monkeypatch.setattr(sk, "FULL_RUN_THREADS", 1000)
    monkeypatch.setattr(sk, "CHECKED_LAUNCHES", 2)
    monkeypatch.setattr(sk, "RECHECK_EVERY", 5)
    x = sc.asarray(np.arange(5000, dtype=np.float32))

    def twin(x, flag, y):
        y[...] = x * 2

    # wrong in C only when the flag is 1: the C body runs exactly when a launch raises
    off = sc.ElementwiseKernel("T x, int32 flag", "T y", "y = flag == 1 && i == 7 ? 0 : x * 2", "sometimes", twin=twin)
    checked = []
    for launch in range(1, 12):
        try:
            off(x, 1)
        except sk.KernelFault:
            checked.append(launch)
    assert checked == [1, 2, 5, 10]  # the first two, then every fifth of this kind
    with pytest.raises(sk.KernelFault, match="'sometimes'"):
        off(x[:4000], 1)  # another shape: a new kind, checked at once
    assert off(x, 0).get().tolist() == (np.arange(5000) * 2).tolist()  # unchecked launches run the twin


# ----- what a GPU would not report -----
@pytest.mark.parametrize("body, params, message", [
    ("y = table[k + 1]", "raw T table, int64 k", r"thread i=2 reads or writes table\[3\], outside the array"),
    ("const ptrdiff_t at[] = {k, 2}; y = grid[at]", "raw T grid, int64 k",
     r"thread i=0 reads or writes grid\[\{0, 2\}\], outside the array \(shape \(3, 2\)\)"),
    ("y = k / (k - 1)", "raw T table, int64 k", r"thread i=1 divides an integer by zero"),
])
def test_faults_name_the_kernel_the_thread_and_the_place(body, params, message):
    table = np.zeros(3, np.float32).reshape(3, 1) if "grid" not in params else np.zeros((3, 2), np.float32)
    with pytest.raises(sk.KernelFault, match=message):
        run(body, table.reshape(-1) if "table" in params else table, np.arange(3), params=params)


def test_two_threads_writing_one_element_is_a_race_and_atomic_add_is_not():
    k = sc.asarray(np.array([0, 1, 1, 2], np.int64))
    out = sc.zeros(3, dtype=np.float32)
    racing = sc.ElementwiseKernel("int64 k", "raw float32 out", "out[k] = i", "racing")
    with pytest.raises(sk.KernelFault, match="two threads write different values to out element 1"):
        racing(k, out)
    sc.ElementwiseKernel("int64 k", "raw float32 out", "atomicAdd(&out[k], 1.0f)", "counting")(k, out)
    assert out.get().tolist() == [1, 2, 1]


@pytest.mark.parametrize("body, named", [
    ("#define TWICE(v) (2 * v)\ny = x", "preprocessor directives"),
    ("switch (i) { default: y = x; }", "'switch' is not in the C subset"),
    ("__syncthreads(); y = x", "'__syncthreads' is not in the C subset"),
    ("y = printf(x)", "'printf' is not in the C subset"),
    ("y = x.real", r"'\.' \(members\)"),
    ("y = sinpi(x)", "the function 'sinpi'"),
    ("y = x, x", "expected ';'"),
    ("x = 1; y = x", "assigning to 'x', which is const"),
    ("y = undeclared", "'undeclared' is not declared"),
])
def test_code_outside_the_subset_is_refused_by_name(body, named):
    with pytest.raises(sk.UnsupportedKernelCode, match=named):
        run(body, np.zeros(2, np.float32))


H = np.array([1.5, -2.0], np.float16)
I64, I32 = np.array([3, -4], np.int64), np.array([1, 2], np.int32)


AMBIGUOUS = pytest.mark.parametrize("body, params, args, message", [
    # fast/optim_kernels.py's momentum line before issue 38, which NVRTC rejected for float16
    ("y = x > 0 ? x : x * d", "T x, float32 d", (H, np.float32(0.5)),
     r'ambiguous "\?" operation: its branches are float16 and float32'),
    ("y = x > 0 ? 0.5f : x", "T x", (H,), "its branches are float32 and float16"),
    ("y = x < 0 ? x : 0", "T x", (H,), "its branches are float16 and int32"),
    ("y = max(j, 0)", "int64 j", (I64,), r"max\(long long, int\): no CUDA overload"),
    ("y = min(k, j)", "int32 k, int64 j", (I32, I64), r"min\(int, long long\)"),
    # ptrdiff_t is long, an int64 argument long long: one width, two C types (found by NVRTC on 2026-11-27)
    ("y = max(j, (ptrdiff_t)0)", "int64 j", (I64,), r"max\(long long, long\)"),
    ("y = min(i, j)", "int64 j", (I64,), r"min\(long, long long\)"),
])
ACCEPTED = pytest.mark.parametrize("body, params, args, expected", [
    ("y = x > 0 ? x : T(x * d)", "T x, float32 d", (H, np.float32(0.5)), [1.5, -1.0]),
    ("y = x > 0 ? x : x", "T x", (H,), [1.5, -2.0]),
    ("y = max(j, (long long)0)", "int64 j", (I64,), [3, 0]),
    ("y = max(j + 1, 0ll)", "int64 j", (I64,), [4, 0]),
    ("y = max(i, (ptrdiff_t)1)", "int64 j", (I64,), [1, 1]),
    ("y = max(k, (unsigned int)1)", "int32 k", (I32,), [1, 2]),  # CUDA declares max(int, unsigned int)
    ("short s = 5; y = min(s, k)", "int32 k", (I32,), [1, 2]),  # short is promoted to int first
])


@AMBIGUOUS
def test_what_nvrtc_rejects_as_ambiguous_is_refused(body, params, args, message):
    with pytest.raises(sk.AmbiguousForCuda, match=message):
        run(body, *args, params=params, out="T y" if "T x" in params else "int64 y")


@AMBIGUOUS
def test_with_nvrtc_installed_its_own_message_refuses_them_first(with_nvrtc, body, params, args, message):
    with pytest.raises(strict_nvrtc.CudaCompileError, match=r'ambiguous "\?" operation|more than one instance'):
        run(body, *args, params=params, out="T y" if "T x" in params else "int64 y")


@ACCEPTED
def test_what_nvrtc_accepts_runs(body, params, args, expected):
    out = "T y" if "T x" in params else "int64 y"
    assert run(body, *args, params=params, out=out).tolist() == expected


@ACCEPTED
def test_what_nvrtc_accepts_compiles(with_nvrtc, body, params, args, expected):
    test_what_nvrtc_accepts_runs(body, params, args, expected)


def test_arguments_are_checked_as_cupy_checks_them():
    kernel = sc.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add")
    with pytest.raises(TypeError, match="type T is both float32 and float64"):
        kernel(sc.zeros(2, np.float32), sc.zeros(2, np.float64))
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        kernel(sc.zeros(2, np.float32), np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="do not broadcast"):
        kernel(sc.zeros(2, np.float32), sc.zeros(3, np.float32))
    with pytest.raises(ValueError, match="reserved by CuPy"):
        sc.ElementwiseKernel("T n", "T z", "z = n", "reserved")


# ----- the library's kernels against the reference path -----
CONV_CASES = [((2, 3, 7, 6), 3, 1, 1), ((4, 2, 9, 9), (3, 2), 2, (1, 0)), ((3, 1, 5, 5), 2, 2, 0),
              ((1, 2, 4, 4), 4, 1, 2), ((2, 1, 6, 5), (1, 3), (3, 1), (0, 2))]


@pytest.mark.parametrize("shape, k, s, p", CONV_CASES)
def test_im2col_and_col2im_kernels_equal_the_reference_path(stand_in, shape, k, s, p):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    expected = reference_im2col_array(x, k, s, p)
    got = im2col_array(B.to_gpu(x), k, s, p, method="kernel")
    assert np.array_equal(B.to_cpu(got), expected)  # index arithmetic: exact
    cols = np.random.default_rng(1).standard_normal(expected.shape).astype(np.float32)
    back = col2im_array(B.to_gpu(cols), shape, k, s, p, method="kernel")
    # sums of up to kh*kw numbers, possibly in another order: float32 round-off
    np.testing.assert_allclose(B.to_cpu(back), reference_col2im_array(cols, shape, k, s, p), rtol=1e-5, atol=1e-6)
    assert im2col_array(B.to_gpu(x), k, s, p).shape == expected.shape  # the stand-in's default is the kernel too


@pytest.mark.parametrize("peephole", [False, True])
def test_fused_lstm_kernels_equal_the_plain_path(stand_in, fast_path, peephole):
    xp = B.xp
    N, H = 5, 7
    rng = np.random.default_rng(12)
    z, c_prev, gh, gc = (xp.asarray((rng.standard_normal(s) * 3).astype(np.float32))
                         for s in ((N, 4 * H), (N, H), (N, H), (N, H)))
    peep = tuple(xp.asarray(rng.standard_normal(H).astype(np.float32)) for _ in range(3)) if peephole else None
    results = {}
    for fused in (False, True):
        gates = z.copy()
        h, c, tanh_c = lstm_pointwise_forward(gates, c_prev, peep, fused=fused)
        gz, gc_prev, _ = lstm_pointwise_backward(gates, c_prev, c, tanh_c, gh, gc, peep, fused=fused)
        results[fused] = [gates, h, c, tanh_c, gz, gc_prev]
    for plain, fused in zip(results[False], results[True]):
        np.testing.assert_allclose(B.to_cpu(fused), B.to_cpu(plain), rtol=sk.FLOAT_RTOL, atol=sk.FLOAT_ATOL)


def test_an_lstm_on_the_stand_in_runs_the_layer_kernels_and_equals_the_cpu(stand_in, fast_path):
    lstm = dlscratch.nn.LSTM(4, 6)
    x = dlscratch.randn(5, 3, 4)
    y_cpu, _ = lstm(x)
    y_cpu.sum().backward()
    grads_cpu = [p.grad.numpy() for p in lstm.parameters()]
    lstm.zero_grad()
    lstm.to("gpu")
    x_gpu = x.to("gpu")
    with B.ledger() as book:
        y_gpu, _ = lstm(x_gpu)
        y_gpu.sum().backward()
    launched = {what for _, category, what, _ in book.by_site("kernel")}
    assert {"ElementwiseKernel dlscratch_lstm_layer_forward",
            "ElementwiseKernel dlscratch_lstm_layer_backward"} <= launched
    # none in the time loop: h0 and c0 into the state arrays, and the zero initial state
    assert book.copies_device == 2 and book.memsets == 1, book.table()
    np.testing.assert_allclose(y_gpu.detach().numpy(), y_cpu.detach().numpy(), atol=1e-5)
    for g_cpu, p in zip(grads_cpu, lstm.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), g_cpu, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("bias", [True, False])
def test_the_layer_kernels_take_the_final_states_gradients_and_no_bias(stand_in, fast_path, bias):
    """The loop's first step backward reads the final state's gradients where they are, and the forward kernel
    adds the biases (or none): the same values as the CPU, with a given initial state and every output used."""
    lstm = dlscratch.nn.LSTM(4, 6, bias=bias)
    x, h0, c0 = (dlscratch.randn(*shape, requires_grad=True) for shape in ((5, 3, 4), (1, 3, 6), (1, 3, 6)))
    found = {}
    for device in ("cpu", "gpu"):
        lstm.zero_grad()
        lstm.to(device)
        inputs = [t.detach().to(device).requires_grad_() for t in (x, h0, c0)]
        y, (h_n, c_n) = lstm(inputs[0], (inputs[1], inputs[2]))
        (y.sum() + (h_n * 2).sum() + (c_n * 3).sum()).backward()
        found[device] = [t.detach().to("cpu").numpy() for t in (y, h_n, c_n)] + \
                        [t.grad.to("cpu").numpy() for t in [*inputs, *lstm.parameters()]]
    assert len(found["gpu"]) == 6 + (4 if bias else 2)
    for on_gpu, on_cpu in zip(found["gpu"], found["cpu"]):
        np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-4, atol=1e-5)


POOL_CASES = [((2, 3, 8, 8), 2, None, 0), ((2, 2, 7, 9), 3, 2, 1), ((1, 2, 6, 5), (2, 3), (1, 2), (1, 1)),
              ((1, 1, 9, 9), (3, 1), (2, 1), (1, 0))]


@pytest.mark.parametrize("shape, k, s, p", POOL_CASES)
@pytest.mark.parametrize("values", ["normal", "ties", "nan"])
def test_max_pool_kernels_equal_the_reference_path_with_ties_and_nan(stand_in, fast_path, shape, k, s, p, values):
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    if values == "ties":
        x = np.round(x)
    if values == "nan":
        x[0, 0, 1, 1], x[-1, -1, -1, -1] = np.nan, -np.inf
    with dlscratch.reference():
        expected = F.max_pool2d(dlscratch.tensor(x), k, s, p).numpy()
    gy = np.random.default_rng(4).standard_normal(expected.shape).astype(np.float32)
    results = {}
    for device, move in (("cpu", np.asarray), ("gpu", B.to_gpu)):  # the fast path's array version, its kernels
        xt = dlscratch.tensor(move(x), requires_grad=True)
        with B.ledger() as book:
            y = F.max_pool2d(xt, k, s, p)
            y.backward(dlscratch.tensor(move(gy)))
        results[device] = (y.detach().numpy(), xt.grad.numpy())
    assert {"ElementwiseKernel dlscratch_max_pool", "ElementwiseKernel dlscratch_max_pool_backward"} <= {
        what for _, _, what, _ in book.by_site("kernel")}
    np.testing.assert_array_equal(results["gpu"][0], expected)
    np.testing.assert_array_equal(results["cpu"][0], expected)
    np.testing.assert_allclose(results["gpu"][1], results["cpu"][1], rtol=1e-6, atol=1e-6)  # the same winners


# ----- a planted bug fails on the CPU -----
@pytest.mark.parametrize("planted, where", [
    ("const ptrdiff_t y = oy * sh + ky - ph;", "const ptrdiff_t y = oy * sh + ky - ph + 1;"),  # off by one row
    ("if (0 <= y && y < H && 0 <= x && x < W)", "if (0 <= y && y <= H && 0 <= x && x < W)"),  # <= for <
])
def test_an_off_by_one_planted_in_the_im2col_kernel_fails_on_the_cpu(stand_in, monkeypatch, planted, where):
    assert planted in conv_kernels.IM2COL_BODY
    monkeypatch.setattr(conv_kernels, "IM2COL_BODY", conv_kernels.IM2COL_BODY.replace(planted, where))
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6)).astype(np.float32)
    expected = reference_im2col_array(x, 3, 1, 1)
    try:
        got = B.to_cpu(im2col_array(B.to_gpu(x), 3, 1, 1, method="kernel"))
    except sk.KernelFault as fault:  # the thread reads outside the image
        assert "outside the array" in str(fault)
    else:
        assert not np.array_equal(got, expected)


def test_an_off_by_one_in_a_large_launch_is_caught_by_the_sample(stand_in, monkeypatch):
    planted = "const ptrdiff_t x = ox * sw + kx - pw;"
    monkeypatch.setattr(conv_kernels, "IM2COL_BODY", conv_kernels.IM2COL_BODY.replace(
        planted, "const ptrdiff_t x = ox * sw + kx - pw + (c == C - 1 && ky == kh - 1);"))
    monkeypatch.setattr(sk, "FULL_RUN_THREADS", 10_000)
    x = B.to_gpu(np.random.default_rng(0).standard_normal((8, 4, 20, 20)).astype(np.float32))
    with pytest.raises(sk.KernelFault, match="dlscratch_im2col"):
        im2col_array(x, 3, 1, 1, method="kernel")
