"""How a group walks memory: its loops, and where each operand lives in them.

The *space* of a group is its dims in one order: for a reduce group the kept
dims K (outer) then the reduced dims R (inner); for a pointwise group all its
dims. Adjacent dims merge into one loop when every operand has both,
adjacent and in that order, or neither: `x[B,T,C] + bias[C]` walks 2 loops
(B·T, C) instead of 3, so index arithmetic shrinks to one divmod. A dim
read by `idx()` stays a loop of its own.

Operands are dense in their own dim order (the launcher makes them so), so a
stride is a product of loop extents and no strides are passed at launch.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Optional

from ..dtypes import DType
from ..ir.graph import Graph, Value
from .partition import Group


@dataclass(frozen=True)
class Operand:
    value: Value
    role: str                     # 'in' or 'out'
    dtype: DType                  # storage dtype
    dims: tuple[str, ...]         # memory order, outer → inner
    loops: tuple[int, ...]        # the loops it spans, in its memory order
    index: int                    # position among the group's operands of this role

    @property
    def cname(self) -> str:
        return f"{'in' if self.role == 'in' else 'out'}{self.index}"


@dataclass(frozen=True)
class Layout:
    loops: tuple[tuple[str, ...], ...]   # each loop: the dims merged into it, outer → inner
    n_kept: int                          # loops [0, n_kept) are K, the rest R
    inputs: tuple[Operand, ...]
    outputs: tuple[Operand, ...]

    @property
    def kept_loops(self) -> range:
        return range(self.n_kept)

    @property
    def reduced_loops(self) -> range:
        return range(self.n_kept, len(self.loops))

    # (cached: the schedule rules ask for these dozens of times a plan, and a Layout never changes)
    @cached_property
    def reduced_inputs(self) -> tuple[Operand, ...]:
        """The inputs over a reduced loop: a row's elements, and weights along it."""
        return tuple(op for op in self.inputs if set(op.loops) & set(self.reduced_loops))

    @cached_property
    def row_inputs(self) -> tuple[Operand, ...]:
        """The inputs over a kept and a reduced loop: a row's own elements."""
        return tuple(op for op in self.reduced_inputs if set(op.loops) & set(self.kept_loops))

    @cached_property
    def is_row_major(self) -> bool:
        """row_major(self), asked a dozen times a plan."""
        inner = len(self.loops) - 1 if self.loops else None
        if inner is None or inner < self.n_kept:
            return False
        return all(op.loops[-1] == inner for op in self.inputs if op.loops and inner in op.loops)

    @cached_property
    def weight_inputs(self) -> tuple[Operand, ...]:
        """The inputs over reduced loops only: weights along the row, the same in every row."""
        return tuple(op for op in self.reduced_inputs if not set(op.loops) & set(self.kept_loops))

    def loop_of(self, dim: str) -> int:
        return next(i for i, loop in enumerate(self.loops) if dim in loop)


def row_major(layout: Layout) -> bool:
    """Whether the innermost loop is a reduced one and every input spanning it has it
    innermost in memory: a row's elements lie next to each other."""
    return layout.is_row_major


def _main_order(group: Group, graph: Graph) -> tuple[str, ...]:
    """The dim order to walk: that of the largest operand spanning the whole space."""
    space = group.space
    candidates = [v for v in group.inputs if set(v.dims) == space]
    candidates += [v for v in group.outputs if set(v.dims) == space]
    if candidates:
        best = max(candidates, key=lambda v: v.dtype.itemsize)
        return best.dims
    order: dict[str, None] = {}
    for v in list(group.inputs) + list(group.outputs):
        for d in v.dims:
            order.setdefault(d)
    for d in group.kept + group.axes:
        order.setdefault(d)
    return tuple(order)


def _merge(dims: list[str], orders: list[tuple[str, ...]], pinned: set[str]) -> list[tuple[str, ...]]:
    loops: list[list[str]] = []
    for d in dims:
        if loops and d not in pinned and loops[-1][-1] not in pinned and all(
                (d in o) == (loops[-1][-1] in o) and
                (d not in o or o.index(d) == o.index(loops[-1][-1]) + 1) for o in orders):
            loops[-1].append(d)
        else:
            loops.append([d])
    return [tuple(loop) for loop in loops]


def plan_layout(group: Group, graph: Graph) -> Layout:
    if group.kind == "matmul":   # tiles address (batch, M, N, K) separately: no merging
        k_loops = [(d,) for d in group.kept]
        r_loops = [(d,) for d in group.axes]
    else:
        order = _main_order(group, graph)
        kept = [d for d in order if d in group.kept] + [d for d in group.kept if d not in order]
        axes = [d for d in order if d in group.axes] + [d for d in group.axes if d not in order]
        orders = [v.dims for v in group.inputs] + [v.dims for v in group.outputs]
        pinned = {v.attr("dim") for v in group.values if v.op == "idx"}
        k_loops = _merge(kept, orders, pinned)
        r_loops = _merge(axes, orders, pinned)
    loops = tuple(k_loops + r_loops)

    def loop_index(d: str) -> int:
        return next(i for i, loop in enumerate(loops) if d in loop)

    def operand(v: Value, role: str, index: int) -> Operand:
        dims = v.dims
        spanned = tuple(dict.fromkeys(loop_index(d) for d in dims))
        return Operand(v, role, v.dtype, dims, spanned, index)

    # Scalar parameters travel by value; every other input is a pointer.
    in_memory = [v for v in group.inputs if not (v.op == "param" and not v.dims)]
    inputs = tuple(operand(v, "in", i) for i, v in enumerate(in_memory))
    outputs = tuple(operand(v, "out", i) for i, v in enumerate(group.outputs))
    return Layout(loops, len(k_loops), inputs, outputs)


def operand_input(layout: Layout, value: Value):
    """The layout input a matmul operand reads, looking through transposes
    (`w.T` reads w in place: its offsets follow loops, not dim order) unless the
    transposed value itself was stored (a result of the program, `y = x.T`), or
    None when the operand is computed."""
    while True:
        found = next((op for op in layout.inputs if op.value.id == value.id), None)
        if found is not None or value.op != "permute":
            return found
        value = value.operands[0]


def batched_operands(group: Group, layout: Layout) -> tuple:
    """Whether each operand of the group's product (A, B) is read with batch dims
    (`matmul.tma_operands` lets TMA copy it only where they are all the product's,
    in order: its tensor map then has a third dim, whose coordinate is product bz)."""
    mm = next(v for v in group.values if v.op == "matmul")
    return tuple(len(operand_input(layout, o).loops) > 2 for o in mm.operands)


def over_every_loop(layout: Layout, op: Operand) -> bool:
    """Whether `op` spans every loop of the group in order: laid out as the flat index of the
    walk (its element at flat index f is f itself)."""
    return tuple(op.loops) == tuple(range(len(layout.loops)))


def across_operands(layout: Layout) -> list:
    """The operands that span the innermost loop without being contiguous along
    it (`x.T` beside `x`): what a transposing tile passes through shared memory."""
    inner = len(layout.loops) - 1
    return [op for op in layout.inputs + layout.outputs if inner in op.loops and op.loops[-1] != inner]


def transposed_loop(layout: Layout) -> Optional[int]:
    """The loop a transposing tile pairs with the innermost one: the innermost
    loop of the `across_operands`, where they all agree; else None."""
    across = {op.loops[-1] for op in across_operands(layout)} if layout.loops else set()
    return next(iter(across)) if len(across) == 1 else None


def column_loop(layout) -> Optional[int]:
    """The kept loop a reduction across memory's vectors walk: the last kept loop, where
    the widest input has it innermost; else None."""
    kept = list(layout.kept_loops)
    streamed = [op for op in layout.inputs if set(op.loops) & set(layout.reduced_loops)]
    if not kept or not streamed:
        return None
    widest = max(streamed, key=lambda op: (len(op.loops), op.dtype.itemsize))
    return kept[-1] if widest.loops and widest.loops[-1] == kept[-1] else None


def gemm_result_in_rows(layout: Layout) -> Optional[Operand]:
    """A GEMM group's one result where it is 2 or 4 bytes an element and contiguous
    along N (the last kept loop): its accumulator pairs then leave in one store, and a
    specialized block's through shared memory in 16-byte pieces of rows."""
    outs = layout.outputs
    if (len(outs) == 1 and outs[0].loops and outs[0].loops[-1] == layout.n_kept - 1
            and outs[0].dtype.itemsize in (2, 4)):
        return outs[0]
    return None


def peeled_operands(layout: Layout) -> Optional[tuple[list, list]]:
    """(whole, gathered): the operands along the row of a row reduction that can be peeled
    to aligned vectors (Schedule.peel), else None. Rows lie along the innermost loop,
    reduced over it alone; `whole` operands have every loop of the group (each row then
    starts at the same element offset in all of them: one head a row), `gathered` ones the
    reduced loop only (a weight over N, its lanes read one by one: its alignment differs)."""
    if not layout.loops or not row_major(layout):
        return None
    inner = len(layout.loops) - 1
    if list(layout.reduced_loops) != [inner]:
        return None
    along = [op for op in layout.inputs + layout.outputs if inner in op.loops]
    whole = [op for op in along if over_every_loop(layout, op)]
    gathered = [op for op in along if tuple(op.loops) == (inner,) and not over_every_loop(layout, op)]
    if len(whole) + len(gathered) != len(along):
        return None
    return whole, gathered


def shifted_weights(layout: Layout, vec: int) -> list:
    """The inputs a peeled row in vectors of `vec` with Schedule.shift reads in 16-byte pieces
    shifted by its head: its 4- and 2-byte weights over the row alone whose `vec` lanes fill whole
    pieces (peeled_operands' gathered inputs; any others stay gathered a lane at a time)."""
    operands = peeled_operands(layout)
    if operands is None:
        return []
    return [op for op in operands[1] if op.dtype.itemsize in (2, 4) and vec * op.dtype.itemsize % 16 == 0
            and any(op is i for i in layout.inputs)]


def shifted_weight_words(layout: Layout, vec: int) -> float:
    """The 4-byte registers a vector of each weight shifted_weights names holds (Schedule.shift): its
    two 16-byte-aligned vectors, and for 16-bit lanes their values widened to f32 beside them. A
    bf16 rmsnorm's looped row (4096x4099: 4 words of row and 8 of weight an iteration) spilled 8
    bytes unrolled 4 deep at 64 registers, where the f32 rmsnorm's 12 words did not (sm_90a, sm_80)."""
    total = 0.0
    for op in shifted_weights(layout, vec):
        words = 2 * vec * op.dtype.itemsize / 4
        total += 2 * words if op.dtype.itemsize == 2 else words
    return total
