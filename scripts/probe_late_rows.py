"""Probe (device run): where a layernorm's heavy weights (f32 weight and bias over 16-bit rows)
stop paying for a persistent block that hoists them and prefetches its next row, and a block
a row with the weights loaded late (from L1, at 1536 threads an SM) takes over. On a GPU with
little HBM bandwidth per SM (an H100) the default rule made that switch at 64 rows an SM until
this probe's run of 2026-12-07 06:43 placed it at 40 (rows.LATE_HEAVY_ROWS_PER_SM); the old
rule's default ("rule of 64") is timed beside the default where they differ. Here rows of 4096
to 8192 elements at 31 to 62 rows an SM (of this GPU's SMs), and rows of 1024 and 2048 at 31
to 62, each schedule checked against float64 first, three interleaved rounds, median
microseconds.

    python scripts/probe_late_rows.py [names to keep, e.g. N=8192 bf16]
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import row_probe  # noqa: E402  (beside this script)
from benchmarks.bench_memory import LAYERNORM_TDSL  # noqa: E402
from tiledsl.runtime.launcher import _sm_count  # noqa: E402
from tiledsl.schedule import choose, rows  # noqa: E402
from tiledsl.schedule.schedules import R40_THREADS  # noqa: E402

LAYERNORM_BF16 = LAYERNORM_TDSL.replace("x: f16", "x: bf16").replace("-> f16", "-> bf16")
ROWS_PER_SM = (31, 40, 48, 56, 62)


def cases(sms: int) -> list:
    """(name, source, extents) at ROWS_PER_SM rows an SM of a GPU of `sms` SMs."""
    shapes = ([("f16", n, r) for n in (4096, 6144, 8192) for r in ROWS_PER_SM]
              + [("f16", n, r) for n in (1024, 2048) for r in (31, 40, 48, 62)]
              + [("bf16", 8192, r) for r in (31, 48, 62)])
    return [(f"layernorm {t} N={n} {r}/SM", LAYERNORM_BF16 if t == "bf16" else LAYERNORM_TDSL, {"M": r * sms, "N": n})
            for t, n, r in shapes]


def variants(case, d) -> dict:
    """The default, the default of the rule before 2026-12-07 (late from 64 rows an SM), and
    (where it is neither) the same row a block a row, weights late."""
    out = {"default": d}
    with row_probe.constants(rows, LATE_HEAVY_ROWS_PER_SM=rows.LATE_ROWS_PER_SM):
        out["rule of 64"] = choose.default(case.problem, case.kernel.hints)
    late = replace(d, hoist=False, blocks_per_sm=0, prefetch=False, keep=False,
                   min_blocks=R40_THREADS // d.row_threads)
    if late not in out.values() and not choose.fits(case.problem, late):
        out["late r40"] = late
    return out


if __name__ == "__main__":
    assert LAYERNORM_BF16.count("bf16") >= 2, "the bf16 twin of the layernorm source did not take"
    row_probe.run(cases(_sm_count(0)), variants, label_width=10, each=True)
