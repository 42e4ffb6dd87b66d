"""Probe (device run): softmax and logsumexp over columns shorter than 1024 rows, where
event-timed calls of two or three kernels looked bound by something other than memory
(many schedules sharing a floor of ~25 us in one run, ~41 in another). Each schedule is
timed three ways in interleaved rounds:
  - call: CUDA events around each call (what bench_memory and the other probes report);
  - graph: the same calls captured into one CUDA graph, 20 of them a replay, events around
    the replay, divided by 20 (the GPU's time with the host's launch work taken out);
  - host: wall time of 200 calls issued back to back, then one synchronize, per call.
PLAIN=1: plain sums, maxima and means over short columns, the default against t threads a
column. SHORT_AB=1: the default, the default before columns.short_columns, and the rule's
threads a column halved and doubled. Else: the default, a few columns a warp
(`reduce_row` streamed online, 2 to 32 threads a column, blocks of 128 to 512) and the
split reductions of vectors of columns (three kernels).

    python scripts/probe_short_columns.py [names to keep]
"""
import os
import statistics
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402

import row_probe  # noqa: E402  (beside this script)
from benchmarks.common import copy_bandwidth, host_us_per_call, time_cuda  # noqa: E402
from tiledsl.runtime.launcher import set_overrides  # noqa: E402
from tiledsl.schedule import columns  # noqa: E402
from tiledsl.schedule.choose import fits  # noqa: E402
from tiledsl.schedule.schedules import Schedule  # noqa: E402

from probe_column_pairs import LSE, SOFTMAX  # noqa: E402  (beside this script)
CASES = [("softmax f32 1000x3000", SOFTMAX.format(t="f32"), {"M": 1000, "N": 3000}),
         ("softmax f32 512x8192", SOFTMAX.format(t="f32"), {"M": 512, "N": 8192}),
         ("softmax f32 256x16384", SOFTMAX.format(t="f32"), {"M": 256, "N": 16384}),
         ("softmax f32 128x65536", SOFTMAX.format(t="f32"), {"M": 128, "N": 65536}),
         ("softmax f32 1000x1000", SOFTMAX.format(t="f32"), {"M": 1000, "N": 1000}),
         ("softmax f32 300x200", SOFTMAX.format(t="f32"), {"M": 300, "N": 200}),
         ("softmax f16 768x4096", SOFTMAX.format(t="f16"), {"M": 768, "N": 4096}),
         ("softmax bf16 1000x8192", SOFTMAX.format(t="bf16"), {"M": 1000, "N": 8192}),
         ("softmax bf16 200x32768", SOFTMAX.format(t="bf16"), {"M": 200, "N": 32768}),
         ("logsumexp f32 64x512x512", LSE.format(t="f32"), {"B": 64, "T": 512, "C": 512}),
         ("logsumexp f16 32x256x1024", LSE.format(t="f16"), {"B": 32, "T": 256, "C": 1024})]
# PLAIN=1: plain reductions across memory over the same short columns (no online pair)
PLAIN_CASES = [(f"{name} {m}x{n}", src, {"M": m, "N": n})
               for name, src in (("sum f32", "kernel c(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }"),
                                 ("sum f16", "kernel c(x: f16[M, N]) -> f32[N] { return sum(x, axis=M) }"),
                                 ("max bf16", "kernel c(x: bf16[M, N]) -> bf16[N] { return max(x, axis=M) }"),
                                 ("x - mean f32", "kernel c(x: f32[M, N]) -> f32[M, N] { return x - mean(x, axis=M) }"))
               for m, n in ((1000, 3000), (512, 8192), (256, 16384), (768, 4096))]
PER_GRAPH = 20


def graph_us(case, stream) -> float:
    """The GPU's microseconds a call: PER_GRAPH calls (input sets in turn) in one graph."""
    k, sets, out = case.kernel, case.sets, case.out
    with stream:
        k(*sets[0], out=out)            # planned before capture (no allocation but the temps)
        stream.synchronize()
        stream.begin_capture()
        for i in range(PER_GRAPH):
            k(*sets[i % len(sets)], out=out)
        graph = stream.end_capture()
        t = time_cuda(lambda i: graph.launch(stream), repeats=7, warmup_ms=10)
    return t.median_us / PER_GRAPH


def host_us(case, calls: int = 200) -> float:
    k, sets, out, turn = case.kernel, case.sets, case.out, [0]

    def call():
        turn[0] += 1
        k(*sets[turn[0] % len(sets)], out=out)
    return host_us_per_call(call, calls)


def variants_of(case, default) -> dict:
    p = case.problem
    out = {"default": default}
    if os.environ.get("PLAIN"):       # the default and t threads a column, 256 a block
        for tpr in (2, 4, 8, 16, 32):
            s = Schedule("reduce_row", block=256, vec=1, items=0, row_threads=tpr, index64=p.index64)
            if not fits(p, s):
                out.setdefault(s.tag, s)
        return out
    if os.environ.get("SHORT_AB"):      # the default, the one before short_columns, its neighbours
        from tiledsl.schedule import choose
        with row_probe.constants(columns, short_columns=lambda p: None):
            out["before"] = choose.default(p, case.kernel.hints)
        if default.kind == "reduce_row" and default.items == 0:
            for t in (default.row_threads // 2, default.row_threads * 2):
                if 2 <= t <= 32:
                    out[f"t{t}"] = replace(default, row_threads=t)
        return out
    for block in (128, 256, 512):
        for tpr in (2, 4, 8, 16, 32):
            s = Schedule("reduce_row", block=block, vec=1, items=0, row_threads=tpr, online=True,
                         index64=p.index64)
            if not fits(p, s):
                out.setdefault(s.tag, s)
    for vec in columns.column_vectors(p):
        s = columns.split_schedule(p, vec, blocks_per_sm=4, min_length=1)
        for n in ({s.splits, 2 * s.splits} if s else ()):
            if n >= 2:
                out.setdefault(f"{s.tag} s{n}", replace(s, splits=n))
    return out


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    stream = cp.cuda.Stream(non_blocking=True)
    kept = []
    for case, d in row_probe.prepared(PLAIN_CASES if os.environ.get("PLAIN") else CASES, sys.argv[1:]):
        case.variants = row_probe.exact(case, row_probe.distinct(variants_of(case, d)))
        kept.append(case)
        print(f"{case.name}: {len(case.variants)} schedules", flush=True)
    times: dict = {}
    for _ in range(int(os.environ.get("ROUNDS", 3))):
        for n, case in enumerate(kept):
            k, sets, out = case.kernel, case.sets, case.out
            for s in case.variants.values():
                set_overrides(k._launcher, {0: s})
                call = time_cuda(lambda i: k(*sets[i], out=out), n_sets=len(sets), repeats=20, warmup_ms=10).median_us
                times.setdefault((n, s), []).append((call, graph_us(case, stream), host_us(case)))
    for n, case in enumerate(kept):
        print(f"{case.name} ({case.nbytes / copy / 1e3:.1f} us at copy speed):")
        rows = []
        for label, s in case.variants.items():
            call, graph, host = (statistics.median(x) for x in zip(*times[(n, s)]))
            rows.append((graph, f"  {label:30s} {s.tag:30s} call {call:7.1f}  graph {graph:7.1f} "
                                f"({case.nbytes / graph / 1e3 / copy:4.2f}x copy)  host {host:6.1f} us"))
        print("\n".join(r for _, r in sorted(rows)), flush=True)


if __name__ == "__main__":
    main()
