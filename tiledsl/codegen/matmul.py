"""GEMM kernels' contexts: the SIMT tiled GEMM, its split-K combining kernel, and the
tensor-core (mma.sync) and warpgroup (wgmma) GEMMs. A mixin of codegen.cuda's renderer,
which holds the indexing, uniform values and element bodies the prologues and epilogues
are made of."""
from __future__ import annotations

from ..errors import TdslCompileError
from ..ir.graph import Value
from ..schedule.layout import batched_operands, gemm_result_in_rows, operand_input
from .params import reg_type, staged_columns, storage_type, tma_stored_result
from .values import to_storage


class MatmulRendering:
    def matmul(self) -> dict:
        """A tiled GEMM: operand tiles are computed through their prologue into
        shared memory, each thread accumulates a TMxTN microtile in registers,
        and the epilogue runs on the accumulators before the only store."""
        lay = self.layout
        mm = next(v for v in self.group.values if v.op == "matmul")
        a, b = mm.operands
        n_kept = lay.n_kept
        lm, ln, lk = n_kept - 2, n_kept - 1, n_kept
        uniform, uniform_ids = self.uniform_lines()
        available = lambda v: v.id in uniform_ids  # noqa: E731
        acc_t = reg_type(mm.dtype)

        def tile_load(operand, rows_loop, cols_loop, rows, cols, name):
            # Threads walk the tile along the operand's innermost memory dim (coalesced).
            inputs = [op for op in lay.inputs if op.value.id == operand.id]
            inner = inputs[0].loops[-1] if inputs else cols_loop
            fast, slow = (cols_loop, rows_loop) if inner == cols_loop else (rows_loop, cols_loop)
            n_fast = cols if fast == cols_loop else rows
            body = self.direct_body([operand], available)
            return dict(name=name, rows=rows, cols=cols, fast=fast, slow=slow, n_fast=n_fast,
                        rows_loop=rows_loop, cols_loop=cols_loop, body=body,
                        value=f"({acc_t})(v{operand.id})")
        bm, bn, bk = self.s.tile
        tm, tn = self.s.micro
        outs = []
        for op in lay.outputs:
            outs.append(f"out{op.index}[{self.offset(op)}] = {to_storage(f'v{op.value.id}', op.dtype)};")
        epilogue = self.direct_body([op.value for op in lay.outputs],
                                    lambda v: available(v) or v.id == mm.id)
        vector = None
        if not self.s.mma and self.s.vec == 4:     # plain f32 operands in 16-byte vectors
            vector = dict(a=dict(self.operand_tile(a, lm, "As"), p="a"),
                          b=dict(self.operand_tile(b, ln, "Bs"), p="b"))
            if not (vector["a"]["vector"] and vector["b"]["vector"]):
                raise TdslCompileError(f"schedule {self.s.tag}: vectorized SIMT tiles need both operands "
                                       f"as plain f32 inputs in 16-byte vectors")
        return dict(
            vector=vector,
            acc_t=acc_t, bm=bm, bn=bn, bk=bk, tm=tm, tn=tn, uniform=uniform,
            min_blocks_per_sm=self.s.min_blocks,
            # every GEMM template names the product index bz (blockIdx.z, or its share of it under split-K)
            batch_coords=self.coords(list(range(n_kept - 2)), "bz"),
            splits=bool(self.s.splits),
            lm=lm, ln=ln, lk=lk, mm=mm.id,
            a_tile=tile_load(a, lk, lm, bk, bm, "As"),   # As[k][m]
            b_tile=tile_load(b, lk, ln, bk, bn, "Bs"),   # Bs[k][n]
            epilogue=epilogue, stores=outs)

    def matmul_splitk(self) -> dict:
        """A split-K GEMM's combining kernel: `matmul`'s epilogue and stores at
        coordinates decomposed from a thread's element index."""
        ctx = self.matmul()
        n_kept = self.layout.n_kept
        return dict(ctx, threads=self.s.block, coords=self.coords(list(range(n_kept)), "(idx_t)e"),
                    total=" * ".join(f"(long long)n{l}" for l in range(n_kept)))

    def operand_tile(self, operand: Value, row_loop: int, name: str) -> dict:
        """How one GEMM operand's tile is read: its input (looking through
        transposes), its contiguous ("fast") loop, and whether it moves in the
        schedule's 16-byte vectors."""
        lay = self.layout
        mm = next(v for v in self.group.values if v.op == "matmul")
        lm, ln, lk = lay.n_kept - 2, lay.n_kept - 1, lay.n_kept
        bm, bn, bk = self.s.tile
        bases = {lm: "base_m", ln: "base_n", lk: "base_k"}
        sizes = {lm: bm, ln: bn, lk: bk}
        uniform_ids = set(self.uniform_lines()[1])
        source = operand_input(lay, operand)
        inputs = [source] if source is not None else []
        inner = inputs[0].loops[-1] if inputs else lk
        fast, slow = (lk, row_loop) if inner == lk else (row_loop, lk)
        # A plain input of the operand type moves as 16-byte vectors (the
        # launcher asks for them only where extents and alignment allow).
        vector = (bool(inputs) and self.s.vec * operand.dtype.itemsize == 16
                  and operand.dtype.name == mm.operands[0].dtype.name)
        # A tile whose contiguous dim is not K is kept [k][rows] in shared
        # memory (B of x @ w with w[K, N]), so its 16-byte loads store whole.
        return dict(name=name, rows=sizes[row_loop], cols=bk, fast=fast, slow=slow,
                    k_major=fast != lk,
                    n_fast=sizes[fast], fast_base=bases[fast], slow_base=bases[slow],
                    row_loop=row_loop, row_base=bases[row_loop], vector=vector,
                    input=inputs[0].index if inputs else -1,
                    offset=self.offset(inputs[0]) if inputs else "0",
                    body=self.direct_body([operand], lambda v: v.id in uniform_ids), value=operand.id)

    def matmul_mma(self) -> dict:
        """The tensor-core GEMM: as `matmul`, with 16-bit tiles, A as [M][K]
        and B as [N][K] in shared memory, and mma.sync fragments."""
        base = self.matmul()
        mm = next(v for v in self.group.values if v.op == "matmul")
        a, b = mm.operands
        lm, ln = base["lm"], base["ln"]
        bm, bn, bk = self.s.tile
        wm, wn = self.s.micro
        tile = self.operand_tile
        half = a.dtype.name
        a_tile, b_tile = tile(a, lm, "As"), tile(b, ln, "Bs")
        pipelined = self.s.stages > 1
        if pipelined and not (a_tile["vector"] and b_tile["vector"]):
            raise TdslCompileError(f"schedule {self.s.tag}: a cp.async pipeline needs both operands "
                                   f"as plain 16-byte-vector inputs")
        if self.s.wgmma and a.dtype.itemsize == 4 and (a_tile["k_major"] or b_tile["k_major"]):
            raise TdslCompileError(f"schedule {self.s.tag}: wgmma reads TF32 operands contiguous along K only")
        base.update(stages=self.s.stages, buffers=2, group=self.s.group, pipelined=pipelined,
                    a_tile=a_tile, b_tile=b_tile, warps_n=bn // wn, wm=wm, wn=wn,
                    to16="f32_to_f16" if half == "f16" else "f32_to_bf16",
                    ptx_type={"f32": "tf32"}.get(half, half), elem_bytes=a.dtype.itemsize,
                    elem_t=storage_type(a.dtype), k_range=self.tensor_core_k_range())
        return base

    def tensor_core_k_range(self) -> list[str]:
        """Lines naming the product index `bz` and the K tiles a tensor-core block
        multiplies, [first_tile, first_tile + ntiles): all of them, or under split-K
        chunk blockIdx.z % nsplit of them (whole tiles, as the SIMT GEMM splits; the
        last chunks shorter, maybe empty: their partial sums are zeros)."""
        lk, bk = self.layout.n_kept, self.s.tile[2]
        tiles = f"(n{lk} + {bk - 1}) / {bk}"
        if not self.s.splits:
            return [f"const idx_t bz = (idx_t)blockIdx.z, first_tile = 0, ntiles = {tiles};"]
        return ["const idx_t split = (idx_t)blockIdx.z % (idx_t)nsplit, bz = (idx_t)blockIdx.z / (idx_t)nsplit;",
                f"const idx_t all_tiles = {tiles}, per_chunk = (all_tiles + (idx_t)nsplit - 1) / (idx_t)nsplit;",
                "const idx_t first_tile = split * per_chunk < all_tiles ? split * per_chunk : all_tiles;",
                "const idx_t ntiles = all_tiles - first_tile < per_chunk ? all_tiles - first_tile : per_chunk;"]

    def matmul_wgmma(self) -> dict:
        """The warpgroup GEMM: `matmul_mma`'s tiles, read by wgmma through
        descriptors; the accumulator operand list is written out here."""
        ctx = self.matmul_mma()
        bn = self.s.tile[1]
        batched = batched_operands(self.group, self.layout)
        ctx["a_tile"] = dict(ctx["a_tile"], p="a", batched=batched[0])
        ctx["b_tile"] = dict(ctx["b_tile"], p="b", batched=batched[1])
        ctx["min_blocks_per_sm"] = self.s.min_blocks
        ctx["tma"] = self.s.tma
        ctx["persistent"] = self.s.persistent
        ctx["cluster"] = self.s.cluster
        ctx["specialized"] = self.s.specialized
        if self.s.specialized:      # the SM's registers, redistributed (multiples of 8): 40 to the producer
            consumers = self.s.block // 128 - 1
            ctx["producer_registers"] = 40
            ctx["consumer_registers"] = min(256, (65536 // (128 * self.s.min_blocks) - 40) // consumers // 8 * 8)
        # Accumulators 2q and 2q + 1 are neighbours along N: where the only output is
        # N-contiguous, 2 or 4 bytes wide, a pair leaves in one store.
        pair = None
        op = gemm_result_in_rows(self.layout)
        if op is not None:
            bm, bn, _ = self.s.tile
            ld = bn + 16 // op.dtype.itemsize     # rows padded 16 bytes: the pair stores miss each other's banks
            pair = dict(out=op.index, offset=self.offset(op), ctype=storage_type(op.dtype),
                        value=to_storage(f"v{op.value.id}", op.dtype), bytes=op.dtype.itemsize,
                        # the block's results go out through shared memory (the spent stages) in
                        # 16-byte row chunks, where the tile fits there (not in a persistent block:
                        # its stages take the next tile's copies then)
                        # (nor in a specialized one: its producer refills the stages unbarred)
                        staged=(bm * ld * op.dtype.itemsize <= self.s.shared_bytes - 1024
                                and not (self.s.persistent or self.s.specialized)),
                        # a persistent block's warpgroups each stage their 64 rows in a spent stage's
                        # B buffer instead, where 2-byte results fill it exactly; a specialized block's
                        # 2- or 4-byte results in a buffer of their own (Schedule.shared_bytes)
                        wg_staged=((op.dtype.itemsize == 2 and self.s.persistent) or self.s.specialized)
                        and not self.s.splits, ld=ld,
                        tma_store=tma_stored_result(self.layout, self.s) is not None,
                        cw=staged_columns(bn, op.dtype.itemsize) if self.s.specialized else bn)
        ctx["pair"] = pair
        ctx["acc_list"] = "{" + ", ".join(f"%{i}" for i in range(bn // 2)) + "}"
        ctx["acc_operands"] = ", ".join(f'"+f"(acc[{i}])' for i in range(bn // 2))
        return ctx
