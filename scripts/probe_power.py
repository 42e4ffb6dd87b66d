"""Probe (device run): clocks and power under sustained load, tiledsl's default
GEMM against cuBLAS at the same shape, each run back to back for a few seconds
in turn while nvidia-smi samples the board (`--shape M,N,K`, f16).

    python scripts/probe_power.py --shape 8192,8192,1024
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402

import tiledsl  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--shape", default="8192,8192,1024")
ap.add_argument("--seconds", type=float, default=3.0)
args = ap.parse_args()
m, n, k = map(int, args.shape.split(","))
kern = tiledsl.compile("kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }")
a = cp.random.standard_normal((m, k)).astype(cp.float16)
b = cp.random.standard_normal((k, n)).astype(cp.float16)
out = cp.empty((m, n), cp.float16)
runners = {"tiledsl": lambda: kern(a, b, out=out), "cuBLAS": lambda: cp.matmul(a, b, out=out)}
for f in runners.values():
    f()
cp.cuda.Device().synchronize()
for rnd in range(2):
    for name, f in runners.items():
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu", "--format=csv,noheader,nounits",
                                "-lms", "100"], stdout=subprocess.PIPE, text=True)
        t0, calls = time.perf_counter(), 0
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        while time.perf_counter() - t0 < args.seconds:
            for _ in range(20):
                f()
            calls += 20
            cp.cuda.Device().synchronize()
        end.record()
        end.synchronize()
        smi.terminate()
        rows = [line.split(",") for line in smi.communicate()[0].strip().splitlines()[3:]]
        clock = sum(float(r[0]) for r in rows) / max(1, len(rows))
        power = sum(float(r[1]) for r in rows) / max(1, len(rows))
        temp = max(float(r[2]) for r in rows) if rows else 0
        us = cp.cuda.get_elapsed_time(start, end) * 1e3 / calls
        print(f"{name:8s} {us:7.1f} us/call {2 * m * n * k / us / 1e6:6.1f} TFLOP/s  SM clock {clock:6.0f} MHz  "
              f"power {power:5.0f} W  max temp {temp:.0f} C  ({len(rows)} samples)", flush=True)
