"""Probe (device run): reductions across memory (over M of x[M, N]) whose results over whole
columns (softmax over M, x - mean(x, axis=M), a batch norm) go to a pointwise kernel of their
own, reading x a second time (`partition.walks_across`; runs_columns turned off), against one kernel that computes the
statistics and writes the results, its column walked by the row kernels' schedules. For each
case: the default (three or two kernels), then the partition that fuses them (walks_across
turned off in this process), every candidate of its one group checked against float64 and
timed once, and the six fastest beside the default in three interleaved rounds (median us, x
copy).

    python scripts/probe_fused_columns.py [names to keep, e.g. softmax-64x]
"""
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchmarks.common import copy_bandwidth  # noqa: E402
from row_probe import exact, fastest_candidates, interleaved, prepare, report_interleaved  # noqa: E402
from tiledsl.schedule.columns import held_columns  # noqa: E402
import tiledsl.schedule.partition as partition_module  # noqa: E402
import tiledsl.schedule.problem as problem_module  # noqa: E402

SOFTMAX = "kernel cs(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=M))\n return e / sum(e, axis=M)\n}"
CENTER = "kernel cc(x: f32[M, N]) -> f32[M, N] { return x - mean(x, axis=M) }"
BATCHNORM = ("kernel bn(x: f16[M, N], w: f32[N], b: f32[N]) -> f16[M, N] {\n c = f32(x) - mean(f32(x), axis=M)\n"
             " return f16(c * rsqrt(mean(c * c, axis=M) + 1e-5) * w + b)\n}")
CASES = [("softmax", SOFTMAX, 1e-5, [(16, 1 << 22), (64, 1 << 20), (256, 1 << 18), (1024, 1 << 16), (4096, 4096), (1 << 21, 8)]),
         ("center", CENTER, 1e-5, [(256, 1 << 18), (16384, 4096)]),
         ("batchnorm", BATCHNORM, 2e-3, [(256, 1 << 18), (4096, 8192)])]


def main() -> None:
    only = sys.argv[1:]
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    across = partition_module.walks_across
    for name, src, bound, shapes in CASES:
        for m, n in shapes:
            label = f"{name}-{m}x{n}"
            if only and not any(o in label for o in only):
                continue
            partition_module.walks_across = across
            longest = problem_module.COLUMNS_MAX_ROWS
            problem_module.COLUMNS_MAX_ROWS = 0             # (never the columns partition: runs_columns)
            split = prepare(label, src, dict(M=m, N=n))
            split.kernel(*split.sets[0], out=split.out)         # (its call class planned now, split)
            problem_module.COLUMNS_MAX_ROWS = longest
            partition_module.walks_across = lambda r: False
            fused = prepare(label, src + "\n", dict(M=m, N=n))
            default, keep = fastest_candidates(fused, 6, bound)
            if default not in keep:
                keep.append(default)
            # every held share beside the fastest few (columns.held_columns: 1 to 32 threads a column)
            keep += [s for s in exact(fused, {s.tag: s for s in held_columns(fused.problem)}, bound).values()
                     if s not in keep]
            k = fused.kernel
            runs = {"split (today's partition)": (None, None, lambda i: split.kernel(*split.sets[i], out=split.out),
                                                  len(split.sets))}
            runs.update({s.tag: (k._launcher, {0: s}, lambda i: k(*fused.sets[i], out=fused.out), len(fused.sets))
                         for s in keep})
            report_interleaved(label, fused.nbytes, copy, interleaved(runs), default.tag)
    partition_module.walks_across = across


if __name__ == "__main__":
    main()
