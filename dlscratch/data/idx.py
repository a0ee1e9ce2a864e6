"""Reading IDX files, the format of the original MNIST files, gzipped or raw.

An IDX file is a big-endian header followed by unsigned bytes:

    images: magic 2051 (0x00000803), count, rows, cols, then count*rows*cols pixels
    labels: magic 2049 (0x00000801), count, then count labels

Host-only code: it reads files into NumPy arrays.
"""

import gzip
import math
import struct
import zlib
from pathlib import Path

import numpy

GZIP_MAGIC = b"\x1f\x8b"
IMAGES_MAGIC, LABELS_MAGIC = 2051, 2049
_NDIM = {IMAGES_MAGIC: 3, LABELS_MAGIC: 1}


class IDXError(ValueError):
    """A file that is not a valid IDX file: damaged, truncated or of another format."""


def _advice(path):
    return (
        f"Delete {path} and run again to download it afresh, or put a good copy of "
        f"{path.name} in {path.parent} by hand."
    )


def read_bytes(path, max_bytes=None):
    """The content of ``path``: decompressed when it starts with the gzip magic bytes, else as it is.

    A gzip stream is inflated only as far as its IDX header announces, plus one byte to tell
    whether more follows, so a small file that would inflate to gigabytes is rejected after a
    few kB. ``max_bytes``: the largest content allowed; a header that announces more is rejected
    before the rest is inflated.
    """
    path = Path(path)
    with open(path, "rb") as f:
        if f.read(2) != GZIP_MAGIC:
            return path.read_bytes()
        f.seek(0)
        try:
            with gzip.GzipFile(fileobj=f) as stream:
                data = stream.read(4 + 4 * max(_NDIM.values()))
                _, header, shape = _header(data, path)
                size = header + math.prod(shape)  # a Python int: numpy.prod would overflow int64 silently
                if max_bytes is not None and size > max_bytes:
                    raise IDXError(
                        f"{path}: the IDX header announces {shape} = {size} bytes, more than the {max_bytes} "
                        f"expected; this is not the file it should be. {_advice(path)}"
                    )
                data += _read_at_most(stream, size + 1 - len(data))
        except (EOFError, OSError, zlib.error) as exc:
            raise IDXError(f"{path}: the gzip stream is damaged or truncated ({exc}). {_advice(path)}") from exc
    if len(data) > size:
        raise IDXError(
            f"{path}: the gzip stream holds more than the {size} bytes its IDX header {shape} announces; "
            f"reading stopped there. {_advice(path)}"
        )
    return data


def _read_at_most(stream, count):
    """Up to ``count`` bytes of ``stream``, read in pieces: ``stream.read(count)`` would allocate
    ``count`` bytes at once, however few the stream holds (a header may announce 2**96)."""
    pieces = []
    while count > 0 and (piece := stream.read(min(count, 1 << 24))):
        pieces.append(piece)
        count -= len(piece)
    return b"".join(pieces)


def _header(data, path):
    """``(magic, header length, shape)`` of IDX bytes ``data``, or ``IDXError`` saying what is wrong."""
    if len(data) < 8:
        raise IDXError(f"{path}: {len(data)} bytes is too short for an IDX header. {_advice(path)}")
    (magic,) = struct.unpack(">I", data[:4])
    if magic not in _NDIM:
        raise IDXError(
            f"{path}: bad magic number {magic} (expected {IMAGES_MAGIC} for images or {LABELS_MAGIC} "
            f"for labels): this is not an IDX file of unsigned bytes. {_advice(path)}"
        )
    header = 4 + 4 * _NDIM[magic]
    if len(data) < header:
        raise IDXError(f"{path}: the IDX header is truncated ({len(data)} of {header} bytes). {_advice(path)}")
    shape = struct.unpack(f">{_NDIM[magic]}I", data[4:header])
    if magic == IMAGES_MAGIC and 0 in shape[1:]:
        raise IDXError(f"{path}: images of size {shape[1]}x{shape[2]} make no sense. {_advice(path)}")
    return magic, header, shape


def parse_idx(data, path="<bytes>"):
    """The uint8 array held by IDX bytes ``data``: images (count, rows, cols) or labels (count,).

    ``path`` only names the source in error messages. The array is a read-only view of ``data``.
    """
    path = Path(path)
    _, header, shape = _header(data, path)
    expected, got = math.prod(shape), len(data) - header
    if got < expected:
        raise IDXError(
            f"{path}: the file is truncated: the header announces {shape} = {expected} bytes of data, "
            f"but only {got} follow. {_advice(path)}"
        )
    if got > expected:
        raise IDXError(
            f"{path}: {got - expected} unexpected bytes follow the {expected} bytes of data announced by "
            f"the header {shape}. {_advice(path)}"
        )
    return numpy.frombuffer(data, dtype=numpy.uint8, offset=header).reshape(shape)


def read_idx(path, max_bytes=None):
    """The uint8 array stored in the IDX file ``path`` (gzipped or raw). See ``read_bytes`` and ``parse_idx``."""
    return parse_idx(read_bytes(path, max_bytes), path)
