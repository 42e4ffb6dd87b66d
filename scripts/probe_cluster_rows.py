"""Probe (device run): rows too long for one block's registers, held instead by the
2, 4 or 8 blocks of a cluster (Schedule.cluster: each block keeps its share in
registers and the blocks combine each reduction through their shared memory),
against the default (a looped row, re-read phase after phase). Each schedule is
checked against the float64 reference first; three interleaved rounds, median
microseconds, and the ratio of the bytes moved to copy.

    python scripts/probe_cluster_rows.py [names to keep]

Rows held by a block alone are timed too (16-bit ones up to 64 elements a thread: the
`--wide16` of 2026-11-26 15:06, which patched the cap in; now the library's), and rows
whose length breaks alignment held peeled (a block alone or a cluster's blocks) against
the default before they were (`not held peeled`).
"""
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import row_probe  # noqa: E402  (beside this script)
from benchmarks.bench_memory import LAYERNORM16_TDSL, LAYERNORM_TDSL, RMSNORM_TDSL  # noqa: E402
from probe_online import LSE, softmax  # noqa: E402
from tiledsl.schedule import choose, rows  # noqa: E402


RMS_BF16 = ("kernel r(x: bf16[M, N], w: bf16[N]) -> bf16[M, N] "
            "{ return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }")
THREE = "kernel f(x: f32[M, N], y: f32[M, N], z: f32[M, N]) -> f32[M, N] { return x * y + z + sum(x * z, axis=N) }"
TWO = "kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] { return x * y + sum(x, axis=N) }"
CASES = [("softmax f32", softmax("f32"), {"M": 256, "N": 262144}),
         ("softmax f32", softmax("f32"), {"M": 1024, "N": 65536}),
         ("softmax f32", softmax("f32"), {"M": 64, "N": 200000}),
         ("softmax f32", softmax("f32"), {"M": 4096, "N": 32768}),
         ("softmax f16", softmax("f16"), {"M": 512, "N": 262144}),
         ("softmax f16", softmax("f16"), {"M": 2048, "N": 131072}),
         ("softmax f16", softmax("f16"), {"M": 4096, "N": 50304}),
         ("softmax bf16", softmax("bf16"), {"M": 2048, "N": 128256}),
         ("logsumexp f32", LSE, {"M": 256, "N": 262144}),
         ("layernorm f16", LAYERNORM_TDSL, {"M": 1024, "N": 65536}),
         ("rmsnorm f16", RMSNORM_TDSL, {"M": 1024, "N": 65536}),
         ("softmax f32 odd", softmax("f32"), {"M": 1024, "N": 65537}),
         ("softmax f32 odd", softmax("f32"), {"M": 4096, "N": 50257}),
         ("softmax f16 odd", softmax("f16"), {"M": 4096, "N": 50257}),
         ("softmax bf16 odd", softmax("bf16"), {"M": 2048, "N": 131075}),
         ("rmsnorm bf16 odd", RMS_BF16, {"M": 2048, "N": 40001}),
         ("layernorm f16 odd", LAYERNORM_TDSL, {"M": 4096, "N": 20001}),
         ("softmax f32 odd mid", softmax("f32"), {"M": 4096, "N": 12001}),
         ("softmax f32 odd short", softmax("f32"), {"M": 32768, "N": 781}),
         ("softmax f32 odd short", softmax("f32"), {"M": 32768, "N": 1201}),
         ("softmax f16 odd short", softmax("f16"), {"M": 65536, "N": 781}),
         ("softmax f16 odd short", softmax("f16"), {"M": 32768, "N": 1001}),
         ("rmsnorm bf16 odd short", RMS_BF16, {"M": 32768, "N": 1001}),
         ("layernorm16 odd short", LAYERNORM16_TDSL, {"M": 32768, "N": 1001}),
         ("softmax f16 odd tiny", softmax("f16"), {"M": 65536, "N": 513}),
         ("softmax f16 odd tiny", softmax("f16"), {"M": 131072, "N": 257}),
         ("softmax f16 odd tiny", softmax("f16"), {"M": 262144, "N": 129}),
         ("rmsnorm bf16 odd tiny", RMS_BF16, {"M": 131072, "N": 257}),
         ("softmax f16 odd mid", softmax("f16"), {"M": 8192, "N": 10001}),
         ("softmax f32 odd near", softmax("f32"), {"M": 8192, "N": 4097}),
         ("softmax f32 odd near", softmax("f32"), {"M": 4096, "N": 8193}),
         ("softmax f16 odd near", softmax("f16"), {"M": 16384, "N": 4099}),
         ("softmax f16 odd near", softmax("f16"), {"M": 8192, "N": 8193}),
         ("rmsnorm bf16 odd near", RMS_BF16, {"M": 8192, "N": 6001}),
         ("softmax f32 odd below", softmax("f32"), {"M": 16384, "N": 2049}),
         ("softmax f32 odd below", softmax("f32"), {"M": 16384, "N": 3001}),
         ("softmax f16 odd below", softmax("f16"), {"M": 16384, "N": 3001}),
         ("softmax f16 odd below", softmax("f16"), {"M": 32768, "N": 1537}),
         ("rmsnorm bf16 odd below", RMS_BF16, {"M": 16384, "N": 3001}),
         ("three f32 odd multi", THREE, {"M": 4096, "N": 4097}),
         ("two f32 odd multi", TWO, {"M": 2048, "N": 8193}),
         ("two f32 odd multi", TWO, {"M": 4096, "N": 20001}),
         ("softmax f16 aligned16", softmax("f16"), {"M": 16384, "N": 4096}),
         ("softmax f16 aligned16", softmax("f16"), {"M": 8192, "N": 8192}),
         ("softmax f16 aligned16", softmax("f16"), {"M": 4096, "N": 32000}),
         ("rmsnorm f16 aligned16", RMSNORM_TDSL, {"M": 4096, "N": 8192}),
         ("rmsnorm f16 aligned16", RMSNORM_TDSL, {"M": 16384, "N": 4096}),
         ("layernorm16 aligned16", LAYERNORM16_TDSL, {"M": 4096, "N": 8192}),
         ("softmax f16 aligned mid", softmax("f16"), {"M": 8192, "N": 10000}),
         ("softmax f32 aligned mid", softmax("f32"), {"M": 4096, "N": 12000})]


def held_variants(p) -> dict:
    """The row held by a block alone of 32 to 1024 threads (16-bit values packed two a
    register: up to 64 a thread), peeled to aligned vectors where its length breaks
    alignment (Schedule.peel with items), and then every peeled cluster share of more than
    a vector a thread."""
    peel = rows.peel_vector(p) > 1
    vec = rows.peel_vector(p) if peel else choose.max_vector(p)
    if vec == 1:
        return {}
    tag = "pe " if peel else ""
    out = {f"{tag}t{t}": s for t in (32, 64, 128, 256, 512, 1024) if (s := rows.held_row_share(p, vec, t, peel=peel))}
    if peel:
        out.update({f"pe c{s.cluster} t{s.block}": s for s in rows.cluster_row_shares(p, vec, peel=True)
                    if s.items > 1})
    return out


def variants(p, d, hints) -> dict:
    """The default; the row streamed by a block where clusters are not taken; the default
    before rows were held peeled; every share of the row by a cluster's blocks
    (rows.cluster_row_shares) where a block cannot hold it; and held_variants."""
    out = {"default": d, "looped": choose.default(p, hints, clusters=False)}
    with row_probe.constants(rows, LONG_ROW=1 << 62, PEELED_ROW=1 << 62, PEELED_ROW_16=1 << 62,
                             WARP_ROW_BYTES=0, WARP_ROW_NS=0.0):
        out["not held"] = choose.default(p, hints)
    vec = choose.max_vector(p)
    if not rows.held_row_share(p, vec, 1024):     # (rows a block holds: no cluster)
        for s in rows.cluster_row_shares(p, vec):
            out[f"c{s.cluster} t{s.block}{'' if s.hoist or not p.has_row_invariant_inputs() else ' late'}"] = s
    out.update(held_variants(p))
    return out


def main() -> None:
    row_probe.run(CASES, lambda case, d: variants(case.problem, d, case.kernel.hints))


if __name__ == "__main__":
    main()
