"""Optimizers against their published update rules, on hand-computed steps.

Each expected value below is worked out from the formulas in the optimizer's docstring (PyTorch's
documented rules), step by step, without calling the code under test.
"""

import math

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import nn, optim


def _steps(make_optimizer, p0, grads, xp=np):
    """Run one step per gradient on a parameter starting at ``p0``; return the values after each step."""
    p = nn.Parameter(xp.asarray(p0, dtype=np.float32))
    opt = make_optimizer([p])
    history = []
    for g in grads:
        p.grad = dlscratch.tensor(xp.asarray(g, dtype=np.float32))
        opt.step()
        assert p.dtype == np.float32
        history.append(p.detach().numpy().copy())
    return history


def _check(history, expected):
    for got, want in zip(history, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


# ----- SGD -----
def test_sgd_plain_steps(backend):
    # p = p - lr * g with lr = 0.1
    history = _steps(lambda ps: optim.SGD(ps, lr=0.1), [1.0, -2.0], [[0.5, 1.0], [-1.0, 2.0]], backend)
    _check(history, [[0.95, -2.1], [1.05, -2.3]])


def test_sgd_momentum_with_dampening(backend):
    # b1 = g1 = 1 (no dampening on the first step);      p1 = 1 - 0.1 * 1 = 0.9
    # b2 = 0.9 * 1 + (1 - 0.5) * 2 = 1.9;                p2 = 0.9 - 0.19 = 0.71
    # b3 = 0.9 * 1.9 + 0.5 * (-1) = 1.21;                p3 = 0.71 - 0.121 = 0.589
    make = lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.5)  # noqa: E731
    _check(_steps(make, [1.0], [[1.0], [2.0], [-1.0]], backend), [[0.9], [0.71], [0.589]])


def test_sgd_momentum_buffer_is_saved_state():
    p = nn.Parameter([1.0, 2.0])
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    for g in ([1.0, 1.0], [3.0, -1.0]):
        p.grad = dlscratch.tensor(g)
        opt.step()
    # b1 = g1; b2 = 0.9 * g1 + g2
    np.testing.assert_allclose(opt.state[p]["momentum_buffer"], [3.9, -0.1], rtol=1e-6)


def test_sgd_nesterov(backend):
    # b1 = 1;                  g' = 1 + 0.9 * 1 = 1.9;       p1 = 1 - 0.19 = 0.81
    # b2 = 0.9 * 1 + 2 = 2.9;  g' = 2 + 0.9 * 2.9 = 4.61;    p2 = 0.81 - 0.461 = 0.349
    make = lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)  # noqa: E731
    _check(_steps(make, [1.0], [[1.0], [2.0]], backend), [[0.81], [0.349]])


def test_sgd_weight_decay():
    # g1' = 1 + 0.1 * 2 = 1.2;     p1 = 2 - 0.5 * 1.2 = 1.4
    # g2' = 1 + 0.1 * 1.4 = 1.14;  p2 = 1.4 - 0.5 * 1.14 = 0.83
    _check(_steps(lambda ps: optim.SGD(ps, lr=0.5, weight_decay=0.1), [2.0], [[1.0], [1.0]]), [[1.4], [0.83]])


def test_sgd_weight_decay_with_momentum():
    # g1' = 1.2, b1 = 1.2, p1 = 2 - 0.6 = 1.4
    # g2' = 1.14, b2 = 0.5 * 1.2 + 1.14 = 1.74, p2 = 1.4 - 0.87 = 0.53
    make = lambda ps: optim.SGD(ps, lr=0.5, momentum=0.5, weight_decay=0.1)  # noqa: E731
    _check(_steps(make, [2.0], [[1.0], [1.0]]), [[1.4], [0.53]])


# ----- Adam -----
def test_adam_first_step_is_lr_times_sign_by_bias_correction(backend):
    # At t = 1: m_hat = g and v_hat = g**2, so the step is lr * g / (|g| + eps) for every scale of g.
    g = [1e-3, -10.0, 3.0]
    (p1,) = _steps(lambda ps: optim.Adam(ps, lr=0.1), [0.0, 0.0, 0.0], [g], backend)
    expected = [-0.1 * gi / (abs(gi) + 1e-8) for gi in g]
    np.testing.assert_allclose(p1, expected, rtol=1e-6)


def test_adam_two_steps_by_hand(backend):
    lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-8
    p, m, v = [1.0, -1.0], [0.0, 0.0], [0.0, 0.0]
    grads = [[0.5, -2.0], [1.0, 1.0]]
    expected = []
    for t, g in enumerate(grads, start=1):
        m = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g)]
        v = [b2 * vi + (1 - b2) * gi * gi for vi, gi in zip(v, g)]
        m_hat = [mi / (1 - b1**t) for mi in m]
        v_hat = [vi / (1 - b2**t) for vi in v]
        p = [pi - lr * mh / (math.sqrt(vh) + eps) for pi, mh, vh in zip(p, m_hat, v_hat)]
        expected.append(p)
    # the first step by hand: m_hat = g, v_hat = g**2, so p1 = p0 - 0.1 * sign(g)
    np.testing.assert_allclose(expected[0], [0.9, -0.9], rtol=1e-7)
    history = _steps(lambda ps: optim.Adam(ps, lr=lr, betas=(b1, b2), eps=eps), [1.0, -1.0], grads, backend)
    _check(history, expected)


def test_adam_state_and_weight_decay():
    # g' = g + 0.5 * p = 1 + 0.5 * 2 = 2; m = 0.1 * 2 = 0.2; v = 0.001 * 4 = 0.004; p1 = 2 - 0.01 * 2 / (2 + 1e-8)
    p = nn.Parameter([2.0])
    opt = optim.Adam([p], lr=0.01, weight_decay=0.5)
    p.grad = dlscratch.tensor([1.0])
    opt.step()
    state = opt.state[p]
    assert state["step"] == 1 and isinstance(state["step"], int)
    np.testing.assert_allclose(state["exp_avg"], [0.2], rtol=1e-6)
    np.testing.assert_allclose(state["exp_avg_sq"], [0.004], rtol=1e-6)
    np.testing.assert_allclose(p.detach().numpy(), [2 - 0.01 * 2 / (2 + 1e-8)], rtol=1e-7)
    assert state["exp_avg"].dtype == state["exp_avg_sq"].dtype == np.float32


# ----- AdaDelta -----
def _adadelta_by_hand(p, grads, lr, rho, eps):
    v = u = 0.0
    out = []
    for g in grads:
        v = rho * v + (1 - rho) * g * g
        delta = math.sqrt(u + eps) / math.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta
        out.append([p])
    return out


def test_adadelta_first_steps(backend):
    # Step 1 by hand: v = 0.1 * 1 = 0.1, delta = sqrt(1e-6) / sqrt(0.1 + 1e-6) = 0.00316226185,
    # so p1 = 0 - 0.00316226185. (Starting at 0 keeps the small steps visible in float32.)
    expected = _adadelta_by_hand(0.0, [1.0, 2.0, -0.5], lr=1.0, rho=0.9, eps=1e-6)
    np.testing.assert_allclose(expected[0], [-0.00316226185], rtol=1e-9)
    history = _steps(lambda ps: optim.AdaDelta(ps), [0.0], [[1.0], [2.0], [-0.5]], backend)
    _check(history, expected)


def test_adadelta_lr_scales_the_step_and_pytorch_name():
    expected = _adadelta_by_hand(1.0, [1.0, 2.0], lr=0.5, rho=0.8, eps=1e-4)
    assert optim.Adadelta is optim.AdaDelta
    _check(_steps(lambda ps: optim.Adadelta(ps, lr=0.5, rho=0.8, eps=1e-4), [1.0], [[1.0], [2.0]]), expected)


def test_adadelta_weight_decay():
    # g' = 1 + 0.1 * 2 = 1.2; v = 0.1 * 1.44 = 0.144; delta = sqrt(1e-6) / sqrt(0.144 + 1e-6) * 1.2
    (p1,) = _steps(lambda ps: optim.AdaDelta(ps, weight_decay=0.1), [2.0], [[1.0]])
    np.testing.assert_allclose(p1, [2 - 1e-3 / math.sqrt(0.144001) * 1.2], rtol=1e-6)


# ----- behaviour shared by all optimizers -----
OPTIMIZERS = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda ps: optim.Adam(ps, lr=0.05, weight_decay=0.01),
    "adadelta": lambda ps: optim.AdaDelta(ps, lr=1.0),
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_step_is_in_place_without_graph_and_skips_missing_grads(name):
    a, b = nn.Parameter([1.0, 2.0]), nn.Parameter([3.0])
    opt = OPTIMIZERS[name]([a, b])
    array_a, array_b = a.data, b.data
    (a * a).sum().backward()
    opt.step()
    assert a.data is array_a and not np.allclose(a.detach().numpy(), [1.0, 2.0])
    assert a.creator is None and a.requires_grad and a.dtype == np.float32
    assert b.data is array_b and b.detach().numpy().tolist() == [3.0]  # no grad: untouched
    assert not opt.state.get(b)
    opt.zero_grad()
    assert a.grad is None and b.grad is None


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_updates_stay_float32_with_numpy_float64_hyperparameters(name):
    p = nn.Parameter([1.0, -1.0])
    opt = OPTIMIZERS[name]([p])
    opt.param_groups[0]["lr"] = np.float64(0.1)  # strong float64 scalar under NumPy 2
    for _ in range(2):
        p.grad = dlscratch.tensor([0.3, -0.2])
        opt.step()
    assert p.dtype == np.float32
    assert all(v.dtype == np.float32 for v in opt.state[p].values() if hasattr(v, "dtype"))


def _train_steps(opt, params, grads):
    for g_list in grads:
        for p, g in zip(params, g_list):
            p.grad = dlscratch.tensor(g)
        opt.step()


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_state_dict_round_trip_continues_identically(name):
    rng = np.random.default_rng(0)
    grads = [
        [rng.standard_normal(3).astype(np.float32), rng.standard_normal((2, 2)).astype(np.float32)] for _ in range(6)
    ]
    params = [nn.Parameter(np.ones(3, np.float32)), nn.Parameter(np.full((2, 2), 0.5, np.float32))]
    opt = OPTIMIZERS[name](params)
    _train_steps(opt, params, grads[:3])

    saved = opt.state_dict()
    clones = [nn.Parameter(p.data.copy()) for p in params]
    opt2 = OPTIMIZERS[name](clones)
    opt2.param_groups[0]["lr"] = 123.0  # overwritten by the load
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]

    _train_steps(opt, params, grads[3:])
    _train_steps(opt2, clones, grads[3:])
    for p, q in zip(params, clones):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    # the snapshot was a copy: training on did not change it
    if name == "adam":
        assert saved["state"][0]["step"] == 3 and opt.state[params[0]]["step"] == 6


def test_state_dict_format_and_loading_from_a_checkpoint_like_dict():
    p, q = nn.Parameter([1.0, 2.0]), nn.Parameter([[3.0]])
    opt = optim.Adam([p, q], lr=0.01)
    _train_steps(opt, [p, q], [[np.ones(2, np.float32), np.ones((1, 1), np.float32)]])
    sd = opt.state_dict()
    assert sd["param_groups"] == [
        {"lr": 0.01, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0, "capturable": False,
         "params": [0, 1]}
    ]
    assert set(sd["state"]) == {0, 1} and set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    # what a .npz round trip gives back: string keys, NumPy scalars and arrays, float64 values
    loaded = {
        "state": {
            str(k): {n: np.asarray(v, dtype=np.float64 if n != "step" else np.int64) for n, v in s.items()}
            for k, s in sd["state"].items()
        },
        "param_groups": [{k: np.asarray(v) for k, v in g.items()} for g in sd["param_groups"]],
    }
    opt2 = optim.Adam([nn.Parameter([1.0, 2.0]), nn.Parameter([[3.0]])])
    opt2.load_state_dict(loaded)
    group = opt2.param_groups[0]
    assert group["betas"] == (0.9, 0.999) and type(group["lr"]) is float
    state = opt2.state[opt2.param_groups[0]["params"][0]]
    assert type(state["step"]) is int and state["exp_avg"].dtype == np.float32


def test_load_state_dict_errors_name_the_problem_and_change_nothing():
    p, q = nn.Parameter([1.0, 2.0]), nn.Parameter([3.0])
    opt = optim.SGD([p, q], lr=0.1, momentum=0.9)
    _train_steps(opt, [p, q], [[np.ones(2, np.float32), np.ones(1, np.float32)]])
    sd = opt.state_dict()

    with pytest.raises(ValueError, match=r"sizes \[2\].*\[1\]"):
        optim.SGD([nn.Parameter([1.0, 2.0])], lr=0.1, momentum=0.9).load_state_dict(sd)

    other = optim.SGD([nn.Parameter([1.0, 2.0, 3.0]), nn.Parameter([3.0])], lr=0.5, momentum=0.9)
    with pytest.raises(ValueError, match=r"parameter 0: momentum_buffer has shape \(2,\), the parameter has shape"):
        other.load_state_dict(sd)
    assert other.param_groups[0]["lr"] == 0.5 and not other.state

    adam = optim.Adam([nn.Parameter([1.0, 2.0]), nn.Parameter([3.0])])
    with pytest.raises(ValueError, match=r"hyperparameters .*momentum.* Adam has .*betas"):
        adam.load_state_dict(sd)


def test_bad_hyperparameters_and_parameters_are_rejected():
    p = nn.Parameter([1.0])
    with pytest.raises(ValueError, match="Invalid learning rate: -0.1"):
        optim.SGD([p], lr=-0.1)
    with pytest.raises(ValueError, match="nesterov=True needs momentum > 0"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match=r"Invalid beta parameter at index 0: 1.0"):
        optim.Adam([p], betas=(1.0, 0.999))
    with pytest.raises(ValueError, match=r"Invalid rho value: 1.5"):
        optim.AdaDelta([p], rho=1.5)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(ValueError, match="appears twice"):
        optim.SGD([p, p], lr=0.1)
    with pytest.raises(ValueError, match="leaf"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="pass an iterable of parameters"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(TypeError, match="must be Tensors"):
        optim.SGD([np.ones(2)], lr=0.1)


def test_param_groups_have_their_own_hyperparameters():
    a, b = nn.Parameter([1.0]), nn.Parameter([1.0])
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad, b.grad = dlscratch.tensor([1.0]), dlscratch.tensor([1.0])
    opt.step()
    np.testing.assert_allclose([a.item(), b.item()], [0.9, 0.5], rtol=1e-6)
    assert "Parameter Group 1" in repr(opt) and "lr: 0.5" in repr(opt)
    with pytest.raises(ValueError, match="unknown hyperparameters"):
        optim.SGD([{"params": [a], "betas": (0.9, 0.99)}], lr=0.1)


REGRESSION = {
    "sgd": (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), 200),
    "adam": (lambda ps: optim.Adam(ps, lr=0.05), 200),
    "adadelta": (lambda ps: optim.AdaDelta(ps), 1000),
}


@pytest.mark.parametrize("name", REGRESSION)
def test_each_optimizer_fits_a_linear_regression(name):
    make, steps = REGRESSION[name]
    dlscratch.manual_seed(0)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 3)).astype(np.float32)
    Y = X @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3
    x, y = dlscratch.tensor(X), dlscratch.tensor(Y)
    model = nn.Linear(3, 1)
    opt = make(model.parameters())
    first = F.mse_loss(model(x), y).item()
    for _ in range(steps):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    assert first > 1.0 and loss.item() < 1e-3
    np.testing.assert_allclose(model.weight.detach().numpy(), [[1.5, -2.0, 0.5]], atol=0.05)


# ----- in-place updates: the rules on random arrays -----
def _sgd_rule(p, grads, lr, momentum, dampening, weight_decay, nesterov):
    buf = None
    for g in grads:
        g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def _adam_rule(p, grads, lr, betas, eps, weight_decay):
    m = v = 0.0
    for t, g in enumerate(grads, start=1):
        g = g + weight_decay * p
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g**2
        p = p - lr * (m / (1 - betas[0] ** t)) / (np.sqrt(v / (1 - betas[1] ** t)) + eps)
    return p


def _adadelta_rule(p, grads, lr, rho, eps, weight_decay):
    v = u = 0.0
    for g in grads:
        g = g + weight_decay * p
        v = rho * v + (1 - rho) * g**2
        delta = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta**2
        p = p - lr * delta
    return p


RULES = [
    (optim.SGD, _sgd_rule, dict(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False)),
    (optim.SGD, _sgd_rule, dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01, nesterov=False)),
    (optim.SGD, _sgd_rule, dict(lr=0.05, momentum=0.8, dampening=0.0, weight_decay=0.02, nesterov=True)),
    (optim.Adam, _adam_rule, dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)),
    (optim.Adam, _adam_rule, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    (optim.AdaDelta, _adadelta_rule, dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0)),
    (optim.AdaDelta, _adadelta_rule, dict(lr=0.5, rho=0.95, eps=1e-5, weight_decay=0.05)),
]


@pytest.mark.parametrize("make, rule, hyper", RULES)
def test_in_place_updates_follow_the_rules_on_random_arrays(make, rule, hyper):
    rng = np.random.default_rng(1)
    p0 = rng.standard_normal((3, 4)).astype(np.float32)
    grads = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(4)]
    p, q = nn.Parameter(p0.copy()), nn.Parameter(p0[:2].copy())  # two shapes share nothing
    opt = make([p, q], **hyper)
    for g in grads:
        p.grad, q.grad = dlscratch.tensor(g), dlscratch.tensor(g[:2] * 2)
        opt.step()
        np.testing.assert_array_equal(p.grad.numpy(), g)  # the gradient is left as it was
    expected = rule(p0.astype(np.float64), [g.astype(np.float64) for g in grads], **hyper)
    np.testing.assert_allclose(p.detach().numpy(), expected, rtol=2e-5, atol=1e-6)
    expected_q = rule(p0[:2].astype(np.float64), [2 * g[:2].astype(np.float64) for g in grads], **hyper)
    np.testing.assert_allclose(q.detach().numpy(), expected_q, rtol=2e-5, atol=1e-6)
