"""The rules for reductions along rows (`reduce_row`): how many threads share a row, rows
sharing a warp, rows held peeled or streamed, rows shared by a cluster, rings of rows; each
rule with the measurements it was fitted to. What a thread's share may hold in registers
(row_share_fits and its kin) is registers.py's to say; how the share moves with the GPU's
HBM bandwidth per SM, shares.py's."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from .hints import Hints
from .layout import peeled_operands, shifted_weights
from .partition import online_pair_alone, online_pairs, reduction_levels
from .registers import (UNROLL_HELD_WORDS, cluster_share_fits, element_keeps_fit, keeps_fit, narrow_rows,
                        packed_rows, peeled_index_math_fits, peeled_weight_words, prefetch_fits, row_share_fits,
                        rows_are, shifted_held_limit, shifted_held_words, stream_depth, PEELED_INDEX_MATH_ELEMENTS)
from .schedules import (COSTLY_OPS, ROW_CLUSTERS, MAX_ROW_STAGES, MAX_PACKED_ROW_ELEMENTS, SHARED_PER_SM,
                        SHARED_PER_SM_DEFAULT, SHARED_ROW_RESERVE, THREADS_PER_SM, Schedule, branchless_elements,
                        costly_elements, ring_refusal, shared_copy_refusal, stream_unroll_rule,
                        stream_words)
from .problem import Problem, pow2_at_least, pow2_at_most, max_vector
from .resident import resident_clusters

LATE_LOADS_GBPS_PER_SM = 30.0   # below this peak HBM bandwidth per SM, rows with weights load them late
# ... from this many rows an SM; weights at most twice the row load late from here on any GPU
# (the measurements are in choose.default)
LATE_ROWS_PER_SM = 64
# ... weights over twice the row (f32 weight and bias over 16-bit rows) from this many rows an SM:
# on an H100 (2026-12-07, scripts/probe_late_rows.py, layernorm f16 and bf16) a block a row with
# the weights late against the persistent prefetching block, at 31/40/48/56/62 rows an SM:
# 8192-element rows 52.0/65.3/76.9/88.5/97.0 us against 51.2/67.7/80.7/93.7/102.5, 4096-element
# rows 28.3/34.8/40.1/46.3/49.9 against 27.4/34.6/41.4/47.5/52.8. Rows of at least
# LATE_HEAVY_MIN_ROW elements only: at 40/48/62 rows an SM the late form ran rows of 2048 in
# 18.7/22.1/27.8 us against 17.5/20.8/26.9, rows of 1024 in 11.7/12.8/15.3 against 10.6/11.2/13.3
LATE_HEAVY_ROWS_PER_SM = 40
LATE_HEAVY_MIN_ROW = 4096
LONG_ROW = 4096     # 16-bit rows without weights this long or longer: held by the fewest threads they fit
PEELED_ROW = 1536   # rows breaking alignment this long or longer: held peeled likewise (long_row_schedule)
PEELED_ROW_16 = 1024    # ... of 16-bit values (every input over the row 2 bytes wide)
WARP_ROW_BYTES = 4096   # rows moving fewer bytes than this take a warp each, several a block (warp_row_schedule)
WARP_ROW_NS = 1.2       # ... or than the GPU's peak bandwidth moves in this time, where that is more
WARP_ROW_BLOCK = 128
WARP_ROW_PEELED = 512   # ... peeled to aligned vectors from this long where the length breaks alignment
HALF_WARP_ROW_BYTES = 512   # ... half a warp each where each row of the inputs is this light (16-bit rows of 256)
HALF_WARP_ELEMENT_ROW_BYTES = 320   # ... this light where read element by element, with branches (warp_row_schedule)
SHORT_ROW = 128               # rows of at most this many elements take a warp or part of one (short_row_schedule)


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
    if s.shift and not shifted_weights(p.layout, s.vec):
        return (f"shifting a peeled row's weights (shift) takes 4- or 2-byte weights over the row alone whose "
                f"{s.vec} lanes fill 16-byte pieces: here there are none")
    if s.items and not peeled_index_math_fits(p, s.items, s.vec):
        return (f"a held peeled row computing 8-byte index math holds at most {PEELED_INDEX_MATH_ELEMENTS} elements "
                f"a thread ({s.items * s.vec} here): ptxas computes them all ahead of the loads and spills")
    if s.shift and s.items and (words := shifted_held_words(p, s)) > shifted_held_limit(p, s):
        return (f"a held peeled row's share and its weights' shifted vectors take {words:g} registers a thread: "
                f"more than ptxas holds without spilling on {p.arch}")
    return ""


def shifted_twin(s: Schedule) -> Optional[Schedule]:
    """Peeled row `s` with its 4- or 2-byte weights read in vectors shifted by each row's head
    (Schedule.shift), where a schedule may say so (a row reduction in vectors of 4, 8 or 16); else
    None. Whether the problem has such weights is fits()'s to say (peel_refusal)."""
    if s.kind != "reduce_row" or not s.peel or s.vec % 4:
        return None
    return replace(s, shift=True)


# A peeled row whose weights over N outweigh it (weights_outweigh_row), held or copied into shared
# memory, reads those weights in 16-byte vectors shifted by its head (Schedule.shift) where that fits
# its registers, not gathered a lane at a time (shifted_where_heavier). H100 2026-12-06 03:00
# (scripts/probe_heavy_weights.py, copy 3004 GB/s), us, gathered / shifted at the same schedule: the
# layernorm of x + r with f32 w and b 4096x8193 122.5 / 108.3 (512 threads, 2 vectors a thread),
# rmsnorm f16 with an f32 w 4096x20001 134.4 / 122.8 (512, 5), all-f16 layernorm 2048x40001 173.4 /
# 156.0 (1024, 5), copied into shared memory by 512 threads 159.8 / 149.7. Where the shifted vectors
# crowd the share out (all-f16 layernorm 8192x8193 at 128 threads, 8 vectors: 64 registers a thread)
# the row keeps its gathered lanes (103.4; shifted at 256 threads, 4 vectors: 103.6). The defaults this
# rule and shared_row_schedule's peeled copies moved, H200 2026-12-06 04:17 (copy 4253 GB/s), us, before
# / now: the layernorm of x + r 4096x8193 118.3 / 98.7, 4096x20001 (copied) 312.7 / 230.5; rmsnorm f16
# with an f32 w 4096x20001 124.5 / 106.9, 8192x8193 93.8 / 79.5, 2048x40001 (copied) 146.9 / 108.1;
# all-f16 layernorm 2048x40001 (copied) 168.0 / 132.2. Not taken: weights no heavier than the row
# (rmsnorm f16 16384x4097 gathered / shifted 71.6 / 73.0, bf16 16384x1299 28.4 / 29.3), and four times
# its bytes (layernorm f16 with f32 w and b, read element by element / held peeled and shifted:
# 16384x4097 115.1 / 120.5, 4096x12001 90.7 / 89.7).


def shifted_where_heavier(p: Problem, s: Optional[Schedule]) -> Optional[Schedule]:
    """Peeled row `s` with its weights shifted (shifted_twin) where they outweigh the row and the
    twin fits (peel_refusal: 4- or 2-byte weights, a held share's registers); else `s` (None too)."""
    twin = shifted_twin(s) if s is not None and weights_outweigh_row(p) else None
    return twin if twin is not None and not peel_refusal(p, twin) else s


def element_bytes(inputs) -> int:
    """Bytes an element of a row takes in `inputs` together (layout.row_inputs: the row's own;
    layout.weight_inputs: its weights)."""
    return sum(op.dtype.itemsize for op in inputs)


def peel_weights_fit(p: Problem) -> bool:
    """Whether a peeled row's weights over N (gathered lane by lane) take no more bytes an
    element than its per-row inputs: what the default peels (see default()). One row (no kept
    loop: a full reduction) has no weights: its inputs are the row (layout.peeled_operands)."""
    return not weights_outweigh_row(p)


# A long row held peeled (long_row_schedule) of HELD_PEELED_HEAVIER_ROW elements or more gathers
# weights over N taking up to HELD_PEELED_WEIGHT_BYTES_PER_ROW_BYTE bytes an element for each byte
# of its per-row inputs. H200 2026-12-05 05:46 (scripts/probe_heavy_weights.py), us, read element
# by element / held peeled, weights gathered: at twice the row's bytes, all-f16 layernorm
# 8192x8193 107.1 / 96.4 (128 threads, 8 vectors a thread), rmsnorm f16 with an f32 w 4096x20001
# 136.3 / 124.4 (512 threads, 5), the layernorm of x + r with f32 w and b 4096x8193 109.2 / 97.0
# (256 threads); at four times (layernorm f16 with f32 w and b) peeling lost: 4096x20001 196.4 /
# 237.5 (H200 2026-11-26). This rule's defaults, H100 2026-12-06 03:00 (copy 3004 GB/s), us, the old
# default (element by element) / this: the layernorm of x + r 4096x8193 124.9 / 122.5 (512 threads),
# 1001x40003 285.3 / 198.1 (4 blocks a row); rmsnorm f16 with an f32 w 4096x20001 166.0 / 134.4;
# all-f16 layernorm 8192x8193 116.3 / 103.4, 2048x40001 276.7 / 173.4. Shorter rows, warp rows and
# looped rows keep peel_weights_fit (unmeasured there).
HELD_PEELED_WEIGHT_BYTES_PER_ROW_BYTE = 2
HELD_PEELED_HEAVIER_ROW = 8192


def held_peel_weights_fit(p: Problem) -> bool:
    """Whether a long row held peeled (long_row_schedule) may gather its weights over N lane by
    lane: no heavier than the row (peel_weights_fit), or, from HELD_PEELED_HEAVIER_ROW elements,
    at most HELD_PEELED_WEIGHT_BYTES_PER_ROW_BYTE bytes an element for each of its per-row inputs'."""
    return peel_weights_fit(p) or p.row_length >= HELD_PEELED_HEAVIER_ROW and weights_at_most_twice_row(p)


def weights_at_most_twice_row(p: Problem) -> bool:
    """Whether the weights over N take at most HELD_PEELED_WEIGHT_BYTES_PER_ROW_BYTE bytes an element
    for each of the per-row inputs' (the residual add's layernorm: yes; f32 w and b beside f16 x: no)."""
    return element_bytes(p.layout.weight_inputs) <= HELD_PEELED_WEIGHT_BYTES_PER_ROW_BYTE * element_bytes(
        p.layout.row_inputs)


def weights_outweigh_row(p: Problem) -> bool:
    """Whether a row reduction's inputs over the row alone (weights) take more bytes an element than
    its per-row inputs (layernorm's f32 w and b beside f16 x). One row (no kept loop) has none."""
    return bool(p.layout.kept_loops) and element_bytes(p.layout.weight_inputs) > element_bytes(p.layout.row_inputs)


def peel_vector(p: Problem) -> int:
    """The vector a looped row reduction reads its rows in, peeled (beyond 1), where
    the row length alone keeps it from vectors; else 1."""
    vec = max_vector(p, whole=False) if p.inner is not None and p.group.kind == "reduce" else 1
    if vec == 1 or p.loops[p.inner] % vec == 0:
        return 1
    probe = Schedule("reduce_row", block=256, vec=vec, items=0, row_threads=256, peel=True, index64=p.index64)
    return 1 if peel_refusal(p, probe) else vec


def looped_row_vector(p: Problem, weights_fit=None) -> tuple[int, bool]:
    """(vector, peeled) a looped row is read in by default: max_vector, else where the length
    alone breaks it, peeled to aligned vectors (peel_vector) if its weights are no heavier
    than it (`weights_fit`, peel_weights_fit unless given), else element by element."""
    vec = max_vector(p)
    if vec > 1:
        return vec, False
    vec = peel_vector(p)
    return (vec, True) if vec > 1 and (weights_fit or peel_weights_fit)(p) else (1, False)


def row_share(row_vectors: int, threads: int) -> int:
    """Vectors a thread holds of a row that `threads` threads share: exactly enough,
    not a power of two (one past a power of two held nearly twice the registers the
    row needs: softmax f32 4096x12001 at 512 threads needs 24 elements, and 32 spilled,
    so the row streamed; held at 24, 181.7 -> 136.9 us on an H100, 2026-11-25)."""
    return max(1, -(-row_vectors // threads))


def row_threads(p: Problem, rvec: int, vec: int, hints: Hints) -> int:
    """The threads a block gives a held row of `rvec` vectors of `vec`, before its share is
    fitted to registers: the pinned count, else about 16 elements a thread (8 without vectors)
    from 64 to 512 threads; 512 go to 1024 that prefetch (doubled_prefetch_pays) or to fewer
    that leave fewer vector slots idle (fuller_block, where fuller_block_pays)."""
    if hints.threads:
        return hints.threads
    per_thread = max(1, (16 if vec >= 4 else 8) // vec)
    threads = min(512, max(64, pow2_at_least(-(-rvec // per_thread))))
    if threads == 512 and not hints.stages and doubled_prefetch_pays(p, rvec, vec):    # (prefetches)
        return 1024
    if threads == 512 and fuller_block_pays(p, rvec, vec):
        return fuller_block(rvec, vec, per_thread, level=few_plain_rows(p, rvec, vec))
    return threads


def fuller_block(row_vectors: int, vec: int, per_thread: int, level: bool = False) -> int:
    """The threads of a row that 512 threads would share (about `per_thread` vectors each):
    256 where that leaves fewer of the block's vector slots idle and a thread holds at most
    twice `per_thread`. Idle slots are bytes not in flight: a 16-bit row of 5120 is 640
    vectors, 1024 slots at 512 threads (2 each), 768 at 256 (3 each). H200 2026-11-29
    (scripts/probe_gaps.py, µs, 512 / 256 threads): rmsnorm f16 8192x5120 54.7 / 43.8,
    8192x6144 59.4 / 52.6; softmax f32 8192x5120 99.5 / 84.5, 16384x5120 194.5 / 163.9.
    `level`: 256 also where it leaves as few slots idle as 512 (few_plain_rows)."""
    half, slots = row_share(row_vectors, 256), 512 * row_share(row_vectors, 512)
    return 256 if vec >= 4 and half <= 2 * per_thread and (256 * half < slots or level and 256 * half == slots) else 512


ONE_WAVE_ROWS_PER_SM = THREADS_PER_SM // 512   # rows an SM that one wave of blocks of 512 a row holds
FEW_PLAIN_ROWS_PER_SM = (ONE_WAVE_ROWS_PER_SM, 12)    # rows an SM, above the first and up to the second


def few_plain_rows(p: Problem, rvec: int, vec: int) -> bool:
    """Whether fuller_block takes 256 threads over 512 at the same idle slots: f32 rows of
    `rvec` vectors with no weights (softmax's) that 512 threads would read 64 bytes each of,
    keeping their exps' values (keep_pays), on a GPU with much HBM bandwidth per SM, with
    more than 4 and at most 12 rows an SM. 256 threads holding twice the row each keep
    nothing, and a block holds a row's bytes in flight either way. H200 2026-11-29
    (scripts/probe_gaps.py three rounds, then the old default and this one in turn twice,
    µs, 512 / 256 threads): softmax f32 768x8192 16.6 / 15.3 (16.6, 16.6 / 15.2, 15.3),
    1024x8192 21.2 / 20.1 (21.4, 21.5 / 19.9, 20.1), 1536x8192 29.4 / 28.8 (29.4, 29.5 /
    28.5, 28.7). Between 4 and 5 rows an SM (18:08, every candidate, three rounds): 560x8192
    13.2 / 12.1, 600x8192 13.5 / 12.8, 600x8188 13.8 / 12.9, 640x8192 14.2 / 13.5. Not where
    512 threads keep nothing (768x6144, 48 bytes a thread: 12.9, 13.1 / 13.1, 13.4), nor at
    3.9 rows an SM (512x8192: 12.6, 12.7 / 12.9, 13.8, though 12.6 / 11.3 among every
    candidate). 16-bit rows gain nothing (softmax f16 768x16384 17.7 / 18.0, 1024x16384
    22.1 / 22.8)."""
    low, high = FEW_PLAIN_ROWS_PER_SM
    return (much_bandwidth_per_sm(p) and not p.layout.weight_inputs and rows_are(p, lambda t: t.itemsize == 4)
            and share_bytes(p, row_share(rvec, 512), vec) >= 64 and low * p.sm_count < p.rows <= high * p.sm_count)


def fuller_block_pays(p: Problem, rvec: int, vec: int) -> bool:
    """Whether fuller_block may take a row of `rvec` vectors from 512 threads to 256: not
    an f16 row in vectors of 8 whose weights weigh more than twice the row (layernorm
    f16's f32 weight and bias) on a GPU with much HBM bandwidth per SM, with more than 4
    but fewer than HALVED_SHARE_ROWS_PER_SM rows an SM (where default() makes a block
    persistent), where 512 threads leave at most 3/8 of their vector slots idle. At 256
    threads, three vectors a thread, such weights are too heavy to hoist and load late in
    a block a row; at 512, two vectors a thread, they are hoisted and a persistent block
    loads its next row while it reduces this one. H200 2026-11-29 (scripts/probe_gaps.py
    and probe_defaults.py, three rounds, µs, 256 / 512 threads): 768x6144 11.2 / 10.0,
    1024x6144 12.5 / 11.7, 2048x6144 20.5 / 19.1, 2560x6144 24.3 / 22.7, 3072x6144 27.8 /
    26.6, 2048x5120 18.2 / 17.7, 1536x5120 14.5 / 14.4. Not where 512 threads leave half
    their slots idle (3072x4104 23.2 / 23.7), nor bf16 rows (2048x6144 19.9 / 23.9, measured
    before codegen.cuda.moves_prefetched_rows sped their prefetching blocks; not since), nor
    f16 weights (twice the row: 256 threads hoisting stay best, 3072x6144 24.6, 2048x6144
    18.0). With more rows an SM, halved_late_share takes the row to 128 threads instead."""
    if not (vec == 8 and much_bandwidth_per_sm(p)
            and ONE_WAVE_ROWS_PER_SM * p.sm_count < p.rows < HALVED_SHARE_ROWS_PER_SM * p.sm_count
            and rows_are(p, lambda t: t.name == "f16") and 8 * rvec >= 5 * 512 * row_share(rvec, 512)):
        return True
    return element_bytes(p.layout.weight_inputs) <= 2 * element_bytes(p.layout.row_inputs)


DOUBLED_PREFETCH_ROWS_PER_SM = 12     # rows an SM up to which doubled_prefetch_pays applies (from one wave),
DOUBLED_FULL_ROWS_PER_SM = 32         # ... or this many with weights over twice the row and at most 1/5 idle


def doubled_prefetch_pays(p: Problem, rvec: int, vec: int) -> bool:
    """Whether a row of `rvec` vectors that 512 threads would share goes to a persistent
    block of 1024 threads that hoists its weights and loads its next row while it reduces
    this one: on a GPU with much HBM bandwidth per SM, with more rows an SM than one wave of
    blocks of 512 holds (ONE_WAVE_ROWS_PER_SM), where
    512 threads hold too much of the row to prefetch and 1024 can, and where the weights
    outweigh the row more than twice with at most a quarter of the 1024 threads' vector
    slots idle (up to DOUBLED_FULL_ROWS_PER_SM rows an SM where at most a fifth are idle,
    else DOUBLED_PREFETCH_ROWS_PER_SM), or twice with none idle (up to
    DOUBLED_PREFETCH_ROWS_PER_SM). Otherwise such rows load their weights late in a block a
    row and every row reads them again from L2: 96 KB a row of 12288 in f32 weight and bias,
    twice the row itself.
    H200 2026-11-29 (scripts/probe_gaps.py, three rounds, µs, the old default / this one),
    layernorm f16 with f32 weight and bias: 768x12288 17.6 / 15.8, 1024x12288 21.7 / 19.8,
    1280x12288 25.9 / 23.7, 1536x12288 28.5 / 27.3, 1024x14336 25.0 / 21.6, 3072x14336 58.3
    / 53.2, 4096x14336 74.6 / 68.8, 2048x13312 39.6 / 36.0, 1024x16384 27.5 / 23.3, 768x16384
    22.1 / 18.6, 2048x16384 45.4 / 40.8, 3584x16384 73.1 / 66.8, 4096x16384 82.5 / 74.9;
    bf16 rows 1024x12288 21.6 / 19.7, 2048x16384 45.4 / 40.3, 3072x16384 63.5 / 57.6; f32
    rows 1024x12288 31.4 / 30.5; f16 weight and bias 1024x16384 25.4 / 23.5. Not where a
    quarter of the slots is idle with 15.5 rows an SM (2048x12288: 34.6 / 34.7), nor 3/8
    (1024x10240: 18.0 / 18.4), nor f16 weights with a quarter idle (1024x12288: 19.4 / 20.0),
    nor f32 rows with 15.5 rows an SM (2048x12288: 55.2 / 59.0).
    Between 4 and 5 rows an SM, where blocks of 512 a row leave a second, partial wave
    (H200 2026-11-29 18:00, every candidate, three rounds, µs, the old default / this one):
    layernorm f16, f32 w, b, 576x16384 17.4 / 15.6, 640x16384 19.3 / 15.9, 640x14336 17.6 /
    14.7, 640x12288 16.0 / 14.0, 600x12288 15.0 / 14.0; f16 ones 640x16384 17.7 / 15.8; bf16
    rows 640x16384 19.0 / 15.7. With 4 or fewer, one wave of blocks a row holds them all and
    no block is persistent (default() and the tuner's space)."""
    if not (vec > 1 and much_bandwidth_per_sm(p) and p.layout.row_inputs
            and p.rows > ONE_WAVE_ROWS_PER_SM * p.sm_count
            and True in hoist_choices(p)):      # (a block that cannot hoist the weights would not prefetch)
        return False
    half, share = row_share(rvec, 512), row_share(rvec, 1024)
    if prefetch_fits(p, half, vec) or not (prefetch_fits(p, share, vec) and row_share_fits(p, share, vec)):
        return False
    slots, idle = 1024 * share, 1024 * share - rvec
    weights, row = element_bytes(p.layout.weight_inputs), element_bytes(p.layout.row_inputs)
    if weights > 2 * row and 4 * idle <= slots:
        rows_per_sm = DOUBLED_FULL_ROWS_PER_SM if 5 * idle <= slots else DOUBLED_PREFETCH_ROWS_PER_SM
    elif weights >= 2 * row and idle == 0:
        rows_per_sm = DOUBLED_PREFETCH_ROWS_PER_SM
    else:
        return False
    return p.rows <= rows_per_sm * p.sm_count


HALVED_SHARE_ROWS_PER_SM = 24  # rows an SM from which shares.halved_late_share applies


def little_bandwidth_per_sm(p: Problem) -> bool:
    """An H100's class of GPU: a known peak HBM bandwidth per SM under LATE_LOADS_GBPS_PER_SM."""
    return 0 < p.hbm_gbps_per_sm < LATE_LOADS_GBPS_PER_SM


def much_bandwidth_per_sm(p: Problem) -> bool:
    """An H200's class of GPU: at least LATE_LOADS_GBPS_PER_SM of peak HBM bandwidth per SM
    (an H200 37, an H100 25; unknown counts as little)."""
    return p.hbm_gbps_per_sm >= LATE_LOADS_GBPS_PER_SM


def share_bytes(p: Problem, items: int, vec: int) -> int:
    """Bytes a thread reads of its row: its vectors of the widest per-row input."""
    return items * vec * max((op.dtype.itemsize for op in p.layout.row_inputs), default=4)


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
    return p.row_length * max((op.dtype.itemsize for op in p.layout.row_inputs), default=0)


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


def invariant_costly_math(p: Problem) -> bool:
    """Whether costly element math (COSTLY_OPS) depends on row-invariant inputs alone, as
    all of a single row's does (`sin(x) + sum(x)`): hoisted, such inputs let the compiler
    compute that math once before the row loop and hold it beside them, twice the share's
    registers. Over one f32 row of 1000 at 32 elements a thread (ptxas sm_90a, CUDA 13,
    2026-11-27), sin and cos spilled 1984 bytes a thread, erf 188, log and log2 104, gelu
    96; loaded where used (not hoisted), none spilled (53 registers for sin)."""
    reduced = set(p.group.axes)
    return any(v.op in COSTLY_OPS and set(v.dims) & reduced and set(v.dims) <= reduced for v in p.group.values)


def hoist_choices(p: Problem, peel: bool = False) -> tuple[bool, ...]:
    """Whether a held row's row-invariant inputs (weights) may be hoisted, loaded once before
    the row loop (True), or loaded where used (False), in order of preference: both where
    there are weights, hoisted alone where there are none (nothing to load late), late alone
    where the row is peeled (peel_refusal) or costly math depends on them alone
    (invariant_costly_math), or where nothing is kept (a reduction to one value: its one
    row's inputs count as weights, and a hoist saves nothing). `sum(p0 + p1 + sum(p1))` of
    f32 [1, 1000] to an f64 scalar, a warp holding the row hoisted, 8 vectors a lane, spilled 40
    bytes at 64 registers on sm_90a (CPU fuzz, 2026-11-29; the same row as a row's own
    elements: 48 registers)."""
    if not p.has_row_invariant_inputs():
        return (True,)
    return (False,) if peel or invariant_costly_math(p) or not p.layout.n_kept else (True, False)


def ring_problem(p: Problem, s: Schedule) -> str:
    """'' when a row ring (stages >= 2) can carry this problem's per-row inputs, else why not."""
    return ring_refusal(s, [(op.dtype.itemsize, op.loops[-1] == p.inner) for op in p.layout.row_inputs])


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
    row_bytes = p.row_length * element_bytes(p.layout.row_inputs)
    rows_at_once = min(p.rows, p.sm_count * max(1, 1024 // block))
    return rows_at_once * row_bytes > L2_BYTES.get(p.arch, L2_BYTES_DEFAULT)


def stream_unrolls(p: Problem, s: Schedule) -> list[int]:
    """Explicit unrolls worth timing for a streamed loop: 16 and 32 words of loads in
    flight a thread, and a half and a quarter of the rule's own unroll (ptxas's depth,
    where the rule unrolls rows read element by element 16 deep). ptxas's own choice
    (the default) is best for most (H100: column sums 37.7 against 40.5 us unrolled);
    x @ W, a column split, took 96.8 against 108.1 us with 16 iterations
    (BENCHMARKS.md, "Products with a vector")."""
    if not s.streamed or s.shared_row:     # (a row copied into shared memory reads it there: no loads to
        return []                          # keep in flight, and unrolled 8 deep ptxas spilled it)
    words, wide = stream_words(s, p.layout)
    rule = stream_unroll_rule(s, words, wide)
    held = words + peeled_weight_words(p, s)
    return sorted({n for n in (pow2_at_most(16 / words), pow2_at_most(32 / words), rule // 2, rule // 4)
                   if 2 <= n <= 16 and n != rule and n * held <= UNROLL_HELD_WORDS})


# Rows whose per-row inputs take more than this are copied into shared memory by default
# (shared_row_schedule): up to it, 512 threads hold a row in registers (64 packed 16-bit
# values or 32 f32 a thread), two blocks an SM.
SHARED_ROW_HELD_BYTES = 64 << 10
SHARED_ROW_THREADS = 512
# ... and rows too long for two such copies an SM: the blocks of a cluster, each its share
SHARED_ROW_CLUSTER = 8
SHARED_ROW_CLUSTER_THREADS = 256


def shared_row_bytes(p: Problem, s: Schedule) -> int:
    """Dynamic shared memory a block's copy of a row takes (Schedule.shared_row): every
    per-row input's whole vectors of 16 bytes (a peeled row has no more than these); a
    cluster's block, its share: the cluster's threads stride the row, a block's threads
    a stretch of `block` vectors of every `block * cluster` (codegen, shared_row_slot)."""
    if not s.shared_row:
        return 0
    vectors = p.row_length // s.vec
    if s.cluster > 1:
        vectors = -(-vectors // (s.block * s.cluster)) * s.block
    return len(p.layout.row_inputs) * vectors * 16


def shared_rows_fit_twice(p: Problem, s: Schedule) -> bool:
    """Whether two blocks' copies of a row (Schedule.shared_row) fit an SM's shared memory."""
    return 2 * (shared_row_bytes(p, s) + SHARED_ROW_RESERVE) <= SHARED_PER_SM.get(p.arch, SHARED_PER_SM_DEFAULT)


def shared_row_refusal(p: Problem, s: Schedule) -> str:
    """'' when a looped row can be copied into shared memory (Schedule.shared_row), else why not."""
    return shared_copy_refusal(p, s, shared_row_bytes(p, s))


# A logsumexp's rows (max and sum(exp) alone: one value a row), from this many rows an SM, by
# blocks of LSE_THREADS threads a row: streamed in one pass from STREAMED_LSE_ROW_BYTES of
# per-row inputs, f32 rows unrolled LSE_F32_UNROLL deep (16-bit ones LSE_FEW_ROWS_UNROLL below
# LSE_MANY_ROWS_PER_SM rows an SM); 16-bit rows copied into shared memory from
# SHARED_LSE_ROW_BYTES (logsumexp_rows)
LSE_ROWS_PER_SM = 2
LSE_MANY_ROWS_PER_SM = 4
LSE_THREADS = 256
LSE_F32_UNROLL = 8
LSE_FEW_ROWS_UNROLL = 4
STREAMED_LSE_ROW_BYTES = 96 << 10
SHARED_LSE_ROW_BYTES = 40 << 10


def logsumexp_rows(p: Problem, hints: Hints) -> Optional[Schedule]:
    """Long rows whose group reduces them to max and sum(exp(x - max)) and nothing else (a
    logsumexp: no result over the row), from LSE_ROWS_PER_SM rows an SM, a block of
    LSE_THREADS threads a row: from STREAMED_LSE_ROW_BYTES streamed once, both statistics in
    one pass (Schedule.online), f32 rows with LSE_F32_UNROLL vectors in flight (16-bit ones
    LSE_FEW_ROWS_UNROLL below LSE_MANY_ROWS_PER_SM rows an SM); 16-bit rows from
    SHARED_LSE_ROW_BYTES (at LSE_MANY_ROWS_PER_SM rows an SM) copied into shared memory and
    reduced twice there (Schedule.shared_row); peeled where the length breaks alignment.
    With the exps on ex2.approx (cuda.py's below_row_max) little but the row's bytes holds
    such a block back, and small blocks keep more loads in flight than rows held in the
    registers of 512 or 1024 threads (16-bit ones packed) or shared by a cluster's blocks.
    H200 2026-12-03 (scripts/probe_lse.py), us, the default before / this (the row sum of
    the same bytes): streamed: bf16 2048x50257 65.2 (copied by 512) / 59.9 (53.0),
    1024x128256 72.5 (512 threads) / 67.4 (62.6; unrolled 4, 71.5), 300x128256 33.3 (4 blocks
    of 512 a row) / 28.3 (at ptxas's depth 32.1, by 512 threads 26.9; 21.2); f16 4096x50257
    119.7 / 107.3 (99.8); f32 4096x32000 126.9 (held by 1024) / 118.9 (at ptxas's depth
    125.2; 117.1), 300x32000 16.5 (by 512) / 14.4 (13.9), 512x128256 67.6 / 65.1 (62.9),
    2048x50257 104.6 / 102.5 (95.9). Copied: bf16 4096x24000 55.9 (held by 512) / 50.5
    (46.7), 4096x32000 67.9 / 65.7 (61.9), f16 4096x32000 66.0 / 64.3. Not f32 rows
    (4096x16384 held by 512: 63.9, copied 64.3 and 65.1), nor rows under 40 KB (bf16
    4096x16384 held by 256: 35.2, copied 36.0)."""
    if (hints.threads or hints.warps or hints.stages or hints.cluster or hints.vector or not p.row_major()
            or online_pair_alone(p.group) is None or full_outputs(p) or p.rows < LSE_ROWS_PER_SM * p.sm_count):
        return None
    vec, peel = looped_row_vector(p)
    nbytes = p.row_length * element_bytes(p.layout.row_inputs)
    many = p.rows >= LSE_MANY_ROWS_PER_SM * p.sm_count
    narrow = all(op.dtype.itemsize == 2 for op in p.layout.row_inputs)
    if nbytes >= STREAMED_LSE_ROW_BYTES:
        wide = all(op.dtype.itemsize == 4 for op in p.layout.row_inputs)
        # (LSE_F32_UNROLL's 32 words of loads in flight shared by the row inputs: the logsumexp of f32
        # x + r, 8 deep, spilled 16 bytes on sm_90a and 24 on sm_80; 2026-12-05)
        unroll = LSE_F32_UNROLL // len(p.layout.row_inputs) if wide else 0 if many else LSE_FEW_ROWS_UNROLL
        return Schedule("reduce_row", block=LSE_THREADS, vec=vec, items=0, row_threads=LSE_THREADS, online=True,
                        peel=peel, unroll=unroll, index64=p.index64)
    copied = Schedule("reduce_row", block=LSE_THREADS, vec=vec, items=0, row_threads=LSE_THREADS,
                      shared_row=True, online=False, peel=peel, index64=p.index64)
    if (nbytes < SHARED_LSE_ROW_BYTES or not many or not narrow or vec == 1 or shared_row_refusal(p, copied)
            or not shared_rows_fit_twice(p, copied)):
        return None
    return copied


def shared_row_schedule(p: Problem, hints: Hints, clusters: bool = True) -> Optional[Schedule]:
    """Many rows too long for an SM's registers to hold two of them, copied into shared
    memory by blocks of 512 threads (Schedule.shared_row), two blocks an SM: where the
    per-row inputs take more than SHARED_ROW_HELD_BYTES and two such rows fit the SM's
    shared memory (sm_90: rows up to 112 KB; sm_80, not measured: 80 KB); max and
    sum(exp) in two passes over it. Held in registers, such a row takes a block of 1024
    threads, one an SM, whose load, reductions and stores follow one another.
    H200 2026-12-02 (scripts/probe_long_rows.py, 2048 rows, us, held / copied): softmax f16
    36000 104.2 / 79.7, 40000 109.9 / 87.9, 45000 119.6 / 100.4, 50257 139.1 / 119.0, bf16
    50257 143.7 / 117.7; f32 18000 87.4 / 78.1, 20000 93.0 / 85.4, 25000 112.2 / 107.7,
    28000 121.1 / 119.6; layernorm bf16 (f32 weight and bias) 40000 125.5 / 110.1; rmsnorm
    f16 50000 118.0 / 112.0; logsumexp f16 50257 92.2 / 80.1. At 64 KB, held by 512
    threads, level: softmax f16 32000 71.4 / 70.9. One pass for max and sum(exp) over the
    copy lost to two everywhere (f16 50257: 135.3), as did 1024 threads (159.2); 256 were
    within 3% of 512. Hand-written first, 4096 rows: f16 50257 263.8 / 213.8 (0.73x ->
    0.91x copy; torch.softmax 349.5, Triton 663.5).
    Rows longer than that are copied by one block of 1024 threads where one copy fits (sm_90:
    shared_row_alone); longer still (a language model's vocabulary), by the 8 blocks of a cluster
    of 256 threads each (sm_90a, `clusters`), where their shares fit two blocks an SM, from 2 rows
    an SM: see shared_cluster_schedule."""
    if (hints.threads or hints.warps or hints.stages or hints.cluster or hints.vector or not p.row_major()
            or p.rows < 2 * p.sm_count):
        return None
    vec, peel = looped_row_vector(p, held_peel_weights_fit)
    if vec == 1:
        return None
    s = Schedule("reduce_row", block=SHARED_ROW_THREADS, vec=vec, items=0, row_threads=SHARED_ROW_THREADS,
                 shared_row=True, online=not online_pairs(p.group), peel=peel, index64=p.index64)
    need = shared_row_bytes(p, s)
    if need <= SHARED_ROW_HELD_BYTES or (peel and peel_refusal(p, s)):
        return None
    if shared_rows_fit_twice(p, s):
        return None if shared_row_refusal(p, s) or p.rows < 4 * p.sm_count else shifted_where_heavier(p, s)
    alone = shared_row_alone(p, s, clusters)
    if alone is not None:
        return alone
    return (shared_cluster_schedule(p, s) or wide_rows_copied(p, s)) if clusters else None


# Rows in whole 16-byte vectors too long for two copies an SM's shared memory but not for one (sm_90:
# 112 to 225 KB of per-row inputs), whose weights take at most HELD_PEELED_WEIGHT_BYTES_PER_ROW_BYTE
# bytes an element for each of the row's: copied by one block of SHARED_ROW_ALONE_THREADS a row, one an SM
SHARED_ROW_ALONE_THREADS = 1024
SHARED_ROW_ALONE_ARCHS = ("sm_90", "sm_90a")      # (measured on H100 and H200 alone)


def shared_row_alone(p: Problem, copied: Schedule, clusters: bool = True) -> Optional[Schedule]:
    """A row that two copies an SM's shared memory do not fit (`copied`, a block of 512 a row,
    shared_row_schedule), in whole 16-byte vectors, its weights at most twice as heavy: copied
    there by one block of SHARED_ROW_ALONE_THREADS threads, one block an SM, where that copy fits
    (sm_90). Its loads all go out at once, by cp.async; held in registers instead, the row took the
    blocks of a cluster (cluster_row_schedule) or one block of 1024, whose loads, reductions and
    stores follow one another, and a softmax's was copied by 8 blocks of 256 (shared_cluster_schedule).
    H100 2026-12-06 06:02 (scripts/probe_copied_rows.py; copy 3020 GB/s), us, the default before /
    this: the layernorm of x + r (f16, f32 w and b) 1001x32768 122.1 / 102.4 (4 blocks of 512 before),
    1001x40960 147.3 / 125.0, 4096x40960 579.2 / 460.5 (0.77x -> 0.97x copy), 2048x49152 337.2 /
    288.1, 300x40960 50.7 / 49.3; rmsnorm f16 1024x100000 175.4 / 149.6, bf16 2048x65536 189.2 /
    185.6 (1024 threads holding it before); layernorm f32 2048x32768 237.1 / 202.3 (held by 1024),
    rmsnorm f32 1024x40000 126.5 / 117.3; softmax f32 1024x40000 126.0 / 118.9 (8 blocks of 256),
    bf16 1024x100000 149.0 / 149.8, f16 2048x60000 173.5 / 173.8 (held by 1024); at 06:13, rows 1024
    threads held, level: softmax f32 2048x32768 186.5 / 187.4, f16 2048x65536 188.3 / 189.1, rmsnorm f32
    2048x32768 184.8 / 185.1. 512 threads were level or behind (rmsnorm f16 1024x100000 176.5); the
    blocks of a cluster copying it, each its share, behind but for 4 of 256 at a few shapes (softmax
    f32 1024x40000 118.7). H200 2026-12-06 (scripts/probe_heavy_weights.py): the layernorm of x + r
    1001x40960 125.9 / 109.8. Not taken: rows beside weights four times as heavy (layernorm bf16 with
    f32 w and b: 1024x65536 122.6 / 117.3, 1024x100000 193.1 / 202.8).
    Peeled rows (`copied.peel`) are copied by the COPIED_CLUSTER blocks of 256 threads of a cluster
    instead, each its share (sm_90a, `clusters`; cluster_copy), unless one block of 1024 holds the row in
    registers. H200 2026-12-06 07:58 (scripts/probe_copied_rows.py, copy 4252 GB/s), us, the default
    before / one block of 1024 copying / 4 blocks of 256 copying: rmsnorm f16 1024x100001 163.8 (4 blocks
    of 512 holding it) / 155.2 / 138.6; softmax f32 1024x40001 127.9 (8 blocks of 256 copying) / 105.5 /
    102.6; the layernorm of x + r 1001x40003 129.2 (4 of 256 already: copied_cluster_share) / 136.1 /
    129.2, 4096x40003 489.9 / 489.6 / 489.9. Held by one block of 1024: softmax f16 2048x60001 148.9
    (one block copying 173.8, 4 blocks 159.0). H100 08:16 (copy 3021 GB/s), likewise: rmsnorm f16
    1024x100001 197.4 / 180.1 / 167.3; softmax f32 1024x40001 148.1 / 121.5 / 126.0."""
    if p.arch not in SHARED_ROW_ALONE_ARCHS or not weights_at_most_twice_row(p):
        return None
    alone = replace(copied, block=SHARED_ROW_ALONE_THREADS, row_threads=SHARED_ROW_ALONE_THREADS)
    if shared_row_refusal(p, alone):
        return None
    if not copied.peel:
        return alone
    if not clusters or held_row_share(p, copied.vec, 1024, peel=True) is not None:
        return None
    return cluster_copy(p, copied.vec)


# Rows of several per-row inputs (the layernorm of x + r) over one block's shared memory (sm_90a:
# 225 KB), in whole 16-byte vectors, from 2 rows an SM: copied by the SHARED_ROW_CLUSTER blocks of a
# cluster, each its share, of WIDE_COPY_THREADS threads where two shares fit an SM, else of
# WIDE_COPY_ALONE_THREADS (one block an SM): wide_rows_copied
WIDE_COPY_THREADS = 256
WIDE_COPY_ALONE_THREADS = 1024
WIDE_COPY_ELEMENT_BYTES = 8     # ... at most this many bytes an element over the row inputs (ptxas sm_90a
#                                 2026-12-06: three f32 inputs, the layernorm of x + r + q, spilled 8 bytes)
WIDE_COPY_HELD_ITEMS = 2        # ... where a cluster's blocks would hold at most this many vectors a thread


def wide_rows_copied(p: Problem, copied: Schedule) -> Optional[Schedule]:
    """A row of several per-row inputs (at most WIDE_COPY_ELEMENT_BYTES an element together), in whole
    16-byte vectors, its weights at most twice as heavy, of which the blocks of a cluster would hold at
    most WIDE_COPY_HELD_ITEMS vectors a thread (or none), too long for one block's shared memory
    (`copied`, a block of 512 a row: shared_row_schedule): copied there by the SHARED_ROW_CLUSTER
    blocks of a cluster, each its share (sm_90a), of 256 threads, or of 1024 where two shares do not
    fit an SM. Held in registers, the blocks of a cluster
    (cluster_row_schedule) hold a share of 16 elements a thread beside x and r, or (1 MB rows) no
    share fits and the row streams, read three times. H200 2026-12-06 07:58
    (scripts/probe_copied_rows.py, copy 4252 GB/s), the layernorm of x + r (f16, f32 w and b), us,
    the default before / this: 512x65536 118.7 (8 blocks of 512 holding it) / 93.6 (4 blocks of 256
    copying 101.5), 1001x65536 224.4 / 179.4 (4 of 256 179.3), 264x131072 143.0 (8 of 1024) / 103.4
    (8 of 512 107.6), 300x262144 402.5 (streamed) / 303.8 (8 of 256, 128 KB each: 354.5). Not taken:
    rows of one input, which their cluster's blocks hold well: rmsnorm bf16 1024x131072 175.5 held
    by 4 of 512, copied by 4 and 8 of 256 180.0 and 194.8; layernorm bf16 (f32 w and b) 1024x131072
    202.9 / 203.7, 207.0. H100 2026-12-06 08:16-08:25 (copy 3020 GB/s), likewise: the layernorm of x + r
    300x262144 512.6 / 373.6 (8 of 256: 433.8), 512x65536 136.1 / 111.0, 1001x65536 254.7 / 209.6,
    264x131072 160.9 / 120.1; of x + r + q 512x65536 134.2 / 109.3. One block an SM (1 MB rows, 128 KB
    a block), the more threads the faster: H100 08:30, 300x262144, 8 blocks of 256 / 512 / 1024 434.1 /
    369.9 / 323.2 (0.65x copy; H200 07:58, 256 / 512: 354.5 / 303.8). Not taken where the cluster's
    blocks hold 4 vectors a thread: rmsnorm of x + r (f16) 512x65536 106.9 (4 of 512) / 107.3, 300x262144
    264.2 (8 of 1024) / 326.0."""
    if (p.arch != "sm_90a" or copied.peel or len(p.layout.row_inputs) < 2 or not cluster_values_fit(p)
            or element_bytes(p.layout.row_inputs) > WIDE_COPY_ELEMENT_BYTES or not weights_at_most_twice_row(p)):
        return None
    held = cluster_row_schedule(p, copied.vec)
    if held is not None and held.items > WIDE_COPY_HELD_ITEMS:
        return None
    s = replace(copied, block=WIDE_COPY_THREADS, row_threads=WIDE_COPY_THREADS, cluster=SHARED_ROW_CLUSTER)
    if not shared_rows_fit_twice(p, s):
        s = replace(s, block=WIDE_COPY_ALONE_THREADS, row_threads=WIDE_COPY_ALONE_THREADS)
    return None if shared_row_refusal(p, s) else s


def shared_cluster_schedule(p: Problem, alone: Schedule) -> Optional[Schedule]:
    """Rows too long for two copies in an SM's shared memory (`alone`, a block a row, would
    not fit twice), copied there by the SHARED_ROW_CLUSTER blocks of a cluster of
    SHARED_ROW_CLUSTER_THREADS threads each (sm_90a), where those shares fit two blocks an
    SM. Held in registers, such rows took the blocks of a cluster too (cluster_row_schedule),
    two blocks of 512 an SM. H200 2026-12-02 (scripts/probe_vocab.py), us, held / copied by
    8 blocks of 256: softmax bf16 1024x128256 167.2 / 143.4 (0.74x -> 0.87x copy; torch
    292.5), f32 512x128256 162.1 / 152.7, bf16 1024x151936 231.4 / 169.8 (0.64x -> 0.87x),
    bf16 512x256000 173.9 / 154.7; log-softmax bf16 1024x128256 171.6 / 151.8; softmax
    bf16 300x128256 54.9 / 48.8, f32 1024x65536 155.9 / 148.1. 4 blocks of 256 were level at
    128256 (153.4) and behind at 151936 (211.9); 512 threads level or behind, 1024 at half
    the speed. Taken for max and sum(exp) with results over the row (softmax, log-softmax)
    where no block of 1024 holds the row: the norms lost (rmsnorm bf16 1024x131072 177.8 /
    196.0, layernorm bf16 with f32 weight and bias 1024x100000 170.9 / 176.4), and so did
    softmax f16 2048x60000, which 1024 threads hold (138.5 / 163.7); logsumexp streams
    (cluster_row_schedule)."""
    if (p.arch != "sm_90a" or not cluster_values_fit(p)
            or not (online_pairs(p.group) and full_outputs(p))
            or held_row_share(p, alone.vec, 1024, peel=alone.peel) is not None):
        return None
    s = replace(alone, block=SHARED_ROW_CLUSTER_THREADS, row_threads=SHARED_ROW_CLUSTER_THREADS,
                cluster=SHARED_ROW_CLUSTER)
    return None if shared_row_refusal(p, s) or not shared_rows_fit_twice(p, s) else s


def shared_row_clusters(p: Problem, looped: Schedule, one_an_sm: bool = False) -> list[Schedule]:
    """A looped row (a block a row, in 16-byte vectors) too long for two copies in an SM's
    shared memory, copied there by the blocks of a cluster instead, each its share
    (Schedule.shared_row, cluster 2, 4 or 8; sm_90a): those whose shares fit two blocks an SM
    or more; with `one_an_sm`, those whose shares fit one block an SM alone (as wide_rows_copied's
    1 MB rows). Max and sum(exp) in two passes, as every row a cluster streams."""
    alone = replace(looped, shared_row=True)
    if p.arch != "sm_90a" or shared_rows_fit_twice(p, alone):
        return []
    shares = [replace(alone, cluster=c, online=not online_pairs(p.group)) for c in ROW_CLUSTERS]
    return [s for s in shares if shared_rows_fit_twice(p, s) != one_an_sm and not shared_row_refusal(p, s)]


ELEMENT_STREAM_ROWS_PER_SM = 32     # rows an SM from which a row read one by one takes 256 threads ...
ELEMENT_STREAM_TRIPS = 33           # ... where each thread then walks it at most this many times
ELEMENT_STREAM_WIDE_UNROLL = 4      # the unroll of those loops at 512 threads or more


def element_stream(p: Problem, threads: int, hints: Hints) -> Schedule:
    """A row read one element at a time and looped (vec 1, not peeled: its weights outweigh
    it or a vector is pinned), at `threads` (row_threads: 512 from 4096 elements). A loop
    unrolled U deep whose thread walks the row fewer than U times runs none of its unrolled
    body: ptxas's remainder loads an element, waits for it, adds it, then loads the next
    (SASS, sm_90a), so a thread has one load in flight. The unroll is at most half a thread's
    trips. Where its weights outweigh it (weights_outweigh_row): at 512 threads or more
    ELEMENT_STREAM_WIDE_UNROLL, and with many rows 256 threads where each walks the row at
    most ELEMENT_STREAM_TRIPS times. H200 2026-12-05
    (scripts/probe_heavy_weights.py), us, 512 threads unrolled 16 (the old default) / 512
    unrolled 4 / 256 unrolled 16, 8, 4: layernorm f16 with f32 w and b 16384x4097 (8 trips at
    512) 344.4 / 136.8 / 116.1, 115.7, 110.9; 8192x8193 135.5 / 119.3 / 107.4, 109.4, 114.0;
    4096x20001 195.5 / 163.4 / 197.6, 176.2 (256 unrolled 8); all-f16 layernorm 8192x8193 134.6 /
    - / 107.1; rmsnorm f16 with an f32 w 4096x20001 158.4 / 136.3; the layernorm of x + r
    4096x8193 (31 rows an SM) 114.8 / 109.2 / 109.2 (256 at its rule, 8 deep). (Since 2026-12-06 rows
    of 8192 or more whose weights take at most twice their bytes are held peeled: held_peel_weights_fit.)"""
    heavy = weights_outweigh_row(p)     # (measured only there; else the rule, capped by the trips)
    if heavy and not hints.threads and p.rows >= ELEMENT_STREAM_ROWS_PER_SM * p.sm_count \
            and p.row_length <= ELEMENT_STREAM_TRIPS * 256:
        threads = min(threads, 256)
    s = Schedule("reduce_row", block=threads, vec=1, items=0, row_threads=threads, index64=p.index64,
                 online=online_pays(p, threads))
    rule = stream_unroll_rule(s, *stream_words(s, p.layout))
    most = pow2_at_most(max(1, p.row_length // threads // 2))
    unroll = min(rule, most, ELEMENT_STREAM_WIDE_UNROLL if heavy and threads >= 512 else rule)
    return replace(s, unroll=unroll if unroll != rule else 0)


def guards_chunks(s: Schedule) -> bool:
    """Whether the tuner also times `s` walking guarded chunks (Schedule.guarded): a looped row read
    element by element, a warp or more of one block a row, whose loop has a remainder (not unrolled 1). Its
    last chunk's loads go out together, where ptxas's remainder loop after `#pragma unroll`
    loads, waits for and adds one element at a time (SASS, sm_90a: layernorm f16 with f32 w
    and b, 5000x6001 at 256 threads, 23 trips unrolled 8: 7 remainder loads in a row). Not yet
    timed on a GPU (2026-12-05)."""
    return (s.kind == "reduce_row" and s.items == 0 and s.vec == 1 and s.row_threads >= 32 and not s.shared_row
            and not s.guarded and s.unroll != 1 and s.cluster == 1)


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
    depth = stream_depth(p, vec)     # (4 deep, 80 to 112 words of loads spilled 8 to 40 bytes: registers.py)
    unroll = depth if narrow else 0
    return Schedule("reduce_row", block=threads, vec=vec, items=0, row_threads=threads, index64=p.index64,
                    online=online_pays(p, threads), unroll=unroll)


def long_row_schedule(p: Problem, vec: int, hints: Hints, clusters: bool = True) -> Optional[Schedule]:
    """A long row that a stream would read twice or more (streamed_reads), held in
    registers by the fewest threads of a block whose share fits (or `threads`; 16-bit
    values packed two a register), where it is (1) of PEELED_ROW elements or more
    (PEELED_ROW_16 of 16-bit values: narrow_rows), of a length that breaks alignment
    (`vec` 1; read in vectors only peeled: peel_vector), its weights no heavier than it (from
    8192 elements, twice as heavy: held_peel_weights_fit): held peeled (Schedule.peel with items)
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
            and held_peel_weights_fit(p))
    if peel:        # (below LONG_ROW from a warp: measured there; from 128 threads above it)
        vec = peel_vector(p)
        widths = (32, 64, 128, 256, 512, 1024) if p.row_length < LONG_ROW else (128, 256, 512, 1024)
    elif packed_rows(p, vec) and not p.has_row_invariant_inputs() and p.row_length >= LONG_ROW:
        widths = (128, 256, 512, 1024)
    else:
        return None
    for threads in (hints.threads,) if hints.threads else widths:
        held = held_row_share(p, vec, threads, peel=peel)
        if held and not peel and not hints.threads:
            held = halved_packed_share(p, held) or held
        if held:
            if peel:
                return shifted_where_heavier(p, held)
            return replace(held, keep=True) if packed_keeps_pay(p, held) else held
    if not peel or not clusters or hints.threads or hints.cluster == 1:
        return None
    return copied_cluster_share(p, vec) or shifted_where_heavier(p, cluster_row_schedule(p, vec, peel=True))


# A peeled row whose weights outweigh it, too long for a block to hold (and not copied by one block a
# row: shared_row_schedule), from as many rows as SMs: copied into shared memory by the COPIED_CLUSTER
# blocks of COPIED_CLUSTER_THREADS threads of a cluster, each its share (copied_cluster_share)
COPIED_CLUSTER = 4
COPIED_CLUSTER_THREADS = 256


def copied_cluster_share(p: Problem, vec: int) -> Optional[Schedule]:
    """Peeled row (vectors of `vec`) whose weights outweigh it (weights_outweigh_row), too long for a
    block's registers (long_row_schedule; rows that two copies an SM fit are copied by a block a row
    from 4 rows an SM: shared_row_schedule), with at least as many rows as SMs (sm_90a): copied into
    shared memory by a cluster's blocks (Schedule.shared_row, through shared_row_clusters;
    COPIED_CLUSTER blocks of COPIED_CLUSTER_THREADS), its weights shifted where that fits
    (shifted_where_heavier). Held by a cluster's blocks instead (cluster_row_schedule), its shifted
    weights crowd the share out of 44 registers and it gathers them. H200 2026-12-06 04:17
    (scripts/probe_heavy_weights.py), the layernorm of x + r with f32 w and b, us, held by 4 blocks of
    512 / this: 1001x40003 192.6 / 129.7 (two blocks of 512 copying it 135.3, one of 1024 136.0),
    4096x40003 752.7 / 490.9, 300x40003 66.4 / 48.5 (8 blocks 56.4)."""
    return cluster_copy(p, vec) if weights_outweigh_row(p) else None


def cluster_copy(p: Problem, vec: int) -> Optional[Schedule]:
    """A peeled row (vectors of `vec`) copied into shared memory by the COPIED_CLUSTER blocks of
    COPIED_CLUSTER_THREADS threads of a cluster, each its share, its weights shifted where that fits
    (copied_cluster_share, shared_row_alone): from as many rows as SMs, where the shares fit two
    blocks an SM (sm_90a)."""
    if not cluster_values_fit(p) or p.rows < p.sm_count:
        return None
    looped = Schedule("reduce_row", block=COPIED_CLUSTER_THREADS, vec=vec, items=0,
                      row_threads=COPIED_CLUSTER_THREADS, peel=True, index64=p.index64)
    copies = [s for s in shared_row_clusters(p, looped) if s.cluster == COPIED_CLUSTER and not peel_refusal(p, s)]
    return shifted_where_heavier(p, copies[0] if copies else None)


def halved_packed_share(p: Problem, held: Schedule) -> Optional[Schedule]:
    """A long packed 16-bit row (long_row_schedule's case 2) that its fewest threads would
    hold at MAX_PACKED_ROW_ELEMENTS a thread, with costly element values, held by twice the
    threads (at most 512) instead, on GPUs with much HBM bandwidth per SM: half the share
    leaves room to keep exp's values at 256 threads (not at 512: slower kept). H200
    2026-11-29 09:20 (scripts/probe_defaults.py, two A/B pairs, µs, the fewest threads /
    twice): softmax f16 4096x8192 37.8 / 36.5 (256 kept), 8192x8192 70.4 / 69.0, bf16
    4096x8192 38.8 / 37.2, 8192x8192 70.5 / 69.9; f16 4096x16384 70.7 / 69.7 (512; kept 72.8,
    scripts/probe_gaps.py), bf16 74.9 / 75.4. Not taken at 40 and 48 elements a thread
    (8192x5120 44.6 at 128 threads, 49.8 at 256 kept; 8192x6144 53.2 / 55.3) nor for 1024
    threads (2048x32768 74.0 at 512, 91.0 at 1024 kept)."""
    if (held.items * held.vec != MAX_PACKED_ROW_ELEMENTS or held.block * 2 > 512 or not costly_elements(p.group)
            or not much_bandwidth_per_sm(p)):
        return None
    twice = held_row_share(p, held.vec, held.block * 2)
    return twice if twice is not None and (twice.block == 512 or packed_keeps_pay(p, twice)) else None


def packed_keeps_pay(p: Problem, held: Schedule) -> bool:
    """Whether a long 16-bit row held packed (long_row_schedule's case 2) keeps its costly
    element values between phases: where keeps_fit allows it, on GPUs with at least
    LATE_LOADS_GBPS_PER_SM of HBM bandwidth per SM, where the exp computed twice holds the
    row back, below 512 threads (halved_packed_share), or at 512 for bf16 rows: their results
    narrow through F2F.BF16.F32 (f16's through paired F2FP packs), which shares the slow pipe
    with exp's MUFU.EX2 (ptxas sm_90a, 4096x16384 at 512 threads: 32 F2F and 64 EX2 a thread
    recomputed, 32 and 32 kept; 64 registers, two blocks an SM, none spilled).
    H200 2026-11-29 (scripts/probe_gaps.py, µs, recomputed / kept): softmax f16 16384x4096
    76.4 / 68.9 at 128 threads (32 elements a thread), 4096x16384 69.5 / 72.8 at 512;
    softmax bf16 at 512 (18:08, three rounds; Triton beside): 540x16384 15.8 / 14.6 (20.0),
    620x16384 16.5 / 14.9 (25.6), 1024x16384 23.9 / 23.2 (29.6), 2048x16384 41.5 / 40.3
    (40.3), 4096x16384 75.4 / 74.4 (74.4); not measured on an H100."""
    return (costly_elements(p.group) and keeps_fit(p, held.items, held.vec) and much_bandwidth_per_sm(p)
            and (held.block < 512 or held.block == 512 and rows_are(p, lambda t: t.name == "bf16")))


def full_outputs(p: Problem) -> bool:
    """Whether a result runs over the whole row (softmax's), not one value a row (a sum's)."""
    return any(set(op.loops) & set(p.layout.reduced_loops) for op in p.layout.outputs)


def streamed_reads(p: Problem) -> int:
    """Times a looped row (a block a row, streaming it) reads its row: once a reduction
    level, max and sum(exp(x - max)) in one pass where the default takes one
    (online_pays), and once more for results over the whole row."""
    levels = len(set(reduction_levels(p.group).values()))
    merged = len(online_pairs(p.group)) if online_pays(p, 1024) else 0
    return levels - merged + full_outputs(p)


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
    (late alone where the row is peeled, or where costly math depends on them alone:
    invariant_costly_math): the schedule where its share fits, else None."""
    share = row_share(p.row_length // vec, threads * blocks)
    if peel and not peeled_index_math_fits(p, share, vec):
        return None
    for hoist in hoist_choices(p, peel):
        if row_share_fits(p, share, vec, hoisted=hoist, packed=True) and cluster_share_fits(p, share, vec, threads,
                                                                                            blocks, hoist):
            return Schedule("reduce_row", block=threads, vec=vec, items=share, row_threads=threads, hoist=hoist,
                            cluster=blocks, peel=peel, index64=p.index64)
    return None


def cluster_values_fit(p: Problem) -> bool:
    """Whether every reduction's value is 4 or 8 bytes in registers (a block posts it to
    the others by st.async, tdsl::cluster_reduce)."""
    return all(v.dtype.is_float or v.dtype.itemsize in (4, 8) for v in p.group.values if v.op == "reduce")


def streamed_clusters(p: Problem, block: int, vec: int) -> list[int]:
    """Cluster sizes for a looped row streamed by a cluster's blocks together (items 0,
    cluster > 1): with fewer rows than SMs, a block a row leaves SMs idle (batch-norm
    statistics over (B, H, W) of 64 channels, 401,408 f32 each: 0.55x a copy of the same
    bytes, H100 2026-11-27, scripts/probe_nchw.py). Each thread streams at least 4 vectors
    of the row (candidates() keeps those fits() allows: sm_90a, values a cluster posts).
    The max and sum(exp) of a softmax go in two passes there (the one-pass merge
    is a block's own: its rows came out wrong). Tuner candidates, not a default: at 64 to
    120 rows (H100 2026-11-27 23:16, scripts/probe_streamed_clusters.py, µs, a block a row /
    8 blocks) batch-norm apply f32 32x64x112x112 gained (151.8 / 122.2) and its statistics
    hardly (73.9 / 72.1), but layernorm f16 120x1048576 (384.7 / 395.2), two-pass, lost."""
    if p.rows >= p.sm_count:
        return []
    return [c for c in ROW_CLUSTERS if p.row_length // vec >= 4 * c * block]


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
    if online_pairs(p.group) and not full_outputs(p) and p.rows >= 4 * p.sm_count:
        # max and sum(exp) alone (logsumexp): held, a row's blocks load it and then wait on
        # two exchanges; streamed, many rows' loads are in flight. H200 2026-12-02
        # (scripts/probe_vocab.py), bf16 1024x128256, us: 4 blocks of 512 holding it 119.6;
        # streamed by 512 threads in one pass 87.1 (256: 83.0)
        return None
    shares = cluster_row_shares(p, vec, peel)
    return resident_clusters(p, shares[0]) if shares else None


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
