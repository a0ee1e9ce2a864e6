"""Binary weights (dlscratch/nn/binary.py): forward with the signs, the straight-through gradient to the shadow
weights, clipping, one bit per weight, and a binary network that learns."""

import math

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend as dl_backend
from dlscratch import nn, optim
from dlscratch.nn.binary import (
    BinarizeSTE,
    BinaryConv2d,
    BinaryLinear,
    clip_shadow_weights_,
    deployed_bytes,
    packed_signs,
    unpacked_signs,
)


def signs_of(weight):
    w = dl_backend.to_cpu(weight.data)
    return np.where(w >= 0, 1.0, -1.0).astype(np.float32) / np.float32(math.sqrt(w[0].size))


@pytest.mark.parametrize("make, shape", [(lambda: BinaryLinear(6, 4), (5, 6)),
                                         (lambda: BinaryConv2d(3, 4, 3, stride=2, padding=1), (2, 3, 7, 7))])
def test_forward_uses_the_signs_and_backward_passes_straight_through(backend, make, shape):
    dlscratch.manual_seed(0)
    layer = make()
    layer.weight.data[0].fill(0)  # a zero weight counts as +1
    x0 = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x = dlscratch.tensor(backend.asarray(x0))
    y = layer(x)
    seed = backend.asarray(np.cos(np.arange(y.numel())).reshape(y.shape).astype(np.float32))
    y.backward(dlscratch.tensor(seed))
    # the same with the signs as a leaf of their own: its gradient is what the shadow weight must get
    binary = dlscratch.tensor(backend.asarray(signs_of(layer.weight)), requires_grad=True)
    bias = dlscratch.tensor(layer.bias.data)
    if isinstance(layer, BinaryLinear):
        expected = F.linear(x, binary, bias)
    else:
        expected = F.conv2d(x, binary, bias, stride=layer.stride, padding=layer.padding)
    expected.backward(dlscratch.tensor(seed))
    np.testing.assert_allclose(dl_backend.to_cpu(y.data), dl_backend.to_cpu(expected.data), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dl_backend.to_cpu(layer.weight.grad.data),
                               dl_backend.to_cpu(binary.grad.data) / math.sqrt(layer.weight[0].numel()), rtol=1e-6)


def test_binarize_values_and_gradient():
    w = dlscratch.tensor(np.array([-0.3, 0.0, 2.0], dtype=np.float32), requires_grad=True)
    b = BinarizeSTE(0.5)(w)
    assert b.detach().numpy().tolist() == [-0.5, 0.5, 0.5] and b.dtype == np.float32
    (b * dlscratch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert w.grad.numpy().tolist() == [0.5, 1.0, 1.5]


def test_clipping_keeps_shadow_weights_in_minus_one_one_and_leaves_other_layers(backend):
    model = nn.Sequential(BinaryLinear(3, 2), nn.Linear(2, 2))
    model[0].weight.data[:] = backend.asarray(np.array([[3, -2, 0.5], [-0.25, 1, -1.5]], dtype=np.float32))
    model[1].weight.data[:] = 5
    clip_shadow_weights_(model)
    assert dl_backend.to_cpu(model[0].weight.data).tolist() == [[1, -1, 0.5], [-0.25, 1, -1]]
    assert float(model[1].weight.data.min()) == 5


def test_one_bit_per_weight(backend):
    w = backend.asarray(np.random.default_rng(1).standard_normal((5, 3, 3, 3)).astype(np.float32))
    bits = packed_signs(w)
    assert bits.dtype == np.uint8 and bits.shape == (-(-135 // 8),)
    np.testing.assert_array_equal(dl_backend.to_cpu(unpacked_signs(bits, w.shape)),
                                  np.where(dl_backend.to_cpu(w) >= 0, 1, -1))
    model = nn.Sequential(BinaryConv2d(3, 5, 3), nn.Flatten(), BinaryLinear(5 * 4, 10), nn.Linear(10, 2))
    binary_bits = [-(-135 // 8) + 4, -(-200 // 8) + 4]  # bytes of signs, and the float32 scale
    floats = 5 + 10 + (10 * 2 + 2)  # the biases and the last layer
    assert deployed_bytes(model) == sum(binary_bits) + 4 * floats


def test_a_binary_network_learns_two_classes(backend):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 512)
    points = rng.standard_normal((512, 20)).astype(np.float32) + np.where(labels[:, None] == 1, 1.0, -1.0) * 0.5
    x, y = dlscratch.tensor(backend.asarray(points)), dlscratch.tensor(backend.asarray(labels))
    dlscratch.manual_seed(0)
    model = nn.Sequential(BinaryLinear(20, 32), nn.ReLU(), BinaryLinear(32, 2))
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    for _ in range(150):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        clip_shadow_weights_(model)
    accuracy = float((model(x).data.argmax(axis=1) == y.data).mean())
    assert accuracy > 0.95  # the classes are 2.2 standard deviations apart along their axis: ~0.99 is possible


def test_pruning_a_binary_weight_is_refused_where_a_zero_would_compute_as_plus_one():
    from dlscratch.nn.utils import prune

    layer = BinaryLinear(4, 3)
    with pytest.raises(ValueError, match=r"prune: BinaryLinear's forward uses sign\(weight\).*\+1"):
        prune.l1_unstructured(layer, "weight", amount=0.5)
    assert not prune.is_pruned(layer)
    prune.l1_unstructured(layer, "bias", amount=1)  # the bias stays float32: pruning it means what it says
    assert prune.sparsity(layer, "bias") == 1 / 3
