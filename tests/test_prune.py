"""nn.utils.prune: magnitude pruning by PyTorch's names. Masks choose the right weights, hold through training,
combine when pruning again, survive state_dict and copies, and remove() makes them permanent; and
Module.register_forward_pre_hook, on which pruning rests."""

import copy
import pickle

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as dl_backend
from dlscratch import nn, optim
from dlscratch.nn.utils import prune


def cpu(t):
    return dl_backend.to_cpu(t.data)


def linear_with(weights, backend):
    layer = nn.Linear(len(weights[0]), len(weights))
    layer.weight.data[:] = backend.asarray(np.asarray(weights, dtype=np.float32))
    return layer


def test_forward_pre_hooks_run_in_order_change_args_and_go_away(backend):
    layer, calls = nn.Linear(2, 1), []
    first = layer.register_forward_pre_hook(lambda module, args: calls.append(("first", module is layer)))
    layer.register_forward_pre_hook(lambda module, args: (args[0] * 0,))
    x = dlscratch.tensor(backend.ones((1, 2), dtype=np.float32))
    np.testing.assert_allclose(cpu(layer(x)), cpu(layer.bias)[None])  # the input was zeroed by the hook
    assert calls == [("first", True)]
    first.remove()
    first.remove()  # twice is harmless
    layer(x)
    assert calls == [("first", True)]
    with pytest.raises(TypeError, match="expected a callable"):
        layer.register_forward_pre_hook(3)


def test_l1_unstructured_prunes_the_smallest_and_again_among_the_rest(backend):
    layer = linear_with([[0.5, -0.1, 3.0, 0.2], [-2.0, 0.05, -0.3, 1.0]], backend)
    prune.l1_unstructured(layer, "weight", amount=0.25)  # 2 of 8
    assert cpu(layer.weight_mask).tolist() == [[1, 0, 1, 1], [1, 0, 1, 1]]
    assert [n for n, _ in layer.named_parameters()] == ["bias", "weight_orig"]
    np.testing.assert_allclose(cpu(layer.weight), [[0.5, 0, 3.0, 0.2], [-2.0, 0, -0.3, 1.0]])
    prune.l1_unstructured(layer, "weight", amount=2)  # 2 of the 6 left: 0.2 and -0.3
    assert cpu(layer.weight_mask).tolist() == [[1, 0, 1, 0], [1, 0, 0, 1]]
    assert prune.sparsity(layer) == 0.5 and prune.is_pruned(layer)
    with pytest.raises(ValueError, match="amount 5 is more than the 4 weights left"):
        prune.l1_unstructured(layer, "weight", amount=5)
    with pytest.raises(ValueError, match=r"fractional amount must be in \[0, 1\]"):
        prune.l1_unstructured(layer, "weight", amount=1.5)
    with pytest.raises(ValueError, match="has no parameter 'kernel'"):
        prune.l1_unstructured(layer, "kernel", amount=1)


def test_masks_hold_through_training_and_remove_makes_them_permanent(backend):
    dlscratch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    prune.l1_unstructured(model[0], "weight", amount=0.75)
    mask = cpu(model[0].weight_mask).copy()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    x = dlscratch.tensor(backend.asarray(np.random.default_rng(0).standard_normal((32, 8)).astype(np.float32)))
    y = dlscratch.tensor(backend.asarray(np.arange(32) % 3))
    for _ in range(5):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        assert np.all(cpu(model[0].weight_orig.grad)[mask == 0] == 0)  # no gradient reaches a pruned weight
        optimizer.step()
    model(x)
    assert np.all(cpu(model[0].weight)[mask == 0] == 0) and np.all(cpu(model[0].weight)[mask == 1] != 0)
    before = cpu(model(x)).copy()
    prune.remove(model[0], "weight")
    assert isinstance(model[0].weight, nn.Parameter) and not prune.is_pruned(model)
    assert sorted(dict(model[0].named_parameters())) == ["bias", "weight"] and dict(model[0].named_buffers()) == {}
    np.testing.assert_allclose(cpu(model(x)), before, rtol=1e-6)
    assert prune.sparsity(model[0]) == 0.75
    with pytest.raises(ValueError, match="is not pruned"):
        prune.remove(model[0], "weight")


def test_ln_structured_prunes_whole_output_channels(backend):
    dlscratch.manual_seed(0)
    conv = nn.Conv2d(2, 4, 3)
    scales = backend.asarray(np.array([1.0, 0.1, 2.0, 0.01], dtype=np.float32))
    conv.weight.data[:] = conv.weight.data * scales[:, None, None, None]
    prune.ln_structured(conv, "weight", amount=0.5, n=2, dim=0)
    kept = cpu(conv.weight_mask).reshape(4, -1)
    assert kept.min(axis=1).tolist() == [1, 0, 1, 0] and kept.max(axis=1).tolist() == [1, 0, 1, 0]
    prune.ln_structured(conv, "weight", amount=1, n=1, dim=0)  # one of the two channels left: channel 0
    assert cpu(conv.weight_mask).reshape(4, -1).max(axis=1).tolist() == [0, 0, 1, 0]
    with pytest.raises(ValueError, match="n must be 1, 2 or numpy.inf"):
        prune.ln_structured(conv, "weight", amount=1, n=3, dim=0)


def test_global_unstructured_uses_one_threshold_for_all(backend):
    a = linear_with([[0.1, 0.2], [0.3, 0.4]], backend)
    b = linear_with([[1.0, 2.0], [0.05, 3.0]], backend)
    prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured, amount=0.5)
    assert cpu(a.weight_mask).tolist() == [[0, 0], [0, 1]] and cpu(b.weight_mask).tolist() == [[1, 1], [0, 1]]
    with pytest.raises(ValueError, match="no .module, name. pairs"):
        prune.global_unstructured([], amount=0.5)


def test_state_dict_and_copies_keep_the_pruning(backend):
    dlscratch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 4))
    prune.l1_unstructured(model[0], "weight", amount=0.5)
    state = model.state_dict()
    assert sorted(state) == ["0.bias", "0.weight_mask", "0.weight_orig"]
    other = nn.Sequential(nn.Linear(6, 4))
    prune.identity(other[0], "weight")
    other.load_state_dict(state)
    x = dlscratch.tensor(backend.ones((2, 6), dtype=np.float32))
    np.testing.assert_array_equal(cpu(other(x)), cpu(model(x)))
    twin = copy.deepcopy(model)
    twin[0].weight_orig.data[:] = 1  # the copy's hook must use the copy's weights
    assert cpu(twin[0](x)).tolist() != cpu(model(x)).tolist()
    assert prune.sparsity(twin[0]) == 0.5
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(cpu(again(x)), cpu(model(x)))


def test_the_pruned_weight_is_current_after_load_state_dict_a_cast_and_a_step(backend):
    from dlscratch.nn.sparse import SparseLinear
    from dlscratch.quantization import QuantizedLinear

    dlscratch.manual_seed(0)
    saved, model = nn.Linear(6, 4), nn.Linear(6, 4)
    prune.l1_unstructured(saved, "weight", amount=0.75)
    prune.identity(model, "weight")
    model.load_state_dict(saved.state_dict())
    assert prune.sparsity(model) == 0.75  # read before any forward (was 0.0)
    np.testing.assert_array_equal(cpu(model.weight), cpu(saved.weight))
    model.double()
    assert model.weight.dtype == np.float64  # was float32 until the next forward
    model.float()
    x = dlscratch.tensor(backend.ones((2, 6), dtype=np.float32))
    optimizer = optim.SGD(model.parameters(), lr=1.0)
    F.mse_loss(model(x), dlscratch.tensor(backend.zeros((2, 4), dtype=np.float32))).backward()
    optimizer.step()  # weight_orig moves; the layers built from it next must see where it went
    expected = cpu(model.weight_orig) * cpu(model.weight_mask)
    product = np.ones((2, 6), np.float32) @ expected.T + cpu(model.bias)
    np.testing.assert_allclose(cpu(SparseLinear(model)(x)), product, rtol=1e-5)
    int8 = QuantizedLinear(model, 1.0, 0)
    np.testing.assert_allclose(cpu(int8.weight) * cpu(int8.weight_scale)[:, None], expected, atol=0.01)


def test_an_optimizer_built_before_pruning_keeps_training_the_same_parameter(backend):
    # loss = layer(x).sum() has the constant gradient G[i, j] = sum_n x[n, j], so SGD with momentum 0.9 is
    # exact by hand: pruned, the gradient is G * mask (buffer G * mask); after remove, G again.
    weights = [[0.5, -0.1, 3.0, 0.2], [-2.0, 0.05, -0.3, 1.0]]
    layer = linear_with(weights, backend)
    x = np.array([[1.0, 2.0, -1.0, 0.5], [0.3, -0.7, 2.0, 1.0]], dtype=np.float32)
    weight = layer.weight
    optimizer = optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)

    def step():
        optimizer.zero_grad()
        layer(dlscratch.tensor(backend.asarray(x))).sum().backward()
        optimizer.step()

    prune.l1_unstructured(layer, "weight", amount=0.5)
    assert layer.weight_orig is weight
    step()
    prune.remove(layer, "weight")
    assert layer.weight is weight and "weight_orig" not in dict(layer.named_parameters())
    step()
    step()
    mask = np.array([[1, 0, 1, 0], [1, 0, 0, 1]], dtype=np.float32)
    G = np.ones((2, 1), np.float32) * x.sum(axis=0)
    # buffers: G*mask, then 0.9 G*mask + G, then 0.81 G*mask + 1.9 G; remove zeroes the pruned entries
    expected = np.asarray(weights) * mask - 0.1 * (2.71 * G * mask + 2.9 * G)
    np.testing.assert_allclose(cpu(layer.weight), expected, rtol=1e-5, atol=1e-6)
