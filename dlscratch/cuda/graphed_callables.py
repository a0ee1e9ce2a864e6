"""PyTorch's ``torch.cuda.make_graphed_callables``: part of a network captured as two CUDA graphs, its forward and its
backward, inside a training loop that stays eager around it.

Capturing a whole step (``graphs.py``) needs every part of it capturable, the optimizer and the loss included. This
captures one part, a module or a function, so that the rest (a loss that reads labels on the host, an optimizer that
counts steps on the host, logging) can stay as it is. Each callable is warmed up eagerly, then its forward is
captured into one graph and the backward of its outputs, to its arguments and parameters, into a second graph on
the same memory pool. A call of the graphed callable is one autograd node (``Graphed``): its forward copies the
arguments into the tensors the capture read and replays the forward graph; its backward copies the incoming
gradients into the tensors the backward capture read, replays it, and hands on the gradients it wrote, so that the
parameters' ``.grad`` add up as in eager mode.

A graph replays on the shapes and memory of its capture, so a graphed callable takes arguments exactly like its
sample args (count, shape, dtype, device, requires_grad) and refuses others; its outputs are the capture's own
tensors, which the next call overwrites (clone one to keep it). As in PyTorch: a tuple of callables shares one
memory pool, so they must run in the order of the tuple (and their backward in the reverse order); a module must
have no hooks when it is graphed (hooks added later run, outside the graph); a graphed module whose training mode
differs from the one it was graphed in runs its own forward eagerly; under ``autocast`` the cache of casts is
off (``cache_enabled=False``), or the graphs would replay the warm-up's casts of the parameters.

    model = dlscratch.cuda.make_graphed_callables(model, (static_x,))  # static_x: a batch on the GPU
    loss = F.cross_entropy(model(x), y)  # x: shaped like static_x; the loss, backward and step stay eager
    loss.backward()
    optimizer.step()
"""

import functools

from .. import autograd
from ..amp.autocast import is_autocast_cache_enabled, is_autocast_enabled
from ..autograd_function import Function
from ..engine.creation import ones_like, zeros_like
from ..engine.tensor import Tensor
from ..nn.module import Module
from .graphs import CUDAGraph, graph, graph_pool_handle


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False):
    """Graphed versions of ``callables``: a module or function with a tuple of sample tensors ``sample_args``, or a
    tuple of them with a tuple of such tuples (then returns a tuple). A module is returned itself, its ``forward``
    replaced; a function, by a new function. ``allow_unused_input``: an argument or parameter that the outputs do
    not depend on gets no gradient (None) instead of being refused. See the module docstring for the rules."""
    if is_autocast_enabled("cuda") and is_autocast_cache_enabled():
        raise RuntimeError("make_graphed_callables does not take autocast's cache (a parameter's cast kept from "
                           "the warm-up would be replayed stale): use autocast('cuda', cache_enabled=False)")
    one = not isinstance(callables, tuple)
    if one:
        callables, sample_args = (callables,), (sample_args,)
    _check(callables, sample_args, num_warmup_iters)
    captures = [_Capture(fn, args) for fn, args in zip(callables, sample_args)]
    for capture in captures:
        for _ in range(num_warmup_iters):  # what is made once (kept constants, kernels) is made outside the graphs
            outputs, _ = _as_outputs(capture.fn(*capture.static_inputs))
            capture.grads(outputs, [ones_like(o) for o in outputs if o.requires_grad], allow_unused_input)
    pool = graph_pool_handle()  # in the order they will replay: forward 1..n, then backward n..1
    for capture in captures:
        capture.capture_forward(pool)
    for capture in reversed(captures):
        capture.capture_backward(pool, allow_unused_input)
    graphed = [capture.graphed() for capture in captures]
    return graphed[0] if one else tuple(graphed)


class _Capture:
    """One callable's two graphs and the tensors they read and write: the static inputs (sample args, then the
    module's parameters), outputs, gradients of the outputs, and gradients of the inputs."""

    def __init__(self, fn, args):
        self.fn, self.static_inputs = fn, tuple(args)
        named = list(fn.named_parameters()) if isinstance(fn, Module) else []
        self.params = tuple([p for _, p in named])
        self.names = [f"argument {i}" for i in range(len(args))] + [f"parameter {name!r}" for name, _ in named]
        self.forward_graph, self.backward_graph = CUDAGraph(), None

    def capture_forward(self, pool):
        with graph(self.forward_graph, pool=pool):
            self.static_outputs, self.single = _as_outputs(self.fn(*self.static_inputs))

    def capture_backward(self, pool, allow_unused):
        self.static_grad_outputs = tuple([zeros_like(o) if o.requires_grad else None for o in self.static_outputs])
        outputs = [o for o in self.static_outputs if o.requires_grad]
        surface = self.static_inputs + self.params
        self.static_grads = (None,) * len(surface)
        if outputs and any(t.requires_grad for t in surface):
            self.backward_graph = CUDAGraph()
            with graph(self.backward_graph, pool=pool):
                seeds = [g for g in self.static_grad_outputs if g is not None]
                self.static_grads = self.grads(outputs, seeds, allow_unused)

    def grads(self, outputs, grad_outputs, allow_unused):
        """PyTorch's ``autograd.grad``: the gradients of ``outputs``, seeded with ``grad_outputs``, with respect to
        each static input (None where it does not require grad), leaving every ``.grad`` as it was."""
        surface = self.static_inputs + self.params
        wanted = list({id(t): t for t in surface if t.requires_grad}.values())
        if not outputs or not wanted:
            return (None,) * len(surface)
        kept = [t.grad for t in wanted]
        for t in wanted:
            t.grad = None
        try:
            autograd.backward(outputs, grad_outputs, inputs=wanted)
            found = {id(t): t.grad for t in wanted}
        finally:
            for t, g in zip(wanted, kept):
                t.grad = g
        for name, t in zip(self.names, surface):
            if t.requires_grad and found[id(t)] is None and not allow_unused:
                raise RuntimeError(f"make_graphed_callables: {name} (shape {t.shape}) requires grad but the outputs "
                                   "do not depend on it; pass allow_unused_input=True to give it no gradient")
        return tuple([found.get(id(t)) for t in surface])

    def __call__(self, *args, **kwargs):
        """Check ``args`` against the sample args, then replay, as one autograd node."""
        self.check(args, kwargs)
        outputs = Graphed.apply(self, *args, *self.params)
        return outputs[0] if self.single else outputs

    def check(self, args, kwargs):
        name = getattr(self.fn, "__name__", type(self.fn).__name__)
        if kwargs:
            raise TypeError(f"graphed {name}: keyword arguments {sorted(kwargs)} are not taken; pass the arguments "
                            "positionally, as in sample_args")
        if len(args) != len(self.static_inputs):
            raise TypeError(f"graphed {name}: got {len(args)} arguments, but it was captured with "
                            f"{len(self.static_inputs)} (its sample_args)")
        for i, (x, static) in enumerate(zip(args, self.static_inputs)):
            if not isinstance(x, Tensor):
                raise TypeError(f"graphed {name}: argument {i} is {type(x).__name__}, not a tensor")
            if x.device != static.device:
                raise RuntimeError(f"graphed {name}: argument {i} is on the {x.device.upper()}, but a CUDA graph runs "
                                   "on the GPU; move it there with .to('cuda')")
            for rule, got, captured in (("shape", x.shape, static.shape), ("dtype", x.dtype, static.dtype),
                                        ("requires_grad", x.requires_grad, static.requires_grad)):
                if got != captured:
                    raise RuntimeError(
                        f"graphed {name}: argument {i} has {rule} {got}, but the graph was captured with {captured}: "
                        "a CUDA graph replays on the fixed shapes and memory of its capture, so pass arguments like "
                        "the sample args (or graph another callable for these)")

    def graphed(self):
        """The module, its ``forward`` replaced (eager in the other training mode), or a function."""
        if not isinstance(self.fn, Module):
            def graphed(*args, **kwargs):
                return self(*args, **kwargs)
            return functools.update_wrapper(graphed, self.fn)
        module, eager_forward, training = self.fn, self.fn.forward, self.fn.training

        def forward(*args, **kwargs):
            if module.training != training:
                return eager_forward(*args, **kwargs)
            return self(*args, **kwargs)
        self.fn.forward = forward
        return self.fn


class Graphed(Function):
    """One call of a graphed callable: ``apply(capture, *args, *params)``; forward and backward replay its graphs."""

    @staticmethod
    def forward(ctx, capture, *tensors):
        ctx.capture = capture
        for static, x in zip(capture.static_inputs, tensors):
            if x is not static:
                static.copy_(x)
        capture.forward_graph.replay()
        ctx.mark_non_differentiable(*[o for o in capture.static_outputs if not o.requires_grad])
        return capture.static_outputs

    @staticmethod
    def backward(ctx, *grads):
        capture = ctx.capture
        for static, g in zip(capture.static_grad_outputs, grads):
            if static is not None:
                static.copy_(g)
        if capture.backward_graph is not None:
            capture.backward_graph.replay()
        return (None, *capture.static_grads)


def _as_outputs(result):
    """A callable's result as a tuple of tensors, and whether it was one tensor."""
    if isinstance(result, Tensor):
        return (result,), True
    if isinstance(result, (tuple, list)) and result and all(isinstance(o, Tensor) for o in result):
        return tuple(result), False
    raise TypeError(f"make_graphed_callables: a callable must return a tensor or a tuple of tensors, got "
                    f"{type(result).__name__}")


def _check(callables, sample_args, num_warmup_iters):
    """Refuse what cannot be graphed, before any work: see the module docstring."""
    if not isinstance(sample_args, tuple) or len(sample_args) != len(callables):
        raise TypeError(f"make_graphed_callables: pass one tuple of sample args per callable ({len(callables)}), "
                        f"as a tuple of tuples")
    if not isinstance(num_warmup_iters, int) or num_warmup_iters < 0:
        raise ValueError(f"make_graphed_callables: num_warmup_iters must be an int >= 0, got {num_warmup_iters!r}")
    for k, (fn, args) in enumerate(zip(callables, sample_args)):
        where = f"make_graphed_callables: callable {k} ({type(fn).__name__})"
        if not callable(fn):
            raise TypeError(f"{where} is not callable")
        if not isinstance(args, tuple) or not all(isinstance(x, Tensor) for x in args):
            raise TypeError(f"{where}: its sample args must be a tuple of tensors, such as (x,)")
        tensors = [(f"sample arg {i}", x) for i, x in enumerate(args)]
        if isinstance(fn, Module):
            hooked = [name or "the module" for name, m in fn.named_modules() if m._forward_pre_hooks]
            if hooked:
                raise RuntimeError(f"{where}: modules must have no hooks when they are graphed ({', '.join(hooked)} "
                                   "has some), since a graph would replay what a hook did once; register hooks "
                                   "after graphing")
            if any(b.requires_grad for b in fn.buffers()):
                raise RuntimeError(f"{where}: only parameters may be trained; its buffers must have "
                                   "requires_grad=False")
            tensors += [(f"parameter {name!r}", p) for name, p in fn.named_parameters()]
        for what, x in tensors:
            if x.device != "gpu":
                raise RuntimeError(f"{where}: {what} is on the CPU, but CUDA graphs capture GPU work; move the "
                                   "sample args and the module to the GPU with .to('cuda')")
