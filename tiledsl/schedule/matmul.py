"""The rules for products (`matmul`): SIMT and tensor-core tiles, the warpgroup (wgmma)
tiles of Hopper with TMA, producers and persistent twins, split-K, and their grids;
each rule with the measurements it was fitted to."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from .hints import Hints
from .layout import batched_operands, gemm_result_in_rows, operand_input
from .schedules import MAX_SHARED_BYTES, Schedule
from .problem import Launch, MAX_GRID, Problem

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


def wgmma_schedules(p: Problem, vec: int) -> list[Schedule]:
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


def copy_twins(p: Problem, warpgroup: list) -> list[Schedule]:
    """Where TMA can copy the tiles, the usual warpgroup tiles by the other copy
    too (unsplit), for the tuner to time side by side."""
    if not tma_operands(p):
        return []
    return [replace(s, tma=not s.tma) for s in warpgroup if s.tile[:2] in ((128, 256), (128, 128), (64, 64))]


def hopper_first(p: Problem, schedules: list) -> list[Schedule]:
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


def persistent_twins(p: Problem, warpgroup: list) -> list[Schedule]:
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


def specialized_twins(p: Problem, warpgroup: list) -> list[Schedule]:
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


def split_producer_twins(p: Problem, schedules: list) -> list[Schedule]:
    """The TMA-fed warpgroup tiles split K ways, again with a producer warpgroup (a
    block a tile and chunk), alone and in pairs sharing B: few tiles over a long K
    read mostly from memory, and a pair reads B's tile once."""
    if matmul_shape(p)[0] > 1:
        return []
    twins = [with_producer(s) for s in schedules if s.tma and s.splits]
    return twins + [replace(s, cluster=2) for s in twins]


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
