"""Probe (device run): does a row kernel fed by bulk copies (TMA's 1-D form,
`cp.async.bulk` into a ring of shared-memory stages, completed on mbarriers)
run rmsnorm f16 closer to the copy bandwidth than the register-streaming rows
tiledsl generates? Hand-written CUDA, outside the compiler, to decide whether
a template is worth building.

    python scripts/probe_bulk.py [--check-only]

Per shape: a copy of the same bytes, tiledsl's default, then the bulk-copy
kernel over threads T, rows per stage G, stages S and resident blocks per SM
k (persistent grid of k x SMs blocks). Each result is checked against float64.
`--check-only` compiles every variant with NVRTC (no GPU needed).

H200, 2026-11-22 about 13:08 UTC (copy 4230 GB/s): the bulk-copy rows lost at every
shape. 4096x8192: best 38.9 us (T512 S3) against tiledsl's 38.4; 16384x4096:
74.0 (T512 G2 S3) against 69.0; 65536x1024: 70.6 (T128 G2 S3, 3 a SM) against
68.4. A copy of the same bytes reached 0.90x, 0.94x, 0.94x of the 1 GiB copy,
and tiledsl's defaults 0.83x, 0.92x, 0.93x: the register-streamed rows already
keep enough bytes in flight, so no template was built."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SOURCE = r"""
#include "tdsl.cuh"
typedef unsigned long long u64;

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void bar_init(u64* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, u64* bar) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void bar_wait(u64* bar, unsigned parity) {
    unsigned done = 0;
    while (!done)
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
}

// rmsnorm over rows of C halves: G rows a stage (one bulk copy), T/G threads a row.
template <int T, int G, int C, int S>
__global__ void __launch_bounds__(T) rms_bulk(const unsigned short* __restrict__ x, const unsigned short* __restrict__ w,
                                              unsigned short* __restrict__ y, long long rows, float eps) {
    constexpr int ROW_BYTES = C * 2, STAGE_BYTES = G * ROW_BYTES, TG = T / G, V = C / (TG * 8);
    static_assert(V * TG * 8 == C, "a row splits evenly into 16-byte vectors");
    extern __shared__ __align__(128) unsigned char smem[];
    u64* bars = reinterpret_cast<u64*>(smem + S * STAGE_BYTES);
    float* partial = reinterpret_cast<float*>(bars + S);
    const int tid = threadIdx.x, g = tid / TG, t = tid % TG, lane = tid % 32, warp = tid / 32;
    const long long tiles = rows / G, step = gridDim.x;
    const long long mine = blockIdx.x < tiles ? (tiles - 1 - blockIdx.x) / step + 1 : 0;
    if (tid == 0) {
        for (int s = 0; s < S; ++s) bar_init(&bars[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        for (int s = 0; s < S && s < mine; ++s)
            bulk_load(smem + s * STAGE_BYTES, x + (blockIdx.x + s * step) * G * (long long)C, STAGE_BYTES, &bars[s]);
    }
    __syncthreads();
    uint4 wv[V];
#pragma unroll
    for (int j = 0; j < V; ++j) wv[j] = __ldg(reinterpret_cast<const uint4*>(w) + j * TG + t);
    for (long long i = 0; i < mine; ++i) {
        const int s = (int)(i % S);
        bar_wait(&bars[s], (unsigned)((i / S) & 1));
        const uint4* src = reinterpret_cast<const uint4*>(smem + s * STAGE_BYTES + g * ROW_BYTES);
        uint4 v[V];
        float acc = 0.f;
#pragma unroll
        for (int j = 0; j < V; ++j) {
            v[j] = src[j * TG + t];
            const unsigned* h = reinterpret_cast<const unsigned*>(&v[j]);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const float a = tdsl::f16_to_f32(h[k] & 0xffffu), b = tdsl::f16_to_f32(h[k] >> 16);
                acc += a * a + b * b;
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (TG > 32) {
            if (lane == 0) partial[warp] = acc;
            __syncthreads();
            acc = 0.f;
#pragma unroll
            for (int q = 0; q < TG / 32; ++q) acc += partial[g * (TG / 32) + q];
        }
        __syncthreads();   // every thread is done with stage s (and with `partial`)
        if (tid == 0 && i + S < mine) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            bulk_load(smem + s * STAGE_BYTES, x + (blockIdx.x + (i + S) * step) * G * (long long)C, STAGE_BYTES,
                      &bars[s]);
        }
        const float r = rsqrtf(acc * (1.0f / C) + eps);
        uint4* dst = reinterpret_cast<uint4*>(y + ((blockIdx.x + i * step) * G + g) * (long long)C);
#pragma unroll
        for (int j = 0; j < V; ++j) {
            const unsigned* h = reinterpret_cast<const unsigned*>(&v[j]);
            const unsigned* wh = reinterpret_cast<const unsigned*>(&wv[j]);
            uint4 o;
            unsigned* oh = reinterpret_cast<unsigned*>(&o);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const float a = tdsl::f16_to_f32(h[k] & 0xffffu) * r * tdsl::f16_to_f32(wh[k] & 0xffffu);
                const float b = tdsl::f16_to_f32(h[k] >> 16) * r * tdsl::f16_to_f32(wh[k] >> 16);
                oh[k] = tdsl::f32_to_f16(a) | ((unsigned)tdsl::f32_to_f16(b) << 16);
            }
            dst[j * TG + t] = o;
        }
    }
}
"""

TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")
SHAPES = {(4096, 8192): [(512, 1), (1024, 1)], (16384, 4096): [(256, 1), (512, 2)],
          (65536, 1024): [(128, 2), (256, 4), (512, 8)]}
STAGES = (2, 3, 4, 6)
PER_SM = (1, 2, 3, 4)
MAX_SMEM = 227 * 1024


def variants():
    for (rows, cols), tg in SHAPES.items():
        for t, g in tg:
            for s in STAGES:
                smem = s * g * cols * 2 + 8 * s + 4 * (t // 32)
                if smem <= MAX_SMEM:
                    yield (rows, cols), t, g, s, smem


def names():
    return sorted({f"rms_bulk<{t}, {g}, {c}, {s}>" for (_, c), t, g, s, _ in variants()})


def check_only():
    from tiledsl.runtime import toolchain
    src = SOURCE + "".join(f"template __global__ void {n}(const unsigned short*, const unsigned short*, unsigned short*, long long, float);\n"
                           for n in names())
    out = toolchain.compile_cuda(src, arch="sm_90a", name="probe_bulk.cu", include_dirs=(TEMPLATES,))
    for k, r in out.resources.items():
        print(k, r)


def main():
    import cupy as cp
    import tiledsl
    from benchmarks.bench_memory import RMSNORM_TDSL
    from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    l2 = dev.attributes["L2CacheSize"]
    print(cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode(), "SMs", sms)
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17", f"-I{TEMPLATES}"), name_expressions=names())
    rms = tiledsl.compile(RMSNORM_TDSL)
    copy_ref = copy_bandwidth(1 << 30, repeats=20)["gbps"]
    print(f"copy 1 GiB: {copy_ref:.0f} GB/s")
    rs = cp.random.default_rng()
    for (rows, cols), group in [((r, c), [v for v in variants() if v[0] == (r, c)]) for r, c in SHAPES]:
        nbytes = 2 * rows * cols * 2
        n_sets = input_sets_needed(nbytes, l2)
        xs = [rs.standard_normal((rows, cols), dtype=cp.float32).astype(cp.float16) for _ in range(n_sets)]
        ys = [cp.empty_like(x) for x in xs]
        w = rs.standard_normal(cols, dtype=cp.float32).astype(cp.float16)
        x64 = xs[0].astype(cp.float64)
        ref = x64 / cp.sqrt((x64 * x64).mean(axis=1, keepdims=True) + 1e-6) * w.astype(cp.float64)

        def err(y):
            e = float(cp.linalg.norm(y.astype(cp.float64) - ref) / cp.linalg.norm(ref))
            return e if e == e else float("inf")
        c = copy_bandwidth(nbytes // 2, repeats=20, rotate=True, warmup_ms=100)
        print(f"\n{rows}x{cols}: copy of the same bytes {c['gbps']:.0f} GB/s ({c['gbps'] / copy_ref:.3f}x of 1 GiB), "
              f"ideal at 1 GiB copy {nbytes / copy_ref / 1e3:.1f} us")

        def report(label, t, e):
            gbps = nbytes / (t * 1e-6) / 1e9
            print(f"  {label:28s} {t:7.1f} us {gbps:6.0f} GB/s {gbps / copy_ref:.3f}x copy  err {e:.1e}")
        ys[0].fill(float("nan"))
        rms(xs[0], w, out=ys[0])
        t = time_cuda(lambda i: rms(xs[i % n_sets], w, out=ys[i % n_sets]), n_sets=n_sets, repeats=30,
                      warmup_ms=200).median_us
        report("tiledsl default", t, err(ys[0]))
        for _, tt, g, s, smem in group:
            fn = mod.get_function(f"rms_bulk<{tt}, {g}, {cols}, {s}>")
            fn.max_dynamic_shared_size_bytes = smem
            for k in PER_SM:
                if k * (smem + 1024) > 228 * 1024 or k * tt > 2048 or k * tt * fn.num_regs > 65536:
                    continue
                grid = (min(rows // g, k * sms),)

                def launch(i, fn=fn, grid=grid, tt=tt, smem=smem):
                    fn(grid, (tt,), (xs[i % n_sets], w, ys[i % n_sets], cp.int64(rows), cp.float32(1e-6)),
                       shared_mem=smem)
                ys[0].fill(float("nan"))
                launch(0)
                e = err(ys[0])
                t = time_cuda(launch, n_sets=n_sets, repeats=30, warmup_ms=30).median_us
                report(f"bulk T{tt} G{g} S{s} k{k}", t, e)
        xs = ys = None      # (device memory back before the next case)
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    check_only() if "--check-only" in sys.argv else main()
