"""Probe (device run): split reductions' defaults timed alone (CUDA events, three rounds, median
µs), for an A/B of the combining kernel (run in the old tree and this one).

    python scripts/probe_combine.py
"""
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import time_cuda  # noqa: E402

CASES = [("dot 2^22", "kernel d(x: f32[N], y: f32[N]) -> f32 { return sum(x * y) }", [(1 << 22,), (1 << 22,)], "f4"),
         ("sum 4096x4096", "kernel s(x: f32[M, N]) -> f32 { return sum(x) }", [(4096, 4096)], "f4"),
         ("mean, max f16 100000x64", "kernel mm(x: f16[M, N]) -> (f32[N], f16[N]) "
          "{ return mean(x, axis=M), max(x, axis=M) }", [(100000, 64)], "f2"),
         ("rms 4x1000000", "kernel r(x: f32[M, N]) -> f32[M] { return rsqrt(mean(x * x, axis=N) + 1e-6) }",
          [(4, 1000000)], "f4"),
         ("sum f16 1M x 64", "kernel f(x: f16[M, N]) -> f32[N] { return sum(x, axis=M) }", [(1 << 20, 64)], "f2"),
         ("dot 2^26", "kernel d(x: f32[N], y: f32[N]) -> f32 { return sum(x * y) }", [(1 << 26,), (1 << 26,)], "f4")]


def main() -> None:
    jobs = []
    for name, src, shapes, dt in CASES:
        k = tiledsl.compile(src)
        sets = [[cp.random.standard_normal(s, dtype=cp.float32).astype(dt) for s in shapes] for _ in range(3)]
        k(*sets[0])
        jobs.append((name, k, sets))
    times = {}
    for _ in range(3):
        for name, k, sets in jobs:
            times.setdefault(name, []).append(time_cuda(lambda i, k=k, s=sets: k(*s[i]), n_sets=3, repeats=30,
                                                        warmup_ms=30).median_us)
    for name, k, sets in jobs:
        print(f"  {statistics.median(times[name]):8.1f} us  {name}", flush=True)


if __name__ == "__main__":
    main()
