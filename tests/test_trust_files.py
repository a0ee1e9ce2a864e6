"""Trust in files and configuration (issue 26, items 9-11 and the clear errors about files):
concurrent saves to one checkpoint, bad save destinations, self-referencing objects, downloads into
folders that cannot be written, bad ``DLSCRATCH_DATA`` and ``DLSCRATCH_DEVICE`` values, IDX headers
whose sizes overflow, ragged DataLoader batches and one-shot iterators as datasets."""

import gzip
import http.server
import os
import struct
import subprocess
import sys
import tempfile

import numpy
import pytest
from local_server import serving

import dlscratch
from dlscratch.data import DataLoader, Dataset, IDXError, TensorDataset, download, mnist, read_idx

# ----- two processes saving one checkpoint -----
SAVER = """
import sys
import numpy
import dlscratch
path, value, count = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
state = {"w": numpy.full((64, 64), value, dtype=numpy.float32), "who": value}
print("ready", flush=True)
sys.stdin.readline()  # both start saving together
for _ in range(count):
    dlscratch.save(state, path)
"""


def test_two_processes_saving_one_path_both_succeed_and_leave_one_complete_checkpoint(tmp_path):
    path = tmp_path / "model.npz"
    savers = [subprocess.Popen([sys.executable, "-c", SAVER, str(path), str(value), "40"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for value in (1.0, 2.0)]
    for saver in savers:
        assert saver.stdout.readline().strip() == "ready", saver.stderr.read()
    for saver in savers:
        saver.stdin.write("go\n")
        saver.stdin.flush()
    for saver in savers:
        _, errors = saver.communicate(timeout=60)
        assert saver.returncode == 0, errors
    state = dlscratch.load(path)
    assert state["who"] in (1.0, 2.0)
    numpy.testing.assert_array_equal(state["w"], numpy.full((64, 64), state["who"], dtype=numpy.float32))
    assert os.listdir(tmp_path) == ["model.npz"]


def test_a_save_removes_the_temporaries_of_dead_processes_only(tmp_path):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
    dead = tmp_path / f".model.npz.{int(finished.stdout)}.0badf00d.tmp"  # what a killed save leaves
    alive = tmp_path / f".model.npz.{os.getpid()}.0badf00d.tmp"  # a save in progress in another thread
    dead.write_bytes(b"\0" * 100)
    alive.write_bytes(b"\0" * 100)
    dlscratch.save({"w": numpy.zeros(3)}, tmp_path / "model.npz")
    assert sorted(os.listdir(tmp_path)) == [alive.name, "model.npz"]


# ----- bad destinations -----
def test_saving_under_a_regular_file_names_it(tmp_path):
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    with pytest.raises(NotADirectoryError, match=r"save: .*notes\.txt is a file, not a folder"):
        dlscratch.save({}, tmp_path / "notes.txt" / "model.npz")
    with pytest.raises(NotADirectoryError, match=r"save: cannot write .*runs/model\.npz: .*notes\.txt is a file"):
        dlscratch.save({}, tmp_path / "notes.txt" / "runs" / "model.npz")
    assert os.listdir(tmp_path) == ["notes.txt"]


def test_saving_to_an_empty_path_is_refused():
    with pytest.raises(ValueError, match=r"save: the path is empty \(''\); give a file name"):
        dlscratch.save({}, "")


def test_saving_onto_a_folder_names_it(tmp_path):
    (tmp_path / "runs").mkdir()
    with pytest.raises(IsADirectoryError, match=r"save: .*runs is a folder; give a file path.*runs/model\.npz"):
        dlscratch.save({}, tmp_path / "runs")
    assert os.listdir(tmp_path) == ["runs"] and os.listdir(tmp_path / "runs") == []


# ----- objects that refer to themselves -----
def test_saving_a_self_referencing_list_or_dict_names_the_cycle(tmp_path):
    loop = [1]
    loop.append(loop)
    cycle = r"save: the object refers to itself \(a list inside itself at obj\[1\], which is obj again\)"
    with pytest.raises(ValueError, match=cycle):
        dlscratch.save(loop, tmp_path / "x.npz")
    state = {"model": {}}
    state["model"]["parent"] = state
    with pytest.raises(ValueError, match=r"a dict inside itself at obj\['model'\]\['parent'\], which is obj again"):
        dlscratch.save(state, tmp_path / "x.npz")
    assert os.listdir(tmp_path) == []


def test_the_same_list_twice_is_not_a_cycle(tmp_path):
    shared = [1, 2]
    dlscratch.save({"a": shared, "b": [shared]}, tmp_path / "x.npz")
    assert dlscratch.load(tmp_path / "x.npz") == {"a": [1, 2], "b": [[1, 2]]}


# ----- downloads into folders that cannot be written -----
class Payload(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args):
        pass


@pytest.fixture
def server(monkeypatch):
    with serving(Payload, monkeypatch) as url:
        yield url


def test_a_download_under_a_regular_file_names_the_folder(server, tmp_path):
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    with pytest.raises(OSError, match=r"download\(f\.bin\): cannot write into the folder .*notes\.txt") as info:
        download(f"{server}/f.bin", tmp_path / "notes.txt" / "f.bin", progress=False)
    assert "connection" not in str(info.value)


def test_a_download_without_permission_names_the_folder_and_the_permission(server, tmp_path, monkeypatch):
    def refuse(*args, dir=None, **kwargs):
        raise PermissionError(13, "Permission denied", os.path.join(dir, ".f.bin.part"))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)  # works as root too, whom chmod does not stop
    with pytest.raises(PermissionError, match=r"cannot write into the folder .*: Permission denied") as info:
        download(f"{server}/f.bin", tmp_path / "f.bin", progress=False)
    assert str(tmp_path) in str(info.value) and "connection" not in str(info.value)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root may write into any folder")
def test_a_download_into_a_read_only_folder_names_it(server, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o500)
    try:
        with pytest.raises(PermissionError, match=r"cannot write into the folder .*locked: Permission denied"):
            download(f"{server}/f.bin", folder / "f.bin", progress=False)
    finally:
        folder.chmod(0o700)


# ----- DLSCRATCH_DATA -----
def test_dlscratch_data_that_is_a_regular_file_is_named(tmp_path, monkeypatch):
    (tmp_path / "data").write_text("a file")
    monkeypatch.setenv("DLSCRATCH_DATA", str(tmp_path / "data"))
    with pytest.raises(NotADirectoryError, match=r"DLSCRATCH_DATA=.*data' is a file, not a folder"):
        mnist.search_folders()


def test_dlscratch_data_must_be_an_absolute_path(monkeypatch):
    monkeypatch.setenv("DLSCRATCH_DATA", "data")
    with pytest.raises(ValueError, match=r"DLSCRATCH_DATA='data' is a relative path.*give an absolute path"):
        mnist.search_folders()


def test_blank_dlscratch_data_counts_as_unset_and_a_tilde_is_expanded(monkeypatch):
    monkeypatch.setenv("DLSCRATCH_DATA", "  ")
    blank = mnist.search_folders()
    monkeypatch.delenv("DLSCRATCH_DATA")
    assert blank == mnist.search_folders()
    monkeypatch.setenv("DLSCRATCH_DATA", "~/datasets")
    assert mnist.search_folders()[0] == mnist.Path.home() / "datasets" / "mnist"


# ----- IDX headers whose sizes overflow -----
@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("shape", [(2**31, 2**31, 2**31), (2**32 - 1, 2**32 - 1, 2**32 - 1)])
def test_an_idx_header_whose_sizes_overflow_names_the_file_and_the_sizes(tmp_path, gz, shape):
    data = struct.pack(">4I", 2051, *shape)
    path = tmp_path / ("images.gz" if gz else "images")
    path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(IDXError, match=rf"images.*announces \({shape[0]}, {shape[1]}, {shape[2]}\) = "
                                       rf"{shape[0] * shape[1] * shape[2]} bytes of data, but only 0 follow"):
        read_idx(path)


# ----- DataLoader batches -----
class Ragged(Dataset):
    def __init__(self, lengths, pairs=False):
        self.lengths, self.pairs = lengths, pairs

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, i):
        x = numpy.ones(self.lengths[i], dtype=numpy.float32)
        return (x, i) if self.pairs else x


def test_ragged_samples_name_the_entries_and_their_shapes():
    with pytest.raises(ValueError, match=r"DataLoader: cannot stack the samples of a batch: sample 2 has shape "
                                         r"\(3,\) but sample 3 has shape \(2,\)"):
        list(DataLoader(Ragged([3, 3, 3, 2]), batch_size=2))
    with pytest.raises(ValueError, match=r"field 0 of sample 0 has shape \(3,\) but field 0 of sample 1 has shape "
                                         r"\(2,\)"):
        list(DataLoader(Ragged([3, 2], pairs=True), batch_size=2))


def test_samples_with_different_numbers_of_fields_are_named():
    with pytest.raises(ValueError, match=r"sample 0 has 3 fields but sample 1 has 2"):
        list(DataLoader([[1, 2, 3], [1, 2]], batch_size=2))


def test_a_one_shot_iterator_is_refused_as_a_dataset():
    with pytest.raises(TypeError, match=r"DataLoader: the dataset needs __len__ and __getitem__.*got a generator, "
                                        r"which is used up after one pass"):
        DataLoader(x for x in range(3))
    with pytest.raises(TypeError, match=r"TensorDataset: argument 0 is a generator.*list\(\)"):
        TensorDataset(x for x in range(3))


# ----- DLSCRATCH_DEVICE -----
def _import_with_device(value):
    env = dict(os.environ, DLSCRATCH_DEVICE=value)
    env.pop("DLSCRATCH_STRICT_GPU", None)
    return subprocess.run([sys.executable, "-c", "import dlscratch"], env=env, capture_output=True, text=True,
                          timeout=60)


def test_dlscratch_device_gpu_without_a_gpu_names_the_variable(no_gpu):
    result = _import_with_device("gpu")
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert "DLSCRATCH_DEVICE='gpu'" in last and "no usable GPU" in last and "DLSCRATCH_DEVICE=cpu" in last


def test_dlscratch_device_with_a_bad_value_names_the_variable():
    result = _import_with_device("tpu")
    assert result.returncode != 0
    assert "DLSCRATCH_DEVICE='tpu' is not one of" in result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("which", ["train_loader", "val_loader"])
def test_fit_refuses_a_one_shot_generator_that_a_second_epoch_would_find_empty(which):
    model = dlscratch.nn.Linear(3, 2)
    optimizer = dlscratch.optim.SGD(model.parameters(), lr=0.1)
    x = numpy.ones((4, 3), numpy.float32)
    y = numpy.array([0, 1, 0, 1])
    batches = [(dlscratch.tensor(x), dlscratch.tensor(y))]
    loaders = {"train_loader": batches, "val_loader": batches, which: (b for b in batches)}
    before = model.weight.detach().numpy().copy()
    with pytest.raises(TypeError, match=f"fit: {which} is a generator, used up after one pass: epochs 2 to 3"):
        dlscratch.training.fit(model, dlscratch.functional.cross_entropy, optimizer, loaders["train_loader"],
                               epochs=3, val_loader=loaders["val_loader"], progress=False)
    numpy.testing.assert_array_equal(model.weight.detach().numpy(), before)


def test_fit_reads_a_one_shot_generator_for_a_single_epoch():
    model = dlscratch.nn.Linear(3, 2)
    optimizer = dlscratch.optim.SGD(model.parameters(), lr=0.1)
    batches = ((dlscratch.tensor(numpy.ones((4, 3), numpy.float32)), dlscratch.tensor(numpy.array([0, 1, 0, 1])))
               for _ in range(2))
    history = dlscratch.training.fit(model, dlscratch.functional.cross_entropy, optimizer, batches, epochs=1,
                                     progress=False)
    assert len(history.step_losses) == 2
