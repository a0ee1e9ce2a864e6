"""``python -m dlscratch.bench graphs`` on the strict stand-in: CuPy's refusals found as they are, dlscratch's own
cuBLAS call equal to CuPy's matmul, and captured steps (MLPs, the Keras CNN, nn.LSTM's forward and backward, float32
and float16 autocast) that replay bit for bit in one launch (their times say nothing about a GPU, so none is
checked)."""

from dlscratch.bench import graphs


def test_the_graphs_suite_finds_cupys_refusals_and_faithful_one_launch_replays(stand_in, fast_path, capsys):
    _, rows = graphs.run(quick=True)
    results = dict(rows)
    assert results["a GEMM through CuPy (cuBLAS)"] == ("refused: calling cuBLAS API during stream capture is "
                                                       "currently unsupported")
    assert results["a legacy draw (cuRAND)"].startswith("refused: calling cuRAND API")
    assert results["a GEMM through dlscratch.cuda.blas"] == "captured"
    assert results["dlscratch's cuBLAS call = CuPy's matmul (45 products, eager and replayed)"] == "bit for bit"
    steps = [f"MLP 20-16-10, {name}, batch 4" for name in ("SGD with momentum", "capturable Adam")]
    steps += ["Keras CNN, SGD, batch 2", "nn.LSTM 40->30, 12 steps, batch 1, forward + backward"]
    steps += [f"MLP 784-1024-1024-10, batch 2, {precision}" for precision in ("float32", "float16 autocast")]
    for step in steps:
        assert results[f"{step}: 3 replays = eager steps"] == "bit for bit", step
        assert ", 1 replayed (CUDA graph of " in results[f"{step}: launches per step"], step
    assert "MLP 784-1024-1024-10: float16 autocast / float32, eager and replayed" in results
    assert "the strict stand-in" in capsys.readouterr().out
