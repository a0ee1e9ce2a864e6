"""The README's reading guide is what runs: each of its four programs, on each path, makes the calls it lists, in
that order (``dlscratch.bench.trace`` traces them under ``sys.setprofile``)."""

import re
from pathlib import Path

import pytest

from dlscratch.bench import trace

ROOT = Path(__file__).resolve().parent.parent


def guide():
    """``{(program, path): [(file, function), ...]}`` from the README's section "Reading the engine"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## Reading the engine\n(.*?)^## ", text, flags=re.M | re.S).group(1)
    found = {}
    for item in re.split(r"^\d+\. ", section, flags=re.M)[1:]:
        program = re.match(r"`([^`]+)`", item).group(1)
        for path, hops in re.findall(r"^   - (reference|fast): (.*?)(?=^   - |\Z)", item, flags=re.M | re.S):
            found[program, path] = [tuple(hop.split(":")) for hop in re.findall(r"`([\w/.]+\.py:\w+)`", hops)]
    return found


def in_order(wanted, calls):
    """The first of ``wanted`` that ``calls`` does not make after the ones before it; None when all are made."""
    calls = iter(calls)
    for hop in wanted:
        if hop not in calls:  # consumes ``calls`` up to the hop
            return hop
    return None


def test_the_guide_lists_every_program_on_both_paths():
    assert set(guide()) == {(program, path) for program in trace.PROGRAMS for path in trace.PATHS}
    assert all(len(hops) >= 5 for hops in guide().values())


@pytest.mark.parametrize("program, path", sorted(guide()), ids=lambda v: v)
def test_each_hop_runs_in_the_order_listed(program, path):
    calls = [(file, function) for _, file, function in trace.hops(program, path)]
    missing = in_order(guide()[program, path], calls)
    assert missing is None, f"{program} on the {path} path: {':'.join(missing)} is not called where the README says"


def test_the_order_check_sees_a_hop_out_of_place():
    calls = [("a.py", "f"), ("b.py", "g"), ("c.py", "h")]
    assert in_order([("a.py", "f"), ("c.py", "h")], calls) is None
    assert in_order([("c.py", "h"), ("a.py", "f")], calls) == ("a.py", "f")
    assert in_order([("d.py", "k")], calls) == ("d.py", "k")


def test_the_paths_differ_where_the_guide_says():
    """The fast path records and walks in ``fast/graph.py``; the reference path never enters it."""
    for program in ("x * w", "loss.backward()"):
        assert not [hop for hop in trace.hops(program, "reference") if hop[1] == "fast/graph.py"]
        assert [hop for hop in trace.hops(program, "fast") if hop[1] == "fast/graph.py"]
