"""What the engine keeps instead of making anew in every step: backward's seed of ones (fast/kept_arrays.py) and the
0-d arrays of Python scalar operands (engine/extensions/operands.py). Kept arrays are read-only on NumPy, so a
write into one fails loudly; on the stand-in they save a launch (the seed's fill) or a copy to the device (a
scalar's)."""

import numpy
import pytest

import dlscratch
from dlscratch import backend
from dlscratch.engine.extensions import operands
from dlscratch.fast import kept_arrays


def test_backward_seeds_a_scalar_output_with_one_kept_read_only_array():
    x = dlscratch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    (x * 3.0).sum().backward()  # the gradients add up: 2x + 3
    assert numpy.array_equal(x.grad.numpy(), numpy.array([5.0, 7.0, 9.0], dtype=numpy.float32))
    seed = kept_arrays.ones_seed(x.sum().data)
    assert seed is kept_arrays.ones_seed(x.sum().data) and seed == 1 and seed.dtype == numpy.float32
    with pytest.raises(ValueError, match="read-only"):
        seed[...] = 2
    assert kept_arrays.ones_seed(x.double().sum().data).dtype == numpy.float64  # one per dtype
    assert kept_arrays.ones_seed(x[:1].data).shape == (1,)  # and per shape


def test_a_retained_seed_gradient_is_a_copy_of_its_own():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum().retain_grad()
    loss.backward()
    loss.grad.data += 1  # the kept seed is read-only: .grad must not be it
    assert float(loss.grad) == 2.0 and float(kept_arrays.ones_seed(loss.data)) == 1.0


def test_scalar_operands_are_kept_per_value_type_and_dtype():
    x = dlscratch.tensor([1.0, 2.0], requires_grad=True)
    data = x.data
    half = operands.scalar_array(0.5, data)
    assert half is operands.scalar_array(0.5, data) and half.dtype == numpy.float32 and not half.flags.writeable
    # 1, 1.0 and True are equal dictionary keys; each keeps its own kind
    i = dlscratch.tensor([1, 2])
    assert (i * 1).dtype == numpy.int64 and (i * 1.0).dtype == numpy.float32 and (i * True).dtype == numpy.int64
    assert operands.scalar_array(1, i.data) is not operands.scalar_array(1.0, i.data)
    y = x * 0.5 + 0.5
    y.sum().backward()
    assert numpy.array_equal(x.grad.numpy(), numpy.array([0.5, 0.5], dtype=numpy.float32))
    assert numpy.array_equal(y.detach().numpy(), numpy.array([1.0, 1.5], dtype=numpy.float32))


def test_at_most_so_many_scalars_are_kept(monkeypatch):
    monkeypatch.setattr(operands, "_kept_scalars", {})
    monkeypatch.setattr(operands, "KEPT_SCALARS", 3)
    x = dlscratch.tensor([1.0])
    for k in range(10):
        assert float(x * float(k)) == k  # still right past the limit, made anew
    assert len(operands._kept_scalars) == 3
    nans = [x * float("nan") for _ in range(5)]  # a NaN is never equal to itself: no endless growth either
    assert all(numpy.isnan(float(n)) for n in nans) and len(operands._kept_scalars) == 3


def test_on_the_stand_in_a_step_fills_no_seed_and_copies_no_scalar(stand_in):
    x = dlscratch.tensor(numpy.ones((4, 4), dtype=numpy.float32), device="gpu", requires_grad=True)

    def step():
        x.grad = None
        ((x * 0.5 + 2.0) * x).sum().backward()

    step()  # the first step makes the kept arrays
    with backend.ledger() as book:
        step()
    assert book.copies_to_device == 0 and not [row for row in book.by_site() if row[2].startswith("fill")], (
        book.table())
    assert numpy.allclose(backend.to_cpu(x.grad.data), 3.0)  # d(0.5 x² + 2x)/dx = x + 2, at x = 1


def test_adaptive_pooling_keeps_its_window_matrices_but_not_ones_made_inside_a_capture(stand_in):
    """Made inside a capture, the window matrices hold values only when the graph replays (the stand-in leaves them
    NaN, as a GPU leaves them unwritten): a pooling first called inside a capture must make them again after it.
    An input shape no other test pools (13 x 11 -> 3 x 2), so that nothing was kept before."""
    x = dlscratch.tensor(numpy.arange(2 * 13 * 11, dtype=numpy.float32).reshape(1, 2, 13, 11)).to("gpu")
    expected = dlscratch.nn.functional.adaptive_avg_pool2d(x.to("cpu"), (3, 2)).numpy()
    graph = dlscratch.cuda.CUDAGraph()
    with dlscratch.cuda.graph(graph):
        captured = dlscratch.nn.functional.adaptive_avg_pool2d(x, (3, 2))
    with backend.ledger() as first:  # before any replay has written what the capture made
        eager = dlscratch.nn.functional.adaptive_avg_pool2d(x, (3, 2))
    numpy.testing.assert_allclose(eager.to("cpu").numpy(), expected, rtol=1e-6)
    graph.replay()
    numpy.testing.assert_allclose(captured.to("cpu").numpy(), expected, rtol=1e-6)
    with backend.ledger() as second:
        dlscratch.nn.functional.adaptive_avg_pool2d(x, (3, 2))
    assert second.launches < first.launches  # kept from the first eager call: only the products and copies run
