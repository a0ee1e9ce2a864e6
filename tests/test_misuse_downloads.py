"""Downloads that must not hang or exhaust memory: a server that drips bytes meets the whole
download's deadline, and a gzip bomb is rejected from its IDX header, without inflating it."""

import gzip
import http.server
import importlib
import struct
import time
import tracemalloc

import pytest
from local_server import serving

from dlscratch.data import DownloadError, download, idx, mnist
from dlscratch.data.idx import IDXError

download_module = importlib.import_module("dlscratch.data.download")  # the package's `download` is the function


class DripHandler(http.server.BaseHTTPRequestHandler):
    """Announces 1,000 bytes and sends one every 20 ms: each read succeeds, the whole never ends."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        try:
            for _ in range(1000):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.02)
        except OSError:  # the client gave up
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def drip_server(monkeypatch):
    with serving(DripHandler, monkeypatch) as url:
        yield url


def test_a_dripping_server_meets_the_deadline_of_the_whole_download(drip_server, tmp_path):
    url = f"{drip_server}/slow.bin"
    start = time.monotonic()
    with pytest.raises(DownloadError) as info:
        download(url, tmp_path / "slow.bin", progress=False, timeout=5, deadline=0.5)
    elapsed = time.monotonic() - start
    assert 0.5 <= elapsed < 3  # the per-read timeout (5 s) never fired: each byte came in time
    message = str(info.value)
    assert f"{url}: TimeoutError: {url} did not finish within the deadline of 0.5 s" in message
    assert "pass a larger deadline=" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no partial file left


def test_the_deadline_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match=r"download\(f.bin\): deadline=0 must be a positive number of seconds"):
        download("http://127.0.0.1:9/f.bin", tmp_path / "f.bin", deadline=0)


BOMB_PADDING = 16 * 2**20  # 16 MB of zeros after the data that the header announces


@pytest.fixture
def bomb(tmp_path):
    """A gzip file of a valid IDX header for 10 images of 28x28, then 16 MB more than that (~16 kB compressed)."""
    path = tmp_path / "train-images-idx3-ubyte.gz"
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">4I", 2051, 10, 28, 28))
        f.write(bytes(10 * 28 * 28))
        for _ in range(16):
            f.write(bytes(2**20))
    assert path.stat().st_size < 100_000
    return path


def test_a_gzip_bomb_is_rejected_without_inflating_it(bomb):
    tracemalloc.start()
    try:
        with pytest.raises(IDXError) as info:
            idx.read_idx(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < BOMB_PADDING // 8  # a few hundred kB at most, against 16 MB inflated
    message = str(info.value)
    assert str(bomb) in message and "more than the 7856 bytes its IDX header (10, 28, 28) announces" in message


def test_a_header_announcing_more_than_the_largest_allowed_size_is_rejected_at_once(bomb):
    with pytest.raises(IDXError, match=r"announces \(10, 28, 28\) = 7856 bytes, more than the 1000 expected"):
        idx.read_bytes(bomb, max_bytes=1000)


def test_mnist_knows_the_size_of_each_file():
    assert mnist.SIZES["train-images-idx3-ubyte.gz"] == 16 + 60000 * 28 * 28
    assert mnist.SIZES["t10k-labels-idx1-ubyte.gz"] == 8 + 10000
    assert set(mnist.SIZES) == set(mnist.MD5)


def test_a_gzip_bomb_from_a_mirror_is_rejected_without_inflating_it(bomb, monkeypatch):
    monkeypatch.setitem(mnist.SIZES, "train-images-idx3-ubyte.gz", 1000)  # the bomb's header claims 7856
    tracemalloc.start()
    try:
        with pytest.raises(IDXError, match="more than the 1000 expected"):
            mnist._read_checked(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < BOMB_PADDING // 8
