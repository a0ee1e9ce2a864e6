"""Variable-length sequences: ``nn.utils.rnn`` packing and ``nn.LSTM`` on a ``PackedSequence``.

Padded steps must change neither the outputs (zeros there after padding back) nor the final states
(each sequence's own last step), and must receive no gradient: checked against running every
sequence alone.
"""

import numpy as np
import pytest

import dlscratch
from dlscratch import gradcheck, nn
from dlscratch.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
)


def padded_batch(lengths, features=2, seed=0):
    """``(T, B, features)`` float32 with a distinct number in every real step and 99 in the padding."""
    rng = np.random.default_rng(seed)
    x = np.full((max(lengths), len(lengths), features), 99.0, dtype=np.float32)
    for b, n in enumerate(lengths):
        x[:n, b] = rng.standard_normal((n, features))
    return x


def test_packing_by_hand():
    x = np.arange(3 * 3).reshape(3, 3, 1).astype(np.float32)  # x[t, b] = 3 t + b
    packed = pack_padded_sequence(dlscratch.tensor(x), [3, 1, 2], enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 2, 1] and packed.batch_sizes.dtype == np.int64
    assert packed.sorted_indices.tolist() == [0, 2, 1]
    assert packed.unsorted_indices.tolist() == [0, 2, 1]
    # step 0 of sequences 0, 2, 1; step 1 of sequences 0, 2; step 2 of sequence 0
    assert packed.data.numpy().ravel().tolist() == [0, 2, 1, 3, 5, 6]
    sorted_packed = pack_padded_sequence(dlscratch.tensor(x), [3, 2, 1])
    assert sorted_packed.sorted_indices is None and sorted_packed.unsorted_indices is None
    assert sorted_packed.data.numpy().ravel().tolist() == [0, 1, 2, 3, 4, 6]


@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_packed_undoes_pack_padded(backend, batch_first):
    lengths = [2, 5, 1, 3]
    x = padded_batch(lengths)
    x_in = x.transpose(1, 0, 2) if batch_first else x
    packed = pack_padded_sequence(dlscratch.tensor(backend.asarray(x_in)), dlscratch.tensor(lengths),
                                  batch_first=batch_first, enforce_sorted=False)
    padded, got_lengths = pad_packed_sequence(packed, batch_first=batch_first, padding_value=-1.0, total_length=7)
    assert got_lengths.tolist() == lengths and got_lengths.dtype == np.int64 and got_lengths.device == "cpu"
    padded = padded.numpy()
    padded = padded.transpose(1, 0, 2) if batch_first else padded
    assert padded.shape == (7, 4, 2)
    for b, n in enumerate(lengths):
        np.testing.assert_array_equal(padded[:n, b], x[:n, b])
        assert np.all(padded[n:, b] == -1.0)


def test_pack_sequence_and_pad_sequence():
    seqs = [dlscratch.randn(n, 3) for n in (2, 4, 1)]
    padded = pad_sequence(seqs, padding_value=7.0)
    assert padded.shape == (4, 3, 3)
    assert np.all(padded.numpy()[2:, 0] == 7.0) and np.all(padded.numpy()[1:, 2] == 7.0)
    assert pad_sequence(seqs, batch_first=True).shape == (3, 4, 3)
    packed = pack_sequence(seqs, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 2, 1, 1]
    back, lengths = pad_packed_sequence(packed)
    assert lengths.tolist() == [2, 4, 1]
    for b, s in enumerate(seqs):
        np.testing.assert_array_equal(back.numpy()[: len(s), b], s.numpy())
    with pytest.raises(ValueError, match="lengths .* are not sorted longest first"):
        pack_sequence(seqs)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_lstm_equals_each_sequence_alone(backend, bidirectional):
    dlscratch.manual_seed(0)
    lstm = nn.LSTM(2, 3, num_layers=2, bidirectional=bidirectional)
    lengths = [3, 6, 1, 4]
    x_np = padded_batch(lengths, seed=1)
    x = dlscratch.tensor(backend.asarray(x_np), requires_grad=True)
    y_packed, (h_n, c_n) = lstm(pack_padded_sequence(x, lengths, enforce_sorted=False))
    y, _ = pad_packed_sequence(y_packed)
    (y * y).sum().backward()  # a loss that sees every output, the padding's zeros included
    grads = [p.grad.numpy() for p in lstm.parameters()]
    padding = np.arange(6)[:, None] >= np.array(lengths)  # (T, B): True at padded steps
    assert np.all(x.grad.numpy()[padding] == 0), "padded steps must receive no gradient"

    summed = [np.zeros_like(g) for g in grads]
    for b, n in enumerate(lengths):
        lstm.zero_grad()
        alone = dlscratch.tensor(backend.asarray(x_np[:n, b:b + 1]), requires_grad=True)
        y_alone, (h_alone, c_alone) = lstm(alone)
        np.testing.assert_allclose(y.detach().numpy()[:n, b], y_alone.detach().numpy()[:, 0], atol=2e-6)
        assert np.all(y.detach().numpy()[n:, b] == 0), "outputs at padded steps must be zero"
        np.testing.assert_allclose(h_n.detach().numpy()[:, b], h_alone.detach().numpy()[:, 0], atol=2e-6)
        np.testing.assert_allclose(c_n.detach().numpy()[:, b], c_alone.detach().numpy()[:, 0], atol=2e-6)
        (y_alone * y_alone).sum().backward()
        np.testing.assert_allclose(x.grad.numpy()[:n, b], alone.grad.numpy()[:, 0], rtol=1e-4, atol=1e-6)
        summed = [s + p.grad.numpy() for s, p in zip(summed, lstm.parameters())]
    for got, want in zip(grads, summed):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_packed_lstm_with_initial_state_in_the_original_order():
    lstm = nn.LSTM(2, 3)
    lengths = [2, 4]
    x_np = padded_batch(lengths, seed=2)
    h0, c0 = dlscratch.randn(1, 2, 3), dlscratch.randn(1, 2, 3)
    _, (h_n, _) = lstm(pack_padded_sequence(dlscratch.tensor(x_np), lengths, enforce_sorted=False), (h0, c0))
    for b, n in enumerate(lengths):
        _, (h_alone, _) = lstm(dlscratch.tensor(x_np[:n, b:b + 1]), (h0[:, b:b + 1], c0[:, b:b + 1]))
        np.testing.assert_allclose(h_n.detach().numpy()[:, b], h_alone.detach().numpy()[:, 0], atol=2e-6)


def test_gradcheck_through_pack_lstm_pad():
    lstm = nn.LSTM(2, 2, bidirectional=True).to(np.float64)
    lengths = [1, 3, 2]
    x = padded_batch(lengths, seed=3).astype(np.float64)
    x[x == 99.0] = 0.5
    names = [name for name, _ in lstm.named_parameters()]

    def run(x, h0, c0, *weights):
        for name, w in zip(names, weights):
            lstm._parameters[name] = w
        y, (h_n, c_n) = lstm(pack_padded_sequence(x, lengths, enforce_sorted=False), (h0, c0))
        return pad_packed_sequence(y)[0], h_n, c_n

    h0, c0 = np.random.default_rng(4).standard_normal((2, 2, 3, 2))
    gradcheck(run, x, h0, c0, *[p.detach().numpy() for p in lstm.parameters()])


def test_packed_sequence_moves_and_keeps_its_batch_sizes():
    packed = pack_sequence([dlscratch.randn(3, 2), dlscratch.randn(1, 2)])
    as64 = packed.to(np.float64)
    assert isinstance(as64, PackedSequence) and as64.data.dtype == np.float64
    assert as64.batch_sizes is packed.batch_sizes


def test_bad_lengths():
    x = dlscratch.randn(4, 3, 2)
    with pytest.raises(ValueError, match=r"length 5 is longer than the input's 4 steps \(lengths \[5, 2, 1\]\)"):
        pack_padded_sequence(x, [5, 2, 1])
    with pytest.raises(ValueError, match=r"every length must be at least 1, got \[3, 0, 1\]"):
        pack_padded_sequence(x, [3, 0, 1])
    with pytest.raises(ValueError, match=r"every length must be at least 1, got \[3, -2, 1\]"):
        pack_padded_sequence(x, [3, -2, 1])
    with pytest.raises(ValueError, match=r"lengths \[1, 3, 2\] are not sorted longest first.*enforce_sorted=False"):
        pack_padded_sequence(x, [1, 3, 2])
    with pytest.raises(ValueError, match="2 lengths for a batch of 3 sequences"):
        pack_padded_sequence(x, [3, 2])
    with pytest.raises(ValueError, match="lengths must be a 1-D sequence of integers"):
        pack_padded_sequence(x, [3.5, 2, 1])
    with pytest.raises(ValueError, match=r"expected input of shape \(T, B, \*\)"):
        pack_padded_sequence(dlscratch.randn(4), [4])
    with pytest.raises(ValueError, match="the batch is empty"):
        pack_padded_sequence(dlscratch.zeros(4, 0, 2), [])
    packed = pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(ValueError, match=r"total_length=3 is shorter than the longest sequence \(4\)"):
        pad_packed_sequence(packed, total_length=3)
    with pytest.raises(ValueError, match="LSTM: expected packed data of shape \\(rows, 5\\), got \\(7, 2\\)"):
        nn.LSTM(5, 3)(packed)


def test_take_and_put_rows_are_inverse_and_differentiable():
    from dlscratch.operations.indexing import put_rows, take_rows

    rows = np.array([4, 0, 2])
    x = np.random.default_rng(5).standard_normal((5, 2))
    np.testing.assert_array_equal(take_rows(dlscratch.tensor(x, dtype=np.float64), rows).numpy(), x[rows])
    placed = put_rows(dlscratch.tensor(x[:3], dtype=np.float64), rows, 6, fill=-1.0).numpy()
    np.testing.assert_array_equal(placed[rows], x[:3])
    assert np.all(placed[[1, 3, 5]] == -1.0)
    gradcheck(lambda a: take_rows(a, rows), x)
    gradcheck(lambda a: put_rows(a, rows, 6, fill=0.5), x[:3])
