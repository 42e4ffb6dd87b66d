"""One kernel at one shape, ready to run many times on the GPU: fresh random
inputs (never zeros), the float64 reference, copies of the inputs to rotate
through so they are not found in L2, and output buffers per copy.

Shared by the tuner, `tiledsl bench` and benchmarks/tune_check.py, so every
one of them checks and times the same way.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..inputs import TOLERANCE, random_arguments
from .safety import as_float64, copy_of, poison, relative_error, to_device
from .timing import Measured, input_sets_needed, time_call


class Workload:
    def __init__(self, kernel, extents: dict, *, seed: Optional[int] = None, scalars: Optional[dict] = None,
                 device: Optional[int] = None, reference: bool = True):
        """Draw the inputs and compute the reference (on the CPU: call this
        while the compile workers run); upload() puts them on the GPU.
        reference=False: for timing only (check() then cannot be used)."""
        from .roofline import work
        self.kernel, self.extents = kernel, dict(extents)
        self.device = device
        self.host = random_arguments(kernel.graph, self.extents, seed)
        for index, value in (scalars or {}).items():
            self.host[index] = value
        self.expected_host: tuple = ()
        if reference:
            expected = kernel.reference(*self.host, compute="f64")
            self.expected_host = expected if isinstance(expected, tuple) else (expected,)
        # f32 results of a kernel that opted in to TF32 are held to TF32's tolerance
        tf32 = bool(kernel.hints.tf32)
        self.tolerances = [TOLERANCE["tf32" if tf32 and r.dtype.name == "f32" else r.dtype.name]
                           for r in kernel.graph.results]
        self.work = work(kernel.graph, self.extents)
        self.sets: list = []
        self.outs: list = []
        self.expected: list = []
        self.n_sets = 0

    def upload(self, max_sets: int = 16) -> "Workload":
        import cupy
        from ..runtime import launcher_for
        if self.device is None:
            self.device = cupy.cuda.runtime.getDevice()
        if self.kernel._launcher is None:
            self.kernel._launcher = launcher_for(self.kernel)
        args = [to_device(a) if isinstance(a, np.ndarray) else a for a in self.host]
        l2 = device_attribute("cudaDevAttrL2CacheSize", 38, self.device, 50 << 20)
        free = cupy.cuda.runtime.memGetInfo()[0]
        self.n_sets = input_sets_needed(int(self.work.bytes), l2, free, max_sets)
        self.sets = [args] + [[copy_of(a) if isinstance(h, np.ndarray) else a for a, h in zip(args, self.host)]
                              for _ in range(self.n_sets - 1)]
        self.outs = [self.new_outputs() for _ in range(self.n_sets)]
        self.expected = [cupy.asarray(np.asarray(e, dtype=np.float64)) for e in self.expected_host]
        return self

    def new_outputs(self) -> list:
        """Output buffers as the launcher allocates them (CuPy; torch for bf16)."""
        launcher = self.kernel._launcher
        return [v.owner for v in launcher._outputs(None, self.extents, self.device)]

    @staticmethod
    def out_arg(outs: list):
        return outs[0] if len(outs) == 1 else tuple(outs)

    def call(self, i: int, after=None) -> None:
        """The kernel on input set i into that set's outputs (after(outs): fault injection)."""
        outs = self.outs[i]
        self.kernel(*self.sets[i], out=self.out_arg(outs))
        if after is not None:
            after(outs)

    def errors_of(self, outs) -> list[float]:
        import cupy
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        return [relative_error(cupy, as_float64(o), e) for o, e in zip(outs, self.expected)]

    def check(self, after=None) -> list[float]:
        """Relative errors of one call into fresh poisoned outputs, per result."""
        if not self.expected:
            raise ValueError("this Workload was made with reference=False")
        fresh = self.new_outputs()
        for o in fresh:
            poison(o)
        self.kernel(*self.sets[0], out=self.out_arg(fresh))
        if after is not None:
            after(fresh)
        return self.errors_of(fresh)

    def time(self, fn=None, **options) -> Measured:
        """time_call over the input sets: the kernel, or fn(i)."""
        return time_call(fn if fn is not None else self.call, self.n_sets, **options)


def device_attribute(name: str, number: int, device: int, fallback: int) -> int:
    import cupy
    rt = cupy.cuda.runtime
    try:
        return int(rt.deviceGetAttribute(getattr(rt, name, number), device)) or fallback
    except Exception:   # noqa: BLE001 - an attribute this driver lacks
        return fallback
