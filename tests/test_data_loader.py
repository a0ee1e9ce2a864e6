"""Dataset, TensorDataset and DataLoader: batches, dtypes, shuffling, seeds, drop_last, devices."""

import numpy
import pytest

import dlscratch
from dlscratch import backend as B
from dlscratch.data import DataLoader, Dataset, TensorDataset


def xy(n=10):
    """x: (n, 3) float64 whose row i is [i, i + 0.25, i + 0.5]; y: (n,) int32 equal to i."""
    i = numpy.arange(n)
    return i[:, None] + numpy.array([0.0, 0.25, 0.5]), i.astype(numpy.int32)


def order(loader):
    """The sample indices in the order the loader visited them (y holds each sample's index)."""
    return numpy.concatenate([y.numpy() for _, y in loader]).tolist()


class PerSample(Dataset):
    """A dataset without batch indexing: samples come one at a time."""

    def __init__(self, x, y):
        self.x, self.y, self.calls = x, y, 0

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        self.calls += 1
        return self.x[i], int(self.y[i])


class CountingTensorDataset(TensorDataset):
    calls = 0

    def __getitem__(self, index):
        CountingTensorDataset.calls += 1
        return super().__getitem__(index)


# ----- TensorDataset -----

def test_tensor_dataset_gives_samples_and_whole_batches():
    x, y = xy()
    dataset = TensorDataset(dlscratch.tensor(x, dtype=numpy.float64), y.tolist())
    assert len(dataset) == 10
    xi, yi = dataset[3]
    assert xi.tolist() == [3.0, 3.25, 3.5] and yi == 3
    xb, yb = dataset[numpy.array([7, 2, 7])]
    numpy.testing.assert_array_equal(xb, x[[7, 2, 7]])
    assert yb.tolist() == [7, 2, 7]
    assert dataset[2:4][1].tolist() == [2, 3]
    assert dataset[dlscratch.tensor(numpy.array([1, 0]))][1].tolist() == [1, 0]


def test_tensor_dataset_rejects_arrays_of_different_lengths():
    with pytest.raises(ValueError, match=r"same first dimension.*got shapes \(10, 3\), \(9,\)"):
        TensorDataset(numpy.zeros((10, 3)), numpy.zeros(9))
    with pytest.raises(ValueError, match="at least one array"):
        TensorDataset()
    with pytest.raises(ValueError, match="first \\(sample\\) dimension"):
        TensorDataset(numpy.float32(1.0))


def test_dataset_is_abstract():
    class NoLength(Dataset):
        def __getitem__(self, i):
            return i

    with pytest.raises(TypeError, match="abstract"):
        NoLength()


# ----- DataLoader -----

def test_batches_shapes_dtypes_and_values():
    x, y = xy()
    batches = list(DataLoader(TensorDataset(x, y), batch_size=4))
    assert [tuple(b[0].shape) for b in batches] == [(4, 3), (4, 3), (2, 3)]
    assert all(b[0].dtype == numpy.float32 and b[1].dtype == numpy.int32 for b in batches)
    assert all(isinstance(t, dlscratch.Tensor) and not t.requires_grad for b in batches for t in b)
    numpy.testing.assert_array_equal(batches[2][0].numpy(), x[8:].astype(numpy.float32))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_floats_become_float32_and_integers_keep_their_dtype():
    x = numpy.ones((5, 2), dtype=numpy.float64)
    pixels = numpy.arange(10, dtype=numpy.uint8).reshape(5, 2)
    labels = numpy.arange(5, dtype=numpy.uint8)
    xb, pb, yb = next(iter(DataLoader(TensorDataset(x, pixels, labels), batch_size=5)))
    assert xb.dtype == numpy.float32 and pb.dtype == numpy.uint8 and yb.dtype == numpy.uint8
    assert yb.tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("n, batch_size, drop_last, expected", [
    (10, 4, False, 3), (10, 4, True, 2), (12, 4, False, 3), (12, 4, True, 3), (3, 8, False, 1), (3, 8, True, 0),
    (0, 2, False, 0),
])
def test_len_and_drop_last(n, batch_size, drop_last, expected):
    loader = DataLoader(TensorDataset(*xy(n)), batch_size=batch_size, drop_last=drop_last)
    batches = list(loader)
    assert len(loader) == expected == len(batches)
    assert all(len(b[1]) == batch_size for b in batches[: n // batch_size])


def test_shuffle_visits_every_sample_once_and_keeps_pairs_together():
    loader = DataLoader(TensorDataset(*xy(50)), batch_size=8, shuffle=True, seed=0)
    seen = []
    for xb, yb in loader:
        numpy.testing.assert_array_equal(xb.numpy()[:, 0], yb.numpy())  # row i of x goes with label i
        seen += yb.tolist()
    assert sorted(seen) == list(range(50)) and seen != list(range(50))


def test_same_seed_same_batches_and_each_epoch_differs():
    dataset = TensorDataset(*xy(40))
    first = DataLoader(dataset, batch_size=6, shuffle=True, seed=7)
    second = DataLoader(dataset, batch_size=6, shuffle=True, seed=7)
    epochs = [order(first) for _ in range(3)]
    assert [order(second) for _ in range(3)] == epochs
    assert epochs[0] != epochs[1] != epochs[2]
    assert order(DataLoader(dataset, batch_size=6, shuffle=True, seed=8)) != epochs[0]
    assert epochs[0] == numpy.random.default_rng(7).permutation(40).tolist()


def test_without_a_seed_the_order_follows_manual_seed():
    dataset = TensorDataset(*xy(40))
    dlscratch.manual_seed(3)
    a = order(DataLoader(dataset, batch_size=5, shuffle=True))
    dlscratch.manual_seed(3)
    b = order(DataLoader(dataset, batch_size=5, shuffle=True))
    assert a == b and sorted(a) == list(range(40)) and a != list(range(40))


def test_batch_indexing_fetches_a_batch_in_one_call():
    CountingTensorDataset.calls = 0
    list(DataLoader(CountingTensorDataset(*xy(10)), batch_size=4, shuffle=True, seed=0))
    assert CountingTensorDataset.calls == 3


def test_dataset_without_batch_indexing_gives_the_same_batches():
    x, y = xy(10)
    dataset = PerSample(x, y)
    slow = list(DataLoader(dataset, batch_size=4, shuffle=True, seed=1))
    fast = list(DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True, seed=1))
    assert dataset.calls == 10
    for (xs, ys), (xf, yf) in zip(slow, fast, strict=True):
        assert xs.dtype == numpy.float32 and ys.dtype == numpy.int64  # Python ints become int64
        numpy.testing.assert_array_equal(xs.numpy(), xf.numpy())
        numpy.testing.assert_array_equal(ys.numpy(), yf.numpy())


def test_samples_that_are_not_tuples_give_single_tensors():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return dlscratch.tensor(float(i * i))

    batches = list(DataLoader(Squares(), batch_size=3))
    assert [b.tolist() for b in batches] == [[0.0, 1.0, 4.0], [9.0, 16.0]]
    assert batches[0].dtype == numpy.float32


def test_batches_are_on_the_current_device(backend):
    x, y = xy(6)
    for xb, yb in DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True, seed=0):
        assert xb.device == yb.device == B.device()
        assert B.get_array_module(xb.data) is backend and B.get_array_module(yb.data) is backend
        assert xb.dtype == numpy.float32 and yb.dtype == numpy.int32  # integers keep their dtype


def test_gpu_dataset_on_the_cpu_backend(gpu):
    x, y = xy(6)
    dataset = TensorDataset(B.to_gpu(x), B.to_gpu(y))
    xb, yb = next(iter(DataLoader(dataset, batch_size=4, shuffle=True, seed=0)))
    assert xb.device == yb.device == "cpu"
    numpy.testing.assert_array_equal(xb.numpy()[:, 0], yb.numpy())


@pytest.mark.parametrize("kwargs, error, message", [
    ({"batch_size": 0}, ValueError, "batch_size must be a positive integer, got 0"),
    ({"batch_size": 2.5}, ValueError, "batch_size must be a positive integer, got 2.5"),
    ({"batch_size": True}, ValueError, "batch_size must be a positive integer, got True"),
    ({"shuffle": "yes"}, TypeError, "shuffle must be True or False, got 'yes'"),
    ({"drop_last": 1}, TypeError, "drop_last must be True or False, got 1"),
    ({"seed": -1}, ValueError, "seed must be None or a non-negative integer, got -1"),
    ({"seed": "abc"}, ValueError, "seed must be None or a non-negative integer, got 'abc'"),
])
def test_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        DataLoader(TensorDataset(*xy()), **kwargs)


def test_bad_dataset():
    with pytest.raises(TypeError, match="dataset needs __len__ and __getitem__.*got int"):
        DataLoader(5)


def test_repr():
    loader = DataLoader(TensorDataset(*xy()), batch_size=4, shuffle=True, seed=1)
    assert repr(loader) == "DataLoader(TensorDataset of 10, batch_size=4, shuffle=True, drop_last=False, seed=1)"
