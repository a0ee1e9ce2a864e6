"""PyTorch's layers, losses, optimizer and loader options by their names: nn.MSELoss, nn.CrossEntropyLoss,
nn.NLLLoss, nn.BCEWithLogitsLoss (and F.nll_loss, F.binary_cross_entropy_with_logits), nn.Embedding,
nn.AdaptiveAvgPool2d, optim.RMSprop and DataLoader(num_workers=, collate_fn=, pin_memory=).

Expected values come from PyTorch's documented formulas, computed here in float64 NumPy; gradients from
float64 central differences (``dlscratch.gradcheck``). Bodies run on both paths (``path``) and, where the
``backend`` fixture is used, on the GPU or the strict CuPy stand-in (``DLSCRATCH_STRICT_GPU=1``).
"""

import math
import os

import numpy as np
import pytest

import dlscratch
import dlscratch.nn.functional as F
from dlscratch import backend as B
from dlscratch import gradcheck, nn, optim
from dlscratch.data import DataLoader, Dataset, TensorDataset


def host(t):
    return B.to_cpu(t.data if isinstance(t, dlscratch.Tensor) else t)


def log_softmax_ref(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def class_loss_ref(log_p, labels, weight=None, ignore_index=None, smoothing=0.0, reduction="mean"):
    """PyTorch's CrossEntropyLoss formula on rows ``log_p: (N, C)``: ``l_n = (1 - ε) w[y_n] (-log_p[n, y_n]) +
    ε/C sum_c w[c] (-log_p[n, c])``, 0 where ``y_n == ignore_index``; "mean" divides by ``sum_n w[y_n]`` over the
    samples that count. (NLLLoss is the ε = 0 case on log-probabilities.)"""
    n, c = log_p.shape
    w = np.ones(c) if weight is None else np.asarray(weight, dtype=np.float64)
    counted = np.ones(n, bool) if ignore_index is None else labels != ignore_index
    y = np.where(counted, labels, 0)
    per_sample = (1 - smoothing) * w[y] * -log_p[np.arange(n), y] + smoothing / c * -(log_p * w).sum(axis=1)
    per_sample = np.where(counted, per_sample, 0.0)
    if reduction == "none":
        return per_sample
    return per_sample.sum() / (w[y] * counted).sum() if reduction == "mean" else per_sample.sum()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# ----- MSELoss -----

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_module_and_function(path, reduction):
    x, t = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32), np.array([[0.0, 2.0], [1.0, 1.0]], np.float32)
    squares = np.array([[1.0, 0.0], [4.0, 4.0]])
    want = {"mean": squares.mean(), "sum": squares.sum(), "none": squares}[reduction]
    got = nn.MSELoss(reduction=reduction)(dlscratch.tensor(x), dlscratch.tensor(t))
    np.testing.assert_allclose(got.numpy(), want)
    assert got.dtype == np.float32
    np.testing.assert_allclose(F.mse_loss(dlscratch.tensor(x), dlscratch.tensor(t), reduction=reduction).numpy(), want)


# ----- cross-entropy and NLL -----

def test_cross_entropy_of_a_worked_example(path):
    # -log(e^3 / (e + e^2 + e^3)) = log(1 + e^-1 + e^-2)
    loss = nn.CrossEntropyLoss()(dlscratch.tensor([[1.0, 2.0, 3.0]]), dlscratch.tensor([2]))
    assert loss.item() == pytest.approx(math.log(1 + math.exp(-1) + math.exp(-2)), rel=1e-6)
    # an unbatched sample (C,) with a label ()
    one = F.cross_entropy(dlscratch.tensor([1.0, 2.0, 3.0]), dlscratch.tensor(2))
    assert one.shape == () and one.item() == pytest.approx(loss.item())


OPTIONS = {
    "plain": {},
    "weight": dict(weight=[0.5, 2.0, 1.0]),
    "ignore": dict(ignore_index=1),
    "smoothing": dict(label_smoothing=0.2),
    "all": dict(weight=[0.5, 2.0, 1.0], ignore_index=1, label_smoothing=0.3),
}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("option", OPTIONS)
def test_cross_entropy_options_and_pixel_shapes(backend, path, rng, option, reduction):
    """Logits (N, C, H, W) with labels (N, H, W): the formula on every pixel, classes last."""
    x, labels = rng.standard_normal((2, 3, 2, 2)), rng.integers(0, 3, (2, 2, 2))
    kw = dict(OPTIONS[option])
    want = class_loss_ref(log_softmax_ref(x.transpose(0, 2, 3, 1).reshape(-1, 3)), labels.reshape(-1),
                          kw.get("weight"), kw.get("ignore_index"), kw.get("label_smoothing", 0.0), reduction)
    if "weight" in kw:
        kw["weight"] = dlscratch.tensor(backend.asarray(kw["weight"], dtype=np.float32))
    criterion = nn.CrossEntropyLoss(**kw, reduction=reduction)
    got = criterion(dlscratch.tensor(backend.asarray(x, dtype=np.float32)), dlscratch.tensor(backend.asarray(labels)))
    assert got.dtype == np.float32 and got.shape == (() if reduction != "none" else (2, 2, 2))
    np.testing.assert_allclose(host(got), np.reshape(want, got.shape), rtol=1e-5, atol=1e-6)
    if "weight" in kw:
        kw["weight"] = kw["weight"].double()

    def loss(z):
        return F.cross_entropy(z, backend.asarray(labels), **kw, reduction=reduction)

    gradcheck(loss, backend.asarray(x))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("option", ["plain", "weight", "smoothing"])
def test_cross_entropy_with_class_probabilities(backend, path, rng, option, reduction):
    """PyTorch's probability targets: ``l_n = -sum_c w_c y_nc log softmax(x_n)_c``, with ``y = (1 - ε) y + ε/C``
    under smoothing; "mean" divides by N. The target gets a gradient too."""
    x, y = rng.standard_normal((4, 3)), rng.dirichlet(np.ones(3), size=4)
    kw = {k: v for k, v in OPTIONS[option].items() if k != "ignore_index"}
    w = np.asarray(kw.get("weight", np.ones(3)))
    eps = kw.get("label_smoothing", 0.0)
    per_sample = -(log_softmax_ref(x) * ((1 - eps) * y + eps / 3) * w).sum(axis=1)
    want = {"mean": per_sample.mean(), "sum": per_sample.sum(), "none": per_sample}[reduction]
    if "weight" in kw:
        kw["weight"] = dlscratch.tensor(backend.asarray(w), dtype=np.float64)
    got = F.cross_entropy(dlscratch.tensor(backend.asarray(x), dtype=np.float64),
                          dlscratch.tensor(backend.asarray(y), dtype=np.float64), **kw, reduction=reduction)
    np.testing.assert_allclose(host(got), want, rtol=1e-12)
    gradcheck(lambda z, t: F.cross_entropy(z, t, **kw, reduction=reduction), backend.asarray(x), backend.asarray(y))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_skips_minus_100_by_default_and_divides_by_the_weights(backend, rng, reduction):
    log_p = log_softmax_ref(rng.standard_normal((5, 4)))
    labels, weight = np.array([3, -100, 0, 3, 1]), np.array([1.0, 2.0, 0.5, 4.0])
    want = class_loss_ref(log_p, labels, weight, ignore_index=-100, reduction=reduction)
    w = dlscratch.tensor(backend.asarray(weight), dtype=np.float64)
    got = nn.NLLLoss(w, reduction=reduction)(dlscratch.tensor(backend.asarray(log_p), dtype=np.float64),
                                           dlscratch.tensor(backend.asarray(labels)))
    np.testing.assert_allclose(host(got), want, rtol=1e-12)
    if reduction == "mean":  # by hand: sample 1 skipped, the others weighted by their labels' weights
        by_hand = -(4 * log_p[0, 3] + 1 * log_p[2, 0] + 4 * log_p[3, 3] + 2 * log_p[4, 1]) / (4 + 1 + 4 + 2)
        assert host(got) == pytest.approx(by_hand, rel=1e-12)
    gradcheck(lambda z: F.nll_loss(z, backend.asarray(labels), w, reduction=reduction), backend.asarray(log_p))


def test_nll_loss_shapes_and_all_ignored(path):
    log_p = dlscratch.tensor(np.log(np.full((2, 3, 4), 0.25)).transpose(0, 2, 1), requires_grad=True)  # (2, 4, 3)
    labels = dlscratch.tensor([[0, 1, 2], [3, 3, -100]])
    assert F.nll_loss(log_p, labels, reduction="none").shape == (2, 3)
    assert F.nll_loss(log_p, labels).item() == pytest.approx(math.log(4))
    # every sample ignored: the mean is 0/0, NaN, and the gradient zero, as in PyTorch
    loss = F.nll_loss(log_p, dlscratch.tensor(np.full((2, 3), -100)))
    loss.backward()
    assert math.isnan(loss.item()) and not log_p.grad.numpy().any()


def test_class_loss_errors_say_what_to_do():
    logits = dlscratch.zeros(2, 3)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 3\).*pass ignore_index=-100"):
        F.cross_entropy(logits, dlscratch.tensor([0, -100]))
    with pytest.raises(ValueError, match=r"nll_loss: labels must be integer class indices \(int64\), got float32"):
        F.nll_loss(logits, dlscratch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"input of shape \(2, 3, 4\) needs labels of shape \(2, 4\), got \(2, 3\)"):
        F.cross_entropy(dlscratch.zeros(2, 3, 4), dlscratch.tensor([[0, 1, 2], [0, 1, 2]]))
    with pytest.raises(TypeError, match="weight must be a Tensor.*pass reduction= and the other options by name"):
        F.cross_entropy(logits, dlscratch.tensor([0, 1]), "sum")
    with pytest.raises(ValueError, match=r"weight must have shape \(3,\), got \(2,\)"):
        nn.NLLLoss(dlscratch.ones(2))(logits, dlscratch.tensor([0, 1]))
    with pytest.raises(ValueError, match="ignore_index is for class-label targets"):
        F.cross_entropy(logits, dlscratch.zeros(2, 3), ignore_index=0)
    with pytest.raises(ValueError, match=r"label_smoothing must be a number in \[0, 1\]"):
        F.cross_entropy(logits, dlscratch.tensor([0, 1]), label_smoothing=1.5)
    with pytest.raises(ValueError, match="CrossEntropyLoss: reduction must be 'mean', 'sum' or 'none', got 'avg'"):
        nn.CrossEntropyLoss(reduction="avg")


def test_loss_weights_are_buffers_and_reprs_read_as_pytorch():
    criterion = nn.CrossEntropyLoss(weight=dlscratch.tensor([1.0, 2.0]))
    assert [name for name, _ in criterion.named_buffers()] == ["weight"]
    assert list(nn.BCEWithLogitsLoss(pos_weight=[2.0]).state_dict()) == ["pos_weight"]
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"
    assert repr(nn.NLLLoss(reduction="sum")) == "NLLLoss(reduction='sum')"


# ----- BCEWithLogitsLoss -----

def bce_ref(x, y, weight=1.0, pos_weight=1.0):
    """PyTorch's documented loss, written with the sigmoid: ``-w [p y log σ(x) + (1 - y) log(1 - σ(x))]``."""
    s = 1 / (1 + np.exp(-x))
    return -weight * (pos_weight * y * np.log(s) + (1 - y) * np.log(1 - s))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weights", ["none", "weight", "pos_weight", "both"])
def test_bce_with_logits_against_the_formula(backend, rng, weights, reduction):
    x, y = rng.standard_normal((3, 4)) * 3, rng.random((3, 4))
    weight = rng.random(4) if weights in ("weight", "both") else None
    pos_weight = rng.random(4) * 3 if weights in ("pos_weight", "both") else None
    per_element = bce_ref(x, y, 1.0 if weight is None else weight, 1.0 if pos_weight is None else pos_weight)
    want = {"mean": per_element.mean(), "sum": per_element.sum(), "none": per_element}[reduction]
    kw = {k: dlscratch.tensor(backend.asarray(v), dtype=np.float64)
          for k, v in (("weight", weight), ("pos_weight", pos_weight)) if v is not None}
    got = nn.BCEWithLogitsLoss(**kw, reduction=reduction)(dlscratch.tensor(backend.asarray(x), dtype=np.float64),
                                                          dlscratch.tensor(backend.asarray(y), dtype=np.float64))
    np.testing.assert_allclose(host(got), want, rtol=1e-10)
    gradcheck(lambda z, t: F.binary_cross_entropy_with_logits(z, t, **kw, reduction=reduction),
              backend.asarray(x), backend.asarray(y))


def test_bce_with_logits_is_stable_for_large_logits():
    x = dlscratch.tensor([100.0, -100.0, 100.0, -100.0, 0.0], requires_grad=True)
    y = dlscratch.tensor([0.0, 1.0, 1.0, 0.0, 1.0])
    loss = F.binary_cross_entropy_with_logits(x, y, reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(), [100.0, 100.0, 0.0, 0.0, math.log(2)], rtol=1e-6, atol=1e-30)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -1.0, 0.0, 0.0, -0.5], atol=1e-30)  # sigmoid(x) - y
    assert loss.dtype == np.float32
    with pytest.raises(ValueError, match=r"target of shape \(2,\) must have the input's shape \(5,\)"):
        F.binary_cross_entropy_with_logits(x, dlscratch.zeros(2))


# ----- Embedding -----

def test_embedding_init_is_standard_normal_with_a_zero_padding_row():
    dlscratch.manual_seed(0)
    layer = nn.Embedding(2000, 16, padding_idx=-1)
    w = host(layer.weight)
    assert w.dtype == np.float32 and layer.padding_idx == 1999 and not w[1999].any()
    assert abs(w[:1999].mean()) < 0.03 and abs(w[:1999].std() - 1) < 0.03  # 32,000 draws of N(0, 1): 5 sigma
    assert repr(layer).startswith("Embedding(2000, 16, padding_idx=1999)")


def test_embedding_looks_up_rows_and_adds_gradients_of_repeated_indices(backend, path):
    layer = nn.Embedding(5, 3, padding_idx=0)
    layer.to("gpu" if backend is not np else "cpu")
    indices = np.array([[1, 3, 1], [0, 1, 4]])
    out = layer(dlscratch.tensor(backend.asarray(indices)))
    assert out.shape == (2, 3, 3)
    np.testing.assert_array_equal(host(out), host(layer.weight)[indices])
    upstream = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    (out * dlscratch.tensor(backend.asarray(upstream))).sum().backward()
    want = np.zeros((5, 3), np.float32)
    for position, row in np.ndenumerate(indices):
        want[row] += upstream[position]
    want[0] = 0  # the padding row learns nothing
    np.testing.assert_array_equal(host(layer.weight.grad), want)


def test_embedding_gradcheck_and_refusals(backend):
    weight = backend.asarray(np.random.default_rng(0).standard_normal((4, 2)))
    indices = backend.asarray([[2, 2], [0, 3]])
    gradcheck(lambda w: F.embedding(indices, w), weight)  # (padding_idx's zero gradient is by decree, not calculus)
    layer = nn.Embedding(4, 2)
    with pytest.raises(TypeError, match=r"embedding: indices must be integers \(int64\), got float32"):
        layer(dlscratch.tensor([1.0, 2.0]))
    with pytest.raises(IndexError, match=r"index 4 is out of range for 4 embeddings \(0 to 3\)"):
        layer(dlscratch.tensor([0, 4]))
    with pytest.raises(IndexError, match="index -1 is out of range"):
        layer(dlscratch.tensor([-1]))
    with pytest.raises(ValueError, match="padding_idx 4 must lie within the 4 embeddings"):
        nn.Embedding(4, 2, padding_idx=4)


def test_embedding_from_pretrained_is_frozen_by_default():
    table = dlscratch.tensor([[1.0, 2.0], [3.0, 4.0]])
    layer = nn.Embedding.from_pretrained(table)
    assert not layer.weight.requires_grad and layer(dlscratch.tensor([1])).tolist() == [[3.0, 4.0]]
    assert nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad


# ----- AdaptiveAvgPool2d -----

def adaptive_ref(x, out_h, out_w):
    """Loops over PyTorch's windows: rows floor(i*H/out_h) to ceil((i+1)*H/out_h), columns alike."""
    h, w = x.shape[-2:]
    y = np.empty(x.shape[:-2] + (out_h, out_w))
    for i in range(out_h):
        for j in range(out_w):
            rows = slice(i * h // out_h, math.ceil((i + 1) * h / out_h))
            columns = slice(j * w // out_w, math.ceil((j + 1) * w / out_w))
            y[..., i, j] = x[..., rows, columns].mean(axis=(-2, -1))
    return y


@pytest.mark.parametrize("size, output_size, out", [
    ((4, 6), (2, 3), (2, 3)),  # divides evenly: 2x2 windows
    ((7, 5), 1, (1, 1)),  # global average pooling
    ((5, 7), (3, 4), (3, 4)),  # overlapping windows of two sizes
    ((3, 2), (5, 4), (5, 4)),  # larger than the input: windows of one element, repeated
    ((5, 6), (None, 2), (5, 2)),  # None keeps the input's height
])
def test_adaptive_avg_pool2d_windows(backend, path, rng, size, output_size, out):
    x = rng.standard_normal((2, 3, *size))
    got = nn.AdaptiveAvgPool2d(output_size)(dlscratch.tensor(backend.asarray(x, dtype=np.float32)))
    assert got.shape == (2, 3, *out) and got.dtype == np.float32
    np.testing.assert_allclose(host(got), adaptive_ref(x, *out), rtol=1e-5, atol=1e-6)
    gradcheck(lambda z: F.adaptive_avg_pool2d(z, output_size), backend.asarray(x[:1, :2]))


def test_adaptive_avg_pool2d_worked_example_and_errors():
    # H = 5 into 3 rows: windows [0, 2), [1, 4), [3, 5); one column kept whole
    x = dlscratch.tensor(np.arange(5.0).reshape(1, 5, 1))  # (C, H, W): an unbatched image
    assert F.adaptive_avg_pool2d(x, (3, 1)).numpy().ravel().tolist() == [0.5, 2.0, 3.5]
    assert F.adaptive_avg_pool2d(dlscratch.ones(2, 2, 2, 2), 1).shape == (2, 2, 1, 1)
    with pytest.raises(ValueError, match="output_size must be a positive int or a pair"):
        F.adaptive_avg_pool2d(x, (0, 1))
    with pytest.raises(ValueError, match=r"expected input \(N, C, H, W\) or \(C, H, W\), got shape \(5, 1\)"):
        F.adaptive_avg_pool2d(dlscratch.ones(5, 1), 1)
    assert repr(nn.AdaptiveAvgPool2d((2, None))) == "AdaptiveAvgPool2d(output_size=(2, None))"


# ----- RMSprop -----

def rmsprop_ref(p, grads, lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False):
    """PyTorch's documented RMSprop, in float64: the parameter after each step."""
    p, v, m, b, history = np.array(p, float), 0.0, 0.0, 0.0, []
    for g in grads:
        g = np.asarray(g, float) + weight_decay * p
        v = alpha * v + (1 - alpha) * g**2
        v_hat = v
        if centered:
            m = alpha * m + (1 - alpha) * g
            v_hat = v - m**2
        u = g / (np.sqrt(v_hat) + eps)
        if momentum:
            b = momentum * b + u
            u = b
        p = p - lr * u
        history.append(p)
    return history


RMSPROP = {
    "default": {},
    "momentum": dict(momentum=0.9),
    "centered": dict(centered=True),
    "everything": dict(lr=0.1, alpha=0.9, eps=1e-3, weight_decay=0.1, momentum=0.5, centered=True),
}


@pytest.mark.parametrize("name", RMSPROP)
def test_rmsprop_follows_the_documented_rule(backend, name):
    grads = [[0.5, -2.0, 0.0], [1.0, 1.0, -0.25], [-0.5, 3.0, 0.125], [0.25, -1.0, 2.0]]
    p = nn.Parameter(backend.asarray([1.0, -1.0, 0.5], dtype=np.float32))
    opt = optim.RMSprop([p], **RMSPROP[name])
    for g, want in zip(grads, rmsprop_ref([1.0, -1.0, 0.5], grads, **RMSPROP[name]), strict=True):
        p.grad = dlscratch.tensor(backend.asarray(g, dtype=np.float32))
        opt.step()
        assert p.dtype == np.float32
        np.testing.assert_allclose(host(p), want, rtol=1e-5, atol=1e-6)
    kept = {"step", "square_avg"}  # and, as in PyTorch, a momentum buffer or a gradient average only when used
    kept |= {"momentum_buffer"} if "momentum" in RMSPROP[name] else set()
    kept |= {"grad_avg"} if RMSPROP[name].get("centered") else set()
    assert set(opt.state_dict()["state"][0]) == kept


def test_rmsprop_state_dict_round_trip_and_refusals():
    def run(opt, p, grads):
        for g in grads:
            p.grad = dlscratch.tensor(np.asarray(g, dtype=np.float32))
            opt.step()

    grads = [[1.0, -2.0], [0.5, 0.5], [-1.0, 2.0], [0.25, 0.0]]
    whole = nn.Parameter(np.ones(2, dtype=np.float32))
    run(optim.RMSprop([whole], momentum=0.9, centered=True), whole, grads)
    first = nn.Parameter(np.ones(2, dtype=np.float32))
    opt = optim.RMSprop([first], momentum=0.9, centered=True)
    run(opt, first, grads[:2])
    second = nn.Parameter(host(first).copy())
    resumed = optim.RMSprop([second], momentum=0.9, centered=True)
    resumed.load_state_dict(opt.state_dict())
    run(resumed, second, grads[2:])
    np.testing.assert_array_equal(host(second), host(whole))
    with pytest.raises(ValueError, match="RMSprop: Invalid learning rate: -1"):
        optim.RMSprop([first], lr=-1)
    with pytest.raises(ValueError, match="Invalid alpha value: -0.5"):
        optim.RMSprop([first], alpha=-0.5)
    state = opt.state_dict()
    del state["state"][0]["square_avg"]
    with pytest.raises(ValueError, match=r"needs \['square_avg', 'step'\] and may have"):
        resumed.load_state_dict(state)


# ----- DataLoader: workers, collate_fn, pin_memory -----

class Noisy(Dataset):
    """Sample i is ``(i + a random number from NumPy's global generator, i)``: augmentation in __getitem__."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        return np.float32(i + np.random.random()), i


class Failing(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError("sample 5 is corrupt")
        return np.float32(i)


class Dying(Failing):
    def __getitem__(self, i):
        os._exit(3)  # a worker killed (out of memory, say)


def pairs_as_lists(samples):
    """A collate_fn: the batch as two Python lists."""
    return [x for x, _ in samples], [y for _, y in samples]


def test_workers_give_the_batches_of_the_main_process_in_order(backend):
    x, y = np.arange(30, dtype=np.float64).reshape(10, 3), np.arange(10)
    kw = dict(batch_size=3, shuffle=True, seed=7)
    here = list(DataLoader(TensorDataset(x, y), **kw))
    there = list(DataLoader(TensorDataset(x, y), **kw, num_workers=2, pin_memory=True, prefetch_factor=1))
    assert len(there) == 4
    for (xa, ya), (xb, yb) in zip(here, there, strict=True):
        assert xb.dtype == np.float32 and xb.device == xa.device
        np.testing.assert_array_equal(host(xb), host(xa))
        np.testing.assert_array_equal(host(yb), host(ya))


def test_workers_seed_each_batch_and_run_collate_fn():
    def values(loader):
        return [x for xs, _ in loader for x in xs]

    first = values(DataLoader(Noisy(), batch_size=4, seed=0, num_workers=2, collate_fn=pairs_as_lists))
    again = values(DataLoader(Noisy(), batch_size=4, seed=0, num_workers=3, collate_fn=pairs_as_lists))
    noise = [x - i for i, x in enumerate(first)]
    assert first == again  # the same seed, the same augmentation, however many workers
    assert len(set(noise)) == 12 and all(0 <= n < 1 for n in noise)  # no two workers repeat their numbers
    xs, ys = next(iter(DataLoader(Noisy(), batch_size=5, collate_fn=pairs_as_lists)))
    assert ys == [0, 1, 2, 3, 4] and isinstance(xs, list)  # without workers too, the batch is collate_fn's


def test_worker_errors_reach_the_main_process():
    with pytest.raises(ValueError, match="sample 5 is corrupt"):
        list(DataLoader(Failing(), batch_size=2, num_workers=2))
    with pytest.raises(RuntimeError, match="a worker process died unexpectedly"):
        list(DataLoader(Dying(), batch_size=2, num_workers=1))
    batches = iter(DataLoader(Failing(), batch_size=2, num_workers=2))
    assert next(batches).tolist() == [0.0, 1.0]
    batches.close()  # leaving the loop early: the workers stop (the batch with sample 5 is never read)


def test_spawned_workers_get_the_dataset_pickled():
    loader = DataLoader(TensorDataset(np.arange(6)), batch_size=4, num_workers=1, multiprocessing_context="spawn")
    assert [b.tolist() for (b,) in loader] == [[0, 1, 2, 3], [4, 5]]


def test_loader_options_are_checked():
    data = TensorDataset(np.arange(4))
    with pytest.raises(ValueError, match=r"num_workers must be an integer >= 0 \(0: load in this process\), got -1"):
        DataLoader(data, num_workers=-1)
    with pytest.raises(ValueError, match="prefetch_factor must be a positive integer, and only goes with num_workers"):
        DataLoader(data, prefetch_factor=2)
    with pytest.raises(TypeError, match="collate_fn must be a function of a list of samples"):
        DataLoader(data, collate_fn="stack")
    assert "num_workers=2" in repr(DataLoader(data, num_workers=2))


def test_log_softmax_then_nll_loss_is_cross_entropy():
    logits = dlscratch.tensor([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]], requires_grad=True)
    labels = dlscratch.tensor([1, 2])
    log_p = nn.LogSoftmax(dim=1)(logits)
    shifted = logits.detach().numpy() - logits.detach().numpy().max(1, keepdims=True)
    np.testing.assert_allclose(log_p.detach().numpy(), shifted - np.log(np.exp(shifted).sum(1, keepdims=True)),
                               rtol=1e-6)
    np.testing.assert_allclose(nn.NLLLoss()(log_p, labels).item(), nn.CrossEntropyLoss()(logits, labels).item(),
                               rtol=1e-6)
    assert repr(nn.LogSoftmax(dim=1)) == "LogSoftmax(dim=1)"
