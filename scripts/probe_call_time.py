"""Host time of warm calls (device runs): each program called 3000 times in a row on fresh
inputs of one size, the stream drained at the end; microseconds a call, the best of 5
rounds, beside the GPU time of one call (CUDA events, median of 50). For split reductions,
one kernel or two a call.

    python scripts/probe_call_time.py"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import time_cuda  # noqa: E402

PROGRAMS = [("sum f32 2^20", "kernel f(x: f32[N]) -> f32 { return sum(x) }", 1 << 20),
            ("mean f32 2^22", "kernel f(x: f32[N]) -> f32 { return mean(x) }", 1 << 22),
            ("max f16 2^24", "kernel f(x: f16[N]) -> f16 { return max(x) }", 1 << 24)]


def main() -> None:
    for label, src, n in PROGRAMS:
        k = tiledsl.compile(src)
        dt = cp.float16 if "f16" in src.split("->")[0] else cp.float32
        x = cp.random.standard_normal(n).astype(dt)
        out = k(x)
        rounds = []
        for _ in range(5):
            cp.cuda.runtime.deviceSynchronize()
            t0 = time.perf_counter()
            for _ in range(3000):
                k(x, out=out)
            cp.cuda.runtime.deviceSynchronize()
            rounds.append((time.perf_counter() - t0) / 3000 * 1e6)
        gpu = time_cuda(lambda i: k(x, out=out), warmup=5, repeats=50, warmup_ms=20).median_us
        print(f"{label:16s} host {min(rounds):6.2f} us a call (rounds {statistics.median(rounds):.2f} median), "
              f"GPU {gpu:6.1f} us")


if __name__ == "__main__":
    main()
