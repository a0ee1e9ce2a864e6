"""``python -m dlscratch.bench gpu-report`` (dlscratch/bench/gpu_report.py) in its short form on the strict CuPy
stand-in, as CI runs it: a report that says no GPU time was measured, every part's table, failures named."""

import subprocess
import sys

import pytest

from dlscratch import backend
from dlscratch.bench import gpu_report


def report(tmp_path, *args):
    done = subprocess.run([sys.executable, "-m", "dlscratch.bench", "gpu-report", "--out", str(tmp_path), *args],
                          capture_output=True, text=True, timeout=600, cwd=gpu_report.REPO)
    return done, (tmp_path / "report.md").read_text()


@pytest.mark.slow
def test_the_short_report_on_the_stand_in_runs_every_kind_of_part(tmp_path, no_gpu):
    done, text = report(tmp_path, "--short", "--suites", "launches,pool", "--tests", "tests/test_optim_kernels.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert text.startswith("# dlscratch on no GPU\n\n**No GPU time was measured**")
    for part in ["tests", "lessons", "suite launches", "suite pool"]:
        assert f"| {part} | passed |" in text, text
    assert "16 passed" in text  # lesson 01's cells through nbval
    assert "## suite launches" in text and "Keras CNN, SGD, batch 128" in text
    assert "dlscratch max forward+backward" in text  # the pool suite's table
    assert {p.name for p in tmp_path.iterdir()} == {"report.md", "tests.log", "suite-launches.log", "suite-pool.log",
                                                   "lessons.log"}


def test_a_failing_test_is_named_in_the_report_and_fails_the_command(tmp_path, no_gpu):
    planted = tmp_path / "tests_planted" / "test_planted.py"
    planted.parent.mkdir()
    planted.write_text("def test_planted_failure():\n    assert 1 + 1 == 3\n")
    done, text = report(tmp_path / "out", "--short", "--suites", "", "--tests", str(planted), "--budget", "120",
                        "--lessons", "notebooks/does_not_exist.ipynb")
    assert done.returncode == 1
    assert "| tests | FAILED (exit status 1) |" in text
    assert "## What failed in tests" in text and "test_planted.py::test_planted_failure" in text
    assert "| lessons | FAILED" in text


def test_parts_past_the_budget_are_not_run_and_say_so(tmp_path, no_gpu):
    parts = [gpu_report.Part("tests", "tests", [sys.executable, "-c", "pass"])]
    gpu_report.run_part(parts[0], tmp_path, seconds_left=5)
    assert parts[0].status == "not run: the budget was spent" and parts[0].output == ""
    gpu_report.write_report(tmp_path, False, [("date", "today")], parts)
    assert "| tests | not run: the budget was spent | 0 |" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize("args, message", [(["--budget", "0"], "--budget must be positive"),
                                           (["--only", "tests,docs"], "--only takes tests, lessons and suites"),
                                           (["--test-workers", "-1"], "--test-workers must be 0")])
def test_bad_arguments_are_refused(args, message, capsys):
    with pytest.raises(SystemExit):
        gpu_report.parse_args(args)
    assert message in capsys.readouterr().err


def test_the_plan_puts_the_stand_in_under_every_part_without_a_gpu():
    parts = gpu_report.plan(gpu_report.parse_args(["--short"]), gpu=False)
    assert [p.name for p in parts] == ["tests", "lessons"] + [f"suite {s}" for s in gpu_report.SUITES]
    assert all(p.env.get("DLSCRATCH_STRICT_GPU") == "1" for p in parts)
    on_gpu = gpu_report.plan(gpu_report.parse_args([]), gpu=True)
    assert "suite launches on the stand-in" in [p.name for p in on_gpu]
    assert not any(p.env.get("DLSCRATCH_STRICT_GPU") for p in on_gpu if p.name != "suite launches on the stand-in")
    assert backend.xp is backend.numpy


def test_some_lessons_only_get_the_earlier_lessons_files_first(tmp_path):
    """Lesson 10 reads what the exercises of lessons 02-07 write (myframework/): run alone, it finds the solutions'
    files, written before pytest starts; every lesson in order writes them itself."""
    def lessons_part(args):
        return next(p for p in gpu_report.plan(gpu_report.parse_args(args), gpu=True) if p.kind == "lessons")

    alone = lessons_part(["--lessons", "notebooks/10_capstone.ipynb"])
    assert alone.argv[1:3] == ["-c", gpu_report.WRITE_FRAMEWORK_THEN_PYTEST]
    assert alone.argv[3:] == ["-q", "-p", "no:cacheprovider", "notebooks/10_capstone.ipynb"]  # pytest's arguments
    assert lessons_part([]).argv[1:3] == ["-m", "pytest"]
    program = gpu_report.WRITE_FRAMEWORK_THEN_PYTEST.replace("'tools'", repr(str(gpu_report.REPO / "tools")))
    program = program.replace("'notebooks'", repr(str(tmp_path))).replace("import pytest; ", "")
    subprocess.run([sys.executable, "-c", program.split("; sys.exit")[0]], check=True)
    assert {"engine.py", "conv.py", "lstm.py"} <= {p.name for p in (tmp_path / "myframework").iterdir()}
