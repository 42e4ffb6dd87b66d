"""Probe (device run): rows held in registers by the blocks of a cluster (Schedule.cluster,
held), on a persistent grid of clusters (`_pst`: only the clusters resident at once, each
looping over rows) and prefetching their next row into shared memory (`_p_c8_pst`: each
thread copies its vectors of the next row there by cp.async once this row's first block
reduction has read its registers, and takes them from there at the next row's start), against
the same rows a cluster a row ("before": the schedule as it was before 2026-12-06).

Before, a block of 1024 threads holding its share of a 1 MB f32 row (one block an SM)
loaded the share, waited on two exchanges across the cluster and stored, one phase after
the other, and each new cluster waited for 8 SMs to free at once. First measured by a
text-patched kernel (H100 2026-12-06 13:58, us, a cluster a row / persistent / persistent
and prefetching): softmax f32 256x262144 227.9 / 206.1 / 193.3, 64x200000 57.1 / 57.4 /
46.7; rows of blocks of 512, two an SM, mixed (rmsnorm f16 1024x131072 223.5 / 195.7 /
215.2, softmax f16 2048x131072 381.3 / 393.7 / 390.3). This script, through the library
(H100 14:18): softmax f32 256x262144 228.6 / 207.2 / 194.6, 1000x262144 841.4 / 741.4 /
723.5; rmsnorm f32 300x262144 275.9 / 229.9 / 274.1 (prefetching spilled 8 bytes);
layernorm f32 323.9 / 300.7 / 272.3: resident.resident_clusters.

Each schedule is checked against float64 (output poisoned), then timed, three interleaved
rounds, median us and the ratio of the bytes moved to copy.

    python scripts/probe_prefetch_rows.py [names to keep]
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import row_probe  # noqa: E402
from probe_online import softmax  # noqa: E402
from tiledsl.schedule import choose, resident  # noqa: E402

RMS16 = "kernel r(x: f16[M, N], w: f16[N]) -> f16[M, N] { return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }"
RMS32 = RMS16.replace("f16", "f32")
LN32 = ("kernel l(x: f32[M, N], w: f32[N], b: f32[N]) -> f32[M, N] {\n m = mean(x, axis=N)\n d = x - m\n"
        " return d * rsqrt(mean(d * d, axis=N) + 1e-5) * w + b\n}")
CASES = [("softmax f32 1MB", softmax("f32"), {"M": 256, "N": 262144}),
         ("softmax f32 0.8MB", softmax("f32"), {"M": 64, "N": 200000}),
         ("softmax f32 many", softmax("f32"), {"M": 1000, "N": 262144}),
         ("softmax f32 peeled", softmax("f32"), {"M": 300, "N": 262147}),
         ("softmax f32 few", softmax("f32"), {"M": 24, "N": 262144}),
         ("rmsnorm f32", RMS32, {"M": 300, "N": 262144}),
         ("layernorm f32", LN32, {"M": 300, "N": 262144}),
         ("softmax f32 c4", softmax("f32"), {"M": 1024, "N": 65536}),
         ("rmsnorm f16 c4", RMS16, {"M": 1024, "N": 131072}),
         ("softmax f16 c8", softmax("f16"), {"M": 512, "N": 262144})]


def held_cluster(case, default):
    """The default where it holds its rows across a cluster, else the first candidate that does."""
    if default.cluster > 1 and default.items:
        return default
    return next((s for s in choose.candidates(case.problem, case.kernel.hints)
                 if s.kind == "reduce_row" and s.cluster > 1 and s.items and not s.persistent), None)


def variants_of(case, default) -> dict:
    held = held_cluster(case, default)
    if held is None:
        return {"default": default}
    before = replace(held, persistent=False, prefetch=False)
    out = {"before": before, "default": default}
    for s in resident.persistent_cluster_twins(case.problem, before):
        if not choose.fits(case.problem, s):
            out["prefetched" if s.prefetch else "persistent"] = s
    return out


if __name__ == "__main__":
    row_probe.run(CASES, variants_of, each=True, tag_width=40)
