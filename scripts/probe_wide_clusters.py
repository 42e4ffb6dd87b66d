"""Probe (device run): the benchmark's wide norm rows (held by a block, at 0.87-0.91x
copy on an H100) shared instead by the 2 or 4 blocks of a cluster exchanging each
reduction by st.async (Schedule.cluster), and held by one block without the persistent
prefetching loop. Each schedule is checked against float64 first; three interleaved
rounds, median microseconds, ratio of the bytes moved to copy.

    python scripts/probe_wide_clusters.py [names to keep]
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import row_probe  # noqa: E402  (beside this script)
from benchmarks.bench_memory import LAYERNORM16_TDSL, LAYERNORM_TDSL, RMSNORM_TDSL  # noqa: E402
from probe_online import softmax  # noqa: E402
from tiledsl.schedule import choose, rows  # noqa: E402

CASES = [("layernorm f16", LAYERNORM_TDSL, {"M": 4096, "N": 8192}),
         ("layernorm16", LAYERNORM16_TDSL, {"M": 4096, "N": 8192}),
         ("rmsnorm f16", RMSNORM_TDSL, {"M": 4096, "N": 8192}),
         ("layernorm f16", LAYERNORM_TDSL, {"M": 16384, "N": 4096}),
         ("layernorm16", LAYERNORM16_TDSL, {"M": 65536, "N": 1024}),
         ("softmax f32", softmax("f32"), {"M": 16384, "N": 1024})]


def variants(case, d) -> dict:
    p = case.problem
    vec = choose.max_vector(p)
    out = {"default": d}
    for threads in (128, 256, 512, 1024):
        for blocks in (1, 2, 4):
            s = rows.held_row_share(p, vec, threads, blocks)
            if s:
                out[f"c{blocks} t{threads}"] = s
                if s.hoist and p.has_row_invariant_inputs():
                    late = replace(s, hoist=False)
                    out[f"c{blocks} t{threads} late"] = late
    return out


def main() -> None:
    row_probe.run(CASES, variants)


if __name__ == "__main__":
    main()
