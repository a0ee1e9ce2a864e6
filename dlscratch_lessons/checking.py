"""What the lessons' check cells use to make sure an answer is the learner's own work.

An exercise that asks for softmax can be "solved" by calling dlscratch's softmax; the check compares with
the library, so it would pass. ``own_work`` watches the calls made inside its block and fails the check
when the answer reached into dlscratch instead of computing the thing itself:

    with own_work("Exercise 02.3"):
        mine = my_sum_to(g, shape)            # calling dlscratch's sum_to in there fails the check

The array-module shim (``backend``, and the strict CuPy stand-in) is always allowed: an answer needs its
``get_array_module``. ``allowed`` names library functions an exercise hands to the learner (col2im, say);
what they call in turn is not counted. It watches the calling thread (``sys.setprofile``), which is where
an answer starts any call into the library.

``load_mine("engine", "ops")`` imports the learner's own framework, ``myframework/`` (written by the exercise cells
of lessons 02-07 with ``%%writefile``), afresh for a check.
"""

import importlib
import inspect
import os
import sys
from contextlib import contextmanager

import dlscratch

PACKAGE = os.path.dirname(os.path.abspath(dlscratch.__file__)) + os.sep  # calls into the library are watched
ALWAYS_ALLOWED = {PACKAGE + "backend.py"}
# the strict CuPy stand-in: calls into it are the learner's xp calls
STAND_IN = os.path.join(PACKAGE, "bench", "strict_cupy") + os.sep


class LibraryCalled(AssertionError):
    """An answer called the library function the exercise asks the learner to write."""


def _called_code(frame):
    """The code a frame runs; for the switch's wrapper (engine/switch.py), the reference function it wraps."""
    code = frame.f_code
    if code.co_name == "call" and code.co_filename == os.path.join(PACKAGE, "engine", "switch.py"):
        return getattr(frame.f_locals.get("reference_function"), "__code__", code)
    return code


def _code_of(function):
    function = inspect.unwrap(function)
    return getattr(function, "__code__", None) or getattr(getattr(function, "__func__", None), "__code__", None)


@contextmanager
def own_work(exercise, allowed=()):
    """Fail with ``LibraryCalled`` if code run in the block calls into dlscratch (but the backend, ``allowed``)."""
    allowed_codes = {_code_of(f) for f in allowed} - {None}
    called, depth = [], [0]  # depth > 0: inside a call that is allowed or already reported

    def watch(frame, event, arg):
        if event not in ("call", "return"):
            return
        filename = frame.f_code.co_filename
        if not filename.startswith(PACKAGE) or filename in ALWAYS_ALLOWED or filename.startswith(STAND_IN):
            return
        code = _called_code(frame)
        entering = event == "call"
        if depth[0] == 0 and entering and code not in allowed_codes:
            where = os.path.relpath(code.co_filename, os.path.dirname(PACKAGE.rstrip(os.sep)))
            called.append(f"{code.co_name} ({where})")
        if depth[0] > 0 or entering:
            depth[0] += 1 if entering else -1

    previous = sys.getprofile()
    sys.setprofile(watch)
    try:
        yield
    finally:
        sys.setprofile(previous)
    if called:
        names = ", ".join(dict.fromkeys(called))
        raise LibraryCalled(
            f"{exercise}: your answer called dlscratch's {names}; the exercise asks you to compute it "
            "yourself (array operations are fine, and the check compares your result with the library's)"
        )


FRAMEWORK = "myframework"  # the learner's own package, written piece by piece by the exercises' %%writefile cells
WRITTEN_BY = {"engine": "02.4", "ops": "02.5", "gradcheck": "02.6", "losses": "03.4", "nn": "03.5", "optim": "03.6",
              "conv": "04.5", "pool": "05.4", "lstm": "07.5"}


def load_mine(*pieces):
    """The learner's modules ``myframework.<piece>``, imported afresh (the whole package, once for all of
    ``pieces``) from the files the exercise cells wrote in the current directory, so that a re-run cell's
    new code is what is checked. One piece gives its module, several a tuple of them."""
    for piece in pieces:
        if not os.path.isfile(os.path.join(FRAMEWORK, f"{piece}.py")):
            exercise = WRITTEN_BY.get(piece, "?")
            raise FileNotFoundError(
                f"{FRAMEWORK}/{piece}.py is missing here ({os.getcwd()}): Exercise {exercise} of lesson "
                f"{exercise.split('.')[0]} writes it. Run that exercise's cell in this runtime, or upload your "
                f"{FRAMEWORK}/ folder (on Colab every notebook has a machine of its own: keep the folder on Drive)"
            )
    for name in [name for name in sys.modules if name == FRAMEWORK or name.startswith(FRAMEWORK + ".")]:
        del sys.modules[name]  # every piece anew, so that they all share one engine and one Module class
    importlib.invalidate_caches()
    if os.getcwd() not in [os.path.abspath(p) for p in sys.path]:
        sys.path.insert(0, os.getcwd())
    modules = tuple(importlib.import_module(f"{FRAMEWORK}.{piece}") for piece in pieces)
    return modules[0] if len(modules) == 1 else modules
