"""The problem a schedule is chosen for: one group at the sizes of one call (`Problem`,
`problem()`), the launches a schedule takes (`Launch`), and what every rule asks of it
(vector widths, the transposed loop, whether few long rows are spread over the GPU)."""
from __future__ import annotations

import math
from functools import cached_property
from dataclasses import dataclass
from typing import Optional

from .layout import Layout
from .layout import transposed_loop as layout_transposed_loop
from .layout import row_major as layout_row_major
from .partition import Group, online_pair_alone
from .schedules import Schedule

# The largest operand 32-bit indices serve. A walk's index steps up to one whole range past its
# end before its test fails (a grid-stride walk, a thread's chunk of a row: `first_c += 8 * TPR`),
# so an index must hold twice the range: at 2**31 - 5 elements it wrapped negative and walked on.
INDEX32_SPAN = 2 ** 30
MAX_GRID = 2 ** 31 - 1
MAX_GRID_Y = 65535          # a launch's blocks along y (pointwise outer: groups of the outermost loop)


@dataclass(frozen=True)
class Launch:
    schedule: Schedule
    grid: tuple[int, int, int]         # blocks in x, y (splits of a split reduction), z (matmul batch)
    loop_extents: tuple[int, ...]
    stage: int = 1                     # 2: a split reduction's (or split-K GEMM's) combining kernel
    sized_shared: int = 0              # dynamic shared memory that follows from the sizes (a row copied there)

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory this launch asks for: a split-K GEMM's combining
        kernel uses none of its pipeline's."""
        return self.schedule.shared_bytes + self.sized_shared if self.stage == 1 else 0


@dataclass(frozen=True)
class Problem:
    """What a schedule choice depends on: one group at one call's sizes."""
    group: Group
    layout: Layout
    loops: tuple[int, ...]            # extent of each loop
    misaligned: frozenset             # id()s of operands not 16-byte aligned
    sm_count: int
    arch: str = "sm_90a"              # the target: wgmma exists on sm_90a only
    hbm_gbps: float = 0.0             # the GPU's peak memory bandwidth (0: not known, as on the CPU)

    @property
    def hbm_gbps_per_sm(self) -> float:
        return self.hbm_gbps / self.sm_count if self.hbm_gbps else 0.0

    @property
    def total(self) -> int:
        return math.prod(self.loops)

    @property
    def rows(self) -> int:
        return math.prod(self.loops[l] for l in self.layout.kept_loops)

    @property
    def row_length(self) -> int:
        return math.prod(self.loops[l] for l in self.layout.reduced_loops)

    @property
    def inner(self) -> Optional[int]:
        return len(self.loops) - 1 if self.loops else None

    @property
    def index64(self) -> bool:
        """Indices reach the largest operand (and, outside a matmul, the whole
        space: a matmul's M*N*K is work, not an address) and a step past it."""
        sizes = [self.size(op.loops) for op in self.layout.inputs + self.layout.outputs]
        if self.group.kind != "matmul":
            sizes.append(self.total)
        return max(sizes, default=0) > INDEX32_SPAN

    def size(self, loops) -> int:
        n = 1
        for l in loops:
            n *= self.loops[l]
        return n

    def row_major(self) -> bool:
        """Is the innermost memory dim of the inputs a reduced one?"""
        return layout_row_major(self.layout)

    def splittable(self) -> bool:
        """One reduction level and only per-row results: partials can be
        combined by a second kernel (sum(x), column sums, means over batch); or,
        across memory, an online pair alone (softmax's statistics over M), its
        partials combined as (max, sum) pairs."""
        return self._splittable

    @cached_property
    def _splittable(self) -> bool:      # (splittable(), asked twice or more a plan)
        reduces = [v for v in self.group.values if v.op == "reduce"]
        ids = {r.id for r in reduces}
        if not reduces or any(set(r.dims) != set(self.group.kept) for r in reduces):
            return False
        if not self.row_major() and online_pair_alone(self.group):
            return all(not set(o.dims) & set(self.group.axes) for o in self.group.outputs)
        for r in reduces:
            stack, seen = list(r.operands), set()
            while stack:
                v = stack.pop()
                if v.id in ids:
                    return False
                if v.id not in seen:
                    seen.add(v.id)
                    stack.extend(v.operands)
        return all(not set(o.dims) & set(self.group.axes) for o in self.group.outputs)

    def has_row_invariant_inputs(self) -> bool:
        kept = set(self.layout.kept_loops)
        return any(not set(op.loops) & kept for op in self.layout.reduced_inputs)

    def words_per_row_element(self, vec: int) -> float:
        """4-byte registers a cached row needs per element, over all its inputs: 16-bit
        values loaded in vectors share a register two by two; loaded one by one (vec 1),
        each takes a register of its own (ptxas: an all-f16 layernorm spilled, counted at half).
        Hoisted bf16 weights count three quarters in vectors: held through the row, they are
        widened by shifts and masks where f16 ones are read a half at a time (ptxas sm_90a,
        2026-11-29: a bf16 layernorm with bf16 weight and bias, 24 elements a thread hoisted,
        spilled 8 bytes at 64 registers, 36 words counted at half; its f16 twin did not)."""
        weights = self.layout.weight_inputs
        return max(sum(0.75 if vec > 1 and op.dtype.name == "bf16" and op in weights else operand_words(op, vec)
                       for op in self.layout.reduced_inputs), 0.5)

    def words_per_row_element_per_row(self, vec: int) -> float:
        """The part of words_per_row_element that changes from row to row (what a prefetch doubles)."""
        kept = set(self.layout.kept_loops)
        return sum(operand_words(op, vec) for op in self.layout.reduced_inputs if set(op.loops) & kept)


def operand_words(op, vec: int) -> float:
    """4-byte registers one element of operand `op` takes in a thread read `vec` at a time."""
    # 8-bit values in vectors count 1.5 registers each: held four to a register, ptxas widens
    # them all ahead of their math (codegen fuzz, 2026-11-27, a warp a row at 32 elements a
    # thread: an f32 row of 1000 and an i8 one spilled 72 bytes on sm_80 counted at a quarter
    # word each; sum(tanh(x)) over i8[1000] 76 bytes on sm_90a at half a word, none at 1.5)
    return (1.5 if op.dtype.itemsize == 1 else op.dtype.itemsize / 4) if vec > 1 else max(1.0, op.dtype.itemsize / 4)


def problem(group: Group, layout: Layout, extents: dict[str, int], misaligned=frozenset(),
            sm_count: int = 132, arch: str = "sm_90a", hbm_gbps: float = 0.0) -> Problem:
    loops = []
    for loop in layout.loops:
        n = 1
        for d in loop:
            n *= extents[d]
        loops.append(n)
    return Problem(group, layout, tuple(loops), frozenset(misaligned), sm_count, arch, hbm_gbps)


# A row of at least this many elements, in a group that writes results over whole rows and
# has too few rows to fill the GPU, runs spread (`partition(spread=True)`): with one row, a
# block streams the whole of it alone (x / sum(x) over 2^22 f32: 599 us, 0.03x a copy of its
# bytes; H100 2026-11-26, scripts/probe_onerow.py).
SPREAD_MIN_ROW = 1 << 18


def few_long_rows(groups, layouts, extents: dict, sm_count: int, arch: str) -> bool:
    """Whether a reduce group writes results over whole rows (so it cannot split its rows
    over blocks) while its rows are too few to fill the GPU (4 or more SMs each, as for a
    split reduction) and at least SPREAD_MIN_ROW long."""
    for g, lay in zip(groups, layouts):
        if g.kind == "reduce":
            p = problem(g, lay, extents, frozenset(), sm_count, arch)
            if not p.splittable() and 4 * p.rows <= sm_count and p.row_length >= SPREAD_MIN_ROW:
                return True
    return False


def runs_spread(groups, layouts, spread, extents: dict, sm_count: int, arch: str) -> bool:
    """Whether a call at these sizes runs the spread partition: the partition (`groups`,
    `layouts`) has few long rows, and every reduce group of the spread one (`spread()`:
    its groups and layouts, asked for only then) with too few rows splits them."""
    if not few_long_rows(groups, layouts, extents, sm_count, arch):
        return False
    for g, lay in zip(*spread()):
        if g.kind == "reduce":
            p = problem(g, lay, extents, frozenset(), sm_count, arch)
            if 4 * p.rows <= sm_count and not p.splittable():
                return False
    return True


# The longest columns whose results over whole columns the reduction's own kernel writes
# (`partition(columns=True)`, see runs_columns); 0 turns that off. Off until it is timed on a
# GPU against the split it replaces (scripts/probe_fused_columns.py, `device_pass.sh
# fusedcols`): no GPU was lent the session that wrote it (2026-12-07), whose host runs and
# compiles check its kernels (tests/test_host_kernels.py, tests/test_codegen.py).
COLUMNS_MAX_ROWS = 0


def runs_columns(groups, layouts, columns, extents: dict, sm_count: int, arch: str) -> bool:
    """Whether a call at these sizes runs the partition that keeps columns whole: the default
    partition (`groups`, `layouts`) writes some reduction across memory's results over whole
    columns from a pointwise kernel of its own, and every reduce group across memory of the
    columns partition (`columns()`: its groups and layouts, asked for only then) has short
    columns, of at most COLUMNS_MAX_ROWS rows."""
    if COLUMNS_MAX_ROWS == 0 or not any(g.kind == "reduce" and not layout_row_major(lay)
                                        for g, lay in zip(groups, layouts)):
        return False
    whole, whole_layouts = columns()
    if len(whole) >= len(groups):
        return False
    for g, lay in zip(whole, whole_layouts):
        if g.kind == "reduce" and not layout_row_major(lay):
            p = problem(g, lay, extents, frozenset(), sm_count, arch)
            if p.row_length > COLUMNS_MAX_ROWS:
                return False
    return True


# A thread's store along the innermost loop moves 16 bytes at most: a wider result's vector is
# stored as two 16-byte halves 16 bytes apart, each instruction of a warp writing half of every
# 32-byte sector it touches. H200 2026-12-03 (scripts/probe_survey.py), f32(x) from f16
# 16384x4096, us: vectors of 8 (f16 loads of 16 bytes, f32 stores of 32) 137.6 (0.69x copy),
# of 4 101.5 (0.94x). Loads of 32 bytes (an f32 input beside f16 ones) pass through L1 whole.
def vector_bound(main, ops) -> int:
    """Elements a vector access may take where `main` (an operand) moves 16 bytes: any
    operand of `ops` loads 32 bytes at most, and a result stores 16."""
    widest = max(op.dtype.itemsize for op in ops)
    widest_result = max((op.dtype.itemsize for op in ops if op.role == "out"), default=1)
    return max(1, min(8, 16 // main.dtype.itemsize, 32 // widest, 16 // widest_result))


def max_vector(p: Problem, cap: Optional[int] = None, whole: bool = True) -> int:
    """Elements per vector access along the innermost loop.

    Sized so the main operand (the biggest one walking that loop) moves 16
    bytes per access; narrower by alignment and divisibility (`whole`: the
    innermost extent a multiple of it; a peeled row needs no such thing).
    """
    inner = p.inner
    if inner is None:
        return 1
    ops = [op for op in p.layout.inputs + p.layout.outputs if op.loops and op.loops[-1] == inner]
    if not ops:
        return 1
    main = max(ops, key=lambda op: (len(op.loops), op.role == "in", op.dtype.itemsize))
    vec = vector_bound(main, ops)
    if cap:
        vec = min(vec, cap)
    while vec > 1 and ((whole and p.loops[inner] % vec) or any(id(op) in p.misaligned for op in ops)):
        vec //= 2
    return vec


def transposed_loop(p: Problem) -> Optional[int]:
    """A pointwise group's loop that a transposing tile pairs with the innermost one
    (`layout.transposed_loop`), or None."""
    return layout_transposed_loop(p.layout) if p.group.kind == "pointwise" else None


def pow2_at_least(n: int) -> int:
    q = 1
    while q < n:
        q *= 2
    return q


def pow2_at_most(x: float) -> int:
    n = 1
    while 2 * n <= x:
        n *= 2
    return n
