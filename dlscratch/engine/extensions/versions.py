"""Layer: version counters, how a graph notices that a tensor it saved was changed in place.

A backward pass reads arrays that the forward pass saved: ``Mul`` keeps both factors, ``Exp``
its output, ``Linear`` its input and weight. If one of them is overwritten between the forward
and the backward (an optimizer step, ``w.data -= ...``, ``x.fill_(0)``), the backward computes
gradients of a function that was never evaluated, and nothing looks wrong. PyTorch guards
against this with a version counter per tensor; so does dlscratch:

- every tensor has a counter; views of a tensor (reshape, transpose, indexing, ``detach()``)
  share it, since a write through either changes both;
- every in-place write through the library adds one: ``copy_``, ``fill_``, ``zero_``, ``add_``,
  ``mul_``, item assignment, assigning or augmenting ``.data`` (``p.data -= lr * g``), the
  optimizers' updates, the initialisers and ``load_state_dict``;
- backward refuses to run a function if a tensor its backward reads (its inputs, unless
  ``saves_inputs = False``; its outputs, if ``saves_outputs = True``) was written after the
  function was recorded.

Attached at the core's ``Function.output`` (a view shares its base's counter, and the counters of the
outputs a backward reads are kept) and ``Function.run_backward`` (the check), in ``dlscratch/engine/function.py``;
``Tensor.data``'s setter and ``engine/inplace.py`` count the writes.

Not seen: writes into the array itself (``t.data[0] = 1``, ``numpy.copyto(t.data, ...)``),
exactly as PyTorch's ``.data`` is not seen. The library never writes that way.
"""


# One clock for the whole process, the core's: recorded functions take their ``seq`` from it, in-place writes their
# time stamp, so "written after ``fn`` was recorded" is ``last_write > fn.seq``, and recording costs nothing extra.
from ...core.function import clock


class _LatestWrite:
    __slots__ = ("stamp",)


#: When the last in-place write of any tensor happened: backward skips the per-function check
#: of a graph recorded after it (the usual case: the optimizer wrote before the forward pass).
latest_write = _LatestWrite()
latest_write.stamp = -1


class VersionCounter:
    """The in-place writes a tensor's memory has had (``count``) and when the last one happened;
    shared by a tensor and its views. Made on first need: a tensor never written nor viewed has none."""

    __slots__ = ("count", "last_write")

    def __init__(self):
        self.count, self.last_write = 0, -1

    def bump(self):
        self.count += 1
        self.last_write = latest_write.stamp = next(clock)

    def __repr__(self):
        return f"VersionCounter(count={self.count})"


def counter_of(t):
    """``t``'s version counter, made now if it has none yet."""
    if t._version_counter is None:
        t._version_counter = VersionCounter()
    return t._version_counter


def bump(t):
    """Count one in-place write into ``t``'s memory."""
    counter = t._version_counter
    if counter is None:  # ``counter_of``, written inline: every optimizer step counts each parameter's write
        counter = t._version_counter = VersionCounter()
    counter.bump()


def shared_counter(y, inputs):
    """The version counter an output array ``y`` shares: an input's, when ``y`` is a view of that input's memory
    (a write through either changes both); None for a new array."""
    base = y.base
    for x in inputs:
        data = x._data
        if base is data or base is data.base:
            return counter_of(x)
    return None


def keep_output_counter(fn, out):
    """For a function whose backward reads its outputs: keep output ``out``'s counter and shape (the outputs
    themselves are only weakly held), in output order."""
    if "output_counters" not in vars(fn):
        fn.output_counters = []
    fn.output_counters.append((counter_of(out), out.shape))


def check_unchanged(fn):
    """Raise ``RuntimeError`` if a tensor that ``fn``'s backward reads was written in place after
    ``fn`` ran (called by backward just before ``fn.backward``)."""
    if fn.saves_inputs:
        for i, x in enumerate(fn.inputs):
            counter = x._version_counter
            if counter is not None and counter.last_write > fn.seq:
                _raise(fn, f"its input {i} ({_describe(x)})", counter.count)
    if fn.saves_outputs:
        for i, (counter, shape) in enumerate(fn.output_counters):
            if counter.last_write > fn.seq:
                _raise(fn, f"its output {i} (shape {shape})", counter.count)


def _describe(x):
    named = f" {x.name!r}" if x.name else ""
    return f"{type(x).__name__}{named} of shape {x.shape}, {x.dtype}"


def _raise(fn, what, count):
    raise RuntimeError(
        f"backward through {fn.name}: {what} was changed in place after {fn.name} used it (it is now at "
        f"version {count}), so its gradient would be computed from values {fn.name} never saw. "
        "Typical causes: optimizer.step() or a write to .data between the forward pass and a second "
        "backward(), or fill_/copy_/item assignment on a tensor the graph still needs. Run the forward "
        "pass again after changing the tensor, or change a copy (x.clone()) instead."
    )
