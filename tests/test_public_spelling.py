"""One public spelling: the operations take PyTorch's ``dim`` and ``keepdim``, never NumPy's
``axis`` and ``keepdims``, in ``dlscratch.functional`` and in the ``functions`` package behind it."""

import inspect

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import operations

NUMPY_WORDS = {"axis", "axes", "keepdims"}


def _public_functions(module):
    return {name: value for name, value in vars(module).items()
            if not name.startswith("_") and inspect.isfunction(value)}


@pytest.mark.parametrize("module", [F, operations], ids=["functional", "operations"])
def test_no_operation_takes_numpy_words(module):
    offenders = {name: sorted(NUMPY_WORDS & set(inspect.signature(fn).parameters))
                 for name, fn in _public_functions(module).items()}
    assert not {name: words for name, words in offenders.items() if words}
    assert len(_public_functions(module)) > 30  # the scan saw the operations


def test_reductions_take_dim_and_keepdim():
    x = dlscratch.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    a = x.numpy()
    np.testing.assert_array_equal(F.sum(x, dim=1, keepdim=True).numpy(), a.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(F.mean(x, dim=(0, 2)).numpy(), a.mean(axis=(0, 2)))
    np.testing.assert_array_equal(F.amax(x, dim=-1).numpy(), a.max(axis=-1))
    np.testing.assert_array_equal(F.cat([x, x], dim=2).numpy(), np.concatenate([a, a], axis=2))
    np.testing.assert_array_equal(F.stack([x, x], dim=1).numpy(), np.stack([a, a], axis=1))
    assert F.softmax(x, dim=0).shape == (2, 3, 4)
