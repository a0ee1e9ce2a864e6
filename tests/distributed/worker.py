"""What each rank runs in tests/test_distributed.py: ``mpiexec -n N python worker.py MODE OUT``.

Every mode trains or reduces something small and writes rank 0's results to ``OUT`` (a checkpoint file).
"""

import sys

import numpy

import dlscratch
import dlscratch.distributed as dist
import dlscratch.functional as F
from dlscratch import backend, nn, optim
from dlscratch.data import DataLoader, TensorDataset, blobs
from dlscratch.training import fit

BATCH = 24  # the batch of all ranks together


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


def save(out, net, optimizer, **extra):
    if dist.get_rank() == 0:
        dlscratch.save({"model": net.module.state_dict(), "optimizer": optimizer.state_dict(), **extra}, out)


def main(mode, out, *args):
    dist.init_process_group()
    if mode == "fit":
        net, optimizer = train(2, "fit")
        save(out, net, optimizer)
    elif mode == "steps":  # args: the bucket size in MB
        net, optimizer = train(3, "loop", bucket_cap_mb=float(args[0]))
        save(out, net, optimizer)
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
        net = dist.DistributedDataParallel(model())
        optimizer = optim.SGD(net.parameters(), lr=0.1)
        dataset = data()
        loader = DataLoader(dataset, batch_size=8, sampler=dist.DistributedSampler(dataset, seed=7))
        for step, (x, y) in enumerate(loader, start=1):
            if dist.get_rank() == 1 and step == 3:
                raise RuntimeError("rank 1 fails on purpose at step 3")
            optimizer.zero_grad()
            F.cross_entropy(net(x), y).backward()
            optimizer.step()
    elif mode == "mismatch":
        dist.DistributedDataParallel(model(hidden=16 if dist.get_rank() == 0 else 9))
    else:
        raise ValueError(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(*sys.argv[1:])
