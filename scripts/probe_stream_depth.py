"""Probe (device run): how deep a streamed 16-bit row's loop should go where its loads take many
registers (registers.stream_depth, 2026-12-05 evening: 4 deep within 32 words of loads in flight,
2 within 56 on sm_90a; before, sm_90a always went 4 deep, and the layernorm of x + r and of x + r + q
at 300x262144 spilled 8 to 40 bytes there). Each case's default (now 2 deep) beside the same
loop 4 deep (the old default, spilling), 1 deep, and at unroll 0 (stream_unroll_rule: here ptxas
decides); checked against float64, three interleaved rounds, median us and the ratio to copy. Not
yet run on a GPU.

    python scripts/probe_stream_depth.py [names to keep]
"""
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import row_probe  # noqa: E402
from dataclasses import replace  # noqa: E402

from survey_spills import TEMPLATES  # noqa: E402  (the programs the spill survey compiles)

LN_RES, LN_RES3 = TEMPLATES["layernorm of x + r"], TEMPLATES["layernorm of x + r + q"]

CASES = [("layernorm of x + r f16 300x262144", LN_RES.format(t="f16", w="f32"), {"M": 300, "N": 262144}),
         ("layernorm of x + r bf16 132x262144", LN_RES.format(t="bf16", w="f32"), {"M": 132, "N": 262144}),
         ("layernorm of x + r + q f32 w 300x262144", LN_RES3.format(t="f16", w="f32"), {"M": 300, "N": 262144}),
         ("layernorm of x + r + q f16 w 300x262144", LN_RES3.format(t="f16", w="f16"), {"M": 300, "N": 262144})]


def variants(case, d) -> dict:
    if not (d.kind == "reduce_row" and d.items == 0):
        return {"default": d}
    return {"default": d, **{f"u{n}": replace(d, unroll=n) for n in (4, 2, 1, 0) if n != d.unroll}}


if __name__ == "__main__":
    row_probe.run(CASES, variants, label_width=8, each=True)
