"""``dlscratch.amp.autocast`` and float16 models: dtypes inside and outside the block, gradients of float32 master
weights, float16 error against float32, nesting, threads, both paths, NumPy and the strict CuPy stand-in, and
MNIST trained with autocast and ``GradScaler`` against float32.

Every test body runs on the reference path and on the fast path (``path``), and on NumPy and the strict CuPy
stand-in (``xp``), which plays the GPU on any machine.
"""

import threading

import numpy
import pytest

import dlscratch.functional as F
from dlscratch import backend, nn, optim
from dlscratch.amp import GradScaler, autocast, get_autocast_dtype, is_autocast_enabled
from dlscratch.bench import ledger
from dlscratch.data import load_mnist
from dlscratch.engine import switch
from dlscratch.engine.creation import manual_seed
from dlscratch.engine.grad_mode import no_grad
from dlscratch.engine.tensor import Tensor

F16, F32, F64 = numpy.dtype(numpy.float16), numpy.dtype(numpy.float32), numpy.dtype(numpy.float64)


@pytest.fixture(params=["numpy", "stand-in"])
def xp(request):
    """The array module a test body runs on: NumPy, or the strict CuPy stand-in playing the GPU."""
    if request.param == "numpy":
        yield numpy
    else:
        with backend.on_the_stand_in() as stand_in:
            yield stand_in


def device_type(xp):
    """Where ``xp``'s arrays live, as autocast names it."""
    return "cpu" if xp is numpy else "cuda"


def leaf(xp, *shape, dtype=numpy.float32, seed=0, requires_grad=True):
    rng = numpy.random.default_rng(seed)
    return Tensor(xp.asarray(rng.standard_normal(shape).astype(dtype)), requires_grad=requires_grad, dtype=dtype)


def host(t):
    return backend.to_cpu(t.data if isinstance(t, Tensor) else t)


# ----- which dtype comes out -----

LOW_PRECISION_OPS = {  # name -> (inputs' shapes, call)
    "matmul": ([(4, 6), (6, 3)], lambda a, b: a @ b),
    "linear": ([(4, 6), (3, 6), (3,)], F.linear),
    "conv2d": ([(2, 3, 6, 6), (4, 3, 3, 3), (4,)], lambda x, w, b: F.conv2d(x, w, b, padding=1)),
    "conv2d fft": ([(2, 3, 6, 6), (4, 3, 3, 3), (4,)], lambda x, w, b: F.conv2d(x, w, b, padding=1, algorithm="fft")),
    "conv2d winograd2": ([(2, 3, 6, 6), (4, 3, 3, 3), (4,)],
                         lambda x, w, b: F.conv2d(x, w, b, padding=1, algorithm="winograd2")),
}
FLOAT32_OPS = {  # name -> call on one (4, 5) tensor
    "softmax": lambda x: F.softmax(x, dim=1),
    "log_softmax": lambda x: F.log_softmax(x, dim=1),
    "cross_entropy": lambda x: F.cross_entropy(x, Tensor(backend.xp.asarray(numpy.array([0, 1, 4, 2])))),
    "mse_loss": lambda x: F.mse_loss(x, x.detach() * 0.5),
    "sum": lambda x: x.sum(),
    "mean": lambda x: x.mean(dim=1),
}


@pytest.mark.parametrize("name", LOW_PRECISION_OPS)
def test_products_compute_in_float16_inside_and_float32_outside(name, path, xp):
    shapes, op = LOW_PRECISION_OPS[name]
    inputs = [leaf(xp, *shape, seed=i) for i, shape in enumerate(shapes)]
    exact = op(*inputs)
    with autocast(device_type(xp), F16):
        low = op(*inputs)
    assert exact.dtype == F32 and low.dtype == F16 and low.shape == exact.shape
    scale = numpy.abs(host(exact)).max()
    assert numpy.abs(host(low).astype(F32) - host(exact)).max() <= 4e-3 * scale  # float16: 11-bit significand


@pytest.mark.parametrize("name", FLOAT32_OPS)
def test_sensitive_ops_compute_in_float32_inside_and_follow_inputs_outside(name, path, xp):
    x16 = leaf(xp, 4, 5, dtype=numpy.float16)
    outside = FLOAT32_OPS[name](x16)
    with autocast(device_type(xp), F16):
        inside = FLOAT32_OPS[name](x16)
    assert outside.dtype == F16 and inside.dtype == F32
    exact = FLOAT32_OPS[name](x16.astype(numpy.float32))
    numpy.testing.assert_array_equal(host(inside), host(exact))  # the same float32 numbers as a float32 input's


def test_elementwise_ops_follow_their_inputs(path, xp):
    x16, x32 = leaf(xp, 3, 4, dtype=numpy.float16), leaf(xp, 3, 4, seed=1)
    with autocast(device_type(xp), F16):
        assert x16.relu().dtype == F16 and (x16 * 2.0).dtype == F16 and x32.tanh().dtype == F32
        assert (x16 + x32).dtype == F32  # the promotion rule of dtypes.py
        assert F.max_pool2d(leaf(xp, 1, 1, 4, 4, dtype=numpy.float16), 2).dtype == F16


def test_float64_and_integer_inputs_are_not_cast(path, xp):
    a, b = leaf(xp, 3, 4, dtype=numpy.float64), leaf(xp, 4, 2, dtype=numpy.float64, seed=1)
    with autocast(device_type(xp), F16):
        assert (a @ b).dtype == F64
        assert F.sum(a).dtype == F64
        assert F.cross_entropy(leaf(xp, 2, 3), Tensor(xp.asarray(numpy.array([2, 0])))).dtype == F32


def test_outside_autocast_the_graph_has_no_cast_nodes(path, xp):
    x, w, b = leaf(xp, 4, 6), leaf(xp, 3, 6, seed=1), leaf(xp, 3, seed=2)
    y = F.linear(x, w, b)
    assert type(y.creator).__name__ == "Linear" and list(y.creator.inputs) == [x, w, b]
    with autocast(device_type(xp), F16):
        y = F.linear(x, w, b)
    assert [type(t.creator).__name__ for t in y.creator.inputs] == ["Cast"] * 3
    assert [t.creator.inputs[0] for t in y.creator.inputs] == [x, w, b]


def step_events(conv2d, linear, cross_entropy):
    """What CuPy would launch, copy and allocate for a small conv-linear forward and backward (strict stand-in)."""
    with backend.on_the_stand_in() as stand_in:
        x, cw, cb = leaf(stand_in, 2, 1, 6, 6), leaf(stand_in, 3, 1, 3, 3, seed=1), leaf(stand_in, 3, seed=2)
        lw, lb, y = leaf(stand_in, 4, 108, seed=3), leaf(stand_in, 4, seed=4), Tensor(stand_in.asarray([1, 3]))
        with backend.ledger() as book:
            h = conv2d(x, cw, cb, padding=1).relu().reshape(2, -1)
            cross_entropy(linear(h, lw, lb), y).backward()
    return {category: book.total(category) for category in ledger.CATEGORIES}


def test_outside_autocast_not_one_more_launch(path):
    step_events(F.conv2d, F.linear, F.cross_entropy)  # makes what is kept: backward's seed (fast/kept_arrays.py)
    public = step_events(F.conv2d, F.linear, F.cross_entropy)
    bare = step_events(F.conv2d.__wrapped__, F.linear.__wrapped__, F.cross_entropy.__wrapped__)  # undecorated
    assert public == bare and public["kernel"] > 0
    with backend.on_the_stand_in(), autocast("cuda"):
        mixed = step_events(F.conv2d, F.linear, F.cross_entropy)
    assert mixed["kernel"] > public["kernel"]  # the casts, forward and backward


# ----- each parameter cast once per block -----

def cast_weight(y):
    """The float16 weight a ``linear`` output ``y`` was computed from (the ``Cast`` node's output)."""
    return y.creator.inputs[1]


def test_a_parameter_is_cast_once_per_block_and_its_gradients_add_up(path, xp):
    lin, x1, x2 = nn.Linear(6, 3), leaf(xp, 4, 6, seed=1), leaf(xp, 4, 6, seed=2)
    lin.to("gpu" if xp is not numpy else "cpu")
    grads = {}
    for cache_enabled in (True, False):
        lin.zero_grad()
        with autocast(device_type(xp), F16, cache_enabled=cache_enabled):
            y1, y2 = lin(x1), lin(x2)
        assert (cast_weight(y1) is cast_weight(y2)) == cache_enabled
        (y1.float().sum() + (y2.float() * 2).sum()).backward()
        grads[cache_enabled] = host(lin.weight.grad), host(lin.bias.grad)
    for kept, fresh in zip(*grads.values()):  # kept: the two uses' float16 gradients added in float16, as PyTorch
        assert kept.dtype == F32
        numpy.testing.assert_allclose(kept, fresh, rtol=2 ** -10)


def test_a_parameter_is_cast_once_per_block_on_the_device():
    with backend.on_the_stand_in() as stand_in:
        model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).to("gpu")
        batches = [leaf(stand_in, 4, 6, seed=s, requires_grad=False) for s in range(3)]
        launches = {}
        for cache_enabled in (True, False):
            with backend.ledger() as book, autocast("cuda", cache_enabled=cache_enabled):
                for x in batches:
                    model(x)
            launches[cache_enabled] = book.total("kernel")
    # four parameters cast twice fewer times: two batches more, each cast one launch
    assert launches[False] - launches[True] == 4 * 2


def test_a_parameter_written_in_the_block_is_cast_again(path):
    lin, x = nn.Linear(6, 3), leaf(numpy, 4, 6)
    lin.weight.grad = Tensor(numpy.ones((3, 6), numpy.float32))
    with autocast("cpu", F16):
        before = lin(x)
        optim.SGD([lin.weight], lr=0.5).step()  # an in-place write: the version moves
        after = lin(x)
    assert cast_weight(after) is not cast_weight(before)
    numpy.testing.assert_array_equal(host(cast_weight(after)), host(lin.weight).astype(F16))


def test_a_cast_made_without_recording_is_not_reused_to_record(path):
    lin, x = nn.Linear(6, 3), leaf(numpy, 4, 6)
    with autocast("cpu", F16):
        with no_grad():
            lin(x)
        lin(x).float().sum().backward()
    assert lin.weight.grad is not None and numpy.abs(host(lin.weight.grad)).sum() > 0


def test_the_kept_casts_go_when_the_outermost_block_ends(path):
    lin, x = nn.Linear(6, 3), leaf(numpy, 4, 6)
    with autocast("cpu", F16):
        first = cast_weight(lin(x))
        with autocast("cpu", F16, enabled=False):
            lin(x)
        with autocast("cpu", F16):
            assert cast_weight(lin(x)) is first  # an inner block keeps the outer block's casts
        assert cast_weight(lin(x)) is first
    with autocast("cpu", F16):
        assert cast_weight(lin(x)) is not first


def test_two_backward_passes_in_one_block_each_reach_the_parameter(path, xp):
    lin = nn.Linear(6, 3)
    lin.to("gpu" if xp is not numpy else "cpu")
    batches = leaf(xp, 4, 6, seed=1), leaf(xp, 4, 6, seed=2)
    separately = []
    for x in batches:
        lin.zero_grad()
        with autocast(device_type(xp), F16):
            lin(x).float().sum().backward()
        separately.append(host(lin.weight.grad))
    lin.zero_grad()
    with autocast(device_type(xp), F16):
        for x in batches:  # gradient accumulation inside one block: one kept cast, two backward passes
            lin(x).float().sum().backward()
    numpy.testing.assert_array_equal(host(lin.weight.grad), separately[0] + separately[1])


def test_the_fast_versions_stay_registered():
    for op in (F.matmul, F.linear, F.conv2d, F.cross_entropy):
        with switch.fast_path():
            assert switch.implementation(op) is switch.fast_versions()[op.reference]
        with switch.reference():
            assert switch.implementation(op) is op.reference


# ----- gradients -----

def test_float32_parameters_get_float32_gradients_close_to_float32_training(path, xp):
    manual_seed(0)  # no max pooling: float16 rounding can tie two values and move a pooled gradient
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.Tanh(), nn.Flatten(),
                          nn.Linear(4 * 8 * 8, 10)).to(backend.device())
    x, y = leaf(xp, 6, 1, 8, 8, requires_grad=False), Tensor(xp.asarray(numpy.arange(6)))
    F.cross_entropy(model(x), y).backward()
    exact = [host(p.grad) for p in model.parameters()]
    model.zero_grad()
    with autocast(device_type(xp), F16):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    assert logits.dtype == F16 and loss.dtype == F32
    loss.backward()
    for p, g in zip(model.parameters(), exact):
        assert p.dtype == F32 and p.grad.dtype == F32
        assert numpy.abs(host(p.grad) - g).max() <= 1e-2 * numpy.abs(g).max()


# ----- the block itself -----

def test_blocks_nest_and_restore_the_outer_state():
    assert not is_autocast_enabled("cpu")
    with autocast("cpu", F16):
        assert is_autocast_enabled("cpu") and get_autocast_dtype("cpu") == F16
        with autocast("cpu", F16, enabled=False):
            assert not is_autocast_enabled("cpu")
            ones = Tensor(numpy.ones((2, 3), numpy.float32))
            assert F.linear(ones, ones).dtype == F32
        assert is_autocast_enabled("cpu")
        with pytest.raises(RuntimeError, match="inside"), autocast("cpu", F16, enabled=False):
            raise RuntimeError("inside")
        assert is_autocast_enabled("cpu")
    assert not is_autocast_enabled("cpu")


def test_autocast_decorates_a_function():
    @autocast("cpu", F16)
    def forward(a, b):
        assert is_autocast_enabled("cpu")
        return a @ b

    a = Tensor(numpy.ones((2, 3), numpy.float32))
    assert forward(a, a.T).dtype == F16
    assert not is_autocast_enabled("cpu") and (a @ a.T).dtype == F32


def test_the_state_belongs_to_one_thread():
    seen, both_inside = {}, threading.Barrier(2)

    def other():
        seen["other at start"] = is_autocast_enabled("cpu")
        with autocast("cpu", F16, enabled=False):
            both_inside.wait()
            seen["other inside"] = is_autocast_enabled("cpu")
            both_inside.wait()

    with autocast("cpu", F16):
        thread = threading.Thread(target=other)
        thread.start()
        both_inside.wait()
        seen["main"] = is_autocast_enabled("cpu")
        both_inside.wait()
        thread.join()
    assert seen == {"other at start": False, "other inside": False, "main": True}


@pytest.mark.parametrize("dtype, error, message", [
    (numpy.int32, TypeError, "floating-point dtype such as numpy.float16, got int32"),
    ("not a dtype", TypeError, "floating-point dtype such as numpy.float16, got 'not a dtype'"),
    (numpy.float32, ValueError, "narrower than float32 (numpy.float16), got float32"),
    (numpy.float64, ValueError, "narrower than float32 (numpy.float16), got float64"),
])
def test_bad_dtypes_are_refused(dtype, error, message):
    with pytest.raises(error) as caught:
        autocast("cpu", dtype)
    assert message in str(caught.value)


def test_enabled_must_be_a_bool():
    with pytest.raises(TypeError, match="enabled must be True or False, got 'yes'"):
        autocast("cpu", F16, enabled="yes")


# ----- PyTorch's device types -----

def test_each_device_type_casts_only_the_operations_on_its_device():
    a = leaf(numpy, 4, 6)
    with backend.on_the_stand_in() as stand_in:
        g = leaf(stand_in, 4, 6)
        with autocast("cuda"):  # float16 by default on CUDA, as in PyTorch
            assert is_autocast_enabled() and not is_autocast_enabled("cpu") and get_autocast_dtype("cuda") == F16
            assert (g @ g.T).dtype == F16 and (a @ a.T).dtype == F32
            with autocast("cpu", F16):
                assert (g @ g.T).dtype == F16 and (a @ a.T).dtype == F16
                with autocast("cuda", enabled=False):
                    assert (g @ g.T).dtype == F32 and (a @ a.T).dtype == F16
            assert (a @ a.T).dtype == F32
        assert (g @ g.T).dtype == F32 and not is_autocast_enabled()


def test_pytorchs_spellings_reach_one_autocast():
    import dlscratch
    assert dlscratch.autocast is autocast and dlscratch.GradScaler is GradScaler
    assert dlscratch.is_autocast_enabled is is_autocast_enabled and dlscratch.get_autocast_dtype is get_autocast_dtype
    with backend.on_the_stand_in():
        with pytest.warns(FutureWarning, match=r"use dlscratch.amp.autocast\('cuda', args...\)"):
            old = dlscratch.cuda.amp.autocast(cache_enabled=False)
        assert isinstance(old, autocast) and old.device_type == "cuda" and old.dtype == F16
        assert not old.cache_enabled
        with pytest.warns(FutureWarning, match="GradScaler"):
            assert dlscratch.cuda.amp.GradScaler(init_scale=8.0).get_scale() == 8.0


@pytest.mark.parametrize("device_type, error, message", [
    ("cpu", ValueError, "bfloat16"),  # PyTorch's CPU default, which NumPy lacks
    ("tpu", ValueError, "unknown device 'tpu'"),
    (0, TypeError, "device_type must be a str, 'cuda' or 'cpu', got 0"),
])
def test_device_types_without_a_dtype_here_are_refused(device_type, error, message):
    with pytest.raises(error, match=message):
        autocast(device_type)


def test_cuda_autocast_without_a_gpu_warns_and_is_disabled_as_pytorchs(monkeypatch):
    monkeypatch.setattr(backend, "gpu_available", lambda: False)
    monkeypatch.setattr(backend, "gpu_unavailable_reason", lambda: "no GPU here")
    with pytest.warns(UserWarning, match=r"no usable GPU \(no GPU here\): disabled"):
        block = autocast("cuda")
    with block:
        assert not is_autocast_enabled("cuda")
    autocast("cuda", enabled=False)  # nothing to warn of


# ----- float16 models: half, float, double -----

def test_half_float_double_cast_parameters_in_place():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    params = list(model.parameters())
    assert model.half() is model and [p.dtype for p in model.parameters()] == [F16] * 4
    assert model.double() is model and [p.dtype for p in model.parameters()] == [F64] * 4
    assert model.float() is model and [p.dtype for p in model.parameters()] == [F32] * 4
    assert list(model.parameters()) == params  # the same Parameter objects: an optimizer keeps working


def test_float16_follows_the_promotion_rules_and_float32_stays_the_default(xp):
    x16 = leaf(xp, 2, 3, dtype=numpy.float16)
    ints = Tensor(xp.asarray(numpy.arange(6).reshape(2, 3)))
    assert (x16 * 0.5).dtype == (x16 * numpy.float64(0.5)).dtype == (x16 + ints).dtype == F16
    assert (x16 + leaf(xp, 2, 3)).dtype == F32 and (x16 + leaf(xp, 2, 3, dtype=numpy.float64)).dtype == F64
    assert (ints / 2).dtype == ints.exp().dtype == nn.Linear(3, 2).weight.dtype == F32
    half = nn.Linear(3, 2).to(backend.device()).half()
    assert half(Tensor(xp.asarray(numpy.ones((2, 3), numpy.uint8)))).dtype == F16  # uint8 pixels: the weight's dtype


def test_a_float16_model_trains_forward_and_backward(path, xp):
    manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(4 * 4 * 4, 3)).to(backend.device()).half()
    rng = numpy.random.default_rng(0)
    y_host = rng.integers(0, 3, 12)
    x = Tensor(xp.asarray((rng.standard_normal((12, 1, 8, 8)) + y_host[:, None, None, None]).astype(numpy.float16)))
    y = Tensor(xp.asarray(y_host))
    opt = optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(15):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        assert loss.dtype == F16 and all(p.grad.dtype == F16 for p in model.parameters())
        opt.step()
        losses.append(float(host(loss)))
    assert all(p.dtype == F16 for p in model.parameters())
    assert numpy.isfinite(losses).all() and losses[-1] < 0.5 * losses[0]


# ----- training: MNIST with autocast and GradScaler against float32 -----

@pytest.fixture(scope="module")
def small_mnist():
    """MNIST's test split at 14 x 14 (2 x 2 means), flattened: the first 8000 to train on, the last 2000 to test."""
    x, y = load_mnist(train=False, download=False)
    x = x.reshape(len(x), 14, 2, 14, 2).mean(axis=(2, 4)).reshape(len(x), -1)
    return (x[:8000], y[:8000]), (x[8000:], y[8000:])


def mnist_accuracy(data, mixed, epochs=2, batch=100):
    """Accuracy on the held-out 2000 of an MLP 196-32-10 trained with SGD, with autocast and a GradScaler when
    ``mixed``; returns (accuracy, the parameters' dtypes, the final scale)."""
    (x, y), (x_test, y_test) = data
    manual_seed(0)
    model = nn.Sequential(nn.Linear(196, 32), nn.ReLU(), nn.Linear(32, 10))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = GradScaler("cpu", enabled=mixed)
    for _ in range(epochs):
        for i in range(0, len(x), batch):
            opt.zero_grad()
            with autocast("cpu", F16, enabled=mixed):
                loss = F.cross_entropy(model(Tensor(x[i:i + batch])), Tensor(y[i:i + batch]))
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
    with autocast("cpu", F16, enabled=mixed):
        logits = model(Tensor(x_test)).detach()
    assert logits.dtype == (F16 if mixed else F32)
    accuracy = float((logits.numpy().argmax(axis=1) == y_test).mean())
    return accuracy, {p.dtype for p in model.parameters()}, scaler.get_scale()


def test_mnist_with_autocast_and_grad_scaler_matches_float32(small_mnist):
    exact, exact_dtypes, _ = mnist_accuracy(small_mnist, mixed=False)
    mixed, mixed_dtypes, scale = mnist_accuracy(small_mnist, mixed=True)
    assert exact_dtypes == mixed_dtypes == {F32}  # the master weights stay float32
    assert exact > 0.9
    assert abs(mixed - exact) <= 0.01, f"float32 {exact:.4f}, autocast {mixed:.4f}"
    assert scale >= 2.0 ** 16  # no step overflowed and lowered the scale
