"""dlscratch.amp.GradScaler: dynamic loss scaling. Scaled float16 gradients survive where unscaled ones vanish; an
overflow skips the step and halves the scale; clean steps grow it; the rules of use are enforced."""

import copy
import pickle

import numpy as np
import pytest

import dlscratch
from dlscratch import backend as dl_backend
from dlscratch import optim
from dlscratch.amp import GradScaler


def here():
    """The device type of the backend in use, where a GradScaler keeps its scale: "cpu" or "cuda"."""
    return dlscratch.get_default_device().type


def parameter(values):
    return dlscratch.tensor(dl_backend.xp.asarray(np.asarray(values, dtype=np.float32)), requires_grad=True)


def half_precision_gradient(w, x, scaler):
    """The float32 master gradient of a float16 forward whose gradients are tiny (about 1e-8 before scaling)."""
    w.grad = None
    y = x @ w.astype(np.float16)  # float16 arithmetic, float32 master weights
    loss = (y.astype(np.float32) ** 2).mean() * 1e-6
    scaler.scale(loss).backward()
    optimizer = optim.SGD([w], lr=0.0)
    scaler.unscale_(optimizer)
    return dl_backend.to_cpu(w.grad.data)


def test_scaled_float16_gradients_survive_where_unscaled_ones_vanish(backend):
    rng = np.random.default_rng(0)
    w0, x0 = rng.standard_normal((16, 4)) * 0.1, rng.standard_normal((64, 16))
    exact = 2e-6 * x0.T @ (x0 @ w0) / (64 * 4)  # the float64 gradient of the same loss
    assert 1e-10 < np.abs(exact).max() < 1e-6  # below float16's normal range (6.1e-5): mostly lost unscaled
    x = dlscratch.tensor(backend.asarray(x0.astype(np.float16)))
    scaled = half_precision_gradient(parameter(w0), x, GradScaler(here()))
    plain = half_precision_gradient(parameter(w0), x, GradScaler(here(), enabled=False))
    error = lambda g: np.abs(g - exact).max() / np.abs(exact).max()  # noqa: E731
    assert scaled.dtype == np.float32 and error(scaled) < 1e-2
    assert error(plain) > 0.5  # the per-element gradients of y underflowed to zero or to a few bits


def test_an_overflow_skips_the_step_and_halves_the_scale(backend):
    for bad in (np.inf, np.nan):
        w = parameter([1.0, 2.0])
        optimizer = optim.SGD([w], lr=0.1, momentum=0.9)
        scaler = GradScaler(here(), init_scale=1024.0, growth_interval=1)
        scaler.scale((w * w).sum()).backward()
        w.grad.data[1] = bad
        assert scaler.step(optimizer) is False
        scaler.update()
        np.testing.assert_array_equal(dl_backend.to_cpu(w.data), [1.0, 2.0])  # not stepped
        assert optimizer.state == {}  # no momentum buffer either
        assert scaler.get_scale() == 512.0 and scaler.state_dict()["_growth_tracker"] == 0


def test_a_clean_step_is_the_unscaled_step_and_the_scale_grows_every_growth_interval(backend):
    w, v = parameter([1.0, -3.0]), parameter([1.0, -3.0])
    scaler = GradScaler(here(), init_scale=8.0, growth_interval=3)
    scaled_sgd, plain_sgd = optim.SGD([w], lr=0.25), optim.SGD([v], lr=0.25)
    scales = []
    for _ in range(7):
        scaled_sgd.zero_grad(), plain_sgd.zero_grad()
        scaler.scale((w * w).sum()).backward()
        assert scaler.step(scaled_sgd) is True
        scaler.update()
        (v * v).sum().backward()
        plain_sgd.step()
        scales.append(scaler.get_scale())
    assert scales == [8.0, 8.0, 16.0, 16.0, 16.0, 32.0, 32.0]
    np.testing.assert_array_equal(dl_backend.to_cpu(w.data), dl_backend.to_cpu(v.data))  # powers of 2: exact


def test_unscale_once_per_update_and_step_does_not_unscale_again(backend):
    w = parameter([3.0])
    scaler, optimizer = GradScaler(here(), init_scale=4.0), optim.SGD([w], lr=1.0)
    scaler.scale(w * 2).sum().backward()
    scaler.unscale_(optimizer)
    assert float(w.grad.data[0]) == 2.0
    with pytest.raises(RuntimeError, match="already called on this optimizer since the last update"):
        scaler.unscale_(optimizer)
    scaler.step(optimizer)
    assert float(w.data[0]) == 1.0  # 3 - 1 * 2: the gradient was divided once
    scaler.update()
    with pytest.raises(RuntimeError, match="no scaler.step"):
        scaler.update()
    scaler.update(new_scale=2.0 ** 10)
    assert scaler.get_scale() == 1024.0


def test_disabled_it_passes_everything_through(backend):
    w = parameter([3.0])
    scaler, optimizer = GradScaler(here(), enabled=False), optim.SGD([w], lr=1.0)
    loss = (w * 2).sum()
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and not scaler.is_enabled()
    loss.backward()
    assert scaler.step(optimizer) is True
    scaler.update()
    assert float(w.data[0]) == 1.0 and scaler.state_dict() == {}


def test_state_dict_round_trip():
    scaler = GradScaler(here(), init_scale=256.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=5)
    scaler._growth_tracker = 3
    restored = GradScaler(here())
    restored.load_state_dict(scaler.state_dict())
    assert restored.state_dict() == {"scale": 256.0, "growth_factor": 4.0, "backoff_factor": 0.25,
                                     "growth_interval": 5, "_growth_tracker": 3}


def test_scale_of_a_list_and_refusals():
    a, b = parameter([1.0]), parameter([2.0])
    scaled = GradScaler(here(), init_scale=2.0).scale([a, b])
    assert isinstance(scaled, list) and [float(t.data[0]) for t in scaled] == [2.0, 4.0]
    with pytest.raises(TypeError, match="expected a Tensor"):
        GradScaler(here()).scale(3.0)
    half = dlscratch.tensor(np.ones(2, dtype=np.float16), requires_grad=True)
    half.sum().backward()
    with pytest.raises(ValueError, match="keep the parameters .master weights. in float32"):
        GradScaler(here()).unscale_(optim.SGD([half], lr=1.0))
    for kwargs, message in [({"init_scale": 0}, "init_scale must be a positive finite number, got 0"),
                            ({"init_scale": np.inf}, "init_scale must be a positive finite number, got inf"),
                            ({"growth_factor": 1.0}, "growth_factor must be a finite number above 1"),
                            ({"backoff_factor": 1.0}, "backoff_factor must be between 0 and 1"),
                            ({"growth_interval": 0}, "growth_interval must be a positive int")]:
        with pytest.raises(ValueError, match=message):
            GradScaler(here(), **kwargs)


def test_a_numpy_integer_growth_interval_is_taken_and_a_bool_refused():
    assert GradScaler(here(), growth_interval=np.int64(5)).state_dict()["growth_interval"] == 5
    with pytest.raises(ValueError, match="growth_interval must be a positive int"):
        GradScaler(here(), growth_interval=True)


SAVED = {"scale": 8.0, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 5, "_growth_tracker": 2}


@pytest.mark.parametrize("key, value, message", [
    ("scale", -1.0, "scale must be a positive finite number, got -1.0"),
    ("scale", float("nan"), "scale must be a positive finite number, got nan"),
    ("scale", float("inf"), "scale must be a positive finite number, got inf"),
    ("scale", "8", "scale must be a positive finite number, got '8'"),
    ("growth_factor", 1.0, "growth_factor must be a finite number above 1, got 1.0"),
    ("backoff_factor", 2.0, "backoff_factor must be between 0 and 1, got 2.0"),
    ("growth_interval", 0, "growth_interval must be a positive int, got 0"),
    ("growth_interval", 2.5, "growth_interval must be a positive int, got 2.5"),
    ("_growth_tracker", -1, r"_growth_tracker must be an int in \[0, growth_interval\) = \[0, 5\), got -1"),
    ("_growth_tracker", 5, r"_growth_tracker must be an int in \[0, growth_interval\) = \[0, 5\), got 5"),
])
def test_load_state_dict_refuses_what_the_constructor_refuses_and_changes_nothing(key, value, message):
    scaler = GradScaler(here(), init_scale=1024.0, growth_interval=3)
    before = scaler.state_dict()
    with pytest.raises(ValueError, match=f"GradScaler.load_state_dict: {message}"):
        scaler.load_state_dict({**SAVED, key: value})
    assert scaler.state_dict() == before  # not even the valid entries were taken


def test_load_state_dict_refuses_missing_and_unknown_keys_and_changes_nothing():
    scaler = GradScaler(here(), init_scale=1024.0)
    before = scaler.state_dict()
    missing = r"missing \['growth_factor', 'backoff_factor', 'growth_interval', '_growth_tracker'\], unknown \[\]"
    with pytest.raises(ValueError, match=r"needs the keys .* of a state_dict\(\); " + missing):
        scaler.load_state_dict({"scale": 1.0})
    with pytest.raises(ValueError, match=r"missing \[\], unknown \['growth_tracker'\]"):
        scaler.load_state_dict({**SAVED, "growth_tracker": 0})
    with pytest.raises(ValueError, match=r"empty \(saved from a GradScaler with enabled=False\); load one saved from"):
        scaler.load_state_dict({})
    with pytest.raises(TypeError, match="expected the dict of a GradScaler.state_dict.., got list"):
        scaler.load_state_dict([("scale", 1.0)])
    assert scaler.state_dict() == before
    scaler.load_state_dict(SAVED)
    assert scaler.state_dict() == SAVED


def test_the_device_is_pytorchs_first_argument_and_cuda_needs_a_gpu(monkeypatch):
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        GradScaler("tpu")
    with pytest.raises(TypeError, match="device must be a device type"):
        GradScaler(1024.0)  # PyTorch's older first argument, init_scale: dlscratch.cuda.amp.GradScaler takes it
    monkeypatch.setattr(dl_backend, "gpu_available", lambda: False)
    with pytest.warns(UserWarning, match="GradScaler\\('cpu'\\) scales on the CPU"):
        assert not GradScaler("cuda").is_enabled()
    assert GradScaler("cpu").is_enabled()


def test_unscale_writes_the_gradients_in_place_and_update_writes_the_scale_in_place(backend):
    w = parameter([1.0, 2.0])
    scaler, optimizer = GradScaler(here(), init_scale=4.0), optim.SGD([w], lr=1.0)
    scaled = scaler.scale((w * w).sum())
    scale = scaled.creator.inputs[1].data  # the device array the loss was multiplied by
    scaled.backward()
    grad, view = w.grad.data, w.grad[1:]
    assert scaler.step(optimizer)
    assert w.grad.data is grad and dl_backend.to_cpu(view.data).tolist() == [4.0]  # 2 * w, unscaled in place
    scaler.update(new_scale=2.0)
    assert scale.dtype == np.float32 and float(scale) == 2.0 == scaler.get_scale()
    assert scaler.scale(w.sum()).creator.inputs[1].data is scale


def test_a_scaler_that_has_scaled_can_be_copied_and_pickled(backend):
    scaler, w = GradScaler(here(), init_scale=8.0), parameter([1.0, 2.0])
    scaler.scale((w * w).sum())
    for twin in (copy.deepcopy(scaler), pickle.loads(pickle.dumps(scaler))):
        twin.update(new_scale=4.0)
        assert twin.get_scale() == 4.0 and scaler.get_scale() == 8.0  # its own scale, not a shared one
        assert float(twin.scale(w.sum()).detach().item()) == 12.0
