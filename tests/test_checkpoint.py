"""Tests of dlscratch.save / dlscratch.load: round trips, atomic writes, bad files, model and optimizer state."""

import os
import zipfile

import numpy
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend, checkpoint, nn, optim
from dlscratch.checkpoint import CheckpointError


def nested():
    return {
        "weights": numpy.arange(6, dtype=numpy.float32).reshape(2, 3) / 7,
        "counts": numpy.array([1, -2, 2**40], dtype=numpy.int64),
        "tensor": dlscratch.tensor([[0.5, -1.5]]),
        "view": numpy.arange(12, dtype=numpy.float64).reshape(3, 4).T,  # not contiguous
        "flags": numpy.array([True, False]),
        "empty": numpy.zeros((0, 3), dtype=numpy.float32),
        "inner": {"list": [1, 2.5, "three", True, None, (4, "five")], 7: {"deep": numpy.float32(1.25)}},
        "numbers": (0, -3, 2**70, 1e-30, float("inf")),
        "text": "héllo",
    }


def test_round_trip_keeps_structure_types_dtypes_and_values(tmp_path):
    path = tmp_path / "state.npz"
    dlscratch.save(nested(), path)
    back = dlscratch.load(path)
    assert list(back) == list(nested())
    assert back["weights"].dtype == numpy.float32 and back["counts"].dtype == numpy.int64
    numpy.testing.assert_array_equal(back["weights"], numpy.arange(6, dtype=numpy.float32).reshape(2, 3) / 7)
    numpy.testing.assert_array_equal(back["counts"], [1, -2, 2**40])
    assert type(back["tensor"]) is numpy.ndarray and back["tensor"].dtype == numpy.float32
    numpy.testing.assert_array_equal(back["tensor"], [[0.5, -1.5]])
    numpy.testing.assert_array_equal(back["view"], numpy.arange(12.0).reshape(3, 4).T)
    assert back["view"].dtype == numpy.float64
    assert back["flags"].dtype == bool and back["flags"].tolist() == [True, False]
    assert back["empty"].shape == (0, 3) and back["empty"].dtype == numpy.float32
    inner = back["inner"]
    assert inner["list"] == [1, 2.5, "three", True, None, (4, "five")]
    assert [type(v) for v in inner["list"]] == [int, float, str, bool, type(None), tuple]
    assert list(inner) == ["list", 7]  # the integer key stays an integer
    deep = inner[7]["deep"]
    assert type(deep) is numpy.float32 and deep == 1.25
    assert back["numbers"] == (0, -3, 2**70, 1e-30, float("inf")) and type(back["numbers"]) is tuple
    assert back["text"] == "héllo"


def test_nan_and_top_level_values_round_trip(tmp_path):
    for obj in (float("nan"), 3, [numpy.float64(2.0)], numpy.array(5, dtype=numpy.int32)):
        dlscratch.save(obj, tmp_path / "x.npz")
        back = dlscratch.load(tmp_path / "x.npz")
        if isinstance(obj, float):
            assert back != back
        elif isinstance(obj, list):
            assert type(back[0]) is numpy.float64 and back == [2.0]
        else:
            assert back == obj and getattr(back, "dtype", None) == getattr(obj, "dtype", None)


def test_the_file_is_a_plain_npz_without_pickles(tmp_path):
    path = tmp_path / "state.npz"
    dlscratch.save({"w": numpy.ones(2, dtype=numpy.float32), "epoch": 3}, path)
    with numpy.load(path, allow_pickle=False) as archive:
        assert sorted(archive.files) == ["__dlscratch__", "arr_0"]
        numpy.testing.assert_array_equal(archive["arr_0"], [1.0, 1.0])
        assert '"epoch", 3' in archive["__dlscratch__"].item()


def test_save_rejects_what_it_cannot_store(tmp_path):
    with pytest.raises(TypeError, match=r"cannot store the function at obj\['hook'\].*pickle refuses it"):
        dlscratch.save({"hook": lambda x: x}, tmp_path / "x.npz")
    with pytest.raises(FileNotFoundError, match="the folder .* does not exist"):
        dlscratch.save({}, tmp_path / "missing" / "x.npz")
    assert os.listdir(tmp_path) == []


# ----- atomic writes -----
def failing_savez(error):
    """A numpy.savez that writes half an archive, then fails."""
    def savez(file, **arrays):
        file.write(b"PK\x03\x04 half an archive")
        raise error
    return savez


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_write_leaves_the_old_checkpoint_and_no_temporary_file(tmp_path, monkeypatch, error):
    path = tmp_path / "model.npz"
    dlscratch.save({"w": numpy.ones(3, dtype=numpy.float32)}, path)
    before = path.read_bytes()
    monkeypatch.setattr(checkpoint.numpy, "savez", failing_savez(error))
    with pytest.raises(type(error)):
        dlscratch.save({"w": numpy.zeros(3, dtype=numpy.float32)}, path)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["model.npz"]
    assert path.read_bytes() == before
    numpy.testing.assert_array_equal(dlscratch.load(path)["w"], numpy.ones(3))


def test_a_failed_first_write_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint.numpy, "savez", failing_savez(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        dlscratch.save({"w": numpy.zeros(3)}, tmp_path / "model.npz")
    assert os.listdir(tmp_path) == []


def test_the_temporary_file_is_written_beside_the_target_and_renamed(tmp_path, monkeypatch):
    moves = []
    real_replace = os.replace

    def replace(source, target):
        moves.append((os.path.dirname(source), os.path.basename(source), os.path.isfile(source), target))
        real_replace(source, target)

    monkeypatch.setattr(checkpoint.os, "replace", replace)
    dlscratch.save({"w": numpy.zeros(3)}, str(tmp_path / "model.npz"))
    [(folder, name, complete, target)] = moves
    assert folder == str(tmp_path) and name.startswith(".model.npz.") and name.endswith(".tmp") and complete
    assert target == str(tmp_path / "model.npz") and os.listdir(tmp_path) == ["model.npz"]


# ----- files that are not checkpoints -----
def test_load_rejects_files_that_are_not_checkpoints(tmp_path):
    text = tmp_path / "notes.npz"
    text.write_text("just some notes\n")
    with pytest.raises(CheckpointError, match="notes.npz is not a dlscratch checkpoint, or it is damaged"):
        dlscratch.load(text)
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    with pytest.raises(CheckpointError, match="not a dlscratch checkpoint"):
        dlscratch.load(empty)
    plain = tmp_path / "plain.npz"
    numpy.savez(plain, w=numpy.ones(2))
    with pytest.raises(CheckpointError, match=r"plain.npz is an .npz archive but not a dlscratch checkpoint"):
        dlscratch.load(plain)
    single = tmp_path / "single.npy"
    numpy.save(single, numpy.ones(2))
    with pytest.raises(CheckpointError, match=r"holds one NumPy array \(a .npy file\)"):
        dlscratch.load(single)
    with pytest.raises(FileNotFoundError):
        dlscratch.load(tmp_path / "absent.npz")
    assert issubclass(CheckpointError, ValueError)


@pytest.mark.parametrize("keep", [0.3, 0.9])
def test_load_rejects_a_truncated_checkpoint(tmp_path, keep):
    path = tmp_path / "model.npz"
    dlscratch.save({"w": numpy.arange(1000, dtype=numpy.float32)}, path)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(CheckpointError, match="damaged"):
        dlscratch.load(path)


def test_load_rejects_a_corrupted_array(tmp_path):
    path = tmp_path / "model.npz"
    dlscratch.save({"w": numpy.arange(1000, dtype=numpy.float32)}, path)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        offset = archive.getinfo("arr_0.npy").header_offset
    data[offset + 400] ^= 0xFF  # a byte inside the array's data: the zip CRC no longer matches
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="damaged"):
        dlscratch.load(path)


def test_load_rejects_a_manifest_from_elsewhere(tmp_path):
    path = tmp_path / "x.npz"
    numpy.savez(path, __dlscratch__=numpy.array('{"format": "other", "root": 1}'))
    with pytest.raises(CheckpointError, match="not a dlscratch manifest"):
        dlscratch.load(path)
    numpy.savez(path, __dlscratch__=numpy.array('{"format": "dlscratch-checkpoint", "version": 99, "root": 1}'))
    with pytest.raises(CheckpointError, match="version 99 checkpoint.*upgrade dlscratch"):
        dlscratch.load(path)
    numpy.savez(path, __dlscratch__=numpy.array('{"format": "dlscratch-checkpoint", "version": 1, '
                                                '"root": {"array": "arr_5"}}'))
    with pytest.raises(CheckpointError, match="damaged manifest"):
        dlscratch.load(path)


def test_load_checks_the_device_name(tmp_path):
    dlscratch.save({"w": numpy.zeros(2)}, tmp_path / "x.npz")
    assert type(dlscratch.load(tmp_path / "x.npz", device="cpu")["w"]) is numpy.ndarray
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        dlscratch.load(tmp_path / "x.npz", device="tpu")


# ----- models and optimizers -----
def make_model(hidden=8):
    return nn.Sequential(nn.Linear(3, hidden), nn.Tanh(), nn.Linear(hidden, 2))


def batches():
    rng = numpy.random.default_rng(1)
    return [(dlscratch.tensor(rng.standard_normal((5, 3)).astype(numpy.float32)),
             dlscratch.tensor(rng.integers(0, 2, 5))) for _ in range(6)]


def train(model, optimizer, data):
    for x, y in data:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


@pytest.mark.parametrize("make_optimizer", [
    lambda ps: optim.Adam(ps, lr=0.01),
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    lambda ps: optim.AdaDelta(ps),
], ids=["adam", "sgd", "adadelta"])
def test_a_saved_model_and_optimizer_continue_training_identically(tmp_path, make_optimizer):
    data = batches()
    dlscratch.manual_seed(0)
    model = make_model()
    optimizer = make_optimizer(model.parameters())
    train(model, optimizer, data[:3])
    dlscratch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 3}, tmp_path / "c.npz")
    train(model, optimizer, data[3:])

    dlscratch.manual_seed(1)  # a different initialisation, overwritten by the checkpoint
    resumed = make_model()
    resumed_optimizer = make_optimizer(resumed.parameters())
    state = dlscratch.load(tmp_path / "c.npz")
    assert state["epoch"] == 3
    resumed.load_state_dict(state["model"])
    resumed_optimizer.load_state_dict(state["optimizer"])
    train(resumed, resumed_optimizer, data[3:])
    for (name, a), (_, b) in zip(model.named_parameters(), resumed.named_parameters()):
        assert b.dtype == numpy.float32
        numpy.testing.assert_array_equal(a.data, b.data, err_msg=name)


def test_loading_into_a_model_of_another_shape_lists_every_problem(tmp_path):
    dlscratch.save(make_model(hidden=8).state_dict(), tmp_path / "m.npz")
    state = dlscratch.load(tmp_path / "m.npz")
    other = make_model(hidden=4)
    before = [p.data.copy() for p in other.parameters()]
    with pytest.raises(RuntimeError) as info:
        other.load_state_dict(state)
    message = str(info.value)
    for line in ("0.weight: checkpoint has shape (8, 3), the model has (4, 3)",
                 "0.bias: checkpoint has shape (8,), the model has (4,)",
                 "2.weight: checkpoint has shape (2, 8), the model has (2, 4)"):
        assert line in message
    assert all(numpy.array_equal(b, p.data) for b, p in zip(before, other.parameters()))  # nothing copied

    del state["2.bias"]
    state["extra.weight"] = numpy.zeros(2, dtype=numpy.float32)
    with pytest.raises(RuntimeError, match=r"(?s)missing key: 2\.bias.*unexpected key: extra\.weight"):
        make_model(hidden=8).load_state_dict(state)


def test_checkpoints_move_between_devices(gpu, tmp_path):
    model = make_model().to("gpu")
    dlscratch.save({"model": model.state_dict(), "raw": backend.to_gpu(numpy.arange(3))}, tmp_path / "g.npz")
    on_host = dlscratch.load(tmp_path / "g.npz")
    assert type(on_host["raw"]) is numpy.ndarray and on_host["raw"].tolist() == [0, 1, 2]
    on_gpu = dlscratch.load(tmp_path / "g.npz", device="gpu")
    assert backend.is_gpu_array(on_gpu["raw"]) and on_gpu["model"]["0.weight"].dtype == numpy.float32
    cpu_model = make_model()
    cpu_model.load_state_dict(on_host["model"])
    model.load_state_dict(on_host["model"])  # host arrays into GPU parameters
    for a, b in zip(cpu_model.parameters(), model.parameters()):
        numpy.testing.assert_array_equal(a.data, backend.to_cpu(b.data))


def test_a_whole_model_is_pickled_and_loaded_only_when_asked_as_pytorch_does(tmp_path):
    """``torch.save(model, path)`` stores the model; ``torch.load`` refuses it unless ``weights_only=False``."""
    import pickle

    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    odd = {"model": model, "keys": {(1, 2): "a tuple key"}, "objects": numpy.array([{}, 1], dtype=object)}
    dlscratch.save(odd, tmp_path / "whole.pth")
    with pytest.raises(pickle.UnpicklingError, match=r"weights only load failed.*pickled dlscratch\.nn\.container"
                                                     r"\.Sequential.*weights_only=False"):
        dlscratch.load(tmp_path / "whole.pth")
    back = dlscratch.load(tmp_path / "whole.pth", weights_only=False)
    assert type(back) is dict and back["keys"][(1, 2)] == "a tuple key" and back["objects"][1] == 1
    copy = back["model"]
    assert type(copy) is nn.Sequential and copy[0].weight is not model[0].weight
    numpy.testing.assert_array_equal(copy[0].weight.data, model[0].weight.data)
    x = dlscratch.randn(4, 2)
    numpy.testing.assert_array_equal(copy(x).data, model(x).data)
    dlscratch.save(model.state_dict(), tmp_path / "weights.pth")  # plain data: no pickle, loads by default
    model.load_state_dict(dlscratch.load(tmp_path / "weights.pth", weights_only=True, map_location="cpu"))
    with pytest.raises(TypeError, match="device or map_location"):
        dlscratch.load(tmp_path / "weights.pth", device="cpu", map_location="cpu")
