"""The array-module shim: choosing NumPy or CuPy, moving data, scatter-add, and what happens
on machines where CuPy imports but no GPU is usable."""

import os
import platform
import subprocess
import sys
import types

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from dlscratch import backend as B


@pytest.fixture
def restore_numpy():
    """For tests that call ``use`` themselves."""
    yield
    B.use("numpy")


def test_use_numpy_and_cpu_select_numpy(restore_numpy):
    assert B.use("numpy") is np
    assert B.xp is np and B.name() == "numpy" and B.device() == "cpu"
    assert B.use("CPU") is np


def test_use_auto_picks_cupy_only_with_a_usable_gpu(restore_numpy):
    assert B.use("auto") is (B.cupy if B.gpu_available() else np)
    assert B.name() == ("cupy" if B.gpu_available() else "numpy")


def test_use_unknown_name_lists_the_choices():
    with pytest.raises(ValueError, match=r"unknown backend 'tpu'.*'numpy'/'cpu', 'cupy'/'gpu' or 'auto'"):
        B.use("tpu")


def test_use_gpu_without_gpu_says_why(no_gpu, restore_numpy):
    reason = B.gpu_unavailable_reason()
    assert reason
    with pytest.raises(RuntimeError, match="no usable GPU") as info:
        B.use("gpu")
    assert reason in str(info.value) and "cupy-cuda12x" in str(info.value)
    assert B.xp is np  # the failed call changed nothing


def test_module_for():
    assert B.module_for("cpu") is np and B.module_for("CPU") is np
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        B.module_for("tpu")
    if not B.gpu_available():
        with pytest.raises(RuntimeError, match="no usable GPU"):
            B.module_for("cuda")


def _import_in_subprocess(device):
    code = "import dlscratch; print(dlscratch.backend.name(), dlscratch.backend.device())"
    env = dict(os.environ, DLSCRATCH_DEVICE=device)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_environment_cpu_selects_numpy():
    result = _import_in_subprocess("cpu")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["numpy", "cpu"]


def test_environment_auto_selects_gpu_only_when_usable():
    result = _import_in_subprocess(" Auto ")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == (["cupy", "gpu"] if B.gpu_available() else ["numpy", "cpu"])


def test_environment_gpu_without_gpu_fails_at_import_saying_why(no_gpu):
    result = _import_in_subprocess("gpu")
    assert result.returncode != 0
    assert "RuntimeError: backend.use('gpu'): no usable GPU" in result.stderr


def test_environment_bad_value_fails_at_import():
    result = _import_in_subprocess("tpu")
    assert result.returncode != 0
    assert "DLSCRATCH_DEVICE='tpu' is not one of 'numpy', 'cpu', 'cupy', 'gpu', 'cuda', 'auto'" in result.stderr


def test_get_array_module(backend):
    assert B.get_array_module(backend.ones(2)) is backend
    assert B.get_array_module(np.ones(2), backend.ones(2)) is backend
    assert B.get_array_module(np.ones(2)) is np
    assert B.get_array_module(3.0, [1, 2]) is np
    assert B.get_array_module() is np


def test_to_cpu_and_asnumpy(backend):
    a = backend.arange(6, dtype=backend.float32).reshape(2, 3)
    host = B.to_cpu(a)
    assert type(host) is np.ndarray and host.dtype == np.float32
    np.testing.assert_array_equal(host, np.arange(6, dtype=np.float32).reshape(2, 3))
    assert B.asnumpy is B.to_cpu
    already = np.ones(3)
    assert B.to_cpu(already) is already
    np.testing.assert_array_equal(B.to_cpu([1, 2]), np.array([1, 2]))


def test_is_gpu_array(backend):
    assert not B.is_gpu_array(np.ones(2))
    assert not B.is_gpu_array(1.0)
    assert B.is_gpu_array(backend.ones(2)) == (backend is not np)


def test_synchronize_returns_on_numpy():
    assert B.synchronize() is None


def test_synchronize_does_not_touch_an_unusable_cupy(monkeypatch):
    # Any attribute access on this stand-in would raise AttributeError.
    monkeypatch.setattr(B, "cupy", object())
    monkeypatch.setattr(B, "_gpu_status", (False, "no device"))
    assert B.synchronize() is None


def test_scatter_add_adds_repeated_indices(backend):
    a = backend.zeros(5, dtype=backend.float32)
    B.scatter_add(a, backend.asarray([0, 3, 3, 1, 3]), backend.asarray([1, 2, 4, 8, 16], dtype=backend.float32))
    np.testing.assert_array_equal(B.to_cpu(a), [1, 8, 0, 22, 0])


def test_scatter_add_with_a_tuple_of_index_arrays(backend):
    a = backend.ones((2, 3), dtype=backend.float32)
    rows, cols = backend.asarray([0, 0, 1, 0]), backend.asarray([2, 2, 0, 2])
    B.scatter_add(a, (rows, cols), backend.asarray([1.0, 2.0, 3.0, 4.0], dtype=backend.float32))
    np.testing.assert_array_equal(B.to_cpu(a), [[1, 1, 8], [4, 1, 1]])


def test_describe_names_backend_device_and_versions(backend):
    text = B.describe()
    assert np.__version__ in text and platform.python_version() in text
    if backend is np:
        assert text.startswith("backend: numpy ") and "on CPU" in text and f"{os.cpu_count()} cores" in text
    elif B.strict_stand_in():
        assert text.startswith("backend: strict CuPy stand-in") and "no real GPU" in text
    else:
        assert text.startswith(f"backend: {backend.__name__} ")
        assert "on GPU" in text and backend.__version__ in text and "CUDA runtime" in text


def test_gpu_available_is_a_stable_bool():
    assert B.gpu_available() in (True, False)
    assert B.gpu_available() == B.gpu_available()
    assert (B.gpu_unavailable_reason() == "") == B.gpu_available()


def test_to_gpu_without_gpu_raises_clearly(no_gpu):
    with pytest.raises(RuntimeError, match="to_gpu: no usable GPU"):
        B.to_gpu(np.ones(3))


# ----- CuPy imports, but there is no driver -----


class CUDARuntimeError(RuntimeError):
    """Named like CuPy's exception, which is what the probe meets on a machine without a driver."""


@pytest.fixture
def cupy_without_driver(monkeypatch):
    """A fake ``cupy`` that imports fine and fails on first use, as CuPy does without a driver."""

    def get_device_count():
        raise CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")

    fake_cupy = types.ModuleType("cupy")
    fake_cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=get_device_count))
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    monkeypatch.setitem(sys.modules, "cupyx", types.ModuleType("cupyx"))
    monkeypatch.setattr(B, "cupy", None)
    monkeypatch.setattr(B, "cupyx", None)
    monkeypatch.setattr(B, "_gpu_status", None)
    monkeypatch.delenv("DLSCRATCH_STRICT_GPU", raising=False)
    yield fake_cupy
    B.use("numpy")


def test_no_driver_means_no_gpu(cupy_without_driver):
    assert B.gpu_available() is False
    reason = B.gpu_unavailable_reason()
    assert "CUDARuntimeError" in reason and "insufficient" in reason
    assert B.cupy is cupy_without_driver  # it was imported; only using it failed


def test_no_driver_auto_falls_back_to_numpy(cupy_without_driver):
    assert B.use("auto") is np
    assert B.device() == "cpu"


def test_no_driver_gpu_request_raises_with_the_reason(cupy_without_driver):
    with pytest.raises(RuntimeError, match=r"backend.use\('gpu'\): no usable GPU.*CUDARuntimeError"):
        B.use("gpu")
    with pytest.raises(RuntimeError, match="to_gpu: no usable GPU.*CUDARuntimeError"):
        B.to_gpu(np.ones(2))


def test_no_driver_numpy_code_still_runs(cupy_without_driver):
    assert B.get_array_module(np.ones(2)) is np
    assert B.synchronize() is None
    assert B.describe().startswith("backend: numpy ")


def _blas_thread_counts():
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_blas_threads_limits_numpys_blas_inside_the_block_and_restores_it():
    before = _blas_thread_counts()
    assert before, "NumPy's BLAS should be visible to threadpoolctl"
    with B.blas_threads(1):
        assert _blas_thread_counts() == [1] * len(before)
        a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
        np.testing.assert_allclose(a @ a.T, (a.astype(np.float64) @ a.T.astype(np.float64)), rtol=1e-5)
    assert _blas_thread_counts() == before


@pytest.mark.parametrize("count", [0, -1, 1.5, "1", True, None])
def test_blas_threads_refuses_a_count_that_is_not_a_whole_number_of_at_least_one(count):
    with pytest.raises(ValueError, match="blas_threads: count must be a whole number >= 1"):
        with B.blas_threads(count):
            pass
