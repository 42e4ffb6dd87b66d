"""Where an overlapping launch puts its blocks (device runs). A hand-written split sum (each
block sums a fixed chunk of 128 MiB of f32 with 512 threads, 16-byte loads) is launched 60
times in a row on one stream, each launch overlapping the one before (cuLaunchKernelEx with
programmatic stream serialization, the kernel's first statements griddepcontrol.wait then
launch_dependents, as tiledsl's) or launched the usual way. Each block records its SM and
its start and end on the global timer. Per grid (blocks) and residency (blocks an SM may
hold, set by dynamic shared memory), over launches 10..59: the kernel's median time (first
start to last end), the most blocks one SM ran, and the SMs that ran none.

    python scripts/probe_placement.py"""
import ctypes
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

from tiledsl.runtime.dependent import DependentLaunch, _driver_launch  # noqa: E402

SOURCE = r"""
extern "C" __global__ void __launch_bounds__(512) split_sum(const float4* __restrict__ x, float* part,
        unsigned long long* trace, long long chunk, int call, int dependent) {
    extern __shared__ float scratch[];
    if (dependent) {
        asm volatile("griddepcontrol.wait;" ::: "memory");
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    }
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    const float4* p = x + blockIdx.x * chunk;
    float s = 0.f;
    for (long long i = threadIdx.x; i < chunk; i += 512) {
        float4 v = __ldg(p + i);
        s += (v.x + v.y) + (v.z + v.w);
    }
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.f;
        for (int w = 0; w < 16; ++w) t += scratch[w];
        part[blockIdx.x] = t;
        unsigned long long t1;
        unsigned sm;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        unsigned long long* r = trace + 3ull * (call * gridDim.x + blockIdx.x);
        r[0] = sm; r[1] = t0; r[2] = t1;
    }
}
"""
CALLS = 60
SMEM_PER_SM = 228 * 1024


def run(fn, x, grid: int, resident: int, dependent: bool) -> tuple:
    n4 = x.size // 4
    chunk = n4 // grid
    part = cp.zeros(grid, dtype=cp.float32)
    trace = cp.zeros(3 * CALLS * grid, dtype=cp.uint64)
    # dynamic shared memory so that at most `resident` blocks fit an SM (1 KB a block reserved)
    smem = (SMEM_PER_SM // resident) - 1024 - 64 if resident < 4 else 1024
    fn.max_dynamic_shared_size_bytes = smem
    launch = DependentLaunch((grid,), (512,), smem, None)
    stream = cp.cuda.get_current_stream()
    launch.config.stream = stream.ptr
    args = [ctypes.c_void_p(x.data.ptr), ctypes.c_void_p(part.data.ptr), ctypes.c_void_p(trace.data.ptr),
            ctypes.c_longlong(chunk), ctypes.c_int(0), ctypes.c_int(1 if dependent else 0)]
    params = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
    driver = _driver_launch()
    cp.cuda.runtime.deviceSynchronize()
    for c in range(CALLS):
        args[4].value = c
        if dependent:
            err = driver(launch.address, ctypes.c_void_p(fn.kernel.ptr), params, None)
        else:
            err = cp.cuda.driver.launchKernel(fn.kernel.ptr, grid, 1, 1, 512, 1, 1, smem, stream.ptr,
                                              ctypes.addressof(params), 0)
        if err:
            raise RuntimeError(f"launch error {err}")
    cp.cuda.runtime.deviceSynchronize()
    want = float(x[: grid * chunk * 4].astype(cp.float64).sum())
    got = float(part.astype(cp.float64).sum())
    assert abs(got - want) <= 1e-3 * abs(want) + 1.0, (got, want)
    t = trace.get().reshape(CALLS, grid, 3)[10:]
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    times, most, idle = [], [], []
    for c in t:
        times.append((c[:, 2].max() - c[:, 1].min()) / 1e3)
        per_sm = np.bincount(c[:, 0].astype(np.int64), minlength=sms)
        most.append(per_sm.max())
        idle.append(int((per_sm == 0).sum()))
    return statistics.median(times), max(most), statistics.median(idle), max(idle)


def main() -> None:
    if _driver_launch() is None:
        sys.exit("no cuLaunchKernelEx")
    fn = cp.RawKernel(SOURCE, "split_sum", options=("-arch=sm_90a",))
    x = cp.random.standard_normal(1 << 25, dtype=cp.float32)
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    print(f"{'grid':>6} {'resident':>8} {'launch':>12} {'kernel us':>10} {'most a SM':>10} "
          f"{'idle SMs (median, max)':>24}")
    for resident in (1, 2, 3, 4):
        for grid in sorted({sms, sms + 4, 2 * sms - 8, 2 * sms, 3 * sms, 4 * sms}):
            for dependent in (True, False):
                us, most, idle_med, idle_max = run(fn, x, grid, resident, dependent)
                print(f"{grid:6d} {resident:8d} {'overlapping' if dependent else 'usual':>12} {us:10.1f} "
                      f"{most:10d} {idle_med:12.0f}, {idle_max:3d}", flush=True)


if __name__ == "__main__":
    main()
