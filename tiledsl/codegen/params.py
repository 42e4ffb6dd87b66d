"""What a kernel takes: the C++ types its values are held and stored in, its parameter
list in launch order (what the launcher binds to each), and the TMA tensor maps the
launcher encodes for a warpgroup GEMM. Split from cuda.py, which renders the bodies."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from ..dtypes import DType
from ..schedule.layout import Layout, Operand, batched_operands, gemm_result_in_rows, operand_input
from ..schedule.partition import Group
from ..schedule.schedules import Schedule


def reg_type(d: DType) -> str:
    """The C++ type a value of dtype `d` is held in (f16/bf16: float)."""
    if d.is_float:
        return "double" if d.name == "f64" else "float"
    return d.ctype


def reg_bytes(d: DType) -> int:
    """Bytes of reg_type(d), rounded up to 4 (what a shared-memory slot for it takes)."""
    return 8 if d.bits == 64 else 4


def storage_type(d: DType) -> str:
    return "unsigned short" if d.name in ("f16", "bf16") else d.ctype


def kernel_params(group: Group, layout: Layout, schedule: Schedule = None,
                  stage: int = 1) -> tuple[list[str], list[tuple[str, int]]]:
    """The kernel's parameter declarations and, in the same order, what the
    launcher passes: ('in', k), ('out', k), ('part', k) (a split reduction's
    partials of reduction k), ('extent', loop), ('splits', 0), ('lanes', 0) (threads a row
    of a split reduction's combining kernel), ('counter', 0) (a zeroed word that the blocks
    of a split reduction finished by its last block count themselves on), ('scalar', index)."""
    decls, args = [], []
    split = schedule is not None and bool(schedule.splits)     # a split reduction or a split-K GEMM
    reduces = [v for v in group.values if v.op in ("reduce", "matmul")]
    if schedule is not None and schedule.tma and stage == 1:    # the operands' tensor maps, by value
        mm = next(v for v in group.values if v.op == "matmul")
        for name, operand in zip(("map_a", "map_b"), mm.operands):
            decls.append(f"const __grid_constant__ tdsl::TmaMap {name}")
            args.append(("tmap", operand_input(layout, operand).index))
        out = tma_stored_result(layout, schedule)
        if out is not None:
            decls.append("const __grid_constant__ tdsl::TmaMap map_c")
            args.append(("tmap_out", out.index))
    for op in layout.inputs:
        decls.append(f"const {storage_type(op.dtype)}* __restrict__ in{op.index}")
        args.append(("in", op.index))
    if split:
        for k, r in enumerate(reduces):
            const = "const " if stage == 2 else ""
            decls.append(f"{const}{reg_type(r.dtype)}* __restrict__ part{k}")
            args.append(("part", k))
    # a split reduction finished by its last block: one kernel with both stages' parameters
    fused = split and stage == 1 and schedule.last_block
    if not split or stage == 2 or fused:
        for op in layout.outputs:
            decls.append(f"{storage_type(op.dtype)}* __restrict__ out{op.index}")
            args.append(("out", op.index))
    for l in range(len(layout.loops)):
        decls.append(f"long long n{l}_arg")
        args.append(("extent", l))
    if split and (stage == 2 or schedule.kind == "matmul" or fused):
        decls.append("long long nsplit")
        args.append(("splits", 0))
    if split and (stage == 2 or fused) and schedule.kind != "matmul":     # threads a row (schedules.combine_lanes)
        decls.append("long long nlanes")
        args.append(("lanes", 0))
    if fused:   # the blocks that have finished (zero before the launch, and again after it)
        decls.append("unsigned* __restrict__ done")
        args.append(("counter", 0))
    for v in group.inputs:
        if v.op == "param" and not v.dims:
            i = v.attr("index")
            ctype = "double" if v.dtype.is_float else ("bool" if v.dtype.is_bool else "long long")
            decls.append(f"{ctype} s{i}")
            args.append(("scalar", i))
    return decls, args


@dataclass(frozen=True)
class MapSpec:
    """A tensor map of a C-contiguous input (runtime.tma encodes it): extents
    innermost first, the row pitch in bytes, the box (innermost first) one copy
    moves into shared memory, the element type; a batched operand's map has a
    third dim, its products `batch_bytes` apart, and a box one product deep."""
    dims: tuple
    row_bytes: int
    box: tuple
    dtype: str
    batch_bytes: int = 0

    @property
    def strides(self) -> tuple:
        """The byte pitch of each dim past the innermost."""
        return (self.row_bytes,) + ((self.batch_bytes,) if len(self.dims) == 3 else ())


def staged_columns(bn: int, size: int) -> int:
    """Columns of a specialized block's results staged at a time: 256 bytes of a row
    (its buffer's width), fewer where that does not divide the tile (128x192: 64 of f16)."""
    cw = min(bn, 256 // size)
    while bn % cw:
        cw //= 2
    return cw


def tma_stored_result(layout: Layout, schedule: Schedule) -> Optional[Operand]:
    """The result a specialized GEMM stores by TMA from its staging buffer (one thread
    a box, so the multiplying warps go on to the next tile while the copy drains):
    the one 2- or 4-byte result along N (`gemm_result_in_rows`), laid out [M, N]."""
    op = gemm_result_in_rows(layout) if schedule.specialized and not schedule.splits else None
    if op is not None and tuple(op.loops) == (layout.n_kept - 2, layout.n_kept - 1):
        return op
    return None


def tensor_map_specs(group: Group, layout: Layout, schedule: Schedule, loop_extents: tuple) -> list:
    """The tensor maps a TMA GEMM's launch passes (A's, then B's), as the
    template's copies read them: each operand a C-contiguous input, extents
    innermost first (a batched one's products as a third dim); a box of one K
    tile (128 bytes of K) by the tile's rows where K is contiguous, else (16-bit
    A as [K][M] or B as [K][N]) 64 M or N values by the K tile, one per 64 rows
    or columns. Blocks in pairs (`cluster` 2) each copy half of B: its boxes are
    then half as tall (half the tile's columns, or half its K tile)."""
    mm = next(v for v in group.values if v.op == "matmul")
    lk = layout.n_kept
    bm, bn, bk = schedule.tile
    specs = []
    for operand, rows, share, batched in zip(mm.operands, (bm, bn), (1, schedule.cluster),
                                             batched_operands(group, layout)):
        op = operand_input(layout, operand)
        slow, fast = op.loops[-2:]
        inner, outer = loop_extents[fast], loop_extents[slow]
        box = (bk, rows // share) if fast == lk else (64, bk // share)
        spec = MapSpec((inner, outer), inner * op.dtype.itemsize, box, op.dtype.name)
        if batched:     # the product's batch dims as one: product bz
            spec = MapSpec((inner, outer, math.prod(loop_extents[l] for l in op.loops[:-2])), spec.row_bytes,
                           box + (1,), spec.dtype, inner * outer * op.dtype.itemsize)
        specs.append((op.index, spec))
    out = tma_stored_result(layout, schedule)
    if out is not None:     # raw 2- or 4-byte words (no TF32 rounding), a warpgroup's 64 rows by 128 bytes
        slow, fast = (loop_extents[l] for l in out.loops)
        size = out.dtype.itemsize
        specs.append((("out", out.index), MapSpec((fast, slow), fast * size, (128 // size, 64), f"u{8 * size}")))
    return specs
