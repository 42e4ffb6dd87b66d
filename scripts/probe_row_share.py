"""Probe (device run): rows whose default schedule row_share_fits changed
(2026-11-25), timed under the old rule (a thread holds up to 32 elements of its
row whatever their width: ptxas spilled 8 to 584 bytes) and the new one (at most
row_register_budget words, 8 elements read one by one into 8-byte results).
Each schedule checked against the float64 reference first; three interleaved
rounds, median microseconds, GB/s over the bytes moved, ratio to copy. Each
schedule's streamed twin (items 0: the row looped over, no share held) too.

    python scripts/probe_row_share.py
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
import row_probe  # noqa: E402  (beside this script)
from benchmarks.common import copy_bandwidth  # noqa: E402
from tiledsl.schedule import choose, registers  # noqa: E402
from tiledsl.schedule.schedules import MAX_ROW_ELEMENTS  # noqa: E402

CASES = [
    ("softmax f32", "kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n"
                    " return e / sum(e, axis=N)\n}", {"M": 2048, "N": 8193}),
    ("two f32", "kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] {\n return x * y + sum(x, axis=N)\n}",
     {"M": 2048, "N": 16384}),
    ("three f32", "kernel f(x: f32[M, N], y: f32[M, N], z: f32[M, N]) -> f32[M, N] {\n"
                  " return x * y + z + sum(x * z, axis=N)\n}", {"M": 4096, "N": 4097}),
    ("f64", "kernel f(x: f64[M, N]) -> f64[M, N] {\n return x + sum(x, axis=N)\n}", {"M": 2048, "N": 16384}),
    ("layernorm f16 w", "kernel f(x: f16[M, N], w: f16[N], b: f16[N]) -> f16[M, N] {\n m = mean(x, axis=N)\n"
                        " d = x - m\n v = mean(d * d, axis=N)\n return d * rsqrt(v + 0.00001) * w + b\n}",
     {"M": 2048, "N": 20000}),
    ("layernorm f16 w", "kernel f(x: f16[M, N], w: f16[N], b: f16[N]) -> f16[M, N] {\n m = mean(x, axis=N)\n"
                        " d = x - m\n v = mean(d * d, axis=N)\n return d * rsqrt(v + 0.00001) * w + b\n}",
     {"M": 4096, "N": 10000}),
    ("softmax f32", "kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n"
                    " return e / sum(e, axis=N)\n}", {"M": 4096, "N": 12001}),
    ("two f32", "kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] {\n return x * y + sum(x, axis=N)\n}",
     {"M": 2048, "N": 8193}),
    ("bf16 transposed", "kernel f(x: bf16[M, N]) -> f32[N, M] {\n return x.T * sum(x, axis=N)\n}",
     {"M": 2048, "N": 8193}),
]


def old_rule(p, items, vec, hoisted=True):
    return items * vec <= MAX_ROW_ELEMENTS


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    new_rule = registers.row_share_fits
    cases = []
    for name, src, ext in CASES:
        case = row_probe.prepare(name, src, ext)
        registers.row_share_fits = old_rule
        old = choose.default(case.problem, case.kernel.hints)
        registers.row_share_fits = new_rule
        new = choose.default(case.problem, case.kernel.hints)
        variants = {"old": old, "new": new}     # and each streamed (items 0) at its block
        for s in (old, new):
            variants.setdefault(f"streamed {s.block}", replace(s, items=0, keep=False))
        case.variants = row_probe.distinct(variants)
        for label, s in case.variants.items():
            print(f"{name} {ext} {label} {s.tag}: err {row_probe.error(case, s):.1e}", flush=True)
        cases.append(case)
    row_probe.time_and_report(cases, copy, tag_width=30)


if __name__ == "__main__":
    main()
