"""How fast a kernel could be: its work, the device's peaks, % of the roofline.

The work is counted from the IR: bytes = every tensor argument read once and
every result written once (the fused ideal); flops = 2·M·N·K per matmul plus
one per element of every elementwise or reduction value. A kernel with a
matmul is judged in FLOP/s against min(peak FLOP/s, intensity × bandwidth);
one without, in bytes/s against the measured copy bandwidth (what `tiledsl
run` reports), or the table's HBM figure when nothing was measured.

Peaks are dense (no sparsity), from NVIDIA's data sheets, keyed by a
substring of the CUDA device name; first match wins, so more specific names
come first. An unknown device has no compute peak: '%' is left blank.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Peak:
    name: str
    tensor_f16: float      # FLOP/s, f16/bf16 inputs with f32 accumulation, dense
    f32: float             # FLOP/s on CUDA cores
    hbm: float             # bytes/s


_T = 1e12
PEAKS = (
    ("H200", Peak("H200 SXM", 989.4 * _T, 66.9 * _T, 4.8e12)),
    ("H100 NVL", Peak("H100 NVL", 835.0 * _T, 60.0 * _T, 3.9e12)),
    ("H100 PCIe", Peak("H100 PCIe", 756.0 * _T, 51.2 * _T, 2.0e12)),
    ("H100", Peak("H100 SXM", 989.4 * _T, 66.9 * _T, 3.35e12)),
    ("GH200", Peak("GH200", 989.4 * _T, 66.9 * _T, 4.0e12)),
    ("A100-SXM4-80GB", Peak("A100 SXM 80GB", 312.0 * _T, 19.5 * _T, 2.039e12)),
    ("A100", Peak("A100", 312.0 * _T, 19.5 * _T, 1.555e12)),
    ("L40S", Peak("L40S", 362.0 * _T, 91.6 * _T, 0.864e12)),
    ("L4", Peak("L4", 121.0 * _T, 30.3 * _T, 0.3e12)),
    ("A10", Peak("A10", 125.0 * _T, 31.2 * _T, 0.6e12)),
)


def peak_for(device_name: str) -> Optional[Peak]:
    for key, peak in PEAKS:
        if key in device_name:
            return peak
    return None


@dataclass(frozen=True)
class Work:
    flops: float
    bytes: float
    matmul: bool           # has a contraction: judged in FLOP/s
    tensor_cores: bool     # f16/bf16 operands: the tensor-core peak applies

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0


def work(graph, extents: dict) -> Work:
    def count(dims) -> int:
        n = 1
        for d in dims:
            n *= extents[d]
        return n

    flops = 0.0
    matmul = tensor = False
    for v in graph.values:
        if v.op == "matmul":
            a = v.operands[0]
            flops += 2.0 * count(v.dims) * extents[a.dims[-1]]
            matmul = True
            tensor = tensor or a.dtype.name in ("f16", "bf16")
        elif v.op == "reduce":
            flops += count(v.operands[0].dims)
        elif v.op not in ("param", "const", "idx", "cast", "permute"):
            flops += count(v.dims)
    nbytes = sum(count(p.dims) * p.dtype.itemsize for p in graph.params if not p.is_scalar)
    nbytes += sum(count(r.dims) * r.dtype.itemsize for r in graph.results)
    return Work(flops, float(nbytes), matmul, tensor)


@dataclass(frozen=True)
class Rate:
    value: float           # FLOP/s or bytes/s
    unit: str              # 'TFLOP/s' or 'TB/s'
    fraction: Optional[float]   # of the roofline, None when the peak is unknown

    def columns(self) -> tuple[str, str]:
        """('226.10', '22.9%'): the rate in T-units and the fraction, for tables."""
        if self.value != self.value:
            return "-", "-"
        return f"{self.value / 1e12:.2f}", (f"{self.fraction:.1%}" if self.fraction is not None else "?")

    def text(self) -> str:
        value, pct = self.columns()
        return f"{value} {self.unit} ({pct} of the roofline)"


def roof(w: Work, peak: Optional[Peak], copy_bandwidth: Optional[float]) -> Optional[float]:
    """The roofline's bound for this work: FLOP/s for a matmul, bytes/s otherwise."""
    bandwidth = copy_bandwidth or (peak.hbm if peak else None)
    if not w.matmul:
        return bandwidth
    if peak is None:
        return None
    compute = peak.tensor_f16 if w.tensor_cores else peak.f32
    return min(compute, w.intensity * bandwidth) if bandwidth else compute


def rate(seconds: float, w: Work, peak: Optional[Peak], copy_bandwidth: Optional[float]) -> Rate:
    bound = roof(w, peak, copy_bandwidth)
    if not seconds > 0:          # nothing measurable (an empty call)
        return Rate(math.nan, "TFLOP/s" if w.matmul else "TB/s", None)
    if w.matmul:
        value, unit = w.flops / seconds, "TFLOP/s"
    else:
        value, unit = w.bytes / seconds, "TB/s"
    return Rate(value, unit, value / bound if bound else None)
