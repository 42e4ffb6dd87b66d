// Runs tiledsl's pointwise and reduction kernels on the CPU, for tests without a GPU:
// the CUDA they use, in C++ for a host compiler. Every thread of a block is a fiber
// (ucontext) on one OS thread; blocks run one after another. __syncthreads waits for
// every live thread of the block, a warp shuffle for every live lane of the warp, so
// index arithmetic, tails, shuffles and shared-memory combines run as they would on
// a GPU (in one order of many: races are not found). A barrier that can never
// complete (threads of a block at different barriers) stops the launch with an error.
// Tensor cores, TMA and the other inline PTX stay device-only (#ifdef __CUDA_ARCH__).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ucontext.h>
#include <vector>

using std::max;
using std::min;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static          // one block at a time: a static is that block's
#define __align__(n) __attribute__((aligned(n)))   // (alignas may not follow `static`)
#define __grid_constant__

namespace tdsl_host {

struct Dim3 { unsigned x = 0, y = 0, z = 0; };
enum State { RUNNABLE, AT_BLOCK_BARRIER, AT_WARP_BARRIER, DONE };

struct Fiber {
    ucontext_t context;
    Dim3 tid;
    int lane = 0, warp = 0;
    State state = RUNNABLE;
};

inline ucontext_t scheduler;
inline std::vector<Fiber> fibers;
inline std::vector<std::vector<char>> stacks;
inline std::vector<uint64_t> exchange;      // a slot a thread, for shuffles
inline Fiber* current = nullptr;
inline Dim3 block_idx, block_dim, grid_dim;
inline void (*body)(void*) = nullptr;
inline void* body_args = nullptr;
constexpr uint64_t POISON = 0x7ff8deadbeef0000ull;  // what a finished lane offers a shuffle (NaN)
constexpr size_t STACK_BYTES = 128 * 1024;

inline std::vector<unsigned char> dynamic_shared;    // the launch's dynamic shared memory (one block at a time)
#define TDSL_HOST_DYNAMIC_SHARED() (tdsl_host::dynamic_shared.data())

inline void yield() { swapcontext(&current->context, &scheduler); }

inline void entry() {
    body(body_args);
    current->state = DONE;
    exchange[current - fibers.data()] = POISON;
}

inline void sync_warp() { current->state = AT_WARP_BARRIER; yield(); }

// Runs every block of the grid; 0, or 1 where a barrier could never complete.
inline int launch(Dim3 grid, unsigned threads, unsigned shared, void (*kernel)(void*), void* args) {
    dynamic_shared.assign(shared + 16, 0xA5);     // (never empty: data() is an address)
    body = kernel;
    body_args = args;
    grid_dim = grid;
    block_dim = Dim3{threads, 1, 1};
    fibers.assign(threads, Fiber());
    exchange.assign(threads, POISON);
    if (stacks.size() < threads) stacks.resize(threads, std::vector<char>(STACK_BYTES));
    for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
    for (unsigned bx = 0; bx < grid.x; ++bx) {
        block_idx = Dim3{bx, by, bz};
        for (unsigned t = 0; t < threads; ++t) {
            Fiber& f = fibers[t];
            f.tid = Dim3{t, 0, 0};
            f.lane = t % 32;
            f.warp = t / 32;
            f.state = RUNNABLE;
            getcontext(&f.context);
            f.context.uc_stack.ss_sp = stacks[t].data();
            f.context.uc_stack.ss_size = STACK_BYTES;
            f.context.uc_link = &scheduler;
            makecontext(&f.context, entry, 0);
        }
        for (;;) {
            bool ran = false;
            for (Fiber& f : fibers) {
                if (f.state == RUNNABLE) {
                    current = &f;
                    swapcontext(&scheduler, &f.context);
                    ran = true;
                }
            }
            if (ran) continue;
            bool live = false, released = false;
            for (unsigned w = 0; w * 32 < threads; ++w) {    // a warp whose live lanes all wait
                bool waiting = false, all = true;
                for (unsigned t = w * 32; t < std::min(threads, w * 32 + 32); ++t) {
                    if (fibers[t].state == DONE) continue;
                    waiting |= fibers[t].state == AT_WARP_BARRIER;
                    all &= fibers[t].state == AT_WARP_BARRIER;
                }
                if (waiting && all) {
                    for (unsigned t = w * 32; t < std::min(threads, w * 32 + 32); ++t)
                        if (fibers[t].state == AT_WARP_BARRIER) fibers[t].state = RUNNABLE;
                    released = true;
                }
            }
            if (released) continue;
            bool all_at_block = true;
            for (Fiber& f : fibers) {
                if (f.state == DONE) continue;
                live = true;
                all_at_block &= f.state == AT_BLOCK_BARRIER;
            }
            if (!live) break;
            if (!all_at_block) {
                fprintf(stderr, "host_cuda: block (%u, %u, %u): threads wait at different barriers\n", bx, by, bz);
                return 1;
            }
            for (Fiber& f : fibers) if (f.state == AT_BLOCK_BARRIER) f.state = RUNNABLE;
        }
    }
    return 0;
}

}  // namespace tdsl_host

#define threadIdx (tdsl_host::current->tid)
#define blockIdx (tdsl_host::block_idx)
#define blockDim (tdsl_host::block_dim)
#define gridDim (tdsl_host::grid_dim)

inline void __syncthreads() {
    tdsl_host::current->state = tdsl_host::AT_BLOCK_BARRIER;
    tdsl_host::yield();
}

template <class T> inline T __shfl_xor_sync(unsigned, T v, int offset, int width = 32) {
    using namespace tdsl_host;
    static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
    const long self = current - fibers.data();
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof(T));
    exchange[self] = bits;
    sync_warp();                    // every lane has offered its value
    (void)width;                    // offset < width: lane ^ offset stays in the lane's group
    bits = exchange[self - current->lane + (current->lane ^ offset)];
    sync_warp();                    // every lane has read before the slots are reused
    T out;
    memcpy(&out, &bits, sizeof(T));
    return out;
}

// Blocks run one after another and a fiber runs until it yields: every access is atomic
// and every store seen at once.
inline void __threadfence() {}
inline unsigned atomicAdd(unsigned* address, unsigned v) { const unsigned old = *address; *address = old + v; return old; }

inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
