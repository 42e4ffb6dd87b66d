"""Run a kernel on the GPU, check it against the reference, time it (`tiledsl run`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..inputs import relative_error


def time_gpu(fn, warmup: int = 3, repeat: int = 20) -> float:
    """Median seconds per call of `fn`, timed with CUDA events."""
    import cupy
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) * 1e-3)
    return float(np.median(times))


def time_rounds(impls: dict, rounds: int = 3, repeat: int = 20) -> dict:
    """Each callable's µs per call (`time_gpu`) in `rounds` interleaved rounds, every
    callable once a round, so a slow stretch of the host costs each one round
    rather than one callable all of them: label -> [µs of each round]."""
    times = {label: [] for label in impls}
    for _ in range(rounds):
        for label, fn in impls.items():
            times[label].append(time_gpu(fn, repeat=repeat) * 1e6)
    return times


@lru_cache(maxsize=None)
def copy_bandwidth(device: int = 0, nbytes: int = 1 << 30) -> float:
    """Measured device-to-device copy bandwidth in bytes/s (read + write)."""
    import cupy
    with cupy.cuda.Device(device):
        src = cupy.ones(nbytes // 4, dtype=cupy.float32)
        dst = cupy.empty_like(src)
        seconds = time_gpu(lambda: dst.__setitem__(Ellipsis, src), warmup=2, repeat=10)
    return 2 * nbytes / seconds


@dataclass
class RunReport:
    kernel: str
    seconds: float
    bytes_moved: int
    bandwidth: float
    errors: list = field(default_factory=list)
    dtypes: list = field(default_factory=list)
    flops: float = 0.0
    roof_line: str = ""        # the roofline comparison of a matmul kernel, when known

    def text(self) -> str:
        achieved = self.bytes_moved / self.seconds
        if self.roof_line:
            lines = [f"  GPU: {self.seconds * 1e6:.1f} us  {self.roof_line}"]
        else:
            lines = [f"  GPU: {self.seconds * 1e6:.1f} us  {achieved / 1e9:.0f} GB/s  "
                     f"({achieved / self.bandwidth:.0%} of the roofline: measured copy bandwidth "
                     f"{self.bandwidth / 1e9:.0f} GB/s)"]
        for i, (err, dt) in enumerate(zip(self.errors, self.dtypes)):
            lines.append(f"  result {i} ({dt}): relative error {err:.2e} vs the float64 reference")
        return "\n".join(lines)


def roofline_text(seconds: float, w, device_name: str, bandwidth: float) -> str:
    """'226.1 TFLOP/s (22.9% of the roofline: H200 SXM peak 989 TFLOP/s)' for a
    matmul kernel; '' for a memory-bound one (judged by bandwidth instead)."""
    from ..tune.roofline import peak_for, rate
    if not w.matmul:
        return ""
    peak = peak_for(device_name)
    r = rate(seconds, w, peak, bandwidth)
    if r.fraction is None:
        return f"{r.value / 1e12:.1f} TFLOP/s (no peak known for {device_name}: % of the roofline unknown)"
    return (f"{r.value / 1e12:.1f} TFLOP/s ({r.fraction:.1%} of the roofline: {peak.name} "
            f"{'tensor-core' if w.tensor_cores else 'f32'} peak "
            f"{(peak.tensor_f16 if w.tensor_cores else peak.f32) / 1e12:.0f} TFLOP/s, "
            f"bandwidth {bandwidth / 1e9:.0f} GB/s)")


def run_and_time(kernel, host_args: list, expected: tuple) -> RunReport:
    import cupy
    from ..tune.roofline import work
    from .launcher import _device_identity
    device_args = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in host_args]
    got = kernel(*device_args)
    got = got if isinstance(got, tuple) else (got,)
    errors = [relative_error(cupy.asnumpy(g), e) for g, e in zip(got, expected)]
    seconds = time_gpu(lambda: kernel(*device_args, out=got if len(got) > 1 else got[0]))
    moved = sum(a.nbytes for a in device_args if hasattr(a, "nbytes")) + sum(g.nbytes for g in got)
    device = cupy.cuda.runtime.getDevice()
    bandwidth = copy_bandwidth(device)
    extents = dict(zip(kernel.graph.dims, _extents_of(kernel, host_args)))
    w = work(kernel.graph, extents)
    return RunReport(kernel.name, seconds, moved, bandwidth, errors,
                     [r.dtype.name for r in kernel.graph.results], w.flops,
                     roofline_text(seconds, w, _device_identity(device)[0], bandwidth))


def _extents_of(kernel, args) -> list:
    from ..runtime.arrays import dtype_of
    from ..signature import bind
    bound = bind(kernel.graph, tuple(args), {}, dtype_of=dtype_of,
                 shape_of=lambda a: tuple(a.shape) if hasattr(a, "shape") else None,
                 describe=lambda a: type(a).__name__)
    return [bound.extents[d] for d in kernel.graph.dims]
