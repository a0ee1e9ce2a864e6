"""Known-wrong answers to the exercises: each check must reject every one (tools/prove_exercises.py runs them).

``WRONG["NN-M"]`` lists ``(mistake, bodies)``: ``bodies`` has one entry per ``### BEGIN SOLUTION`` region of the
exercise's solution cell, in order: the text that replaces that region (indented to match by the tool), or None
to keep the solution there. A plain string stands for a one-region cell.

A mistake named "calls the library" must be rejected by the check's ``dlscratch.checking.own_work``, not by
chance: the answer computes the right values through dlscratch instead of by itself.

``GPU_ONLY`` names the mistakes that are only wrong on a GPU (a NumPy array where the data's module was meant):
on NumPy they compute the right thing, so the proof expects them to fail only on CuPy or on the strict CuPy
stand-in (``DLSCRATCH_STRICT_GPU=1``), and to pass on NumPy.
"""

WRONG = {
    "00-1": [
        ("calls the library", "return dlscratch.Tensor(x).softmax(-1).data"),
        ("no max subtracted: exp overflows", "xp = backend.get_array_module(x)\ne = xp.exp(x)\n"
         "return e / e.sum(axis=1, keepdims=True)"),
        ("normalised over the wrong axis", "xp = backend.get_array_module(x)\ne = xp.exp(x - x.max(axis=1, "
         "keepdims=True))\nreturn e / e.sum(axis=0, keepdims=True)"),
        ("float64 result", "e = np.exp(backend.to_cpu(x).astype(np.float64) - backend.to_cpu(x).max(axis=1, "
         "keepdims=True))\nreturn backend.xp.asarray(e / e.sum(axis=1, keepdims=True))"),
    ],
    "00-2": [
        ("one FLOP per multiply-add", "*batch, m, k = a_shape\nreturn int(np.prod(batch)) * m * k * b_shape[-1] "
         "/ seconds / 1e9"),
        ("the batch forgotten", "return 2 * a_shape[-2] * a_shape[-1] * b_shape[-1] / seconds / 1e9"),
    ],
    "01-1": [
        ("not recorded in the graph", "return Node(np.tanh(a.data))"),
        ("recorded under another name", 'return Op("Tanh", np.tanh, a).output'),
    ],
    "01-2": [
        ("shared functions counted once per path", "counts = {}\nstack = [] if t.creator is None else [t.creator]\n"
         "while stack:\n    f = stack.pop()\n    counts[f.name] = counts.get(f.name, 0) + 1\n"
         "    stack.extend(x.creator for x in f.inputs if x.creator is not None)\nreturn counts"),
        ("recursion: fails on a deep graph", "counts, seen = {}, set()\n\ndef visit(f):\n"
         "    if f is None or f in seen:\n        return\n    seen.add(f)\n"
         "    counts[f.name] = counts.get(f.name, 0) + 1\n    for x in f.inputs:\n        visit(x.creator)\n\n"
         "visit(t.creator)\nreturn counts"),
    ],
    "02-1": [
        ("sign flipped", "return -gy * backend.get_array_module(self.x).cos(self.x)"),
        ("gy forgotten", "return backend.get_array_module(self.x).cos(self.x)"),
    ],
    "02-2": [
        ("log(1 + e) where log1p is needed", ["xp = backend.get_array_module(x)\nself.x = x\n"
                                              "return xp.maximum(x, 0) + xp.log(1 + xp.exp(-abs(x)))", None]),
        ("the overflowing form", ["xp = backend.get_array_module(x)\nself.x = x\nreturn xp.log1p(xp.exp(x))", None]),
        ("a sigmoid that overflows", [None, "return gy / (1 + backend.get_array_module(self.x).exp(-self.x))"]),
    ],
    "02-3": [
        ("calls the library", "return sum_to(g, shape)"),
        ("stretched axes dropped", "lead = g.ndim - len(shape)\nif lead:\n    g = g.sum(axis=tuple(range(lead)))\n"
         "stretched = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)\n"
         "return g.sum(axis=stretched) if stretched else g"),
        ("only the leading axes summed", "lead = g.ndim - len(shape)\nreturn g.sum(axis=tuple(range(lead))) if lead "
         "else g"),
    ],
    "03-1": [
        ("calls the library", "from dlscratch.training.fit import correct_count\n\n"
         "return float(correct_count(logits, labels)) / len(labels)"),
        ("a count, not a fraction", "return float((logits.argmax(axis=1) == labels).sum())"),
        ("not a Python float", "return (logits.argmax(axis=1) == labels).mean()"),
    ],
    "03-2": [
        ("no momentum", "new = []\nfor p, b in zip(params, velocities):\n    p.data -= lr * p.grad.data\n"
         "    new.append(p.grad.data.copy())\nreturn new"),
        ("the parameter's array replaced, not updated in place",
         "new = []\nfor p, b in zip(params, velocities):\n    g = p.grad.data\n"
         "    b = g.copy() if b is None else momentum * b + g\n    p.data = p.data - lr * b\n    new.append(b)\n"
         "return new"),
    ],
    "03-3": [
        ("not shuffled", "order = np.arange(n)\nstop = n - n % batch_size if drop_last else n\n"
         "return [order[i:i + batch_size] for i in range(0, stop, batch_size)]"),
        ("drop_last ignored", "order = rng.permutation(n)\n"
         "return [order[i:i + batch_size] for i in range(0, n, batch_size)]"),
    ],
    "04-1": [
        ("padding forgotten", "return (size - kernel) // stride + 1"),
        ("stride forgotten", "return size + 2 * padding - kernel + 1"),
    ],
    "04-2": [
        ("columns in kernel-major order", "N, C, H, W = x.shape\n"
         "x = xp.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))\n"
         "Ho, Wo = (H + 2 * padding - kh) // stride + 1, (W + 2 * padding - kw) // stride + 1\n"
         "cols = xp.empty((N, C, kh, kw, Ho, Wo), dtype=x.dtype)\nfor ky in range(kh):\n    for kx in range(kw):\n"
         "        cols[:, :, ky, kx] = x[:, :, ky:ky + stride * Ho:stride, kx:kx + stride * Wo:stride]\n"
         "return cols.transpose(0, 4, 5, 2, 3, 1).reshape(N * Ho * Wo, C * kh * kw)"),
        ("the buffer made with np", "N, C, H, W = x.shape\n"
         "x = xp.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))\n"
         "Ho, Wo = (H + 2 * padding - kh) // stride + 1, (W + 2 * padding - kw) // stride + 1\n"
         "cols = np.empty((N, C, kh, kw, Ho, Wo), dtype=x.dtype)\nfor ky in range(kh):\n    for kx in range(kw):\n"
         "        cols[:, :, ky, kx] = x[:, :, ky:ky + stride * Ho:stride, kx:kx + stride * Wo:stride]\n"
         "return cols.transpose(0, 4, 5, 1, 2, 3).reshape(N * Ho * Wo, C * kh * kw)"),
    ],
    "04-3": [
        ("calls the library", "return F.conv2d(dlscratch.tensor(x), dlscratch.tensor(w), dlscratch.tensor(b), "
         "stride, padding).data"),
        ("bias forgotten", "N, C, H, W = x.shape\nO, _, kh, kw = w.shape\n"
         "Ho, Wo = (H + 2 * padding - kh) // stride + 1, (W + 2 * padding - kw) // stride + 1\n"
         "out = my_im2col(x, kh, kw, stride, padding) @ w.reshape(O, -1).T\n"
         "return out.reshape(N, Ho, Wo, O).transpose(0, 3, 1, 2)"),
        ("reshaped without the transpose", "N, C, H, W = x.shape\nO, _, kh, kw = w.shape\n"
         "Ho, Wo = (H + 2 * padding - kh) // stride + 1, (W + 2 * padding - kw) // stride + 1\n"
         "out = my_im2col(x, kh, kw, stride, padding) @ w.reshape(O, -1).T + b\nreturn out.reshape(N, O, Ho, Wo)"),
    ],
    "04-4": [
        ("gy flattened in the wrong order", "O, _, kh, kw = w.shape\ngy_cols = gy.reshape(O, -1)\n"
         "dw = (gy_cols @ cols.T).reshape(w.shape)\ndb = gy_cols.sum(axis=1)\n"
         "dx = col2im_array(w.reshape(O, -1).T @ gy_cols, x_shape, (kh, kw), stride, padding)\nreturn dx, dw, db"),
        ("bias gradient over the wrong axis", "O, _, kh, kw = w.shape\n"
         "gy_cols = gy.transpose(1, 2, 3, 0).reshape(O, -1)\ndw = (gy_cols @ cols.T).reshape(w.shape)\n"
         "db = gy_cols.sum(axis=0)\n"
         "dx = col2im_array(w.reshape(O, -1).T @ gy_cols, x_shape, (kh, kw), stride, padding)\nreturn dx, dw, db"),
    ],
    "05-1": [
        ("calls the library", "return F.max_pool2d(dlscratch.tensor(x), 2).data"),
        ("average, not max", "return (x[:, :, 0::2, 0::2] + x[:, :, 0::2, 1::2] + x[:, :, 1::2, 0::2]"
         " + x[:, :, 1::2, 1::2]) / 4"),
        ("one corner of each window", "return x[:, :, 0::2, 0::2]"),
    ],
    "05-2": [
        ("calls the library", "x_t = dlscratch.tensor(x, requires_grad=True)\nF.max_pool2d(x_t, 2).backward(grad=gy)\n"
         "return x_t.grad.data"),
        ("the gradient sent to every position", "return gy.repeat(2, axis=2).repeat(2, axis=3)"),
        ("shared among the window", "return gy.repeat(2, axis=2).repeat(2, axis=3) / 4"),
    ],
    "05-3": [
        ("not divided by the window's size", "return gy.repeat(2, axis=2).repeat(2, axis=3)"),
        ("sent to one corner", "dx = gy.repeat(2, axis=2).repeat(2, axis=3) * 0\ndx[:, :, 0::2, 0::2] = gy\n"
         "return dx"),
    ],
    "06-1": [
        ("a convolution's bias forgotten", ["return out_channels * in_channels * kernel_size * kernel_size", None]),
        ("a linear layer's bias forgotten", [None, "return in_features * out_features"]),
    ],
    "06-2": [
        ("decays every epoch", [None, 'self.epoch += 1\nfor group in self.optimizer.param_groups:\n'
                                      '    group["lr"] *= self.gamma', None]),
        ("the first decay one epoch late", [None, "self.epoch += 1\nfor group, base_lr in zip(self.optimizer."
                                           'param_groups, self.base_lrs):\n    group["lr"] = base_lr * self.gamma '
                                           "** ((self.epoch - 1) // self.step_size)", None]),
    ],
    "06-3": [
        ("no padding", ["self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3)", None]),
        ("ReLU forgotten", [None, "return F.max_pool2d(self.conv(x), 2)"]),
    ],
    "07-1": [
        ("the output gate's peephole reads c_prev", "xp = backend.get_array_module(z)\nH = c_prev.shape[1]\n"
         "p_i, p_f, p_o = peephole if peephole is not None else (0, 0, 0)\n"
         "i = sigmoid(z[:, :H] + p_i * c_prev)\nf = sigmoid(z[:, H:2 * H] + p_f * c_prev)\n"
         "g = xp.tanh(z[:, 2 * H:3 * H])\nc = f * c_prev + i * g\no = sigmoid(z[:, 3 * H:] + p_o * c_prev)\n"
         "return o * xp.tanh(c), c"),
        ("gates read in the order i, f, o, g", "xp = backend.get_array_module(z)\nH = c_prev.shape[1]\n"
         "p_i, p_f, p_o = peephole if peephole is not None else (0, 0, 0)\n"
         "i = sigmoid(z[:, :H] + p_i * c_prev)\nf = sigmoid(z[:, H:2 * H] + p_f * c_prev)\n"
         "g = xp.tanh(z[:, 3 * H:])\nc = f * c_prev + i * g\no = sigmoid(z[:, 2 * H:3 * H] + p_o * c)\n"
         "return o * xp.tanh(c), c"),
    ],
    "07-2": [
        ("gates stacked in the order i, f, o, g", [
            'xp = backend.get_array_module(w["W_i"])\norder = ("i", "f", "o", "z")\n'
            'W_ih = xp.concatenate([w["W_" + k] for k in order])\nW_hh = xp.concatenate([w["R_" + k] for k in order])\n'
            'b = xp.concatenate([w["b_" + k] for k in order])\nreturn W_ih, W_hh, b, (w["P_i"], w["P_f"], w["P_o"])',
            None]),
        ("bias forgotten", [None, "return pointwise_half(x @ W_ih.T + h @ W_hh.T, c, peephole)"]),
    ],
    "07-3": [
        ("the output peephole's path to c forgotten", "xp = backend.get_array_module(z)\nH = c_prev.shape[1]\n"
         "p_i, p_f, p_o = peephole\ni = sigmoid(z[:, :H] + p_i * c_prev)\nf = sigmoid(z[:, H:2 * H] + p_f * c_prev)\n"
         "g = xp.tanh(z[:, 2 * H:3 * H])\nc = f * c_prev + i * g\no = sigmoid(z[:, 3 * H:] + p_o * c)\n"
         "tanh_c = xp.tanh(c)\ndz_o = gh * tanh_c * o * (1 - o)\ndc = gc + gh * o * (1 - tanh_c ** 2)\n"
         "dz_i = dc * g * i * (1 - i)\ndz_f = dc * c_prev * f * (1 - f)\ndz_g = dc * i * (1 - g ** 2)\n"
         "dc_prev = dc * f + dz_i * p_i + dz_f * p_f\n"
         "return xp.concatenate([dz_i, dz_f, dz_g, dz_o], axis=1), dc_prev"),
        ("the incoming cell gradient gc forgotten", "xp = backend.get_array_module(z)\nH = c_prev.shape[1]\n"
         "p_i, p_f, p_o = peephole\ni = sigmoid(z[:, :H] + p_i * c_prev)\nf = sigmoid(z[:, H:2 * H] + p_f * c_prev)\n"
         "g = xp.tanh(z[:, 2 * H:3 * H])\nc = f * c_prev + i * g\no = sigmoid(z[:, 3 * H:] + p_o * c)\n"
         "tanh_c = xp.tanh(c)\ndz_o = gh * tanh_c * o * (1 - o)\ndc = gh * o * (1 - tanh_c ** 2) + dz_o * p_o\n"
         "dz_i = dc * g * i * (1 - i)\ndz_f = dc * c_prev * f * (1 - f)\ndz_g = dc * i * (1 - g ** 2)\n"
         "dc_prev = dc * f + dz_i * p_i + dz_f * p_f\n"
         "return xp.concatenate([dz_i, dz_f, dz_g, dz_o], axis=1), dc_prev"),
    ],
    "07-4": [
        ("one FLOP per multiply-add", "return N * 4 * H * (I + H)"),
        ("one gate only", "return 2 * N * H * (I + H)"),
    ],
    "08-1": [
        ("paired with the next step's h", "T, N, G = dz_all.shape\n"
         "return dz_all.reshape(T * N, G).T @ h_all[1:].reshape(T * N, -1)"),
        ("transposed", "T, N, G = dz_all.shape\nreturn h_all[:-1].reshape(T * N, -1).T @ dz_all.reshape(T * N, G)"),
    ],
    "08-2": [
        ("no overlap: one cell per wave", "return [[(layer, t)] for t in range(T) for layer in range(L)]"),
        ("a layer ahead of the one below it", "return [[(layer, s + layer - L + 1) for layer in range(L) "
         "if 0 <= s + layer - L + 1 < T] for s in range(T + L - 1)]"),
    ],
    "09-1": [
        ("each window paired with its own last value", "n = len(series) - window\n"
         "index = np.arange(window)[None, :] + np.arange(n)[:, None]\n"
         "return series[index][:, :, None].astype(np.float32), series[window - 1:-1][:, None].astype(np.float32)"),
        ("float64 kept", "n = len(series) - window\nindex = np.arange(window)[None, :] + np.arange(n)[:, None]\n"
         "return series[index][:, :, None].astype(np.float64), series[window:][:, None].astype(np.float64)"),
    ],
    "09-2": [
        ("the padding counted", "return ((predictions - targets) ** 2).mean()"),
        ("divided by every position", "T = predictions.shape[1]\n"
         "mask = np.arange(T)[None, :] < np.asarray(lengths)[:, None]\n"
         "mask = dlscratch.tensor(xp.asarray(mask.astype(np.float32)))\n"
         "return ((predictions - targets) ** 2 * mask).sum() / float(mask.shape[0] * T)"),
        ("the mask left on the CPU", "T = predictions.shape[1]\n"
         "mask = np.arange(T)[None, :] < np.asarray(lengths)[:, None]\n"
         "mask = dlscratch.tensor(mask.astype(np.float32))\n"
         "return ((predictions - targets) ** 2 * mask).sum() / float(sum(lengths))"),
    ],
}

GPU_ONLY = {
    ("03-1", "not a Python float"),  # NumPy's mean is a numpy.float64, a float; CuPy's is a 0-d array
    ("04-2", "the buffer made with np"),
    ("09-2", "the mask left on the CPU"),
}
