"""Records which library functions a lesson runs: loaded by every Python process that ``tools/execute_lessons.py``
starts, and by their children, through ``PYTHONPATH``.

Python imports ``sitecustomize`` at start-up. ``execute_lessons.py`` puts this folder first on the kernel's
``PYTHONPATH`` and sets two variables, which the processes the lesson starts inherit (``mpiexec``'s ranks,
``subprocess``, DataLoader workers):

    DLSCRATCH_TRACE_LIBRARY   the library's folder: code from files under it is recorded
    DLSCRATCH_TRACE_DIR       where each process writes ``<pid>.tsv``: a ``file<TAB>qualname`` line per code
                              object it ran (``Conv2d.forward``, ``im2col.<locals>.<lambda>``, ``<module>``)

``sys.monitoring`` (Python 3.12+) calls back once per code object, at its first start, and the callback
disables itself there: the code then runs as fast as it would unrecorded, so the timings the lesson
stores stay true. A line is written as soon as its code object first runs, so a process that ends
through ``os._exit`` (a forked worker) or is killed loses nothing; a forked child writes its own file.
A Python without ``sys.monitoring`` writes ``<pid>.unrecorded`` instead, which execute_lessons refuses.
"""

import os
import sys

TOOL_NAME = "dlscratch lesson trace"


def _start_recording(library, folder):
    """Record the first start of each code object from a file under ``library`` into ``folder``."""
    monitoring = sys.monitoring
    tool = next(i for i in range(monitoring.PROFILER_ID, monitoring.OPTIMIZER_ID + 1) if monitoring.get_tool(i) is None)
    monitoring.use_tool_id(tool, TOOL_NAME)
    prefix = os.path.join(library, "")
    record = _recorder(folder)

    def on_start(code, offset):
        if code.co_filename.startswith(prefix):
            record(f"{code.co_filename}\t{code.co_qualname}\n")
        return monitoring.DISABLE

    monitoring.register_callback(tool, monitoring.events.PY_START, on_start)
    monitoring.set_events(tool, monitoring.events.PY_START)


def _recorder(folder):
    """A function that appends a line to this process's file in ``folder``, opening a new file after a fork."""
    opened = {}

    def record(line):
        pid = os.getpid()
        if pid not in opened:
            opened.clear()
            opened[pid] = os.open(os.path.join(folder, f"{pid}.tsv"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(opened[pid], line.encode("utf-8"))

    return record


def _refuse_to_record(folder):
    """Leave a note that this process ran unrecorded: its Python has no ``sys.monitoring``."""
    with open(os.path.join(folder, f"{os.getpid()}.unrecorded"), "w", encoding="utf-8") as note:
        note.write(f"Python {sys.version.split()[0]} ({sys.executable}) has no sys.monitoring\n")


def _run_the_sitecustomize_this_one_hides():
    """Run the ``sitecustomize`` that a later folder of ``sys.path`` holds (some Linux distributions have one)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in sys.path:
        candidate = os.path.join(folder or os.curdir, "sitecustomize.py")
        if os.path.abspath(os.path.dirname(candidate)) != here and os.path.isfile(candidate):
            with open(candidate, encoding="utf-8") as file:
                exec(compile(file.read(), candidate, "exec"), {"__name__": "sitecustomize", "__file__": candidate})
            return


if os.environ.get("DLSCRATCH_TRACE_DIR") and os.environ.get("DLSCRATCH_TRACE_LIBRARY"):
    if hasattr(sys, "monitoring"):
        _start_recording(os.environ["DLSCRATCH_TRACE_LIBRARY"], os.environ["DLSCRATCH_TRACE_DIR"])
    else:
        _refuse_to_record(os.environ["DLSCRATCH_TRACE_DIR"])
_run_the_sitecustomize_this_one_hides()
