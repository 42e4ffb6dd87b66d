"""Probe (device run): two ways a pointwise pass could take more of its reads from L2,
timed with hand-written kernels (outside the compiler) beside tiledsl's defaults:

1. column softmax (softmax over M of f32 x[M, N]): tiledsl's one-pass (m, s) split over
   chunks of rows, then the elements' pass reading x again. The split's blocks all run at
   once, each walking its chunk of rows in order, so the rows left in L2 at its end are
   the last of every chunk. The elements' pass is timed with its rows in order, reversed,
   and "chunk-reversed" (the last row of every chunk first, as the split left them).
2. a broadcast add, x[B, S] + p[S] with p of 4 MiB (served from L2 at every b): flat, as
   tiledsl's pointwise kernel walks it, against each thread loading its vector of p once
   for R rows of x.

    python scripts/probe_l2_order.py [columns]     (columns: the column softmax too;
                                                    L2ORDER_HAND=1: the hand-written adds too)
"""
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, time_cuda  # noqa: E402
from tiledsl.schedule.choose import default  # noqa: E402
from tiledsl.schedule.problem import problem  # noqa: E402
from tiledsl.runtime.launcher import _sm_count, hbm_bandwidth  # noqa: E402

COLSM = "kernel c(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=M))\n return e / sum(e, axis=M)\n}"
STATS = "kernel st(x: f32[M, N]) -> (f32[N], f32[N]) {\n m = max(x, axis=M)\n return m, sum(exp(x - m), axis=M)\n}"
ELEMENTS = r'''
extern "C" __global__ void __launch_bounds__(256) elements(const float4* __restrict__ x, const float4* __restrict__ m,
        const float4* __restrict__ s, float4* __restrict__ out, int rows, int colvecs, int chunk, int order) {
    const int blocks_a_row = colvecs / 256;
    const int q = blockIdx.x / blocks_a_row, cv = (blockIdx.x % blocks_a_row) * 256 + threadIdx.x;
    int row = q;
    if (order == 1) row = rows - 1 - q;
    if (order == 2) {       // the last row of every chunk first
        const int chunks = (rows + chunk - 1) / chunk, pos = q / chunks, k = q % chunks;
        row = k * chunk + (chunk - 1 - pos);
        if (row >= rows) return;
    }
    const long long at = (long long)row * colvecs + cv;
    float4 v = x[at], mm = m[cv], ss = s[cv], r;
    r.x = __expf(v.x - mm.x) / ss.x; r.y = __expf(v.y - mm.y) / ss.y;
    r.z = __expf(v.z - mm.z) / ss.z; r.w = __expf(v.w - mm.w) / ss.w;
    out[at] = r;
}
'''
BIAS = r'''
extern "C" __global__ void __launch_bounds__(128) flat(const float4* __restrict__ x, const float4* __restrict__ p,
        float4* __restrict__ out, long long total, long long svecs) {
    const long long first = (long long)blockIdx.x * 256 + threadIdx.x;
    float4 a[2], b[2];
    #pragma unroll
    for (int j = 0; j < 2; ++j) { long long t = first + j * 128; if (t < total) { a[j] = x[t]; b[j] = p[t % svecs]; } }
    #pragma unroll
    for (int j = 0; j < 2; ++j) { long long t = first + j * 128; if (t < total) {
        float4 r; r.x = a[j].x + b[j].x; r.y = a[j].y + b[j].y; r.z = a[j].z + b[j].z; r.w = a[j].w + b[j].w;
        out[t] = r; } }
}
template <int R> __device__ void reuse(const float4* __restrict__ x, const float4* __restrict__ p,
        float4* __restrict__ out, int brows, long long svecs) {
    const long long v = (long long)blockIdx.x * 128 + threadIdx.x;
    if (v >= svecs) return;
    const int b0 = blockIdx.y * R;
    const float4 q = p[v];
    float4 a[R];
    #pragma unroll
    for (int r = 0; r < R; ++r) if (b0 + r < brows) a[r] = x[(long long)(b0 + r) * svecs + v];
    #pragma unroll
    for (int r = 0; r < R; ++r) if (b0 + r < brows) {
        float4 o; o.x = a[r].x + q.x; o.y = a[r].y + q.y; o.z = a[r].z + q.z; o.w = a[r].w + q.w;
        out[(long long)(b0 + r) * svecs + v] = o; }
}
extern "C" __global__ void __launch_bounds__(128) reuse2(const float4* x, const float4* p, float4* out, int b, long long s) { reuse<2>(x, p, out, b, s); }
extern "C" __global__ void __launch_bounds__(128) reuse4(const float4* x, const float4* p, float4* out, int b, long long s) { reuse<4>(x, p, out, b, s); }
extern "C" __global__ void __launch_bounds__(128) reuse8(const float4* x, const float4* p, float4* out, int b, long long s) { reuse<8>(x, p, out, b, s); }
'''


def timed(runs: dict, n_sets: int, rounds: int = 3) -> dict:
    times = {label: [] for label in runs}
    for _ in range(rounds):
        for label, fn in runs.items():
            times[label].append(time_cuda(fn, n_sets=n_sets, repeats=20, warmup_ms=20).median_us)
    return {label: statistics.median(t) for label, t in times.items()}


def column_softmax(m: int, n: int, copy: float) -> None:
    rng = np.random.default_rng()
    sets = [cp.asarray(rng.standard_normal((m, n), np.float32)) for _ in range(3)]
    want = cp.exp(sets[0] - sets[0].max(axis=0)); want /= want.sum(axis=0)
    full, stats = tiledsl.compile(COLSM), tiledsl.compile(STATS)
    out = cp.empty_like(sets[0])
    full(sets[0], out=out)
    mm, ss = stats(sets[0])
    L = stats._launcher
    p = problem(L.groups[0], L.layouts[0], dict(M=m, N=n), frozenset(), _sm_count(0), "sm_90a", hbm_bandwidth(0))
    chunk = -(-m // default(p).splits)
    mod = cp.RawModule(code=ELEMENTS, options=("-std=c++17",))
    el = mod.get_function("elements")
    padded = -(-m // chunk) * chunk     # (chunk-reversed: every chunk's slots, those past the rows idle)

    def run(order):
        grid = ((padded if order == 2 else m) * (n // 1024),)

        def call(i):
            a, b = stats(sets[i], out=(mm, ss))
            el(grid, (256,), (sets[i], a, b, out, np.int32(m), np.int32(n // 4), np.int32(chunk), np.int32(order)))
        return call
    for order in (0, 1, 2):
        out.fill(cp.nan)
        run(order)(0)
        err = float(cp.linalg.norm(out - want) / cp.linalg.norm(want))
        assert err < 1e-5, (order, err)
    res = timed({"tiledsl default": lambda i: full(sets[i], out=out), "stats + rows in order": run(0),
                 "stats + rows reversed": run(1), "stats + chunks reversed": run(2),
                 "stats alone": lambda i: stats(sets[i], out=(mm, ss))}, len(sets))
    nbytes = 2 * m * n * 4
    print(f"column softmax f32 {m}x{n} (chunks of {chunk} rows):")
    for label, us in res.items():
        print(f"  {label:24s} {us:7.1f} us {nbytes / us / 1e3 / copy:5.2f}x copy", flush=True)


def broadcast_add(b: int, s: int, copy: float, dtype=np.float32) -> None:
    """x[B, S] + p[S]: tiledsl's default and its flat and outer walks pinned (Schedule.outer:
    the compiler's form of the reuse above), and with L2ORDER_HAND set the hand-written kernels."""
    from dataclasses import replace
    from tiledsl.runtime.launcher import set_overrides
    rng = np.random.default_rng()
    sets = [(cp.asarray(rng.standard_normal((b, s), np.float32)).astype(dtype),
             cp.asarray(rng.standard_normal(s, np.float32)).astype(dtype)) for _ in range(2)]
    name = "f32" if dtype == np.float32 else "f16"
    src = f"kernel f(x: {name}[B, S], p: {name}[S]) -> {name}[B, S] {{ return x + p }}"
    k = tiledsl.compile(src)
    out = cp.empty_like(sets[0][0])
    k(*sets[0], out=out)
    L = k._launcher
    p = problem(L.groups[0], L.layouts[0], dict(B=b, S=s), frozenset(), _sm_count(0), "sm_90a", hbm_bandwidth(0))
    d = default(p)
    flat = replace(d, outer=False, items=2)
    pins = {f"tiledsl default {d.tag}": None, f"tiledsl flat {flat.tag}": flat}
    pins.update({f"tiledsl outer {r}": replace(flat, outer=True, items=r) for r in (2, 4, 8) if r <= b})

    def pinned(n, schedule):     # a kernel object a schedule: a warm call keeps the plan it was made with
        km = tiledsl.compile(src + f"\n# pin {n}\n")
        km(*sets[0], out=out)
        if schedule:
            set_overrides(km._launcher, {0: schedule})
        return lambda i: km(*sets[i], out=out)
    runs = {label: pinned(n, sch) for n, (label, sch) in enumerate(pins.items())}
    if dtype == np.float32 and os.environ.get("L2ORDER_HAND"):     # the hand-written kernels too
        mod = cp.RawModule(code=BIAS, options=("-std=c++17",))
        total, svecs = b * s // 4, s // 4
        runs["flat (hand)"] = lambda i: mod.get_function("flat")(((total + 255) // 256,), (128,),
                                                                 (*sets[i], out, np.int64(total), np.int64(svecs)))
        for r in (2, 4, 8):
            runs[f"p once for {r} rows (hand)"] = (lambda fn, r: lambda i: fn(
                ((svecs + 127) // 128, -(-b // r)), (128,),
                (*sets[i], out, np.int32(b), np.int64(svecs))))(mod.get_function(f"reuse{r}"), r)
    want = (sets[0][0].astype(cp.float64) + sets[0][1].astype(cp.float64)).astype(dtype)
    for label, fn in runs.items():
        out.fill(cp.nan)
        fn(0)
        assert bool(cp.all(out == want)), label
    res = timed(runs, len(sets))
    nbytes = (2 * b * s + s) * np.dtype(dtype).itemsize
    print(f"x[B, S] + p[S], {name} {b}x{s} (p {s * np.dtype(dtype).itemsize / 2**20:.1f} MiB):")
    for label, us in res.items():
        print(f"  {label:34s} {us:7.1f} us {nbytes / us / 1e3 / copy:5.2f}x copy", flush=True)


if __name__ == "__main__":
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    if "columns" in sys.argv[1:]:
        for m, n in ((4096, 4096), (16384, 1024), (2048, 8192)):
            column_softmax(m, n, copy)
    for b, s in ((8, 1 << 22), (32, 1 << 20), (16, 1 << 21), (32, 1 << 21), (4, 1 << 23), (64, 1 << 21),
                 (256, 1 << 17)):
        broadcast_add(b, s, copy)
    for b, s in ((8, 1 << 22), (16, 1 << 22)):
        broadcast_add(b, s, copy, np.float16)
