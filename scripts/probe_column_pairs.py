"""Probe (device run): softmax and logsumexp across memory (over M of [M, N], N innermost;
over T of [B, T, C]), whose max and sum(exp(x - max)) one group takes in one pass (an
online pair: partition.online_partner) where they took a group each. Every distinct
column and split candidate of the pair's group (a thread a column, vectors of columns,
split chunks, tiles of columns), each checked against the float64 reference first, and
torch's softmax over the same dim beside them; three interleaved rounds, median
microseconds, and the ratio of the bytes moved (x read once, the result written once) to
copy. device_pass.sh `pairs_ab` runs the defaults alone (DEFAULT_ONLY=1) in an old tree,
then this probe in this one.

    python scripts/probe_column_pairs.py [names to keep]
"""
import os
import statistics
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
import row_probe  # noqa: E402  (beside this script)
from benchmarks.common import copy_bandwidth, time_cuda  # noqa: E402
from tiledsl.schedule import columns  # noqa: E402
from tiledsl.schedule.choose import candidates, fits  # noqa: E402
from tiledsl.schedule.schedules import Schedule  # noqa: E402

K = "kernel f"
SOFTMAX = f"{K}(x: {{t}}[M, N]) -> {{t}}[M, N] {{{{\n e = exp(x - max(x, axis=M))\n return {{t}}(e / sum(e, axis=M))\n}}}}"
LSE = f"{K}(x: {{t}}[B, T, C]) -> f32[B, C] {{{{\n m = max(f32(x), axis=T)\n return m + log(sum(exp(f32(x) - m), axis=T))\n}}}}"
CASES = [("softmax f32", SOFTMAX.format(t="f32"), {"M": 4096, "N": 4096}),
         ("softmax f32 tall", SOFTMAX.format(t="f32"), {"M": 16384, "N": 1024}),
         ("softmax f32 64 tall", SOFTMAX.format(t="f32"), {"M": 64, "N": 1 << 20}),
         ("softmax f32 8 wide", SOFTMAX.format(t="f32"), {"M": 1 << 21, "N": 8}),
         ("softmax f16", SOFTMAX.format(t="f16"), {"M": 4096, "N": 4096}),
         ("softmax bf16 wide", SOFTMAX.format(t="bf16"), {"M": 1024, "N": 16384}),
         ("logsumexp f32", LSE.format(t="f32"), {"B": 16, "T": 4096, "C": 256}),
         ("logsumexp f16", LSE.format(t="f16"), {"B": 8, "T": 8192, "C": 512}),
         # columns shorter than the default's 1024 rows
         ("short softmax f32 1000", SOFTMAX.format(t="f32"), {"M": 1000, "N": 3000}),
         ("short softmax f32 512", SOFTMAX.format(t="f32"), {"M": 512, "N": 8192}),
         ("short softmax f32 256", SOFTMAX.format(t="f32"), {"M": 256, "N": 16384}),
         ("short softmax f32 128", SOFTMAX.format(t="f32"), {"M": 128, "N": 65536}),
         ("short softmax f32 1000 narrow", SOFTMAX.format(t="f32"), {"M": 1000, "N": 1000}),
         ("short softmax f16 768", SOFTMAX.format(t="f16"), {"M": 768, "N": 4096}),
         ("short softmax bf16 1000", SOFTMAX.format(t="bf16"), {"M": 1000, "N": 8192}),
         ("short logsumexp f32", LSE.format(t="f32"), {"B": 64, "T": 512, "C": 512})]


def torch_time(case) -> float:
    """torch.softmax over the same dim (softmax cases), median us; 0 where not comparable."""
    try:
        import torch
    except ImportError:
        return 0.0
    if "softmax" not in case.name:
        return 0.0
    if case.kernel.graph.params[0].dtype.name == "bf16":
        return 0.0      # (CuPy's bf16 arrays do not cross to torch as such)
    xs = [torch.as_tensor(s[0], device="cuda") for s in case.sets]
    return time_cuda(lambda i: torch.softmax(xs[i], dim=0), n_sets=len(xs), repeats=20, warmup_ms=20).median_us


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    kept = []
    for case, d in row_probe.prepared(CASES, sys.argv[1:]):
        groups = case.kernel._launcher.groups
        print(f"{case.name}: {len(groups)} groups ({', '.join(g.kind for g in groups)})", flush=True)
        variants = {"default": d}
        for s in ([] if os.environ.get("DEFAULT_ONLY") else candidates(case.problem, case.kernel.hints)):
            if not s.unroll and s.kind != "reduce_row":     # (a block down a column: 0.05-0.15x copy)
                variants.setdefault(s.tag + (f" s{s.splits}" if s.splits else ""), s)
        if case.name.startswith("short") and not os.environ.get("DEFAULT_ONLY"):
            # vectors of columns split below the default's 1024 rows
            for vec in columns.column_vectors(case.problem):
                for per_sm in (2, 4, 8):
                    s = columns.split_schedule(case.problem, vec, blocks_per_sm=per_sm, min_length=1)
                    for n in ({s.splits // 2, s.splits, 2 * s.splits} if s else ()):
                        if n >= 2:
                            variants.setdefault(f"{s.tag} s{n}", replace(s, splits=n))
            # a few columns a warp, streamed: neighbouring lanes on neighbouring columns read
            # whole sectors, where a block down one column reads an element a sector
            for tpr, block in ((4, 128), (8, 128), (8, 256), (16, 256), (32, 256)):
                s = Schedule("reduce_row", block=block, vec=1, items=0, row_threads=tpr, online=True,
                             index64=case.problem.index64)
                if not fits(case.problem, s):
                    variants.setdefault(s.tag, s)
        case.variants = row_probe.exact(case, row_probe.distinct(variants))
        kept.append(case)
    row_probe.time_and_report(kept, copy, rounds=int(os.environ.get("ROUNDS", 3)), label_width=36, tag_width=30)
    for case in kept:
        t = [torch_time(case) for _ in range(3)]
        if t[0]:
            us = statistics.median(t)
            print(f"torch {case.name}: {us:.1f} us {case.nbytes / us / 1e3 / copy:5.2f}x copy")


if __name__ == "__main__":
    main()
