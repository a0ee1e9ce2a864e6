import sys, time, statistics; sys.path.insert(0, "/tmp/l08")
import numpy as np
import ladder as L
from dlscratch import memory
memory.keep_freed_memory()
def med(fn, n=3):
    fn(); ts=[]
    for _ in range(n):
        t=time.perf_counter(); fn(); ts.append(time.perf_counter()-t)
    return statistics.median(ts)
rng = np.random.default_rng(0)
for (I, H, T, N) in [(700, 500, 80, 1), (700, 500, 80, 32)]:
    x = rng.standard_normal((T, N, I)).astype(np.float32)
    W = (rng.standard_normal((4*H, I))*0.05).astype(np.float32); R = (rng.standard_normal((4*H, H))*0.05).astype(np.float32); b = np.zeros(4*H, np.float32)
    gy = np.ones((T, N, H), np.float32)
    flops = 3 * 2 * T * N * 4 * H * (I + H)
    base = None
    for name, fwd, bwd in [("1 separate", L.rung1_forward, L.rung1_backward), ("2 combined", L.rung2_forward, L.rung2_backward),
                            ("3 hoisted input", L.rung3_forward, L.rung3_backward), ("4 dR one GEMM", L.rung3_forward, L.rung4_backward),
                            ("5 fused pointwise", L.rung5_forward, L.rung5_backward), ("6 pre-transposed", L.rung6_forward, L.rung5_backward)]:
        s = med(lambda: bwd(gy, fwd(x, W, R, b)[1]))
        base = base or s
        print(f"I{I} H{H} T{T} N{N} {name:20} {s*1e3:8.1f} ms {flops/s/1e9:6.1f} GFLOP/s {base/s:5.2f}x")
