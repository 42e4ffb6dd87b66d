"""Probe (device run): a residual add returned beside its norm over long rows. Its defaults
hold 40 elements a thread of both packed inputs at 1024 threads, or 32 in a cluster's blocks,
and spill 8-68 bytes at 64 registers (ptxas sm_90a); timed beside the shares that do not spill
(24 or 16 elements a thread in clusters of 4 or 8, the tuner's candidates). H200 2026-12-04: the
spilling defaults were 5-18% faster, so they stay (that run took the spill-free shares from a
rule since taken back, 4b4cea0; this form pins the same shares among the tuner's candidates and
has not run on a GPU). Each checked against float64 first; three interleaved rounds, median us.

    python scripts/probe_residual_rows.py [names to keep]
"""
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import row_probe  # noqa: E402
from tiledsl.schedule import choose  # noqa: E402

LN = ("kernel f(x: {t}[M, N], r: {t}[M, N], w: {w}[N], b: {w}[N]) -> ({t}[M, N], {t}[M, N]) {{\n"
      " h = x + r\n c = h - mean(h, axis=N)\n return c * rsqrt(mean(c * c, axis=N) + 1e-5) * w + b, h\n}}")
RMS = ("kernel f(x: {t}[M, N], r: {t}[M, N], w: {w}[N]) -> ({t}[M, N], {t}[M, N]) {{\n"
       " h = x + r\n return h, h * rsqrt(mean(h * h, axis=N) + 1e-6) * w\n}}")
CASES = [("layernorm f16 f32 40960", LN.format(t="f16", w="f32"), {"M": 1001, "N": 40960}),
         ("layernorm f16 f32 40003", LN.format(t="f16", w="f32"), {"M": 1001, "N": 40003}),
         ("layernorm bf16 f32 65536", LN.format(t="bf16", w="f32"), {"M": 528, "N": 65536}),
         ("rmsnorm bf16 40003", RMS.format(t="bf16", w="bf16"), {"M": 1001, "N": 40003}),
         ("rmsnorm f16 f32 100000", RMS.format(t="f16", w="f32"), {"M": 264, "N": 100000})]


SPILL_FREE = ("_i3_t512_nh_c4", "_i2_t512_nh_c8", "_i2_t1024_nh_c8")    # shares in clusters that do not spill


def variants(case, d) -> dict:
    out = {"default": d}
    for s in choose.candidates(case.problem, case.kernel.hints):
        for pattern in SPILL_FREE:
            if pattern + "_" in s.tag and s.unroll == 0:
                out.setdefault(pattern.strip("_"), s)
    return out


if __name__ == "__main__":
    row_probe.run(CASES, variants, label_width=8)
