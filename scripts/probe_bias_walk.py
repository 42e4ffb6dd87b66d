"""Probe (device run): pointwise programs with costly math (gelu, silu, exp, ...) and an
input broadcast over the outermost loop (a bias b of x[M, N] + b[N]), walked flat (the
default before 2026-12-02: each vector's index divided by N to find b's column) and along
the outermost loop (Schedule.outer, b loaded once a thread) at several rows a thread. Each
schedule is checked against the float64 reference first, then timed in three interleaved
rounds (median microseconds, ratio to copy).

    python scripts/probe_bias_walk.py [names to keep]
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import row_probe  # noqa: E402
from tiledsl.schedule import choose, pointwise  # noqa: E402

K = "kernel f"


def bias(fn: str, dt: str) -> str:
    return f"{K}(x: {dt}[M, N], b: {dt}[N]) -> {dt}[M, N] {{ return {fn}(x + b) }}"


CASES = [
    ("gelu bf16", bias("gelu", "bf16"), {"M": 8192, "N": 16384}),
    ("gelu f16", bias("gelu", "f16"), {"M": 16384, "N": 4096}),
    ("gelu f32", bias("gelu", "f32"), {"M": 8192, "N": 8192}),
    ("gelu bf16 3-D", f"{K}(x: bf16[B, T, C], b: bf16[C]) -> bf16[B, T, C] {{ return gelu(x + b) }}",
     {"B": 8, "T": 2048, "C": 768}),
    ("gelu bf16 small", bias("gelu", "bf16"), {"M": 529, "N": 2048}),
    ("gelu f16 mid", bias("gelu", "f16"), {"M": 4096, "N": 3072}),
    ("gelu bf16 odd", bias("gelu", "bf16"), {"M": 32768, "N": 781}),
    ("silu bf16", bias("silu", "bf16"), {"M": 65536, "N": 768}),
    ("tanh f32", bias("tanh", "f32"), {"M": 4096, "N": 1000}),
    ("sigmoid scale shift f16", f"{K}(x: f16[M, N], s: f16[N], t: f16[N]) -> f16[M, N] "
     "{ return sigmoid(x * s + t) }", {"M": 16384, "N": 4096}),
    ("exp shift f32", f"{K}(x: f32[M, N], m: f32[N]) -> f32[M, N] {{ return exp(x - m) }}",
     {"M": 16384, "N": 4096}),
    ("divide f32", f"{K}(x: f32[M, N], b: f32[N]) -> f32[M, N] {{ return x / b }}", {"M": 16384, "N": 4096}),
]


def variants(case, d):
    saved = pointwise.long_math
    pointwise.long_math = lambda p: False     # the rule off: the flat default it replaced
    try:
        flat = choose.default(case.problem, case.kernel.hints)
    finally:
        pointwise.long_math = saved
    out = {"default": d, "flat": flat}
    for items in (2, 4, 8):
        fits = pointwise.held_words(case.problem, d.vec, items, outer=True) <= pointwise.HELD_WORDS
        if fits and not pointwise.outer_refusal(case.problem, items):
            out[f"outer {items}"] = replace(d, outer=True, items=items)
    return out


if __name__ == "__main__":
    row_probe.run(CASES, variants, label_width=8)
