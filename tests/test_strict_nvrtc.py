"""The stand-in's compile check (dlscratch/strict_nvrtc.py): every kernel of the library, in every signature the
library launches it with, compiled by NVRTC from the source CuPy writes, and nothing run that NVRTC rejects.

The tests that compile need CuPy and NVRTC (``pip install cupy-cuda12x nvidia-cuda-nvrtc-cu12
nvidia-cuda-runtime-cu12``; no GPU): CI's newest-Python lane has them and sets ``DLSCRATCH_REQUIRE_NVRTC=1``,
which turns their skip into a failure. The shape rules run everywhere; the source's match with CuPy's own
needs a real GPU."""

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dlscratch
from dlscratch import amp, nn, optim
from dlscratch import backend as B
from dlscratch import functional as F
from dlscratch.bench.strict_cupy import nvrtc as strict_nvrtc
from dlscratch.bench.strict_cupy.nvrtc import _Array, _reduced_shape
from dlscratch.nn.utils.rnn import pack_sequence

LIBRARY = Path(dlscratch.__file__).parent
NESTEROV = "if (nesterov) grad = grad + buf * momentum;\nelse grad = buf;"
PLANTED = {  # a mistake planted in a kernel source that compiles, and what NVRTC says of it
    "a missing ';'": (lambda s: s.replace("buf = buf * momentum;", "buf = buf * momentum", 1),
                      "expected a \";\""),
    "an undefined function": (lambda s: s.replace("buf = buf * momentum;", "buf = fmul(buf, momentum);", 1),
                              "identifier \"fmul\" is undefined"),
    "an ambiguous ternary": (lambda s: s.replace(NESTEROV,
                                                 "grad = nesterov ? grad + buf * momentum : buf;", 1),
                             "ambiguous \"?\" operation"),
}


def library_kernel_names():
    """The names of the library's CUDA kernels, read from its source."""
    names = set()
    for path in LIBRARY.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "elementwise_kernel(" in text:
            names |= set(re.findall(r"\"(dlscratch_\w+)\"", text))
    return names


def on_gpu(array, dtype):
    return dlscratch.tensor(B.to_gpu(array.astype(dtype)), dtype=dtype)


def train(model, make_optimizer, inputs, labels, steps=2):
    optimizer = make_optimizer(model.parameters())
    for _ in range(steps):
        optimizer.zero_grad()
        F.cross_entropy(model(inputs), labels).backward()
        optimizer.step()


OPTIMIZERS = [lambda p: optim.SGD(p, lr=0.01), lambda p: optim.SGD(p, lr=0.01, momentum=0.9),
              lambda p: optim.SGD(p, lr=0.01, momentum=0.9, nesterov=True, weight_decay=1e-3),
              lambda p: optim.SGD(p, lr=0.01, momentum=0.9, dampening=0.5),
              lambda p: optim.Adam(p, lr=1e-3, eps=1e-4),  # float16: the default 1e-8 rounds to 0, and 0/0 is NaN
              lambda p: optim.AdaDelta(p, lr=0.1)]


def workload():
    """Training steps that send every kernel its signatures: three float dtypes, two label dtypes, every
    optimizer, convolution, pooling, dropout, the LSTM cell and layer (bidirectional, packed), ``fit``, autocast."""
    rng = np.random.default_rng(0)
    for cast in ("float", "half", "double"):
        for label_dtype in (np.int64, np.int32):
            for make in OPTIMIZERS:
                mlp = getattr(nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 4)),
                              cast)().to("gpu")
                x = on_gpu(rng.standard_normal((6, 12)), mlp[0].weight.dtype)
                train(mlp, make, x, dlscratch.tensor(B.to_gpu(rng.integers(0, 4, 6).astype(label_dtype))))
        cnn = getattr(nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.Conv2d(3, 3, 3, padding=1),
                                    nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(), nn.Linear(3 * 4 * 4, 4)),
                      cast)().to("gpu")
        images = on_gpu(rng.standard_normal((5, 2, 8, 8)), cnn[0].weight.dtype)
        train(cnn, OPTIMIZERS[1], images, dlscratch.tensor(B.to_gpu(rng.integers(0, 4, 5))))
        strided = on_gpu(rng.standard_normal((8, 8, 2, 5)), cnn[0].weight.dtype)
        train(cnn, OPTIMIZERS[4], strided.permute(3, 2, 0, 1), dlscratch.tensor(B.to_gpu(rng.integers(0, 4, 5))))
    lstm = nn.LSTM(5, 6, num_layers=2, bidirectional=True).to("gpu")
    cell = nn.LSTMCell(5, 6).to("gpu")
    head = nn.Linear(12, 3).to("gpu")
    opt = optim.Adam(list(lstm.parameters()) + list(cell.parameters()) + list(head.parameters()), lr=1e-3)
    packed = pack_sequence([dlscratch.tensor(B.to_gpu(rng.standard_normal((t, 5)).astype(np.float32)))
                            for t in (4, 3, 1)])
    sequence = dlscratch.tensor(B.to_gpu(rng.standard_normal((4, 3, 5)).astype(np.float32)))
    for inputs in (packed, sequence):
        opt.zero_grad()
        _, (h, _) = lstm(inputs)
        hc = cell(sequence[0])
        loss = F.cross_entropy(head(h[-2:].permute(1, 0, 2).reshape(3, 12)), dlscratch.tensor(B.to_gpu(np.arange(3))))
        (loss + (hc[0] * hc[1]).sum()).backward()
        opt.step()
    mlp = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4)).to("gpu")
    data = dlscratch.data.TensorDataset(rng.standard_normal((16, 12)).astype(np.float32), rng.integers(0, 4, 16))
    dlscratch.training.fit(mlp, F.cross_entropy, optim.SGD(mlp.parameters(), lr=0.1),
                           dlscratch.data.DataLoader(data, batch_size=8), epochs=1, progress=False)
    with amp.autocast("cuda"):
        F.cross_entropy(mlp(x.float()), dlscratch.tensor(B.to_gpu(rng.integers(0, 4, 6)))).backward()


def test_every_kernel_of_the_library_compiles_in_every_signature_the_library_sends_it(nvrtc, fast_path):
    before = len(strict_nvrtc.compiled())
    workload()  # a launch whose source NVRTC rejects raises at once
    done = strict_nvrtc.compiled()
    compiled = {c.name for c in done if c.error is None}  # here or earlier in the session (once per signature)
    assert compiled >= library_kernel_names() - {"dlscratch_ledger"}
    in_float16 = {c.name for c in done if c.error is None and "typedef float16 T;" in c.source}
    assert {"dlscratch_relu_backward", "dlscratch_bias_relu", "dlscratch_sgd_momentum", "dlscratch_adam",
            "dlscratch_im2col", "dlscratch_max_pool", "dlscratch_dropout", "dlscratch_cross_entropy",
            "dlscratch_cross_entropy_backward"} <= in_float16
    new = done[before:]
    print(f"\nNVRTC, this workload: {len({c.source for c in new})} new kernel sources, {len(new)} compiles for "
          f"{', '.join(strict_nvrtc.archs())}, {sum(c.error is not None for c in new)} failures")


@pytest.mark.parametrize("mistake", PLANTED)
def test_the_check_rejects_a_planted_error_in_a_library_kernel(nvrtc, fast_path, mistake):
    model = nn.Linear(3, 2).half().to("gpu")  # float16: where a ternary of T and float is ambiguous
    model.weight.grad = dlscratch.zeros_like(model.weight)
    optimizer = optim.SGD([model.weight], lr=0.1, momentum=0.9)
    optimizer.step()
    optimizer.step()  # the second step reads the momentum buffer
    source = next(c.source for c in strict_nvrtc.compiled()
                  if c.name == "dlscratch_sgd_momentum" and "typedef float16 T;" in c.source)
    plant, message = PLANTED[mistake]
    planted = plant(source)
    assert planted != source, "the mistake was planted"
    cupy = strict_nvrtc._load()[0]
    options = strict_nvrtc._options(cupy, ())
    for arch in strict_nvrtc.archs():
        error = strict_nvrtc._compile(cupy, planted, options + (f"-arch={arch}",))
        assert error is not None and message in error, (arch, error)
        assert strict_nvrtc._compile(cupy, source, options + (f"-arch={arch}",)) is None


def test_a_launch_nvrtc_rejects_is_refused_before_it_runs_with_the_compilers_message(nvrtc):
    kernel = nvrtc.ElementwiseKernel("T x", "T y", "y = x > 0 ? x : 0.5f", "half_ternary")
    out = nvrtc.zeros(3, dtype=np.float16)
    with B.ledger() as book, pytest.raises(strict_nvrtc.CudaCompileError,
                                           match=r"(?s)half_ternary.*compute_.*ambiguous \"\?\" operation"):
        kernel(nvrtc.asarray(np.ones(3, np.float16)), out)
    assert book.kernels == 0 and (out.get() == 0).all()  # nothing ran
    kernel(nvrtc.asarray(np.ones(3, np.float32)), nvrtc.zeros(3, dtype=np.float32))  # float: one type, it compiles


def test_each_signature_compiles_once_and_a_new_layout_compiles_again(nvrtc):
    kernel = nvrtc.ElementwiseKernel("T x, float32 a", "T y", "y = x * a", "scale_once")
    x = nvrtc.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    count = lambda: sum(c.name == "scale_once" for c in strict_nvrtc.compiled())  # noqa: E731
    kernel(x, 2.0)
    first = count()
    kernel(x + 1, 3.0)  # same dtypes, same layout
    assert first == len(strict_nvrtc.archs()) and count() == first
    kernel(x.T, 2.0)  # strided: CuPy writes another source
    kernel(x.astype(np.float64), 2.0)  # another dtype: another
    assert count() == 3 * first
    sources = {c.source for c in strict_nvrtc.compiled() if c.name == "scale_once"}
    assert len(sources) == 3
    assert sum("typedef double T;" in s for s in sources) == 1
    assert sum("CArray<float, 2, 0, 1>" in s for s in sources) == 1  # two dimensions, not contiguous, 32-bit


def test_the_archs_setting_is_checked(monkeypatch):
    monkeypatch.setenv("DLSCRATCH_NVRTC_ARCHS", "compute_75, sm_90")
    assert strict_nvrtc.archs() == ["compute_75", "sm_90"]
    monkeypatch.setenv("DLSCRATCH_NVRTC_ARCHS", "compute_75,turing")
    with pytest.raises(ValueError, match="'turing' is not a target"):
        strict_nvrtc.archs()


def test_the_check_can_be_turned_off(stand_in, monkeypatch):
    monkeypatch.setenv("DLSCRATCH_NVRTC", "0")
    assert "DLSCRATCH_NVRTC=0" in strict_nvrtc.unavailable_reason()
    kernel = stand_in.ElementwiseKernel("T x", "T y", "y = x + x", "unchecked")
    kernel(stand_in.ones(2, dtype=np.float32))
    assert not [c for c in strict_nvrtc.compiled() if c.name == "unchecked"]


def plain(shape, dtype=np.float32, transpose=None):
    a = np.zeros(shape, dtype)
    a = a.transpose(transpose) if transpose else a
    return _Array(a.shape, a.strides, a.dtype, a.flags.c_contiguous, True)


class _P:
    def __init__(self, raw=False):
        self.raw = raw


def test_reduce_dims_follows_cupy():
    """CuPy merges the dimensions the arrays walk as one; the source then has fewer dimensions."""
    arrays = [plain((2, 3, 4)), plain((2, 3, 4))]
    assert _reduced_shape(arrays, [_P(), _P()], (2, 3, 4)) == (24,) and arrays[0].ndim == 1  # all contiguous
    arrays = [plain((4, 3), transpose=(1, 0)), plain((3, 4))]
    assert _reduced_shape(arrays, [_P(), _P()], (3, 4)) == (3, 4)  # two dimensions, one strided: kept
    arrays = [plain((4, 2, 3), transpose=(1, 2, 0)), plain((2, 3, 4))]  # (2, 3) stay adjacent in memory
    assert _reduced_shape(arrays, [_P(), _P()], (2, 3, 4)) == (6, 4) and arrays[0].strides == (4, 24)
    raw = plain((5, 5))
    arrays = [raw, plain((2, 3, 4), transpose=None)]
    assert _reduced_shape(arrays, [_P(raw=True), _P()], (2, 3, 4)) == (24,) and arrays[0] is raw  # raw untouched


def test_every_library_launch_on_a_gpu_compiles_the_source_written_here(gpu, tmp_path):
    """On a real GPU, the workload's launches: every source CuPy compiled for a ``dlscratch_`` kernel (saved by
    ``CUPY_CACHE_SAVE_CUDA_SOURCE``) is one written here for the same launch, and the other way round."""
    if not B.real_gpu():
        pytest.skip("CuPy's own sources are made on a real GPU only; the stand-in plays the GPU here")
    program = ("import sys; sys.path.insert(0, sys.argv[1]); import test_strict_nvrtc as t; "
               "t.record_on_the_gpu(sys.argv[2])")
    env = dict(os.environ, CUPY_CACHE_DIR=str(tmp_path / "cache"), CUPY_CACHE_SAVE_CUDA_SOURCE="1")
    env.pop("DLSCRATCH_STRICT_GPU", None)
    subprocess.run([sys.executable, "-c", program, str(Path(__file__).parent), str(tmp_path / "ours.json")],
                   env=env, check=True, timeout=600)
    ours = set(json.loads((tmp_path / "ours.json").read_text()))
    theirs = {path.read_text() for path in (tmp_path / "cache").rglob("*.cu")}
    theirs = {source for source in theirs if re.search(r"__global__ void dlscratch_\w+\(", source)}
    assert len(ours) > 20
    assert ours == theirs, first_difference(ours - theirs, theirs - ours)


def first_difference(ours, theirs):
    """How one source written here differs from the closest one CuPy compiled (for the failure message)."""
    if not ours or not theirs:
        return f"{len(ours)} sources only here, {len(theirs)} only in CuPy's cache"
    mine = min(ours)
    closest = max(theirs, key=lambda source: difflib.SequenceMatcher(None, mine, source).ratio())
    diff = difflib.unified_diff(closest.splitlines(), mine.splitlines(), "CuPy's", "written here", lineterm="")
    return f"{len(ours)} sources differ; the first:\n" + "\n".join(list(diff)[:30])


def record_on_the_gpu(out):
    """Run ``workload`` on the real GPU and write, as JSON, the source written here for each of its launches."""
    from numpy.lib.stride_tricks import as_strided

    from dlscratch.bench.strict_cupy import kernels as strict_kernels

    B.use("gpu")
    real, cupy, ours = B.elementwise_kernel, B.cupy, set()
    generator = strict_nvrtc._load()[0] or cupy  # on the stand-in (to try this out), the installed CuPy writes

    def mirror(value):  # a NumPy array of the same dtype, shape and strides (never read)
        if isinstance(value, cupy.ndarray):
            return as_strided(np.zeros(1, value.dtype), value.shape, value.strides)
        return value

    def recording(in_params, out_params, body, name, preamble="", twin=None, options=()):
        kernel = real(in_params, out_params, body, name, preamble, twin, options)
        described = strict_kernels.ElementwiseKernel(in_params, out_params, body, name, preamble=preamble,
                                                     options=options)

        def launch(*args, size=None, **kwargs):
            result = kernel(*args, size=size, **kwargs) if size is not None else kernel(*args, **kwargs)
            outputs = list(args[len(described.inputs):]) or list(result if isinstance(result, tuple) else [result])
            values = [mirror(v) for v in list(args[:len(described.inputs)]) + outputs]
            shape = described.decide_shape(values, size)
            ours.add(strict_nvrtc.kernel_source(generator, described, values, shape, size is not None))
            return result
        return launch

    B.elementwise_kernel = recording
    workload()
    Path(out).write_text(json.dumps(sorted(ours)))


def test_the_source_is_the_one_cupy_compiles(gpu):
    """On a real GPU: for contiguous, strided, broadcast and scalar arguments, the source written here is the
    one CuPy's own ElementwiseKernel compiled (its ``cached_codes``)."""
    from dlscratch.bench.strict_cupy import kernels as strict_kernels

    if not B.real_gpu():
        pytest.skip("CuPy's own sources are made on a real GPU only; the stand-in plays the GPU here")

    params = ("T x, raw T table, float32 a", "T y", "y = x * a + table[0]", "same_source")
    layouts = [lambda xp: xp.ones((3, 4), np.float32), lambda xp: xp.ones((4, 3), np.float32).T,
               lambda xp: xp.ones((2, 3, 4), np.float64).transpose(1, 2, 0), lambda xp: xp.ones((1, 4), np.float16)]
    cupy_module = strict_nvrtc._load()[0] or B.cupy
    for layout in layouts:
        x, on_device = layout(np), layout(gpu)  # the same strides on both (asarray would copy to contiguous)
        assert x.strides == on_device.strides
        table, a, shape = np.ones(2, x.dtype), 2.0, (3, 4) if x.shape == (1, 4) else x.shape
        real = gpu.ElementwiseKernel(*params)
        real(on_device, gpu.asarray(table), a, gpu.empty(shape, x.dtype))
        stand_in = strict_kernels.ElementwiseKernel(*params)
        ours = strict_nvrtc.kernel_source(cupy_module, stand_in, [x, table, a, np.empty(shape, x.dtype)], shape,
                                          False)
        theirs = next(iter(real.cached_codes.values()))
        headers = "".join(f"#include <{h}>\n" for h in cupy_module._core.core._cupy_header_list)
        assert ours == headers + theirs, (x.shape, x.strides)
