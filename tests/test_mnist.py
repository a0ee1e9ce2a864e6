"""MNIST: IDX parsing (gz or raw), checksums, clear errors for damaged files, the search order.

The real files are the repository's ``data/mnist``; the other tests use small generated IDX files
and patch the expected checksums. Nothing here touches the network (``download=False``).
"""

import gzip
import struct
import time

import numpy
import pytest

from dlscratch.data import MNIST, ChecksumError, DataLoader, IDXError, idx, load_mnist, mnist, read_idx
from dlscratch.data.download import md5_hex

REAL_FILES = mnist.REPO_DATA / "mnist"
TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def idx_bytes(array):
    """An IDX file holding uint8 ``array``: images (n, rows, cols) or labels (n,)."""
    magic = 2051 if array.ndim == 3 else 2049
    return struct.pack(f">{1 + array.ndim}I", magic, *array.shape) + array.astype(numpy.uint8).tobytes()


def small_split(seed=0, n=5):
    rng = numpy.random.default_rng(seed)
    return rng.integers(0, 256, (n, 28, 28), dtype=numpy.uint8), rng.integers(0, 10, n, dtype=numpy.uint8)


def write_split(folder, monkeypatch, train=False, seed=0, n=5, gz=True):
    """Write a small split under MNIST's file names in ``folder``; with ``monkeypatch``, make its
    checksums the expected ones for the test."""
    folder.mkdir(parents=True, exist_ok=True)
    images, labels = small_split(seed, n)
    for name, array in zip(mnist.FILES[train], (images, labels)):
        data = idx_bytes(array)
        if monkeypatch is not None:
            monkeypatch.setitem(mnist.MD5, name, md5_hex(data))
        if gz:
            (folder / name).write_bytes(gzip.compress(data))
        else:
            (folder / name.removesuffix(".gz")).write_bytes(data)
    return images, labels


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No DLSCRATCH_DATA, no repository data folder, and an empty user cache under tmp_path."""
    monkeypatch.delenv("DLSCRATCH_DATA", raising=False)
    monkeypatch.setattr(mnist, "REPO_DATA", tmp_path / "no-repo")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture(scope="module")
def real_train():
    """The real training set, loaded afresh (about 0.5 s on a 2-core CPU: gunzip, MD5, scaling)."""
    mnist._cache.clear()
    start = time.perf_counter()
    arrays = load_mnist(root=mnist.REPO_DATA, train=True, download=False)
    assert time.perf_counter() - start < 3.0
    return arrays


def assert_pixels_match_the_file(images, name):
    """Compare with an independent parse of a real image file: gunzip, skip the 16-byte header."""
    with gzip.open(REAL_FILES / name) as f:
        pixels = numpy.frombuffer(f.read()[16:], dtype=numpy.uint8).reshape(-1, 1, 28, 28)
    assert numpy.array_equal(numpy.rint(images * 255).astype(numpy.uint8), pixels)


# ----- the real files -----

def test_real_train_set(real_train):
    images, labels = real_train
    assert images.shape == (60000, 1, 28, 28) and images.dtype == numpy.float32
    assert labels.shape == (60000,) and labels.dtype == numpy.int64
    assert images.min() == 0.0 and images.max() == 1.0
    assert labels[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert numpy.bincount(labels).tolist() == TRAIN_COUNTS
    assert_pixels_match_the_file(images, "train-images-idx3-ubyte.gz")


def test_real_test_set():
    images, labels = load_mnist(root=mnist.REPO_DATA, train=False, download=False)
    assert images.shape == (10000, 1, 28, 28) and images.dtype == numpy.float32
    assert labels[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    assert numpy.bincount(labels).tolist() == TEST_COUNTS
    assert_pixels_match_the_file(images, "t10k-images-idx3-ubyte.gz")


@pytest.mark.parametrize("name", sorted(mnist.MD5))
def test_real_files_match_their_content_checksums(name):
    assert md5_hex(idx.read_bytes(REAL_FILES / name)) == mnist.MD5[name]


def test_second_load_comes_from_the_cache_and_is_read_only(real_train):
    start = time.perf_counter()
    images, labels = load_mnist(root=mnist.REPO_DATA, train=True, download=False)
    assert time.perf_counter() - start < 0.25  # about 0.3 ms: two stat calls and a dict lookup
    assert images is real_train[0] and labels is real_train[1]
    with pytest.raises(ValueError, match="read-only"):
        images[0, 0, 0, 0] = 5.0
    with pytest.raises(ValueError, match="read-only"):
        labels[0] = 7


def test_mnist_dataset(real_train):
    dataset = MNIST(root=mnist.REPO_DATA, train=True, download=False)
    assert len(dataset) == 60000 and repr(dataset).startswith("MNIST(train: 60000")
    image, label = dataset[0]
    assert image.shape == (1, 28, 28) and label == 5
    x, y = next(iter(DataLoader(dataset, batch_size=4)))
    assert x.shape == (4, 1, 28, 28) and x.dtype == numpy.float32
    assert y.tolist() == [5, 0, 4, 1]


# ----- parsing: gz or raw, damaged files -----

def test_gzip_is_detected_by_its_magic_bytes_not_the_name(tmp_path):
    images, labels = small_split()
    (tmp_path / "raw-named.gz").write_bytes(idx_bytes(images))
    (tmp_path / "gzipped-named.idx").write_bytes(gzip.compress(idx_bytes(images)))
    (tmp_path / "labels").write_bytes(idx_bytes(labels))
    numpy.testing.assert_array_equal(read_idx(tmp_path / "raw-named.gz"), images)
    numpy.testing.assert_array_equal(read_idx(tmp_path / "gzipped-named.idx"), images)
    numpy.testing.assert_array_equal(read_idx(tmp_path / "labels"), labels)


@pytest.mark.parametrize("gz", [False, True])
def test_truncated_file_names_the_file_and_what_to_do(tmp_path, gz):
    data = idx_bytes(small_split()[0])[:-100]
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(IDXError, match="truncated") as info:
        read_idx(path)
    message = str(info.value)
    assert str(path) in message and "(5, 28, 28) = 3920 bytes" in message and "only 3820 follow" in message
    assert f"Delete {path} and run again to download it afresh" in message and str(tmp_path) in message


def test_truncated_gzip_stream(tmp_path):
    path = tmp_path / "t10k-labels-idx1-ubyte.gz"
    path.write_bytes(gzip.compress(idx_bytes(small_split()[1]))[:-10])
    with pytest.raises(IDXError, match=r"gzip stream is damaged or truncated.*Delete"):
        read_idx(path)


def test_bad_magic(tmp_path):
    path = tmp_path / "not-idx"
    path.write_bytes(struct.pack(">II", 1234, 0))
    with pytest.raises(IDXError, match=r"not-idx: bad magic number 1234 \(expected 2051 for images or 2049"):
        read_idx(path)


def test_truncated_header_and_extra_bytes(tmp_path):
    with pytest.raises(IDXError, match=r"header is truncated \(12 of 16 bytes\)"):
        idx.parse_idx(struct.pack(">III", 2051, 1, 28))
    with pytest.raises(IDXError, match="too short for an IDX header"):
        idx.parse_idx(b"\x00\x00\x08")
    with pytest.raises(IDXError, match="3 unexpected bytes follow the 2 bytes"):
        idx.parse_idx(idx_bytes(numpy.array([1, 2], dtype=numpy.uint8)) + b"abc")


def test_checksum_mismatch_names_the_file(isolated):
    folder = isolated / "data" / "mnist"
    write_split(folder, monkeypatch=None)  # the real checksums stay expected
    with pytest.raises(ChecksumError, match="MD5 of its content is") as info:
        load_mnist(root=isolated / "data", train=False, download=False)
    assert str(folder / "t10k-images-idx3-ubyte.gz") in str(info.value)
    assert "expected 2646ac647ad5339dbf082846283269ea" in str(info.value) and "Delete it" in str(info.value)


def test_images_and_labels_of_different_lengths(isolated, monkeypatch):
    folder = isolated / "mnist"
    write_split(folder, monkeypatch)
    labels = idx_bytes(numpy.arange(3, dtype=numpy.uint8))
    (folder / "t10k-labels-idx1-ubyte.gz").write_bytes(labels)
    monkeypatch.setitem(mnist.MD5, "t10k-labels-idx1-ubyte.gz", md5_hex(labels))
    with pytest.raises(ValueError, match="has 5 images but .* has 3 labels"):
        load_mnist(root=isolated, train=False, download=False)


# ----- where the files are looked for -----

def test_small_split_is_scaled_and_shaped(isolated, monkeypatch):
    images, labels = write_split(isolated / "mnist", monkeypatch, gz=False)  # raw files, names without .gz
    x, y = load_mnist(root=isolated, train=False, download=False)
    assert x.shape == (5, 1, 28, 28) and x.dtype == numpy.float32 and y.dtype == numpy.int64
    numpy.testing.assert_array_equal(x[:, 0] * 255, images.astype(numpy.float32))
    assert y.tolist() == labels.tolist()


def folder_used(root=None):
    images, labels = mnist.mnist_files(root, train=False, download_missing=False)
    assert images.parent == labels.parent
    return images.parent


def test_explicit_root_comes_before_the_environment_variable(isolated, monkeypatch):
    write_split(isolated / "root" / "mnist", None)
    write_split(isolated / "env" / "mnist", None)
    monkeypatch.setenv("DLSCRATCH_DATA", str(isolated / "env"))
    assert folder_used(isolated / "root") == isolated / "root" / "mnist"
    assert folder_used() == isolated / "env" / "mnist"
    assert folder_used(isolated / "empty") == isolated / "env" / "mnist"


def test_repository_data_comes_before_the_user_cache(isolated, monkeypatch):
    write_split(isolated / "repo" / "mnist", None)
    cache_images, _ = write_split(isolated / "cache" / "dlscratch" / "mnist", monkeypatch)
    assert mnist.cache_folder() == isolated / "cache" / "dlscratch" / "mnist"
    x, _ = load_mnist(train=False, download=False)  # no repository folder yet: the cache
    numpy.testing.assert_array_equal(x[:, 0] * 255, cache_images)
    monkeypatch.setattr(mnist, "REPO_DATA", isolated / "repo")
    assert mnist.search_folders() == [isolated / "repo" / "mnist", mnist.cache_folder()]
    assert folder_used() == isolated / "repo" / "mnist"


def test_cache_folder_without_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert mnist.cache_folder() == tmp_path / ".cache" / "dlscratch" / "mnist"


def test_missing_files_without_download_list_the_folders_searched(isolated, monkeypatch):
    monkeypatch.setenv("DLSCRATCH_DATA", str(isolated / "env"))
    with pytest.raises(FileNotFoundError, match="t10k-images-idx3-ubyte.gz is in none of the folders") as info:
        load_mnist(root=isolated / "root", train=False, download=False)
    message = str(info.value)
    for folder in (isolated / "root" / "mnist", isolated / "env" / "mnist", mnist.cache_folder()):
        assert str(folder) in message
    assert "download=True" in message and mnist.MIRRORS[0] in message


def test_a_changed_file_is_read_again(isolated, monkeypatch):
    write_split(isolated / "mnist", monkeypatch, seed=5)
    first, _ = load_mnist(root=isolated, train=False, download=False)
    images, _ = write_split(isolated / "mnist", monkeypatch, seed=6, n=7)
    second, _ = load_mnist(root=isolated, train=False, download=False)
    assert first.shape[0] == 5 and second.shape[0] == 7
    numpy.testing.assert_array_equal(second[:, 0] * 255, images)
