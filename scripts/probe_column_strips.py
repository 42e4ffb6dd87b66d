"""Probe (device run): softmax over M of x[M, N] (N innermost) in ONE kernel, written by
hand, against tiledsl's default (split (m, s) partials, their combine, then the
elements: x read twice). A cluster of C blocks owns a strip of W columns; each block
a 1/C share of its rows. The blocks take their share's online (m, s) per column,
combine them in shared memory, then across the cluster through distributed shared
memory, and write the elements:
- keep: the share held in registers from the first pass (x read once);
- stream: the share read twice, the second time (in reverse) mostly from L2;
  `hint` marks the first reads evict_last, the second evict_first, and the stores
  streaming.
Every variant is checked against float64 first. Median microseconds of interleaved
rounds, and the ratio of x read once plus y written once to copy.

H200 2026-12-02 02:03 UTC (BENCHMARKS.md, "One kernel for softmax over M"): the best
streamed strips (W32 b256 C8 U8, hints) took 54.6 us at f32 4096x4096 against the
default's 62.7, 51.9 against 62.6 at 2048x8192, 62.9 against 65.2 at 16384x1024 and
15.7 against 30.9 at 1000x3000, but lost at f16 4096x4096 (52.4 against 50.1). Held in
registers (keep), x read once, every variant was slower (57-314 us): not adopted.

    python scripts/probe_column_strips.py [case names to keep]
"""
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda  # noqa: E402

HELPERS = open(os.path.join(os.path.dirname(__file__), "..", "templates", "tdsl.cuh")).read()

EXTRA = r"""
__device__ __forceinline__ unsigned long long policy_last() {
    unsigned long long p; asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p)); return p; }
__device__ __forceinline__ unsigned long long policy_first() {
    unsigned long long p; asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p)); return p; }
template <class T, int N> __device__ __forceinline__ tdsl::Vec<T, N> load_hint(const T* p, unsigned long long pol) {
    static_assert(sizeof(tdsl::Vec<T, N>) == 16, "16 bytes");
    unsigned a, b, c, d;
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(p), "l"(pol));
    unsigned u[4] = {a, b, c, d}; tdsl::Vec<T, N> v; memcpy(&v, u, 16); return v;
}
template <class T, int N> __device__ __forceinline__ void store_cs(T* p, const tdsl::Vec<T, N>& v) {
    unsigned u[4]; memcpy(u, &v, 16);
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(u[0]), "r"(u[1]), "r"(u[2]), "r"(u[3]) : "memory");
}
__device__ __forceinline__ float dsmem_load(const float* p, unsigned rank) {
    unsigned a = tdsl::smem_address(p), r; float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(r) : "memory");
    return v;
}
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }
"""

KERNEL = r"""
extern "C" __global__ void __cluster_dims__({C}, 1, 1) __launch_bounds__({THREADS}, {MINB})
{name}(const {S}* __restrict__ x, {S}* __restrict__ y, int M, int N) {{
    constexpr int VEC = {VEC}, LX = {LX}, W = LX * VEC, LY = {THREADS} / LX, C = {C}, U = {U};
    constexpr int WARPS = {THREADS} / 32;
    __shared__ float pm[WARPS][W], ps[WARPS][W];
    __shared__ float part_m[W], part_s[W], fin_m[W], fin_r[W];
    const int rank = blockIdx.x % C, strip = blockIdx.x / C;
    const int tx = threadIdx.x % LX, ty = threadIdx.x / LX;
    const int rows_per = (M + C - 1) / C;
    const int r0 = rank * rows_per, r1 = min(M, r0 + rows_per);
    const int col = strip * W + tx * VEC;
    const bool colok = col < N;
    float m[VEC], s[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) {{ m[e] = -tdsl::infinity(float()); s[e] = 0.f; }}
{pass1}
    // lanes of a warp that share columns differ in ty: fold them by shuffles, then the warps
#pragma unroll
    for (int e = 0; e < VEC; ++e) {{
#pragma unroll
        for (int off = LX; off < 32; off *= 2) {{
            const float m2 = __shfl_xor_sync(0xffffffffu, m[e], off), s2 = __shfl_xor_sync(0xffffffffu, s[e], off);
            tdsl::online_combine(m[e], s[e], m2, s2);
        }}
    }}
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane < LX) {{
#pragma unroll
        for (int e = 0; e < VEC; ++e) {{ pm[warp][tx * VEC + e] = m[e]; ps[warp][tx * VEC + e] = s[e]; }}
    }}
    __syncthreads();
    if (threadIdx.x < W) {{
        float a = pm[0][threadIdx.x], b = ps[0][threadIdx.x];
        for (int k = 1; k < WARPS; ++k) tdsl::online_combine(a, b, pm[k][threadIdx.x], ps[k][threadIdx.x]);
        part_m[threadIdx.x] = a; part_s[threadIdx.x] = b;
    }}
    cluster_arrive(); cluster_wait();
    if (threadIdx.x < W) {{
        float a = dsmem_load(&part_m[threadIdx.x], 0), b = dsmem_load(&part_s[threadIdx.x], 0);
        for (int k = 1; k < C; ++k) tdsl::online_combine(a, b, dsmem_load(&part_m[threadIdx.x], k), dsmem_load(&part_s[threadIdx.x], k));
        fin_m[threadIdx.x] = a; fin_r[threadIdx.x] = 1.0f / b;
    }}
    cluster_arrive();      // (this block's reads of the others' shared memory are done)
    __syncthreads();
    float fm[VEC], fr[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) {{ fm[e] = fin_m[tx * VEC + e]; fr[e] = fin_r[tx * VEC + e]; }}
{pass2}
    cluster_wait();        // (no block leaves while another may read its shared memory)
}}
"""

LOAD = {False: "tdsl::load<{S}, VEC>(x + (size_t)r * N + col)",
        True: "load_hint<{S}, VEC>(x + (size_t)r * N + col, {pol})"}


def widen(S):
    return "tdsl::f16_to_f32(v.v[e])" if S == "unsigned short" else "v.v[e]"


def narrow(S):
    return "tdsl::f32_to_f16(o)" if S == "unsigned short" else "o"


def write_held(S, hint):
    """The elements of the U rows held (held[u], row base + u * LY) written: exp(x - m) / s."""
    st = f"store_cs<{S}, VEC>(y + (size_t)r * N + col, o_v)" if hint else f"tdsl::store<{S}, VEC>(y + (size_t)r * N + col, o_v)"
    return f"""#pragma unroll
        for (int u = 0; u < U; ++u) {{
            const int r = base + u * LY;
            if (r < r1 && colok) {{
                const tdsl::Vec<{S}, VEC> v = held[u];
                tdsl::Vec<{S}, VEC> o_v;
#pragma unroll
                for (int e = 0; e < VEC; ++e) {{ const float o = tdsl::exp({widen(S)} - fm[e]) * fr[e]; o_v.v[e] = {narrow(S)}; }}
                {st};
            }}
        }}"""


def pass_keep(S, hint):
    ld = LOAD[hint].format(S=S, pol="policy_first()")
    p1 = f"""
    tdsl::Vec<{S}, VEC> held[U];
#pragma unroll
    for (int k = 0; k < U; ++k) {{
        const int r = r0 + ty + k * LY;
        if (r < r1 && colok) held[k] = {ld};
    }}
    float xs[VEC][U];
#pragma unroll
    for (int k = 0; k < U; ++k) {{
        const int r = r0 + ty + k * LY;
        const tdsl::Vec<{S}, VEC> v = held[k];
#pragma unroll
        for (int e = 0; e < VEC; ++e) xs[e][k] = (r < r1 && colok) ? {widen(S)} : -tdsl::infinity(float());
    }}
#pragma unroll
    for (int e = 0; e < VEC; ++e) tdsl::online_add_chunk(m[e], s[e], xs[e]);
"""
    p2 = f"""
    {{
        const int base = r0 + ty;
{write_held(S, hint)}
    }}
"""
    return p1, p2


def pass_stream(S, hint, rev):
    ld1 = LOAD[hint].format(S=S, pol="pol")
    ld2 = LOAD[hint].format(S=S, pol="pol2")
    p1 = f"""
    {"const unsigned long long pol = policy_last(), pol2 = policy_first();" if hint else ""}
    for (int base = r0 + ty; base < r1; base += LY * U) {{
        float xs[VEC][U];
#pragma unroll
        for (int u = 0; u < U; ++u) {{
            const int r = base + u * LY;
            if (r < r1 && colok) {{
                const tdsl::Vec<{S}, VEC> v = {ld1};
#pragma unroll
                for (int e = 0; e < VEC; ++e) xs[e][u] = {widen(S)};
            }} else {{
#pragma unroll
                for (int e = 0; e < VEC; ++e) xs[e][u] = -tdsl::infinity(float());
            }}
        }}
#pragma unroll
        for (int e = 0; e < VEC; ++e) tdsl::online_add_chunk(m[e], s[e], xs[e]);
    }}
"""
    order = "for (int k = chunks - 1; k >= 0; --k)" if rev else "for (int k = 0; k < chunks; ++k)"
    p2 = f"""
    const int chunks = (r1 - r0 + LY * U - 1) / (LY * U);
    {order} {{
        const int base = r0 + ty + k * LY * U;
        tdsl::Vec<{S}, VEC> held[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {{
            const int r = base + u * LY;
            if (r < r1 && colok) held[u] = {ld2};
        }}
{write_held(S, hint)}
    }}
"""
    return p1, p2


class Variant:
    def __init__(self, dtype, mode, lx, threads, C, U, hint=False, rev=True, minb=1):
        self.dtype, self.mode, self.lx, self.threads, self.C, self.U = dtype, mode, lx, threads, C, U
        self.hint, self.rev, self.minb = hint, rev, minb
        self.vec = 16 // np.dtype(dtype).itemsize
        self.W = lx * self.vec
        self.label = (f"{mode} W{self.W} b{threads} C{C} U{U}" + (" hint" if hint else "")
                      + ("" if rev or mode == "keep" else " fwd") + (f" mb{minb}" if minb > 1 else ""))
        self.name = "k_" + "".join(ch if ch.isalnum() else "_" for ch in self.label)

    def source(self):
        S = "float" if self.dtype == np.float32 else "unsigned short"
        p1, p2 = pass_keep(S, self.hint) if self.mode == "keep" else pass_stream(S, self.hint, self.rev)
        return KERNEL.format(name=self.name, S=S, VEC=self.vec, LX=self.lx, THREADS=self.threads, C=self.C,
                             U=self.U, MINB=self.minb, pass1=p1, pass2=p2)

    def launch(self, fn, x, y):
        M, N = x.shape
        strips = -(-N // self.W)
        fn((strips * self.C,), (self.threads,), (x, y, np.int32(M), np.int32(N)))


def variants_for(dtype, M, N):
    vec = 16 // np.dtype(dtype).itemsize
    out = []
    for lx in (8, 16):
        for threads in (256, 512):
            for C in (4, 8):
                out.append(Variant(dtype, "stream", lx, threads, C, 4, True))
    out.append(Variant(dtype, "stream", 8, 256, 8, 4, False))
    out.append(Variant(dtype, "stream", 8, 256, 8, 8, True))
    out.append(Variant(dtype, "stream", 16, 256, 8, 8, True))
    for lx in (4, 8):
        for threads in (256, 512, 1024):
            for C in (4, 8):
                rows = -(-M // C)
                ly = threads // lx
                U = -(-rows // ly)
                if U * vec <= 64:
                    out.append(Variant(dtype, "keep", lx, threads, C, U, hint=True))
    return out


SOFTMAX = "kernel f(x: {t}[M, N]) -> {t}[M, N] {{\n e = exp(x - max(x, axis=M))\n return e / sum(e, axis=M)\n}}"
CASES = [("f32 4096x4096", np.float32, 4096, 4096),
         ("f32 16384x1024", np.float32, 16384, 1024),
         ("f32 2048x8192", np.float32, 2048, 8192),
         ("f16 4096x4096", np.float16, 4096, 4096),
         ("f32 1000x3000", np.float32, 1000, 3000)]


def main():
    only = sys.argv[1:]
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    for name, dtype, M, N in CASES:
        if only and not any(o in name for o in only):
            continue
        tname = "f32" if dtype == np.float32 else "f16"
        k = tiledsl.compile(SOFTMAX.format(t=tname))
        nbytes = 2 * M * N * np.dtype(dtype).itemsize
        rng = np.random.default_rng(7)
        sets = [cp.asarray(rng.standard_normal((M, N)).astype(dtype) * 3) for _ in range(input_sets_needed(nbytes))]
        xd = sets[0].astype(cp.float64)
        e = cp.exp(xd - xd.max(axis=0))
        want = e / e.sum(axis=0)
        out = cp.empty((M, N), dtype=dtype)
        tol = 1e-5 if dtype == np.float32 else 2e-3

        def err():
            return float(cp.linalg.norm(out.astype(cp.float64) - want) / cp.linalg.norm(want))
        runs = {}
        out.fill(np.nan)
        k(sets[0], out=out)
        print(f"{name}: tiledsl default err {err():.1e}", flush=True)
        runs["tiledsl default"] = lambda i: k(sets[i], out=out)
        vs = variants_for(dtype, M, N)
        src = HELPERS + EXTRA + "".join(v.source() for v in vs)
        try:
            mod = cp.RawModule(code=src, options=("--std=c++17",))
        except Exception as ex:      # noqa: BLE001  (a probe: print and go on)
            print(f"{name}: compile failed: {str(ex)[:3000]}")
            continue
        for v in vs:
            try:
                fn = mod.get_function(v.name)
                out.fill(np.nan)
                v.launch(fn, sets[0], out)
                cp.cuda.Device().synchronize()
                e_ = err()
            except Exception as ex:      # noqa: BLE001
                print(f"  {v.label}: failed {str(ex)[:200]}")
                continue
            regs = fn.num_regs
            if not (e_ <= tol):
                print(f"  {v.label}: err {e_:.1e}, dropped", flush=True)
                continue
            runs[f"{v.label} r{regs} lm{fn.local_size_bytes}"] = (lambda v, fn: lambda i: v.launch(fn, sets[i], out))(v, fn)
        copy_out = cp.empty_like(sets[0])
        runs["copy of x"] = lambda i: cp.copyto(copy_out, sets[i])
        times = {}
        for _ in range(3):
            for label, f in runs.items():
                times.setdefault(label, []).append(time_cuda(f, n_sets=len(sets), repeats=15, warmup_ms=10).median_us)
        rows = sorted((statistics.median(t), label) for label, t in times.items())
        print(f"{name}:")
        for us, label in rows:
            print(f"  {label:44s} {us:8.1f} us {nbytes / us / 1e3 / copy:5.2f}x copy")
        sys.stdout.flush()
        sets = out = xd = e = want = None     # (device memory back before the next case)
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
