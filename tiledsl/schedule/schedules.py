"""Schedules: the frozen choices that turn a group into one CUDA kernel.

A `Schedule` is data, separate from the algorithm: the same group renders
differently under different schedules, and its fields give the kernel's
mangled name (and, with the rendered text, its cache key). Sizes are not part
of it: one compiled kernel serves every size of its class.

    pointwise  block=256 items=4 vec=4   each thread loads 4 float4 vectors
                                        before computing: 64 bytes in flight
    pointwise  tile=(64, 64) vec=4      `x.T`, `x + y.T`: an operand whose innermost
               block=128                dim is not the walk's passes through a
                                        64x64 tile in shared memory, read (or
                                        written) along its own innermost dim, 8
                                        bytes an access, so both sides of the
                                        transpose move in whole lines (x.T of
                                        4096^2 f16: 285 -> 37 us)
    pointwise  outer=True items=8       x[8, 2^22] + p[2^22] (p 16 MiB): a thread
               block=128 vec=4 (tag _o) takes one vector of every row of the
                                        outermost loop (8 items a row apart) and
                                        loads p's vector once for all 8, where a
                                        flat walk re-read p for each row after
                                        the rows between had pushed it out of L2
                                        (f32 94.8 -> 73.3 us on an H200)
    pointwise  straddle=True vec=8      relu(x + b), bf16 x[M, 781] + b[781]: no
               items=2 (tag _sd)        16-byte vector fits a row of 781, so x was
                                        walked element by element -> vectors of the
                                        flat index that may run from one row into
                                        the next, b read lane by lane at each
                                        lane's own column, the last few elements
                                        one at a time
    pointwise  outer=True straddle=True gelu(x + b), bf16 x[M, 781] + b[781] in
               items=4 vec=8 (_o_sd)    straddling vectors: b's column divided out
                                        and its 8 lanes read for every vector (34
                                        instructions an element) -> runs of 8 rows,
                                        vector k of each at the same columns: b's
                                        lanes read once for 4 runs (27; sm_90a)
    reduce_row row_threads=256 items=4   a row of 4096 f32 lives in registers:
                                        read from HBM once, reduced twice
    reduce_row row_threads=32 vec=8     softmax over rows of 512 f16: a block of 64
               block=128 items=2        threads a row, finished faster than SMs take
                                        in blocks -> a warp a row, 4 rows a block
                                        (65536 rows: 82.4 -> 49.0 us on an H100)
    reduce_row row_threads=2 vec=4      softmax over rows of 8 f32: 16 rows a warp,
               block=256                each lane one float4, a row's two lanes
                                        combine by shuffle (a warp a row: 274.7
                                        -> 49.5 us at 2^21 rows on an H100)
    reduce_row stages=3 blocks_per_sm=2 a persistent block's threads copy their
                                        next 2 rows into shared memory (cp.async)
                                        while they reduce this one
    reduce_row hoist=False min_blocks=6 (256 threads, tag _nh_r40) layernorm's
                                        weights are loaded late, where the output
                                        reads them, not held through the reductions;
                                        40 registers keep 1536 threads resident
    reduce_row cluster=4 block=512      softmax over rows of 65536 f32: too long for
               items=8 (tag _c4)        a block's registers, a row streamed phase
                                        after phase -> the 4 blocks of a cluster
                                        each hold a quarter of it and exchange each
                                        reduction's value through their shared
                                        memory (sm_90): read from HBM once (1024
                                        rows: 290.0 -> 194.7 us on an H100)
    reduce_row cluster=8 block=1024     softmax over rows of 262144 f32 (8 blocks
               persistent=True          of 1024, one an SM, a row): a cluster a
               prefetch=True            row, each SM loading, exchanging, storing
               (tag _p_c8_pst)          in turn -> only the resident clusters,
                                        looping over rows, each thread copying its
                                        next row's share into shared memory while
                                        it finishes this one (256 rows: 228.6 ->
                                        194.6 us on an H100)
    reduce_row block=1024 vec=8 items=7 softmax over rows of 50304 f16: 56 values a
                                        thread, packed two a register (16-bit rows
                                        in vectors hold up to 64, 4-byte ones 32):
                                        held, not streamed (4096 rows: 381.8 ->
                                        306.6 us on an H100)
    reduce_row items=0                  looped: rows too long for registers
                                        are re-read per phase (from L2); max and
                                        sum(exp(x - max)) share one pass (online)
    reduce_row items=0 online=False     softmax over rows of 50257 f16: the max's
               (tag _2p)                pass, then the sum's, re-reading the row
                                        from L2 (the rows in flight fit it): 501.2
                                        -> 404.6 us at 4096 rows on an H100; one
                                        pass where they do not (rows.online_pays)
    reduce_row items=0 vec=8 peel=True  softmax over rows of 50257 f16: each row is
               (tag _pe)                read in 16-byte vectors from its first
                                        aligned element; the few elements before
                                        it and after its last whole vector go one
                                        at a time (vec 1 before: a row length that
                                        breaks alignment read element by element)
    reduce_row items=4 vec=8 peel=True  softmax over rows of 4099 f16 held in
               block=128 (tag _pe)      registers, peeled: each thread's whole
                                        vectors held, the row's head and tail
                                        read again by each phase (element by
                                        element before: 16384 rows, 162.0 ->
                                        95.2 us on an H100)
    reduce_row items=2 vec=8 peel=True  the layernorm of x + r (f16) with f32 w and
               shift=True block=512     b over rows of 8193: the weights' lanes move
               (tag _pe_sw)             with each row's head, so each vector of w
                                        was gathered lane by lane (8 loads) -> read
                                        as 16-byte vectors from w's aligned start
                                        and shifted by the head in registers
                                        (4096 rows: 122.5 -> 108.3 us on an H100)
    reduce_row items=0 shared_row=True  softmax over rows of 50257 f16 (100 KB):
               block=512 (tag _sr)      a block of 1024 held each row, one an SM,
                                        HBM idle through its reductions -> each
                                        block of 512 copies its row into shared
                                        memory once and reads it there, two an SM
                                        (4096 rows: 263.8 -> 222.7 us on an H200)
    reduce_row items=0 shared_row=True  the layernorm of x + r over rows of 40960
               block=1024 (tag _sr)     (160 KB of x and r): 4 blocks of 512 of a
                                        cluster held each row -> one block of 1024
                                        copies it into shared memory, one an SM
                                        (4096 rows: 579.2 -> 460.5 us on an H100)
    reduce_row items=0 shared_row=True  softmax over rows of 128256 bf16 (256 KB):
               cluster=8 block=256      4 blocks of 512 held a row's shares in
               (tag _c8_sr)             registers, two an SM -> 8 blocks of 256
                                        each copy their stretches of it into
                                        shared memory, six an SM (1024 rows:
                                        167.8 -> 142.4 us on an H200)
    reduce_row items=0 shared_row=True  the layernorm of x + r over rows of 262144
               cluster=8 block=1024     (1 MB of x and r): no cluster's share fit
               (tag _c8_sr)             registers, so a block streamed each row,
                                        reading x and r three times -> 8 blocks
                                        of 1024 each copy 128 KB of it into shared
                                        memory, one an SM (300 rows: 500.6 ->
                                        323.2 us on an H100)
    reduce_row items=0 shared_row=True  rmsnorm f16 over rows of 100001 (peeled,
               peel=True cluster=4      195 KB): 4 blocks of 512 of a cluster held
               block=256 (tag _c4_sr_pe) each row -> 4 blocks of 256 each copy
                                        their stretches into shared memory (1024
                                        rows: 197.4 -> 167.3 us on an H100)
    reduce_col                          a thread per kept element, for
                                        reductions over outer dims
    reduce_split vec=2 row_threads=1    batch mean of f16 [65536, 768]: a thread
                                        takes 2 neighbouring columns, one 4-byte
                                        load a row and 2 accumulators, where a
                                        thread a column read 2 bytes a row (47.3
                                        -> 42.3 us on an H200; the default for
                                        16-bit columns, columns.paired_columns);
                                        4 and 8 columns, split or not: tuner
                                        candidates (columns.column_vectors)
    reduce_col unroll=16 (tag _u16)     its streamed loop as `#pragma unroll 16`:
                                        16 loads in flight a thread, not ptxas's
                                        choice (unroll=0); a tuner candidate
    reduce_split row_threads=32         column sums of x[2^22, 8]: a block's 256
                 block=256              threads take 8 columns, 32 threads each a
                                        row apart, so a warp reads 4 whole rows of
                                        8; they combine through shared memory
                                        (a thread a column: 486.4 -> 64.0 us)
    reduce_split splits=32              few rows, long reductions (sum(x),
                                        column sums of a wide tensor): blocks
                                        reduce chunks into partials, a second
                                        kernel combines them and finishes
    reduce_split vec=4 splits=64        softmax over M of f32 [4096, 4096]: the
                                        max and sum(exp(x - max)) of each column
                                        in one online pass, chunks' (m, s) pairs
                                        combined by the second kernel, where a
                                        kernel each read x twice (three kernels
                                        98.5 -> two 63.5 us on an H200;
                                        columns.online_pair_split)
    matmul wgmma tile=(128,128,64) splits=32  256x256x65536 f16: 4 output tiles
                                        would leave 128 of 132 SMs idle; 32
                                        chunks of K make 128 blocks that store
                                        f32 partials, and a second kernel adds
                                        them and runs the epilogue (tag _sk)
    matmul wgmma tma=True (tag _tma)    4096^3 f16: one thread starts each tile's
                                        copies by the tensor memory accelerator
                                        and a barrier per stage counts their
                                        bytes, where all 256 threads issued 12
                                        cp.async each (219 registers -> 154;
                                        615 -> 732 TFLOP/s on an H200)
    matmul wgmma tma=True persistent=True (tag _pst)  16384^2x512 f16: 8192 output
                                        tiles, each a block paying its launch
                                        and first copies' latency -> one block
                                        per SM loops over them, the next tile's
                                        copies in flight during this one's
                                        epilogue (583 -> 527 us on an H100; a
                                        tuner candidate: slower at 4096^3)
    matmul wgmma tma=True specialized=True (tag _ws)  8192x8192x1024 f16: a
                                        thread of the multiplying warpgroups
                                        starts the copies after a block-wide
                                        barrier per K tile, and the results
                                        leave from every thread -> a producer
                                        warpgroup starts them as each stage is
                                        released, and the results leave by TMA
                                        from shared memory (607.5 -> 695-698
                                        TFLOP/s, persistent, H100; the default
                                        for K <= 2048, and a block a tile for
                                        the 64x128 tile over long K: 1024^2 x
                                        8192 486-501 -> 534-546; and split K
                                        ways, a block a tile and chunk, for
                                        few tiles over a long K: 256^2 x 65536
                                        40 -> 35 us, 0.90x cuBLAS; elsewhere a
                                        tuner candidate)
    matmul wgmma specialized=True cluster=2 (tag _c2)  3000^3 f16: every block
                                        copies its whole B tile from L2, each
                                        128-byte piece of a 6000-byte row over
                                        five 32-byte sectors -> blocks in pairs
                                        (a cluster) on tiles one above the
                                        other each copy half of B into both
                                        (TMA multicast): 424 -> 507 TFLOP/s
                                        under sustained load (128x192 tiles),
                                        8192x3000x4096 548 -> 623-633 (128x256;
                                        H100; the default there,
                                        matmul.paired_schedule)
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from ..errors import TdslScheduleError
from ..ir.graph import reaches
from .layout import column_loop, row_major

_KINDS = ("pointwise", "reduce_row", "reduce_col", "reduce_split", "matmul")
MAX_ROW_ELEMENTS = 32      # elements of a row one thread may keep in registers
MAX_PACKED_ROW_ELEMENTS = 64   # the same, 16-bit elements in vectors (two a register: the same 128 bytes)
THREADS_PER_SM = 2048      # resident threads an SM holds (sm_80, sm_90)
REGISTERS_PER_SM = 65536
MAX_SHARED_BYTES = 227 * 1024   # dynamic shared memory per block on sm_90 (sm_80: 163 KB)
ROW_CLUSTERS = (2, 4, 8)    # reduce_row: blocks of a cluster sharing a row (8: the portable maximum)
# Shared memory an SM gives its blocks (sm_90, sm_100: 228 KB, a block at most 227; sm_80, sm_87:
# 164 and 163; else, as sm_86, sm_89 and sm_120, 100 and 99), and what a block takes besides a
# row copied there (its reductions' slots; the KB the driver keeps a block).
SHARED_PER_SM = {"sm_80": 164 << 10, "sm_87": 164 << 10, "sm_90": 228 << 10, "sm_90a": 228 << 10,
                 "sm_100": 228 << 10, "sm_100a": 228 << 10}
SHARED_PER_SM_DEFAULT = 100 << 10
SHARED_ROW_RESERVE = 2 << 10
MAX_ROW_STAGES = 4         # reduce_row: rows in a thread's shared-memory ring
MAX_RING_BYTES = 40 * 1024  # a row ring's static shared memory (of the 48 KB a block has without opting in)
R40_THREADS = 1536         # reduce_row: resident threads per SM that 40 registers a thread allow
ROW_THREAD_BUDGETS = (R40_THREADS, THREADS_PER_SM)   # min_blocks * block beyond the usual 1024
BUDGETED_THREADS = 1024    # resident threads a kernel's registers are budgeted for (64 registers a thread)
F64_MATH_THREADS = 512     # the same where it computes f64 functions (128 registers)
# f64 operations that CUDA computes in long sequences holding many 8-byte temporaries
F64_MATH_OPS = frozenset(("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
                          "gelu", "gelu_tanh", "silu", "erf", "div", "pow"))
TRANSPOSE_TILES = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)   # pointwise: sides of a transposing tile
MAX_STATIC_SHARED = 48 * 1024    # static shared memory a block has without opting in
# Element ops worth a register to avoid computing twice (Schedule.keep), and whose rows are
# bound by instructions more than by memory (codegen's rows without branches).
COSTLY_OPS = frozenset({"exp", "exp2", "log", "log2", "sin", "cos", "tanh", "sigmoid", "gelu", "gelu_tanh",
                        "silu", "erf", "pow", "div", "sqrt", "rsqrt"})
STREAM_UNROLLS = (0, 1, 2, 4, 8, 16)   # a streamed loop's explicit unroll (0: the compiler's rule)


_INT_FIELDS = ("block", "vec", "items", "row_threads", "blocks_per_sm", "splits", "stages", "group",
               "min_blocks", "unroll", "cluster")
_BOOL_FIELDS = ("hoist", "keep", "prefetch", "mma", "wgmma", "index64", "tma", "persistent", "online", "peel",
                "specialized", "outer", "shared_row", "straddle", "last_block", "shift", "guarded")


def stream_words(s: "Schedule", layout) -> tuple[float, bool]:
    """What one iteration of a streamed loop of `s` over `layout` loads a thread: its
    4-byte words (the inputs over reduced dims, `vec` elements each, an element read
    alone taking a register of its own; in a row reduction read one by one or peeled, only
    the inputs that change from row to row: a weight over N comes from L1; in a full
    reduction's one row, all of them), and whether any of them has 8-byte elements. A row
    read one by one also counts 2 words for each 8-byte result it stores along the row:
    its last phase's loop holds them as it holds the loads (an f64 result of a full max over
    i8 [1000, 5], stored transposed beside a bf16 copy, spilled 20 bytes at 64 registers
    on sm_90a unrolled 16 deep; the codegen fuzz, 2026-12-04)."""
    kept = set(layout.kept_loops)
    streamed = list(layout.reduced_inputs)
    if s.kind == "reduce_row" and (s.vec == 1 or s.peel) and kept:
        streamed = [op for op in streamed if set(op.loops) & kept]
    # vectors of columns: an input not along the columns (x of x @ W) is one element
    columns = column_loop(layout) if column_vector(s, layout) > 1 else None
    words = sum(op.dtype.itemsize / 4 * s.vec if s.vec > 1 and (columns is None or columns in op.loops)
                else max(1.0, op.dtype.itemsize / 4) * (s.vec if columns is None else 1) for op in streamed)
    if s.kind == "reduce_row" and s.vec == 1:
        words += sum(2.0 for op in layout.outputs
                     if op.dtype.itemsize == 8 and set(op.loops) & set(layout.reduced_loops))
    # at least one word a row read one by one; at least half a word in any loop (a sum of a scalar
    # parameter streams nothing)
    return max(1.0 if s.kind == "reduce_row" and s.vec == 1 else 0.5, words), \
        any(op.dtype.itemsize == 8 for op in layout.reduced_inputs)


def column_vector(s: "Schedule", layout) -> int:
    """Columns a thread of `s` takes at once: its vector, for a column or split reduction
    across memory (along the kept loop innermost in memory, `layout.column_loop`); else 1."""
    return s.vec if s.kind in ("reduce_col", "reduce_split") and not row_major(layout) else 1


def stream_unroll_rule(s: "Schedule", words: float, wide: bool = False, held: float = 0.0) -> int:
    """The unroll of a streamed loop of `s` whose iteration loads `words` 4-byte
    words a thread (`stream_words`), where the schedule leaves it to the compiler (unroll=0): 16
    words in flight where an iteration loads more than one 16-byte vector, or one
    of 8-byte elements (`wide`: f64 or i64 converted to f32 spilled 8 bytes under
    ptxas's own unroll, sm_90a 2026-11-23), else 0: ptxas decides. A looped row
    read one element at a time (vec 1: a row length that breaks 16-byte
    alignment) is unrolled 16 deep: ptxas unrolls it about 4 deep, too few loads
    in flight (H100 2026-11-23, µs, ptxas / 16: softmax 2048x50257 597 / 352,
    256x200003 405 / 350; logsumexp 2048x50257 167 / 164; layernorm 251 / 250;
    rmsnorm 223 / 226). With several inputs, 16 elements in flight over all of
    them: three f32 inputs 4096x4097 at 512 threads took 162 us unrolled 16 deep,
    95 at 4 (H100 2026-11-25, `tiledsl autotune`). A peeled row (Schedule.peel)
    keeps 16 words of its rows' vectors in flight: 4 vectors of one 16-byte input
    (H200 2026-11-26, scripts/probe_peel.py, 512 threads, us, ptxas / 4: softmax
    f16 4096x50257 332.1 / 275.6, 2048x131075 456.4 / 394.6; f32 610.4 / 577.5;
    rmsnorm bf16 2048x40001 115.2 / 109.6; logsumexp f32 207.4 / 210.4). Where its weights are
    shifted (Schedule.shift), their two vectors each an iteration (`held` words, with 16-bit lanes
    widened: layout.shifted_weight_words) count too: 48
    words in flight at most (a layernorm's f16 rows with f32 w and b, 36 words an iteration,
    spilled 24 bytes at 64 registers unrolled 4 deep, none at 1; sm_90a)."""
    if s.kind == "reduce_row" and s.peel:
        deep = max(1, int(16 // words))
        return max(1, min(deep, int(48 // (words + held)))) if held else deep
    if s.kind == "reduce_row" and s.vec == 1:
        depth = 16
        while depth > 1 and depth * words > 16:
            depth //= 2
        return depth
    return int(16 // words) if words > 4 or (wide and words >= 4) else 0


def ring_bytes(s: "Schedule", inputs: int) -> int:
    """Shared memory of a row ring: every thread's 16-byte vectors of `inputs`
    per-row inputs, for each of its stages."""
    return s.stages * s.items * s.block * 16 * inputs if s.kind == "reduce_row" and s.stages > 1 else 0


def ring_refusal(s: "Schedule", ringed: list) -> str:
    """'' when a row ring can carry these per-row inputs, given as (bytes per
    element, row-contiguous) pairs: each moved in 16-byte cp.async vectors, all
    stages within MAX_RING_BYTES of shared memory; else why not."""
    if not ringed:
        return "a row ring carries per-row inputs and this reduction has none"
    if any(not contiguous or itemsize * s.vec != 16 for itemsize, contiguous in ringed):
        return "a row ring moves row-contiguous inputs in 16-byte vectors"
    if ring_bytes(s, len(ringed)) > MAX_RING_BYTES:
        return (f"the row ring needs {ring_bytes(s, len(ringed)) // 1024} KB of shared memory, "
                f"more than {MAX_RING_BYTES // 1024} KB")
    return ""


def shared_row_operand_refusal(s: "Schedule", copied: list) -> str:
    """'' when a row copied into shared memory (Schedule.shared_row) can carry these
    per-row inputs, given as (bytes per element, contiguous along the row) pairs: each
    moved in 16-byte cp.async vectors; else why not. (Its size: rows.shared_row_refusal.)"""
    if not copied:
        return "a row copied into shared memory carries per-row inputs, and this reduction has none"
    if any(not contiguous or itemsize * s.vec != 16 for itemsize, contiguous in copied):
        return "a row copied into shared memory moves in 16-byte vectors of every per-row input, each along the row"
    return ""


def shared_copy_refusal(p, s: "Schedule", need: int, copy: str = "a row copied into shared memory",
                        subject: str = "the row") -> str:
    """'' when problem `p`'s per-row inputs can go into shared memory by 16-byte cp.async
    vectors (shared_row_operand_refusal, where `copy` names what goes) taking `need` bytes of
    a block's (`subject` takes them), else why not."""
    why = shared_row_operand_refusal(s, [(op.dtype.itemsize, p.row_major() and op.loops[-1] == p.inner)
                                         for op in p.layout.row_inputs])
    if why:
        return why.replace("a row copied into shared memory", copy)
    limit = min(MAX_SHARED_BYTES, SHARED_PER_SM.get(p.arch, SHARED_PER_SM_DEFAULT) - SHARED_ROW_RESERVE)
    if need > limit:
        return (f"{subject} takes {need // 1024} KB of shared memory, more than the {limit // 1024} KB "
                f"a block can have")
    return ""


def _padded_tile(rows: int, bk: int) -> int:
    """16-bit values an mma.sync operand tile takes in shared memory, rows padded
    by 8: [rows][BK + 8] (contiguous along K) or [BK][rows + 8] (along M or N)."""
    return max(rows * (bk + 8), bk * (rows + 8))


@dataclass(frozen=True)
class Schedule:
    kind: str
    block: int = 256            # threads per block
    vec: int = 1                # elements per vector access (a reduction across memory: neighbouring columns a thread)
    items: int = 1              # vectors per thread (reduce_row: 0 = looped)
    row_threads: int = 0        # reduce_row: threads cooperating on one row
    hoist: bool = True          # reduce_row: load row-invariant inputs once per thread
    blocks_per_sm: int = 0      # reduce_row: persistent grid of this many blocks per SM (0: a block per row group)
    keep: bool = False          # reduce_row: keep costly element values in registers between phases
    prefetch: bool = False      # reduce_row (cached): load the block's next row while this one is reduced (into
                                # registers; a row shared by a persistent cluster's blocks: into shared memory)
    splits: int = 0             # reduce_split: chunks of the reduced dims, reduced by separate blocks;
                                # matmul (any kind): split-K, chunks of K summed by a second kernel
    tile: tuple = ()            # matmul: block tile (BM, BN, BK); pointwise: a transposing tile (TI, TJ)
                                # of the innermost loop by a transposed operand's innermost loop
    micro: tuple = ()           # matmul: microtile (TM, TN) per thread; with mma, the warp tile (WM, WN)
    mma: bool = False           # matmul: tensor cores (mma.sync m16n8k16) for f16/bf16 operands
    stages: int = 1             # matmul (mma, 16-byte operands): cp.async pipeline depth; 1 = register prefetch;
                                # reduce_row (cached): a ring of this many rows per thread in shared memory,
                                # filled by cp.async stages - 1 rows ahead of the one being reduced
    group: int = 0              # matmul: launch blocks this many block rows at a time (L2 reuse); 0 = row by row
    wgmma: bool = False         # matmul (sm_90a): warpgroup tensor cores reading swizzled shared memory
    min_blocks: int = 1         # matmul (wgmma, SIMT vec 4), reduce_row, reduce_split: blocks per SM the registers are budgeted for
    unroll: int = 0             # streamed loops (reduce_col, reduce_split, looped reduce_row): #pragma unroll
                                # this many iterations; 0 = the compiler's rule (see codegen reduce())
    index64: bool = False       # 64-bit indexing (any extent product >= 2^31)
    tma: bool = False           # matmul (wgmma): the tensor memory accelerator copies the tiles
                                # (one thread starts them, a barrier per stage counts their bytes)
    persistent: bool = False    # matmul (wgmma, TMA, unsplit): min_blocks blocks per SM loop over the output
                                # tiles; the next tile's first copies start before this one's epilogue;
                                # reduce_row (cluster > 1): only the clusters resident at once, each looping
                                # over rows (tag _pst)
    online: bool = True         # reduce_row, looped (items=0): max(a) and sum(exp(a - max)) in one pass over
                                # the row where the group has them (partition.online_pairs); False: two
                                # passes, the second re-reading the row from L2 (tag _2p)
    peel: bool = False          # reduce_row, vec > 1: a row whose start breaks the vectors' alignment (a
                                # length not a multiple of vec) is read in vectors from its first aligned
                                # element; the few before it and after its last whole vector one at a time,
                                # again by each phase (_pe). Looped (items=0) or held in registers (its
                                # weights then loaded where used: their lanes move with each row's head)
    specialized: bool = False   # matmul (wgmma, TMA, unsplit): a producer warpgroup beside the multiplying ones
                                # starts every copy, refilling a stage as soon as the tensor cores are done
                                # with it (a second barrier per stage), with no block-wide barrier a K tile;
                                # the block loops over output tiles as a persistent one does (tag _ws)
    cluster: int = 1            # matmul (specialized): 2 = blocks in pairs (a cluster) on tiles one above the
                                # other; each copies half of their shared B tile into both (TMA multicast),
                                # so B crosses from L2 once a pair (tag _c2); reduce_row (sm_90): 2, 4 or 8
                                # blocks share each row, each holding its part in registers, and combine
                                # each reduction through their shared memory (tag _c<n>)
    outer: bool = False         # pointwise (not tiled): a thread's items step along the outermost loop (a row
                                # of it apart, blocks along y take `items` rows each), and the inputs without
                                # that loop are loaded once for all of them, not once an item (tag _o)
    shared_row: bool = False    # reduce_row, looped (items=0), a block a row: each thread copies its vectors
                                # of the row's per-row inputs into shared memory once (cp.async, 16 bytes
                                # each), and every phase reads them there; no barrier, each thread reading
                                # only what it copied. For rows too long to hold twice in an SM's registers:
                                # two blocks an SM stage theirs and overlap (tag _sr); rows too long for
                                # one SM's shared memory: a cluster's blocks each copy their share (_c8_sr)
    straddle: bool = False      # pointwise, flat, vec > 1: vectors of the flat index over every loop, which may
                                # run from one row into the next (a row length that is no multiple of vec);
                                # operands without every loop are read lane by lane at each lane's own
                                # coordinates, and the elements after the last whole vector one at a time (_sd)
    last_block: bool = False    # reduce_split: one kernel, not two: the block that finishes last (a counter in
                                # global memory says which) combines every row's partials and finishes the
                                # rows, as the combining kernel would; for few rows, where that kernel's
                                # launch costs more than its work (_lb)
    shift: bool = False         # reduce_row, peeled: its 4- or 2-byte weights over the row (whose lanes move with each
                                # row's head) read in 16-byte vectors from their aligned start and shifted by
                                # the head in registers, not gathered a lane at a time (_sw)
    guarded: bool = False       # reduce_row, looped (items=0), read element by element (vec 1): the loop walks
                                # chunks of its unroll's depth, each element guarded, so the last chunk's
                                # loads are in flight together, not ptxas's remainder loop's one at a time (_gd)

    def __post_init__(self):
        why = self.invalid()
        if why:
            tile = f", tile {'x'.join(map(str, self.tile))}" if self.tile else ""
            raise TdslScheduleError(f"invalid {self.kind} schedule (block {self.block}{tile}): {why}")

    def invalid(self) -> str:
        if self.kind not in _KINDS:
            return f"unknown kind {self.kind}"
        # (a schedule may come from a tuning database, a file: its numbers reach the CUDA text)
        for f in _INT_FIELDS:
            if type(getattr(self, f)) is not int:
                return f"{f} must be an integer"
        for f in _BOOL_FIELDS:
            if type(getattr(self, f)) is not bool:
                return f"{f} must be true or false"
        if any(type(v) is not int for v in self.tile + self.micro) or len(self.tile) > 3 or len(self.micro) > 2:
            return "tile and micro are tuples of integers"
        if self.tile and self.kind not in ("matmul", "pointwise"):
            return "only GEMMs and pointwise kernels take a tile"
        if self.block < 32 or self.block > 1024 or self.block % 32:
            return "block must be a multiple of 32 between 32 and 1024"
        if self.vec not in (1, 2, 4, 8, 16):
            return "vec must be 1, 2, 4, 8 or 16"
        if self.unroll not in STREAM_UNROLLS:
            return f"unroll must be one of {', '.join(map(str, STREAM_UNROLLS))} (0: the compiler's rule)"
        if self.unroll and not self.streamed:
            return "only a streamed loop (a column or split reduction, a looped row: items=0) takes an unroll"
        if not self.online and not (self.kind == "reduce_row" and self.items == 0):
            return "only a looped row reduction (items=0) chooses one pass or two for max and sum(exp) (online)"
        if self.peel and not (self.kind == "reduce_row" and self.vec > 1 and self.row_threads >= 32
                              and not self.prefetch and self.stages == 1
                              or self.kind == "reduce_split" and self.vec > 1 and self.row_threads == self.block):
            return ("only a row reduction read in vectors (vec > 1), a warp or more a row, neither "
                    "prefetched nor staged, or a split one a block a row's chunk, is peeled to aligned vectors")
        if self.shift and not (self.peel and self.kind == "reduce_row" and self.vec % 4 == 0):
            return ("only a peeled row reduction in vectors of 4, 8 or 16 shifts its weights' 16-byte vectors "
                    "by each row's head (shift)")
        if self.guarded and not (self.kind == "reduce_row" and self.items == 0 and self.vec == 1
                                 and self.row_threads >= 32 and not self.shared_row):
            return ("only a looped row reduction (items=0) read element by element (vec 1), a warp or more a "
                    "row, walks guarded chunks (guarded)")
        if self.prefetch and self.kind != "reduce_row":
            return "only a row reduction prefetches its next row"
        if self.stages < 1 or (self.stages > 1 and self.kind not in ("matmul", "reduce_row")):
            return "only GEMMs and row reductions have cp.async stages (stages >= 2)"
        if self.tma and not (self.kind == "matmul" and self.wgmma):
            return "only the warpgroup GEMM (wgmma) copies its tiles by TMA"
        if self.persistent and not (self.tma and not self.splits) and not (self.kind == "reduce_row"
                                                                           and self.cluster > 1):
            return ("only the TMA-fed warpgroup GEMM, unsplit, and a row shared by a cluster's blocks "
                    "loop over their tiles or rows (persistent)")
        if self.specialized and not (self.tma and not (self.splits and self.persistent)):
            return ("only the TMA-fed warpgroup GEMM has a producer warpgroup (specialized); "
                    "split K ways, it runs a block a tile and chunk (not persistent)")
        if self.cluster not in (1, 2) + ROW_CLUSTERS:
            return ("cluster is 1 (blocks alone), 2 (a GEMM's pairs sharing B tiles) or "
                    f"{', '.join(map(str, ROW_CLUSTERS))} (a row reduction's blocks sharing a row)")
        if self.cluster > 1 and self.kind == "reduce_row":
            if self.row_threads != self.block or self.stages > 1 or self.blocks_per_sm:
                return ("a row shared by a cluster of blocks has a block's threads all on it, and is "
                        "neither staged nor given blocks an SM (a persistent grid of clusters: persistent)")
            if self.prefetch and not self.persistent:
                return ("a row shared by a cluster's blocks prefetches its next row only on a persistent "
                        "grid (persistent), where each cluster has a next row")
        elif self.cluster > 1 and not (self.kind == "matmul" and self.specialized and self.cluster == 2):
            return ("only a GEMM with a producer warpgroup (specialized) pairs its blocks (cluster 2), and "
                    "only a row reduction shares a row among a cluster's blocks")
        if self.min_blocks != 1 and self.kind in ("reduce_row", "reduce_split"):
            if self.min_blocks * self.block not in ROW_THREAD_BUDGETS:
                return (f"a {self.kind[7:]} reduction budgets registers for 1024 threads per SM (min_blocks 1), "
                        f"for {R40_THREADS} or for all {THREADS_PER_SM} (min_blocks {THREADS_PER_SM // self.block})")
        elif self.min_blocks != 1 and self.kind != "matmul":
            return "only row and split reductions and GEMMs choose the blocks per SM their registers are budgeted for"
        if self.shared_row and not (self.kind == "reduce_row" and self.items == 0 and self.vec > 1
                                    and self.row_threads == self.block and self.row_threads >= 32):
            return ("only a looped row reduction (items=0) read in vectors, a block (or a cluster's blocks) "
                    "a row, copies its rows into shared memory (shared_row)")
        if self.outer and (self.kind != "pointwise" or self.tile):
            return "only an untiled pointwise kernel walks its items along the outermost loop (outer)"
        if self.straddle and (self.kind != "pointwise" or self.tile or self.vec < 2):
            return ("only an untiled pointwise kernel walking in vectors (vec > 1) lets its vectors "
                    "run across rows (straddle)")
        if self.last_block and self.kind != "reduce_split":
            return "only a split reduction has its last block combine the partials (last_block)"
        if self.kind == "reduce_row":
            if self.row_threads not in (1, 2, 4, 8, 16, 32, self.block):
                return "row_threads must be 1, 2, 4, 8, 16, 32 (a row a part of a warp) or the block size"
            if self.row_threads < 32 and (self.prefetch or self.stages > 1):
                return "rows sharing a warp (row_threads < 32) are neither prefetched nor staged"
            if self.items * self.vec > MAX_PACKED_ROW_ELEMENTS:
                return (f"too many elements per thread to keep in registers (at most {MAX_ROW_ELEMENTS}, "
                        f"or {MAX_PACKED_ROW_ELEMENTS} 16-bit ones in vectors)")
            if self.prefetch and self.items < 1:
                return "only a row kept in registers can be prefetched (items >= 1)"
            if self.stages > 1 and (self.items < 1 or self.prefetch or self.stages > MAX_ROW_STAGES):
                return (f"a row ring of 2 to {MAX_ROW_STAGES} stages needs the row kept in registers "
                        f"(items >= 1) and replaces the register prefetch")
        elif self.kind == "reduce_col":
            if self.row_threads != 1 or self.items != 0 or self.vec > 8:
                return "a column reduction has a thread a column (or a vector of up to 8 of them) and loops"
        elif self.kind == "matmul":
            if len(self.tile) != 3 or len(self.micro) != 2:
                return "a matmul needs tile=(BM, BN, BK) and micro=(TM, TN)"
            (bm, bn, bk), (tm, tn) = self.tile, self.micro
            if bm % tm or bn % tn:
                return f"the microtile {tm}x{tn} must divide the tile {bm}x{bn}"
            if self.wgmma:
                # vec is the 16-byte chunk's element count: 8 for f16/bf16, 4 for TF32
                if not self.mma or self.vec not in (4, 8) or not 3 <= self.stages <= 8:
                    return "wgmma tiles move by cp.async in 16-byte chunks (vec 8 or 4) through 3 to 8 stages"
                if bk != 8 * self.vec or bm not in (64, 128) or bn % 64 or not 64 <= bn <= 256:
                    return ("wgmma tiles are 64 or 128 rows by 64 to 256 columns (a multiple of 64), "
                            "with 128 bytes of K (BK = 64 16-bit or 32 TF32 values)")
                if (tm, tn) != (64, bn) or self.block != 128 * (bm // 64 + self.specialized):
                    return ("each warpgroup (128 threads) owns 64 rows and every column of the tile"
                            + (", and one more starts the copies (specialized)" if self.specialized else ""))
                if self.shared_bytes > MAX_SHARED_BYTES:
                    return (f"{self.stages} stages of {bm}x{bn}x{bk} tiles need {self.shared_bytes // 1024} KB "
                            f"of shared memory, more than the {MAX_SHARED_BYTES // 1024} KB a block can have")
                if self.min_blocks not in (1, 2) or self.min_blocks * self.shared_bytes > MAX_SHARED_BYTES + 1024:
                    return "one or two blocks per SM, their stages within the SM's shared memory"
                if self.min_blocks == 2 and bn // 2 > 64:
                    return "two blocks per SM leave 128 registers a thread: at most 64 accumulators"
            elif self.min_blocks != 1 and (self.mma or self.vec != 4 or self.min_blocks != 2):
                return "only the wgmma and vectorized SIMT GEMMs budget registers for two blocks per SM"
            elif self.mma:
                if bk % 16 or tm % 16 or tn % 8:
                    return "mma tiles need BK a multiple of 16 and warp tiles of 16x8 multiples"
                if (bm // tm) * (bn // tn) * 32 != self.block:
                    return f"{(bm // tm) * (bn // tn)} warp tiles take {(bm // tm) * (bn // tn) * 32} threads"
                if self.stages > 1:
                    if self.vec != 8:
                        return "a cp.async pipeline moves its tiles in 16-byte vectors (vec=8)"
                    if bk < 32 or (tn // 8) % 2:
                        return "a cp.async pipeline needs BK of 32 or more and warp tiles 16 columns wide"
                    if self.shared_bytes > MAX_SHARED_BYTES:
                        return (f"{self.stages} stages of {bm}x{bn}x{bk} tiles need {self.shared_bytes // 1024} KB "
                                f"of shared memory, more than the {MAX_SHARED_BYTES // 1024} KB a block can have")
                elif 2 * (_padded_tile(bm, bk) + _padded_tile(bn, bk)) * 2 > MAX_STATIC_SHARED:
                    return "two buffers of these tiles need more than 48 KB of shared memory"
                if (tm // 16) * (tn // 8) * 4 > 128:
                    return "the warp tile's accumulators do not fit in registers"
            elif self.stages > 1:
                return "only the tensor-core GEMM has a cp.async pipeline"
            elif (bm // tm) * (bn // tn) != self.block:
                return f"a {bm}x{bn} tile of {tm}x{tn} microtiles takes {(bm // tm) * (bn // tn)} threads, not {self.block}"
            if self.splits and not 2 <= self.splits <= 64:
                return "split-K takes 2 to 64 chunks of K"
            if not self.mma and self.vec not in (1, 4):
                return "SIMT tiles load f32 one at a time or in 16-byte vectors (vec 1 or 4)"
            if not self.mma and self.vec == 4 and (tm % 4 or tn % 4 or 2 * bk * (bm + bn + 8) * 4 > 48 * 1024):
                return "vectorized SIMT tiles need microtiles of 4x4 blocks and two buffers within 48 KB"
            if not self.mma and bk * (bm + bn + 2) * 4 > 48 * 1024:
                return (f"tiles {bm}x{bn}x{bk} need {bk * (bm + bn + 2) * 4 // 1024} KB of shared "
                        f"memory, more than the 48 KB a block gets without opting in")
            if not self.mma and tm * tn > (128 if self.vec == 4 else 64):
                return f"a {tm}x{tn} microtile does not fit in registers"
            if self.group < 0 or self.group > 64:
                return "group must be between 0 and 64 block rows"
        elif self.kind == "pointwise" and self.tile:
            if len(self.tile) != 2 or any(t not in TRANSPOSE_TILES for t in self.tile):
                return f"a transposing tile is (TI, TJ), each one of {', '.join(map(str, TRANSPOSE_TILES))}"
            if self.vec > 4 or self.items != 1 or self.block * self.vec > self.tile[0] * self.tile[1]:
                return "a transposing tile moves 1, 2 or 4 elements an access (items 1), at least one access a thread"
        elif self.kind == "reduce_split":
            if (self.row_threads < 1 or self.block % self.row_threads or self.row_threads & (self.row_threads - 1)
                    and self.row_threads != self.block) or self.items != 0 or self.splits < 2:
                return ("a split reduction loops with a thread or a block per row (or, across memory, a power "
                        "of two of threads a column of a tile), in 2 or more splits")
        elif self.items < 1:
            return "items must be at least 1"
        return ""

    @property
    def streamed(self) -> bool:
        """Whether the kernel streams its reduced elements through a loop (the rows
        are not kept in registers): what `unroll` applies to."""
        return self.kind in ("reduce_col", "reduce_split") or (self.kind == "reduce_row" and self.items == 0)

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory a launch asks for: the pipelined GEMM's stages
        (room for either layout of each operand, so the size follows from the schedule alone)."""
        if self.kind != "matmul" or not self.mma or self.stages < 2:
            return 0
        bm, bn, bk = self.tile
        if self.wgmma:    # unpadded swizzled 128-byte rows, aligned to 1024 bytes in the kernel
            # + TMA's barriers: a stage's copies landed, and (specialized) its buffers are free again;
            # an unsplit specialized block's results leave through a buffer of their own, 256 bytes of
            # each row at a time (1024-byte aligned: TMA stores them in the 128-byte swizzle)
            return (self.stages * (bm + bn) * 128 + 1024 + ((8 + 8 * self.specialized) * self.stages if self.tma else 0)
                    + (bm * 256 + 1024 if self.specialized and not self.splits else 0))
        return self.stages * (_padded_tile(bm, bk) + _padded_tile(bn, bk)) * 2

    @property
    def register_cap(self) -> int:
        """A row or split reduction's registers per thread when min_blocks blocks must be resident
        (ptxas allocates them in 8s)."""
        return REGISTERS_PER_SM // (self.min_blocks * self.block) // 8 * 8

    @property
    def code(self) -> "Schedule":
        """This schedule less the fields that change only the launch, not the code."""
        return replace(self, blocks_per_sm=0, splits=2 if self.splits else 0)

    @property
    def tag(self) -> str:
        if self.kind == "matmul":
            (bm, bn, bk), (tm, tn) = self.tile, self.micro
            if self.wgmma:
                return (f"mm_wg{'_tf32' if self.vec == 4 else ''}_m{bm}n{bn}k{bk}_s{self.stages}_"
                        + ("tma_" if self.tma else "") + ("pst_" if self.persistent else "")
                        + ("ws_" if self.specialized else "") + (f"c{self.cluster}_" if self.cluster > 1 else "")
                        + (f"b{self.min_blocks}_" if self.min_blocks > 1 else "") + ("sk_" if self.splits else "")
                        + (f"g{self.group}_" if self.group else "") + ("x64" if self.index64 else "x32"))
            return (f"mm{'_tc' if self.mma else ''}_m{bm}n{bn}k{bk}_{'w' if self.mma else 't'}{tm}x{tn}_"
                    f"v{self.vec}_" + (f"s{self.stages}_" if self.stages > 1 else "")
                    + (f"b{self.min_blocks}_" if self.min_blocks > 1 else "")
                    + ("sk_" if self.splits else "")     # split-K (the chunk count is an argument)
                    + (f"g{self.group}_" if self.group else "")
                    + ("x64" if self.index64 else "x32"))
        parts = [{"pointwise": "pw", "reduce_row": "row", "reduce_col": "col", "reduce_split": "split"}[self.kind],
                 f"b{self.block}", f"v{self.vec}", f"i{self.items}"]
        if self.kind == "pointwise" and self.tile:
            parts.append(f"t{self.tile[0]}x{self.tile[1]}")
        if self.outer:
            parts.append("o")
        if self.straddle:
            parts.append("sd")
        if self.kind == "reduce_split":
            parts.append(f"t{self.row_threads}")
            if self.min_blocks > 1:
                parts.append(f"r{self.register_cap}")
            if self.last_block:         # the last block to finish combines the partials
                parts.append("lb")
        if self.kind == "reduce_row":
            parts.append(f"t{self.row_threads}")
            if not self.hoist:
                parts.append("nh")
            if self.keep:
                parts.append("k")
            if self.prefetch:
                parts.append("p")
            if self.stages > 1:         # a cp.async ring of rows in shared memory
                parts.append(f"s{self.stages}")
            if self.min_blocks > 1:     # registers capped for 1536 threads (r40) or all 2048 (r32)
                parts.append(f"r{self.register_cap}")
            if self.cluster > 1:        # a row shared by a cluster's blocks
                parts.append(f"c{self.cluster}")
            if self.persistent:         # ... only the clusters resident at once, looping over rows
                parts.append("pst")
            if self.shared_row:         # the row copied into shared memory once, every phase reading it there
                parts.append("sr")
        if self.unroll:
            parts.append(f"u{self.unroll}")
        if not self.online:
            parts.append("2p")
        if self.peel:
            parts.append("pe")
        if self.shift:
            parts.append("sw")
        if self.guarded:
            parts.append("gd")
        parts.append("x64" if self.index64 else "x32")
        return "_".join(parts)

    def kernel_name(self, kernel: str, group: int, stage: int = 1) -> str:
        # The user's name is a validated identifier; capped so names stay short, a long one
        # keeps a hash of the whole so two names that share their first 32 characters differ.
        if len(kernel) > 40:
            kernel = f"{kernel[:32]}_{hashlib.sha1(kernel.encode()).hexdigest()[:7]}"
        return f"tdsl_{kernel}_g{group}_{self.tag}" + (f"_s{stage}" if stage > 1 else "")


def combine_lanes(s: Schedule) -> int:
    """Threads a row of a split reduction's combining kernel: one where a row has few
    partials, else enough (a power of two, at most 32) that each adds about 8. Adding
    one partial after another, a lone thread waits on L2 once a load: 264 partials took
    it about 10 µs (H100, f16 column sums of 1M x 64: 63.0 µs a call, 51.5 shared)."""
    lanes = 1
    while lanes < min(32, s.block) and s.splits > 8 * lanes:
        lanes *= 2
    return lanes


def costly_elements(group) -> bool:
    """Whether any value of a reduction `group` over its reduced dims is a costly function
    (COSTLY_OPS: exp, ...): what a held row keeps between phases, and what makes rows read
    element by element bound by instructions."""
    return any(v.op in COSTLY_OPS and set(v.dims) & set(group.axes) for v in group.values)


def wide_index_math(group) -> bool:
    """Whether a reduction `group` computes 8-byte values over its reduced dims from indices
    and constants alone (idx() math that loads nothing: no input, no other group's value, no
    reduction's result): ptxas computes a thread's whole share of them ahead of its loads and
    holds them there (registers.PEELED_INDEX_MATH_ELEMENTS)."""
    axes, ids = set(group.axes), {v.id for v in group.values}

    def loaded(u) -> bool:
        return u.op in ("param", "reduce") or u.id not in ids
    return any(v.dtype.itemsize == 8 and set(v.dims) & axes and reaches(v, lambda u: u.op == "idx", ids)
               and not reaches(v, loaded, ids) for v in group.values)


def branchless_elements(group, weights_late: bool) -> bool:
    """Whether rows of `group` read element by element are computed without a branch per
    element where they share a warp (codegen's reduce(); rows.half_warp_row_bytes): a costly
    function in each element bounds them by instructions, and no weight is loaded late
    (the registers that cost were worth more than the branches)."""
    return costly_elements(group) and not weights_late


def computes_f64_math(values) -> bool:
    """Whether any of `values` is an f64 function (F64_MATH_OPS). Under the usual
    64-register cap such kernels spilled (ptxas, sm_90a: an f64 softmax of 1000
    columns 80 spill stores, an f64 layernorm 72); their launch bounds allow 128."""
    return any(v.op in F64_MATH_OPS and v.dtype.name == "f64" for v in values)


def budgeted_threads(group, s: "Schedule") -> int:
    """Resident threads per SM a pointwise or reduction kernel's launch bounds
    budget registers for, unless its schedule asks for more (`min_blocks`): fewer
    for f64 functions, and for a row held in registers (reduce_row, items > 0) that
    computes 8-byte elements (an f64 result over a row of f16 inputs spilled 2 bytes at
    64 registers on sm_80, 512 threads holding 32 elements each; codegen fuzz)."""
    axes = set(group.axes)
    wide_held_row = s.kind == "reduce_row" and s.items > 0 and any(
        v.dtype.itemsize == 8 and set(v.dims) & axes for v in group.values)
    return F64_MATH_THREADS if computes_f64_math(group.values) or wide_held_row else BUDGETED_THREADS


def resident_blocks(group, s: "Schedule") -> int:
    """Blocks of `s` an SM is asked to hold at once, the second number of its launch
    bounds: `min_blocks` where a row or split reduction asks for more than one, else as
    many as its register budget allows (budgeted_threads)."""
    if s.kind in ("reduce_row", "reduce_split") and s.min_blocks > 1:
        return s.min_blocks
    return max(1, budgeted_threads(group, s) // s.block)
