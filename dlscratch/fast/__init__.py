"""The fast path: dlscratch's speed, kept apart from the reference code a learner reads first.

Each module is a faster version of an operation in ``dlscratch/operations/`` or ``dlscratch/optim/``, with the same
signature and the same numbers (the tests run both and compare); ``dlscratch.engine.switch`` picks one,
``dlscratch.reference()`` runs the reference. Importing a module registers its fast versions; ``dlscratch/__init__.py``
imports them all.

- ``layout.py``: activations stay batch-last, as a convolution's GEMM leaves them, so no layer pays a transpose;
  ``threads.py``: large copies split over the cores.
- ``im2col.py``, ``conv.py``: strided-slice im2col, the bias inside the GEMM, col2im in cache-sized bands;
  CUDA kernels in ``conv_kernels.py``.
- ``pooling.py``: the separable maximum with 1-byte winners; ``dropout.py``: the mask in the input's layout.
- ``elementwise.py``, ``bias_relu.py``, ``loss.py``, ``lstm.py``, ``lstm_layer.py``: fewer GPU launches by fusion.
- ``optim.py``: in-place updates without temporaries; ``matmul.py``: outer products as GEMMs.
- ``tuning.py``: every machine-tuned size.

The speed-ups that are no operation's fast version live here too:

- ``graph.py``: the engine's fast path, recording an operation and the walk back in one frame each;
- ``unshared_grads.py``: a leaf adopts a new GEMM gradient without a copy;
- ``kept_arrays.py``: the seed of ``loss.backward()`` and scalar operands made once;
- ``malloc.py``: freed memory kept in the process;
- ``optim_halt.py`` and ``fit_steps.py``: ``fit``'s checks on the GPU, so the host waits only at progress updates.
"""
