"""Where a warm launch's microseconds go (device run).

Each line is the best of 5 rounds of 20000 calls (the host's clocks wander
between rounds); the launch queue is drained at the end of each round.

    python scripts/launch_profile.py

Measured on an H100 host (2026-11-22): a cuLaunchKernel through ctypes with
a prebuilt argument block cost 9.2 us and cuda.bindings' 9.8 us, against
7.1 us for CuPy's Function given arrays and int64 scalars: CuPy's launch is
the cheapest route from Python, so the fast path feeds it exactly that.
"""
import time

import cupy as cp
import numpy as np

import tiledsl

N, ROUNDS = 20000, 5


def loop(f):
    best = float("inf")
    for _ in range(ROUNDS):
        f()
        cp.cuda.runtime.deviceSynchronize()
        t = time.perf_counter()
        for _ in range(N):
            f()
        cp.cuda.runtime.deviceSynchronize()
        best = min(best, (time.perf_counter() - t) / N * 1e6)
    return best


def report(label, f):
    print(f"{label:44s} {loop(f):6.2f} us", flush=True)


k = tiledsl.compile("kernel add(x: f32[N], y: f32[N]) -> f32[N] { return x + y }")
x, y = cp.random.standard_normal(1000, cp.float32), cp.random.standard_normal(1000, cp.float32)
o = cp.empty_like(x)
k(x, y, out=o)
k(x, y)
assert bool(cp.allclose(o, x + y))
L = k._launcher
key_of = L._key_function(2)
fast = L._fast[key_of((x, y), o)]
report("k(x, y, out=o)", lambda: k(x, y, out=o))
report("k(x, y)", lambda: k(x, y))
report("L((x, y), {}, o)", lambda: L((x, y), {}, o))
report("key_of (the call class)", lambda: key_of((x, y), o))
report("generated fast(args, o)", lambda: fast((x, y), o))
report("cp.cuda.runtime.getDevice()", cp.cuda.runtime.getDevice)
report("x.data.ptr", lambda: x.data.ptr)
report("x.shape, x.dtype.char, x._c_contiguous", lambda: (x.shape, x.dtype.char, x._c_contiguous))
report("cp.empty(1000, f32)", lambda: cp.empty(1000, cp.float32))
report("cp.ndarray((1000,), f32)", lambda: cp.ndarray((1000,), cp.float32))

[(fn, grid, block, picks, shared)] = [s for p in L._plans.values() for s in p.steps][:1]
xp, yp, op = x.data.ptr, y.data.ptr, o.data.ptr
n64 = np.int64(1000)
report("Function(grid, block, (ints...))", lambda: fn(grid, block, (xp, yp, op, 1000)))
report("Function(grid, block, (arrays, np.int64))", lambda: fn(grid, block, (x, y, o, n64)))
raw = cp.RawKernel(r'extern "C" __global__ void add(const float* x, const float* y, float* o, long long n)'
                   r'{ long long i = blockIdx.x * 256 + threadIdx.x; if (i < n) o[i] = x[i] + y[i]; }', "add")
report("RawKernel(x, y, o, np.int64)", lambda: raw((4,), (256,), (x, y, o, n64)))

sizes = range(1000, 1064)
xs = [cp.random.standard_normal(n, dtype=cp.float32) for n in sizes]
ys = [cp.random.standard_normal(n, dtype=cp.float32) for n in sizes]
outs = [cp.empty(n, dtype=cp.float32) for n in sizes]
state = [0]


def cycling(alloc):
    j = state[0] = (state[0] + 1) % 64
    return k(xs[j], ys[j]) if alloc else k(xs[j], ys[j], out=outs[j])


report("k(...) cycling 64 sizes, out=", lambda: cycling(False))
report("k(...) cycling 64 sizes, allocating", lambda: cycling(True))
ok = all(bool(cp.allclose(outs[j], xs[j] + ys[j])) for j in range(64))
print("cycling results correct:", ok)
