"""The rules for reductions across memory (columns) and split reductions: column vectors
and tiles, chunks of the reduced rows that a second kernel combines, and the register
budget of a column's accumulators; each rule with the measurements it was fitted to."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from .layout import column_loop
from .partition import online_pair_alone, per_row_before_reductions, reduction_levels
from .schedules import THREADS_PER_SM, Schedule, combine_lanes, resident_blocks
from .problem import Problem, pow2_at_least
from .registers import row_share_fits
from .rows import looped_row_vector, much_bandwidth_per_sm


def split_schedule(p: Problem, column_vec: int = 1, blocks_per_sm: int = 2,
                   min_length: int = 4096) -> Optional[Schedule]:
    """A split reduction where too few rows would leave the GPU idle: one long row
    gets whole blocks; rows along the inner memory dim (columns: `sum(x, axis=M)`)
    a tile of a block, up to 256 columns wide, each column's share of the block's
    256 threads taking every row_threads-th element (a warp reads whole lines: 4
    rows of a column sum over x[M, 8], where a block of 32 threads, a thread a
    column, left 24 idle and read 32 bytes an access: 486.4 -> 64.0 us at [2^22, 8]
    on an H100, 2026-11-25; [2^20, 33] 148.7 -> 78.1); the splits bring the grid to
    about 2 blocks per SM, at most 512 threads, counting only threads that have a column. Measured 2026-11-22 (`tiledsl autotune`, 10 shapes: column
    sums, x @ W, sums and dot products): the old 4 blocks per SM took 4-32% longer
    on 9 of them on an H100 and on 8 on an H200 (sum(x) 4096x4096: 45.5 against
    33.1 us, and 38.8 against 25.9 on the H200); 4 per SM won one shape by 4%
    on the H200 (column sums 65536x4096), and lost it by 2.5% on the H100. With
    `column_vec`, a thread takes that many neighbouring columns (a thread a column
    only), and the splits fill the GPU with the fewer threads. `blocks_per_sm` (of 256
    threads) and `min_length` (the shortest row split): online_pair_split's."""
    if not p.splittable() or p.row_length < min_length:
        return None
    vec, peel = 1, False
    if p.row_major() or p.rows == 1:
        if column_vec > 1:
            return None
        block, tpr = 512, 512
        row_blocks = p.rows
        busy = row_blocks * block
        # as a looped row: a length that breaks the vectors (sum(x) of f32 [2^26 + 1]) peeled to
        # aligned vectors, the few elements before and after them read one at a time by the first split
        vec, peel = looped_row_vector(p) if p.row_major() else (1, False)
    else:   # across memory: a tile of columns (rows, to tiledsl), a column's threads a row apart
        block, vec = 256, column_vec
        columns = min(block, pow2_at_least(p.rows // vec))
        if vec > 1:     # vectors take a thread a column: a block as wide as the vectors, 32 to 256
            if columns < 32:
                return None
            block = columns
        tpr = block // columns
        row_blocks = -(-(p.rows // vec) // columns)
        busy = (p.rows // vec) * tpr        # the threads that have a column (of row_blocks * block)
    if row_blocks >= 2 * p.sm_count:
        return None
    per_sm = max(1, min(blocks_per_sm, blocks_per_sm * 256 // block))
    # threads a column has are what keep loads in flight: where the tiles hang past the last
    # column (33 columns in a tile 64 wide: 132 of 256 threads idle), the splits make up
    # for them (H200 2026-12-02, column sums f32 [2^20, 33]: 264 splits 55.5 us, 528 45.8)
    splits = min(-(-per_sm * p.sm_count * block // busy), max_splits(p, tpr, vec))
    if splits < 2:
        return None
    s = Schedule("reduce_split", block=block, vec=vec, items=0, row_threads=tpr, splits=splits,
                 peel=peel, index64=p.index64)
    return replace(s, last_block=finished_by_last_block(p, s))


def splits_filling_room(p: Problem, s: Schedule, resident: Optional[int]) -> Schedule:
    """A split along rows (split_schedule's one block of 512 an SM) cut, once compiled, into
    as many splits as fill every SM's room (`resident` blocks an SM, the driver's count),
    at most max_splits: a grid that fills it lands evenly when launched to overlap the
    kernel before (runtime/dependent.spreads_when_overlapping), one between the SM count
    and that room does not, and is launched the usual way. H200 2026-12-04
    (scripts/probe_split_grid.py, one call / 2000 calls in a row, us): max f16 [2^26]
    (3 blocks an SM) 132 splits 38.9 / 36.3, 396 37.6 / 35.1; sum of bf16 [2^26] (2) 38.7 /
    36.0, 264 36.8 / 34.2; sum f32 [2^26] (2) 66.9 / 64.2, 264 67.4 / 64.3; max f16 [2^24]
    9.6 and 9.0 in a row. Other splits (a tile of columns, row_threads < block: their tiles'
    own rule) are left as they are."""
    if s.kind != "reduce_split" or resident is None or s.row_threads != s.block:
        return s
    splits = min(resident * p.sm_count // max(1, p.rows), max_splits(p, s.row_threads, s.vec))
    if splits < 2 or splits == s.splits:
        return s
    filled = replace(s, splits=splits)
    return replace(filled, last_block=finished_by_last_block(p, filled))


def finished_by_last_block(p: Problem, s: Schedule) -> bool:
    """Whether split reduction `s` is one kernel whose last block combines the partials
    (Schedule.last_block): where that block takes every row in one pass of its threads
    (`combine_lanes` a row), a second kernel's launch costs more than the work it would
    share out. H200 2026-12-03 (scripts/probe_full_reduce.py, hand-written max of 128 MiB,
    the best grids): two kernels 36.8 us, one 35.3."""
    return p.rows * combine_lanes(s) <= s.block


def online_pair_split(p: Problem) -> Optional[Schedule]:
    """The default for softmax's max and sum(exp(x - max)) across memory, one online pass
    (partition.online_partner): a split reduction whose threads take 4 neighbouring
    columns (16 bytes of f32) down a chunk of at least 64 rows, with twice a sum's splits
    (about 4 blocks of 256 an SM: each chunk's exps wait for its loads, so more threads
    keep loads in flight), from columns of 1024; else a split a column a thread, or a
    tile of columns where they are few; None where neither splits (many short columns: a
    thread a column). H200 2026-12-01 (scripts/probe_column_pairs.py, us, the sum's
    split rule / this one): softmax f32 4096x4096 73.2 / 63.6, 16384x1024 74.1 / 66.2,
    2^21x8 81.8 / 74.6, f16 4096x4096 56.7 / 50.2; logsumexp f32 over T of
    16x4096x256 37.9 / 27.4 (the three groups these programs took before: 98.5, 100.1,
    100.4, 61.0 and 61.4)."""
    if p.row_major() or not online_pair_alone(p.group):
        return None
    if 4 in column_vectors(p):
        wide = split_schedule(p, 4, blocks_per_sm=4, min_length=1024)
        if wide is not None:
            return wide
    return split_schedule(p, 1, blocks_per_sm=4, min_length=1024)


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
    if full and (vec < 8 or not tiles_fit_full_occupancy(p)):
        return None
    columns = min(columns, pow2_at_least(p.rows // vec))
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


def tiles_fit_full_occupancy(p: Problem) -> bool:
    """Whether tiles of 8 16-bit columns a thread fit registers for 2048 threads (32 a thread):
    only where one f32 accumulator a lane is all a thread keeps beside its index. More
    reductions, a column's own values, a middle axis's index or an input over the rows alone
    (x @ w's x) spilled 8-24 bytes at 32 (sm_90a; the last two found by the GPU's spill
    warning, 2026-11-27; the tuner's candidates of a middle axis, f16 2x5001x136, 16-32 bytes
    by the GPU tests' warnings, 2026-12-02), and so did two inputs down the columns (the column
    sum of x * r, f16 16384x8192, 32 bytes on sm_90a and sm_80; a CPU survey, 2026-12-05): those
    get registers for 1024."""
    over_rows = [op for op in p.layout.inputs if set(op.loops) & set(p.layout.reduced_loops)]
    plain = len(p.layout.kept_loops) == 1 and len(streamed_column_inputs(p)) == len(over_rows) == 1
    return plain and 8 * accumulator_words(p) <= 8


def column_tile_default(p: Problem) -> Optional[Schedule]:
    """The default for 16-bit columns across memory: tiles of 16 vectors of columns (32
    where 16 leave too few chunks for two), blocks of 512 with registers for 2048 threads
    (1024 where the accumulators would not fit: several reductions), and about 2 blocks an
    SM, each walking a long chunk; None where they would not fill the SMs so, or where
    each thread would load under 32 vectors, 16 over many columns (bf16 4096x4096: 19.8 us
    in pairs of columns, 20.9-22.5 in tiles; the pairs of columns below). H100 2026-11-27
    (scripts/probe_col_tiles.py SWEEP=1, us, the old default / this rule's tile and chunks
    / the best chunks): mean f16 65536x768 48.8 / 41.7 (s32; 44.6 in a wave of 4 blocks an
    SM), bf16 65536x1024 59.0 / 51.1, sum f16 16384x4096 52.5 / 49.6, 8192x8192 51.6 /
    49.6, 1048576x128 125.0 / 104.3 (s256), 1048576x64 72.2 / 60.5-61.3, 1024x65536 55.5 /
    50.0; a hand-written kernel of 32 vectors a block 44.9, 55.1, 52.1, 51.3, 116.0, 89.7,
    51.4. The rule, timed after (same probe): 41.3, 51.4, 50.2, 49.9, 107.5, 62.8, 50.3.
    f32 columns keep the defaults (level, or slower in tiles). Tiles with registers for
    1024 threads take no more chunks than one wave of blocks: 8 chunks, not 9, of a batch
    norm's variance f16 16384x4096 took 50.1 us against 56.4 (H100 2026-11-27)."""
    if column_bytes(p) == 4:
        return f32_column_tile(p)
    if column_bytes(p) != 2 or 8 not in column_vectors(p):
        return None
    full = tiles_fit_full_occupancy(p)
    for columns in (16, 32):
        tile = column_tile_split(p, columns, 512, full=full)
        if tile is not None:
            break
    else:
        return None
    row_blocks = -(-(p.rows // 8) // (512 // tile.row_threads))
    splits = min(tile.splits, max(2, -(-2 * p.sm_count // row_blocks)))
    # many columns' other default reads 2 bytes a thread a row (columns_split), which chunks
    # of 16 loads a thread beat (H200 2026-12-02, sums over T of f16 64x1024x512: 27.5 us,
    # tiles of 16 vectors 32 deep in 2 chunks 23.1)
    loads = 16 if many_columns(p) else 32
    if row_blocks * splits < 2 * p.sm_count or p.row_length < loads * splits * tile.row_threads:
        return None     # too few blocks, or chunks too short
    # one wave: blocks past what the SMs hold at once wait for a second one, and their rows
    # take the wave's time again (bn variance f16 16384x4096 at registers for 1024 threads:
    # 9 chunks, 288 blocks of 264 places)
    resident = p.sm_count * resident_blocks(p.group, tile)
    if row_blocks * splits > resident and resident // row_blocks >= 2:
        splits = resident // row_blocks
    return replace(tile, splits=splits)


F32_TILE_LOADS = 16     # the fewest 16-byte loads a thread of an f32 column tile takes down its chunk


def f32_column_tile(p: Problem) -> Optional[Schedule]:
    """The default for f32 columns across memory on a GPU with much bandwidth per SM (an
    H200): tiles of 16 vectors of 4 columns (16 bytes a thread a row), 32 threads
    down each column's chunk, in whole waves of blocks (column_tile_split's splits); None
    where no such tile has 2 splits, where a thread would take under F32_TILE_LOADS loads,
    or on an H100's class of GPU, where tiles ran level or slower (H100 2026-11-27: sum f32
    16384x4096 92.9 against 93.4 us, 1048576x64 over 122 against 107.3). H200 2026-12-04
    (scripts/probe_f32_col_tiles.py, us, a thread a column / this tile): sum f32 16384x4096
    68.7 / 66.3 (Triton 66.6), 8192x8192 68.4 / 66.2, 65536x1024 69.8 / 66.5, 262144x256
    71.0 / 66.7, 1048576x128 133.1 / 124.8, 1048576x64 70.3 / 67.5, 4096x4096 22.8 / 21.5,
    16384x1000 23.5 / 24.2 (kept: under 16 loads a thread), mean 65536x768 54.8 / 51.9, sum of squares
    16384x4096 68.8 / 66.0; no tile at 2048x32768 and over a middle axis (64x1024x512),
    where tiles of 32 vectors were slower (67.0 / 66.4, 37.6 / 37.0). The chunks stay those
    of whole waves: the 16-bit rule's fewer, longer ones lost (16384x4096 68.6)."""
    if not much_bandwidth_per_sm(p) or 4 not in column_vectors(p):
        return None
    if not all(op.dtype.name == "f32" for op in streamed_column_inputs(p)):
        return None     # (4-byte integers: not measured)
    tile = column_tile_split(p, 16, 512)
    if tile is None or p.row_length < F32_TILE_LOADS * tile.splits * tile.row_threads:
        return None
    return tile


SHORT_COLUMN_ROWS_A_LANE = (64, 96)   # a lane's rows of a short column: online pair, other reductions


def short_columns(p: Problem) -> Optional[Schedule]:
    """Reductions over columns of 64 to 1023 rows (too short for a split) streamed a few
    columns a warp: 256 threads a block, t of them down each column, neighbouring lanes on
    neighbouring columns, so a warp's load covers whole 32-byte sectors (t at most 8 x the
    narrowest input's bytes: 8 columns of f32, 16 of f16). A lane takes about 64 rows of
    softmax's online max and sum(exp(x - max)), 96 of other reductions (a sum's add waits on
    less than an exp); t doubled while the columns' threads would not fill 2 blocks of 128 an
    SM. Before, a block walked down each column reading a sector an element (f32 at 1/8 of its
    bytes, 16-bit at 1/16), or the pair's many columns took a split's third kernel. None for
    small problems (under 2^19 elements: the block a column is as fast) and for other
    reductions over 16896 columns or more (columns_split, not measured against this).
    H200 2026-12-02 (scripts/probe_short_columns.py; GPU us a call from CUDA graphs, the
    default before / this rule): softmax f32 1000x3000 28.8 / 13.9 (t16), 512x8192 37.6 /
    16.5 (t8), 256x16384 39.2 / 16.1 (t4), 128x65536 33.3 (split) / 30.4 (t2), 1000x1000
    14.7 / 8.3 (t32); f16 768x4096 29.3 / 16.7 (t16); bf16 1000x8192 67.9 / 32.3 (t16),
    200x32768 24.0 (split) / 22.5 (t4); logsumexp over T f32 64x512x512 24.3 (split) / 22.1
    (t8), f16 32x256x1024 14.0 (split) / 13.1 (t4). Column sums f32 1000x3000 21.8 / 12.6
    (t16), 512x8192 29.0 / 7.0 (t8), 256x16384 31.0 / 6.2 (t4), 768x4096 23.9 / 7.2 (t8); f16
    the same shapes 18.5 / 11.7, 27.7 / 6.4, 26.2 / 5.0, 23.0 / 6.5; bf16 maxima 18.6 / 11.7,
    27.5 / 6.4, 26.3 / 5.1, 23.0 / 6.8; x - mean(x, axis=M) f32 25.8 / 20.7, 34.2 / 18.5,
    36.5 / 14.9, 28.3 / 18.3 (t4 best at the last three: 17.2, 14.9, 17.1)."""
    pair = online_pair_alone(p.group) is not None
    if (p.row_major() or not 64 <= p.row_length < 1024 or p.rows * p.row_length < 1 << 19
            or (not pair and many_columns(p))):
        return None
    walking = streamed_column_inputs(p)
    widest = 8 * min((op.dtype.itemsize for op in walking), default=4)     # a sector of columns a warp
    per_lane = SHORT_COLUMN_ROWS_A_LANE[0 if pair else 1]
    t = max(2, min(pow2_at_least(-(-p.row_length // per_lane)), widest))
    while p.rows * t < 2 * p.sm_count * 128 and 2 * t <= min(32, widest) and p.row_length >= 32 * t:
        t *= 2
    return Schedule("reduce_row", block=256, vec=1, items=0, row_threads=t, index64=p.index64)


def whole_column_results(p: Problem) -> bool:
    """Whether a reduction across memory writes results over whole columns (some result over
    a reduced dim: the columns partition's groups)."""
    return not p.row_major() and any(set(o.dims) & set(p.group.axes) for o in p.group.outputs)


# A column held in registers gives a thread at most this many of its elements (16 f32 of
# softmax's held column at 4 threads a column: 64 registers, no spills, sm_90a, 2026-12-07)
WHOLE_COLUMN_ITEMS = 16


def held_column(p: Problem, threads: int, block: int = 256) -> Optional[Schedule]:
    """A column held in registers by `threads` threads (neighbouring lanes on neighbouring
    columns), in blocks of `block`; None where a thread would take more than WHOLE_COLUMN_ITEMS
    of its elements."""
    items = -(-p.row_length // threads)
    if items > WHOLE_COLUMN_ITEMS:
        return None
    return Schedule("reduce_row", block=block, vec=1, items=items, row_threads=threads, keep=True,
                    index64=p.index64)


def held_columns(p: Problem, blocks: tuple = (128, 256)) -> list[Schedule]:
    """Every held column share whose elements fit a thread's registers (row_share_fits):
    1 to 32 threads a column, fewest first, in blocks of each of `blocks`."""
    return [s for t in (1, 2, 4, 8, 16, 32) for block in blocks
            if (s := held_column(p, t, block)) is not None and row_share_fits(p, s.items, 1)]


def whole_columns(p: Problem) -> Optional[Schedule]:
    """The default of a reduce group across memory that writes results over whole columns
    (partition(columns=True), which runs_columns picks for short columns): 256 threads, t of
    them down each column with neighbouring lanes on neighbouring columns (a warp's load
    covers whole sectors, as short_columns' does), each holding up to WHOLE_COLUMN_ITEMS of
    the column's elements in registers: x is read once and the results computed from the
    registers. t is the least power of two whose share fits, at most 32; a longer column, or
    one whose inputs do not fit, is walked twice by short_columns' threads, the second walk
    finding its elements in L1 or L2. None for any other group. Not yet timed on a GPU: the
    columns partition is off until it is (problem.COLUMNS_MAX_ROWS)."""
    if not whole_column_results(p):
        return None
    held = held_columns(p, (256,))
    if held:
        return held[0]
    looped = short_columns(p)
    if looped is not None:
        return looped
    return Schedule("reduce_row", block=256, vec=1, items=0, index64=p.index64,
                    row_threads=min(32, pow2_at_least(-(-p.row_length // SHORT_COLUMN_ROWS_A_LANE[0]))))


def many_columns(p: Problem) -> bool:
    """Whether a reduction across memory has 4 warps' worth of columns an SM or more: the
    default gives them a thread a column (columns_split cuts their rows into chunks where
    those threads would still leave the SMs short)."""
    return not p.row_major() and p.rows >= 4 * p.sm_count * 32


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
    if len(set(reduction_levels(p.group).values())) > 1 and not online_pair_alone(p.group):
        return "vectors of columns take one reduction level, or an online pair (max and sum(exp(a - max)))"
    if whole_column_results(p):
        return "vectors of columns write per-column results only, not results over whole columns"
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
    if loop is None or p.loops[loop] < 512 or column_bytes(p) != 2:
        return 1
    return 2 if 2 in column_vectors(p) else 1


def column_bytes(p: Problem) -> int:
    """The width in bytes of the values a reduction across memory reads along its columns
    (the kept loop innermost in memory) row after row, where they all share one (a column's
    own inputs, read once, do not count); 0 where they differ or there are none."""
    walking = streamed_column_inputs(p) if not p.row_major() else []
    widths = {op.dtype.itemsize for op in walking}
    return widths.pop() if len(widths) == 1 else 0


def streamed_column_inputs(p: Problem) -> list:
    """A reduction across memory's inputs read row after row along its columns (the kept
    loop innermost in memory): over a reduced loop and the columns' loop."""
    loop, reduced = column_loop(p.layout), set(p.layout.reduced_loops)
    return [op for op in p.layout.inputs if loop is not None and loop in op.loops and set(op.loops) & reduced]
