"""The engine's extensions: what ``dlscratch`` adds to the core (``dlscratch/core/``) to be safe to use.

The core is the idea: tensors, functions, the walk back. Each module here adds one guarantee and says where
it attaches: ``engine/function.py`` and ``engine/tensor.py`` subclass the core's ``Function`` and ``Tensor`` and fill
in the core's extension points (``prepare``, ``failed``, ``output``, ``run_backward``) with these modules;
``dlscratch.autograd.propagate`` runs the walk back and then the callbacks. On the fast path the engine runs the
same checks inline, in one frame (``fast/graph.py``). Skip this folder to read the engine; read a module here to see
what one guarantee costs in code.

    operands.py         numbers and arrays as operands: x * 2.0, x + array
    devices.py          one device per operation, or a clear error
    dtypes.py           the dtype rule: integers never widen a float tensor (PyTorch's)
    errors.py           errors with the operation's name and shapes; one call per Function instance; a .grad of
                        the wrong shape refused before backward changes anything
    versions.py         version counters: backward refuses values changed in place since the forward pass
    callbacks.py        callbacks at the end of backward (DistributedDataParallel)
    leaf_hooks.py       a leaf's post-accumulate-grad hooks run once per backward, with the whole gradient
    deferred_checks.py  a fast kernel's check, run where the host reads its result

Two more extensions live with what they serve: autocast's wrappers (``dlscratch/amp/``, through
``engine/wrappable.py``) and the switch between the two paths (``engine/switch.py``).
"""
