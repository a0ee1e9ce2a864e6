"""``python -m dlscratch.bench graphs`` on the strict stand-in: CuPy's refusals found as they are, dlscratch's own
cuBLAS call equal to CuPy's matmul, and captured MLP steps, in float32 and under float16 autocast, that replay bit
for bit in one launch (their times say nothing about a GPU, so none is checked)."""

from dlscratch.bench import graphs


def test_the_graphs_suite_finds_cupys_refusals_and_faithful_one_launch_replays(stand_in, fast_path, capsys):
    _, rows = graphs.run(quick=True)
    results = dict(rows)
    assert results["a GEMM through CuPy (cuBLAS)"] == ("refused: calling cuBLAS API during stream capture is "
                                                       "currently unsupported")
    assert results["a legacy draw (cuRAND)"].startswith("refused: calling cuRAND API")
    assert results["a GEMM through dlscratch.cuda.blas"] == "captured"
    assert results["dlscratch's cuBLAS call = CuPy's matmul (21 products, eager and replayed)"] == "bit for bit"
    for name in graphs.OPTIMIZERS:
        assert results[f"{name}, batch 4: 3 replays = eager steps"] == "bit for bit"
        assert ", 1 replayed (CUDA graph of " in results[f"{name}, batch 4: launches per step"]
    for precision in ("float32", "float16 autocast"):
        assert results[f"MLP 784-1024-1024-10, batch 2, {precision}: 3 replays = eager steps"] == "bit for bit"
    assert "MLP 784-1024-1024-10: float16 autocast / float32, eager and replayed" in results
    assert "the strict stand-in" in capsys.readouterr().out
