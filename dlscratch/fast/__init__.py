"""The fast path: where dlscratch's speed lives, apart from the code a learner reads first.

Each module here holds the fast implementation of operations whose reference implementation is
in ``dlscratch/functions/`` or ``dlscratch/optim/``: the same signature, the same numbers (tests
run both and compare), and a docstring that says what makes it faster and why; ``python -m
dlscratch.bench`` measures by how much. ``dlscratch.paths`` picks one or the other;
``dlscratch.reference()`` runs the reference path. Importing this package registers every fast version.

The tricks, and where each lives:

- ``layout.py``: the batch-last layout. A convolution's GEMM produces ``(O, Ho, Wo, N)``; its
  output is a view of that memory, and the operations after it keep the layout, so no transposing
  copy is paid between layers.
- ``threads.py``: large copies split over the CPU's cores in Python threads (NumPy copies on one).
- ``im2col.py``: column matrices filled by strided-slice copies from batch-last memory, in threads;
  the CUDA kernels of ``conv_kernels.py`` on the GPU.
- ``conv.py``: the bias as one more row of the GEMM, col2im in cache-sized bands, gradients a leaf
  keeps without a copy.
- ``pooling.py``: the separable maximum with 1-byte winner offsets, and the max-pool backward
  variants lesson 05 compares; ``dropout.py``: masks drawn in the input's layout.
- ``elementwise.py``: ReLU's backward on the GPU in one kernel; ``bias_relu.py``: a Linear's or Conv2d's bias
  and the ReLU after it in one kernel, found by ``Sequential``.
- ``loss.py``: cross-entropy on the GPU in two kernels and a sum, its label check without a host wait.
- ``optim.py``: parameter updates without temporaries (``out=``), on the CPU in cache-sized blocks, on the GPU
  one fused kernel per parameter (``optim_kernels.py``), always in place in the parameter's own arrays.
- ``matmul.py``: outer products (weight gradients at batch size 1) as padded GEMMs.
- ``lstm.py``: the LSTM's point-wise half as one fused CUDA kernel (``lstm_kernels.py``);
  ``lstm_layer.py``: a layer's time loop on the GPU without copies or memsets, two launches per step.
- ``tuning.py``: every machine-tuned size above, with the reason for its value.

Three speed-ups are not here, because they are not implementations of one operation: the engine recording an
operation and walking back in one Python frame each (``dlscratch/one_frame.py``, chosen in ``Function.__call__``
and ``autograd.backward``), keeping freed memory in the process (``dlscratch/memory.py``, switched on
explicitly) and a leaf keeping a new gradient without a copy (``layers/fresh_grads.py``).
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
