"""The LSTM: ``F.lstm_cell``, ``nn.LSTMCell`` (with and without peepholes) and ``nn.LSTM``.

Values against a hand-computed step and against the plain float64 NumPy LSTM of ``lstm_reference``;
gradients against float64 central differences; PyTorch's parameter names and shapes; truncated
backpropagation through time; bad inputs and their messages; the fused GPU kernels against the
plain path where a GPU is present.
"""

import gc
import math
import weakref

import lstm_reference as ref
import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as B
from dlscratch import gradcheck, nn
from dlscratch.autograd import reachable_functions
from dlscratch.operations.lstm_cell import LSTMCell as LSTMCellFunction
from dlscratch.operations.lstm_layer import LSTMLayer
from dlscratch.operations.lstm_pointwise import lstm_pointwise_backward, lstm_pointwise_forward


def arrays(*shapes, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) * scale for s in shapes]


def module_params(module):
    """The module's parameters as float64 NumPy arrays, by name."""
    return {name: p.detach().numpy().astype(np.float64) for name, p in module.named_parameters()}


def with_params(module, tensors):
    """Run ``module`` on the given tensors in place of its parameters (for gradcheck, which makes its own)."""
    for (name, _), t in zip(list(module.named_parameters()), tensors):
        owner = module
        *path, leaf = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        owner._parameters[leaf] = t


# ----- one step -----


def test_a_step_by_hand():
    """All weights zero: every gate is sigmoid(0) = 1/2 and g = tanh(0) = 0, so c' = c/2 and h' = tanh(c')/2."""
    cell = nn.LSTMCell(1, 1)
    for p in cell.parameters():
        p.data[...] = 0
    h, c = cell(dlscratch.tensor([[3.0]]), (dlscratch.tensor([[0.5]]), dlscratch.tensor([[2.0]])))
    assert c.item() == pytest.approx(1.0)
    assert h.item() == pytest.approx(0.5 * math.tanh(1.0))
    # a cell-gate bias of 1 and an input of 0: g = tanh(1), and i = f = 1/2 -> c' = c/2 + tanh(1)/2
    cell.bias_ih.data[2] = 1.0
    h, c = cell(dlscratch.tensor([[0.0]]), (dlscratch.tensor([[0.0]]), dlscratch.tensor([[2.0]])))
    assert c.item() == pytest.approx(1.0 + 0.5 * math.tanh(1.0), rel=1e-6)
    assert h.item() == pytest.approx(0.5 * math.tanh(c.item()), rel=1e-6)


@pytest.mark.parametrize("peephole", [False, True])
@pytest.mark.parametrize("batch", [1, 3])
def test_cell_matches_the_reference(backend, peephole, batch):
    cell = nn.LSTMCell(4, 5, peephole=peephole)
    x, h, c = arrays((batch, 4), (batch, 5), (batch, 5), seed=batch)
    h1, c1 = cell(*(dlscratch.tensor(backend.asarray(a)) for a in (x,)), tuple(dlscratch.tensor(backend.asarray(a))
                                                                           for a in (h, c)))
    p = module_params(cell)
    peep = (p["weight_ci"], p["weight_cf"], p["weight_co"]) if peephole else None
    h_ref, c_ref = ref.cell(x, h, c, p["weight_ih"], p["weight_hh"], p["bias_ih"], p["bias_hh"], peep)
    assert h1.dtype == np.float32 and c1.dtype == np.float32
    np.testing.assert_allclose(h1.detach().numpy(), h_ref, atol=2e-6)
    np.testing.assert_allclose(c1.detach().numpy(), c_ref, atol=2e-6)


def test_cell_without_state_starts_from_zeros_and_takes_unbatched_input():
    cell = nn.LSTMCell(3, 2)
    x = dlscratch.randn(3)
    h, c = cell(x)
    h_batched, c_batched = cell(x.reshape(1, 3), (dlscratch.zeros(1, 2), dlscratch.zeros(1, 2)))
    assert h.shape == (2,) and c.shape == (2,)
    np.testing.assert_array_equal(h.detach().numpy(), h_batched.detach().numpy()[0])
    np.testing.assert_array_equal(c.detach().numpy(), c_batched.detach().numpy()[0])


@pytest.mark.parametrize("peephole", [False, True])
@pytest.mark.parametrize("batch", [1, 3])
def test_lstm_cell_gradcheck(backend, peephole, batch):
    x, h, c, W_ih, W_hh, b_ih, b_hh, p_i, p_f, p_o = (
        backend.asarray(a) for a in arrays((batch, 3), (batch, 4), (batch, 4), (16, 3), (16, 4), (16,), (16,),
                                           (4,), (4,), (4,), seed=7)
    )

    def step(x, h, c, W_ih, W_hh, b_ih, b_hh, *peep):
        return F.lstm_cell(x, (h, c), W_ih, W_hh, b_ih, b_hh, peephole=peep or None)

    gradcheck(step, x, h, c, W_ih, W_hh, b_ih, b_hh, *((p_i, p_f, p_o) if peephole else ()))


def test_lstm_cell_gradcheck_without_bias_and_only_one_output_used():
    x, h, c, W_ih, W_hh = arrays((2, 3), (2, 4), (2, 4), (16, 3), (16, 4), seed=3)
    gradcheck(lambda x, h, c, W_ih, W_hh: F.lstm_cell(x, (h, c), W_ih, W_hh)[0], x, h, c, W_ih, W_hh)
    gradcheck(lambda x, h, c, W_ih, W_hh: F.lstm_cell(x, (h, c), W_ih, W_hh)[1], x, h, c, W_ih, W_hh)


def test_a_wrong_backward_is_caught(monkeypatch):
    """The gradient checks above can fail: a cell whose backward loses the recurrent weight's gradient."""
    x, h, c, W_ih, W_hh = arrays((2, 3), (2, 4), (2, 4), (16, 3), (16, 4), seed=4)
    original = LSTMCellFunction.backward

    def broken(self, gh, gc):
        grads = list(original(self, gh, gc))
        grads[4] = grads[4] * 0
        return tuple(grads)

    monkeypatch.setattr(LSTMCellFunction, "backward", broken)
    report = gradcheck(lambda *a: F.lstm_cell(a[0], (a[1], a[2]), a[3], a[4]), x, h, c, W_ih, W_hh,
                       raise_exception=False)
    assert not report.ok and report.input_index == 4


# ----- the sequence layer -----

LAYER_CASES = [
    dict(num_layers=1),
    dict(num_layers=2),
    dict(num_layers=2, bidirectional=True),
    dict(num_layers=1, bias=False),
    dict(num_layers=3, bidirectional=True, batch_first=True),
]


@pytest.mark.parametrize("options", LAYER_CASES, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_lstm_matches_the_reference(backend, options):
    lstm = nn.LSTM(4, 5, **options)
    D = 2 if options.get("bidirectional") else 1
    L = options["num_layers"]
    x, h0, c0 = arrays((6, 3, 4), (L * D, 3, 5), (L * D, 3, 5), seed=1)
    x_in = x.transpose(1, 0, 2) if options.get("batch_first") else x
    y, (h_n, c_n) = lstm(dlscratch.tensor(backend.asarray(x_in)),
                         (dlscratch.tensor(backend.asarray(h0)), dlscratch.tensor(backend.asarray(c0))))
    y_ref, h_ref, c_ref = ref.lstm(x, h0, c0, module_params(lstm), L, options.get("bidirectional", False))
    if options.get("batch_first"):
        y_ref = y_ref.transpose(1, 0, 2)
    assert y.shape == y_ref.shape == ((3, 6, 5 * D) if options.get("batch_first") else (6, 3, 5 * D))
    assert h_n.shape == c_n.shape == (L * D, 3, 5)
    assert y.dtype == h_n.dtype == np.float32
    np.testing.assert_allclose(y.detach().numpy(), y_ref, atol=3e-6)
    np.testing.assert_allclose(h_n.detach().numpy(), h_ref, atol=3e-6)
    np.testing.assert_allclose(c_n.detach().numpy(), c_ref, atol=3e-6)


def test_lstm_equals_the_cell_step_by_step():
    lstm, cell = nn.LSTM(3, 4), nn.LSTMCell(3, 4)
    cell.load_state_dict({k[: -len("_l0")]: v for k, v in lstm.state_dict().items()})
    x = dlscratch.randn(5, 2, 3)
    y, (h_n, c_n) = lstm(x)
    h, c = dlscratch.zeros(2, 4), dlscratch.zeros(2, 4)
    for t in range(5):
        h, c = cell(x[t], (h, c))
        np.testing.assert_allclose(y.detach().numpy()[t], h.detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(h_n.detach().numpy()[0], h.detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(c_n.detach().numpy()[0], c.detach().numpy(), atol=1e-6)


def test_unbatched_input_and_missing_state():
    lstm = nn.LSTM(3, 4, num_layers=2)
    x = dlscratch.randn(5, 3)
    y, (h_n, c_n) = lstm(x)
    y_batched, (h_batched, _) = lstm(x.reshape(5, 1, 3))
    assert y.shape == (5, 4) and h_n.shape == c_n.shape == (2, 4)
    np.testing.assert_array_equal(y.detach().numpy(), y_batched.detach().numpy()[:, 0])
    np.testing.assert_array_equal(h_n.detach().numpy(), h_batched.detach().numpy()[:, 0])


@pytest.mark.parametrize("options", LAYER_CASES, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_lstm_gradcheck(options):
    lstm = nn.LSTM(2, 3, **options).to(np.float64)
    D = 2 if options.get("bidirectional") else 1
    L = options["num_layers"]
    x, h0, c0 = arrays((3, 2, 2), (L * D, 2, 3), (L * D, 2, 3), seed=2)
    if options.get("batch_first"):
        x = np.ascontiguousarray(x.transpose(1, 0, 2))
    params = [p.detach().numpy() for p in lstm.parameters()]

    def run(x, h0, c0, *weights):
        with_params(lstm, weights)
        y, (h_n, c_n) = lstm(x, (h0, c0))
        return y, h_n, c_n

    gradcheck(run, x, h0, c0, *params)


@pytest.mark.parametrize("reverse", [False, True])
def test_layer_function_gradcheck_on_shrinking_and_growing_batches(reverse):
    """The one-node layer on packed rows: batch sizes 3, 2, 2, 1 (lengths 4, 3, 1), shrinking forward in
    time and growing in the reverse direction."""
    batch_sizes = [3, 2, 2, 1]
    x, h0, c0, W_ih, W_hh, b_ih, b_hh = arrays((8, 2), (3, 3), (3, 3), (12, 2), (12, 3), (12,), (12,), seed=5)
    gradcheck(lambda *a: LSTMLayer(batch_sizes, reverse=reverse)(*a), x, h0, c0, W_ih, W_hh, b_ih, b_hh)


def test_dropout_between_layers_in_training_only():
    dlscratch.manual_seed(0)
    lstm = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = dlscratch.randn(5, 2, 3)
    lstm.eval()
    y_eval, _ = lstm(x)
    no_dropout = nn.LSTM(3, 4, num_layers=2)
    no_dropout.load_state_dict(lstm.state_dict())
    np.testing.assert_array_equal(y_eval.detach().numpy(), no_dropout(x)[0].detach().numpy())
    lstm.train()
    y_train, _ = lstm(x)
    assert not np.allclose(y_train.detach().numpy(), y_eval.detach().numpy())
    single = nn.LSTM(3, 4, num_layers=1, dropout=0.5)  # one layer: nothing to drop between
    single_plain = nn.LSTM(3, 4)
    single_plain.load_state_dict(single.state_dict())
    np.testing.assert_array_equal(single(x)[0].detach().numpy(), single_plain(x)[0].detach().numpy())


# ----- PyTorch's names and shapes -----


def test_state_dict_names_and_shapes_are_pytorchs():
    lstm = nn.LSTM(10, 20, num_layers=2, bidirectional=True)
    expected = []
    for layer, fan_in in ((0, 10), (1, 40)):
        for suffix in ("", "_reverse"):
            expected += [
                (f"weight_ih_l{layer}{suffix}", (80, fan_in)),
                (f"weight_hh_l{layer}{suffix}", (80, 20)),
                (f"bias_ih_l{layer}{suffix}", (80,)),
                (f"bias_hh_l{layer}{suffix}", (80,)),
            ]
    assert [(k, v.shape) for k, v in lstm.state_dict().items()] == expected
    assert [(k, v.shape) for k, v in nn.LSTMCell(10, 20).state_dict().items()] == [
        ("weight_ih", (80, 10)), ("weight_hh", (80, 20)), ("bias_ih", (80,)), ("bias_hh", (80,))
    ]
    assert list(nn.LSTMCell(10, 20, bias=False).state_dict()) == ["weight_ih", "weight_hh"]
    peephole = nn.LSTMCell(10, 20, peephole=True).state_dict()
    assert [(k, v.shape) for k, v in peephole.items()][4:] == [
        ("weight_ci", (20,)), ("weight_cf", (20,)), ("weight_co", (20,))
    ]


def test_initialisation_is_uniform_within_one_over_sqrt_hidden():
    dlscratch.manual_seed(1)
    lstm = nn.LSTM(30, 64, num_layers=2)
    bound = 1 / math.sqrt(64)
    values = np.concatenate([p.detach().numpy().ravel() for p in lstm.parameters()])
    assert values.dtype == np.float32
    assert values.min() >= -bound and values.max() <= bound
    assert values.min() < -0.9 * bound and values.max() > 0.9 * bound
    assert abs(values.mean()) < 0.01 * bound * 10


def test_repr():
    assert repr(nn.LSTM(3, 4, num_layers=2, batch_first=True)).startswith("LSTM(3, 4, num_layers=2, batch_first=True)")
    assert repr(nn.LSTMCell(3, 4, peephole=True)).startswith("LSTMCell(3, 4, peephole=True)")


# ----- truncated backpropagation through time -----


def layer_node(output):
    """The LSTM layer node (``LSTMLayer``) of the graph that made ``output``."""
    return next(fn for fn in reachable_functions(output.creator) if isinstance(fn, LSTMLayer))


def test_truncated_bptt_stops_gradients_and_frees_each_chunk():
    """Chunks of a long stream with the state detached between them: each chunk's gradient is what that
    chunk alone gives from a constant initial state, and the graph of a finished chunk is freed."""
    dlscratch.manual_seed(3)
    lstm = nn.LSTM(2, 3)
    stream = dlscratch.randn(40, 1, 2)
    state = None
    previous_graph = None
    for start in range(0, 40, 8):
        chunk = stream[start:start + 8]
        lstm.zero_grad()
        y, (h, c) = lstm(chunk, state)
        graph = weakref.ref(layer_node(y))
        y.sum().backward()
        got = [p.grad.numpy().copy() for p in lstm.parameters()]
        # the same chunk, alone, from the state as a constant
        lstm.zero_grad()
        constant = None if state is None else (dlscratch.tensor(state[0].numpy()), dlscratch.tensor(state[1].numpy()))
        lstm(chunk, constant)[0].sum().backward()
        for a, p in zip(got, lstm.parameters()):
            np.testing.assert_allclose(a, p.grad.numpy(), rtol=1e-5, atol=1e-6)
        state = (h.detach(), c.detach())
        del y, h, c
        gc.collect()
        if previous_graph is not None:
            assert previous_graph() is None, "a finished chunk's graph is still alive: memory would grow"
        previous_graph = graph


def test_without_detach_the_graph_grows():
    """The contrast: keeping the state attached links every chunk to the ones before."""
    lstm = nn.LSTM(2, 3)
    stream = dlscratch.randn(16, 1, 2)
    y, (h, c) = lstm(stream[:8])
    first = weakref.ref(layer_node(y))
    del y
    y, _ = lstm(stream[8:], (h, c))
    del h, c
    gc.collect()
    assert first() is not None


# ----- bad input -----


def test_bad_input_messages():
    lstm = nn.LSTM(4, 5, num_layers=2)
    with pytest.raises(ValueError, match=r"LSTM: expected input of shape \(seq, batch, input_size\).*"
                                         r"input_size=4, got \(6, 2, 3\)"):
        lstm(dlscratch.randn(6, 2, 3))
    with pytest.raises(ValueError, match=r"LSTM: expected input of shape .*got \(6, 2, 1, 4\)"):
        lstm(dlscratch.randn(6, 2, 1, 4))
    with pytest.raises(ValueError, match=r"LSTM: expected h_0 of shape \(2, 2, 5\) for input .*got \(1, 2, 5\)"):
        lstm(dlscratch.randn(6, 2, 4), (dlscratch.zeros(1, 2, 5), dlscratch.zeros(2, 2, 5)))
    with pytest.raises(ValueError, match=r"LSTM: expected c_0 of shape \(2, 2, 5\) .*got \(2, 3, 5\)"):
        lstm(dlscratch.randn(6, 2, 4), (dlscratch.zeros(2, 2, 5), dlscratch.zeros(2, 3, 5)))
    with pytest.raises(TypeError, match=r"LSTM: the state must be a pair \(h, c\)"):
        lstm(dlscratch.randn(6, 2, 4), dlscratch.zeros(2, 2, 5))
    with pytest.raises(TypeError, match="LSTM: h_0 is float64 but the input is float32"):
        lstm(dlscratch.randn(6, 2, 4), (dlscratch.zeros(2, 2, 5, dtype=np.float64), dlscratch.zeros(2, 2, 5)))
    with pytest.raises(TypeError, match="LSTM: the input is float64 but the weights are float32"):
        lstm(dlscratch.randn(6, 2, 4, dtype=np.float64))
    with pytest.raises(TypeError, match="LSTMCell: the input is int64 but the weights are float32"):
        nn.LSTMCell(2, 3)(dlscratch.tensor([[1, 2]]))
    with pytest.raises(ValueError, match="LSTM: the input .* has no steps"):
        lstm(dlscratch.zeros(0, 2, 4))
    cell = nn.LSTMCell(4, 5)
    with pytest.raises(ValueError, match=r"LSTMCell: expected input of shape \(batch, 4\) or \(4,\), got \(2, 3\)"):
        cell(dlscratch.randn(2, 3))
    with pytest.raises(ValueError, match=r"LSTMCell: expected h of shape \(2, 5\) .*got \(1, 5\)"):
        cell(dlscratch.randn(2, 4), (dlscratch.zeros(1, 5), dlscratch.zeros(2, 5)))
    for name, bad in (("input_size", 0), ("hidden_size", -1), ("num_layers", 1.5)):
        options = {"input_size": 3, "hidden_size": 4, name: bad}
        with pytest.raises(ValueError, match=f"LSTM: {name} must be a positive integer"):
            nn.LSTM(**options)
    with pytest.raises(ValueError, match="dropout: p must be a probability"):
        nn.LSTM(3, 4, dropout=1.0)


def test_functional_bad_shapes():
    x, h, c, W_ih, W_hh = (dlscratch.tensor(a) for a in arrays((2, 3), (2, 4), (2, 4), (16, 3), (16, 4)))
    with pytest.raises(ValueError, match=r"lstm_cell: expected input of shape \(batch, 3\), got \(2, 5\)"):
        F.lstm_cell(dlscratch.randn(2, 5), (h, c), W_ih, W_hh)
    with pytest.raises(ValueError, match=r"lstm_cell: expected weight_ih \(4\*hidden_size, input_size\)"):
        F.lstm_cell(x, (h, c), W_ih[:15], W_hh)
    with pytest.raises(ValueError, match=r"lstm_cell: expected c of shape \(2, 4\) .*got \(2, 3\)"):
        F.lstm_cell(x, (h, c[:, :3]), W_ih, W_hh)
    with pytest.raises(ValueError, match="give both bias_ih and bias_hh, or neither"):
        F.lstm_cell(x, (h, c), W_ih, W_hh, dlscratch.zeros(16))
    with pytest.raises(ValueError, match=r"peephole must be three weights \(p_i, p_f, p_o\) of shape \(4,\)"):
        F.lstm_cell(x, (h, c), W_ih, W_hh, peephole=(dlscratch.zeros(4), dlscratch.zeros(4)))
    with pytest.raises(TypeError, match=r"hx must be a pair \(h, c\)"):
        F.lstm_cell(x, h, W_ih, W_hh)


# ----- the point-wise half: plain path and fused GPU kernel -----


def numerical_gradient(f, a, eps=1e-6):
    """Central differences of the scalar ``f()`` with respect to every element of float64 array ``a``."""
    grad = np.zeros_like(a)
    for k in np.ndindex(a.shape):
        original = a[k]
        a[k] = original + eps
        plus = f()
        a[k] = original - eps
        minus = f()
        a[k] = original
        grad[k] = (plus - minus) / (2 * eps)
    return grad


@pytest.mark.parametrize("peephole", [False, True])
def test_pointwise_forward_and_backward_match_the_reference(backend, peephole):
    """The plain point-wise path against the reference cell (fed ``z`` through an identity weight) and
    its backward against central differences of ``sum(gh * h') + sum(gc * c')``."""
    N, H = 3, 4
    z, c_prev, gh, gc, p_i, p_f, p_o = arrays((N, 4 * H), (N, H), (N, H), (N, H), (H,), (H,), (H,), seed=11, scale=2.0)
    peep = [p_i, p_f, p_o] if peephole else None

    def reference():
        return ref.cell(z, np.zeros((N, 1)), c_prev, np.eye(4 * H), np.zeros((4 * H, 1)), peephole=peep)

    def loss():
        h, c = reference()
        return float((gh * h).sum() + (gc * c).sum())

    on = [backend.asarray(a.astype(np.float32)) for a in (z, c_prev, gh, gc, p_i, p_f, p_o)]
    gates = on[0].copy()
    h, c, tanh_c = lstm_pointwise_forward(gates, on[1], tuple(on[4:]) if peephole else None, fused=False)
    h_ref, c_ref = reference()
    np.testing.assert_allclose(B.to_cpu(h), h_ref, atol=2e-6)
    np.testing.assert_allclose(B.to_cpu(c), c_ref, atol=2e-6)
    np.testing.assert_allclose(B.to_cpu(tanh_c), np.tanh(c_ref), atol=2e-6)
    gz, gc_prev, gpeep = lstm_pointwise_backward(gates, on[1], c, tanh_c, on[2], on[3],
                                                 tuple(on[4:]) if peephole else None, fused=False)
    np.testing.assert_allclose(B.to_cpu(gz), numerical_gradient(loss, z), atol=1e-5)
    np.testing.assert_allclose(B.to_cpu(gc_prev), numerical_gradient(loss, c_prev), atol=1e-5)
    if peephole:
        for got, p in zip(gpeep, peep):
            np.testing.assert_allclose(B.to_cpu(got), numerical_gradient(loss, p), atol=1e-5)
    else:
        assert gpeep is None


@pytest.mark.parametrize("peephole", [False, True])
def test_fused_kernels_equal_the_plain_path_on_the_gpu(cuda_kernels, fast_path, peephole):
    xp = B.module_for("gpu")
    N, H = 5, 7
    z, c_prev, gh, gc, p_i, p_f, p_o = (xp.asarray(a.astype(np.float32)) for a in arrays(
        (N, 4 * H), (N, H), (N, H), (N, H), (H,), (H,), (H,), seed=12, scale=3.0))
    peep = (p_i, p_f, p_o) if peephole else None
    results = {}
    for fused in (False, True):
        gates = z.copy()
        h, c, tanh_c = lstm_pointwise_forward(gates, c_prev, peep, fused=fused)
        gz, gc_prev, gpeep = lstm_pointwise_backward(gates, c_prev, c, tanh_c, gh, gc, peep, fused=fused)
        results[fused] = [gates, h, c, tanh_c, gz, gc_prev] + (list(gpeep) if peephole else [])
    for plain, fused in zip(results[False], results[True]):
        np.testing.assert_allclose(B.to_cpu(fused), B.to_cpu(plain), rtol=1e-5, atol=1e-6)


def test_lstm_on_the_gpu_equals_the_cpu(gpu):
    lstm = nn.LSTM(4, 6, num_layers=2, bidirectional=True)
    x = dlscratch.randn(7, 3, 4)
    y_cpu, (h_cpu, _) = lstm(x)
    y_cpu.sum().backward()
    grads_cpu = [p.grad.numpy() for p in lstm.parameters()]
    lstm.zero_grad()
    lstm.to("gpu")
    y_gpu, (h_gpu, _) = lstm(x.to("gpu"))
    y_gpu.sum().backward()
    np.testing.assert_allclose(y_gpu.detach().numpy(), y_cpu.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(h_gpu.detach().numpy(), h_cpu.detach().numpy(), atol=1e-5)
    for g_cpu, p in zip(grads_cpu, lstm.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), g_cpu, rtol=1e-4, atol=1e-5)


def test_fused_kernel_is_refused_on_the_cpu(fast_path):
    z, c_prev = np.zeros((1, 8), np.float32), np.zeros((1, 2), np.float32)
    with pytest.raises(ValueError, match="fused point-wise kernel runs on the GPU only"):
        lstm_pointwise_forward(z, c_prev, fused=True)


def test_the_reference_path_has_no_fused_kernel():
    z, c_prev = np.zeros((1, 8), np.float32), np.zeros((1, 2), np.float32)
    with dlscratch.reference(), pytest.raises(ValueError, match="fused=True picks the fast path's CUDA kernel"):
        lstm_pointwise_forward(z, c_prev, fused=True)


def test_state_on_another_device_is_named(gpu):
    lstm = nn.LSTM(4, 5)
    h0 = dlscratch.zeros(1, 2, 5, device="gpu")
    with pytest.raises(RuntimeError, match=r"LSTM: h_0 is on gpu but the input is on cpu; move it with h_0.to"):
        lstm(dlscratch.randn(3, 2, 4), (h0, dlscratch.zeros(1, 2, 5)))
