"""Downloading against a local HTTP server on 127.0.0.1: mirrors, checksums, and no file ever
left half-written. Nothing here reaches the internet.

The server serves ``FILES`` under these prefixes: ``/ok/NAME`` the file, ``/corrupt/NAME`` the file
with one byte changed, ``/half/NAME`` the first half of the file (as if it were all of it),
``/drop/NAME`` half the file before closing the connection (it announces the full length), and
anything else 404.
"""

import gzip
import http.server
import importlib
import struct

import numpy
import pytest
from local_server import serving

from dlscratch.data import ChecksumError, DownloadError, download, load_mnist, mnist
from dlscratch.data.download import md5_hex

download_module = importlib.import_module("dlscratch.data.download")  # the package's `download` is the function

PAYLOAD = bytes(range(256)) * 600  # 153,600 bytes: several chunks of the progress bar
FILES = {"payload.bin": PAYLOAD}


def idx_bytes(array):
    """An IDX file holding uint8 ``array``: images (n, rows, cols) or labels (n,)."""
    magic = 2051 if array.ndim == 3 else 2049
    return struct.pack(f">{1 + array.ndim}I", magic, *array.shape) + array.astype(numpy.uint8).tobytes()


class Handler(http.server.BaseHTTPRequestHandler):
    requests = []  # paths asked for, in order (reset by the fixture)

    def do_GET(self):
        Handler.requests.append(self.path)
        _, mode, name = self.path.split("/", 2) if self.path.count("/") >= 2 else ("", "", "")
        body = FILES.get(name)
        if body is None or mode not in ("ok", "corrupt", "half", "drop"):
            self.send_error(404)
            return
        if mode == "corrupt":
            body = body[:100] + bytes([body[100] ^ 0xFF]) + body[101:]
        if mode == "half":
            body = body[: len(body) // 2]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2] if mode == "drop" else body)
        self.close_connection = True

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def server(monkeypatch):
    """The base URL of a local HTTP server, e.g. ``http://127.0.0.1:43567``."""
    Handler.requests = []
    with serving(Handler, monkeypatch) as url:
        yield url


def only_file(folder):
    return sorted(p.name for p in folder.iterdir())


def test_download_with_progress_bar(server, tmp_path, capsys):
    dest = download([f"{server}/ok/payload.bin"], tmp_path / "payload.bin", md5=md5_hex(PAYLOAD))
    assert dest == tmp_path / "payload.bin" and dest.read_bytes() == PAYLOAD
    assert only_file(tmp_path) == ["payload.bin"]  # no temporary file left
    bar = capsys.readouterr().err
    assert "payload.bin" in bar and "100%" in bar and "150k/150k" in bar


def test_progress_can_be_turned_off(server, tmp_path, capsys):
    download(f"{server}/ok/payload.bin", tmp_path / "payload.bin", progress=False)
    assert (tmp_path / "payload.bin").read_bytes() == PAYLOAD
    assert capsys.readouterr().err == ""


def test_first_mirror_404_then_the_second_works(server, tmp_path):
    urls = [f"{server}/missing/payload.bin", f"{server}/ok/payload.bin"]
    download(urls, tmp_path / "sub" / "payload.bin", md5=md5_hex(PAYLOAD), progress=False)
    assert (tmp_path / "sub" / "payload.bin").read_bytes() == PAYLOAD
    assert Handler.requests == ["/missing/payload.bin", "/ok/payload.bin"]


def test_corrupted_payload_fails_the_checksum_and_leaves_nothing(server, tmp_path):
    with pytest.raises(DownloadError) as info:
        download(f"{server}/corrupt/payload.bin", tmp_path / "payload.bin", md5=md5_hex(PAYLOAD), progress=False)
    message = str(info.value)
    assert f"{server}/corrupt/payload.bin: ChecksumError: the downloaded payload.bin has MD5" in message
    assert f"expected {md5_hex(PAYLOAD)}" in message
    assert only_file(tmp_path) == []


def test_dropped_connection_leaves_no_partial_file(server, tmp_path):
    with pytest.raises(DownloadError, match="closed after 76800 of 153600 bytes"):
        download(f"{server}/drop/payload.bin", tmp_path / "payload.bin", progress=False)
    assert only_file(tmp_path) == []


def test_final_error_lists_every_mirror_and_why(server, tmp_path):
    urls = [f"{server}/missing/payload.bin", f"{server}/drop/payload.bin", f"{server}/corrupt/payload.bin"]
    with pytest.raises(DownloadError) as info:
        download(urls, tmp_path / "payload.bin", md5=md5_hex(PAYLOAD), progress=False)
    lines = str(info.value).splitlines()
    assert lines[0] == f"could not download payload.bin into {tmp_path}; every mirror failed:"
    assert lines[1].startswith(f"  {urls[0]}: HTTPError: HTTP Error 404")
    assert lines[2].startswith(f"  {urls[1]}: ConnectionError: the connection closed after")
    assert lines[3].startswith(f"  {urls[2]}: ChecksumError:")
    assert "download payload.bin by hand" in lines[4]
    assert only_file(tmp_path) == []


def test_a_failed_download_keeps_the_previous_file(server, tmp_path):
    (tmp_path / "payload.bin").write_bytes(b"old")
    with pytest.raises(DownloadError):
        download(f"{server}/drop/payload.bin", tmp_path / "payload.bin", progress=False)
    assert only_file(tmp_path) == ["payload.bin"] and (tmp_path / "payload.bin").read_bytes() == b"old"


def test_keyboard_interrupt_stops_at_once_and_cleans_up(server, tmp_path, monkeypatch):
    class InterruptedBar:
        def __init__(self, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, n):
            raise KeyboardInterrupt

    monkeypatch.setattr(download_module, "tqdm", InterruptedBar)
    urls = [f"{server}/ok/payload.bin", f"{server}/ok/payload.bin"]
    with pytest.raises(KeyboardInterrupt):
        download(urls, tmp_path / "payload.bin")
    assert only_file(tmp_path) == [] and len(Handler.requests) == 1  # the second mirror was not tried


def test_checksum_error_is_a_value_error():
    assert issubclass(ChecksumError, ValueError) and issubclass(DownloadError, OSError)
    with pytest.raises(ValueError, match="no URL given"):
        download([], "x.bin")


# ----- MNIST downloads its missing files -----

@pytest.fixture
def mnist_mirrors(server, tmp_path, monkeypatch):
    """Small test-set files served by the local server; MNIST's mirrors and checksums patched to them."""
    rng = numpy.random.default_rng(0)
    images, labels = rng.integers(0, 256, (6, 28, 28)), numpy.array([7, 2, 1, 0, 4, 1])
    for name, array in zip(mnist.FILES[False], (images, labels)):
        monkeypatch.setitem(FILES, name, gzip.compress(idx_bytes(array)))
        monkeypatch.setitem(mnist.MD5, name, md5_hex(idx_bytes(array)))
    monkeypatch.setattr(mnist, "MIRRORS", (f"{server}/missing/", f"{server}/ok/"))
    monkeypatch.delenv("DLSCRATCH_DATA", raising=False)
    monkeypatch.setattr(mnist, "REPO_DATA", tmp_path / "no-repo")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return images, labels


def test_mnist_downloads_missing_files_into_the_cache(mnist_mirrors, tmp_path):
    images, labels = mnist_mirrors
    x, y = load_mnist(train=False)
    numpy.testing.assert_array_equal(x[:, 0] * 255, images)
    assert y.tolist() == labels.tolist()
    assert only_file(tmp_path / "cache" / "dlscratch" / "mnist") == sorted(mnist.FILES[False])
    assert Handler.requests == [
        "/missing/t10k-images-idx3-ubyte.gz", "/ok/t10k-images-idx3-ubyte.gz",
        "/missing/t10k-labels-idx1-ubyte.gz", "/ok/t10k-labels-idx1-ubyte.gz",
    ]
    load_mnist(train=False)
    assert len(Handler.requests) == 4  # found now: nothing more downloaded


def test_mnist_downloads_into_an_explicit_root(mnist_mirrors, tmp_path):
    load_mnist(root=tmp_path / "root", train=False)
    assert only_file(tmp_path / "root" / "mnist") == sorted(mnist.FILES[False])
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("damage", ["drop", "half"])
def test_mnist_skips_a_mirror_with_a_truncated_file(mnist_mirrors, tmp_path, monkeypatch, server, damage):
    name = "t10k-images-idx3-ubyte.gz"
    monkeypatch.setattr(mnist, "MIRRORS", (f"{server}/{damage}/", f"{server}/ok/"))
    load_mnist(root=tmp_path, train=False)
    assert Handler.requests[:2] == [f"/{damage}/{name}", f"/ok/{name}"]
    assert only_file(tmp_path / "mnist") == sorted(mnist.FILES[False])


def test_mnist_reports_every_mirror_when_all_fail(mnist_mirrors, tmp_path, monkeypatch, server):
    monkeypatch.setattr(mnist, "MIRRORS", (f"{server}/missing/", f"{server}/corrupt/"))
    with pytest.raises(DownloadError) as info:
        load_mnist(root=tmp_path, train=False)
    message = str(info.value)
    assert "could not download t10k-images-idx3-ubyte.gz" in message
    assert f"{server}/missing/t10k-images-idx3-ubyte.gz: HTTPError" in message
    assert f"{server}/corrupt/t10k-images-idx3-ubyte.gz: " in message
    assert only_file(tmp_path / "mnist") == []
