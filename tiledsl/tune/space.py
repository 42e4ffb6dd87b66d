"""The search space of one kernel at one call's sizes, and the static pruning
that happens before anything launches.

Per fusion group the candidates are `schedule.choose.candidates(problem)`
(with the default first, added if missing), capped at `max_candidates`. A
candidate is pruned, with the reason kept, when

  * `fits()` rejects it for this problem, or it asks for more threads per
    block than the device allows (before compiling), or
  * its compiled cubin spills registers, needs more registers per block or
    more static shared memory than a block may have (after compiling: the
    resource report of ptxas, see runtime/toolchain.ResourceUsage).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from ..errors import TdslError
from ..schedule.choose import candidates, default, fits, launches
from ..schedule.problem import Problem, problem
from ..schedule.layout import plan_layout
from ..schedule.partition import partition_of
from ..schedule.schedules import Schedule
from .select import resource_key

MAX_CANDIDATES = 64


@dataclass(frozen=True)
class DeviceLimits:
    """What one block may use (CUDA's limits for compute capability 7.0 to 10.x)."""
    max_threads_per_block: int = 1024
    max_registers_per_thread: int = 255
    registers_per_block: int = 65536
    shared_bytes_per_block: int = 48 * 1024     # static __shared__ (no opt-in)
    dynamic_shared_bytes: int = 227 * 1024      # with the opt-in (sm_90; sm_80: 163 KB)

    @classmethod
    def of_device(cls, device: int) -> "DeviceLimits":
        import cupy
        rt = cupy.cuda.runtime

        def attr(name: str, number: int, fallback: int) -> int:
            try:
                return int(rt.deviceGetAttribute(getattr(rt, name, number), device)) or fallback
            except Exception:   # noqa: BLE001 - an attribute this driver lacks: keep CUDA's value
                return fallback
        base = cls()
        return cls(max_threads_per_block=attr("cudaDevAttrMaxThreadsPerBlock", 1, base.max_threads_per_block),
                   registers_per_block=attr("cudaDevAttrMaxRegistersPerBlock", 12, base.registers_per_block),
                   shared_bytes_per_block=attr("cudaDevAttrMaxSharedMemoryPerBlock", 8,
                                               base.shared_bytes_per_block),
                   dynamic_shared_bytes=attr("cudaDevAttrMaxSharedMemoryPerBlockOptin", 97,
                                             base.dynamic_shared_bytes))


@dataclass
class Candidate:
    """One schedule of one group, and everything learned about it."""
    group: int
    schedule: Schedule
    is_default: bool = False
    status: str = "pending"    # pending, compiled, timed, pruned, failed, wrong, skipped
    reason: str = ""           # why pruned / failed / wrong / skipped
    stages: tuple = ()         # the launches' stage numbers (2 for a split reduction)
    usage: list = field(default_factory=list)     # ResourceUsage per launch, once compiled
    error: float = math.nan    # relative error against the float64 reference
    median: Optional[float] = None                 # seconds per call
    samples: list = field(default_factory=list)
    spread: float = math.nan   # relative spread of the repeats
    cut_short: bool = False    # timed only briefly: clearly slower than the best so far
    compile_seconds: float = 0.0

    label: str = ""            # config_label(schedule), unique within its group

    @property
    def tag(self) -> str:
        return self.label or config_label(self.schedule)

    @property
    def registers(self) -> int:
        return max((u.registers for u in self.usage if u is not None), default=0)

    @property
    def shared_bytes(self) -> int:
        return max((u.shared_bytes for u in self.usage if u is not None), default=0)

    @property
    def resources(self) -> tuple:
        s = self.schedule
        return resource_key(s.block, s.tile, s.stages, self.registers, self.shared_bytes)

    def mark(self, status: str, reason: str = "") -> None:
        self.status, self.reason = status, reason


@dataclass
class GroupSpace:
    index: int
    kind: str
    problem: Problem
    default: Schedule
    candidates: list
    winner: Optional[Candidate] = None
    choice: object = None           # select.Choice
    origin: str = "search"          # 'search', 'db exact', 'default (no candidate passed)'
    partition: str = ""             # whose group: "" the fused partition, "spread", "columns"

    def by_status(self, status: str) -> list:
        return [c for c in self.candidates if c.status == status]


def call_partition(kernel, extents: dict, sm_count: int = 132, arch: str = "sm_90a") -> tuple[str, str]:
    """(mode, note): the partition a call at these sizes runs (codegen.partition_at): "" the
    fused one, "spread" (a few long rows: schedule.problem.runs_spread) or "columns" (short
    columns kept whole: runs_columns), and for another than the fused one a line saying so.
    The tuner tunes that partition's groups, and its records name the partition."""
    from ..codegen import partition_at
    groups, _, mode = partition_at(kernel.graph, extents, sm_count, arch)
    if mode == "spread":
        return mode, (f"at these sizes the call runs spread: {len(groups)} groups, each reduction split over "
                      f"the GPU and the results written by a pointwise kernel (few long rows); the tuner "
                      f"searches those groups")
    if mode == "columns":
        return mode, (f"at these sizes the call keeps columns whole: {len(groups)} group(s), each reduction "
                      f"across memory writing its results over whole columns itself (short columns); the "
                      f"tuner searches those")
    return mode, ""


def search_space(kernel, extents: dict, *, sm_count: int = 132, limits: DeviceLimits = DeviceLimits(),
                 max_candidates: int = MAX_CANDIDATES, schedules: Optional[dict] = None,
                 arch: str = "sm_90a", hbm_gbps: float = 0.0, mode: str = "") -> list[GroupSpace]:
    """The candidates of every group of partition `mode` ("" the fused one, "spread",
    "columns": call_partition), statically pruned (not compiled yet).

    `schedules` ({group: [Schedule, ...]}) replaces candidates() for the groups
    it names (tests use it to plant schedules that cannot fit).
    """
    graph = kernel.graph
    spaces = []
    for group in partition_of(graph, mode):
        layout = plan_layout(group, graph)
        p = problem(group, layout, extents, frozenset(), sm_count, arch, hbm_gbps)
        base = default(p, kernel.hints)
        found = list(schedules[group.index]) if schedules and group.index in schedules \
            else candidates(p, kernel.hints)
        ordered = [base] + [s for s in dict.fromkeys(found) if s != base]
        cands = [Candidate(group.index, s, is_default=(k == 0))
                 for k, s in enumerate(ordered[:max(1, max_candidates)])]
        unique_labels(cands)
        for c in cands:
            why = static_problem(p, c.schedule, limits)
            if why:
                c.mark("pruned", why)
                continue
            try:
                c.stages = tuple(launch.stage for launch in launches(p, c.schedule))
            except TdslError as err:
                c.mark("pruned", err.message)
        spaces.append(GroupSpace(group.index, group.kind, p, base, cands, partition=mode))
    return spaces


_LAUNCH_ONLY = {"blocks_per_sm": "ps", "splits": "sp"}


def config_label(s: Schedule) -> str:
    """The schedule's tag plus the fields that change only its launch (the tag
    names the compiled kernel, so it leaves those out): 'row_b256_..._x32_ps8',
    'mm_wg_..._sk_x32_sp2' (every split count named, two included)."""
    extra = "".join(f"_{abbr}{getattr(s, name)}" for name, abbr in _LAUNCH_ONLY.items() if getattr(s, name, 0))
    return s.tag + extra


def unique_labels(cands: list) -> None:
    """Labels are names in tables, the database and the tie-break: make sure
    no two candidates share one (a hash of the fields settles a collision)."""
    import hashlib
    seen: dict = {}
    for c in cands:
        c.label = config_label(c.schedule)
        seen.setdefault(c.label, []).append(c)
    for label, same in seen.items():
        if len(same) > 1:
            for c in same:
                c.label = f"{label}_{hashlib.sha1(repr(c.schedule).encode()).hexdigest()[:6]}"


def static_problem(p: Problem, s: Schedule, limits: DeviceLimits) -> str:
    """Why `s` cannot run `p` on this device, known without compiling ('' if none)."""
    why = fits(p, s)
    if why:
        return f"does not fit: {why}"
    if s.block > limits.max_threads_per_block:
        return f"{s.block} threads per block, more than the device's {limits.max_threads_per_block}"
    if s.shared_bytes > limits.dynamic_shared_bytes:
        return (f"{s.shared_bytes // 1024} KB of shared memory, more than the device's "
                f"{limits.dynamic_shared_bytes // 1024} KB per block")
    return ""


def resource_problem(usage, block: int, limits: DeviceLimits) -> str:
    """Why a compiled kernel should not be timed ('' if none): spills, or more
    registers or static shared memory than a block may have."""
    if usage is None:
        return ""     # no resource report: nothing to judge; timing decides
    if usage.spills and usage.spill_stores is None:
        return f"uses {usage.local_bytes} bytes of local memory per thread (spills likely)"
    if usage.spills:
        return (f"spills registers ({usage.spill_stores or 0} bytes stored, "
                f"{usage.spill_loads or 0} bytes loaded per thread)")
    if usage.registers > limits.max_registers_per_thread:
        return f"{usage.registers} registers per thread, more than {limits.max_registers_per_thread}"
    # registers are allocated per warp, in units of 256
    allocated = -(-usage.registers * 32 // 256) * 256 * -(-block // 32)
    if allocated > limits.registers_per_block:
        return (f"{usage.registers} registers x {block} threads = {allocated} as allocated, more "
                f"than the {limits.registers_per_block} registers of a block")
    if usage.shared_bytes > limits.shared_bytes_per_block:
        return (f"{usage.shared_bytes} bytes of shared memory, more than the "
                f"{limits.shared_bytes_per_block} a block may declare")
    return ""
