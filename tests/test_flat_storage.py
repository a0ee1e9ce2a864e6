"""Flat storage on the GPU (dlscratch/fast/flat.py, flat_step.py), run by the strict CuPy stand-in: the parameters,
their gradients and the optimizer's state are views of one buffer each, backward writes the Linear and conv2d
gradients into their slots, and one fused launch updates every parameter, keeping every promise of the
per-parameter optimizers: the same numbers, state_dict, to()/half(), pruning, parameters without a gradient or added
later, tied weights, the whole-or-nothing step, the halt flag, and gradients kept by the user."""

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as B
from dlscratch import nn, optim
from dlscratch.bench.workloads import WORKLOADS
from dlscratch.fast import flat_step
from dlscratch.nn.utils import prune
from dlscratch.optim.halt import halting_on

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
    """The model's values after ``steps`` steps on the stand-in's GPU (flat storage) and on the reference path on
    the CPU (per-parameter updates, written as their formulas)."""
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


def storage(optimizer):
    return flat_step._storage[optimizer]


@ALL_RULES
def test_the_flat_step_gives_the_per_parameter_reference_steps_numbers(stand_in, fast_path, name):
    runs = trained_both_ways(name)
    assert_same(values(runs["gpu"][0]), values(runs["cpu"][0]))


def test_every_parameter_is_a_view_of_one_buffer_and_its_gradient_lands_in_its_slot(stand_in, fast_path):
    model = mlp("gpu")
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    train(model, optimizer, steps=1)
    (flat,) = storage(optimizer)
    flat.data[...] = 0  # a write into the buffer is a write into every parameter
    assert all((B.to_cpu(p.data) == 0).all() for p in model.parameters())
    x, y = batch("gpu")
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    flat.grad[...] = 7  # the gradients that backward made are views of the gradient buffer
    assert all((B.to_cpu(p.grad.data) == 7).all() for p in model.parameters())
    buf = optimizer.state[model[0].weight]["momentum_buffer"]
    flat.state["momentum_buffer"][0][...] = 3  # and the state is a view of its buffer
    assert (B.to_cpu(buf) == 3).all()


def test_a_training_step_launches_the_optimizer_once_and_copies_nothing(stand_in, fast_path):
    """Issue 42: one launch per optimizer step, however many parameters (4, 8 and 6 here); zero_grad launches
    nothing; no gradient is copied into the flat buffer."""
    for workload in WORKLOADS:
        if not workload.name.startswith(("MLP", "Keras CNN", "Qiita CNN")):
            continue
        step = workload.build()
        step()
        with B.ledger() as book:
            step()
        optimizer_kernels = [n for site, _, _, n in book.by_site("kernel") if "optim_kernels.py" in site]
        assert optimizer_kernels == [1], book.table()
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
    # loaded into a new optimizer (its state copied into the flat buffer at its first step), training goes on alike
    rule, settings = RULES[name]
    resumed = rule(gpu_model.parameters(), **settings)
    resumed.load_state_dict(saved)
    train(gpu_model, resumed, steps=2)
    with dlscratch.reference():
        train(cpu_model, cpu_opt, steps=2)
    assert_same(values(gpu_model), values(cpu_model))


def test_the_models_state_dict_round_trip_keeps_the_parameters_in_their_views(stand_in, fast_path):
    model = mlp("gpu")
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    train(model, optimizer, steps=1)
    (flat,) = storage(optimizer)
    saved = {k: B.to_cpu(v.data).copy() for k, v in model.state_dict().items()}
    train(model, optimizer, steps=1)
    model.load_state_dict(saved)  # copied into the parameters, in place: into their views
    assert flat.is_current() and storage(optimizer) == [flat]
    assert_same(values(model), list(saved.values()), rtol=0, atol=0)
    twin = mlp("cpu")
    twin.load_state_dict(saved)
    with dlscratch.reference():
        twin_optimizer = optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
        twin_optimizer.load_state_dict({"state": {i: {"momentum_buffer": B.to_cpu(v["momentum_buffer"])}
                                                  for i, v in optimizer.state_dict()["state"].items()},
                                        "param_groups": optimizer.state_dict()["param_groups"]})
        train(twin, twin_optimizer, steps=1)
    train(model, optimizer, steps=1)
    assert_same(values(model), values(twin))


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
    assert sum(kernels) == 2  # the run of parameters ends at the skipped one: before it, after it


@pytest.mark.parametrize("name", ["momentum", "adam"])
def test_a_group_added_later_gets_its_own_hyperparameters_and_first_step(stand_in, fast_path, name):
    rule, settings = RULES[name]
    out = []
    for device in ("gpu", "cpu"):
        model = mlp(device)
        optimizer = rule(list(model[0].parameters()), **settings)
        with dlscratch.reference() if device == "cpu" else dlscratch.paths.fast():
            train(model, optimizer, steps=2)
            optimizer.add_param_group({"params": list(model[2].parameters()), "lr": 0.02})
            train(model, optimizer, steps=2)
        out.append(values(model))
    assert_same(*out)


def test_tied_weights_train_as_on_the_reference_path(stand_in, fast_path):
    runs = trained_both_ways("momentum", tied=True)
    assert_same(values(runs["gpu"][0]), values(runs["cpu"][0]))


def test_half_after_the_storage_is_laid_out_lays_it_out_again_in_float16(stand_in, fast_path):
    out, optimizers = [], []
    for device in ("gpu", "cpu"):
        model = mlp(device)
        optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        train(model, optimizer, steps=2)
        model.half()
        x, y = batch(device, dtype=np.float16)
        for _ in range(2):
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        out.append(values(model))
        optimizers.append(optimizer)
    (flat,) = storage(optimizers[0])
    assert flat.data.dtype == np.float16 and flat.state["momentum_buffer"][0].dtype == np.float16
    assert_same(*out, rtol=4e-3, atol=4e-3)


def test_double_after_the_storage_is_laid_out_carries_the_state_over(stand_in, fast_path):
    out, models, optimizers = [], [], []
    for device in ("gpu", "cpu"):
        model = mlp(device)
        optimizer = optim.Adam(model.parameters(), lr=0.01)
        train(model, optimizer, steps=2)
        model.double()
        train(model, optimizer, steps=1)
        out.append(values(model))
        models.append(model)
        optimizers.append(optimizer)
    (flat,) = storage(optimizers[0])
    assert flat.data.dtype == np.float64 and flat.state["exp_avg"][0].dtype == np.float64
    assert optimizers[0].state[models[0][0].weight]["step"] == 3
    assert_same(*out)


def test_a_model_pruned_after_the_first_step_trains_as_on_the_reference_path(stand_in, fast_path):
    out = []
    for device in ("gpu", "cpu"):
        model = mlp(device)
        optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        with dlscratch.reference() if device == "cpu" else dlscratch.paths.fast():
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

    class FailingThird(flat_step.Staged):
        def __init__(self, *args):
            made[0] += 1
            if made[0] == 3:
                raise MemoryError("no memory for the third parameter's update")
            super().__init__(*args)

    monkeypatch.setattr(flat_step, "Staged", FailingThird)
    with B.ledger() as book, pytest.raises(MemoryError):
        optimizer.step()
    assert book.launches == 0, book.table()
    assert_same(values(model), before, rtol=0, atol=0)
    assert_state_unchanged(optimizer.state_dict()["state"], state["state"])


@STATEFUL
def test_the_halt_flag_stops_the_flat_step_from_writing(stand_in, fast_path, name):
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


def test_a_gradient_kept_by_the_user_keeps_its_values(stand_in, fast_path):
    """``.grad`` is a view of the flat gradient buffer; a backward after ``zero_grad`` writes there again only
    when nothing holds the view any more."""
    model = mlp("gpu")
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    train(model, optimizer, steps=2)  # the first step lays out the storage; the second's gradients are in it
    kept = model[0].weight.grad
    assert kept.data is storage(optimizer)[0].held(0)
    kept_values = B.to_cpu(kept.data).copy()
    x, y = batch("gpu", seed=9)
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    np.testing.assert_array_equal(B.to_cpu(kept.data), kept_values)
    optimizer.step()  # the slot is still held: the gradients get a new buffer
    np.testing.assert_array_equal(B.to_cpu(kept.data), kept_values)
    reference = mlp("cpu")
    with dlscratch.reference():
        reference_optimizer = optim.SGD(reference.parameters(), lr=0.1)
        train(reference, reference_optimizer, steps=2)
        reference_optimizer.zero_grad()
        F.cross_entropy(reference(batch("cpu", seed=9)[0]), batch("cpu", seed=9)[1]).backward()
        reference_optimizer.step()
    assert_same(values(model), values(reference))


def test_zero_grad_launches_nothing(stand_in, fast_path):
    model = mlp("gpu")
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    train(model, optimizer, steps=1)
    with B.ledger() as book:
        optimizer.zero_grad()
        model.zero_grad()
    assert book.launches == 0 and all(p.grad is None for p in model.parameters())


def test_the_reference_path_keeps_its_per_parameter_updates(stand_in):
    model = mlp("gpu")
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    with dlscratch.reference():
        train(model, optimizer, steps=2)
    assert optimizer not in flat_step._storage


def test_an_optimizer_of_its_own_or_parameters_on_the_cpu_take_the_per_parameter_updates(stand_in, fast_path):
    class Mine(optim.SGD):
        def _update(self, p, grad, state, group):
            p.delta = group["lr"] * grad

    model = mlp("gpu")
    optimizer = Mine(model.parameters(), lr=0.1)
    train(model, optimizer, steps=1)
    cpu_model = mlp("cpu")
    cpu_optimizer = optim.SGD(cpu_model.parameters(), lr=0.1)
    train(cpu_model, cpu_optimizer, steps=1)
    assert optimizer not in flat_step._storage and cpu_optimizer not in flat_step._storage
    assert_same(values(model), values(cpu_model))


def test_a_parameter_freed_inside_an_answer_is_not_the_learners_call_and_its_entry_goes(stand_in, fast_path):
    """A lesson's check counts every call into dlscratch while a learner's answer runs (dlscratch_lessons/checking.py);
    the weak-reference callback that the garbage collector runs when a laid-out parameter is freed inside it is the
    library's own bookkeeping, not the learner's call (it failed exercise 10.6's proof on the stand-in). The gone
    parameters' entries are dropped."""
    import gc

    from dlscratch.fast import flat
    from dlscratch_lessons.checking import own_work

    model = mlp("gpu")
    train(model, optim.SGD(model.parameters(), lr=0.1, momentum=0.9), steps=1, device="gpu")
    ids = [id(p) for p in model.parameters()]
    assert all(i in flat._slots for i in ids)
    with own_work("Exercise 0.0"):
        del model
        gc.collect()
    other = mlp("gpu")
    train(other, optim.SGD(other.parameters(), lr=0.1), steps=1, device="gpu")
    assert all(flat._slots[i][0]() is not None for i in flat._slots), "an entry of a gone parameter is kept"
    assert {id(p) for p in other.parameters()} <= set(flat._slots)
