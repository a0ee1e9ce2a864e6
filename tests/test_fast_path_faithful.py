"""The fast path is invisible: each case a user found where it told itself apart from the reference path (issue 51,
item 2), run on the fast path and compared with ``dlscratch.reference()``, on NumPy and on the GPU (the strict
stand-in with ``DLSCRATCH_STRICT_GPU=1``). On the GPU the fast ``Sequential`` fuses a bias and a ReLU
(``fast/bias_relu.py``) only where the user's code would run the same; the kept scalar constants
(``engine/extensions/operands.py``) keep apart values that compare equal but are not the same (-0.0, NaN payloads)."""

import struct

import numpy as np
import pytest
from test_fast_graph import on_both_paths
from user_programs import same_values

import dlscratch
from dlscratch import backend as B
from dlscratch import nn
from dlscratch.engine import switch
from dlscratch.engine.extensions import operands

FUSED = "ElementwiseKernel dlscratch_bias_relu"


def assert_same(fast, reference):
    """The same arrays (dtype and values, NaNs and signs of zeros included)."""
    for a, b in zip(fast, reference, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
        assert np.array_equal(np.signbit(a), np.signbit(b))


def run_model(make, shape, xp):
    """A function computing ``make()``'s output and gradients for a fixed input on ``xp``'s device, as NumPy
    arrays: the output, the input's gradient and every parameter's."""
    def compute():
        dlscratch.manual_seed(0)
        model = make()
        if xp is not np:
            model = model.to("gpu")
        x = dlscratch.tensor(xp.asarray(np.random.default_rng(0).standard_normal(shape).astype(np.float32)),
                             requires_grad=True)
        out = model(x)
        (out * out).sum().backward()
        return [B.to_cpu(t.data) for t in [out, x.grad] + [p.grad for p in model.parameters()]]

    return compute


def linear_relu(first=None):
    return lambda: nn.Sequential(first() if first else nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))


def test_an_instance_whose_forward_was_replaced_runs_it(backend):
    calls = []

    def make():
        layer = nn.Linear(4, 3)
        plain = layer.forward
        layer.forward = lambda x: calls.append(1) or plain(x) - 1.0
        return nn.Sequential(layer, nn.ReLU(), nn.Linear(3, 2))

    fast, reference = on_both_paths(run_model(make, (5, 4), backend))
    assert_same(fast, reference)
    assert calls == [1, 1]


class Shifted(nn.Linear):
    """A user's Linear whose ``__call__`` shifts the output."""

    def __call__(self, x):
        return super().__call__(x) - 1.0


class Scaled(nn.Linear):
    """A user's Linear whose ``forward`` scales the output."""

    def forward(self, x):
        return super().forward(x) * -2.0


class ShiftedConv(nn.Conv2d):
    """A user's Conv2d whose ``__call__`` shifts the output."""

    def __call__(self, x):
        return super().__call__(x) - 1.0


@pytest.mark.parametrize("first, shape", [
    (lambda: Shifted(4, 3), (5, 4)),
    (lambda: Scaled(4, 3), (5, 4)),
    (lambda: ShiftedConv(2, 3, 3, padding=1), (2, 2, 4, 4)),
], ids=["Linear overriding __call__", "Linear overriding forward", "Conv2d overriding __call__"])
def test_a_subclass_that_overrides_call_or_forward_runs_it(backend, first, shape):
    def make():
        return nn.Sequential(first(), nn.ReLU(), nn.Flatten())

    fast, reference = on_both_paths(run_model(make, shape, backend))
    assert_same(fast, reference)


class LeakyReLU(nn.ReLU):
    """A user's ReLU whose ``forward`` lets a tenth of the negative part through."""

    def forward(self, x):
        return super().forward(x) + super().forward(-x) * -0.1


def test_a_relu_subclass_or_instance_with_its_own_forward_runs_it(backend):
    def make_subclass():
        return nn.Sequential(nn.Linear(4, 3), LeakyReLU())

    def make_instance():
        relu = nn.ReLU()
        relu.forward = lambda x: x * 3.0
        return nn.Sequential(nn.Linear(4, 3), relu)

    for make in (make_subclass, make_instance):
        fast, reference = on_both_paths(run_model(make, (5, 4), backend))
        assert_same(fast, reference)
        assert (fast[0] < 0).any()  # neither is a ReLU


@pytest.mark.parametrize("which", [0, 1], ids=["a hook on the Linear", "a hook on the ReLU"])
def test_a_forward_pre_hook_on_either_module_runs(backend, which):
    seen = []

    def make():
        model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
        model[which].register_forward_pre_hook(lambda module, args: seen.append(module) or args[0] - 0.5)
        return model

    fast, reference = on_both_paths(run_model(make, (5, 4), backend))
    assert_same(fast, reference)
    assert len(seen) == 2


def test_a_module_with_any_hook_table_filled_runs_unfused(stand_in, fast_path):
    """Every ``*_hooks`` table of a module counts, whichever kinds of hook ``Module`` offers."""
    dlscratch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU()).to("gpu")
    x = dlscratch.tensor(B.to_gpu(np.ones((2, 4), dtype=np.float32)))
    with B.ledger() as book:
        model(x)
    assert FUSED in {what for _, _, what, _ in book.by_site("kernel")}
    object.__setattr__(model[1], "_some_new_hooks", {1: lambda *args: None})
    with B.ledger() as book:
        model(x)
    assert FUSED not in {what for _, _, what, _ in book.by_site("kernel")}


def test_a_float64_bias_with_a_float32_weight_gives_the_reference_values(backend):
    def make():
        first = nn.Linear(4, 3)
        first.bias = nn.Parameter(first.bias.double())
        return nn.Sequential(first, nn.ReLU())

    fast, reference = on_both_paths(run_model(make, (5, 4), backend))
    assert_same(fast, reference)


def test_a_float64_bias_of_a_conv2d_is_refused_alike_on_both_paths(backend):
    def make():
        first = nn.Conv2d(2, 3, 3, padding=1)
        first.bias = nn.Parameter(first.bias.double())
        return nn.Sequential(first, nn.ReLU())

    messages = []
    for path in (switch.fast_path, dlscratch.reference):
        with path(), pytest.raises(TypeError) as caught:
            run_model(make, (2, 2, 4, 4), backend)()
        messages.append(str(caught.value))
    assert messages[0] == messages[1] and "must share one floating-point dtype" in messages[0]


def test_zero_and_negative_zero_constants_are_kept_apart(backend):
    def compute():
        x = dlscratch.tensor(backend.asarray([1.0, 2.0], dtype=np.float32))
        with np.errstate(divide="ignore"):
            zero = 1 / (x * 0.0)
            negative = 1 / (x * -0.0)
        return [B.to_cpu(zero.data), B.to_cpu(negative.data)]

    fast, reference = on_both_paths(compute)
    assert_same(fast, reference)
    assert fast[0].tolist() == [np.inf, np.inf] and fast[1].tolist() == [-np.inf, -np.inf]  # PyTorch's


def nan_with_payload(high_bits):
    """A quiet NaN whose payload's top bits are ``high_bits`` (they survive a cast to float32)."""
    return struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000 | (high_bits << 44)))[0]


def test_nans_with_different_payloads_are_kept_apart(backend):
    first, second = nan_with_payload(1), nan_with_payload(2)
    x = dlscratch.tensor(backend.asarray([1.0, 2.0], dtype=np.float32))

    def compute():
        kept = [B.to_cpu(operands.scalar_array(value, x.data)).view(np.uint32).item() for value in (first, second)]
        return [np.array(kept), B.to_cpu((x + first).data).view(np.uint32), B.to_cpu((x + second).data).view(np.uint32)]

    fast, reference = on_both_paths(compute)
    assert_same(fast, reference)
    expected = [np.float32(v).view(np.uint32).item() for v in (first, second)]
    assert fast[0].tolist() == expected and expected[0] != expected[1]
    # the sum is the array module's: NumPy keeps the payload, a GPU's adder gives its one canonical NaN
    kept = operands.scalar_array(second, x.data)
    np.testing.assert_array_equal(fast[2], B.to_cpu(backend.ones(2, np.float32) + kept).view(np.uint32))


def test_complex_zeros_of_either_sign_are_kept_apart():
    x = dlscratch.tensor(np.array([1 + 1j], dtype=np.complex64))
    kept = [operands.scalar_array(value, x.data) for value in (0j, complex(0.0, -0.0), complex(-0.0, 0.0))]
    assert [(bool(np.signbit(k.real)), bool(np.signbit(k.imag))) for k in kept] == [(False, False), (False, True),
                                                                                     (True, False)]


def half_model(make, shape, xp):
    """Like ``run_model``, for ``make()`` cast to float16 with a float16 input; a float32 head after it, where
    the differential tester found the paths apart: a float16 difference is far beyond float32's ulps."""
    def compute():
        dlscratch.manual_seed(0)
        model = make().half()
        head = nn.Linear(model(dlscratch.zeros(shape, dtype=np.float16)).shape[-1], 2)
        if xp is not np:
            model, head = model.to("gpu"), head.to("gpu")
        x = dlscratch.tensor(xp.asarray(np.random.default_rng(0).standard_normal(shape).astype(np.float16)),
                             requires_grad=True)
        out = head(model(x).float())
        (out * out).sum().backward()
        return [B.to_cpu(t.data) for t in [out, x.grad] + [p.grad for p in model.parameters()]]

    return compute


class FirstOutput(nn.Module):
    """An LSTM's or an LSTMCell's first output (for the LSTM at its last step): ``(N, H)``."""

    def __init__(self, recurrent):
        super().__init__()
        self.recurrent = recurrent

    def forward(self, x):
        out = self.recurrent(x)[0]
        return out[-1] if out.ndim == 3 else out


@pytest.mark.parametrize("make, shape", [
    (lambda: nn.Sequential(nn.Linear(300, 40), nn.ReLU(), nn.Linear(40, 30)), (16, 300)),
    (lambda: nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 3), nn.Flatten()), (4, 3, 8, 8)),
    (lambda: FirstOutput(nn.LSTMCell(6, 5)), (3, 6)),
    (lambda: FirstOutput(nn.LSTM(6, 5)), (4, 3, 6)),
], ids=["linear", "conv2d", "lstm_cell", "lstm"])
def test_float16_products_agree_to_the_bit(backend, make, shape, request):
    """Found by the differential tester: the fast path summed a float16 product in float32 and rounded once,
    and its convolution added the bias inside that sum; the reference path used NumPy's float16 loop and added
    the bias after rounding. Both paths now take one ``gemm`` (``operations/products.py``) and add the bias alike.
    On the GPU the LSTM's fused kernel computes its point-wise half in float32 and rounds each result once, where
    the reference rounds after every operation: there the two agree to float16's rounding, as the differential
    tester compares (``user_programs.same_values``)."""
    fast, reference = on_both_paths(half_model(make, shape, backend))
    if backend is np or "lstm" not in request.node.callspec.id:
        assert_same(fast, reference)
    else:
        assert all(same_values(a, b, coarsest=np.float16) for a, b in zip(fast, reference, strict=True))


def test_fill_with_negative_zero_keeps_its_sign_on_every_device(backend):
    """CuPy's fill writes a zero with a memset (the stand-in does too): ``fill_(-0.0)`` must not."""
    t = dlscratch.tensor(backend.ones(3, dtype=np.float32))
    t.fill_(-0.0)
    assert np.signbit(B.to_cpu(t.data)).all() and (B.to_cpu(t.data) == 0).all()
    t.fill_(0.0)
    assert not np.signbit(B.to_cpu(t.data)).any()


def _node_names(fn, seen):
    """The class names of the graph's nodes from ``fn`` through ``next_functions``, depth first. ``seen`` (a dict)
    holds the nodes met, so that an id is not reused: each read of ``next_functions`` makes new AccumulateGrad
    nodes."""
    if fn is None or id(fn) in seen:
        return []
    seen[id(fn)] = fn
    return [type(fn).__name__] + [name for node, _ in fn.next_functions for name in _node_names(node, seen)]


def test_the_graph_seen_through_next_functions_names_the_same_nodes_on_both_paths(backend):
    """``grad_fn`` and ``next_functions`` show the graph: its nodes carry the operation's name on either path
    (the fast path's classes take the reference's names: MatMul, Linear, ReLU, CrossEntropy, LSTMLayer)."""
    def graphs():
        dlscratch.manual_seed(0)
        mlp = nn.Sequential(nn.Flatten(), nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 3))
        cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8, 3))
        lstm = nn.LSTM(3, 5)
        x = dlscratch.tensor(backend.asarray(np.ones((2, 1, 4, 3), np.float32)), requires_grad=True)
        labels = dlscratch.tensor(backend.asarray(np.array([0, 2])))
        if backend is not np:
            mlp, cnn, lstm = mlp.to("gpu"), cnn.to("gpu"), lstm.to("gpu")
        outputs = [dlscratch.functional.cross_entropy(model(x), labels) for model in (mlp, cnn)]
        outputs.append(lstm(x.reshape(4, 2, 3))[0].sum())
        outputs.append((x.reshape(2, 12) @ mlp[1].weight.T).relu().sum())
        return [_node_names(out.grad_fn, {}) for out in outputs]

    fast, reference = on_both_paths(graphs)
    assert fast == reference
    assert fast[0][:3] == ["CrossEntropy", "Linear", "ReLU"] and "MatMul" in fast[3] and "LSTMLayer" in fast[2]
