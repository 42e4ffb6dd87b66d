"""Probe (device run): what a split reduction's last block (Schedule.last_block, `_lb`) costs to
find itself. Every block of such a kernel ends with a sequentially consistent fence in every
thread (`__threadfence()`: SASS MEMBAR.SC.GPU, CCTL.IVALL), a barrier, thread 0's atomic add on
the stream's counter, a barrier, and in the last block a second such fence. Two lighter forms,
text-patched into the rendered kernels:

  t0      the barrier first, then thread 0 alone fences, counts and (last block) fences again,
          as CUDA's cooperative groups sync a grid;
  acqrel  the barrier first, then thread 0 counts with `atom.acq_rel.gpu` (SASS: one
          MEMBAR.ALL.GPU, the atomic, CCTL.IVALL; no SC fence anywhere).

Both order the block's partial stores before its count through the barrier (PTX memory model:
bar.sync, then a release at gpu scope by thread 0, is cumulative), and the last block's reads
after the count through its acquire and the barrier after it.

Why: on an H100 (2026-12-06, probe_survey.py) full reductions fit a fixed cost of 7-8 us a call
over 3.03 TB/s (16 MiB 13.3 us, 64 MiB 29.0, 128 MiB ~52, 256 MiB 96.2) against ~4 us for a copy,
and all of a one-wave split's blocks reach this epilogue at once, with nothing left to overlap it.

Each version is checked against float64 (output poisoned) on every case, then the versions are
timed in turn, three rounds, median us; a case's rows share its input sets.

    python scripts/probe_split_epilogue.py [names to keep]
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cupy  # noqa: E402
import numpy as np  # noqa: E402

import row_probe  # noqa: E402
import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, time_cuda  # noqa: E402
from text_patch import install  # noqa: E402
from tiledsl.inputs import relative_error  # noqa: E402

OLD = """    __threadfence();        // this thread's partials are seen by every block before the block counts itself
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(done, 1u) == gridDim.x * gridDim.y - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();        // (every other block counted itself after its partials were seen)
"""
NEW = {
    "t0": """    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(done, 1u) == gridDim.x * gridDim.y - 1;
        if (last) __threadfence();
    }
    __syncthreads();
    if (!last) return;
""",
    "acqrel": """    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned before;
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(before) : "l"(done) : "memory");
        last = before == gridDim.x * gridDim.y - 1;
    }
    __syncthreads();
    if (!last) return;
""",
}


PATCHED: dict = {}     # version -> kernels rendered patched (a check that the patch took)


def patch(src: str, schedule) -> str:
    if not schedule.last_block:
        return src
    assert OLD in src, "the last block's epilogue changed: update OLD"
    PATCHED[FLAG["on"]] = PATCHED.get(FLAG["on"], 0) + 1
    return src.replace(OLD, NEW[FLAG["on"]])


FLAG = install("split-epilogue", patch)
K = "kernel f"
CASES = [
    ("max f16 2^26", f"{K}(x: f16[N]) -> f16 {{ return max(x) }}", {"N": 1 << 26}),
    ("max f16 2^24", f"{K}(x: f16[N]) -> f16 {{ return max(x) }}", {"N": 1 << 24}),
    ("max f16 2^22", f"{K}(x: f16[N]) -> f16 {{ return max(x) }}", {"N": 1 << 22}),
    ("sum f32 2^26", f"{K}(x: f32[N]) -> f32 {{ return sum(x) }}", {"N": 1 << 26}),
    ("sum f32 2^24", f"{K}(x: f32[N]) -> f32 {{ return sum(x) }}", {"N": 1 << 24}),
    ("mean f32 2^22", f"{K}(x: f32[N]) -> f32 {{ return mean(x) }}", {"N": 1 << 22}),
    ("sum f32 2^20", f"{K}(x: f32[N]) -> f32 {{ return sum(x) }}", {"N": 1 << 20}),
    ("norm f32 2^24", f"{K}(x: f32[N]) -> f32 {{ return sqrt(sum(x * x)) }}", {"N": 1 << 24}),
    ("sums of 8 rows f32", f"{K}(x: f32[M, N]) -> f32[M] {{ return sum(x, axis=N) }}", {"M": 8, "N": 1 << 22}),
]
VERSIONS = (False, "t0", "acqrel")


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    sources = {name: src for name, src, _ in CASES}
    for case, d in row_probe.prepared_lazily(CASES, sys.argv[1:]):
        if not d.last_block:
            print(f"{case.name}: its default {d.tag} has no last block; skipped", flush=True)
            continue
        sets, out = case.sets, case.out
        # a kernel of its own for each version, planned and compiled while FLAG names it (the
        # launcher's defaults, splits filling every SM's room included), then timed from its cache
        kernels, errors = {}, {}
        for v in VERSIONS:
            FLAG["on"] = v
            kv = kernels[v] = case.kernel if v is False else tiledsl.compile(sources[case.name])
            out.fill(float("nan"))
            got = cupy.asnumpy(kv(*sets[0], out=out)).astype(np.float64)
            errors[v] = relative_error(got, case.want) if not np.isnan(got).any() else float("nan")
        FLAG["on"] = False
        if any(PATCHED.pop(v, 0) == 0 for v in VERSIONS[1:]):
            raise SystemExit(f"{case.name}: a version was not patched (its kernel came from a cache?)")
        times = {v: [] for v in VERSIONS}
        for rnd in range(3):
            for v in (VERSIONS if rnd % 2 == 0 else VERSIONS[::-1]):
                kv = kernels[v]
                times[v].append(time_cuda(lambda i: kv(*sets[i], out=out), n_sets=len(sets),
                                          repeats=40, warmup_ms=30).median_us)
        print(f"{case.name} ({d.tag}, {case.nbytes >> 20} MiB):", flush=True)
        for v in VERSIONS:
            us = statistics.median(times[v])
            print(f"  {v or 'as is':8s} {us:8.2f} us {case.nbytes / us / 1e3 / copy:5.2f}x copy  "
                  f"[{' '.join('%.2f' % t for t in times[v])}]  err {errors[v]:.1e}", flush=True)
        case.sets = case.out = None


if __name__ == "__main__":
    main()
