"""`tiledsl bench`: the tiledsl kernel timed side by side with its peers.

Every implementation runs on the same random inputs (rotated past the L2 as
in the tuner), is timed with CUDA events, and is compared with the float64
reference; tiledsl runs the schedule its launcher picks (tuning database,
else the default), and the table says which.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .peers import runners, time_peer
from .roofline import Work, peak_for, rate
from .workload import Workload


@dataclass
class BenchRow:
    name: str
    seconds: Optional[float] = None
    error: Optional[float] = None
    note: str = ""


@dataclass
class BenchReport:
    kernel: str
    extents: dict
    device: str
    work: Work
    rows: list = field(default_factory=list)
    copy_bandwidth: Optional[float] = None
    schedules: str = ""

    def table(self) -> str:
        peak = peak_for(self.device)
        shape = ", ".join(f"{d}={n}" for d, n in self.extents.items())
        unit = "TFLOP/s" if self.work.matmul else "TB/s"
        ours = self.rows[0].seconds if self.rows else None
        lines = [f"{self.kernel} [{shape}] on {self.device}",
                 f"  {'implementation':24s} {'time':>10s} {unit:>8s} {'% roof':>7s} {'tiledsl speedup':>15s}  rel. error"]
        for r in self.rows:
            if r.seconds is None:
                lines.append(f"  {r.name:24s} {r.note}")
                continue
            speed = f"{r.seconds / ours:.2f}x" if ours and r.seconds > 0 else "-"
            err = f"{r.error:.1e}" if r.error is not None else "-"
            t = f"{r.seconds * 1e6:.1f} us" if r.seconds < 1e-3 else f"{r.seconds * 1e3:.3f} ms"
            value, pct = rate(r.seconds, self.work, peak, self.copy_bandwidth).columns()
            lines.append(f"  {r.name:24s} {t:>10s} {value:>8s} {pct:>7s} {speed:>15s}  {err}")
        lines.append(f"  tiledsl schedules: {self.schedules}")
        lines.append("  tiledsl speedup: the peer's time over tiledsl's (above 1: tiledsl is faster)")
        return "\n".join(lines)


def bench(kernel, extents: dict, peers: list, *, db=None, seed: Optional[int] = None) -> BenchReport:
    from ..runtime import launcher_for
    from ..runtime.launcher import _device_identity
    from ..runtime.measure import copy_bandwidth
    from .runner import _cupy
    cupy = _cupy()
    device = cupy.cuda.runtime.getDevice()
    if kernel._launcher is None:
        kernel._launcher = launcher_for(kernel)
    if db is not None:
        kernel._launcher.tuning_db = db
    load = Workload(kernel, extents, seed=seed, device=device).upload()
    report = BenchReport(kernel.name, dict(extents), _device_identity(device)[0], load.work,
                         copy_bandwidth=copy_bandwidth(device))
    row = BenchRow("tiledsl", error=max(load.check()))
    row.seconds = load.time().median
    report.rows.append(row)
    program = next((p for p in reversed(list(kernel._launcher._plans.values()))
                    if getattr(p, "extents", None) == load.extents), None)
    if program is not None:
        report.schedules = "; ".join(f"group {i}: {s.tag} ({origin})"
                                     for i, (s, origin) in sorted(program.choices.items()))
    for name, fn, note in runners(kernel, peers, extents):
        row = BenchRow(name, note=note)
        report.rows.append(row)
        if fn is None:
            continue
        row.error, row.seconds, why = time_peer(load, fn)
        row.note = why or row.note
    return report
