"""The strict CuPy stand-in (bench/strict_cupy/) refuses what CuPy refuses and computes what NumPy computes."""

import copy
import pickle

import numpy as np
import pytest

import dlscratch
from dlscratch import Function
from dlscratch import backend as B
from dlscratch.bench import strict_cupy as sc


def test_arrays_are_not_numpy_arrays_and_asarray_copies_host_memory():
    host = np.arange(6, dtype=np.float32)
    device = sc.asarray(host)
    assert isinstance(device, sc.ndarray) and not isinstance(device, np.ndarray)
    host[0] = 100.0
    assert float(device[0]) == 0.0, "asarray must copy, as a copy to the GPU does"
    assert sc.asarray(device) is device and sc.asarray(device, dtype=np.float64).dtype == np.float64


@pytest.mark.parametrize(
    "mix",
    [
        lambda a, h: a + h,
        lambda a, h: h + a,
        lambda a, h: h * a,
        lambda a, h: a @ h.reshape(3, 1),
        lambda a, h: np.add(a, h),
        lambda a, h: sc.maximum(a, h),
        lambda a, h: sc.concatenate([a, h]),
        lambda a, h: sc.where(a > 0, a, h),
        lambda a, h: sc.exp(h),
        lambda a, h: sc.zeros_like(h),
        lambda a, h: a.dot(h),
        lambda a, h: np.concatenate([a, h]),
        lambda a, h: sc.cupyx.scatter_add(a, [0], h[:1]),
    ],
    ids=["add", "radd", "rmul", "matmul", "np-ufunc", "xp-ufunc", "concatenate", "where", "exp-of-host",
         "zeros_like-of-host", "method", "np-function", "scatter_add"],
)
def test_a_numpy_array_never_mixes_with_a_device_array(mix):
    a, h = sc.arange(3, dtype=np.float32), np.ones(3, dtype=np.float32)
    with pytest.raises(TypeError, match=r"Unsupported type <class 'numpy.ndarray'>.*cannot mix"):
        mix(a, h)


def test_implicit_conversion_to_numpy_is_refused_and_get_copies():
    a = sc.ones((2, 2), dtype=np.float32)
    for convert in (np.asarray, np.array, lambda a: np.ones(2) + list(a)):
        with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
            convert(a)
    host = a.get()
    assert type(host) is np.ndarray and host.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    host[0, 0] = 5.0
    assert float(a[0, 0]) == 1.0


def test_scalars_mix_and_results_are_zero_dimensional_arrays_as_on_cupy():
    a = sc.asarray(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    assert (a * 2 + np.float32(1.5)).get().tolist() == [3.5, 5.5, 7.5]
    total = a.sum()
    assert type(total) is sc.ndarray and total.shape == () and float(total) == 6.0
    assert type(a[1]) is sc.ndarray and a[1].shape == () and int(a[1]) == 2
    assert (a * 2.0).dtype == np.float32 and (a * np.float64(2)).dtype == np.float64, "NumPy 2's promotion"
    assert type(np.exp(a)) is sc.ndarray, "NumPy's functions run on device arrays, as CuPy's dispatch lets them"


def test_views_share_memory_report_their_base_and_in_place_operators_write_through():
    a = sc.zeros((3, 4), dtype=np.float32)
    row = a[1]
    assert row.base is a and a.base is None
    row += 2.0
    a[2, :2] = np.array([7.0, 8.0], dtype=np.float32)  # assigning a host array: CuPy copies it in
    assert a.get().tolist() == [[0, 0, 0, 0], [2, 2, 2, 2], [7, 8, 0, 0]]
    out = sc.empty((4,), dtype=np.float32)
    assert sc.add(row, 1.0, out=out) is out and out.get().tolist() == [3.0] * 4


def test_indices_may_be_host_or_device_arrays_and_scatter_add_adds_repeats():
    a = sc.arange(5, dtype=np.float32)
    assert a[np.array([4, 0])].get().tolist() == [4.0, 0.0]
    assert a[sc.asarray([1, 1])].get().tolist() == [1.0, 1.0]
    target = sc.zeros(3, dtype=np.float32)
    sc.cupyx.scatter_add(target, sc.asarray([0, 0, 2]), sc.asarray([1.0, 2.0, 3.0], dtype=np.float32))
    assert target.get().tolist() == [3.0, 0.0, 3.0]


def test_copies_pickles_random_numbers_and_linear_algebra_stay_on_the_device():
    a = sc.random.default_rng(0).standard_normal((3, 3)).astype(np.float32)
    assert type(a) is sc.ndarray
    for copied in (copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert type(copied) is sc.ndarray and copied is not a and (copied.get() == a.get()).all()
    assert type(sc.linalg.norm(a)) is sc.ndarray
    window = sc.lib.stride_tricks.as_strided(a, (2, 2), a.strides)
    assert type(window) is sc.ndarray


def test_elementwise_kernels_run_and_the_other_kernels_are_refused_with_the_reason():
    doubled = sc.ElementwiseKernel("T x", "T y", "y = x + x", "twice")(sc.arange(3, dtype=np.float32))
    assert type(doubled) is sc.ndarray and doubled.get().tolist() == [0, 2, 4]
    for kind in (sc.ReductionKernel, sc.RawKernel):
        with pytest.raises(NotImplementedError, match=f"but not {kind.__name__}"):
            kind("T x", "T y", "y = x", "copy")


def test_the_backend_takes_it_for_the_gpu(stand_in):
    assert B.gpu_available() and B.strict_stand_in() and B.has_kernels() and not B.real_gpu()
    assert B.xp is sc and B.name() == "cupy" and B.device() == "gpu"
    assert B.describe().startswith("backend: strict CuPy stand-in")
    t = dlscratch.randn(2, 3)
    assert t.device == "gpu" and type(t.data) is sc.ndarray and B.is_gpu_array(t.data)
    assert type(B.to_cpu(t.data)) is np.ndarray and B.get_array_module(t.data) is sc
    copy = B.elementwise_kernel("T x", "T y", "y = x", "copy")
    assert copy is B.elementwise_kernel("T x", "T y", "y = x", "copy")  # made once, then cached
    assert (copy(t.data).get() == t.data.get()).all()


def test_it_catches_a_backward_written_with_numpy_where_the_data_module_was_meant(stand_in):
    class Cube(Function):
        def forward(self, x):
            self.x = x
            return x**3

        def backward(self, gy):
            return gy * 3 * np.square(self.x) + np.zeros(self.x.shape, dtype=self.x.dtype)  # the bug: np.zeros

    x = dlscratch.randn(4, requires_grad=True)
    y = Cube()(x)
    with pytest.raises(TypeError, match="cannot mix"):
        y.sum().backward()


def test_a_model_trains_on_the_stand_in_as_on_numpy(stand_in):
    losses = {}
    for device in ("cpu", "gpu"):
        dlscratch.manual_seed(0)
        model = dlscratch.nn.Sequential(dlscratch.nn.Linear(3, 8), dlscratch.nn.ReLU(), dlscratch.nn.Linear(8, 2))
        model.to(device)
        opt = dlscratch.optim.Adam(model.parameters(), lr=0.01)
        x = dlscratch.tensor(np.linspace(-1, 1, 30, dtype=np.float32).reshape(10, 3), device=device)
        y = dlscratch.tensor(np.arange(10) % 2, device=device)
        for _ in range(5):
            opt.zero_grad()
            loss = dlscratch.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        losses[device] = loss.item()
    assert losses["gpu"] == pytest.approx(losses["cpu"], rel=1e-5)


def test_a_float16_product_sums_in_float32_and_rounds_once_as_a_gpus_gemm():
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(s).astype(np.float16) for s in ((6, 500), (500, 4)))
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal((sc.asarray(a) @ sc.asarray(b)).get(), expected)
    out = sc.empty((6, 4), dtype=np.float16)
    assert sc.matmul(sc.asarray(a), sc.asarray(b), out=out) is out
    np.testing.assert_array_equal(out.get(), expected)
    big = sc.asarray(np.full((2, 3), 300, np.float16)) @ sc.asarray(np.full((3, 2), 300, np.float16))
    assert np.isinf(big.get()).all()  # 270,000 is past float16's range


def test_an_array_dies_without_running_python_code_so_no_ctrl_c_is_lost():
    """A Ctrl-C's KeyboardInterrupt raised inside a weakref callback is dropped by Python ("Exception ignored"):
    the stand-in's arrays die without one, and the table of them still finds every live array."""
    import sys

    calls = []
    kept = sc.asarray(np.arange(3, dtype=np.float32))
    doomed = [kept + i for i in range(3000)]  # past the table's first sweep

    def profile(frame, event, arg):
        if event == "call":
            calls.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        del doomed
    finally:
        sys.setprofile(None)
    assert calls == []
    assert sc.asarray(kept) is kept and float((kept + 1)[2]) == 3.0
