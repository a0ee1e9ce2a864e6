"""PyTorch's ``torch.autograd.Function`` (``dlscratch/autograd_function.py``), ``Tensor.backward``'s PyTorch
arguments, ``dlscratch.autograd.backward`` and ``grad_fn.next_functions``: what PyTorch documents, the expected
values computed by hand in NumPy."""

import gc
import weakref

import numpy as np
import pytest

import dlscratch
from dlscratch import autograd
from dlscratch.backend import to_cpu
from dlscratch.engine.function import AccumulateGrad


class LegendreP3(autograd.Function):
    """PyTorch's polynomial tutorial: P3(x) = (5x^3 - 3x) / 2, P3'(x) = 3 (5x^2 - 1) / 2."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * (5 * x**3 - 3 * x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * x**2 - 1)


class Exp(autograd.Function):
    """Saves its output, as PyTorch's "Extending PyTorch" example does."""

    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class ScaleBy(autograd.Function):
    """A non-tensor argument, kept as an attribute of ctx; what forward and backward see, recorded in ``seen``."""

    seen = {}

    @staticmethod
    def forward(ctx, x, constant, w=None):
        ScaleBy.seen["forward"] = (dlscratch.is_grad_enabled(), ctx.needs_input_grad)
        ctx.constant = constant
        ctx.save_for_backward(w)
        return x * constant if w is None else x * constant * w

    @staticmethod
    def backward(ctx, grad_output):
        ScaleBy.seen["backward"] = (dlscratch.is_grad_enabled(), ctx.needs_input_grad)
        (w,) = ctx.saved_tensors
        if w is None:
            return grad_output * ctx.constant, None, None
        return grad_output * ctx.constant * w, None, None


X = np.array([-1.5, -0.2, 0.4, 2.0])


def test_the_polynomial_tutorials_function_on_both_paths_and_devices(path, backend):
    x = dlscratch.tensor(backend.asarray(X, dtype=np.float32), requires_grad=True)
    y = LegendreP3.apply(x)
    np.testing.assert_allclose(to_cpu(y.data), 0.5 * (5 * X**3 - 3 * X), rtol=1e-6)
    assert type(y.grad_fn).__name__ == "LegendreP3Backward" and y.requires_grad
    (y * backend.asarray([1.0, 2.0, 3.0, 4.0], dtype=np.float32)).sum().backward()
    np.testing.assert_allclose(to_cpu(x.grad.data), np.array([1, 2, 3, 4]) * 1.5 * (5 * X**2 - 1), rtol=1e-6)


@pytest.mark.parametrize("fn", [LegendreP3, Exp], ids=lambda f: f.__name__)
def test_gradcheck_of_a_users_function(path, backend, fn):
    x = dlscratch.tensor(backend.asarray(X), dtype=np.float64, requires_grad=True)
    assert dlscratch.gradcheck(fn.apply, x)


def test_forward_runs_without_recording_and_its_output_is_linked_to_one_node(path):
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    w = dlscratch.tensor([3.0, 4.0])
    y = ScaleBy.apply(x, 2.5, w)
    assert ScaleBy.seen["forward"] == (False, (True, False, False))
    assert y.requires_grad and y.grad_fn.next_functions == ((AccumulateGrad(x), 0), (None, 0))
    y.sum().backward()
    assert ScaleBy.seen["backward"] == (False, (True, False, False))
    np.testing.assert_array_equal(x.grad.numpy(), [7.5, 10.0])
    with dlscratch.no_grad():
        z = ScaleBy.apply(x, 2.5)
    assert not z.requires_grad and z.grad_fn is None
    assert not ScaleBy.apply(w, 2.0).requires_grad  # no input requires grad


def test_the_number_of_gradients_must_match_the_arguments(path):
    def returning(grads):
        class Twice(autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return grads(g)

        return Twice

    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"function TwiceBackward returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)"):
        returning(lambda g: g).apply(x, 3).sum().backward()
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 2, got 3\)"):
        returning(lambda g: (g * 2, None, g)).apply(x, 3).sum().backward()
    with pytest.raises(RuntimeError, match="TwiceBackward returned a gradient for argument 1, which is not a tensor"):
        returning(lambda g: (g * 2, g)).apply(x, 3).sum().backward()
    with pytest.raises(RuntimeError, match="TwiceBackward returned ndarray as the gradient of argument 0"):
        returning(lambda g: (g.data * 2, None)).apply(x, 3).sum().backward()
    returning(lambda g: (g * 2, None, None)).apply(x, 3).sum().backward()  # trailing Nones pass, as in PyTorch
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_a_gradient_of_a_broadcast_shape_is_summed_back_and_cast_to_the_inputs_dtype(path):
    class Spread(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return dlscratch.ones(3, 2, dtype=np.float64) * g

    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    Spread.apply(x).backward(dlscratch.tensor([1.0, 10.0]))
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 30.0])

    class Wrong(Spread):
        @staticmethod
        def backward(ctx, g):
            return dlscratch.ones(3)

    with pytest.raises(RuntimeError, match=r"WrongBackward returned an invalid gradient for argument 0: shape \(3,\)"):
        Wrong.apply(x).sum().backward()


def test_a_gradient_on_another_device_is_refused(gpu):
    class OnTheCpu(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return dlscratch.ones(2, device="cpu")

    x = dlscratch.tensor(gpu.asarray([1.0, 2.0], dtype=np.float32), requires_grad=True)
    with pytest.raises(RuntimeError, match="OnTheCpuBackward returned a gradient on cpu for argument 0, which is on"):
        OnTheCpu.apply(x).sum().backward()


class Split(autograd.Function):
    """Two outputs and a number; backward sees what reached each output."""

    seen = []

    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3, 7

    @staticmethod
    def backward(ctx, g2, g3, g_number):
        Split.seen.append((None if g2 is None else g2.numpy().tolist(), g3.numpy().tolist(), g_number))
        return (g2 * 2 if g2 is not None else 0) + g3 * 3


def test_several_outputs_share_one_node_and_an_unused_ones_gradient_is_zeros(path):
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    a, b, seven = Split.apply(x)
    assert seven == 7 and a.grad_fn is b.grad_fn
    assert (a * b).grad_fn.next_functions == ((a.grad_fn, 0), (a.grad_fn, 1))
    Split.seen.clear()
    b.sum().backward()
    assert Split.seen == [([0.0, 0.0], [1.0, 1.0], None)]  # materialized zeros, as PyTorch; None for the number
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])

    class Unmaterialized(Split):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return Split.forward(ctx, x)

    Split.seen.clear()
    Unmaterialized.apply(x)[1].sum().backward()
    assert Split.seen == [(None, [1.0, 1.0], None)]


def test_marked_and_integer_outputs_do_not_require_grad(path):
    class SortValues(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            order = dlscratch.tensor(np.argsort(x.data))
            ctx.mark_non_differentiable(order)
            ctx.save_for_backward(order)
            return x[order] * 1, order, x > 0, x * 1

        @staticmethod
        def backward(ctx, g_values, g_order, g_positive, g_copy):
            assert g_order.dtype == np.int64 and not g_order.numpy().any()
            (order,) = ctx.saved_tensors
            g = dlscratch.zeros(g_values.shape)
            g[order] = g_values
            return g + g_copy

    x = dlscratch.tensor([3.0, 1.0, 2.0], requires_grad=True)
    values, order, positive, copy = SortValues.apply(x)
    assert values.requires_grad and copy.requires_grad
    assert not order.requires_grad and order.grad_fn is None and not positive.requires_grad
    (values * dlscratch.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 1.0, 2.0])


def test_a_saved_tensor_changed_in_place_is_refused_and_an_input_returned_is_a_view(path):
    x = dlscratch.tensor([0.0, 1.0], requires_grad=True)
    y = Exp.apply(x)
    with dlscratch.no_grad():
        y.add_(1)  # the saved result is this memory
    with pytest.raises(RuntimeError, match="Exp: saved tensor 0 .* was changed in place after save_for_backward"):
        y.sum().backward()

    class Identity(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 10

    y = Identity.apply(x)
    assert y is not x and y.data is x.data and y.grad_fn is not None
    with dlscratch.no_grad():
        y.mul_(2)
    assert x._version == 1  # one memory, one version counter
    x.grad = None
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [10.0, 10.0])


def test_setup_context_style_and_misuse():
    class MulConstant(autograd.Function):
        @staticmethod
        def forward(x, constant):
            return x * constant

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.constant = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.constant, None

    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    MulConstant.apply(x, 5.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0])
    with pytest.raises(RuntimeError, match=r"call MulConstant.apply\(x\), not MulConstant\(\)\(x\)"):
        MulConstant()(x)
    with pytest.raises(TypeError, match="save_for_backward can only save tensors .* argument 1 is int"):
        class SavesANumber(MulConstant):
            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0], 3)

        SavesANumber.apply(x, 2.0)

    class NoBackward(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    with pytest.raises(NotImplementedError, match="static backward"):
        NoBackward.apply(x).sum().backward()


def test_the_graph_is_freed_without_the_cycle_collector():
    gc.disable()
    try:
        x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
        y = Exp.apply(x)
        node, out = weakref.ref(y.grad_fn), weakref.ref(y)
        del y
        assert node() is None and out() is None
    finally:
        gc.enable()


def test_the_lessons_function_and_pytorchs_stand_side_by_side():
    import dlscratch as torch

    assert torch.autograd.Function is autograd.Function and dlscratch.Function is not autograd.Function
    assert issubclass(LegendreP3.node_class, dlscratch.Function)
    assert autograd.FunctionCtx.__name__ == "FunctionCtx"


# ----- grad_fn.next_functions -----

def test_next_functions_as_the_blitz_tutorial_prints_them(path):
    x = dlscratch.tensor(np.ones((2, 3)))
    w = dlscratch.tensor(np.full((3, 4), 0.5), requires_grad=True)
    h = x @ w
    loss = ((h - 1.0) ** 2).mean()
    assert len(loss.grad_fn.next_functions) == 1  # mean of one input
    square = loss.grad_fn.next_functions[0][0]
    assert square.next_functions[1] == (None, 0)  # the exponent 2
    assert square.next_functions[0][0].next_functions[0] == (h.grad_fn, 0)
    assert h.grad_fn.next_functions == ((None, 0), (AccumulateGrad(w), 0))  # x needs no grad
    leaf = h.grad_fn.next_functions[1][0]
    assert type(leaf).__name__ == "AccumulateGrad" and leaf.variable is w and leaf.next_functions == ()
    assert (w * 2).grad_fn.next_functions == ((leaf, 0), (None, 0))  # the constant 2


def test_next_functions_give_the_index_of_the_output_of_a_lessons_function(path):
    class Halves(dlscratch.Function):
        def forward(self, x):
            return x[:1] * 1, x[1:] * 1

        def backward(self, g0, g1):
            return np.concatenate([g0, g1])

    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    first, second = Halves()(x)
    assert (second + first).grad_fn.next_functions == ((first.grad_fn, 1), (first.grad_fn, 0))


# ----- Tensor.backward and autograd.backward -----

def test_backward_takes_pytorchs_arguments_and_the_lessons_grad():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.backward(gradient=dlscratch.tensor([1.0, 1.0]))
    y.backward(grad=np.array([1.0, 0.0], np.float32))  # the lessons' name
    y.backward(dlscratch.tensor([0.0, 1.0]), retain_graph=False)  # the graph is kept: a later backward still works
    y.backward([1.0, 1.0], None)
    np.testing.assert_array_equal(x.grad.numpy(), [2 * 1 * 3, 2 * 2 * 3])
    with pytest.raises(TypeError, match="gradient= or grad="):
        y.backward(np.ones(2), grad=np.ones(2))
    with pytest.raises(NotImplementedError, match="create_graph=True.*builds no graph"):
        y.sum().backward(create_graph=True)


def test_backward_inputs_accumulates_only_into_them(path):
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    w = dlscratch.tensor([3.0, 4.0], requires_grad=True)
    unrelated = dlscratch.tensor([1.0, 1.0], requires_grad=True)
    h = x * w
    y = (h * h).sum()  # dy/dh = 2h, dy/dw = 2 h x, dy/dx = 2 h w
    y.backward(inputs=[w])
    assert x.grad is None and x.requires_grad and h.grad is None
    np.testing.assert_array_equal(w.grad.numpy(), [6.0, 32.0])
    y.backward(inputs=h)
    np.testing.assert_array_equal(h.grad.numpy(), [6.0, 16.0])
    assert x.grad is None and not h.retains_grad
    np.testing.assert_array_equal(w.grad.numpy(), [6.0, 32.0])
    y.backward(inputs=[unrelated, x])
    assert unrelated.grad is None
    np.testing.assert_array_equal(x.grad.numpy(), [18.0, 64.0])
    with pytest.raises(RuntimeError, match="inputs= cannot be empty"):
        y.backward(inputs=[])
    with pytest.raises(RuntimeError, match=r"inputs\[0\] is not a tensor that requires grad"):
        y.backward(inputs=[dlscratch.ones(2)])


def test_autograd_backward_pytorchs_form_and_the_librarys():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    autograd.backward((x * x).sum())
    autograd.backward([(x * 3).sum(), x * 1], [None, dlscratch.tensor([1.0, 10.0])])
    autograd.backward(x * 1, np.array([2.0, 2.0], np.float32))  # the library's own call: an array
    np.testing.assert_array_equal(x.grad.numpy(), [2 + 3 + 1 + 2, 4 + 3 + 10 + 2])
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        autograd.backward([x * 1, x * 2], [dlscratch.ones(2)])
