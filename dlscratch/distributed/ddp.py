"""``DistributedDataParallel``: one copy of the model per rank, the gradients averaged during backward.

    dist.init_process_group()
    model = DistributedDataParallel(net, bucket_cap_mb=25)   # rank 0's weights on every rank
    loss_fn(model(x), y).backward()                          # every .grad is the mean over the ranks
    optimizer.step()                                          # the same step on every rank

Each rank computes the gradient of its own share of the batch; the mean of the ranks' gradients is the
gradient of the whole batch's mean loss, so N ranks at batch B/N train the weights that one process at
batch B trains, up to float32 round-off.

The averaging rides on the backward pass. The parameters are cut into buckets of about ``bucket_cap_mb``
megabytes, in reverse order (the order in which backward reaches them). A hook on each parameter
(``register_post_accumulate_grad_hook``) marks it ready; when a bucket is ready its gradients are packed
into one flat array and a non-blocking all-reduce (MPI's ``Iallreduce``, or NCCL on GPUs) starts, while
backward goes on with the layers below. When backward has reached every leaf (``autograd.queue_callback``)
the remaining buckets are sent, every reduction is waited for, and the means are written back into the
gradients. A parameter that no rank has a gradient for (a branch the step did not use) keeps none, as in one
process, so that an optimizer leaves it alone: each bucket carries, after its gradients, one number per
parameter, the count of ranks that have one (PyTorch's ``find_unused_parameters`` finds the same). A parameter
used twice in a step (a module applied twice) is sent once, with its whole gradient. A smaller bucket starts
sending sooner but pays MPI's latency more often: lesson 11 measures it.
"""

import contextlib

from .. import autograd, backend
from ..engine.grad_mode import no_grad
from ..engine.tensor import Tensor
from ..nn.module import Module
from . import nccl
from .collectives import all_gather_object, broadcast, widened
from .process_group import communicator, get_rank, get_world_size, mpi, start_collective, watched

#: the gradients' all-reduce, as the watchdog's messages name it (``watchdog.py``)
REDUCTION = "DistributedDataParallel's all-reduce of the gradients"


class DistributedDataParallel(Module):
    def __init__(self, module, bucket_cap_mb=25):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: expected an nn.Module, got {type(module).__name__}")
        if isinstance(bucket_cap_mb, bool) or not isinstance(bucket_cap_mb, (int, float)) or not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be a number > 0, got {bucket_cap_mb!r}")
        self.module = module
        _check_same_model(module)
        with no_grad():
            for tensor in [*module.parameters(), *module.buffers()]:
                broadcast(tensor.data, src=0)  # rank 0's weights everywhere
        params = [p for p in module.parameters() if p.requires_grad]
        object.__setattr__(self, "bucket_cap_mb", bucket_cap_mb)
        object.__setattr__(self, "_buckets", _buckets(params[::-1], bucket_cap_mb * 2**20))
        object.__setattr__(self, "_bucket_of", {id(p): b for b in self._buckets for p in b})
        object.__setattr__(self, "_syncing", True)
        object.__setattr__(self, "_pass", None)
        object.__setattr__(self, "_handles", [p.register_post_accumulate_grad_hook(self._ready) for p in params])

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, backward leaves the gradients as they are (to accumulate several batches locally);
        the first backward after it averages what has accumulated."""
        object.__setattr__(self, "_syncing", False)
        try:
            yield
        finally:
            object.__setattr__(self, "_syncing", True)

    def _ready(self, p):
        if not self._syncing or get_world_size() == 1:
            return
        if self._pass is None:
            object.__setattr__(self, "_pass", _Pass())
            autograd.queue_callback(self._finish)
        self._pass.ready.add(id(p))  # once per pass, with its whole gradient (a parameter used twice included)
        bucket = self._bucket_of[id(p)]
        if all(id(q) in self._pass.ready for q in bucket):
            self._pass.send(bucket)

    def _finish(self):
        state, _ = self._pass, object.__setattr__(self, "_pass", None)
        for bucket in self._buckets:
            if not state.sent(bucket):
                state.send(bucket)
        state.wait_and_write()

    def extra_repr(self):
        return f"bucket_cap_mb={self.bucket_cap_mb}, buckets={len(self._buckets)}, world_size={get_world_size()}"


class _Pass:
    """One backward pass's reductions: the buckets sent and their flat arrays and requests."""

    def __init__(self):
        self.ready, self.requests = set(), []

    def sent(self, bucket):
        return any(request[0] is bucket for request in self.requests)

    def send(self, bucket):
        """Pack the bucket's gradients (zeros for a parameter that has none on this rank), then one count per
        parameter of the ranks that have one, and start their all-reduce."""
        xp = backend.get_array_module(bucket[0].data)
        has = xp.asarray([p.grad is not None for p in bucket], dtype=bucket[0].dtype)
        flat = xp.concatenate([(p.grad.data if p.grad is not None else xp.zeros_like(p.data)).reshape(-1)
                               for p in bucket] + [has])
        if backend.is_gpu_array(flat) and nccl.usable():
            nccl.all_reduce(flat, "sum")  # queued on the stream: nothing to wait for on the host
            self.requests.append((bucket, flat, None, None))
            return
        host, number = widened(backend.to_cpu(flat)), start_collective()
        request = communicator().Iallreduce(mpi().IN_PLACE, host, op=mpi().SUM)
        self.requests.append((bucket, flat, host, (request, number)))

    def wait_and_write(self):
        world = get_world_size()
        for bucket, flat, host, pending in self.requests:
            if pending is not None:
                request, number = pending
                watched(number, REDUCTION, request.Wait)
            mean = (host if host is not None else flat) / world
            if backend.is_gpu_array(flat) and host is not None:
                mean = backend.get_array_module(flat).asarray(mean)
            start, counts = 0, mean[len(mean) - len(bucket):]
            for p, count in zip(bucket, counts.tolist()):
                part = mean[start:start + p.data.size].reshape(p.shape)
                start += p.data.size
                if count == 0:  # no rank has a gradient for it: it keeps none, as one process would
                    continue
                if p.grad is None:
                    p.grad = Tensor(part.astype(p.dtype))
                else:
                    p.grad.data[...] = part


def _buckets(params, capacity):
    """``params`` in order, cut into lists of at most ``capacity`` bytes (at least one parameter each) that
    share a dtype and a device."""
    buckets, size = [], 0
    for p in params:
        nbytes = p.data.size * p.data.itemsize
        fits = buckets and size + nbytes <= capacity and p.dtype == buckets[-1][0].dtype \
            and p.device == buckets[-1][0].device
        if not fits:
            buckets.append([])
            size = 0
        buckets[-1].append(p)
        size += nbytes
    return buckets


def _check_same_model(module):
    """Raise ValueError on every rank when the ranks' models differ in their parameters' or buffers' names,
    shapes or dtypes (the all-reduces would mix unrelated numbers, or wait forever)."""
    mine = [(name, tuple(t.shape), str(t.dtype)) for name, t in [*module.named_parameters(), *module.named_buffers()]]
    everyone = all_gather_object(mine)
    for rank, theirs in enumerate(everyone):
        if theirs != everyone[0]:
            difference = next(((a, b) for a, b in zip(everyone[0], theirs) if a != b), None)
            detail = (f"rank 0 has {difference[0]}, rank {rank} has {difference[1]}" if difference else
                      f"rank 0 has {len(everyone[0])} tensors, rank {rank} has {len(theirs)}")
            raise ValueError(f"DistributedDataParallel: the ranks' models differ ({detail}); build the same model "
                             f"on every rank (this is rank {get_rank()})")
