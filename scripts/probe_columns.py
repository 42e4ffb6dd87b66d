"""Probe (device run): reductions across memory with many columns and short-to-middling
columns (a middle-axis sum over T of [B, T, C], column sums of [M, N] with N large), where
the default gives a thread a column (reduce_col) and the grid may hold too few threads to
keep HBM busy: a thread a column against split reductions of 2 to 16 chunks (a block of
256 columns, each thread a column's chunk; a second kernel adds the partials). Each schedule
is checked against the float64 reference first; three interleaved rounds, median
microseconds, and the ratio of the bytes moved to copy.

    python scripts/probe_columns.py [names to keep]
"""
import os
import sys

sys.path.insert(0, os.getcwd())
import row_probe  # noqa: E402  (beside this script)
from benchmarks.common import copy_bandwidth  # noqa: E402
from tiledsl.schedule.schedules import Schedule  # noqa: E402

K = "kernel f"
MIDDLE = f"{K}(x: {{t}}[B, T, C]) -> f32[B, C] {{{{ return sum(x, axis=T) }}}}"
COLUMNS = f"{K}(x: {{t}}[M, N]) -> f32[N] {{{{ return sum(x, axis=M) }}}}"
CASES = [("middle-axis f16", MIDDLE.format(t="f16"), {"B": 64, "T": 1024, "C": 512}),
         ("middle-axis f32", MIDDLE.format(t="f32"), {"B": 64, "T": 1024, "C": 512}),
         ("middle-axis f32 long", MIDDLE.format(t="f32"), {"B": 8, "T": 4096, "C": 4096}),
         ("columns f32", COLUMNS.format(t="f32"), {"M": 2048, "N": 32768}),
         ("columns f16", COLUMNS.format(t="f16"), {"M": 1024, "N": 65536}),
         ("columns f32 many", COLUMNS.format(t="f32"), {"M": 512, "N": 262144})]


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    cases = []
    for case, d in row_probe.prepared(CASES, sys.argv[1:]):
        p = case.problem
        variants = {"default": d, "col": Schedule("reduce_col", block=256, vec=1, items=0, row_threads=1,
                                                  index64=p.index64)}
        for n in (2, 3, 4, 8, 16):
            if p.row_length >= 64 * n:
                variants[f"split {n}"] = Schedule("reduce_split", block=256, vec=1, items=0, row_threads=1,
                                                  splits=n, index64=p.index64)
        case.variants = row_probe.exact(case, row_probe.distinct(variants))
        cases.append(case)
    row_probe.time_and_report(cases, copy, label_width=8)


if __name__ == "__main__":
    main()
