"""A lesson's timing claim still fails when it is confidently wrong: lesson 02 runs, up to its claim that
topological order beats the walk over every path, with topological order slowed down on purpose, and the claim's
check must stop the lesson (CONTRADICTED). A busy machine proves nothing either way: there the verdict must say
that the claim looks wrong but cannot be judged. Timing claims themselves: ``dlscratch/bench/claims.py``."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

LESSON = Path(__file__).resolve().parent.parent / "notebooks" / "02_backpropagation.ipynb"
CLAIM_CELL = "c19"  # times every path against topological order at k = 16 and judges the claim
SLOW_DOWN = """
import time as _time
_fast_topo_sort = topo_sort


def topo_sort(root):  # the fast variant, slowed down on purpose: 20 ms more per call
    _time.sleep(0.02)
    return _fast_topo_sort(root)
"""


def test_a_slowed_down_fast_variant_stops_the_lesson_at_its_claim():
    notebook = nbformat.read(LESSON, as_version=4)
    ids = [cell.get("id") for cell in notebook.cells]
    claim = ids.index(CLAIM_CELL)
    notebook.cells = notebook.cells[:claim] + [nbformat.v4.new_code_cell(SLOW_DOWN), notebook.cells[claim]]
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(LESSON.parent)}})
    try:
        client.execute()
    except CellExecutionError as error:
        assert "CONTRADICTED: at k = 16, topological order is at least 100x faster" in str(error)
        return
    verdict = "".join(out.get("text", "") for out in notebook.cells[-1].outputs)
    assert "inconclusive on this machine" in verdict and "it looks wrong, but other processes used" in verdict, (
        f"the slowed-down claim neither failed nor was blamed on a busy machine:\n{verdict}")
