"""How many blocks a one-row split reduction should run (device runs): each program's
default (one block of 512 an SM), the same at 2 and 3 blocks an SM, and each of those
as two kernels rather than one finished by its last block. Two clocks a schedule: the
GPU time of one call between CUDA events, inputs rotated past the L2 (median of 20,
interleaved rounds), and the host time of 2000 calls in a row on one input (a loop:
at 2^24 16-bit elements or fewer, x stays in the L2), the best of 3.

    python scripts/probe_split_grid.py [names to keep]"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import row_probe  # noqa: E402
from benchmarks.common import copy_bandwidth  # noqa: E402

K = "kernel f"
PROGRAMS = [(f"max f16 {e}", f"{K}(x: f16[N]) -> f16 {{ return max(x) }}", {"N": 1 << e}) for e in (20, 22, 24, 25, 26)]
PROGRAMS += [(f"sum bf16 {e}", f"{K}(x: bf16[N]) -> f32 {{ return sum(f32(x)) }}", {"N": 1 << e}) for e in (22, 24, 26)]
PROGRAMS += [(f"mse f16 {e}", f"{K}(x: f16[N], y: f16[N]) -> f32 {{\n d = f32(x) - f32(y)\n"
              " return mean(d * d)\n}", {"N": 1 << e}) for e in (23, 25)]
PROGRAMS += [(f"max f32 {e}", f"{K}(x: f32[N]) -> f32 {{ return max(x) }}", {"N": 1 << e}) for e in (21, 23, 25)]
PROGRAMS += [(f"sum f32 {e}", f"{K}(x: f32[N]) -> f32 {{ return sum(x) }}", {"N": 1 << e}) for e in (20, 24, 26)]
PROGRAMS += [("max f16 odd 26", f"{K}(x: f16[N]) -> f16 {{ return max(x) }}", {"N": (1 << 26) + 3}),
             ("sum f32 rows 8", f"{K}(x: f32[M, N]) -> f32[M] {{ return sum(x, axis=N) }}", {"M": 8, "N": 1 << 22})]


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    cases = []
    for case, d in row_probe.prepared(PROGRAMS, sys.argv[1:]):
        if d.kind != "reduce_split":
            print(f"{case.name}: default {d.tag} is no split")
            continue
        # n times the default's splits (the default: one block of 512 an SM), in one kernel or two
        v = {"default": d, **{f"x{n}{'' if lb else ' 2k'}": replace(d, splits=n * d.splits, last_block=lb)
                              for n in (1, 2, 3) for lb in (True, False)}}
        case.variants = row_probe.exact(case, row_probe.distinct(v))
        cases.append(case)
    row_probe.time_and_report(cases, copy, label_width=8, tag_width=36)
    row_probe.report_in_a_row(cases, 2000, 16)


if __name__ == "__main__":
    main()
