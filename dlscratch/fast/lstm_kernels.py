"""An LSTM step's point-wise half on the GPU: one fused CUDA kernel forward, one backward (CuPy only).

The plain path (``lstm_pointwise.py``) makes a dozen passes over memory per step, each a kernel
launch on a GPU; these kernels make one, as Chainer's ``lstm`` function does. Each thread owns one
``(sample, unit)`` element: it reads that unit's four gate pre-activations (the ``(N, 4H)`` matrix
is passed as four strided ``(N, H)`` views, PyTorch's gate order i, f, g, o) and the previous cell,
and writes the activated gates back in place, the new cell, ``tanh`` of it and the hidden state.
Peephole weights ``(H,)`` broadcast over the batch; without peepholes they are zeros.

Output parameters of an elementwise kernel are references to the array elements, so the body may
read a gate's pre-activation before it overwrites it with the activation.
"""

from .. import backend

_PREAMBLE = """
template <typename T> __device__ T lstm_sigmoid(T x) {
    const T half = 0.5;
    return tanh(x * half) * half + half;  // the logistic function; cannot overflow
}
"""

# ``i`` and ``n`` are CuPy's own names in a kernel body (the element index and count).
_FORWARD_BODY = """
const T a_i = lstm_sigmoid(z_i + p_i * c_prev);
const T a_f = lstm_sigmoid(z_f + p_f * c_prev);
const T a_g = tanh(z_g);
c = a_f * c_prev + a_i * a_g;
const T a_o = lstm_sigmoid(z_o + p_o * c);
tanh_c = tanh(c);
h = a_o * tanh_c;
z_i = a_i;
z_f = a_f;
z_g = a_g;
z_o = a_o;
"""

_BACKWARD_BODY = """
const T d_o = gh * tanh_c * a_o * (1 - a_o);
const T dc = gc + gh * a_o * (1 - tanh_c * tanh_c) + d_o * p_o;
const T d_i = dc * a_g * a_i * (1 - a_i);
const T d_f = dc * c_prev * a_f * (1 - a_f);
gz_i = d_i;
gz_f = d_f;
gz_g = dc * a_i * (1 - a_g * a_g);
gz_o = d_o;
gc_prev = dc * a_f + d_i * p_i + d_f * p_f;
"""


def _gates(z):
    """``(N, 4H)`` as four ``(N, H)`` views: i, f, g, o."""
    H = z.shape[1] // 4
    return [z[:, k * H:(k + 1) * H] for k in range(4)]


def _peepholes(peephole, like):
    if peephole is not None:
        return peephole
    zero = backend.get_array_module(like).zeros(like.shape[1], dtype=like.dtype)
    return zero, zero, zero


def forward_kernel(z, c_prev, peephole, h, c, tanh_c):
    """Fused forward: ``z: (N, 4H)`` pre-activations become the gates in place; writes ``h, c, tanh_c: (N, H)``."""
    kernel = backend.elementwise_kernel(
        "T c_prev, T p_i, T p_f, T p_o",
        "T z_i, T z_f, T z_g, T z_o, T c, T h, T tanh_c",
        _FORWARD_BODY, "dlscratch_lstm_forward", preamble=_PREAMBLE,
    )
    kernel(c_prev, *_peepholes(peephole, c_prev), *_gates(z), c, h, tanh_c)


def backward_kernel(gates, c_prev, tanh_c, gh, gc, peephole, gz, gc_prev):
    """Fused backward: writes ``gz: (N, 4H)`` and ``gc_prev: (N, H)`` from the saved gates and cells."""
    kernel = backend.elementwise_kernel(
        "T a_i, T a_f, T a_g, T a_o, T c_prev, T tanh_c, T gh, T gc, T p_i, T p_f, T p_o",
        "T gz_i, T gz_f, T gz_g, T gz_o, T gc_prev",
        _BACKWARD_BODY, "dlscratch_lstm_backward", preamble=_PREAMBLE,
    )
    kernel(*_gates(gates), c_prev, tanh_c, gh, gc, *_peepholes(peephole, c_prev), *_gates(gz), gc_prev)
