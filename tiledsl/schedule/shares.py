"""The row rules that size a thread's share of a row by the GPU's HBM bandwidth per SM
(rows.much_bandwidth_per_sm: an H200's class; rows.little_bandwidth_per_sm: an H100's): how
many threads share a 16-bit row and how many 16-byte vectors each holds, whether the weights
load late, whether a persistent grid pays. Each rule with the measurements it was fitted to;
choose.default applies them in turn."""
from __future__ import annotations

from .problem import Problem, pow2_at_most
from .registers import narrow_rows, row_share_fits
from .rows import (HALVED_SHARE_ROWS_PER_SM, ONE_WAVE_ROWS_PER_SM, element_bytes, little_bandwidth_per_sm,
                   much_bandwidth_per_sm, row_share, share_bytes)
from .schedules import THREADS_PER_SM, Schedule, resident_blocks


WIDE_SHARE_ROWS_PER_SM = 64     # rows an SM from which late_wide_share applies
WIDE_SHARE_ITEMS = 4            # ... at least this many 16-byte vectors a thread
WIDE_SHARE_THREADS = 128        # ... by at most this many threads


def late_wide_share(p: Problem, vec: int) -> int:
    """Threads a row takes where its 16-bit values in vectors of 8 carry weights heavier
    than the row (layernorm's, which the rule in default() would hoist and loop a
    persistent block over, or load late at 16 elements a thread), on GPUs with much HBM
    bandwidth per SM, with at least WIDE_SHARE_ROWS_PER_SM rows an SM: at least
    WIDE_SHARE_ITEMS vectors a thread (64 bytes in flight, not 32) by 64 to
    WIDE_SHARE_THREADS threads (rows of 2048 and more), the weights loaded late from L1,
    a block a row; 0 elsewhere.
    H200 2026-11-29 (scripts/probe_gaps.py: every candidate, the fastest in three rounds,
    µs, the old default / this one), layernorm f16 with f32 weight and bias: 16384x4096
    75.6 / 71.2 (128 threads), 16384x8192 141.6 / 137.5 (128, 64 elements a thread; 256:
    144.3), 16384x3072 over 59.6 / 56.1 (64; 128: 57.5), 8448x5120 57.2 / 49.2 (128),
    32768x2048 71.9 / 70.7 (64); with f16 ones: 74.3 / 71.1, over 143.1 / 136.8 (256:
    135.0), over 52.2 / 48.0, 71.3 / 69.7. Each the fastest of its space but where noted.
    At 4096x8192 (31 rows an SM) the persistent block stays: 39.0 against 40.8 at 128."""
    threads = min(WIDE_SHARE_THREADS, pow2_at_most(p.row_length // vec // WIDE_SHARE_ITEMS))
    return late_share_fits(p, vec, threads, WIDE_SHARE_ROWS_PER_SM)


# halved_late_share applies from rows.HALVED_SHARE_ROWS_PER_SM rows an SM, and from
HALVED_WIDE_ROWS_PER_SM = 6    # ... this many where the halved block keeps 256 threads or more
HALVED_DEEP_ROWS_PER_SM = 2   # ... or this many within one wave, where 512 threads would read 64 bytes each


def halved_late_share(p: Problem, vec: int, threads: int, items: int) -> int:
    """Threads a row takes where its 16-bit values in vectors of 8 carry weights heavier
    than the row and the default leaves each of `threads` threads three vectors (48
    bytes), on GPUs with much HBM bandwidth per SM, with at least HALVED_SHARE_ROWS_PER_SM
    rows an SM (where late_wide_share does not apply), or HALVED_WIDE_ROWS_PER_SM where
    the halved block keeps 256 threads: half the threads, five or six vectors each (80-96
    bytes in flight), the weights loaded late from L1, a block a row; 0 elsewhere. Those
    rows' three vectors a thread came either with weights too heavy to hoist (loaded late
    at 48 bytes a thread) or with a hoisting persistent block.
    H200 2026-11-29 (scripts/probe_gaps.py, three rounds, µs, the old default / this
    one), layernorm f16 with f32 weight and bias: 4096x6144 34.4 / 32.0 (128 threads),
    8192x6144 62.1 / 57.0, 4096x5120 31.4 / 28.3, 4096x10240 60.9 / 50.0 (256),
    4096x12288 67.2 / 58.9; with f16 weight and bias 4096x12288 61.7 / 56.0, 4096x6144
    31.2 / 30.9. Each the fastest of its space. With fewer rows an SM, 512 threads halved
    to 256 still win (rows of 8200 to 12288; µs, 512 / 256 threads, f32 weight and bias):
    1024x10240 20.4 / 18.1, 1536x10240 27.9 / 24.4, 2048x9216 32.8 / 27.5, 2048x10240 34.3
    / 29.4, 2560x12288 45.7 / 41.4, 3072x10240 47.9 / 40.2, 1024x12288 22.6 / 21.8; f16 ones
    2048x10240 30.4 / 27.2, 3072x12288 48.4 / 44.1, 1024x12288 19.5 / 19.3, 1536x8200 22.8 /
    19.6; bf16 rows 2048x12288 37.5 / 34.9; but not at 512 rows (3.9 an SM: 512x12288 13.4 /
    14.6). A block of 256 halved to 128 does not (2048x6144 20.3 / over 19.8; f16 weights
    3072x6144 24.6 / 25.3): fuller_block_pays.
    Rows whose weights are lighter gained nothing from half the threads (rmsnorm f16
    4096x6144 29.2 / 29.6, 4096x12288 53.9 / 55.5; softmax f32 4096x6144 52.9 / 53.8).
    The same holds where 512 threads would read four vectors (64 bytes) each, rows of 12296
    to 16384 that doubled_prefetch_pays leaves to a block a row, under 64 rows an SM: 256
    threads, seven or eight vectors each (H200 2026-11-29, the old default and this one in
    turn twice, µs; Triton beside): f16 weight and bias 2048x16384 42.3, 42.3 / 40.4, 40.6
    (41.8), 3072x16384 59.3, 59.4 / 56.8, 57.1 (58.5), 4096x16384 76.3, 76.2 / 73.0, 73.2
    (75.0), 6144x16384 108.9, 108.9 / 105.1, 105.1 (107.5), 4096x14336 70.3, 70.3 / 64.4,
    64.6 (69.9); f32 ones 6144x16384 119.7, 119.9 / 111.0, 111.1, 5000x14336 89.9, 90.2 /
    81.4, 81.3, 8192x16384 156.9, 156.6 / 143.8, 144.0. And at 2 to 4 rows an SM, where one
    wave of blocks of 512 holds every row (H200 2026-11-29 17:52, every candidate, three
    rounds, µs, the old default / this one): f16 weight and bias 384x16384 13.0 / 11.4,
    448x16384 13.5 / 11.9, 512x16384 14.1 / 12.5, 512x14336 13.9 / 11.8; bf16 rows with f32
    ones 512x16384 15.6 / 14.1; f16 rows 384x16384 14.6 / 14.0, 512x16384 15.6 / 16.2 (15.8,
    15.6 / 14.1, 14.6 at 17:00); then the old default and this one in turn twice (17:55):
    f16 rows 420x14336 13.9, 14.2 / 12.4, 12.5, 480x16384 15.4, 15.5 / 14.0, 14.1, 300x16384
    13.3, 14.9 / 11.8, 15.4; f16 weight and bias 420x14336 13.1, 13.9 / 10.8, 11.2, 480x16384
    13.9, 14.3 / 12.2, 12.5; bf16 420x16384 14.7, 14.9 / 13.5, 14.1; all bf16 480x16384 13.8,
    14.3 / 12.4, 13.5. Beyond one wave, under 6 rows an SM, half the threads lost (f16 weight
    and bias 700x14336 17.1, 17.3 / 17.9, 18.1; all bf16 600x14336 15.6, 15.7 / 17.7, 17.8)."""
    share = share_bytes(p, items, vec)
    if not (share == 48 or share == 64 and threads == 512 and p.rows < WIDE_SHARE_ROWS_PER_SM * p.sm_count):
        return 0        # (64 bytes: measured up to 62 rows an SM)
    rows_per_sm = HALVED_WIDE_ROWS_PER_SM if threads // 2 >= 256 else HALVED_SHARE_ROWS_PER_SM
    if share == 64 and p.rows <= ONE_WAVE_ROWS_PER_SM * p.sm_count:
        rows_per_sm = HALVED_DEEP_ROWS_PER_SM
    return late_share_fits(p, vec, threads // 2, rows_per_sm)


def late_share_fits(p: Problem, vec: int, threads: int, rows_per_sm: int) -> int:
    """`threads` where a block a row of them (64 or more) holds a 16-bit row in vectors of 8
    with its weights loaded late, packed within its registers, on a GPU with much HBM bandwidth
    per SM and at least `rows_per_sm` rows an SM (late_wide_share, halved_late_share); else 0.
    One input over the row only: a row value computed from two (a residual add, x + r) is
    held in f32, not packed, and such a share of 32 elements a thread spilled 8 bytes at 64
    registers on the H200's compiler (add and layernorm f16 16384x4096, 2026-12-02)."""
    if not (much_bandwidth_per_sm(p) and p.rows >= rows_per_sm * p.sm_count):
        return 0
    return threads if packed_late_share_fits(p, vec, threads) else 0


def packed_late_share_fits(p: Problem, vec: int, threads: int) -> bool:
    """Whether a block a row of `threads` threads (64 or more) holds a row of one 16-bit input in
    vectors of 8, packed, within its registers, its weights loaded late (late_share_fits,
    halved_heavy_share)."""
    return (vec == 8 and threads >= 64 and narrow_rows(p) and len(p.layout.row_inputs) == 1
            and row_share_fits(p, row_share(p.row_length // vec, threads), vec, hoisted=False, packed=True))


def prefetching_blocks_per_sm(p: Problem, threads: int, vec: int, items: int) -> int:
    """Blocks an SM that a persistent grid of `threads`-thread blocks launches where each
    block loads its next row while it reduces this one (Schedule.prefetch): as many as the
    SM's threads allow (THREADS_PER_SM), but blocks of 512 or more threads on GPUs with
    much HBM bandwidth per SM, where only as many as are resident at once under the
    kernel's register budget (two of 512 at 64 registers): a second wave of such blocks,
    each with a first row that nothing overlaps, cost more than its rows' shorter loops
    saved. H200 2026-11-29 (scripts/probe_gaps.py, three rounds, µs, twice / once the
    resident count), layernorm f16 with f32 weight and bias, 512 threads: 2048x8192 23.4 /
    22.2, 4096x8192 39.8 / 39.3, 6144x8192 56.7 / 55.8, 6400x8192 59.2 / 57.6, 8192x8192
    74.1 / 73.0, 2048x6144 19.9 / 19.0; with f16 ones 2048x8192 22.8 / 22.1, 4096x8192
    39.9 / 39.2, 8192x8192 73.6 / 72.9; 1024 threads, 2048x12288 36.8 / 34.6. Blocks of 256
    were mixed (4096x4096 22.1 / 21.5, 7168x4096 34.4 / 34.7, with f16 weights 8192x4096
    39.1 / 39.9), and so was a block of 512 that does not prefetch (f16 weights, 4096x12288
    61.7 / 62.5): both keep the SM's thread count."""
    if threads < 512 or not much_bandwidth_per_sm(p):
        return THREADS_PER_SM // threads
    return resident_blocks(p.group, Schedule("reduce_row", block=threads, vec=vec, items=items, row_threads=threads,
                                             prefetch=True))


def keep_pays(p: Problem, threads: int, items: int, vec: int) -> bool:
    """Whether a row of `threads` threads should keep its costly element values between
    phases (where keeps_fit): not a 512-thread block whose threads read under 64 bytes of
    the row each. Its kept values take the SM's third resident block (softmax f32 at 12
    elements a thread: 45 registers, two blocks of 512; 36 without, three), and two such
    blocks hold too few bytes in flight: H200 2026-11-29 (scripts/probe_gaps.py), softmax
    f32 8192x6144 108.5 us kept / 99.8 recomputed; at 16 elements a thread (64 bytes, also
    two blocks) 69.7 / 69.5 at 4096x8192."""
    return threads < 512 or share_bytes(p, items, vec) >= 64


def deeper_share_pays(p: Problem, threads: int, items: int, vec: int) -> bool:
    """Whether a row that 512 threads read 32 bytes each (two 16-byte vectors) goes to 256
    threads reading 64, its weights hoisted: on GPUs with much HBM bandwidth per SM (at
    least LATE_LOADS_GBPS_PER_SM), where an SM needs more bytes in flight than three blocks
    of 512 threads hold (ptxas: 40 registers) and four blocks of 256 hold more (55). H200
    2026-11-29 (scripts/probe_gaps.py, µs, 512 / 256): rmsnorm f16 4096x8192 37.7 / 36.7,
    3072x8192 29.8 / 28.7, 6144x8192 54.2 / 53.4, 4096x7168 35.1 / 32.7."""
    return (threads == 512 and vec > 1 and much_bandwidth_per_sm(p)
            and share_bytes(p, items, vec) == 32 and row_share_fits(p, row_share(p.row_length // vec, 256), vec))


SINGLE_VECTOR_ROWS_PER_SM = 128    # rows an SM from which single_vector_share applies
SINGLE_VECTOR_THREADS = 256        # ... up to this many threads a row once doubled


def single_vector_share(p: Problem, threads: int, items: int, vec: int) -> int:
    """Threads a row takes where a GPU with little HBM bandwidth per SM (below
    LATE_LOADS_GBPS_PER_SM: an H100) would give a 16-bit row in vectors of 8 two vectors a
    thread, with weights no heavier than the row (rmsnorm's f16 weight), at least
    SINGLE_VECTOR_ROWS_PER_SM rows an SM: twice the threads, one 16-byte vector each, up to
    SINGLE_VECTOR_THREADS threads (rows of 1024 to 2048); 0 elsewhere. Half the share holds
    fewer registers, so more rows are in flight an SM. H100 2026-12-07 (scripts/probe_gaps.py,
    every candidate, then the fastest, the default and Triton in three rounds, µs, two
    vectors / one / Triton): rmsnorm f16 65536x1024 93.3 / 92.5 / 92.5, 32768x1024 49.3 /
    48.7 / 48.6, 32768x2048 93.4 / 92.9 / 92.4. Each one-vector form was the fastest of its
    space. Not rows without weights, where it wins at 1024 only, and by less (softmax f16
    65536x1024 93.0 / 92.6 / 92.1, bf16 93.0 / 92.5 / 92.2; f16 32768x2048 92.9 / 93.9 / 94.1),
    nor heavier weights (all-f16 layernorm 65536x1024: two vectors hoisted 93.0, late 93.6)."""
    if not (vec == 8 and items == 2 and 2 * threads <= SINGLE_VECTOR_THREADS
            and little_bandwidth_per_sm(p) and narrow_rows(p)
            and p.layout.weight_inputs and element_bytes(p.layout.weight_inputs) <= element_bytes(p.layout.row_inputs)
            and p.rows >= SINGLE_VECTOR_ROWS_PER_SM * p.sm_count):
        return 0
    return 2 * threads


UNPINNED_ROWS_PER_SM = 30       # rows an SM from which unpinned_hoisted_rows applies


def unpinned_hoisted_rows(p: Problem, per_sm: int, prefetch: bool, light: bool) -> bool:
    """Whether a persistent grid (`per_sm` blocks an SM) that hoists weights no heavier than
    twice the row (`light`: all-f16 layernorm's) and does not prefetch (its three vectors a
    thread leave no room: registers.prefetch_fits) goes back to a block a row, its weights still
    hoisted: on a GPU with little HBM bandwidth per SM (below LATE_LOADS_GBPS_PER_SM: an H100),
    with at least UNPINNED_ROWS_PER_SM rows an SM. Without the prefetch, the persistent block's
    loop only serialises its rows. H100 2026-12-07 (scripts/probe_gaps.py, every candidate, then
    the fastest six, the default and Triton in three rounds, µs, persistent / a block a row
    hoisted / weights late / Triton), all-f16 layernorm: 16384x6144 150.4 / 136.7 / 137.4 / 147.0,
    4096x6144 40.1 / 38.5 / 39.0 / 41.4, 8192x5120 62.9 / 62.6 / 62.8 / 69.7, 8192x12288 144.7 /
    140.3 / 139.6 / 142.8, 16384x12288 282.7 / 275.2 / 273.2 / 278.3. With fewer rows the
    persistent block holds: 2048x12288 (15.5 an SM) 39.6 / 39.8 / 40.2, 700x12288 15.9 / 16.3 /
    17.0, 1024x6144 12.1 / over 14.6 / over 14.6. All-bf16 rows already load their weights late."""
    return (bool(per_sm) and not prefetch and light and little_bandwidth_per_sm(p)
            and p.rows >= UNPINNED_ROWS_PER_SM * p.sm_count)


HALVED_HEAVY_THREADS = 512      # the block halved_heavy_share halves, where its threads read 32 bytes each


def halved_heavy_share(p: Problem, threads: int, items: int, vec: int) -> int:
    """Threads a row takes where a GPU with little HBM bandwidth per SM (below
    LATE_LOADS_GBPS_PER_SM: an H100) loads weights over twice the row late (f32 weight and bias
    over 16-bit rows: choose.default's `late`, from LATE_HEAVY_ROWS_PER_SM rows an SM) by a block
    of HALVED_HEAVY_THREADS threads reading two 16-byte vectors each: half the threads, four
    vectors each (64 bytes in flight, not 32), registers budgeted for 1024 threads an SM, not
    1536; 0 elsewhere. The weights stay late. H100 2026-12-07 (scripts/probe_gaps.py, every
    candidate, then the fastest six, the default and Triton in three rounds, µs, 512 threads /
    256 / Triton), layernorm f16 with f32 weight and bias: 8192x8192 97.1 / 95.7 / 95.9,
    16384x8192 187.0 / 183.8 / 184.5, 6144x8192 75.4 / 74.1 / 74.4, 5400x8192 67.2 / 65.8 /
    66.3, 8192x8000 95.8 / 93.4 / 94.5, 8192x7168 88.7 / 84.0 / 87.5; bf16 rows 8192x8192 96.8 /
    95.6 / 95.7, 16384x8192 188.3 / 183.8 / 186.0. Each halved form was the fastest of its
    space. Not weights at most twice the row (all-f16 layernorm 8192x8192: 94.1 / 95.2), nor
    rows that 256 threads read two vectors each (16384x4096: 94.5, halved 95.3). A hand-written
    kernel holding the same columns of two rows a thread, so that its weights serve both
    (scripts/probe_row_groups.py, the same day), was no faster than one row at four vectors
    (4096x8192 51.0 / 51.3, 8192x8192 95.3 / 95.4)."""
    if not (threads == HALVED_HEAVY_THREADS and share_bytes(p, items, vec) == 32 and little_bandwidth_per_sm(p)
            and element_bytes(p.layout.weight_inputs) > 2 * element_bytes(p.layout.row_inputs)):
        return 0
    return threads // 2 if packed_late_share_fits(p, vec, threads // 2) else 0
