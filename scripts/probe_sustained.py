"""Probe (device run): GEMM schedules under sustained load, in alternation: each
of the default, the plain TMA tile and cuBLAS timed after 200 ms of warm-up, in
turn, for several rounds (an H100 at its 700 W holds about two thirds of its
clock; short sweeps time it at full clock).

    python scripts/probe_sustained.py [--rounds 4]
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import time_cuda  # noqa: E402
from tiledsl.runtime import launcher_for  # noqa: E402
from tiledsl.runtime.launcher import set_overrides  # noqa: E402
from tiledsl.schedule.choose import candidates, default, problem  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=4)
args = ap.parse_args()
SRC = "kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }"
SHAPES = [((8192, 8192, 1024), r"m128n256k64_s4_tma_g8_x32$"), ((4096, 4096, 4096), r"m128n256k64_s4_tma_g8_x32$"),
          ((8192, 8192, 2048), r"m128n256k64_s4_tma_g8_x32$"), ((1024, 1024, 8192), r"m64n128k64_s8_tma_g8_x32$")]
for (m, n, k), plain_tag in SHAPES:
    kerns = {}
    base = None
    for label in ("default", "plain"):
        kern = tiledsl.compile(SRC)
        launcher = launcher_for(kern)
        p = problem(launcher.groups[0], launcher.layouts[0], dict(M=m, N=n, K=k), frozenset(), 132, "sm_90a", 3352)
        base = default(p, kern.hints)
        if label == "plain":
            set_overrides(launcher, {0: next(s for s in candidates(p, kern.hints) if re.search(plain_tag, s.tag))})
        kern._launcher = launcher
        kerns[label] = kern
    sets = [(cp.random.standard_normal((m, k)).astype(cp.float16), cp.random.standard_normal((k, n)).astype(cp.float16))
            for _ in range(4)]
    out = cp.empty((m, n), cp.float16)
    runs = {"default": lambda a, b: kerns["default"](a, b, out=out), "plain": lambda a, b: kerns["plain"](a, b, out=out),
            "cuBLAS": lambda a, b: cp.matmul(a, b, out=out)}
    times = {name: [] for name in runs}
    for rnd in range(args.rounds):
        order = list(runs)[rnd % 3:] + list(runs)[:rnd % 3]
        for name in order:
            times[name].append(time_cuda(lambda i: runs[name](*sets[i]), n_sets=4, repeats=30, warmup_ms=200).median_us)
    flop = 2 * m * n * k
    print(f"{m}x{n}x{k} (default {base.tag})", flush=True)
    for name, ts in times.items():
        med = sorted(ts)[len(ts) // 2]
        print(f"  {name:8s} " + " ".join(f"{t:7.1f}" for t in ts) + f" us; median {flop / med / 1e6:6.1f} TFLOP/s",
              flush=True)
