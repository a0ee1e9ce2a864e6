"""Hypothesis strategies and memory layouts shared by the property tests: seeds, shapes and
broadcast pairs, window geometries of convolution and pooling, and arrays in random memory orders."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

SEEDS = st.integers(0, 2**32 - 1)
SHAPES = array_shapes(min_dims=1, max_dims=4, max_side=3)
BROADCAST_PAIRS = mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)


# ----- the memory layouts of an (N, C, H, W) array: the same numbers, other strides -----
def c_order(a):
    return np.ascontiguousarray(a)


def batch_last(a):
    """Stored as ``(C, H, W, N)``, as a convolution's output is on the fast path."""
    return np.ascontiguousarray(a.transpose(1, 2, 3, 0)).transpose(3, 0, 1, 2)


def negative_strides(a):
    """A view with negative strides along H and W."""
    return a[:, :, ::-1, ::-1].copy()[:, :, ::-1, ::-1]


def every_other_row(a):
    """A view that skips every other row of a larger array."""
    return np.repeat(a, 2, axis=2)[:, :, ::2]


LAYOUTS = {"C order": c_order, "batch-last": batch_last, "negative strides": negative_strides,
           "every other row": every_other_row}


@st.composite
def window_geometries(draw, max_kernel=4, max_stride=3, max_padding=2, batch=(0, 3), pooling=False):
    """``(x shape, (kh, kw), (sh, sw), (ph, pw))`` with at least one window. ``pooling``: padding at
    most half the kernel (else some windows would hold only padding), as pooling requires."""
    kh, kw = draw(st.integers(1, max_kernel)), draw(st.integers(1, max_kernel))
    sh, sw = draw(st.integers(1, max_stride)), draw(st.integers(1, max_stride))
    ph = draw(st.integers(0, kh // 2 if pooling else max_padding))
    pw = draw(st.integers(0, kw // 2 if pooling else max_padding))
    h = draw(st.integers(max(1, kh - 2 * ph), kh - 2 * ph + 6))
    w = draw(st.integers(max(1, kw - 2 * pw), kw - 2 * pw + 6))
    shape = (draw(st.integers(*batch)), draw(st.integers(1, 3)), h, w)
    return shape, (kh, kw), (sh, sw), (ph, pw)


@st.composite
def strided_arrays(draw, max_dims=3):
    """A float64 array in a random memory order: permuted axes, steps and reversals."""
    shape = draw(array_shapes(min_dims=1, max_dims=max_dims, min_side=1, max_side=3))
    steps = [draw(st.sampled_from([1, 2, -1, -2])) for _ in shape]
    rng = np.random.default_rng(draw(SEEDS))
    base = rng.uniform(1.0, 2.0, [n * abs(s) for n, s in zip(shape, steps)])
    view = base[tuple(slice(None, None, s) for s in steps)]
    dims = draw(st.permutations(range(len(shape))))
    return view.transpose(dims)
