"""What each rank runs in tests/test_distributed.py: ``mpiexec -n N python worker.py MODE OUT``.

Every mode trains or reduces something small and writes rank 0's results to ``OUT`` (a checkpoint file; JSON for
"ops"), or fails on purpose.
"""

import functools
import json
import sys
import time
from datetime import timedelta

import numpy

import dlscratch
import dlscratch.distributed as dist
import dlscratch.functional as F
from dlscratch import backend, nn, optim
from dlscratch.data import DataLoader, TensorDataset, blobs
from dlscratch.training import fit

BATCH = 24  # the batch of all ranks together
DTYPES = ("bool", "int8", "int32", "int64", "float16", "float32", "float64")


def data():
    x, y = blobs(n_per_class=40, n_classes=3, std=0.8, seed=0)  # 120 samples: 5 batches of 24
    return TensorDataset(x, y)


def model(hidden=16):
    dlscratch.manual_seed(1 + dist.get_rank())  # different on every rank: DDP must broadcast rank 0's
    return nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, 3))


def train(steps_or_epochs, how, state=None, bucket_cap_mb=25):
    """Train a DDP model with SGD momentum; ``how``: "fit" (epochs) or "loop" (steps). Returns model, optimizer."""
    net = dist.DistributedDataParallel(model(), bucket_cap_mb=bucket_cap_mb)
    optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    if state is not None:
        net.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    dataset = data()
    loader = DataLoader(dataset, batch_size=BATCH // dist.get_world_size(),
                        sampler=dist.DistributedSampler(dataset, seed=7))
    if how == "fit":
        fit(net, F.cross_entropy, optimizer, loader, epochs=steps_or_epochs)
    else:
        batches = iter(loader)
        for _ in range(steps_or_epochs):
            x, y = next(batches)
            optimizer.zero_grad()
            F.cross_entropy(net(x), y).backward()
            optimizer.step()
    return net, optimizer


class Branchy(nn.Module):
    """A trunk applied twice, a head used at every step and one used only at the first."""

    def __init__(self):
        super().__init__()
        self.trunk, self.head, self.first_only = nn.Linear(2, 2), nn.Linear(2, 3), nn.Linear(2, 3)

    def forward(self, x, step):
        h = self.trunk(self.trunk(x).tanh()).tanh()
        return self.head(h) + self.first_only(h) if step == 1 else self.head(h)


def train_branchy(steps, bucket_cap_mb, device="cpu"):
    """Adam steps of a DDP ``Branchy``: a parameter with no gradient must keep none, or Adam moves it."""
    dlscratch.manual_seed(1 + dist.get_rank())
    net = dist.DistributedDataParallel(Branchy().to(device), bucket_cap_mb=bucket_cap_mb)
    optimizer = optim.Adam(net.parameters(), lr=0.05)
    dataset = data()
    batches = iter(DataLoader(dataset, batch_size=BATCH // dist.get_world_size(),
                              sampler=dist.DistributedSampler(dataset, seed=7)))
    for step in range(1, steps + 1):
        x, y = next(batches)
        optimizer.zero_grad()
        F.cross_entropy(net(x.to(device), step), y.to(device)).backward()
        optimizer.step()
    return net, optimizer


def train_on_the_gpu(steps, bucket_cap_mb):
    """``train(steps, "loop")`` with the model and the batches on the GPU. Returns the model and the optimizer."""
    net = dist.DistributedDataParallel(model().to("gpu"), bucket_cap_mb=bucket_cap_mb)
    optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    dataset = data()
    batches = iter(DataLoader(dataset, batch_size=BATCH // dist.get_world_size(),
                              sampler=dist.DistributedSampler(dataset, seed=7)))
    for _ in range(steps):
        x, y = next(batches)
        optimizer.zero_grad()
        F.cross_entropy(net(x.to("gpu")), y.to("gpu")).backward()
        optimizer.step()
    return net, optimizer


def save(out, net, optimizer, **extra):
    if dist.get_rank() == 0:
        dlscratch.save({"model": net.module.state_dict(), "optimizer": optimizer.state_dict(), **extra}, out)


def ddp_steps():
    """``(step number, run that step)`` for SGD steps of a DDP model over its share of ``data()``, batch 8."""
    net = dist.DistributedDataParallel(model())
    optimizer = optim.SGD(net.parameters(), lr=0.1)
    dataset = data()
    loader = DataLoader(dataset, batch_size=8, sampler=dist.DistributedSampler(dataset, seed=7))

    def train_step(x, y):
        optimizer.zero_grad()
        F.cross_entropy(net(x), y).backward()
        optimizer.step()

    for step, (x, y) in enumerate(loader, start=1):
        yield step, functools.partial(train_step, x, y)


def main(mode, out, *args):
    late = mode == "late" or (mode == "recv_from_leaver" and args[0] == "late")
    dist.init_process_group(timeout=timedelta(seconds=1) if late else None)
    if mode == "fit":
        net, optimizer = train(2, "fit")
        save(out, net, optimizer)
    elif mode == "steps":  # args: the bucket size in MB
        net, optimizer = train(3, "loop", bucket_cap_mb=float(args[0]))
        save(out, net, optimizer)
    elif mode == "gpu steps":  # args: the bucket size in MB
        net, optimizer = train_on_the_gpu(3, float(args[0]))
        save(out, net.to("cpu"), optimizer)
    elif mode == "branchy":  # args: the bucket size in MB
        net, optimizer = train_branchy(4, float(args[0]), *args[1:])
        save(out, net.to("cpu"), optimizer)
    elif mode == "resume":  # args: the checkpoint to resume from
        net, optimizer = train(3, "loop", state=dlscratch.load(args[0]))
        save(out, net, optimizer)
    elif mode == "collectives":
        results = {}
        for device in ("cpu", "gpu") if backend.gpu_available() else ("cpu",):
            move = backend.to_gpu if device == "gpu" else numpy.asarray
            rank = dist.get_rank()
            t = dlscratch.tensor(move(numpy.arange(4, dtype=numpy.float32) + 10 * rank))
            results[f"{device}_sum"] = dist.all_reduce(dlscratch.tensor(t.data.copy())).data
            results[f"{device}_avg"] = dist.all_reduce(dlscratch.tensor(t.data.copy()), dist.ReduceOp.AVG).data
            results[f"{device}_max"] = dist.all_reduce(dlscratch.tensor(t.data.copy()), dist.ReduceOp.MAX).data
            results[f"{device}_bcast"] = dist.broadcast(dlscratch.tensor(t.data.copy()), src=1).data
        gathered = dist.all_gather_object({"rank": dist.get_rank()})
        if dist.get_rank() == 0:
            dlscratch.save({**results, "gathered": [g["rank"] for g in gathered]}, out)
    elif mode == "messages":  # rank 0 sends, rank 1 answers with the values doubled, blocking then not
        results = {}
        for device in ("cpu", "gpu") if backend.gpu_available() else ("cpu",):
            move = backend.to_gpu if device == "gpu" else numpy.asarray
            t = dlscratch.tensor(move(numpy.zeros((2, 3), dtype=numpy.float32)))
            if dist.get_rank() == 0:
                for bad in (0, 2, "1"):
                    try:
                        dist.send(t, dst=bad)
                    except ValueError as error:
                        results[f"{device}_refused_{bad}"] = str(error)
                dist.send(dlscratch.tensor(move(numpy.arange(6, dtype=numpy.float32).reshape(2, 3))), dst=1)
                results[f"{device}_sender"] = dist.recv(t)  # any source
                results[f"{device}_blocking"] = backend.to_cpu(t.data).copy()
                work = dist.irecv(t, src=1, tag=5)
                work.wait()
                results[f"{device}_nonblocking"] = backend.to_cpu(t.data).copy()
                results[f"{device}_completed"] = work.is_completed()
            else:
                dist.recv(t, src=0)
                dist.send(dlscratch.tensor(t.data * 2), dst=0)
                work = dist.isend(dlscratch.tensor(t.data * 3), dst=0, tag=5)
                work.wait()
        if dist.get_rank() == 0:
            dlscratch.save(results, out)
    elif mode == "raise":
        for step, train_step in ddp_steps():
            if dist.get_rank() == 1 and step == 3:
                raise RuntimeError("rank 1 fails on purpose at step 3")
            train_step()
    elif mode == "ops":  # every op on every dtype: the result, or the error and whether the tensor changed
        results, rank = {}, dist.get_rank()
        for device in ("cpu", "gpu") if backend.gpu_available() else ("cpu",):
            move = backend.to_gpu if device == "gpu" else numpy.asarray
            for dtype in DTYPES:
                for op in ("sum", "product", "min", "max", "avg"):
                    given = numpy.array([True, rank == 0]) if dtype == "bool" else numpy.array([1 + rank, 10], dtype)
                    t = dlscratch.tensor(move(given))
                    try:
                        results[f"{device} {dtype} {op}"] = backend.to_cpu(dist.all_reduce(t, op).data).tolist()
                    except TypeError as error:
                        unchanged = bool(numpy.array_equal(backend.to_cpu(t.data), given))
                        results[f"{device} {dtype} {op}"] = {"error": str(error), "unchanged": unchanged}
        results["after"] = dist.all_reduce(dlscratch.tensor(numpy.ones(2, numpy.float32))).numpy().tolist()
        everyone = dist.all_gather_object(results)
        if dist.get_rank() == 0:
            with open(out, "w") as file:
                json.dump(everyone, file)
    elif mode == "leave":  # args: how rank 1 leaves after 2 steps ("return" or "destroy"); rank 0 runs 3
        for step, train_step in ddp_steps():
            if dist.get_rank() == 1 and step == 3:
                if args[0] == "destroy":
                    dist.destroy_process_group()
                    time.sleep(60)  # still running, but no longer in the group
                return
            train_step()
    elif mode == "late":  # rank 1 comes to the all-reduce 60 s late; the group's timeout is 1 s
        if dist.get_rank() == 1:
            time.sleep(60)
        dist.all_reduce(dlscratch.tensor(numpy.ones(2, numpy.float32)))
    elif mode == "recv_from_leaver":  # args: "wait" (rank 1 sends nothing and ends) or "late" (it sleeps 60 s)
        t = dlscratch.tensor(numpy.zeros(3, numpy.float32))
        if dist.get_rank() == 0:
            if args[1] == "irecv":
                dist.irecv(t, src=1).wait()
            else:
                dist.recv(t, src=1)
        elif args[0] == "late":
            time.sleep(60)
    elif mode == "mismatch":
        dist.DistributedDataParallel(model(hidden=16 if dist.get_rank() == 0 else 9))
    else:
        raise ValueError(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(*sys.argv[1:])
