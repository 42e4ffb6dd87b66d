"""Code generation: groups and schedules → CUDA C++ (rendered through templates/)."""
from __future__ import annotations

from ..schedule.choose import plan, problem
from ..schedule.layout import plan_layout
from ..schedule.partition import partition
from .cuda import KernelSource, render


def sources_for(kernel, extents: dict[str, int], sm_count: int = 132, arch: str = "sm_90a",
                hbm_gbps: float = 0.0) -> list[KernelSource]:
    """The CUDA kernels one call at these sizes runs (operands assumed 16-byte aligned) on a
    GPU of `sm_count` SMs and `hbm_gbps` of peak memory bandwidth (0: unknown)."""
    graph = kernel.graph
    out = []
    for group in partition(graph):
        layout = plan_layout(group, graph)
        p = problem(group, layout, extents, set(), sm_count, arch, hbm_gbps)
        for launch in plan(p, kernel.hints):
            out.append(render(graph, group, layout, launch.schedule, launch.stage))
    return out
