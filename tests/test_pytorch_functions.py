"""Issue "what you learn here carries over", items 4, 5, 8 and 9: comparisons and arg-reductions give tensors,
PyTorch's top-level functions take its argument names and ``out=``, ``p.data += -lr * p.grad`` writes into the
parameter whatever ``.data`` is, and NumPy reads a 0-d tensor. Expected values are PyTorch's documented ones,
worked out by hand or with NumPy."""

import warnings

import numpy as np
import pytest

import dlscratch
import dlscratch as torch
from dlscratch import backend as B


def _on(backend, values, dtype=np.float32):
    return torch.tensor(backend.asarray(np.array(values, dtype)))


# ----- 4. comparisons, argmax, argmin, max(dim).indices: tensors -----
def test_argmax_argmin_and_max_over_dim_give_int64_tensors(backend):
    x = _on(backend, [[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]])
    for result, expected in [(x.argmax(), 3), (x.argmin(), 4), (torch.argmax(x), 3), (torch.argmin(x), 4)]:
        assert type(result) is torch.Tensor and result.dtype == np.int64 and result.item() == expected
    assert x.argmax(1).tolist() == [1, 0] and x.argmin(dim=0).tolist() == [0, 1, 0]
    assert x.argmax(1, keepdim=True).shape == (2, 1) and x.argmax(keepdim=True).shape == (1, 1)
    values, indices = torch.max(x, 1)
    assert type(indices) is torch.Tensor and indices.dtype == np.int64 and indices.tolist() == [1, 0]
    assert values.tolist() == [5.0, 7.0] and torch.min(x, dim=1).indices.tolist() == [0, 1]
    assert torch.max(x).item() == 7.0 and torch.min(x).item() == 0.0 and x.min().item() == 0.0
    labels = _on(backend, [1, 2], np.int64)
    correct = (x.argmax(1) == labels)  # a training loop's accuracy, as PyTorch's tutorials write it
    assert correct.dtype == np.bool_ and correct.sum().item() == 1 and correct.float().mean().item() == 0.5
    assert (torch.argmax(x, dim=1) == _on(backend, [1, 0], np.int64)).all().item() is True
    with pytest.raises(RuntimeError, match="expected a non-empty tensor"):
        torch.zeros(0).argmax()
    with pytest.raises(TypeError, match="elementwise maximum"):
        torch.max(x, x)


def test_min_shares_the_gradient_among_tied_minima_as_max_does():
    x = torch.tensor([[3.0, 1.0, 1.0], [0.0, 2.0, 5.0]], requires_grad=True)
    x.min().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 0], [1, 0, 0]])
    x.grad = None
    x.amin(1).sum().backward()  # PyTorch's amin: ties share evenly
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0.5, 0.5], [1, 0, 0]])
    x.grad = None
    x.min(1).values.sum().backward()  # min(dim): the gradient goes to the returned index only
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 0], [1, 0, 0]])


def test_all_any_allclose_and_an_integer_tensor_as_an_index(backend):
    x = _on(backend, [[1.0, 0.0], [2.0, 3.0]])
    assert x.all().item() is False and x.any().item() is True and torch.all(x, dim=1).tolist() == [False, True]
    assert torch.any(x == 0, 0, keepdim=True).tolist() == [[False, True]]
    assert torch.allclose(x, x + 1e-9) is True and x.allclose(x + 1e-3) is False
    assert torch.allclose(x, x + 1e-3, atol=1e-2) is True
    three = torch.tensor(3)
    assert list(range(three)) == [0, 1, 2] and "abcd"[torch.tensor(1)] == "b"
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        list(range(torch.tensor(3.0)))
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        "abcd"[torch.tensor([1, 2])]


# ----- 5. top-level functions with PyTorch's arguments, methods, out= -----
def test_top_level_functions_take_pytorchs_argument_names():
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = torch.tensor([[0.5], [-1.0]])
    y = torch.matmul(input=a, other=b)
    assert y.tolist() == [[-1.5], [-2.5]] and y.grad_fn is not None
    assert torch.mul(a, 2).tolist() == [[2, 4], [6, 8]] and torch.mul(input=a, other=a).tolist()[1] == [9, 16]
    assert torch.add(a, b, alpha=2).tolist() == [[2, 3], [1, 2]] and torch.sub(a, 1, alpha=3).tolist()[0] == [-2, -1]
    assert torch.div(a, 2).tolist() == [[0.5, 1], [1.5, 2]]
    np.testing.assert_allclose(torch.log10(torch.tensor([1.0, 100.0])).numpy(), [0.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(torch.abs(torch.tensor([-2.0, 3.0])).numpy(), [2.0, 3.0])
    assert torch.sum(a).item() == 10 and torch.mean(a, dim=0).tolist() == [2, 3] and torch.numel(a) == 4
    assert a.nelement() == 4 and a.log10().dtype == np.float32


def test_tensor_type_names_and_casts():
    x = torch.tensor([1.5, -2.0])
    assert x.type() == "dlscratch.FloatTensor" and x.double().type() == "dlscratch.DoubleTensor"
    assert x.type(torch.int64).tolist() == [1, -2] and x.type("torch.LongTensor").dtype == np.int64
    assert x.type(torch.float64).dtype == np.float64 and torch.tensor([True]).type() == "dlscratch.BoolTensor"
    with pytest.raises(ValueError, match="invalid type 'torch.NoSuchTensor'"):
        x.type("torch.NoSuchTensor")


def test_out_writes_into_the_tensor_given_as_pytorch_documents():
    a, b = torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0], [4.0]])
    out = torch.zeros(1, 1)
    before = out._version
    assert torch.matmul(a, b, out=out) is out and out.tolist() == [[11.0]] and out._version > before
    out = torch.zeros(2)
    assert torch.sin(torch.zeros(2), out=out) is out and out.tolist() == [0.0, 0.0]
    assert torch.cat([a, a], out=torch.zeros(2, 2)).tolist() == [[1, 2], [1, 2]]
    empty = torch.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized without a word
        assert torch.exp(torch.zeros(3), out=empty).tolist() == [1.0, 1.0, 1.0]
    with pytest.warns(UserWarning, match=r"was resized since it had shape \(2,\)"):
        assert torch.mul(a, 2, out=torch.zeros(2)).shape == (1, 2)
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        torch.add(a, a, out=torch.zeros(1, 2, dtype=torch.int64))
    w = torch.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        torch.mul(w, 2, out=torch.zeros(1))
    with torch.no_grad():
        assert torch.mul(w, 2, out=torch.zeros(1)).tolist() == [2.0]
    with pytest.raises(TypeError, match="argument 'out' must be a Tensor"):
        torch.exp(a, out=np.zeros((1, 2)))


# ----- 8. what from-scratch courses write by hand -----
def test_the_update_through_data_writes_into_the_parameter(backend):
    """``p.data += -lr * p.grad`` (``.data`` is the raw array here, a tensor in PyTorch): the array takes the
    tensor's values, in place, on NumPy and on CuPy (through CuPy's ``__cupy_get_ndarray__``)."""
    p = torch.tensor(backend.asarray(np.array([1.0, -2.0], np.float32)), requires_grad=True)
    alias = p.data
    (p * p).sum().backward()  # grad 2p
    version = p._version
    p.data += -0.1 * p.grad
    p.data -= 0.1 * p.grad
    assert p.data is alias and p._version > version
    np.testing.assert_allclose(B.to_cpu(p.data), [0.6, -1.2], rtol=1e-6)
    arr = backend.asarray(np.ones(2, np.float32))
    total = arr + p  # an array and a tensor: the tensor's operator, in the graph
    assert type(total) is torch.Tensor and total.grad_fn is not None
    assert type(arr < p) is torch.Tensor


def test_numpy_reads_a_tensor_on_the_cpu_including_a_0_d_one():
    assert np.asarray(torch.tensor(3.5)).shape == () and float(np.asarray(torch.tensor(3.5))) == 3.5
    assert np.asarray(torch.tensor([1, 2])).dtype == np.int64
    assert np.float32(2.0) * torch.tensor([1.0]) == torch.tensor([2.0])


def test_an_in_place_write_of_a_value_that_requires_grad_is_refused():
    """PyTorch records ``t[i] = x`` in the graph; dlscratch's in-place writes are not recorded, so it refuses
    rather than lose ``x``'s gradient."""
    t, w = torch.zeros(3), torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="item assignment: the value requires grad"):
        t[0] = (w * 2).sum()
    with pytest.raises(RuntimeError, match="add_: the value requires grad"):
        t[1:] += w[1:] * 2
    assert t.tolist() == [0.0, 0.0, 0.0]
    t[0] = (w * 2).sum().detach()  # what works in both
    assert t.tolist() == [6.0, 0.0, 0.0]


def test_a_star_import_leaves_pythons_builtins_alone():
    names = {}
    exec("from dlscratch import *", names)
    assert not {"abs", "all", "any", "max", "min", "sum"} & set(names) and "matmul" in names
    assert dlscratch.max is torch.max and callable(dlscratch.sum)


def test_normal_and_uniform_fill_in_place_from_a_generator(backend):
    w = torch.tensor(backend.asarray(np.zeros((200, 50), np.float32)))
    alias = w.data
    assert w.normal_(1.0, 0.5, generator=torch.Generator(device=w.device).manual_seed(3)) is w and w.data is alias
    drawn = w.numpy()
    assert abs(drawn.mean() - 1.0) < 5 * 0.5 / 100 and abs(drawn.std() - 0.5) < 0.02 and w.dtype == np.float32
    w.normal_(1.0, 0.5, generator=torch.Generator(device=w.device).manual_seed(3))
    np.testing.assert_array_equal(w.numpy(), drawn)  # the same seed, the same numbers
    w.uniform_(-2.0, 3.0)
    assert w.numpy().min() >= -2.0 and w.numpy().max() < 3.0 and abs(w.numpy().mean() - 0.5) < 0.05
    p = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf that requires grad"):
        p.normal_()
