"""Downloading a file safely: stream into a temporary file, check it, then move it into place.

    download(["https://mirror-a/f.gz", "https://mirror-b/f.gz"], "data/f.gz", md5="...")

The temporary file lives in the destination's folder, so the final ``os.replace`` is atomic: a
reader sees either no file or the whole, checked file, never a half-written one. Mirrors are
tried in order; the error after the last one says why each failed.
"""

import hashlib
import os
import tempfile
import time
import urllib.request
from pathlib import Path

from tqdm.auto import tqdm

CHUNK = 1 << 16  # bytes read per step of the progress bar


class ChecksumError(ValueError):
    """A file whose MD5 is not the expected one."""


class DownloadError(OSError):
    """Every mirror failed; the message lists each one and why."""


def md5_hex(data):
    """The MD5 hex digest of ``data`` (bytes)."""
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def download(urls, dest, md5=None, content=None, progress=True, timeout=30, deadline=600):
    """Download ``dest`` from the first of ``urls`` that works, and return its ``Path``.

    md5: the expected MD5 hex digest of ``content(path)`` (default: the file's bytes), checked
        before the file is moved into place. ``content`` lets a caller check what a file holds
        rather than its bytes (e.g. the decompressed data of a gzip file).
    progress: show a tqdm progress bar (a widget in notebooks, text in a terminal).
    timeout: seconds that connecting, or any one read, may wait for the server.
    deadline: seconds that the whole download from one mirror may take (a server that sends a
        byte now and then never trips ``timeout``); a read in progress may overrun it by ``timeout``.
    """
    dest = Path(dest)
    if isinstance(urls, str):
        urls = [urls]
    if not urls:
        raise ValueError(f"download({dest.name}): no URL given")
    if not deadline > 0:
        raise ValueError(f"download({dest.name}): deadline={deadline} must be a positive number of seconds")
    _check_writable(dest)
    failures = []
    for url in urls:
        try:
            _fetch(url, dest, md5, content or Path.read_bytes, progress, timeout, deadline)
            return dest
        except Exception as exc:  # any failure of one mirror: try the next (KeyboardInterrupt stops)
            failures.append(f"  {url}: {type(exc).__name__}: {exc}")
    raise DownloadError(
        f"could not download {dest.name} into {dest.parent}; every mirror failed:\n" + "\n".join(failures)
        + f"\nCheck your connection, or download {dest.name} by hand into {dest.parent}."
    )


def _check_writable(dest):
    """Make ``dest``'s folder if needed and check that a file can be created in it, so that a local
    problem is reported as one, not blamed on every mirror."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    except OSError as exc:
        blocker = next((p for p in (dest.parent, *dest.parent.parents) if p.exists() and not p.is_dir()), None)
        reason = f"{blocker} is a file, not a folder" if blocker else exc.strerror or str(exc)
        advice = "; fix its permissions or choose" if isinstance(exc, PermissionError) else "; choose"
        raise type(exc)(
            f"download({dest.name}): cannot write into the folder {dest.parent}: {reason}{advice} a folder you "
            "may write to"
        ) from exc
    os.close(fd)
    os.remove(probe)


def _fetch(url, dest, md5, content, progress, timeout, deadline):
    """Stream ``url`` into a temporary file beside ``dest``, check it, and move it to ``dest``."""
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp)
    try:
        with os.fdopen(fd, "wb") as out:
            _stream(url, out, dest.name, progress, timeout, deadline)
        if md5 is not None:
            got = md5_hex(content(tmp))
            if got != md5:
                raise ChecksumError(f"the downloaded {dest.name} has MD5 {got}, expected {md5}")
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the final file should read like any other
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)  # after a success os.replace has already moved it


def _stream(url, out, name, progress, timeout, deadline):
    """Copy the body of ``url`` into the open file ``out``, with a progress bar, within ``deadline`` seconds.

    ``read1`` returns what has arrived (``read`` would wait for a whole chunk), so the deadline is
    checked after every piece, however slowly they come.
    """
    give_up = time.monotonic() + deadline
    request = urllib.request.Request(url, headers={"User-Agent": "dlscratch"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        length = response.headers.get("Content-Length")
        total = int(length) if length is not None else None
        received = 0
        with tqdm(total=total, desc=name, unit="B", unit_scale=True, unit_divisor=1024, disable=not progress) as bar:
            while chunk := response.read1(CHUNK):
                out.write(chunk)
                received += len(chunk)
                bar.update(len(chunk))
                if time.monotonic() > give_up:
                    raise TimeoutError(
                        f"{url} did not finish within the deadline of {deadline} s ({received} bytes received"
                        f"{'' if total is None else f' of {total}'}); pass a larger deadline= on a slow connection"
                    )
    if total is not None and received != total:
        raise ConnectionError(f"the connection closed after {received} of {total} bytes")
