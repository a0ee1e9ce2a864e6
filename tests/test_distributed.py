"""Data-parallel training over MPI (dlscratch.distributed): 2 ranks under ``mpiexec`` train the weights that one
process trains at the ranks' batches together; a failing rank stops the others, and so do a rank that leaves
early and a collective past its timeout; models that differ are refused; reductions that a dtype cannot hold
are refused before any message; a checkpoint resumes on another world size. The ranks run
tests/distributed/worker.py."""

import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

import dlscratch
import dlscratch.distributed as dist
from dlscratch.data import DataLoader, TensorDataset

WORKER = Path(__file__).parent / "distributed" / "worker.py"
sys.path.insert(0, str(WORKER.parent))
import worker  # noqa: E402  (the ranks' code, run here as a world of one)

TIMEOUT = 120  # seconds for a whole mpiexec run; a hang fails the test instead of stalling CI

MPIEXEC = dist.mpiexec_path()
needs_mpi = pytest.mark.skipif(not dist.is_available() or MPIEXEC is None,
                               reason="needs mpi4py and mpiexec (pip install mpi4py mpich)")


def mpiexec(ranks, *args, env=None, check=True, timeout=TIMEOUT):
    """Run the worker on ``ranks`` processes; the finished process (its output in ``stdout``, ``stderr``)."""
    command = [MPIEXEC, "-n", str(ranks), sys.executable, str(WORKER), *map(str, args)]
    root = str(Path(dlscratch.__file__).parent.parent)  # the ranks import the dlscratch under test
    path = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "DLSCRATCH_DEVICE": "cpu", "PYTHONPATH": path, **(env or {})})
    if check:
        assert done.returncode == 0, f"mpiexec failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def weights(state):
    return {name: np.asarray(value) for name, value in state["model"].items()}


def assert_close(got, expected):
    assert got.keys() == expected.keys()
    for name in got:
        np.testing.assert_allclose(got[name], expected[name], rtol=2e-5, atol=2e-6, err_msg=name)


# ----- one process: everything imports and runs -----
def test_one_process_is_rank_0_of_1_and_collectives_leave_tensors_as_they_are():
    dist.init_process_group()
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    t = dlscratch.tensor(np.arange(3, dtype=np.float32))
    assert dist.all_reduce(t) is t and dist.broadcast(t, 0) is t
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2])
    with pytest.raises(ValueError, match="op must be one of"):
        dist.all_reduce(t, "mean")
    with pytest.raises(ValueError, match="src must be a rank"):
        dist.broadcast(t, 1)


def test_an_average_of_integers_or_booleans_is_refused_before_it_changes_anything():
    dist.init_process_group()
    for dtype in ("int64", "int8", "uint8", "bool"):
        t = dlscratch.tensor(np.array([1, 10]).astype(dtype))
        with pytest.raises(TypeError, match=f"all_reduce: op 'avg' needs a floating-point tensor, got {dtype}"):
            dist.all_reduce(t, dist.ReduceOp.AVG)
        np.testing.assert_array_equal(t.numpy(), np.array([1, 10]).astype(dtype))
    with pytest.raises(TypeError, match="all_reduce: cannot reduce a complex64 tensor"):
        dist.all_reduce(np.ones(2, np.complex64))


def test_a_timeout_must_be_a_timedelta():
    for bad in (5, timedelta(0)):
        with pytest.raises(ValueError, match="init_process_group: timeout must be a datetime.timedelta > 0"):
            dist.init_process_group(timeout=bad)


NO_MPI4PY = """
import sys


class NoMPI4PY:  # makes this interpreter behave as one without mpi4py installed
    def find_spec(self, name, path=None, target=None):
        if name == "mpi4py" or name.startswith("mpi4py."):
            raise ImportError("No module named 'mpi4py' (hidden for this test)")


sys.meta_path.insert(0, NoMPI4PY())
"""

ONE_PROCESS = """
import numpy as np
import dlscratch
import dlscratch.distributed as dist
import dlscratch.functional as F
from dlscratch import nn, optim
from dlscratch.data import DataLoader, TensorDataset

assert not dist.is_available()
dist.init_process_group()
assert dist.is_initialized() and (dist.get_rank(), dist.get_world_size()) == (0, 1)
dlscratch.manual_seed(0)
model = dist.DistributedDataParallel(nn.Linear(3, 2))
data = TensorDataset(np.arange(24, dtype=np.float32).reshape(8, 3) / 24, np.arange(8) % 2)
optimizer = optim.SGD(model.parameters(), lr=0.1)
history = dlscratch.training.fit(model, F.cross_entropy, optimizer,
                                 DataLoader(data, batch_size=4, sampler=dist.DistributedSampler(data)), epochs=2,
                                 progress=False)
t = dlscratch.tensor(np.ones(2, dtype=np.float32))
dist.all_reduce(t)
dist.barrier()
print("one process:", len(history.loss), t.numpy().tolist())
"""


def run_without_mpi4py(tmp_path, env=None):
    (tmp_path / "sitecustomize.py").write_text(NO_MPI4PY)
    root = str(Path(dlscratch.__file__).parent.parent)
    clean = {name: value for name, value in os.environ.items()  # no launcher's variables
             if not name.startswith(("PMI_", "OMPI_", "MPI_", "HYDRA_"))}
    return subprocess.run([sys.executable, "-c", ONE_PROCESS], capture_output=True, text=True, timeout=TIMEOUT,
                          env={**clean, "PYTHONPATH": os.pathsep.join([str(tmp_path), root]),
                               "DLSCRATCH_DEVICE": "cpu", **(env or {})})


def test_without_mpi4py_everything_imports_and_runs_as_one_process(tmp_path):
    done = run_without_mpi4py(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "one process: 2 [1.0, 1.0]"


def test_without_mpi4py_a_process_that_a_launcher_started_with_others_says_so(tmp_path):
    done = run_without_mpi4py(tmp_path, env={"PMI_SIZE": "2", "PMI_RANK": "1"})
    assert done.returncode != 0
    assert "started as one of 2 processes, but mpi4py is not installed" in done.stderr


def test_the_sampler_gives_disjoint_shares_whose_batches_make_one_processs_batches():
    dataset = TensorDataset(np.arange(23, dtype=np.float32), np.arange(23))
    whole = list(dist.DistributedSampler(dataset, num_replicas=1, rank=0, seed=3))
    shares = [list(dist.DistributedSampler(dataset, num_replicas=3, rank=r, seed=3)) for r in range(3)]
    assert [len(s) for s in shares] == [8, 8, 8]  # 23 padded to 24 with the permutation's first index
    assert sorted(sum(shares, [])) == sorted(whole + whole[:1])
    for k in range(4):  # batch k of 2 per rank = positions 6k .. 6k+5 of the one process's order
        assert sorted(sum((s[2 * k:2 * k + 2] for s in shares), [])) == sorted((whole + whole[:1])[6 * k:6 * k + 6])
    sampler = dist.DistributedSampler(dataset, num_replicas=3, rank=0, seed=3, drop_last=True)
    first = list(sampler)
    sampler.set_epoch(1)
    assert len(first) == 7 and list(sampler) != first  # a new permutation each epoch
    for bad in (dict(rank=3), dict(num_replicas=0), dict(rank=-1)):
        with pytest.raises(ValueError):
            dist.DistributedSampler(dataset, **{"num_replicas": 3, **bad})


def test_the_sampler_pads_and_shares_as_pytorchs_and_says_that_its_shuffled_order_differs():
    pytorchs = {(10, 3, False): [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]],  # shuffle=False, from PyTorch 2.13
                (10, 3, True): [[0, 3, 6], [1, 4, 7], [2, 5, 8]],
                (10, 4, False): [[0, 4, 8], [1, 5, 9], [2, 6, 0], [3, 7, 1]], (2, 3, False): [[0], [1], [0]]}
    for (n, k, drop_last), shares in pytorchs.items():
        assert [list(dist.DistributedSampler(range(n), k, r, shuffle=False, drop_last=drop_last))
                for r in range(k)] == shares
        shuffled = [list(dist.DistributedSampler(range(n), k, r, drop_last=drop_last)) for r in range(k)]
        order = [share[i] for i in range(len(shares[0])) for share in shuffled]  # the padded permutation
        assert [len(s) for s in shuffled] == [len(s) for s in shares]
        if drop_last:  # the permutation cut to a multiple of k
            assert len(order) == n // k * k and len(set(order)) == len(order)
        else:  # padded with its own first indices, as PyTorch pads
            assert sorted(order[:n]) == list(range(n)) and order[n:] == order[:len(order) - n]
    page = (Path(__file__).parent.parent / "docs" / "distributed.md").read_text(encoding="utf-8")
    for text in (" ".join((dist.DistributedSampler.__doc__ or "").split()), " ".join(page.split())):
        assert "NumPy's generator" in text and "order differs from PyTorch's" in text


def test_a_loader_with_a_sampler_follows_it_and_refuses_shuffle():
    dataset = TensorDataset(np.arange(10, dtype=np.float32), np.arange(10))
    loader = DataLoader(dataset, batch_size=4, sampler=[9, 8, 7, 6, 5])
    assert len(loader) == 2 and [y.numpy().tolist() for _, y in loader] == [[9, 8, 7, 6], [5]]
    with pytest.raises(ValueError, match="cannot go with shuffle"):
        DataLoader(dataset, sampler=[1], shuffle=True)
    with pytest.raises(TypeError, match="sampler must be"):
        DataLoader(dataset, sampler=5)


def test_ddp_on_one_process_trains_as_the_model_alone():
    net, _ = worker.train(3, "loop")
    plain = worker.model()
    optimizer = dlscratch.optim.SGD(plain.parameters(), lr=0.1, momentum=0.9)
    dataset = worker.data()
    loader = iter(DataLoader(dataset, batch_size=worker.BATCH, sampler=dist.DistributedSampler(dataset, seed=7)))
    for _ in range(3):
        x, y = next(loader)
        optimizer.zero_grad()
        dlscratch.functional.cross_entropy(plain(x), y).backward()
        optimizer.step()
    for (name, p), q in zip(net.module.named_parameters(), plain.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy() if not p.requires_grad else p.detach().numpy(),
                                      q.detach().numpy(), err_msg=name)


class _Twin:
    """A communicator of two ranks whose other rank holds this rank's values; it records the dtype of every
    buffer that MPI is handed."""

    class _Done:
        def Test(self):
            return True

        def Wait(self):
            return None

    def __init__(self):
        self.handed, self.sent = [], None

    def Get_size(self):
        return 2

    def Get_rank(self):
        return 0

    def allgather(self, value):
        return [value, value]

    def Bcast(self, buffer, root):
        self.handed.append(buffer.dtype)

    def Allreduce(self, _in_place, buffer, op):
        self.handed.append(buffer.dtype)
        buffer += buffer  # op is a sum in this test: the twin's values are this rank's

    def Iallreduce(self, in_place, buffer, op):
        self.Allreduce(in_place, buffer, op)
        return self._Done()

    def Send(self, buffer, dest, tag):
        self.handed.append(buffer.dtype)
        self.sent = buffer.copy()

    def Recv(self, buffer, source, tag, status):
        self.handed.append(buffer.dtype)
        buffer[...] = self.sent

    def Isend(self, buffer, dest, tag):
        self.Send(buffer, dest, tag)
        return self._Done()

    def Irecv(self, buffer, source, tag):
        self.Recv(buffer, source, tag, None)
        return self._Done()


@pytest.mark.skipif(not dist.is_available(), reason="needs mpi4py (pip install mpi4py mpich)")
def test_float16_reaches_mpi_as_bit_patterns_or_float32_since_not_every_mpi_has_float16():
    """Open MPI has no float16 type (MPI_ERR_TYPE on the H200's image): float16 is sent as its bits and
    reduced in float32, rounded once, on every path that hands MPI a buffer."""
    from dlscratch.distributed.process_group import using

    twin = _Twin()
    nan = np.array([0x7E01], np.uint16).view(np.float16)[0]  # a NaN with a payload: bits must arrive unchanged
    values = np.array([1.5, -0.0, 40000.0, nan], np.float16)
    with using(twin):
        t = dlscratch.tensor(values.copy())
        dist.all_reduce(t)
        assert t.numpy()[:3].tolist() == [3.0, -0.0, np.inf] and np.signbit(t.numpy()[1])  # 80000 > 65504
        dist.all_reduce(t := dlscratch.tensor(values[:2].copy()), dist.ReduceOp.AVG)
        assert t.numpy().tolist() == [1.5, 0.0]
        dist.broadcast(dlscratch.tensor(values.copy()), 0)
        received = dlscratch.tensor(np.zeros(4, np.float16))
        dist.send(dlscratch.tensor(values.copy()), 1)
        dist.recv(received, 1)
        dist.isend(dlscratch.tensor(values.copy()), 1).wait()
        late = dlscratch.tensor(np.zeros(4, np.float16))
        dist.irecv(late, 1).wait()
        for got in (received, late):
            np.testing.assert_array_equal(got.numpy().view(np.uint16), values.view(np.uint16))
        net = dlscratch.nn.Linear(3, 2).half()
        ddp = dist.DistributedDataParallel(net)
        ddp(dlscratch.tensor(np.ones((4, 3), np.float16))).sum().backward()
        np.testing.assert_array_equal(net.weight.grad.numpy(), np.full((2, 3), 4, np.float16))  # the mean of twins
    assert twin.handed and np.dtype(np.float16) not in twin.handed, twin.handed


# ----- two ranks -----
@needs_mpi
@pytest.mark.parametrize("bucket_cap_mb", [25, 0.0002])  # one bucket; a bucket per parameter (200 bytes)
def test_two_ranks_at_half_the_batch_train_one_processs_weights(tmp_path, bucket_cap_mb):
    mpiexec(2, "steps", tmp_path / "two.npz", bucket_cap_mb)
    net, optimizer = worker.train(3, "loop")
    assert_close(weights(dlscratch.load(tmp_path / "two.npz")), {k: v.numpy() for k, v in
                                                                 net.module.state_dict().items()})


@needs_mpi
@pytest.mark.parametrize("bucket_cap_mb, device", [(1000, "cpu"), (0.0001, "cpu"), (0.0001, "gpu")])
def test_a_branch_unused_after_the_first_step_and_a_module_used_twice_train_one_processs_weights(
        tmp_path, bucket_cap_mb, device):
    """A parameter that got no gradient keeps none on every rank (Adam leaves it alone, as in one process), and
    a module applied twice in a step is averaged once, with its whole gradient; "gpu" on the stand-in."""
    env = {"DLSCRATCH_STRICT_GPU": "1", "DLSCRATCH_REFERENCE": "0"} if device == "gpu" else None
    mpiexec(2, "branchy", tmp_path / "two.npz", bucket_cap_mb, device, env=env)
    net, _ = worker.train_branchy(4, bucket_cap_mb)
    assert_close(weights(dlscratch.load(tmp_path / "two.npz")), {k: v.numpy() for k, v in
                                                                 net.module.state_dict().items()})


@needs_mpi
@pytest.mark.parametrize("bucket_cap_mb", [25, 0.0002])
def test_two_ranks_on_the_stand_in_train_one_processs_weights(tmp_path, bucket_cap_mb):
    """The GPU path, buckets packed and the means written back: the weights one process trains on the CPU."""
    fast_on_the_stand_in = {"DLSCRATCH_STRICT_GPU": "1", "DLSCRATCH_REFERENCE": "0"}  # whatever this run's path
    mpiexec(2, "gpu steps", tmp_path / "gpu.npz", bucket_cap_mb, env=fast_on_the_stand_in)
    got = dlscratch.load(tmp_path / "gpu.npz")
    net, optimizer = worker.train(3, "loop")
    assert_close(weights(got), {k: v.numpy() for k, v in net.module.state_dict().items()})


@needs_mpi
def test_fit_under_two_ranks_trains_one_processs_weights_and_only_rank_0_prints(tmp_path):
    done = mpiexec(2, "fit", tmp_path / "fit.npz")
    net, _ = worker.train(2, "fit")
    assert_close(weights(dlscratch.load(tmp_path / "fit.npz")), {k: v.numpy() for k, v in
                                                                 net.module.state_dict().items()})
    alone = mpiexec(1, "fit", tmp_path / "alone.npz")
    assert "epoch 2/2" in done.stderr
    assert done.stderr.count("epoch 2/2") == alone.stderr.count("epoch 2/2")  # rank 1 draws no bar


@needs_mpi
def test_collectives_on_two_ranks(tmp_path):
    mpiexec(2, "collectives", tmp_path / "c.npz")
    got = dlscratch.load(tmp_path / "c.npz")
    base = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(got["cpu_sum"], 2 * base + 10)
    np.testing.assert_array_equal(got["cpu_avg"], base + 5)
    np.testing.assert_array_equal(got["cpu_max"], base + 10)
    np.testing.assert_array_equal(got["cpu_bcast"], base + 10)
    assert list(got["gathered"]) == [0, 1]


@needs_mpi
def test_collectives_of_gpu_arrays_go_through_host_memory_on_the_stand_in(tmp_path):
    mpiexec(2, "collectives", tmp_path / "c.npz", env={"DLSCRATCH_STRICT_GPU": "1"})
    got = dlscratch.load(tmp_path / "c.npz")
    base = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(got["gpu_sum"], 2 * base + 10)
    np.testing.assert_array_equal(got["gpu_avg"], base + 5)
    np.testing.assert_array_equal(got["gpu_bcast"], base + 10)


@needs_mpi
@pytest.mark.parametrize("env", [{}, {"DLSCRATCH_STRICT_GPU": "1"}], ids=["cpu", "stand-in"])
def test_messages_between_two_ranks_blocking_and_not(tmp_path, env):
    mpiexec(2, "messages", tmp_path / "m.npz", env=env)
    got = dlscratch.load(tmp_path / "m.npz")
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    for device in ("cpu", "gpu") if env else ("cpu",):
        assert int(got[f"{device}_sender"]) == 1
        np.testing.assert_array_equal(got[f"{device}_blocking"], 2 * base)
        np.testing.assert_array_equal(got[f"{device}_nonblocking"], 3 * base)
        assert bool(got[f"{device}_completed"])
        assert str(got[f"{device}_refused_0"]) == "send: rank 0 cannot message itself; dst must be another rank"
        assert str(got[f"{device}_refused_2"]) == "send: dst must be a rank in [0, 2), got 2"
        assert str(got[f"{device}_refused_1"]) == "send: dst must be a rank in [0, 2), got '1'"


def test_a_message_needs_another_rank():
    dist.init_process_group()
    t = dlscratch.tensor(np.zeros(3, dtype=np.float32))
    for call in (lambda: dist.send(t, 1), lambda: dist.recv(t), lambda: dist.isend(t, 0), lambda: dist.irecv(t, 0)):
        with pytest.raises(RuntimeError, match="a message needs two processes"):
            call()


@needs_mpi
@pytest.mark.parametrize("env", [{}, {"DLSCRATCH_STRICT_GPU": "1"}], ids=["cpu", "stand-in"])
def test_every_op_on_every_dtype_as_pytorch_and_a_refusal_changes_nothing_on_either_rank(tmp_path, env):
    mpiexec(2, "ops", tmp_path / "ops.json", env=env)
    expected = {"sum": [3, 20], "product": [2, 100], "min": [1, 10], "max": [2, 10], "avg": [1.5, 10.0]}
    for rank, results in enumerate(json.loads((tmp_path / "ops.json").read_text())):
        for device in ("cpu", "gpu") if env else ("cpu",):
            for dtype in worker.DTYPES:  # PyTorch on gloo: bool sums are "or", products "and"; avg only of floats
                got = {op: results[f"{device} {dtype} {op}"] for op in expected}
                if dtype == "bool":
                    assert [got[op] for op in ("sum", "product", "min", "max")] == [
                        [True, True], [True, False], [True, False], [True, True]]
                else:
                    ops = expected if dtype.startswith("float") else {k: v for k, v in expected.items() if k != "avg"}
                    assert {op: got[op] for op in ops} == ops, (rank, device, dtype)
                if not dtype.startswith("float"):
                    assert got["avg"] == {"unchanged": True, "error": (
                        f"all_reduce: op 'avg' needs a floating-point tensor, got {dtype} (the mean of integers or "
                        "booleans is not one); convert first with .float(), or reduce with 'sum' and divide")}
        assert results["after"] == [2.0, 2.0]  # the refusals sent nothing: the ranks are still in step


@needs_mpi
@pytest.mark.parametrize("how", ["return", "destroy"])
def test_a_rank_that_leaves_early_stops_the_ranks_that_wait_for_it_naming_it(tmp_path, how):
    start = time.monotonic()
    done = mpiexec(2, "leave", tmp_path / "none.npz", how, check=False, timeout=30)
    assert done.returncode != 0 and time.monotonic() - start < 15
    assert "[rank 0 of 2]" in done.stderr
    assert ("DistributedDataParallel's all-reduce of the gradients: rank 1 left the process group" in done.stderr
            and "while rank 0 waits for it" in done.stderr)


@needs_mpi
def test_a_collective_that_waits_past_the_groups_timeout_stops_every_rank_naming_it(tmp_path):
    start = time.monotonic()
    done = mpiexec(2, "late", tmp_path / "none.npz", check=False, timeout=30)
    assert done.returncode != 0 and time.monotonic() - start < 15
    assert "all_reduce: rank 0 waited 1 s (init_process_group's timeout) for rank 1" in done.stderr


@needs_mpi
def test_a_wait_for_a_message_from_a_rank_that_left_stops_naming_the_peer(tmp_path):
    """``Work.wait`` here; ``recv`` waits through the same watch (the timeout's test below)."""
    start = time.monotonic()
    done = mpiexec(2, "recv_from_leaver", tmp_path / "none.npz", "wait", "irecv", check=False, timeout=30)
    assert done.returncode != 0 and time.monotonic() - start < 15  # the group's timeout is 30 minutes
    assert ("irecv from rank 1's wait: rank 1 left the process group" in done.stderr
            and "while rank 0 waits" in done.stderr)


@needs_mpi
def test_a_wait_for_a_message_past_the_groups_timeout_stops_naming_the_peer(tmp_path):
    start = time.monotonic()
    done = mpiexec(2, "recv_from_leaver", tmp_path / "none.npz", "late", "recv", check=False, timeout=30)
    assert done.returncode != 0 and time.monotonic() - start < 15
    assert "recv from rank 1: rank 0 waited 1 s (init_process_group's timeout) for a message with rank 1" in done.stderr


@needs_mpi
def test_a_rank_that_raises_stops_every_rank_with_its_error(tmp_path):
    done = mpiexec(2, "raise", tmp_path / "none.npz", check=False)
    assert done.returncode != 0
    assert "[rank 1 of 2]" in done.stderr and "rank 1 fails on purpose at step 3" in done.stderr


@needs_mpi
def test_models_that_differ_are_refused_on_every_rank(tmp_path):
    done = mpiexec(2, "mismatch", tmp_path / "none.npz", check=False)
    assert done.returncode != 0
    assert "the ranks' models differ" in done.stderr and "rank 1 has ('0.weight', (9, 2)" in done.stderr


@needs_mpi
def test_a_checkpoint_of_two_ranks_resumes_on_one_and_on_two(tmp_path):
    mpiexec(2, "steps", tmp_path / "first.npz", 25)
    mpiexec(2, "resume", tmp_path / "two.npz", tmp_path / "first.npz")
    state = dlscratch.load(tmp_path / "first.npz")  # rank 0's, after 3 steps on 2 ranks
    one, _ = worker.train(3, "loop", state=state)
    resumed_on_two = weights(dlscratch.load(tmp_path / "two.npz"))
    assert_close(resumed_on_two, {k: v.numpy() for k, v in one.module.state_dict().items()})
    assert not np.allclose(resumed_on_two["0.weight"], weights(state)["0.weight"])  # it did train on


@needs_mpi
def test_the_distributed_bench_prints_one_row_per_number_of_ranks():
    command = [MPIEXEC, "-n", "2", sys.executable, "-m", "dlscratch.bench", "distributed", "--quick"]
    root = str(Path(dlscratch.__file__).parent.parent)
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT,
                          env={**os.environ, "DLSCRATCH_DEVICE": "cpu", "PYTHONPATH": root})
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.split()[:1] in (["1"], ["2"])]
    assert [row[:3] for row in rows if row[2] == "dlscratch"] == [["1", "8", "dlscratch"], ["2", "4", "dlscratch"]]
    assert done.stdout.count("backend:") == 1  # rank 0 speaks for both
