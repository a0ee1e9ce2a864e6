"""The ReLU, dropout and convolution kernels of the fast path, run by the strict CuPy stand-in (as on a GPU)
against the reference path on the CPU: the same values, through the kernels that the ledger names."""

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as B
from dlscratch import nn
from dlscratch.fast.layout import memory_order


def kernels_of(book):
    return {what for _, _, what, _ in book.by_site("kernel")}


def upstream(shape):
    return np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape)


def run(compute, x, device):
    """``compute(x)`` forward and backward (a fixed upstream gradient) on ``device``: the output and x's gradient,
    as tensors on ``device``."""
    move = B.to_gpu if device == "gpu" else np.asarray
    x_t = dlscratch.tensor(x, requires_grad=True)
    out = compute(x_t)
    out.backward(dlscratch.tensor(move(upstream(out.shape))))
    return out.detach(), x_t.grad


def on_host(tensors):
    return [t.to("cpu").numpy() for t in tensors]


def on_both(make, x, seed=0):
    """``make()(x)`` on the CPU's reference path and on the stand-in's fast path, each from ``seed`` (the layer's
    weights, dropout's mask): ``(cpu results, stand-in results, the stand-in's ledger)``."""
    dlscratch.manual_seed(seed)
    with dlscratch.reference():
        on_cpu = on_host(run(make(), x, "cpu"))
    with B.on_the_stand_in():
        dlscratch.manual_seed(seed)
        layer = make()
        layer = layer.to("gpu") if isinstance(layer, nn.Module) else layer
        x_gpu = B.to_gpu(x)
        with dlscratch.engine.switch.fast_path(), B.ledger() as book:
            results = run(layer, x_gpu, "gpu")
        on_gpu = on_host(results)
    return on_cpu, on_gpu, book


def test_relu_backward_is_one_kernel_with_the_references_values():
    x = np.random.default_rng(0).standard_normal((4, 3, 5, 5)).astype(np.float32)
    x[0, 0, 0, :3] = 0  # the slope at 0 is 0, as in the reference
    on_cpu, on_gpu, book = on_both(lambda: F.relu, x)
    for got, expected in zip(on_gpu, on_cpu, strict=True):
        np.testing.assert_array_equal(got, expected)
    assert "ElementwiseKernel dlscratch_relu_backward" in kernels_of(book)


def test_relu_keeps_a_batch_last_input_in_its_layout():
    host = np.random.default_rng(1).standard_normal((5, 5, 3, 4)).astype(np.float32)  # (H, W, C, N) in memory
    with B.on_the_stand_in(), dlscratch.engine.switch.fast_path():
        x = dlscratch.tensor(B.to_gpu(host), requires_grad=True)
        batch_last = x.permute(3, 2, 0, 1)  # (N, C, H, W) seen, the batch innermost in memory
        y = F.relu(batch_last)
        assert memory_order(y.data) == memory_order(batch_last.data)
        y.backward(dlscratch.tensor(B.to_gpu(upstream(y.shape))))
        np.testing.assert_array_equal(x.grad.to("cpu").numpy(),
                                      (upstream(y.shape) * (host.transpose(3, 2, 0, 1) > 0)).transpose(2, 3, 1, 0))


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_dropout_is_one_kernel_each_way_and_applies_its_own_mask(p):
    x = np.random.default_rng(2).standard_normal((64, 3, 4, 4)).astype(np.float32)
    (y_cpu, g_cpu), (y, g), book = on_both(lambda: nn.Dropout(p), x)
    kept = y != 0
    assert 0.6 < kept.mean() / (1 - p) < 1.4  # about 1 - p of the elements kept
    np.testing.assert_allclose(y[kept], x[kept] / np.float32(1 - p), rtol=1e-6)
    np.testing.assert_allclose(g, np.where(kept, upstream(x.shape) / np.float32(1 - p), 0), rtol=1e-6)
    assert {"ElementwiseKernel dlscratch_dropout", "ElementwiseKernel dlscratch_dropout_backward"} <= kernels_of(book)


@pytest.mark.parametrize("padding, stride", [(0, 1), (1, 1), (1, 2)])
def test_a_convolution_with_its_inputs_gradient_runs_im2col_and_col2im_kernels(padding, stride):
    x = np.random.default_rng(3).standard_normal((4, 3, 9, 9)).astype(np.float32)
    on_cpu, on_gpu, book = on_both(lambda: nn.Conv2d(3, 5, 3, stride=stride, padding=padding), x)
    for got, expected in zip(on_gpu, on_cpu, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert {"ElementwiseKernel dlscratch_im2col", "ElementwiseKernel dlscratch_col2im"} <= kernels_of(book)
    assert book.waits == 0
