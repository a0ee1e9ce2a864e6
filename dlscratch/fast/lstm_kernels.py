"""An LSTM step's point-wise half on the GPU: one fused CUDA kernel forward, one backward (CuPy only).

The plain path (``lstm_pointwise.py``) makes a dozen passes over memory per step, each a launch; these kernels
make one, as Chainer's ``lstm`` does. Each thread owns one ``(sample, unit)``: it reads the unit's four gate
pre-activations (``(N, 4H)`` as four strided ``(N, H)`` views, PyTorch's order i, f, g, o) and the previous cell,
and writes the activated gates back in place, the new cell, its ``tanh`` and the hidden state. Peepholes ``(H,)``
broadcast over the batch. One template makes three forwards: the point-wise half alone, a cell's step and a
layer's loop step, the last two adding the recurrent product and the biases first. A kernel's outputs are
references to the array elements, so the body reads a gate's pre-activation before overwriting it.
"""

import numpy

from .. import backend

_PREAMBLE = """
template <typename T> __device__ T lstm_sigmoid(T x) {
    const T half = 0.5;
    return tanh(x * half) * half + half;  // the logistic function; cannot overflow
}
"""

# ``i`` and ``n`` are CuPy's own names in a kernel body (the element index and count). The forward is one
# template: the pre-activation of each gate differs between the cell (peepholes) and a layer's loop (below).
_FORWARD_TEMPLATE = """
const T a_i = lstm_sigmoid({i});
const T a_f = lstm_sigmoid({f});
const T a_g = tanh({g});
c = a_f * c_prev + a_i * a_g;
const T a_o = lstm_sigmoid({o});
tanh_c = tanh(c);
h = a_o * tanh_c;
z_i = a_i;
z_f = a_f;
z_g = a_g;
z_o = a_o;
"""
_FORWARD_BODY = _FORWARD_TEMPLATE.format(i="z_i + p_i * c_prev", f="z_f + p_f * c_prev", g="z_g", o="z_o + p_o * c")

# The backward template: ``{gh}`` is the gradient of h, ``{peep_c}`` and ``{peep_prev}`` the peephole terms.
_BACKWARD_TEMPLATE = """
{gh}
const T d_o = g_h * tanh_c * a_o * (1 - a_o);
const T dc = gc + g_h * a_o * (1 - tanh_c * tanh_c){peep_c};
const T d_i = dc * a_g * a_i * (1 - a_i);
const T d_f = dc * c_prev * a_f * (1 - a_f);
gz_i = d_i;
gz_f = d_f;
gz_g = dc * a_i * (1 - a_g * a_g);
gz_o = d_o;
gc_prev = dc * a_f{peep_prev};
"""
_BACKWARD_BODY = _BACKWARD_TEMPLATE.format(gh="const T g_h = gh;", peep_c=" + d_o * p_o",
                                           peep_prev=" + d_i * p_i + d_f * p_f")

# A layer's time loop (``lstm_layer.py``) has no peepholes, and adds inputs inside the kernels that the plain
# path adds in passes of their own: the biases ``b = b_ih + b_hh`` and the step's recurrent product
# ``r = h_prev @ W_hh.T`` to the input projection ``z`` (in the reference's order, ``(z + b) + r``), and the
# output's gradient ``gy`` to the state's ``gh``.
_FORWARD_RECURRENT_BODY = _FORWARD_TEMPLATE.format(
    **{gate: f"(z_{gate} + (bi_{gate} + bh_{gate})) + r_{gate}" for gate in "ifgo"})
_BACKWARD_RECURRENT_BODY = _BACKWARD_TEMPLATE.format(gh="const T g_h = gh + gy;", peep_c="", peep_prev="")

# A cell's step (``fast/lstm.py``) adds the recurrent product ``r = h @ W_hh.T`` and the biases to ``z = x @ W_ih.T``
# in the kernel too, in the reference cell's order, ``((z + r) + b_ih) + b_hh``, then the peepholes.
_FORWARD_CELL_BODY = _FORWARD_TEMPLATE.format(
    **{gate: f"((z_{gate} + r_{gate}) + bi_{gate}) + bh_{gate}" + peephole
       for gate, peephole in zip("ifgo", (" + p_i * c_prev", " + p_f * c_prev", "", " + p_o * c"))})


def _gates(z):
    """``(N, 4H)`` as four ``(N, H)`` views: i, f, g, o (a bias ``(4H,)`` as four ``(H,)``; the number 0 as four)."""
    if not hasattr(z, "shape"):
        return [z] * 4
    H = z.shape[-1] // 4
    return [z[..., k * H:(k + 1) * H] for k in range(4)]


_zero_peepholes = {}  # (array type, H, dtype) -> zeros, made once: a fresh one per step would be a memset


def _peepholes(peephole, like):
    if peephole is not None:
        return peephole
    key = (type(like), like.shape[1], like.dtype)
    if key not in _zero_peepholes:
        _zero_peepholes[key] = backend.get_array_module(like).zeros(like.shape[1], dtype=like.dtype)
    zero = _zero_peepholes[key]
    return zero, zero, zero


def forward_kernel(z, c_prev, peephole, h, c, tanh_c):
    """Fused forward: ``z: (N, 4H)`` pre-activations become the gates in place; writes ``h, c, tanh_c: (N, H)``."""
    kernel = backend.elementwise_kernel(
        "T c_prev, T p_i, T p_f, T p_o",
        "T z_i, T z_f, T z_g, T z_o, T c, T h, T tanh_c",
        _FORWARD_BODY, "dlscratch_lstm_forward", preamble=_PREAMBLE,
    )
    kernel(c_prev, *_peepholes(peephole, c_prev), *_gates(z), c, h, tanh_c)


def forward_cell_kernel(z, r, b_ih, b_hh, c_prev, peephole, h, c, tanh_c):
    """A cell's step: ``((z + r) + b_ih) + b_hh`` (``z, r: (N, 4H)``, the biases ``(4H,)`` or the number 0; ``z``
    becomes the activated gates), peepholes as ``forward_kernel``'s -> ``h, c, tanh_c: (N, H)``."""
    kernel = backend.elementwise_kernel(
        "T r_i, T r_f, T r_g, T r_o, T bi_i, T bi_f, T bi_g, T bi_o, T bh_i, T bh_f, T bh_g, T bh_o, T c_prev, "
        "T p_i, T p_f, T p_o",
        "T z_i, T z_f, T z_g, T z_o, T c, T h, T tanh_c",
        _FORWARD_CELL_BODY, "dlscratch_lstm_cell_forward", preamble=_PREAMBLE, twin=_forward_cell_twin,
    )
    kernel(*_gates(r), *_gates(b_ih), *_gates(b_hh), c_prev, *_peepholes(peephole, c_prev), *_gates(z), c, h, tanh_c)


def backward_kernel(gates, c_prev, tanh_c, gh, gc, peephole, gz, gc_prev):
    """Fused backward: writes ``gz: (N, 4H)`` and ``gc_prev: (N, H)`` from the saved gates and cells."""
    kernel = backend.elementwise_kernel(
        "T a_i, T a_f, T a_g, T a_o, T c_prev, T tanh_c, T gh, T gc, T p_i, T p_f, T p_o",
        "T gz_i, T gz_f, T gz_g, T gz_o, T gc_prev",
        _BACKWARD_BODY, "dlscratch_lstm_backward", preamble=_PREAMBLE,
    )
    kernel(*_gates(gates), c_prev, tanh_c, gh, gc, *_peepholes(peephole, c_prev), *_gates(gz), gc_prev)


def forward_recurrent_kernel(z, b_ih, b_hh, r, c_prev, h, c, tanh_c):
    """A layer's step: ``(z + (b_ih + b_hh)) + r`` (``(N, 4H)``, the biases ``(4H,)`` or the number 0; ``z``
    becomes the activated gates) -> ``h, c, tanh_c: (N, H)``."""
    kernel = backend.elementwise_kernel(
        "T bi_i, T bi_f, T bi_g, T bi_o, T bh_i, T bh_f, T bh_g, T bh_o, T r_i, T r_f, T r_g, T r_o, T c_prev",
        "T z_i, T z_f, T z_g, T z_o, T c, T h, T tanh_c",
        _FORWARD_RECURRENT_BODY, "dlscratch_lstm_layer_forward", preamble=_PREAMBLE,
    )
    kernel(*_gates(b_ih), *_gates(b_hh), *_gates(r), c_prev, *_gates(z), c, h, tanh_c)


def backward_recurrent_kernel(gates, c_prev, tanh_c, gh, gy, gc, gz, gc_prev):
    """A layer's step backward: ``gh + gy`` is the gradient of ``h`` (``gh``, ``gy`` and ``gc`` may each be the
    number 0); writes ``gz: (N, 4H)`` and ``gc_prev: (N, H)``, which may be ``gc`` itself (each thread reads its
    element first)."""
    kernel = backend.elementwise_kernel(
        "T a_i, T a_f, T a_g, T a_o, T c_prev, T tanh_c, T gh, T gy, T gc",
        "T gz_i, T gz_f, T gz_g, T gz_o, T gc_prev",
        _BACKWARD_RECURRENT_BODY, "dlscratch_lstm_layer_backward", preamble=_PREAMBLE,
    )
    kernel(*_gates(gates), c_prev, tanh_c, gh, gy, gc, *_gates(gz), gc_prev)


# The NumPy twin of the cell's kernel, the same arithmetic in the same order (bench/strict_cupy/kernels.py checks it).
def _tanh(x):
    """``tanh`` of a ``T`` as the stand-in runs the C's ``tanh``: in float for float, else in double (so that a
    float16 result rounds as the C's does), before the result is stored as a ``T``."""
    return numpy.tanh(x if x.dtype == numpy.float32 else x.astype(numpy.float64))


def _sigmoid(x):
    return (_tanh(x * 0.5) * 0.5 + 0.5).astype(x.dtype)


def _forward_cell_twin(*args):
    r, b_ih, b_hh, z = args[0:4], args[4:8], args[8:12], args[16:20]
    c_prev, p_i, p_f, p_o = args[12:16]
    c, h, tanh_c = args[20:]
    z_i, z_f, z_g, z_o = (((zk + rk) + bk) + ck for zk, rk, bk, ck in zip(z, r, b_ih, b_hh))
    a_i, a_f, a_g = _sigmoid(z_i + p_i * c_prev), _sigmoid(z_f + p_f * c_prev), _tanh(z_g).astype(z_g.dtype)
    c[...] = a_f * c_prev + a_i * a_g
    a_o = _sigmoid(z_o + p_o * c)
    tanh_c[...] = _tanh(c)
    h[...] = a_o * tanh_c
    for gate, activated in zip(z, (a_i, a_f, a_g, a_o)):
        gate[...] = activated
