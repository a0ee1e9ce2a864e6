"""Suite "autograd": what recording a graph and backpropagating through it cost per operation.

A chain of elementwise operations (add a constant, multiply by a constant, twice, then tanh;
repeating) on float32 arrays runs six ways:

- raw arrays, forward;
- raw arrays, forward and a hand-written backward of the same arithmetic (the fair baseline);
- dlscratch forward under ``no_grad`` (tensors, no graph);
- dlscratch forward, recording the graph;
- dlscratch forward and ``backward()``;
- the same on the reference path (``dlscratch.reference()``): add, mul and tanh have no fast
  version of their own, but the fast path records the binary ones and walks back in one frame
  each (``dlscratch/fast/graph.py``), so the reference/fast ratio printed below the table is what
  that saves, the switch's own cost, and noise.

Both sides run the same loop, so on small arrays, where arithmetic is nearly free, the
difference per operation is the framework's own cost. On large arrays arithmetic dominates,
and memory shows: the recorded graph keeps every intermediate array alive until backward,
where the hand-written version keeps only the tanh outputs (``python -m dlscratch.bench`` keeps
freed memory in the process, ``dlscratch/fast/malloc.py``, so it is not page-faulted back each call).
"""

import numpy

from .. import backend
from ..engine.creation import generator
from ..engine.grad_mode import no_grad
from ..engine.tensor import Tensor
from .timing import format_table, measure_interleaved, median, on_the_fast_path, on_the_reference_path

PATTERN = ("add", "mul", "add", "mul", "tanh")
TARGET_US = 5.0  # framework overhead per op, forward + backward, on a 2-core CPU
DEZERO_US = 10.7  # DeZero 0.0.13 on the same chain
REPEAT = 7
# (array shape, number of ops): small arrays show the overhead; large ones, the arithmetic.
SIZES = [((16, 16), 1000), ((256, 256), 200)]
QUICK_SIZES = [((4, 4), 20), ((32, 32), 10)]
QUICK_REPEAT = 2
HEADERS = ["size", "ops", "variant", "µs/op", "overhead µs/op", "x raw"]
FAST_ROW = "dlscratch forward+backward"
REFERENCE_ROW = "dlscratch forward+backward, reference path"


def forward(y, ops, c, k, tanh):
    """The chain: ``y + c``, ``y * k`` or ``tanh(y)`` per op; arrays or tensors alike."""
    for op in ops:
        if op == "add":
            y = y + c
        elif op == "mul":
            y = y * k
        else:
            y = tanh(y)
    return y


def raw_forward_backward(x, ops, c, k, seed, tanh):
    """The chain's forward on raw arrays, then its gradient by hand: the gradient of ``x``."""
    saved = []
    y = x
    for op in ops:
        if op == "add":
            y = y + c
        elif op == "mul":
            y = y * k
        else:
            y = tanh(y)
            saved.append(y)
    g = seed
    for op in reversed(ops):
        if op == "mul":
            g = g * k
        elif op == "tanh":
            y = saved.pop()
            g = g * (1 - y * y)
    return g


def variants(shape, n):
    """The timed callables for a chain of ``n`` ops on arrays of ``shape``, by row name."""
    xp = backend.xp
    rng = generator(xp)
    x = rng.random(shape, dtype=numpy.float32) * 2 - 1
    c = xp.full(shape, 0.1, dtype=numpy.float32)
    k = xp.full(shape, 0.9, dtype=numpy.float32)
    seed = xp.ones(shape, dtype=numpy.float32)
    ops = [PATTERN[i % len(PATTERN)] for i in range(n)]
    xt, ct, kt = Tensor(x, requires_grad=True), Tensor(c), Tensor(k)

    def forward_no_grad():
        with no_grad():
            forward(xt, ops, ct, kt, Tensor.tanh)

    def forward_backward():
        xt.zero_grad()
        forward(xt, ops, ct, kt, Tensor.tanh).backward(seed)

    forward_backward()
    expected = raw_forward_backward(x, ops, c, k, seed, xp.tanh)
    if not xp.allclose(xt.grad.data, expected, rtol=1e-4, atol=1e-6):
        raise RuntimeError("autograd bench: dlscratch's gradient differs from the hand-written one")
    name = xp.__name__
    return {
        f"{name} forward": lambda: forward(x, ops, c, k, xp.tanh),
        f"{name} forward+backward": lambda: raw_forward_backward(x, ops, c, k, seed, xp.tanh),
        "dlscratch forward, no_grad": on_the_fast_path(forward_no_grad),
        "dlscratch forward": on_the_fast_path(lambda: forward(xt, ops, ct, kt, Tensor.tanh)),
        FAST_ROW: on_the_fast_path(forward_backward),
        REFERENCE_ROW: on_the_reference_path(forward_backward),
    }


def rows_for(shape, n, repeat, quick):
    """Table rows for one size: µs per op, and the overhead against the matching raw variant; and the
    reference path's forward+backward time over the fast path's, the median of the ratio in each round."""
    fns = variants(shape, n)
    times = measure_interleaved(fns, repeat=repeat, number=1 if quick else None, pause=0)  # no BLAS: no spinning
    us = {name: median(t) / n * 1e6 for name, t in times.items()}
    raw_fwd, raw_fwd_bwd = list(us)[:2]
    baseline = {"dlscratch forward, no_grad": raw_fwd, "dlscratch forward": raw_fwd,
                FAST_ROW: raw_fwd_bwd, REFERENCE_ROW: raw_fwd_bwd}
    size = "x".join(map(str, shape))
    rows = []
    for name, value in us.items():
        base = baseline.get(name)
        extra = ["-", "-"] if base is None else [f"{value - us[base]:.2f}", f"{value / us[base]:.2f}"]
        rows.append([size, str(n), name, f"{value:.2f}", *extra])
    reference_ratio = median([r / f for r, f in zip(times[REFERENCE_ROW], times[FAST_ROW])])
    return rows, reference_ratio


def run(repeat=None, quick=False):
    """Time the chain at each size, print the table and the target; return ``(headers, rows)``."""
    sizes, repeat = (QUICK_SIZES, repeat or QUICK_REPEAT) if quick else (SIZES, repeat or REPEAT)
    print(
        f"autograd: a chain of elementwise ops ({', '.join(PATTERN)}, repeating) on float32 arrays; "
        f"median of {repeat} interleaved repeats"
    )
    rows, reference_ratios = [], {}
    for shape, n in sizes:
        size_rows, reference_ratios["x".join(map(str, shape))] = rows_for(shape, n, repeat, quick)
        rows += size_rows
    print(format_table(HEADERS, rows))
    for line in [reference_line(reference_ratios)] + summary(rows, quick):
        print(line)
    return HEADERS, rows


def summary(rows, quick):
    """The verdict against the target at the smallest size, and the ratio at the largest."""
    fwd_bwd = [row for row in rows if row[2] == FAST_ROW]
    small, large = fwd_bwd[0], fwd_bwd[-1]
    verdict = "quick mode: too few ops to judge" if quick else "met" if float(small[4]) < TARGET_US else "NOT met"
    return [
        f"framework overhead per op, forward+backward, {small[0]}: {small[4]} µs "
        f"(target < {TARGET_US:g} µs on a 2-core CPU: {verdict}; DeZero 0.0.13: about {DEZERO_US} µs)",
        f"at {large[0]}, dlscratch forward+backward takes {large[5]}x the time of the hand-written version: "
        "memory, not Python (the graph holds every intermediate array until backward)",
    ]


def reference_line(ratios):
    """The reference path's forward+backward time over the fast path's at each size. ``ratios``: size -> ratio."""
    parts = ", ".join(f"{ratio:.2f} at {size}" for size, ratio in ratios.items())
    return (f"forward+backward, reference path time / fast path time: {parts} (add, mul and tanh have no fast "
            "version: the ratio is what recording and walking back in one frame save, and noise)")
