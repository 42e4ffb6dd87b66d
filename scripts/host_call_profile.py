"""The host side of a call with no GPU: tiledsl's real launcher over a stand-in for CuPy whose
arrays are pointers only and whose launch does nothing, so what a call costs in Python (binding,
checks, planning a new call class, the warm call) can be timed and profiled on any machine.
Kernels still compile (NVRTC) on the first call; the launch and the GPU's time are left out
(scripts/launch_profile.py times those on a device).

    python scripts/host_call_profile.py [add|layernorm|softmax] [--profile]

This 2-core CPU, 2026-12-06 (median of 198 new sizes, launch left out): the first call at a
new size took add about 180 us, layernorm 378 -> 253-267 us and softmax 262 -> 210-214 once a
Layout's and a Group's derived properties were cached; a warm call 1.1-1.9 us. With a Layout's
row_major and a Problem's splittable cached too (the same day): layernorm 240, softmax 201.
"""
import contextlib
import cProfile
import itertools
import os
import pstats
import sys
import time
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_pointers = itertools.count(1)


class _Memory:
    __slots__ = ("ptr", "device_id")

    def __init__(self, ptr):
        self.ptr, self.device_id = ptr, 0


class FakeArray:
    """What the launcher reads of a cupy.ndarray; each array 64 GiB from the next."""
    _c_contiguous = True

    def __init__(self, shape, dtype=np.float32):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.itemsize, self.ndim = self.dtype.itemsize, len(self.shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        strides, step = [], self.itemsize
        for extent in reversed(self.shape):
            strides.append(step)
            step *= extent
        self.strides = tuple(reversed(strides))
        self.data = _Memory(next(_pointers) << 36)

    def __len__(self):
        return self.shape[0]


class _Device(contextlib.nullcontext):
    compute_capability = "90"

    def __init__(self, device=0):
        super().__init__()
        self.id = device

    def use(self):
        pass


class _Function:
    max_dynamic_shared_size_bytes = 0

    def __init__(self, name):
        self.ptr, self.name = next(_pointers), name

    def __call__(self, grid, block, args, shared_mem=0):     # CuPy's launch (the checked path's)
        pass


class _Module:
    def load(self, cubin):
        pass

    def get_function(self, name):
        return _Function(name)


def install_fake_cupy() -> types.ModuleType:
    """sys.modules['cupy'] as an H100's: 132 SMs, 3352 GB/s, compute capability 9.0."""
    runtime = types.SimpleNamespace(cudaDevAttrMultiProcessorCount=16, getDevice=lambda: 0,
                                    deviceGetAttribute=lambda a, d: {16: 132, 36: 2619000, 37: 5120}.get(a, 0))
    cuda = types.ModuleType("cupy.cuda")
    cuda.Device, cuda.runtime = _Device, runtime
    cuda.get_current_stream = lambda *a: types.SimpleNamespace(ptr=0)
    cuda.function = types.SimpleNamespace(Module=_Module)
    cuda.driver = types.SimpleNamespace(launchKernel=lambda *a: None)
    cupy = types.ModuleType("cupy")
    cupy.ndarray, cupy.empty, cupy.cuda = FakeArray, lambda shape, dtype=np.float32: FakeArray(shape, dtype), cuda
    sys.modules.update({"cupy": cupy, "cupy.cuda": cuda})
    return cupy


PROGRAMS = {
    "add": ("kernel add(x: f32[N], y: f32[N]) -> f32[N] { return x + y }", lambda n: {"N": 1024 * n}),
    "layernorm": ("examples/layernorm.tdsl", lambda n: {"M": 8 * n, "N": 4096}),
    "softmax": ("examples/softmax.tdsl", lambda n: {"M": 8 * n, "N": 1024}),
}


def main() -> None:
    name = next((a for a in sys.argv[1:] if not a.startswith("-")), "add")
    install_fake_cupy()
    os.environ["TILEDSL_TUNING_DB"] = os.devnull       # defaults only, as the benchmarks time them
    import tiledsl
    import tiledsl.runtime.launcher as launcher
    launcher._resident_blocks = lambda fn, launch, device: 4      # (the driver's occupancy query)
    source, extents_at = PROGRAMS[name]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    k = tiledsl.compile(open(os.path.join(root, source)).read() if source.endswith(".tdsl") else source)

    def call_at(n):
        ext = extents_at(n)
        args = [p.default if p.is_scalar else FakeArray([ext[d] for d in p.dims], p.dtype.numpy)
                for p in k.graph.params]
        out = FakeArray([ext[d] for d in k.graph.results[0].dims], k.graph.results[0].dtype.numpy)
        return lambda: k(*args, out=out)

    first = call_at(1)
    t = time.perf_counter()
    first()
    print(f"{name}: first call (compiled, or read from the disk cache) {(time.perf_counter() - t) * 1e3:.0f} ms")
    calls = [call_at(n) for n in range(2, 200)]
    times = []
    for call in calls:
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    print(f"{name}: first call at a new size, median {sorted(times)[len(times) // 2] * 1e6:.0f} us")
    warm = call_at(3)
    for _ in range(1000):
        warm()
    t = time.perf_counter()
    for _ in range(20000):
        warm()
    print(f"{name}: warm call {(time.perf_counter() - t) / 20000 * 1e6:.2f} us (launch left out)")
    if "--profile" in sys.argv:
        calls = [call_at(n) for n in range(200, 400)]
        profile = cProfile.Profile()
        profile.runcall(lambda: [call() for call in calls])
        pstats.Stats(profile).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
