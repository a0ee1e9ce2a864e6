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
NL, H, N, T = 4, 512, 64, 100
x = rng.standard_normal((T, N, H)).astype(np.float32)
layers = [((rng.standard_normal((4*H, H))*0.05).astype(np.float32), (rng.standard_normal((4*H, H))*0.05).astype(np.float32), np.zeros(4*H, np.float32)) for _ in range(NL)]
gy = np.ones((T, N, H), np.float32)
flops_fwd = NL * 2 * T * N * 4 * H * (2 * H)
for name, f in [("layerwise", L.stack_forward_layerwise), ("wavefront", L.stack_forward_wavefront), ("wavefront threads", L.stack_forward_wavefront_threads)]:
    s = med(lambda: f(x, layers))
    print(f"{name:20} forward {s*1e3:8.1f} ms {flops_fwd/s/1e9:6.1f} GFLOP/s")
s = med(lambda: L.stack_backward(gy, L.stack_forward_layerwise(x, layers)[1]), n=1)
print(f"layerwise fwd+bwd {s*1e3:.0f} ms {3*flops_fwd/s/1e9:.1f} GFLOP/s")
