"""Issue 26, round two: what a Tensor promises (operands, copies, .numpy(), integer and complex
gradients, conversions, .grad assignment, pickling), each as PyTorch 2.13 does it."""

import operator
import pickle

import numpy
import pytest

import dlscratch
import dlscratch.functional as F

REQUIRES_GRAD_NUMPY = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
INTEGER_GRAD = "only Tensors of floating point dtype can require gradients"
BINARY_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.matmul]


# ----- 1. only numbers, numeric arrays and tensors are operands -----
def test_adding_none_raises_type_error_naming_nonetype(backend):
    x = dlscratch.randn(2)
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'Tensor' and 'NoneType'"):
        x + None


def test_reflected_none_raises_type_error(backend):
    x = dlscratch.randn(2)
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'NoneType' and 'Tensor'"):
        None + x


@pytest.mark.parametrize("op", BINARY_OPS, ids=lambda op: op.__name__)
def test_every_binary_operator_refuses_none_both_ways(op):
    x = dlscratch.randn(2)
    with pytest.raises(TypeError, match="NoneType"):
        op(x, None)
    with pytest.raises(TypeError, match="NoneType"):
        op(None, x)


def test_a_string_operand_raises_type_error_naming_str():
    with pytest.raises(TypeError, match="'str'"):
        dlscratch.randn(2) + "a"


def test_a_list_holding_a_string_raises_type_error_naming_list():
    with pytest.raises(TypeError, match="list"):
        dlscratch.randn(2) + [1, "b"]


def test_an_object_operand_raises_type_error_naming_object():
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \*: 'Tensor' and 'object'"):
        dlscratch.randn(2) * object()


def test_an_object_array_operand_raises_type_error():
    with pytest.raises(TypeError, match="object"):
        dlscratch.randn(2) + numpy.array([1.0, None], dtype=object)


def test_a_functional_op_refuses_none():
    for op in (F.add, F.mul, F.pow):
        with pytest.raises(TypeError, match=r"^(add|mul|pow): cannot make a tensor from NoneType .*expected a number"):
            op(dlscratch.randn(2), None)


def test_writing_none_or_a_string_into_a_tensor_raises_instead_of_nan(backend):
    x = dlscratch.zeros(2)
    with pytest.raises(TypeError, match="item assignment: .*not NoneType"):
        x[0] = None
    with pytest.raises(TypeError, match="copy_: .*not NoneType"):
        x.copy_(None)
    with pytest.raises(TypeError, match="fill_: the value must be a number, not str"):
        x.fill_("a")
    with pytest.raises(TypeError, match="Tensor.data must be an array of numbers, not of NumPy dtype object"):
        x.data = numpy.array([None, None])
    assert x.tolist() == [0.0, 0.0]


def test_ordering_with_none_raises_and_equality_is_false():
    x = dlscratch.randn(2)
    with pytest.raises(TypeError, match="'<' not supported between instances of 'Tensor' and 'NoneType'"):
        x < None  # noqa: B015
    assert (x == None) is False  # noqa: E711  (Python's identity fallback, as PyTorch gives)
    assert (x != None) is True  # noqa: E711


def test_numbers_numeric_arrays_and_lists_remain_operands():
    x = dlscratch.tensor([1.0, 2.0])
    assert (x + 1).tolist() == [2.0, 3.0]
    assert (x + [1, 2]).tolist() == [2.0, 4.0]
    assert (numpy.float64(2) * x).tolist() == [2.0, 4.0]
    assert (numpy.array([1, 1]) + x).tolist() == [2.0, 3.0]
    assert (x < 1.5).tolist() == [True, False]


@pytest.mark.parametrize("data", [None, "abc", object(), numpy.array(["a", "b"]), numpy.array([1, None], dtype=object)],
                         ids=["None", "str", "object", "str-array", "object-array"])
def test_tensor_from_a_non_number_raises_type_error(data):
    with pytest.raises(TypeError, match=f"{type(data).__name__}.*expected a number"):
        dlscratch.tensor(data)
    with pytest.raises(TypeError, match="expected a number"):
        dlscratch.Tensor(data)


# ----- 2. tensor() copies; from_numpy() and as_tensor() share -----
def test_tensor_copies_the_callers_array(backend):
    a = backend.zeros(3, dtype=numpy.float32)
    t = dlscratch.tensor(a)
    t[0] = 7
    a[1] = 5
    assert a.tolist() == [0.0, 5.0, 0.0]
    assert t.tolist() == [7.0, 0.0, 0.0]


def test_tensor_copies_a_tensor():
    t = dlscratch.tensor([1.0, 2.0])
    u = dlscratch.tensor(t)
    u[0] = 9
    assert t.tolist() == [1.0, 2.0]


def test_a_second_tensor_of_one_array_cannot_change_a_recorded_operand():
    w_array = numpy.array([2.0, 3.0], dtype=numpy.float32)
    x = dlscratch.tensor([1.0, 1.0], requires_grad=True)
    y = (x * dlscratch.tensor(w_array)).sum()
    dlscratch.tensor(w_array).fill_(100)
    y.backward()
    assert x.grad.tolist() == [2.0, 3.0]


def test_from_numpy_shares_memory_and_keeps_the_dtype():
    a = numpy.zeros(3)
    t = dlscratch.from_numpy(a)
    assert t.dtype == numpy.float64
    t[0] = 7
    a[1] = 5
    assert a.tolist() == [7.0, 5.0, 0.0]
    assert t.tolist() == [7.0, 5.0, 0.0]


def test_from_numpy_refuses_what_is_not_a_numpy_array():
    with pytest.raises(TypeError, match="from_numpy: expected a numpy.ndarray, got list"):
        dlscratch.from_numpy([1.0, 2.0])


def test_as_tensor_shares_when_dtype_and_device_allow():
    a = numpy.zeros(2, dtype=numpy.float32)
    t = dlscratch.as_tensor(a)
    t[0] = 7
    assert a.tolist() == [7.0, 0.0]
    same = dlscratch.tensor([1.0])
    assert dlscratch.as_tensor(same) is same
    converted = dlscratch.as_tensor(numpy.zeros(2, dtype=numpy.int64), dtype=numpy.float32)
    converted[0] = 1
    assert converted.dtype == numpy.float32 and converted.tolist() == [1.0, 0.0]


# ----- 3. .numpy() refused on a tensor that requires grad -----
def test_numpy_is_refused_on_a_leaf_that_requires_grad():
    w = dlscratch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        w.numpy()
    assert str(info.value) == REQUIRES_GRAD_NUMPY


def test_numpy_is_refused_on_a_graph_result():
    w = dlscratch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Use tensor.detach\(\).numpy\(\) instead"):
        (w * 2).numpy()


def test_detach_numpy_and_tolist_work_on_a_tensor_that_requires_grad():
    w = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    assert w.detach().numpy().tolist() == [1.0, 2.0]
    assert w.tolist() == [1.0, 2.0]


# ----- 4. only real floating-point tensors require gradients; casts to integers cut the graph -----
def test_setting_requires_grad_on_an_integer_tensor_raises():
    x = dlscratch.tensor([1, 2])
    with pytest.raises(RuntimeError, match=INTEGER_GRAD):
        x.requires_grad = True
    assert x.requires_grad is False


def test_requires_grad_underscore_on_an_integer_tensor_raises_runtime_error():
    with pytest.raises(RuntimeError, match=INTEGER_GRAD):
        dlscratch.tensor([1, 2]).requires_grad_()


def test_creating_an_integer_or_bool_tensor_that_requires_grad_raises_runtime_error():
    with pytest.raises(RuntimeError, match=INTEGER_GRAD):
        dlscratch.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match=INTEGER_GRAD):
        dlscratch.tensor([True, False], requires_grad=True)


def test_a_complex_tensor_cannot_require_grad():
    message = "complex tensors cannot require gradients"
    with pytest.raises(RuntimeError, match=message):
        dlscratch.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        dlscratch.tensor([1 + 1j]).requires_grad = True


def test_a_cast_to_an_integer_type_cuts_the_graph(backend):
    x = dlscratch.tensor([1.5, 2.5], requires_grad=True)
    for ints in (x.astype(numpy.int64), x.to(dlscratch.int64), x.astype(int)):
        assert ints.requires_grad is False and ints.grad_fn is None
    (x.astype(numpy.int64) * x).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0]  # d/dx of int(x) * x is int(x): nothing flows through the cast


def test_a_cast_between_float_types_stays_in_the_graph():
    x = dlscratch.tensor([1.5, 2.5], requires_grad=True)
    (x.double() * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0] and x.grad.dtype == numpy.float32


# ----- 5. clear errors -----
def test_tensor_from_a_list_of_multi_element_tensors_suggests_stack():
    pair = [dlscratch.randn(2), dlscratch.randn(2)]
    with pytest.raises(ValueError, match=r"only one element tensors can be converted to Python scalars.*stack"):
        dlscratch.tensor(pair)
    with pytest.raises(ValueError, match=r"dlscratch\.functional\.stack"):
        dlscratch.Tensor([pair])


def test_tensor_from_a_list_of_one_element_tensors_takes_their_values():
    t = dlscratch.tensor([dlscratch.tensor(1.0), dlscratch.tensor([2.0])])
    assert t.tolist() == [1.0, 2.0] and t.dtype == numpy.float32


def test_float_of_a_tensor_of_several_elements_raises_value_error():
    with pytest.raises(ValueError, match=r"only one element tensors can be converted to Python scalars.*\(3,\)"):
        float(dlscratch.randn(3))
    with pytest.raises(ValueError, match="only one element tensors"):
        int(dlscratch.tensor([1, 2]))


def test_float_and_int_of_a_one_element_tensor_convert():
    assert float(dlscratch.tensor([2.5])) == 2.5
    assert int(dlscratch.tensor(3.7)) == 3
    assert float(dlscratch.tensor(1.0, requires_grad=True)) == 1.0


def test_assigning_a_grad_of_another_shape_raises():
    w = dlscratch.randn(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"assigned grad has data of a different size: \(3, 2\), but the tensor "
                                           r"has shape \(2, 3\)"):
        w.grad = dlscratch.zeros(3, 2)
    assert w.grad is None


def test_assigning_a_grad_of_another_dtype_raises():
    w = dlscratch.randn(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different type: float64, but the tensor is "
                                           "float32"):
        w.grad = dlscratch.zeros(2, dtype=numpy.float64)


def test_assigning_a_grad_that_is_not_a_tensor_raises():
    w = dlscratch.randn(2, requires_grad=True)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None but got grad of type ndarray"):
        w.grad = numpy.zeros(2, dtype=numpy.float32)


def test_assigning_a_matching_grad_or_none_works():
    w = dlscratch.randn(2, requires_grad=True)
    w.grad = dlscratch.ones(2)
    assert w.grad.tolist() == [1.0, 1.0]
    w.grad = None
    assert w.grad is None


def test_pickling_a_tensor_with_a_grad_fn_is_refused():
    y = dlscratch.randn(2, requires_grad=True) * 2
    with pytest.raises(TypeError, match=r"cannot pickle a tensor that is part of a graph \(it has a grad_fn: "
                                        r"Mul\); pickle tensor.detach\(\) instead"):
        pickle.dumps(y)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_a_leaf_pickles_with_its_values_dtype_and_requires_grad(requires_grad):
    t = dlscratch.tensor([1.5, -2.0], dtype=numpy.float64, requires_grad=requires_grad)
    u = pickle.loads(pickle.dumps(t))
    assert u.tolist() == [1.5, -2.0] and u.dtype == numpy.float64
    assert u.requires_grad is requires_grad and u.is_leaf and u.grad is None


def test_a_tensor_that_requires_grad_is_not_cast_to_complex_while_recording():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"astype\(complex64\): dlscratch computes gradients of real"):
        x.astype(numpy.complex64)
    with dlscratch.no_grad():
        z = x.astype(numpy.complex64)
    assert z.dtype == numpy.complex64 and not z.requires_grad
    assert x.detach().astype(numpy.complex128).tolist() == [1 + 0j, 2 + 0j]
