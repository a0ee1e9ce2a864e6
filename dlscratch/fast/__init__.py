"""The fast path: dlscratch's speed, kept apart from the reference code a learner reads first.

Each module is a faster version of an operation in ``dlscratch/functions/`` or ``dlscratch/optim/``, with the same
signature and the same numbers (the tests run both and compare); ``dlscratch.paths`` picks one,
``dlscratch.reference()`` runs the reference, and importing this package registers every fast version.

- ``layout.py``: activations stay batch-last, as a convolution's GEMM leaves them, so no layer pays a transpose;
  ``threads.py``: large copies split over the cores.
- ``im2col.py``, ``conv.py``: strided-slice im2col, the bias inside the GEMM, col2im in cache-sized bands;
  CUDA kernels in ``conv_kernels.py``.
- ``pooling.py``: the separable maximum with 1-byte winners; ``dropout.py``: the mask in the input's layout.
- ``elementwise.py``, ``bias_relu.py``, ``loss.py``, ``lstm.py``, ``lstm_layer.py``: fewer GPU launches by fusion.
- ``optim.py``: in-place updates without temporaries; ``matmul.py``: outer products as GEMMs.
- ``tuning.py``: every machine-tuned size.

Speed-ups that are not one operation's live elsewhere: ``dlscratch/one_frame.py`` (the engine),
``dlscratch/memory.py`` (freed memory kept) and ``layers/fresh_grads.py`` (gradients adopted without a copy).
"""

from . import (  # noqa: E402,F401  (importing registers the fast versions)
    bias_relu,
    conv,
    dropout,
    elementwise,
    im2col,
    loss,
    lstm,
    lstm_layer,
    matmul,
    optim,
    pooling,
)
