"""Probe (device run): programs whose reduction has fewer rows than SMs and results over
the whole row (a vector divided by its sum, softmax of a few long rows): their default
schedule, time, and bandwidth against a copy of the same bytes.

    python scripts/probe_onerow.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda  # noqa: E402
from tiledsl.codegen import sources_for  # noqa: E402
from tiledsl.inputs import random_arguments  # noqa: E402

SOFTMAX = "kernel sm(x: f32[M, N]) -> f32[M, N] { e = exp(x - max(x, axis=N))\nreturn e / sum(e, axis=N) }"
CASES = [
    ("x / sum(x), f32 2^22", "kernel share(x: f32[N]) -> f32[N] { return x / sum(x) }", dict(N=1 << 22)),
    ("x / max(abs(x)), f32 2^24", "kernel q(x: f32[N]) -> f32[N] { return x / max(abs(x)) }", dict(N=1 << 24)),
    ("softmax f32 1x2^22", SOFTMAX, dict(M=1, N=1 << 22)),
    ("softmax f32 64x200000", SOFTMAX, dict(M=64, N=200000)),
    ("sum(x) f32 2^24 (for scale)", "kernel total(x: f32[N]) -> f32 { return sum(x) }", dict(N=1 << 24)),
]
ref = copy_bandwidth()["gbps"]
print(f"copy 1 GiB: {ref:.0f} GB/s", flush=True)
for label, src, extents in CASES:
    k = tiledsl.compile(src)
    host = random_arguments(k.graph, extents)
    nbytes = sum(a.nbytes for a in host if hasattr(a, "nbytes"))
    moved = nbytes * (1 if "sum(x) f32" in label else 2)
    n_sets = input_sets_needed(moved)
    sets = [[cp.asarray(a) if hasattr(a, "nbytes") else a for a in host] for _ in range(n_sets)]
    k(*sets[0])
    t = time_cuda(lambda i: k(*sets[i]), n_sets=n_sets, repeats=20, warmup_ms=100).median_us
    same = copy_bandwidth(moved // 2, repeats=20, rotate=True, warmup_ms=50)["gbps"]
    names = [s.name.split("_g", 1)[1] for s in sources_for(k, extents)]
    print(f"{label:32s} {t:9.1f} us  {moved / t / 1e3:6.0f} GB/s  {moved / t / 1e3 / same:.2f}x same-bytes copy"
          f"  ({', '.join(names)})", flush=True)
