"""Known-wrong answers to the exercises: each check must reject every one (tools/prove_exercises.py runs them).

``WRONG["NN-M"]`` lists ``(mistake, bodies)``: ``bodies`` has one entry per ``### BEGIN SOLUTION`` region of the
exercise's solution cell, in order: the text that replaces that region (indented to match by the tool), or None
to keep the solution there. A plain string stands for a one-region cell.

A mistake named "calls the library" must be rejected by the check's ``dlscratch_lessons.checking.own_work``, not by
chance: the answer computes the right values through dlscratch instead of by itself.

``GPU_ONLY`` names the mistakes that are only wrong on a GPU (a NumPy array where the data's module was meant):
on NumPy they compute the right thing, so the proof expects them to fail only on CuPy or on the strict CuPy
stand-in (``DLSCRATCH_STRICT_GPU=1``), and to pass on NumPy.

    python tools/wrong_answers.py           # every exercise's known-wrong answers, by name
    python tools/wrong_answers.py 04 07     # those of the lessons whose numbers start with these
"""

import argparse

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
    "02-4": [
        ("gradients overwritten, not added", ["order, seen, stack = [], {id(self)}, [(self, False)]\n"
         "while stack:\n    t, done = stack.pop()\n    if done:\n        order.append(t)\n        continue\n"
         "    stack.append((t, True))\n    for x in t.creator.inputs if t.creator else ():\n"
         "        if id(x) not in seen:\n            seen.add(id(x))\n            stack.append((x, False))\n"
         "self.grad = backend.xp.ones_like(self.data)\nfor t in reversed(order):\n    if t.creator is None:\n"
         "        continue\n    for x, g in zip(t.creator.inputs, t.creator.backward(t.grad)):\n        x.grad = g",
         None]),
        ("no topological order: each function as soon as it is reached", [
         "self.grad = backend.xp.ones_like(self.data)\nqueue = [self]\nwhile queue:\n    t = queue.pop(0)\n"
         "    if t.creator is None:\n        continue\n"
         "    for x, g in zip(t.creator.inputs, t.creator.backward(t.grad)):\n"
         "        x.grad = g if x.grad is None else x.grad + g\n        queue.append(x)", None]),
        ("recursion: fails on a deep graph", ["order, seen = [], set()\n\n\ndef visit(t):\n"
         "    if id(t) in seen:\n        return\n    seen.add(id(t))\n"
         "    for x in t.creator.inputs if t.creator else ():\n        visit(x)\n    order.append(t)\n\n\n"
         "visit(self)\nself.grad = backend.xp.ones_like(self.data)\nfor t in reversed(order):\n"
         "    if t.creator is not None:\n"
         "        for x, g in zip(t.creator.inputs, t.creator.backward(t.grad)):\n"
         "            x.grad = g if x.grad is None else x.grad + g", None]),
    ],
    "02-5": [
        ("sum_to sums only the leading axes", ["return g.sum(axis=tuple(range(g.ndim - len(shape)))) "
         "if g.ndim > len(shape) else g", None, None, None, None, None]),
        ("MatMul's gradients without transposes", [None, None, "a, b = self.inputs\nreturn gy @ b.data, a.data @ gy",
         None, None, None]),
        ("ReLU passes every gradient", [None, None, None, "return (gy,)", None, None]),
        ("Columns' gradient not put in its place", [None, None, None, None, None, "return (gy,)"]),
    ],
    "02-6": [
        ("the difference not divided by eps", ["grads = []\nfor array in arrays:\n"
         "    grad, flat = backend.xp.zeros_like(array), array.reshape(-1)\n    for i in range(flat.size):\n"
         "        saved = flat[i].copy()\n        flat[i] = saved + eps\n"
         "        plus = (make_function().forward(*arrays) * gy).sum()\n        flat[i] = saved - eps\n"
         "        minus = (make_function().forward(*arrays) * gy).sum()\n        flat[i] = saved\n"
         "        grad.reshape(-1)[i] = (plus - minus) / 2\n    grads.append(grad)\nreturn grads", None]),
        ("each input left nudged", ["grads = []\nfor array in arrays:\n"
         "    grad, flat = backend.xp.zeros_like(array), array.reshape(-1)\n    for i in range(flat.size):\n"
         "        saved = flat[i].copy()\n        flat[i] = saved + eps\n"
         "        plus = (make_function().forward(*arrays) * gy).sum()\n        flat[i] = saved - eps\n"
         "        minus = (make_function().forward(*arrays) * gy).sum()\n"
         "        grad.reshape(-1)[i] = (plus - minus) / (2 * eps)\n    grads.append(grad)\nreturn grads", None]),
        ("float32 kept: the differences drown in rounding", [None, "arrays = [a.copy() for a in arrays]\n"
         "function = make_function()\nout = function(*(Tensor(a) for a in arrays))\n"
         "gy = backend.xp.asarray(rng.standard_normal(out.shape).astype('float32'))\n"
         "analytic = function.backward(gy)\nnumeric = numerical_gradients(make_function, arrays, gy)\n"
         "return all(bool(backend.xp.allclose(a, n, rtol=rtol, atol=atol)) for a, n in zip(analytic, numeric))"]),
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
    "03-4": [
        ("no maximum subtracted: exp overflows", ["xp = backend.get_array_module(logits)\n"
         "self.log_p = logits - xp.log(xp.exp(logits).sum(axis=1, keepdims=True))\n"
         "return -self.log_p[xp.arange(logits.shape[0]), self.labels].mean()", None]),
        ("the gradient not divided by N", [None, "xp = backend.get_array_module(gy)\n"
         "g = xp.exp(self.log_p)\ng[xp.arange(g.shape[0]), self.labels] -= 1\nreturn (g * gy,)"]),
        ("calls the library", ["import dlscratch\nimport dlscratch.functional as F\n\n"
         "xp = backend.get_array_module(logits)\nshifted = logits - logits.max(axis=1, keepdims=True)\n"
         "self.log_p = shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))\n"
         "return F.cross_entropy(dlscratch.tensor(logits), dlscratch.tensor(self.labels)).data", None]),
    ],
    "03-5": [
        ("the submodules' parameters missed", [None, "return [v for v in self.__dict__.get('_registered', {}).values() "
         "if isinstance(v, Parameter)]", None, None, None]),
        ("a shared parameter listed twice", [None, "found = []\n"
         "for value in self.__dict__.get('_registered', {}).values():\n"
         "    found += value.parameters() if isinstance(value, Module) else [value]\nreturn found",
         None, None, None]),
        ("missing names accepted", [None, None, None, "mine = self.state_dict()\nfor name, array in state.items():\n"
         "    mine[name][...] = array", None]),
        ("He's normal std used as the uniform bound", [None, None, None, None, "bound = math.sqrt(2.0 / fan_in)\n"
         "return backend.xp.asarray(rng.uniform(-bound, bound, size=shape).astype('float32'))"]),
        ("float64 weights", [None, None, None, None, "bound = math.sqrt(6.0 / fan_in)\n"
         "return backend.xp.asarray(rng.uniform(-bound, bound, size=shape))"]),
    ],
    "03-6": [
        ("the parameter's array replaced, not updated in place", [
         "for i, p in enumerate(self.params):\n    b = self.velocities[i]\n"
         "    b = p.grad.copy() if b is None else self.momentum * b + p.grad\n    self.velocities[i] = b\n"
         "    p.data = p.data - self.lr * b", None]),
        ("Adam without bias correction", [None, "xp = backend.xp\nbeta1, beta2 = self.betas\nself.t += 1\n"
         "for i, p in enumerate(self.params):\n    g = p.grad\n    if self.m[i] is None:\n"
         "        self.m[i], self.v[i] = xp.zeros_like(g), xp.zeros_like(g)\n"
         "    self.m[i] = beta1 * self.m[i] + (1 - beta1) * g\n"
         "    self.v[i] = beta2 * self.v[i] + (1 - beta2) * g * g\n"
         "    p.data -= self.lr * self.m[i] / (xp.sqrt(self.v[i]) + self.eps)"]),
        ("Adam's eps inside the square root", [None, "xp = backend.xp\nbeta1, beta2 = self.betas\nself.t += 1\n"
         "for i, p in enumerate(self.params):\n    g = p.grad\n    if self.m[i] is None:\n"
         "        self.m[i], self.v[i] = xp.zeros_like(g), xp.zeros_like(g)\n"
         "    self.m[i] = beta1 * self.m[i] + (1 - beta1) * g\n"
         "    self.v[i] = beta2 * self.v[i] + (1 - beta2) * g * g\n"
         "    m_hat, v_hat = self.m[i] / (1 - beta1 ** self.t), self.v[i] / (1 - beta2 ** self.t)\n"
         "    p.data -= self.lr * m_hat / xp.sqrt(v_hat + self.eps)"]),
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
    "04-5": [
        ("gy laid out without its transpose", [None, "x, w, _ = (t.data for t in self.inputs)\n"
         "O, _, kh, kw = w.shape\ngy_cols = gy.reshape(O, -1)\ngw = (gy_cols @ self.cols.T).reshape(w.shape)\n"
         "gx = col2im_array(w.reshape(O, -1).T @ gy_cols, x.shape, (kh, kw))\n"
         "return gx, gw, gy_cols.sum(axis=1)"]),
        ("the bias gradient averaged", [None, "x, w, _ = (t.data for t in self.inputs)\nO, _, kh, kw = w.shape\n"
         "gy_cols = gy.transpose(1, 2, 3, 0).reshape(O, -1)\ngw = (gy_cols @ self.cols.T).reshape(w.shape)\n"
         "gx = col2im_array(w.reshape(O, -1).T @ gy_cols, x.shape, (kh, kw))\n"
         "return gx, gw, gy_cols.mean(axis=1)"]),
        ("calls the library", ["import dlscratch\nimport dlscratch.functional as F\n\n"
         "self.cols = im2col_array(x, w.shape[2:])\n"
         "return F.conv2d(dlscratch.tensor(x), dlscratch.tensor(w), dlscratch.tensor(b)).data", None]),
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
    "05-4": [
        ("every tied maximum gets the gradient", ["N, C, H, W = x.shape\n"
         "windows = x.reshape(N, C, H // 2, 2, W // 2, 2).transpose(0, 1, 2, 4, 5, 3)\n"
         "windows = windows.reshape(N, C, H // 2, W // 2, 4)\ny = windows.max(axis=4)\n"
         "self.argmax = windows == y[..., None]\nreturn y", "N, C, H2, W2 = gy.shape\n"
         "gx = (self.argmax * gy[..., None]).reshape(N, C, H2, W2, 2, 2).transpose(0, 1, 2, 5, 3, 4)\n"
         "return (gx.reshape(N, C, 2 * H2, 2 * W2),)"]),
        ("windows taken across the image", ["N, C, H, W = x.shape\n"
         "windows = x.reshape(N, C, 2, H // 2, 2, W // 2).transpose(0, 1, 3, 5, 4, 2)\n"
         "windows = windows.reshape(N, C, H // 2, W // 2, 4)\nself.argmax = windows.argmax(axis=4)\n"
         "return windows.max(axis=4)", None]),
        ("ties decided row by row", ["N, C, H, W = x.shape\n"
         "windows = x.reshape(N, C, H // 2, 2, W // 2, 2).transpose(0, 1, 2, 4, 3, 5)\n"
         "windows = windows.reshape(N, C, H // 2, W // 2, 4)\nself.argmax = windows.argmax(axis=4)\n"
         "return windows.max(axis=4)", "N, C, H2, W2 = gy.shape\n"
         "one_hot = backend.xp.arange(4) == self.argmax[..., None]\n"
         "gx = (one_hot * gy[..., None]).reshape(N, C, H2, W2, 2, 2).transpose(0, 1, 2, 4, 3, 5)\n"
         "return (gx.reshape(N, C, 2 * H2, 2 * W2),)"]),
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
    "07-5": [
        ("gates in the order i, f, o, g", ["xp = backend.xp\nH = c_prev.shape[1]\n"
         "self.i, self.f, self.o = (sigmoid(z[:, k * H:(k + 1) * H]) for k in (0, 1, 2))\n"
         "self.g = xp.tanh(z[:, 3 * H:4 * H])\nself.c = self.f * c_prev + self.i * self.g\n"
         "self.tanh_c = xp.tanh(self.c)\nreturn xp.concatenate([self.o * self.tanh_c, self.c], axis=1)", None]),
        ("h's path into the cell forgotten", [None, "xp = backend.xp\nH = self.c.shape[1]\n"
         "gh, gc = g_hc[:, :H], g_hc[:, H:]\nc_prev = self.inputs[1].data\n"
         "gz = xp.concatenate([gc * self.g * self.i * (1 - self.i), gc * c_prev * self.f * (1 - self.f),\n"
         "                     gc * self.i * (1 - self.g ** 2), gh * self.tanh_c * self.o * (1 - self.o)], axis=1)\n"
         "return gz, gc * self.f"]),
        ("c_prev's gradient without the forget gate", [None, "xp = backend.xp\nH = self.c.shape[1]\n"
         "gh, gc = g_hc[:, :H], g_hc[:, H:]\nc_prev = self.inputs[1].data\n"
         "gc = gc + gh * self.o * (1 - self.tanh_c ** 2)\n"
         "gz = xp.concatenate([gc * self.g * self.i * (1 - self.i), gc * c_prev * self.f * (1 - self.f),\n"
         "                     gc * self.i * (1 - self.g ** 2), gh * self.tanh_c * self.o * (1 - self.o)], axis=1)\n"
         "return gz, gc"]),
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
    "10-1": [
        ("no ReLU after fc1", [None, "x = pool_mine.MaxPool2x2()(ops.ReLU()(self.conv1(x)))\n"
         "x = pool_mine.MaxPool2x2()(ops.ReLU()(self.conv2(x)))\n"
         "return self.fc2(self.fc1(ops.Reshape((x.shape[0], -1))(x)))"]),
        ("conv2 without its ReLU", [None, "x = pool_mine.MaxPool2x2()(ops.ReLU()(self.conv1(x)))\n"
         "x = pool_mine.MaxPool2x2()(self.conv2(x))\nx = ops.ReLU()(self.fc1(ops.Reshape((x.shape[0], -1))(x)))\n"
         "return self.fc2(x)"]),
    ],
    "10-2": [
        ("gradients never cleared", "order = xp.asarray(rng.permutation(len(images)))\nstep_losses = []\n"
         "for start in range(0, len(images), batch_size):\n    batch = order[start:start + batch_size]\n"
         "    loss = losses.SoftmaxCrossEntropy(labels[batch])(model(engine.Tensor(images[batch])))\n"
         "    loss.backward()\n    optimizer.step()\n    step_losses.append(float(loss.data))\nreturn step_losses"),
        ("not shuffled", "step_losses = []\nfor start in range(0, len(images), batch_size):\n"
         "    batch = slice(start, start + batch_size)\n"
         "    loss = losses.SoftmaxCrossEntropy(labels[batch])(model(engine.Tensor(images[batch])))\n"
         "    model.zero_grad()\n    loss.backward()\n    optimizer.step()\n    step_losses.append(float(loss.data))\n"
         "return step_losses"),
        ("the losses kept as arrays", "order = xp.asarray(rng.permutation(len(images)))\nstep_losses = []\n"
         "for start in range(0, len(images), batch_size):\n    batch = order[start:start + batch_size]\n"
         "    loss = losses.SoftmaxCrossEntropy(labels[batch])(model(engine.Tensor(images[batch])))\n"
         "    model.zero_grad()\n    loss.backward()\n    optimizer.step()\n    step_losses.append(loss.data)\n"
         "return step_losses"),
    ],
    "10-3": [
        ("the mean of the batches' accuracies", "scores = []\nfor start in range(0, len(images), batch_size):\n"
         "    logits = model(engine.Tensor(images[start:start + batch_size])).data\n"
         "    scores.append(float((logits.argmax(axis=1) == labels[start:start + batch_size]).mean()))\n"
         "return sum(scores) / len(scores)"),
        ("the last, shorter batch dropped", "correct = 0\n"
         "for start in range(0, len(images) - batch_size + 1, batch_size):\n"
         "    logits = model(engine.Tensor(images[start:start + batch_size])).data\n"
         "    correct += int((logits.argmax(axis=1) == labels[start:start + batch_size]).sum())\n"
         "return correct / len(images)"),
    ],
    "10-4": [
        ("the names not saved", ["np.savez(path, *[backend.to_cpu(a) for a in model.state_dict().values()])", None]),
        ("the arrays replaced, not loaded through load_state_dict", [None, "with np.load(path) as stored:\n"
         "    for p, name in zip(model.parameters(), stored.files):\n        p.data = xp.asarray(stored[name])"]),
    ],
    "10-5": [
        ("rows and columns swapped", "counts = np.zeros((10, 10), dtype=np.int64)\n"
         "for start in range(0, len(images), batch_size):\n"
         "    predicted = backend.to_cpu(model(engine.Tensor(images[start:start + batch_size])).data.argmax(axis=1))\n"
         "    np.add.at(counts, (predicted, backend.to_cpu(labels[start:start + batch_size])), 1)\nreturn counts"),
        ("repeated pairs counted once", "counts = np.zeros((10, 10), dtype=np.int64)\n"
         "for start in range(0, len(images), batch_size):\n"
         "    predicted = backend.to_cpu(model(engine.Tensor(images[start:start + batch_size])).data.argmax(axis=1))\n"
         "    counts[backend.to_cpu(labels[start:start + batch_size]), predicted] += 1\nreturn counts"),
    ],
    "10-6": [
        ("the state reset at every step", [None, "rows, N = images.data.reshape(-1, 28, 28), images.shape[0]\n"
         "zeros = engine.Tensor(xp.zeros((N, self.hidden_size), dtype=np.float32))\n"
         "for t in range(28):\n    h, c = self.cell(engine.Tensor(rows[:, t]), (zeros, zeros))\nreturn self.head(h)"]),
        ("columns read instead of rows", [None, "cols, N = images.data.reshape(-1, 28, 28), images.shape[0]\n"
         "h = c = engine.Tensor(xp.zeros((N, self.hidden_size), dtype=np.float32))\n"
         "for t in range(28):\n    h, c = self.cell(engine.Tensor(cols[:, :, t]), (h, c))\nreturn self.head(h)"]),
    ],
    "11-1": [
        ("summed, not averaged", "for p in model.parameters():\n    if p.grad is not None:\n"
         "        dist.all_reduce(p.grad)"),
        ("the weights averaged instead of the gradients", "for p in model.parameters():\n"
         "    dist.all_reduce(p.data, dist.ReduceOp.AVG)"),
        ("divided without the sum", "world = dist.get_world_size()\nfor p in model.parameters():\n"
         "    if p.grad is not None:\n        p.grad.data /= world"),
    ],
    "11-2": [
        ("each rank shuffles with its own seed", "order = np.random.default_rng(seed + epoch + rank).permutation(n)\n"
         "total = -(-n // world) * world\nreturn np.resize(order, total)[rank::world].tolist()"),
        ("the same order every epoch", "order = np.random.default_rng(seed).permutation(n)\n"
         "total = -(-n // world) * world\nreturn np.resize(order, total)[rank::world].tolist()"),
        ("contiguous blocks", "order = np.random.default_rng(seed + epoch).permutation(n)\n"
         "per = -(-n // world)\nreturn np.resize(order, per * world)[rank * per:(rank + 1) * per].tolist()"),
        ("the remainder dropped", "order = np.random.default_rng(seed + epoch).permutation(n)\n"
         "return order[:n // world * world][rank::world].tolist()"),
        ("a NumPy array returned", "order = np.random.default_rng(seed + epoch).permutation(n)\n"
         "total = -(-n // world) * world\nreturn np.resize(order, total)[rank::world]"),
    ],
    "11-3": [
        ("one message of the whole array", "return alpha + nbytes * beta"),
        ("the whole array at every step", "return 2 * (ranks - 1) * (alpha + nbytes * beta)"),
        ("only the reduce-scatter", "return (ranks - 1) * (alpha + nbytes / ranks * beta)"),
    ],
    "12-1": [
        ("BT the inverse, not transposed", "n = m + r - 1\n\ndef evaluation(k):\n"
         "    rows = [[float(a) ** i for i in range(k)] for a in points]\n"
         "    return np.array(rows + [[0.0] * (k - 1) + [1.0]])\n\n"
         "return evaluation(m).T, evaluation(r), np.linalg.inv(evaluation(n))"),
        ("AT not transposed", "n = m + r - 1\n\ndef evaluation(k):\n"
         "    rows = [[float(a) ** i for i in range(k)] for a in points]\n"
         "    return np.array(rows + [[0.0] * (k - 1) + [1.0]])\n\n"
         "return evaluation(m), evaluation(r), np.linalg.inv(evaluation(n)).T"),
        ("infinity's row as [1, 0, ..., 0]", "n = m + r - 1\n\ndef evaluation(k):\n"
         "    rows = [[float(a) ** i for i in range(k)] for a in points]\n"
         "    return np.array([[1.0] + [0.0] * (k - 1)] + rows)\n\n"
         "return evaluation(m).T, evaluation(r), np.linalg.inv(evaluation(n)).T"),
        ("float32 matrices", "n = m + r - 1\n\ndef evaluation(k):\n"
         "    rows = [[float(a) ** i for i in range(k)] for a in points]\n"
         "    return np.array(rows + [[0.0] * (k - 1) + [1.0]], dtype=np.float32)\n\n"
         "return evaluation(m).T, evaluation(r), np.linalg.inv(evaluation(n)).T"),
    ],
    "12-2": [
        ("the tile transformed on one side only", "return AT @ ((G @ g @ G.T) * (BT @ d)) @ AT.T"),
        ("a matrix product where the element-wise one belongs", "return AT @ ((G @ g @ G.T) @ (BT @ d @ BT.T)) @ AT.T"),
        ("the output transform on one side only", "return AT @ ((G @ g @ G.T) * (BT @ d @ BT.T))"),
    ],
    "12-3": [
        ("no conjugate: a convolution", "L = len(d)\nreturn np.fft.irfft(np.fft.rfft(d) * np.fft.rfft(g, L), L)"
         "[:L - len(g) + 1]"),
        ("the wrapped outputs kept", "L = len(d)\nreturn np.fft.irfft(np.fft.rfft(d) * np.conj(np.fft.rfft(g, L)), L)"),
        ("irfft's length left out", "L = len(d)\nreturn np.fft.irfft(np.fft.rfft(d) * np.conj(np.fft.rfft(g, L)))"
         "[:L - len(g) + 1]"),
        ("no FFT at all", 'return np.correlate(d, g, "valid")'),
        ("the complex FFT, not the real one", "L = len(d)\n"
         "return np.fft.ifft(np.fft.fft(d) * np.conj(np.fft.fft(g, L))).real[:L - len(g) + 1]"),
    ],
    "13-1": [
        ("the largest pruned instead", "xp = backend.get_array_module(weight)\nk = int(round(amount * weight.size))\n"
         "mask = xp.ones(weight.size, dtype=weight.dtype)\nmask[xp.argsort(-xp.abs(weight).ravel())[:k]] = 0\n"
         "return mask.reshape(weight.shape)"),
        ("signed values, not magnitudes", "xp = backend.get_array_module(weight)\n"
         "k = int(round(amount * weight.size))\n"
         "mask = xp.ones(weight.size, dtype=weight.dtype)\nmask[xp.argsort(weight.ravel())[:k]] = 0\n"
         "return mask.reshape(weight.shape)"),
        ("the count truncated, not rounded", "xp = backend.get_array_module(weight)\nk = int(amount * weight.size)\n"
         "mask = xp.ones(weight.size, dtype=weight.dtype)\nmask[xp.argsort(xp.abs(weight).ravel())[:k]] = 0\n"
         "return mask.reshape(weight.shape)"),
        ("a boolean mask", "xp = backend.get_array_module(weight)\nk = int(round(amount * weight.size))\n"
         "mask = xp.ones(weight.size, dtype=bool)\nmask[xp.argsort(xp.abs(weight).ravel())[:k]] = False\n"
         "return mask.reshape(weight.shape)"),
    ],
    "13-2": [
        ("the count kept after an overflow", "if overflowed:\n    return scale / 2, clean_steps\nclean_steps += 1\n"
         "if clean_steps == growth_interval:\n    return scale * 2, 0\nreturn scale, clean_steps"),
        ("the count not reset after growing", "if overflowed:\n    return scale / 2, 0\nclean_steps += 1\n"
         "if clean_steps >= growth_interval:\n    return scale * 2, clean_steps\nreturn scale, clean_steps"),
        ("grows one step late", "if overflowed:\n    return scale / 2, 0\nif clean_steps == growth_interval:\n"
         "    return scale * 2, 0\nreturn scale, clean_steps + 1"),
    ],
    "13-3": [
        ("one scale for the whole tensor", "scale = np.float32(np.abs(weight).max() / 127)\n"
         "q = np.clip(np.round(weight / scale), -127, 127).astype(np.int8)\n"
         "return q, np.full(len(weight), scale, dtype=np.float32)"),
        ("truncated, not rounded", "largest = np.abs(weight).reshape(len(weight), -1).max(axis=1)\n"
         "scales = np.where(largest > 0, largest / 127, 1).astype(np.float32)\n"
         "shape = (-1,) + (1,) * (weight.ndim - 1)\nq = (weight / scales.reshape(shape)).astype(np.int8)\n"
         "return q, scales"),
        ("divided by 128", "largest = np.abs(weight).reshape(len(weight), -1).max(axis=1)\n"
         "scales = np.where(largest > 0, largest / 128, 1).astype(np.float32)\n"
         "shape = (-1,) + (1,) * (weight.ndim - 1)\n"
         "q = np.clip(np.round(weight / scales.reshape(shape)), -127, 127).astype(np.int8)\nreturn q, scales"),
        ("a zero channel divides by zero", "largest = np.abs(weight).reshape(len(weight), -1).max(axis=1)\n"
         "scales = (largest / 127).astype(np.float32)\nshape = (-1,) + (1,) * (weight.ndim - 1)\n"
         "with np.errstate(invalid='ignore', divide='ignore'):\n"
         "    q = np.clip(np.nan_to_num(np.round(weight / scales.reshape(shape))), -127, 127).astype(np.int8)\n"
         "return q, scales"),
    ],
}

GPU_ONLY = {
    ("03-1", "not a Python float"),  # NumPy's mean is a numpy.float64, a float; CuPy's is a 0-d array
    ("04-2", "the buffer made with np"),
    ("09-2", "the mask left on the CPU"),
}


def mistakes(prefixes=()):
    """``["NN-M: mistake", ...]`` for the exercises whose lesson number starts with one of ``prefixes`` (all
    when empty), GPU-only mistakes marked."""
    lines = []
    for exercise, answers in WRONG.items():
        if not prefixes or exercise.startswith(prefixes):
            for mistake, _ in answers:
                gpu = " (wrong only on a GPU or the strict stand-in)" if (exercise, mistake) in GPU_ONLY else ""
                lines.append(f"{exercise}: {mistake}{gpu}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="lesson-number prefixes of the exercises to list (default: all)")
    print("\n".join(mistakes(tuple(parser.parse_args(argv).lessons))))


if __name__ == "__main__":
    main()
