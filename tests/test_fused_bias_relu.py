"""A Linear's or Conv2d's bias and the ReLU after it in one kernel (``dlscratch/fast/bias_relu.py``), run by the
strict CuPy stand-in: one launch fewer per pair, the unfused numbers to the bit, and every promise of the unfused
pair kept (autocast, hooks, shared modules, ``no_grad``, in-place checks, the reference path, the CPU)."""

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import amp, nn
from dlscratch import backend as B
from dlscratch.fast.bias_relu import bias_relu
from dlscratch.nn.utils import prune

FUSED = "ElementwiseKernel dlscratch_bias_relu"
MODELS = {  # name -> (builder, input shape, Linear/Conv2d + ReLU pairs)
    "mlp": (lambda: nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3)), (7, 6), 1),
    "sequence mlp": (lambda: nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 5), nn.ReLU()), (2, 3, 6), 2),
    "cnn": (lambda: nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 3, 3), nn.ReLU(),
                                  nn.Flatten(), nn.Linear(3 * 4 * 4, 2)), (3, 2, 6, 6), 2),
    # 40 x 1024 threads: the stand-in checks the C body on a sample against the NumPy twin
    "wide mlp": (lambda: nn.Sequential(nn.Linear(8, 1024), nn.ReLU()), (40, 8), 1),
    "fft conv": (lambda: nn.Sequential(nn.Conv2d(2, 3, 3, padding=1, algorithm="fft"), nn.ReLU()), (2, 2, 5, 5), 1),
}


def kernels_of(book):
    return {what for _, _, what, _ in book.by_site("kernel")}


def build(name, dtype=np.float32, seed=0):
    """Model ``name`` on the stand-in's GPU in ``dtype``, and its input (a leaf that wants a gradient)."""
    make, shape, _ = MODELS[name]
    dlscratch.manual_seed(seed)
    model = make().to(dtype).to("gpu")
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return model, dlscratch.tensor(B.to_gpu(x), dtype=dtype, requires_grad=True)


def one_by_one(model):
    """``model`` run module by module: each pair unfused, on the same path."""
    def run(x):
        for module in model:
            x = module(x)
        return x
    return run


def forward_backward(compute, model, x):
    """The output, and the gradients of ``x`` and of every parameter, as NumPy arrays (the gradients reset)."""
    x.grad = None
    model.zero_grad()
    out = compute(x)
    (out * out).sum().backward()
    return [B.to_cpu(t.data) for t in [out, x.grad] + [p.grad for p in model.parameters()]]


def twice(compute):
    return lambda x: compute(x) + compute(x)


def assert_same(got, expected):
    for a, b in zip(got, expected, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("name", MODELS)
def test_fused_pairs_give_the_unfused_numbers_to_the_bit(stand_in, fast_path, name, dtype):
    model, x = build(name, dtype)
    assert_same(forward_backward(model, model, x), forward_backward(one_by_one(model), model, x))


@pytest.mark.parametrize("batch", [0, 1])
@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_a_batch_of_one_and_an_empty_batch(stand_in, fast_path, name, batch):
    model, x = build(name)
    x = dlscratch.tensor(x.data[:batch], requires_grad=True)
    assert_same(forward_backward(model, model, x), forward_backward(one_by_one(model), model, x))


@pytest.mark.parametrize("name", MODELS)
def test_each_pair_launches_one_kernel_fewer_forward_and_no_more_backward(stand_in, fast_path, name):
    model, x = build(name)
    books = {}
    for how, compute in (("fused", model), ("unfused", one_by_one(model))):
        x.grad = None
        model.zero_grad()  # the second backward would otherwise add to the first's gradients
        with B.ledger() as forward:
            out = compute(x)
        with B.ledger() as backward:
            out.sum().backward()
        books[how] = forward, backward
    (fused, fused_back), (unfused, unfused_back) = books["fused"], books["unfused"]
    assert unfused.launches - fused.launches == MODELS[name][2]
    assert fused_back.launches <= unfused_back.launches  # fewer where the bias gradient is adopted uncopied
    assert FUSED in kernels_of(fused) and "maximum" not in kernels_of(fused)
    assert "maximum" in kernels_of(unfused)


def test_the_reference_path_runs_the_pairs_unfused_with_the_same_numbers(stand_in):
    model, x = build("cnn", np.float64)
    with dlscratch.reference(), B.ledger() as book:
        on_reference = forward_backward(model, model, x)
    assert FUSED not in kernels_of(book) and "maximum" in kernels_of(book)
    with dlscratch.engine.switch.fast_path():
        fused = forward_backward(model, model, x)
    for a, b in zip(fused, on_reference, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_on_the_cpu_the_modules_run_one_by_one(fast_path):
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    out = model(dlscratch.randn(2, 4))
    assert out.creator.name == "relu" and len(out.creator.inputs) == 1  # the bias is the Linear's


def test_a_pair_after_a_move_to_the_cpu_runs_unfused(stand_in, fast_path):
    class ToCPU(nn.Module):
        def forward(self, x):
            return x.to("cpu")

    dlscratch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), ToCPU(), nn.Linear(3, 2, device="cpu"), nn.ReLU())
    with B.ledger() as book:
        out = model(dlscratch.tensor(B.to_gpu(np.ones((2, 4), dtype=np.float32))))
    assert FUSED in kernels_of(book)
    assert out.device == "cpu" and out.creator.name == "relu" and len(out.creator.inputs) == 1


@pytest.mark.parametrize("product, axis, shapes", [
    (lambda x, w: F.linear(x, w), -1, [(4, 3), (5, 3), (5,)]),
    (lambda x, w: F.linear(x, w), -1, [(2, 2, 3), (4, 3), (4,)]),
    (lambda x, w: F.conv2d(x, w, None, 1, 1), 1, [(2, 2, 4, 4), (3, 2, 3, 3), (3,)]),
])
def test_bias_relu_gradients_match_float64_central_differences(stand_in, fast_path, product, axis, shapes):
    rng = np.random.default_rng(1)
    x, w, b = (dlscratch.tensor(B.to_gpu(rng.standard_normal(s)), requires_grad=True) for s in shapes)
    assert dlscratch.gradcheck(lambda x, w, b: bias_relu(product(x, w), b, axis), x, w, b)


def test_a_fused_model_passes_gradcheck(stand_in, fast_path):
    model, x = build("cnn", np.float64)
    assert dlscratch.gradcheck(model, x)


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_under_autocast_the_pairs_fuse_in_float16_with_the_unfused_numbers(stand_in, fast_path, name):
    model, x = build(name)
    results = {}
    for how, compute in (("fused", model), ("unfused", one_by_one(model))):
        with amp.autocast("cuda"), B.ledger() as book:
            results[how] = forward_backward(twice(compute), model, x)  # the second use reuses the kept casts
        assert (FUSED in kernels_of(book)) == (how == "fused")
    assert results["fused"][0].dtype == np.float16
    assert all(g.dtype == np.float32 for g in results["fused"][1:])
    assert_same(results["fused"], results["unfused"])


class Doubled(nn.Linear):
    """A Linear with its own ``forward``: not the product the fusion knows."""

    def forward(self, x):
        return super().forward(x) * 2


@pytest.mark.parametrize("first", [lambda: nn.Linear(6, 5, bias=False), lambda: Doubled(6, 5)],
                         ids=["a layer without bias", "a subclass with its own forward"])
def test_a_layer_the_fusion_does_not_know_runs_unfused(stand_in, fast_path, first):
    dlscratch.manual_seed(0)
    model = nn.Sequential(first(), nn.ReLU()).to("gpu")
    x = dlscratch.tensor(B.to_gpu(np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)))
    with B.ledger() as book:
        out = model(x)
    assert FUSED not in kernels_of(book)
    np.testing.assert_array_equal(B.to_cpu(out.data), B.to_cpu(one_by_one(model)(x).data))


def test_a_forward_pre_hook_on_either_module_is_honoured(stand_in, fast_path):
    model, x = build("mlp")
    expected = forward_backward(lambda x: one_by_one(model)(x * 2), model, x)
    seen = []
    model[0].register_forward_pre_hook(lambda module, args: args[0] * 2)
    model[1].register_forward_pre_hook(lambda module, args: seen.append(args[0].shape))
    with B.ledger() as book:
        got = forward_backward(model, model, x)
    assert FUSED not in kernels_of(book) and seen == [(7, 5)]
    assert_same(got, expected)


def test_a_pruned_layer_uses_its_masked_weight(stand_in, fast_path):
    model, x = build("mlp")
    prune.l1_unstructured(model[0], "weight", amount=0.5)
    fused, unfused = (B.to_cpu(compute(x).data) for compute in (model, one_by_one(model)))
    np.testing.assert_array_equal(fused, unfused)


def test_modules_used_twice_and_elsewhere_accumulate_the_unfused_gradients(stand_in, fast_path):
    dlscratch.manual_seed(0)
    layer, relu = nn.Linear(5, 5), nn.ReLU()
    model = nn.Sequential(layer, relu, layer, relu, nn.Linear(5, 2)).to("gpu")
    other = nn.Sequential(layer, nn.Sigmoid())  # the same Linear, in another model, unfused there
    x = dlscratch.tensor(B.to_gpu(np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)),
                         requires_grad=True)
    got = forward_backward(lambda x: model(x) + other(x)[:, :2], model, x)
    expected = forward_backward(lambda x: one_by_one(model)(x) + one_by_one(other)(x)[:, :2], model, x)
    assert_same(got, expected)


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_no_grad_and_eval_fuse_and_record_nothing(stand_in, fast_path, mode):
    model, x = build("cnn")
    getattr(model, mode)()
    with dlscratch.no_grad(), B.ledger() as book:
        out = model(x)
    assert FUSED in kernels_of(book) and not out.requires_grad and out.creator is None
    with dlscratch.no_grad():
        np.testing.assert_array_equal(B.to_cpu(out.data), B.to_cpu(one_by_one(model)(x).data))


def test_a_write_into_the_fused_output_before_backward_is_caught(stand_in, fast_path):
    model, x = build("sequence mlp")
    out = model(x)
    loss = out.sum()
    with dlscratch.no_grad():
        out.mul_(2.0)
    with pytest.raises(RuntimeError, match="backward through relu: its output 0"):
        loss.backward()


def test_the_model_is_unchanged_by_fusing(stand_in, fast_path):
    model, x = build("cnn")
    before = (repr(model), list(model.state_dict()), [type(m) for m in model], len(model))
    model(x).sum().backward()
    assert (repr(model), list(model.state_dict()), [type(m) for m in model], len(model)) == before
    assert isinstance(model[0], nn.Conv2d) and isinstance(model[:2], nn.Sequential)
