"""``Optimizer``: the base of the update rules. It holds the parameters (in groups, each with
its own hyperparameters, as in PyTorch), per-parameter state (momentum buffers, moment
estimates), and saves and restores both.

A subclass defines ``_update(staged, grad, state, group)``, the update rule of its docstring written
as array expressions. It computes one parameter's step without writing into any array it is
given: ``staged`` is a ``Staged`` stand-in that holds the parameter's array as ``staged.data``, and the rule
sets ``staged.delta``, the amount to subtract from it; ``state`` is a copy of the parameter's state
dict, whose entries the rule replaces by new arrays. The subclass names that state in
``array_state`` (arrays shaped like the parameter) and ``scalar_state`` (integers such as a step
count). ``_update`` is the reference implementation; ``step`` runs the one ``dlscratch.engine.switch``
picks, by default a fast version (``dlscratch/fast/optim.py``) that sets ``staged.apply`` instead: a
function that computes the step and writes it, with the new state, into the arrays in place.

``step`` is applied whole or not at all, alike on both paths: it prepares every parameter's update
first, writing nothing, and only then writes them all (the reference's ``staged.data -= staged.delta``, the
fast ``staged.apply()``, the new state dicts), with signal handlers held back (``signals.py``). So an
exception raised while the updates are prepared (by an update rule, a parameter cast or moved after
its state was made, a full memory) leaves the weights and the state of no step, and a
``KeyboardInterrupt`` from Ctrl-C or a ``SIGALRM`` handler during the writes arrives once they are
all made. NumPy's floating-point errors: where ``numpy.seterr`` makes them raise, every update is
computed before anything is written (the fast path takes the reference rule then), so a
``FloatingPointError`` leaves no step; where they warn, the warnings are held back until the step is
whole, whatever the warnings filters then make of them. Only a failure of a write itself (a device
error) could leave a step split.
"""

import math

from .. import backend
from ..engine import switch
from ..engine.tensor import Tensor
from .signals import float_errors_deferred, float_errors_raise, signals_deferred


class Staged:
    """One parameter's update in the making, as ``_update`` sees it: ``param``, the parameter;
    ``data``, its array (read it, never write into it); ``delta``, set by ``_update``: the array
    that ``step`` subtracts from ``data``; ``state``, the copy of its state dict that ``step``
    puts in place of the old one. Instead of ``delta``, an update may set ``apply``: a function
    of no arguments that ``step`` calls to write the update into ``data`` and the state's arrays
    in place (``fast/optim.py``: on a CPU the rule's arithmetic, on a GPU one fused kernel); it must not
    fail once prepared, but for floating-point errors, which ``step`` holds back. ``may_write``: whether an
    update may be computed while it is written (False when NumPy raises on floating-point errors: a raise
    midway would leave the step half written), decided once for the step."""

    __slots__ = ("param", "data", "delta", "apply", "state", "may_write")

    def __init__(self, param, state, may_write):
        self.param, self.data, self.delta, self.apply, self.state = param, param.data, None, None, state
        self.may_write = may_write


class Optimizer:
    """``params``: an iterable of Parameters, or of dicts ``{"params": [...], "lr": ...}`` (groups
    with their own hyperparameters). ``defaults``: the hyperparameters of every group."""

    array_state = ()
    scalar_state = ()
    optional_state = ()  # entries of array_state that only some hyperparameters make (RMSprop's momentum_buffer)

    def __init__(self, params, defaults):
        self.defaults = {k: _plain(v) for k, v in defaults.items()}
        self.state = {}  # Parameter -> dict of its state, created by the first step that updates it
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError(f"{type(self).__name__}: pass an iterable of parameters, such as model.parameters() or [w]")
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group):
        """Add ``{"params": [...], hyperparameter: value, ...}``; unset hyperparameters take the defaults."""
        name = type(self).__name__
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"{name}: parameters must be Tensors, got {type(p).__name__}")
            if not p.is_leaf or p.dtype.kind != "f":
                raise ValueError(f"{name}: can only optimize floating-point leaf tensors (shape {p.shape}, {p.dtype})")
            if id(p) in seen:
                raise ValueError(f"{name}: a parameter of shape {p.shape} appears twice; pass each parameter once")
            seen.add(id(p))
        unknown = set(group) - set(self.defaults) - {"params"}
        if unknown:
            raise ValueError(f"{name}: unknown hyperparameters {sorted(unknown)}; known: {sorted(self.defaults)}")
        merged = {**self.defaults, **{k: _plain(v) for k, v in group.items() if k != "params"}}
        self._validate(merged)
        self.param_groups.append({**merged, "params": params})

    def _validate(self, group):
        """Raise ValueError for hyperparameters out of range (subclasses, with the helpers below)."""

    def _check(self, group, key, low, high=math.inf, high_open=False, label=None):
        """``group[key]`` must be a real number in [low, high] (or [low, high) with ``high_open``);
        the message is PyTorch's: "Invalid learning rate: -5"."""
        value = group[key]
        real = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not (real and low <= value and (value < high if high_open else value <= high)):
            label = label or {"lr": "learning rate", "eps": "epsilon value"}.get(key, f"{key} value")
            closing = ")" if high_open else "]"
            raise ValueError(f"{type(self).__name__}: Invalid {label}: {value!r} (must be a number in "
                             f"[{low}, {high}{closing})")

    def _params(self):
        return [p for group in self.param_groups for p in group["params"]]

    def zero_grad(self, set_to_none=True):
        """Forget every parameter's gradient: ``.grad = None`` (PyTorch's default), or with ``set_to_none=False``
        fill the gradient arrays with zeros in place, so that what holds them sees the zeros."""
        for p in self._params():
            p.zero_grad(set_to_none)

    def step(self):
        """Update every parameter that has a gradient, in place: every update is prepared before any
        is written, so the step is applied whole or not at all (module docstring). It works on the
        arrays (``p.data``, ``p.grad.data``), so it records no graph."""
        self._check_arrays_fit()
        capturing = backend.capturing()
        if capturing:
            self._check_capturable()
        if float_errors_raise():  # an error while computing must come before the first write
            staged = self._prepare_step(may_write=False)
            with signals_deferred(), float_errors_deferred():
                self._write(staged, capturing)
        else:  # the warnings of computing and of writing, on either path, come once the step is whole
            with signals_deferred(), float_errors_deferred():
                self._write(self._prepare_step(may_write=True), capturing)

    def _write(self, staged, capturing):
        for new in staged:
            if new.apply is None:
                new.data -= new.delta
            else:
                new.apply()
            new.param.data = new.data  # counts the write (engine/extensions/versions.py)
            old = self.state.get(new.param)
            # A graph replays on the arrays it captured: new state goes into the arrays held so far, and so does a
            # capturable count at every step, so that the steps between replays advance the array a graph holds.
            for name in (new.state if capturing else self.scalar_state) if old else ():
                array, held = new.state[name], old.get(name)
                if held is not array and hasattr(array, "shape") and getattr(held, "shape", None) == array.shape:
                    held[...] = array
                    new.state[name] = held
            self.state[new.param] = new.state

    def _check_capturable(self):
        """Refuse a step inside a CUDA graph capture that its replays would not repeat faithfully: one that keeps a
        count on the host (the graph would keep its captured value), or one that makes a parameter's state (the
        graph would replay a first step every time)."""
        name = type(self).__name__
        for group in self.param_groups:
            if self.scalar_state and not group.get("capturable"):
                raise RuntimeError(
                    f"{name}.step inside a CUDA graph capture: its {', '.join(self.scalar_state)} is a number on the "
                    f"host, which the graph would keep at its captured value and never advance; build it with "
                    f"{name}(..., capturable=True), which keeps it on the device, or step outside the capture")
            for i, p in enumerate(group["params"]):
                if p.grad is not None and p not in self.state:
                    raise RuntimeError(
                        f"{name}.step inside a CUDA graph capture would make the state of parameter {i} (shape "
                        f"{p.shape}), and every replay would repeat that first step; warm up first: run the step "
                        "eagerly once or more before capturing it")

    def _check_arrays_fit(self):
        """Refuse a step, changing nothing, when a parameter's gradient or state is not of its dtype and device:
        the parameter was cast or moved (``half()``, ``to("cpu")``) after the optimizer made its state."""
        for i, p in enumerate(self._params()):
            grad = p.grad
            if grad is None:
                continue
            data = p.data
            on_gpu = backend.is_gpu_array(data)
            arrays = [("gradient", grad.data)]
            arrays += [(name, value) for name, value in self.state.get(p, {}).items() if name in self.array_state]
            for name, array in arrays:
                if array.dtype != data.dtype or backend.is_gpu_array(array) is not on_gpu:
                    where = "gpu" if backend.is_gpu_array(array) else "cpu"
                    raise RuntimeError(
                        f"{type(self).__name__}.step: parameter {i} (shape {p.shape}) is {data.dtype} on {p.device}, "
                        f"but its {name} is {array.dtype} on {where}: the parameter was cast or moved after the "
                        "optimizer made its state, or given a gradient of its own. Cast or move it back, or build a "
                        "new optimizer (load_state_dict copies saved state onto each parameter's device and dtype); "
                        "nothing was changed")
                if array.shape != data.shape:
                    raise RuntimeError(
                        f"{type(self).__name__}.step: parameter {i} has shape {p.shape}, but its {name} has shape "
                        f"{array.shape} (written through .grad.data or .data?); nothing was changed")

    def _prepare_step(self, may_write):
        """Every update of a step, prepared and not written: a list of ``Staged``, one per parameter that has
        a gradient (``may_write``: see ``Staged``)."""
        update = switch.implementation(type(self)._update)  # the reference rule, or its fast version
        staged = []
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is not None:
                    new = Staged(p, dict(self.state.get(p, ())), may_write)
                    update(self, new, grad.data, new.state, group)
                    if new.delta is None and new.apply is None:
                        raise NotImplementedError(f"{type(self).__name__}._update must set staged.delta, the amount "
                                                  "to subtract from staged.data (or staged.apply)")
                    staged.append(new)
        return staged

    def _update(self, staged, grad, state, group):
        """Compute one parameter's update from ``grad`` (an array shaped like it), its ``state`` (a
        copy of its state dict, empty at its first step) and the hyperparameters of its ``group``:
        set ``staged.delta`` (``staged``: a ``Staged``) and replace the entries of ``state`` by new arrays,
        writing into none of the arrays given."""
        raise NotImplementedError(f"{type(self).__name__} must define _update()")

    # ----- saving and loading -----
    def state_dict(self):
        """``{"state": {position: {name: array or int}}, "param_groups": [{hyperparameters...,
        "params": [positions]}]}``: a snapshot (arrays are copies), positions counted over the groups."""
        position = {id(p): i for i, p in enumerate(self._params())}
        state = {
            position[id(p)]: {k: v.copy() if hasattr(v, "copy") else v for k, v in s.items()}
            for p, s in self.state.items()
            if s
        }
        groups = [
            {**{k: v for k, v in g.items() if k != "params"}, "params": [position[id(p)] for p in g["params"]]}
            for g in self.param_groups
        ]
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore hyperparameters and per-parameter state saved by ``state_dict()`` (arrays may come
        from either device; they are copied onto each parameter's). Raises ValueError, changing
        nothing, when the saved state does not fit these parameters."""
        name = type(self).__name__
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= set(state_dict):
            got = sorted(map(str, state_dict)) if isinstance(state_dict, dict) else type(state_dict).__name__
            raise ValueError(
                f"{name}.load_state_dict needs the keys ['param_groups', 'state'] of a state_dict(), got {got}"
            )
        groups, saved_state = list(state_dict["param_groups"]), state_dict["state"]
        sizes = [len(g["params"]) for g in groups]
        own_sizes = [len(g["params"]) for g in self.param_groups]
        if sizes != own_sizes:
            raise ValueError(
                f"{name}.load_state_dict: the saved state has parameter groups of sizes {sizes}, this optimizer "
                f"{own_sizes}; build the optimizer on the same model (same parameters, same order)"
            )
        problems, hyperparameters = [], []
        for i, (saved, own) in enumerate(zip(groups, self.param_groups)):
            saved_keys, own_keys = set(saved) - {"params"}, set(own) - {"params"}
            if saved_keys != own_keys:
                problems.append(
                    f"group {i}: hyperparameters {sorted(saved_keys)} were saved, {name} has {sorted(own_keys)}"
                )
                continue
            hyperparameters.append({k: _plain(v) for k, v in saved.items() if k != "params"})
            try:
                self._validate(hyperparameters[-1])
            except (ValueError, TypeError) as exc:
                problems.append(f"group {i}: {exc}")
        params = self._params()
        state = {}
        for key, entry in saved_state.items():
            try:
                i = int(key)
            except (TypeError, ValueError):
                problems.append(f"state key {key!r} is not a parameter position (0, 1, ...)")
                continue
            if not 0 <= i < len(params):
                problems.append(f"state for parameter {i}, but there are only {len(params)} parameters")
                continue
            state[params[i]] = self._load_entry(i, params[i], entry, problems)
        if problems:
            raise ValueError(f"{name}.load_state_dict: the saved state does not fit:\n  " + "\n  ".join(problems))
        for saved, own in zip(hyperparameters, self.param_groups):
            own.update(saved)
        self.state = state
        self._place_counts()

    def _load_entry(self, i, p, entry, problems):
        """One parameter's saved state, copied onto ``p``'s device and dtype; problems are appended."""
        expected = set(self.array_state) | set(self.scalar_state)
        required = expected - set(self.optional_state)
        if not isinstance(entry, dict) or not required <= set(entry) <= expected:
            needs = f"{type(self).__name__} needs {sorted(required)}"
            if self.optional_state:
                needs += f" and may have {sorted(self.optional_state)}"
            saved = sorted(entry) if isinstance(entry, dict) else repr(entry)
            problems.append(f"parameter {i}: saved state has {saved}, {needs}")
            return {}
        loaded = {}
        for key in self.array_state:
            if key not in entry:
                continue
            value = entry[key]
            value = value.data if isinstance(value, Tensor) else value
            kind = getattr(getattr(value, "dtype", None), "kind", None)
            if kind not in tuple("biuf"):
                problems.append(f"parameter {i}: {key} must be an array of real numbers, got {_describe(value)}")
                continue
            if tuple(value.shape) != p.shape:
                shape = tuple(value.shape)
                problems.append(f"parameter {i}: {key} has shape {shape}, the parameter has shape {p.shape}")
                continue
            move = backend.to_gpu if p.device == "gpu" else backend.to_cpu
            loaded[key] = move(value).astype(p.dtype, copy=True)
        for key in self.scalar_state:
            value = entry[key]
            value = _plain(value.data if isinstance(value, Tensor) else value)
            if isinstance(value, float) and value.is_integer():  # a capturable optimizer's count, saved as an array
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int):
                problems.append(f"parameter {i}: {key} must be an integer, got {value!r}")
                continue
            loaded[key] = value
        return loaded

    def _place_counts(self):
        """Each parameter's counts (``scalar_state``) where its group keeps them: Python integers, or with
        ``capturable`` 0-d float32 arrays on the parameter's device, which a captured step advances."""
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state.get(p)
                for key in self.scalar_state if state else ():
                    state[key] = as_count(state[key], p.data, group.get("capturable", False))

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


def as_count(value, like, capturable):
    """A step count as a ``capturable`` optimizer keeps it: a 0-d float32 array on ``like``'s device (PyTorch's
    type for it), which a captured step advances on the device; else a Python integer."""
    if capturable:
        return backend.get_array_module(like).asarray(value, dtype="float32").reshape(())
    return int(value.item()) if hasattr(value, "item") else value


def _plain(value):
    """A hyperparameter as a Python number (or tuple of them): NumPy float64 scalars are not weak
    under NumPy 2's promotion rules and would turn float32 updates into float64 ones."""
    if isinstance(value, str):
        return value
    if hasattr(value, "tolist"):  # NumPy/CuPy scalars and arrays, as a checkpoint may return them
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    return value


def _describe(value):
    dtype = getattr(value, "dtype", None)
    return f"{type(value).__name__} of dtype {dtype}" if dtype is not None else repr(value)
