"""Choosing a schedule for a group at the sizes of a call, and its grid.

`candidates()` is the search space (what the tuner times); `default()` is the
rule used when nothing was tuned. Pure Python, free of CuPy, so every choice
can be rendered, compiled and inspected without a GPU (`tiledsl emit`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from .hints import Hints
from .layout import (across_operands, batched_operands, column_loop, gemm_result_in_rows, operand_input,
                     peeled_operands, Layout)
from .layout import transposed_loop as layout_transposed_loop
from .layout import row_major as layout_row_major
from .partition import Group, online_pairs, per_row_before_reductions, reduction_levels
from .schedules import (ROW_CLUSTERS, MAX_ROW_STAGES, MAX_SHARED_BYTES, MAX_STATIC_SHARED, MAX_ROW_ELEMENTS, MAX_PACKED_ROW_ELEMENTS, R40_THREADS, THREADS_PER_SM,
                        BUDGETED_THREADS,
                        Schedule, column_vector, combine_lanes, branchless_elements, computes_f64_math, costly_elements, ring_refusal,
                        stream_unroll_rule, stream_words)

INDEX32_LIMIT = 2 ** 31 - 1
MAX_GRID = 2 ** 31 - 1
PREFETCH_REGISTERS = 48    # 4-byte registers a thread may hold of its row and the next one's
LATE_LOADS_GBPS_PER_SM = 30.0   # below this peak HBM bandwidth per SM, rows with weights load them late
LONG_ROW = 4096     # 16-bit rows without weights this long or longer: held by the fewest threads they fit
PEELED_ROW = 1536   # rows breaking alignment this long or longer: held peeled likewise (long_row_schedule)
PEELED_ROW_16 = 1024    # ... of 16-bit values (every input over the row 2 bytes wide)
WARP_ROW_BYTES = 4096   # rows moving fewer bytes than this take a warp each, several a block (warp_row_schedule)
WARP_ROW_NS = 1.2       # ... or than the GPU's peak bandwidth moves in this time, where that is more
WARP_ROW_BLOCK = 128
WARP_ROW_PEELED = 512   # ... peeled to aligned vectors from this long where the length breaks alignment
HALF_WARP_ROW_BYTES = 512   # ... half a warp each where each row of the inputs is this light (16-bit rows of 256)
HALF_WARP_ELEMENT_ROW_BYTES = 320   # ... this light where read element by element, with branches (warp_row_schedule)


@dataclass(frozen=True)
class Launch:
    schedule: Schedule
    grid: tuple[int, int, int]         # blocks in x, y (splits of a split reduction), z (matmul batch)
    loop_extents: tuple[int, ...]
    stage: int = 1                     # 2: a split reduction's (or split-K GEMM's) combining kernel

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory this launch asks for: a split-K GEMM's combining
        kernel uses none of its pipeline's."""
        return self.schedule.shared_bytes if self.stage == 1 else 0


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
        n = 1
        for e in self.loops:
            n *= e
        return n

    @property
    def rows(self) -> int:
        n = 1
        for l in self.layout.kept_loops:
            n *= self.loops[l]
        return n

    @property
    def row_length(self) -> int:
        n = 1
        for l in self.layout.reduced_loops:
            n *= self.loops[l]
        return n

    @property
    def inner(self) -> Optional[int]:
        return len(self.loops) - 1 if self.loops else None

    @property
    def index64(self) -> bool:
        """Indices reach the largest operand (and, outside a matmul, the whole
        space: a matmul's M*N*K is work, not an address)."""
        sizes = [self.size(op.loops) for op in self.layout.inputs + self.layout.outputs]
        if self.group.kind != "matmul":
            sizes.append(self.total)
        return max(sizes, default=0) > INDEX32_LIMIT

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
        combined by a second kernel (sum(x), column sums, means over batch)."""
        reduces = [v for v in self.group.values if v.op == "reduce"]
        ids = {r.id for r in reduces}
        if not reduces or any(set(r.dims) != set(self.group.kept) for r in reduces):
            return False
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
        kept, reduced = set(self.layout.kept_loops), set(self.layout.reduced_loops)
        return any(not set(op.loops) & kept and set(op.loops) & reduced for op in self.layout.inputs)

    def words_per_row_element(self, vec: int) -> float:
        """4-byte registers a cached row needs per element, over all its inputs: 16-bit
        values loaded in vectors share a register two by two; loaded one by one (vec 1),
        each takes a register of its own (ptxas: an all-f16 layernorm spilled, counted at half)."""
        reduced = set(self.layout.reduced_loops)
        words = sum(_words(op, vec) for op in self.layout.inputs if set(op.loops) & reduced)
        return max(words, 0.5)

    def words_per_row_element_per_row(self, vec: int) -> float:
        """The part of words_per_row_element that changes from row to row (what a prefetch doubles)."""
        reduced, kept = set(self.layout.reduced_loops), set(self.layout.kept_loops)
        return sum(_words(op, vec) for op in self.layout.inputs if set(op.loops) & reduced
                   and set(op.loops) & kept)


def _words(op, vec: int) -> float:
    # 8-bit values in vectors count 1.5 registers each: held four to a register, ptxas widens
    # them all ahead of their math (codegen fuzz, 2026-11-27, a warp a row at 32 elements a
    # thread: an f32 row of 1000 and an i8 one spilled 72 bytes on sm_80 counted at a quarter
    # word each; sum(tanh(x)) over i8[1000] 76 bytes on sm_90a at half a word, none at 1.5)
    return (1.5 if op.dtype.itemsize == 1 else op.dtype.itemsize / 4) if vec > 1 else max(1.0, op.dtype.itemsize / 4)


POINTWISE_HELD_WORDS = 48   # 4-byte registers a pointwise thread's loaded vectors may take
SKINNY_TILE_ELEMENTS = 4096   # a transposing tile with a short side: as many elements as 64x64
SKINNY_MIN_LONG = 256         # ... where the long side is at least this long (else one tile or few)
SHORT_ROW = 128               # rows of at most this many elements take a warp or part of one (short_row_schedule)


def pointwise_held_words(p: "Problem", vec: int, items: int) -> float:
    """4-byte registers a pointwise thread holds at once: each input's elements for
    `items` vectors (all loaded before any is computed), then each result vector
    stored along the innermost loop. A vector load packs 16-bit elements two to a
    register; an operand gathered across the innermost loop (transposed) takes a
    register per element; one without that loop, one value. Over
    POINTWISE_HELD_WORDS, ptxas spilled under the 64-register cap (sm_90a and
    sm_80, 2026-11-23: eight f32 inputs at vector 4, items 2: 64 words, 40 bytes
    of spills; f16 + bf16 inputs with an f16 and an f32 one gathered at vector 8:
    48 words and a vector result, 16 bytes; six f32 inputs, 48 words, just fit)."""
    inner = p.inner

    def words(op) -> float:
        if inner is None or inner not in op.loops:
            return _words(op, 1)
        return vec * _words(op, vec if op.loops[-1] == inner else 1)
    stored = [op for op in p.layout.outputs if inner is not None and op.loops and op.loops[-1] == inner]
    return items * sum(words(op) for op in p.layout.inputs) + sum(words(op) for op in stored)


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
    widest = max(op.dtype.itemsize for op in ops)
    vec = max(1, min(8, 16 // main.dtype.itemsize, 32 // widest))
    if cap:
        vec = min(vec, cap)
    while vec > 1 and ((whole and p.loops[inner] % vec) or any(id(op) in p.misaligned for op in ops)):
        vec //= 2
    return vec


def peel_refusal(p: Problem, s: Schedule) -> str:
    """'' when a row reduction (looped or held in registers) can read each row in
    vectors of `s.vec` from its first aligned element (Schedule.peel), else why not.
    Every operand along the row either has all of the group's loops (each row then
    starts at the same element offset in all of them: one head a row) or is the same
    for every row (a weight over N: its lanes are gathered one by one, from L1, as its
    alignment differs): `layout.peeled_operands`. Held, the weights are loaded where
    used (their lanes move with each row's head)."""
    if peeled_operands(p.layout) is None:
        return ("peeling takes rows along the innermost dim, reduced over it alone, whose operands "
                "have every loop of the group or only the reduced one")
    if s.vec > max_vector(p, whole=False):
        return f"vector width {s.vec} exceeds what alignment and dtypes allow"
    if s.items and s.hoist and p.has_row_invariant_inputs():
        return ("a peeled row held in registers loads its weights where they are used (hoist false): "
                "their lanes move with each row's head")
    return ""


def peel_weights_fit(p: Problem) -> bool:
    """Whether a peeled row's weights over N (gathered lane by lane) take no more bytes an
    element than its per-row inputs: what the default peels (see default())."""
    kept, reduced = set(p.layout.kept_loops), set(p.layout.reduced_loops)
    per_row = sum(op.dtype.itemsize for op in row_inputs(p))
    weights = sum(op.dtype.itemsize for op in p.layout.inputs if set(op.loops) & reduced and not set(op.loops) & kept)
    return weights <= per_row


def peel_vector(p: Problem) -> int:
    """The vector a looped row reduction reads its rows in, peeled (beyond 1), where
    the row length alone keeps it from vectors; else 1."""
    vec = max_vector(p, whole=False) if p.inner is not None and p.group.kind == "reduce" else 1
    if vec == 1 or p.loops[p.inner] % vec == 0:
        return 1
    probe = Schedule("reduce_row", block=256, vec=vec, items=0, row_threads=256, peel=True, index64=p.index64)
    return 1 if peel_refusal(p, probe) else vec


def transposed_loop(p: Problem) -> Optional[int]:
    """A pointwise group's loop that a transposing tile pairs with the innermost one
    (`layout.transposed_loop`), or None."""
    return layout_transposed_loop(p.layout) if p.group.kind == "pointwise" else None


def transposing_tile(p: Problem) -> Optional[tuple]:
    """(TI, TJ) for a pointwise group with a transposed operand, where both loops
    are long enough for tiles to pay; else None. 64x64 with 128 threads, each
    access 8 bytes (`tile_vector`): the best of 24 tiles, blocks and widths on
    three of four programs and within 4% on the fourth (H100 2026-11-23,
    scripts/probe_transpose.py: x.T of 4096x4096 f16 285 -> 37 us, 8192x4096 f32
    706 -> 103, x + y.T f32 161 -> 85, element by element before). At 64 MiB
    moved that is 0.96x a copy of the same bytes; 128x128 tiles (a tuner
    candidate) gain 6% on 8192x8192 f16 and lose 4% on 4096x4096 (05:39). Smaller
    where many wide operands pass through shared memory (`staged_tile_bytes`)."""
    j = transposed_loop(p)
    if j is None:
        return None
    if min(p.loops[p.inner], p.loops[j]) < 16:
        return skinny_tile(p, j)
    return next((t for t in ((64, 64), (64, 32), (32, 32), (16, 16)) if staged_tile_bytes(p, t) <= MAX_STATIC_SHARED),
                None)


def skinny_tile(p: Problem, j: int) -> Optional[tuple]:
    """A transposing tile where the loop paired with the innermost one is 2 to 15
    long (x.T of an [8, N] array): all of it (its power of two) by
    SKINNY_TILE_ELEMENTS / that along the innermost loop. Walked flat, each element
    of the short side was written in a sector of its own (H100 2026-11-25, x.T of
    f32 [8, 4194304]: 1782.3 -> 105.3 us, 0.05x -> 0.86x copy; f16 [4, 8388608]
    553.2 -> 62.0). Where the innermost loop itself is the short one, the flat walk
    reads the rows of the operand across it from cache and stays (f32 [4194304, 8]:
    101.4 flat, 104.7 tiled; x + y.T with [2097152, 12]: 116.2 flat, 142.2 tiled)."""
    short, long = p.loops[j], p.loops[p.inner]
    if not 2 <= short < 16 or long < SKINNY_MIN_LONG:
        return None
    side = _pow2_at_least(short)
    along = SKINNY_TILE_ELEMENTS // side
    while along > 16 and staged_tile_bytes(p, (along, side)) > MAX_STATIC_SHARED:
        along //= 2
    return (along, side)


def staged_tile_bytes(p: Problem, tile: tuple) -> int:
    """Static shared memory a transposing tile takes: a [TI][TJ + 1] array of
    each operand laid out across the innermost loop, in its stored width."""
    return sum(op.dtype.itemsize for op in across_operands(p.layout)) * tile[0] * (tile[1] + 1)


def tile_vector(p: Problem) -> int:
    """Elements a transposing tile moves an access: 8 bytes of the widest operand
    (f16 4, f32 2), where both tiled extents divide and every operand is aligned."""
    j = transposed_loop(p)
    widest = max(op.dtype.itemsize for op in p.layout.inputs + p.layout.outputs)
    vec = max(1, min(4, 8 // widest))
    while vec > 1 and (j is None or p.loops[p.inner] % vec or p.loops[j] % vec or p.misaligned):
        vec //= 2
    return vec


def _pow2_at_least(n: int) -> int:
    q = 1
    while q < n:
        q *= 2
    return q


def row_share(row_vectors: int, threads: int) -> int:
    """Vectors a thread holds of a row that `threads` threads share: exactly enough,
    not a power of two (one past a power of two held nearly twice the registers the
    row needs: softmax f32 4096x12001 at 512 threads needs 24 elements, and 32 spilled,
    so the row streamed; held at 24, 181.7 -> 136.9 us on an H100, 2026-11-25)."""
    return max(1, -(-row_vectors // threads))


def row_register_budget(vec: int) -> int:
    """4-byte registers a thread may hold of its row's inputs without spilling
    (measured with ptxas: scalar access also spends registers on indices)."""
    return 24 if vec == 1 else 40


def prefetch_fits(p: Problem, items: int, vec: int) -> bool:
    """Whether a thread can hold its row and the next one's without spilling (measured
    with ptxas: at most 16 elements, 8 without vectors, and PREFETCH_REGISTERS words)."""
    elements = items * vec
    return (elements <= (MAX_ROW_ELEMENTS // 4 if vec == 1 else MAX_ROW_ELEMENTS // 2) and
            elements * (p.words_per_row_element(vec) + p.words_per_row_element_per_row(vec)) <= PREFETCH_REGISTERS)


def short_row_schedule(p: Problem, hints: Hints) -> Optional[Schedule]:
    """Part of a warp a row (`short_row_threads`), 256 threads a block, for rows of at
    most SHORT_ROW elements laid out along the row: the general rule below gives a
    row at least 64 threads, most of them idle on such a row. Vectors as wide as the
    row allows, row-invariant inputs loaded where used. Measured on an H100,
    2026-11-25 (scripts/probe_short_rows.py), softmax f32, us, the general rule ->
    a warp a row -> this rule:
        2^21 x 3    1269 ->  267.6 ->  27.1  (0.62x copy; rows of 12 bytes)
        2^21 x 8    1269 ->  274.7 ->  49.5  (0.90x)
        2^20 x 13      - ->  145.8 ->  52.8  (0.69x; scalar: rows of 52 bytes)
        2^20 x 16    635 ->  148.1 ->  48.9  (0.91x)
        2^19 x 32    320 ->   79.6 ->  49.2  (0.91x)
        2^18 x 64    162 ->   53.5 ->  49.2  (0.91x)
        2^17 x 128  83.5 ->   48.9 ->  48.9  (0.91x)
    and rmsnorm f16 2^19 x 64 320 -> 81.2 -> 49.5 (0.90x), 2^21 x 8 -> 255.4 -> 27.0
    (0.83x; a thread a row), 2^20 x 13 -> 131.2 -> 44.0 (0.41x; scalar)."""
    if hints.threads or not p.row_major() or p.row_length > SHORT_ROW:
        return None
    vec = max_vector(p, hints.vector)
    tpr = short_row_threads(p, vec)
    items = row_share(p.row_length // vec, tpr)
    if not row_share_fits(p, items, vec):
        return None
    return Schedule("reduce_row", block=256, vec=vec, items=items, row_threads=tpr,
                    hoist=not p.has_row_invariant_inputs(), keep=element_keeps_fit(p, items, vec),
                    index64=p.index64)


def row_bytes(p: Problem) -> int:
    """Bytes a row moves from and to memory: each operand that differs from row to row,
    read or written, over the row's length where it has the reduced loops, else one element
    (a result per row). Operands the same for every row (weights) are read from cache."""
    kept, reduced = set(p.layout.kept_loops), set(p.layout.reduced_loops)
    return sum(op.dtype.itemsize * (p.row_length if set(op.loops) & reduced else 1)
               for op in p.layout.inputs + p.layout.outputs if set(op.loops) & kept)


def warp_row_schedule(p: Problem, hints: Hints) -> Optional[Schedule]:
    """A warp a row, WARP_ROW_BLOCK threads a block, for rows longer than SHORT_ROW that
    move fewer bytes than warp_row_bytes (4096 on an H100, 5760 on an H200); half a warp,
    16 rows a block of 256, where each row of the inputs is at most half_warp_row_bytes (512;
    320 read element by element with branches). The general rule gives each row a block of 64
    or more threads, and blocks so light finish faster than the SMs take in new ones (about 1.2 ns a block over the whole GPU,
    whatever their size), so many such rows were bound by the blocks, not by memory. In
    vectors as wide as alignment allows; where the length alone breaks it, from
    WARP_ROW_PEELED elements peeled to aligned vectors (weights no heavier than the row:
    peel_weights_fit), else element by element. Measured on an H100,
    2026-11-26 (scripts/probe_mid_rows.py, 20:54-21:05), us, a block a row -> this rule:
        softmax f16 131072x256  162.3 -> 52.3 (0.85x copy)  f32 131072x256  161.3 -> 93.4 (0.96x)
        softmax f16 65536x512    82.4 -> 49.0 (0.91x)       f32 100000x200  124.0 -> 58.2 (0.92x)
        rmsnorm f16 131072x256  161.5 -> 49.8 (0.90x)       f32 65536x384    82.5 -> 71.4 (0.94x)
        layernorm f16 65536x768  84.5 -> 73.0 (0.92x)       logsumexp f32 131072x300 161.5 -> 55.3
        softmax f16 over [8, 16, 512, 512] (rows of attention) 82.6 -> 49.7 (0.90x)
        odd, peeled: softmax f16 65536x513 82.6 -> 55.1 (element by element 62.3), 32768x1001
        58.5 -> 49.2; element by element: softmax f16 over [32, 12, 197, 197] 94.7 -> 35.1
        (peeled 44.0), 262144x129 318.9 -> 83.7 (peeled 127.9), 65536x385 82.3 -> 49.0 (51.4),
        131072x257 161.4 -> 69.6 (71.6); layernorm f16 65536x513 (f32 weights) 71.4 -> 59.7.
    Half a warp a row against a warp (21:30): softmax f16 131072x256 52.4 -> 49.4 us
    (0.90x), 262144x129 84.0 -> 71.2; rmsnorm
    f16 131072x256 49.3 -> 48.8; level at 75648x197 (34.0, 34.2); at 1 KiB (f32 131072x256,
    f16 65536x512) level or a little slower (93.4 / 93.7, 49.3 / 49.8).
    A few rows: level (softmax f16 2048x256 8.7 -> 9.6, f32 600x511 8.3 -> 7.8, rmsnorm
    f16 264x768 11.9 -> 11.4: launches). Rows of 4096 bytes or more are level or faster
    a block a row (softmax f16 32768x1024 49.6 against 49.4; 16384x2048 48.8 against
    50.0; rmsnorm and layernorm f16 65536x1024 level), just under it a little slower
    (softmax f16 65536x1000 92.3 against 90.8); blocks of 256 and 512 rows were level or
    slower than 128."""
    if (hints.threads or (hints.cluster or 1) > 1 or (hints.stages or 1) > 1 or not p.row_major()
            or p.row_length <= SHORT_ROW or row_bytes(p) >= warp_row_bytes(p)):
        return None
    vec = max_vector(p, hints.vector)
    peel = (vec == 1 and not hints.vector and p.row_length >= WARP_ROW_PEELED and peel_vector(p) > 1
            and peel_weights_fit(p))
    if not peel and row_input_bytes(p) <= half_warp_row_bytes(p, vec):
        items = row_share(p.row_length // vec, 16)
        if row_share_fits(p, items, vec, hoisted=False, packed=True):
            return Schedule("reduce_row", block=256, vec=vec, items=items, row_threads=16,
                            hoist=not p.has_row_invariant_inputs(), keep=element_keeps_fit(p, items, vec),
                            index64=p.index64)
    held = held_row_share(p, peel_vector(p) if peel else vec, 32, peel=peel)
    if not held:
        return None
    return replace(held, block=WARP_ROW_BLOCK, keep=element_keeps_fit(p, held.items, held.vec))


def half_warp_row_bytes(p: Problem, vec: int) -> int:
    """The heaviest row of an input that takes half a warp (warp_row_schedule): HALF_WARP_ROW_BYTES
    where the row moves in vectors, or is read element by element without a branch per
    element (a costly function in each, no weights: codegen's rows without branches);
    HALF_WARP_ELEMENT_ROW_BYTES where it is read element by element with branches (weights loaded
    late, or no costly function). There half a warp ran at a fixed ~0.64x copy whatever the
    length, and a warp faster the longer the row: they cross at about 160 16-bit elements.
    H100 2026-11-27 00:41 (scripts/probe_norm_rows.py SWEEP=1, about 64 MiB read each), us,
    half a warp / a warp: rmsnorm f16 over 129 69.5 / 82.5, 145 69.2 / 74.0, 161 69.6 / 68.0,
    177 69.5 / 62.9, 193 70.0 / 59.0, 225 70.8 / 57.0, 255 68.4 / 54.8; bf16 over 131 69.4 /
    81.3, 163 68.8 / 66.5, 197 69.1 / 59.4; all-f16 layernorm over 129 71.0 / 83.9, 161 70.2 /
    71.2, 193 70.6 / 66.5, 255 69.0 / 61.3; layernorm f16 (w, b f32) over 129 71.2 / 83.9, 193
    71.6 / 65.4, 255 70.9 / 60.2. Softmax without branches keeps half a warp up to 512 bytes
    (262144x129 59.1 / 83.0, 131072x255 55.3 / 56.2, ViT's rows of 197 28.4 / 28.9)."""
    # (half a warp loads its weights late: warp_row_schedule)
    if vec > 1 or branchless_elements(p.group, p.has_row_invariant_inputs()):
        return HALF_WARP_ROW_BYTES
    return HALF_WARP_ELEMENT_ROW_BYTES


def warp_row_bytes(p: Problem) -> float:
    """The bytes a row moves below which it takes a warp (warp_row_schedule): WARP_ROW_BYTES,
    measured on an H100, or what the GPU's peak bandwidth moves in WARP_ROW_NS, about the
    time the SMs take to take in a block (1.23-1.28 ns a block on an H100 and an H200), where
    that is more: on an H200 (4800 GB/s) 5760 bytes. H200 2026-11-26 21:37
    (scripts/probe_mid_rows.py), us, a block a row / a warp at 4096 bytes a row: rmsnorm f16
    65536x1024 83.7 / 69.3 (0.75x / 0.91x copy), all-f16 layernorm 83.9 / 70.3, layernorm f16
    (w, b f32) 72.1 / 70.8, softmax f16 82.6 / 75.0, f32 65536x512 82.5 / 68.7; at 6144 mixed
    (softmax f16 32768x1536 63.4 / 57.1, rmsnorm 54.1 / 53.8), at 8192 a block a row (softmax
    f32 32768x1024 67.6 / 68.7)."""
    return max(WARP_ROW_BYTES, WARP_ROW_NS * p.hbm_gbps)


def row_input_bytes(p: Problem) -> int:
    """Bytes of a row of the widest input that differs from row to row."""
    return p.row_length * max((op.dtype.itemsize for op in row_inputs(p)), default=0)


SHORT_ROW_BYTES = 16        # most bytes of the row's main input a thread holds (short_row_threads)
SHORT_ROW_ITEMS = 4         # most accesses a thread makes to it
SECTOR = 32                 # bytes of a memory transaction


def short_row_threads(p: Problem, vec: int) -> int:
    """Threads a short row takes: the fewest (1 to 32, so up to 32 rows share a warp)
    whose share of the row is at most SHORT_ROW_BYTES in at most SHORT_ROW_ITEMS
    accesses, and whose accesses use at least half of each sector they touch (a row
    of a sector or less: half of the row). More threads a row than that hold few
    bytes each in flight; fewer read a few bytes from many sectors an instruction.
    Measured (H100, softmax f32): rows of 8 at 8, 4, 2 threads with vectors of 4
    111.0, 59.6, 49.5 us, scalar 77.3, 55.4, 85.3 (the last reads 8 bytes of each
    32-byte sector); rows of 3 (12 bytes) at 4, 2, 1 threads: 40.0, 27.1, 27.9;
    rows of 13 (52 bytes, starting mid-sector) at 8 and 4 threads: 52.8, 58.7;
    rmsnorm f16 rows of 64, scalar, at 16 and 8 threads (8 accesses): 57.8, 81.3."""
    kept = set(p.layout.kept_loops)
    main = max((op.dtype.itemsize for op in p.layout.inputs
                if op.loops and op.loops[-1] == p.inner and set(op.loops) & kept), default=4)
    row_bytes = p.row_length * main
    for tpr in (1, 2, 4, 8, 16):
        items = row_share(p.row_length // vec, tpr)
        read = min(tpr * vec, p.row_length) * main          # a row's bytes one access of its threads reads
        touched = row_bytes if row_bytes <= SECTOR else SECTOR * -(-read // SECTOR)
        if row_bytes > SECTOR and row_bytes % SECTOR:
            touched += SECTOR               # rows that start mid-sector: a read may straddle one more
        if items <= SHORT_ROW_ITEMS and items * vec * main <= SHORT_ROW_BYTES and 2 * read >= touched:
            return tpr
    return 32


def row_inputs(p: Problem) -> list:
    """The inputs that differ from row to row and run along the row (not weights)."""
    kept, reduced = set(p.layout.kept_loops), set(p.layout.reduced_loops)
    return [op for op in p.layout.inputs if set(op.loops) & kept and set(op.loops) & reduced]


def narrow_rows(p: Problem) -> bool:
    """Whether every input over the row and its reduced dims is 2 bytes wide."""
    row = row_inputs(p)
    return bool(row) and all(op.dtype.itemsize == 2 for op in row)


def packed_rows(p: Problem, vec: int) -> bool:
    """Whether a thread's share of each row is 16-bit values in vectors (every input over
    the row and its reduced dims 2 bytes wide): held two a register, so a share may have
    MAX_PACKED_ROW_ELEMENTS of them, the bytes of MAX_ROW_ELEMENTS 4-byte ones."""
    return vec > 1 and narrow_rows(p)


def row_share_fits(p: Problem, items: int, vec: int, hoisted: bool = True, packed: bool = False) -> bool:
    """Whether a thread can hold its share of a row (`items` vectors of `vec`, every
    input's element loaded before the row is reduced) under the 64-register cap:
    at most MAX_ROW_ELEMENTS elements taking at most row_register_budget words, and
    at most 8 elements read one by one (vec 1) where a result is 8 bytes wide (f32
    math widened on the store). Measured with ptxas, sm_90a and sm_80, 2026-11-25
    (rows of 4097 to 32768 elements, one or seven of them; local bytes on sm_90a):
    softmax f32 at vec 1 and 32 elements (32 words) 8; two f32 inputs at vec 4 and 32
    elements (64) 120; three at vec 1 and 16 (48) 24; f64 at vec 2 and 32 (64) 136;
    layernorm f16 with f16 weights at vec 8 and 32 (48) 16, with f32 weights at vec 8
    and 16 (40) none; f16 [1000, 5] summed into f64[5, 1000] at vec 1 and 16, 8.
    Without `hoisted`, the row-invariant inputs (weights) are loaded where they are
    used and take no registers through the row (layernorm f16 at vec 8 and 32: 55
    registers, no spill). With `packed`, 16-bit rows in vectors (packed_rows) may hold
    MAX_PACKED_ROW_ELEMENTS (ptxas, sm_90a, 2026-11-26: softmax f16 at vec 8 and 64
    elements, 1024 or 512 threads, 64 registers, no spill; layernorm f16 and rmsnorm
    f16 likewise with their weights loaded late; hoisted, they spilled 660 and 72
    bytes, which the words budget refuses). default() says what happens where the
    share does not fit."""
    elements = items * vec
    cap = MAX_PACKED_ROW_ELEMENTS if packed and packed_rows(p, vec) else MAX_ROW_ELEMENTS
    wide_results = any(op.dtype.itemsize == 8 for op in p.layout.outputs)
    words = p.words_per_row_element(vec) if hoisted else max(0.5, p.words_per_row_element_per_row(vec))
    return (elements <= cap and elements * words <= row_register_budget(vec)
            and not (vec == 1 and wide_results and elements > 8))


def keeps_fit(p: Problem, items: int, vec: int) -> bool:
    """Whether a thread may keep costly element values between phases (Schedule.keep)
    beside its share: twice the share's words within the budget, and at most
    MAX_ROW_ELEMENTS elements (a kept value is a 4-byte register even where the row is
    16-bit: softmax f16 at 40 elements a thread spilled 72 bytes, ptxas sm_90a)."""
    return (items * vec <= MAX_ROW_ELEMENTS
            and 2 * items * vec * p.words_per_row_element(vec) <= row_register_budget(vec))


ELEMENT_KEEP_WORDS = 16     # registers a thread's held elements may take where it keeps their costly values


def element_keeps_fit(p: Problem, items: int, vec: int) -> bool:
    """Whether a row held element by element (vec 1, a warp or part of one a row) keeps its
    costly element values between phases (Schedule.keep): its `items` elements take at most
    ELEMENT_KEEP_WORDS registers, the kept values as many again (ptxas sm_90a, softmax f16
    at 16 elements a thread: 63 registers, none spilled). Such rows are bound by
    instructions: softmax computed exp(x - max) twice (H100 2026-11-26, µs, computed
    twice / kept: f16 131072x257 70.0 / 59.0, 65536x385 49.7 / 42.3, f32 1048576x13 52.6 /
    47.3, ViT's [32, 12, 197, 197] 34.3 / 33.3; scripts/probe_element_rows.py)."""
    return vec == 1 and items * p.words_per_row_element(1) <= ELEMENT_KEEP_WORDS and costly_elements(p.group)


def full_occupancy_fits(p: Problem, items: int, vec: int, keep: bool) -> bool:
    """Whether a thread's share of its row fits the 32 registers that let every
    thread slot of an SM be resident: scalar loads (rows that cannot move in
    vectors) of at most 8 elements, 16 registers with the kept values (an
    element takes a register even when 16 bits wide; measured with ptxas).
    Such a thread has few bytes in flight, so the SM needs all its threads to
    hide the latency (H100, 2026-11-22: softmax f32 32768x781 0.88x -> 0.93x copy).
    Results stored across the row (transposed) or 8 bytes wide need more: under 32
    registers they spilled 4 to 8 bytes on sm_90a or sm_80 (CPU fuzz test, 2026-11-23);
    so did f32 results of f16 rows on sm_80, where the rule was never measured: it
    applies on sm_90a only. So did an idx() of a row of two loops (K, M), of either,
    which each element divides out of its flat position (CPU fuzz test, 2026-11-25):
    no idx() at all takes this schedule."""
    held = items * p.words_per_row_element(vec) * (2 if keep else 1)
    stored_along_row = all(op.dtype.itemsize <= 4 and (p.inner not in op.loops or op.loops[-1] == p.inner)
                           for op in p.layout.outputs)
    indices = any(v.op == "idx" for v in p.group.values)
    return (p.arch == "sm_90a" and vec == 1 and items <= 8 and held <= 16 and stored_along_row
            and not indices and not computes_f64_math(p.group.values))


def r40_fits(p: Problem, block: int, items: int, vec: int, keep: bool, hoist: bool) -> bool:
    """Whether a non-persistent row schedule fits 40 registers (1536 threads per SM)
    without spilling: vectorized rows of at most 16 elements a thread that hold at most
    16 words through the row (their per-row inputs, and the row-invariant ones if
    hoisted; unhoisted ones are loaded late). Measured with ptxas on sm_90a: softmax f32
    and layernorm f16 without hoisting fit; layernorm's hoisted f32 weights (40 words) spill."""
    invariant = p.words_per_row_element(vec) - p.words_per_row_element_per_row(vec)
    held = items * vec * (p.words_per_row_element_per_row(vec) + (invariant if hoist else 0))
    return (R40_THREADS % block == 0 and vec > 1 and items * vec <= 16 and not keep and held <= 16
            and not computes_f64_math(p.group.values))


def ring_problem(p: Problem, s: Schedule) -> str:
    """'' when a row ring (stages >= 2) can carry this problem's per-row inputs, else why not."""
    kept, reduced = set(p.layout.kept_loops), set(p.layout.reduced_loops)
    return ring_refusal(s, [(op.dtype.itemsize, op.loops[-1] == p.inner) for op in p.layout.inputs
                            if set(op.loops) & kept and set(op.loops) & reduced])


SPLIT_K_MIN_CHUNK = 512         # K a split-K chunk covers at least: its partial sums stay small traffic
# (tile, microtile) of the SIMT GEMMs that the tuner also tries split K ways
SPLIT_K_TILES = (((128, 128, 8), (16, 8)), ((128, 128, 8), (8, 8)), ((64, 64, 16), (4, 4)))
# ... and (tile, warp tile or wgmma's (64, BN), stages) of the tensor-core GEMMs split K ways
TC_SPLIT_TILES = (((128, 256, 64), (64, 256), 4), ((128, 128, 64), (64, 128), 4), ((64, 256, 64), (64, 256), 4),
                  ((64, 128, 64), (64, 128), 5), ((64, 64, 64), (64, 64), 6),
                  ((128, 128, 64), (64, 128), 6), ((64, 128, 64), (64, 128), 8),     # deeper: a block an SM
                  ((128, 256, 32), (64, 256), 4), ((64, 128, 32), (64, 128), 5),       # TF32 wgmma
                  ((128, 128, 32), (64, 32), 4), ((64, 128, 32), (32, 64), 3), ((64, 64, 64), (32, 32), 4))
# A tensor-core chunk of K: long enough that its pipeline's fill and its partial sums'
# traffic stay small beside its multiply (H100: 1024-deep chunks lost 7-15% to 2048).
TC_SPLIT_MIN_CHUNK = 2048
# (BM, BN, stages) of the warpgroup tiles the default splits, larger first, by (operand bytes, M <= 64)
# (64 rows where M <= 64: taller tiles would multiply zeros)
WGMMA_SPLIT_TILES = {(2, False): ((128, 256, 4), (128, 128, 4)), (2, True): ((64, 128, 5), (64, 64, 6)),
                     (4, False): ((128, 256, 4), (64, 128, 5)), (4, True): ((64, 128, 5),)}
# ... and those of 16-bit operands TMA copies, M > 64, in chunks of at least 4096. A split block is
# alone on its SM (a wave at most): its tiles take the stages that fill its shared memory, and
# the 64x128 tile a producer warpgroup. H100 2026-11-26 (scripts/probe_sustained.py, µs, 4 stages
# / 6 or 8 / 8 with a producer): 256x256x65536 128x128 in 32 chunks 39.9 / 38.2, 64x128 in 16
# 34.9 with the producer; 512x512x16384 128x128 in 8 30.7 / 26.5, 64x128 in 4 26.5; a @ b.T
# 512x512x16384 31.5 / 27.1, 64x128 25.1; 384x384x32768 128x256 in 16 chunks of 2048 38.7,
# 128x128 in 8 of 4096 34.0, 64x128 in 4 36.3.
WGMMA_TMA_SPLIT_TILES = ((128, 256, 4), (128, 128, 6), (64, 128, 8))
WGMMA_TMA_SPLIT_MIN_CHUNK = 4096


def output_tiles(p: Problem, bm: int, bn: int) -> int:
    """Blocks a GEMM of bm x bn output tiles launches (over every product of a batch)."""
    batch, m, n, _ = matmul_shape(p)
    return batch * -(-m // bm) * -(-n // bn)


def split_k_choices(p: Problem, tile: tuple, waves: int = 2, min_chunk: int = SPLIT_K_MIN_CHUNK) -> list[int]:
    """Split-K factors worth trying for this tile: powers of two up to the one
    that fills the SMs `waves` times over, each chunk of K at least `min_chunk`."""
    k = matmul_shape(p)[3]
    blocks = output_tiles(p, tile[0], tile[1])
    out, splits = [], 2
    while blocks * splits <= waves * p.sm_count and k // splits >= min_chunk and splits <= 64:
        out.append(splits)
        splits *= 2
    return out


def split_k_default(p: Problem) -> int:
    """The split the default takes where 128x128 tiles would leave more than half
    of the SMs idle: the largest of split_k_choices, about two blocks per SM
    (0: none). Measured on an H100 (scripts/gemm_sweep.py, 2026-11-22): f32
    256x256x65536 and 512x512x16384 at 0.82-0.84x cuBLAS this way, against
    0.07x and 0.28x unsplit and 0.64x with 64x64 tiles split to the same count."""
    if 2 * output_tiles(p, 128, 128) > p.sm_count:
        return 0
    return (split_k_choices(p, (128, 128, 8)) or [0])[-1]

# Block tiles (BM, BN) of the warpgroup GEMM (BK = 64).
WGMMA_TILES = ((128, 256), (128, 128), (64, 256), (64, 128), (128, 192), (64, 64))
# Block tile (BM, BN, BK) and warp tile (WM, WN) of the pipelined tensor-core GEMM.
PIPELINE_TILES = (((128, 256, 32), (64, 64)), ((256, 128, 32), (64, 64)), ((128, 128, 32), (64, 64)),
                  ((128, 128, 32), (64, 32)), ((128, 128, 64), (64, 32)),
                  ((64, 128, 32), (32, 64)), ((64, 64, 32), (32, 32)), ((64, 64, 64), (32, 32)),
                  ((128, 64, 32), (64, 32)))


def wgmma_schedule(p: Problem, bm: int, bn: int, stages: int, vec: int = 8, group: int = 0,
                   min_blocks: int = 1, tma: Optional[bool] = None) -> Schedule:
    """A warpgroup GEMM of bm x bn block tiles: a warpgroup per 64 rows, each row
    of a K tile 128 bytes (64 16-bit or, vec 4, 32 TF32 values). Unless told
    otherwise its tiles are copied by TMA wherever the operands allow
    (`tma_operands`): 1.1-1.5x the cp.async kernel's speed (H200, 2026-11-22:
    4096^3 732 against 615 TFLOP/s, 4000^3 624 against 426), except in 64x64
    tiles, the skinny products' (16x8192x8192: 57 us against 38), and where K is a
    single tile, whose block has nothing to overlap its barriers' setup with (H100,
    32 products of 512x512x64: 12.8 and 13.3 us against 11.2 and 12.6)."""
    if tma is None:
        tma = (bm, bn) != (64, 64) and matmul_shape(p)[3] > 8 * vec and tma_operands(p)
    return Schedule("matmul", block=128 * (bm // 64), tile=(bm, bn, 8 * vec),
                    micro=(64, bn), mma=True, wgmma=True, vec=vec, stages=stages, group=group,
                    min_blocks=min_blocks, index64=p.index64, tma=tma)


def tma_operands(p: Problem) -> bool:
    """Whether TMA can copy both operands' tiles: plain inputs that move in
    16-byte vectors, 16-bit (`matmul_vector`) or f32 read as TF32
    (`tf32_operands`), each a 2-D array (shared by every product of a batch) or
    one with all of the product's batch dims, in order (a 3-D map: its products
    are the batch's, one stride apart), whose extents and product count fit the
    copies' 32-bit coordinates."""
    if p.arch != "sm_90a" or (matmul_vector(p) != 8 and not tf32_operands(p)) or matmul_shape(p)[0] >= 2 ** 31:
        return False
    mm = next(v for v in p.group.values if v.op == "matmul")
    batch_loops = tuple(range(p.layout.n_kept - 2))
    for operand, batched in zip(mm.operands, batched_operands(p.group, p.layout)):
        op = operand_input(p.layout, operand)
        if batched and op.loops[:-2] != batch_loops:
            return False
        if any(p.loops[l] >= 2 ** 31 for l in op.loops):
            return False
    return True


def _wgmma_schedules(p: Problem, vec: int) -> list[Schedule]:
    """Warpgroup GEMMs over WGMMA_TILES: rows of 128 bytes along K (64
    16-bit or 32 TF32 values), 3 to 8 stages where they fit."""
    out = []
    for bm, bn in WGMMA_TILES:
        for stages in (3, 4, 5, 6, 8):
            if stages * (bm + bn) * 128 + 1024 > MAX_SHARED_BYTES:
                continue
            out += [wgmma_schedule(p, bm, bn, stages, vec, group) for group in (0, 8)]
            # two blocks per SM: one's prologue and epilogue overlap the other's main loop
            if bn <= 128 and 2 * (stages * (bm + bn) * 128 + 1024) <= MAX_SHARED_BYTES + 1024:
                out.append(wgmma_schedule(p, bm, bn, stages, vec, min_blocks=2))
    return out


def _copy_twins(p: Problem, warpgroup: list) -> list[Schedule]:
    """Where TMA can copy the tiles, the usual warpgroup tiles by the other copy
    too (unsplit), for the tuner to time side by side."""
    if not tma_operands(p):
        return []
    return [replace(s, tma=not s.tma) for s in warpgroup if s.tile[:2] in ((128, 256), (128, 128), (64, 64))]


def _hopper_first(p: Problem, schedules: list) -> list[Schedule]:
    """The warpgroup tiles first (where there are any): on Hopper they beat the mma.sync
    and SIMT tiles at every measured shape, and a capped search (the tuner's first 64
    candidates) should time them, their split-K forms where 128x256 tiles leave SMs
    idle, and the twins (persistent loops, the other copy) before the rest."""
    if not any(s.wgmma for s in schedules):
        return schedules
    few = output_tiles(p, 128, 256) < p.sm_count
    return sorted(schedules, key=lambda s: 2 if not s.wgmma else 0 if not s.splits or few else 1)


# (BM, BN, stages) of the TMA-fed tiles the tuner also times as persistent loops
PERSISTENT_TILES = ((128, 256, 4), (128, 128, 4), (64, 128, 5), (64, 128, 8))


def _persistent_twins(p: Problem, warpgroup: list) -> list[Schedule]:
    """The TMA-fed tiles of PERSISTENT_TILES again as persistent loops over the output
    tiles (one block per SM, or two where min_blocks says so), for the tuner; one
    product only."""
    if matmul_shape(p)[0] > 1:
        return []
    return [replace(s, persistent=True) for s in warpgroup
            if s.tma and not s.splits and (s.tile[0], s.tile[1], s.stages) in PERSISTENT_TILES]


# (BM, BN, stages) of the TMA-fed tiles the tuner also times with a producer warpgroup. Measured
# (H100, 2026-11-26, scripts/gemm_sweep.py): the 128x256 tile, persistent, ahead of the plain one
# up to K = 6144 in short sweeps and up to 2048 under sustained load (the default there:
# producer_loop_schedule); 64x128 with 8 stages, a block a
# tile, ahead where few tiles meet a long K (the default there too: _tensor_core_default); 128x128
# tiles behind everywhere measured but kept for the smaller products; 128x192 level or ahead
# (6144x3072x4096 722-724 against 703-704 TFLOP/s, 1536x1536x4096 level)
SPECIALIZED_TILES = ((128, 256, 4), (128, 256, 3), (128, 128, 4), (128, 128, 6), (64, 128, 8), (64, 128, 6),
                     (128, 192, 4))


def _specialized_twins(p: Problem, warpgroup: list) -> list[Schedule]:
    """The TMA-fed tiles of SPECIALIZED_TILES again with a producer warpgroup
    (`Schedule.specialized`), a block per output tile and as persistent loops,
    for the tuner; one product only."""
    if matmul_shape(p)[0] > 1:
        return []
    twins = [with_producer(s, persistent) for s in warpgroup
             if s.tma and not s.splits and s.min_blocks == 1 and (s.tile[0], s.tile[1], s.stages) in SPECIALIZED_TILES
             for persistent in (True, False)]
    # and in pairs sharing B (cluster 2), grouped where the tiles are
    grouped = any(s.group for s in twins)
    twins += [replace(s, cluster=2) for s in twins if s.group or not grouped]
    # in the order of SPECIALIZED_TILES, grouped blocks first: a capped search meets the likeliest first
    return sorted(twins, key=lambda s: (SPECIALIZED_TILES.index((s.tile[0], s.tile[1], s.stages)), -s.group))


def _split_producer_twins(p: Problem, schedules: list) -> list[Schedule]:
    """The TMA-fed warpgroup tiles split K ways, again with a producer warpgroup (a
    block a tile and chunk), alone and in pairs sharing B: few tiles over a long K
    read mostly from memory, and a pair reads B's tile once."""
    if matmul_shape(p)[0] > 1:
        return []
    twins = [with_producer(s) for s in schedules if s.tma and s.splits]
    return twins + [replace(s, cluster=2) for s in twins]


def candidates(p: Problem, hints: Hints = Hints()) -> list[Schedule]:
    """Every schedule worth timing for this problem (all valid for it)."""
    if p.group.kind == "matmul":
        out, twins = [], []
        if hints.tf32 and tf32_operands(p) and p.arch == "sm_90a":   # opted in: f32 as TF32
            out += _wgmma_schedules(p, vec=4)
            twins += _persistent_twins(p, out) + _specialized_twins(p, out) + _copy_twins(p, out)
        if uses_tensor_cores(p):
            for tile, warp in (((128, 128, 32), (64, 32)), ((64, 64, 32), (32, 32)),
                               ((128, 64, 32), (64, 32)), ((128, 128, 32), (32, 64)),
                               ((64, 128, 32), (32, 64)), ((128, 128, 32), (64, 64))):
                for vec in sorted({1, matmul_vector(p)}):
                    out.append(Schedule("matmul", block=(tile[0] // warp[0]) * (tile[1] // warp[1]) * 32,
                                        tile=tile, micro=warp, mma=True, vec=vec, index64=p.index64))
            if matmul_vector(p) == 8 and p.arch == "sm_90a":     # warpgroup tensor cores
                warpgroup = _wgmma_schedules(p, vec=8)
                out += warpgroup
                twins += _persistent_twins(p, warpgroup) + _specialized_twins(p, warpgroup) + _copy_twins(p, warpgroup)
            if matmul_vector(p) == 8:     # cp.async pipelines
                for tile, warp in PIPELINE_TILES:
                    for stages in (3, 4):
                        for group in (0, 8):
                            s = Schedule("matmul", block=(tile[0] // warp[0]) * (tile[1] // warp[1]) * 32,
                                         tile=tile, micro=warp, mma=True, vec=8, stages=stages, group=group,
                                         index64=p.index64)
                            if s.shared_bytes <= MAX_SHARED_BYTES:
                                out.append(s)
        if simt_vector(p) == 4:     # f32 tiles in 16-byte vectors, float4 fragment reads
            for bm, bn, bk, tm, tn, blocks in SIMT_VECTOR_TILES:
                out.append(Schedule("matmul", block=(bm // tm) * (bn // tn), tile=(bm, bn, bk), micro=(tm, tn),
                                    vec=4, min_blocks=blocks, index64=p.index64))
        for bm, bn, bk, tm, tn in ((64, 64, 16, 4, 4), (128, 128, 8, 8, 8), (128, 64, 8, 8, 4),
                                   (64, 128, 8, 4, 8), (128, 128, 16, 8, 8), (32, 32, 32, 2, 2)):
            out.append(Schedule("matmul", block=(bm // tm) * (bn // tn), tile=(bm, bn, bk),
                                micro=(tm, tn), index64=p.index64))
        # split-K where the tiles leave SMs idle and K is long: the SIMT tiles of the defaults,
        # and the tensor-core tiles in launch order, one block per SM
        out += [replace(s, splits=k) for s in out
                if ((s.tile, s.micro) in SPLIT_K_TILES if not s.mma else
                    (s.tile, s.micro, s.stages) in TC_SPLIT_TILES and not s.group and s.min_blocks == 1)
                for k in split_k_choices(p, s.tile)]
        return _hopper_first(p, out + twins + _split_producer_twins(p, out))
    if p.group.kind == "pointwise":
        out = []
        for vec in sorted({max_vector(p, hints.vector), max(1, max_vector(p, hints.vector) // 2)}):
            for block in (128, 256, 512):
                for items in (1, 2, 4, 8):
                    # what a thread holds in flight must fit its registers
                    if items * vec > MAX_ROW_ELEMENTS or (items > 1 and pointwise_held_words(p, vec, items)
                                                          > POINTWISE_HELD_WORDS):
                        continue
                    out.append(Schedule("pointwise", block=block, vec=vec, items=items,
                                        index64=p.index64))
        if transposed_loop(p) is not None:
            out += [Schedule("pointwise", block=block, vec=vec, tile=tile, index64=p.index64)
                    for vec in sorted({1, tile_vector(p)})
                    for tile in ((32, 32), (64, 64), (32, 64), (64, 32), (128, 64), (64, 128), (128, 128))
                    for block in (128, 256, 512)
                    if block * vec <= tile[0] * tile[1] and staged_tile_bytes(p, tile) <= MAX_STATIC_SHARED]
        return out
    out = []
    col_vecs = column_vectors(p)
    if not p.row_major():     # a thread a column, or a vector of neighbouring columns
        out += [Schedule("reduce_col", block=256, vec=v, items=0, row_threads=1, index64=p.index64)
                for v in [1] + col_vecs]
    wide = columns_split(p) if not p.row_major() else None
    if wide is not None:    # many columns: the default's splits, and one more and one fewer
        out += [replace(wide, splits=n) for n in dict.fromkeys((wide.splits, wide.splits + 1, wide.splits - 1))
                if 2 <= n <= max_splits(p, 1, 1)]
    split = split_schedule(p)
    if split is not None:   # the default's splits, twice as many (while chunks last) and half
        for n in dict.fromkeys((split.splits, min(2 * split.splits, max_splits(p, split.row_threads, split.vec)), split.splits // 2)):
            if n >= 2:
                out.append(replace(split, splits=n))
        if not p.row_major() and split.row_threads < split.block:   # a tile of columns: twice and half as tall
            out += [replace(split, row_threads=t) for t in (2 * split.row_threads, split.row_threads // 2)
                    if 1 <= t < split.block]
        for v in col_vecs:      # vectors of columns, their splits filling the GPU
            wide = split_schedule(p, v)
            if wide is not None:
                out += [replace(wide, splits=n) for n in dict.fromkeys((wide.splits, wide.splits // 2)) if n >= 2]
    if not p.row_major():   # 16-byte vectors of columns, each column's rows shared by a block's threads
        # (registers budgeted for 1024 threads an SM, or for all 2048)
        out += list(dict.fromkeys(t for columns, block in ((16, 512), (32, 512), (64, 512), (32, 256))
                                  for full in (True, False)
                                  if (t := column_tile_split(p, columns, block, full)) is not None))
        tile = column_tile_default(p)
        if tile is not None:    # the default's chunks, half as long (while a wave lasts) and twice
            wave = column_tile_split(p, 512 // tile.row_threads, 512, full=tile.min_blocks > 1).splits
            out += [replace(tile, splits=n) for n in dict.fromkeys((tile.splits, min(2 * tile.splits, wave),
                                                                    tile.splits // 2)) if n >= 2]
    # A few rows that a split reduction spreads over the GPU: a block a row would leave most
    # SMs idle, and each thread sums a long stretch serially (H100, sum(x * y) over 2^26 f32:
    # 2.4-3.8 ms against the split's 0.19, and relative errors of 1.9e-5 against float64).
    if split is not None and 4 * p.rows <= p.sm_count:
        return _with_unrolls(p, out)
    # The search space is capped: widest vectors first, the likelier winners, and row
    # widths nearest the default's first (its neighbours before the extremes).
    vecs = sorted({max_vector(p, hints.vector), 1}, reverse=True) if p.row_major() else [1]
    base = default(p, hints)
    center = (base.row_threads if base.kind == "reduce_row" else 256).bit_length()
    # short rows: part of a warp a row too (several rows a warp: no prefetch, no ring)
    widths = ((1, 2, 4, 8, 16) if p.row_length <= SHORT_ROW and p.row_major() else
              (16,) if p.row_major() and row_input_bytes(p) <= 2 * HALF_WARP_ROW_BYTES else ())
    widths = sorted(widths + (32, 64, 128, 256, 512, 1024), key=lambda t: (abs(t.bit_length() - center), t))
    peel = peel_vector(p) if p.row_length > SHORT_ROW and not hints.vector else 1
    if peel > 1:    # rows peeled to aligned vectors, as wide vectors go first: looped (long rows),
        if p.row_length >= 2048:
            out += [Schedule("reduce_row", block=tpr, vec=peel, items=0, row_threads=tpr, peel=True,
                             index64=p.index64)
                    for tpr in sorted((256, 512, 1024), key=lambda t: abs(t.bit_length() - center))]
        # and held in registers: a warp each of several rows a block, a block alone, a cluster's blocks
        held = [s for tpr in (32, 64, 128, 256, 512, 1024) if (s := held_row_share(p, peel, tpr, peel=True))]
        out += [replace(s, block=WARP_ROW_BLOCK) for s in held[:1] if s.block == 32]
        out += held if any(s.block == 1024 for s in held) else held + cluster_row_shares(p, peel, peel=True)
    # rows too long for a block's registers: shared by a cluster's blocks (sm_90a)
    if p.row_major() and not row_share_fits(p, row_share(p.row_length // vecs[0], 1024), vecs[0]):
        out += cluster_row_shares(p, vecs[0])
    for vec in vecs:
        rvec = p.row_length // vec
        for tpr in widths:
            block = 256 if tpr < 32 else 128 if tpr == 32 else tpr
            shares_warp = tpr < 32
            items = row_share(rvec, tpr)
            # the row-invariant inputs hoisted, or loaded late where only that fits (as default() does)
            hoists = [h for h in ((True, False) if p.has_row_invariant_inputs() else (True,))
                      if row_share_fits(p, items, vec, hoisted=h, packed=True)]
            if hoists:
                keeps = (False, True) if keeps_fit(p, items, vec) or element_keeps_fit(p, items, vec) else (False,)
                for hoist in hoists:
                    for per_sm in ((0, THREADS_PER_SM // block) if p.rows > 4 * p.sm_count else (0,)):
                        for keep in keeps:
                            out.append(Schedule("reduce_row", block=block, vec=vec, items=items,
                                                row_threads=tpr, hoist=hoist, blocks_per_sm=per_sm,
                                                keep=keep, index64=p.index64))
                            if not per_sm and full_occupancy_fits(p, items, vec, keep):
                                out.append(replace(out[-1], min_blocks=THREADS_PER_SM // block))
                            elif not per_sm and r40_fits(p, block, items, vec, keep, hoist):
                                out.append(replace(out[-1], min_blocks=R40_THREADS // block))
                    # a persistent block's threads copy their next rows into shared memory
                    # (cp.async) while they reduce this one: rows in flight cost no registers
                    if p.rows > 4 * p.sm_count and not shares_warp:
                        for stages in (2, 3):
                            for per_sm in sorted({1024 // block, THREADS_PER_SM // block}):
                                for keep in keeps:
                                    s = Schedule("reduce_row", block=block, vec=vec, items=items,
                                                 row_threads=tpr, hoist=hoist, blocks_per_sm=per_sm,
                                                 keep=keep, stages=stages, index64=p.index64)
                                    if not ring_problem(p, s):
                                        out.append(s)
                    # a persistent block loads its next row while it reduces this one
                    if p.rows > 4 * p.sm_count and prefetch_fits(p, items, vec) and not shares_warp:
                        for per_sm in sorted({max(1, THREADS_PER_SM // 2 // block), THREADS_PER_SM // block}):
                            for keep in keeps:
                                out.append(Schedule("reduce_row", block=block, vec=vec, items=items,
                                                    row_threads=tpr, hoist=hoist, blocks_per_sm=per_sm,
                                                    keep=keep, prefetch=True, index64=p.index64))
            if tpr >= 256:
                out.append(Schedule("reduce_row", block=tpr, vec=vec, items=0, row_threads=tpr,
                                    index64=p.index64))
    return _with_unrolls(p, out)


def _with_unrolls(p: Problem, schedules: list) -> list:
    """Each streamed schedule followed by its explicit unrolls (`stream_unrolls`); then, where
    the group takes max and sum(exp), each looped row's other choice of passes (`online`),
    last: a search capped below the whole space keeps the candidates it had."""
    out = [u for s in schedules for u in [s] + [replace(s, unroll=n) for n in stream_unrolls(p, s)]]
    if online_pairs(p.group):
        out += [replace(s, online=not s.online) for s in out if s.kind == "reduce_row" and s.items == 0]
    return out


# The L2's size (H100, H200: 50 MB; A100: 40 MB) decides whether a looped row's second
# pass finds the row there.
L2_BYTES = {"sm_80": 40 << 20}
L2_BYTES_DEFAULT = 50 << 20


def online_pays(p: Problem, block: int) -> bool:
    """Whether a looped row (a block a row) takes max and sum(exp(x - max)) in one pass
    (Schedule.online) rather than two: where the rows its resident blocks stream at
    once (registers are budgeted for 1024 threads an SM) outgrow the L2, a second
    pass re-reads them from HBM; where they fit, the second pass finds them in L2 and
    the one pass's exps on the way in cost more. H100 2026-11-25
    (scripts/probe_online.py), us, one pass / two, the rule's pick first:
    softmax f16 4096x50257 (26 MB at once) 501.2 / 404.6, 4096x32771 289.7 / 236.1;
    2048x131075 (69 MB) 781.4 / 860.9, 512x262144 284.8 / 387.9; f32 4096x50257
    970.3 / 1200.5, 1024x65537 338.1 / 419.4, 256x262144 281.2 / 366.9; logsumexp f32
    4096x50257 295.2 / 541.0, 256x262144 94.8 / 177.6; where they fit, logsumexp f16
    4096x50257 240.7 / 195.7, f32 4096x32771 185.9 / 190.8. The tuner times both.
    True (the field's default, one name for one code) where the group has no such pair."""
    if not online_pairs(p.group):
        return True
    reduced, kept = set(p.layout.reduced_loops), set(p.layout.kept_loops)
    row_bytes = p.row_length * sum(op.dtype.itemsize for op in p.layout.inputs
                                   if set(op.loops) & reduced and set(op.loops) & kept)
    rows_at_once = min(p.rows, p.sm_count * max(1, 1024 // block))
    return rows_at_once * row_bytes > L2_BYTES.get(p.arch, L2_BYTES_DEFAULT)


def stream_unrolls(p: Problem, s: Schedule) -> list[int]:
    """Explicit unrolls worth timing for a streamed loop: 16 and 32 words of loads in
    flight a thread, and a half and a quarter of the rule's own unroll (ptxas's depth,
    where the rule unrolls rows read element by element 16 deep). ptxas's own choice
    (the default) is best for most (H100: column sums 37.7 against 40.5 us unrolled);
    x @ W, a column split, took 96.8 against 108.1 us with 16 iterations
    (BENCHMARKS.md, "Products with a vector")."""
    if not s.streamed:
        return []
    words, wide = stream_words(s, p.layout)
    rule = stream_unroll_rule(s, words, wide)
    return sorted({n for n in (_pow2_at_most(16 / words), _pow2_at_most(32 / words), rule // 2, rule // 4)
                   if 2 <= n <= 16 and n != rule})


def _pow2_at_most(x: float) -> int:
    n = 1
    while 2 * n <= x:
        n *= 2
    return n


def default(p: Problem, hints: Hints = Hints(), clusters: bool = True) -> Schedule:
    """The schedule used without tuning: a rule fitted to measured winners
    (benchmarks/sweep.py on an H200, 2026-11-21): about 16 elements per thread
    (8 without vectors), 64 to 512 threads per row, row-invariant inputs
    hoisted into registers with a persistent grid only where they outweigh
    the row itself (layernorm's f32 weight and bias, not rmsnorm's f16
    weight), and costly values kept between phases where registers allow.
    Rows too long for a block's registers are shared by a cluster's blocks
    where cluster_row_schedule says so (`clusters=False`: they stream)."""
    if p.group.kind == "matmul":
        return matmul_default(p, hints)
    if p.group.kind == "pointwise":
        block = hints.threads or (hints.warps * 32 if hints.warps else 128)
        tile = transposing_tile(p)
        if tile is not None:
            vec = tile_vector(p)
            return Schedule("pointwise", block=min(block, tile[0] * tile[1] // vec), vec=vec, tile=tile,
                            index64=p.index64)
        vec = max_vector(p, hints.vector)
        while not hints.vector and vec > 1 and pointwise_held_words(p, vec, 1) > POINTWISE_HELD_WORDS:
            vec //= 2       # many inputs: narrower vectors rather than spills
        items = 2 if pointwise_held_words(p, vec, 2) <= POINTWISE_HELD_WORDS else 1
        return Schedule("pointwise", block=block, vec=vec, items=items, index64=p.index64)
    tile = column_tile_default(p) if not p.row_major() else None
    if tile is not None:
        return tile
    if not p.row_major() and p.rows >= 4 * p.sm_count * 32:
        return columns_split(p) or Schedule("reduce_col", block=256, vec=1, items=0, row_threads=1,
                                            index64=p.index64)
    split = split_schedule(p, paired_columns(p))
    if split is not None:
        return split
    short = short_row_schedule(p, hints) or warp_row_schedule(p, hints)
    if short is not None:
        return short
    vec = max_vector(p, hints.vector) if p.row_major() else 1
    if hints.cluster and hints.cluster > 1:     # pinned: a row shared by that many blocks, where a share fits
        odd = vec == 1 and not hints.vector and peel_vector(p) > 1      # (peeled to aligned vectors)
        pinned = [s for s in cluster_row_shares(p, peel_vector(p) if odd else vec, peel=odd)
                  if s.cluster == hints.cluster and hints.threads in (None, s.block)]
        if pinned:
            return pinned[0]
    held = long_row_schedule(p, vec, hints, clusters)
    if held is not None:
        return held
    rvec = p.row_length // vec
    per_thread = max(1, (16 if vec >= 4 else 8) // vec)
    tpr = min(512, max(64, _pow2_at_least(-(-rvec // per_thread))))
    if hints.threads:
        tpr = hints.threads
    items = row_share(rvec, tpr)
    # A share that does not fit its registers (row_share_fits) is made to, the fastest
    # way measured (H100 2026-11-25, scripts/probe_row_share.py and `tiledsl autotune`,
    # against the old schedules, which spilled). A row read one by one streams at the
    # same block, unrolled as stream_unroll_rule says (softmax f32 2048x8193: 56.1 -> 56.9
    # us, 75.9 at 1024 threads; two f32 2048x8193 135.6 -> 74.0; three f32 4096x4097
    # 97.5 -> 94.4). Else the row takes this block, then 1024 threads, with its weights
    # loaded late if only that makes it fit (two f32 2048x16384: 184.8 -> 136.0 at 1024,
    # f64 256.6 -> 184.5; layernorm f16 weights 4096x10000 71.0 -> 66.3); else it streams.
    # (Those shares were powers of two; exact shares (row_share) made softmax f32 fit at
    # 2048x8193 and 4096x12001: held, 56.3 -> 51.2 and 181.7 -> 136.9 us, H100 2026-11-25.)
    late_weights = False
    if not row_share_fits(p, items, vec):
        if vec == 1:
            # a row length that breaks alignment, not held peeled (long_row_schedule, above): its
            # rows streamed, peeled to aligned vectors where they can be, unless weights over N
            # (gathered lane by lane from L1) outweigh the row's inputs
            # (H200 2026-11-26, scripts/probe_peel.py, us, element by element / peeled: softmax f16
            # 4096x50257 349.6 / 275.6, f32 682.1 / 577.5, f16 2048x131075 654.4 / 394.6; rmsnorm
            # bf16, its bf16 weight gathered, 2048x40001 200.1 / 109.6; logsumexp f32 222.8 / 210.4;
            # but layernorm f16 with f32 weight and bias 4096x20001 196.4 / 237.5)
            wide = peel_vector(p) if not hints.vector and peel_weights_fit(p) else 1
            return Schedule("reduce_row", block=tpr, vec=wide, items=0, row_threads=tpr, index64=p.index64,
                            online=online_pays(p, tpr), peel=wide > 1)
        # Then, for a 16-bit row in vectors, the same with up to 64 elements a thread, packed two
        # a register (row_share_fits with `packed`; H100 2026-11-26, scripts/probe_cluster_rows.py
        # --wide16, us, streamed / held: softmax f16 4096x50304 381.8 / 308.1 at 1024 threads and
        # 56 elements, 0.89x copy; rmsnorm f16 1024x65536 132.4 / 102.5 and layernorm f16 154.1 /
        # 123.2 at 64, weights late). Else the row is shared by a cluster's blocks, or streams.
        for packed, threads in ((False, tpr), (False, 1024), (True, tpr), (True, 1024)):
            share = row_share(rvec, threads)
            if row_share_fits(p, share, vec, packed=packed):
                tpr, items = threads, share
                break
            if p.has_row_invariant_inputs() and row_share_fits(p, share, vec, hoisted=False, packed=packed):
                tpr, items, late_weights = threads, share, True
                break
        else:
            return streamed_or_shared(p, vec, hints, clusters)
    kept, reduced = set(p.layout.kept_loops), set(p.layout.reduced_loops)
    invariant = sum(op.dtype.itemsize for op in p.layout.inputs
                    if set(op.loops) & reduced and not set(op.loops) & kept)
    per_row = sum(op.dtype.itemsize for op in p.layout.inputs if set(op.loops) & kept)
    hoist = invariant > per_row and not late_weights
    per_sm = THREADS_PER_SM // tpr if hoist and p.rows > 4 * p.sm_count else 0
    keep = keeps_fit(p, items, vec)
    # A persistent block loads its next row while it reduces this one. Measured 2026-11-22
    # (benchmarks/sweep.py, layernorm f16 16384x4096 / 65536x1024 / 4096x8192): on an H200
    # 10%, 6% and 1% faster than without, the fastest schedule of each space; on an H100 2%
    # slower, 3% and 8% faster (BENCHMARKS.md, "Row rings and the prefetch default").
    prefetch = bool(per_sm) and prefetch_fits(p, items, vec) and hints.stages != 1
    if prefetch:
        keep = False
    # Where each SM has less HBM bandwidth to use, many rows in flight beat hoisting: the
    # weights stay unhoisted (loaded late, from L1), the grid is a block per row, and the
    # registers are capped for 1536 threads. Measured 2026-11-22 (benchmarks/sweep.py,
    # layernorm f16): on an H100 (25 GB/s per SM) 8% and 7% faster than the persistent
    # prefetch at 16384x4096 and 65536x1024, 3% slower at 4096x8192 (31 rows per SM); on an
    # H200 (37 GB/s per SM) 5%, 3% and 16% slower. Weights at most twice the row (f16 weight
    # and bias) are cheap to read from L1 row after row: late on any GPU at 64 rows per SM
    # (H200 74.5 and 70.0 us against 75.9 and 73.6 at 16384x4096 and 65536x1024), and with
    # fewer rows per SM where bandwidth per SM is low (H100 4096x8192: 51.0 against 52.1;
    # H200: 42.5 against 40.2, the persistent block stays).
    low_bandwidth = 0 < p.hbm_gbps_per_sm < LATE_LOADS_GBPS_PER_SM
    light = invariant <= 2 * per_row
    late = (bool(per_sm) and r40_fits(p, tpr, items, vec, False, False) and not hints.stages
            and (low_bandwidth or light) and (p.rows >= 64 * p.sm_count or (low_bandwidth and light)))
    if late:
        hoist, per_sm, prefetch, keep = False, 0, False, False
    full = not per_sm and not prefetch and full_occupancy_fits(p, items, vec, keep)
    chosen = Schedule("reduce_row", block=tpr, vec=vec, items=items, row_threads=tpr,
                      hoist=hoist or not invariant, blocks_per_sm=per_sm, keep=keep, prefetch=prefetch,
                      min_blocks=THREADS_PER_SM // tpr if full else R40_THREADS // tpr if late else 1,
                      index64=p.index64)
    return pinned_ring(p, chosen, hints.stages) if hints.stages and hints.stages > 1 else chosen


def streamed_or_shared(p: Problem, vec: int, hints: Hints, clusters: bool) -> Schedule:
    """A row (in vectors) too long for a block's registers: shared by a cluster's blocks
    where cluster_row_schedule says so, else streamed by a block."""
    shared = cluster_row_schedule(p, vec) if clusters and not hints.threads and hints.cluster != 1 else None
    if shared is not None:
        return shared
    # 16-bit rows: 512 threads, 4 vectors in flight each (H200 2026-11-26, scripts/probe_peel.py,
    # us, 1024 threads at ptxas's unroll / this: softmax f16 4096x50256 343.9 / 280.6, bf16
    # 2048x128256 520.6 / 535.5; rmsnorm bf16 2048x40000 116.2 / 96.1; logsumexp f16
    # 4096x50304 183.8 / 159.1). f32 rows keep 1024 threads (softmax 4096x50256: 515.2
    # against 739.1 at 512 and 4 vectors)
    narrow = all(op.dtype.itemsize == 2 for op in p.layout.inputs if set(op.loops) & set(p.layout.kept_loops))
    threads = 512 if narrow else 1024
    return Schedule("reduce_row", block=threads, vec=vec, items=0, row_threads=threads, index64=p.index64,
                    online=online_pays(p, threads), unroll=4 if narrow else 0)


def long_row_schedule(p: Problem, vec: int, hints: Hints, clusters: bool = True) -> Optional[Schedule]:
    """A long row that a stream would read twice or more (streamed_reads), held in
    registers by the fewest threads of a block whose share fits (or `threads`; 16-bit
    values packed two a register), where it is (1) of PEELED_ROW elements or more
    (PEELED_ROW_16 of 16-bit values: narrow_rows), of a length that breaks alignment
    (`vec` 1; read in vectors only peeled: peel_vector), its weights no heavier than it
    (peel_weights_fit): held peeled (Schedule.peel with items)
    by 32 (below LONG_ROW; else 128) to 1024 threads, else by a cluster's blocks
    (cluster_row_shares); or (2) of LONG_ROW elements or more, 16-bit in vectors with no
    weights (softmax f16): by 128 to 1024 threads; else None. The more elements a thread
    holds, the more rows each SM has in flight. H100 2026-11-26
    (scripts/probe_cluster_rows.py), us, the default before / this:
    (1) softmax f32 8192x4097 111.3 / 93.5 (128 threads; 1024: 188.4), 4096x8193 93.9
    (256; 512: 94.3), 4096x12001 136.8 / 136.1 (512), 4096x50257 818.4 / 641.5 (4 blocks
    of 512; 2 of 1024: 717.8), 1024x65537 275.0 / 206.3 (4 of 512); softmax f16
    16384x4099 162.0 / 95.2 (128), 8192x10001 166.3 / 115.7 (256; 512: 138.9),
    4096x50257 348.2 / 328.4 (1024); bf16 2048x131075 547.9 / 435.6 (4 of 512); rmsnorm
    bf16 8192x6001 78.0 / 72.5 (128), 2048x40001 134.6 / 126.1 (1024); below 4096
    (19:22): softmax f16 16384x3001 92.7 / 72.5 (64), 32768x1537 92.2 / 74.8 (32), f32
    16384x2049 100.3 / 94.7 (64), 16384x3001 133.8 / 135.2 (128); rmsnorm bf16
    16384x3001 99.1 / 73.1 (64; 128: 71.8); 16-bit rows from PEELED_ROW_16 (20:54): softmax
    f16 16384x1201 40.6 / 33.0, rmsnorm bf16 16384x1299 44.7 / 35.8 (a warp). Not taken:
    layernorm f16 with f32 weight and bias 4096x20001 (their gathered lanes: 207.1
    element by element, 225.8 held peeled), softmax f32 32768x781 (72.8 element by
    element, 77.4 peeled at 128 threads).
    (2) softmax f16 8192x8192 109.5 / 94.3 (128; 16 elements a thread kept: 99.4 without
    keeping), 8192x10000 124.0 / 113.6 (256), 4096x32000 198.8 / 181.4 (512, 64 a
    thread), 16384x4096 93.9 / 93.6 (128). The norms (weights) gained nothing: rmsnorm
    f16 4096x8192 49.6 / 49.2 at 256, all-f16 layernorm 50.5 / 50.9, and keep their rule."""
    if (streamed_reads(p) < 2 or not p.row_major() or 0 < (hints.threads or 32) < 32
            or (hints.stages or 1) > 1):        # (a ring of rows pinned: the rule below places it)
        return None
    shortest = PEELED_ROW_16 if narrow_rows(p) else PEELED_ROW
    peel = (vec == 1 and not hints.vector and p.row_length >= shortest and peel_vector(p) > 1
            and peel_weights_fit(p))
    if peel:        # (below LONG_ROW from a warp: measured there; from 128 threads above it)
        vec = peel_vector(p)
        widths = (32, 64, 128, 256, 512, 1024) if p.row_length < LONG_ROW else (128, 256, 512, 1024)
    elif packed_rows(p, vec) and not p.has_row_invariant_inputs() and p.row_length >= LONG_ROW:
        widths = (128, 256, 512, 1024)
    else:
        return None
    for threads in (hints.threads,) if hints.threads else widths:
        held = held_row_share(p, vec, threads, peel=peel)
        if held:
            return held
    if not peel or not clusters or hints.threads or hints.cluster == 1:
        return None
    return cluster_row_schedule(p, vec, peel=True)


def streamed_reads(p: Problem) -> int:
    """Times a looped row (a block a row, streaming it) reads its row: once a reduction
    level, max and sum(exp(x - max)) in one pass where the default takes one
    (online_pays), and once more for results over the whole row."""
    levels = len(set(reduction_levels(p.group).values()))
    merged = len(online_pairs(p.group)) if online_pays(p, 1024) else 0
    full = any(set(op.loops) & set(p.layout.reduced_loops) for op in p.layout.outputs)
    return levels - merged + full


def cluster_row_shares(p: Problem, vec: int, peel: bool = False) -> list[Schedule]:
    """A row shared by the blocks of a cluster (Schedule.cluster, sm_90a), each block's
    share in registers: for 512 and then 1024 threads a block, 2, 4 and 8 blocks, each
    where the share fits (row-invariant inputs hoisted, else loaded late; `peel`: the
    rows peeled to aligned vectors, their weights late)."""
    if p.arch != "sm_90a" or vec == 1 or not p.row_major() or not cluster_values_fit(p):
        return []
    return [s for threads in (512, 1024) for blocks in ROW_CLUSTERS
            if (s := held_row_share(p, vec, threads, blocks, peel))]


def held_row_share(p: Problem, vec: int, threads: int, blocks: int = 1, peel: bool = False) -> Optional[Schedule]:
    """A row held in the registers of `blocks` blocks of `threads` threads, in vectors of
    `vec` (16-bit ones packed two a register), its weights hoisted or else loaded late
    (late alone where the row is peeled): the schedule where its share fits, else None."""
    weights = p.has_row_invariant_inputs()
    share = row_share(p.row_length // vec, threads * blocks)
    for hoist in (False,) if peel and weights else (True, False) if weights else (True,):
        if row_share_fits(p, share, vec, hoisted=hoist, packed=True):
            return Schedule("reduce_row", block=threads, vec=vec, items=share, row_threads=threads, hoist=hoist,
                            cluster=blocks, peel=peel, index64=p.index64)
    return None


def cluster_values_fit(p: Problem) -> bool:
    """Whether every reduction's value is 4 or 8 bytes in registers (a block posts it to
    the others by st.async, tdsl::cluster_reduce)."""
    return all(v.dtype.is_float or v.dtype.itemsize in (4, 8) for v in p.group.values if v.op == "reduce")


def cluster_row_schedule(p: Problem, vec: int, peel: bool = False) -> Optional[Schedule]:
    """A row too long for a block's registers, shared by a cluster's blocks: the first
    of cluster_row_shares (`peel`: peeled; 512 threads before 1024, fewer blocks before
    more; 16-bit rows in vectors hold up to 64 elements a thread), where a looped row reads it twice
    or more (streamed_reads). Read once from HBM, not phase after phase. H100
    2026-11-26 (scripts/probe_cluster_rows.py), us, streamed / shared (schedule):
    softmax f32 1024x65536 290.4 / 193.9 (4 blocks of 512, 0.92x copy), 256x262144
    282.0 / 228.7 (8 of 1024), 64x200000 82.6 / 57.1 (8 of 1024); softmax f16
    2048x131072 549.5 / 418.9 (4 of 512, 64 elements a thread), 512x262144 283.4 /
    225.6 (8 of 512), bf16 2048x128256 545.3 / 423.5 (4 of 512). Not taken: logsumexp
    f32 256x262144 (one pass: 94.4 / 143.9). Shares of 32 16-bit elements a thread
    lost (softmax f16 4096x50304 381.8 / 437.7 at 4 of 512): half the bytes in flight."""
    if streamed_reads(p) < 2:
        return None
    shares = cluster_row_shares(p, vec, peel)
    return shares[0] if shares else None


def pinned_ring(p: Problem, s: Schedule, stages: int) -> Schedule:
    """`stages(n)` on a row reduction: a ring of up to n rows (at most MAX_ROW_STAGES)
    per thread in shared memory, on a persistent grid of the blocks that 1024 threads
    per SM make; fewer stages where shared memory is short, none (the schedule as it
    was) where the rows cannot move in 16-byte vectors."""
    for n in range(min(stages, MAX_ROW_STAGES), 1, -1):
        ring = replace(s, stages=n, prefetch=False, min_blocks=1,
                       blocks_per_sm=s.blocks_per_sm or max(1, 1024 // s.block))
        if not ring_problem(p, ring):
            return ring
    return s


def split_schedule(p: Problem, column_vec: int = 1) -> Optional[Schedule]:
    """A split reduction where too few rows would leave the GPU idle: one long row
    gets whole blocks; rows along the inner memory dim (columns: `sum(x, axis=M)`)
    a tile of a block, up to 256 columns wide, each column's share of the block's
    256 threads taking every row_threads-th element (a warp reads whole lines: 4
    rows of a column sum over x[M, 8], where a block of 32 threads, a thread a
    column, left 24 idle and read 32 bytes an access: 486.4 -> 64.0 us at [2^22, 8]
    on an H100, 2026-11-25; [2^20, 33] 148.7 -> 78.1); the splits bring the grid to
    about 2 blocks per SM, at most 512 threads. Measured 2026-11-22 (`tiledsl autotune`, 10 shapes: column
    sums, x @ W, sums and dot products): the old 4 blocks per SM took 4-32% longer
    on 9 of them on an H100 and on 8 on an H200 (sum(x) 4096x4096: 45.5 against
    33.1 us, and 38.8 against 25.9 on the H200); 4 per SM won one shape by 4%
    on the H200 (column sums 65536x4096), and lost it by 2.5% on the H100. With
    `column_vec`, a thread takes that many neighbouring columns (a thread a column
    only), and the splits fill the GPU with the fewer threads."""
    if not p.splittable() or p.row_length < 4096:
        return None
    vec = 1
    if p.row_major() or p.rows == 1:
        if column_vec > 1:
            return None
        block, tpr = 512, 512
        row_blocks = p.rows
        vec = max_vector(p) if p.row_major() else 1
    else:   # across memory: a tile of columns (rows, to tiledsl), a column's threads a row apart
        block, vec = 256, column_vec
        columns = min(block, _pow2_at_least(p.rows // vec))
        if vec > 1:     # vectors take a thread a column: a block as wide as the vectors, 32 to 256
            if columns < 32:
                return None
            block = columns
        tpr = block // columns
        row_blocks = -(-(p.rows // vec) // columns)
    if row_blocks >= 2 * p.sm_count:
        return None
    per_sm = max(1, min(2, 512 // block))
    splits = min(-(-per_sm * p.sm_count // row_blocks), max_splits(p, tpr, vec))
    if splits < 2:
        return None
    return Schedule("reduce_split", block=block, vec=vec, items=0, row_threads=tpr, splits=splits,
                    index64=p.index64)


def accumulator_words(p: Problem) -> int:
    """32-bit registers a thread holds for one column through its reduction loop: its
    accumulators, 2 for each 8-byte reduction (f64, 64-bit integers), 1 for each other
    (16-bit floats add in f32), and the column's own values its elements read (an input
    over the columns, an idx() of them: held a lane each, codegen's lane_held_lines)."""
    axes = set(p.group.axes)
    read = {o.id for v in p.group.values if set(v.dims) & axes for o in v.operands}
    own = [v for v in list(p.group.inputs) + per_row_before_reductions(p.group)
           if v.id in read and not set(v.dims) & axes and not (v.op == "param" and not v.dims)]
    words = lambda v: 2 if v.dtype.itemsize == 8 else 1     # noqa: E731
    return sum(words(v) for v in p.group.values if v.op == "reduce") + sum(words(v) for v in own)


def column_tile_split(p: Problem, columns: int = 32, block: int = 512, full: bool = False) -> Optional[Schedule]:
    """A split reduction across memory whose threads read 16 bytes of neighbouring columns
    (the widest column vector) a row: a block `columns` vectors wide and block // columns
    threads deep down each column's chunk of rows, combined in shared memory, the splits
    filling the SMs with threads (whole waves of THREADS_PER_SM threads an SM): the tuner's
    candidates, and the shape of the 16-bit default (column_tile_default, which takes
    longer chunks). `full` budgets registers for all THREADS_PER_SM threads (32 a thread),
    for vectors of 8 16-bit columns whose accumulators take 8 registers at most: one
    reduction in f32 (at 32 registers f32 vectors spilled 4 bytes, two sums of f16 vectors
    24, an i64 sum of i8 vectors 48; sm_90a). At 48 registers (2 blocks of 512 an SM), with
    every thread combining every lane, these lost to the pairs of columns (H100 2026-11-27
    03:14, mean f16 65536x768 50.4 against 48.5 us)."""
    if p.row_major() or not p.splittable() or p.row_length < 1024 or not column_vectors(p):
        return None
    vec = max(column_vectors(p))
    if full and (vec < 8 or vec * accumulator_words(p) > 8):
        return None
    columns = min(columns, _pow2_at_least(p.rows // vec))
    tpr = block // columns
    if columns < 8 or tpr < 2:
        return None
    row_blocks = -(-(p.rows // vec) // columns)
    # whole waves of blocks (as many as THREADS_PER_SM threads an SM hold), not one more part-wave
    splits = min((THREADS_PER_SM // block) * p.sm_count // row_blocks, max_splits(p, tpr, 1))
    if splits < 2:
        return None
    return Schedule("reduce_split", block=block, vec=vec, items=0, row_threads=tpr, splits=splits,
                    min_blocks=THREADS_PER_SM // block if full else 1, index64=p.index64)


def column_tile_default(p: Problem) -> Optional[Schedule]:
    """The default for 16-bit columns across memory: tiles of 16 vectors of columns (32
    where 16 leave too few chunks for two), blocks of 512 with registers for 2048 threads
    (1024 where the accumulators would not fit: several reductions), and about 2 blocks an
    SM, each walking a long chunk; None where they would not fill the
    SMs so, or where each thread would load under 32 vectors (bf16 4096x4096: 19.8 us in
    pairs of columns, 20.9-22.5 in tiles; the pairs of columns below). H100 2026-11-27
    (scripts/probe_col_tiles.py SWEEP=1, us, the old default / this rule's tile and chunks
    / the best chunks): mean f16 65536x768 48.8 / 41.7 (s32; 44.6 in a wave of 4 blocks an
    SM), bf16 65536x1024 59.0 / 51.1, sum f16 16384x4096 52.5 / 49.6, 8192x8192 51.6 /
    49.6, 1048576x128 125.0 / 104.3 (s256), 1048576x64 72.2 / 60.5-61.3, 1024x65536 55.5 /
    50.0; a hand-written kernel of 32 vectors a block 44.9, 55.1, 52.1, 51.3, 116.0, 89.7,
    51.4. The rule, timed after (same probe): 41.3, 51.4, 50.2, 49.9, 107.5, 62.8, 50.3.
    f32 columns keep the defaults (level, or slower in tiles). Tiles with registers for
    1024 threads take no more chunks than one wave of blocks: 8 chunks, not 9, of a batch
    norm's variance f16 16384x4096 took 50.1 us against 56.4 (H100 2026-11-27)."""
    if not sixteen_bit_columns(p) or 8 not in column_vectors(p):
        return None
    # registers for 2048 threads where one f32 accumulator a lane is all a thread keeps beside
    # its index: more reductions, a column's own values, a middle axis's index or an input
    # over the rows alone (x @ w's x) spilled 8-24 bytes at 32 (sm_90a; the last two found by
    # the GPU's spill warning, 2026-11-27): those get registers for 1024
    over_rows = [op for op in p.layout.inputs if set(op.loops) & set(p.layout.reduced_loops)]
    plain = len(p.layout.kept_loops) == 1 and len(streamed_column_inputs(p)) == len(over_rows)
    full = plain and 8 * accumulator_words(p) <= 8
    for columns in (16, 32):
        tile = column_tile_split(p, columns, 512, full=full)
        if tile is not None:
            break
    else:
        return None
    row_blocks = -(-(p.rows // 8) // (512 // tile.row_threads))
    splits = min(tile.splits, max(2, -(-2 * p.sm_count // row_blocks)))
    if row_blocks * splits < 2 * p.sm_count or p.row_length < 32 * splits * tile.row_threads:
        return None     # too few blocks, or chunks too short (under 32 loads a thread)
    # one wave: blocks past what the SMs hold at once wait for a second one, and their rows
    # take the wave's time again (bn variance f16 16384x4096 at registers for 1024 threads:
    # 9 chunks, 288 blocks of 264 places)
    resident = p.sm_count * (tile.min_blocks if tile.min_blocks > 1 else BUDGETED_THREADS // tile.block)
    if row_blocks * splits > resident and resident // row_blocks >= 2:
        splits = resident // row_blocks
    return replace(tile, splits=splits)


def columns_split(p: Problem) -> Optional[Schedule]:
    """Many columns across memory (a block of 256 of them, a thread a column), their
    reductions split into chunks where a thread a column would leave the SMs short of
    threads: about 3 blocks an SM (a second kernel adds the partials); None where that
    takes fewer than 2 chunks. H200 2026-11-26 (scripts/probe_columns.py, us, a thread
    a column / split): middle-axis sums f16 64x1024x512 44.6 / 28.3 (4 chunks), f32 48.5
    / 37.8, f32 8x4096x4096 179.2 / 125.3; column sums f32 2048x32768 96.0 / 66.6, f16
    1024x65536 52.8 / 46.3 (2); f32 512x262144 127.4, split 130.9 (a thread a column)."""
    if not p.splittable():
        return None
    row_blocks = -(-p.rows // 256)
    splits = min(-(-3 * p.sm_count // row_blocks), max_splits(p, 1, 1))
    if splits < 2:
        return None
    return Schedule("reduce_split", block=256, vec=1, items=0, row_threads=1, splits=splits, index64=p.index64)


def max_splits(p: Problem, row_threads: int, vec: int) -> int:
    """The most chunks a split reduction's rows are cut into: at least 8 vectors a
    thread of a block-wide row (64 elements where a thread has a row), at most a
    grid's 65535."""
    chunk = 8 * row_threads * vec if row_threads > 1 else 64
    return min(-(-p.row_length // chunk), 65535)


def column_vector_refusal(p: Problem, s: Schedule) -> str:
    """'' when a reduction across memory can take `s.vec` neighbouring columns a thread
    (the kept loop innermost in memory, `column_loop`), else why not."""
    if s.row_threads != 1 and not (s.kind == "reduce_split" and s.row_threads < s.block):
        return "vectors of columns take a thread a column (row_threads 1), or a split's tile of columns"
    if len(set(reduction_levels(p.group).values())) > 1:
        return "vectors of columns take one reduction level"
    loop = column_loop(p.layout)
    if loop is None or p.loops[loop] % s.vec:
        return f"the columns' innermost extent is not a multiple of {s.vec}"
    # inputs over the reduced loops load a vector a row; a column's own inputs (loaded once,
    # lane by lane) and results (stored lane by lane) may lie any way
    walking = streamed_column_inputs(p)
    if any(op.loops[-1] != loop or id(op) in p.misaligned or op.dtype.itemsize * s.vec > 16 for op in walking):
        return (f"vectors of {s.vec} columns need every input contiguous along them, 16-byte aligned, "
                f"at most 16 bytes a vector")
    return ""


def column_vectors(p: Problem) -> list[int]:
    """The vector widths a column or split reduction across memory may take (beyond 1)."""
    if p.row_major():
        return []
    probe = Schedule("reduce_col", block=256, vec=1, items=0, row_threads=1, index64=p.index64)
    return [v for v in (2, 4, 8) if not column_vector_refusal(p, replace(probe, vec=v))]


def paired_columns(p: Problem) -> int:
    """The columns a thread of the default split reduction across memory takes: 2 where
    every input along them is 16-bit and they are many (512 or more), so a thread reads 4
    bytes a row, not 2; else 1 (H200 2026-11-26, scripts/probe_survey.py, us, a column / two:
    f16 column sums 16384x4096 54.2 / 41.3, f16 batch mean 65536x768 46.9 / 42.1, bf16
    65536x1024 56.9 / 47.4; 4 and 8 columns no better; 64 bf16 columns 66.0 / 154.6)."""
    loop = column_loop(p.layout) if not p.row_major() else None
    if loop is None or p.loops[loop] < 512 or not sixteen_bit_columns(p):
        return 1
    return 2 if 2 in column_vectors(p) else 1


def sixteen_bit_columns(p: Problem) -> bool:
    """Whether a reduction across memory reads 16-bit values along its columns (the kept
    loop innermost in memory), and only those, row after row (a column's own inputs, read
    once, do not count)."""
    walking = streamed_column_inputs(p) if not p.row_major() else []
    return bool(walking) and all(op.dtype.itemsize == 2 for op in walking)


def streamed_column_inputs(p: Problem) -> list:
    """A reduction across memory's inputs read row after row along its columns (the kept
    loop innermost in memory): over a reduced loop and the columns' loop."""
    loop, reduced = column_loop(p.layout), set(p.layout.reduced_loops)
    return [op for op in p.layout.inputs if loop is not None and loop in op.loops and set(op.loops) & reduced]


def launches(p: Problem, s: Schedule) -> list[Launch]:
    """The launches schedule `s` takes (none when there is nothing to compute)."""
    if s.kind == "pointwise":
        if p.total == 0:
            return []
        grid = -(-(p.total // s.vec) // (s.block * s.items))
        if s.tile:      # a block per tile of the two loops, for every coordinate of the others
            i, j = p.inner, transposed_loop(p)
            grid = (-(-p.loops[i] // s.tile[0]) * -(-p.loops[j] // s.tile[1])
                    * (p.total // (p.loops[i] * p.loops[j])))
        return [Launch(s, (max(1, min(MAX_GRID, grid)), 1, 1), p.loops)]
    if s.kind == "matmul":
        return matmul_launches(p, s)
    if p.rows == 0:
        return []
    grid = -(-(p.rows // column_vector(s, p.layout)) // (s.block // s.row_threads))
    if s.kind == "reduce_split":
        final = -(-p.rows // (s.block // combine_lanes(s)))     # (lanes threads a row)
        return [Launch(s, (max(1, min(MAX_GRID, grid)), s.splits, 1), p.loops, 1),
                Launch(s, (max(1, min(MAX_GRID, final)), 1, 1), p.loops, 2)]
    if s.blocks_per_sm:
        grid = min(grid, p.sm_count * s.blocks_per_sm)
    if s.cluster > 1:       # a cluster a row (a whole number of clusters: they loop over the rest)
        return [Launch(s, (min(MAX_GRID // s.cluster, grid) * s.cluster, 1, 1), p.loops)]
    return [Launch(s, (max(1, min(MAX_GRID, grid)), 1, 1), p.loops)]


def matmul_shape(p: Problem) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of a matmul group: its result's loops, then K."""
    n_kept = p.layout.n_kept      # (products with a one-dim operand are reductions: ir.passes)
    batch = 1
    for l in range(n_kept - 2):
        batch *= p.loops[l]
    return batch, p.loops[n_kept - 2], p.loops[n_kept - 1], p.loops[n_kept]


def uses_tensor_cores(p: Problem) -> bool:
    mm = next(v for v in p.group.values if v.op == "matmul")
    return mm.operands[0].dtype.name in ("f16", "bf16") and mm.dtype.name == "f32"


def producer_loop_schedule(p: Problem, hints: Hints, vec: int) -> Optional[Schedule]:
    """The default for a product of K at most 2048 (32 K tiles of 16-bit values, 64 of
    TF32) that fills two or more waves of 128x256 tiles, unbatched, TMA-fed, its one
    result in rows, with no split pinned: a block an SM loops over the tiles with a
    producer warpgroup (`specialized`), which copies the next tile's K tiles while this
    one's results leave by TMA, so a tile's first copies and its epilogue cost the
    tensor cores little. The shorter K, the more that weighs.
    H100 2026-11-26, TFLOP/s, the plain 128x256 tile / this (scripts/gemm_sweep.py):
    - K <= 1024 (02:45-03:48, results stored from the threads then): f16 4096x4096x1024
      583.4 / 628.3, 8192x8192x1024 615.4 / 660.0, 8192x8192x512 493.3 / 572.8,
      2048x8192x1024 580.4 / 621.7, 16384x4096x512 523.1 / 576.0, relu(x @ w + b)
      8192x4096x1024 583.6 / 617.5, bf16 8192x8192x1024 608.5 / 676.5; f32 results:
      bf16 8192x8192x1024 513.5 / 597.6, f16 8192x8192x512 347.8 / 448.0, TF32
      8192x8192x1024 334.2 / 356.5. Results stored by TMA (05:15-05:20) gained 2-5%
      more on every 16-bit one (8192x8192x1024 679 -> 695-698, 16384x4096x512 586-590
      -> 619-620) and 0.5% with f32 results.
    - Longer K, with TMA stores (05:20-05:23, two sweeps): f16 4096^3 748-750 /
      763-766, 8192x8192x2048 704-705 / 739-742, 4096x4096x3072 729-730 / 750-751,
      6144x6144x4096 748-750 / 763, 4096x4096x6144 767-768 / 776; bf16 4096^3 765 / 788;
      bf16 -> f32 4096^3 719-721 / 760-763; relu(x @ w + b) 8192x8192x4096 737-738 /
      755-757; TF32 4096^3 398 / 417, 8192x8192x4096 403 / 410-412. At K = 8192 the
      plain tile stays ahead: 8192^3 775-782 / 768-776, 2048x2048x8192 781-785 / 776-781.
    - Those sweeps time each kernel briefly, at full clock. Under sustained load (200 ms of
      warm-up, the board at its 700 W and the SMs near 1300 MHz; scripts/probe_sustained.py,
      five interleaved rounds, medians) the loop gains up to K = 2048 and loses beyond:
      8192x8192x1024 555.4 / 571.9, 8192x8192x2048 605.6 / 623.7, 4096^3 624.0 / 604.6.
      So the bound is K = 2048, where both agree."""
    if matmul_shape(p)[3] > 2048 or output_tiles(p, 128, 256) < 2 * p.sm_count or not producer_allowed(p, hints):
        return None
    return producer_loop(p, hints, 256, vec)


def producer_loop(p: Problem, hints: Hints, bn: int, vec: int) -> Schedule:
    """The persistent producer loop on 128 x `bn` tiles of 4 stages, grouped 8 tile rows."""
    return with_producer(wgmma_schedule(p, 128, bn, 4, vec=vec, group=hints.group or 8), persistent=True)


def paired_schedule(p: Problem, hints: Hints, bn: int = 256) -> Optional[Schedule]:
    """The default for a wave or more of 128x256 tiles of 16-bit operands where an operand's
    rows are 16 bytes past a multiple of 32 (a dim of 8 more than a multiple of 16: every
    128-byte piece of a row spans five 32-byte sectors, not four), or for eight waves or
    more over K > 2048: the producer loop (`producer_loop_schedule`) on the tile `wgmma_tile`
    chose (128 x `bn`), its blocks in pairs (`Schedule.cluster`) on tiles one above the
    other, each copying half of their B tile into both, so B crosses from L2 once a pair.
    H100 2026-11-26, under sustained load (scripts/probe_sustained.py, interleaved rounds,
    medians, TFLOP/s; the default before / paired 128x256 / paired 128x192; cuBLAS):
    - rows of 16 past 32 bytes, where wgmma_tile takes 128x192: 3000^3 424.3 / 451.2-455.6 /
      506.8 (549.8-567.6), 3072x3000x3072 498.8 / 474.6-476.2 / 560.3 (598.1), 4104^3
      434.0 / 492.1-499.6 / 503.6, 2056^3 319.8 / 338.5-340.4 / 364.3; a @ b.T 3000^3 433.2 /
      458.6 (128x256). Where it takes 128x256: 8192x3000x4096 548.0 / 622.6-632.8 / 579.4
      (599.2), 4096x4096x3000 592.7 / 585.8-615.8 / 532.9, 5000x3000x2000 (the producer loop
      then) 470.6 / 515.5-521.9 / 531.0.
    - eight waves or more over long K (128x256): 6144^3 645.4 / 639.5-669.4 (632.2-661.7),
      12288x4096x4096 636.0 / 657.8 (657.6), 8192^3 652.6 / 665.1 (666.1), 6144x6144x4096
      635.4 / 653.5, a @ b.T 11000x4096x4096 619.8 / 625.8, 8192x8192x4096 644.7 / 647.2.
      Fewer waves were level or lost: 4096^3 653.5 / 643.9 (noisy, 201-220 us both),
      2048x2048x8192 642.1 / 629.3, 8192x8192x1024 607.7 / 587.4 (the producer loop alone).
    TF32 lost (8192x8192x4096 400.4 / 386.5 in a short sweep): 16-bit operands only."""
    _, _, _, k = matmul_shape(p)
    tiles = output_tiles(p, 128, 256)
    if tiles < p.sm_count or not producer_allowed(p, hints):
        return None
    if not (operand_rows_off_32_bytes(p) or (k > 2048 and tiles >= 8 * p.sm_count)):
        return None
    return replace(producer_loop(p, hints, bn, vec=8), cluster=2)


def operand_rows_off_32_bytes(p: Problem) -> bool:
    """Whether a GEMM operand's rows (along its contiguous dim) are 16 bytes past a
    multiple of 32 long."""
    mm = next(v for v in p.group.values if v.op == "matmul")
    for operand in mm.operands:
        op = operand_input(p.layout, operand)
        if op is not None and p.loops[op.loops[-1]] * operand.dtype.itemsize % 32 == 16:
            return True
    return False


def producer_allowed(p: Problem, hints: Hints) -> bool:
    """Whether a default may take a producer warpgroup (`specialized`): one product,
    TMA-fed, no split pinned, its one result in rows (stored by TMA)."""
    return (matmul_shape(p)[0] == 1 and hints.split_k is None and tma_operands(p)
            and gemm_result_in_rows(p.layout) is not None)


def result_rows_of_32_bytes(p: Problem) -> bool:
    """Whether the GEMM's result rows are a multiple of 32 bytes long (where it has one
    result in rows)."""
    out = gemm_result_in_rows(p.layout)
    return out is not None and matmul_shape(p)[2] * out.dtype.itemsize % 32 == 0


def with_producer(s: Schedule, persistent: bool = False) -> Schedule:
    """`s` with a warpgroup more, which starts the TMA copies (`specialized`)."""
    return replace(s, specialized=True, block=s.block + 128, persistent=persistent)


def matmul_vector(p: Problem) -> int:
    """8 when both operands are plain 16-bit inputs that move in 16-byte
    vectors along their contiguous dim (a multiple of 8 long, 16-byte
    aligned), along K or not: the tiles then load by cp.async (or TMA), and a
    tile contiguous along M or N is read transposed (ldmatrix.trans, wgmma's
    MN-major operands)."""
    mm = next(v for v in p.group.values if v.op == "matmul")
    a, b = mm.operands
    for operand in (a, b):
        op = operand_input(p.layout, operand)
        if op is None or operand.dtype.itemsize != 2 or operand.dtype != a.dtype:
            return 1
        if p.loops[op.loops[-1]] % 8 or id(op) in p.misaligned:
            return 1
    return 8


# (BM, BN, BK, TM, TN, blocks per SM the registers are budgeted for) of the vectorized f32 SIMT GEMM
SIMT_VECTOR_TILES = ((128, 128, 8, 8, 8, 1), (128, 128, 16, 8, 8, 1), (128, 64, 8, 8, 4, 1), (64, 128, 8, 4, 8, 1),
                     (64, 64, 16, 4, 4, 1), (64, 64, 8, 4, 4, 1), (128, 128, 8, 8, 4, 1),
                     # 128 accumulators a thread: twice the multiply-adds per shared-memory read
                     (128, 128, 8, 8, 16, 1), (128, 128, 8, 16, 8, 1), (128, 256, 8, 8, 16, 1), (256, 128, 8, 16, 8, 1),
                     # 16-deep K tiles (half the barriers), registers capped so two blocks share an SM
                     (128, 128, 16, 8, 8, 2), (128, 128, 16, 8, 16, 2), (128, 128, 16, 16, 8, 2))


def simt_vector(p: Problem) -> int:
    """4 when both operands are plain f32 inputs whose contiguous dims are a
    multiple of 4 long and 16-byte aligned (any orientation), else 1."""
    mm = next(v for v in p.group.values if v.op == "matmul")
    for operand in mm.operands:
        op = operand_input(p.layout, operand)
        if op is None or operand.dtype.name != "f32" or id(op) in p.misaligned or p.loops[op.loops[-1]] % 4:
            return 1
    return 4


def tf32_operands(p: Problem) -> bool:
    """Both operands plain f32 inputs, contiguous along K (A as [M, K], B as
    an nn.Linear-style [N, K] used as `w.T`: wgmma reads TF32 K-major only),
    rows a multiple of 4 long and 16-byte aligned."""
    mm = next(v for v in p.group.values if v.op == "matmul")
    for operand in mm.operands:
        op = operand_input(p.layout, operand)
        if op is None or operand.dtype.name != "f32" or id(op) in p.misaligned:
            return False
        if op.loops[-1] != p.layout.n_kept or p.loops[op.loops[-1]] % 4:
            return False
    return True


def matmul_default(p: Problem, hints: Hints) -> Schedule:
    """Tensor cores for f16/bf16 operands, else register-microtiled SIMT tiles
    (128x128, 16x8 per thread in 16-byte vectors or 8x8 without, for large products; 64x64, 4x4, where a 128-tile
    would leave SMs idle). A schedule block's tile(), stages(), warps() and
    group() replace the rule's choices."""
    big = output_tiles(p, 128, 128) >= p.sm_count
    if uses_tensor_cores(p):
        return _tensor_core_split(p, hints, _tensor_core_default(p, hints))
    if hints.tf32 and tf32_operands(p) and p.arch == "sm_90a":
        # opted in: f32 operands read as TF32 by wgmma (K-contiguous A and B only); blocks
        # grouped 8 rows at a time from two waves up, as f16's (H100 tuner, side by side:
        # 4096^3 +3.8% and -0.7%, 8192^3 +4.1% and +6.3%)
        bm, bn, stages = (128, 256, 4) if output_tiles(p, 128, 256) >= p.sm_count else (64, 128, 5)
        group = hints.group or (8 if output_tiles(p, bm, bn) >= 2 * p.sm_count else 0)
        looped = producer_loop_schedule(p, hints, vec=4) if (bm, bn) == (128, 256) and not hints.tile else None
        return looped or _tensor_core_split(p, hints, wgmma_schedule(p, bm, bn, stages, vec=4, group=group))
    pinned = bool(dict(hints.tile) or dict(hints.microtile) or hints.warps)
    auto_split = 0 if pinned or hints.split_k is not None else split_k_default(p)
    big = big or bool(auto_split)       # split-K fills the SMs with 128x128 tiles
    bm = bn = 128 if big else 64
    bk = 16                      # measured: 128x128x16 beats x8 by 10% at 4096^3 (H200)
    tm = tn = 8 if big else 4
    tiles = dict(hints.tile)
    mdim, ndim, kdim = p.layout.loops[p.layout.n_kept - 2][0], p.layout.loops[p.layout.n_kept - 1][0], \
        p.layout.loops[p.layout.n_kept][0]
    bm, bn, bk = tiles.get(mdim, bm), tiles.get(ndim, bn), tiles.get(kdim, bk)
    micro = dict(hints.microtile)
    if hints.warps and not micro:     # the threads asked for fix the microtile's area
        area = max(1, bm * bn // (hints.warps * 32))
        tm = 1
        while tm * tm < area:
            tm *= 2
        tn = max(1, area // tm)
    tm, tn = micro.get(mdim, min(tm, bm)), micro.get(ndim, min(tn, bn))
    vec = simt_vector(p) if tm % 4 == 0 and tn % 4 == 0 else 1
    if vec == 4 and not (tiles or micro or hints.warps):
        bk = 8 if big else 16
        if big and not auto_split:    # 16x8 per thread, 128 threads (H100: 1-1.5% over 8x8 at 4096^3 and 8192^3)
            tm = 16
    if vec == 4 and 2 * bk * (bm + bn + 8) * 4 > 48 * 1024:
        vec = 1
    splits = hints.split_k if hints.split_k is not None else auto_split
    return Schedule("matmul", block=(bm // tm) * (bn // tn), tile=(bm, bn, bk), micro=(tm, tn),
                    vec=vec, splits=splits if splits > 1 else 0, index64=p.index64)


def _tensor_core_split(p: Problem, hints: Hints, s: Schedule) -> Schedule:
    """`s` split K ways as a schedule block's split_k(n) asks, else by the rule
    (wgmma_split_default, tensor_core_split_count) where no tile, stage or warp
    count is pinned."""
    if hints.split_k is not None:
        return replace(s, splits=hints.split_k if hints.split_k > 1 else 0)
    if hints.tile or hints.stages or hints.warps:
        return s
    if s.wgmma:
        return wgmma_split_default(p, s)
    idle = 2 * output_tiles(p, s.tile[0], s.tile[1]) <= p.sm_count
    return replace(s, splits=tensor_core_split_count(p, s.tile) if idle else 0)


def tensor_core_split_count(p: Problem, tile: tuple, min_chunk: int = TC_SPLIT_MIN_CHUNK) -> int:
    """The most chunks (a power of two, 2 to 64) that keep this tile's blocks
    within one wave, each chunk at least `min_chunk` of K (0: none)."""
    return (split_k_choices(p, tile, waves=1, min_chunk=min_chunk) or [0])[-1]


def wgmma_split_default(p: Problem, s: Schedule) -> Schedule:
    """Where 128x256 tiles would not fill the SMs, the unsplit default `s` takes
    smaller tiles; over a long K, large tiles split K ways fill a wave instead
    and reuse each operand load more. Of WGMMA_SPLIT_TILES (64 rows for M <= 64;
    WGMMA_TMA_SPLIT_TILES, deeper and in longer chunks, where TMA copies 16-bit
    operands), the one whose split fills the most SMs, on a tie the one with more
    of its tile inside the result, then the smaller; where that fills more SMs than
    `s`, or as many with four times the tile while cp.async feeds `s` (a
    TMA-fed `s` filling as many SMs stays unsplit). Measured on an H100
    (scripts/gemm_sweep.py, 2026-11-22) against the unsplit default: f16
    256x256x65536 21 -> 215 TFLOP/s (128x128 tiles in 32 chunks, 0.78x cuBLAS),
    relu(x @ w + b) 512x512x16384 87 -> 275 (128x128, 8 chunks), bf16
    1024x1024x8192 325 -> 398 (128x256, 4 chunks). Since 2026-11-26, under sustained
    load: 256x256x65536 216 -> 245 (64x128 tiles with a producer, 8 stages, 16
    chunks), 512x512x16384 280 -> 324 (4 chunks)."""
    if output_tiles(p, 128, 256) >= p.sm_count:
        return s
    _, m, n_cols, _ = matmul_shape(p)

    def rank(bm: int, bn: int, blocks: int) -> tuple:    # SMs filled, then tile inside the result, then less outside
        return min(blocks, p.sm_count), min(bm, m) * min(bn, n_cols), -bm * bn

    deep = s.vec == 8 and m > 64 and tma_operands(p)
    tiles, min_chunk = ((WGMMA_TMA_SPLIT_TILES, WGMMA_TMA_SPLIT_MIN_CHUNK) if deep else
                        (WGMMA_SPLIT_TILES[(16 // s.vec, m <= 64)], TC_SPLIT_MIN_CHUNK))  # (operand bytes, skinny)
    best = _best_split(p, tiles, rank, lambda bm, bn, blocks: tensor_core_split_count(p, (bm, bn), min_chunk))
    unsplit_fill, unsplit_inside, _ = rank(s.tile[0], s.tile[1], output_tiles(p, s.tile[0], s.tile[1]))
    if deep and (best is None or rank(*best[:3])[0] <= unsplit_fill):
        best = _uneven_split(p, rank, unsplit_fill) or best
    if best is None:
        return s
    fill, inside, _ = rank(*best[:3])
    # as many SMs filled: worth the second kernel and the partials' traffic only for a
    # much larger tile fed by cp.async (H100: 128x256 for 64x128 gained 19-21%; 128x128
    # for 64x128 and 64x128 for 64x64 lost 6-10%), never where TMA feeds the unsplit
    # tile (H100 17:48: bf16 1024x1024x8192 unsplit 64x128 504 TFLOP/s, split 128x256
    # 432; 768x768x8192 327 against 302)
    if fill < unsplit_fill or (fill == unsplit_fill and (s.tma or inside < 4 * unsplit_inside)):
        return s
    bm, bn, _, stages, n = best
    split = replace(wgmma_schedule(p, bm, bn, stages, s.vec), splits=n)
    if (bm, bn, stages) == (64, 128, 8) and split.tma and matmul_shape(p)[0] == 1:
        return with_producer(split)     # a block a tile and chunk, its copies started by a warpgroup of their own
    return split


def _uneven_split(p: Problem, rank, unsplit_fill: int) -> Optional[tuple]:
    """Where no split of WGMMA_TMA_SPLIT_TILES in a power of two of 4096-deep chunks fills
    more SMs than the unsplit tiles: the one that fills the most in any count of 3 or more
    chunks of 2048 or more (a wave at most), if that is a quarter more SMs than unsplit; else
    None. H100 2026-11-26 (µs, sustained load): 768x768x8192 unsplit 64x128 tiles (72 SMs)
    30.3, 128x128 tiles in 3 chunks (108) 25.5; a @ b.T 28.0 against 25.8; two chunks of 2048
    lost: 128x4096x4096 19.4 unsplit, 24.0 split."""
    k = matmul_shape(p)[3]

    def chunks(bm: int, bn: int, blocks: int) -> int:
        n = min(p.sm_count // blocks, k // TC_SPLIT_MIN_CHUNK, 64)
        return n if n >= 3 else 0

    best = _best_split(p, WGMMA_TMA_SPLIT_TILES, rank, chunks)
    return best if best is not None and 4 * rank(*best[:3])[0] >= 5 * unsplit_fill else None


def _best_split(p: Problem, tiles, rank, chunks) -> Optional[tuple]:
    """Of `tiles` (BM, BN, stages), each split chunks(bm, bn, blocks) ways (0: not at all),
    the one `rank` puts first, as (bm, bn, blocks split, stages, chunks); None if none splits."""
    best = None
    for bm, bn, stages in tiles:
        blocks = output_tiles(p, bm, bn)
        n = chunks(bm, bn, blocks)
        if n and (best is None or rank(bm, bn, blocks * n) > rank(*best[:3])):
            best = (bm, bn, blocks * n, stages, n)
    return best


def _tensor_core_default(p: Problem, hints: Hints) -> Schedule:
    """Measured on an H200 and an H100 (scripts/gemm_sweep.py, 2026-11-22): with
    16-byte operands on Hopper, wgmma tiles of 64x64x64 (6 stages: many loads in
    flight) for skinny M, else the tile of `wgmma_tile` (128x256x64, 4 stages,
    where they fill the SMs' waves; 128x192, 128x128 or 64x128 where those fill
    them better); other GPUs and schedule blocks that pin warp tiles
    take mma.sync: a cp.async pipeline of 128x256x32 tiles in 64x64 warp tiles (3
    stages) where they fill two waves and K is long, 128x128x32 (4 stages)
    for a wave, 64x64x64 (4 stages) for skinny M, else 64x128x32 (3 stages).
    Operands loaded through a prologue or unaligned move element by element
    into 128x128x32 or 64x64x32 tiles with no pipeline."""
    _, m, _, k = matmul_shape(p)
    vec = matmul_vector(p)
    waves = lambda bm, bn: output_tiles(p, bm, bn) / p.sm_count  # noqa: E731
    pinned_any = bool(hints.tile or hints.stages or hints.warps)
    if vec == 8 and p.arch == "sm_90a" and pinned_any:
        pinned_wgmma = _pinned_wgmma(p, hints)
        if pinned_wgmma is not None:
            return pinned_wgmma
    if vec == 8 and p.arch == "sm_90a" and not pinned_any:
        # Hopper: warpgroup tensor cores (measured 0.79-0.81x cuBLAS at 4096^3-8192^3,
        # 1.13x at 1000^3, 1.04x at 16x8192x8192, against 0.40-0.46x for the best
        # mma.sync pipeline at the large sizes); blocks grouped 8 rows at a time
        # measured 1-3% faster where the grid is two waves or more
        if k <= 4 * 64 and m > 64 and output_tiles(p, 128, 128) >= 2 * p.sm_count:
            # at most 4 K tiles: the epilogue is much of each block's time, so two
            # 128x128 blocks share an SM and one's epilogue overlaps the other's loads
            # (batched 32x(512x512x64), tuner side by side: H100 +7.1% and +8.4%, H200
            # +9.1% over 128x256)
            return wgmma_schedule(p, 128, 128, 3, group=hints.group or 0, min_blocks=2)
        bm, bn, stages = (64, 64, 6) if m <= 64 else wgmma_tile(p)
        if (bm, bn) == (64, 64) and output_tiles(p, 64, 64) <= p.sm_count:
            # a block an SM in any case: 8 stages rather than room for two blocks (H100 11-23,
            # µs, 6 / 8: 16x8192x8192 50.0 / 48.1, 64x8192x8192 50.4 / 48.5; at 172 and 224
            # tiles 6 stays: 34.7 / 34.9 at 16x11008x4096, 45.0 / 46.3 at 48x14336x4096)
            stages = 8
        if (bm, bn) == (64, 128) and tma_operands(p) and k >= 2048:
            # one warpgroup an SM, its loads hidden by the pipeline alone: copied by TMA
            # over 32 K tiles or more, 8 stages. H100: bf16 1024x1024x8192 492-504 TFLOP/s
            # against 426-441 for 5 (11-22 17:48); f16 (11-23, µs, 5 / 8 stages, grouped)
            # 128x4096x4096 24.4 / 20.3, 256x4096x4096 25.2 / 20.4, 1024x1024x4096
            # 23.1 / 20.0; K = 1000 keeps 5 (12.9 against 13.0)
            stages = 8
        # Grouped 8 row tiles at a time wherever there are several: measured 1-3% faster
        # where the grid is two waves or more (L2 reuse across waves), and in one wave
        # too, where blocks that read the same columns of B start side by side and share
        # its loads in L2 (H100 11-23, µs, row-major / grouped: 128x8192x8192 at 8
        # stages 62.1 / 50.2, 200x6000x3000 32.5 / 30.7; 1000^3 12.9 / 13.1)
        grouped = -(-m // bm) > 1
        if (bm, bn, stages) in ((128, 256, 4), (128, 192, 4)):
            paired = paired_schedule(p, hints, bn)
            if paired is not None:
                return paired
        if (bm, bn, stages) == (128, 256, 4):
            looped = producer_loop_schedule(p, hints, vec=8)
            if looped is not None:
                return looped
        s = wgmma_schedule(p, bm, bn, stages, group=hints.group or (8 if grouped else 0))
        if (bm, bn, stages) == (64, 128, 8) and producer_allowed(p, hints) and result_rows_of_32_bytes(p):
            # and a producer warpgroup beside the multiplying one: it starts the copies, and
            # the results leave by TMA. H100 2026-11-26 (gemm_sweep, two sweeps, TFLOP/s,
            # without / with): f16 1024x1024x8192 485.6-500.6 / 534.2-545.9, 1024x1024x4096
            # 427.4-440.8 / 457.7-474.7, bf16 1024x1024x8192 488.1-493.4 / 532.9-534.7,
            # a @ b.T 768x768x8192 312.0-312.6 / 344.0-344.7, 128x4096x4096 213.4-213.9 /
            # 228.3-230.4, 256x4096x4096 418.8-421.7 / 433.7-436.8, relu(x @ w + b)
            # 1024x1024x4096 423.4-430.2 / 459.3-462.0; f32 results 1024x1024x8192
            # 527.1 / 515.0-555.8. Not where result rows are 16 bytes past a multiple of 32:
            # a @ b.T 1024x1000x4096 (rows of 2000 bytes) 428.3-437.3 / 375.3-385.8 (the
            # producer loop's 128x256 tile gains there all the same: 8192x8200x1024
            # 606.6-606.9 / 672.7-673.7)
            return with_producer(s)
        return s
    if vec == 8:
        if waves(128, 256) >= 2 and k > 1024:
            tile, warp, stages = (128, 256, 32), (64, 64), 3
        elif waves(128, 128) >= 1:
            tile, warp, stages = (128, 128, 32), (64, 64), 4
        elif m <= 64:
            tile, warp, stages = (64, 64, 64), (32, 32), 4
        else:
            tile, warp, stages = (64, 128, 32), (32, 64), 3
    else:
        tile, warp, stages = (((128, 128, 32), (64, 32), 1) if waves(128, 128) >= 1
                              else ((64, 64, 32), (32, 32), 1))
    loops = p.layout.loops
    mdim, ndim, kdim = (loops[p.layout.n_kept - 2][0], loops[p.layout.n_kept - 1][0],
                        loops[p.layout.n_kept][0])
    pinned = dict(hints.tile)
    tile = (pinned.get(mdim, tile[0]), pinned.get(ndim, tile[1]), pinned.get(kdim, tile[2]))
    if hints.stages is not None:
        # A pipeline needs 16-byte operand rows; calls whose sizes or alignment
        # rule that out keep the hint's tiles without one.
        stages = hints.stages if vec == 8 else 1
    if hints.warps is not None or pinned:
        warp = _warp_tile(tile, hints.warps or (tile[0] // warp[0]) * (tile[1] // warp[1]), bool(hints.warps))
    make = lambda tile, warp, stages: Schedule(  # noqa: E731
        "matmul", block=(tile[0] // warp[0]) * (tile[1] // warp[1]) * 32, tile=tile, micro=warp, mma=True,
        vec=8 if stages > 1 else vec, stages=stages, group=hints.group or 0, index64=p.index64)
    if stages == 1 and 2 * (tile[0] + tile[1]) * (tile[2] + 8) * 2 > 48 * 1024:
        # a pinned tile sized for the pipeline's dynamic shared memory, on a call that
        # cannot pipeline (operands not in 16-byte vectors): the unpinned tile instead
        tile, warp = ((128, 128, 32), (64, 32)) if waves(128, 128) >= 1 else ((64, 64, 32), (32, 32))
    limit = shared_limit(p.arch)
    while stages > 2 and make(tile, warp, stages).shared_bytes > limit:
        stages -= 1         # a pipeline pinned for a larger shared memory: as deep as this GPU allows
    s = make(tile, warp, stages)
    if s.shared_bytes > limit:
        from ..errors import TdslScheduleError
        raise TdslScheduleError(f"tile({tile[0]}x{tile[1]}x{tile[2]}) needs {s.shared_bytes // 1024} KB of shared "
                                f"memory even with 2 stages; {p.arch} gives a block {limit // 1024} KB")
    return s


def shared_limit(arch: str) -> int:
    """Dynamic shared memory a block may opt in to on `arch`."""
    cc = int("".join(ch for ch in arch if ch.isdigit()) or 0)
    return {90: 227, 80: 163, 87: 163, 86: 99, 89: 99}.get(cc, 227 if cc > 90 else 48) * 1024


# (BM, BN, stages) of the warpgroup GEMM's default tiles and their speed relative to
# 128x256 with every SM busy. H100 (scripts/gemm_sweep.py, 2026-11-22, f16): 128x128
# at 0.83 (2048x2048x8192), 128x192 at 0.93 (1536x1536x4096), 64x128 at 0.55 (a block
# of 5 stages takes the SM's shared memory: one warpgroup an SM). 128x128 takes 6
# stages (H100 11-23, µs, 5 / 6 stages: 128x11008x4096 38.0 / 36.8, 512x4096x4096
# 28.1 / 27.5, 256x8192x2048 20.7 / 19.9, grouped; 200x6000x3000 30.7 / 31.0).
WGMMA_TILE_SPEED = {(128, 256, 4): 1.0, (128, 192, 4): 0.93, (128, 128, 6): 0.83, (64, 128, 5): 0.55}


def wgmma_tile(p: Problem) -> tuple[int, int, int]:
    """The default warpgroup tile: the one whose speed times the share of the
    SMs its last wave keeps busy is highest (M > 64). H100 before this rule
    took 64x128 wherever 128x256 tiles fell short of a wave: 1024x2048x8192 332
    -> 530 TFLOP/s (128x128), 2048x2048x8192 324 -> 644 (128x256: 128 tiles,
    0.97 of a wave), 1536x1536x4096 244 -> 447 (128x192); 1000^3 keeps 64x128."""
    def busy(tiles: int) -> float:
        return tiles / (-(-tiles // p.sm_count) * p.sm_count)
    return max(WGMMA_TILE_SPEED, key=lambda t: WGMMA_TILE_SPEED[t] * busy(output_tiles(p, t[0], t[1])))


def _pinned_wgmma(p: Problem, hints: Hints) -> Optional[Schedule]:
    """A schedule block's tile()/stages()/warps() as a wgmma GEMM where they
    describe one (BK 64 or left open, 64 or 128 rows, a multiple of 64 up to
    256 columns, a warpgroup per 64 rows, 3 to 8 stages), else None (the
    mma.sync warp tiles take them)."""
    loops = p.layout.loops
    mdim, ndim, kdim = (loops[p.layout.n_kept - 2][0], loops[p.layout.n_kept - 1][0],
                        loops[p.layout.n_kept][0])
    pinned = dict(hints.tile)
    bm, bn, bk = pinned.get(mdim, 128), pinned.get(ndim, 256), pinned.get(kdim, 64)
    stages = hints.stages if hints.stages is not None else 4
    if bk != 64 or bm not in (64, 128) or bn % 64 or not 64 <= bn <= 256 or not 3 <= stages <= 8:
        return None
    if hints.warps is not None and hints.warps != 4 * (bm // 64):
        return None
    if stages * (bm + bn) * 128 + 1024 > MAX_SHARED_BYTES:
        return None
    return wgmma_schedule(p, bm, bn, stages, group=hints.group or 0)


def _warp_tile(tile: tuple, warps: int, pinned: bool = True) -> tuple:
    """The largest warp tile (WM, WN) that covers `tile` with `warps` warps (`pinned`: a
    schedule block's warps(); else the count the tile gives)."""
    bm, bn, _ = tile
    for wm, wn in ((64, 64), (64, 32), (32, 64), (32, 32), (64, 16), (16, 64), (32, 16), (16, 32),
                   (16, 16), (64, 128), (128, 64), (16, 8), (32, 8), (64, 8)):
        if bm % wm == 0 and bn % wn == 0 and (bm // wm) * (bn // wn) == warps:
            return wm, wn
    from ..errors import TdslScheduleError
    if not pinned:
        raise TdslScheduleError(f"tensor-core warp tiles (16x8 multiples) cannot cover a {bm}x{bn} tile: "
                                f"its rows must be a multiple of 16 and its columns of 8")
    raise TdslScheduleError(f"warps({warps}) cannot cover a {bm}x{bn} tile with tensor-core warp tiles "
                            f"(16x8 multiples)")


def matmul_launches(p: Problem, s: Schedule) -> list[Launch]:
    batch, m, n, _ = matmul_shape(p)
    if batch * m * n == 0:
        return []
    if batch > 65535:       # (a block row of products per grid z: at most 65535 of them)
        from ..errors import TdslScheduleError
        mm = next(v for v in p.group.values if v.op == "matmul")
        raise TdslScheduleError(f"a batched @ over {batch} products (its batch dims "
                                f"{', '.join(mm.dims[:-2])}) is more than the 65535 one launch can take; "
                                f"fold the batch into the rows (a [B*M, K] @ [K, N] product) or call it in parts",
                                mm.loc)
    bm, bn, _ = s.tile
    if s.cluster > 1:   # blocks in pairs on tiles one above the other: a pair per two rows of tiles
        pairs = -(-m // (2 * bm)) * -(-n // bn)
        if s.persistent:
            pairs = min(pairs, max(1, p.sm_count * s.min_blocks // 2))
        grid = (2 * pairs, 1, 1)
    elif s.persistent:  # min_blocks blocks per SM, each looping over its share of the output tiles
        grid = (max(1, min(batch * -(-m // bm) * -(-n // bn), p.sm_count * s.min_blocks)), 1, 1)
    elif s.specialized:     # the same loop, a block per output tile
        grid = (-(-m // bm) * -(-n // bn), 1, 1)
    else:
        grid = (-(-n // bn), -(-m // bm), batch)
    if not s.splits:
        return [Launch(s, grid, p.loops)]
    # chunk z % splits of K for product z // splits, then a kernel sums the chunks
    if batch * s.splits > 65535:
        from ..errors import TdslScheduleError
        raise TdslScheduleError(f"{batch} products split {s.splits} ways exceed the grid's 65535")
    final = min(MAX_GRID, -(-batch * m * n // s.block))     # launched with the GEMM's block size
    return [Launch(s, grid[:2] + (batch * s.splits,), p.loops, 1), Launch(s, (final, 1, 1), p.loops, 2)]


def fits(p: Problem, s: Schedule) -> str:
    """'' when `s` can run this problem, else why not."""
    if s.index64 != p.index64:
        return "index width does not match the sizes"
    if (s.kind == "matmul") != (p.group.kind == "matmul"):
        return "matmul schedules and matmul groups go together"
    if s.kind == "pointwise" and p.group.kind != "pointwise":
        return "a pointwise schedule for a reduction"
    if s.kind != "pointwise" and p.group.kind == "pointwise":
        return "a reduction schedule for a pointwise group"
    inner = p.inner
    if s.kind == "pointwise" and s.tile and transposed_loop(p) is None:
        return "a transposing tile needs an operand laid out across the innermost loop"
    if s.wgmma and p.arch != "sm_90a":
        return "wgmma needs an sm_90a GPU (Hopper)"
    if s.tma and not tma_operands(p):
        return ("TMA copies tiles of 2-D inputs, or of inputs with every batch dim of the product "
                "(16-bit, or f32 as TF32), rows a multiple of 16 bytes, 16-byte aligned")
    if (s.persistent or s.specialized) and matmul_shape(p)[0] > 1:
        return "a persistent or specialized GEMM loops over the output tiles of one product, not a batch"
    if s.kind == "matmul" and s.wgmma and s.vec == 4:
        if not tf32_operands(p):
            return "TF32 wgmma needs plain f32 operands contiguous along K, 16-byte aligned"
    elif s.kind == "matmul" and s.vec > 1 and s.mma:
        if s.vec != 8 or matmul_vector(p) != 8:
            return "matmul operands move in 16-byte vectors only where extents and alignment allow"
    elif s.kind == "matmul" and s.vec > 1:
        if s.vec != 4 or simt_vector(p) != 4:
            return "f32 SIMT tiles move in 16-byte vectors only where extents and alignment allow"
    elif s.kind == "pointwise" and s.tile:
        if s.vec > tile_vector(p):
            return f"vector width {s.vec} exceeds what extents, alignment and dtypes allow a transposing tile"
        staged = staged_tile_bytes(p, s.tile)
        if staged > MAX_STATIC_SHARED:
            return (f"a {s.tile[0]}x{s.tile[1]} tile of every transposed operand takes {staged} bytes of "
                    f"shared memory, more than the {MAX_STATIC_SHARED // 1024} KB a block has")
    elif s.vec > 1 and s.kind in ("reduce_col", "reduce_split") and not p.row_major():
        why = column_vector_refusal(p, s)
        if why:
            return why
    elif s.peel:
        why = peel_refusal(p, s)
        if why:
            return why
    elif s.vec > 1:
        if inner is None or p.loops[inner] % s.vec:
            return f"the innermost extent is not a multiple of {s.vec}"
        if s.vec > max_vector(p):
            return f"vector width {s.vec} exceeds what alignment and dtypes allow"
        if s.kind != "pointwise" and not p.row_major():
            return "vectors need the reduced dim innermost"
    if s.cluster > 1 and s.kind == "reduce_row":
        if p.arch != "sm_90a":
            return "blocks sharing a row through their shared memory (a cluster) need an sm_90a GPU (Hopper)"
        if not cluster_values_fit(p):
            return "blocks sharing a row exchange 4- or 8-byte values: a reduction here is narrower"
        if s.block < 64:
            return "blocks sharing a row have two warps or more (a block barrier orders each exchange)"
    # (a peeled row holds its whole vectors: the head and tail, fewer than a vector each, go apart)
    held = p.row_length - p.row_length % s.vec if s.peel else p.row_length
    if s.kind == "reduce_row" and s.items and s.items * s.row_threads * s.cluster * s.vec < held:
        return "the row does not fit the threads and items"
    if s.kind == "reduce_row" and s.stages > 1:
        why = ring_problem(p, s)
        if why:
            return why
    if s.kind == "reduce_split" and not p.splittable():
        return "a split reduction needs one reduction level and only per-row results"
    return ""


def plan(p: Problem, hints: Hints, override: Optional[Schedule] = None) -> list[Launch]:
    """The launches for one group at one call's sizes (`p`): `override` if given
    (checked with `fits`), else the default."""
    from ..errors import TdslScheduleError
    if override is None:
        try:
            return launches(p, default(p, hints))
        except TdslScheduleError as e:     # what the schedule block pins cannot run: said at the block
            if e.loc is not None or not hints.directives:
                raise
            raise TdslScheduleError(f"the schedule block's {hints.directives} cannot run at these sizes: "
                                    f"{e.message}", hints.loc, e.notes) from None
    why = fits(p, override)
    if why:
        raise TdslScheduleError(f"schedule {override.tag} cannot run group {p.group.index}: {why}")
    return launches(p, override)
