"""The optimizers' fused GPU kernels (dlscratch/fast/optim_kernels.py), run by the strict CuPy stand-in: the same
bits as the NumPy fast path, one launch per parameter, in place in its own arrays."""

import numpy as np
import pytest

import dlscratch
from dlscratch import backend as B
from dlscratch import optim

CASES = [
    (optim.SGD, dict(lr=0.1)),
    (optim.SGD, dict(lr=0.1, weight_decay=0.01)),
    (optim.SGD, dict(lr=0.1, momentum=0.9)),
    (optim.SGD, dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=1e-3)),
    (optim.SGD, dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=1e-2)),
    (optim.Adam, dict(lr=1e-3)),
    (optim.Adam, dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    (optim.AdaDelta, dict(lr=1.0)),
    (optim.AdaDelta, dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.01)),
]




def trained(device, rule, settings, steps=3):
    """Parameters after ``steps`` steps on fixed gradients, as NumPy arrays, and the ledger of the last step."""
    rng = np.random.default_rng(5)
    move = B.to_gpu if device == "gpu" else np.asarray
    params = [dlscratch.tensor(move(rng.standard_normal(shape).astype(np.float32)), requires_grad=True)
              for shape in ((4, 3), (3,), ())]
    opt = rule(params, **settings)
    for _ in range(steps):
        for p in params:
            p.grad = dlscratch.tensor(move(rng.standard_normal(p.shape).astype(np.float32)))
        with B.ledger() as book:
            opt.step()
    return [p.detach().to("cpu").numpy() for p in params], book


@pytest.mark.parametrize("rule, settings", CASES, ids=lambda c: getattr(c, "__name__", str(c)))
def test_each_fused_kernel_gives_the_numpy_fast_paths_bits(stand_in, fast_path, rule, settings):
    on_cpu, _ = trained("cpu", rule, settings)
    on_kernels, book = trained("gpu", rule, settings)
    for cpu, gpu in zip(on_cpu, on_kernels):
        np.testing.assert_array_equal(gpu, cpu)
    kernels = [what for _, _, what, _ in book.by_site("kernel")]
    assert all(what.startswith("ElementwiseKernel dlscratch_") for what in kernels), kernels
    # 3 parameters, one fused kernel each, reading the gradients where they are: no copies
    assert book.kernels == 3 and book.copies_device == 0 and book.waits == 0 and book.memsets == 0


def test_the_reference_path_keeps_its_array_expressions(stand_in):
    with dlscratch.reference():
        _, book = trained("gpu", optim.Adam, dict(lr=1e-3))
    assert book.kernels > 6 * 3


@pytest.mark.parametrize("rule, settings", [CASES[3], CASES[6], CASES[8]], ids=["sgd", "adam", "adadelta"])
def test_an_error_in_a_later_update_launches_no_fused_kernel(stand_in, fast_path, rule, settings):
    """The kernels write the parameters in place, so a step must launch none of them before every parameter's
    update is prepared: an error in the last one leaves all weights and state as they were."""
    rng = np.random.default_rng(2)
    params = [dlscratch.tensor(B.to_gpu(rng.standard_normal(shape).astype(np.float32)), requires_grad=True)
              for shape in ((4, 3), (3,), (2, 2))]
    for p in params:
        p.grad = dlscratch.tensor(B.to_gpu(rng.standard_normal(p.shape).astype(np.float32)))
    opt = rule(params, **settings)
    opt.step()
    before = [p.detach().to("cpu").numpy() for p in params]
    state_before = {i: {k: B.to_cpu(v) if hasattr(v, "shape") else v for k, v in s.items()}
                    for i, s in opt.state_dict()["state"].items()}
    update, calls = dlscratch.engine.switch.implementation(rule._update), [0]  # the fast path's update

    class FailingLast(rule):
        def _update(self, *args):
            calls[0] += 1
            update(self, *args)
            if calls[0] == len(params):
                raise RuntimeError("the last update fails")

    opt.__class__ = FailingLast
    with B.ledger() as book, pytest.raises(RuntimeError, match="last update"):
        opt.step()
    assert calls[0] == len(params) and book.kernels == 0, book.table()
    for p, expected in zip(params, before):
        np.testing.assert_array_equal(p.detach().to("cpu").numpy(), expected)
    for i, s in opt.state_dict()["state"].items():
        for k, v in s.items():
            np.testing.assert_array_equal(B.to_cpu(v) if hasattr(v, "shape") else v, state_before[i][k])


def half_model_trained(device, settings, steps=3):
    """A ``.half()`` two-layer model after ``steps`` momentum-SGD steps on fixed data: its weights as float32
    NumPy arrays, and the ledger of the last step."""
    dlscratch.manual_seed(3)
    model = dlscratch.nn.Sequential(dlscratch.nn.Linear(6, 5), dlscratch.nn.ReLU(), dlscratch.nn.Linear(5, 2))
    model = model.to(device).half()
    opt = optim.SGD(model.parameters(), **settings)
    rng = np.random.default_rng(4)
    x = dlscratch.tensor(rng.standard_normal((8, 6)).astype(np.float16)).to(device)
    for _ in range(steps):
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        with B.ledger() as book:
            opt.step()
    return [p.detach().to("cpu").numpy().astype(np.float32) for p in model.parameters()], book


HALF_MOMENTUM = pytest.mark.parametrize(
    "settings", [dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, nesterov=True),
                 dict(lr=0.1, momentum=0.8, dampening=0.4, weight_decay=0.01)],
    ids=["momentum", "nesterov", "dampening"])


@HALF_MOMENTUM
def test_a_half_model_trains_with_momentum_sgd_as_on_numpy(stand_in, fast_path, settings):
    """The momentum kernel in float16 (once rejected by NVRTC: a ``?:`` with float16 and float branches). The
    kernel computes in float and rounds once per stored value, NumPy rounds every operation to float16: equal to
    float16's precision."""
    trains_as_on_numpy(settings)


@HALF_MOMENTUM
def test_a_half_model_trains_with_momentum_sgd_on_a_real_gpu(gpu, fast_path, settings):
    if not B.real_gpu():
        pytest.skip("the stand-in plays the GPU here: the test above is its run")
    trains_as_on_numpy(settings)


def trains_as_on_numpy(settings):
    on_cpu, _ = half_model_trained("cpu", settings)
    on_kernels, book = half_model_trained("gpu", settings)
    if not B.real_gpu():  # CUPTI names kernels by their compiled names
        kernels = {what for _, _, what, _ in book.by_site("kernel")}
        assert kernels == {"ElementwiseKernel dlscratch_sgd_momentum"}, kernels
    for cpu, gpu in zip(on_cpu, on_kernels):
        assert gpu.dtype == np.float32 and np.isfinite(gpu).all()
        np.testing.assert_allclose(gpu, cpu, rtol=4e-3, atol=4e-3)
