"""The point-wise half of an LSTM step: gate non-linearities and the cell update, forward and backward.

The matrix products of a step give the gates' pre-activations ``z: (N, 4H)`` in PyTorch's order
input, forget, cell (g), output. Everything after them is element by element:

    i = σ(z_i + p_i * c_prev)      f = σ(z_f + p_f * c_prev)      g = tanh(z_g)
    c = f * c_prev + i * g
    o = σ(z_o + p_o * c)           h = o * tanh(c)

The peephole weights ``p_i, p_f, p_o: (H,)`` are optional (Gers and Schmidhuber's peepholes, the
MATLAB Answers model); without them these are PyTorch's ``LSTMCell`` equations. σ is written as
``0.5 * tanh(0.5 x) + 0.5``, the same function, which cannot overflow for any ``x``.

Here is the plain NumPy (or CuPy) path: a handful of whole-array operations, written into
preallocated buffers where the caller gives them. On the GPU, the fast path (``fast/lstm.py``)
runs each direction as one fused CUDA kernel that computes the same numbers in one pass over memory.
"""

from .. import backend
from ..engine.switch import switched
from .sums import sum_over


def _sigmoid_(a, xp):
    """σ(a) in place, for a float array ``a``."""
    a *= 0.5
    xp.tanh(a, out=a)
    a *= 0.5
    a += 0.5
    return a


@switched
def lstm_pointwise_forward(z, c_prev, peephole=None, h_out=None, c_out=None, tanh_c_out=None, fused=None):
    """Apply the gate non-linearities and the cell update.

    ``z: (N, 4H)`` pre-activations, overwritten with the activated gates ``[i, f, g, o]``;
    ``c_prev: (N, H)``; ``peephole``: ``(p_i, p_f, p_o)``, each ``(H,)``, or None. Returns
    ``(h, c, tanh_c)``, each ``(N, H)``, written into ``h_out``, ``c_out`` and ``tanh_c_out`` when given.
    ``z``, ``c`` and ``tanh_c`` are what ``lstm_pointwise_backward`` needs. ``fused`` picks the fast
    path's CUDA kernel (there: default on the GPU); the reference path has the plain path only.
    """
    no_kernel(fused)
    xp = backend.get_array_module(z)
    H = c_prev.shape[1]
    h, c, tanh_c = outputs_like(c_prev, h_out, c_out, tanh_c_out)
    i, f, g, o = (z[:, k * H:(k + 1) * H] for k in range(4))
    if peephole is not None:
        i += peephole[0] * c_prev
        f += peephole[1] * c_prev
        _sigmoid_(z[:, :2 * H], xp)
    else:
        _sigmoid_(z[:, :2 * H], xp)
        _sigmoid_(o, xp)
    xp.tanh(g, out=g)
    xp.multiply(f, c_prev, out=c)
    c += i * g
    if peephole is not None:
        o += peephole[2] * c
        _sigmoid_(o, xp)
    xp.tanh(c, out=tanh_c)
    xp.multiply(o, tanh_c, out=h)
    return h, c, tanh_c


@switched
def lstm_pointwise_backward(gates, c_prev, c, tanh_c, gh, gc, peephole=None, gz_out=None, fused=None):
    """Gradients through the point-wise half of a step.

    ``gates: (N, 4H)`` the activated ``[i, f, g, o]``; ``c_prev, c, tanh_c: (N, H)`` from the forward;
    ``gh, gc: (N, H)`` the gradients of ``h`` and ``c`` (either may be None: no gradient).
    Returns ``(gz, gc_prev, gpeephole)``: ``gz: (N, 4H)`` for the pre-activations (written into
    ``gz_out`` when given), ``gc_prev: (N, H)``, and ``(gp_i, gp_f, gp_o)`` summed over the batch
    (None without peepholes). ``fused`` as for the forward.
    """
    no_kernel(fused)
    xp = backend.get_array_module(gates)
    gh, gc, gz, gc_prev = backward_buffers(gates, c, gh, gc, gz_out)
    _backward_plain(gates, c_prev, tanh_c, gh, gc, peephole, gz, gc_prev, xp)
    return gz, gc_prev, peephole_gradients(gz, c_prev, c, peephole)


def no_kernel(fused):
    if fused:
        raise ValueError(
            "lstm: fused=True picks the fast path's CUDA kernel (dlscratch/fast/lstm.py); the reference path "
            "runs the plain path: leave fused=None, or run outside dlscratch.reference()"
        )


def outputs_like(c_prev, *outs):
    """The given output buffers, with new arrays like ``c_prev: (N, H)`` for those that are None."""
    xp = backend.get_array_module(c_prev)
    return tuple(xp.empty_like(c_prev) if out is None else out for out in outs)


def backward_buffers(gates, c, gh, gc, gz_out):
    """``gh`` and ``gc`` (zeros for a missing one), and the arrays ``gz: (N, 4H)`` and ``gc_prev: (N, H)``."""
    xp = backend.get_array_module(gates)
    gh = xp.zeros_like(c) if gh is None else gh
    gc = xp.zeros_like(c) if gc is None else gc
    return gh, gc, xp.empty_like(gates) if gz_out is None else gz_out, xp.empty_like(c)


def peephole_gradients(gz, c_prev, c, peephole):
    """``(gp_i, gp_f, gp_o)``, each summed over the batch; None without peepholes."""
    if peephole is None:
        return None
    H = c.shape[1]
    return sum_over(gz[:, :H] * c_prev, 0), sum_over(gz[:, H:2 * H] * c_prev, 0), sum_over(gz[:, 3 * H:] * c, 0)


def _backward_plain(gates, c_prev, tanh_c, gh, gc, peephole, gz, gc_prev, xp):
    H = c_prev.shape[1]
    i, f, g, o = (gates[:, k * H:(k + 1) * H] for k in range(4))
    gz_i, gz_f, gz_g, gz_o = (gz[:, k * H:(k + 1) * H] for k in range(4))
    # first the gradient of each gate's activation, written into gz ...
    xp.multiply(gh, tanh_c, out=gz_o)  # h = o * tanh(c)
    dc = 1 - tanh_c * tanh_c  # then c, through h and from the next step
    dc *= o
    dc *= gh
    dc += gc
    if peephole is not None:  # o also saw c through its peephole (needs o's pre-activation gradient)
        dc += gz_o * (o * (1 - o)) * peephole[2]
    xp.multiply(dc, g, out=gz_i)  # c = f * c_prev + i * g
    xp.multiply(dc, c_prev, out=gz_f)
    xp.multiply(dc, i, out=gz_g)
    # ... then times each activation's derivative: σ' = σ(1 - σ) for i, f, o and tanh' = 1 - g² for g
    derivative = 1 - gates
    derivative *= gates
    xp.multiply(g, g, out=derivative[:, 2 * H:3 * H])
    xp.subtract(1, derivative[:, 2 * H:3 * H], out=derivative[:, 2 * H:3 * H])
    gz *= derivative
    xp.multiply(dc, f, out=gc_prev)
    if peephole is not None:
        gc_prev += gz_i * peephole[0]
        gc_prev += gz_f * peephole[1]
