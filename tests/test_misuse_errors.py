"""Misuse that used to pass silently or crash: ``set_grad_enabled`` as a plain function, the
environment variables read at import, the subpackages as attributes, and empty batches."""

import contextlib
import os
import platform
import subprocess
import sys

import numpy
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch.engine import settings, switch

# 1. set_grad_enabled: a function that takes effect at once, and a context manager that restores


def test_set_grad_enabled_as_a_function_takes_effect_until_changed():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    try:
        dlscratch.set_grad_enabled(False)
        assert dlscratch.is_grad_enabled() is False
        assert (x * 2).requires_grad is False
        dlscratch.set_grad_enabled(True)
        assert dlscratch.is_grad_enabled() is True
        assert (x * 2).requires_grad is True
    finally:
        dlscratch.set_grad_enabled(True)


def test_set_grad_enabled_as_a_context_manager_restores_on_exit():
    with dlscratch.set_grad_enabled(False):
        assert dlscratch.is_grad_enabled() is False
        with dlscratch.set_grad_enabled(True):
            assert dlscratch.is_grad_enabled() is True
        assert dlscratch.is_grad_enabled() is False
    assert dlscratch.is_grad_enabled() is True
    with dlscratch.no_grad():
        with dlscratch.enable_grad():
            assert dlscratch.is_grad_enabled() is True
        assert dlscratch.is_grad_enabled() is False
    assert dlscratch.is_grad_enabled() is True


def test_set_grad_enabled_restores_after_an_exception():
    with pytest.raises(KeyError), dlscratch.set_grad_enabled(False):
        raise KeyError("boom")
    assert dlscratch.is_grad_enabled() is True


# 2. environment variables read at import


def run_import(code, **env):
    result = subprocess.run([sys.executable, "-c", f"import dlscratch; {code}"], env=dict(os.environ, **env),
                            capture_output=True, text=True, timeout=60)
    return result


def test_dlscratch_device_accepts_the_names_backend_use_accepts():
    result = run_import("print(dlscratch.backend.name())", DLSCRATCH_DEVICE="numpy")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "numpy"
    result = run_import("print(dlscratch.backend.name())", DLSCRATCH_DEVICE="cuda")
    if dlscratch.backend.gpu_available():
        assert result.stdout.strip() == "cupy", result.stderr
    else:  # rejected for want of a GPU, not for the name
        assert result.returncode != 0
        assert "no usable GPU" in result.stderr and "unknown" not in result.stderr


@pytest.mark.parametrize("value, keeps", [("0", False), ("false", False), ("No", False), (" OFF ", False),
                                          ("1", True), ("true", True), ("YES", True), ("on", True)])
def test_keep_memory_accepts_boolean_words(value, keeps):
    result = run_import("print(dlscratch.fast.malloc.keeps_freed_memory())", DLSCRATCH_KEEP_MEMORY=value)
    assert result.returncode == 0, result.stderr
    on_glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"  # where mallopt exists
    assert result.stdout.strip() == str(keeps and on_glibc)


def test_keep_memory_rejects_other_values_naming_the_variable():
    result = run_import("", DLSCRATCH_KEEP_MEMORY="maybe")
    assert result.returncode != 0
    assert "DLSCRATCH_KEEP_MEMORY='maybe'" in result.stderr
    assert "'1', 'true', 'yes', 'on'" in result.stderr and "'0', 'false', 'no', 'off'" in result.stderr


def test_env_flag_parses_case_insensitively(monkeypatch):
    monkeypatch.setenv("DLSCRATCH_TEST_FLAG", "FaLsE")
    assert settings.env_flag("DLSCRATCH_TEST_FLAG", default=True) is False
    monkeypatch.delenv("DLSCRATCH_TEST_FLAG")
    assert settings.env_flag("DLSCRATCH_TEST_FLAG", default=True) is True


# 3. the subpackages are attributes after `import dlscratch`


def test_subpackages_are_attributes_after_import_dlscratch_alone():
    code = ("print(dlscratch.nn.Linear.__name__, dlscratch.optim.SGD.__name__, dlscratch.data.TensorDataset.__name__,"
            " 'cupy' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", f"import sys, dlscratch; {code}"],
                            env=dict(os.environ, DLSCRATCH_DEVICE="cpu"), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["Linear", "SGD", "TensorDataset", "False"]


# 4. convolution of an empty batch


@pytest.mark.parametrize("method", [None, "loops", "slices", "strided"])  # a method is a fast-path variant
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv2d_of_an_empty_batch(path, with_bias, method):
    x = dlscratch.tensor(numpy.zeros((0, 3, 8, 7), numpy.float32), requires_grad=True)
    weight = dlscratch.tensor(numpy.ones((5, 3, 3, 3), numpy.float32), requires_grad=True)
    bias = dlscratch.tensor(numpy.ones(5, numpy.float32), requires_grad=True) if with_bias else None
    with switch.fast_path() if method else contextlib.nullcontext():
        y = F.conv2d(x, weight, bias, stride=(1, 2), padding=1, im2col_method=method)
    assert y.shape == (0, 5, 8, 4)
    y.sum().backward()
    assert x.grad.shape == (0, 3, 8, 7)
    assert weight.grad.shape == (5, 3, 3, 3) and numpy.array_equal(weight.grad.numpy(), numpy.zeros((5, 3, 3, 3)))
    if with_bias:
        assert numpy.array_equal(bias.grad.numpy(), numpy.zeros(5))


def test_no_grad_changes_the_mode_only_inside_its_block_and_as_a_decorator():
    block = dlscratch.no_grad()
    assert dlscratch.is_grad_enabled() is True  # made, not yet entered

    @dlscratch.no_grad()
    def recording():
        return dlscratch.is_grad_enabled()

    assert recording() is False and dlscratch.is_grad_enabled() is True
    with block:
        assert dlscratch.is_grad_enabled() is False
    assert dlscratch.is_grad_enabled() is True


def test_a_recorded_function_instance_refuses_a_second_call():
    from dlscratch.operations.elementwise import Exp

    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    exp = Exp()
    y = exp(x)
    with pytest.raises(RuntimeError, match="this Exp instance is already a node of a recorded graph"):
        exp(x * 2)
    y.sum().backward()
    numpy.testing.assert_allclose(x.grad.numpy(), numpy.exp([1.0, 2.0]), rtol=1e-6)


def test_a_function_instance_first_called_without_recording_may_be_called_again():
    from dlscratch.operations.elementwise import Exp

    x = dlscratch.tensor([0.0, 1.0], requires_grad=True)
    exp = Exp()
    with dlscratch.no_grad():
        exp(x)
    exp(x).sum().backward()
    numpy.testing.assert_allclose(x.grad.numpy(), numpy.exp([0.0, 1.0]), rtol=1e-6)


def test_numpy_asarray_of_a_tensor_gives_its_data():
    t = dlscratch.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = numpy.asarray(t)
    assert a.dtype == numpy.float32 and a.shape == (2, 2) and numpy.shares_memory(a, t.data)
    assert numpy.asarray(t, dtype=numpy.float64).dtype == numpy.float64
    copied = numpy.array(t, copy=True)
    assert not numpy.shares_memory(copied, t.data)
    numpy.testing.assert_array_equal(numpy.stack([t, t]), numpy.stack([t.data, t.data]))
