"""What runs: the Python calls inside dlscratch of four small programs, on each path
(``python -m dlscratch.bench trace``).

The four are the README's reading guide: ``x * w``, ``loss.backward()``, ``nn.Conv2d(1, 8, 3)(x)`` and an SGD
step with momentum. Each is run once to warm up, then a second time under ``sys.setprofile``; a Python call counts
when its code lives in ``dlscratch/``. The table gives the calls and the files they are in; ``hops`` gives the calls
in order, as ``(depth, file, function)``, which ``tests/test_reading_guide.py`` holds the README's list to.
"""

import os
import sys

import numpy

from .. import nn, optim
from ..engine import switch
from ..engine.creation import tensor
from .timing import format_table

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _multiply():
    x = tensor(numpy.ones((4, 4), numpy.float32), requires_grad=True)
    w = tensor(numpy.ones((4, 4), numpy.float32), requires_grad=True)
    return lambda: x * w


def _backward():
    x = tensor(numpy.ones((4, 4), numpy.float32), requires_grad=True)
    w = tensor(numpy.ones((4, 4), numpy.float32), requires_grad=True)
    losses = []

    def prepare():  # a new graph for every run: backward frees the one it walks
        losses.append((x * w).sum())

    return lambda: losses.pop().backward(), prepare


def _conv2d():
    conv = nn.Conv2d(1, 8, 3)
    x = tensor(numpy.ones((2, 1, 8, 8), numpy.float32))
    return lambda: conv(x)


def _sgd_step():
    model = nn.Linear(4, 3)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(tensor(numpy.ones((2, 4), numpy.float32))).sum().backward()
    return opt.step


#: name -> a function that builds the program: the call to trace, or (call, what to run before each call)
PROGRAMS = {"x * w": _multiply, "loss.backward()": _backward, "nn.Conv2d(1, 8, 3)(x)": _conv2d,
            "opt.step()": _sgd_step}
PATHS = {"reference": switch.reference, "fast": switch.fast_path}


def hops(program, path):
    """The calls into dlscratch's Python code of the second run of ``program`` (a ``PROGRAMS`` name) on ``path``
    (``"reference"`` or ``"fast"``), in order: ``[(depth, file relative to dlscratch/, function name)]``."""
    with PATHS[path]():
        built = PROGRAMS[program]()
        call, prepare = built if isinstance(built, tuple) else (built, None)
        found = []
        depth = [0]

        def profile(frame, event, arg):
            if event == "call":
                depth[0] += 1
                filename = frame.f_code.co_filename
                if filename.startswith(PACKAGE) and filename != __file__:  # not this harness's own frames
                    found.append((depth[0], filename[len(PACKAGE):].replace(os.sep, "/"), frame.f_code.co_name))
            elif event == "return":
                depth[0] -= 1

        for _ in range(2):  # the first run warms up; the second is kept
            if prepare is not None:
                prepare()
            found.clear()
            depth[0] = 0
            sys.setprofile(profile)
            try:
                call()
            finally:
                sys.setprofile(None)
    return found


def run(repeat=None, quick=False):
    """Print calls and files of each program on each path; return ``(headers, rows)``."""
    headers = ["program", "path", "calls", "files"]
    rows = []
    for program in PROGRAMS:
        for path in PATHS:
            found = hops(program, path)
            rows.append([program, path, str(len(found)), str(len({file for _, file, _ in found}))])
    print("Python calls inside dlscratch, second run, under sys.setprofile")
    print(format_table(headers, rows))
    return headers, rows
