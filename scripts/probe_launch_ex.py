"""Probe (device run): what a launch costs the host, by route, for one small kernel
(host clock, µs a launch: the best of 7 rounds of 50000 launches, where the GPU may set
the pace; and the median of 200 bursts of 400 launches into an idle stream, timed up to
the last launch's return, which only the host sets):

- cupy: CuPy's driver.launchKernel (Cython), the warm call's usual launch;
- ctypes cuLaunchKernel: the same driver call through ctypes;
- ctypes cuLaunchKernelEx, no attributes / the overlap attribute: the same config struct;
- the warm call's overlapping launch: the stream set in a DependentLaunch's config where it
  changed, then cuLaunchKernelEx on its address (a method of that class, timed at first, cost
  3.56 us against 3.17 for the bare ctypes call).

    python scripts/probe_launch_ex.py
"""
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

from tiledsl.runtime.clusters import _LaunchConfig  # noqa: E402
from tiledsl.runtime.dependent import PROGRAMMATIC_STREAM_SERIALIZATION, DependentLaunch, _LaunchAttribute  # noqa: E402

SRC = r'''
extern "C" __global__ void tiny(float* out, long long n) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (float)i;
}
'''
fn = cp.RawModule(code=SRC, options=("-arch=sm_90a",)).get_function("tiny")
out = cp.empty(4096, cp.float32)
buf = np.zeros(2, np.int64)
buf[0], buf[1] = out.data.ptr, out.size
slots = np.array([buf.ctypes.data, buf.ctypes.data + 8], np.int64)
params = int(slots.ctypes.data)
stream = cp.cuda.get_current_stream().ptr
lib = ctypes.CDLL("libcuda.so.1")
plain = lib.cuLaunchKernel
plain.restype = ctypes.c_int
plain.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
ex = lib.cuLaunchKernelEx
ex.restype = ctypes.c_int
ex.argtypes = [ctypes.c_void_p] * 4
attr = _LaunchAttribute(PROGRAMMATIC_STREAM_SERIALIZATION)
attr.value[0] = 1
with_attr = _LaunchConfig(16, 1, 1, 256, 1, 1, 0, stream or None, ctypes.addressof(attr), 1)
no_attr = _LaunchConfig(16, 1, 1, 256, 1, 1, 0, stream or None, None, 0)
dep = DependentLaunch((16, 1, 1), (256,), 0, cp.cuda.driver.launchKernel)
launch = cp.cuda.driver.launchKernel
fp = fn.kernel.ptr
a_with, a_no = ctypes.addressof(with_attr), ctypes.addressof(no_attr)


def warm_overlap():     # as launcher._FastCall writes it
    if dep.stream != stream:
        dep.config.stream = dep.stream = stream
    if ex(dep.address, fp, params, None):
        dep.refused(fp, stream, params)


ROUTES = {
    "cupy launchKernel": lambda: launch(fp, 16, 1, 1, 256, 1, 1, 0, stream, params, 0),
    "ctypes cuLaunchKernel": lambda: plain(fp, 16, 1, 1, 256, 1, 1, 0, stream, params, None),
    "ctypes Ex, no attribute": lambda: ex(a_no, fp, params, None),
    "ctypes Ex, overlap": lambda: ex(a_with, fp, params, None),
    "warm call's overlapping launch": lambda: warm_overlap(),
}
best = {name: float("inf") for name in ROUTES}
for rnd in range(7):
    for name, call in ROUTES.items():
        for _ in range(2000):
            call()
        cp.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        for _ in range(50000):
            call()
        cp.cuda.runtime.deviceSynchronize()
        best[name] = min(best[name], (time.perf_counter() - t0) / 50000 * 1e6)
# alternating plain and overlapping launches, as a program of two kernels makes them
for name, pair in (("cupy, cupy", (ROUTES["cupy launchKernel"], ROUTES["cupy launchKernel"])),
                   ("cupy, overlapping", (ROUTES["cupy launchKernel"], ROUTES["warm call's overlapping launch"]))):
    b = float("inf")
    for rnd in range(7):
        cp.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        for _ in range(25000):
            pair[0]()
            pair[1]()
        cp.cuda.runtime.deviceSynchronize()
        b = min(b, (time.perf_counter() - t0) / 25000 * 1e6)
    best[name + " (a pair)"] = b
burst = {}
for name, call in ROUTES.items():
    ts = []
    for _ in range(200):
        cp.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        for _ in range(400):
            call()
        ts.append((time.perf_counter() - t0) / 400 * 1e6)
    burst[name] = sorted(ts)[len(ts) // 2]
for name, us in burst.items():
    print(f"{name:32s} {us:6.2f} us a launch in bursts (host only)", flush=True)
for name, us in best.items():
    print(f"{name:32s} {us:6.2f} us", flush=True)
