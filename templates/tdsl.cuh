// tiledsl device helpers. Plain CUDA C++, no headers: NVRTC finds none
// without the toolkit, so f16/bf16 conversions are inline PTX and the storage
// types are raw 16-bit words. f16/bf16 values live in registers as float.
#pragma once

typedef unsigned short tdsl_f16;
typedef unsigned short tdsl_bf16;
typedef long long tdsl_i64;

namespace tdsl {

// ---- 16-bit float conversions --------------------------------------------
// (#else: the same on a host compiler, for the CPU tests that run kernels there)
#ifdef __CUDA_ARCH__
__device__ __forceinline__ float f16_to_f32(unsigned short h) {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ unsigned short f32_to_f16(float f) {
    unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
__device__ __forceinline__ unsigned short f64_to_f16(double d) {
    unsigned short h; asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(d)); return h;
}
__device__ __forceinline__ unsigned short f32_to_bf16(float f) {
    unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
#else
inline float f16_to_f32(unsigned short h) { _Float16 x; memcpy(&x, &h, 2); return (float)x; }
inline unsigned short f32_to_f16(float f) { _Float16 x = (_Float16)f; unsigned short h; memcpy(&h, &x, 2); return h; }
inline unsigned short f64_to_f16(double d) { _Float16 x = (_Float16)d; unsigned short h; memcpy(&h, &x, 2); return h; }
inline unsigned short f32_to_bf16(float f) {      // to nearest, ties to even; NaN stays NaN
    unsigned u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
#endif
__device__ __forceinline__ float bf16_to_f32(unsigned short h) {
    return __uint_as_float(((unsigned int)h) << 16);
}
// Rounding through a narrow type (the semantics of a cast to f16/bf16).
__device__ __forceinline__ float round_f16(float x) { return f16_to_f32(f32_to_f16(x)); }
__device__ __forceinline__ float round_f16(double x) { return f16_to_f32(f64_to_f16(x)); }
__device__ __forceinline__ float round_bf16(float x) { return bf16_to_f32(f32_to_bf16(x)); }
__device__ __forceinline__ float round_bf16(double x) { return round_bf16((float)x); }

// ---- integer arithmetic that wraps, as NumPy's does ----------------------------
// Signed overflow is undefined in C++ and compilers fold on it (`x + 1 > x` became true,
// even for the largest int): ints add, subtract, multiply and negate as the unsigned type
// of their width, which wraps, and convert back. Narrower ints compute in int and wrap
// where they are stored; floats are untouched.
template <class T> struct Wrapped { typedef T type; };
template <> struct Wrapped<int> { typedef unsigned int type; };
template <> struct Wrapped<long long> { typedef unsigned long long type; };
template <class T> __device__ __forceinline__ T wrapping_add(T a, T b) {
    typedef typename Wrapped<T>::type U; return (T)((U)a + (U)b);
}
template <class T> __device__ __forceinline__ T wrapping_sub(T a, T b) {
    typedef typename Wrapped<T>::type U; return (T)((U)a - (U)b);
}
template <class T> __device__ __forceinline__ T wrapping_mul(T a, T b) {
    typedef typename Wrapped<T>::type U; return (T)((U)a * (U)b);
}
template <class T> __device__ __forceinline__ T wrapping_neg(T a) {
    typedef typename Wrapped<T>::type U; return (T)(-(U)a);
}

// ---- float -> integer casts -------------------------------------------------
// Toward zero, saturating at the type's range, NaN -> 0: what the hardware's conversion
// (cvt.rzi) gives for 32- and 64-bit results, extended to 8- and 16-bit ones, and what
// the reference interpreter computes. Written in defined C++: a plain cast of a value out
// of range is undefined, and a compiler may fold it (a literal's, say) to anything.
template <class T> struct IntRange;
template <> struct IntRange<signed char> { static constexpr signed char lo = -128, hi = 127; };
template <> struct IntRange<short> { static constexpr short lo = -32768, hi = 32767; };
template <> struct IntRange<int> { static constexpr int lo = -2147483647 - 1, hi = 2147483647; };
template <> struct IntRange<long long> {
    static constexpr long long lo = -9223372036854775807LL - 1, hi = 9223372036854775807LL;
};
template <> struct IntRange<unsigned char> { static constexpr unsigned char lo = 0, hi = 255; };
template <> struct IntRange<unsigned int> { static constexpr unsigned int lo = 0, hi = 4294967295u; };
template <class T, class F> __device__ __forceinline__ T to_int(F x) {
    // hi + 1 as F is exact (a power of two); every F below it truncates into range
    const F lo = (F)IntRange<T>::lo, past_hi = (F)IntRange<T>::hi + (F)1;
    if (x != x) return (T)0;
    if (x <= lo) return IntRange<T>::lo;
    if (x >= past_hi) return IntRange<T>::hi;
    return (T)x;
}
#ifdef __CUDA_ARCH__
// From f32, the hardware's own conversion is that cast in one instruction: PTX's cvt.rzi
// to an integer clamps to the destination's range and takes NaN to 0 (the GPU test of
// casts checks every edge). The compares above cost 4 instructions an element (an int8
// quantization of bf16 rows: 912 SASS instructions for 32 elements).
#define TDSL_TO_INT_RZI(T, R, C, ptx) \
    template <> __device__ __forceinline__ T to_int<T, float>(float x) { \
        R r; asm("cvt.rzi." ptx ".f32 %0, %1;" : "=" C(r) : "f"(x)); return (T)r; }
TDSL_TO_INT_RZI(signed char, short, "h", "s8")
TDSL_TO_INT_RZI(unsigned char, unsigned short, "h", "u8")
TDSL_TO_INT_RZI(short, short, "h", "s16")
TDSL_TO_INT_RZI(int, int, "r", "s32")
TDSL_TO_INT_RZI(unsigned int, unsigned, "r", "u32")
#undef TDSL_TO_INT_RZI
#endif

// The four f32 at a shared-memory address rounded to TF32 in place, to nearest
// (cvt.rna): wgmma would truncate them.
__device__ __forceinline__ void round_tf32_shared16(unsigned addr) {
    float f[4];
    unsigned t[4];
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(f[0]), "=f"(f[1]), "=f"(f[2]), "=f"(f[3]) : "r"(addr) : "memory");
#pragma unroll
    for (int i = 0; i < 4; ++i) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(t[i]) : "f"(f[i]));
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};"
                 :: "r"(addr), "r"(t[0]), "r"(t[1]), "r"(t[2]), "r"(t[3]) : "memory");
}

// ---- NaN-propagating max/min, as NumPy and PyTorch define them ------------
template <class T> __device__ __forceinline__ T maximum(T a, T b) { return (a > b || a != a) ? a : b; }
template <class T> __device__ __forceinline__ T minimum(T a, T b) { return (a < b || a != a) ? a : b; }
// f32 in one instruction (sm_80+): .NaN returns NaN if either operand is one.
#ifdef __CUDA_ARCH__
__device__ __forceinline__ float maximum(float a, float b) {
    float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}
__device__ __forceinline__ float minimum(float a, float b) {
    float r; asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}
#endif

// ---- math, overloaded for float and double ---------------------------------
#define TDSL_MATH(name, f32fn, f64fn) \
    __device__ __forceinline__ float name(float x) { return f32fn(x); } \
    __device__ __forceinline__ double name(double x) { return f64fn(x); }
TDSL_MATH(exp, expf, ::exp)
TDSL_MATH(exp2, exp2f, ::exp2)
TDSL_MATH(log, logf, ::log)
TDSL_MATH(log2, log2f, ::log2)
TDSL_MATH(sqrt, sqrtf, ::sqrt)
TDSL_MATH(sin, sinf, ::sin)
TDSL_MATH(cos, cosf, ::cos)
TDSL_MATH(tanh, tanhf, ::tanh)
TDSL_MATH(erf, erff, ::erf)
TDSL_MATH(erfc, erfcf, ::erfc)
TDSL_MATH(floor, floorf, ::floor)
TDSL_MATH(ceil, ceilf, ::ceil)
TDSL_MATH(abs, fabsf, ::fabs)
#undef TDSL_MATH
__device__ __forceinline__ float rsqrt(float x) { return 1.0f / sqrtf(x); }
__device__ __forceinline__ double rsqrt(double x) { return 1.0 / ::sqrt(x); }
__device__ __forceinline__ float pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double pow(double a, double b) { return ::pow(a, b); }
template <class T> __device__ __forceinline__ T abs(T x) { return x < 0 ? wrapping_neg(x) : x; }   // (ints)
template <class T> __device__ __forceinline__ T relu(T x) { return maximum(x, (T)0); }
template <class T> __device__ __forceinline__ T sigmoid(T x) { return (T)1 / ((T)1 + exp(-x)); }
template <class T> __device__ __forceinline__ T silu(T x) { return x / ((T)1 + exp(-x)); }
// 1 + erf(z) written as erfc(-z): no cancellation for negative inputs.
template <class T> __device__ __forceinline__ T gelu(T x) {
    return (T)0.5 * x * erfc(-x * (T)0.70710678118654752440);
}
template <class T> __device__ __forceinline__ T gelu_tanh(T x) {
    return (T)0.5 * x * ((T)1 + tanh((T)0.79788456080286535588 * (x + (T)0.044715 * x * x * x)));
}

// ---- math for values typed f16 or bf16 (held in f32) -------------------------
// Their 11 or 8 bits of mantissa need f32 math only within ~1e-5: the hardware's
// approximate exp2 and reciprocal, and erfc as t * exp(P(t) - z^2), t = 1 / (1 + z/2)
// (the form of Numerical Recipes' erfcc). A bf16 gelu took 55 instructions an element
// with erfcf: compute-bound at 0.48x copy on an H200.
#ifdef __CUDA_ARCH__      // (flushing subnormals: __expf and __fdividef rescale around them, 6 more instructions)
__device__ __forceinline__ float exp_narrow(float x) {
    float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.44269504088896340736f)); return r;
}
__device__ __forceinline__ float div_narrow(float a, float b) {
    float r; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b)); return a * r;
}
// exp for values that reach only 16-bit results through sums and quotients (cuda.py's
// APPROX_STEPS). Subnormal results are kept (no .ftz): a row's sum of them, all subnormal,
// is still divided by. ptxas scales around them: 5 instructions.
__device__ __forceinline__ float exp_approx(float x) {
    float r; asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x * 1.44269504088896340736f)); return r;
}
#else
__device__ __forceinline__ float exp_narrow(float x) { return expf(x); }
__device__ __forceinline__ float exp_approx(float x) { return expf(x); }
__device__ __forceinline__ float div_narrow(float a, float b) { return a / b; }
#endif
__device__ __forceinline__ float sigmoid_narrow(float x) { return div_narrow(1.0f, 1.0f + exp_narrow(-x)); }
__device__ __forceinline__ float silu_narrow(float x) { return div_narrow(x, 1.0f + exp_narrow(-x)); }
__device__ __forceinline__ float gelu_narrow(float x) {
    const float z = fabsf(x) * 0.70710678118654752440f;
    const float t = div_narrow(1.0f, 1.0f + 0.5f * z);
    // P: degree 7, fitted to log(erfc(z) / t) + z^2 over z in [0, 10] (within 4.9e-7 to
    // z = 4.5, past which only bf16 results stay above zero: 1.5e-5), P(1) = 0 in f32 so that
    // gelu(x) = x / 2 exactly near zero. Numerical Recipes' degree 9 (1.2e-7) cost 2 more FMAs
    // an element, which a 16-bit gelu pays: f16 / bf16 2^26 72.8 / 71.7 us against 69.5 /
    // 68.5 (H200 2026-12-02, scripts/probe_gelu.py); every finite f16 and bf16 x is checked
    // against the correctly rounded gelu (tests/test_host_kernels.py, on the GPU too).
    float p = -0.160792783f;
    p = fmaf(t, p, 0.633210123f); p = fmaf(t, p, -0.785437405f); p = fmaf(t, p, 0.139162928f);
    p = fmaf(t, p, 0.0791055486f); p = fmaf(t, p, 0.355529964f); p = fmaf(t, p, 1.00515282f);
    p = fmaf(t, p, -1.26593125f);
    const float e = t * exp_narrow(p - z * z);            // erfc(|x| / sqrt(2))
    return 0.5f * x * (x <= 0.0f ? e : 2.0f - e);         // x * erfc(-x / sqrt(2)) / 2
}

// ---- reductions ------------------------------------------------------------
struct Sum { template <class T> __device__ __forceinline__ static T combine(T a, T b) { return wrapping_add(a, b); } };
struct Max { template <class T> __device__ __forceinline__ static T combine(T a, T b) { return maximum(a, b); } };
struct Min { template <class T> __device__ __forceinline__ static T combine(T a, T b) { return minimum(a, b); } };

// A split reduction's combining thread: the partials load(k) for k = first, first + step,
// ... below end, handed to add() in that order, `n` loaded before any is added, so the
// thread waits on L2 once a batch rather than once a partial (8 pairs one after another:
// softmax over M's combine at f32 4096x4096 took 8.5 us, batched 6.6; H200, ncu).
template <int n, class Load, class Add>
__device__ __forceinline__ void in_batches(long long first, long long step, long long end, Load load, Add add) {
    typedef decltype(load(first)) V;
    for (long long k0 = first; k0 < end; k0 += n * step) {
        V v[n];
#pragma unroll
        for (int u = 0; u < n; ++u) v[u] = k0 + u * step < end ? load(k0 + u * step) : V();
#pragma unroll
        for (int u = 0; u < n; ++u)
            if (k0 + u * step < end) add(v[u]);
    }
}
// A partial; `fresh`: one that other blocks of this same kernel stored (a split finished by
// its last block), read through a volatile load, which L2 serves: a read-only path may not
// see stores made while the kernel runs.
template <bool fresh, class T> __device__ __forceinline__ T load_partial(const T* p) {
    if (fresh) return *(const volatile T*)p;
    return *p;
}
template <int n, class Op, bool fresh = false, class T>
__device__ __forceinline__ T combine_partials(T acc, const T* __restrict__ part, long long first, long long step,
                                              long long end, long long stride) {
    in_batches<n>(first, step, end, [&](long long k) { return load_partial<fresh>(part + k * stride); },
                  [&](T v) { acc = Op::combine(acc, v); });
    return acc;
}

// Combine across the `width` lanes of a warp (width a power of two <= 32).
template <class Op, int width, class T>
__device__ __forceinline__ T warp_reduce(T v) {
#pragma unroll
    for (int offset = width / 2; offset > 0; offset /= 2)
        v = Op::combine(v, static_cast<T>(__shfl_xor_sync(0xffffffffu, v, offset)));   // 8- and 16-bit ints shuffle as int
    return v;
}

// Combine across a whole block of `threads` threads; every thread gets the
// result. `scratch` holds one slot per warp, and one barrier orders its writes
// before its reads. A caller that reduces again (the next row) must pass the
// other of two such sets: a thread that writes a set again has passed the
// barrier of the call between, so every thread has read it by then. (A
// trailing barrier per call, to reuse one set at once, cost layernorm four
// barriers a row instead of two.)
// Any multiple of 32 threads: with a warp count that is no power of two, lane l
// also combines slot l + pow2 (pow2 the largest power of two below `warps`), so
// every slot counts once and no identity value is needed.
template <class Op, int threads, class T>
__device__ __forceinline__ T block_reduce(T v, T* scratch) {
    constexpr int warps = threads / 32;
    constexpr int pow2 = warps >= 32 ? 32 : warps >= 16 ? 16 : warps >= 8 ? 8 : warps >= 4 ? 4 : warps >= 2 ? 2 : 1;
    v = warp_reduce<Op, 32>(v);
    if (warps == 1) return v;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const int slot = lane % pow2;
    v = scratch[slot];
    if (warps != pow2 && slot + pow2 < warps) v = Op::combine(v, scratch[slot + pow2]);
    return warp_reduce<Op, pow2>(v);
}

// ---- online max and sum of exp(x - max) ---------------------------------------------
// A looped softmax's two statistics in one pass over the row (the max, then the sum of
// exp(x - max), would read it twice): s is kept relative to the running max m and
// rescaled when m grows. -inf elements add nothing (exp(-inf - m) is 0 for any finite
// m); a row of nothing else ends with m = -inf and s = 0, which `online_finish` turns
// into the NaN that exp(-inf - -inf) gives the two-pass form. A NaN element makes m
// and s NaN, as max and the sum would be.
__device__ __forceinline__ float infinity(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double infinity(double) { return __longlong_as_double(0x7ff0000000000000LL); }
// A thread adds a chunk of n elements at once: their max first (no chain through m
// element by element), one rescale of s, then n independent exps. Padding past the
// row's end is -inf. A +inf element makes s NaN (exp(inf - inf)), as two passes give.
// `approx`: the exps on ex2.approx.ftz, where the renderer finds their error hidden (cuda.py's
// below_row_max: a 16-bit softmax, a logsumexp); s stays at least 1, so nothing it flushes counts.
template <bool approx, class T> __device__ __forceinline__ T online_exp(T x) {
    if constexpr (approx && sizeof(T) == 4) return exp_narrow(x); else return exp(x);
}
template <bool approx = false, int n, class T> __device__ __forceinline__ void online_add_chunk(T& m, T& s, const T (&x)[n]) {
    T top = m;
#pragma unroll
    for (int i = 0; i < n; ++i) top = maximum(top, x[i]);
    if (top > -infinity(T()) || top != top) {     // all -inf so far: nothing to add
        // the chunk's exps summed apart, then added to s: a thread walking a long column alone
        // (100003 f32 in one chain through s: 4e-6 relative error on average, 1.2e-5 seen on an
        // H200) chains about n times fewer rounding errors into s, for the same adds
        const T kept = m > -infinity(T()) ? s * online_exp<approx>(m - top) : (T)0;
        T chunk = online_exp<approx>(x[0] - top);
#pragma unroll
        for (int i = 1; i < n; ++i) chunk += online_exp<approx>(x[i] - top);
        s = kept + chunk;
        m = top;
    }
}
template <class T> __device__ __forceinline__ void online_combine(T& m, T& s, T m2, T s2) {
    const T top = maximum(m, m2);
    const T a = m > -infinity(T()) ? s * exp(m - top) : (T)0;
    const T b = m2 > -infinity(T()) ? s2 * exp(m2 - top) : (T)0;
    m = top;
    s = (m != m) ? m : a + b;
}
// combine_partials for an online pair's partials (m at pm, s at ps).
template <class T> struct Pair { T m, s; };
template <int n, bool fresh = false, class T>
__device__ __forceinline__ void online_combine_partials(T& m, T& s, const T* __restrict__ pm, const T* __restrict__ ps,
                                                        long long first, long long step, long long end, long long stride) {
    in_batches<n>(first, step, end, [&](long long k) {
                      return Pair<T>{load_partial<fresh>(pm + k * stride), load_partial<fresh>(ps + k * stride)}; },
                  [&](Pair<T> v) { online_combine(m, s, v.m, v.s); });
}
template <class T> __device__ __forceinline__ void online_finish(T m, T& s, bool nonempty) {
    if (nonempty && !(m > -infinity(T())) && m == m) s = infinity(T()) - infinity(T());
}
// Combine across the `width` lanes of a warp (width a power of two <= 32).
template <int width, class T> __device__ __forceinline__ void online_warp_reduce(T& m, T& s) {
#pragma unroll
    for (int offset = width / 2; offset > 0; offset /= 2) {
        const T m2 = __shfl_xor_sync(0xffffffffu, m, offset), s2 = __shfl_xor_sync(0xffffffffu, s, offset);
        online_combine(m, s, m2, s2);
    }
}
// Across a block, as block_reduce: one slot pair per warp, one barrier, the other set of
// slots for the next row.
template <int threads, class T> __device__ __forceinline__ void online_block_reduce(T& m, T& s, T* ms, T* ss) {
    constexpr int warps = threads / 32;
    constexpr int pow2 = warps >= 32 ? 32 : warps >= 16 ? 16 : warps >= 8 ? 8 : warps >= 4 ? 4 : warps >= 2 ? 2 : 1;
    online_warp_reduce<32>(m, s);
    if (warps == 1) return;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) { ms[warp] = m; ss[warp] = s; }
    __syncthreads();
    const int slot = lane % pow2;
    m = ms[slot];
    s = ss[slot];
    if (warps != pow2 && slot + pow2 < warps) online_combine(m, s, ms[slot + pow2], ss[slot + pow2]);
    online_warp_reduce<pow2>(m, s);
}

// ---- tensor-core fragments ---------------------------------------------------------
__device__ __forceinline__ unsigned smem_address(const void* p) {
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
// Four 8x8 16-bit matrices; lane i gives the (32-bit shared) address of row i % 8
// of matrix i / 8. Kernels that step through stages by constants keep addresses.
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* row) {
    ldsm_x4(r, smem_address(row));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* row) {
    ldsm_x4_trans(r, smem_address(row));
}
// Two matrices (lanes 0-15 give the rows), plain or transposed.
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(smem_address(row)));
}
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned (&r)[2], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(smem_address(row)));
}

// 16 bytes from global to shared memory without passing through registers;
// with `valid` false the destination is zero-filled and nothing is read.
__device__ __forceinline__ void cp_async16_at(unsigned smem, const void* gmem, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"(smem), "l"(gmem), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
    cp_async16_at(smem_address(smem), gmem, valid);
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int pending> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" :: "n"(pending));
}
// The row ring reads its slots with plain loads; these three order them
// against the copies ("memory": no load moves across a wait or an issue).
#ifdef __CUDA_ARCH__
__device__ __forceinline__ void cp_async16_ordered(void* smem, const void* gmem) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_address(smem)), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit_ordered() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int pending> __device__ __forceinline__ void cp_async_wait_ordered() {
    asm volatile("cp.async.wait_group %0;" :: "n"(pending) : "memory");
}
#else   // a host copy lands at once
inline void cp_async16_ordered(void* smem, const void* gmem) { memcpy(smem, gmem, 16); }
inline void cp_async_commit_ordered() {}
template <int pending> inline void cp_async_wait_ordered() {}
#endif

// The block's dynamic shared memory (its size set by the launch: a row copied there).
#ifdef __CUDA_ARCH__
__device__ __forceinline__ unsigned char* dynamic_shared() {
    extern __shared__ __align__(16) unsigned char tdsl_dynamic_shared[];
    return tdsl_dynamic_shared;
}
#else   // (tests/host_cuda: the launch's buffer)
inline unsigned char* dynamic_shared() { return TDSL_HOST_DYNAMIC_SHARED(); }
#endif

// Output tile `pid` (launch order) of a tiles_m x tiles_n grid: row-major, or where
// `group` > 0 in bands of `group` tile rows, column by column within a band, so that
// blocks running together share their A rows and B columns in L2.
template <int group>
__device__ __forceinline__ void tile_of(int pid, int tiles_m, int tiles_n, int& tile_m, int& tile_n) {
    if (group == 0) {
        tile_m = pid / tiles_n;
        tile_n = pid % tiles_n;
        return;
    }
    const int width = group * tiles_n, first = (pid / width) * group, rows = min(tiles_m - first, group);
    tile_m = first + (pid % width) % rows;
    tile_n = (pid % width) / rows;
}

// A wgmma shared-memory matrix descriptor, 128-byte swizzle: the start address,
// the leading and stride byte offsets (each stored >> 4), swizzle mode 1.
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned addr, unsigned lead, unsigned stride) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lead >> 4) << 16)
         | ((unsigned long long)(stride >> 4) << 32) | (1ull << 62);
}

// ---- the tensor memory accelerator (sm_90) ---------------------------------------
// A tensor map as the driver encodes it (cuTensorMapEncodeTiled): 128 opaque bytes,
// passed by value as a __grid_constant__ parameter.
struct __align__(64) TmaMap { unsigned long long words[16]; };
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(arrivals) : "memory");
}
// One arrival that also expects `bytes` to land (the copies' complete_tx).
__device__ __forceinline__ void mbar_expect(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
// One arrival (a consumer releasing what the barrier guards).
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
// `cluster`: what other blocks of the cluster wrote before completing the phase (st.async)
// is seen too (acquire at cluster scope; the default acquires at the block's).
template <bool cluster = false>
__device__ __forceinline__ bool mbar_test(unsigned bar, unsigned parity) {
    unsigned done;
    if constexpr (cluster)
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    else
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done;
}
// Until phase `parity` of the barrier completes.
template <bool cluster = false>
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
    while (!mbar_test<cluster>(bar, parity)) {}
}
// The box at element coordinates (c0 innermost, c1) of `map` into shared memory at
// `dst`, counted against barrier `bar`; out-of-bounds elements arrive as zeros.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TmaMap* map, unsigned bar, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
                 :: "r"(dst), "l"(map), "r"(bar), "r"(c0), "r"(c1) : "memory");
}

// The same box into shared memory at `dst` of every block of the cluster in `blocks`
// (a bit a block), each counting it on its barrier at `bar` (the same offsets in each).
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const TmaMap* map, unsigned bar, int c0, int c1,
                                                      unsigned short blocks) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4}], [%2], %5;"
                 :: "r"(dst), "l"(map), "r"(bar), "r"(c0), "r"(c1), "h"(blocks) : "memory");
}
// This block's rank in its cluster.
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// One arrival on the barrier at offset `bar` of the cluster's block `rank` (this one's too).
// A consumer releasing a stage: what it read there it read by wgmma, waited for before this,
// so no fence of cluster scope (one costs a MEMBAR.ALL.GPU an arrival).
__device__ __forceinline__ void mbar_arrive_remote(unsigned bar, unsigned rank) {
    asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" :: "r"(bar), "r"(rank) : "memory");
}
// Every thread of every block of the cluster (those running) gets here before any goes on.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}

// A row shared by the C blocks of a cluster: each block's value (combined across its
// threads by block_reduce, so every thread holds it) goes into slot `rank` of every
// block's `slots`, thread k sending it to block k by st.async, whose bytes that block's
// barrier `bar` counts (its thread 0 arrives expecting C values). Once they have all
// landed every thread combines the C slots in rank order, so every block of the row gets
// the same bits. No cluster barrier: its release (MEMBAR.ALL.GPU) waited for the row's
// stores before each reduction. Callers alternate two sets of slots and barriers, as
// block_reduce's: a block sends into a set again only after it has received every
// block's value of the reduction between, each sent after the block_reduce barrier that
// follows its threads' reads of the set (st.async's complete_tx releases at cluster scope).
// The barriers are set up (cluster_barriers_init) and the kernel ends in cluster_sync.
__device__ __forceinline__ void cluster_barriers_init(unsigned bar, int count) {
    for (int i = 0; i < count; ++i) mbar_init(bar + 8 * i, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
template <class T> __device__ __forceinline__ void st_async_to(unsigned slot, T v, unsigned bar, unsigned rank) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "4- or 8-byte values");
    if constexpr (sizeof(T) == 4) {
        unsigned u;
        memcpy(&u, &v, 4);
        asm volatile("{\n.reg .b32 rs, rb;\nmapa.shared::cluster.u32 rs, %0, %3;\nmapa.shared::cluster.u32 rb, %2, %3;\n"
                     "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [rs], %1, [rb];\n}"
                     :: "r"(slot), "r"(u), "r"(bar), "r"(rank) : "memory");
    } else {
        unsigned long long u;
        memcpy(&u, &v, 8);
        asm volatile("{\n.reg .b32 rs, rb;\nmapa.shared::cluster.u32 rs, %0, %3;\nmapa.shared::cluster.u32 rb, %2, %3;\n"
                     "st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [rs], %1, [rb];\n}"
                     :: "r"(slot), "l"(u), "r"(bar), "r"(rank) : "memory");
    }
}
template <class Op, int C, class T>
__device__ __forceinline__ T cluster_reduce(T v, T* slots, unsigned long long* bar_word, unsigned parity) {
    const unsigned bar = smem_address(bar_word);
    if (threadIdx.x == 0) mbar_expect(bar, C * sizeof(T));
    if (threadIdx.x < C) st_async_to(smem_address(slots + cluster_rank()), v, bar, threadIdx.x);
    mbar_wait<true>(bar, parity);
    T r = slots[0];
#pragma unroll
    for (int k = 1; k < C; ++k) r = Op::combine(r, slots[k]);
    return r;
}

// Programmatic dependent launch (sm_90): a warm call launches each kernel to overlap the
// kernel before it in the stream (runtime/dependent.py). It is scheduled once every block of
// that one has said so (allow_dependents, or left), and waits (wait_for_primary) for that
// one's end and its writes before it touches memory. Both are no-ops in a kernel launched
// the usual way, and absent below sm_90.
__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_primary() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// Every kernel's first statement: wait for the kernel before it (where launched to overlap
// it), then let the kernel after it be scheduled: its blocks take SM room only once all of
// this one's are resident, and wait likewise.
__device__ __forceinline__ void follow_in_stream() {
    wait_for_primary();
    allow_dependents();
}

// A split's block counts itself finished on the stream's counter (thread 0, between two
// barriers): true in the block counted last, which then reads every block's partials. The
// add is a release and an acquire at gpu scope; a barrier before it orders the block's
// partials ahead of the count, the one after it orders the last block's reads behind it.
// One fence a block, not a sequentially consistent one in every thread: H100 2026-12-06
// (scripts/probe_split_epilogue.py), 0.4-0.9 us less a call (max f16 128 MiB 50.3 -> 49.4).
__device__ __forceinline__ bool counted_last(unsigned* done, unsigned blocks) {
#ifdef __CUDA_ARCH__
    unsigned before;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(before) : "l"(done) : "memory");
#else
    const unsigned before = atomicAdd(done, 1u);
#endif
    return before == blocks - 1;
}

// The same, from a 3-D map: c2 picks the product of a batch.
__device__ __forceinline__ void tma_load_3d(unsigned dst, const TmaMap* map, unsigned bar, int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
                 :: "r"(dst), "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2) : "memory");
}

// The other way: the box at (c0, c1) of `map` from shared memory at `src`, in the
// calling thread's bulk group; parts of the box out of bounds are not written. The
// writes to `src` must be fenced to the async proxy first (fence_proxy_async).
__device__ __forceinline__ void tma_store_2d(const TmaMap* map, unsigned src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 :: "l"(map), "r"(src), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Until the calling thread's bulk stores have read their shared memory (it may be written again).
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
// Until they are done (before the block's shared memory goes away).
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
// Generic-proxy writes to shared memory, made visible to the async proxy (TMA, wgmma).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

}  // namespace tdsl
