"""Layer: a leaf keeps a new gradient array as its ``.grad``, without a copy.

The core adds every gradient into ``.grad`` as a new array. The library's ``Tensor.accumulate_grad``
copies a leaf's first gradient instead, so that ``.grad`` never shares memory with an array something
else holds (``Add`` hands the same array to both its inputs, and an in-place write into one ``.grad``,
such as ``clip_grad_norm_``, must not change another). A function whose backward always returns new
arrays that nothing else keeps (the GEMM results of matmul, linear, conv2d and the LSTM) says so with
``returns_unshared_grads = True``, and its leaves then keep those arrays as they are, as PyTorch's AccumulateGrad
does when it holds the only reference: a copy would be one more pass over every weight gradient at every
step, a large share of a small model's step. Attached at the core's ``Function.run_backward``.
"""


def hand_to_leaves(fn, gxs):
    """Give each leaf input its gradient from ``gxs`` without a copy where nothing else holds it, and
    return ``gxs`` with those gradients taken out (None), so that the core's walk skips them."""
    taken = None
    for i, (x, gx) in enumerate(zip(fn.inputs, gxs)):
        if gx is None or x.creator is not None or not x._requires_grad:
            continue
        if sum(g is gx for g in gxs) == 1:  # not also another input's gradient
            x.accumulate_grad(gx, copy=False)
            taken = list(gxs) if taken is None else taken
            taken[i] = None
    return gxs if taken is None else taken
