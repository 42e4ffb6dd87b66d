"""`tiledsl emit`: what each compiler stage makes of a kernel, as text.

All stages run without a GPU: the CUDA stages compile with NVRTC from the
cuda-bindings package and disassemble with the cuobjdump package.
"""
from __future__ import annotations

from typing import Optional

from .errors import TdslError


def _extents(kernel, extents: Optional[dict]) -> dict[str, int]:
    if extents is None and kernel.graph.dims:
        raise TdslError(f"--stage needs --shape to choose schedules for {kernel.name} "
                        f"(dims: {', '.join(kernel.graph.dims)})")
    return dict(extents or kernel.graph.fixed_extents)


def emit_stage(kernel, stage: str, extents: Optional[dict], arch: str, hbm_gbps: float = 0.0) -> str:
    """Stage `stage` of `kernel` at `extents` (its dims' sizes: inputs.extents_for; None for the IR)."""
    if stage == "ir":
        return kernel.ir_text()
    from .codegen import groups_for, sources_for
    from .schedule.partition import describe
    extents = _extents(kernel, extents)
    sources = sources_for(kernel, extents, arch=arch, hbm_gbps=hbm_gbps)
    if stage == "schedule":     # the groups a call at these sizes runs (spread where a few long rows are)
        lines = [describe([g for g, _ in groups_for(kernel.graph, extents, arch=arch)])]
        for s in sources:
            lines.append(f"kernel {s.name}: {s.schedule}")
            if s.schedule.kind == "reduce_split" and s.schedule.row_threads == s.schedule.block \
                    and not kernel.hints.directives and not s.name.endswith("_s2"):
                lines.append(f"  (splits={s.schedule.splits} by the rules; on the GPU the launcher takes as many as "
                             "fill every SM's room once the kernel is compiled: columns.splits_filling_room)")
            if s.schedule.kind == "reduce_row" and s.schedule.persistent:
                lines.append(f"  (a persistent grid: on the GPU the launcher launches only the clusters of "
                             f"{s.schedule.cluster} resident at once, each looping over rows: resident.resident_clusters)")
        return "\n".join(lines)
    if stage == "cuda":
        return "\n".join(s.source for s in sources)
    from .runtime.toolchain import compile_cuda, sass
    parts = []
    for s in sources:
        if stage == "ptx":
            parts.append(compile_cuda(s.source, arch=arch, want="ptx").ptx)
            continue
        compiled = compile_cuda(s.source, arch=arch)
        usage = compiled.resources.get(s.name)
        header = f"// {s.name} for {arch}: {usage}"
        if stage == "sass":
            parts.append(header + "\n" + sass(compiled.cubin))
        else:
            parts.append(f"{header}\n// cubin: {len(compiled.cubin)} bytes")
    return "\n".join(parts)
