"""A pretend GPU for CPU tests of the autotuner's GPU-side logic.

`install(monkeypatch)` puts a NumPy-backed stand-in for CuPy in sys.modules
(device queries, CUDA events over a simulated clock, arrays that are NumPy
arrays) and `FakeLauncher` in place of a kernel's launcher: a call computes
the kernel's result with the reference interpreter (so the safety check has
something real to check) and advances the clock by a cost that depends on
the schedule the tuner installed (so the choice has something to choose).

What this cannot check is CuPy itself and the compiled kernels: the
@pytest.mark.gpu tests and benchmarks/tune_check.py do that on a device.
"""
from __future__ import annotations

import hashlib
import sys
import types

import numpy as np

DEVICE_NAME = "NVIDIA H200 (fake)"


class Clock:
    now = 0.0


class _Event:
    def __init__(self, *a, **k):
        self.t = None

    def record(self, stream=None):
        self.t = Clock.now

    def synchronize(self):
        pass


class _Device:
    def __init__(self, device=0):
        self.id = device
        self.compute_capability = "90"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        pass

    def use(self):
        pass


def _runtime():
    rt = types.SimpleNamespace()
    rt.getDeviceCount = lambda: 1
    rt.getDevice = lambda: 0
    rt.getDeviceProperties = lambda d: {"name": DEVICE_NAME.encode(), "multiProcessorCount": 132,
                                        "l2CacheSize": 50 << 20, "major": 9, "minor": 0}
    attrs = {1: 1024, 8: 48 * 1024, 12: 65536, 16: 132, 38: 50 << 20,
             36: 3_201_000, 37: 6144}     # memory clock (kHz) and bus width (bits): 4.9 TB/s
    rt.deviceGetAttribute = lambda attr, device: attrs.get(attr, 0)
    rt.memGetInfo = lambda: (80 << 30, 140 << 30)
    return rt


def make_cupy() -> types.ModuleType:
    cupy = types.ModuleType("cupy")
    cupy.__fake__ = True

    def __getattr__(name):
        return getattr(np, name)
    cupy.__getattr__ = __getattr__
    cupy.ndarray = np.ndarray
    cupy.asarray = lambda a, dtype=None: np.array(a, dtype=dtype, copy=True) if isinstance(a, np.ndarray) \
        else np.asarray(a, dtype=dtype)
    cupy.asnumpy = np.asarray
    cuda = types.SimpleNamespace()
    cuda.runtime = _runtime()
    cuda.Device = _Device
    cuda.Event = _Event
    cuda.get_elapsed_time = lambda s, e: (e.t - s.t) * 1e3
    cupy.cuda = cuda
    return cupy


def install(monkeypatch) -> types.ModuleType:
    """The fake CuPy, installed for this test; launcher caches and the
    measured copy bandwidth are reset around it."""
    from tiledsl.runtime import launcher, measure
    cupy = make_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(launcher, "_IDENTITIES", {})
    monkeypatch.setattr(launcher, "_SM_COUNTS", {})
    monkeypatch.setattr(launcher, "_HBM_GBPS", {})
    monkeypatch.setattr(measure, "copy_bandwidth", lambda device=0, nbytes=0: 4.0e12)
    Clock.now = 0.0
    return cupy


def cost_of(tag: str, base: float = 1e-4) -> float:
    """A schedule's simulated time: a fixed pseudo-random factor in [1, 2) per tag."""
    h = int(hashlib.sha256(tag.encode()).hexdigest()[:8], 16)
    return base * (1 + (h % 1000) / 1000)


class _View:
    def __init__(self, owner):
        self.owner = owner


class FakeLauncher:
    """Stands in for runtime.launcher.Launcher: computes with the reference."""

    def __init__(self, kernel, cost=cost_of, noise: float = 0.002, seed: int = 0, fail_tags=()):
        from tiledsl.tune.space import search_space
        self.kernel, self.cost, self.noise = kernel, cost, noise
        self.rng = np.random.default_rng(seed)
        self.overrides: dict = {}
        self.pinned_extents = None      # (set_overrides)
        self._parent = None             # (set_overrides: the one launcher there is)
        self._plans: dict = {}
        self._fast: dict = {}
        self._dispatchers: dict = {}     # none: every call goes through __call__
        self.tuning_db = None
        self.fail_tags = set(fail_tags)
        self.calls = 0
        self.resident = None        # blocks an SM the pretend driver holds (launched_default)
        self._results: dict = {}
        self._labels = None
        self._search_space = search_space
        self.mode = ""              # the partition the tuner reached it for (partition_launcher)

    def partition_launcher(self, mode: str) -> "FakeLauncher":
        """Itself, for every partition: what it runs is the reference; its labels follow `mode`."""
        self.mode, self._labels = mode, None
        return self

    def launched_default(self, index, p, device):
        """What an untuned call would run: the rules' default, a split along rows filling
        `self.resident` blocks an SM's room where set (Launcher.launched_default)."""
        from tiledsl.schedule.choose import default
        from tiledsl.schedule.columns import splits_filling_room
        return splits_filling_room(p, default(p, self.kernel.hints), self.resident)

    def label(self, extents) -> str:
        """The config labels of the schedules this call runs, '+'-joined per group."""
        from tiledsl.tune.space import config_label
        key = tuple(sorted(extents.items()))
        if self._labels is None or self._labels[0] != key:
            self._labels = (key, [g.default for g in self._search_space(self.kernel, extents, mode=self.mode)])
        defaults = self._labels[1]
        return "+".join(config_label(self.overrides.get(i, d)) for i, d in enumerate(defaults))

    def _outputs(self, out, extents, device):
        return [_View(np.empty(tuple(extents[d] for d in r.dims), r.dtype.numpy))
                for r in self.kernel.graph.results]

    def __call__(self, args, kwargs, out):
        from tiledsl.signature import bind
        bound = bind(self.kernel.graph, args, kwargs, dtype_of=lambda a: _dtype(a),
                     shape_of=lambda a: a.shape if isinstance(a, np.ndarray) else None,
                     describe=lambda a: type(a).__name__)
        tag = self.label(bound.extents)
        if tag in self.fail_tags:
            raise RuntimeError(f"cudaErrorLaunchOutOfResources: too many resources requested ({tag})")
        key = tuple(id(a) if isinstance(a, np.ndarray) else a for a in args) + tuple(sorted(kwargs.items()))
        got = self._results.get(key)
        if got is None or any(r is not a for r, a in zip(got[1], args)):
            got = (self.kernel.reference(*args, **kwargs), tuple(args))   # the same inputs give the same result
            self._results[key] = got
        got = got[0] if isinstance(got[0], tuple) else (got[0],)
        if out is None:
            out = tuple(np.empty_like(g) for g in got)
        outs = out if isinstance(out, tuple) else (out,)
        for o, g in zip(outs, got):
            o[...] = g
        self.calls += 1
        Clock.now += self.cost(tag) * (1 + self.noise * float(self.rng.standard_normal()))
        return outs[0] if len(outs) == 1 else outs


def _dtype(a):
    from tiledsl.dtypes import from_numpy
    return from_numpy(a.dtype) if isinstance(a, np.ndarray) else None
