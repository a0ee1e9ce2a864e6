"""SparseLinear (dlscratch/nn/sparse.py): a pruned Linear in CSR computes what the dense one does, stores what CSR
stores, and refuses what it cannot take."""

import numpy as np
import pytest

import dlscratch
from dlscratch import backend as dl_backend
from dlscratch import nn
from dlscratch.nn.sparse import SparseLinear, dense_bytes
from dlscratch.nn.utils import prune


def pruned_linear(backend, density, seed=0):
    dlscratch.manual_seed(seed)
    linear = nn.Linear(40, 24)
    keep = np.random.default_rng(seed).random((24, 40)) < density
    linear.weight.data[:] = linear.weight.data * backend.asarray(keep.astype(np.float32))
    return linear, int(keep.sum())


@pytest.mark.parametrize("density", [0.5, 0.1, 0.0])
def test_it_computes_the_dense_product(backend, density):
    linear, nonzeros = pruned_linear(backend, density)
    sparse = SparseLinear(linear)
    x = dlscratch.tensor(backend.asarray(np.random.default_rng(1).standard_normal((3, 5, 40)).astype(np.float32)))
    got = sparse(x)
    assert got.shape == (3, 5, 24) and got.dtype == np.float32 and got.device == x.device
    np.testing.assert_allclose(dl_backend.to_cpu(got.data), dl_backend.to_cpu(linear(x).data), rtol=1e-5, atol=1e-6)
    assert sparse.weight.nnz == nonzeros
    assert sparse.stored_bytes() == 8 * nonzeros + 4 * 25 + 4 * 24  # values and columns, row starts, bias
    assert dense_bytes(linear) == 4 * (24 * 40 + 24)
    assert f"density={nonzeros / 960:.3f}" in repr(sparse)


def test_refusals(backend):
    sparse = SparseLinear(nn.Linear(4, 2, bias=False))
    with pytest.raises(ValueError, match="input of 3 features, expected 4"):
        sparse(dlscratch.tensor(backend.ones((1, 3), dtype=np.float32)))
    with pytest.raises(TypeError, match="expected a Tensor"):
        sparse(backend.ones((1, 4), dtype=np.float32))
    with pytest.raises(TypeError, match="expected a Linear, got Conv2d"):
        SparseLinear(nn.Conv2d(1, 1, 1))
    assert dl_backend.to_cpu(sparse(dlscratch.tensor(backend.ones((1, 4), dtype=np.float32))).data).shape == (1, 2)


def test_a_binary_linear_is_refused_rather_than_stored_by_its_shadow_weights():
    from dlscratch.nn.binary import BinaryLinear

    with pytest.raises(TypeError, match=r"SparseLinear: BinaryLinear computes with sign\(weight\).*packed_signs"):
        SparseLinear(BinaryLinear(4, 2))


def test_the_csr_arrays_travel_in_state_dict_and_refuse_another_pattern():
    dlscratch.manual_seed(3)
    layers = [nn.Linear(12, 5) for _ in range(3)]
    for layer, amount in zip(layers, (0.5, 0.5, 0.75)):
        prune.l1_unstructured(layer, "weight", amount)
        prune.remove(layer, "weight")
    source, target, other = (SparseLinear(layer) for layer in layers)
    x = dlscratch.randn(4, 12)
    target.load_state_dict(source.state_dict())  # the same count of nonzeros: loaded, pattern and all
    np.testing.assert_array_equal(target(x).numpy(), source(x).numpy())
    assert set(source.state_dict()) == {"weight_data", "weight_indices", "weight_indptr", "bias"}
    with pytest.raises(RuntimeError, match="weight_data: checkpoint has shape"):
        other.load_state_dict(source.state_dict())  # another count of nonzeros: refused, nothing copied


def test_half_is_refused_with_a_reason():
    sparse = SparseLinear(nn.Linear(4, 3)).half()
    with pytest.raises(TypeError, match="sparse products have no float16"):
        sparse(dlscratch.randn(2, 4).astype(np.float16))
