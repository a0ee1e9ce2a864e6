"""``register_post_accumulate_grad_hook`` and ``autograd.queue_callback``: what DistributedDataParallel builds on."""

import numpy as np
import pytest

import dlscratch
from dlscratch import autograd, nn
from dlscratch.distributed import DistributedDataParallel


def test_a_hook_sees_each_accumulation_into_a_leaf_and_can_be_removed():
    w = dlscratch.tensor(np.ones(3, np.float32), requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    ((w * 2).sum() + (w * 3).sum()).backward()  # w is used twice: two accumulations
    assert len(seen) == 2 and sorted(s[0] for s in seen) in ([2.0, 5.0], [3.0, 5.0])
    handle.remove()
    w.sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="only a leaf"):
        (w * 2).register_post_accumulate_grad_hook(print)
    with pytest.raises(TypeError, match="callable"):
        w.register_post_accumulate_grad_hook(3)


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
