"""Calls in a row against one call alone (device runs): each program's default (and, for
a split finished by its last block, the same split in two kernels) timed two ways: one
call between CUDA events, inputs rotated past the L2 (as the benchmarks time it; median
of 20, interleaved rounds), and 1000 calls in a row, each overlapping the one before
(host clock, the stream drained at the end, the best of 3 rounds). Run it with
TILEDSL_DEPENDENT_LAUNCH=0 and without to see what the overlap does to a row of calls.

    python scripts/probe_calls_in_a_row.py [names to keep]"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import row_probe  # noqa: E402
from benchmarks.common import copy_bandwidth  # noqa: E402
from tiledsl.runtime.launcher import set_overrides  # noqa: E402

K = "kernel f"
PROGRAMS = [
    ("sums of 8 rows f32", f"{K}(x: f32[M, N]) -> f32[M] {{ return sum(x, axis=N) }}", {"M": 8, "N": 1 << 22}),
    ("max f16", f"{K}(x: f16[N]) -> f16 {{ return max(x) }}", {"N": 1 << 26}),
    ("sum f32", f"{K}(x: f32[N]) -> f32 {{ return sum(x) }}", {"N": 1 << 26}),
    ("column sums f32", f"{K}(x: f32[M, N]) -> f32[N] {{ return sum(x, axis=M) }}", {"M": 16384, "N": 4096}),
    ("softmax f32 1024", f"{K}(x: f32[M, N]) -> f32[M, N] {{\n e = exp(x - max(x, axis=N))\n"
     " return e / sum(e, axis=N)\n}", {"M": 16384, "N": 1024}),
    ("softmax f32 4096", f"{K}(x: f32[M, N]) -> f32[M, N] {{\n e = exp(x - max(x, axis=N))\n"
     " return e / sum(e, axis=N)\n}", {"M": 8192, "N": 4096}),
    ("layernorm 8192", f"{K}(x: f16[M, N], w: f32[N], b: f32[N]) -> f16[M, N] {{\n mu = mean(x, axis=N)\n"
     " xc = x - mu\n var = mean(xc * xc, axis=N)\n return xc * rsqrt(var + 0.00001) * w + b\n}",
     {"M": 4096, "N": 8192}),
    ("rmsnorm 8192", f"{K}(x: f16[M, N], w: f16[N]) -> f16[M, N] {{\n"
     " return x * rsqrt(mean(x * x, axis=N) + 0.00001) * w\n}", {"M": 4096, "N": 8192}),
    ("scale f32", f"{K}(x: f32[N]) -> f32[N] {{ return x * 2.0 + 1.0 }}", {"N": 1 << 25}),
]


def main() -> None:
    print(f"TILEDSL_DEPENDENT_LAUNCH={os.environ.get('TILEDSL_DEPENDENT_LAUNCH', '1')}")
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    cases = []
    for case, d in row_probe.prepared(PROGRAMS, sys.argv[1:]):
        set_overrides(case.kernel._launcher, {})
        case.variants = {"default": d}
        if d.kind == "reduce_split":    # the rules' split, and the one the launcher runs (its splits filling the room)
            case.kernel(*case.sets[0], out=case.out)
            case.variants["launched"] = list(case.kernel._launcher._plans.values())[-1].choices[0][0]
            if d.last_block:
                case.variants["two kernels"] = replace(d, last_block=False)
        case.variants = row_probe.exact(case, row_probe.distinct(case.variants))
        cases.append(case)
    row_probe.time_and_report(cases, copy, label_width=11, tag_width=40)
    row_probe.report_in_a_row(cases, 1000, 20)


if __name__ == "__main__":
    main()
