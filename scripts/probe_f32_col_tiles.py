"""Probe (device run): f32 reductions across memory (`sum(x, axis=M)` and kin) under their
default (columns.f32_column_tile on an H200: tiles of 16-byte vectors of columns) beside the
default before it (a thread a column, chunks of rows), the tile at other registers and splits,
and the tuner's four fastest candidates. Each
schedule is checked against float64 first; three interleaved rounds, median us.

    python scripts/probe_f32_col_tiles.py [names to keep]
    PROBE_ALL=0 ...   (no tuner candidates: quicker)
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import row_probe  # noqa: E402
from benchmarks.common import copy_bandwidth  # noqa: E402
from tiledsl.schedule import choose, columns  # noqa: E402

K = "kernel f"
SUM = f"{K}(x: f32[M, N]) -> f32[N] {{ return sum(x, axis=M) }}"
CASES = [
    ("sum 16384x4096", SUM, {"M": 16384, "N": 4096}),
    ("sum 8192x8192", SUM, {"M": 8192, "N": 8192}),
    ("sum 2048x32768", SUM, {"M": 2048, "N": 32768}),
    ("sum 65536x1024", SUM, {"M": 65536, "N": 1024}),
    ("sum 262144x256", SUM, {"M": 262144, "N": 256}),
    ("sum 1048576x128", SUM, {"M": 1048576, "N": 128}),
    ("sum 1048576x64", SUM, {"M": 1048576, "N": 64}),
    ("sum 4096x4096", SUM, {"M": 4096, "N": 4096}),
    ("sum 16384x1000", SUM, {"M": 16384, "N": 1000}),
    ("mean 65536x768", f"{K}(x: f32[B, C]) -> f32[C] {{ return mean(x, axis=B) }}", {"B": 65536, "C": 768}),
    ("sumsq 16384x4096", f"{K}(x: f32[M, N]) -> f32[N] {{ return sum(x * x, axis=M) }}", {"M": 16384, "N": 4096}),
    ("middle 64x1024x512", f"{K}(x: f32[B, T, C]) -> f32[B, C] {{ return sum(x, axis=T) }}",
     {"B": 64, "T": 1024, "C": 512}),
]


def tiles(p, d) -> dict:
    """The old default (the rules of a GPU of unknown bandwidth: a thread a column), and the
    tile of 16 vectors (f32_column_tile's) at registers for 1024 threads an SM (64: 2 blocks)
    in one wave of them, and at registers for 1536 (40: 3 blocks) in one wave and in two."""
    out = {"old": choose.default(replace(p, hbm_gbps=0.0))}
    t = columns.column_tile_split(p, 16, 512)
    if t is None:
        return out
    row_blocks = -(-(p.rows // t.vec) // 16)
    for label, blocks, mb in (("2/SM 1 wave", 2, 1), ("3/SM 1 wave", 3, 3), ("3/SM 2 waves", 6, 3)):
        splits = min(blocks * p.sm_count // row_blocks, columns.max_splits(p, t.row_threads, 1))
        if splits >= 2:
            out[f"tile16 {label}"] = replace(t, splits=splits, min_blocks=mb)
    return out


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    kept = []
    for case, d in row_probe.prepared(CASES, sys.argv[1:]):
        case.variants = {"default": d, **tiles(case.problem, d)}
        if os.environ.get("PROBE_ALL", "1") != "0":
            _, fastest = row_probe.fastest_candidates(case, 4)
            case.variants.update({f"cand {n}": s for n, s in enumerate(fastest)})
        case.variants = row_probe.exact(case, row_probe.distinct(case.variants), bound=1e-5)
        kept.append(case)
    row_probe.time_and_report(kept, copy, label_width=12, tag_width=40)


if __name__ == "__main__":
    main()
