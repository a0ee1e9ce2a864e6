"""The optimizers' two paths: the reference updates of ``optim/`` and the fast ones of
``dlscratch/fast/optim.py`` give the same parameters and state, and the fast ones allocate nothing."""

import gc
import tracemalloc
import weakref

import numpy as np
import pytest

import dlscratch
import dlscratch.fast.optim as fast_optim  # importing registers the fast updates
from dlscratch import nn, optim
from dlscratch.engine import switch

CONFIGS = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.1),
    "sgd momentum": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
    "sgd nesterov": lambda ps: optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True),
    "sgd weight_decay": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01),
    "sgd dampening": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.3),
    "adam": lambda ps: optim.Adam(ps, lr=0.01),
    "adam weight_decay": lambda ps: optim.Adam(ps, lr=0.01, betas=(0.8, 0.99), weight_decay=0.1),
    "adadelta": lambda ps: optim.AdaDelta(ps),
    "adadelta weight_decay": lambda ps: optim.AdaDelta(ps, lr=0.5, rho=0.95, weight_decay=0.05),
    "adam capturable": lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.1, capturable=True),
    "adadelta eps": lambda ps: optim.AdaDelta(ps, lr=0.5, eps=1e-3),
}


def _five_steps(make, on_fast_path):
    """Parameters (3, 4) and (2,) after five steps on random gradients, and the optimizer."""
    rng = np.random.default_rng(0)
    params = [nn.Parameter(rng.standard_normal(shape).astype(np.float32)) for shape in ((3, 4), (2,))]
    opt = make(params)
    with switch.fast_path() if on_fast_path else switch.reference():
        for _ in range(5):
            for p in params:
                p.grad = dlscratch.tensor(rng.standard_normal(p.shape).astype(np.float32))
            opt.step()
    return params, opt


@pytest.mark.parametrize("name", CONFIGS)
def test_both_paths_give_the_same_parameters_and_state(name):
    reference_params, reference_opt = _five_steps(CONFIGS[name], on_fast_path=False)
    fast_params, fast_opt = _five_steps(CONFIGS[name], on_fast_path=True)
    for p, q in zip(reference_params, fast_params):
        assert q.dtype == np.float32 and q._version == p._version == 5
        # atol: the paths round the update differently (~1e-9 here), which is not small relative to
        # a parameter that the steps bring close to 0
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-6, atol=1e-7)
        state, fast_state = reference_opt.state[p], fast_opt.state[q]
        assert state.keys() == fast_state.keys()
        for key, value in state.items():
            np.testing.assert_allclose(fast_state[key], value, rtol=1e-6, err_msg=key)


def _steps_in(make, dtype, device, on_fast_path):
    """Parameters of ``dtype`` on ``device`` after three steps (gradients drawn once, in float32), and the state."""
    rng = np.random.default_rng(1)
    place = dlscratch.backend.to_gpu if device == "gpu" else np.asarray
    params = [nn.Parameter(place(rng.standard_normal(s).astype(dtype))) for s in ((3, 4), (5,))]
    grads = [[place(rng.standard_normal(p.shape).astype(np.float32).astype(dtype)) for p in params]
             for _ in range(3)]
    opt = make(params)
    with switch.fast_path() if on_fast_path else switch.reference():
        for step in grads:
            for p, g in zip(params, step):
                p.grad = dlscratch.Tensor(g.copy(), dtype=g.dtype)
            opt.step()
    return [p.detach().to("cpu").numpy() for p in params], opt


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_both_paths_give_the_same_bits_in_every_float_dtype(request, device, name, dtype):
    """The fused GPU kernels take the hyperparameters in the parameter's dtype and round every math function's
    result to it, as NumPy's arithmetic does: their float16 and float64 steps were the reference's only in
    float32, and AdaDelta's first step differed where sqrt(eps) rounds differently from its float64 root."""
    if device == "gpu":
        request.getfixturevalue("stand_in")
    dtype = np.dtype(dtype)
    reference, reference_opt = _steps_in(CONFIGS[name], dtype, device, on_fast_path=False)
    fast, fast_opt = _steps_in(CONFIGS[name], dtype, device, on_fast_path=True)
    for p, q in zip(reference, fast):
        assert p.dtype == q.dtype and np.array_equal(p, q), (p, q)
    for state, fast_state in zip(reference_opt.state.values(), fast_opt.state.values()):
        for key, value in state.items():
            assert np.array_equal(dlscratch.backend.to_cpu(fast_state[key]), dlscratch.backend.to_cpu(value)), key


@pytest.mark.parametrize("name", CONFIGS)
def test_blocks_of_one_row_give_the_bits_of_one_block(name, fast_path, monkeypatch):
    """The fast updates run on blocks of rows (``fast_optim.BLOCK_BYTES``): cut into blocks of one row, a
    parameter gets the same bits as in one block; also with its gradient in Fortran order, and a 0-d one."""

    def five_steps(block_bytes):
        monkeypatch.setattr(fast_optim, "BLOCK_BYTES", block_bytes)
        rng = np.random.default_rng(3)
        params = [nn.Parameter(np.asarray(rng.standard_normal(shape), np.float32)) for shape in ((5, 3), (7,), ())]
        opt = CONFIGS[name](params)
        for _ in range(5):
            for p in params:
                p.grad = dlscratch.tensor(np.array(rng.standard_normal(p.shape), np.float32, order="F"))
            opt.step()
        return params, opt

    one_block, one_opt = five_steps(1 << 30)
    blocks, opt = five_steps(1)
    for p, q in zip(one_block, blocks):
        np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())
        for key, value in one_opt.state[p].items():
            np.testing.assert_array_equal(opt.state[q][key], value, err_msg=key)


def test_pick_gives_the_fast_update_on_the_fast_path_and_the_reference_one_inside_reference(fast_path):
    assert switch.implementation(optim.SGD._update) is fast_optim.sgd_update
    with dlscratch.reference():
        assert switch.implementation(optim.SGD._update) is optim.SGD._update
    assert switch.implementation(optim.SGD._update) is fast_optim.sgd_update


def test_each_optimizer_has_its_fast_update():
    for cls, fast in [(optim.SGD, fast_optim.sgd_update), (optim.Adam, fast_optim.adam_update),
                      (optim.AdaDelta, fast_optim.adadelta_update)]:
        with switch.fast_path():
            assert switch.implementation(cls._update) is fast
        with switch.reference():
            assert switch.implementation(cls._update) is cls._update


@pytest.mark.parametrize("name", CONFIGS)
def test_fast_steps_allocate_no_parameter_sized_temporaries(name, fast_path):
    p = nn.Parameter(np.ones(250_000, np.float32))  # 1 MB
    opt = CONFIGS[name]([p])
    p.grad = dlscratch.tensor(np.full(250_000, 0.5, np.float32))
    for _ in range(2):  # the first steps create the state and the work arrays
        opt.step()
    tracemalloc.start()
    try:
        opt.step()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < p.data.nbytes // 2, f"one step allocated {peak} bytes at its peak"


def test_work_arrays_go_with_their_optimizer(fast_path):
    p = nn.Parameter(np.ones(3, np.float32))
    opt = optim.Adam([p])
    p.grad = dlscratch.tensor([1.0, 2.0, 3.0])
    opt.step()
    assert opt in fast_optim._work_arrays
    gone = weakref.ref(opt)
    del opt
    gc.collect()
    assert gone() is None  # the cache does not keep the optimizer (or its work arrays) alive
