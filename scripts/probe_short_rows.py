"""Probe (device run): rows of 3 to 128 elements, many of them. The default gives a
row at least 64 threads (`choose.default`: 64 to 512 a row), so a row of 8 f32
leaves 62 of them idle; here against a warp a row (row_threads 32, several rows
a block) and part of a warp a row (row_threads 1 to 16), vectors of every width. Each schedule is
checked against the float64 reference first; three interleaved rounds, median
microseconds, and the ratio of the bytes moved to copy.

    python scripts/probe_short_rows.py
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
import row_probe  # noqa: E402  (beside this script)
from benchmarks.common import copy_bandwidth  # noqa: E402
from tiledsl.errors import TdslError  # noqa: E402
from tiledsl.schedule import choose, rows  # noqa: E402

SOFTMAX = "kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}"
RMS = ("kernel f(x: f16[M, N], w: f16[N]) -> f16[M, N] {\n"
       " return x * rsqrt(mean(x * x, axis=N) + 0.00001) * w\n}")
CASES = [("softmax f32", SOFTMAX, {"M": 1 << 21, "N": 8}), ("softmax f32", SOFTMAX, {"M": 1 << 20, "N": 16}),
         ("softmax f32", SOFTMAX, {"M": 1 << 19, "N": 32}), ("softmax f32", SOFTMAX, {"M": 1 << 18, "N": 64}),
         ("softmax f32", SOFTMAX, {"M": 1 << 17, "N": 100}), ("softmax f32", SOFTMAX, {"M": 1 << 17, "N": 128}),
         ("softmax f32", SOFTMAX, {"M": 1 << 21, "N": 3}), ("softmax f32", SOFTMAX, {"M": 1 << 20, "N": 13}),
         ("rmsnorm f16", RMS, {"M": 1 << 19, "N": 64}), ("rmsnorm f16", RMS, {"M": 1 << 21, "N": 8}),
         ("rmsnorm f16", RMS, {"M": 1 << 20, "N": 13})]


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    cases = []
    for name, src, ext in CASES:
        case = row_probe.prepare(name, src, ext)
        d = choose.default(case.problem, case.kernel.hints)
        variants = {"default": d}
        for vec in sorted({choose.max_vector(case.problem), d.vec, 1}):
            rvec = ext["N"] // vec
            for tpr in (32, 16, 8, 4, 2, 1):
                for block in ((128, 256) if tpr == 32 else (256,)):
                    try:
                        variants[f"v{vec} t{tpr} b{block}"] = replace(
                            d, block=block, row_threads=tpr, vec=vec, items=rows.row_share(rvec, tpr), keep=False,
                            prefetch=False, blocks_per_sm=0, min_blocks=1, stages=1, unroll=0)
                    except TdslError:
                        pass
        case.variants = row_probe.exact(case, variants)
        cases.append(case)
    row_probe.time_and_report(cases, copy)


if __name__ == "__main__":
    main()
