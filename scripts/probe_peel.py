"""Probe (device run): looped rows whose length breaks 16-byte alignment, read
element by element (vec 1, the old default) against peeled to aligned vectors
(Schedule.peel: vectors from each row's first aligned element, the head and tail
one at a time), at 256, 512 and 1024 threads, at the rule's unroll (and those of
PEEL_UNROLLS="0 2 4"), and the same program at the nearest aligned length for scale. Each
schedule is checked against the float64 reference first; three interleaved
rounds, median microseconds, and the ratio of the bytes moved to copy.

    python scripts/probe_peel.py [names to keep]
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
import row_probe  # noqa: E402  (beside this script)
from benchmarks.common import copy_bandwidth  # noqa: E402
from probe_online import LSE, softmax  # noqa: E402
from tiledsl.schedule import rows  # noqa: E402

LAYERNORM = ("kernel f(x: f16[M, N], w: f32[N], b: f32[N]) -> f16[M, N] {\n m = mean(x, axis=N)\n"
             " d = x - m\n return f16(d * rsqrt(mean(d * d, axis=N) + 1e-5) * w + b)\n}")
RMSNORM = "kernel f(x: bf16[M, N], w: bf16[N]) -> bf16[M, N] { return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }"
CASES = [("softmax f16", softmax("f16"), {"M": 4096, "N": 50257}),
         ("softmax f16 aligned", softmax("f16"), {"M": 4096, "N": 50256}),
         ("softmax f32", softmax("f32"), {"M": 4096, "N": 50257}),
         ("softmax f32 aligned", softmax("f32"), {"M": 4096, "N": 50256}),
         ("softmax f16 long", softmax("f16"), {"M": 2048, "N": 131075}),
         ("logsumexp f32", LSE, {"M": 4096, "N": 50257}),
         ("layernorm f16", LAYERNORM, {"M": 4096, "N": 20001}),
         ("rmsnorm bf16", RMSNORM, {"M": 2048, "N": 40001}),
         ("softmax f16 aligned", softmax("f16"), {"M": 4096, "N": 32000}),
         ("softmax bf16 aligned", softmax("bf16"), {"M": 2048, "N": 128256}),
         ("rmsnorm bf16 aligned", RMSNORM, {"M": 2048, "N": 40000}),
         ("logsumexp f16 aligned", LSE.replace("f32", "f16"), {"M": 4096, "N": 50304})]


def p_len(case) -> int:
    return case.problem.row_length


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    cases = []
    for case, d in row_probe.prepared(CASES, sys.argv[1:]):
        if not d.streamed:
            print(f"{case.name} {case.extents}: the default keeps rows in registers ({d.tag})")
            continue
        variants = {"default": d}
        if d.peel or rows.peel_vector(case.problem) > 1:
            wide = d if d.peel else replace(d, vec=rows.peel_vector(case.problem), peel=True)
            variants["vec 1 (before)"] = replace(d, vec=1, peel=False)
            for block in (256, 512, 1024):
                for unroll in map(int, os.environ.get("PEEL_UNROLLS", "0").split()):
                    variants[f"peel b{block} u{unroll}"] = replace(wide, block=block, row_threads=block, unroll=unroll)
        if not d.peel and d.vec == 1:   # rows kept in registers instead, element by element, weights late
            for block in (1024,):
                variants[f"kept b{block} nh"] = replace(d, block=block, row_threads=block, unroll=0, hoist=False,
                                                        items=-(-p_len(case) // block))
        elif d.vec > 1:     # aligned rows: the same blocks, at ptxas's unroll and 4 vectors in flight
            for block in (512, 1024):
                for unroll in (0, 4):
                    variants[f"b{block} u{unroll}"] = replace(d, block=block, row_threads=block, unroll=unroll)
        case.variants = row_probe.exact(case, row_probe.distinct(variants))
        cases.append(case)
    row_probe.time_and_report(cases, copy, label_width=14)


if __name__ == "__main__":
    main()
