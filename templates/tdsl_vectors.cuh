// tiledsl device helpers, continued (tdsl.cuh: inserted right after it, as it is): vector
// loads and stores, and a peeled row's weights shifted by its head.

namespace tdsl {

// ---- vector memory access ----------------------------------------------------
// N elements of T as one aligned access (16 bytes at most: LDG.128/STG.128).
template <class T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };

// Lane e of a packed bf16 vector widened from its 32-bit word: the low half shifted up,
// the high half masked. The vector stays packed; widening each 16-bit lane on its own,
// ptxas first moved every lane into a register of its own (PRMT), doubling the row's.
template <int N>
__device__ __forceinline__ float bf16_lane(const Vec<unsigned short, N>& v, int e) {
    if constexpr (N % 2 != 0) {
        return bf16_to_f32(v.v[e]);
    } else {
        unsigned w;
        memcpy(&w, &v.v[e & ~1], 4);
        return __uint_as_float(e & 1 ? (w & 0xffff0000u) : (w << 16));
    }
}

#ifndef __CUDA_ARCH__     // on a host, a misaligned vector traps as it faults on the GPU
#define TDSL_ALIGNED(p, bytes) if ((unsigned long long)(p) % (bytes)) __builtin_trap()
#else
#define TDSL_ALIGNED(p, bytes)
#endif
template <class T, int N>
__device__ __forceinline__ Vec<T, N> load(const T* __restrict__ p) {
    TDSL_ALIGNED(p, sizeof(Vec<T, N>));
    return *reinterpret_cast<const Vec<T, N>*>(p);
}
// f(Index<I>()) for I = First .. End - 1, each I a constant: loops unrolled whatever the
// compiler's budget (an array indexed in a loop it left rolled went to local memory). `f` is a
// functor with a templated __device__ operator(), not a lambda: NVRTC 12 takes a lambda in a
// __device__ function for a host function, and refuses the annotated one in JIT mode (every
// shifted kernel failed so on an H200's CuPy, 2026-12-05). Unrolled by pragma instead, warp rows
// spilled more (rmsnorm with an f32 weight over 1299: 16 bytes, none so).
template <int I> struct Index { static constexpr int value = I; };
template <int First, int End, class F>
__device__ __forceinline__ void each_index(const F& f) {
    if constexpr (First < End) {
        f(Index<First>());
        each_index<First + 1, End>(f);
    }
}

// load_shifted's steps, one functor each (each_index): a 16-byte piece of the 2N values into words
// 4Q..4Q+3, read only where a lane takes from it; a barrel stage moving words by B where `m` is all
// ones; a funnel shift of each word by `half` bits into the next.
template <class T, int N>
struct ShiftPieces {
    const T* __restrict__ p; int s; unsigned* w;
    template <int Q> __device__ __forceinline__ void operator()(Index<Q>) const {
        constexpr int PIECE = 16 / (int)sizeof(T);
        Vec<T, PIECE> piece = {};
        if (Q < N / PIECE || s > PIECE * (Q - N / PIECE)) piece = load<T, PIECE>(p + PIECE * Q);
        memcpy(&w[4 * Q], &piece, 16);
    }
};
template <int B>
struct ShiftWordsBy {
    unsigned* w; unsigned m;
    template <int I> __device__ __forceinline__ void operator()(Index<I>) const { w[I] = (w[I + B] & m) | (w[I] & ~m); }
};
template <int WORDS>
struct ShiftStages {
    unsigned* w; int words;
    template <int K> __device__ __forceinline__ void operator()(Index<K>) const {
        constexpr int B = 1 << K;
        if constexpr (B < WORDS) {
            const unsigned m = 0u - ((unsigned)(words / B) & 1u);  // all ones where this stage shifts
            each_index<0, 2 * WORDS - B>(ShiftWordsBy<B>{w, m});
        }
    }
};
struct ShiftHalves {
    unsigned* w; unsigned half;
    template <int I> __device__ __forceinline__ void operator()(Index<I>) const {   // (in order: w[I + 1] is still unshifted)
        w[I] = (unsigned)((((unsigned long long)w[I + 1] << 32) | w[I]) >> half);
    }
};

// Lanes s .. s + N - 1 of the 2N 4- or 2-byte values from p (16-byte aligned), 0 <= s < N and the
// same across a row's threads: a peeled row's weight over the row (Schedule.shift), whose lanes move
// with the row's head, read in 16-byte pieces and shifted by the head in registers, where gathered a
// lane at a time each lane was a load. The words shift by a barrel of masks (a LOP3 a word and
// stage) at constant indices only; 16-bit lanes at an odd head then take each word's upper half and
// the next word's lower one (a funnel shift a word). A piece of the second N is read only where a
// lane takes from it, so every piece read starts inside the weight.
template <int N, class T>
__device__ __forceinline__ Vec<T, N> load_shifted(const T* __restrict__ p, int s) {
    constexpr int PIECE = 16 / (int)sizeof(T);             // values a 16-byte piece
    constexpr int WORDS = N * (int)sizeof(T) / 4;          // 32-bit words of the result
    static_assert((sizeof(T) == 4 || sizeof(T) == 2) && N % PIECE == 0 && WORDS <= 16,
                  "16-byte pieces of 4- or 2-byte values");
    unsigned w[2 * WORDS];
    each_index<0, 2 * N / PIECE>(ShiftPieces<T, N>{p, s, w});
    each_index<0, 4>(ShiftStages<WORDS>{w, s * (int)sizeof(T) / 4});   // by the whole words the lanes move
    if constexpr (sizeof(T) == 2)
        each_index<0, WORDS>(ShiftHalves{w, 16u * ((unsigned)s & 1u)});
    Vec<T, N> out;
    memcpy(&out, w, sizeof(out));
    return out;
}

template <class T, int N>
__device__ __forceinline__ void store(T* __restrict__ p, const Vec<T, N>& v) {
    TDSL_ALIGNED(p, sizeof(Vec<T, N>));
    *reinterpret_cast<Vec<T, N>*>(p) = v;
}
// Held as loaded, packed two 16-bit values a register, from here on: the compiler
// may no longer move their conversions to f32 ahead of this point (out of a loop),
// which would hold every value twice, packed and widened.
template <class T, int N>
__device__ __forceinline__ void keep_packed(Vec<T, N>& v) {
    static_assert(sizeof(Vec<T, N>) % 4 == 0, "whole 32-bit words");
    unsigned u[sizeof(Vec<T, N>) / 4];
    memcpy(u, &v, sizeof(u));       // register moves, without aliasing 16-bit values as 32-bit
#pragma unroll
    for (int i = 0; i < (int)(sizeof(u) / 4); ++i) asm volatile("" : "+r"(u[i]));
    memcpy(&v, u, sizeof(u));
}

}  // namespace tdsl
