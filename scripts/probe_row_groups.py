"""Probe (device run; kernels also compile on the CPU): does a wide layernorm gain
when a thread holds the same columns of R rows, so that the weights it reads for
its output serve R rows, not one?

Layernorm f16 at 4096x8192 with f32 weight and bias runs at 0.87x copy on an
H100 (Triton 0.87x), where rmsnorm at the same shape, with a block a row and
its lighter f16 weight loaded late, runs at 0.91x. A block a row that loads the
f32 weights late reads 64 KB of them a row (from L1 and L2) against 32 KB of
the row itself; the persistent default holds them in registers and has no room
left for more than one row in flight. Hand-written kernels, a block of THREADS
threads for R rows, each thread V 16-byte vectors of each row:

  r{R}_t{THREADS}_v{V}[_early][_cs]
    early: the weights' loads issued right after the rows' (held in registers
           through the reductions), not where the output needs them
    cs:    the outputs stored streaming (st.global.cs)

each checked against float64 (output poisoned, every element written), then
timed in interleaved rounds beside tiledsl's default and Triton's layernorm;
and persistent blocks (p{BPS}_...) that copy the weights into shared memory once
and prefetch their next rows.

H100 2026-12-07 17:06 (copy 3003 GB/s), µs, f32 weights: 4096x8192 two rows at
512 threads 51.0, one row at 256 threads of four vectors 51.3, Triton 51.4,
tiledsl's default 51.7; 8192x8192 95.1-95.3 / 95.4 / 95.8 / 97.2. Weights serving
two rows gain nothing over one row at four vectors; four rows, 1024 threads and
the persistent shared-memory forms were slower (56-80 µs at 4096x8192). What
came of it: shares.halved_heavy_share (four vectors at 256 threads on an H100).

    python scripts/probe_row_groups.py [M ...]       (default: 4096 8192)
    GROUPS_CPU=1 python scripts/probe_row_groups.py   (no GPU: registers and spills)
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

N = 8192
# (R, THREADS, V, min blocks an SM for launch bounds)
SHAPES = [(1, 512, 2, 2), (2, 512, 2, 2), (2, 256, 4, 2), (4, 512, 2, 1), (2, 1024, 1, 1),
          (4, 1024, 1, 1), (4, 256, 4, 1), (1, 256, 4, 4)]
FLAGS = [(), ("early",), ("cs",), ("early", "cs")]

KERNEL = r"""
extern "C" __global__ void __launch_bounds__({T}, {MINB})
{name}(const unsigned short* __restrict__ x, const {WT}* __restrict__ w, const {WT}* __restrict__ b,
       unsigned short* __restrict__ y, int M, float eps) {{
    constexpr int T = {T}, R = {R}, V = {V}, N = {N}, WARPS = T / 32, EARLY = {EARLY}, CS = {CS};
    __shared__ float red1[R][WARPS], red2[R][WARPS];
    const int tid = threadIdx.x;
    const long long row0 = (long long)blockIdx.x * R;
    uint4 raw[R][V];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int v = 0; v < V; ++v) {{
            const int col = (v * T + tid) * 8;
            raw[r][v] = row0 + r < M ? __ldg(reinterpret_cast<const uint4*>(x + (row0 + r) * N + col))
                                     : make_uint4(0u, 0u, 0u, 0u);
        }}
    float wv[EARLY ? V : 1][8], bv[EARLY ? V : 1][8];
    if (EARLY) {{
#pragma unroll
        for (int v = 0; v < V; ++v) load_weights(w, b, (v * T + tid) * 8, wv[EARLY ? v : 0], bv[EARLY ? v : 0]);
    }}
    float mean[R], rstd[R];
    row_stats<R, V, WARPS, N>(raw, red1, red2, eps, mean, rstd);
#pragma unroll
    for (int v = 0; v < V; ++v) {{
        const int col = (v * T + tid) * 8;
        float wl[8], bl[8];
        if (!EARLY) load_weights(w, b, col, wl, bl);
#pragma unroll
        for (int r = 0; r < R; ++r) {{
            if (row0 + r >= M) break;
            float f[8]; unpack(raw[r][v], f);
            unsigned o[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {{
                const float* ww = EARLY ? wv[EARLY ? v : 0] : wl;
                const float* bb = EARLY ? bv[EARLY ? v : 0] : bl;
                o[e] = pack2((f[2 * e] - mean[r]) * rstd[r] * ww[2 * e] + bb[2 * e],
                             (f[2 * e + 1] - mean[r]) * rstd[r] * ww[2 * e + 1] + bb[2 * e + 1]);
            }}
            const uint4 out = make_uint4(o[0], o[1], o[2], o[3]);
            uint4* dst = reinterpret_cast<uint4*>(y + (row0 + r) * N + col);
            if (CS) __stcs(dst, out); else *dst = out;
        }}
    }}
}}
"""

HELPERS = r"""
__device__ __forceinline__ float h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
    unsigned u; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(hi), "f"(lo)); return u; }
__device__ __forceinline__ void unpack(const uint4& u, float f[8]) {
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) { f[2 * i] = h2f((unsigned short)(w[i] & 0xffffu)); f[2 * i + 1] = h2f((unsigned short)(w[i] >> 16)); }
}
// The mean and 1/std of the R rows a block holds, each thread V vectors of 8 of each: one
// shuffle-and-shared-memory reduction for the sums, one for the squares about the mean.
template <int R, int V, int WARPS, int N>
__device__ __forceinline__ void row_stats(const uint4 (&raw)[R][V], float (&red1)[R][WARPS], float (&red2)[R][WARPS],
                                          float eps, float (&mean)[R], float (&rstd)[R]) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float s[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        s[r] = 0.f;
#pragma unroll
        for (int v = 0; v < V; ++v) { float f[8]; unpack(raw[r][v], f);
#pragma unroll
            for (int e = 0; e < 8; ++e) s[r] += f[e]; }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
#pragma unroll
        for (int r = 0; r < R; ++r) s[r] += __shfl_xor_sync(0xffffffffu, s[r], off);
    if (lane == 0) {
#pragma unroll
        for (int r = 0; r < R; ++r) red1[r][warp] = s[r];
    }
    __syncthreads();
    float q[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        float t = 0.f;
#pragma unroll
        for (int i = 0; i < WARPS; ++i) t += red1[r][i];
        mean[r] = t * (1.f / N);
        q[r] = 0.f;
#pragma unroll
        for (int v = 0; v < V; ++v) { float f[8]; unpack(raw[r][v], f);
#pragma unroll
            for (int e = 0; e < 8; ++e) { const float d = f[e] - mean[r]; q[r] += d * d; } }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
#pragma unroll
        for (int r = 0; r < R; ++r) q[r] += __shfl_xor_sync(0xffffffffu, q[r], off);
    if (lane == 0) {
#pragma unroll
        for (int r = 0; r < R; ++r) red2[r][warp] = q[r];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < R; ++r) {
        float t = 0.f;
#pragma unroll
        for (int i = 0; i < WARPS; ++i) t += red2[r][i];
        rstd[r] = rsqrtf(t * (1.f / N) + eps);
    }
}
__device__ __forceinline__ void load_weights(const float* w, const float* b, int col, float wv[8], float bv[8]) {
    const float4 w0 = __ldg(reinterpret_cast<const float4*>(w + col)), w1 = __ldg(reinterpret_cast<const float4*>(w + col + 4));
    const float4 b0 = __ldg(reinterpret_cast<const float4*>(b + col)), b1 = __ldg(reinterpret_cast<const float4*>(b + col + 4));
    wv[0] = w0.x; wv[1] = w0.y; wv[2] = w0.z; wv[3] = w0.w; wv[4] = w1.x; wv[5] = w1.y; wv[6] = w1.z; wv[7] = w1.w;
    bv[0] = b0.x; bv[1] = b0.y; bv[2] = b0.z; bv[3] = b0.w; bv[4] = b1.x; bv[5] = b1.y; bv[6] = b1.z; bv[7] = b1.w;
}
__device__ __forceinline__ void load_weights(const unsigned short* w, const unsigned short* b, int col, float wv[8], float bv[8]) {
    uint4 wu = __ldg(reinterpret_cast<const uint4*>(w + col)), bu = __ldg(reinterpret_cast<const uint4*>(b + col));
    unpack(wu, wv); unpack(bu, bv);
}
"""

# Persistent blocks (BPS an SM) that copy the weights into shared memory once (as f32: 64 KB)
# and prefetch their next group of rows into registers while they reduce this one.
PERSIST = r"""
extern "C" __global__ void __launch_bounds__({T}, {MINB})
{name}(const unsigned short* __restrict__ x, const {WT}* __restrict__ w, const {WT}* __restrict__ b,
       unsigned short* __restrict__ y, int M, float eps) {{
    constexpr int T = {T}, R = {R}, V = {V}, N = {N}, WARPS = T / 32, CS = {CS};
    extern __shared__ float4 weights_smem[];
    float* ws = reinterpret_cast<float*>(weights_smem);
    float* bs = ws + N;
    __shared__ float red1[R][WARPS], red2[R][WARPS];
    const int tid = threadIdx.x;
    const long long groups = (M + R - 1) / R;
    long long g = blockIdx.x;
    uint4 raw[R][V], nxt[R][V];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int v = 0; v < V; ++v) {{
            const long long row = g * R + r;
            raw[r][v] = g < groups && row < M ? __ldg(reinterpret_cast<const uint4*>(x + row * N + (v * T + tid) * 8))
                                              : make_uint4(0u, 0u, 0u, 0u);
        }}
    for (int c = tid * 8; c < N; c += T * 8) {{
        float wl[8], bl[8];
        load_weights(w, b, c, wl, bl);
#pragma unroll
        for (int e = 0; e < 8; ++e) {{ ws[c + e] = wl[e]; bs[c + e] = bl[e]; }}
    }}
    __syncthreads();
    for (; g < groups; g += gridDim.x) {{
        const long long gn = g + gridDim.x;
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int v = 0; v < V; ++v) {{
                const long long row = gn * R + r;
                if (gn < groups && row < M)
                    nxt[r][v] = __ldg(reinterpret_cast<const uint4*>(x + row * N + (v * T + tid) * 8));
            }}
        float mean[R], rstd[R];
        row_stats<R, V, WARPS, N>(raw, red1, red2, eps, mean, rstd);
#pragma unroll
        for (int v = 0; v < V; ++v) {{
            const int col = (v * T + tid) * 8;
            const float4 w0 = *reinterpret_cast<const float4*>(ws + col), w1 = *reinterpret_cast<const float4*>(ws + col + 4);
            const float4 b0 = *reinterpret_cast<const float4*>(bs + col), b1 = *reinterpret_cast<const float4*>(bs + col + 4);
            const float wl[8] = {{w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w}};
            const float bl[8] = {{b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w}};
#pragma unroll
            for (int r = 0; r < R; ++r) {{
                if (g * R + r >= M) break;
                float f[8]; unpack(raw[r][v], f);
                unsigned o[4];
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    o[e] = pack2((f[2 * e] - mean[r]) * rstd[r] * wl[2 * e] + bl[2 * e],
                                 (f[2 * e + 1] - mean[r]) * rstd[r] * wl[2 * e + 1] + bl[2 * e + 1]);
                const uint4 out = make_uint4(o[0], o[1], o[2], o[3]);
                uint4* dst = reinterpret_cast<uint4*>(y + (g * R + r) * N + col);
                if (CS) __stcs(dst, out); else *dst = out;
            }}
        }}
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int v = 0; v < V; ++v) raw[r][v] = nxt[r][v];
    }}
}}
"""
# (R, THREADS, V, blocks an SM)
PERSIST_SHAPES = [(1, 512, 2, 2), (1, 512, 2, 3), (1, 256, 4, 3), (2, 512, 2, 2), (1, 1024, 1, 2), (2, 1024, 1, 1)]
SHARED_BYTES = 2 * N * 4


def variants(weight: str):
    wt = {"f32": "float", "f16": "unsigned short"}[weight]
    out = []
    for r, t, v, minb in SHAPES:
        assert t * v * 8 == N
        for flags in FLAGS:
            label = f"r{r}_t{t}_v{v}" + "".join("_" + f for f in flags)
            name = f"ln_{weight}_{label}"
            out.append((label, name, t, r, KERNEL.format(
                name=name, T=t, R=r, V=v, N=N, MINB=minb, WT=wt,
                EARLY=int("early" in flags), CS=int("cs" in flags)), 0))
    for r, t, v, bps in PERSIST_SHAPES:
        for flags in ((), ("cs",)):
            label = f"p{bps}_r{r}_t{t}_v{v}" + "".join("_" + f for f in flags)
            name = f"ln_{weight}_{label}"
            out.append((label, name, t, r, PERSIST.format(
                name=name, T=t, R=r, V=v, N=N, MINB=bps, WT=wt, CS=int("cs" in flags)), bps))
    return out


def source(weight: str) -> str:
    return HELPERS + "\n".join(v[4] for v in variants(weight))


def cpu_report():
    from tiledsl.runtime import toolchain
    for weight in ("f32", "f16"):
        res = toolchain.compile_cuda(source(weight), arch="sm_90a").resources
        for label, name, *_ in variants(weight):
            u = res[name]
            print(f"{weight} {label:24s} regs {u.registers:3d} local {u.local_bytes} shared {u.shared_bytes}")


def main():
    if os.environ.get("GROUPS_CPU"):
        return cpu_report()
    import cupy as cp
    import numpy as np
    import torch
    import tiledsl
    from benchmarks import triton_peers
    from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda

    rows_list = [int(a) for a in sys.argv[1:]] or [4096, 8192]
    keep = os.environ.get("GROUPS_KEEP", "").split()
    copy = copy_bandwidth(1 << 30, warmup_ms=200)["gbps"]
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    print(f"copy {copy:.0f} GB/s on {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    lib = os.path.join(os.path.dirname(__file__), "..", "examples", "layernorm.tdsl")
    src_f32 = open(lib).read()
    src_f16 = src_f32.replace("w: f32[N], b: f32[N]", "w: f16[N], b: f16[N]")
    assert src_f16 != src_f32
    rng = np.random.default_rng()
    for weight, src in (("f32", src_f32), ("f16", src_f16)):
        mod = cp.RawModule(code=source(weight), options=("-std=c++17",))
        kern = tiledsl.compile(src)
        wdt = cp.float32 if weight == "f32" else cp.float16
        for m in rows_list:
            n_sets = input_sets_needed(2 * m * N * 2)
            sets = []
            for _ in range(n_sets):
                x = cp.asarray(rng.standard_normal((m, N)) * 2 + 0.5, dtype=cp.float16)
                w = cp.asarray(rng.standard_normal(N) * 0.5 + 1, dtype=wdt)
                b = cp.asarray(rng.standard_normal(N) * 0.1, dtype=wdt)
                sets.append((x, w, b, cp.empty((m, N), cp.float16)))
            x, w, b, _ = sets[0]
            x64 = x.astype(cp.float64)
            mu = x64.mean(axis=1, keepdims=True)
            xc = x64 - mu
            ref = xc / cp.sqrt((xc * xc).mean(axis=1, keepdims=True) + 1e-5) * w.astype(cp.float64) + b.astype(cp.float64)

            def err(y):
                if bool(cp.isnan(y).any()):
                    return float("nan")
                return float(cp.linalg.norm(y.astype(cp.float64) - ref) / cp.linalg.norm(ref))

            calls = {}
            tw = [tuple(torch.from_dlpack(a) for a in s) for s in sets]
            calls["tiledsl"] = lambda i: kern(*sets[i][:3], out=sets[i][3])
            calls["triton"] = lambda i: triton_peers.layernorm(tw[i][0], tw[i][1], tw[i][2], 1e-5, out=tw[i][3])
            for label, name, t, r, _, bps in variants(weight):
                if keep and label not in keep:
                    continue
                f = mod.get_function(name)
                grid, shared = ((m + r - 1) // r,), 0
                if bps:                 # persistent: the resident blocks, the weights in shared memory
                    f.max_dynamic_shared_size_bytes = shared = SHARED_BYTES
                    grid = (min(grid[0], sms * bps),)
                calls[label] = (lambda f, grid, t, shared: lambda i: f(
                    grid, (t,), (sets[i][0], sets[i][1], sets[i][2], sets[i][3], np.int32(m), np.float32(1e-5)),
                    shared_mem=shared))(f, grid, t, shared)
            ok = {}
            for label, call in calls.items():
                sets[0][3].fill(float("nan"))
                call(0)
                torch.cuda.synchronize()
                cp.cuda.Device().synchronize()
                e = err(sets[0][3])
                ok[label] = e <= 2e-3
                if not ok[label]:
                    print(f"  {weight} {m}x{N} {label}: rel error {e:.3g}: not timed")
            labels = [k for k in calls if ok[k]]
            times = {k: [] for k in labels}
            for rnd in range(3):
                order = labels[rnd % len(labels):] + labels[:rnd % len(labels)]
                for k in order:
                    times[k].append(time_cuda(calls[k], n_sets=n_sets, warmup=3, repeats=20,
                                              warmup_ms=30).median_us)
            byte = 2 * m * N * 2
            print(f"layernorm f16 x, {weight} w b, {m}x{N} (× 1 GiB copy; rounds)")
            for k in sorted(labels, key=lambda k: statistics.median(times[k])):
                us = statistics.median(times[k])
                print(f"  {k:26s} {us:7.1f} µs  {byte / us / 1e3 / copy:.3f}×  "
                      + " ".join(f"{t:.1f}" for t in times[k]))
            for held in (sets, tw, calls):     # free this shape's arrays before the next
                held.clear()
            cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
