"""How fast can mma.sync.m16n8k16 (f16 in, f32 accumulate) go on this GPU with
operands already in registers? The ceiling of any mma.sync GEMM (device run)."""
import cupy as cp

SRC = r'''
extern "C" __global__ void __launch_bounds__(256, 1) mma_loop(float* out, int iters) {
    float acc[4][8][4] = {};
    unsigned a[4][4], b[8][2];
    for (int i = 0; i < 4; ++i) for (int r = 0; r < 4; ++r) a[i][r] = 0x3c003c00u ^ (threadIdx.x + i + r);
    for (int j = 0; j < 8; ++j) for (int r = 0; r < 2; ++r) b[j][r] = 0x3c003c00u ^ (threadIdx.x * 3 + j + r);
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j)
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                             "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                             : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
                             : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]), "r"(b[j][1]));
    }
    float s = 0;
    for (int i = 0; i < 4; ++i) for (int j = 0; j < 8; ++j) for (int r = 0; r < 4; ++r) s += acc[i][j][r];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
'''
fn = cp.RawKernel(SRC, "mma_loop", options=("-arch=sm_90a",))
sm = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
for blocks_per_sm, threads in ((1, 256), (2, 128), (1, 128), (2, 256)):
    blocks = sm * blocks_per_sm
    out = cp.empty(blocks * threads, cp.float32)
    iters = 4096
    fn((blocks,), (threads,), (out, cp.int32(iters)))
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record(); fn((blocks,), (threads,), (out, cp.int32(iters))); e.record(); e.synchronize()
    ms = cp.cuda.get_elapsed_time(s, e)
    flop = blocks * (threads // 32) * iters * 32 * 4096
    print(f"mma.sync ceiling: {blocks_per_sm} block(s)/SM x {threads} threads: {flop / ms / 1e9:.0f} TFLOP/s")
