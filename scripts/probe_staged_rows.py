"""Probe (device run): short rows whose length breaks 16-byte alignment (ViT's 197, 129,
257, ...). tiledsl reads them element by element (a warp or half of one a row) at
0.54-0.75x copy; peeled per row it lost. Here a hand-written softmax that reads a block's
rows as one span (they are contiguous) in aligned 16-byte vectors into shared memory,
each warp then takes its rows from there, and the block writes the span back in vectors,
timed against tiledsl's default, torch.softmax, Triton and a copy of the same bytes.
Three interleaved rounds, median microseconds.

    python scripts/probe_staged_rows.py
"""
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda  # noqa: E402
from tiledsl.inputs import relative_error  # noqa: E402

KERNEL = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef %(T)s T;
__device__ __forceinline__ float tof(__half v) { return __half2float(v); }
__device__ __forceinline__ float tof(float v) { return v; }
__device__ __forceinline__ void put(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void put(float* p, float v) { *p = v; }
constexpr int L = %(L)d, R = %(R)d, BLOCK = %(BLOCK)d, TPR = %(TPR)d, ITEMS = (L + TPR - 1) / TPR;
constexpr int VE = 16 / sizeof(T), RPB_W = BLOCK / TPR;
#define NEG_INF __int_as_float(0xff800000)

// the block's span [start, end) of a flat array, s[off + i] <-> element start + i; off = start %% VE keeps vectors aligned in both
template <bool LOAD>
__device__ __forceinline__ void move_span(T* __restrict__ s, T* __restrict__ g, long long start, long long end, int off) {
    const long long a0 = min(end, (start + VE - 1) / VE * VE), a1 = max(a0, end / VE * VE);
    for (int i = threadIdx.x; i < a0 - start; i += BLOCK) { if (LOAD) s[off + i] = g[start + i]; else g[start + i] = s[off + i]; }
    for (int i = threadIdx.x; i < end - a1; i += BLOCK) {
        const int k = off + (int)(a1 - start) + i;
        if (LOAD) s[k] = g[a1 + i]; else g[a1 + i] = s[k];
    }
    uint4* gv = (uint4*)(g + a0);
    uint4* sv = (uint4*)(s + off + (a0 - start));
    const int nv = (int)((a1 - a0) / VE);
#pragma unroll 4
    for (int v = threadIdx.x; v < nv; v += BLOCK) { if (LOAD) sv[v] = __ldg(gv + v); else gv[v] = sv[v]; }
}

extern "C" __global__ void __launch_bounds__(BLOCK) staged(const T* __restrict__ x, T* __restrict__ y, long long nrows) {
    __shared__ __align__(16) T s[R * L + 2 * VE];
    const long long row0 = (long long)blockIdx.x * R;
    const int nr = (int)min((long long)R, nrows - row0);
    const long long start = row0 * L, end = start + (long long)nr * L;
    const int off = (int)(start %% VE);
    move_span<true>(s, (T*)x, start, end, off);
    __syncthreads();
    const int lane = threadIdx.x %% TPR;
    for (int r = threadIdx.x / TPR; r < nr; r += RPB_W) {
        T* row = s + off + r * L;
        float v[ITEMS];
        float m = NEG_INF;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const int c = lane + j * TPR;
            v[j] = c < L ? tof(row[c]) : NEG_INF;
            m = fmaxf(m, v[j]);
        }
#pragma unroll
        for (int o = TPR / 2; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) { v[j] = __expf(v[j] - m); sum += v[j]; }
#pragma unroll
        for (int o = TPR / 2; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        const float inv = 1.f / sum;
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const int c = lane + j * TPR;
            if (c < L) put(row + c, v[j] * inv);
        }
    }
    __syncthreads();
    move_span<false>(s, y, start, end, off);
}
"""


def softmax_src(t):
    return f"kernel f(x: {t}[M, N]) -> {t}[M, N] {{\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}}"


CASES = [("f16", 75648, 197), ("f16", 262144, 129), ("f16", 131072, 257), ("f16", 65536, 385),
         ("f16", 65536, 513), ("f16", 131072, 256), ("f32", 75648, 197), ("f32", 131072, 257)]
VARIANTS = [(16, 256, 32), (32, 256, 32), (64, 256, 32), (32, 256, 16), (64, 512, 32)]   # rows a block, threads, threads a row


def main():
    import torch
    sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
    try:
        import triton_peers
        ok, _ = triton_peers.available()
    except Exception:
        ok = False
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    cases = []
    for t, m, n in CASES:
        if len(sys.argv) > 1 and not any(a in f"{t} {m}x{n}" for a in sys.argv[1:]):
            continue
        npdt = np.float16 if t == "f16" else np.float32
        rng = np.random.default_rng(m + n)
        host = rng.standard_normal((m, n)).astype(npdt)
        x64 = host.astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        want = e / e.sum(axis=1, keepdims=True)
        nbytes = 2 * host.nbytes
        sets = [cp.asarray(host) for _ in range(input_sets_needed(nbytes))]
        out = cp.empty_like(sets[0])
        impls = {}
        k = tiledsl.compile(softmax_src(t))
        impls["tiledsl"] = lambda i, k=k, sets=sets, out=out: k(sets[i], out=out)
        for r, block, tpr in VARIANTS:
            if r * n * host.itemsize > 48 * 1024:
                continue
            mod = cp.RawModule(code=KERNEL % {"T": "__half" if t == "f16" else "float", "L": n, "R": r,
                                              "BLOCK": block, "TPR": tpr},
                               options=("-std=c++17", "--use_fast_math"))
            fn = mod.get_function("staged")
            grid = ((m + r - 1) // r,)
            impls[f"staged r{r} b{block} t{tpr}"] = (
                lambda i, fn=fn, grid=grid, block=block, sets=sets, out=out, m=m: fn(grid, (block,), (sets[i], out, np.int64(m))))
        tsets = [torch.as_tensor(s, device="cuda") for s in sets]
        tout = torch.as_tensor(out, device="cuda")
        impls["torch (allocating)"] = lambda i, tsets=tsets: torch.softmax(tsets[i], dim=-1)
        if ok:
            impls["triton"] = lambda i, tsets=tsets, tout=tout: triton_peers.softmax(tsets[i], out=tout)
        impls["copy"] = lambda i, sets=sets, out=out: cp.copyto(out, sets[i])
        for name, f in list(impls.items()):
            if name in ("copy", "torch (allocating)"):
                continue
            out.fill(float("nan"))
            f(0)
            got = cp.asnumpy(out).astype(np.float64)
            err = relative_error(got, want)
            if not err <= (2e-3 if t == "f16" else 1e-5):
                print(f"{t} {m}x{n} {name}: error {err:.2e}, dropped", flush=True)
                del impls[name]
        cases.append((f"softmax {t} {m}x{n}", nbytes, impls))
    times = {}
    for _ in range(3):
        for name, nbytes, impls in cases:
            for label, f in impls.items():
                sets_n = input_sets_needed(nbytes)
                t = time_cuda(f, n_sets=sets_n, repeats=20, warmup_ms=20)
                times.setdefault((name, label), []).append(t.median_us)
    for name, nbytes, impls in cases:
        print(name, flush=True)
        for label in impls:
            us = statistics.median(times[(name, label)])
            print(f"  {label:22s} {us:8.1f} us {nbytes / us / 1e3 / copy:5.2f}x copy", flush=True)


if __name__ == "__main__":
    main()
