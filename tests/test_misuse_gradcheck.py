"""``gradcheck`` on inputs that are not C-contiguous: transposed, sliced with a step, with a
negative stride, batch-last. A correct backward must pass and a backward that returns zeros must
be caught, whatever the memory order of the input."""

import numpy as np
import pytest
from hypothesis import given
from property_strategies import strided_arrays

from dlscratch import Function, GradcheckError, gradcheck


class ZeroBackwardSquare(Function):
    """``x ** 2`` whose backward wrongly returns zeros."""

    def forward(self, x):
        return x * x

    def backward(self, gy):
        return gy * 0


def _square(x):
    return x * x


def _base(*shape):
    return np.random.default_rng(0).uniform(1.0, 2.0, size=shape)


LAYOUTS = {
    "transposed": lambda: _base(3, 4).T,
    "step-sliced": lambda: _base(4, 6)[::2, ::3],
    "negative-stride": lambda: _base(3, 4)[::-1, ::-1],
    "batch-last": lambda: np.ascontiguousarray(_base(2, 3, 2, 2).transpose(1, 2, 3, 0)).transpose(3, 0, 1, 2),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradcheck_passes_a_correct_backward_on_a_non_contiguous_input(layout):
    x = LAYOUTS[layout]()
    assert not x.flags.c_contiguous
    report = gradcheck(_square, x)
    assert report and report.checked == x.size
    assert report.abs_error < 1e-6


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradcheck_catches_a_zero_backward_on_a_non_contiguous_input(layout):
    x = LAYOUTS[layout]()
    report = gradcheck(lambda t: ZeroBackwardSquare()(t), x, raise_exception=False)
    assert not report
    # The numerical gradient of sum(w * x**2) is 2 w x, far from the zeros backward gives.
    assert report.analytic == 0.0 and abs(report.numeric) > 1.0
    with pytest.raises(GradcheckError, match="FAILED"):
        gradcheck(lambda t: ZeroBackwardSquare()(t), x)


def test_gradcheck_leaves_the_caller_s_array_unchanged():
    x = LAYOUTS["transposed"]()
    before = x.copy()
    gradcheck(_square, x)
    np.testing.assert_array_equal(x, before)


@given(x=strided_arrays())
def test_gradcheck_is_independent_of_memory_order(x):
    assert gradcheck(_square, x)
    assert not gradcheck(lambda t: ZeroBackwardSquare()(t), x, raise_exception=False)


def test_gradcheck_takes_the_inputs_as_one_tuple_as_pytorch_does():
    x, w = _base(2, 3), _base(3, 4)
    separate = gradcheck(lambda a, b: a @ b, x, w)
    for inputs in ((x, w), [x, w]):  # torch.autograd.gradcheck(fn, (x, w)); a list is taken as a tuple there too
        report = gradcheck(lambda a, b: a @ b, inputs)
        assert report and report == separate and report.checked == x.size + w.size
    with pytest.raises(GradcheckError, match="FAILED"):
        gradcheck(lambda t, s: ZeroBackwardSquare()(t) * s, (x, 2.0))


def test_a_tuple_passes_its_non_tensors_through_unchecked():
    x = _base(3, 4)
    seen = []

    def fn(t, scale, label, rows, index):
        seen.append((scale, label, rows, index.dtype.kind))
        return t[index] * scale * len(rows)

    report = gradcheck(fn, (x, 2.5, None, [1, 2], np.array([2, 0])))
    assert report and report.checked == x.size
    assert seen[0] == (2.5, None, [1, 2], "i")


def test_a_tuple_without_a_floating_point_input_is_refused_with_both_forms_named():
    with pytest.raises(ValueError, match=r"no floating-point input to check among \(float, NoneType\); pass "
                                         r"floating-point tensors or arrays as gradcheck\(fn, x, w\) or "
                                         r"gradcheck\(fn, \(x, w\)\)"):
        gradcheck(lambda s, n: s * 2, (2.0, None))
