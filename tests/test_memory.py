"""Graphs are freed: training for many steps keeps the number of live graph objects (and the
memory) flat, and after a step only the parameters, their gradients and what the caller holds
remain. Functions hold their outputs by weak reference, so reference counting alone frees a
graph as soon as its last tensor goes; no garbage collection is needed."""

import gc
import tracemalloc
import weakref

import numpy
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import nn, optim
from dlscratch.autograd import reachable_functions
from dlscratch.data import DataLoader, TensorDataset
from dlscratch.engine.function import Function
from dlscratch.engine.tensor import Tensor
from dlscratch.training import fit


def live(kind):
    """Every object of type ``kind`` alive now, after a full garbage collection."""
    gc.collect()
    return [obj for obj in gc.get_objects() if isinstance(obj, kind)]


def others(params):
    """The live tensors that are not in ``params``: held, so that no new tensor reuses one's id."""
    ids = {id(p) for p in params}
    return [t for t in live(Tensor) if id(t) not in ids]


@pytest.fixture
def setup():
    """A small MLP, its Adam optimizer, and 8 batches of (inputs (16, 20), labels (16,)) as NumPy arrays."""
    dlscratch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 32), nn.Tanh(),
                          nn.Linear(32, 4))
    rng = numpy.random.default_rng(0)
    data = [(rng.standard_normal((16, 20)).astype(numpy.float32), rng.integers(0, 4, 16)) for _ in range(8)]
    return model, optim.Adam(model.parameters(), lr=1e-3), data


def step(model, optimizer, x, y):
    loss = F.cross_entropy(model(dlscratch.tensor(x)), dlscratch.tensor(y))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


def test_live_functions_and_tensors_stay_flat_over_300_steps(setup):
    model, optimizer, data = setup
    counts = {}
    for i in range(1, 301):
        loss = step(model, optimizer, *data[i % len(data)])
        if i in (100, 200, 300):
            functions, tensors = live(Function), live(Tensor)
            # The only live graph is the one the caller still holds: this step's.
            assert {id(f) for f in functions} >= {id(f) for f in reachable_functions(loss.creator)}
            counts[i] = (len(functions), len(tensors))
            del functions, tensors
    assert counts[100] == counts[200] == counts[300]


def test_after_a_step_only_parameters_gradients_and_held_tensors_remain(setup):
    model, optimizer, data = setup
    params = list(model.parameters())
    before = others(params)
    for x, y in data:
        loss = step(model, optimizer, x, y)
    held = dlscratch.tensor(data[0][0])
    del loss
    new = {id(t) for t in live(Tensor)} - {id(t) for t in before}
    assert new == {id(p) for p in params} | {id(p.grad) for p in params} | {id(held)}
    assert not [f for f in live(Function) if any(id(x) in new for x in f.inputs)]


def test_reference_counting_alone_frees_a_graph(setup):
    model, optimizer, data = setup
    gc.collect()
    gc.disable()
    try:
        loss = step(model, optimizer, *data[0])
        functions = [weakref.ref(f) for f in reachable_functions(loss.creator)]
        activations = [ref for f in functions for ref in f().outputs]
        assert len(functions) == 7 and all(ref() is not None for ref in activations)
        del loss
        assert [ref() for ref in functions] == [None] * len(functions)
        assert [ref() for ref in activations] == [None] * len(activations)
    finally:
        gc.enable()


def test_traced_memory_does_not_grow_with_steps(setup):
    model, optimizer, data = setup
    for i in range(50):  # warm up: optimizer state, caches
        step(model, optimizer, *data[i % len(data)])
    tracemalloc.start()
    try:
        for i in range(100):
            step(model, optimizer, *data[i % len(data)])
        gc.collect()
        after_100 = tracemalloc.get_traced_memory()[0]
        for i in range(200):
            step(model, optimizer, *data[i % len(data)])
        gc.collect()
        after_300 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # One leaked graph per step would keep ~20 KB of activations and gradients each: 4 MB over 200 steps.
    assert after_300 - after_100 < 64 * 1024


def test_fit_leaves_no_graph_behind(setup):
    model, optimizer, data = setup
    x = numpy.concatenate([x for x, _ in data])
    y = numpy.concatenate([y for _, y in data])
    params = list(model.parameters())
    before = others(params)
    functions_before = len(live(Function))
    history = fit(model, F.cross_entropy, optimizer, DataLoader(TensorDataset(x, y), batch_size=16), epochs=3,
                  progress=False)
    assert len(history.step_losses) == 24
    assert len(live(Function)) == functions_before
    new = {id(t) for t in live(Tensor)} - {id(t) for t in before}
    assert new == {id(p) for p in params} | {id(p.grad) for p in params}
