"""Checkpoints: ``save(obj, path)`` and ``load(path)`` for model and optimizer state.

    dlscratch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 3}, "mnist.npz")
    state = dlscratch.load("mnist.npz")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])

The file is a NumPy ``.npz`` archive written and read with ``allow_pickle=False``, so loading one
never runs code (a pickle can). Each array is one entry (``arr_0``, ``arr_1``, ...; Tensors and
CuPy arrays are copied to the host first); the structure around them (dicts, lists, tuples,
numbers, strings, booleans, None) is a JSON manifest stored as a string array. Host-only code:
it uses NumPy directly.

Anything else (a whole model, as ``torch.save(model, path)`` stores one) is pickled into an entry of its own.
Unpickling runs code from the file, so, as PyTorch's ``load`` does by default, ``load`` refuses such an entry
unless told ``weights_only=False``: do that only for a file you trust.
"""

import contextlib
import json
import os
import pickle
import re
import tokenize
import uuid
import zipfile
from pathlib import Path

import numpy

from . import backend
from .engine.tensor import Tensor

MANIFEST = "__dlscratch__"
FORMAT = "dlscratch-checkpoint"
VERSION = 1


class CheckpointError(ValueError):
    """A file that is not a dlscratch checkpoint, or a damaged one."""


def save(obj, path):
    """Write ``obj`` to ``path`` (name it ``.npz``), atomically: the archive goes to a temporary
    file in the same folder, which then replaces ``path`` in one step, so a crash or an error
    never leaves a half-written checkpoint (an existing one stays as it was).

    obj: nested dicts (str or int keys), lists and tuples of Tensors, NumPy or CuPy arrays, NumPy
    scalars, Python numbers, strings, booleans and None (state dicts, and dicts holding them); anything
    else is pickled (see the module docstring).
    """
    path = _destination(path)
    arrays = {}
    root = _encode(obj, arrays, "obj", {})
    arrays[MANIFEST] = numpy.array(json.dumps({"format": FORMAT, "version": VERSION, "root": root}))
    _write_atomically(path, arrays)


def load(path, device=None, weights_only=True, map_location=None):
    """The object saved at ``path``, with the same structure (dicts come back as dicts, Tensors
    as arrays): arrays are NumPy arrays, or on ``device`` (``"cpu"`` or ``"gpu"``; PyTorch's name for it
    is ``map_location``) when given. Raises ``CheckpointError`` for a file that is not a dlscratch checkpoint
    or is damaged, and ``pickle.UnpicklingError`` for a pickled object unless ``weights_only=False``."""
    if map_location is not None:
        if device is not None:
            raise TypeError("load: give device or map_location (PyTorch's name for it), not both")
        device = map_location
    move = backend.to_cpu if device is None or backend.module_for(device) is numpy else backend.to_gpu
    manifest, arrays = _read(os.fspath(path))
    try:
        return _decode(manifest["root"], arrays, move, None if weights_only else (device or False))
    except CheckpointError:
        raise
    except pickle.UnpicklingError as exc:
        raise pickle.UnpicklingError(f"load: weights only load failed: {path} {exc}. Unpickling runs code from "
                                     "the file: if you trust it, load it with weights_only=False") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
        raise CheckpointError(f"load: {path} has a damaged manifest ({type(exc).__name__}: {exc})") from exc


def _destination(path):
    """The real path that ``save`` writes, or a clear error when it cannot be a checkpoint file.

    A symbolic link is followed, as ``open()`` would: the file it points to is replaced, the link stays."""
    path = os.fspath(path)
    if not path:
        raise ValueError("save: the path is empty (''); give a file name such as 'model.npz'")
    real = os.path.realpath(path)
    folder = os.path.dirname(real)
    if os.path.isdir(real):
        raise IsADirectoryError(f"save: {path} is a folder; give a file path inside it, such as "
                                f"{os.path.join(path, 'model.npz')}")
    if not os.path.isdir(folder):
        existing = next(p for p in (Path(folder), *Path(folder).parents) if p.exists())
        if not existing.is_dir():
            raise NotADirectoryError(f"save: cannot write {path}: {existing} is a file, not a folder")
        raise FileNotFoundError(f"save: the folder {folder} does not exist; create it first (os.makedirs)")
    return real


def _encode(obj, arrays, where, inside):
    """The manifest node of ``obj``, adding its arrays to ``arrays``; ``where`` names the place for errors.

    inside: ``id -> where`` of the dicts, lists and tuples that hold ``obj``, to refuse an object
    that holds itself (which would never end).

    Nodes: a JSON value for None, bools, ints, floats and strings; ``{"dict": [[key, node], ...]}``,
    ``{"list": [...]}``, ``{"tuple": [...]}``; ``{"array": name}``; ``{"scalar": name}`` for NumPy scalars;
    ``{"pickle": name, "type": ...}`` for anything else, its pickle as an array of bytes.
    """
    if isinstance(obj, Tensor):
        obj = obj.data
    if isinstance(obj, numpy.generic):  # before float: numpy.float64 is a subclass of float
        return {"scalar": _add_array(numpy.asarray(obj), arrays, where)}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if (isinstance(obj, numpy.ndarray) or backend.is_gpu_array(obj)) and not obj.dtype.hasobject:
        return {"array": _add_array(backend.to_cpu(obj), arrays, where)}
    if isinstance(obj, (dict, list, tuple)):
        if id(obj) in inside:
            raise ValueError(f"save: the object refers to itself (a {type(obj).__name__} inside itself at {where}, "
                             f"which is {inside[id(obj)]} again); a checkpoint holds a tree: break the cycle")
        inside = {**inside, id(obj): where}
    if isinstance(obj, dict) and all(type(key) in (str, int) for key in obj):
        return {"dict": [[key, _encode(value, arrays, f"{where}[{key!r}]", inside)] for key, value in obj.items()]}
    if isinstance(obj, (list, tuple)):
        kind = "tuple" if isinstance(obj, tuple) else "list"
        return {kind: [_encode(value, arrays, f"{where}[{i}]", inside) for i, value in enumerate(obj)]}
    try:
        pickled = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise TypeError(f"save: cannot store the {type(obj).__name__} at {where}: it is not plain data, and pickle "
                        f"refuses it ({exc}); save its state_dict() instead") from exc
    name = _add_array(numpy.frombuffer(pickled, dtype=numpy.uint8), arrays, where)
    return {"pickle": name, "type": f"{type(obj).__module__}.{type(obj).__qualname__}"}


def _add_array(array, arrays, where):
    name = f"arr_{len(arrays)}"
    arrays[name] = array
    return name


def _decode(node, arrays, move, unpickle_to):
    """The object that manifest ``node`` describes, with arrays moved by ``move``; a pickled object is refused
    when ``unpickle_to`` is None, else unpickled and moved to that device (False: left where it was)."""
    if not isinstance(node, dict):
        return node
    if "pickle" in node:
        if unpickle_to is None:
            raise pickle.UnpicklingError(f"holds a pickled {node.get('type')}")
        obj = pickle.loads(arrays[node["pickle"]].tobytes())  # noqa: S301  (asked for: weights_only=False)
        return obj.to(unpickle_to) if unpickle_to is not False and hasattr(obj, "to") else obj
    (kind, body), = node.items()
    if kind == "dict":
        return {key: _decode(value, arrays, move, unpickle_to) for key, value in body}
    if kind in ("list", "tuple"):
        items = [_decode(value, arrays, move, unpickle_to) for value in body]
        return items if kind == "list" else tuple(items)
    if kind == "array":
        return move(arrays[body])
    if kind == "scalar":
        return arrays[body][()]
    raise ValueError(f"unknown node {kind!r}")


def _write_atomically(path, arrays):
    """``numpy.savez`` into a temporary file beside ``path``, then ``os.replace`` it onto ``path``.

    The temporary's name holds this process's id and a random part (``.model.npz.<pid>.<hex>.tmp``),
    so saves of one path by several processes or threads never touch each other's file. Temporaries
    that a killed save of the same file left behind (their process is gone) are removed first."""
    folder, name = os.path.split(path)
    _remove_stale_temporaries(folder, name)
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(temporary, "xb") as f:
            numpy.savez(f, allow_pickle=False, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        raise


def _remove_stale_temporaries(folder, name):
    """Remove the temporaries of ``name`` whose saving process no longer runs on this machine."""
    temporary = re.compile(rf"\.{re.escape(name)}\.(?:(\d+)\.)?[0-9a-f]{{8}}\.tmp")
    for entry in os.listdir(folder):
        match = temporary.fullmatch(entry)
        if match and not (match[1] and _process_exists(int(match[1]))):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(folder, entry))


def _process_exists(pid):
    """True when process ``pid`` runs (or may run: on Windows, and for another user's process)."""
    if os.name != "posix":
        return True  # Windows' os.kill would end the process
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # another user's process
        pass
    return True


def _read(path):
    """The manifest and every array of the checkpoint at ``path``, read in full (the file is closed)."""
    # What zipfile, numpy.load and json raise on damaged bytes, besides ValueError and OSError:
    # NotImplementedError (an unknown compression method), RuntimeError ("encrypted", and
    # RecursionError on deeply nested JSON), SyntaxError and tokenize errors (a .npy header).
    damaged = (ValueError, EOFError, OSError, KeyError, zipfile.BadZipFile, NotImplementedError, RuntimeError,
               SyntaxError, tokenize.TokenError, TypeError, AttributeError, IndexError, MemoryError)
    try:
        archive = numpy.load(path, allow_pickle=False)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except damaged as exc:
        raise CheckpointError(_unreadable(path, exc)) from exc
    if not isinstance(archive, numpy.lib.npyio.NpzFile):
        raise CheckpointError(f"load: {path} holds one NumPy array (a .npy file), not a dlscratch checkpoint; "
                              "read it with numpy.load")
    with archive:
        if MANIFEST not in archive.files:
            raise CheckpointError(f"load: {path} is an .npz archive but not a dlscratch checkpoint (it has no "
                                  f"{MANIFEST} entry); read it with numpy.load")
        try:
            manifest = json.loads(archive[MANIFEST].item())
            arrays = {name: archive[name] for name in archive.files if name != MANIFEST}
        except damaged as exc:
            raise CheckpointError(_unreadable(path, exc)) from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or "root" not in manifest:
        raise CheckpointError(f"load: {path} has a {MANIFEST} entry that is not a dlscratch manifest")
    if manifest.get("version") != VERSION:
        raise CheckpointError(f"load: {path} is a version {manifest.get('version')} checkpoint; this dlscratch "
                              f"reads version {VERSION}; upgrade dlscratch")
    return manifest, arrays


def _unreadable(path, exc):
    return (
        f"load: {path} is not a dlscratch checkpoint, or it is damaged (truncated or partly overwritten): "
        f"{type(exc).__name__}: {exc}. Use another copy, or save it again with dlscratch.save"
    )
