"""Where a warm launch's microseconds go (device run).

Each line is the best of 5 rounds of 20000 calls (the host's clocks wander
between rounds); the rounds go round-robin over every line, so a slow stretch
of the host costs every line a round rather than one line its result; the
launch queue is drained at the end of each round.

    python scripts/launch_profile.py

Measured on an H100 host (2026-11-22): a cuLaunchKernel through ctypes with
a prebuilt argument block cost 9.2 us and cuda.bindings' 9.8 us, against
7.1 us for CuPy's Function given arrays and int64 scalars: CuPy's launch is
the cheapest route from Python, so the fast path feeds it exactly that.
"""
import ctypes
import os
import struct
import sys
import time

sys.path.insert(0, os.getcwd())     # (benchmarks/, from the repository's root)
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import best_host_us  # noqa: E402
from tiledsl.runtime.launcher import _warm_call  # noqa: E402

N, ROUNDS = 20000, 5


LINES = []


def report(label, f):
    LINES.append((label, f))


k = tiledsl.compile("kernel add(x: f32[N], y: f32[N]) -> f32[N] { return x + y }")
x, y = cp.random.standard_normal(1000, cp.float32), cp.random.standard_normal(1000, cp.float32)
o = cp.empty_like(x)
k(x, y, out=o)
k(x, y)
assert bool(cp.allclose(o, x + y))
L = k._launcher
key_of = L._key_function(2)
fast = L._fast[key_of((x, y), o)]
print(fast.source)
report("k(x, y, out=o)", lambda: k(x, y, out=o))
report("k(x, y)", lambda: k(x, y))
k2d = tiledsl.compile("kernel add2d(x: f32[M, N], y: f32[M, N]) -> f32[M, N] { return x + y }")
x2d, y2d, o2d = x.reshape(8, 125), y.reshape(8, 125), cp.empty((8, 125), cp.float32)
k2d(x2d, y2d, out=o2d)
report("k2d(x, y, out=o), 8x125", lambda: k2d(x2d, y2d, out=o2d))
report("L((x, y), {}, o)", lambda: L((x, y), {}, o))
report("key_of (the call class)", lambda: key_of((x, y), o))
ptrs = (x.data.ptr, y.data.ptr, o.data.ptr)      # the dispatcher hands the warm call the pointers it read
report("generated fast(args, o, pointers)", lambda: fast((x, y), o, *ptrs))
NOOP = {"launch": lambda *a: None, "launch_ex": lambda *a: 0, "F0": lambda *a, **kw: None}   # (launch_ex: an overlapping launch)


def without_launch(warm):
    return _warm_call(warm.source, tuple(NOOP.get(n, v) for n, v in warm.bound.items()))


no_launch = without_launch(fast)
report("generated fast(args, o, pointers), launch left out", lambda: no_launch((x, y), o, *ptrs))
k2 = tiledsl.compile("kernel add(x: f32[N], y: f32[N]) -> f32[N] { return x + y }")
k2(x, y, out=o)
key2 = k2._launcher._key_function(2)((x, y), o)
k2._launcher._fast[key2] = without_launch(k2._launcher._fast[key2])
report("k(x, y, out=o), launch left out", lambda: k2(x, y, out=o))
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
# The driver's launch through CuPy's thin wrapper: an argument block built once,
# the pointers written into it per call (cuLaunchKernel copies it at launch).
drv = cp.cuda.driver
params = np.zeros(len(picks), np.int64)
slots = np.array([params.ctypes.data + 8 * i for i in range(len(picks))], np.int64)
slots_at, fptr = int(slots.ctypes.data), fn.ptr
(gx, gy, gz), (bx, by, bz) = (tuple(grid) + (1, 1))[:3], (tuple(block) + (1, 1))[:3]
params[:] = [xp, yp, op, 1000]
current_stream = getattr(cp.cuda.stream, "get_current_stream_ptr", None) or (lambda: cp.cuda.get_current_stream().ptr)
report("driver.launchKernel(prebuilt block)", lambda: drv.launchKernel(fptr, gx, gy, gz, bx, by, bz, 0, 0, slots_at, 0))


def driver_launch():
    params[0] = x.data.ptr
    params[1] = y.data.ptr
    params[2] = o.data.ptr
    drv.launchKernel(fptr, gx, gy, gz, bx, by, bz, 0, current_stream(), slots_at, 0)


report("driver.launchKernel(pointers written, stream)", driver_launch)
packed = bytearray(8 * len(picks))
struct.pack_into(f"{len(picks)}q", packed, 0, xp, yp, op, 1000)
packed_at = ctypes.addressof(ctypes.c_char.from_buffer(packed))
packed_slots = np.array([packed_at + 8 * i for i in range(len(picks))], np.int64)
packed_slots_at = int(packed_slots.ctypes.data)
pack_into = struct.pack_into


def packed_launch():
    pack_into("3q", packed, 0, x.data.ptr, y.data.ptr, o.data.ptr)
    drv.launchKernel(fptr, gx, gy, gz, bx, by, bz, 0, current_stream(), packed_slots_at, 0)


report("driver.launchKernel(struct.pack_into, stream)", packed_launch)
report("struct.pack_into 3 pointers", lambda: pack_into("3q", packed, 0, xp, yp, op))
report("current stream pointer", current_stream)
report("cp.cuda.get_current_stream(0).ptr", lambda: cp.cuda.get_current_stream(0).ptr)
raw = cp.RawKernel(r'extern "C" __global__ void add(const float* x, const float* y, float* o, long long n)'
                   r'{ long long i = blockIdx.x * 256 + threadIdx.x; if (i < n) o[i] = x[i] + y[i]; }', "add")
report("RawKernel(x, y, o, np.int64)", lambda: raw((4,), (256,), (x, y, o, n64)))

# A first call at a size never seen: the checked path plans the class and writes its warm call.
fresh = tiledsl.compile("kernel add2(x: f32[N], y: f32[N]) -> f32[N] { return x + y }")
new_sizes = range(2000, 2064)
nx = [cp.random.standard_normal(n, dtype=cp.float32) for n in new_sizes]
no = [cp.empty(n, dtype=cp.float32) for n in new_sizes]
fresh(nx[0], nx[0], out=no[0])
times = []
for j in range(1, 64):
    cp.cuda.runtime.deviceSynchronize()
    t0 = time.perf_counter()
    fresh(nx[j], nx[j], out=no[j])
    times.append((time.perf_counter() - t0) * 1e6)
times.sort()
print(f"{'first call at each of 63 new sizes, out=':44s} {times[31]:6.1f} us median "
      f"(slowest {times[-1]:.0f} us: a new alignment class compiles)", flush=True)

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
best = best_host_us(LINES, N, ROUNDS)
for label, _ in LINES:
    print(f"{label:44s} {best[label]:6.2f} us", flush=True)
ok = all(bool(cp.allclose(outs[j], xs[j] + ys[j])) for j in range(64))
print("cycling results correct:", ok)
