"""The library's layers: what ``dlscratch`` adds to the core (``dlscratch/core/``) to be safe to use.

The core is the idea: tensors, functions, the walk back. Each module here adds one guarantee and says where
it attaches: ``dlscratch/function.py`` and ``dlscratch/tensor.py`` subclass the core's ``Function`` and
``Tensor`` and fill in the core's extension points (``prepare``, ``failed``, ``output``,
``run_backward``) with these layers; ``dlscratch/autograd.py`` runs the walk back and then the callbacks. On the
fast path the engine runs the same layers inline, in one frame (``dlscratch/one_frame.py``). Skip this folder to
read the engine; read a module here to see what one guarantee costs in code.

    constants.py        numbers and arrays as operands: x * 2.0, x + array
    devices.py          one device per operation, or a clear error
    dtypes.py           the dtype rule: integers never widen a float tensor (PyTorch's)
    errors.py           errors with the operation's name and shapes; one call per Function instance; a .grad of
                        the wrong shape refused before backward changes anything
    versions.py         version counters: backward refuses values changed in place since the forward pass
    fresh_grads.py      a leaf keeps a new GEMM gradient without a copy
    callbacks.py        callbacks at the end of backward (DistributedDataParallel)
    leaf_hooks.py       a leaf's post-accumulate-grad hooks run once per backward, with the whole gradient
    deferred_checks.py  a fast kernel's check, run where the host reads its result
    seeds.py            the implicit 1 of loss.backward(): one kept array, no fill per step
    kept.py             what seeds.py and constants.py share: arrays kept read-only, made once

Two more layers live with what they serve: autocast (``dlscratch/amp/``) and the fast path's registry
(``dlscratch/paths.py``).
"""
