"""``register_post_accumulate_grad_hook`` and ``autograd.queue_callback``: what DistributedDataParallel builds on."""

import numpy as np
import pytest

import dlscratch
from dlscratch import autograd, nn
from dlscratch.distributed import DistributedDataParallel


def test_a_hook_runs_once_per_backward_with_the_whole_gradient_and_can_be_removed(path):
    """Issue 52: ``x * x + x`` gives ``x`` three parts of its gradient; PyTorch calls the hook once, after all."""
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    ((x * x) + x).sum().backward()
    assert [s.tolist() for s in seen] == [[3.0, 5.0]]
    ((x * 2).sum() + (x * 3).sum()).backward()  # a second backward: the hook again, once, with the sum so far
    assert [s.tolist() for s in seen] == [[3.0, 5.0], [8.0, 10.0]]
    handle.remove()
    x.sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="only a leaf"):
        (x * 2).register_post_accumulate_grad_hook(print)
    with pytest.raises(TypeError, match="callable"):
        x.register_post_accumulate_grad_hook(3)


def test_a_use_that_sends_no_gradient_still_lets_the_hook_run_once_the_walk_ends(path):
    """A user's Function returning None for a leaf: that use brings no part, and the hook runs at the end."""

    class FirstOnly(dlscratch.Function):
        def forward(self, a, b):
            return a + b

        def backward(self, gy):
            return gy, None

    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (FirstOnly()(x * 2, x) + x).sum().backward()
    assert [s.tolist() for s in seen] == [[3.0, 3.0]]


def test_callbacks_queued_during_backward_run_once_after_every_leaf_has_its_gradient():
    a, b = (dlscratch.tensor(np.full(2, v, np.float32), requires_grad=True) for v in (1.0, 2.0))
    order = []

    def queue_once(t):
        order.append(("grad", id(t)))
        if len(order) == 1:
            autograd.queue_callback(lambda: order.append(("done", a.grad is not None and b.grad is not None)))

    a.register_post_accumulate_grad_hook(queue_once)
    b.register_post_accumulate_grad_hook(queue_once)
    (a * b).sum().backward()
    assert order[-1] == ("done", True) and [kind for kind, _ in order].count("done") == 1
    with pytest.raises(RuntimeError, match="no backward pass is running"):
        autograd.queue_callback(print)
    leaf = dlscratch.tensor(np.ones(2, np.float32), requires_grad=True)
    leaf.register_post_accumulate_grad_hook(lambda t: autograd.queue_callback(lambda: order.append("leaf")))
    leaf.backward(np.ones(2, np.float32))  # a leaf's own backward is a pass too
    assert order[-1] == "leaf"


def test_ddp_checks_its_arguments_and_forwards_to_its_module():
    net = nn.Linear(3, 2)
    with pytest.raises(TypeError, match="nn.Module"):
        DistributedDataParallel(lambda x: x)
    for bad in (0, -1, True, "25"):
        with pytest.raises(ValueError, match="bucket_cap_mb"):
            DistributedDataParallel(net, bucket_cap_mb=bad)
    model = DistributedDataParallel(net)
    x = dlscratch.tensor(np.ones((4, 3), np.float32))
    np.testing.assert_array_equal(model(x).detach().numpy(), net(x).detach().numpy())
    assert list(model.state_dict()) == ["module.weight", "module.bias"]  # PyTorch's names
    with model.no_sync():
        model(x).sum().backward()
    np.testing.assert_array_equal(net.weight.grad.numpy(), np.full((2, 3), 4, np.float32))
