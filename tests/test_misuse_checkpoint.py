"""Misuse of checkpoints: stale temporaries from a killed save, saving through a symbolic link,
and damaged files, which must always raise ``CheckpointError`` naming the file."""

import json
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dlscratch
from dlscratch import nn
from dlscratch.checkpoint import CheckpointError


def _state():
    return {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.array([1.5, -2.0]), "epoch": 3}


def _assert_same(loaded):
    np.testing.assert_array_equal(loaded["w"], _state()["w"])
    np.testing.assert_array_equal(loaded["b"], _state()["b"])
    assert loaded["epoch"] == 3


def test_the_next_save_removes_stale_temporaries_of_the_same_target(tmp_path):
    path = tmp_path / "model.npz"
    stale = tmp_path / ".model.npz.0badf00d.tmp"  # what a killed save leaves
    stale.write_bytes(b"\0" * 1000)
    other = tmp_path / ".other.npz.0badf00d.tmp"  # another target's: not ours to remove
    other.write_bytes(b"x")
    dlscratch.save(_state(), path)
    assert sorted(os.listdir(tmp_path)) == [".other.npz.0badf00d.tmp", "model.npz"]
    _assert_same(dlscratch.load(path))


def test_saving_through_a_symbolic_link_writes_where_it_points(tmp_path):
    (tmp_path / "runs").mkdir()
    target = tmp_path / "runs" / "real.npz"
    link = tmp_path / "latest.npz"
    link.symlink_to(target)  # dangling until the first save, as open() allows
    dlscratch.save(_state(), link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    _assert_same(dlscratch.load(target))
    dlscratch.save({**_state(), "epoch": 4}, link)
    assert link.is_symlink() and dlscratch.load(target)["epoch"] == 4
    assert sorted(os.listdir(tmp_path / "runs")) == ["real.npz"]


def _archive_with_manifest(tmp_path, manifest):
    path = tmp_path / "deep.npz"
    np.savez(path, __dlscratch__=np.array(manifest))
    return path


def test_a_deeply_nested_manifest_is_a_checkpoint_error(tmp_path):
    deep = {"format": "dlscratch-checkpoint", "version": 1, "root": None}
    text = json.dumps(deep).replace("null", "[" * 100_000 + "]" * 100_000)
    with pytest.raises(CheckpointError, match="deep.npz"):
        dlscratch.load(_archive_with_manifest(tmp_path, text))


def _saved_bytes(tmp_path):
    path = tmp_path / "good.npz"
    model = nn.Linear(3, 2)
    dlscratch.save({"model": model.state_dict(), "epoch": 3, "name": "run"}, path)
    return path.read_bytes(), {k: v.data.copy() for k, v in model.state_dict().items()}


def _check_loads_or_raises(path, weights):
    try:
        loaded = dlscratch.load(path)
    except CheckpointError as exc:
        assert str(path) in str(exc)
        return
    assert loaded["epoch"] == 3 and loaded["name"] == "run"
    for key, value in weights.items():
        np.testing.assert_array_equal(loaded["model"][key], value)


@given(data=st.data())
def test_flipped_bytes_load_the_original_or_raise_checkpoint_error(tmp_path_factory, data):
    tmp_path = tmp_path_factory.mktemp("flip")
    good, weights = _saved_bytes(tmp_path)
    spoiled = bytearray(good)
    for _ in range(data.draw(st.integers(1, 4), label="flips")):
        position = data.draw(st.integers(0, len(good) - 1), label="position")
        spoiled[position] ^= data.draw(st.integers(1, 255), label="mask")
    path = tmp_path / "spoiled.npz"
    path.write_bytes(bytes(spoiled))
    _check_loads_or_raises(path, weights)


@given(data=st.data())
def test_truncated_files_raise_checkpoint_error(tmp_path_factory, data):
    tmp_path = tmp_path_factory.mktemp("cut")
    good, weights = _saved_bytes(tmp_path)
    path = tmp_path / "cut.npz"
    path.write_bytes(good[: data.draw(st.integers(0, len(good) - 1), label="keep")])
    _check_loads_or_raises(path, weights)


@pytest.mark.parametrize("field, value, message", [(6, 0x0001, "encrypted"), (8, 0x0063, "compression")])
def test_zip_header_flags_that_zipfile_refuses_are_checkpoint_errors(tmp_path, field, value, message):
    good, _ = _saved_bytes(tmp_path)
    spoiled = bytearray(good)
    spoiled[field : field + 2] = value.to_bytes(2, "little")  # the first local file header's flags / method
    central = spoiled.find(b"PK\x01\x02")  # and the central directory's copy of them
    spoiled[central + field + 2 : central + field + 4] = value.to_bytes(2, "little")
    path = tmp_path / "flags.npz"
    path.write_bytes(bytes(spoiled))
    with pytest.raises(CheckpointError, match=f"flags.npz .*{message}"):
        dlscratch.load(path)
