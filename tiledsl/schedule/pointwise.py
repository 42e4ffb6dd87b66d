"""The rules for pointwise groups: registers a thread holds, the tiles of a
transposing store (through shared memory, skinny where one side is short), and
walks along the outermost loop that load a broadcast input once for several rows."""
from __future__ import annotations

from typing import Optional

from .layout import across_operands, over_every_loop
from .schedules import MAX_STATIC_SHARED
from .problem import MAX_GRID_Y, Problem, pow2_at_least, operand_words, transposed_loop, vector_bound

HELD_WORDS = 48   # 4-byte registers a pointwise thread's loaded vectors may take
SKINNY_TILE_ELEMENTS = 4096   # a transposing tile with a short side: as many elements as 64x64
SKINNY_MIN_LONG = 256         # ... where the long side is at least this long (else one tile or few)


def held_words(p: "Problem", vec: int, items: int, outer: bool = False, straddle: bool = False) -> float:
    """4-byte registers a pointwise thread holds at once: each input's elements for
    `items` vectors (all loaded before any is computed), then each result vector
    stored along the innermost loop. A vector load packs 16-bit elements two to a
    register; an operand gathered across the innermost loop (transposed) takes a
    register per element; one without that loop, one value. Over
    HELD_WORDS, ptxas spilled under the 64-register cap (sm_90a and
    sm_80, 2026-11-23: eight f32 inputs at vector 4, items 2: 64 words, 40 bytes
    of spills; f16 + bf16 inputs with an f16 and an f32 one gathered at vector 8:
    48 words and a vector result, 16 bytes; six f32 inputs, 48 words, just fit).
    Math in f64 or i64 over the walk holds 2 registers an element beyond the loads (GPU fuzz,
    2026-11-27: a bf16 and an f32 input compared with their sum with an f64 scalar, into
    bool, at vector 8 and items 2 spilled 16 bytes at 64 registers, counted at 30 words;
    items 1 took 43 registers; CI's codegen fuzz, 2026-12-03: i8 and i64 inputs added in
    i64, 8 items of single elements, 4 bytes spilled on sm_90a and sm_80). Walking the
    outermost loop (`outer`), an input without it is held once for all items. Vectors that
    straddle rows (`straddle`) read each operand without every loop lane by lane: a register
    an element. A flat walk's item holds its index besides (codegen fuzz, 2026-12-03: six
    inputs read an element at a time, 8 items counted at 48 words, took 64 registers and
    spilled 8 bytes on sm_80). In vectors that straddle rows, 64-bit math over any of the
    walk's loops differs lane by lane, not only over the innermost one (CI's codegen fuzz,
    2026-12-07: `idx(5) < p1` with p1 i8 over the rows, compared in i64, 8 items of 4
    straddling rows of 5 counted at 46 words and spilled 76 bytes on sm_90a; 4 items took 46
    registers)."""
    inner = p.inner

    def words(op) -> float:
        if straddle and op.loops and not over_every_loop(p.layout, op):    # (gathered_operands)
            return vec * operand_words(op, 1)
        if inner is None or inner not in op.loops:
            return operand_words(op, 1)
        return vec * operand_words(op, vec if op.loops[-1] == inner else 1)
    stored = [op for op in p.layout.outputs if inner is not None and op.loops and op.loops[-1] == inner]
    walked = ({d for loop in p.layout.loops for d in loop} if straddle
              else set(p.layout.loops[inner]) if inner is not None else set())
    # (an index, i64 in the IR, is held as idx_t: 32 bits unless the schedule indexes in 64)
    wide_math = any(v.dtype.itemsize == 8 and v.op not in ("param", "idx") and set(v.dims) & walked
                    for v in p.group.values)
    once = reused_inputs(p) if outer else []
    return (items * (sum(words(op) for op in p.layout.inputs if op not in once) + (2 * vec if wide_math else 0)
                     + (0 if outer else 1))
            + sum(words(op) for op in once) + sum(words(op) for op in stored))


# A flat walk's block moves at least this many bytes of the operands over every loop (its
# thread takes 2 vectors, more where the vectors are narrow). Blocks that moved less were
# bound by how fast the GPU starts blocks, about one an SM every 160 ns: 131072 blocks took
# 161 us whatever they moved. H200 2026-12-02 (scripts/probe_survey.py, SURVEY_ALL), us,
# 2 / 4 / 8 items a thread of 128: x + y bf16 [2^26 + 1] (single elements) 319.2 / 161.3 /
# 107.7 (0.88x copy; 256 threads at 4, 106.1); f32 [2^25 + 1] 161.3 / 95.9 (0.99x); bf16
# [2^26 + 2] (4-byte vectors) 161.5 / 95.8; x + b f32 16384x1022 42.9 / 35.7; x + b f32
# 16384x1021 82.4 / 36.1 / 35.9.
BLOCK_BYTES = 6 << 10


def flat_element_bytes(p: Problem) -> int:
    """Bytes a flat walk moves an element: those of the operands over every loop (a broadcast
    operand's come from cache)."""
    walked = set(range(len(p.loops)))
    return sum(op.dtype.itemsize for op in p.layout.inputs + p.layout.outputs if set(op.loops) == walked)


# 8-bit streams: a thread loads a 32-bit word of each (vectors of 4), 4 items, in blocks of 256
# (flat_block), and walks rows where it reads a broadcast (outer_items). H200 2026-12-03
# (scripts/probe_survey.py, SURVEY_ALL), us, the default before / vectors of 4, 4 items, 256
# threads: x + x i8 [2^26] 37.4 / 35.5, [2^26 + 4] 35.3 (the same), [2^26 + 1] 36.8 / 35.1
# (straddling); walking rows: x + b i8 16384x4096 45.2 (flat, 512 threads, vectors of 8) /
# 38.7, f16(x) * s (s f16[N]) 61.4 / 56.7, f32(x) * s (s f32[N]) 94.3 / 86.3 (2 items).
# Streams of 16-bit elements beside a broadcast (f16 x * s f32 into i8, bf16 x * s f32, f16
# x + b into f32) were level, flat or walking rows.
EIGHT_BIT_VECTOR, EIGHT_BIT_ITEMS, EIGHT_BIT_BLOCK = 4, 4, 256


def eight_bit_stream(p: Problem) -> bool:
    """Whether every input a pointwise group streams (over every loop in order) has 8-bit
    elements, and there is one."""
    walked = [op for op in p.layout.inputs if op.loops and over_every_loop(p.layout, op)]
    return p.group.kind == "pointwise" and bool(walked) and all(op.dtype.itemsize == 1 for op in walked)


def flat_items(p: Problem, vec: int, block: int, straddle: bool = False) -> int:
    """Items a thread of a flat walk takes (Schedule.items): 2 vectors, or as many more
    (a power of two, up to OUTER_ITEMS) as a block of `block` threads needs to move
    BLOCK_BYTES; fewer where its registers would not hold them (held_words)."""
    per_element = flat_element_bytes(p)
    items, most = 2, EIGHT_BIT_ITEMS if eight_bit_stream(p) else OUTER_ITEMS
    while (items < most and block * items * vec * per_element < BLOCK_BYTES
           and held_words(p, vec, 2 * items, straddle=straddle) <= HELD_WORDS):
        items *= 2
    while items > 1 and held_words(p, vec, items, straddle=straddle) > HELD_WORDS:
        items //= 2
    return items


def flat_block(p: Problem, vec: int, items: int, block: int) -> int:
    """Threads a block of a flat walk takes: `block`, doubled (up to 512) while the block moves
    less than BLOCK_BYTES and the blocks stay as many as the SMs, where a thread's registers
    held its items under OUTER_ITEMS (flat_items: 8-bit elements, 1.5 words each in vectors).
    H200 2026-12-03 (scripts/probe_survey.py, SURVEY_ALL), x + x i8 [2^26], us, vectors of 8,
    2 items: 128 threads (4 KB a block) 43.0 (0.73x copy), 256 37.4; vectors of 4, 4 items, 256
    threads 35.2."""
    if items >= OUTER_ITEMS:
        return block
    per_element = flat_element_bytes(p)
    blocks = lambda b: -(-p.total // (b * items * vec))   # noqa: E731
    while block < 512 and block * items * vec * per_element < BLOCK_BYTES and blocks(2 * block) >= p.sm_count:
        block *= 2
    return block


def straddle_vector(p: Problem, cap: Optional[int] = None) -> int:
    """Elements a vector takes in a flat walk whose vectors may straddle rows
    (Schedule.straddle), 1 where there can be none: 16 bytes of the main operand over
    every loop in order (contiguous, so its vectors run on from one row into the next),
    where every such operand is 16-byte aligned and the innermost loop is at least a
    vector long (a vector then crosses into the next row at most once). Every result
    must span every loop in order; operands without some loop are read lane by lane,
    whatever their alignment. Not where an operand is laid out across the innermost loop
    (a transposing tile's)."""
    if p.group.kind != "pointwise" or p.inner is None or transposed_loop(p) is not None:
        return 1
    full = [op for op in p.layout.inputs + p.layout.outputs if over_every_loop(p.layout, op)]
    if not full or not all(over_every_loop(p.layout, op) for op in p.layout.outputs):
        return 1
    main = max(full, key=lambda op: (op.role == "in", op.dtype.itemsize))
    vec = min(vector_bound(main, full), cap or 8)
    while vec > 1 and (p.loops[p.inner] < vec or any(id(op) in p.misaligned for op in full)):
        vec //= 2
    return vec


# A straddling walk's vector reads at most this many elements lane by lane over all the operands
# it gathers (straddle_default). H200 2026-12-03 (scripts/probe_survey.py, SURVEY_ALL), x * s + t
# f16 16384x1001, s and t gathered, us: vectors of 8 25.2 (56 registers), of 4 22.0.
GATHERED_LANES = 8


def gathered_operands(p: Problem) -> list:
    """The operands a straddling walk reads lane by lane: those with loops, but not every one in order."""
    return [op for op in p.layout.inputs if op.loops and not over_every_loop(p.layout, op)]


def straddle_default(p: Problem, whole_vec: int, cap: Optional[int] = None) -> int:
    """The vector of a default walk whose vectors straddle rows, or 0 where the default walks
    whole rows (vectors of `whole_vec`): a straddling walk where the whole-row vectors move
    fewer than 4 bytes (16-bit single elements; 8-bit ones, pairs), at most GATHERED_LANES
    elements gathered a vector and within HELD_WORDS. Where whole-row vectors move 4 bytes or
    more, a flat walk of enough items a thread (flat_items) was as fast. H200 2026-12-03
    (scripts/probe_survey.py), us, whole-row default / straddling vectors of 8: relu(x + b)
    bf16 32768x781 38.3 (walking 8 rows) / 28.3 (0.63x -> 0.85x copy); gelu(x + b) bf16
    32768x781 45.2 / 39.6; x + y bf16 [2^26 + 1] 107.7 / 96.8 (0.88x -> 0.98x); level (within 1%):
    x + y f32 [2^25 + 1] 95.9 / 96.3, x + b f32 16384x1021 35.9 / 35.8, x + y bf16 [2^26 + 2] 95.8 /
    96.7, x + x i8 [2^26 + 4] (vectors of 4) 43.0 / 43.2 (both at 128 threads: flat_block)."""
    main = max(op.dtype.itemsize for op in p.layout.inputs + p.layout.outputs
               if over_every_loop(p.layout, op))     # (straddle_vector > 1: there is one)
    vec = straddle_vector(p, cap)
    if vec <= whole_vec or whole_vec * main >= 4:
        return 0
    lanes = len(gathered_operands(p))
    while vec > whole_vec and (lanes * vec > GATHERED_LANES
                               or held_words(p, vec, 1, straddle=True) > HELD_WORDS):
        vec //= 2
    return vec if vec > whole_vec else 0


def straddle_refusal(p: Problem, s) -> str:
    """'' where a flat walk whose vectors straddle rows (Schedule.straddle) can run `s`."""
    if p.group.kind != "pointwise" or p.inner is None or transposed_loop(p) is not None:
        return ("vectors straddle rows only in a pointwise group with loops and no operand laid out "
                "across the innermost loop")
    if s.vec > straddle_vector(p):
        return (f"vectors of {s.vec} that straddle rows need every result over every loop in order, those "
                f"operands 16-byte aligned, and an innermost extent of {s.vec} or more (here "
                f"{p.loops[p.inner]}); {straddle_vector(p)} at most")
    return ""


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
    side = pow2_at_least(short)
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


# Where the inputs without the outermost loop (a bias p of x[B, S] + p[S]) take this many
# bytes or more, a flat walk reads them again for each row of that loop after the row between
# (x's row read, the result's written: about three times p's bytes) has pushed them out of
# L2. H200 2026-12-02 (scripts/probe_l2_order.py), f32 x[B, S] + p[S], us, flat / walks of
# 2, 4, 8 rows: p 16 MiB, B 8: 94.8 / 82.3, 75.6, 73.7 (0.71x -> 0.92x copy); p 32 MiB, B 4:
# 96.2 / 82.2, 76.0; p 8 MiB, B 16, 32, 64 and f16 B 8, 16: 2-4% faster at 8 rows; p 4 MiB, B 32:
# 71.1 / 71.3, 73.3, 74.1; p 512 KiB, B 256: 68.3 / 67.9, 68.1, 69.0.
OUTER_REUSE_BYTES = 8 << 20
OUTER_ITEMS = 8         # rows of the outermost loop a thread takes (the probe's best at 16 MiB)


def reused_inputs(p: Problem) -> list:
    """The inputs a walk along the outermost loop loads once for all its rows: those with
    loops, but not that one (a pointwise group of two loops or more)."""
    if len(p.loops) < 2:
        return []
    return [op for op in p.layout.inputs if op.loops and 0 not in op.loops]


def reused_bytes(p: Problem) -> int:
    """Bytes of the inputs a walk along the outermost loop loads once (reused_inputs)."""
    return sum(p.size(op.loops) * op.dtype.itemsize for op in reused_inputs(p))


def outer_refusal(p: Problem, items: int, straddle: int = 0) -> str:
    """'' where a walk of `items` rows along this group's outermost loop (Schedule.outer) can
    run; with vectors of `straddle` that straddle rows, `items` runs of that many rows."""
    if not reused_inputs(p) or p.loops[0] < 2:
        return ("walking the outermost loop (outer) pays only for an input without that loop, which it loads "
                "once for several of its rows")
    if transposed_loop(p) is not None:
        return "a group with a transposed operand walks in tiles, not along its outermost loop"
    if straddle and p.loops[0] < 2 * straddle:
        return (f"a walk of runs of {straddle} rows whose vectors straddle them needs two runs or more "
                f"of the outermost loop ({p.loops[0]})")
    if outer_slices(p, items, straddle) > MAX_GRID_Y:
        return f"the outermost loop of {p.loops[0]} makes more than {MAX_GRID_Y} groups of {items} rows"
    return ""


def outer_slices(p: Problem, items: int, straddle: int = 0) -> int:
    """Blocks along y of a walk along the outermost loop: groups of `items` rows; with vectors
    of `straddle` that straddle rows, groups of `items` runs of that many rows (a run of rows is
    a whole number of vectors, each at the same inner coordinates in every run), and one more
    for the rows after the last whole run, walked flat (codegen/pointwise.py)."""
    if not straddle:
        return -(-p.loops[0] // items)
    runs, row = p.loops[0] // straddle, p.total // p.loops[0]
    rest = p.total // straddle - runs * row         # whole vectors after the last run
    return max(1, -(-runs // items) + (1 if rest else 0))


RUN_ITEMS = 4   # runs of vec rows a thread of a straddling walk along the outermost loop takes


def straddled_runs(p: Problem, vec: int, block: int) -> int:
    """Runs of `vec` rows a thread takes by default where vectors of `vec` straddle rows
    (Schedule.outer and straddle), or 0 for the flat straddling walk: RUN_ITEMS where an input
    without the outermost loop is read (once for a thread's runs, not lane by lane for every
    vector), the walk can run (outer_refusal), its loads fit HELD_WORDS and its blocks fill
    the GPU. H200 2026-12-03 (scripts/probe_survey.py), us, flat / 4 runs a thread, 128
    threads: gelu(x + b) bf16 32768x781 39.8 / 32.9 (0.60x -> 0.73x copy); x * s + t f16
    16384x1001 21.7 / 20.1 (vectors of 4); x + p bf16 32x1023x1023 (p[T, C]) 39.2 / 38.2;
    relu(x + b) bf16 32768x781 28.5 / 28.9. 2 runs lost up to 34% (relu 38.3); 8 gained no more."""
    items = RUN_ITEMS
    if outer_refusal(p, items, vec) or held_words(p, vec, items, outer=True, straddle=True) > HELD_WORDS:
        return 0
    row_vectors = p.total // p.loops[0]         # vectors in a run of vec rows: a row's elements
    return items if -(-row_vectors // block) * outer_slices(p, items, vec) >= p.sm_count else 0


# Functions of many instructions each (a polynomial, a range reduction), where exp, log,
# sigmoid, silu and division take one or two of the special function unit's and a fix-up
LONG_MATH_OPS = frozenset({"gelu", "gelu_tanh", "erf", "tanh", "sin", "cos", "pow"})


def long_math(p: Problem) -> bool:
    """Whether a pointwise group computes a function of many instructions (LONG_MATH_OPS) of
    its elements: then a flat walk with a broadcast input is bound by instructions."""
    return any(v.op in LONG_MATH_OPS and v.dims for v in p.group.values)


def outer_items(p: Problem, vec: int, block: int = 128) -> Optional[int]:
    """Rows of the outermost loop a thread takes by default (Schedule.outer), else None:
    OUTER_ITEMS where the inputs without that loop take OUTER_REUSE_BYTES or more, or where
    the math is long (long_math: gelu, tanh, ...), the streams are 8-bit (eight_bit_stream:
    EIGHT_BIT_ITEMS rows), or 16-bit operands allow no vectors (vec 1:
    a flat walk divides each element's index; where vectors that straddle rows cannot run either:
    the default takes those first, straddle_default), a row's vectors fill half a block of `block` and
    the blocks are as many as the SMs (fewer rows a thread where that keeps them so). Fewer
    where the loop is shorter or a thread's registers would not hold them (held_words).

    Long math: a flat walk divides each vector's index by the row's length to find a
    broadcast input's column, and takes 16 elements a thread; the outer walk finds the column
    once and takes 8 rows' vectors. H200 2026-12-02 (scripts/probe_bias_walk.py), gelu(x + b),
    us, flat / 2, 4, 8 rows: bf16 8192x16384 154.9 / 154.1, 140.4, 132.3 (0.81x -> 0.95x copy);
    f16 16384x4096 83.7 / 78.8, 72.1, 70.4; f32 8192x8192 180.6 / 174.4, 157.7, 148.8; bf16
    32768x781 (no vectors) 124.2 / 141.9, 72.7, 45.4; bf16 [8, 2048, 768] (96 vectors a row)
    19.2 / 19.2, 18.2, 17.3. Level or slower, so left flat: silu(x + b) bf16 65536x768 51.8 /
    51.6, 52.3, 52.6; sigmoid(x * s + t) f16 16384x4096 67.8 / 68.3, 68.6, 69.2; exp(x - m)
    and x / b f32 (bound by memory) within 1%.
    Single elements: relu(x + b) bf16 32768x781 125.1 flat (2 a thread), 63.2 flat (8), 38.3
    outer (8 rows); but x + b f32 16384x1021 35.9 flat (8), 40.8 outer."""
    reused = reused_bytes(p)
    row_vectors = p.total // max(1, p.loops[0]) // vec if p.loops else 0     # (an empty loop: none)
    narrow = max(op.dtype.itemsize for op in p.layout.inputs + p.layout.outputs) <= 2
    eight_bit = eight_bit_stream(p)
    # (a flat walk divides each vector's index: heavy beside single 16-bit elements or 8-bit vectors)
    heavy = long_math(p) or (vec == 1 and narrow) or eight_bit
    if not reused or (reused < OUTER_REUSE_BYTES and not (heavy and 2 * row_vectors >= block)):
        return None
    items = min(EIGHT_BIT_ITEMS if eight_bit else OUTER_ITEMS, p.loops[0])
    while items > 1 and held_words(p, vec, items, outer=True) > HELD_WORDS:
        items //= 2
    if reused < OUTER_REUSE_BYTES:      # (a block an SM at least, else the flat walk's more blocks)
        short = lambda n: -(-row_vectors // block) * -(-p.loops[0] // n) < p.sm_count   # noqa: E731
        while items > 2 and short(items):
            items //= 2
        if short(items):
            return None
    return items if items > 1 and not outer_refusal(p, items) else None
