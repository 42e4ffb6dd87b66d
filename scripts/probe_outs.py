"""Probe (device run): a GEMM timed writing one output buffer against several in
turn (as bench_gemm's sets each have their own), tiledsl's default and cuBLAS,
inputs rotated alike.

    python scripts/probe_outs.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import time_cuda  # noqa: E402

kern = tiledsl.compile("kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }")
for m, n, k in ((1024, 1024, 8192), (8192, 8192, 1024)):
    sets = [(cp.random.standard_normal((m, k)).astype(cp.float16), cp.random.standard_normal((k, n)).astype(cp.float16))
            for _ in range(5)]
    outs = [cp.empty((m, n), cp.float16) for _ in range(5)]
    for rnd in range(2):
        for name, f in (("tiledsl", lambda a, b, o: kern(a, b, out=o)), ("cuBLAS", lambda a, b, o: cp.matmul(a, b, out=o))):
            one = time_cuda(lambda i: f(*sets[i], outs[0]), n_sets=5, repeats=30, warmup_ms=200).median_us
            many = time_cuda(lambda i: f(*sets[i], outs[i]), n_sets=5, repeats=30, warmup_ms=200).median_us
            print(f"{m}x{n}x{k} {name:8s} one output {one:7.1f} us, five in turn {many:7.1f} us", flush=True)
