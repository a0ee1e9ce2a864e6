"""Draft of lesson 08's rungs: one LSTM layer (and a stack of layers), forward and backward, on raw arrays.

Shapes: x (T, N, I); W (4H, I), R (4H, H), b (4H,), gate order i, f, g, o (PyTorch's).
Every rung returns (y, cache) from forward and a dict of gradients from backward.
"""

import numpy as np

from dlscratch import backend
from dlscratch.fast.lstm import lstm_pointwise_backward, lstm_pointwise_forward


def xp_of(a):
    return backend.get_array_module(a)


def sigmoid(a):
    return 0.5 * xp_of(a).tanh(0.5 * a) + 0.5


# ---------- the point-wise half, plain: one new array per operation ----------

def pointwise_plain(zi, zf, zg, zo, c_prev):
    xp = xp_of(zi)
    i, f, g, o = sigmoid(zi), sigmoid(zf), xp.tanh(zg), sigmoid(zo)
    c = f * c_prev + i * g
    tanh_c = xp.tanh(c)
    return (i, f, g, o), c, tanh_c, o * tanh_c


def pointwise_plain_backward(gates, c_prev, tanh_c, gh, gc):
    i, f, g, o = gates
    gc = gc + gh * o * (1 - tanh_c * tanh_c)
    dzi = gc * g * i * (1 - i)
    dzf = gc * c_prev * f * (1 - f)
    dzg = gc * i * (1 - g * g)
    dzo = gh * tanh_c * o * (1 - o)
    return (dzi, dzf, dzg, dzo), gc * f


# ---------- rung 1: four gates, eight products per step ----------

def split_gates(W, R, b):
    H = R.shape[1]
    return [(W[k * H:(k + 1) * H].copy(), R[k * H:(k + 1) * H].copy(), b[k * H:(k + 1) * H].copy()) for k in range(4)]


def rung1_forward(x, W, R, b):
    xp = xp_of(x)
    T, N, _ = x.shape
    H = R.shape[1]
    gates_w = split_gates(W, R, b)
    h, c = xp.zeros((N, H), x.dtype), xp.zeros((N, H), x.dtype)
    ys, steps = [], []
    for t in range(T):
        z = [x[t] @ Wk.T + h @ Rk.T + bk for Wk, Rk, bk in gates_w]
        gates, c_new, tanh_c, h_new = pointwise_plain(*z, c)
        steps.append((gates, c, tanh_c, h))
        h, c = h_new, c_new
        ys.append(h)
    return xp.stack(ys), (x, gates_w, steps)


def rung1_backward(gy, cache):
    x, gates_w, steps = cache
    xp = xp_of(x)
    gW = [xp.zeros_like(Wk) for Wk, _, _ in gates_w]
    gR = [xp.zeros_like(Rk) for _, Rk, _ in gates_w]
    gb = [xp.zeros_like(bk) for _, _, bk in gates_w]
    gx = xp.zeros_like(x)
    gh = xp.zeros_like(gy[0])
    gc = xp.zeros_like(gy[0])
    for t in reversed(range(len(steps))):
        gates, c_prev, tanh_c, h_prev = steps[t]
        dz, gc = pointwise_plain_backward(gates, c_prev, tanh_c, gh + gy[t], gc)
        gh = xp.zeros_like(gh)
        for k, (Wk, Rk, _) in enumerate(gates_w):
            gW[k] += dz[k].T @ x[t]
            gR[k] += dz[k].T @ h_prev
            gb[k] += dz[k].sum(axis=0)
            gx[t] += dz[k] @ Wk
            gh += dz[k] @ Rk
    return {"x": gx, "W": xp.concatenate(gW), "R": xp.concatenate(gR), "b": xp.concatenate(gb)}


# ---------- rung 2: the four gates in one product each for x and h: two per step ----------

def rung2_forward(x, W, R, b):
    xp = xp_of(x)
    T, N, _ = x.shape
    H = R.shape[1]
    h, c = xp.zeros((N, H), x.dtype), xp.zeros((N, H), x.dtype)
    ys, steps = [], []
    for t in range(T):
        z = x[t] @ W.T + h @ R.T + b
        gates, c_new, tanh_c, h_new = pointwise_plain(*xp.split(z, 4, axis=1), c)
        steps.append((gates, c, tanh_c, h))
        h, c = h_new, c_new
        ys.append(h)
    return xp.stack(ys), (x, W, R, steps)


def rung2_backward(gy, cache):
    x, W, R, steps = cache
    xp = xp_of(x)
    gW, gR, gb, gx = xp.zeros_like(W), xp.zeros_like(R), xp.zeros(W.shape[0], W.dtype), xp.zeros_like(x)
    gh = xp.zeros_like(gy[0])
    gc = xp.zeros_like(gy[0])
    for t in reversed(range(len(steps))):
        gates, c_prev, tanh_c, h_prev = steps[t]
        dz, gc = pointwise_plain_backward(gates, c_prev, tanh_c, gh + gy[t], gc)
        dz = xp.concatenate(dz, axis=1)  # (N, 4H)
        gW += dz.T @ x[t]
        gR += dz.T @ h_prev
        gb += dz.sum(axis=0)
        gx[t] = dz @ W
        gh = dz @ R
    return {"x": gx, "W": gW, "R": gR, "b": gb}


# ---------- rung 3: the input products of all steps in one GEMM (forward), and back (backward) ----------

def rung3_forward(x, W, R, b):
    xp = xp_of(x)
    T, N, I = x.shape
    H = R.shape[1]
    zx = (x.reshape(T * N, I) @ W.T + b).reshape(T, N, 4 * H)  # one GEMM for every step
    h, c = xp.zeros((N, H), x.dtype), xp.zeros((N, H), x.dtype)
    ys, steps = [], []
    for t in range(T):
        z = zx[t] + h @ R.T
        gates, c_new, tanh_c, h_new = pointwise_plain(*xp.split(z, 4, axis=1), c)
        steps.append((gates, c, tanh_c, h))
        h, c = h_new, c_new
        ys.append(h)
    return xp.stack(ys), (x, W, R, steps)


def rung3_backward(gy, cache):
    x, W, R, steps = cache
    xp = xp_of(x)
    T, N, I = x.shape
    gR = xp.zeros_like(R)
    dz_all = xp.empty((T, N, W.shape[0]), x.dtype)
    gh = xp.zeros_like(gy[0])
    gc = xp.zeros_like(gy[0])
    for t in reversed(range(T)):
        gates, c_prev, tanh_c, h_prev = steps[t]
        dz, gc = pointwise_plain_backward(gates, c_prev, tanh_c, gh + gy[t], gc)
        dz_all[t] = xp.concatenate(dz, axis=1)
        gR += dz_all[t].T @ h_prev  # still one small product per step
        gh = dz_all[t] @ R
    dz2 = dz_all.reshape(T * N, -1)
    return {"x": (dz2 @ W).reshape(x.shape), "W": dz2.T @ x.reshape(T * N, I), "R": gR, "b": dz2.sum(axis=0)}


# ---------- rung 4: the recurrent weight's gradient of all steps in one GEMM ----------

def rung4_backward(gy, cache):
    x, W, R, steps = cache
    xp = xp_of(x)
    T, N, I = x.shape
    dz_all = xp.empty((T, N, W.shape[0]), x.dtype)
    gh = xp.zeros_like(gy[0])
    gc = xp.zeros_like(gy[0])
    for t in reversed(range(T)):
        gates, c_prev, tanh_c, h_prev = steps[t]
        dz, gc = pointwise_plain_backward(gates, c_prev, tanh_c, gh + gy[t], gc)
        dz_all[t] = xp.concatenate(dz, axis=1)
        gh = dz_all[t] @ R
    h_prev_all = xp.stack([s[3] for s in steps]).reshape(T * N, -1)
    dz2 = dz_all.reshape(T * N, -1)
    return {"x": (dz2 @ W).reshape(x.shape), "W": dz2.T @ x.reshape(T * N, I), "R": dz2.T @ h_prev_all,
            "b": dz2.sum(axis=0)}


# ---------- rung 5: the point-wise half fused (GPU: one kernel each way; CPU: in place, no temporaries) ----------

def rung5_forward(x, W, R, b, R_t=None):
    xp = xp_of(x)
    T, N, I = x.shape
    H = R.shape[1]
    z_all = (x.reshape(T * N, I) @ W.T + b).reshape(T, N, 4 * H)  # becomes the activated gates, in place
    h_all = xp.empty((T + 1, N, H), x.dtype)  # h_all[0] = h_0, h_all[t + 1] = h_t
    c_all = xp.empty((T + 1, N, H), x.dtype)
    tanh_c_all = xp.empty((T, N, H), x.dtype)
    h_all[0] = 0
    c_all[0] = 0
    for t in range(T):
        z = z_all[t]
        if R_t is None:
            z += h_all[t] @ R.T
        else:
            z += h_all[t] @ R_t  # rung 6: R_t = R.T, stored transposed once
        lstm_pointwise_forward(z, c_all[t], h_out=h_all[t + 1], c_out=c_all[t + 1], tanh_c_out=tanh_c_all[t])
    return h_all[1:], (x, W, R, z_all, h_all, c_all, tanh_c_all)


def rung5_backward(gy, cache):
    x, W, R, gates_all, h_all, c_all, tanh_c_all = cache
    xp = xp_of(x)
    T, N, I = x.shape
    dz_all = xp.empty_like(gates_all)
    gh = xp.zeros_like(gy[0])
    gc = xp.zeros_like(gy[0])
    for t in reversed(range(T)):
        gh += gy[t]
        _, gc, _ = lstm_pointwise_backward(gates_all[t], c_all[t], c_all[t + 1], tanh_c_all[t], gh, gc,
                                           gz_out=dz_all[t])
        gh = dz_all[t] @ R
    dz2 = dz_all.reshape(T * N, -1)
    return {"x": (dz2 @ W).reshape(x.shape), "W": dz2.T @ x.reshape(T * N, I),
            "R": dz2.T @ h_all[:-1].reshape(T * N, -1), "b": dz2.sum(axis=0)}


# ---------- rung 6: weights stored transposed once, so every step's product reads them in order ----------

def rung6_forward(x, W, R, b):
    xp = xp_of(x)
    return rung5_forward(x, W, R, b, R_t=xp.ascontiguousarray(R.T))


# ---------- rung 7: a stack of layers, layer by layer against a wavefront ----------

def stack_forward_layerwise(x, layers):
    """layers: [(W, R, b), ...]. Each layer runs all its steps (input GEMM hoisted), then the next."""
    caches = []
    for W, R, b in layers:
        x, cache = rung6_forward(x, W, R, b)
        caches.append(cache)
    return x, caches


def stack_backward(gy, caches):
    grads = []
    for cache in reversed(caches):
        g = rung5_backward(gy, cache)
        grads.append(g)
        gy = g["x"]
    return grads[::-1]


class Wavefront:
    """Buffers of a stack of layers, and one step of one layer: layer l's step t needs only layer l-1's
    step t and its own step t-1, so step t of layer l can run beside step t+1 of layer l-1."""

    def __init__(self, x, layers):
        xp = xp_of(x)
        T, N, _ = x.shape
        self.x, self.layers, self.T = x, layers, T
        self.R_t = [xp.ascontiguousarray(R.T) for _, R, _ in layers]
        self.W_t = [xp.ascontiguousarray(W.T) for W, _, _ in layers]
        self.buffers = []
        for W, R, b in layers:
            H = R.shape[1]
            h_all, c_all = xp.zeros((T + 1, N, H), x.dtype), xp.zeros((T + 1, N, H), x.dtype)
            self.buffers.append((xp.empty((T, N, 4 * H), x.dtype), h_all, c_all, xp.empty((T, N, H), x.dtype)))

    def layer_input(self, layer):
        return self.x if layer == 0 else self.buffers[layer - 1][1][1:]

    def step(self, layer, t):
        z_all, h_all, c_all, tanh_c_all = self.buffers[layer]
        b = self.layers[layer][2]
        z = z_all[t]
        xp_of(z).matmul(self.layer_input(layer)[t], self.W_t[layer], out=z)  # the input product, per step now
        z += b
        z += h_all[t] @ self.R_t[layer]
        lstm_pointwise_forward(z, c_all[t], h_out=h_all[t + 1], c_out=c_all[t + 1], tanh_c_out=tanh_c_all[t])

    def result(self):
        caches = [(self.layer_input(l), W, R, *self.buffers[l]) for l, (W, R, _) in enumerate(self.layers)]
        return self.buffers[-1][1][1:], caches


def stack_forward_wavefront(x, layers):
    """The diagonal order, one step after another: the same work, ready to be overlapped."""
    wave = Wavefront(x, layers)
    L = len(layers)
    for s in range(wave.T + L - 1):
        for layer in range(L):
            t = s - layer
            if 0 <= t < wave.T:
                wave.step(layer, t)
    return wave.result()


def stack_forward_wavefront_threads(x, layers):
    """One Python thread per layer; NumPy lets go of Python's lock in its products and loops, so two
    layers' steps can run at once where there are cores to run them."""
    import threading

    wave = Wavefront(x, layers)
    done = [[threading.Event() for _ in range(wave.T)] for _ in layers]

    def run(layer):
        for t in range(wave.T):
            if layer > 0:
                done[layer - 1][t].wait()
            wave.step(layer, t)
            done[layer][t].set()

    threads = [threading.Thread(target=run, args=(layer,)) for layer in range(len(layers))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return wave.result()


def stack_forward_wavefront_streams(x, layers):
    """On the GPU: one CUDA stream per layer; an event after each step lets the next layer's stream wait
    for exactly that step, so the GPU may run layer l's step t beside layer l-1's step t+1."""
    import cupy

    wave = Wavefront(x, layers)
    L = len(layers)
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(L)]
    events = [[None] * wave.T for _ in range(L)]
    for s in range(wave.T + L - 1):
        for layer in range(L):
            t = s - layer
            if 0 <= t < wave.T:
                with streams[layer]:
                    if layer > 0:
                        streams[layer].wait_event(events[layer - 1][t])
                    wave.step(layer, t)
                    events[layer][t] = streams[layer].record()
    for stream in streams:
        stream.synchronize()
    return wave.result()
