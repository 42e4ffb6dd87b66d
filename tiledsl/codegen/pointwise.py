"""Pointwise kernels' statements: the flat walk, the walk along the outermost loop, and
the transposing tile. A mixin of codegen.cuda's renderer, which holds the indexing, loads,
stores and element bodies these walks share."""
from __future__ import annotations

from ..errors import TdslCompileError
from ..schedule.layout import transposed_loop
from .params import reg_type, storage_type
from .values import to_reg, to_storage, vector_lane


class PointwiseRendering:
    def pointwise(self) -> dict:
        uniform, uniform_ids = self.uniform_lines()
        available = lambda v: v.id in uniform_ids  # noqa: E731
        loops = list(range(len(self.layout.loops)))
        B, V = self.s.block, self.vec
        if self.s.outer and self.s.straddle:
            return self.straddled_runs(uniform, available)
        if self.s.outer:    # items a row of the outermost loop apart; inputs without it loaded once
            walk = [f"const idx_t inner = ({' * '.join(f'n{l}' for l in loops[1:])}) / {V};",
                    f"const idx_t lane = (idx_t)blockIdx.x * {B} + threadIdx.x;",
                    f"const idx_t row0 = (idx_t)blockIdx.y * {self.s.items};"]
            item, guard = "", "lane < inner && row0 + j < n0"     # (no flat index t)
            within = self.coords(loops[1:], f"lane * {V}")      # (the same for every item: no division by n0)
            coords = within + ["const idx_t c0 = row0 + j;"]
            once = self.loaded_once(within)
        else:               # items a block apart over the flat index t
            count = " * ".join(f"n{l}" for l in loops) or "1"
            walk = [f"const idx_t total = ({count}) / {V};",
                    f"const idx_t first = (idx_t)blockIdx.x * ({B} * {self.s.items}) + threadIdx.x;"]
            item, guard, once = f"first + (idx_t)j * {B}", "t < total", []
            coords = self.coords(loops, f"t * {V}")
            self.flat_offset = f"t * {V}"
            self.straddle = self.s.straddle
        loads, decl, lanes, stores = self.walk_statements("j", available)
        buffers = [self.buffer_decl(op, 1 if id(op) in self.once else self.s.items) for op in self.layout.inputs]
        tail = self.straddle_tail(count, available) if self.s.straddle else []
        self.flat_offset, self.straddle = "", False
        return dict(items=self.s.items, uniform=uniform, walk=walk, item=item, guard=guard, once=once,
                    buffers=buffers, coords=coords, loads=loads, out_decls=decl, lanes=lanes, stores=stores, tail=tail,
                    rest=[])

    def straddled_runs(self, uniform: list[str], available) -> dict:
        """Vectors that straddle rows, walked along runs of `vec` rows of the outermost loop
        (Schedule.outer and straddle): a run is a whole number of vectors, and vector `lane` of
        every run starts at the same coordinates within its row, so an input without the
        outermost loop (b of x[M, 781] + b[781]) is read lane by lane once for the thread's
        `items` runs, where a flat walk reads it, and finds its coordinates, for every vector.
        The rows after the last whole run (fewer than vec) are walked flat by one more row of
        blocks, `rest`; the elements after the last whole vector, one a thread (straddle_tail)."""
        loops = list(range(len(self.layout.loops)))
        B, V, I = self.s.block, self.vec, self.s.items
        count = " * ".join(f"n{l}" for l in loops)
        walk = [f"const idx_t inner = {' * '.join(f'n{l}' for l in loops[1:])};   // vectors a run",
                f"const idx_t total = ({count}) / {V};",
                f"const idx_t runs = n0 / {V};",
                f"const idx_t slices = (runs + {I - 1}) / {I};",
                f"const idx_t lane = (idx_t)blockIdx.x * {B} + threadIdx.x;",
                f"const idx_t run0 = (idx_t)blockIdx.y * {I};"]
        # (the same for every run: no division by n0)
        within = [f"const idx_t row_in_run = lane * {V} / inner;",
                  f"const idx_t at_in_row = lane * {V} % inner;"] + self.coords(loops[1:], "at_in_row")
        self.straddle, self.flat_offset = True, f"t * {V}"
        once = self.loaded_once(within + ["const idx_t c0 = row_in_run;"])    # (c0: the lanes' carry)
        loads, decl, lanes, stores = self.walk_statements("j", available)
        buffers = [self.buffer_decl(op, 1 if id(op) in self.once else I) for op in self.layout.inputs]
        self.once = set()       # the rows after the last run: a flat walk, a vector a thread
        r_loads, r_decl, r_lanes, r_stores = self.walk_statements("0", available)
        rest = (["const idx_t t = runs * inner + lane;", "if (lane < total - runs * inner) {"]
                + self.coords(loops, f"t * {V}") + r_loads + r_decl + r_lanes + r_stores + ["}"])
        tail = self.straddle_tail(count, available, "blockIdx.x == 0 && blockIdx.y == 0")
        self.flat_offset, self.straddle = "", False
        return dict(items=I, uniform=uniform, walk=walk, item="(run0 + (idx_t)j) * inner + lane",
                    guard="lane < inner && run0 + j < runs", once=once, buffers=buffers,
                    coords=within + [f"const idx_t c0 = (run0 + (idx_t)j) * {V} + row_in_run;"], loads=loads,
                    out_decls=decl, lanes=lanes, stores=stores, tail=tail, rest=rest)

    def loaded_once(self, coords: list[str]) -> list[str]:
        """A walk along the outermost loop's loads of the inputs without that loop (`once`),
        at a thread's coordinates within a row (`coords`), before its items."""
        self.once = {id(op) for op in self.layout.inputs if 0 not in op.loops}
        loads = [line for op in self.layout.inputs if id(op) in self.once for line in self.load_lines(op, "0")]
        return ["if (lane < inner) {"] + coords + loads + ["}"]

    def walk_statements(self, slot: str, available) -> tuple:
        """(loads, result declarations, the lanes' loop, stores) of one item `slot` of a
        pointwise walk, its coordinates c<loop> already found."""
        loads = []
        self.guard_loads([op for op in self.layout.inputs if id(op) not in self.once], available)
        for op in self.layout.inputs:
            loads += self.load_lines(op, slot) if id(op) not in self.once else []
        decl, lanes, stores = [], [], []
        for op in self.layout.outputs:
            d, l, s = self.store_lines(op, slot)
            decl += d
            lanes += l
            stores += s
        body = self.element_body(self.group.outputs, available, slot, lanes)
        return loads, decl, self.lane_loop(body), stores

    def lane_coords(self) -> list[str]:
        """Lane e's own coordinates d<loop> in a walk whose vectors straddle rows: the
        vector's first element's (c<loop>) with e added to the innermost one, carried into
        the loops outside it where it passes the end of its row (once at most: the innermost
        extent is at least a vector, straddle_vector)."""
        loops = list(range(len(self.layout.loops)))
        inner = loops[-1]
        lines = [f"idx_t d{l} = c{l}{' + e' if l == inner else ''}; (void)d{l};" for l in loops]
        # (the outermost loop never passes its end: whole vectors only)
        carry = "".join(f"if (d{l} >= n{l}) {{ d{l} -= n{l}; ++d{l - 1}; " for l in reversed(loops[1:]))
        if carry:
            lines.append(carry + "}" * (len(loops) - 1))
        return lines

    def straddle_tail(self, count: str, available, first_block: str = "blockIdx.x == 0") -> list[str]:
        """The elements after the last whole vector of a walk whose vectors straddle rows (at
        most vec - 1 of them), one a thread of the first block, with no vectors."""
        loops = list(range(len(self.layout.loops)))
        with self.one_lane():
            self.straddle, self.flat_offset = False, "t"
            loads, decl, lanes, stores = self.walk_statements("0", available)    # (its guards for one lane)
            buffers = [self.buffer_decl(op, 1) for op in self.layout.inputs]
        return (["{   // the elements after the last whole vector, one a thread",
                 f"const idx_t t = total * {self.s.vec} + threadIdx.x;",
                 f"if ({first_block} && t < ({count})) {{"]
                + self.coords(loops, "t") + buffers + loads + decl + lanes + stores + ["}", "}"])

    def pointwise_tiled(self) -> dict:
        """A transposing tile (`Schedule.tile`): the operands that span the innermost
        loop i across it (contiguous along loop j) pass through shared memory; each
        access moves `vec` elements along i (or, for those, along j): lanes e."""
        lay = self.layout
        i, j = len(lay.loops) - 1, transposed_loop(lay)
        if j is None:
            raise TdslCompileError(f"schedule {self.s.tag}: a transposing tile needs an operand laid "
                                   f"out across the innermost loop")
        uniform, uniform_ids = self.uniform_lines()
        vals = self.closure(self.group.outputs, lambda v: v.id in uniform_ids)
        used = self.used_ids(self.group.outputs, lambda v: v.id in uniform_ids, {})
        staged, staged_in, loads, body = [], [], [], []
        for op in lay.inputs:
            if op.value.id not in used or op.value.id in uniform_ids:
                continue
            S, k, at = storage_type(op.dtype), op.index, f"in{op.index} + {self.offset(op)}"
            if i not in op.loops:           # the same value for every lane
                loads.append(f"const {S} b{k} = in{k}[{self.offset(op)}];")
                lane = to_reg(f"b{k}", op.dtype)
            elif op.loops[-1] == i:         # contiguous along i: one vector
                loads.append(f"const tdsl::Vec<{S}, V> b{k} = tdsl::load<{S}, V>({at});")
                lane = vector_lane(f"b{k}", op.dtype)
            else:                           # across: through shared memory, read along j
                # staged as stored: a 16-bit tile takes half the shared memory it would as f32
                name = f"s_in{k}"
                staged.append(dict(name=name, ctype=S))
                staged_in += [f"const tdsl::Vec<{S}, V> r{k} = tdsl::load<{S}, V>({at});", "#pragma unroll",
                              f"for (int e = 0; e < V; ++e) {name}[ii][jj + e] = r{k}.v[e];"]
                lane = to_reg(f"{name}[ii + e][jj]", op.dtype)
            body.append(f"const {reg_type(op.dtype)} v{op.value.id} = {lane};")
        body += [self.define(v) for v in vals]
        decls, stores, staged_out = [], [], []
        for op in lay.outputs:
            S, k, at = storage_type(op.dtype), op.index, f"out{op.index} + {self.offset(op)}"
            if op.loops[-1] == i:           # as the flat walk stores it
                d, lane, st = self.store_lines(op, "")
                decls, stores = decls + d, stores + st
                body += lane
            else:
                name = f"s_out{k}"
                staged.append(dict(name=name, ctype=S))
                body.append(f"{name}[ii + e][jj] = {to_storage(f'v{op.value.id}', op.dtype)};")
                staged_out += [f"tdsl::Vec<{S}, V> w{k};", "#pragma unroll",
                               f"for (int e = 0; e < V; ++e) w{k}.v[e] = {name}[ii][jj + e];",
                               f"tdsl::store<{S}, V>({at}, w{k});"]
        others = [l for l in range(len(lay.loops)) if l not in (i, j)]
        return dict(ti=self.s.tile[0], tj=self.s.tile[1], i=i, j=j, uniform=uniform, staged=staged,
                    rest=" * ".join(f"n{l}" for l in others) or "1", rest_coords=self.coords(others, "rest"),
                    staged_in=staged_in, loads=loads, out_decls=decls, lanes=self.lane_loop(body),
                    stores=stores, staged_out=staged_out)

