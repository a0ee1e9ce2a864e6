"""``sum_over(x, axes)``: a float sum over any axes, as accurate as NumPy's along a contiguous one.

NumPy sums the contiguous last axis pairwise (error growing with ``log n``), but any other axis row by row into
one accumulator (error growing with ``n``): ``(ones(1_000_000, 2) * 0.1).mean(0)`` came out 0.10096 in float32.
Batch statistics, bias gradients (``gy.sum(axis=0)``) and broadcast gradients all sum over the batch axis. Here,
on a CPU, float32 arrays summed over more than ``BLOCK`` elements along other axes are summed in blocks of
``BLOCK`` rows, each block's sums then summed in blocks again: the error grows with ``BLOCK`` times the number
of levels (about ``log n / log BLOCK``), at about the time of NumPy's own sum; float16 ones the same way in
float32, rounded once. CuPy's reductions already sum in a tree; float64 is left to NumPy.
"""

import math

import numpy

BLOCK = 128  # rows summed one after another before their sum joins the next level


def sum_over(x, axes=None, keepdims=False):
    """``x.sum(axis=axes, keepdims=keepdims)`` (``axes``: an int, a tuple or None for all), blocked where NumPy
    would add row by row (see above)."""
    if x.size <= BLOCK or type(x) is not numpy.ndarray or x.dtype.char not in "ef":  # float32 or float16, NumPy's
        return x.sum(axis=axes, keepdims=keepdims)
    if x.dtype.char == "e":  # summed in float32, as NumPy's float16 mean is, and rounded once
        with numpy.errstate(over="ignore"):  # past float16's range is inf, as a float16 sum gives
            return sum_over(x.astype(numpy.float32), axes, keepdims).astype(numpy.float16)
    ndim, shape = x.ndim, x.shape
    if axes is None or (ndim == 1 and axes in (0, -1, (0,), (-1,))):  # all of it: pairwise where C-contiguous
        if x.flags.c_contiguous:
            return x.sum(axis=axes, keepdims=keepdims)
        axes = tuple(range(ndim))
    elif type(axes) is int:
        axes = (axes % ndim,)
    else:
        axes = tuple(sorted(int(a) % ndim for a in axes))
    count = math.prod([shape[a] for a in axes])
    if count <= BLOCK or (axes[-1] == ndim - 1 and len(axes) == axes[-1] - axes[0] + 1 and x.flags.c_contiguous):
        return x.sum(axis=axes, keepdims=keepdims)  # too short to matter, or trailing: NumPy's pairwise sum
    inner = _contiguous_tail(x, axes)
    if inner:  # summed pairwise by NumPy first, without a copy; the rest below
        x = x.sum(axis=inner, keepdims=True)
        count = math.prod(x.shape[a] for a in axes)
    kept = [a for a in range(ndim) if a not in axes]
    rows = numpy.moveaxis(x, axes, range(len(axes))).reshape(count, -1)  # (count, kept elements)
    while len(rows) > BLOCK:
        whole = len(rows) // BLOCK * BLOCK
        blocks = rows[:whole].reshape(-1, BLOCK, rows.shape[1]).sum(axis=1)
        rows = blocks if whole == len(rows) else numpy.concatenate([blocks, rows[whole:].sum(axis=0, keepdims=True)])
    total = rows.sum(axis=0).reshape([x.shape[a] for a in kept])
    if keepdims:
        total = total.reshape([1 if a in axes else x.shape[a] for a in range(ndim)])
    return total


def _contiguous_tail(x, axes):
    """The reduced axes at the end of a C-contiguous ``x`` (NumPy sums them pairwise), as a tuple."""
    if not x.flags.c_contiguous:
        return ()
    tail = []
    for a in range(x.ndim - 1, -1, -1):
        if a not in axes:
            break
        tail.append(a)
    return tuple(reversed(tail))

