"""What a user holds keeps PyTorch's meaning through optimizer steps, on both paths and both devices (issue 51).

A parameter's ``.data``, a view of its gradient, a ``state_dict()`` entry and a weight tied by ``.data =`` are the
same arrays after a step as before it, updated in place; a kept gradient keeps its values after ``zero_grad()``;
a step that fails (a cast or a move after the state was made, a floating-point error that NumPy is told to raise)
leaves the parameters and the state as they were. The GPU runs on the strict CuPy stand-in.
"""

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as B
from dlscratch import nn, optim
from dlscratch.engine import switch


@pytest.fixture(params=["cpu", "gpu"])
def device(request):
    """``"cpu"``, then ``"gpu"`` with the strict stand-in playing the GPU."""
    if request.param == "cpu":
        yield "cpu"
        return
    with B.on_the_stand_in():
        yield "gpu"


def model_on(device):
    dlscratch.manual_seed(3)
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)).to(device)


def loss_of(model, device, seed=0):
    rng = np.random.default_rng(seed)
    x = dlscratch.tensor(rng.standard_normal((5, 4)).astype(np.float32)).to(device)
    y = dlscratch.tensor(rng.integers(0, 2, 5)).to(device)
    return F.cross_entropy(model(x), y)


def step(model, optimizer, device, seed=0):
    optimizer.zero_grad()
    loss_of(model, device, seed).backward()
    optimizer.step()


def host(array):
    return B.to_cpu(array).copy()


@pytest.mark.parametrize("view", ["reshape", "row", "transpose", "bias slice"])
def test_a_kept_view_of_a_gradient_keeps_its_values(device, path, view):
    model = model_on(device)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step(model, optimizer, device)
    step(model, optimizer, device, seed=1)
    weight, bias = model[0].weight.grad, model[0].bias.grad
    kept = {"reshape": lambda: weight.reshape(-1), "row": lambda: weight[0], "transpose": lambda: weight.T,
            "bias slice": lambda: bias[1:]}[view]()
    values = host(kept.data)
    optimizer.step()
    optimizer.zero_grad()
    loss_of(model, device, seed=2).backward()
    np.testing.assert_array_equal(host(kept.data), values)


def test_data_taken_before_the_first_step_is_the_weight_after_it(device, path):
    model = model_on(device)
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    w = model[0].weight.data
    before = host(w)
    step(model, optimizer, device)
    step(model, optimizer, device, seed=1)
    assert model[0].weight.data is w
    assert not np.array_equal(host(w), before)


def test_a_state_dict_taken_before_training_shares_the_trained_weights(device, path):
    model = model_on(device)
    state = model.state_dict()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for seed in range(3):
        step(model, optimizer, device, seed)
    for name, p in zip(state, model.parameters()):
        np.testing.assert_array_equal(host(state[name].data), host(p.data))


def test_a_weight_tied_by_data_assignment_stays_tied(device, path):
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3)).to(device)
    model[2].weight.data = model[0].weight.data
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    for _ in range(3):
        optimizer.zero_grad()
        model(dlscratch.tensor(rng.standard_normal((2, 3)).astype(np.float32)).to(device)).sum().backward()
        optimizer.step()
    assert model[2].weight.data is model[0].weight.data


@pytest.mark.parametrize("cast", ["half", "double"])
def test_adam_after_a_cast_refuses_the_step_and_changes_nothing(device, path, cast):
    """PyTorch refuses state of another dtype than the parameter's; this optimizer says why and writes nothing
    (the flat storage of the GPU path once turned the weights into -inf here)."""
    model = model_on(device)
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    step(model, optimizer, device)
    step(model, optimizer, device, seed=1)
    getattr(model, cast)()
    for p in model.parameters():
        p.grad = dlscratch.tensor(np.ones(p.shape), dtype=p.dtype).to(device)
    weights = [host(p.data) for p in model.parameters()]
    moments = [host(optimizer.state[p]["exp_avg"]) for p in model.parameters()]
    with pytest.raises(RuntimeError, match=r"Adam.step: parameter 0 .* is float\d+ .* but its gradient|exp_avg"):
        optimizer.step()
    for p, w, m in zip(model.parameters(), weights, moments):
        np.testing.assert_array_equal(host(p.data), w)
        np.testing.assert_array_equal(host(optimizer.state[p]["exp_avg"]), m)
        assert optimizer.state[p]["step"] == 2


def test_a_move_to_the_cpu_after_gpu_steps_refuses_the_step_and_keeps_the_momentum(path):
    with B.on_the_stand_in():
        model = model_on("gpu")
        optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        step(model, optimizer, "gpu")
        model.to("cpu")
        loss_of(model, "cpu", seed=1).backward()
        buffers = [host(optimizer.state[p]["momentum_buffer"]) for p in model.parameters()]
        weights = [host(p.data) for p in model.parameters()]
        with pytest.raises(RuntimeError, match="momentum_buffer is float32 on gpu: the parameter was cast or moved"):
            optimizer.step()
        for p, buf, w in zip(model.parameters(), buffers, weights):
            np.testing.assert_array_equal(host(optimizer.state[p]["momentum_buffer"]), buf)
            np.testing.assert_array_equal(host(p.data), w)


@pytest.mark.parametrize("rule", [optim.Adam, optim.SGD, optim.AdaDelta])
def test_a_floating_point_error_numpy_raises_leaves_the_step_unwritten_on_both_paths(path, rule):
    model = model_on("cpu")
    optimizer = rule(model.parameters(), **({"momentum": 0.9, "lr": 1e10} if rule is optim.SGD else {}))
    step(model, optimizer, "cpu")
    for p in model.parameters():
        p.grad = dlscratch.tensor(np.full(p.shape, 1e30, dtype=np.float32))
    weights = [host(p.data) for p in model.parameters()]
    state = optimizer.state_dict()["state"]
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        optimizer.step()
    for p, w in zip(model.parameters(), weights):
        np.testing.assert_array_equal(host(p.data), w)
    for i, entry in optimizer.state_dict()["state"].items():
        for key, value in entry.items():
            np.testing.assert_array_equal(np.asarray(value), np.asarray(state[i][key]))


def test_zero_grad_without_set_to_none_zeroes_in_place_and_backward_adds_into_it(device, path):
    """PyTorch: ``zero_grad(set_to_none=False)`` fills the gradients with zeros in place, and the next backward adds
    into the same arrays, so a view of one sees the new gradient."""
    model = model_on(device)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    loss_of(model, device).backward()
    grad = model[0].weight.grad
    view = grad.reshape(-1)
    optimizer.zero_grad(set_to_none=False)
    assert model[0].weight.grad is grad and (host(view.data) == 0).all()
    loss_of(model, device, seed=1).backward()
    assert model[0].weight.grad is grad
    np.testing.assert_array_equal(host(view.data), host(grad.data).reshape(-1))
    fresh = model_on(device)
    loss_of(fresh, device, seed=1).backward()
    np.testing.assert_allclose(host(grad.data), host(fresh[0].weight.grad.data), rtol=1e-6, atol=1e-7)
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_a_gradient_of_the_wrong_shape_written_through_grad_data_is_refused_before_any_write(device, path):
    """The differential tester's program: ``.grad.data`` replaced by an array of another shape (the ``.grad``
    setter's check bypassed); the fast path had already updated the parameters before it."""
    model = model_on(device)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step(model, optimizer, device)
    loss_of(model, device, seed=1).backward()
    model[2].bias.grad.data = model[2].bias.grad.data[:1]
    weights = [host(p.data) for p in model.parameters()]
    with pytest.raises(RuntimeError, match=r"parameter 3 has shape \(2,\), but its gradient has shape \(1,\)"):
        optimizer.step()
    for p, w in zip(model.parameters(), weights):
        np.testing.assert_array_equal(host(p.data), w)


def test_data_cast_by_hand_under_a_gradient_of_the_old_dtype_is_refused(device, path):
    """The tester found the fast path making the state in the parameter's new dtype, the reference in the
    gradient's: refused on both, as PyTorch's optimizers refuse mixed dtypes."""
    model = model_on(device)
    optimizer = optim.AdaDelta(model.parameters())
    loss_of(model, device).backward()
    model[0].weight.data = model[0].weight.data.astype(np.float16)
    with pytest.raises(RuntimeError, match="parameter 0 .* is float16 .* but its gradient is float32"):
        optimizer.step()
    assert optimizer.state == {}


def test_a_conv_weight_gradient_is_c_contiguous_so_a_view_of_it_is_a_view(device, path):
    """The fast convolution's weight gradient was a slice of its GEMM's output: ``grad.reshape(-1)`` made a copy."""
    dlscratch.manual_seed(0)
    conv = nn.Conv2d(2, 3, 3).to(device)
    x = dlscratch.tensor(np.random.default_rng(0).standard_normal((2, 2, 5, 5)).astype(np.float32)).to(device)
    conv(x).sum().backward()
    flat = conv.weight.grad.reshape(-1)
    flat.data[0] = 123.0
    assert float(conv.weight.grad.data[0, 0, 0, 0]) == 123.0


def test_an_lstm_under_a_float64_head_trains_on_the_gpu_as_on_the_reference_path(path):
    """The GPU's LSTM loop refused the float64 gradient that a float64 head sends back; it takes it in its own
    dtype, within float32's rounding of the reference's promoted products."""
    grads = {}
    for where in ("reference", "gpu"):
        with B.on_the_stand_in(), (dlscratch.reference() if where == "reference" else switch.fast_path()):
            dlscratch.manual_seed(1)
            lstm, head = nn.LSTM(3, 4).to("gpu"), nn.Linear(4, 1).to("gpu")
            head.weight.data = head.weight.data.astype(np.float64)
            x = dlscratch.tensor(np.random.default_rng(2).standard_normal((5, 2, 3)).astype(np.float32)).to("gpu")
            head(lstm(x)[0]).sum().backward()
            grads[where] = [host(p.grad.data) for p in lstm.parameters()]
    for got, expected in zip(grads["gpu"], grads["reference"]):
        assert got.dtype == expected.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)



@pytest.mark.parametrize("which", ["nn.LSTM", "nn.LSTMCell"])
def test_an_lstm_with_a_float64_bias_runs_on_the_gpu_as_on_the_reference_path(which):
    """The GPU's fused LSTM kernels take one dtype; a float64 bias beside float32 weights takes the reference's
    promotions instead of the kernels' type error."""
    out, grads = {}, {}
    for where in ("reference", "gpu"):
        with B.on_the_stand_in(), (dlscratch.reference() if where == "reference" else switch.fast_path()):
            dlscratch.manual_seed(4)
            layer = (nn.LSTM(3, 4) if which == "nn.LSTM" else nn.LSTMCell(3, 4)).to("gpu")
            bias = layer.bias_ih_l0 if which == "nn.LSTM" else layer.bias_ih
            bias.data = bias.data.astype(np.float64)
            shape = (5, 2, 3) if which == "nn.LSTM" else (2, 3)
            x = dlscratch.tensor(np.random.default_rng(2).standard_normal(shape).astype(np.float32)).to("gpu")
            y = layer(x)[0]
            (y * y).mean().backward()
            out[where] = host(y.data)
            grads[where] = [host(p.grad.data) for p in layer.parameters()]
    assert out["gpu"].dtype == out["reference"].dtype
    np.testing.assert_allclose(out["gpu"], out["reference"], rtol=1e-6, atol=1e-7)
    for got, expected in zip(grads["gpu"], grads["reference"]):
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_a_backward_onto_a_gradient_of_the_wrong_shape_is_refused_before_it_changes_any_gradient(device, path):
    """Found by the differential tester: the walk failed at the leaf whose ``.grad.data`` was given another shape,
    after adding into other leaves' gradients in an order that differs between the paths (the GPU's fused bias and
    ReLU reach the bias first). Now it is refused before anything changes, alike on both."""
    model = model_on(device)
    loss_of(model, device).backward()
    before = [host(p.grad.data) for p in model.parameters()]
    xp = B.get_array_module(model[0].weight.data)
    model[0].weight.grad.data = xp.zeros((3, 4, 2), np.float32)
    with pytest.raises(RuntimeError, match=r"a leaf of shape \(3, 4\) has a .grad of shape \(3, 4, 2\).*Nothing was"):
        loss_of(model, device, seed=1).backward()
    for p, grad in list(zip(model.parameters(), before))[1:]:
        np.testing.assert_array_equal(host(p.grad.data), grad)
    model.zero_grad()
    loss_of(model, device, seed=1).backward()  # fixed: backward runs again
    assert model[0].weight.grad.shape == (3, 4)
