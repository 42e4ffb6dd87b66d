"""What a tuning run found: the TuneReport, its table, JSON and roofline plot."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from .roofline import Peak, Work, rate

_ORDER = {"timed": 0, "wrong": 1, "failed": 2, "pruned": 3, "skipped": 4, "compiled": 5, "pending": 6}


@dataclass
class TuneReport:
    kernel: str
    extents: dict
    device: str                     # CUDA device name ('' for a dry run)
    arch: str
    groups: list                    # space.GroupSpace, with their candidates
    work: Work
    peak: Optional[Peak] = None
    copy_bandwidth: Optional[float] = None   # bytes/s, measured
    origin: str = "search"          # 'search', 'database', 'dry run'
    seconds: float = 0.0            # wall time of the whole run
    compile_seconds: float = 0.0
    compiled_now: int = 0           # kernels compiled by this run
    from_cache: int = 0             # kernels found in the compilation cache
    budget: Optional[float] = None
    stopped_by_budget: bool = False
    db_path: Optional[str] = None
    stored: bool = False
    warnings: list = field(default_factory=list)
    partition: str = ""             # the partition tuned: "" the fused one, "spread", "columns"
    partition_note: str = ""        # why another than the fused one (space.call_partition)
    peers: list = field(default_factory=list)     # peers.PeerResult

    # -- results --------------------------------------------------------------
    @property
    def winners(self) -> dict:
        """{group index: Schedule} to install with set_overrides."""
        return {g.index: g.winner.schedule for g in self.groups if g.winner is not None}

    @property
    def wrong(self) -> list:
        return [c for g in self.groups for c in g.candidates if c.status == "wrong"]

    @property
    def tuned_seconds(self) -> Optional[float]:
        """The last group's winner time: a whole call, with every group at its winner."""
        last = self.groups[-1].winner if self.groups else None
        return last.median if last is not None else None

    @property
    def default_seconds(self) -> Optional[float]:
        """A whole call with the first group at its default (later groups at theirs)."""
        first = self.groups[0] if self.groups else None
        d = next((c for c in first.candidates if c.is_default), None) if first else None
        return d.median if d is not None else None

    def uncompiled_groups(self) -> list[str]:
        """A dry run's groups of which no candidate compiled, one line each with the
        counts and the first failure's reason (the table lists every one). One pruned
        for its cubin's resources (a spill) did compile: it has a resource report."""
        lines = []
        for g in self.groups:
            if any(c.status == "compiled" or c.usage for c in g.candidates):
                continue
            counts: dict = {}
            for c in g.candidates:
                counts[c.status] = counts.get(c.status, 0) + 1
            why = next((c.reason for c in g.candidates if c.status == "failed"),
                       next((c.reason for c in g.candidates if c.reason), ""))
            lines.append(f"no candidate of {self.kernel}'s group {g.index} ({g.kind}) compiled for "
                         f"{self.arch} ({', '.join(f'{n} {s}' for s, n in counts.items())})"
                         + (f"; the first: {why.splitlines()[0][:300]}" if why else ""))
        return lines

    def counts(self) -> dict:
        out: dict = {}
        for g in self.groups:
            for c in g.candidates:
                out[c.status] = out.get(c.status, 0) + 1
        return out

    def rate_columns(self, seconds: Optional[float]) -> tuple[str, str]:
        if seconds is None or not seconds > 0:
            return "-", "-"
        return rate(seconds, self.work, self.peak, self.copy_bandwidth).columns()

    def rate_text(self, seconds: Optional[float]) -> str:
        if seconds is None or not seconds > 0:
            return "-"
        return rate(seconds, self.work, self.peak, self.copy_bandwidth).text()

    # -- text -----------------------------------------------------------------
    def table(self, top: Optional[int] = None) -> str:
        shape = ", ".join(f"{d}={n}" for d, n in self.extents.items())
        lines = [f"{self.kernel} [{shape}] on {self.device or self.arch + ' (no GPU: compiled, not run)'}"]
        if self.partition_note:
            lines.append(f"note: {self.partition_note}")
        unit = "TFLOP/s" if self.work.matmul else "TB/s"
        roof = ("peak " + self.peak.name if self.work.matmul and self.peak else
                "measured copy bandwidth" if self.copy_bandwidth else "table bandwidth")
        for g in self.groups:
            counts: dict = {}
            for c in g.candidates:
                counts[c.status] = counts.get(c.status, 0) + 1
            count_text = ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: _ORDER.get(kv[0], 9)))
            band = f"; noise band {g.choice.band:.1%}" if g.choice is not None and g.choice.winner else ""
            lines.append(f"group {g.index} ({g.kind}): {len(g.candidates)} candidates: {count_text}{band}")
            if self.origin == "dry run":
                lines.append(f"  {'config':44s} {'status':9s} {'regs':>4s} {'smem':>6s} reason")
                for c in sorted(g.candidates, key=lambda c: (_ORDER.get(c.status, 9), c.tag)):
                    regs = str(c.registers) if c.usage else ""
                    smem = str(c.shared_bytes) if c.usage else ""
                    mark = " (default)" if c.is_default else ""
                    lines.append(f"  {c.tag + mark:44s} {c.status:9s} {regs:>4s} {smem:>6s} {c.reason}")
                continue
            timed = sorted(g.by_status("timed"), key=lambda c: (c.median, c.tag))
            lines.append(f"  {'rank':>4s}  {'config':44s} {'time':>10s} {unit:>8s} {'% roof':>7s} "
                         f"{'regs':>4s}  note")
            shown = timed if top is None else timed[:top]
            for rank, c in enumerate(timed, 1):
                if c not in shown and c is not g.winner and not c.is_default:
                    continue
                notes = []
                if c is g.winner:
                    notes.append("WINNER")
                if c.is_default:
                    notes.append("default")
                if c.spread == c.spread and c.spread > 0.05:
                    notes.append(f"noisy ({c.spread:.0%})")
                value, pct = self.rate_columns(c.median)
                lines.append(f"  {rank:4d}  {c.tag:44s} {_time(c.median):>10s} {value:>8s} {pct:>7s} "
                             f"{c.registers:4d}  {' '.join(notes)}")
            if top is not None and len(timed) > len(shown):
                lines.append(f"        ... {len(timed) - len(shown)} more timed")
            for c in g.candidates:
                if c.status in ("wrong", "failed", "pruned", "skipped"):
                    lines.append(f"     -  {c.tag:44s} {c.status.upper():>10s}  {c.reason}")
            if g.choice is not None and g.winner is not None:
                lines.append(f"  winner: {g.winner.tag} ({g.origin}; {g.choice.reason})")
            elif g.winner is not None:
                lines.append(f"  winner: {g.winner.tag} ({g.origin})")
        lines.append(f"  % roof: of the roofline ({roof}); time: median of CUDA-event timings of a "
                     f"whole call" if self.origin != "dry run" else "")
        for p in self.peers:
            if p.seconds is None:
                lines.append(f"  vs {p.name}: {p.note}")
                continue
            ours = self.tuned_seconds
            parts = [f"{_time(p.seconds)}, {self.rate_text(p.seconds)}"]
            if ours and p.seconds > 0:
                parts.append(f"tiledsl is {p.seconds / ours:.2f}x its speed")
            if p.error is not None:
                parts.append(f"rel. error {p.error:.1e}")
            lines.append(f"  vs {p.name}: {'; '.join(parts)}")
        for c in self.wrong:
            lines.append(f"!! REJECTED {c.tag}: {c.reason}. This is a tiledsl compiler bug; please "
                         f"report it with this kernel and shape.")
        for w in self.warnings:
            lines.append(f"warning: {w}")
        tail = f"{self.origin}: {self.seconds:.1f} s"
        if self.compile_seconds:
            tail += (f" (compiling {self.compile_seconds:.1f} s: {self.compiled_now} kernels compiled, "
                     f"{self.from_cache} from the cache)")
        if self.stopped_by_budget:
            tail += f"; stopped by the {self.budget:g} s budget"
        if self.db_path:
            tail += f"; {'stored in' if self.stored else 'database'} {self.db_path}"
        lines.append(tail)
        return "\n".join(line for line in lines if line != "")

    def __str__(self) -> str:
        return self.table(top=10)

    def to_json(self) -> dict:
        def cand(c) -> dict:
            return {"tag": c.tag, "status": c.status, "reason": c.reason, "default": c.is_default,
                    "median_s": c.median, "spread": None if c.spread != c.spread else c.spread,
                    "error": None if c.error != c.error else c.error, "registers": c.registers,
                    "shared_bytes": c.shared_bytes, "schedule": repr(c.schedule)}
        return {"kernel": self.kernel, "extents": self.extents, "device": self.device, "arch": self.arch,
                "origin": self.origin, "seconds": self.seconds, "compile_seconds": self.compile_seconds,
                "compiled_now": self.compiled_now, "from_cache": self.from_cache,
                "stopped_by_budget": self.stopped_by_budget, "db_path": self.db_path, "stored": self.stored,
                "flops": self.work.flops, "bytes": self.work.bytes, "warnings": self.warnings,
                "partition": self.partition,
                "groups": [{"index": g.index, "kind": g.kind, "origin": g.origin,
                            "winner": g.winner.tag if g.winner else None,
                            "default": g.default.tag,
                            "band": g.choice.band if g.choice is not None else None,
                            "candidates": [cand(c) for c in g.candidates]} for g in self.groups],
                "peers": [{"name": p.name, "seconds": p.seconds, "error": p.error, "note": p.note}
                          for p in self.peers]}

    # -- the plot ---------------------------------------------------------------
    def plot(self, path: str) -> str:
        """A roofline plot of the timed candidates (and peers) to `path`."""
        from .plot import roofline_plot
        return roofline_plot(self, path)


def _time(seconds: Optional[float]) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "-"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"
