"""Module and Parameter: registration, names, modes, devices, saving and loading, printing."""

import copy
from collections import OrderedDict

import numpy as np
import pytest

import dlscratch
from dlscratch import backend as B
from dlscratch import nn, optim


class Block(nn.Module):
    """A hand-made module: one parameter, one buffer, one sub-module, one plain attribute."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter([2.0, 3.0])
        self.register_buffer("steps", dlscratch.zeros(1))
        self.inner = nn.Linear(2, 2)
        self.label = "not registered"

    def forward(self, x):
        return self.inner(x) * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Sequential(nn.Tanh(), nn.Linear(2, 1))

    def forward(self, x):
        return self.head(self.block(x))


def test_parameter_is_a_float32_leaf_that_requires_grad():
    p = nn.Parameter([1, 2, 3])
    assert isinstance(p, dlscratch.Tensor) and p.requires_grad and p.is_leaf
    assert p.dtype == np.float32
    assert nn.Parameter(np.ones(2, dtype=np.float64)).dtype == np.float64  # kept, e.g. for gradcheck
    assert nn.Parameter(dlscratch.tensor([1.0, 2.0])).dtype == np.float32
    assert not nn.Parameter([1.0], requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter([1., 2., 3.], dtype=float32")


def test_registration_by_assignment_and_nested_names():
    net = Net()
    names = [name for name, _ in net.named_parameters()]
    assert names == ["block.scale", "block.inner.weight", "block.inner.bias", "head.1.weight", "head.1.bias"]
    assert [name for name, _ in net.named_buffers()] == ["block.steps"]
    assert [name for name, _ in net.named_children()] == ["block", "head"]
    assert [name for name, _ in net.named_modules()] == ["", "block", "block.inner", "head", "head.0", "head.1"]
    assert list(net.children()) == [net.block, net.head]
    assert len(list(net.modules())) == 6
    assert net.block.label == "not registered" and "label" not in net.block._parameters
    assert list(net.parameters())[0] is net.block.scale


def test_shared_parameters_are_listed_once():
    layer = nn.Linear(3, 3)
    model = nn.Sequential(layer, nn.ReLU(), layer)
    assert len(list(model.parameters())) == 2
    assert model.num_parameters() == 12


def test_reassigning_and_deleting_attributes_updates_the_registries():
    m = Block()
    m.scale = None  # an absent parameter, like Linear(bias=False)
    assert [n for n, _ in m.named_parameters()] == ["inner.weight", "inner.bias"]
    m.inner = nn.Parameter([1.0])  # a name moves from sub-module to parameter
    assert "inner" not in m._modules and m.inner.shape == (1,)
    del m.inner
    with pytest.raises(AttributeError, match="has no attribute 'inner'"):
        _ = m.inner
    m.steps = dlscratch.ones(1)
    assert m.steps.item() == 1.0 and [n for n, _ in m.named_buffers()] == ["steps"]


def test_registration_errors_are_clear():
    m = Block()
    with pytest.raises(TypeError, match="wrap it as Parameter"):
        m.scale = dlscratch.tensor([1.0, 1.0])
    with pytest.raises(TypeError, match="expected a Tensor or None"):
        m.register_buffer("running", np.zeros(2))
    with pytest.raises(KeyError, match="without '.'"):
        m.register_buffer("a.b", dlscratch.zeros(1))
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("label", dlscratch.zeros(1))

    class Forgetful(nn.Module):
        def __init__(self):
            self.w = nn.Parameter([1.0])

    with pytest.raises(AttributeError, match=r"call super\(\).__init__\(\) first in Forgetful.__init__"):
        Forgetful()
    with pytest.raises(NotImplementedError, match="Module must define forward"):
        nn.Module()(1)


def test_train_and_eval_reach_every_module():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net.head.train(False)
    assert net.training and net.block.training and not net.head[1].training


def test_zero_grad_sets_every_grad_to_none():
    net = Net()
    net(dlscratch.randn(4, 2)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_to_cpu_keeps_the_same_parameter_objects():
    net = Net()
    net(dlscratch.randn(4, 2)).sum().backward()
    params = list(net.parameters())
    assert net.to("cpu") is net
    assert [id(p) for p in net.parameters()] == [id(p) for p in params]
    assert all(p.device == "cpu" and isinstance(p.data, np.ndarray) for p in params)
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        net.to("tpu")


def test_to_dtype_casts_floating_parameters_and_buffers_in_place():
    net = Net()
    net(dlscratch.randn(1, 2)).sum().backward()
    weight = net.block.inner.weight
    before = weight.detach().numpy().copy()
    net.to(np.float64)
    assert net.block.inner.weight is weight and weight.dtype == np.float64 and weight.grad.dtype == np.float64
    assert net.block.steps.dtype == np.float64
    np.testing.assert_array_equal(weight.detach().numpy(), before)
    with pytest.raises(TypeError, match="floating point"):
        net.to(np.int64)


def test_to_gpu_moves_parameters_buffers_and_grads_and_the_optimizer_follows(gpu):
    net = Net()
    net(dlscratch.randn(4, 2)).sum().backward()
    opt = optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    weight = net.block.inner.weight
    net.to("gpu")
    assert net.block.inner.weight is weight
    assert all(t.device == "gpu" for t in list(net.parameters()) + list(net.buffers()))
    assert weight.grad.device == "gpu"
    x = dlscratch.randn(4, 2).to("gpu")
    opt.zero_grad()
    net(x).sum().backward()
    opt.step()
    assert weight.device == "gpu" and B.is_gpu_array(opt.state[weight]["momentum_buffer"])
    state = net.state_dict()
    cpu_net = Net()
    cpu_net.load_state_dict(state)  # GPU arrays into a CPU model
    np.testing.assert_allclose(cpu_net.block.inner.weight.detach().numpy(), weight.detach().numpy())
    net.to("cpu")
    assert weight.device == "cpu"


def test_state_dict_names_shares_data_and_is_detached():
    net = Net()
    state = net.state_dict()
    assert isinstance(state, OrderedDict)
    assert list(state) == [
        "block.scale", "block.steps", "block.inner.weight", "block.inner.bias", "head.1.weight", "head.1.bias",
    ]
    assert state["block.inner.weight"].data is net.block.inner.weight.data
    assert not state["block.inner.weight"].requires_grad


def test_state_dict_round_trip_gives_the_same_model():
    dlscratch.manual_seed(0)
    source, target = Net(), Net()
    source.block.steps.data[...] = 7
    x = dlscratch.randn(5, 2)
    assert not np.allclose(source(x).detach().numpy(), target(x).detach().numpy())
    weight = target.block.inner.weight
    result = target.load_state_dict(source.state_dict())
    assert result == ([], []) and result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(source(x).detach().numpy(), target(x).detach().numpy())
    assert target.block.inner.weight is weight and weight.data is not source.block.inner.weight.data
    assert target.block.steps.item() == 7


def test_load_state_dict_accepts_arrays_and_casts_to_the_parameter_dtype():
    model = nn.Linear(2, 1)
    model.load_state_dict({"weight": np.array([[1.0, 2.0]]), "bias": np.array([0.5])})  # float64 arrays
    assert model.weight.dtype == np.float32
    np.testing.assert_array_equal(model.weight.detach().numpy(), [[1.0, 2.0]])
    np.testing.assert_array_equal(model(dlscratch.tensor([[1.0, 1.0]])).detach().numpy(), [[3.5]])


def test_strict_load_lists_every_missing_unexpected_and_mismatched_key():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    before = model[0].weight.detach().numpy().copy()
    state = {"0.weight": np.zeros((3, 2)), "0.bias": np.zeros(4), "2.weight": np.zeros((1, 3)), "extra": np.zeros(1)}
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(state)
    message = str(info.value)
    assert "0.bias: checkpoint has shape (4,), the model has (3,)" in message
    assert "missing key: 2.bias" in message
    assert "unexpected key: extra" in message
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), before)  # nothing was loaded


def test_non_strict_load_returns_the_key_lists_but_still_rejects_shapes():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    result = model.load_state_dict({"0.weight": np.ones((3, 2)), "other": np.zeros(1)}, strict=False)
    assert result.missing_keys == ["0.bias", "2.weight", "2.bias"] and result.unexpected_keys == ["other"]
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), np.ones((3, 2)))
    with pytest.raises(RuntimeError, match=r"0.weight: checkpoint has shape \(2, 3\)"):
        model.load_state_dict({"0.weight": np.ones((2, 3))}, strict=False)


def test_repr_shows_the_tree_and_parameter_counts():
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.2), nn.Linear(256, 10))
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Flatten(start_dim=1, end_dim=-1)\n"
        "  (1): Linear(in_features=784, out_features=256, bias=True)  # 200,960 parameters\n"
        "  (2): ReLU()\n"
        "  (3): Dropout(p=0.2)\n"
        "  (4): Linear(in_features=256, out_features=10, bias=True)  # 2,570 parameters\n"
        ")  # 203,530 parameters"
    )
    assert model.num_parameters() == 784 * 256 + 256 + 256 * 10 + 10
    nested = repr(Net())
    assert "  (head): Sequential(\n    (0): Tanh()\n    (1): Linear(in_features=2, out_features=1, bias=True)" in nested
    assert nested.endswith(")  # 11 parameters")
    assert repr(nn.Softmax(dim=1)) == "Softmax(dim=1)"


def test_sequential_indexing_len_iteration_and_append():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    model = nn.Sequential(a, b)
    model.append(c)
    assert len(model) == 3 and list(model) == [a, b, c]
    assert model[0] is a and model[-1] is c
    assert isinstance(model[1:], nn.Sequential) and list(model[1:]) == [b, c]
    x = dlscratch.randn(4, 2)
    np.testing.assert_array_equal(model(x).detach().numpy(), c(b(a(x))).detach().numpy())
    with pytest.raises(IndexError, match="index 3 is out of range for 3 modules"):
        model[3]
    with pytest.raises(TypeError, match="item 1 is a function, not a Module"):
        nn.Sequential(a, dlscratch.functional.relu)
    named = nn.Sequential(OrderedDict([("fc", a), ("act", b)]))
    assert [n for n, _ in named.named_parameters()] == ["fc.weight", "fc.bias"]


def test_apply_visits_every_module_and_deepcopy_is_independent():
    net = Net()
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert sorted(seen) == ["Block", "Linear", "Linear", "Net", "Sequential", "Tanh"] and seen[-1] == "Net"
    twin = copy.deepcopy(net)
    twin.block.inner.weight.data[...] = 0
    assert not np.all(net.block.inner.weight.detach().numpy() == 0)
