"""Layer: a leaf's post-accumulate-grad hooks run once per backward pass, when its gradient is whole.

A leaf used by several operations (``x * x + x``) receives its gradient in several parts, one for each use, and
the walk adds each into ``.grad`` as it arrives. PyTorch sums the parts first and calls the hooks of
``register_post_accumulate_grad_hook`` once, with the whole gradient; ``DistributedDataParallel`` relies on it
to send a gradient while the rest of the backward goes on. So before the walk, for each leaf with hooks, the
uses of it that the walk will pass are counted; ``Tensor.accumulate_grad`` asks ``gradient_is_whole`` after
adding each part, and the hooks run with the last one. A use that sends no gradient (a function that returned
None for it) leaves the count above zero: those leaves' hooks run when the walk ends. Only backward passes that
can reach a leaf with hooks pay for the count (``registered``).
"""

import threading

from ...core.backprop import reachable_functions

registered = [0]  # hooks registered and not removed, in the whole process


class _Walks(threading.local):
    def __init__(self):
        self.running = []  # one {id(leaf): [leaf, uses left, got a part]} per backward pass running, innermost last


_walks = _Walks()


def walk_calling_hooks_once(walk, output, grad):
    """``walk(output, grad)``, with every hooked leaf's hooks called once its gradient is whole."""
    uses = {}
    if output.creator is not None:
        for fn in reachable_functions(output.creator):
            for x in fn.inputs:
                if x.creator is None and x._grad_hooks:
                    uses.setdefault(id(x), [x, 0, False])[1] += 1
    _walks.running.append(uses)
    try:
        walk(output, grad)
    finally:
        _walks.running.pop()
    for leaf, left, got_a_part in uses.values():
        if got_a_part and left > 0:
            leaf.run_grad_hooks()


def gradient_is_whole(leaf):
    """Called after a part of ``leaf``'s gradient was added: True when no other part will come in this walk."""
    if not _walks.running:
        return True
    entry = _walks.running[-1].get(id(leaf))
    if entry is None:
        return True
    entry[1] -= 1
    entry[2] = True
    return entry[1] <= 0
