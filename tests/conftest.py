"""Shared test setup: Hypothesis profiles and the ``backend``, ``path`` and ``fast_path`` fixtures.

Hypothesis runs the "dev" profile by default; CI sets ``HYPOTHESIS_PROFILE=ci`` for a
derandomized, deadline-free run with few examples (the same examples on every run).

The ``backend`` fixture runs one test body on NumPy and, where a GPU is usable, on CuPy:

    def test_add(backend):        # backend is the array module: numpy or cupy
        x = dlscratch.tensor(backend.ones(3))

With ``DLSCRATCH_STRICT_GPU=1`` the strict CuPy stand-in (``dlscratch/bench/strict_cupy/``) plays the GPU, so
the "cupy" runs happen on a machine without one; ``cuda_kernels`` skips the tests of CUDA kernels there.

The ``gpu`` fixture gives a test that needs a usable GPU the CuPy module (and marks it ``gpu``); the
test is skipped, saying why, where there is none. ``no_gpu`` does the opposite, for the tests of
what happens without one.

With CuPy and NVRTC installed (CI's newest-Python lane), the stand-in compiles each kernel launch's source before
it runs it; the session's summary then says how many sources compiled, for which targets. The ``nvrtc`` fixture
gives a test of the compile check the stand-in, and skips it where NVRTC is missing.

The ``path`` fixture runs one test body on the reference path and on the fast path
(``dlscratch.engine.switch``); ``fast_path`` runs a test of a fast-only variant on the fast path even when
the whole suite runs on the reference path (``DLSCRATCH_REFERENCE=1``).
"""

import os

import pytest
from hypothesis import HealthCheck, settings

from dlscratch import backend as dl_backend
from dlscratch.engine import switch

settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile(
    "ci", max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(  # the differential tester's long run (tests/test_differential.py): thousands of programs
    "long", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(
    params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu)],
)
def backend(request):
    """Select the backend named by the parameter; yield its array module; restore NumPy after."""
    if request.param == "cupy" and not dl_backend.gpu_available():
        pytest.skip(f"no usable GPU: {dl_backend.gpu_unavailable_reason()}")
    xp = dl_backend.use(request.param)
    try:
        yield xp
    finally:
        dl_backend.use("numpy")



@pytest.fixture(params=["reference", "fast"])
def path(request):
    """Run the test on the reference path, then on the fast path; yield the path's name."""
    with switch.fast_path() if request.param == "fast" else switch.reference():
        yield request.param


@pytest.fixture
def fast_path():
    """Run the test on the fast path (for tests of fast-only variants and tricks)."""
    with switch.fast_path():
        yield "fast"


@pytest.fixture
def gpu():
    """CuPy, for a test that needs a usable GPU; skipped with the reason where there is none."""
    if not dl_backend.gpu_available():
        pytest.skip(f"no usable GPU: {dl_backend.gpu_unavailable_reason()}")
    return dl_backend.cupy


@pytest.fixture
def cuda_kernels():
    """CuPy's kernels, for a test of CUDA kernels: a real GPU, or the strict CuPy stand-in
    (``DLSCRATCH_STRICT_GPU=1``), which translates them and runs them on the CPU; skipped where neither is."""
    if not dl_backend.has_kernels():
        pytest.skip(f"no usable GPU: {dl_backend.gpu_unavailable_reason()}")
    return dl_backend.cupy


@pytest.fixture
def stand_in():
    """The strict CuPy stand-in playing the GPU for one test (``backend.xp`` is it); yields its module. The
    backend is as it was afterwards."""
    with dl_backend.on_the_stand_in() as stand_in_module:
        yield stand_in_module


@pytest.fixture
def nvrtc(stand_in):
    """The stand-in, compiling each kernel launch with NVRTC first (``strict_cupy/nvrtc.py``): for a test of the
    compile check. Skipped, saying why, where CuPy or NVRTC is missing; with ``DLSCRATCH_REQUIRE_NVRTC=1`` (CI's
    newest-Python lane) that fails instead."""
    from dlscratch.bench.strict_cupy import nvrtc as strict_nvrtc

    reason = strict_nvrtc.unavailable_reason()
    if reason:
        if os.environ.get("DLSCRATCH_REQUIRE_NVRTC") == "1":
            pytest.fail(f"DLSCRATCH_REQUIRE_NVRTC=1, but the compile check cannot run: {reason}")
        pytest.skip(reason)
    return stand_in


@pytest.fixture
def no_gpu():
    """For a test of what happens without a usable GPU; skipped where there is one."""
    if dl_backend.gpu_available():
        pytest.skip("checks what happens without a usable GPU, and one is usable here")


def pytest_collection_modifyitems(items):
    """Tests that use the ``gpu`` fixture carry the ``gpu`` mark (``pytest -m "not gpu"`` leaves them out)."""
    for item in items:
        if {"gpu", "cuda_kernels"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.gpu)


def pytest_terminal_summary(terminalreporter):
    """Where the stand-in compiled kernels with NVRTC (bench/strict_cupy/nvrtc.py), how many, for which targets."""
    from dlscratch.bench.strict_cupy import nvrtc as strict_nvrtc

    done = strict_nvrtc.summary()
    if done["compiles"]:
        terminalreporter.write_line(
            f"NVRTC compiled the kernel launches' sources: {done['sources']} sources, {done['compiles']} compiles "
            f"for {', '.join(done['archs'])}; {done['failures']} refused (some tests plant errors; a refused launch "
            "fails its test)")
