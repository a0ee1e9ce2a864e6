"""The differential tester of issue 51: no program of user actions tells the fast path from the reference path.

Hypothesis draws programs (``user_programs.programs``: two small models, their optimizers, up to eight actions
such as steps, kept references to ``.data``/``.grad``/``state_dict()`` entries and their views, casts, loads,
copies, hooks and errors in the middle). Each runs on the reference path with NumPy and on one other variant:
the fast path with NumPy, or the fast path on the strict CuPy stand-in's GPU (``backend.on_the_stand_in``, which
plays the GPU on any machine). Every snapshot must agree: values (``user_programs.same_values``: bit-exact
signs, NaNs, infinities and zeros, finite values within a few ulps), dtypes, shapes, which arrays share memory,
which errors happened and what they left behind. A failure prints the program (shrunk by Hypothesis) and the
first observable that differs.

CI runs ``PROGRAMS`` derandomized programs per variant (the "ci" profile); ``HYPOTHESIS_PROFILE=long`` runs thousands;
``python tests/user_programs.py --minutes 40`` surveys for every kind of mismatch and reports each one shrunk.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from user_programs import VARIANTS, coarsest_dtype, comparable, compare_runs, programs, run_program, same_values

from dlscratch import backend

OTHER_VARIANTS = [v for v in VARIANTS if v != "reference-numpy"]
PROGRAMS = 150  # per variant at the least, whatever the profile: about 2 s each on a 2-core CPU


@pytest.fixture(scope="module", params=OTHER_VARIANTS)
def variant(request):
    """The variant compared with the reference path; the GPU one is skipped, saying why, if the stand-in
    cannot play the GPU here."""
    if request.param == "fast-gpu":
        try:
            with backend.on_the_stand_in():
                pass
        except Exception as exc:  # the stand-in is part of the library; this would be a broken install
            pytest.skip(f"the strict CuPy stand-in cannot play the GPU: {type(exc).__name__}: {exc}")
    return request.param


# The issue's first case, checked on every run whatever Hypothesis draws: a kept view of a gradient, and the
# kept weight, through a step, zero_grad and another backward.
ISSUE_51_FIRST_CASE = {
    "kind": "mlp", "optimizers": ("sgd_momentum", "adam"), "seed": 0,
    "actions": [("forward_backward", 0, 2, 1, True), ("keep", 0, 0, "grad", ".reshape(-1)"),
                ("keep", 0, 0, "data", ""), ("step", 0), ("zero_grad", 0, "optimizer"),
                ("forward_backward", 0, 2, 2, True), ("step", 0)],
}


# Found by the long survey: a float64 bias after the ReLU sends a float64 gradient back; the GPU's ReLU kernel
# refused it (CuPy's "type T is both float32 and float64").
FLOAT64_AFTER_RELU = {
    "kind": "mlp_call_override", "optimizers": ("sgd_nesterov", "adam_decay"), "seed": 3666,
    "actions": [("share_parameter", 2), ("set_data", 1, 7, "float64", 389), ("forward_backward", 1, 2, 1, False)],
}

# Found by a run on the reference lane: a float64 bias in an LSTM; the GPU's fused LSTM kernels refused it.
FLOAT64_LSTM_BIAS = {
    "kind": "lstm", "optimizers": ("adadelta", "adadelta"), "seed": 0,
    "actions": [("forward_backward", 0, 1, 0, False), ("set_data", 0, 2, "float64", 0),
                ("forward_backward", 0, 1, 0, False)],
}

# Found by the long survey: a CPU model cast to float16, a float32 layer after its convolution. The paths' float16
# convolutions rounded differently (the fast one added the bias inside its float32 sum), by far more than float32's
# ulps once the float32 layer read them.
FLOAT16_CONV_FLOAT32_HEAD = {
    "kind": "cnn", "optimizers": ("sgd_momentum", "adam"), "seed": 0,
    "actions": [("cast", 0, "half"), ("set_data", 0, 2, "float32", 0), ("forward_backward", 0, 3, 0, True)],
}

# Found by the long survey: a backward onto a ``.grad.data`` of the wrong shape failed after adding into other
# leaves' gradients, in an order that differs between the paths.
WRONG_SHAPE_GRAD_THEN_BACKWARD = {
    "kind": "mlp", "optimizers": ("adam", "adam"), "seed": 2,
    "actions": [("forward_backward", 1, 1, 25, False), ("bad_grad", 1, 4, "data_wrong_shape"),
                ("forward_backward", 1, 1, 0, False)],
}


@settings(max_examples=max(settings.default.max_examples, PROGRAMS),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@example(program=ISSUE_51_FIRST_CASE)
@example(program=FLOAT64_AFTER_RELU)
@example(program=FLOAT64_LSTM_BIAS)
@example(program=FLOAT16_CONV_FLOAT32_HEAD)
@example(program=WRONG_SHAPE_GRAD_THEN_BACKWARD)
@given(program=programs())
def test_no_program_tells_the_fast_path_from_the_reference_path(variant, program):
    assume(comparable(program, variant))
    found = compare_runs(program, variant)
    assert found is None, found[0]


def test_every_variant_runs_where_it_says(variant):
    """The comparison is not vacuous: the GPU variant's parameters are the stand-in's arrays, the NumPy ones
    NumPy's, and a program's snapshots hold its parameters."""
    program = {**ISSUE_51_FIRST_CASE, "actions": [("cast", 0, "to_own_device")]}
    (shot,) = run_program(program, variant)
    assert shot["error"] is None
    assert shot["m0.0.weight requires_grad, on the run's device"] == (True, True)
    assert shot["m0.0.weight"].shape == (3, 4)


def test_the_comparison_accepts_ulps_apart_and_nothing_a_user_could_tell_apart():
    """``same_values`` accepts what rounding explains (and a sign of zero, but in the probes that ask for it),
    nothing else."""
    a = np.array([1.0, 0.0, np.inf, np.nan], np.float32)
    assert same_values(a, np.array([np.nextafter(np.float32(1), np.float32(2)), 0.0, np.inf, np.nan], np.float32))
    assert same_values(a, np.array([1.0, -0.0, np.inf, np.nan], np.float32))
    assert not same_values(a, np.array([1.0, -0.0, np.inf, np.nan], np.float32), signed_zeros=True)
    assert not same_values(a, np.array([1.0, 0.0, -np.inf, np.nan], np.float32))
    assert not same_values(a, np.array([1.0, 0.0, np.inf, 0.0], np.float32))
    assert not same_values(a, a.astype(np.float64))
    assert not same_values(a, np.array([1.001, 0.0, np.inf, np.nan], np.float32))


def test_a_program_through_float16_is_compared_to_float16s_rounding():
    """A float16 difference survives a later ``float()``; below float16's normal range its ulp is 6e-8. Nothing
    coarser passes, and a program that never holds float16 is compared to float32's rounding."""
    a = np.array([1.0, 3e-7], np.float32)
    half_ulp_apart = np.array([1.0 + 2**-10, 3e-7 + 6e-8], np.float32)
    assert not same_values(a, half_ulp_apart)
    assert same_values(a, half_ulp_apart, coarsest=np.float16)
    assert not same_values(a, np.array([1.1, 3e-7], np.float32), coarsest=np.float16)
    cast = {**ISSUE_51_FIRST_CASE, "actions": [("cast", 0, "half")]}
    assert coarsest_dtype(cast) is np.float16
    assert coarsest_dtype({**cast, "actions": [("set_data", 1, 0, "float16", 0)]}) is np.float16
    assert coarsest_dtype(ISSUE_51_FIRST_CASE) is np.float32


@pytest.mark.parametrize("all_variants", VARIANTS)
def test_the_signed_zero_probe_agrees_with_numpy(all_variants):
    """An oracle beside the comparison, for what all paths could get wrong alike (issue 51's constant cache,
    which is shared by the paths): ``x * 0.0`` then ``1 / (x * -0.0)`` gives NumPy's signs of zero and infinity."""
    program = {**ISSUE_51_FIRST_CASE, "actions": [("signed_zero_probe", 7)]}
    (shot,) = run_program(program, all_variants)
    x = np.random.default_rng(7).standard_normal(3).astype(np.float32)
    with np.errstate(divide="ignore"):
        expected = {"x * 0.0": x * np.float32(0.0), "1 / (x * -0.0)": np.float32(1) / (x * np.float32(-0.0))}
    for name, values in expected.items():
        got = shot[f"result probe {name}"]
        assert same_values(got, values, signed_zeros=True), f"{all_variants}: {name} = {got}, NumPy: {values}"
