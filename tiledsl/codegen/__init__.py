"""Code generation: groups and schedules → CUDA C++ (rendered through templates/)."""
from __future__ import annotations

from ..schedule.choose import plan
from ..schedule.problem import problem, runs_columns, runs_spread
from ..schedule.layout import plan_layout
from ..schedule.partition import partition_of
from .cuda import KernelSource, render


def partition_at(graph, extents: dict[str, int], sm_count: int = 132, arch: str = "sm_90a") -> tuple:
    """(groups, layouts, mode): the fusion groups one call at these sizes runs and their
    layouts, as the launcher decides them (schedules pinned by the tuner apart): the
    partition (mode ""); where a few long rows would each take one block, the spread one
    ("spread"); where reductions across memory have short columns, the one that keeps
    columns whole ("columns")."""
    made = {}

    def parts(mode: str) -> tuple:      # each made only where asked for
        if mode not in made:
            groups = partition_of(graph, mode)
            made[mode] = groups, [plan_layout(g, graph) for g in groups]
        return made[mode]
    fused = parts("")
    if runs_spread(*fused, lambda: parts("spread"), extents, sm_count, arch):
        return parts("spread") + ("spread",)
    if runs_columns(*fused, lambda: parts("columns"), extents, sm_count, arch):
        return parts("columns") + ("columns",)
    return fused + ("",)


def groups_for(graph, extents: dict[str, int], sm_count: int = 132, arch: str = "sm_90a") -> list:
    """[(group, layout)] of what one call at these sizes runs (`partition_at`)."""
    groups, layouts, _ = partition_at(graph, extents, sm_count, arch)
    return list(zip(groups, layouts))


def sources_for(kernel, extents: dict[str, int], sm_count: int = 132, arch: str = "sm_90a",
                hbm_gbps: float = 0.0) -> list[KernelSource]:
    """The CUDA kernels one call at these sizes runs (operands assumed 16-byte aligned) on a
    GPU of `sm_count` SMs and `hbm_gbps` of peak memory bandwidth (0: unknown)."""
    graph = kernel.graph
    out = []
    for group, layout in groups_for(graph, extents, sm_count, arch):
        p = problem(group, layout, extents, set(), sm_count, arch, hbm_gbps)
        for launch in plan(p, kernel.hints):
            out.append(render(graph, group, layout, launch.schedule, launch.stage))
    return out
