"""Variable-length sequences, PyTorch's way: ``PackedSequence`` and the functions that make and undo it.

A batch of sequences of different lengths is padded to ``(T, B, *)``, but an LSTM should not run
on the padding. Packing keeps only the real steps, time-major: first every sequence's step 0, then
step 1 of those that have one, and so on, longest sequences first. ``batch_sizes[t]`` says how many
sequences have a step ``t``:

    lengths 3, 1, 2   ->   sorted 3, 2, 1   ->   batch_sizes [3, 2, 1], data: 6 rows

Packing and padding are gathers of rows (``x[index]``), so gradients flow through both; padded
positions get none.
"""

from collections import namedtuple

import numpy

from ...backend import get_array_module
from ...engine.tensor import Tensor
from ...operations import concatenate, stack
from ...operations.indexing import put_rows, take_rows


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """``data: (sum(lengths), *)`` the packed rows; ``batch_sizes: (T,)`` int64 on the CPU;
    ``sorted_indices``: the batch order used for packing (longest first) as indices into the original
    batch, or None when the input was sorted already; ``unsorted_indices``: its inverse permutation."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, target):
        """The same packing with ``data`` moved or cast (``batch_sizes`` stays on the CPU)."""
        return self._replace(data=self.data.to(target))


def invert_permutation(order):
    """The permutation that undoes ``order`` (a 1-D integer array)."""
    inverse = numpy.empty_like(order)
    inverse[order] = numpy.arange(len(order))
    return inverse


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch. ``input: (T, B, *)`` (``(B, T, *)`` if ``batch_first``); ``lengths``:
    B integers in ``1..T`` (a list, array or tensor). With ``enforce_sorted``, lengths must be
    non-increasing; otherwise the batch is sorted here and the order kept for unpacking."""
    if not isinstance(input, Tensor):
        input = Tensor(input)
    if input.ndim < 2:
        raise ValueError(f"pack_padded_sequence: expected input of shape (T, B, *), got {input.shape}")
    if batch_first:
        input = input.transpose(0, 1)
    T, B = input.shape[0], input.shape[1]
    lengths = _lengths(lengths, B, T)
    sorted_indices = None
    if enforce_sorted:
        if numpy.any(numpy.diff(lengths) > 0):
            raise ValueError(
                f"pack_padded_sequence: lengths {lengths.tolist()} are not sorted longest first; sort the batch, "
                "or pass enforce_sorted=False"
            )
        order = numpy.arange(B)
    else:
        order = sorted_indices = numpy.argsort(-lengths, kind="stable")
    batch_sizes = (lengths[order][None, :] > numpy.arange(lengths.max())[:, None]).sum(axis=1)
    rows = numpy.concatenate([t * B + order[:n] for t, n in enumerate(batch_sizes)])
    data = take_rows(input.reshape(T * B, *input.shape[2:]), rows)
    return PackedSequence(data, batch_sizes.astype(numpy.int64), sorted_indices)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo ``pack_padded_sequence``: ``(padded, lengths)`` with ``padded: (T, B, *)`` (``(B, T, *)`` if
    ``batch_first``), ``padding_value`` after each sequence's end, ``T = total_length`` or the longest
    length; ``lengths``: int64 on the CPU, in the original batch order."""
    data, batch_sizes, _, unsorted = sequence
    batch_sizes = numpy.asarray(batch_sizes)
    T, B = len(batch_sizes), int(batch_sizes[0])
    if total_length is not None:
        if total_length < T:
            raise ValueError(
                f"pad_packed_sequence: total_length={total_length} is shorter than the longest sequence ({T})"
            )
        T = int(total_length)
    order = numpy.arange(B) if unsorted is None else numpy.asarray(unsorted)
    order_back = invert_permutation(order)  # packed column j belongs to sequence order_back[j]
    sorted_lengths = (batch_sizes[None, :] > numpy.arange(B)[:, None]).sum(axis=1)
    destination = numpy.concatenate([t * B + order_back[:n] for t, n in enumerate(batch_sizes)])
    padded = put_rows(data, destination, T * B, padding_value).reshape(T, B, *data.shape[1:])
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, Tensor(sorted_lengths[order].astype(numpy.int64), device="cpu")


def pad_sequence(sequences, batch_first=False, padding_value=0.0):
    """Stack tensors of shapes ``(L_k, *)`` into ``(max L, B, *)`` (``(B, max L, *)`` if ``batch_first``),
    each padded with ``padding_value`` after its end."""
    if len(sequences) == 0:
        raise ValueError("pad_sequence: expected a non-empty list of tensors")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            s = concatenate([s, _filled(s, missing, padding_value)])
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors ``(L_k, *)``: ``pack_padded_sequence(pad_sequence(sequences), lengths)``."""
    if len(sequences) == 0:
        raise ValueError("pack_sequence: expected a non-empty list of tensors")
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def _lengths(lengths, batch, steps):
    """``lengths`` as an int64 NumPy array, checked against the batch size and the number of steps."""
    if isinstance(lengths, Tensor):
        lengths = lengths.numpy()
    if batch == 0:
        raise ValueError("pack_padded_sequence: the batch is empty (no sequence to pack)")
    values = numpy.asarray(lengths)
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise ValueError(f"pack_padded_sequence: lengths must be a 1-D sequence of integers, got {lengths!r}")
    values = values.astype(numpy.int64)
    if len(values) != batch:
        raise ValueError(f"pack_padded_sequence: {len(values)} lengths for a batch of {batch} sequences")
    if values.min() < 1:
        raise ValueError(f"pack_padded_sequence: every length must be at least 1, got {values.tolist()}")
    if values.max() > steps:
        raise ValueError(
            f"pack_padded_sequence: length {values.max()} is longer than the input's {steps} steps "
            f"(lengths {values.tolist()})"
        )
    return values


def _filled(like, rows, value):
    """A constant tensor of ``rows`` rows shaped like ``like``'s, every element ``value``."""
    xp = get_array_module(like.data)
    return Tensor._make(xp.full((rows,) + like.shape[1:], value, dtype=like.dtype), False)
