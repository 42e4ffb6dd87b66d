"""The register model of row reductions: how many 4-byte registers a thread's share of a row,
its weights, its kept values and its loads in flight take, and how many fit each kind of
schedule without ptxas spilling to local memory. Every limit here was fitted to ptxas
(CUDA 13.0, sm_90a and sm_80) on the programs and dates its comment names; rows.py and
choose.py ask these rules before they pick or offer a schedule."""
from __future__ import annotations

from .layout import shifted_weight_words, shifted_weights
from .problem import Problem, operand_words
from .schedules import (MAX_PACKED_ROW_ELEMENTS, MAX_ROW_ELEMENTS, R40_THREADS, Schedule, computes_f64_math,
                        costly_elements, wide_index_math)

PREFETCH_REGISTERS = 48    # 4-byte registers a thread may hold of its row and the next one's


# The most registers a held peeled row's share and one vector of each shifted weight may take
# (shifted_held_words). ptxas at 64 registers (2026-12-05, every held shifted candidate of
# layernorm f16 with f32, f16 and bf16 weights, a residual add's layernorm, rmsnorm f16, bf16 and
# with f32 weights, rows of 2053 to 20001): sm_90a none spilled up to 56 words and all 13 at 64
# or more; sm_80 spilled 5 of 9 at 56, 1 of 3 at 52 and 2 of 22 at 48 (rmsnorm with an f32 w,
# 8 bytes), none of 76 at 44 or fewer. Gathered, none of them spilled but the 72-word share.
# A warp's row (several rows a block) or a cluster's share holds fewer (2026-12-05, the held shifted
# candidates of the same programs at rows of 513-1799 and 40001-100003): layernorm f16 with f32 w, b
# a warp a row spilled 8 bytes at 56 words on sm_90a (48: none); an f32 layernorm's share of a
# cluster (65537, 8 vectors of 4 a thread) 20 bytes at 48 (44 and fewer: none of 40).
SHIFTED_HELD_WORDS = {"sm_90": 56, "sm_90a": 56}
SHIFTED_WARP_ROW_WORDS = 52
SHIFTED_CLUSTER_WORDS = 44


# The most elements a thread's share of a held peeled row may have where the reduction computes
# 8-byte values from indices alone (schedules.wide_index_math): ptxas computes them all ahead of the
# loads, each row's head a runtime offset, and holds them. ptxas 2026-12-06 (CI's codegen fuzz), a
# peeled i8 row of 1031 summed as where(x < idx(M), x, abs(idx(M))) in i64, at 128 registers:
# 32 elements a thread 128 registers and 16 bytes spilled on sm_80 (126 on sm_90a), 16 elements 113,
# 8 elements 77; the same over f16 104 / 78 / 60. Unpeeled (rows of 1000), 32 elements took 51-53.
PEELED_INDEX_MATH_ELEMENTS = 8


def peeled_index_math_fits(p: Problem, items: int, vec: int) -> bool:
    """Whether a held peeled row's share of `items` vectors of `vec` fits beside its index math."""
    return items * vec <= PEELED_INDEX_MATH_ELEMENTS or not wide_index_math(p.group)


def shifted_held_limit(p: Problem, s: Schedule) -> float:
    """The most registers shifted_held_words may count for held peeled row `s` on p's GPU."""
    limit = SHIFTED_HELD_WORDS.get(p.arch, 44)
    if s.cluster > 1:
        return min(limit, SHIFTED_CLUSTER_WORDS)
    return min(limit, SHIFTED_WARP_ROW_WORDS) if s.row_threads <= 32 else limit


def shifted_held_words(p: Problem, s: Schedule) -> float:
    """Registers a held peeled row with shifted weights takes where it writes its result: its
    share of the row, and the two 16-byte-aligned vectors of each weight (layout.shifted_weight_words)."""
    return s.items * s.vec * p.words_per_row_element_per_row(s.vec) + shifted_weight_words(p.layout, s.vec)


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


def narrow_rows(p: Problem) -> bool:
    """Whether every input over the row and its reduced dims is 2 bytes wide."""
    return rows_are(p, lambda t: t.itemsize == 2)


def rows_are(p: Problem, test) -> bool:
    """Whether the row has inputs over it and its reduced dims, and `test` passes the dtype
    of every one."""
    return bool(p.layout.row_inputs) and all(test(op.dtype) for op in p.layout.row_inputs)


def packed_rows(p: Problem, vec: int) -> bool:
    """Whether a thread's share of each row is 16-bit values in vectors (every input over
    the row and its reduced dims 2 bytes wide): held two a register, so a share may have
    MAX_PACKED_ROW_ELEMENTS of them, the bytes of MAX_ROW_ELEMENTS 4-byte ones. Not a row of
    several loops (its dims not adjacent in memory), whose vectors each take an address of
    their own: `sum(where(p0, x, 0.5), axis=(1000, K))` of f16 [1000, N, K] at K = 2, a warp
    holding 64 elements a lane in vectors of 2, spilled 8 bytes at 64 registers on sm_90a and
    16 on sm_80 (CI's codegen fuzz, 2026-11-29)."""
    return vec > 1 and narrow_rows(p) and len(p.layout.reduced_loops) == 1


def row_share_fits(p: Problem, items: int, vec: int, hoisted: bool = True, packed: bool = False) -> bool:
    """Whether a thread can hold its share of a row (`items` vectors of `vec`, every
    input's element loaded before the row is reduced) under the 64-register cap:
    at most MAX_ROW_ELEMENTS elements taking at most row_register_budget words, and
    at most 8 elements read one by one (vec 1), or in vectors of inputs narrower than 8 bytes,
    where a result is 8 bytes wide (f32 math widened on the store; the codegen fuzz, 2026-12-05:
    a full sum beside two f64 results over four f16 rows of 1000, a warp holding 32 elements a
    thread in vectors of 2, spilled 88 bytes on sm_90a). Measured with ptxas, sm_90a and sm_80, 2026-11-25
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
    budget = row_register_budget(vec)
    if len(p.layout.row_inputs) > 1:
        budget = min(budget, SEVERAL_ROWS_WORDS)
    if not hoisted:
        cap = min(cap, late_weights_crowd(p, vec) or cap)
    wide_results = any(op.dtype.itemsize == 8 for op in p.layout.outputs)
    narrow_inputs = all(op.dtype.itemsize < 8 for op in p.layout.inputs)
    words = p.words_per_row_element(vec) if hoisted else max(0.5, p.words_per_row_element_per_row(vec))
    return (elements <= cap and elements * words <= budget
            and not ((vec == 1 or narrow_inputs) and wide_results and elements > 8))


# Words a thread's share of several row inputs may take (not row_register_budget's 40). ptxas,
# 2026-12-05, held rows at 64 registers, bytes spilled at 32 / 36 / 40 words: x + r and rmsnorm, f16
# peeled at 8 a vector, sm_90a 0 / - / 56, sm_80 0 / - / 32; x * r + w and softmax likewise 0 / - / 48;
# f32 in vectors of 4, 0 / - / 72; the layernorm of x + r + q, f16, 0 (24) / 24 / -, f32 in a cluster
# 0 (24) / 40 / -; with no weights (softmax of x + r, the logsumexp of f32 x + r) 48 and 8 at 40.
SEVERAL_ROWS_WORDS = 32

# The most bf16 elements a thread's share may hold read one by one (vec 1) beside weights loaded late.
# ptxas, 2026-12-05, a warp a row of 513 at 64 registers, bytes spilled at 12 / 14 / 16 / 17 / 20
# elements: layernorm of bf16 with f32 w, b and g, sm_90a 0 / 0 / 8 / 24 / 56 (the default of one
# row of 513: CPU survey), sm_80 0 / 0 / 8 / 8 / 8; with f32 w and b, sm_90a 0 / 0 / 8 / 0 / 8; the
# layernorm of x + r of bf16, 0 / 0 / 8 / 16 / 8. The same of f16 rows spilled none up to 17.
BF16_ELEMENTS_BESIDE_LATE_WEIGHTS = 14


def late_weights_crowd(p: Problem, vec: int) -> int:
    """The most elements a thread's share (in vectors of `vec`) may hold beside weights loaded late;
    else 0 (no cap): (1) a row computed from several row inputs (a residual add, x + r: held in f32, a
    word an element) beside two or more weights (layernorm's w and b): 24 where they are 4 bytes wide,
    else 32; (2) one row input beside three or more 4-byte weights: 48 of 16 bits, else 20; (3) bf16
    rows read one by one (vec 1) beside any weight: BF16_ELEMENTS_BESIDE_LATE_WEIGHTS. The least applies.
    ptxas, 2026-12-05, at 64 registers, bytes spilled: (1) x + r of f16 or bf16 in vectors of 8
    at 24 / 32 / 40 elements: f32 w and b, sm_90a a block 0 / 0 / 32, a cluster's 0 / 8, sm_80
    0 / 4 / 40 (the defaults at 1001x36000 to 100000 spilled); f16 or bf16 w and b, sm_90a a
    block - / 0 / 0, a cluster's - / 0 / 32, sm_80 - / 0 / 8. One weight (rmsnorm of x + r)
    spilled none up to 40. (2) `c * rsqrt(...) * w + b * g`, f32 w, b and g: f16 rows at 48 / 56
    / 64, sm_90a a block 0 / 0 / 8, a cluster's (bf16) 0 / 8, sm_80 0 / 8 / 8; f32 rows in
    vectors of 4 at 20 / 24 / 28, a cluster's 0 / 8 / 8. Two f32 weights beside one row (layernorm
    f16) spilled none up to 64."""
    weights = p.layout.weight_inputs
    wide = sum(op.dtype.itemsize >= 4 for op in weights)
    caps = []
    if len(p.layout.row_inputs) > 1 and len(weights) >= 2:
        caps.append(24 if wide >= 2 else 32)
    elif wide >= 3:
        caps.append(48 if narrow_rows(p) else 20)
    if vec == 1 and p.has_row_invariant_inputs() and rows_are(p, lambda t: t.name == "bf16"):
        caps.append(BF16_ELEMENTS_BESIDE_LATE_WEIGHTS)
    return min(caps, default=0)


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
    no idx() at all takes this schedule. Inputs not over the row (a scalar, a row's own
    value) are held through it too: an i64 full sum added to each element of a row of 3
    i64, f16 and f32 elements a thread spilled 8 bytes at 32 registers (CPU fuzz test,
    2026-11-27; 15 words counted without it, 17 with). Nor does a row of several loops
    with an input over only some of them, gathered at each element's position divided
    out of its flat one, as an idx() is: `sum(x * w)` over x f32[16, N] and w bf16[N], 8
    elements a thread, spilled 8 bytes at 32 registers (GPU fuzz, 2026-11-27; 24 registers
    with w loaded where used, 39 uncapped). Rows of 8-byte elements leave 4 of the 16
    words to their 64-bit sums and addresses: `sum(p0 + p1, axis=K)` of f64 [K, N] and
    [K, N, 7], 4 elements a thread (16 words), spilled 16 bytes (GPU fuzz, 2026-11-27)."""
    reduced = set(p.layout.reduced_loops)
    beside = sum(operand_words(op, 1) for op in p.layout.inputs if not set(op.loops) & reduced)
    held = items * p.words_per_row_element(vec) * (2 if keep else 1) + beside
    stored_along_row = all(op.dtype.itemsize <= 4 and (p.inner not in op.loops or op.loops[-1] == p.inner)
                           for op in p.layout.outputs)
    indices = any(v.op == "idx" for v in p.group.values)
    gathered = len(reduced) > 1 and any(not reduced <= set(op.loops) for op in p.layout.reduced_inputs)
    wide = any(op.dtype.itemsize == 8 for op in p.layout.reduced_inputs)
    return (p.arch == "sm_90a" and vec == 1 and items <= 8 and held <= full_occupancy_words(p, wide)
            and stored_along_row and not indices and not gathered and not computes_f64_math(p.group.values))


# The most words full_occupancy_fits lets a thread hold beside two or more weights (layernorm's w and b),
# and beside several 4-byte row inputs (x + r of f32). ptxas, sm_90a, 32 registers, 2026-12-05, a row
# of 2053 element by element at 512 threads, bytes spilled by words held: layernorm f16 with f32 w and b
# 12 / 15 words 0 / 0, bf16 0 / 40, f32 0 / 16, bf16 with bf16 w and b 0 / 32 (the defaults of one row
# of 513 to 2560: CPU survey); the layernorm of x + r of f32, 8 / 12 words 0 / 8, of x + r + q 10 / 15
# 0 / 16, of 16-bit rows none up to 16 and 15. One weight (softmax of x * r + w, rmsnorm of x + r)
# spilled none at 15; three f32 weights beside one row none at 16.
FULL_OCCUPANCY_WEIGHTS_WORDS = 12
FULL_OCCUPANCY_WIDE_ROWS_WORDS = 10


def full_occupancy_words(p: Problem, wide: bool) -> int:
    """The most words a thread's share may hold at full occupancy (full_occupancy_fits): 16, 12 where
    the row is of 8-byte elements or beside two or more weights, 10 beside several 4-byte row inputs."""
    if sum(op.dtype.itemsize >= 4 for op in p.layout.row_inputs) >= 2:
        return FULL_OCCUPANCY_WIDE_ROWS_WORDS
    if len(p.layout.weight_inputs) >= 2:
        return FULL_OCCUPANCY_WEIGHTS_WORDS
    return 12 if wide else 16


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


# The most 4-byte words an explicit unroll of a peeled row may hold an iteration's loads in,
# its weights' vectors with its rows' (a streamed row kernel runs at 64 registers at most)
UNROLL_HELD_WORDS = 48


def peeled_weight_words(p: Problem, s: Schedule) -> float:
    """The 4-byte words of a peeled row's inputs over the row alone (weights) an iteration of
    its streamed loop loads: stream_words leaves them out (they come from L1), but they take
    registers beside the rows' vectors. 4 iterations of a residual add and its f16 layernorm
    (67x40003; x and r 8 words an iteration, f32 w and b 16) spilled 12 bytes at 64
    registers (sm_90a, the GPU tests' spill warnings, 2026-12-04)."""
    if s.kind != "reduce_row" or not s.peel or s.vec == 1:
        return 0.0
    shifted = shifted_weights(p.layout, s.vec) if s.shift else []
    gathered = sum(operand_words(op, s.vec) * s.vec for op in p.layout.weight_inputs if not any(op is w for w in shifted))
    return gathered + (shifted_weight_words(p.layout, s.vec) if s.shift else 0.0)


# Words of loads in flight a thread of a streamed 16-bit row may hold (its reduced inputs' vectors,
# weights included, times the loop's depth), by depth. ptxas at 64 registers, 512 threads in vectors
# of 8, 2026-12-05 (rows of 262144 and 36000-100000; bytes spilled): at depth 4, none of 24 at 32
# words on either arch; at 48 softmax of x * r + w spilled 8 (rmsnorm of x + r, layernorm f16 with
# f16 weights: none); at 64 to 112 words 8 to 40 on both (layernorm of x + r, of x + r + q, and
# with f32 w and b alone: 16 at 80 on sm_90a). At depth 2 none up to 48 words on either, and at 56
# (x + r + q or three f32 weights beside f16 rows) none on sm_90a, 8 on sm_80.
STREAM_DEPTH_WORDS = {"sm_90a": {4: 32, 2: 56}}
STREAM_DEPTH_WORDS_DEFAULT = {4: 32, 2: 48}


def stream_depth(p: Problem, vec: int) -> int:
    """How many iterations of a streamed row's loop (in vectors of `vec`) a thread keeps in flight:
    the deepest of 4 and 2 whose loads, weights included, fit STREAM_DEPTH_WORDS on p's GPU, else 1."""
    iteration = sum(operand_words(op, vec) * vec for op in p.layout.reduced_inputs)
    limits = STREAM_DEPTH_WORDS.get(p.arch, STREAM_DEPTH_WORDS_DEFAULT)
    return max([depth for depth, words in limits.items() if depth * iteration <= words], default=1)


CLUSTER_I64_WORDS = 24    # words of i64 elements a cluster's thread may hold at 64 registers


def cluster_share_fits(p: Problem, items: int, vec: int, threads: int, blocks: int, hoisted: bool) -> bool:
    """Whether a cluster's thread (blocks > 1) at 1024 threads a block (64 registers) holds
    its share of a row of i64 elements beside the cluster's exchange: CLUSTER_I64_WORDS at
    most, not row_register_budget's 40 (wrapping 64-bit integer math takes more registers
    than float math). `sum(abs(x) + sum(abs(x)))` over i64 [K, 64, 2], vec 2, ptxas sm_90a
    (2026-11-27), registers / bytes spilled at 5, 6, 7, 8, 9 vectors a thread: 8 blocks
    56/0, 64/0, 64/16, 64/48, 64/92 (the default at K = 1031: GPU fuzz); a block alone 40/0
    to 63/0; f64 and f32 rows in clusters of 8 none up to 8 and 20 vectors."""
    if blocks == 1 or threads < 1024 or not hoisted:
        return True
    if not any(op.dtype.itemsize == 8 and op.dtype.is_integer for op in p.layout.reduced_inputs):
        return True
    return items * vec * p.words_per_row_element(vec) <= CLUSTER_I64_WORDS
