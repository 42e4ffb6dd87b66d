"""Probe (device run): softmax over rows too long for two of them to sit in an SM's
registers (vocab logits: f16 4096x50257 is 100 KB a row). tiledsl held such a row in
the registers of one block of 1024 threads, one block an SM, so an SM's load, its two
reductions and its stores followed one another and HBM idled between (0.69x copy,
H200 2026-12-02). With --hand, a hand-written softmax copies each thread's share of its row
into shared memory (cp.async, 16-byte vectors, in CH groups so the max starts on the
first) and reads it back in each phase; no barrier but the reductions', as every thread
reads only what it copied. Rows of 100 KB leave room for two blocks an SM, so one
block's loads overlap the other's reductions. Timed against tiledsl's default, its
fastest tuner candidate at that shape, torch.softmax, Triton's textbook softmax and a
copy of the same bytes; three interleaved rounds, median microseconds, each result
checked against float64 first.

    python scripts/probe_long_rows.py --hand [names to keep]    (on the GPU)
    python scripts/probe_long_rows.py --check-only          (NVRTC, no GPU: registers, spills)

Without --hand, the compiler's own form (Schedule.shared_row, rows.shared_row_schedule) at
row lengths around the rule's threshold: the default before the rule (the rule turned off),
the default now, and every row copied into shared memory that the tuner offers (no explicit
unroll), each checked against float64 first (scripts/row_probe.py).

H200 2026-12-02: by hand (11:30), f16 4096x50257 263.8 us held -> 213.8 copied at 512
threads (0.91x copy; torch 349.5, Triton 663.5); the compiler's own (11:51) 222.7. The
rule's reach at 2048 rows (11:42): BENCHMARKS.md, "Rows too long to hold two an SM,
copied into shared memory".
"""
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())

KERNEL = r"""
#include "tdsl.cuh"
struct F16 { unsigned short v; };    // storage types: tdsl.cuh's conversions (NVRTC has no toolkit headers)
struct BF16 { unsigned short v; };
typedef %(T)s T;
// a module of its own for each row size (%(SMEM)d bytes): the shared-memory limit is set on the function
constexpr int BLOCK = %(BLOCK)d, MINB = %(MINB)d, CH = %(CH)d, VE = 16 / sizeof(T), NW = BLOCK / 32;
__device__ __forceinline__ float tof(F16 a) { return tdsl::f16_to_f32(a.v); }
__device__ __forceinline__ float tof(BF16 a) { return tdsl::bf16_to_f32(a.v); }
__device__ __forceinline__ float tof(float a) { return a; }
__device__ __forceinline__ void put(F16& p, float v) { p.v = tdsl::f32_to_f16(v); }
__device__ __forceinline__ void put(BF16& p, float v) { p.v = tdsl::f32_to_bf16(v); }
__device__ __forceinline__ void put(float& p, float v) { p = v; }
union Vec { uint4 u; T e[VE]; };
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ void cp16(void* s, const void* g) {
    asm volatile("cp.async.cg.shared.global [%%0], [%%1], 16;"
                 :: "r"((unsigned)__cvta_generic_to_shared(s)), "l"(g) : "memory");
}
template <int N> __device__ __forceinline__ void wait_groups() {
    asm volatile("cp.async.wait_group %%0;" :: "n"(N) : "memory");
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// one row a block: s[g - base] holds element g of the flat array (base = the row's start
// rounded down to a vector), so the row's whole vectors land 16-byte aligned in both
extern "C" __global__ void __launch_bounds__(BLOCK, MINB) staged_rows(const T* __restrict__ x, T* __restrict__ y,
                                                                long long n) {
    extern __shared__ __align__(16) unsigned char smem[];
    T* s = reinterpret_cast<T*>(smem);
    __shared__ float red_m[NW], red_s[NW];
    const int tid = threadIdx.x, lane = tid %% 32, warp = tid / 32;
    const long long start = (long long)blockIdx.x * n, end = start + n, base = start / VE * VE;
    const long long a0 = min(end, (start + VE - 1) / VE * VE), a1 = max(a0, end / VE * VE);
    const int nv = (int)((a1 - a0) / VE), per = (nv + CH - 1) / CH;
    T* sv = s + (a0 - base);
#pragma unroll
    for (int c = 0; c < CH; ++c) {
        const int hi = min(nv, (c + 1) * per);
        for (int v = c * per + tid; v < hi; v += BLOCK)
            cp16(sv + (long long)v * VE, x + a0 + (long long)v * VE);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    // the ragged elements (before the first whole vector and after the last): one a thread
    const int head = (int)(a0 - start), tail = (int)(end - a1);
    const bool ragged = tid < head + tail;
    const long long rg = tid < head ? start + tid : a1 + (tid - head);
    const float rv = ragged ? tof(x[rg]) : NEG_INF;
    float m = rv;
#pragma unroll
    for (int c = 0; c < CH; ++c) {
        if (CH - 1 - c == 0) wait_groups<0>(); else if (CH - 1 - c == 1) wait_groups<1>();
        else if (CH - 1 - c == 2) wait_groups<2>(); else if (CH - 1 - c == 3) wait_groups<3>();
        else wait_groups<7>();
        const int hi = min(nv, (c + 1) * per);
        for (int v = c * per + tid; v < hi; v += BLOCK) {
            Vec a; a.u = *reinterpret_cast<const uint4*>(sv + (long long)v * VE);
#pragma unroll
            for (int k = 0; k < VE; ++k) m = fmaxf(m, tof(a.e[k]));
        }
    }
    m = warp_max(m);
    if (lane == 0) red_m[warp] = m;
    __syncthreads();
    m = warp_max(lane < NW ? red_m[lane] : NEG_INF);
    const float ml = m * 1.4426950408889634f;
    float sum = ragged ? exp2f(rv * 1.4426950408889634f - ml) : 0.f;
    for (int v = tid; v < nv; v += BLOCK) {
        Vec a; a.u = *reinterpret_cast<const uint4*>(sv + (long long)v * VE);
#pragma unroll
        for (int k = 0; k < VE; ++k) sum += exp2f(tof(a.e[k]) * 1.4426950408889634f - ml);
    }
    sum = warp_sum(sum);
    if (lane == 0) red_s[warp] = sum;
    __syncthreads();
    sum = warp_sum(lane < NW ? red_s[lane] : 0.f);
    const float inv = 1.f / sum;
    for (int v = tid; v < nv; v += BLOCK) {
        Vec a; a.u = *reinterpret_cast<const uint4*>(sv + (long long)v * VE);
#pragma unroll
        for (int k = 0; k < VE; ++k) put(a.e[k], exp2f(tof(a.e[k]) * 1.4426950408889634f - ml) * inv);
        *reinterpret_cast<uint4*>(y + a0 + (long long)v * VE) = a.u;
    }
    if (ragged) put(y[rg], exp2f(rv * 1.4426950408889634f - ml) * inv);
}
"""

CTYPE = {"f16": "F16", "bf16": "BF16", "f32": "float"}
TEMPLATES = os.path.join(os.getcwd(), "templates")
CASES = [("f16", 4096, 50257), ("bf16", 4096, 50257), ("f16", 4096, 32000), ("f32", 4096, 25000)]
CHECK_ROWS = 256        # rows checked against float64 (every element is checked for the NaN poison)
VARIANTS = [(1024, 1), (1024, 4), (512, 1), (512, 4), (256, 4)]     # threads, copy groups
SMEM_PER_SM = 227 * 1024
TUNED = "row_b512_v8_i0_t512_2p"


def softmax_src(t):
    return f"kernel f(x: {t}[M, N]) -> {t}[M, N] {{\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}}"


def source(t, block, ch, per_sm=2, smem=0):
    """The kernel for dtype t, `block` threads, `ch` copy groups, registers for `per_sm` blocks an SM."""
    return KERNEL % {"T": CTYPE[t], "BLOCK": block, "MINB": max(1, min(per_sm, 2048 // block)), "CH": ch,
                     "SMEM": smem}


def smem_bytes(t, n):
    size = {"f16": 2, "bf16": 2, "f32": 4}[t]
    return (n + 16 // size) * size


def check_only():
    from tiledsl.runtime import toolchain
    for t in ("f16", "bf16", "f32"):
        for block, ch in VARIANTS:
            out = toolchain.compile_cuda(source(t, block, ch), arch="sm_90a", name="probe_long_rows.cu",
                                         include_dirs=(TEMPLATES,))
            for k, r in out.resources.items():
                print(t, block, ch, k, r)


def main():
    import cupy as cp
    import numpy as np
    import tiledsl
    from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda
    from tiledsl.inputs import relative_error
    from tiledsl.runtime.launcher import _sm_count, device_arch, hbm_bandwidth, set_overrides
    from tiledsl.schedule import choose
    from tiledsl.schedule.problem import problem as group_problem
    import torch
    from benchmarks import triton_peers     # (its Triton import is guarded: available() says)
    ok = triton_peers.available()[0]
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    only = [a for a in sys.argv[1:] if not a.startswith("-")]
    cases = []
    for t, m, n in CASES:
        name = f"softmax {t} {m}x{n}"
        if only and not any(o in name for o in only):
            continue
        itemsize = 2 if t != "f32" else 4
        nbytes = 2 * m * n * itemsize
        x = cp.random.default_rng(m + n).standard_normal((m, n), dtype=cp.float32) * 3
        if t == "bf16":     # bf16's bits, truncated from f32
            x = (x.view(cp.uint32) >> 16).astype(cp.uint16)
        sets = [x.astype(cp.float16) if t == "f16" else x.copy() for _ in range(input_sets_needed(nbytes))]
        del x
        want = reference(t, sets[0][:CHECK_ROWS])
        out = cp.empty_like(sets[0])
        impls = {}
        k = tiledsl.compile(softmax_src(t))
        tview = (lambda a: torch.as_tensor(a, device="cuda").view(torch.bfloat16)) if t == "bf16" else \
            (lambda a: torch.as_tensor(a, device="cuda"))
        tsets, tout = [tview(s) for s in sets], tview(out)
        kin = [tsets[i] if t == "bf16" else sets[i] for i in range(len(sets))]
        kout = tout if t == "bf16" else out
        impls["tiledsl"] = lambda i, k=k, kin=kin, kout=kout: k(kin[i], out=kout)
        k(kin[0], out=kout)
        launcher = k._launcher
        prob = group_problem(launcher.groups[0], launcher.layouts[0], {"M": m, "N": n}, sm_count=_sm_count(0),
                             arch=device_arch(0), hbm_gbps=hbm_bandwidth(0))
        for sched in choose.candidates(prob, k.hints):
            if sched.tag.startswith(TUNED):    # the tuner's fastest at f16 4096x50257 (probe_survey, 2026-12-02)
                k2 = tiledsl.compile(softmax_src(t))
                k2(kin[0], out=kout)        # (its launcher exists from the first call)
                set_overrides(k2._launcher, {0: sched})
                impls[f"candidate {sched.tag}"] = lambda i, k2=k2, kin=kin, kout=kout: k2(kin[i], out=kout)
                break
        for block, ch in VARIANTS:
            smem = smem_bytes(t, n)
            if smem > SMEM_PER_SM:
                continue
            per_sm = min(2048 // block, SMEM_PER_SM // (smem + 1024))
            mod = cp.RawModule(code=source(t, block, ch, per_sm, smem), options=("-std=c++17", "--use_fast_math", f"-I{TEMPLATES}"))
            fn = mod.get_function("staged_rows")
            fn.max_dynamic_shared_size_bytes = smem
            impls[f"staged b{block} ch{ch} ({per_sm}/SM)"] = (
                lambda i, fn=fn, block=block, smem=smem, sets=sets, out=out, m=m, n=n:
                fn((m,), (block,), (sets[i], out, np.int64(n)), shared_mem=smem))
        impls["torch (allocating)"] = lambda i, tsets=tsets: torch.softmax(tsets[i], dim=-1)
        if ok:
            impls["triton"] = lambda i, tsets=tsets, tout=tout: triton_peers.softmax(tsets[i], out=tout)
        impls["copy"] = lambda i, sets=sets, out=out: cp.copyto(out, sets[i])
        for label, f in list(impls.items()):
            if label in ("copy", "torch (allocating)"):
                continue
            out.fill(0xFFFF if t == "bf16" else float("nan"))     # NaN
            try:
                f(0)
                err = relative_error(values(t, out[:CHECK_ROWS]), want)
                if bool(cp.isnan(out).any() if t != "bf16" else ((out & 0x7FFF) > 0x7F80).any()):
                    err = float("nan")      # an element left unwritten (poisoned)
            except Exception as ex:    # noqa: BLE001 - a peer that cannot run this shape
                err = float("nan")
                print(f"{name} {label}: {type(ex).__name__}: {str(ex)[:200]}", flush=True)
            if not err <= {"f16": 2e-3, "bf16": 1e-2, "f32": 1e-5}[t]:
                print(f"{name} {label}: error {err:.2e}, dropped", flush=True)
                del impls[label]
        cases.append((name, nbytes, impls))
    times = {}
    for r in range(3):
        for name, nbytes, impls in cases:
            for label, f in list(impls.items()):
                try:
                    t = time_cuda(f, n_sets=input_sets_needed(nbytes), repeats=20, warmup_ms=20)
                except Exception as ex:    # noqa: BLE001
                    print(f"{name} {label}: {type(ex).__name__}: {str(ex)[:200]}", flush=True)
                    del impls[label]
                    continue
                times.setdefault((name, label), []).append(t.median_us)
                print(f"round {r} {name} {label} {t.median_us:.1f} us", flush=True)
    for name, nbytes, impls in cases:
        print(name, flush=True)
        for label in impls:
            us = statistics.median(times[(name, label)])
            print(f"  {label:44s} {us:8.1f} us {nbytes / us / 1e3 / copy:5.2f}x copy", flush=True)


def values(t, a):
    """float64 values of a device array of dtype t (bf16 held as its 16 bits)."""
    import cupy as cp
    import numpy as np
    h = cp.asnumpy(a)
    return ((h.astype(np.uint32) << 16).view(np.float32) if t == "bf16" else h).astype(np.float64)


def reference(t, a):
    """softmax over each row of a (device array of dtype t) in float64."""
    import numpy as np
    x = values(t, a)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


SOFTMAX = "kernel s(x: {t}[M, N]) -> {t}[M, N] {{\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}}"
COMPILER_CASES = (
    [(f"softmax f16 {n}", SOFTMAX.format(t="f16"), {"M": 2048, "N": n}) for n in (32000, 36000, 40000, 45000, 50257)]
    + [(f"softmax f32 {n}", SOFTMAX.format(t="f32"), {"M": 2048, "N": n}) for n in (18000, 20000, 25000, 28000)]
    + [("softmax bf16 50257", SOFTMAX.format(t="bf16"), {"M": 2048, "N": 50257}),
       ("layernorm bf16 40000", "kernel n(x: bf16[M, N], w: f32[N], b: f32[N]) -> bf16[M, N] {\n m = mean(x, axis=N)\n"
        " d = x - m\n return bf16(d * rsqrt(mean(d * d, axis=N) + 1e-5) * w + b)\n}", {"M": 2048, "N": 40000}),
       ("rmsnorm f16 50000", "kernel r(x: f16[M, N], w: f16[N]) -> f16[M, N] "
        "{ return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }", {"M": 2048, "N": 50000}),
       ("logsumexp f16 50257", "kernel l(x: f16[M, N]) -> f32[M] {\n m = max(f32(x), axis=N)\n"
        " return m + log(sum(exp(f32(x) - m), axis=N))\n}", {"M": 2048, "N": 50257})])


def compiler_main():
    from scripts import row_probe
    from tiledsl.schedule import choose, rows

    def variants_of(case, d):
        with row_probe.constants(rows, SHARED_ROW_HELD_BYTES=1 << 40):
            before = choose.default(case.problem, case.kernel.hints)
        out = {"before": before, "default": d}
        for s in choose.candidates(case.problem, case.kernel.hints):
            if s.shared_row and not s.unroll:
                out[f"shared {s.block}{'' if s.online else ' 2p'}"] = s
        return out
    row_probe.run(COMPILER_CASES, variants_of, label_width=16)


if __name__ == "__main__":
    if "--check-only" in sys.argv:
        check_only()
    elif "--hand" in sys.argv:
        main()
    else:
        compiler_main()
