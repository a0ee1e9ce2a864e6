"""DeZero 0.0.13's side of the cnn, conv, pool and lstm suites: the from-scratch reference, timed in the same run.

DeZero is never a dependency: the suites call these only when ``timing.dezero_available()``. Each
builder takes the suite's own seeded NumPy data and returns the callable to time; DeZero runs on the
CPU with NumPy arrays whatever dlscratch's device (the PyTorch rows follow dlscratch onto the GPU), so
a GPU run shows its rows but judges no target against them.
"""

import importlib.util

import numpy


def import_dezero():
    """The ``dezero`` package, imported (ImportError when it is not installed; else whatever its import raises)."""
    if importlib.util.find_spec("dezero") is None:  # checked first: NumPy is left alone without DeZero
        raise ImportError("DeZero is not installed (pip install dezero==0.0.13)")
    # DeZero 0.0.13's transforms.py uses ``np.int`` as a default argument, and NumPy 2 removed that alias
    # of the builtin ``int``: without it back, ``import dezero`` fails with an AttributeError.
    if not hasattr(numpy, "int"):
        numpy.int = int
    import dezero

    return dezero


def keras_cnn(dezero):
    """The Keras MNIST CNN as a ``dezero.Model``: (N, 1, 28, 28) images to (N, 10) logits."""
    F, L = dezero.functions, dezero.layers

    class KerasCNN(dezero.Model):
        def __init__(self):
            super().__init__()
            self.conv1 = L.Conv2d(32, 3, 1, 0, in_channels=1)
            self.conv2 = L.Conv2d(64, 3, 1, 0, in_channels=32)
            self.fc1 = L.Linear(128, in_size=9216)
            self.fc2 = L.Linear(10, in_size=128)

        def forward(self, x):
            x = F.relu(self.conv2(F.relu(self.conv1(x))))
            x = F.dropout(F.pooling(x, 2, 2), 0.25)
            x = F.dropout(F.relu(self.fc1(x.reshape(x.shape[0], -1))), 0.5)
            return self.fc2(x)

    return KerasCNN()


def keras_cnn_step(x, t, lr):
    """One SGD training step of the Keras CNN on images ``x`` (N, 1, 28, 28) and labels ``t`` (N,)."""
    dezero = import_dezero()
    model = keras_cnn(dezero)
    opt = dezero.optimizers.SGD(lr).setup(model)

    def step():
        loss = dezero.functions.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        opt.update()

    return step


def seeded_backward(variables, forward, seed):
    """A callable: clear the grads of ``variables``, run ``forward()``, backpropagate the array ``seed``."""
    dezero = import_dezero()
    # DeZero clears the output's grad after each backward; the seed Variable itself is never written to
    seed = dezero.Variable(seed)

    def run():
        for v in variables:
            v.cleargrad()
        y = forward()
        y.grad = seed
        y.backward()

    return run


def conv2d_variants(x, w, b, pad):
    """DeZero forward (no graph) and forward+backward of ``conv2d(x, w, b)``: x (N, C, H, W), w (O, C, k, k).

    The backward seeds an all-ones gradient of the output (N, O, Ho, Wo), like the dlscratch rows.
    """
    dezero = import_dezero()
    xv, wv, bv = (dezero.Variable(a) for a in (x, w, b))

    def conv():
        return dezero.functions.conv2d(xv, wv, bv, stride=1, pad=pad)

    def forward():
        with dezero.no_grad():
            return conv()

    seed = numpy.ones(forward().shape, dtype=x.dtype)
    return {"forward": forward, "forward+backward": seeded_backward((xv, wv, bv), conv, seed)}


def max_pool_forward_backward(x):
    """DeZero's 2x2 max pooling, stride 2, forward+backward on ``x`` (N, C, H, W) with an all-ones gradient."""
    dezero = import_dezero()
    xv = dezero.Variable(x)
    n, c, h, w = x.shape
    seed = numpy.ones((n, c, h // 2, w // 2), dtype=x.dtype)
    return seeded_backward((xv,), lambda: dezero.functions.pooling(xv, 2, 2), seed)


def lstm_variants(x, hidden_size):
    """DeZero's per-step ``layers.LSTM`` run over the sequence ``x`` (T, N, I) from a fresh state: forward
    (no graph), and forward+backward with the sum of the T outputs (N, hidden_size) as the loss."""
    dezero = import_dezero()
    F = dezero.functions
    model = dezero.layers.LSTM(hidden_size, in_size=x.shape[2])

    def outputs_sum():
        model.reset_state()
        total = F.sum(model(x[0]))
        for x_t in x[1:]:
            total = total + F.sum(model(x_t))
        return total

    def forward():
        with dezero.no_grad():
            return outputs_sum()

    def forward_backward():
        model.cleargrads()
        outputs_sum().backward()

    return {"forward": forward, "forward+backward": forward_backward}
