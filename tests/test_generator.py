"""Random numbers by PyTorch's names: ``Generator`` and ``generator=``, ``randint``'s two forms, ``randperm``,
``multinomial``, dropout's mask from the global generator, and ``F.one_hot``. Every draw is checked against
fixed seeds: the same seed gives the same numbers, generators do not disturb each other, and frequencies stay
within five standard deviations of what the distribution expects."""

import itertools

import numpy as np
import pytest

import dlscratch
import dlscratch.fast.dropout  # noqa: F401  (registers the fast version)
import dlscratch.nn.functional as F
from dlscratch import backend as B
from dlscratch.engine.creation import rand, rand_like, randint, randn, randn_like, randperm
from dlscratch.random import DEFAULT_SEED, Generator
from dlscratch.sampling import multinomial


def values(t):
    return B.to_cpu(t.data)


def on(backend):
    """The device name of the ``backend`` fixture's array module."""
    return "cpu" if backend is np else "cuda"


def weights(rows, backend):
    return dlscratch.tensor(rows, device=on(backend))


DRAWS = {
    "randn": lambda g, d: randn(2, 3, generator=g, device=d),
    "rand": lambda g, d: rand(5, generator=g, device=d),
    "randint": lambda g, d: randint(0, 1000, (6,), generator=g, device=d),
    "randperm": lambda g, d: randperm(8, generator=g, device=d),
    "multinomial": lambda g, d: multinomial(dlscratch.tensor([1.0, 2.0, 3.0, 4.0], device=d), 3, generator=g),
    "multinomial with replacement": lambda g, d: multinomial(
        dlscratch.tensor([[1.0, 2.0], [3.0, 0.5]], device=d), 5, replacement=True, generator=g),
    "randn_like": lambda g, d: randn_like(dlscratch.zeros(4, device=d), generator=g),
    "rand_like": lambda g, d: rand_like(dlscratch.zeros(4, device=d), generator=g),
}


# ----- the generator: seeds and streams -----
@pytest.mark.parametrize("draw", DRAWS.values(), ids=DRAWS.keys())
def test_one_seed_gives_the_same_numbers_and_another_seed_others(backend, draw):
    device = on(backend)
    g = Generator(device)
    assert g.manual_seed(42) is g  # so that Generator().manual_seed(42) is the generator
    first, second = values(draw(g, device)), values(draw(g, device))
    assert not np.array_equal(first, second)  # the stream moves on
    np.testing.assert_array_equal(values(draw(g.manual_seed(42), device)), first)
    np.testing.assert_array_equal(values(draw(Generator(device).manual_seed(42), device)), first)
    assert not np.array_equal(values(draw(Generator(device).manual_seed(43), device)), first)


def test_a_generator_and_the_global_generators_do_not_disturb_each_other(backend):
    device = on(backend)
    g = Generator(device).manual_seed(7)
    alone = values(randn(6, generator=g, device=device))
    dlscratch.manual_seed(7)
    global_alone = values(randn(6, device=device))

    g.manual_seed(7)
    dlscratch.manual_seed(7)
    mixed = []
    for _ in range(3):  # interleaved: two from g, two from the global stream, ...
        mixed.append(values(randn(2, generator=g, device=device)))
        randn(2, device=device)
    np.testing.assert_array_equal(np.concatenate(mixed), alone)

    dlscratch.manual_seed(7)
    g.manual_seed(7)
    randn(4, generator=g, device=device)
    dlscratch.manual_seed(123)  # reseeding the globals leaves g's stream alone
    np.testing.assert_array_equal(values(randn(2, generator=g, device=device)), alone[4:])
    dlscratch.manual_seed(7)
    randn(10, generator=g, device=device)
    np.testing.assert_array_equal(values(randn(6, device=device)), global_alone)


def test_two_generators_are_independent(backend):
    device = on(backend)
    a, b = Generator(device).manual_seed(1), Generator(device).manual_seed(1)
    expected = values(rand(8, generator=Generator(device).manual_seed(1), device=device))
    got = []
    for _ in range(4):
        got.append(values(rand(2, generator=a, device=device)))
        rand(3, generator=b, device=device)
    np.testing.assert_array_equal(np.concatenate(got), expected)


def test_a_new_generator_starts_from_pytorchs_default_seed():
    g = Generator()
    assert g.initial_seed() == DEFAULT_SEED == 67280421310721
    assert g.device == dlscratch.device("cpu") and str(g.device) == "cpu"
    assert repr(g) == "Generator(device='cpu', initial_seed=67280421310721)"
    np.testing.assert_array_equal(values(randn(4, generator=g)), values(randn(4, generator=Generator())))


def test_seed_takes_a_fresh_seed_and_reports_it():
    g = Generator()
    seed = g.seed()
    assert isinstance(seed, int) and 0 <= seed < 2**64 and g.initial_seed() == seed
    drawn = values(rand(4, generator=g))
    np.testing.assert_array_equal(values(rand(4, generator=Generator().manual_seed(seed))), drawn)
    assert Generator().seed() != seed  # 64 bits from the operating system: equal once in 2**64


@pytest.mark.parametrize("seed, kept", [(-1, 2**64 - 1), (2**64 - 1, 2**64 - 1), (np.int64(5), 5), (0, 0)])
def test_seeds_are_taken_as_pytorch_takes_them(seed, kept):
    g = Generator().manual_seed(seed)
    assert g.initial_seed() == kept and type(g.initial_seed()) is int
    same = Generator().manual_seed(kept)
    np.testing.assert_array_equal(values(rand(3, generator=g)), values(rand(3, generator=same)))


@pytest.mark.parametrize("seed, error, message", [
    (2**64, ValueError, r"Generator.manual_seed: the seed must be in \[-2\*\*63, 2\*\*64 - 1\], got 1844674407370"),
    (1.5, TypeError, r"Generator.manual_seed: the seed must be an integer, got float 1.5"),
    (True, TypeError, r"got bool True"),
])
def test_a_rejected_seed_leaves_the_generator_as_it_was(seed, error, message):
    g = Generator().manual_seed(3)
    with pytest.raises(error, match=message):
        g.manual_seed(seed)
    assert g.initial_seed() == 3
    np.testing.assert_array_equal(values(rand(3, generator=g)), values(rand(3, generator=Generator().manual_seed(3))))


def test_the_state_can_be_saved_and_restored():
    g = Generator().manual_seed(11)
    rand(5, generator=g)
    state = g.get_state()
    assert state.dtype == np.uint8 and state.ndim == 1
    ahead = values(randn(4, generator=g))
    other = Generator().manual_seed(99)
    assert other.set_state(state) is other
    assert other.initial_seed() == 11
    np.testing.assert_array_equal(values(randn(4, generator=other)), ahead)
    np.testing.assert_array_equal(values(randn(4, generator=g.set_state(state))), ahead)


def test_a_bad_state_is_refused():
    g = Generator()
    with pytest.raises(TypeError, match="Generator.set_state: expected the uint8 tensor that get_state returns"):
        g.set_state([1, 2])
    with pytest.raises(ValueError, match="Generator.set_state: this tensor is not a state that Generator.get_state"):
        g.set_state(dlscratch.zeros(3, dtype=np.uint8))


def test_a_gpu_generators_state_is_refused_by_name(stand_in):
    g = Generator("cuda")
    assert g.device == dlscratch.device("cuda")
    with pytest.raises(NotImplementedError, match="only a CPU generator's state can be read or set"):
        g.get_state()


def test_the_generator_must_be_one_and_on_the_results_device(stand_in):
    with pytest.raises(TypeError, match="randn: generator must be a dlscratch.Generator, got Generator"):
        randn(2, generator=np.random.default_rng(0), device="cpu")
    with pytest.raises(ValueError, match="randint: the generator is on 'cpu' but the result is made on 'cuda'"):
        randint(3, (2,), generator=Generator("cpu"), device="cuda")
    with pytest.raises(ValueError, match="multinomial: the generator is on 'cuda' but the result is made on 'cpu'"):
        multinomial(dlscratch.tensor([1.0, 1.0], device="cpu"), 1, generator=Generator("cuda"))
    assert randn(2, generator=Generator("cuda")).device == "gpu"  # the default device, the stand-in here


# ----- randint -----
def test_randint_takes_pytorchs_two_forms_and_keywords():
    def drawn(*args, **kwargs):
        return values(randint(*args, generator=Generator().manual_seed(5), **kwargs))

    expected = drawn(0, 10, (3, 4))
    assert expected.shape == (3, 4) and expected.dtype == np.int64
    for same in (drawn(10, (3, 4)), drawn(10, size=(3, 4)), drawn(high=10, size=(3, 4)),
                 drawn(low=0, high=10, size=[3, 4]), drawn(0, 10, size=(3, 4))):
        np.testing.assert_array_equal(same, expected)
    assert randint(3, ()).shape == () and randint(3, (0, 2)).shape == (0, 2)


def test_randint_draws_every_value_of_the_range_and_nothing_else():
    drawn = values(randint(-3, 4, (7000,), generator=Generator().manual_seed(0)))
    counts = np.bincount(drawn + 3, minlength=7)
    assert len(counts) == 7 and drawn.min() == -3 and drawn.max() == 3
    assert np.abs(counts - 1000).max() < 5 * np.sqrt(7000 * (1 / 7) * (6 / 7))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float32, np.float64, np.bool_])
def test_randint_makes_the_dtype_asked_for(dtype):
    t = randint(0, 2, (50,), dtype=dtype, generator=Generator().manual_seed(1))
    assert t.dtype == dtype
    np.testing.assert_array_equal(values(t), values(randint(0, 2, (50,), generator=Generator().manual_seed(1))))


def test_randint_with_a_float_dtype_can_require_grad_and_an_integer_one_cannot():
    assert randint(5, (2,), dtype=np.float32, requires_grad=True).requires_grad
    with pytest.raises((TypeError, RuntimeError), match="grad"):
        randint(5, (2,), requires_grad=True)


@pytest.mark.parametrize("args, kwargs, error, message", [
    ((5, 3, (3,)), {}, ValueError, r"randint: low must be less than high, got low=5, high=3"),
    ((5, 5, (3,)), {}, ValueError, r"low must be less than high"),
    ((0, 2.5, (3,)), {}, TypeError, r"randint: high must be an integer, got float 2.5"),
    ((0.5, 3, (3,)), {}, TypeError, r"randint: low must be an integer, got float 0.5"),
    ((5, 3), {}, TypeError, r"randint: no size: call randint\(high, size\) or randint\(low, high, size\), with size "
                            r"a tuple such as \(3,\) or \(2, 4\); got low=5, high=3"),
    ((5,), {}, TypeError, r"no size: .* got low=0, high=5"),
    ((0, 5, 3), {}, TypeError, r"randint: size must be a tuple of integers, such as \(3,\) or \(2, 4\), got 3"),
    ((0, 300, (3,)), {"dtype": np.uint8}, ValueError, r"randint: \[0, 300\) does not fit in uint8 \(\[0, 255\]\)"),
    ((-1, 3, (3,)), {"dtype": np.uint8}, ValueError, r"does not fit in uint8"),
    ((0, 3, (3,)), {"dtype": np.bool_}, ValueError, r"\[0, 3\) does not fit in bool \(\[0, 1\]\)"),
])
def test_randint_refuses_what_it_cannot_draw(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        randint(*args, **kwargs)


# ----- randperm -----
def test_randperm_is_a_permutation_of_the_dtype_asked_for(backend):
    p = randperm(100, generator=Generator(on(backend)).manual_seed(3), device=on(backend))
    assert p.dtype == np.int64 and p.device == ("cpu" if backend is np else "gpu")
    assert sorted(values(p).tolist()) == list(range(100)) and values(p).tolist() != list(range(100))
    assert randperm(0).shape == (0,) and values(randperm(1)).tolist() == [0]
    assert randperm(5, dtype=np.int32).dtype == np.int32
    assert sorted(values(randperm(5, dtype=np.float32)).tolist()) == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_randperm_draws_every_order_equally_often():
    g = Generator().manual_seed(0)
    draws = 3000
    seen = [tuple(values(randperm(3, generator=g)).tolist()) for _ in range(draws)]
    counts = [seen.count(order) for order in itertools.permutations(range(3))]
    assert min(counts) > 0
    assert max(abs(c - draws / 6) for c in counts) < 5 * np.sqrt(draws * (1 / 6) * (5 / 6))


@pytest.mark.parametrize("n, kwargs, error, message", [
    (-1, {}, ValueError, "randperm: n must be non-negative, got -1"),
    (5.0, {}, TypeError, "randperm: n must be an integer, got float 5.0"),
    (300, {"dtype": np.uint8}, ValueError, "randperm: 299 does not fit in uint8; pick a wider dtype"),
])
def test_randperm_refuses_bad_arguments(n, kwargs, error, message):
    with pytest.raises(error, match=message):
        randperm(n, **kwargs)


# ----- multinomial -----
def _five_sigma(n, p):
    return 5 * np.sqrt(n * p * (1 - p))


def test_draws_with_replacement_follow_the_weights(backend):
    w = [1.0, 2.0, 0.0, 5.0, 0.0]  # not normalised, with zeros inside and at the end
    n = 20_000
    drawn = values(multinomial(weights(w, backend), n, replacement=True,
                               generator=Generator(on(backend)).manual_seed(0)))
    assert drawn.shape == (n,) and drawn.dtype == np.int64
    counts = np.bincount(drawn, minlength=5)
    assert counts[2] == counts[4] == 0
    p = np.array(w) / sum(w)
    assert all(abs(counts[i] - n * p[i]) < _five_sigma(n, p[i]) for i in (0, 1, 3))


def test_each_row_draws_from_its_own_weights(backend):
    # one weight per row, at every position: any draw from a neighbour's share would show
    eye = np.eye(6, dtype=np.float32)
    rows = np.concatenate([eye, eye[::-1] * 1e-3, [[0, 0, 0, 0, 0, 1e-30]]])
    drawn = values(multinomial(weights(rows, backend), 50, replacement=True,
                               generator=Generator(on(backend)).manual_seed(1)))
    assert drawn.shape == (13, 50)
    expected = np.concatenate([np.arange(6), np.arange(6)[::-1], [5]])
    np.testing.assert_array_equal(drawn, np.repeat(expected[:, None], 50, axis=1))


def test_draws_without_replacement_are_distinct_and_in_the_sequential_proportions(backend):
    w = np.array([1.0, 2.0, 3.0, 0.0, 4.0])
    rows = 8000
    drawn = values(multinomial(weights(np.tile(w, (rows, 1)), backend), 3,
                               generator=Generator(on(backend)).manual_seed(2)))
    assert drawn.shape == (rows, 3)
    assert all(len(set(row)) == 3 for row in drawn.tolist()) and not (drawn == 3).any()
    total = w.sum()
    first = w / total  # P(first = i)
    second = np.array([sum(w[i] / total * w[j] / (total - w[i]) for i in range(5) if i != j) for j in range(5)])
    for position, p in ((0, first), (1, second)):
        counts = np.bincount(drawn[:, position], minlength=5)
        assert all(abs(counts[j] - rows * p[j]) <= _five_sigma(rows, p[j]) for j in range(5)), (position, counts)


def test_drawing_every_non_zero_category_without_replacement_gives_a_permutation_of_them(backend):
    drawn = values(multinomial(weights([[0.0, 3.0, 1.0, 0.0, 2.0]] * 4, backend), 3,
                               generator=Generator(on(backend)).manual_seed(4)))
    assert all(sorted(row) == [1, 2, 4] for row in drawn.tolist())


def test_multinomial_draws_from_the_global_generator_by_default():
    w = dlscratch.tensor([1.0, 1.0, 1.0, 1.0])
    dlscratch.manual_seed(9)
    first = values(multinomial(w, 4))
    dlscratch.manual_seed(9)
    np.testing.assert_array_equal(values(multinomial(w, 4)), first)


def test_multinomial_keeps_the_shape_of_empty_batches():
    assert multinomial(dlscratch.ones(0, 3), 2).shape == (0, 2)


@pytest.mark.parametrize("w, n, kwargs, error, message", [
    ([1.0, 2.0, 0.0], 4, {}, ValueError, "multinomial: cannot draw 4 samples without replacement from 3 categories"),
    ([1.0, 2.0, 0.0], 3, {}, ValueError,
     "multinomial: cannot draw 3 samples without replacement from a row with only 2 non-zero weights"),
    ([[1.0, 2.0], [0.0, 1.0]], 2, {}, ValueError, "from a row with only 1 non-zero weights; draw at most 1"),
    ([1.0, -2.0, 3.0], 1, {}, ValueError, "multinomial: the weights must be finite and non-negative"),
    ([1.0, float("nan")], 1, {}, ValueError, "the weights must be finite and non-negative"),
    ([1.0, float("inf")], 1, {"replacement": True}, ValueError, "the weights must be finite and non-negative"),
    ([[1.0, 2.0], [0.0, 0.0]], 1, {"replacement": True}, ValueError,
     "multinomial: each row's weights must sum to more than 0"),
    ([1.0, 2.0], 0, {}, ValueError, "multinomial: num_samples must be a positive integer, got 0"),
    ([1.0, 2.0], 1.5, {}, ValueError, "num_samples must be a positive integer, got 1.5"),
    ([[[1.0]]], 1, {}, ValueError, r"multinomial: input must be weights of shape \(C,\) or \(R, C\), got shape"),
    (1.0, 1, {}, ValueError, r"got shape \(\)"),
])
def test_multinomial_refuses_what_pytorch_documents_as_invalid(w, n, kwargs, error, message):
    with pytest.raises(error, match=message):
        multinomial(dlscratch.tensor(w), n, **kwargs)


def test_multinomial_refuses_integer_weights_and_non_tensors():
    with pytest.raises(TypeError, match="multinomial: the weights must be floating point, got int64"):
        multinomial(dlscratch.tensor([1, 2]), 1)
    with pytest.raises(TypeError, match="multinomial: input must be a tensor of weights, got list"):
        multinomial([1.0, 2.0], 1)


# ----- dropout: the mask comes from the global generator -----
def test_dropout_is_repeated_by_manual_seed_and_left_alone_by_a_generator(backend, path):
    x = dlscratch.ones(4, 8, 3, 3, device=on(backend))
    dlscratch.manual_seed(13)
    first = values(F.dropout(x, 0.5))
    dlscratch.manual_seed(13)
    randn(100, generator=Generator(on(backend)), device=on(backend))  # a generator of one's own draws in between
    np.testing.assert_array_equal(values(F.dropout(x, 0.5)), first)
    dlscratch.manual_seed(13)
    module = dlscratch.nn.Dropout(0.5)
    np.testing.assert_array_equal(values(module(x)), first)
    assert 0.35 < (first != 0).mean() < 0.65


# ----- one_hot -----
def test_one_hot_marks_each_index_in_a_row_of_zeros(backend):
    labels = dlscratch.tensor([[0, 2], [1, 0]], device=on(backend))
    got = F.one_hot(labels)
    assert got.shape == (2, 2, 3) and got.dtype == np.int64 and got.requires_grad is False
    np.testing.assert_array_equal(values(got), np.eye(3, dtype=np.int64)[[[0, 2], [1, 0]]])
    np.testing.assert_array_equal(values(F.one_hot(labels, num_classes=5)), np.eye(5, dtype=np.int64)[[[0, 2], [1, 0]]])
    np.testing.assert_array_equal(values(F.one_hot(dlscratch.tensor(2, device=on(backend)), 4)), [0, 0, 1, 0])
    assert F.one_hot(dlscratch.zeros(2, 0, dtype=np.int64), 3).shape == (2, 0, 3)
    assert F.one_hot is dlscratch.functional.one_hot


@pytest.mark.parametrize("labels, kwargs, error, message", [
    ([0, -1, 1], {}, ValueError, "one_hot: class indices must be non-negative, got -1"),
    ([0, 3, 1], {"num_classes": 3}, ValueError, "one_hot: class indices must be smaller than num_classes=3, got 3"),
    ([0, 1], {"num_classes": 0}, ValueError, "smaller than num_classes=0"),
    ([0, 1], {"num_classes": -2}, ValueError, "one_hot: num_classes must be a non-negative integer, or -1"),
    ([0, 1], {"num_classes": 2.0}, ValueError, "num_classes must be a non-negative integer"),
    (np.zeros(0, np.int64), {}, ValueError, "one_hot: cannot infer the number of classes from an empty tensor"),
    ([0.0, 2.0], {}, TypeError, r"one_hot: expected int64 class indices, got float32; convert with .to\(dlscratch"),
    (np.array([0, 1], np.int32), {}, TypeError, "expected int64 class indices, got int32"),
])
def test_one_hot_refuses_what_is_not_int64_class_indices(labels, kwargs, error, message):
    with pytest.raises(error, match=message):
        F.one_hot(dlscratch.tensor(labels), **kwargs)


def test_rand_and_randn_make_float16_which_the_array_generators_do_not_draw(backend):
    """NumPy's and CuPy's generators draw float32 and float64 only; PyTorch's ``rand``/``randn`` take float16 too.
    ``rand`` stays below 1 (a float32 draw rounded to float16 could reach it) and takes all 2048 values of
    float16's 11 bits in [0, 1)."""
    dlscratch.manual_seed(0)
    uniform = dlscratch.rand(20000, dtype=dlscratch.float16, device=dlscratch.get_default_device())
    normal = dlscratch.randn_like(uniform)
    values = B.to_cpu(uniform.data)
    assert uniform.dtype == normal.dtype == np.float16
    assert values.min() == 0 and values.max() < 1 and len(np.unique(values)) == 2048
    assert np.all(values * 2048 == np.floor(values * 2048))
    assert 0.9 < float(B.to_cpu(normal.data).astype(np.float32).std()) < 1.1
