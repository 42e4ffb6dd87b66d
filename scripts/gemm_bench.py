"""First GEMM timings against cuBLAS (device run)."""
import sys
sys.path.insert(0, ".")
import cupy as cp
import numpy as np
import tiledsl
import tiledsl.codegen
from benchmarks.common import time_cuda

for dtype, np_t in (("f32", np.float32), ("f16", np.float16)):
    for m, n, k in ((4096, 4096, 4096), (1000, 1000, 1000), (16, 8192, 8192)):
        kern = tiledsl.compile(f"kernel mm(a: {dtype}[M, K], b: {dtype}[K, N]) -> {dtype}[M, N] {{ return a @ b }}")
        a = cp.asarray(np.random.randn(m, k).astype(np_t)); b = cp.asarray(np.random.randn(k, n).astype(np_t))
        out = cp.empty((m, n), np_t)
        kern(a, b, out=out)
        t = time_cuda(lambda i: kern(a, b, out=out), repeats=10).median_us
        tc = time_cuda(lambda i: cp.matmul(a, b, out=out), repeats=10).median_us
        fl = 2 * m * n * k
        print(f"{dtype} {m}x{n}x{k}: tiledsl {t:.0f} us {fl / t / 1e6:.1f} TFLOP/s; cuBLAS {tc:.0f} us "
              f"{fl / tc / 1e6:.1f} TFLOP/s; ratio {tc / t:.2f}  {[s.schedule.tag for s in tiledsl.codegen.sources_for(kern, dict(M=m, N=n, K=k))]}")
