"""Where a warm launch's microseconds go (device run)."""
import time

import cupy as cp

import tiledsl

N = 20000


def loop(f):
    f()
    cp.cuda.runtime.deviceSynchronize()
    t = time.perf_counter()
    for _ in range(N):
        f()
    cp.cuda.runtime.deviceSynchronize()
    return (time.perf_counter() - t) / N * 1e6


k = tiledsl.compile("kernel add(x: f32[N], y: f32[N]) -> f32[N] { return x + y }")
x, y = cp.ones(1000, cp.float32), cp.ones(1000, cp.float32)
o = cp.empty_like(x)
k(x, y, out=o)
k(x, y)
L = k._launcher
fast = L._fast[L._fast_key((x, y), o)]
print("k(x, y, out=o)          %.2f us" % loop(lambda: k(x, y, out=o)))
print("k(x, y)                 %.2f us" % loop(lambda: k(x, y)))
print("_fast_key               %.2f us" % loop(lambda: L._fast_key((x, y), o)))
print("generated fast(args, o) %.2f us" % loop(lambda: fast((x, y), o)))
raw = cp.RawKernel(r'extern "C" __global__ void add(const float* x, const float* y, float* o, long long n)'
                   r'{ long long i = blockIdx.x * 256 + threadIdx.x; if (i < n) o[i] = x[i] + y[i]; }', "add")
print("RawKernel(x, y, o, n)   %.2f us" % loop(lambda: raw((4,), (256,), (x, y, o, 1000))))
print("cp.empty                %.2f us" % loop(lambda: cp.empty(1000, cp.float32)))
print(L._fast and "fast path source:\n" + next(iter(L._fast.values())).__doc__ if False else "")
