"""Probe (device run): split programs (a GEMM's split K, split reductions) timed with their
second kernel launched to overlap the first and the usual way, in turn (TILEDSL_DEPENDENT_LAUNCH
read per call class: each program is compiled twice, once per setting), three rounds.

    python scripts/probe_overlap.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import round_orders, time_cuda  # noqa: E402
from tiledsl.codegen import sources_for  # noqa: E402

CASES = [
    ("sum(x) f32 2^24", "kernel total(x: f32[N]) -> f32 { return sum(x) }", dict(N=1 << 24), [(1 << 24,)]),
    ("sum(x) f32 4096x4096", "kernel total(x: f32[M, N]) -> f32 { return sum(x) }", dict(M=4096, N=4096), [(4096, 4096)]),
    ("column means f16 65536x64", "kernel cm(x: f16[R, C]) -> f32[C] { return mean(x, axis=R) }",
     dict(R=65536, C=64), [(65536, 64)]),
    ("softmax f32 64x200000", "kernel sm(x: f32[M, N]) -> f32[M, N] { e = exp(x - max(x, axis=N))\n"
     "return e / sum(e, axis=N) }", dict(M=64, N=200000), [(64, 200000)]),
    ("f16 a @ b 512x512x16384", "kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }",
     dict(M=512, N=512, K=16384), [(512, 16384), (16384, 512)]),
]
for label, src, extents, shapes in CASES:
    dtype = cp.float16 if "f16" in src.split("->")[0] else cp.float32
    sets = [[cp.random.standard_normal(s).astype(dtype) for s in shapes] for _ in range(4)]
    kernels = {}
    for setting in ("1", "0"):
        os.environ["TILEDSL_DEPENDENT_LAUNCH"] = setting
        k = tiledsl.compile(src)
        k(*sets[0])
        k(*sets[1])     # planned (and warm) under this setting
        kernels["overlapping" if setting == "1" else "usual"] = k
    names = list(kernels)
    times = {n: [] for n in names}
    for order in round_orders(len(names), 3):
        for n in (names[i] for i in order):
            times[n].append(time_cuda(lambda i: kernels[n](*sets[i]), n_sets=4, repeats=30,
                                      warmup_ms=200).median_us)
    split = [s.schedule.splits for s in sources_for(tiledsl.compile(src), extents)]
    print(f"{label} (splits {split})", flush=True)
    for n in names:
        print(f"  {n:12s} " + " ".join(f"{t:7.1f}" for t in times[n]) + " us", flush=True)
