"""The GPU cross-entropy (dlscratch/fast/loss.py) on the strict CuPy stand-in: the reference's numbers, no host
wait, and a bad label reported where the host reads the loss."""

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as B
from dlscratch import nn, optim
from dlscratch.data import DataLoader, TensorDataset
from dlscratch.training import evaluate, fit


def logits_and_labels(n=6, c=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, c)).astype(np.float32) * 3, rng.integers(0, c, n)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_the_kernels_give_the_references_loss_and_gradient_without_waiting(stand_in, fast_path, reduction):
    z, y = logits_and_labels()
    with dlscratch.reference():
        zr = dlscratch.tensor(z, requires_grad=True)
        loss = F.cross_entropy(zr, dlscratch.tensor(y), reduction=reduction)
        (loss.sum() if reduction == "none" else loss * 2).backward()
    zg = dlscratch.tensor(B.to_gpu(z), requires_grad=True)
    labels = dlscratch.tensor(B.to_gpu(y))
    with B.ledger() as book:
        on_gpu = F.cross_entropy(zg, labels, reduction=reduction)
        (on_gpu.sum() if reduction == "none" else on_gpu * 2).backward()
    assert book.waits == 0 and book.copies_to_host == 0, book.table()
    assert {"ElementwiseKernel dlscratch_cross_entropy", "ElementwiseKernel dlscratch_cross_entropy_backward"} <= {
        what for _, _, what, _ in book.by_site("kernel")}
    np.testing.assert_allclose(on_gpu.detach().numpy(), loss.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(zg.grad.numpy(), zr.grad.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("read", [float, lambda t: t.item(), lambda t: t.detach().numpy(), lambda t: t.tolist()])
def test_a_bad_label_is_named_when_the_loss_is_read(stand_in, fast_path, read):
    z, y = logits_and_labels()
    y[3] = 9
    loss = F.cross_entropy(dlscratch.tensor(B.to_gpu(z)), dlscratch.tensor(B.to_gpu(y)))  # no wait, no error yet
    assert np.isnan(loss.data.get())
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 5\), got values from \d to 9"):
        read(loss)


def test_negative_labels_and_a_loss_per_sample_are_checked_too(stand_in, fast_path):
    z, y = logits_and_labels()
    y[0] = -1
    losses = F.cross_entropy(dlscratch.tensor(B.to_gpu(z)), dlscratch.tensor(B.to_gpu(y)), reduction="none")
    assert np.isnan(losses.data.get()[0]) and np.isfinite(losses.data.get()[1:]).all()
    with pytest.raises(ValueError, match=r"got values from -1 to"):
        losses.tolist()


@pytest.mark.parametrize("run", ["fit", "evaluate"])
def test_fit_and_evaluate_report_the_bad_label_not_a_divergence(stand_in, fast_path, run):
    z, y = logits_and_labels(n=20, c=3)
    y[7] = 5
    model = nn.Linear(3, 3)
    model.to("gpu")
    loader = DataLoader(TensorDataset(dlscratch.tensor(B.to_gpu(z[:, :3])), dlscratch.tensor(B.to_gpu(y))),
                        batch_size=10)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 3\), got values from 0 to 5"):
        if run == "fit":
            fit(model, F.cross_entropy, optim.SGD(model.parameters(), lr=0.1), loader, epochs=1, progress=False)
        else:
            evaluate(model, loader, F.cross_entropy)


def exact_cross_entropy(z, y, reduction):
    """Loss and gradient of ``z`` (float64 arithmetic), the sum of the per-sample losses as ``reduction`` asks."""
    z = z.astype(np.float64)
    log_p = z - z.max(axis=1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(axis=1, keepdims=True))
    losses = -log_p[np.arange(len(y)), y]
    grad = np.exp(log_p)
    grad[np.arange(len(y)), y] -= 1
    if reduction == "mean":
        return losses.mean(), grad / len(y)
    return (losses.sum(), grad) if reduction == "sum" else (losses, grad)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_float16_logits_run_on_the_kernels_and_sum_in_float32(stand_in, fast_path, reduction):
    z, y = logits_and_labels(n=64, c=1000, seed=3)
    z = z.astype(np.float16)
    zg = dlscratch.tensor(B.to_gpu(z), requires_grad=True)
    with B.ledger() as book:
        loss = F.cross_entropy(zg, dlscratch.tensor(B.to_gpu(y)), reduction=reduction)
        loss.sum().backward()
    assert {"ElementwiseKernel dlscratch_cross_entropy", "ElementwiseKernel dlscratch_cross_entropy_backward"} <= {
        what for _, _, what, _ in book.by_site("kernel")}
    assert loss.dtype == np.float16 and zg.grad.dtype == np.float16
    want_loss, want_grad = exact_cross_entropy(z, y, reduction)
    # one float16 rounding of a value computed in float32: half a unit in the last place, 2^-11 relative
    np.testing.assert_allclose(loss.detach().numpy(), want_loss, rtol=2 ** -11)
    np.testing.assert_allclose(zg.grad.numpy(), want_grad, rtol=2 ** -11, atol=2 ** -24)
    with dlscratch.reference():  # float16 all the way: its sum of 1,000 exponentials loses digits
        in_float16 = F.cross_entropy(dlscratch.tensor(z), dlscratch.tensor(y), reduction=reduction)
    kernel_error = np.abs(loss.detach().numpy() - want_loss).max()
    assert kernel_error <= np.abs(in_float16.detach().numpy() - want_loss).max()
