"""Misuse of state: loading bad state dicts is all-or-nothing and names the key, optimizers reject
bad hyperparameters as PyTorch does, and an odd seed never leaves the random generators broken."""

import numpy as np
import pytest

import dlscratch
from dlscratch import nn, optim


def _model():
    model = nn.Linear(2, 3)
    model.weight.data[...] = np.arange(6, dtype=np.float32).reshape(3, 2)
    model.bias.data[...] = [7.0, 8.0, 9.0]
    return model


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.array(["a", "b", "c"]), r"bias: .*<U1.*cannot be loaded"),
        (np.array([1.0, None, 2.0], dtype=object), r"bias: .*object.*cannot be loaded"),
        (np.array([1 + 2j, 0j, 0j]), r"bias: .*complex128.*cannot be loaded"),
        ([1.0, [2.0], 3.0], r"bias: .*not an array of numbers"),
        (None, r"bias: .*object.*cannot be loaded"),
    ],
)
def test_module_load_state_dict_checks_every_value_before_writing(bad, message):
    model = _model()
    state = {"weight": np.full((3, 2), -1.0), "bias": bad}  # "weight" comes first and is fine
    with pytest.raises(RuntimeError, match=message):
        model.load_state_dict(state)
    np.testing.assert_array_equal(model.weight.data, np.arange(6).reshape(3, 2))
    np.testing.assert_array_equal(model.bias.data, [7.0, 8.0, 9.0])


def test_module_load_state_dict_still_casts_numbers():
    model = _model()
    model.load_state_dict({"weight": np.ones((3, 2), dtype=np.int64), "bias": [True, False, True]})
    assert model.weight.dtype == np.float32
    np.testing.assert_array_equal(model.bias.data, [1.0, 0.0, 1.0])


def _trained_sgd():
    p = nn.Parameter([1.0, 2.0])
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = dlscratch.tensor([1.0, 1.0])
    opt.step()
    return p, opt


@pytest.mark.parametrize(
    "spoil, message",
    [
        (lambda sd: sd["state"][0].update(momentum_buffer=np.array(["x", "y"])), r"momentum_buffer.*<U1"),
        (lambda sd: sd["state"][0].update(momentum_buffer=np.array([1j, 2j])), r"momentum_buffer.*complex"),
        (lambda sd: sd["param_groups"][0].update(lr=-5.0), r"group 0: .*Invalid learning rate: -5.0"),
        (lambda sd: sd["param_groups"][0].update(momentum="fast"), r"group 0: .*momentum.*'fast'"),
        (lambda sd: sd["state"].update({"first": sd["state"].pop(0)}), r"state key 'first' is not"),
        (lambda sd: sd.pop("state"), r"needs the keys \['param_groups', 'state'\]"),
    ],
)
def test_optimizer_load_state_dict_is_all_or_nothing(spoil, message):
    p, opt = _trained_sgd()
    sd = opt.state_dict()
    spoil(sd)
    buffer = opt.state[p]["momentum_buffer"].copy()
    with pytest.raises(ValueError, match=message):
        opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["momentum"] == 0.9
    np.testing.assert_array_equal(opt.state[p]["momentum_buffer"], buffer)


def test_adam_step_count_must_be_an_integer():
    p = nn.Parameter([1.0])
    opt = optim.Adam([p])
    p.grad = dlscratch.tensor([1.0])
    opt.step()
    sd = opt.state_dict()
    sd["state"][0]["step"] = "three"
    with pytest.raises(ValueError, match=r"parameter 0: step must be an integer, got 'three'"):
        opt.load_state_dict(sd)
    assert opt.state[p]["step"] == 1


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: optim.SGD([p], lr=-5), r"^SGD: Invalid learning rate: -5 \(must be a number in \[0, inf\]\)$"),
        (lambda p: optim.SGD([p], lr=float("nan")), r"Invalid learning rate: nan"),
        (lambda p: optim.SGD([p], lr="fast"), r"Invalid learning rate: 'fast'"),
        (lambda p: optim.SGD([p], lr=0.1, momentum=-0.5), r"Invalid momentum value: -0.5"),
        (lambda p: optim.SGD([p], lr=0.1, dampening=-1.0), r"Invalid dampening value: -1.0"),
        (lambda p: optim.SGD([p], lr=0.1, weight_decay=-1e-4), r"Invalid weight_decay value: -0.0001"),
        (lambda p: optim.Adam([p], eps=-1e-8), r"Invalid epsilon value: -1e-08"),
        (lambda p: optim.Adam([p], betas=(0.9, 1.0)), r"Invalid beta parameter at index 1: 1.0"),
        (lambda p: optim.Adam([p], betas=(-0.1, 0.9)), r"Invalid beta parameter at index 0: -0.1"),
        (lambda p: optim.Adam([p], betas=(0.9,)), r"betas must be two numbers in \[0, 1\), got \(0.9,\)"),
        (lambda p: optim.Adam([p], betas=0.9), r"betas must be two numbers in \[0, 1\), got 0.9"),
        (lambda p: optim.AdaDelta([p], rho=1.5), r"Invalid rho value: 1.5"),
        (lambda p: optim.AdaDelta([p], lr=-1.0), r"Invalid learning rate: -1.0"),
    ],
)
def test_hyperparameters_are_validated_as_pytorch_does(make, message):
    with pytest.raises(ValueError, match=message):
        make(nn.Parameter([1.0]))


def test_add_param_group_validates_and_adds_nothing_when_bad():
    a, b = nn.Parameter([1.0]), nn.Parameter([2.0])
    opt = optim.Adam([a])
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        opt.add_param_group({"params": [b], "lr": -1})
    assert len(opt.param_groups) == 1
    opt.add_param_group({"params": [b], "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5


def _draws():
    return dlscratch.randn(4).data.tolist(), dlscratch.randint(0, 100, (3,)).data.tolist(), np.random.rand()


@pytest.mark.parametrize("seed", [-1, -(2**63), 2**32, 2**64 - 1])
def test_odd_seeds_are_accepted_and_repeatable(seed):
    dlscratch.manual_seed(seed)
    first = _draws()
    dlscratch.manual_seed(seed)
    assert _draws() == first


def test_negative_seeds_map_as_in_pytorch():
    dlscratch.manual_seed(-1)
    negative = _draws()
    dlscratch.manual_seed(2**64 - 1)
    assert _draws() == negative


@pytest.mark.parametrize(
    "seed, error, message",
    [
        (2**64, ValueError, r"manual_seed: the seed must be in \[-2\*\*63, 2\*\*64 - 1\], got 18446744073709551616"),
        (-(2**63) - 1, ValueError, r"must be in \[-2\*\*63, 2\*\*64 - 1\]"),
        (1.5, TypeError, r"manual_seed: the seed must be an integer, got float 1.5"),
        ("7", TypeError, r"got str '7'"),
    ],
)
def test_rejected_seeds_leave_the_generators_as_they_were(seed, error, message):
    dlscratch.manual_seed(3)
    expected = _draws()
    dlscratch.manual_seed(3)
    with pytest.raises(error, match=message):
        dlscratch.manual_seed(seed)
    assert _draws() == expected
