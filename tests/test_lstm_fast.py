"""The fast path's LSTM tricks on the strict CuPy stand-in: what each launches, and the same numbers as before.

The cell adds its recurrent product and biases inside its fused forward kernel and gives both biases their
gradient from one reduction (``fast/lstm.py``); the layer's loop multiplies each step's ``gz`` by
``[W_hh | W_ih]`` when the input needs a gradient, a product that the ledger's model of cuBLAS runs without a
split-K reduce (``fast/lstm_layer.py``). Values and gradients against the reference path and float64 central
differences, in float16 too; launches counted by the ledger at the benchmark's sizes (700 -> 500, batch 32).
"""

import contextlib

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as B
from dlscratch import gradcheck, nn
from dlscratch.bench.ledger import gemm_kernel_names
from dlscratch.bench.workloads import lstm_cell_step
from dlscratch.operations.lstm_layer import lstm_layer

I, H, N = 700, 500, 32  # the benchmark's LSTM


def stand_in_arrays(*shapes, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [B.to_gpu(rng.standard_normal(s).astype(dtype)) for s in shapes]


def kernels_named(book, name):
    return sum(n for _, category, what, n in book.by_site("kernel") if what == name)


# ----- launches -----


def test_the_models_kernels_for_each_order_of_the_step_products():
    """The ledger's model of cuBLAS (calibrated against CUPTI on an H100) for a step's products, ``(m x k) @ (k x n)``.
    Forward, the recurrent product: tall and thin as ``W_hh @ h.T``, one GEMM as ``h @ W_hh.T`` (the loop's).
    Backward, ``gz @ W_hh``: a split-K reduce in either order (the same 16,000 outputs); joined with ``W_ih``, none."""
    assert gemm_kernel_names(4 * H, N, H) == ["gemm", "gemm (second kernel)"]  # W_hh @ h.T: 2000 x 32
    assert gemm_kernel_names(N, 4 * H, H) == ["gemm"]  # h @ W_hh.T: 32 x 2000
    assert gemm_kernel_names(N, H, 4 * H) == ["gemm", "splitKreduce"]  # gz @ W_hh: 32 x 500
    assert gemm_kernel_names(H, N, 4 * H) == ["gemm", "splitKreduce"]  # W_hh.T @ gz.T: 500 x 32
    assert gemm_kernel_names(N, H + I, 4 * H) == ["gemm"]  # gz @ [W_hh | W_ih]: 32 x 1200
    assert gemm_kernel_names(H + I, N, 4 * H) == ["gemm", "gemm (second kernel)"]  # the other order: 1200 x 32


@pytest.mark.slow
def test_a_cell_step_adds_its_biases_in_its_kernel_and_copies_no_gradient(stand_in, fast_path):
    """The benchmark's cell step: two products and the fused kernel forward; backward the fused kernel, four
    products (five kernels: one splits K) and one reduction for both biases, 10 in all. With the loss's five
    launches (two sums of two kernels each, their addition) and at most the seed gradient's fill: 16."""
    step = lstm_cell_step()
    step()
    with B.ledger() as book:
        step()
    assert book.launches <= 16, book.table()
    assert book.copies_device == 0 and kernels_named(book, "copy") == 0, book.table()
    assert not [site for site, _, what, _ in book.by_site("kernel") if "lstm" in site and what == "add"], book.table()
    assert kernels_named(book, "ElementwiseKernel dlscratch_lstm_cell_forward") == 1
    assert kernels_named(book, "sum") == 1  # both biases' gradient


def layer_step_ledger(steps, x_needs_grad):
    lstm = nn.LSTM(I, H).to("gpu")
    x = dlscratch.tensor(*stand_in_arrays((steps, N, I), dtype=np.float32), requires_grad=x_needs_grad)

    def step():
        lstm.zero_grad()
        x.grad = None
        lstm(x)[0].sum().backward()

    step()
    with B.ledger() as book:
        step()
    return book


@pytest.mark.slow
def test_a_layer_step_launches_a_gemm_and_a_kernel_each_way(stand_in, fast_path):
    """Four launches per step with the input's gradient (no split-K reduce: the step's product gives ``gx`` too);
    five without it, where the step's product is ``gz @ W_hh`` alone."""
    with_x = {T: layer_step_ledger(T, True) for T in (2, 3)}
    assert with_x[3].launches - with_x[2].launches == 4, with_x[3].table()
    assert kernels_named(with_x[3], "splitKreduce") == 0
    # h_n and c_n out of the states' arrays; with the input's gradient also [W_hh | W_ih], and x's (through a reshape)
    assert kernels_named(with_x[3], "copy") == 5
    without_x = {T: layer_step_ledger(T, False) for T in (2, 3)}
    assert without_x[3].launches - without_x[2].launches == 5, without_x[3].table()
    assert kernels_named(without_x[3], "splitKreduce") == 3
    assert kernels_named(without_x[3], "copy") == 2


# ----- values and gradients -----


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("peephole", [False, True])
@pytest.mark.parametrize("batch", [1, 3])
def test_the_fast_cell_gradcheck_on_the_stand_in(stand_in, fast_path, bias, peephole, batch):
    x, h, c, W_ih, W_hh, b_ih, b_hh, p_i, p_f, p_o = stand_in_arrays(
        (batch, 3), (batch, 4), (batch, 4), (16, 3), (16, 4), (16,), (16,), (4,), (4,), (4,), seed=batch)
    biases = (b_ih, b_hh) if bias else ()
    peep = (p_i, p_f, p_o) if peephole else ()

    def step(x, h, c, W_ih, W_hh, *rest):
        b = rest[:2] if bias else (None, None)
        return F.lstm_cell(x, (h, c), W_ih, W_hh, *b, peephole=rest[len(biases):] or None)

    with B.ledger() as book:
        gradcheck(step, x, h, c, W_ih, W_hh, *biases, *peep)
    assert kernels_named(book, "ElementwiseKernel dlscratch_lstm_cell_forward") > 0


@pytest.mark.parametrize("x_needs_grad", [True, False])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_the_loop_layer_gradcheck_on_the_stand_in(stand_in, fast_path, x_needs_grad, reverse, bias):
    x, h0, c0, W_ih, W_hh, b_ih, b_hh = stand_in_arrays((4, 2, 3), (2, 5), (2, 5), (20, 3), (20, 5), (20,), (20,),
                                                        seed=5)
    biases = (b_ih, b_hh) if bias else ()

    def layer(*inputs):
        given = inputs if x_needs_grad else (dlscratch.tensor(x, dtype=np.float64),) + inputs
        y, h_n, c_n = lstm_layer(*given[:5], *(given[5:] or (None, None)), reverse=reverse)
        return y, h_n, c_n

    with B.ledger() as book:
        gradcheck(layer, *((x,) if x_needs_grad else ()), h0, c0, W_ih, W_hh, *biases)
    assert kernels_named(book, "ElementwiseKernel dlscratch_lstm_layer_backward") > 0


def assert_close(got, expected, dtype):
    """float32 element by element; float16 as a whole, within 5 of its epsilon (its sums of products, taken in
    another order, can differ more in one element: measured up to 1.3 epsilons as a whole)."""
    if dtype == np.float16:
        assert np.linalg.norm(got - expected) <= 5 * np.finfo(np.float16).eps * np.linalg.norm(expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def cell_results(cell, inputs):
    """``h', c'`` and the gradients of the inputs and the parameters, on the host as float64."""
    cell.zero_grad()
    x, h, c = (dlscratch.tensor(a, requires_grad=True) for a in inputs)
    h1, c1 = cell(x, (h, c))
    (h1.sum() + (c1 * 2).sum()).backward()
    return [t.detach().to("cpu").numpy().astype(np.float64) for t in (h1, c1)] + \
           [t.grad.to("cpu").numpy().astype(np.float64) for t in (x, h, c, *cell.parameters())]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("peephole", [False, True])
@pytest.mark.parametrize("shape", [(3, 4, 6), (64, 8, 600)], ids=["small", "large"])  # large: the kernel's twin
def test_the_fast_cell_equals_the_reference_cell(stand_in, fast_path, dtype, bias, peephole, shape):
    batch, input_size, hidden = shape
    cell = nn.LSTMCell(input_size, hidden, bias=bias, peephole=peephole).to("gpu").to(dtype)
    inputs = stand_in_arrays((batch, input_size), (batch, hidden), (batch, hidden), seed=9, dtype=dtype)
    fast = cell_results(cell, inputs)
    with dlscratch.reference():
        plain = cell_results(cell, inputs)
    for got, expected in zip(fast, plain):
        assert_close(got, expected, dtype)


@pytest.mark.parametrize("x_needs_grad", [True, False])
def test_the_loop_layer_equals_the_reference_in_float16(stand_in, fast_path, x_needs_grad):
    lstm = nn.LSTM(4, 6, num_layers=2).to("gpu").half()
    x_data, h0, c0 = stand_in_arrays((5, 3, 4), (2, 3, 6), (2, 3, 6), seed=4, dtype=np.float16)
    found = []
    for reference in (False, True):
        lstm.zero_grad()
        inputs = [dlscratch.tensor(x_data, requires_grad=x_needs_grad)] + \
                 [dlscratch.tensor(a, requires_grad=True) for a in (h0, c0)]
        with dlscratch.reference() if reference else contextlib.nullcontext():
            y, (h_n, c_n) = lstm(inputs[0], (inputs[1], inputs[2]))
            (y.sum() + h_n.sum() + c_n.sum()).backward()
        found.append([t.detach().to("cpu").numpy().astype(np.float64) for t in (y, h_n, c_n)] +
                     [t.grad.to("cpu").numpy().astype(np.float64) for t in inputs if t.grad is not None] +
                     [p.grad.to("cpu").numpy().astype(np.float64) for p in lstm.parameters()])
    assert len(found[0]) == len(found[1]) == 3 + (3 if x_needs_grad else 2) + 8
    for got, expected in zip(*found):
        assert_close(got, expected, np.float16)
