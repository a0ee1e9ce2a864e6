"""PyTorch's paths, dtype and device names, and in-place operators (issue "what you learn here carries over"):
code written for PyTorch, with only ``import torch`` changed to ``import dlscratch as torch``, finds what it
names and gets what PyTorch documents."""

import importlib
import subprocess
import sys

import numpy as np
import pytest

import dlscratch
import dlscratch as torch
from dlscratch import backend as B


# ----- 1. module paths -----
def test_pytorchs_module_paths_lead_to_the_librarys_modules():
    import dlscratch.nn.functional as F
    from dlscratch.utils.data import DataLoader, Dataset, Subset, TensorDataset, random_split

    assert torch.nn.functional is F and F.relu is dlscratch.functional.relu
    assert F.cross_entropy is dlscratch.functional.cross_entropy and F.conv2d is dlscratch.functional.conv2d
    assert (DataLoader, Dataset, Subset, TensorDataset, random_split) == (
        dlscratch.data.DataLoader, dlscratch.data.Dataset, dlscratch.data.Subset, dlscratch.data.TensorDataset,
        dlscratch.data.random_split)
    assert torch.utils.data.DataLoader is DataLoader and torch.autograd is importlib.import_module("dlscratch.autograd")
    for name in torch.nn.functional.__all__:  # every name is PyTorch's F's, and callable
        assert callable(getattr(F, name)), name


def test_a_star_import_does_not_hide_pythons_float_int_and_bool():
    names = {}
    exec("from dlscratch import *", names)
    assert not {"float", "int", "bool"} & set(names) and "float32" in names and "device" in names
    assert (torch.float, torch.int, torch.bool) == (np.float32, np.int32, np.bool_)


# ----- 2. dtypes and devices -----
@pytest.mark.parametrize(("name", "numpy_type"), [
    ("float", np.float32), ("float32", np.float32), ("double", np.float64), ("float64", np.float64),
    ("half", np.float16), ("float16", np.float16), ("long", np.int64), ("int64", np.int64), ("int", np.int32),
    ("int32", np.int32), ("short", np.int16), ("int16", np.int16), ("int8", np.int8), ("uint8", np.uint8),
    ("bool", np.bool_), ("cfloat", np.complex64), ("complex64", np.complex64), ("cdouble", np.complex128)])
def test_pytorchs_dtype_names_are_the_numpy_types_of_the_same_width(name, numpy_type):
    dtype = getattr(torch, name)
    assert dtype is numpy_type
    assert torch.zeros(2, dtype=dtype).dtype == dtype == np.dtype(numpy_type)


def test_a_device_spells_itself_as_pytorchs_does():
    cpu, cuda, cuda0 = torch.device("cpu"), torch.device("cuda"), torch.device("cuda:0")
    assert (str(cpu), str(cuda), str(cuda0)) == ("cpu", "cuda", "cuda:0")
    assert repr(cuda0) == "device(type='cuda', index=0)" and repr(cpu) == "device(type='cpu')"
    assert (cuda.type, cuda.index, cuda0.index) == ("cuda", None, 0)
    assert torch.device("cuda", 0) == cuda0 != cuda and len({cuda0, torch.device("cuda:0")}) == 1
    assert torch.device(cuda0) == cuda0 and torch.device("gpu").type == "cuda"
    with pytest.raises(ValueError, match="dlscratch uses one GPU, the current one; use 'cuda' or 'cuda:0'"):
        torch.device("cuda:1")
    with pytest.raises(ValueError, match="unknown device 'mps'"):
        torch.device("mps")


def test_a_device_is_taken_wherever_a_device_name_is():
    cpu = torch.device("cpu")
    x = torch.zeros(2, 3, device=cpu)
    assert x.device == "cpu" and x.to(cpu) is x and x.to("cpu:0") is x
    assert torch.tensor([1.0, 2.0], device=cpu).device == "cpu"
    model = torch.nn.Linear(3, 2).to(cpu)
    assert model.weight.device == "cpu"
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        x.to("tpu")


def test_cuda_and_the_accelerator_answer_what_the_backend_knows():
    assert torch.cuda.is_available() is B.gpu_available() and torch.accelerator.is_available() is B.gpu_available()
    assert torch.backends.mps.is_available() is False and torch.backends.mps.is_built() is False
    if not B.gpu_available():
        assert torch.accelerator.current_accelerator() is None and torch.cuda.device_count() == 0
        with pytest.raises(RuntimeError, match="no usable GPU"):
            torch.cuda.current_device()


def test_on_the_stand_in_cuda_is_the_gpu_and_the_default_device_moves_there():
    """The strict CuPy stand-in plays the GPU: PyTorch's device code picks it as it would pick a real one."""
    script = """
import dlscratch as torch
assert torch.cuda.is_available() and torch.cuda.device_count() == 1 and torch.cuda.current_device() == 0
device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
assert device == "cuda"
model = torch.nn.Linear(3, 2).to(torch.device(device))
x = torch.zeros(4, 3, device=device)
assert model.weight.device == x.device == "gpu" and model(x).device == "gpu"
torch.set_default_device("cuda")
assert torch.zeros(2).device == "gpu" and torch.get_default_device() == torch.device("cuda")
torch.set_default_device("cpu")
assert torch.zeros(2).device == "cpu" and torch.get_default_device() == torch.device("cpu")
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**__import__("os").environ, "DLSCRATCH_STRICT_GPU": "1", "DLSCRATCH_DEVICE": "cpu"})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


# ----- 3. in-place operators -----
def test_the_manual_update_loop_trains_its_parameters_in_place():
    """``p -= lr * p.grad`` under no_grad() writes into p (Python's fallback, p = p - ..., would rebind the loop
    variable and train nothing), as the loops of PyTorch's tutorials expect."""
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((64, 3)).astype(np.float32))
    y = x @ torch.tensor(np.array([[1.0], [-2.0], [0.5]], np.float32))
    model = torch.nn.Linear(3, 1)
    params, version = list(model.parameters()), model.weight._version
    losses = []
    for _ in range(50):
        loss = ((model(x) - y) ** 2).mean()
        losses.append(loss.item())
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
    assert list(model.parameters()) == params and all(p is q for p, q in zip(model.parameters(), params))
    assert losses[-1] < 1e-2 * losses[0] and model.weight._version == version + 50


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/="])
def test_each_augmented_assignment_writes_into_the_tensor_and_its_views(op):
    t = torch.tensor(np.array([1.0, 2.0, 7.0], np.float32))
    view, same = t[:2], t
    exec(f"t {op} torch.tensor(np.float32(2.0))", {"t": t, "torch": torch, "np": np})
    local = {"t": t, "torch": torch}
    exec(f"t {op} 2", local)
    assert local["t"] is same and local["t"].dtype == np.float32
    ops = {"+=": np.add, "-=": np.subtract, "*=": np.multiply, "/=": np.divide}[op]
    twice = ops(ops(np.array([1.0, 2.0], np.float32), 2), 2)
    np.testing.assert_array_equal(view.numpy(), twice)
    assert t._version == 2


def test_in_place_operators_refuse_what_pytorch_refuses():
    leaf = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf that requires grad"):
        leaf += 1
    integers = torch.tensor(np.array([1, 2, 3]))
    with pytest.raises(TypeError, match="Cannot cast ufunc 'divide' output"):
        integers /= 2  # PyTorch: "result type Float can't be cast to the desired output type Long"
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output"):
        integers += 0.5
    assert integers.tolist() == [1, 2, 3] and integers._version == 0
    with pytest.raises(ValueError, match="cannot be broadcast to this tensor's shape"):
        torch.zeros(3).add_(torch.ones(2))


# ----- 5. functions and methods (a first part) -----
def test_creation_functions_as_pytorch_documents_them():
    x = torch.linspace(-1.0, 1.0, 5)
    assert x.dtype == np.float32 and x.tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
    assert torch.linspace(0, 1, 0).shape == (0,) and torch.linspace(2, 2, 1).tolist() == [2.0]
    with pytest.raises(ValueError, match="steps must be a non-negative integer"):
        torch.linspace(0, 1, 2.5)
    assert torch.full((2, 3), 7).dtype == np.int64 and torch.full((2,), 1.5).dtype == np.float32
    assert torch.full([2], True).dtype == np.bool_ and torch.full(3, 2.0, dtype=torch.double).tolist() == [2.0] * 3
    assert np.signbit(torch.full((2,), -0.0).numpy()).all()
    np.testing.assert_array_equal(torch.eye(2, 3).numpy(), np.eye(2, 3, dtype=np.float32))
    assert torch.eye(3).dtype == np.float32 and torch.eye(2, requires_grad=True).requires_grad
    torch.manual_seed(0)
    base = torch.zeros(4, 2, dtype=torch.double)
    for like in (torch.rand_like(base), torch.randn_like(base)):
        assert like.shape == (4, 2) and like.dtype == np.float64 and like.device == base.device
    assert ((torch.rand_like(base).numpy() >= 0) & (torch.rand_like(base).numpy() < 1)).all()


def test_top_level_functions_and_methods_are_the_librarys_differentiable_ones():
    x = torch.tensor(np.array([[0.5, -1.0], [2.0, 0.25]], np.float32), requires_grad=True)
    for name in ("sin", "cos", "tan", "exp", "tanh", "sigmoid"):
        np.testing.assert_allclose(getattr(torch, name)(x).detach().numpy(), getattr(x, name)().detach().numpy())
    assert torch.sqrt(torch.tensor([4.0])).tolist() == [2.0] and torch.log(torch.tensor([1.0])).tolist() == [0.0]
    assert torch.cat([x, x]).shape == (4, 2) and torch.cat([x, x], 1).shape == (2, 4)
    assert torch.stack([x, x]).shape == (2, 2, 2) and torch.flatten(x).shape == (4,)
    assert x.t().tolist() == [[0.5, 2.0], [-1.0, 0.25]] and torch.ones(3).t().shape == (3,)
    with pytest.raises(ValueError, match="at most 2 dimensions"):
        torch.ones(2, 2, 2).t()
    y = x.pow(2).mul(x).matmul(torch.ones(2, 1))  # x**3 summed over each row
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * x.detach().numpy() ** 2)
