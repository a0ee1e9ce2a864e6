"""The backward pass: reused nodes, long chains, accumulation, seeds, no_grad, freeing graphs."""

import gc
import weakref

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import Function


def test_reused_node_accumulates(backend):
    a = dlscratch.tensor(3.0, requires_grad=True)
    b = a + a
    c = b + b
    c.backward()
    assert c.item() == 12.0
    assert a.grad.item() == 4.0


def test_diamond_graph(backend):
    # y = (2x) * (x^2) = 2 x^3, so dy/dx = 6 x^2.
    x = dlscratch.tensor([1.0, -2.0], requires_grad=True)
    left, right = x * 2, x**2
    y = (left * right).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 24.0], rtol=1e-6)


def test_long_chain_does_not_recurse():
    x = dlscratch.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.backward()
    np.testing.assert_allclose(x.grad.item(), 1.0001**10_000, rtol=1e-3)
    del y  # freeing a deep graph must not overflow the stack either


def test_second_backward_adds_to_grad_and_zero_grad_resets():
    # Gradients accumulate across backward calls, as in PyTorch: the graph is kept, and a
    # second backward adds its gradient to .grad. zero_grad() sets .grad back to None.
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0])
    x.zero_grad()
    assert x.grad is None
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_grad_does_not_share_memory_with_the_seed():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    seed = np.ones(2, dtype=np.float32)
    x.backward(seed)
    x.backward(seed)
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(seed, [1.0, 1.0])


def test_fresh_gradients_are_adopted_and_shared_ones_copied():
    W = dlscratch.randn(3, 4, requires_grad=True)
    x = dlscratch.randn(5, 4, requires_grad=True)
    F.linear(x, W).sum().backward()
    expected = np.ones((5, 3), np.float32).T @ x.detach().numpy()
    np.testing.assert_allclose(W.grad.numpy(), expected, rtol=1e-6)
    # add passes one array to both inputs: the two leaves must not share it
    a = dlscratch.randn(3, requires_grad=True)
    b = dlscratch.randn(3, requires_grad=True)
    (a + b).backward(grad=np.ones(3, np.float32))
    assert not np.shares_memory(a.grad.data, b.grad.data)
    a.grad.data += 1
    np.testing.assert_array_equal(b.grad.numpy(), np.ones(3))
    # one matmul input used twice: both contributions arrive and add up
    m = dlscratch.tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), requires_grad=True)
    (m @ m).sum().backward()
    g = np.ones((2, 2))
    np.testing.assert_allclose(m.grad.numpy(), g @ m.detach().numpy().T + m.detach().numpy().T @ g)


def test_intermediate_grads_are_not_kept_unless_retained():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    kept = (x * 2).retain_grad()
    y = (h * h + kept * 5).sum()
    y.backward()
    assert h.grad is None
    np.testing.assert_array_equal(kept.grad.numpy(), [5.0, 5.0])
    np.testing.assert_array_equal(x.grad.numpy(), [18 * 1 + 10, 18 * 2 + 10])


def test_non_scalar_backward_needs_a_grad(backend):
    x = dlscratch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    with pytest.raises(RuntimeError, match=r"only be created implicitly for a scalar.*shape \(3,\).*grad="):
        y.backward()
    y.backward(backend.asarray([1.0, 0.0, -1.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, -6.0])


def test_backward_with_a_grad_list_and_tensor():
    x = dlscratch.tensor([[1.0, 2.0]], requires_grad=True)
    (x * 2).backward([[1.0, 1.0]])
    (x * 2).backward(dlscratch.tensor([[0.5, 0.5]]))
    np.testing.assert_array_equal(x.grad.numpy(), [[3.0, 3.0]])


def test_backward_without_grad_raises():
    x = dlscratch.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        (x * 2).sum().backward()


def test_leaf_backward_seeds_itself():
    x = dlscratch.tensor(2.0, requires_grad=True)
    x.backward()
    assert x.grad.item() == 1.0


def test_constant_inputs_get_no_grad(backend):
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    c = dlscratch.tensor([3.0, 4.0])
    (x * c + c).sum().backward()
    assert c.grad is None and not c.requires_grad
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


def test_gradients_reduced_over_broadcast_dimensions(backend):
    a = dlscratch.tensor(backend.ones((2, 3)), requires_grad=True)  # a NumPy array would stay on the CPU
    row = dlscratch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    col = dlscratch.tensor([[10.0], [20.0]], requires_grad=True)
    s = dlscratch.tensor(2.0, requires_grad=True)
    (a * row * col * s).sum().backward()
    assert row.grad.shape == (3,) and col.grad.shape == (2, 1) and s.grad.shape == ()
    np.testing.assert_array_equal(row.grad.numpy(), [60.0, 60.0, 60.0])
    np.testing.assert_array_equal(col.grad.numpy(), [[12.0], [12.0]])
    assert s.grad.item() == 6 * 10 + 6 * 20
    np.testing.assert_array_equal(a.grad.numpy(), [[20, 40, 60], [40, 80, 120]])


def test_no_grad_records_nothing():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    with dlscratch.no_grad():
        y = x * 2
        assert not dlscratch.is_grad_enabled()
    assert y.creator is None and not y.requires_grad
    assert dlscratch.is_grad_enabled()
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])


def test_no_grad_nests_and_enable_grad_reenables():
    x = dlscratch.tensor([1.0], requires_grad=True)
    with dlscratch.no_grad():
        with dlscratch.no_grad():
            pass
        assert not dlscratch.is_grad_enabled()  # the inner block restored "off", not "on"
        with dlscratch.enable_grad():
            y = x * 2
        z = x * 2
    assert y.requires_grad and y.creator is not None
    assert not z.requires_grad
    with dlscratch.set_grad_enabled(False):
        assert not (x * 2).requires_grad


def test_no_grad_restores_after_an_exception():
    with pytest.raises(KeyError), dlscratch.no_grad():
        raise KeyError("inside no_grad")
    assert dlscratch.is_grad_enabled()


def test_function_outputs_are_held_weakly():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    fn = y.creator
    assert isinstance(fn.outputs[0], weakref.ref) and fn.outputs[0]() is y
    assert fn.inputs[0] is x


def test_graph_is_freed_with_its_last_tensor():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    hidden = (x * 2).exp()
    loss = (hidden * 3).sum()
    hidden_ref, fn_ref = weakref.ref(hidden), weakref.ref(hidden.creator)
    loss.backward()
    del hidden
    assert hidden_ref() is not None  # still part of loss's graph
    del loss
    gc.collect()
    assert hidden_ref() is None and fn_ref() is None
    assert x.grad is not None


def test_graph_is_freed_without_the_cycle_collector():
    # Outputs are held by weak reference, so a graph has no reference cycles: reference
    # counting alone frees it.
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    gc.disable()
    try:
        y = (x * 2).tanh()
        loss = y.sum()
        loss.backward()
        refs = [weakref.ref(y), weakref.ref(y.creator), weakref.ref(loss.creator)]
        del y, loss
        assert all(r() is None for r in refs)
    finally:
        gc.enable()


def _count_functions():
    return sum(1 for obj in gc.get_objects() if isinstance(obj, Function))


def test_training_loop_does_not_leak_functions():
    dlscratch.manual_seed(0)
    x, target = dlscratch.randn(8, 3), dlscratch.randint(0, 2, (8,))
    W = dlscratch.randn(2, 3, requires_grad=True)
    b = dlscratch.zeros(2, requires_grad=True)
    counts = []
    for step in range(60):
        loss = F.cross_entropy(F.relu(F.linear(x, W, b)) * 2 - 1, target)
        loss.backward()
        with dlscratch.no_grad():
            W.data -= 0.1 * W.grad.data
            b.data -= 0.1 * b.grad.data
        W.zero_grad()
        b.zero_grad()
        if step in (10, 59):
            gc.collect()
            counts.append(_count_functions())
    assert counts[1] == counts[0]


def test_backward_rejects_a_wrong_gradient_shape_from_a_function():
    class BadDouble(Function):
        def forward(self, x):
            return x * 2

        def backward(self, gy):
            return gy.sum()

    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"baddouble.backward returned a gradient of shape \(\) .* \(2,\)"):
        BadDouble()(x).sum().backward()


def test_multi_output_function():
    class Split(Function):
        def forward(self, x):
            return x[:1] * 1, x[1:] * 1

        def backward(self, g0, g1):
            xp = dlscratch.backend.get_array_module(g0 if g0 is not None else g1)
            g0 = xp.zeros(1, dtype=g1.dtype) if g0 is None else g0
            g1 = xp.zeros(2, dtype=g0.dtype) if g1 is None else g1
            return xp.concatenate([g0, g1])

    x = dlscratch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    first, rest = Split()(x)
    (first * 5 + rest.sum()).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 1.0, 1.0])
    x.zero_grad()
    _, rest = Split()(x)
    (rest * 3).sum().backward()  # the unused output's gradient arrives as None
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 3.0, 3.0])
