"""Choosing a schedule for a group at the sizes of a call, and its grid.

`candidates()` is the search space (what the tuner times); `default()` is the
rule used when nothing was tuned; `fits()` refuses what a call cannot run;
`plan()` and `launches()` give the grids. The rules themselves live by kind of
group: pointwise.py, rows.py, columns.py, matmul.py; problem.py describes the
call. Pure Python, free of CuPy, so every choice can be rendered, compiled and
inspected without a GPU (`tiledsl emit`).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from .hints import Hints
from .partition import online_pairs
from .schedules import (MAX_SHARED_BYTES, MAX_STATIC_SHARED, MAX_ROW_ELEMENTS, R40_THREADS, THREADS_PER_SM, Schedule,
                        column_vector, combine_lanes)
from .problem import Launch, MAX_GRID, Problem, max_vector, transposed_loop
from . import columns, matmul, pointwise, registers, resident, rows, shares


def candidates(p: Problem, hints: Hints = Hints()) -> list[Schedule]:
    """Every schedule worth timing for this problem (all valid for it)."""
    if p.group.kind == "matmul":
        out, twins = [], []
        if hints.tf32 and matmul.tf32_operands(p) and p.arch == "sm_90a":   # opted in: f32 as TF32
            out += matmul.wgmma_schedules(p, vec=4)
            twins += matmul.persistent_twins(p, out) + matmul.specialized_twins(p, out) + matmul.copy_twins(p, out)
        if matmul.uses_tensor_cores(p):
            for tile, warp in (((128, 128, 32), (64, 32)), ((64, 64, 32), (32, 32)),
                               ((128, 64, 32), (64, 32)), ((128, 128, 32), (32, 64)),
                               ((64, 128, 32), (32, 64)), ((128, 128, 32), (64, 64))):
                for vec in sorted({1, matmul.matmul_vector(p)}):
                    out.append(Schedule("matmul", block=(tile[0] // warp[0]) * (tile[1] // warp[1]) * 32,
                                        tile=tile, micro=warp, mma=True, vec=vec, index64=p.index64))
            if matmul.matmul_vector(p) == 8 and p.arch == "sm_90a":     # warpgroup tensor cores
                warpgroup = matmul.wgmma_schedules(p, vec=8)
                out += warpgroup
                twins += (matmul.persistent_twins(p, warpgroup) + matmul.specialized_twins(p, warpgroup)
                          + matmul.copy_twins(p, warpgroup))
            if matmul.matmul_vector(p) == 8:     # cp.async pipelines
                for tile, warp in matmul.PIPELINE_TILES:
                    for stages in (3, 4):
                        for group in (0, 8):
                            s = Schedule("matmul", block=(tile[0] // warp[0]) * (tile[1] // warp[1]) * 32,
                                         tile=tile, micro=warp, mma=True, vec=8, stages=stages, group=group,
                                         index64=p.index64)
                            if s.shared_bytes <= MAX_SHARED_BYTES:
                                out.append(s)
        if matmul.simt_vector(p) == 4:     # f32 tiles in 16-byte vectors, float4 fragment reads
            for bm, bn, bk, tm, tn, blocks in matmul.SIMT_VECTOR_TILES:
                out.append(Schedule("matmul", block=(bm // tm) * (bn // tn), tile=(bm, bn, bk), micro=(tm, tn),
                                    vec=4, min_blocks=blocks, index64=p.index64))
        for bm, bn, bk, tm, tn in ((64, 64, 16, 4, 4), (128, 128, 8, 8, 8), (128, 64, 8, 8, 4),
                                   (64, 128, 8, 4, 8), (128, 128, 16, 8, 8), (32, 32, 32, 2, 2)):
            out.append(Schedule("matmul", block=(bm // tm) * (bn // tn), tile=(bm, bn, bk),
                                micro=(tm, tn), index64=p.index64))
        # split-K where the tiles leave SMs idle and K is long: the SIMT tiles of the defaults,
        # and the tensor-core tiles in launch order, one block per SM
        out += [replace(s, splits=k) for s in out
                if ((s.tile, s.micro) in matmul.SPLIT_K_TILES if not s.mma else
                    (s.tile, s.micro, s.stages) in matmul.TC_SPLIT_TILES and not s.group and s.min_blocks == 1)
                for k in matmul.split_k_choices(p, s.tile)]
        return matmul.hopper_first(p, out + twins + matmul.split_producer_twins(p, out))
    if p.group.kind == "pointwise":
        out = []
        for vec in sorted({max_vector(p, hints.vector), max(1, max_vector(p, hints.vector) // 2)}):
            for block in (128, 256, 512):
                for items in (1, 2, 4, 8):
                    if items * vec > MAX_ROW_ELEMENTS:
                        continue
                    # flat, and (outer) an input without the outermost loop loaded once for `items` rows of it
                    for outer in ([False, True] if items > 1 and block <= 256 else [False]):
                        # what a thread holds in flight must fit its registers
                        if items > 1 and pointwise.held_words(p, vec, items, outer) > pointwise.HELD_WORDS:
                            continue
                        s = Schedule("pointwise", block=block, vec=vec, items=items, outer=outer,
                                     index64=p.index64)
                        out += [s] if not outer or not pointwise.outer_refusal(p, items) else []
        # vectors that straddle rows, where the innermost extent breaks the whole-row ones
        straddled = pointwise.straddle_vector(p, hints.vector)
        if straddled > max_vector(p, hints.vector):
            out += [Schedule("pointwise", block=block, vec=vec, items=items, straddle=True, index64=p.index64)
                    for vec in sorted({straddled, max(2, straddled // 2)}) for block in (128, 256, 512)
                    for items in (1, 2, 4, 8) if items * vec <= MAX_ROW_ELEMENTS
                    and (items == 1 or pointwise.held_words(p, vec, items, straddle=True) <= pointwise.HELD_WORDS)]
            # ... and walking runs of vec rows: an input without the outermost loop read once for them all
            out += [Schedule("pointwise", block=block, vec=vec, items=items, outer=True, straddle=True,
                             index64=p.index64)
                    for vec in sorted({straddled, max(2, straddled // 2)}) for block in (128, 256)
                    for items in (2, 4, 8) if items * vec <= MAX_ROW_ELEMENTS
                    and pointwise.held_words(p, vec, items, outer=True, straddle=True) <= pointwise.HELD_WORDS
                    and not pointwise.outer_refusal(p, items, vec)]
        if transposed_loop(p) is not None:
            out += [Schedule("pointwise", block=block, vec=vec, tile=tile, index64=p.index64)
                    for vec in sorted({1, pointwise.tile_vector(p)})
                    for tile in ((32, 32), (64, 64), (32, 64), (64, 32), (128, 64), (64, 128), (128, 128))
                    for block in (128, 256, 512)
                    if block * vec <= tile[0] * tile[1] and pointwise.staged_tile_bytes(p, tile) <= MAX_STATIC_SHARED]
        return out
    out = []
    col_vecs = columns.column_vectors(p)
    if not p.row_major():     # a thread a column, or a vector of neighbouring columns
        out += [Schedule("reduce_col", block=256, vec=v, items=0, row_threads=1, index64=p.index64)
                for v in [1] + col_vecs]
    wide = columns.columns_split(p) if not p.row_major() else None
    if wide is not None:    # many columns: the default's splits, and one more and one fewer
        out += [replace(wide, splits=n) for n in dict.fromkeys((wide.splits, wide.splits + 1, wide.splits - 1))
                if 2 <= n <= columns.max_splits(p, 1, 1)]
    split = columns.split_schedule(p)
    if split is not None:   # the default's splits, twice as many (while chunks last) and half
        most = columns.max_splits(p, split.row_threads, split.vec)
        # a split along rows also at each count that fills every SM's room, for 1 to 4 blocks an
        # SM: the count the launcher gives the default once its kernel's residency is known
        # (columns.splits_filling_room; max f16 [2^26], 3 blocks an SM: 396), which the tuner
        # would otherwise never time, and a pinned count could lose to the untuned default
        filling = [columns.splits_filling_room(p, split, k).splits for k in range(1, THREADS_PER_SM // split.block + 1)]
        for n in dict.fromkeys((split.splits, min(2 * split.splits, most), split.splits // 2, *filling)):
            if 2 <= n <= most:
                cut = replace(split, splits=n)
                out.append(replace(cut, last_block=columns.finished_by_last_block(p, cut)))
        if not p.row_major() and split.row_threads < split.block:   # a tile of columns: twice and half as tall
            out += [replace(split, row_threads=t) for t in (2 * split.row_threads, split.row_threads // 2)
                    if 1 <= t < split.block]
        for v in col_vecs:      # vectors of columns, their splits filling the GPU
            wide = columns.split_schedule(p, v)
            if wide is not None:
                out += [replace(wide, splits=n) for n in dict.fromkeys((wide.splits, wide.splits // 2)) if n >= 2]
    pair = columns.online_pair_split(p)
    if pair is not None:    # softmax's statistics across memory: the default's splits, half and twice
        out += [replace(pair, splits=n) for n in dict.fromkeys((pair.splits, pair.splits // 2, 2 * pair.splits))
                if 2 <= n <= columns.max_splits(p, pair.row_threads, pair.vec)]
    short = columns.short_columns(p)
    if short is not None:   # short columns a few a warp: the default's threads a column, half and twice
        out += [replace(short, row_threads=t) for t in dict.fromkeys((short.row_threads, short.row_threads // 2,
                                                                      2 * short.row_threads)) if 2 <= t <= 32]
    if columns.whole_column_results(p):     # columns held whole in registers, 1 to 32 threads a column
        out += columns.held_columns(p)
    if not p.row_major():   # 16-byte vectors of columns, each column's rows shared by a block's threads
        # (registers budgeted for 1024 threads an SM, or for all 2048)
        out += list(dict.fromkeys(t for width, block in ((16, 512), (32, 512), (64, 512), (32, 256))
                                  for full in (True, False)
                                  if (t := columns.column_tile_split(p, width, block, full)) is not None))
        tile = columns.column_tile_default(p)
        if tile is not None:    # the default's chunks, half as long (while a wave lasts) and twice
            wave = columns.column_tile_split(p, 512 // tile.row_threads, 512, full=tile.min_blocks > 1).splits
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
    widths = ((1, 2, 4, 8, 16) if p.row_length <= rows.SHORT_ROW and p.row_major() else
              (16,) if p.row_major() and rows.row_input_bytes(p) <= 2 * rows.HALF_WARP_ROW_BYTES else ())
    widths = sorted(widths + (32, 64, 128, 256, 512, 1024), key=lambda t: (abs(t.bit_length() - center), t))
    peel = rows.peel_vector(p) if p.row_length > rows.SHORT_ROW and not hints.vector else 1
    if peel > 1:    # rows peeled to aligned vectors, as wide vectors go first: looped (long rows),
        if p.row_length >= 2048:
            out += [Schedule("reduce_row", block=tpr, vec=peel, items=0, row_threads=tpr, peel=True,
                             index64=p.index64)
                    for tpr in sorted((256, 512, 1024), key=lambda t: abs(t.bit_length() - center))]
        # and held in registers: a warp each of several rows a block, a block alone, a cluster's blocks
        held = [s for tpr in (32, 64, 128, 256, 512, 1024) if (s := rows.held_row_share(p, peel, tpr, peel=True))]
        out += [replace(s, block=rows.WARP_ROW_BLOCK) for s in held[:1] if s.block == 32]
        out += held if any(s.block == 1024 for s in held) else held + rows.cluster_row_shares(p, peel, peel=True)
    # rows too long for a block's registers: shared by a cluster's blocks (sm_90a)
    if p.row_major() and not registers.row_share_fits(p, rows.row_share(p.row_length // vecs[0], 1024), vecs[0]):
        out += rows.cluster_row_shares(p, vecs[0])
    for vec in vecs:
        rvec = p.row_length // vec
        for tpr in widths:
            block = 256 if tpr < 32 else 128 if tpr == 32 else tpr
            shares_warp = tpr < 32
            items = rows.row_share(rvec, tpr)
            # the row-invariant inputs hoisted, or loaded late where only that fits (as default() does)
            hoists = [h for h in rows.hoist_choices(p)
                      if registers.row_share_fits(p, items, vec, hoisted=h, packed=True)]
            if hoists:
                keeps = ((False, True) if registers.keeps_fit(p, items, vec)
                         or registers.element_keeps_fit(p, items, vec) else (False,))
                for hoist in hoists:
                    for per_sm in ((0, THREADS_PER_SM // block) if p.rows > 4 * p.sm_count else (0,)):
                        for keep in keeps:
                            out.append(Schedule("reduce_row", block=block, vec=vec, items=items,
                                                row_threads=tpr, hoist=hoist, blocks_per_sm=per_sm,
                                                keep=keep, index64=p.index64))
                            if not per_sm and registers.full_occupancy_fits(p, items, vec, keep):
                                out.append(replace(out[-1], min_blocks=THREADS_PER_SM // block))
                            elif not per_sm and registers.r40_fits(p, block, items, vec, keep, hoist):
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
                                    if not rows.ring_problem(p, s):
                                        out.append(s)
                    # a persistent block loads its next row while it reduces this one
                    if p.rows > 4 * p.sm_count and registers.prefetch_fits(p, items, vec) and not shares_warp:
                        for per_sm in sorted({max(1, THREADS_PER_SM // 2 // block), THREADS_PER_SM // block}):
                            for keep in keeps:
                                out.append(Schedule("reduce_row", block=block, vec=vec, items=items,
                                                    row_threads=tpr, hoist=hoist, blocks_per_sm=per_sm,
                                                    keep=keep, prefetch=True, index64=p.index64))
            if tpr >= 256:      # looped: a block a row, or a cluster's blocks a row where rows are few
                looped = Schedule("reduce_row", block=tpr, vec=vec, items=0, row_threads=tpr, index64=p.index64)
                together = [replace(looped, cluster=c, online=not online_pairs(p.group))
                            for c in rows.streamed_clusters(p, tpr, vec) if vec == vecs[0]]
                out += [looped] + [s for s in together if not fits(p, s)]     # (sm_90a, values a cluster posts)
    # looped rows in 16-byte vectors, a block a row, copied into shared memory once (rows.shared_row_schedule)
    vector_rows = [s for s in out if s.kind == "reduce_row" and s.items == 0 and s.vec > 1 and s.cluster == 1
                   and s.row_threads == s.block]
    out += [t for s in vector_rows for t in [replace(s, shared_row=True)] if not fits(p, t)]
    # ... and rows too long for two such copies an SM, by a cluster's blocks, each its share
    out += [t for s in vector_rows for t in rows.shared_row_clusters(p, s) if not fits(p, t)]
    # ... or, where no such shares fit two an SM, one an SM, by blocks of 1024 (rows.wide_rows_copied)
    out += [t for s in vector_rows if s.block == 1024 for t in rows.shared_row_clusters(p, s, one_an_sm=True)
            if not fits(p, t)]
    # peeled rows with their 4- or 2-byte weights read in vectors and shifted by each row's head
    out += [t for s in out if (t := rows.shifted_twin(s)) and not fits(p, t)]
    # rows held by a cluster's blocks on a persistent grid of clusters, prefetching their next rows
    out += [t for s in out for t in resident.persistent_cluster_twins(p, s) if not fits(p, t)]
    return _with_unrolls(p, out)


def _with_unrolls(p: Problem, schedules: list) -> list:
    """Each streamed schedule followed by its explicit unrolls (`stream_unrolls`); then each looped
    row read element by element walking guarded chunks (`rows.guards_chunks`); then, where
    the group takes max and sum(exp), each looped row's other choice of passes (`online`),
    last: a search capped below the whole space keeps the candidates it had."""
    out = [u for s in schedules for u in [s] + [replace(s, unroll=n) for n in rows.stream_unrolls(p, s)]]
    # rows read element by element: each also walking guarded chunks (Schedule.guarded)
    out += [replace(s, guarded=True) for s in out if rows.guards_chunks(s)]
    if online_pairs(p.group):
        flipped = [replace(s, online=not s.online) for s in out if s.kind == "reduce_row" and s.items == 0]
        out += [s for s in flipped if s.cluster == 1 or not fits(p, s)]   # (a cluster streams in two passes)
    return out


def default(p: Problem, hints: Hints = Hints(), clusters: bool = True) -> Schedule:
    """The schedule used without tuning: a rule fitted to measured winners
    (benchmarks/sweep.py on an H200, 2026-11-21): about 16 elements per thread
    (8 without vectors), 64 to 512 threads per row, row-invariant inputs
    hoisted into registers with a persistent grid only where they outweigh
    the row itself (layernorm's f32 weight and bias, not rmsnorm's f16
    weight; on GPUs with much bandwidth per SM and many rows, 64 bytes a thread
    with those weights loaded late: shares.late_wide_share), and costly values
    kept between phases where registers allow.
    Rows too long for a block's registers are shared by a cluster's blocks
    where cluster_row_schedule says so (`clusters=False`: they stream)."""
    if p.group.kind == "matmul":
        return matmul.matmul_default(p, hints)
    if p.group.kind == "pointwise":
        block = hints.threads or (hints.warps * 32 if hints.warps else 128)
        tile = pointwise.transposing_tile(p)
        if tile is not None:
            vec = pointwise.tile_vector(p)
            return Schedule("pointwise", block=min(block, tile[0] * tile[1] // vec), vec=vec, tile=tile,
                            index64=p.index64)
        eight_bit = pointwise.eight_bit_stream(p)
        cap = hints.vector or (pointwise.EIGHT_BIT_VECTOR if eight_bit else None)
        vec = max_vector(p, cap)
        while not hints.vector and vec > 1 and pointwise.held_words(p, vec, 1) > pointwise.HELD_WORDS:
            vec //= 2       # many inputs: narrower vectors rather than spills
        straddled = pointwise.straddle_default(p, vec, cap)
        pinned = bool(hints.threads or hints.warps)
        outer_block = pointwise.EIGHT_BIT_BLOCK if eight_bit and not pinned else block
        rows_once = pointwise.outer_items(p, vec, outer_block)     # a broadcast input loaded once for several rows
        if straddled and not (rows_once and pointwise.reused_bytes(p) >= pointwise.OUTER_REUSE_BYTES):
            # a row length that breaks the vectors: they run on across rows, in runs of vec rows
            # where an input without the outermost loop is read once for a thread's runs
            runs = pointwise.straddled_runs(p, straddled, block)
            if runs:
                return Schedule("pointwise", block=block, vec=straddled, items=runs, outer=True, straddle=True,
                                index64=p.index64)
            items = pointwise.flat_items(p, straddled, block, straddle=True)
            block = block if pinned else pointwise.flat_block(p, straddled, items, block)
            return Schedule("pointwise", block=block, vec=straddled, items=items, straddle=True, index64=p.index64)
        if rows_once:
            return Schedule("pointwise", block=outer_block, vec=vec, items=rows_once, outer=True, index64=p.index64)
        items = pointwise.flat_items(p, vec, block)
        block = block if pinned else pointwise.flat_block(p, vec, items, block)
        return Schedule("pointwise", block=block, vec=vec, items=items, index64=p.index64)
    whole = columns.whole_columns(p)        # (results over whole columns: the columns partition)
    if whole is not None:
        return whole
    across = columns.online_pair_split(p) or columns.short_columns(p)     # (reductions across memory)
    if across is not None and not fits(p, across):
        return across
    tile = columns.column_tile_default(p) if not p.row_major() else None
    if tile is not None:
        return tile
    if columns.many_columns(p):
        return columns.columns_split(p) or Schedule("reduce_col", block=256, vec=1, items=0, row_threads=1,
                                            index64=p.index64)
    split = columns.split_schedule(p, columns.paired_columns(p))
    if split is not None:
        return split
    short = rows.short_row_schedule(p, hints) or rows.warp_row_schedule(p, hints)
    if short is not None:
        return short
    vec = max_vector(p, hints.vector) if p.row_major() else 1
    if hints.cluster and hints.cluster > 1:     # pinned: a row shared by that many blocks, where a share fits
        odd = vec == 1 and not hints.vector and rows.peel_vector(p) > 1      # (peeled to aligned vectors)
        pinned = [s for s in rows.cluster_row_shares(p, rows.peel_vector(p) if odd else vec, peel=odd)
                  if s.cluster == hints.cluster and hints.threads in (None, s.block)]
        if pinned:
            return pinned[0]
    lse = rows.logsumexp_rows(p, hints)     # a logsumexp's long rows
    if lse is not None:
        return lse
    staged = rows.shared_row_schedule(p, hints, clusters)     # rows too long to hold two an SM in registers
    if staged is not None:
        return staged
    held = rows.long_row_schedule(p, vec, hints, clusters)
    if held is not None:
        return held
    rvec = p.row_length // vec
    tpr = rows.row_threads(p, rvec, vec, hints)
    items = rows.row_share(rvec, tpr)
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
    if not registers.row_share_fits(p, items, vec):
        if vec == 1:
            # a row length that breaks alignment, not held peeled (long_row_schedule, above): its
            # rows streamed, peeled to aligned vectors where they can be, unless weights over N
            # (gathered lane by lane from L1) outweigh the row's inputs
            # (H200 2026-11-26, scripts/probe_peel.py, us, element by element / peeled: softmax f16
            # 4096x50257 349.6 / 275.6, f32 682.1 / 577.5, f16 2048x131075 654.4 / 394.6; rmsnorm
            # bf16, its bf16 weight gathered, 2048x40001 200.1 / 109.6; logsumexp f32 222.8 / 210.4;
            # but layernorm f16 with f32 weight and bias 4096x20001 196.4 / 237.5)
            wide = rows.peel_vector(p) if not hints.vector and rows.peel_weights_fit(p) else 1
            if wide == 1:       # (its threads and unroll: element_stream)
                return rows.element_stream(p, tpr, hints)
            return Schedule("reduce_row", block=tpr, vec=wide, items=0, row_threads=tpr, index64=p.index64,
                            online=rows.online_pays(p, tpr), peel=wide > 1)
        # Then, for a 16-bit row in vectors, the same with up to 64 elements a thread, packed two
        # a register (row_share_fits with `packed`; H100 2026-11-26, scripts/probe_cluster_rows.py
        # --wide16, us, streamed / held: softmax f16 4096x50304 381.8 / 308.1 at 1024 threads and
        # 56 elements, 0.89x copy; rmsnorm f16 1024x65536 132.4 / 102.5 and layernorm f16 154.1 /
        # 123.2 at 64, weights late). Else the row is shared by a cluster's blocks, or streams.
        for packed, threads in ((False, tpr), (False, 1024), (True, tpr), (True, 1024)):
            share = rows.row_share(rvec, threads)
            if registers.row_share_fits(p, share, vec, packed=packed):
                tpr, items = threads, share
                break
            if p.has_row_invariant_inputs() and registers.row_share_fits(p, share, vec, hoisted=False, packed=packed):
                tpr, items, late_weights = threads, share, True
                break
        else:
            return rows.streamed_or_shared(p, vec, hints, clusters)
    kept = set(p.layout.kept_loops)
    invariant = rows.element_bytes(p.layout.weight_inputs)
    per_row = sum(op.dtype.itemsize for op in p.layout.inputs if set(op.loops) & kept)
    hoist = invariant > per_row and not late_weights and True in rows.hoist_choices(p)
    per_sm = THREADS_PER_SM // tpr if hoist and p.rows > 4 * p.sm_count else 0
    keep = registers.keeps_fit(p, items, vec) and shares.keep_pays(p, tpr, items, vec)
    # A persistent block loads its next row while it reduces this one. Measured 2026-11-22
    # (benchmarks/sweep.py, layernorm f16 16384x4096 / 65536x1024 / 4096x8192): on an H200
    # 10%, 6% and 1% faster than without, the fastest schedule of each space; on an H100 2%
    # slower, 3% and 8% faster (BENCHMARKS.md, "Row rings and the prefetch default").
    prefetch = bool(per_sm) and registers.prefetch_fits(p, items, vec) and hints.stages != 1
    if prefetch:
        keep, per_sm = False, shares.prefetching_blocks_per_sm(p, tpr, vec, items)
    # Where each SM has less HBM bandwidth to use, many rows in flight beat hoisting: the
    # weights stay unhoisted (loaded late, from L1), the grid is a block per row, and the
    # registers are capped for 1536 threads. Measured 2026-11-22 (benchmarks/sweep.py,
    # layernorm f16): on an H100 (25 GB/s per SM) 8% and 7% faster than the persistent
    # prefetch at 16384x4096 and 65536x1024, 3% slower at 4096x8192 (31 rows per SM); on an
    # H200 (37 GB/s per SM) 5%, 3% and 16% slower. Weights at most twice the row (f16 weight
    # and bias) are cheap to read from L1 row after row: late on any GPU from rows.LATE_ROWS_PER_SM
    # (H200 74.5 and 70.0 us against 75.9 and 73.6 at 16384x4096 and 65536x1024), and with
    # fewer rows per SM where bandwidth per SM is low (H100 4096x8192: 51.0 against 52.1;
    # H200: 42.5 against 40.2, the persistent block stays). Heavier weights where bandwidth
    # per SM is low: late from rows.LATE_HEAVY_ROWS_PER_SM where the rows are long (H100
    # 8192x8192: 97.0 against 102.5; rows of 2048 or less keep the persistent block up to
    # rows.LATE_ROWS_PER_SM).
    low_bandwidth = rows.little_bandwidth_per_sm(p)
    light = invariant <= 2 * per_row
    long_low = low_bandwidth and p.row_length >= rows.LATE_HEAVY_MIN_ROW
    many_rows = p.rows >= (rows.LATE_HEAVY_ROWS_PER_SM if long_low else rows.LATE_ROWS_PER_SM) * p.sm_count
    late = (bool(per_sm) and registers.r40_fits(p, tpr, items, vec, False, False) and not hints.stages
            and (low_bandwidth or light) and (many_rows or (low_bandwidth and light)))
    # ... and where each SM has much bandwidth and many rows, 64 bytes a thread with the
    # weights late beat both (shares.late_wide_share); with fewer rows, where the share would be
    # 48 bytes (or 64 at 512 threads), half the threads at 80-128 bytes each (shares.halved_late_share)
    # Where each SM has little bandwidth, weights over twice the row that go late at 512 threads
    # of 32 bytes each go late at 256 of 64 (shares.halved_heavy_share)
    wide = 0
    if invariant > per_row and not (hints.threads or hints.stages):
        wide = shares.late_wide_share(p, vec) or shares.halved_late_share(p, vec, tpr, items)
        if late:
            wide = wide or shares.halved_heavy_share(p, tpr, items, vec)
    if late:
        hoist, per_sm, prefetch, keep = False, 0, False, False
    if wide:
        tpr, items, hoist, per_sm, prefetch, keep, late = wide, rows.row_share(rvec, wide), False, 0, False, False, False
    # ... and where each SM has little bandwidth, a persistent block with nothing to prefetch goes
    # back to a block a row from shares.UNPINNED_ROWS_PER_SM, its light weights still hoisted
    # (shares.unpinned_hoisted_rows); a ring of rows the hints ask for keeps its block
    if not hints.stages and shares.unpinned_hoisted_rows(p, per_sm, prefetch, light):
        per_sm = 0
    # ... and a block a row, its share free to move: one vector a thread where each SM has little
    # bandwidth (shares.single_vector_share), or twice the bytes where it has much (shares.deeper_share_pays)
    free = not (hints.threads or hints.stages or per_sm or late_weights or late)
    single = free and shares.single_vector_share(p, tpr, items, vec)
    if single:      # (the weights hoisted: the fastest measured)
        tpr, items, hoist = single, 1, True in rows.hoist_choices(p)
        keep = registers.keeps_fit(p, items, vec) and shares.keep_pays(p, tpr, items, vec)
    elif free and shares.deeper_share_pays(p, tpr, items, vec):
        tpr, keep, hoist = tpr // 2, False, True in rows.hoist_choices(p)
        items = rows.row_share(rvec, tpr)
    full = not per_sm and not prefetch and registers.full_occupancy_fits(p, items, vec, keep)
    chosen = Schedule("reduce_row", block=tpr, vec=vec, items=items, row_threads=tpr,
                      hoist=hoist or not invariant, blocks_per_sm=per_sm, keep=keep, prefetch=prefetch,
                      min_blocks=THREADS_PER_SM // tpr if full else R40_THREADS // tpr if late else 1,
                      index64=p.index64)
    return rows.pinned_ring(p, chosen, hints.stages) if hints.stages and hints.stages > 1 else chosen


def launches(p: Problem, s: Schedule) -> list[Launch]:
    """The launches schedule `s` takes (none when there is nothing to compute)."""
    if s.kind == "pointwise":
        if p.total == 0:
            return []
        grid = -(-(p.total // s.vec) // (s.block * s.items))
        if s.outer:     # blocks along x over the vectors of one row (of a run of vec rows where they
            #             straddle rows), along y over groups of `items` rows (runs): outer_slices
            inner = p.total // p.loops[0] // (1 if s.straddle else s.vec)
            return [Launch(s, (max(1, min(MAX_GRID, -(-inner // s.block))),
                               pointwise.outer_slices(p, s.items, s.vec if s.straddle else 0), 1), p.loops)]
        if s.tile:      # a block per tile of the two loops, for every coordinate of the others
            i, j = p.inner, transposed_loop(p)
            grid = (-(-p.loops[i] // s.tile[0]) * -(-p.loops[j] // s.tile[1])
                    * (p.total // (p.loops[i] * p.loops[j])))
        return [Launch(s, (max(1, min(MAX_GRID, grid)), 1, 1), p.loops)]
    if s.kind == "matmul":
        return matmul.matmul_launches(p, s)
    if p.rows == 0:
        return []
    grid = -(-(p.rows // column_vector(s, p.layout)) // (s.block // s.row_threads))
    if s.kind == "reduce_split":
        final = -(-p.rows // (s.block // combine_lanes(s)))     # (lanes threads a row)
        return [Launch(s, (max(1, min(MAX_GRID, grid)), s.splits, 1), p.loops, 1)] + (
            [] if s.last_block else [Launch(s, (max(1, min(MAX_GRID, final)), 1, 1), p.loops, 2)])
    if s.blocks_per_sm:
        grid = min(grid, p.sm_count * s.blocks_per_sm)
    if s.cluster > 1:       # a cluster a row (a whole number of clusters: they loop over the rest)
        return [Launch(s, (min(MAX_GRID // s.cluster, grid) * s.cluster, 1, 1), p.loops,
                       sized_shared=rows.shared_row_bytes(p, s) + resident.cluster_prefetch_bytes(p, s))]
    return [Launch(s, (max(1, min(MAX_GRID, grid)), 1, 1), p.loops, sized_shared=rows.shared_row_bytes(p, s))]


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
    if s.outer:
        why = pointwise.outer_refusal(p, s.items, s.vec if s.straddle else 0)
        if why:
            return why
    if s.straddle:
        why = pointwise.straddle_refusal(p, s)
        if why:
            return why
    if s.wgmma and p.arch != "sm_90a":
        return "wgmma needs an sm_90a GPU (Hopper)"
    if s.tma and not matmul.tma_operands(p):
        return ("TMA copies tiles of 2-D inputs, or of inputs with every batch dim of the product "
                "(16-bit, or f32 as TF32), rows a multiple of 16 bytes, 16-byte aligned")
    if s.kind == "matmul" and (s.persistent or s.specialized) and matmul.matmul_shape(p)[0] > 1:
        return "a persistent or specialized GEMM loops over the output tiles of one product, not a batch"
    if s.kind == "matmul" and s.wgmma and s.vec == 4:
        if not matmul.tf32_operands(p):
            return "TF32 wgmma needs plain f32 operands contiguous along K, 16-byte aligned"
    elif s.kind == "matmul" and s.vec > 1 and s.mma:
        if s.vec != 8 or matmul.matmul_vector(p) != 8:
            return "matmul operands move in 16-byte vectors only where extents and alignment allow"
    elif s.kind == "matmul" and s.vec > 1:
        if s.vec != 4 or matmul.simt_vector(p) != 4:
            return "f32 SIMT tiles move in 16-byte vectors only where extents and alignment allow"
    elif s.kind == "pointwise" and s.tile:
        if s.vec > pointwise.tile_vector(p):
            return f"vector width {s.vec} exceeds what extents, alignment and dtypes allow a transposing tile"
        staged = pointwise.staged_tile_bytes(p, s.tile)
        if staged > MAX_STATIC_SHARED:
            return (f"a {s.tile[0]}x{s.tile[1]} tile of every transposed operand takes {staged} bytes of "
                    f"shared memory, more than the {MAX_STATIC_SHARED // 1024} KB a block has")
    elif s.vec > 1 and s.kind in ("reduce_col", "reduce_split") and not p.row_major():
        why = columns.column_vector_refusal(p, s)
        if why:
            return why
    elif s.peel:
        why = rows.peel_refusal(p, s)
        if why:
            return why
    elif s.vec > 1 and not s.straddle:
        if inner is None or p.loops[inner] % s.vec:
            return f"the innermost extent is not a multiple of {s.vec}"
        if s.vec > max_vector(p):
            return f"vector width {s.vec} exceeds what alignment and dtypes allow"
        if s.kind != "pointwise" and not p.row_major():
            return "vectors need the reduced dim innermost"
    if s.cluster > 1 and s.kind == "reduce_row":
        if p.arch != "sm_90a":
            return "blocks sharing a row through their shared memory (a cluster) need an sm_90a GPU (Hopper)"
        if not rows.cluster_values_fit(p):
            return "blocks sharing a row exchange 4- or 8-byte values: a reduction here is narrower"
        if s.block < 64:
            return "blocks sharing a row have two warps or more (a block barrier orders each exchange)"
        if s.items == 0 and s.online and online_pairs(p.group):
            return ("blocks streaming a row together take its max and sum(exp) in two passes (online=False): "
                    "the one-pass merge is a block's own")
    # (a peeled row holds its whole vectors: the head and tail, fewer than a vector each, go apart)
    held = p.row_length - p.row_length % s.vec if s.peel else p.row_length
    if s.kind == "reduce_row" and s.items and s.items * s.row_threads * s.cluster * s.vec < held:
        return "the row does not fit the threads and items"
    if s.kind == "reduce_row" and s.stages > 1:
        why = rows.ring_problem(p, s)
        if why:
            return why
    if s.shared_row:
        why = rows.shared_row_refusal(p, s)
        if why:
            return why
    if s.kind == "reduce_row" and s.cluster > 1 and s.prefetch:
        why = resident.cluster_prefetch_refusal(p, s)
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
