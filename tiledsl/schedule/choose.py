"""Choosing a schedule for a group at the sizes of a call, and its grid.

Pure Python, free of CuPy, so every choice can be rendered, compiled and
inspected on a machine without a GPU (`tiledsl emit --stage cubin`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..ir.graph import Graph
from .hints import Hints
from .layout import Layout
from .partition import Group
from .schedules import MAX_ROW_ELEMENTS, Schedule

INDEX32_LIMIT = 2 ** 31 - 1
MAX_GRID = 2 ** 31 - 1


@dataclass(frozen=True)
class Launch:
    schedule: Schedule
    grid: int
    loop_extents: tuple[int, ...]


def loop_extents(layout: Layout, extents: dict[str, int]) -> tuple[int, ...]:
    out = []
    for loop in layout.loops:
        n = 1
        for d in loop:
            n *= extents[d]
        out.append(n)
    return tuple(out)


def vector_width(layout: Layout, loops: tuple[int, ...], misaligned: set[int],
                 inner_loop: Optional[int], cap: Optional[int] = None) -> int:
    """Elements per vector access along the innermost loop.

    Sized so the main operand (the biggest one walking that loop) moves 16
    bytes per access; narrower by alignment (`misaligned` holds id()s of
    operands whose base address is not 16-byte aligned) and divisibility.
    """
    if inner_loop is None:
        return 1
    ops = [op for op in layout.inputs + layout.outputs if op.loops and op.loops[-1] == inner_loop]
    if not ops:
        return 1
    main = max(ops, key=lambda op: (len(op.loops), op.role == "in", op.dtype.itemsize))
    widest = max(op.dtype.itemsize for op in ops)
    vec = max(1, min(8, 16 // main.dtype.itemsize, 32 // widest))
    if cap:
        vec = min(vec, cap)
    while vec > 1 and (loops[inner_loop] % vec or any(id(op) in misaligned for op in ops)):
        vec //= 2
    return vec


# Registers a thread may spend keeping its share of a row (in 4-byte words).
ROW_REGISTER_BUDGET = 32


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def plan(graph: Graph, group: Group, layout: Layout, extents: dict[str, int],
         misaligned: set[int], hints: Hints, sm_count: int = 132) -> Optional[Launch]:
    """The schedule and grid for one group at these sizes (None: nothing to do)."""
    loops = loop_extents(layout, extents)
    total = 1
    for n in loops:
        total *= n
    index64 = total > INDEX32_LIMIT
    if group.kind == "pointwise":
        if total == 0:
            return None
        inner = len(loops) - 1 if loops else None
        vec = vector_width(layout, loops, misaligned, inner, hints.vector)
        block = hints.threads or (hints.warps * 32 if hints.warps else 256)
        items = 4
        per_block = block * items
        grid = -(-(total // vec) // per_block)
        return Launch(Schedule("pointwise", block=block, vec=vec, items=items, index64=index64),
                      max(1, grid), loops)

    rows = 1
    for l in layout.kept_loops:
        rows *= loops[l]
    if rows == 0:
        return None
    r_elems = 1
    for l in layout.reduced_loops:
        r_elems *= loops[l]
    inner = len(loops) - 1 if len(loops) > layout.n_kept else None
    # Rows along the innermost memory dim are read by threads side by side;
    # otherwise a thread per row reads a column (coalesced across threads).
    row_major = inner is not None and _inner_is_reduced(layout)
    if not row_major and rows >= 4 * sm_count * 32:
        sched = Schedule("reduce_col", block=256, vec=1, items=0, row_threads=1, index64=index64)
        return Launch(sched, min(MAX_GRID, -(-rows // 256)), loops)
    vec = vector_width(layout, loops, misaligned, inner, hints.vector) if row_major else 1
    rvec = r_elems // vec
    r_loops = set(layout.reduced_loops)
    words_per_element = sum(op.dtype.itemsize for op in layout.inputs if set(op.loops) & r_loops) / 4
    max_elements = max(vec, int(ROW_REGISTER_BUDGET / max(words_per_element, 0.5)))
    for tpr in (32, 64, 128, 256, 512, 1024):
        items = _pow2_at_least(max(1, -(-rvec // tpr)))
        if items * vec <= min(max_elements, MAX_ROW_ELEMENTS):
            block = 128 if tpr == 32 else tpr
            sched = Schedule("reduce_row", block=block, vec=vec, items=items, row_threads=tpr,
                             index64=index64)
            break
    else:
        sched = Schedule("reduce_row", block=1024, vec=vec, items=0, row_threads=1024,
                         index64=index64)
    rows_per_block = sched.block // sched.row_threads
    grid = -(-rows // rows_per_block)
    if sched.items and any(not set(op.loops) & set(layout.kept_loops) and set(op.loops) & r_loops
                           for op in layout.inputs):
        # Row-invariant inputs (a weight over N) are loaded once per thread:
        # a persistent grid lets each block reuse them across many rows.
        grid = min(grid, sm_count * max(1, 2048 // sched.block))
    return Launch(sched, min(MAX_GRID, grid), loops)


def _inner_is_reduced(layout: Layout) -> bool:
    """Does the main operand's innermost memory dim belong to the reduced loops?"""
    inner = len(layout.loops) - 1
    spanning = [op for op in layout.inputs if op.loops and inner in op.loops]
    if not spanning:
        return True
    return all(op.loops[-1] == inner for op in spanning)
