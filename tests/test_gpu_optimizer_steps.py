"""The optimizer's step on the GPU path (dlscratch/fast/optim.py, optim_kernels.py), run by the strict CuPy stand-in:
one fused kernel per parameter, in place in the parameter's own arrays, keeping every promise of the reference
path's updates: the same numbers, state_dict, pruning, parameters without a gradient or added later, tied weights,
the whole-or-nothing step, the halt flag, a cast or a move after the state was made refused without a change."""

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as B
from dlscratch import nn, optim
from dlscratch.bench.workloads import WORKLOADS
from dlscratch.fast.optim_halt import halting_on
from dlscratch.nn.utils import prune
from dlscratch.optim import optimizer as optimizer_module

RULES = {
    "sgd": (optim.SGD, dict(lr=0.1)),
    "sgd decay": (optim.SGD, dict(lr=0.1, weight_decay=0.01)),
    "momentum": (optim.SGD, dict(lr=0.1, momentum=0.9)),
    "dampening": (optim.SGD, dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=1e-3)),
    "nesterov": (optim.SGD, dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=1e-2)),
    "adam": (optim.Adam, dict(lr=1e-2, weight_decay=0.1)),
    "adadelta": (optim.AdaDelta, dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.01)),
}
ALL_RULES = pytest.mark.parametrize("name", list(RULES))
STATEFUL = pytest.mark.parametrize("name", ["momentum", "adam", "adadelta"])


def mlp(device, tied=False):
    """Linear 6 -> 5, ReLU, Linear 5 -> 3 on ``device`` (with ``tied``, a third layer reuses the second's weight)."""
    dlscratch.manual_seed(0)
    layers = [nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 5)]
    if tied:
        layers += [nn.ReLU(), nn.Linear(5, 5)]
        layers[-1].weight = layers[2].weight
    return nn.Sequential(*layers).to(device)


def batch(device, seed=1, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = dlscratch.tensor(rng.standard_normal((8, 6)).astype(dtype)).to(device)
    return x, dlscratch.tensor(rng.integers(0, 5, 8)).to(device)


def train(model, optimizer, steps=3, device=None):
    device = device or model[0].weight.device
    for step in range(steps):
        x, y = batch(device, seed=step)
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def values(model):
    return [B.to_cpu(p.data).astype(np.float32) for p in model.parameters()]


def assert_same(got, expected, rtol=1e-5, atol=1e-6):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def host(value):
    """A state entry on the host: an array copied from the device, anything else (a step count) as it is."""
    return B.to_cpu(value).copy() if hasattr(value, "shape") else value


def assert_state_unchanged(state, earlier):
    """Each entry of optimizer ``state`` (a ``state_dict()["state"]``) equals ``earlier``'s, exactly."""
    for i, entry in state.items():
        for key, value in entry.items():
            np.testing.assert_array_equal(host(value), host(earlier[i][key]))


def stepped_with_gradients(name):
    """A model and optimizer ``name`` (of ``RULES``) after one step, the next batch's gradients in place."""
    rule, settings = RULES[name]
    model = mlp("gpu")
    optimizer = rule(model.parameters(), **settings)
    train(model, optimizer, steps=1)
    x, y = batch("gpu")
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    return model, optimizer


def trained_both_ways(name, steps=3, **model_options):
    """The model's values after ``steps`` steps on the stand-in's GPU (fused kernels) and on the reference path on
    the CPU (the updates written as their formulas)."""
    rule, settings = RULES[name]
    out = {}
    for device in ("gpu", "cpu"):
        model = mlp(device, **model_options)
        optimizer = rule(model.parameters(), **settings)
        if device == "cpu":
            with dlscratch.reference():
                train(model, optimizer, steps)
        else:
            train(model, optimizer, steps)
        out[device] = (model, optimizer)
    return out


@ALL_RULES
def test_the_gpu_step_gives_the_reference_steps_numbers(stand_in, fast_path, name):
    runs = trained_both_ways(name)
    assert_same(values(runs["gpu"][0]), values(runs["cpu"][0]))


def test_a_training_step_launches_one_optimizer_kernel_per_parameter_and_copies_nothing(stand_in, fast_path):
    """One fused launch per parameter (4, 8 and 6 here) in the parameter's own arrays; zero_grad launches nothing."""
    parameters = {"MLP": 4, "Keras CNN": 8, "Qiita CNN": 6}
    for workload in WORKLOADS:
        name = next((key for key in parameters if workload.name.startswith(key)), None)
        if name is None:
            continue
        step = workload.build()
        step()
        with B.ledger() as book:
            step()
        optimizer_kernels = sum(n for site, _, _, n in book.by_site("kernel") if "optim_kernels.py" in site)
        assert optimizer_kernels == parameters[name], book.table()
        assert book.copies_device == 0 and book.memsets == 0, book.table()


@STATEFUL
def test_state_dict_round_trip_gives_the_per_parameter_optimizers_state(stand_in, fast_path, name):
    runs = trained_both_ways(name, steps=2)
    (gpu_model, gpu_opt), (cpu_model, cpu_opt) = runs["gpu"], runs["cpu"]
    saved, expected = gpu_opt.state_dict(), cpu_opt.state_dict()
    assert saved["param_groups"] == expected["param_groups"]
    assert saved["state"].keys() == expected["state"].keys()
    for i, entry in saved["state"].items():
        assert entry.keys() == expected["state"][i].keys()
        for key, value in entry.items():
            if hasattr(value, "shape"):
                np.testing.assert_allclose(B.to_cpu(value), expected["state"][i][key], rtol=1e-5, atol=1e-6)
            else:
                assert value == expected["state"][i][key]
    # loaded into a new optimizer, training goes on alike
    rule, settings = RULES[name]
    resumed = rule(gpu_model.parameters(), **settings)
    resumed.load_state_dict(saved)
    train(gpu_model, resumed, steps=2)
    with dlscratch.reference():
        train(cpu_model, cpu_opt, steps=2)
    assert_same(values(gpu_model), values(cpu_model))


def test_the_models_state_dict_shares_the_parameters_arrays_through_steps(stand_in, fast_path):
    model = mlp("gpu")
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = model.state_dict()
    arrays = [p.data for p in model.parameters()]
    train(model, optimizer, steps=2)
    assert all(state[k].data is p.data for k, p in zip(state, model.parameters()))
    assert all(p.data is a for p, a in zip(model.parameters(), arrays))


@STATEFUL
def test_a_parameter_without_a_gradient_keeps_its_values_and_state(stand_in, fast_path, name):
    model, optimizer = stepped_with_gradients(name)
    skipped = model[0].bias
    skipped.grad = None
    before = B.to_cpu(skipped.data).copy()
    state = {k: host(v) for k, v in optimizer.state[skipped].items()}
    others = [B.to_cpu(p.data).copy() for p in model.parameters() if p is not skipped]
    with B.ledger() as book:
        optimizer.step()
    np.testing.assert_array_equal(B.to_cpu(skipped.data), before)
    for key, value in optimizer.state[skipped].items():
        np.testing.assert_array_equal(host(value), state[key])
    assert all((B.to_cpu(p.data) != old).any() for p, old in zip(
        [p for p in model.parameters() if p is not skipped], others))
    kernels = [n for site, _, _, n in book.by_site("kernel") if "optim_kernels.py" in site]
    assert sum(kernels) == 3  # one per parameter that has a gradient


@pytest.mark.parametrize("name", ["momentum", "adam"])
def test_a_group_added_later_gets_its_own_hyperparameters_and_first_step(stand_in, fast_path, name):
    rule, settings = RULES[name]
    out = []
    for device in ("gpu", "cpu"):
        model = mlp(device)
        optimizer = rule(list(model[0].parameters()), **settings)
        with dlscratch.reference() if device == "cpu" else dlscratch.engine.switch.fast_path():
            train(model, optimizer, steps=2)
            optimizer.add_param_group({"params": list(model[2].parameters()), "lr": 0.02})
            train(model, optimizer, steps=2)
        out.append(values(model))
    assert_same(*out)


def test_tied_weights_train_as_on_the_reference_path(stand_in, fast_path):
    runs = trained_both_ways("momentum", tied=True)
    assert_same(values(runs["gpu"][0]), values(runs["cpu"][0]))


@pytest.mark.parametrize("cast", ["half", "double", "cpu"])
def test_a_cast_or_a_move_after_the_state_was_made_is_refused_and_changes_nothing(stand_in, fast_path, cast):
    """PyTorch's fused and foreach optimizers refuse state of another dtype or device than the parameter's."""
    model = mlp("gpu")
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    train(model, optimizer, steps=2)
    model.to("cpu") if cast == "cpu" else getattr(model, cast)()
    dtype = {"half": np.float16, "double": np.float64, "cpu": np.float32}[cast]
    x, y = batch(model[0].weight.device, dtype=dtype)
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    before, state = values(model), optimizer.state_dict()["state"]
    with B.ledger() as book, pytest.raises(RuntimeError, match="cast or moved after the optimizer made its state"):
        optimizer.step()
    assert book.launches == 0
    assert_same(values(model), before, rtol=0, atol=0)
    assert_state_unchanged(optimizer.state_dict()["state"], state)
    fresh = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)  # a new optimizer's state is of the new dtype
    fresh.step()
    assert all(np.isfinite(v).all() for v in values(model))


def test_a_model_pruned_after_the_first_step_trains_as_on_the_reference_path(stand_in, fast_path):
    out = []
    for device in ("gpu", "cpu"):
        model = mlp(device)
        optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        with dlscratch.reference() if device == "cpu" else dlscratch.engine.switch.fast_path():
            train(model, optimizer, steps=1)
            prune.l1_unstructured(model[0], "weight", amount=0.5)  # weight_orig: the same Parameter
            train(model, optimizer, steps=2)
            assert prune.sparsity(model[0]) == 0.5
            prune.remove(model[0], "weight")  # a new array for the Parameter: the storage is laid out again
            train(model, optimizer, steps=1)
        out.append(values(model))
    assert_same(*out)


@pytest.mark.parametrize("name", ["momentum", "adam"])
def test_an_error_while_the_step_is_prepared_writes_nothing(stand_in, fast_path, monkeypatch, name):
    model, optimizer = stepped_with_gradients(name)
    before = values(model)
    state = optimizer.state_dict()
    made = [0]

    class FailingThird(optimizer_module.Staged):
        def __init__(self, *args):
            made[0] += 1
            if made[0] == 3:
                raise MemoryError("no memory for the third parameter's update")
            super().__init__(*args)

    monkeypatch.setattr(optimizer_module, "Staged", FailingThird)
    with B.ledger() as book, pytest.raises(MemoryError):
        optimizer.step()
    assert book.launches == 0, book.table()
    assert_same(values(model), before, rtol=0, atol=0)
    assert_state_unchanged(optimizer.state_dict()["state"], state["state"])


@STATEFUL
def test_the_halt_flag_stops_the_gpu_step_from_writing(stand_in, fast_path, name):
    model, optimizer = stepped_with_gradients(name)
    before, state = values(model), optimizer.state_dict()["state"]
    with halting_on(B.module_for("gpu").array([1.0, 2.0])):
        optimizer.step()
    assert_same(values(model), before, rtol=0, atol=0)
    for i, entry in state.items():
        for key, value in entry.items():
            if hasattr(value, "shape"):
                np.testing.assert_array_equal(B.to_cpu(optimizer.state[list(model.parameters())[i]][key]),
                                              B.to_cpu(value))


def test_zero_grad_launches_nothing(stand_in, fast_path):
    model = mlp("gpu")
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    train(model, optimizer, steps=1)
    with B.ledger() as book:
        optimizer.zero_grad()
        model.zero_grad()
    assert book.launches == 0 and all(p.grad is None for p in model.parameters())


def test_an_optimizer_of_its_own_takes_its_own_rule_on_the_gpu(stand_in, fast_path):
    class Mine(optim.SGD):
        def _update(self, staged, grad, state, group):
            staged.delta = group["lr"] * grad

    model = mlp("gpu")
    optimizer = Mine(model.parameters(), lr=0.1)
    train(model, optimizer, steps=1)
    cpu_model = mlp("cpu")
    cpu_optimizer = optim.SGD(cpu_model.parameters(), lr=0.1)
    train(cpu_model, cpu_optimizer, steps=1)
    assert_same(values(model), values(cpu_model))
