"""Subset and random_split: samples, batches through the DataLoader, sizes, seeds, bad input."""

import numpy
import pytest

import dlscratch
from dlscratch.data import DataLoader, Dataset, Subset, TensorDataset, random_split


def xy(n=10):
    """x: (n, 2) float64 whose row i is [i, i + 0.5]; y: (n,) int64 equal to i."""
    i = numpy.arange(n)
    return i[:, None] + numpy.array([0.0, 0.5]), i


class CountingTensorDataset(TensorDataset):
    def __init__(self, *arrays):
        super().__init__(*arrays)
        self.calls = 0

    def __getitem__(self, index):
        self.calls += 1
        return super().__getitem__(index)


class PerSample(Dataset):
    """A dataset without batch indexing: sample i is (i, i)."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return numpy.float32(i), i


def labels(dataset):
    """The label (= original index) of every sample of ``dataset``, sample by sample."""
    return [int(dataset[i][1]) for i in range(len(dataset))]


# ----- Subset -----
def test_subset_gives_the_samples_at_its_indices():
    subset = Subset(TensorDataset(*xy()), [7, 2, 2, 9])
    assert len(subset) == 4
    x, y = subset[0]
    assert x.tolist() == [7.0, 7.5] and y == 7
    assert labels(subset) == [7, 2, 2, 9]
    assert int(subset[-1][1]) == 9
    xb, yb = subset[numpy.array([3, 0])]  # a batch, in one gather
    assert yb.tolist() == [9, 7] and xb.shape == (2, 2)
    assert subset[1:3][1].tolist() == [2, 2]


def test_data_loader_gathers_a_subset_batch_in_one_call(backend):
    dataset = CountingTensorDataset(*xy(20))
    subset = Subset(dataset, numpy.arange(20)[::2])
    batches = list(DataLoader(subset, batch_size=4))
    assert dataset.calls == len(batches) == 3, "one gather per batch, not one call per sample"
    assert numpy.concatenate([y.numpy() for _, y in batches]).tolist() == list(range(0, 20, 2))
    x, y = batches[0]
    assert x.dtype == numpy.float32 and y.dtype == numpy.int64 and x.shape == (4, 2)
    assert isinstance(x.data, backend.ndarray)


def test_subset_of_a_per_sample_dataset_goes_sample_by_sample():
    subset = Subset(PerSample(), [5, 1])
    assert not subset.batch_indexing
    x, y = next(iter(DataLoader(subset, batch_size=2)))
    assert y.numpy().tolist() == [5, 1] and x.dtype == numpy.float32
    with pytest.raises(TypeError, match="Subset: PerSample gives one sample at a time"):
        subset[numpy.array([0, 1])]


def test_subset_accepts_tensor_and_empty_indices():
    dataset = TensorDataset(*xy())
    assert labels(Subset(dataset, dlscratch.tensor(numpy.array([4, 3])))) == [4, 3]
    assert len(Subset(dataset, [])) == 0


@pytest.mark.parametrize(
    ("indices", "error", "message"),
    [
        ([0, 10], IndexError, "Subset: index 10 is out of range for a dataset of 10 samples"),
        ([-1], IndexError, "Subset: index -1 is out of range"),
        ([0.5], ValueError, "Subset: indices must be a 1-D sequence of integers"),
        ([[0, 1]], ValueError, "Subset: indices must be a 1-D sequence of integers"),
    ],
)
def test_subset_rejects_bad_indices(indices, error, message):
    with pytest.raises(error, match=message):
        Subset(TensorDataset(*xy()), indices)


# ----- random_split -----
def test_split_is_disjoint_covering_and_sized():
    parts = random_split(TensorDataset(*xy(100)), [70, 20, 10], seed=0)
    assert [len(p) for p in parts] == [70, 20, 10]
    seen = sorted(i for p in parts for i in labels(p))
    assert seen == list(range(100)), "the parts must together hold every sample exactly once"
    assert labels(parts[0]) != list(range(70)), "the samples should be shuffled"


def test_split_with_a_seed_is_deterministic_and_matches_numpy():
    dataset = TensorDataset(*xy(50))
    a = random_split(dataset, [40, 10], seed=3)
    b = random_split(dataset, [40, 10], generator=numpy.random.default_rng(3))
    order = numpy.random.default_rng(3).permutation(50)
    assert labels(a[0]) == labels(b[0]) == order[:40].tolist()
    assert labels(a[1]) == order[40:].tolist()
    assert labels(random_split(dataset, [40, 10], seed=4)[1]) != labels(a[1])


def test_split_without_seed_follows_manual_seed():
    dataset = TensorDataset(*xy(30))
    dlscratch.manual_seed(5)
    first = labels(random_split(dataset, [20, 10])[1])
    dlscratch.manual_seed(5)
    assert labels(random_split(dataset, [20, 10])[1]) == first


def test_fractions_give_floor_sizes_and_the_rest_to_the_first_parts():
    # 10 samples: floor(3.3) = 3 each, one left over goes to the first part (PyTorch's rule)
    assert [len(p) for p in random_split(TensorDataset(*xy(10)), [0.33, 0.33, 0.34], seed=0)] == [4, 3, 3]
    # 60,000 * 0.9 and 0.1, the validation split of the lessons
    parts = random_split(TensorDataset(numpy.zeros(60000)), [0.9, 0.1], seed=0)
    assert [len(p) for p in parts] == [54000, 6000]


def test_split_parts_load_in_batches():
    dataset = CountingTensorDataset(*xy(12))
    train, val = random_split(dataset, [8, 4], seed=1)
    batches = list(DataLoader(val, batch_size=4))
    assert dataset.calls == 1 and len(batches) == 1
    assert sorted(batches[0][1].numpy().tolist()) == sorted(labels(val))


@pytest.mark.parametrize(
    ("lengths", "kwargs", "message"),
    [
        ([5, 4], {}, r"random_split: the lengths \[5, 4\] sum to 9, but the dataset has 10 samples"),
        ([0.5, 0.6], {}, "random_split: fractions must sum to 1"),
        ([12, -2], {}, "random_split: lengths must be non-negative numbers"),
        ([], {}, "random_split: lengths must be non-negative numbers"),
        ([5, 5], {"seed": -1}, "random_split: seed must be a non-negative integer"),
        ([5, 5], {"seed": 1, "generator": numpy.random.default_rng(1)}, "random_split: give generator or seed"),
    ],
)
def test_split_rejects_bad_input(lengths, kwargs, message):
    with pytest.raises(ValueError, match=message):
        random_split(TensorDataset(*xy()), lengths, **kwargs)


def test_split_rejects_a_legacy_random_state():
    with pytest.raises(TypeError, match="random_split: generator must be a dlscratch.Generator, got RandomState"):
        random_split(TensorDataset(*xy()), [5, 5], generator=numpy.random.RandomState(0))


def test_split_takes_pytorchs_generator_and_repeats_with_its_seed():
    import dlscratch

    data = TensorDataset(*xy())
    first = [list(part.indices) for part in random_split(data, [7, 3], generator=dlscratch.Generator().manual_seed(4))]
    again = [list(part.indices) for part in random_split(data, [7, 3], generator=dlscratch.Generator().manual_seed(4))]
    assert first == again and sorted(first[0] + first[1]) == list(range(10))
    if dlscratch.cuda.is_available():  # a GPU's generator cannot order host indices
        with pytest.raises(ValueError, match="the generator is on 'cuda'"):
            random_split(data, [5, 5], generator=dlscratch.Generator(device="cuda"))
