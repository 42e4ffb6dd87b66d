"""Probe (device run): rows in 16-byte vectors, or peeled, whose per-row inputs take more than two copies
an SM's shared memory fits (over 112 KB on sm_90): each case's default beside the default before this
file's rules ("before") and beside the row copied into shared memory by one block of 512 or 1024 threads,
one block an SM, and by the blocks of a cluster (2, 4, 8 of 256 or 512, and of 1024 where two shares
overflow an SM), each its share, where that fits a block. The rules it timed, 2026-12-06: rows of 112 to
225 KB in whole vectors copied by one block of 1024 (rows.shared_row_alone; H100 05:58-06:13), peeled
ones that no block of 1024 holds by 4 blocks of 256 (the same; H200 07:58, H100 08:16), and rows of
several inputs over 225 KB by 8 blocks (rows.wide_rows_copied; H200 07:58, H100 08:16-08:30). Cases named
"held": rows one block of 1024 held in registers before; "peeled": lengths that break 16-byte vectors
(weights heavier than the row shifted where that fits); "wide" and "wider": rows over one block's shared
memory (225 KB), which only a cluster's blocks copy. Checked against float64, three interleaved rounds,
median us and the ratio to copy.

    python scripts/probe_copied_rows.py [names to keep]
"""
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import row_probe  # noqa: E402
from dataclasses import replace  # noqa: E402
from tiledsl.schedule import choose, rows  # noqa: E402
from tiledsl.schedule.choose import fits  # noqa: E402
from tiledsl.schedule.partition import online_pairs  # noqa: E402
from tiledsl.schedule.schedules import ROW_CLUSTERS, Schedule  # noqa: E402

from survey_spills import TEMPLATES  # noqa: E402  (the programs the spill survey compiles)

LN_RES = TEMPLATES["layernorm of x + r"].format(t="f16", w="f32")
LN, RMS = TEMPLATES["layernorm"], TEMPLATES["rmsnorm"]
RMS_RES = TEMPLATES["rmsnorm of x + r"].format(t="f16", w="f16")
LN_RES3 = TEMPLATES["layernorm of x + r + q"].format(t="f16", w="f32")
SOFTMAX = "kernel f(x: {t}[M, N]) -> {t}[M, N] {{\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}}"
CASES = [("residual layernorm 1001x32768", LN_RES, {"M": 1001, "N": 32768}),        # 128 KB of x and r a row
         ("residual layernorm 1001x40960", LN_RES, {"M": 1001, "N": 40960}),        # 160 KB
         ("residual layernorm 4096x40960", LN_RES, {"M": 4096, "N": 40960}),
         ("residual layernorm 300x40960", LN_RES, {"M": 300, "N": 40960}),
         ("residual layernorm 2048x49152", LN_RES, {"M": 2048, "N": 49152}),        # 192 KB
         ("rmsnorm bf16 2048x65536", RMS.format(t="bf16", w="bf16"), {"M": 2048, "N": 65536}),     # 128 KB
         ("rmsnorm f16 1024x100000", RMS.format(t="f16", w="f16"), {"M": 1024, "N": 100000}),     # 195 KB
         ("layernorm bf16 1024x65536", LN.format(t="bf16", w="f32"), {"M": 1024, "N": 65536}),
         ("layernorm bf16 1024x100000", LN.format(t="bf16", w="f32"), {"M": 1024, "N": 100000}),
         ("layernorm f32 2048x32768", LN.format(t="f32", w="f32"), {"M": 2048, "N": 32768}),     # 128 KB
         ("rmsnorm f32 1024x40000", RMS.format(t="f32", w="f32"), {"M": 1024, "N": 40000}),      # 156 KB
         ("softmax f16 2048x60000", SOFTMAX.format(t="f16"), {"M": 2048, "N": 60000}),   # 117 KB
         ("softmax bf16 1024x100000", SOFTMAX.format(t="bf16"), {"M": 1024, "N": 100000}),
         ("softmax f32 1024x40000", SOFTMAX.format(t="f32"), {"M": 1024, "N": 40000}),
         # rows one block of 1024 held in registers before rows.shared_row_alone (H100 06:13: level)
         ("held softmax f32 2048x32768", SOFTMAX.format(t="f32"), {"M": 2048, "N": 32768}),
         ("held rmsnorm f32 2048x32768", RMS.format(t="f32", w="f32"), {"M": 2048, "N": 32768}),
         ("held softmax f16 2048x65536", SOFTMAX.format(t="f16"), {"M": 2048, "N": 65536}),
         # peeled rows (a length that breaks 16-byte vectors), which the rule leaves alone (not yet timed)
         ("peeled residual layernorm 1001x40003", LN_RES, {"M": 1001, "N": 40003}),     # 4 of 256 copy it
         ("peeled residual layernorm 4096x40003", LN_RES, {"M": 4096, "N": 40003}),
         ("peeled rmsnorm f16 1024x100001", RMS.format(t="f16", w="f16"), {"M": 1024, "N": 100001}),
         ("peeled softmax f16 2048x60001", SOFTMAX.format(t="f16"), {"M": 2048, "N": 60001}),
         ("peeled softmax f32 1024x40001", SOFTMAX.format(t="f32"), {"M": 1024, "N": 40001}),
         # rows over one block's shared memory (225 KB): copied by a cluster's blocks, one or two an SM
         ("wide residual layernorm 300x262144", LN_RES, {"M": 300, "N": 262144}),      # 1 MB: streamed
         ("wide residual layernorm 512x65536", LN_RES, {"M": 512, "N": 65536}),        # 256 KB
         ("wide residual layernorm 1001x65536", LN_RES, {"M": 1001, "N": 65536}),
         ("wide residual layernorm 264x131072", LN_RES, {"M": 264, "N": 131072}),      # 512 KB
         ("wide rmsnorm bf16 1024x131072", RMS.format(t="bf16", w="bf16"), {"M": 1024, "N": 131072}),
         ("wide layernorm bf16 1024x131072", LN.format(t="bf16", w="f32"), {"M": 1024, "N": 131072}),
         ("wide softmax f32 512x131072", SOFTMAX.format(t="f32"), {"M": 512, "N": 131072}),
         ("wider rmsnorm of x + r 512x65536", RMS_RES, {"M": 512, "N": 65536}),
         ("wider rmsnorm of x + r 300x262144", RMS_RES, {"M": 300, "N": 262144}),
         ("wider layernorm of x + r + q 512x65536", LN_RES3, {"M": 512, "N": 65536})]


def copies(case) -> dict:
    """The row copied by one block of 512 or 1024 threads, and by a cluster's blocks of 256 or 512
    (each its share; of 1024 too where two shares overflow an SM), wherever the copy fits a block
    (label -> Schedule)."""
    p = case.problem
    vec, peel = rows.looped_row_vector(p, rows.held_peel_weights_fit)
    online = not online_pairs(p.group)
    out = {}
    for threads in (256, 512, 1024):
        alone = Schedule("reduce_row", block=threads, vec=vec, items=0, row_threads=threads, shared_row=True,
                         online=online, peel=peel, index64=p.index64)
        shares = [(f"b{threads}", alone)] if threads > 256 else []
        shares += [(f"c{c} b{threads}", replace(alone, cluster=c)) for c in ROW_CLUSTERS     # (1024: one an SM)
                   if threads < 1024 or not rows.shared_rows_fit_twice(p, replace(alone, cluster=c))]
        # (peeled beside heavier weights: those shifted by each row's head where that fits)
        out.update({label: t for label, s in shares if not fits(p, t := rows.shifted_where_heavier(p, s))})
    return out


def variants(case, d) -> dict:
    alone = rows.shared_row_alone
    # (before 2026-12-06 07:58: no peeled rows copied by shared_row_alone, nor wide_rows_copied)
    with row_probe.constants(rows, shared_row_alone=lambda p, copied, clusters=True: None if copied.peel
                             else alone(p, copied, clusters), wide_rows_copied=lambda p, copied: None):
        before = choose.default(case.problem, case.kernel.hints)
    return {"default": d, "before": before, **copies(case)}


if __name__ == "__main__":
    row_probe.run(CASES, variants, label_width=10, each=True)
