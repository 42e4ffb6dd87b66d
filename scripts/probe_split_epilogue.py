"""Probe (device run): what a split reduction's last block (Schedule.last_block, `_lb`) costs to
find itself. Every block of such a kernel ends with a barrier, thread 0's count on the stream's
counter (`tdsl::counted_last`: `atom.acq_rel.gpu`, SASS one MEMBAR.ALL.GPU, the atomic,
CCTL.IVALL) and a barrier. Text-patched beside it:

  sc      the form before 2026-12-06: a sequentially consistent fence in every thread
          (`__threadfence()`: MEMBAR.SC.GPU, CCTL.IVALL), the barrier, thread 0's atomicAdd, the
          barrier, and in the last block a second such fence;
  t0      the barrier first, then thread 0 alone fences, counts and (last block) fences again,
          as CUDA's cooperative groups sync a grid.

Each orders the block's partial stores before its count through the barrier (PTX memory model:
bar.sync, then a release at gpu scope by thread 0, is cumulative), and the last block's reads
after the count through its acquire and the barrier after it.

Beside them: `usual`, the kernel as is launched the usual way (TILEDSL_DEPENDENT_LAUNCH=0 while
its call class is planned), and for the 1-D maxima probe_full_reduce.py's hand-written kernels
at the configurations that led there (H100 2026-12-06 11:52: f16 128 MiB 48.5-49.0 us against
tiledsl's 50.4; f32 48.4-49.0 against 50.0).

H100 2026-12-06 11:55 (then `sc` as is; us, sc / t0 / acq_rel / best hand kernel): max f16
128 MiB 50.27 / 49.81 / 49.39 / 48.26; max f32 128 MiB 49.81 / 49.47 / 49.20 / 48.37; sum f32
64 MiB 29.28 / 28.78 / 28.54; mean f32 16 MiB 12.51 / 12.08 / 11.76; sums of 8 rows f32 128 MiB
49.33 / 48.91 / 48.48. Why: full reductions fit a fixed cost of 7-8 us a call over 3.03 TB/s
against ~4 us for a copy (probe_survey.py), and all of a one-wave split's blocks reach this
epilogue at once, with nothing left to overlap it.

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

OLD = """    __syncthreads();        // (the block's partials are stored before thread 0 counts it: tdsl::counted_last)
    if (threadIdx.x == 0) last = tdsl::counted_last(done, gridDim.x * gridDim.y);
    __syncthreads();
    if (!last) return;
"""
NEW = {
    "sc": """    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(done, 1u) == gridDim.x * gridDim.y - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
""",
    "t0": """    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(done, 1u) == gridDim.x * gridDim.y - 1;
        if (last) __threadfence();
    }
    __syncthreads();
    if (!last) return;
""",
}


PATCHED: dict = {}     # version -> kernels rendered patched so far (a check that the patch took;
                       # a later case of the same source and schedule reuses the patched kernel)


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
    ("max f32 2^25", f"{K}(x: f32[N]) -> f32 {{ return max(x) }}", {"N": 1 << 25}),
    ("max f32 2^22", f"{K}(x: f32[N]) -> f32 {{ return max(x) }}", {"N": 1 << 22}),
    ("sum f32 2^26", f"{K}(x: f32[N]) -> f32 {{ return sum(x) }}", {"N": 1 << 26}),
    ("sum f32 2^24", f"{K}(x: f32[N]) -> f32 {{ return sum(x) }}", {"N": 1 << 24}),
    ("mean f32 2^22", f"{K}(x: f32[N]) -> f32 {{ return mean(x) }}", {"N": 1 << 22}),
    ("sum f32 2^20", f"{K}(x: f32[N]) -> f32 {{ return sum(x) }}", {"N": 1 << 20}),
    ("norm f32 2^24", f"{K}(x: f32[N]) -> f32 {{ return sqrt(sum(x * x)) }}", {"N": 1 << 24}),
    ("sums of 8 rows f32", f"{K}(x: f32[M, N]) -> f32[M] {{ return sum(x, axis=N) }}", {"M": 8, "N": 1 << 22}),
]
VERSIONS = (False, "sc", "t0", "usual")
PATCHES = ("sc", "t0")
# probe_full_reduce.hand_kernel's (block, unroll, grid-strided) with the last block combining,
# its grid 2 blocks an SM
HAND = ((512, 1, False), (512, 4, False), (1024, 4, True))


def hand_versions(case) -> dict:
    """name -> (fn(i) running a hand-written max on input set i, its f32 result array), for 1-D
    maxima."""
    from probe_full_reduce import hand_kernel
    if not case.name.startswith("max "):
        return {}
    x = case.sets[0][0]
    mode = 2 if x.dtype == np.float32 else 1
    nvec = x.size * x.itemsize // 16
    grid = 2 * cupy.cuda.runtime.deviceGetAttribute(16, 0)
    counter, part, res = cupy.zeros(1, cupy.uint32), cupy.empty(grid, cupy.float32), cupy.empty(1, cupy.float32)
    out = {}
    for block, unroll, strided in HAND:
        pk, _ = hand_kernel(mode, block, unroll, strided, True)

        def run(i, pk=pk, block=block):
            pk((grid,), (block,), (case.sets[i][0], np.int64(nvec), part, counter, res))
        out[f"hand b{block} u{unroll}{' strided' if strided else ''}"] = (run, res)
    return out


def check_and_time(case, d, runs: dict, copy: float, width: int = 20) -> None:
    """Each of `runs` (name -> (fn(i) on input set i, the array it writes)) checked against
    float64 (its result poisoned first), then all timed in turn, three rounds (the order
    reversed every other round), and printed: median us, x copy, each round, the error."""
    errors = {}
    for name, (run, result) in runs.items():
        result.fill(float("nan"))
        run(0)
        got = cupy.asnumpy(result).astype(np.float64).reshape(np.shape(case.want))
        errors[name] = relative_error(got, case.want) if not np.isnan(got).any() else float("nan")
    times = {name: [] for name in runs}
    for rnd in range(3):
        for name in (list(runs) if rnd % 2 == 0 else list(runs)[::-1]):
            times[name].append(time_cuda(runs[name][0], n_sets=len(case.sets), repeats=40, warmup_ms=30).median_us)
    print(f"{case.name} ({d.tag}, {case.nbytes >> 20} MiB):", flush=True)
    for name in runs:
        us = statistics.median(times[name])
        print(f"  {name:{width}s} {us:8.2f} us {case.nbytes / us / 1e3 / copy:5.2f}x copy  "
              f"[{' '.join('%.2f' % t for t in times[name])}]  err {errors[name]:.1e}", flush=True)


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
        runs = {}
        for v in VERSIONS:
            FLAG["on"] = v if v in PATCHES else False
            kv = case.kernel if v is False else tiledsl.compile(sources[case.name])
            if v == "usual":
                os.environ["TILEDSL_DEPENDENT_LAUNCH"] = "0"
            kv(*sets[0], out=out)               # its call class planned (and launch mode chosen) now
            os.environ.pop("TILEDSL_DEPENDENT_LAUNCH", None)
            runs[v or "as is"] = (lambda i, kv=kv: kv(*sets[i], out=out)), out
        FLAG["on"] = False
        if any(PATCHED.get(v, 0) == 0 for v in PATCHES):
            raise SystemExit(f"{case.name}: a version was not patched (its kernel came from a cache?)")
        runs.update(hand_versions(case))
        check_and_time(case, d, runs, copy)
        case.sets = case.out = None


if __name__ == "__main__":
    main()
