"""Probe (device run): looped rows (too long for registers) whose program takes
max(x) and then sum(exp(x - max)): one pass for both (Schedule.online) against
two (the second re-reading the row, from L2 where the rows in flight fit it),
each at the compiler's unroll and 4 and 8; the default's choice is
`rows.online_pays`. Each schedule is checked against the float64 reference
first; three interleaved rounds, median microseconds, and the ratio of the bytes
moved to copy.

    python scripts/probe_online.py [names to keep]     (ONLINE_UNROLLS="0 4 8": the unrolls)
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
import row_probe  # noqa: E402  (beside this script)
from benchmarks.common import copy_bandwidth  # noqa: E402


def softmax(t: str) -> str:
    return f"kernel f(x: {t}[M, N]) -> {t}[M, N] {{\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}}"


LSE = "kernel f(x: f32[M, N]) -> f32[M] {\n m = max(x, axis=N)\n return m + log(sum(exp(x - m), axis=N))\n}"
CASES = [("softmax f16", softmax("f16"), {"M": 4096, "N": 50257}), ("softmax f16", softmax("f16"), {"M": 4096, "N": 32771}),
         ("softmax f16", softmax("f16"), {"M": 2048, "N": 131075}), ("softmax f16", softmax("f16"), {"M": 512, "N": 262144}),
         ("softmax f32", softmax("f32"), {"M": 4096, "N": 50257}), ("softmax f32", softmax("f32"), {"M": 1024, "N": 65537}),
         ("softmax f32", softmax("f32"), {"M": 256, "N": 262144}), ("logsumexp f32", LSE, {"M": 4096, "N": 50257}),
         ("logsumexp f32", LSE, {"M": 256, "N": 262144}),
         # rows at once that fit the L2 (two passes by the rule)
         ("logsumexp fits f16", LSE.replace("f32", "f16"), {"M": 4096, "N": 50257}),
         ("logsumexp fits f32", LSE, {"M": 4096, "N": 32771})]


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    cases = []
    for case, d in row_probe.prepared(CASES, sys.argv[1:]):
        ext = case.extents
        if not d.streamed:
            print(f"{case.name} {ext}: the default keeps rows in registers ({d.tag})")
            continue
        variants = {"default": d}
        for online in (True, False):
            for unroll in map(int, os.environ.get("ONLINE_UNROLLS", "0 4 8").split()):
                variants[f"{'one' if online else 'two'} pass u{unroll}"] = replace(d, online=online, unroll=unroll)
        case.variants = row_probe.exact(case, row_probe.distinct(variants))
        cases.append(case)
    row_probe.time_and_report(cases, copy, label_width=14)


if __name__ == "__main__":
    main()
