"""dlscratch_lessons.checking.own_work: a check fails an answer that calls into dlscratch, and only such an answer."""

import sys

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import backend
from dlscratch.operations.broadcast import sum_to
from dlscratch.operations.im2col import col2im_array, im2col_array
from dlscratch_lessons.checking import LibraryCalled, own_work


def test_array_operations_and_the_backend_are_the_learners_own_work():
    g = np.ones((2, 3), np.float32)
    with own_work("Exercise 0.0"):
        total = backend.get_array_module(g).sum(g, axis=0, keepdims=True)
    assert total.tolist() == [[2.0, 2.0, 2.0]]


def test_arrays_of_the_strict_stand_in_are_the_learners_own_work_too():
    from dlscratch.bench import strict_cupy

    g = strict_cupy.asarray(np.ones((2, 3), np.float32))
    with own_work("Exercise 0.0"):  # the stand-in checks each call against CuPy's signatures as it goes
        total = backend.get_array_module(g).maximum(g, 0).sum(axis=0, keepdims=True)
    assert total.get().tolist() == [[2.0, 2.0, 2.0]]


@pytest.mark.parametrize(
    "answer, name",
    [
        (lambda g: sum_to(g, (3,)), "sum_to (dlscratch/operations/broadcast.py)"),
        (lambda g: dlscratch.Tensor(g).softmax(-1).data, "softmax (dlscratch/engine/tensor.py)"),
        (lambda g: F.max_pool2d(dlscratch.tensor(g[None, None]), 2).data,
         "max_pool2d (dlscratch/operations/pooling.py)"),
        (lambda g: im2col_array(g[None, None], 2), "im2col_array (dlscratch/operations/im2col.py)"),
    ],
    ids=["function", "tensor-method", "functional", "dispatched"],
)
def test_an_answer_that_calls_the_library_fails_naming_what_it_called(answer, name):
    g = np.ones((2, 3), np.float32)
    with pytest.raises(LibraryCalled, match=r"Exercise 9\.9: your answer called dlscratch's .*") as caught:
        with own_work("Exercise 9.9"):
            answer(g)
    assert name in str(caught.value)
    assert isinstance(caught.value, AssertionError), "a check's failure, as an assert's"


def test_functions_an_exercise_hands_out_are_allowed_with_what_they_call():
    cols = im2col_array(np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3), 2)
    with own_work("Exercise 4.4", allowed=[col2im_array]):
        image = col2im_array(cols, (1, 1, 3, 3), 2)
    assert image.shape == (1, 1, 3, 3)
    with pytest.raises(LibraryCalled, match="im2col_array"):
        with own_work("Exercise 4.4", allowed=[col2im_array]):
            im2col_array(image, 2)


def test_the_previous_profiler_is_restored_even_when_the_answer_raises():
    def profiler(frame, event, arg):
        return None

    sys.setprofile(profiler)
    try:
        with pytest.raises(ZeroDivisionError):
            with own_work("Exercise 1.1"):
                raise ZeroDivisionError("an answer that fails")
        assert sys.getprofile() is profiler
    finally:
        sys.setprofile(None)


def test_the_lessons_tools_are_installed_beside_the_library():
    """A lesson on Colab installs the course's package and imports ``dlscratch_lessons.checking``: the package
    must be in the distribution (pyproject.toml's package patterns), though not inside ``dlscratch``."""
    import fnmatch
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    patterns = re.findall(r'"([^"]+)"', re.search(r"\[tool\.setuptools\.packages\.find\]\s*include = \[(.*?)\]",
                                                    text, re.S).group(1))
    assert any(fnmatch.fnmatch("dlscratch_lessons", pattern) for pattern in patterns), patterns
    assert not (Path(dlscratch.__file__).parent / "checking.py").exists()
