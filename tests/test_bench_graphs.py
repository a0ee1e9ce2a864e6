"""``python -m dlscratch.bench graphs`` on the strict stand-in: CuPy's refusals found as they are, and a captured
GEMM-free step that replays bit for bit in one launch (its times say nothing about a GPU, so none is checked)."""

from dlscratch.bench import graphs


def test_the_graphs_suite_finds_cupys_refusals_and_a_faithful_one_launch_replay(stand_in, fast_path, capsys):
    _, rows = graphs.run(quick=True)
    results = dict(rows)
    assert results["a GEMM (cuBLAS)"] == "refused: calling cuBLAS API during stream capture is currently unsupported"
    assert results["a legacy draw (cuRAND)"].startswith("refused: calling cuRAND API")
    for name in graphs.OPTIMIZERS:
        assert results[f"{name}: 3 replays = eager steps"] == "bit for bit"
        assert ", 1 replayed (CUDA graph of " in results[f"{name}: launches per step"]
    assert "the strict stand-in" in capsys.readouterr().out
