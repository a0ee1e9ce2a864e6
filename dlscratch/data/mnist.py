"""MNIST: 70,000 handwritten digits of 28x28 pixels, from the original IDX files.

    images, labels = load_mnist(train=True)   # (60000, 1, 28, 28) float32 in [0, 1], (60000,) int64
    train_set = MNIST(train=True)             # the same as a TensorDataset, for a DataLoader

The files are looked for in this order (``root`` and ``DLSCRATCH_DATA`` name a data folder that
holds an ``mnist`` folder, like the repository's ``data/``):

1. ``root/mnist`` when ``root`` is given,
2. ``$DLSCRATCH_DATA/mnist`` when that environment variable is set (to an absolute path),
3. the repository's ``data/mnist`` (a clone or an editable install),
4. the user cache ``~/.cache/dlscratch/mnist`` (``$XDG_CACHE_HOME/dlscratch/mnist`` when set).

Missing files are downloaded from ``MIRRORS`` into the first writable folder of 1, 2 and 4. Every
file's content is checked against the MD5 of the original uncompressed file, so a damaged file
is never used. Parsed arrays are kept in memory: a second load in the same process is instant.
Host-only code: the arrays are NumPy; a DataLoader moves each batch to the current device.
"""

import functools
import os
from pathlib import Path

import numpy

from . import idx
from .dataset import TensorDataset
from .download import ChecksumError, download, md5_hex

#: Public mirrors of the original IDX files, tried in order (yann.lecun.com does not serve them).
MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)

#: (images, labels) file names of each split.
FILES = {
    True: ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    False: ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}

#: MD5 of each file's uncompressed content: the same for every mirror, whatever its gzip settings.
MD5 = {
    "train-images-idx3-ubyte.gz": "6bbc9ace898e44ae57da46a324031adb",
    "train-labels-idx1-ubyte.gz": "a25bea736e30d166cdddb491f175f624",
    "t10k-images-idx3-ubyte.gz": "2646ac647ad5339dbf082846283269ea",
    "t10k-labels-idx1-ubyte.gz": "27ae3e4e09519cfbb04c329615203637",
}

#: Size of each file's uncompressed content (IDX header + data): a gzip stream whose header announces
#: more is rejected before it is inflated.
SIZES = {
    "train-images-idx3-ubyte.gz": 16 + 60000 * 28 * 28,
    "train-labels-idx1-ubyte.gz": 8 + 60000,
    "t10k-images-idx3-ubyte.gz": 16 + 10000 * 28 * 28,
    "t10k-labels-idx1-ubyte.gz": 8 + 10000,
}

#: The repository's data folder, found relative to the package (exists in clones and editable installs).
REPO_DATA = Path(__file__).resolve().parents[2] / "data"

_cache = {}  # (path, mtime, size) of both files -> (images, labels), read-only


def cache_folder():
    """The user cache for MNIST: ``$XDG_CACHE_HOME/dlscratch/mnist``, else ``~/.cache/dlscratch/mnist``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dlscratch" / "mnist"


def _environment_folder():
    """The folder that ``DLSCRATCH_DATA`` names (``~`` expanded), or None when it is unset or blank.

    Raises ValueError for a relative path (it would change with the current folder, and a notebook
    and a script would download the files twice) and NotADirectoryError for a regular file."""
    value = os.environ.get("DLSCRATCH_DATA", "")
    if not value.strip():
        return None
    folder = Path(value).expanduser()
    if not folder.is_absolute():
        raise ValueError(f"DLSCRATCH_DATA={value!r} is a relative path, which depends on the current folder; "
                         f"give an absolute path, such as {Path.cwd() / folder}")
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"DLSCRATCH_DATA={value!r} is a file, not a folder; name the folder that holds "
                                 "(or will hold) the mnist folder, or unset it")
    return folder


def _download_candidates(root):
    folders = [Path(root) / "mnist"] if root is not None else []
    environment = _environment_folder()
    if environment is not None:
        folders.append(environment / "mnist")
    return folders + [cache_folder()]


def search_folders(root=None):
    """The folders where the MNIST files are looked for, in order (see the module docstring)."""
    folders = _download_candidates(root)
    if (REPO_DATA / "mnist").is_dir():
        folders.insert(len(folders) - 1, REPO_DATA / "mnist")
    return folders


def _find(name, folders):
    """The first ``folder/name`` (gzipped) or ``folder/name`` without ``.gz`` (raw) that exists."""
    for folder in folders:
        for path in (folder / name, folder / name.removesuffix(".gz")):
            if path.is_file():
                return path
    return None


def _writable_folder(root):
    """The first of root, DLSCRATCH_DATA and the cache where files can be written."""
    tried = []
    for folder in _download_candidates(root):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if os.access(folder, os.W_OK):
                return folder
            tried.append(f"{folder} (not writable)")
        except OSError as exc:
            tried.append(f"{folder} ({exc})")
    raise PermissionError("MNIST: no folder to download into: " + "; ".join(tried) + ". Pass a writable root.")


def mnist_files(root=None, train=True, download_missing=True):
    """The paths of the (images, labels) files of a split, downloading the missing ones if allowed."""
    folders = search_folders(root)
    paths = []
    for name in FILES[bool(train)]:
        path = _find(name, folders)
        if path is None and download_missing:
            path = download(
                [mirror + name for mirror in MIRRORS], _writable_folder(root) / name,
                md5=MD5[name], content=functools.partial(idx.read_bytes, max_bytes=SIZES[name]),
            )
        if path is None:
            searched = ", ".join(str(f) for f in folders)
            raise FileNotFoundError(
                f"MNIST: {name} is in none of the folders searched ({searched}). Pass download=True, "
                f"or download it by hand from {MIRRORS[0]}{name} into one of them."
            )
        paths.append(path)
    return tuple(paths)


def _read_checked(path):
    """The uint8 array of an MNIST file, after checking the MD5 of its uncompressed content."""
    name = path.name if path.name.endswith(".gz") else path.name + ".gz"
    data = idx.read_bytes(path, max_bytes=SIZES[name])
    got = md5_hex(data)
    if got != MD5[name]:
        raise ChecksumError(
            f"MNIST: {path} is damaged or not the original file: the MD5 of its content is {got}, "
            f"expected {MD5[name]}. Delete it and run again to download it afresh, or put a good copy "
            f"in {path.parent} by hand."
        )
    return idx.parse_idx(data, path)


def _stamp(path):
    stat = path.stat()
    return str(path.resolve()), stat.st_mtime_ns, stat.st_size


def load_mnist(root=None, train=True, download=True):
    """MNIST as NumPy arrays: images (N, 1, 28, 28) float32 in [0, 1], labels (N,) int64.

    N is 60,000 for ``train=True`` and 10,000 for the test set. The arrays are read-only (they
    are shared with an in-memory cache); take a ``.copy()`` to modify them.
    """
    images_path, labels_path = mnist_files(root, train, download)
    key = (_stamp(images_path), _stamp(labels_path))
    if key not in _cache:
        pixels, labels = _read_checked(images_path), _read_checked(labels_path)
        if len(pixels) != len(labels):
            raise ValueError(
                f"MNIST: {images_path} has {len(pixels)} images but {labels_path} has {len(labels)} labels; "
                "delete both and run again to download them afresh"
            )
        images = numpy.divide(pixels, numpy.float32(255), dtype=numpy.float32)[:, None]
        labels = labels.astype(numpy.int64)
        images.flags.writeable = labels.flags.writeable = False
        _cache[key] = images, labels
    return _cache[key]


class MNIST(TensorDataset):
    """The MNIST training (``train=True``, 60,000) or test set (10,000) as a dataset of
    (image (1, 28, 28) float32, label int64) pairs. See ``load_mnist``."""

    classes = tuple(range(10))

    def __init__(self, root=None, train=True, download=True):
        self.images, self.labels = load_mnist(root, train, download)
        self.train = bool(train)
        super().__init__(self.images, self.labels)

    def __repr__(self):
        split = "train" if self.train else "test"
        return f"MNIST({split}: {len(self)} images of {self.images.shape[1:]}, labels 0-9)"
