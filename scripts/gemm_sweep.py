"""Time every GEMM schedule candidate at a few shapes (device run)."""
import sys
sys.path.insert(0, ".")
import cupy as cp
import numpy as np
import tiledsl
from benchmarks.common import time_cuda
from tiledsl.runtime.launcher import set_overrides
from tiledsl.schedule.choose import candidates, default, problem

for dtype, np_t, (m, n, k) in (("f16", np.float16, (4096, 4096, 4096)), ("f16", np.float16, (1000, 1000, 1000)),
                                ("f32", np.float32, (4096, 4096, 4096))):
    kern = tiledsl.compile(f"kernel mm(a: {dtype}[M, K], b: {dtype}[K, N]) -> {dtype}[M, N] {{ return a @ b }}")
    a = cp.asarray(np.random.randn(m, k).astype(np_t)); b = cp.asarray(np.random.randn(k, n).astype(np_t))
    out = cp.empty((m, n), np_t)
    kern(a, b, out=out)
    ref = cp.matmul(a.astype(cp.float32), b.astype(cp.float32))
    L = kern._launcher
    p = problem(L.groups[0], L.layouts[0], dict(M=m, N=n, K=k), frozenset(), 132)
    base = default(p, kern.hints)
    rows = []
    for s in candidates(p):
        set_overrides(L, {0: s})
        try:
            out.fill(float("nan"))
            kern(a, b, out=out)
            err = float(cp.linalg.norm(out.astype(cp.float32) - ref) / cp.linalg.norm(ref))
            t = time_cuda(lambda i: kern(a, b, out=out), repeats=5).median_us
            rows.append((t, s.tag + ("" if err < (2e-3 if dtype == "f16" else 1e-5) else f" WRONG err={err:.1e}")))
        except Exception as e:
            rows.append((float("inf"), s.tag + " " + str(e).splitlines()[0][:80]))
    set_overrides(L, {})
    print(f"## {dtype} {m}x{n}x{k} (default {base.tag})")
    bad = [tag for _, tag in rows if "WRONG" in tag or "inf" in tag]
    print("  wrong or failed:", bad or "none")
    for t, tag in sorted(rows)[:8]:
        print(f"  {2 * m * n * k / t / 1e6:7.1f} TFLOP/s  {tag}")
