"""Programs of user actions, and an interpreter that runs one and records everything a user could observe.

The differential tester (``test_differential.py``) runs each program on three *variants* of the library, the
reference path on NumPy, the fast path on NumPy and the fast path on the strict CuPy stand-in's GPU, and asks
that no observable tells them apart: issue 51's promise that the fast path is invisible.

A program is a model kind, two optimizer choices and a short list of actions (plain tuples, so that Hypothesis
shrinks them and a failure prints as code a reader can retype). The interpreter builds two models of the kind
(``m0``, ``m1``, each with its optimizer ``opt0``, ``opt1``), then runs the actions one by one, as a careless user
in a notebook would: an action that raises is recorded and the program goes on. After every action it takes a
*snapshot*: a flat dict from a readable name to an observable (``describe``'s names), holding

- the action's error type (or None) and what the action returned (losses, outputs, probes);
- every parameter's values, dtype, shape, ``requires_grad``, whether it lives on the run's device, and its grad;
- every optimizer's ``state_dict()`` and hyperparameters;
- every kept reference (``k0 = m0.0.weight.grad.reshape(-1)`` ...): values, dtype, shape;
- which of all these arrays share memory with which (one sorted list of pairs), and which Parameters are the
  same object: the aliasing a user relies on, canonical whatever the storage.

Snapshots are compared observable by observable (``compare_runs``), values with ``same_values``.

``python tests/user_programs.py --minutes 40`` runs the long survey: programs drawn by Hypothesis until the time
is up, every mismatch filed under a signature (which variant, which action, which kind of observable), the
shortest program of each signature shrunk by deleting actions, and a report printed.
"""

import argparse
import contextlib
import copy
import functools
import os
import pickle
import sys
import tempfile
import time
import warnings

import numpy as np
from hypothesis import strategies as st

import dlscratch
from dlscratch import backend, nn, optim
from dlscratch.engine import switch

MODEL_KINDS = ("mlp", "mlp_subclass", "mlp_call_override", "mlp_instance_forward", "cnn", "lstm")

#: The optimizers a program may use: every class in ``dlscratch.optim`` and the options that change its update.
OPTIMIZERS = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
    "sgd_nesterov": lambda ps: optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True),
    "sgd_decay_dampening": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.5, dampening=0.2, weight_decay=0.01),
    "adam": lambda ps: optim.Adam(ps, lr=0.01),
    "adam_decay": lambda ps: optim.Adam(ps, lr=0.01, betas=(0.8, 0.99), weight_decay=0.1),
    "adadelta": lambda ps: optim.AdaDelta(ps),
    "adadelta_decay": lambda ps: optim.AdaDelta(ps, lr=0.5, rho=0.95, weight_decay=0.05),
}

VARIANTS = ("reference-numpy", "fast-numpy", "fast-gpu")


# ----- the models: small, and each with something a fusion must respect -----
class ShiftedLinear(nn.Linear):
    """A Linear subclass whose ``forward`` adds 0.25: a fusion that runs the plain Linear instead shows."""

    def forward(self, x):
        return super().forward(x) + 0.25


class CountingLinear(nn.Linear):
    """A Linear subclass that overrides ``__call__`` to count its calls (an observable)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return super().__call__(*args, **kwargs)


def halved_forward(module, x):
    """The forward that ``mlp_instance_forward`` puts on one Linear instance: the plain one, halved."""
    return nn.Linear.forward(module, x) * 0.5


def doubling_pre_hook(module, args):
    """A forward pre-hook that doubles the input (a fusion that skips hooks shows)."""
    return tuple(a * 2.0 for a in args)


class LSTMHead(nn.Module):
    """An LSTM over a sequence ``(T, N, 3)``, and a Linear on its last output."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 2)
        self.head = nn.Linear(2, 2)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[-1])


def build_model(kind):
    """A fresh model of ``kind`` (on the CPU, from dlscratch's seeded generator), and its input's shape
    without the batch (``None`` marks where the batch goes)."""
    if kind == "cnn":
        layers = [nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8, 2)]
        return nn.Sequential(*layers), (None, 1, 4, 4)
    if kind == "lstm":
        return LSTMHead(), (2, None, 3)
    first = {"mlp_subclass": ShiftedLinear, "mlp_call_override": CountingLinear}.get(kind, nn.Linear)(4, 3)
    if kind == "mlp_instance_forward":
        first.forward = functools.partial(halved_forward, first)
    return nn.Sequential(first, nn.ReLU(), nn.Linear(3, 2)), (None, 4)


# ----- the programs -----
_model = st.integers(0, 1)
_index = st.integers(0, 7)  # a parameter, taken modulo the model's count
_seed = st.integers(0, 2**16)

ACTIONS = st.one_of(
    st.tuples(st.just("forward_backward"), _model, st.integers(1, 3), _seed, st.booleans()),
    st.tuples(st.just("step"), _model),
    st.tuples(st.just("zero_grad"), _model, st.sampled_from(["optimizer", "model", "optimizer_keep_zeros"])),
    st.tuples(st.just("keep"), _model, _index, st.sampled_from(["data", "grad", "grad.data", "state_dict"]),
              st.sampled_from(["", ".reshape(-1)", "[0]", ".T", "[1:]"])),
    st.tuples(st.just("set_data"), _model, _index, st.sampled_from(["float32", "float64", "float16", "tie"]), _seed),
    st.tuples(st.just("share_parameter"), _index),
    st.tuples(st.just("cast"), _model, st.sampled_from(["half", "double", "float", "to_own_device"])),
    st.tuples(st.just("load"), _model, st.sampled_from(["own_state_dict", "other_state_dict", "file",
                                                         "optimizer_state_dict", "optimizer_file"])),
    st.tuples(st.just("copy"), _model, st.sampled_from(["deepcopy", "pickle"])),
    st.tuples(st.just("add_param_group"), _model),
    st.tuples(st.just("new_optimizer"), _model, st.sampled_from(sorted(OPTIMIZERS))),
    st.tuples(st.just("requires_grad_"), _model, _index, st.booleans()),
    st.tuples(st.just("hook"), _model, st.sampled_from(["forward_pre", "post_accumulate_grad"])),
    st.tuples(st.just("huge_grad_step"), _model, st.sampled_from([1e30, 1e38])),
    st.tuples(st.just("bad_grad"), _model, _index, st.sampled_from(["assign_wrong_shape", "data_wrong_shape"])),
    st.tuples(st.just("signed_zero_probe"), _seed),
)


@st.composite
def programs(draw, max_actions=8):
    """A program: ``{"kind", "optimizers", "seed", "actions"}``; most start by computing a gradient."""
    kind = draw(st.sampled_from(MODEL_KINDS))
    optimizers = (draw(st.sampled_from(sorted(OPTIMIZERS))), draw(st.sampled_from(sorted(OPTIMIZERS))))
    actions = draw(st.lists(ACTIONS, min_size=1, max_size=max_actions))
    return {"kind": kind, "optimizers": optimizers, "seed": draw(_seed), "actions": actions}


def describe(program):
    """The program as lines of pseudo-code, one per action, numbered as the snapshots are."""
    lines = [f"models m0, m1 = {program['kind']} (seed {program['seed']}); "
             f"opt0 = {program['optimizers'][0]}(m0), opt1 = {program['optimizers'][1]}(m1)"]
    lines += [f"{i}: {_describe_action(a)}" for i, a in enumerate(program["actions"])]
    return "\n".join(lines)


def _describe_action(action):
    name, *args = action
    texts = {
        "forward_backward": "loss = (m{0}(x[batch {1}, seed {2}, {3}]) ** 2).mean(); loss.backward()",
        "step": "opt{0}.step()",
        "zero_grad": "zero_grad m{0} via {1}",
        "keep": "k = m{0}.param[{1}].{2}{3}",
        "set_data": "m{0}.param[{1}].data = {2} (seed {3})",
        "share_parameter": "m1's param[{0}] = m0's Parameter (shared object)",
        "cast": "m{0}.{1}()",
        "load": "m{0}: load {1}",
        "copy": "m{0}, opt{0} = {1} of (m{0}, opt{0})",
        "add_param_group": "opt{{1-{0}}}.add_param_group(m{0}.parameters(), lr=0.05)",
        "new_optimizer": "opt{0} = {1}(m{0}.parameters())",
        "requires_grad_": "m{0}.param[{1}].requires_grad_({2})",
        "hook": "m{0}: register {1} hook",
        "huge_grad_step": "every grad of m{0} = {1}; with numpy.errstate(all='raise'): opt{0}.step()",
        "bad_grad": "m{0}.param[{1}].grad: {2}",
        "signed_zero_probe": "x = randn(3) (seed {0}); x * 0.0; 1 / (x * -0.0)",
    }
    if name == "forward_backward":
        args[3] = "the model's dtype" if args[3] else "float32"
    return texts[name].format(*args)


# ----- running a program -----
class Run:
    """One program's run on one variant: the models, optimizers, kept references and the snapshots taken."""

    def __init__(self, program, variant, folder):
        self.program, self.variant, self.folder = program, variant, folder
        self.device = "gpu" if variant == "fast-gpu" else "cpu"
        self.kept = []  # (name, object)
        self.hook_log = []
        self.snapshots = []
        dlscratch.manual_seed(program["seed"])
        built = [build_model(program["kind"]) for _ in range(2)]
        self.models = [model.to(self.device) for model, _ in built]
        self.input_shape = built[0][1]
        self.optimizers = [OPTIMIZERS[name](list(m.parameters())) for name, m in zip(program["optimizers"],
                                                                                     self.models)]

    def params(self, i):
        return list(self.models[i].named_parameters())

    def param(self, i, k):
        named = self.params(i)
        return named[k % len(named)]

    def array(self, values):
        """``values`` (a NumPy array) on this run's device."""
        return backend.to_gpu(values) if self.device == "gpu" else values

    def run_action(self, action):
        """Run one action; the snapshot records its error type, its warnings and its result."""
        name, *args = action
        result, error = None, None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = getattr(self, "_" + name)(*args)
            except Exception as exc:  # a user's program goes on after an error; what it left is compared
                error = exc
        shot = snapshot(self, result, error)
        shot[WARNINGS] = sorted({w.category.__name__ for w in caught})
        shot["~warning messages"] = sorted({str(w.message)[:200] for w in caught})
        self.snapshots.append(shot)

    # each action, as the user would write it
    def _forward_backward(self, i, batch, seed, model_dtype):
        shape = tuple(batch if n is None else n for n in self.input_shape)
        values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        dtype = next(self.models[i].parameters()).dtype if model_dtype else np.float32
        x = dlscratch.tensor(self.array(values.astype(dtype)))
        out = self.models[i](x)
        loss = (out * out).mean()
        loss.backward()
        return {"out": out.data, "loss": loss.data}

    def _step(self, i):
        self.optimizers[i].step()

    def _zero_grad(self, i, how):
        if how == "model":
            self.models[i].zero_grad()
        elif how == "optimizer":
            self.optimizers[i].zero_grad()
        else:
            self.optimizers[i].zero_grad(set_to_none=False)

    def _keep(self, i, k, what, view):
        name, p = self.param(i, k)
        target = {"data": lambda: p.data, "grad": lambda: p.grad, "grad.data": lambda: p.grad.data,
                  "state_dict": lambda: self.models[i].state_dict()[name]}[what]()
        kept = _view(target, view)
        self.kept.append((f"k{len(self.kept)} = m{i}.{name}.{what}{view}", kept))

    def _set_data(self, i, k, source, seed):
        _, p = self.param(i, k)
        if source == "tie":
            _, q = self.param(1 - i, k)
            p.data = q.data
        else:
            p.data = self.array(np.random.default_rng(seed).standard_normal(p.shape).astype(source))

    def _share_parameter(self, k):
        name, p = self.param(0, k)
        owner_name, _, attribute = name.rpartition(".")
        setattr(_submodule(self.models[1], owner_name), attribute, p)

    def _cast(self, i, how):
        model = self.models[i]
        model.to(self.device) if how == "to_own_device" else getattr(model, how)()

    def _load(self, i, how):
        model, opt = self.models[i], self.optimizers[i]
        if how == "own_state_dict":
            model.load_state_dict(model.state_dict())
        elif how == "other_state_dict":
            model.load_state_dict(self.models[1 - i].state_dict())
        elif how == "file":
            path = os.path.join(self.folder, f"model{i}.npz")
            dlscratch.save(model.state_dict(), path)
            model.load_state_dict(dlscratch.load(path))
        elif how == "optimizer_state_dict":
            opt.load_state_dict(opt.state_dict())
        else:
            path = os.path.join(self.folder, f"optimizer{i}.npz")
            dlscratch.save(opt.state_dict(), path)
            opt.load_state_dict(dlscratch.load(path))

    def _copy(self, i, how):
        pair = (self.models[i], self.optimizers[i])
        pair = copy.deepcopy(pair) if how == "deepcopy" else pickle.loads(pickle.dumps(pair))
        self.models[i], self.optimizers[i] = pair

    def _add_param_group(self, i):
        self.optimizers[1 - i].add_param_group({"params": list(self.models[i].parameters()), "lr": 0.05})

    def _new_optimizer(self, i, name):
        self.optimizers[i] = OPTIMIZERS[name](list(self.models[i].parameters()))

    def _requires_grad_(self, i, k, flag):
        self.param(i, k)[1].requires_grad_(flag)

    def _hook(self, i, kind):
        model = self.models[i]
        if kind == "forward_pre":
            next(iter(model.children())).register_forward_pre_hook(doubling_pre_hook)
        else:
            name, p = self.param(i, 0)
            p.register_post_accumulate_grad_hook(functools.partial(_log_grad, self.hook_log, f"m{i}.{name}"))

    def _huge_grad_step(self, i, value):
        for _, p in self.params(i):
            with np.errstate(over="ignore"):  # 1e38 is inf in float16, as a user's cast would make it
                huge = np.full(p.shape, value).astype(p.dtype)
            p.grad = dlscratch.tensor(self.array(huge))
        with np.errstate(all="raise"):
            self.optimizers[i].step()

    def _bad_grad(self, i, k, how):
        _, p = self.param(i, k)
        wrong = self.array(np.ones(p.shape + (2,), dtype=p.dtype))
        if how == "assign_wrong_shape":
            p.grad = dlscratch.tensor(wrong)
        else:
            p.grad.data = wrong

    def _signed_zero_probe(self, seed):
        x = dlscratch.tensor(self.array(np.random.default_rng(seed).standard_normal(3).astype(np.float32)))
        zero = x * 0.0
        inverse = 1 / (x * -0.0)
        return {"probe x * 0.0": zero.data, "probe 1 / (x * -0.0)": inverse.data}


def _view(target, view):
    """``target`` (an array or a Tensor) through one of the views a program keeps."""
    if view == ".reshape(-1)":
        return target.reshape(-1)
    if view == "[0]":
        return target[0]
    if view == ".T":
        return target.T
    if view == "[1:]":
        return target[1:]
    return target


def _submodule(model, dotted):
    for part in filter(None, dotted.split(".")):
        model = getattr(model, part)
    return model


def _log_grad(log, name, tensor):
    """A post-accumulate-grad hook: log the gradient the parameter holds now (a copy)."""
    log.append((name, np.array(backend.to_cpu(tensor.grad.data))))


def run_program(program, variant):
    """Run ``program`` on ``variant`` (one of ``VARIANTS``); return its snapshots, one per action."""
    path = switch.reference() if variant == "reference-numpy" else switch.fast_path()
    device = backend.on_the_stand_in() if variant == "fast-gpu" else contextlib.nullcontext()
    with tempfile.TemporaryDirectory() as folder, np.errstate(**np.geterr()), path, device:
        run = Run(program, variant, folder)
        for action in program["actions"]:
            run.run_action(action)
    return run.snapshots


def comparable(program, variant):
    """Whether ``program`` can tell ``variant`` from the reference path at all: on the GPU, NumPy's floating-point
    errors (``numpy.errstate(all="raise")``) do not exist, as CuPy has none, so programs that raise them are
    compared on the NumPy variants only."""
    return variant != "fast-gpu" or not any(a[0] == "huge_grad_step" for a in program["actions"])


# ----- what a user can observe -----
def host(array):
    """An array's host values as a NumPy array (a copy for the stand-in's)."""
    return np.asarray(backend.to_cpu(array))


def memory_of(array):
    """The NumPy array whose memory ``array`` uses: itself on the CPU, the stand-in's host buffer on its GPU (the
    stand-in's ``ndarray`` keeps it as ``_a``: the only way to ask whether two of its arrays share memory); None
    for a scalar, which has no memory to share."""
    memory = array if isinstance(array, np.ndarray) else getattr(array, "_a", None)
    return None if memory is None or memory.ndim == 0 else memory


def kind_of_object(obj):
    """What a kept reference is, in words that are the same on every device: a Tensor, an array or a scalar.
    Indexing a 1-d array down to one element gives a NumPy scalar (a copy) but a CuPy 0-d array (a view): the
    array libraries differ there, not dlscratch's paths, so both count as a scalar and share no memory."""
    if isinstance(obj, dlscratch.Tensor):
        return "Tensor"
    return "array" if memory_of(obj) is not None else "scalar"


def _array_of(obj):
    return obj.data if isinstance(obj, dlscratch.Tensor) else obj


def snapshot(run, result, error):
    """Everything observable after one action, as ``{name: value}`` (module docstring)."""
    shot = {"error": None if error is None else type(error).__name__,
            "~error message": None if error is None else str(error)[:300]}
    for key, value in (result or {}).items():
        shot[f"result {key}"] = _array_value(value)
    arrays = {}
    for i, model in enumerate(run.models):
        _observe_model(shot, arrays, f"m{i}", model, run.device)
    for i, opt in enumerate(run.optimizers):
        _observe_optimizer(shot, arrays, f"opt{i}", opt, run)
    for name, obj in run.kept:
        array = _array_of(obj)
        shot[name] = _array_value(array)
        shot[name + " is a"] = kind_of_object(obj)
        if memory_of(array) is not None:
            arrays[name] = memory_of(array)
    shot["hook log"] = [(name, _array_value(g)) for name, g in run.hook_log]
    shot["shared memory"] = sorted((a, b) for a, b in _pairs(list(arrays)) if np.shares_memory(arrays[a], arrays[b]))
    shot["same Parameter"] = _same_parameters(run)
    return shot


def _observe_model(shot, arrays, prefix, model, device):
    for name, module in model.named_modules():
        if hasattr(module, "calls"):
            shot[f"{prefix}.{name}.calls"] = module.calls
    for name, p in model.named_parameters():
        key = f"{prefix}.{name}"
        shot[key] = _array_value(p.data)
        shot[key + " requires_grad, on the run's device"] = (p.requires_grad, p.device == device)
        arrays[key] = memory_of(p.data)
        shot[key + ".grad"] = None if p.grad is None else _array_value(p.grad.data)
        if p.grad is not None:
            arrays[key + ".grad"] = memory_of(p.grad.data)


def _observe_optimizer(shot, arrays, prefix, opt, run):
    names = _parameter_names(run)
    for g, group in enumerate(opt.param_groups):
        shot[f"{prefix} group {g}"] = ({k: v for k, v in sorted(group.items()) if k != "params"},
                                       [names.get(id(p), "a parameter of no model") for p in group["params"]])
    for position, p in enumerate(opt._params() if hasattr(opt, "_params") else []):
        for key, value in sorted(opt.state.get(p, {}).items()):
            name = f"{prefix}.state[{position}].{key}"
            if hasattr(value, "shape"):
                shot[name] = _array_value(value)
                arrays[name] = memory_of(value)
            else:
                shot[name] = value


def _parameter_names(run):
    return {id(p): f"m{i}.{name}" for i, model in reversed(list(enumerate(run.models)))
            for name, p in model.named_parameters()}


def _same_parameters(run):
    named = [(f"m{i}.{name}", p) for i, m in enumerate(run.models) for name, p in m.named_parameters()]
    return sorted((a, b) for (a, p), (b, q) in _pairs(named) if p is q)


def _pairs(items):
    return [(a, b) for n, a in enumerate(items) for b in items[n + 1:]]


def _array_value(array):
    """An array as the comparison sees it: a NumPy copy of its values (dtype and shape come with it)."""
    return np.array(host(array), copy=True)


# ----- comparing runs -----
def same_values(a, b, signed_zeros=False, coarsest=np.float32):
    """True when NumPy arrays ``a`` and ``b`` hold the same numbers: the same dtype and shape, NaN where the other
    has NaN, the same infinities, finite values equal to a few units in the last place of their dtype
    (``TOLERANCE_ULPS``) and, with ``signed_zeros``, the same signs of zero. The ulp is ``a``'s dtype's, or that of
    ``coarsest``, the coarsest float dtype the program's values went through (``coarsest_dtype``), if coarser.

    Signs of zero are compared in the probes made to show them (``1 / -0.0`` is ``-inf``; the signed-zero probe
    asks for them), not in gradients and weights, where neither PyTorch nor IEEE 754 arithmetic in another order
    promises one sign (``g * 0`` is ``-0.0`` for a negative ``g``, ``where(mask, g, 0)`` is ``0.0``).

    Why a tolerance at all: the fast path computes the same formulas in another order (fused optimizer updates
    rearranged for fewer passes, convolution by other algorithms) and may round differently by an ulp, and
    an ulp of difference in one step grows over the next few; measured on this file's programs the paths agree
    to the bit in most snapshots and within a few ulps (relative to the array's scale) elsewhere. The ulp is never
    finer than float32's: every program starts in float32, and a float32 rounding difference survives a later
    ``double()`` unchanged. Likewise a float16 one survives a later ``float()``: a fused update rounds float16 once
    where the reference rounds after each operation, and the float32 layer that reads the result sees a float16
    ulp of difference. Below the normal range the ulp is the smallest subnormal: float16's is 6e-8, which a
    fused update computing in float32 keeps where the reference's float16 product underflows to 0."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if not np.array_equal(nan_a, nan_b):
        return False
    coarse = max(np.finfo(a.dtype), np.finfo(coarsest), key=lambda info: info.eps)
    eps, ulp_below_normal = float(coarse.eps), float(coarse.smallest_subnormal)
    a, b = a[~nan_a].astype(np.float64), b[~nan_b].astype(np.float64)
    if not np.array_equal(np.isinf(a), np.isinf(b)) or not np.array_equal(a[np.isinf(a)], b[np.isinf(b)]):
        return False
    zeros = (a == 0) & (b == 0)
    if signed_zeros and not np.array_equal(np.signbit(a[zeros]), np.signbit(b[zeros])):
        return False
    finite = np.isfinite(a)
    a, b = a[finite], b[finite]
    scale = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)))
    return bool(np.all(np.abs(a - b) <= TOLERANCE_ULPS * max(eps * scale, ulp_below_normal)))


TOLERANCE_ULPS = 64
WARNINGS = "warnings"
PROBE = "result probe"  # the names of the observables whose signs of zero are compared


def same_observable(a, b, signed_zeros=False, coarsest=np.float32):
    """Compare two snapshot entries: arrays by ``same_values``, everything else (nested) by equality."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and same_values(a, b, signed_zeros, coarsest)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(same_observable(x, y, coarsest=coarsest) for x, y in zip(a, b)))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_observable(a[k], b[k], coarsest=coarsest) for k in a)
    return a == b


def coarsest_dtype(program):
    """The coarsest float dtype a program's values go through: float16 where it casts a model or sets a
    parameter to float16, else float32."""
    to_half = any(a[:1] == ("cast",) and a[2] == "half" or a[:1] == ("set_data",) and a[3] == "float16"
                  for a in program["actions"])
    return np.float16 if to_half else np.float32


def first_difference(expected, got, variant, coarsest=np.float32):
    """The first observable where two runs' snapshots differ: ``(action index, name, expected, got)``, or None.
    Names starting with ``~`` (error and warning messages) are shown, not compared; nor are the warnings on the
    GPU, where CuPy reports no floating-point errors."""
    for index, (shot_a, shot_b) in enumerate(zip(expected, got, strict=True)):
        for name in list(shot_a) + [n for n in shot_b if n not in shot_a]:
            if name.startswith("~") or (name == WARNINGS and variant == "fast-gpu"):
                continue
            missing = "(not there)"
            a, b = shot_a.get(name, missing), shot_b.get(name, missing)
            if not same_observable(a, b, signed_zeros=name.startswith(PROBE), coarsest=coarsest):
                return index, name, a, b
    return None


def kind_of(name):
    """The kind of an observable, for filing mismatches: error, result, value, grad, optimizer state, kept
    reference, aliasing, ..."""
    if name in ("error", WARNINGS, "shared memory", "same Parameter", "hook log"):
        return name
    if "requires_grad" in name or name.endswith(".calls"):
        return "parameter flags" if "requires_grad" in name else "calls of an overridden __call__"
    if name.startswith("result"):
        return "result"
    if name.startswith("k"):
        return "kept reference"
    if name.startswith("opt"):
        return "optimizer state" if ".state[" in name else "optimizer groups"
    if name.endswith(".grad"):
        return "grad"
    return "parameter value"


def report(program, variant, difference, expected, got):
    """A readable account of a mismatch: the program, where it differs, both values and the errors around it."""
    index, name, a, b = difference
    lines = [f"{variant} differs from reference-numpy after action {index} at {name!r}",
             "program:", describe(program),
             f"reference-numpy: {_show(a)}", f"{variant}: {_show(b)}"]
    for label, shots in (("reference-numpy", expected), (variant, got)):
        errors = [f"  {i}: {s['error']}: {s['~error message']}" for i, s in enumerate(shots) if s["error"]]
        lines += [f"errors on {label}:"] + (errors or ["  none"])
    return "\n".join(lines)


def _show(value):
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{list(value.shape)} {np.array2string(value.ravel()[:12], precision=9)}"
    return repr(value)[:600]


def compare_runs(program, variant):
    """Run ``program`` on reference-numpy and on ``variant``; return None, or the report of the first difference
    with the difference itself."""
    expected, got = run_program(program, "reference-numpy"), run_program(program, variant)
    difference = first_difference(expected, got, variant, coarsest_dtype(program))
    if difference is None:
        return None
    return report(program, variant, difference, expected, got), difference


# ----- the long survey -----
def signature(program, variant, difference):
    """Where a mismatch was filed: the variant, the action that revealed it and the kind of observable."""
    index, name, _, _ = difference
    return variant, program["actions"][index][0], kind_of(name)


def shrink(program, variant, wanted):
    """Delete actions one at a time while the mismatch keeps its signature; return the smaller program."""
    changed = True
    while changed:
        changed = False
        for i in range(len(program["actions"])):
            smaller = {**program, "actions": program["actions"][:i] + program["actions"][i + 1:]}
            if smaller["actions"] and _signature_of(smaller, variant) == wanted:
                program, changed = smaller, True
                break
    return program


def _signature_of(program, variant):
    found = compare_runs(program, variant)
    return None if found is None else signature(program, variant, found[1])


def survey(minutes, variants=("fast-numpy", "fast-gpu"), seed=0):
    """Run programs for ``minutes``; return ``(count, {signature: shortest program})``."""
    from hypothesis import HealthCheck, given, settings

    found, count, deadline = {}, [0], time.monotonic() + 60 * minutes

    @settings(max_examples=10**6, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), phases=["generate"])
    @given(program=programs())
    def one(program):
        if time.monotonic() > deadline:
            raise _TimeUp
        count[0] += 1
        if count[0] % 200 == 0:
            print(f"{count[0]} programs, {len(found)} signatures", file=sys.stderr, flush=True)
        for variant in filter(functools.partial(comparable, program), variants):
            result = compare_runs(program, variant)
            if result is not None:
                key = signature(program, variant, result[1])
                if key not in found or len(program["actions"]) < len(found[key]["actions"]):
                    found[key] = program

    try:
        one()
    except (_TimeUp, KeyboardInterrupt):
        pass
    return count[0], found


class _TimeUp(BaseException):
    """Raised to end the survey's Hypothesis run (not an ``Exception``: Hypothesis lets it through at once)."""


def main(argv=None):
    """The long run: ``python tests/user_programs.py --minutes 40``."""
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--minutes", type=float, default=40.0)
    args = parser.parse_args(argv)
    start = time.monotonic()
    count, found = survey(args.minutes)
    print(f"{count} programs in {time.monotonic() - start:.0f} s; {len(found)} signatures of mismatch", flush=True)
    for key, program in sorted(found.items()):
        variant = key[0]
        program = shrink(program, variant, key)
        result = compare_runs(program, variant)
        print("=" * 100, f"\nsignature {key}\n", result[0] if result else "(no longer reproduces)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
