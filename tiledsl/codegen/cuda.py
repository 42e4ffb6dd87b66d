"""Group + layout + schedule → CUDA C++ source.

Python makes every decision and writes the statements; the Jinja templates
in templates/ only lay out the skeleton. Every identifier in the output is
generated here (v<id>, in<k>, out<k>, n<loop>, s<param>), and every number is
re-printed from its parsed value, so no text of the user's file reaches CUDA.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import numpy as np

from ..dtypes import DType
from ..errors import TdslCompileError, TdslError, TdslScheduleError
from ..ir.graph import Graph, Value, reaches
from ..resources import resource_dir
from ..schedule.guards import deciding_lane, load_guards
from ..schedule.layout import (Layout, Operand, column_loop, over_every_loop, peeled_operands, row_major,
                               shifted_weight_words, shifted_weights)
from ..schedule.partition import Group, online_pair_alone, online_pairs, reduction_levels
from ..schedule.schedules import (COSTLY_OPS, Schedule, column_vector, branchless_elements,
                                  resident_blocks, ring_refusal, shared_row_operand_refusal, stream_unroll_rule,
                                  stream_words)
from .matmul import MatmulRendering
from .pointwise import PointwiseRendering
from .params import kernel_params, reg_bytes, reg_type, storage_type
from .values import literal, to_reg, to_storage, vector_lane


@lru_cache(maxsize=1)
def _env():
    import jinja2   # imported on first render only: a warm cache never renders
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True)


@lru_cache(maxsize=1)
def _helpers() -> str:
    """templates/tdsl.cuh and tdsl_vectors.cuh, inserted as they are: plain CUDA, never rendered
    by Jinja (two files: each within the line count its tests watch)."""
    return "".join((resource_dir("templates") / name).read_text() for name in ("tdsl.cuh", "tdsl_vectors.cuh"))


def moves_prefetched_rows(row_inputs, hoisted_inputs) -> bool:
    """Whether a prefetching row kernel loads every row, the first too, into its prefetch
    buffers p<k> and moves it to b<k> at the top of its iteration, the loads unconditional
    (clamped to the last row and vector; reduce.cu.j2, prefetch_moved): rows not all f16 whose
    hoisted weights are wider than 16 bits. Loaded straight into b<k> under branches, such a
    row's first loads shared a ptxas scoreboard with the prefetch, so each row's first read
    waited for the next row to land (H200 2026-11-29, µs, straight / moved: bf16 layernorm with
    f32 weight and bias 4096x8192 50.3 / 39.2, 2048x8192 27.7 / 22.4; f32 2048x6144 31.4 / 30.6).
    f16 rows are not moved: ptxas waits for their first row before the loop, and moved they
    were slower (4096x8192 39.2 / 40.0, 2048x6144 19.0 / 20.4); nor rows with 16-bit weights,
    which did not wait, and moved took more registers (bf16 with bf16 weights: 50 / 54, and
    spilled 16 bytes under NVRTC 13.0). tests/test_codegen.py checks the scoreboards in SASS."""
    return (not all(op.dtype.name == "f16" for op in row_inputs)
            and any(op.dtype.itemsize > 2 for op in hoisted_inputs))


_UNARY_FN = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu",
             "gelu", "gelu_tanh", "silu", "erf", "floor", "ceil", "abs"}
_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "lt": "<", "le": "<=", "gt": ">",
          "ge": ">=", "eq": "==", "ne": "!=", "and": "&&", "or": "||"}
# f32 functions whose every use rounds them to f16 or bf16 (a 16-bit program's math:
# `bf16(gelu(f32(x)))`) are computed with the hardware's approximations (tdsl::<op>_narrow,
# within ~1e-5 relative): the rounding hides the difference.
_NARROW_FN = {"exp", "sigmoid", "silu", "gelu"}
# An f32 exp whose value reaches 16-bit results only through products, quotients and
# reductions (a 16-bit softmax: exp -> sum -> divide -> f16) runs on ex2.approx without
# flushing subnormals (tdsl::exp_approx, 5 instructions for expf's 8): each step keeps the
# relative error (~1e-6; a sum of positive values too), far under a 16-bit result's
# rounding. A softmax f16 over 4096x16384 ran 75.2 -> 70.4 us on an H200 (expf had made it
# bound by instructions). Paths of at most APPROX_STEPS steps; any other use keeps expf.
APPROX_STEPS = 4
# Elements a thread takes at once in a looped row's online max and sum (where the loop
# has no unroll of its own): their max, one rescale, independent exps. Element by
# element, each step waited on the last and diverged where the max grew (H100, softmax
# f16 4096x50257: 773.3 us; chunks of 16, 501.8).
ONLINE_CHUNK = 8
# Steps of a column walk summed apart before they join its running float sums: a thread walks
# all of a column (reduce_col), and 4 million f32 through one chain lose about 1e-5 of the sum
COLUMN_SUM_BLOCK = 256
# A line of a phase's finish that reduce.cu.j2 replaces by a prefetching cluster's copies of
# its next row (_Renderer.mark_next_row)
NEXT_ROW_MARK = "@next_row"
# A held row that keeps costly values between phases (Schedule.keep) keeps, too, a value a
# later phase needs again that took this many element values to compute: a causal mask's
# where(idx(K) <= idx(Q), s * scale, -inf), five, cost its kernel a fifth of its
# instructions computed twice (softmax f16 32x2048x2048).
KEPT_CHAIN = 3
# Partials a thread of a split reduction's second kernel loads at once before adding them
# (tdsl::combine_partials): one after another, each waited on L2.
GATHER_BATCH = 8
# Ints whose C++ arithmetic may overflow, which is undefined (the compiler folded `x + 1 > x`
# to true): added, subtracted, multiplied and negated by tdsl::wrapping_*, as NumPy wraps.
# Narrower ints compute in int and wrap where stored; unsigned ones wrap by definition.
_WRAPPING = {"i32", "i64"}
_REDUCE_OP = {"sum": "tdsl::Sum", "mean": "tdsl::Sum", "max": "tdsl::Max", "min": "tdsl::Min"}


def _identity(kind: str, d: DType) -> str:
    if kind in ("sum", "mean"):
        return literal(0, d)
    if d.is_float:
        return literal(-math.inf if kind == "max" else math.inf, d)
    info = np.iinfo(d.numpy)
    return literal(info.min if kind == "max" else info.max, d)


def expression(v: Value, coord) -> str:
    """The right-hand side computing `v` from its operands' variables."""
    a = [f"v{o.id}" for o in v.operands]
    op = v.op
    if op == "const":
        return literal(v.attr("value"), v.dtype)
    if op == "idx":
        return f"((long long)({coord(v.attr('dim'))}))"
    if op == "param":       # passed as a double: a 16-bit one rounds to its dtype, as the reference's does
        if v.dtype.name in ("f16", "bf16"):
            return f"tdsl::round_{v.dtype.name}(s{v.attr('index')})"
        return f"(({reg_type(v.dtype)})s{v.attr('index')})"
    if op == "permute":
        return a[0]
    if op == "neg":
        return f"tdsl::wrapping_neg({a[0]})" if v.dtype.name in _WRAPPING else f"(-{a[0]})"
    if op == "not":
        return f"(!{a[0]})"
    if op in _UNARY_FN:
        return f"tdsl::{op}({a[0]})"
    if op in ("add", "sub", "mul") and v.dtype.name in _WRAPPING:
        return f"tdsl::wrapping_{op}({a[0]}, {a[1]})"
    if op in _INFIX:
        return f"({a[0]} {_INFIX[op]} {a[1]})"
    if op in ("pow", "maximum", "minimum"):
        return f"tdsl::{op}({a[0]}, {a[1]})"
    if op == "where":
        return f"({a[0]} ? {a[1]} : {a[2]})"
    if op == "cast":
        src, dst = v.operands[0].dtype, v.dtype
        if dst.name in ("f16", "bf16"):
            inner = a[0] if src.is_float else f"(double)({a[0]})"
            return f"tdsl::round_{'f16' if dst.name == 'f16' else 'bf16'}({inner})"
        if dst.is_bool:
            return f"({a[0]} != 0)"
        if src.is_float and dst.is_integer:     # toward zero, saturating, NaN -> 0 (a C cast out of range is undefined)
            return f"tdsl::to_int<{reg_type(dst)}>({a[0]})"
        return f"(({reg_type(dst)})({a[0]}))"
    raise TdslError(f"internal error: no CUDA for op '{op}'")


def _rounds_to_16_bits(v: Value, users: dict, results: set, steps: int) -> bool:
    """Whether every use of the f32 value `v` reaches only f16/bf16 results, within `steps`
    products, quotients, reductions (a sum only of exp's positive values: no cancellation)
    and the casts that end them; none of it a result itself."""
    if v.id in results or not users[v.id] or steps < 0:
        return False
    for u in users[v.id]:
        if u.op == "cast" and u.dtype.name in ("f16", "bf16"):
            continue
        if u.dtype.name != "f32":
            return False
        through = u.op in ("mul", "div") or (
            u.op == "reduce" and (u.attr("kind") in ("max", "min")
                                  or (u.attr("kind") in ("sum", "mean") and v.op == "exp")))
        if not (through and _rounds_to_16_bits(u, users, results, steps - 1)):
            return False
    return True


def _below_row_max(v: Value, group: Group) -> bool:
    """Whether `v` is exp(a - max(a)), the max over all of the group's reduced axes."""
    if v.op != "exp" or v.operands[0].op != "sub" or not group.axes:
        return False
    a, m = v.operands[0].operands
    return (m.op == "reduce" and m.attr("kind") == "max" and m.operands[0].id == a.id
            and set(m.attr("axes")) == set(group.axes))


def _log_of_row_sum(v: Value, users: dict, results: set) -> bool:
    """Whether every use of `v`, an exp(a - max(a)), is a sum or mean over the max's axes that
    only a log uses: a logsumexp. The sum holds the row's exp(0) = 1, exact on ex2.approx, so
    the approximation's relative error e (~2^-22) in the other terms costs log(sum) at most
    e * log(sum): a relative error under e, and the results it flushes (below 1.2e-38) move
    a sum of at least 1 by nothing f32 holds."""
    axes = set(v.operands[0].operands[1].attr("axes"))
    if v.id in results or not users[v.id]:
        return False
    return all(u.op == "reduce" and u.attr("kind") in ("sum", "mean") and set(u.attr("axes")) == axes
               and u.id not in results and users[u.id] and all(w.op == "log" for w in users[u.id])
               for u in users[v.id])


def _reads(vals: list[Value], roots) -> set[int]:
    """Ids of what computing `vals` (the closure of `roots`) reads, and the roots."""
    return {o.id for v in vals for o in v.operands} | {r.id for r in roots}


@dataclass(frozen=True)
class KernelSource:
    name: str
    source: str
    schedule: Schedule
    layout: Layout


class _Renderer(PointwiseRendering, MatmulRendering):
    def __init__(self, graph: Graph, group: Group, layout: Layout, schedule: Schedule):
        self.graph, self.group, self.layout, self.s = graph, group, layout, schedule
        self.values = {v.id: v for v in group.values}
        self.inputs = {op.value.id: op for op in layout.inputs}
        self.vec = schedule.vec
        self.inner = len(layout.loops) - 1 if layout.loops else None
        self.reciprocal: set[int] = set()   # row values that element values divide by (reduce())
        self.column_tiles = False           # a split reduction across memory, a tile of columns (reduce())
        self.gathered: set[int] = set()     # id()s of a peeled row's operands read lane by lane (reduce())
        self.shifted: set[int] = set()      # ... and of its weights read in vectors shifted by its head (Schedule.shift)
        self.flat_offset = ""               # a full operand's offset in a flat walk (pointwise())
        self.lane_held: dict[int, Value] = {}   # a vector of columns' values held a lane each (reduce())
        self.once: set[int] = set()         # id()s of inputs loaded once for all items (pointwise outer)
        self.straddle = False               # vectors straddle rows (pointwise(): Schedule.straddle)
        self.guard_lines: dict[int, list[str]] = {}     # input id -> whether a vector is needed (guard_loads)
        users, results = graph.users(), {v.id for v in graph.outputs}
        self.narrow = {v.id for v in group.values if v.op in _NARROW_FN and v.dtype.name == "f32"
                       and _rounds_to_16_bits(v, users, results, 0)}      # (every use a 16-bit cast)
        self.approx = {v.id for v in group.values if v.op == "exp" and v.dtype.name == "f32"
                       and v.id not in self.narrow and _rounds_to_16_bits(v, users, results, APPROX_STEPS)}
        # exp(a - max(a)) over the group's whole row: each row holds a 1, so its sums lose nothing
        # where results below f32's normal range are flushed, and those results, below 1.2e-38,
        # are zeros in f16 and next to a 1 in bf16: ex2.approx.ftz (tdsl::exp_narrow), 2
        # instructions where exp_approx keeps them for 5 (a copied vocab softmax, f16
        # 4096x50257: 222.7 us against 214.7 by hand with ftz; BENCHMARKS.md)
        # An f32 logsumexp's exp (its error ends in a log: _log_of_row_sum) on ex2.approx.ftz too: expf's
        # 8 instructions an element made a vocabulary's logsumexp bound by them (bf16 4096x32000 on an
        # H200: 85.8 us, 0.72x copy; ex2.approx.ftz 68.2, and the error to float64 unchanged, 2.4e-8)
        self.below_row_max = {v.id for v in group.values if v.op == "exp" and v.dtype.name == "f32"
                              and v.id not in self.narrow and _below_row_max(v, group)
                              and (v.id in self.approx or _log_of_row_sum(v, users, results))}
        self.approx |= self.below_row_max
        # 16-bit casts of float registers that nothing in this group reads: only stored, and a
        # store rounds (to_storage), so rounding here too cost two conversions an element
        # (an f16 gelu: 32 of 424 SASS instructions for 16 elements).
        self.rounded_by_store = {v.id for v in group.values if v.op == "cast" and v.dtype.name in ("f16", "bf16")
                                 and v.operands[0].dtype.name in ("f32", "f16", "bf16")
                                 and not any(u.id in self.values for u in users[v.id])}

    # -- indexing ------------------------------------------------------------
    def coords(self, loops: list[int], linear: str) -> list[str]:
        """Decompose an element index over `loops` (outer → inner) into c<loop>."""
        lines, rem = [], linear
        for pos, l in enumerate(reversed(loops)):
            if pos == len(loops) - 1:
                lines.append(f"const idx_t c{l} = {rem};")
            else:
                lines.append(f"const idx_t c{l} = {rem} % n{l};")
                lines.append(f"const idx_t q{l} = {rem} / n{l};")
                rem = f"q{l}"
        return lines

    def offset(self, op: Operand, at: dict = None) -> str:
        """`op`'s element offset at the coordinates c<loop> (`at`: loop -> text in their place).
        In a flat walk an operand over every loop in order sits at the flat index itself
        (`flat_offset`): its address needs no coordinates, and where no other operand reads
        them the compiler drops their divisions (a bias and gelu, bf16 [M, N] + [N]: 520
        SASS instructions for 16 elements, the output's address recomputing both)."""
        if at is None and self.flat_offset and over_every_loop(self.layout, op):
            return self.flat_offset
        expr = ""
        for l in op.loops:
            c = (at or {}).get(l, f"c{l}")
            expr = c if not expr else f"({expr}) * n{l} + {c}"
        return expr or "0"

    def mode(self, op: Operand) -> str:
        """How an operand meets the vector lanes of the innermost loop."""
        if self.inner is None:      # no loops: one element (a result computed from scalars)
            return "vec"
        if self.straddle:           # vectors across rows: only an operand over every loop in order holds them
            return "vec" if over_every_loop(self.layout, op) else "lanes" if op.loops else "bcast"
        if self.vec == 1 or self.inner not in op.loops:
            return "bcast" if self.inner not in op.loops else "vec"
        if id(op) in self.shifted:
            return "shifted"
        return "vec" if op.loops[-1] == self.inner and id(op) not in self.gathered else "strided"

    @contextlib.contextmanager
    def one_lane(self):
        """Statements rendered inside this read and write one element at a time (a peeled
        row's head and tail), whatever the schedule's vector."""
        saved = self.vec, self.gathered
        self.vec, self.gathered = 1, set()
        try:
            yield
        finally:
            self.vec, self.gathered = saved

    def inner_stride(self, op: Operand) -> str:
        after = op.loops[op.loops.index(self.inner) + 1:]
        return " * ".join(f"n{l}" for l in after) or "1"

    def coord_of(self, dim: str) -> str:
        l = self.layout.loop_of(dim)
        if self.straddle:
            return f"d{l}"      # (lane_coords)
        return f"(c{l} + e)" if l == self.inner and self.vec > 1 else f"c{l}"

    # -- statements ----------------------------------------------------------
    def load_lines(self, op: Operand, slot: str, buf: str = "b") -> list[str]:
        S, V, k = storage_type(op.dtype), self.vec, op.index
        mode = self.mode(op)
        # A vector a mask leaves unneeded (guard_loads) is read from the tensor's start instead,
        # which every such lane shares from L1: no branch, and the buffer always defined.
        need = self.guard_lines.get(op.value.id) if buf == "b" else None
        at = (lambda off: f"(need{k} ? {off} : 0)") if need else (lambda off: off)
        if mode == "vec":
            lines = [f"{buf}{k}[{slot}].v[0] = in{k}[{at(self.offset(op))}];" if V == 1 else
                     f"{buf}{k}[{slot}] = tdsl::load<{S}, {V}>(in{k} + {at(self.offset(op))});"]
        elif mode == "bcast":
            return [f"{buf}{k}[{slot}] = in{k}[{self.offset(op)}];"]
        elif mode == "shifted":     # from the vector at the row's position less its head, shifted by the head
            base = self.offset(op, {self.inner: f"(c{self.inner} - head)"})
            return [f"{buf}{k}[{slot}] = tdsl::load_shifted<{V}>(in{k} + {base}, (int)head);"]
        elif mode == "lanes":       # each lane's element at its own coordinates (lane_coords)
            off = at(self.offset(op, {l: f"d{l}" for l in op.loops}))
            lines = self.lane_loop([f"{buf}{k}[{slot}].v[e] = in{k}[{off}];"])
        else:
            lines = ["#pragma unroll", f"for (int e = 0; e < {V}; ++e) "
                     f"{buf}{k}[{slot}].v[e] = in{k}[{at(f'{self.offset(op)} + e * ({self.inner_stride(op)})')}];"]
        return (need or []) + lines

    def guard_loads(self, ops: list[Operand], available) -> None:
        """Whether a vector of each of `ops` that a mask may leave unread (guards.py) is
        needed, computed before load_lines loads it: at the lane that decides each of its
        conditions (the first or the last, where they hold on an end), else at every lane."""
        guards = load_guards(self.group)
        lane_dims = set(self.layout.loops[self.inner]) if guards and self.inner is not None else set()
        for op in (op for op in ops if op.value.id in guards):
            k, lines = op.index, [f"bool need{op.index} = false;"]
            for c, taken in guards[op.value.id]:
                body = [self.define(v) for v in self.closure([c], available)] + [
                    f"need{k} |= {'' if taken else '!'}v{c.id};"]
                lane = None if self.straddle else deciding_lane(c, taken, lane_dims) if self.vec > 1 else 0
                lines += self.lane_loop(body) if lane is None else (
                    [f"{{ const int e = {lane % self.vec}; (void)e;"] + body + ["}"])
            self.guard_lines[op.value.id] = lines

    def buffer_decl(self, op: Operand, slots: int, buf: str = "b", zeroed: bool = False) -> str:
        S, k = storage_type(op.dtype), op.index
        init = " = {}" if zeroed else ""
        if self.mode(op) == "bcast":
            return f"{S} {buf}{k}[{slots}]{init};"
        return f"tdsl::Vec<{S}, {self.vec}> {buf}{k}[{slots}]{init};"

    def lane_value(self, op: Operand, slot: str) -> str:
        slot = "0" if id(op) in self.once else slot
        if self.mode(op) == "bcast":
            return to_reg(f"b{op.index}[{slot}]", op.dtype)
        return vector_lane(f"b{op.index}[{slot}]", op.dtype)

    def define(self, v: Value) -> str:
        if v.op == "div" and v.operands[1].id in self.reciprocal:
            return f"const {reg_type(v.dtype)} v{v.id} = (v{v.operands[0].id} * rcp{v.operands[1].id});"
        if v.id in self.narrow:     # rounded to 16 bits where used
            return f"const float v{v.id} = tdsl::{v.op}_narrow(v{v.operands[0].id});" + self.reciprocal_of(v)
        if v.id in self.rounded_by_store:
            return f"const float v{v.id} = v{v.operands[0].id};"
        if v.id in self.approx:     # rounded to 16 bits after products and reductions
            fn = "exp_narrow" if v.id in self.below_row_max else "exp_approx"
            return f"const float v{v.id} = tdsl::{fn}(v{v.operands[0].id});" + self.reciprocal_of(v)
        line = f"const {reg_type(v.dtype)} v{v.id} = {expression(v, self.coord_of)};"
        return line + self.reciprocal_of(v)

    def reciprocal_of(self, v: Value) -> str:
        """After a row value that elements divide by: its reciprocal, once per row."""
        return f" const float rcp{v.id} = 1.0f / v{v.id};" if v.id in self.reciprocal else ""

    def closure(self, roots, available) -> list[Value]:
        """Values of this group that `roots` need, not counting `available` ones, in order."""
        need: set[int] = set()
        stack = list(roots)
        while stack:
            v = stack.pop()
            if v.id in need or available(v) or v.id not in self.values:
                continue
            need.add(v.id)
            stack.extend(v.operands)
        return [v for v in self.group.values if v.id in need]

    def element_body(self, roots, available, slot: str, tail: list[str],
                     kept: dict = None, keep: set = frozenset()) -> list[str]:
        """Per-lane code: read inputs and values kept from earlier phases
        (`kept`: id -> value), compute what `roots` need, store the values
        later phases will reuse (`keep`), then `tail`."""
        kept = kept or {}
        body = []
        vals = self.closure(roots, lambda v: available(v) or v.id in kept)
        used = _reads(vals, roots)
        for op in self.layout.inputs:
            if op.value.id in used and not available(op.value):
                body.append(f"const {reg_type(op.dtype)} v{op.value.id} = {self.lane_value(op, slot)};")
        for vid, v in kept.items():
            if vid in used:
                body.append(f"const {reg_type(v.dtype)} v{vid} = keep{vid}[{slot}][e];")
        body += self.lane_held_reads({vid for vid in used if vid not in kept
                                      and vid in self.lane_held and available(self.lane_held[vid])})
        body += [self.define(v) for v in vals]
        body += [f"keep{v.id}[{slot}][e] = v{v.id};" for v in vals if v.id in keep]
        return body + tail

    def lane_held_lines(self, inputs: list[Operand], vals: list[Value], kv: int) -> list[str]:
        """Vectors of `kv` columns: each lane's column inputs loaded and `vals` computed
        (an idx() of the columns is the lane's own), kept in arrays lane<id>[kv]."""
        held = [op.value for op in inputs] + vals
        if not held:
            return []
        body = [f"const {reg_type(op.dtype)} v{op.value.id} = "
                f"{to_reg(f'in{op.index}[{self.lane_offset(op)}]', op.dtype)};" for op in inputs]
        body += [self.define(v) for v in vals] + [f"lane{v.id}[e] = v{v.id};" for v in held]
        return ([f"{reg_type(v.dtype)} lane{v.id}[{kv}];" for v in held]
                + ["#pragma unroll", f"for (int e = 0; e < {kv}; ++e) {{"] + body + ["}"])

    def lane_held_reads(self, ids: set[int]) -> list[str]:
        """Lane e's copies of the lane-held values among `ids` (lane_held_lines)."""
        return [f"const {reg_type(v.dtype)} v{vid} = lane{vid}[e];"
                for vid, v in self.lane_held.items() if vid in ids]

    def used_ids(self, roots, available, kept: dict) -> set[int]:
        """Ids of the values (inputs among them) that computing `roots` reads."""
        return _reads(self.closure(roots, lambda v: available(v) or v.id in kept), roots)

    def lane_loop(self, body: list[str]) -> list[str]:
        if self.vec == 1:
            return ["{", "const int e = 0; (void)e;"] + body + ["}"]
        coords = self.lane_coords() if self.straddle else []
        return ["#pragma unroll", f"for (int e = 0; e < {self.vec}; ++e) {{"] + coords + body + ["}"]

    def store_lines(self, op: Operand, slot_var: str) -> tuple[list[str], list[str], list[str]]:
        """(declaration before lanes, per-lane assignment, store after lanes)."""
        S, V, k = storage_type(op.dtype), self.vec, op.index
        value = to_storage(f"v{op.value.id}", op.dtype)
        if self.mode(op) == "vec":
            return ([f"tdsl::Vec<{S}, {V}> o{k};"], [f"o{k}.v[e] = {value};"],
                    [f"tdsl::store<{S}, {V}>(out{k} + {self.offset(op)}, o{k});"] if V > 1 else
                    [f"out{k}[{self.offset(op)}] = o{k}.v[0];"])
        return ([], [f"out{k}[{self.offset(op)} + e * ({self.inner_stride(op)})] = {value};"], [])

    def lane_offset(self, op: Operand) -> str:
        """The offset of lane `e`'s element of `op` (the vector's lanes walk the innermost loop)."""
        if self.mode(op) == "bcast":
            return self.offset(op)
        return f"{self.offset(op)} + e * ({self.inner_stride(op)})"

    def uniform_values(self) -> list[Value]:
        """Values without dims computed from scalar parameters and constants only: a
        0-d input (a full reduction another kernel stored) is loaded with the elements."""
        return [v for v in self.group.values if not v.dims and v.op != "reduce"
                and not self.depends_on_reduce(v) and not self.reaches(v, lambda u: u.id in self.inputs)]

    def scalar_params(self) -> list[Value]:
        return [v for v in self.group.inputs if v.op == "param" and not v.dims]

    def uniform_lines(self) -> tuple[list[str], set[int]]:
        """Scalar parameters and values that need no element: computed once."""
        vals = self.scalar_params() + self.uniform_values()
        return [self.define(v) for v in vals], {v.id for v in vals}

    def depends_on_reduce(self, v: Value) -> bool:
        return self.reaches(v, lambda u: u.op == "reduce" and u.id in self.values)

    def reaches(self, v: Value, hit) -> bool:
        """Whether computing `v` in this group reaches a value (its own, or an input
        it reads) for which `hit` holds."""
        return reaches(v, hit, self.values)

    def render(self, name: str, stage: int = 1) -> KernelSource:
        decls, _ = kernel_params(self.group, self.layout, self.s, stage)
        # Asking for 1024 resident threads caps registers at 64: it keeps two
        # 512-thread blocks per SM (measured faster), and without it ptxas
        # sometimes squeezes a 512-thread block into 32 registers and spills.
        # A row or split reduction's schedule may ask for all 2048 (32 registers); f64
        # functions get 128 (schedules.resident_blocks).
        common = dict(name=name, params=decls, block=self.s.block, vec=self.vec, helpers=_helpers(),
                      min_blocks=resident_blocks(self.group, self.s),
                      index_t="long long" if self.s.index64 else "int",
                      extents=[f"const idx_t n{l} = (idx_t)n{l}_arg;" for l in range(len(self.layout.loops))])
        if self.s.kind == "pointwise" and self.s.tile:
            text = _env().get_template("pointwise_tiled.cu.j2").render(**common, **self.pointwise_tiled())
        elif self.s.kind == "pointwise":
            text = _env().get_template("pointwise.cu.j2").render(**common, **self.pointwise())
        elif self.s.kind == "matmul" and stage == 2:    # split-K's combining kernel, whatever ran the chunks
            text = _env().get_template("matmul_splitk.cu.j2").render(**common, **self.matmul_splitk())
        elif self.s.kind == "matmul" and self.s.wgmma:
            text = _env().get_template("matmul_wgmma.cu.j2").render(**common, **self.matmul_wgmma())
        elif self.s.kind == "matmul" and self.s.mma:
            text = _env().get_template("matmul_mma.cu.j2").render(**common, **self.matmul_mma())
        elif self.s.kind == "matmul":
            text = _env().get_template("matmul.cu.j2").render(**common, **self.matmul())
        elif stage == 2:
            text = _env().get_template("reduce_final.cu.j2").render(**common, combine=self.reduce_final())
        else:
            body = self.reduce()    # (before reduce_final: that one reads a thread a row)
            last = self.s.kind == "reduce_split" and self.s.last_block
            text = _env().get_template("reduce.cu.j2").render(
                **common, **body, combine=self.reduce_final(fused=True) if last else None)
        return KernelSource(name, text, self.s, self.layout)

    # -- reductions --------------------------------------------------------------
    def reduce(self) -> dict:
        lay = self.layout
        reduces = [v for v in self.group.values if v.op == "reduce"]
        split = self.s.kind == "reduce_split"
        tpr, rpb = self.s.row_threads, self.s.block // self.s.row_threads
        cluster = self.s.cluster      # (a row reduction's: the GEMM's pairs render elsewhere)
        self.column_tiles = split and 1 < tpr < self.s.block
        # Across memory, a vector is `vec` neighbouring columns (the kept innermost loop), each
        # with its own accumulator: a thread reads vec * itemsize bytes a row, not one element
        kv = column_vector(self.s, lay)
        if kv > 1:      # the lanes walk the columns' loop (c<loop> + e), not the iteration's innermost
            self.inner = column_loop(lay)
            if (tpr != 1 and not self.column_tiles) or self.inner is None:
                raise TdslScheduleError(f"{self.s.tag}: vectors of columns take a thread a column (row_threads 1) "
                                        f"or a split's tile of columns, and inputs contiguous along the columns")
        # A peeled row: vectors from the row's first element aligned in every operand that
        # has all the group's loops (one head a row); a weight over N alone is gathered lane
        # by lane (its alignment differs); the head and tail go one element at a time.
        peel = self.s.peel
        if peel:
            operands = peeled_operands(lay)
            if (split and tpr != self.s.block) or operands is None:
                raise TdslScheduleError(f"{self.s.tag}: a peeled row is looped, reduced along the innermost "
                                        f"dim alone, its operands along it contiguous (rows.peel_refusal)")
            whole, gathered = operands
            self.shifted = {id(op) for op in shifted_weights(lay, self.vec)} if self.s.shift else set()
            self.gathered = {id(op) for op in gathered} - self.shifted
            V, n = self.vec, f"n{self.inner}"
            start = self.offset(whole[0], {self.inner: "0"}) if whole else "0"
            peel_row = [f"const idx_t head_gap = ({V} - ({start}) % {V}) % {V};",
                        f"const idx_t head = head_gap < {n} ? head_gap : {n};   // elements before the first vector",
                        f"const idx_t vend = ({n} - head) / {V};      // whole vectors",
                        f"const idx_t ragged = {n} - vend * {V};     // elements before and after them"]
            if split:   # this block's chunk of the row's whole vectors; the first block takes the rest
                peel_row += ["const idx_t chunk = (vend + gridDim.y - 1) / gridDim.y;",
                             "const idx_t rbegin = (idx_t)blockIdx.y * chunk;",
                             "const idx_t rend = vend < rbegin + chunk ? vend : rbegin + chunk;"]
        if self.column_tiles and row_major(lay):
            raise TdslScheduleError(f"{self.s.tag}: a split reduction shares a row among {tpr} threads of a "
                                    f"block only across memory (rows lie along the innermost dim here: "
                                    f"row_threads 1 or the block)")
        # Rows walked together (every thread of a warp or a block runs the same iterations, since
        # their shuffles or barriers need them all): rows sharing a warp, and a split reduction's
        # tile of columns, `rpb` columns by `tpr` threads each, neighbouring threads on
        # neighbouring columns (a column of x[M, 8] summed: a warp reads 4 rows of 8, 128 bytes).
        together = None
        if self.s.kind == "reduce_row" and tpr < 32:
            together = dict(why=f"a warp's {32 // tpr} rows, walked together: its shuffles need all 32 lanes",
                            first="(idx_t)blockIdx.x * RPB + threadIdx.x / 32 * (32 / TPR)",
                            offset="threadIdx.x % 32 / TPR")
        elif self.column_tiles:
            together = dict(why=f"a tile of {rpb} columns, {tpr} threads each, walked together: "
                                f"they combine through shared memory",
                            first="(idx_t)blockIdx.x * RPB", offset="threadIdx.x % RPB")
        level = reduction_levels(self.group)
        phases = max(level.values(), default=0)
        r_dims = set(self.group.axes)
        row_level = {v.id for v in self.group.values if not (set(v.dims) & r_dims)}
        per_row_inputs = [op for op in lay.inputs if not (set(op.dims) & r_dims)]
        elem_inputs = [op for op in lay.inputs if set(op.dims) & r_dims]
        # An element divided by a row value (softmax's exp(x - max) / sum) is multiplied by
        # the value's reciprocal, computed once per row: a correctly rounded f32 divide is
        # a dozen instructions an element, enough to bound a short row's kernel (within 1.5 ulp).
        self.reciprocal = {v.operands[1].id for v in self.group.values
                           if v.op == "div" and reg_type(v.dtype) == "float" and v.id not in row_level
                           and v.operands[1].id in row_level and reg_type(v.operands[1].dtype) == "float"}
        uniform, uniform_ids = self.uniform_lines()
        per_row_input_ids = {op.value.id for op in per_row_inputs} | uniform_ids

        stage: dict[int, int] = {}
        for v in self.group.values:
            if v.id in row_level:
                s = level.get(v.id, 0)
                for o in v.operands:
                    s = max(s, stage.get(o.id, 0))
                stage[v.id] = s
        available_at = lambda p: (lambda v: (v.id in row_level and stage[v.id] < p)  # noqa: E731
                                  or v.id in per_row_input_ids)
        row_stmts: dict[int, list[str]] = {p: [] for p in range(phases + 1)}
        for v in self.group.values:
            if v.id in row_level and v.op != "reduce" and v.id not in uniform_ids:
                row_stmts[stage[v.id]].append(self.define(v))
        # Vectors of columns: a column's own values before the reductions (its inputs, an idx()
        # of it, what they compute) are held a lane each, computed once a row of vectors
        lane_vals = [v for v in self.group.values if kv > 1 and v.id in row_level and v.op != "reduce"
                     and v.id not in uniform_ids and stage[v.id] == 0]
        self.lane_held = {v.id: v for v in [op.value for op in per_row_inputs] + lane_vals} if kv > 1 else {}
        self.reciprocal -= set(self.lane_held)      # (a divide by a lane's value stays a divide)

        slot = "0" if self.s.items == 0 else "j"
        cached = self.s.items > 0
        # Inputs over reduced dims only (a weight over N) are the same for every
        # row: a cached kernel loads them once, before the row loop.
        kept_loops = set(lay.kept_loops)
        hoisted = [op for op in elem_inputs if cached and self.s.hoist and not set(op.loops) & kept_loops]
        if peel and hoisted:
            raise TdslScheduleError(f"{self.s.tag}: a peeled row held in registers loads its weights where "
                                    f"they are used (hoist false): their lanes move with each row's head")
        # Hoisted 16-bit vectors stay packed through the row loop and are widened where used:
        # left to itself, ptxas widens them once ahead of the loop and holds both forms
        # (layernorm's f16 weight and bias spilled under a prefetching block's 64 registers).
        packed = [line for op in hoisted if op.dtype.itemsize == 2 and self.mode(op) == "vec" and self.vec > 1
                  for line in ("#pragma unroll", f"for (int j = 0; j < {self.s.items}; ++j) "
                               f"tdsl::keep_packed(b{op.index}[j]);")]
        # Row-invariant inputs left unhoisted are loaded late: in each phase that reads
        # them, from L1, rather than with the row. Loaded with the row they would stay in
        # registers through the reductions (layernorm's f32 weight and bias: 32 of 64).
        late = [op for op in elem_inputs if cached and op not in hoisted and not set(op.loops) & kept_loops]
        per_row = [op for op in elem_inputs if op not in hoisted and op not in late]
        # Inputs needed only where an index condition holds (a causal mask: guards.py): a
        # vector that no lane needs is read from the tensor's start (rows loaded in place only)
        if self.s.kind == "reduce_row" and not (peel or self.s.prefetch or self.s.stages > 1 or self.s.shared_row
                                                or kv > 1 or cluster > 1):
            self.guard_loads(per_row + late, available_at(1))
        # Rows sharing a warp, held element by element, whose elements each take a costly
        # function (exp): bound by instructions more than by memory. Every element a thread
        # holds is computed, those past the row's end (the last items of some threads) left
        # out of the reductions by a select and out of the stores by a predicate, where a
        # branch around each element's work cost more (H100 2026-11-26, µs, branches /
        # none, costly values kept: softmax f16 over ViT's [32, 12, 197, 197] 33.2 / 28.6,
        # 262144x129 67.2 / 59.5, 131072x255 64.7 / 55.2, f32 1048576x13 47.1 / 46.2). Their
        # buffers start zeroed and are never loaded: what they compute is harmless. A warp
        # or more a row was level or up to 2.5% slower without branches (softmax bf16
        # 131072x257 58.7 / 60.2), and rows with weights loaded late much slower (silu(x) *
        # rsqrt(mean(x * x)) * w over 65536x385: 54.9 / 74.2): they keep the branches.
        branchless = (self.s.kind == "reduce_row" and cached and self.vec == 1 and tpr < 32 and not peel
                      and kv == 1 and not self.s.prefetch and self.s.stages == 1
                      and branchless_elements(self.group, bool(late)))
        # A row copied into shared memory (looped): each thread's vectors of its per-row inputs
        # go there by cp.async once, and every phase reads them there, not from global memory.
        shared_row = [op for op in per_row if set(op.loops) & kept_loops] if self.s.shared_row else []
        if self.s.shared_row:
            self.check_shared_row(shared_row)
        # loaded with the row (cached), or by every phase as it streams the row (looped)
        per_row_loads = [line for op in per_row for line in (
            [f"b{op.index}[0] = srow{op.index}[{self.shared_row_slot()}];"] if op in shared_row
            else self.load_lines(op, slot))]
        late_loads = lambda used: [line for op in late if op.value.id in used  # noqa: E731
                                   for line in self.load_lines(op, slot)]
        # A peeled row's head and tail: an element at a time, loaded again by each phase (from
        # L1). Held in registers, the row's buffers are shadowed by one-element ones.
        ragged_loads, ragged_late = [], lambda used: []
        if peel:
            with self.one_lane():
                ragged_loads = ([self.buffer_decl(op, 1) for op in per_row + late] if cached else []) + [
                    line for op in per_row for line in self.load_lines(op, "0")]
                ragged_late = lambda used: [line for op in late if op.value.id in used  # noqa: E731
                                            for line in self.load_lines(op, "0")]
        full_outs = [op for op in lay.outputs if set(op.dims) & r_dims]
        phase_roots = {p: [r.operands[0] for r in reduces if level[r.id] == p]
                       for p in range(1, phases + 1)}
        phase_roots[phases + 1] = [op.value for op in full_outs]
        keep_at = self.values_to_keep(phase_roots, available_at) if self.s.items and self.s.keep else {}
        kept: dict[int, Value] = {}
        phase_code = []
        # A streamed (looped) row: ptxas unrolls the loop itself, and where an iteration loads
        # more than one 16-byte vector (sum(x * y) in f32) that spilled under 64 registers.
        # Those loops are unrolled to 16 words of loads in flight a thread; the others keep
        # ptxas's choice, measured as fast or faster (H100: column sums 37.7 against 40.5 us
        # with any pragma; sum(x * y) the same 200 us, f16 row dots 102 against 104). Where
        # an explicit unroll wins (x @ W: 96.8 against 108.1 us) the tuner finds it:
        # `Schedule.unroll` overrides the rule. Rows read one element at a time: see the rule.
        words, wide = stream_words(self.s, lay)
        shifted_words = shifted_weight_words(lay, self.vec) if self.s.shift else 0.0
        stream_unroll = self.s.unroll or stream_unroll_rule(self.s, words, wide, shifted_words)
        # (a split reduction holding a pair streams it online: partition.online_pair_alone)
        online = online_pairs(self.group) if not cached and self.s.online else {}
        for p in range(1, phases + 1):
            if p - 1 in online:         # read with the phase before
                continue
            if p in online:             # max and sum of exp(x - max) in one pass over the row
                m, sm = online[p]
                T = reg_type(m.dtype)
                add_chunk = "online_add_chunk" + ("<true>" if sm.operands[0].id in self.below_row_max else "")
                # a chunk a rescale: as many steps (of `vec` lanes) as the loop's unroll, or
                # ONLINE_CHUNK elements; at most 32 (f32 rows in 1024-thread blocks spilled at 64).
                # Vectors of columns: a chunk and a pair of accumulators a column (lane), each chunk
                # ONLINE_CHUNK rows where 32 registers hold them (a row a chunk took 2 exps an element),
                # never more (vectors of 2 f16 columns unrolled 16 deep spilled 8 bytes at 64 registers).
                chunk_lanes = 1 if kv > 1 else self.vec
                most = min(ONLINE_CHUNK, 32 // self.vec) if kv > 1 else max(1, 32 // self.vec)
                steps = min(stream_unroll or max(1, ONLINE_CHUNK // chunk_lanes), most)
                put = f"xs[e][u] = v{m.operands[0].id};" if kv > 1 else f"xs[u * {self.vec} + e] = v{m.operands[0].id};"
                body = self.element_body([m.operands[0]], available_at(p), slot, [put])
                ragged = None
                if peel:    # the head and tail: an element a chunk
                    with self.one_lane():
                        ragged = dict(decl=f"{T} xs[1];", loads=ragged_loads,
                                      lanes=self.lane_loop(self.element_body([m.operands[0]], available_at(p), slot,
                                                                             [f"xs[e] = v{m.operands[0].id};"])))
                if kv > 1:
                    init = [f"{T} acc{m.id}[{kv}], acc{sm.id}[{kv}];", f"for (int e = 0; e < {kv}; ++e) "
                            f"{{ acc{m.id}[e] = {_identity('max', m.dtype)}; acc{sm.id}[e] = {literal(0, m.dtype)}; }}"]
                    chunk = dict(steps=steps, decl=f"{T} xs[{kv}][{steps}];", pad=f"xs[e][u] = -tdsl::infinity({T}());",
                                 add=f"for (int e = 0; e < {kv}; ++e) "
                                     f"tdsl::{add_chunk}(acc{m.id}[e], acc{sm.id}[e], xs[e]);")
                else:
                    init = [f"{T} acc{m.id} = {_identity('max', m.dtype)};", f"{T} acc{sm.id} = {literal(0, m.dtype)};"]
                    chunk = dict(steps=steps, decl=f"{T} xs[{steps * self.vec}];",
                                 pad=f"xs[u * {self.vec} + e] = -tdsl::infinity({T}());",
                                 add=f"tdsl::{add_chunk}(acc{m.id}, acc{sm.id}, xs);")
                lane_acc = "[e]" if kv > 1 else ""
                phase_code.append(dict(
                    init=init, chunk=chunk, loads=per_row_loads, lanes=self.lane_loop(body), ragged=ragged,
                    finish=[self.cross_thread_online(m, sm),
                            f"tdsl::online_finish(acc{m.id}{lane_acc}, acc{sm.id}{lane_acc}, rvec > 0);",
                            f"const {T} v{m.id} = acc{m.id}{lane_acc};"] + row_stmts[p]
                    + [f"const {T} v{sm.id} = acc{sm.id}{lane_acc};" + self.reciprocal_of(sm)] + row_stmts[p + 1]))
                continue
            rs = [r for r in reduces if level[r.id] == p]
            lane_acc = "[e]" if kv > 1 else ""
            tail = [f"acc{r.id}{lane_acc} = {_REDUCE_OP[r.attr('kind')]}::combine(acc{r.id}{lane_acc}, "
                    + (f"inside ? v{r.operands[0].id} : {_identity(r.attr('kind'), r.dtype)});" if branchless
                       else f"v{r.operands[0].id});") for r in rs]
            late_lines = late_loads(self.used_ids(phase_roots[p], available_at(p), dict(kept)))
            body = self.element_body(phase_roots[p], available_at(p), slot, tail, dict(kept),
                                     {vid for vid, q in keep_at.items() if q == p})
            ragged = None
            if peel:        # (nothing kept between phases: each element computed anew)
                with self.one_lane():
                    ragged = dict(loads=ragged_loads + ragged_late(self.used_ids(phase_roots[p], available_at(p), {})),
                                  lanes=self.lane_loop(self.element_body(phase_roots[p], available_at(p), "0", tail)))
            kept.update({vid: self.values[vid] for vid, q in keep_at.items() if q == p})
            finish = []
            for r in rs:
                T = reg_type(r.dtype)
                finish += self.cross_thread_lines(r)     # (none for vectors of columns: a thread a column)
                if r.attr("kind") == "mean":
                    count = " * ".join(f"n{l}" for l in lay.reduced_loops) or "1"
                    finish.append(f"const {T} v{r.id} = acc{r.id}{lane_acc} / ({T})({count});" + self.reciprocal_of(r))
                else:
                    finish.append(f"const {T} v{r.id} = acc{r.id}{lane_acc};" + self.reciprocal_of(r))
            init = [f"{reg_type(r.dtype)} acc{r.id} = {_identity(r.attr('kind'), r.dtype)};" for r in rs]
            if kv > 1:
                init = [line for r in rs for line in (
                    f"{reg_type(r.dtype)} acc{r.id}[{kv}];",
                    f"for (int e = 0; e < {kv}; ++e) acc{r.id}[e] = {_identity(r.attr('kind'), r.dtype)};")]
            # a thread walking a whole column: its float sums gather COLUMN_SUM_BLOCK steps at a
            # time, then add them to what came before (one rounding chain of M / 256 + 256, not M)
            sums = [r for r in rs if r.attr("kind") in ("sum", "mean") and r.dtype.is_float]
            blocked = None
            if self.s.kind == "reduce_col" and not cached and sums:
                each = f"for (int e = 0; e < {kv}; ++e) " if kv > 1 else ""     # (vectors of columns)
                held = [(f"acc{r.id}{lane_acc}", f"held{r.id}", reg_type(r.dtype), literal(0, r.dtype)) for r in sums]
                blocked = dict(steps=COLUMN_SUM_BLOCK,
                               open=[f"{T} {h}{f'[{kv}]' if kv > 1 else ''};" for a, h, T, z in held]
                               + [f"{each}{{ {h}{lane_acc} = {a}; {a} = {z}; }}" for a, h, T, z in held],
                               close=[f"{each}{a} = {h}{lane_acc} + {a};" for a, h, T, z in held])
            phase_code.append(dict(
                init=init, loads=late_lines if cached else per_row_loads, lanes=self.lane_loop(body),
                ragged=ragged, finish=finish + row_stmts[p], blocked=blocked))

        row_outs = [op for op in lay.outputs if not (set(op.dims) & r_dims)]
        decl, lanes, stores = [], [], []
        for op in full_outs:
            d, l, s = self.store_lines(op, slot)
            decl, lanes, stores = decl + d, lanes + l, stores + s
        out_late = late_loads(self.used_ids(phase_roots[phases + 1], available_at(phases + 1), kept))
        out_body = self.element_body(phase_roots[phases + 1], available_at(phases + 1), slot, lanes, kept)
        out_ragged = None
        if peel and full_outs:
            with self.one_lane():
                parts = [self.store_lines(op, slot) for op in full_outs]
                out_ragged = dict(
                    loads=ragged_loads + ragged_late(self.used_ids(phase_roots[phases + 1],
                                                                   available_at(phases + 1), {})),
                    decls=[line for d, _, _ in parts for line in d], stores=[line for _, _, st in parts for line in st],
                    lanes=self.lane_loop(self.element_body(phase_roots[phases + 1], available_at(phases + 1), "0",
                                                           [line for _, ln, _ in parts for line in ln])))
        row_loads = [f"const {reg_type(op.dtype)} v{op.value.id} = "
                     f"{to_reg(f'in{op.index}[{self.offset(op)}]', op.dtype)};" + self.reciprocal_of(op.value)
                     for op in per_row_inputs]
        row_stores = [f"out{op.index}[{self.lane_offset(op) if kv > 1 else self.offset(op)}] = "
                      f"{to_storage(f'v{op.value.id}', op.dtype)};" for op in row_outs]
        if kv > 1:      # each lane's column finishes alone: its results and stores
            if phases != 1 and not (phases == 2 and 1 in online):
                raise TdslScheduleError(f"{self.s.tag}: vectors of columns take one reduction level, "
                                        f"or an online pair")
            [phase] = phase_code
            after = [v for v in self.group.values if v.id in row_level and stage[v.id]]
            wanted = _reads(after, [op.value for op in row_outs])
            phase["finish"] = ["#pragma unroll", f"for (int e = 0; e < {kv}; ++e) {{"] \
                + self.lane_held_reads(wanted) + phase["finish"] + ([] if split else row_stores) + ["}"]
            row_stores = []
            row_loads, row_stmts[0] = self.lane_held_lines(per_row_inputs, lane_vals, kv), []
        r_loops = list(lay.reduced_loops)
        # A ring: each thread's share of its next rows goes by cp.async into its own
        # shared-memory slots, so rows in flight cost no registers (and no barrier).
        ringed = [op for op in per_row if set(op.loops) & kept_loops]
        staged = cached and self.s.stages > 1 and bool(ringed)
        if staged:
            self.check_ring(ringed)
        # A persistent cluster's row, prefetched: each thread copies its vectors of the next
        # row into shared memory (cp.async) once this row's registers are read, and reads them
        # there at the next row's start (the registers hold one row only).
        ahead = cached and cluster > 1 and self.s.prefetch and bool(ringed)
        if ahead:
            self.check_ahead(per_row, ringed)
            self.mark_next_row(phase_code[0]["finish"])
        # Prefetch: the next row's elements go to p<k> while this row is reduced from b<k>.
        prefetch = cached and self.s.prefetch and bool(per_row) and not ahead
        prefetch_moved = prefetch and moves_prefetched_rows(per_row, hoisted)
        if split and len(phase_code) != 1:
            raise TdslScheduleError(f"{self.s.tag}: a split reduction takes one reduction level, or an online "
                                    f"pair streamed in one pass (online true)")
        pair = online.get(1)
        if self.column_tiles:   # stage 1: a tile's threads combined through shared memory, then stored
            [phase] = phase_code
            phase["finish"] = self.column_tile_finish(reduces, pair, kv)
            full_outs, row_stores = [], []
        elif split and kv > 1:    # stage 1: a partial a column of the vector (a thread a column)
            [phase] = phase_code
            phase["finish"] = ["#pragma unroll", f"for (int e = 0; e < {kv}; ++e) {{"] + [
                f"part{k}[(idx_t)blockIdx.y * nrows * {kv} + row * {kv} + e] = acc{r.id}[e];"
                for k, r in enumerate(reduces)] + ["}"]
            full_outs, row_stores = [], []
        elif split:   # stage 1: each phase ends by storing this block's partial for the row
            [phase] = phase_code            # (one level, or an online pair: one phase)
            combined = [self.cross_thread_online(*pair)] if pair else [self.cross_thread(r) for r in reduces]
            phase["finish"] = combined + [f"if (lane == 0) part{k}[(idx_t)blockIdx.y * nrows + row] = acc{r.id};"
                                          for k, r in enumerate(reduces)]
            full_outs, row_stores = [], []
        if self.column_tiles:       # each thread's lanes side by side, a reduction at a time (column_tile_finish)
            size = max(len(unit) * self.tile_bytes(unit[0], self.tile_lanes(unit[0], kv, len(unit)))
                       for unit in ([pair] if pair else [(r,) for r in reduces]))
            scratch = [f"__shared__ __align__(16) unsigned char tile_bytes[{size}];"]
        elif self.s.row_threads > 32:
            # two sets of per-warp slots a reduction, alternate rows taking turns (`flip`):
            # one barrier a reduction (tdsl::block_reduce); a row shared by a cluster's
            # blocks, two slots a reduction for the block's value (tdsl::cluster_reduce)
            scratch = [f"__shared__ {reg_type(r.dtype)} scratch{r.id}[2][{max(1, self.s.block // 32)}];"
                       for r in reduces] + ["int flip = 0;"]
            if cluster > 1:     # a slot a block of the cluster, and a barrier counting them, in each set
                scratch += [line for r in reduces for line in (
                    f"__shared__ {reg_type(r.dtype)} cslot{r.id}[2][{cluster}];",
                    f"__shared__ unsigned long long cbar{r.id}[2];")] + [
                    "unsigned cparity = 0;      // the phase of the barriers flip is at (a set serves every other row)",
                    "if (threadIdx.x == 0) {"] + [
                    f"    tdsl::cluster_barriers_init(tdsl::smem_address(cbar{r.id}), 2);" for r in reduces] + [
                    "}", "tdsl::cluster_sync();      // every block's barriers set up before another signals them"]
        else:
            scratch = []
        return dict(
            split=split, stream_unroll=stream_unroll, guarded=self.s.guarded,
            row_threads=self.s.row_threads, items=self.s.items, cached=cached, cached_end="vend" if peel else "rvec",
            # a lane past the last row reads that row again and stores nothing
            together=together, flip="int flip = 0;" in scratch,
            lane="threadIdx.x / RPB" if self.column_tiles else
            f"(int)tdsl::cluster_rank() * {self.s.block} + (int)threadIdx.x" if cluster > 1 else
            "TPR == 1 ? 0 : threadIdx.x % TPR", cluster=cluster,
            scratch=scratch,
            rows=(" * ".join(f"n{l}" for l in lay.kept_loops) or "1") + (f" / {kv}" if kv > 1 else ""),
            rvec=(" * ".join(f"n{l}" for l in r_loops) or "1") + (f" / {self.vec}" if self.vec > 1 and kv == 1
                                                                  and not peel else ""),
            row_coords=self.coords(list(lay.kept_loops), f"row * {kv}" if kv > 1 else "row")
            + (peel_row if peel else []),
            r_coords=self.coords(r_loops, f"head + c * {self.vec}" if peel else
                                 f"c * {self.vec}" if self.vec > 1 and kv == 1 else "c"),
            peel=peel, loop_end="vend" if peel and not split else "rend",
            ragged_end="(blockIdx.y == 0 ? ragged : 0)" if split else "ragged",     # (a split's first block)
            ragged_coords=self.coords(r_loops, f"(c < head ? c : c + vend * {self.vec})") if peel else [],
            out_ragged=out_ragged,
            branchless=branchless,
            buffers=[self.buffer_decl(op, max(1, self.s.items), zeroed=branchless) for op in elem_inputs]
            + [f"{reg_type(self.values[vid].dtype)} keep{vid}[{self.s.items}][{self.vec}];" for vid in keep_at],
            loads=per_row_loads,
            hoisted_loads=[line for op in hoisted for line in self.load_lines(op, slot)],
            prefetch=prefetch, prefetch_moved=prefetch_moved,
            prefetch_buffers=[self.buffer_decl(op, self.s.items, "p") for op in per_row] if prefetch else [],
            prefetch_loads=[line for op in per_row for line in self.load_lines(op, slot, "p")] if prefetch else [],
            prefetch_moves=[f"b{op.index}[j] = p{op.index}[j];" for op in per_row] if prefetch else [],
            staged=staged, stages=self.s.stages,
            shared_row=bool(shared_row),
            shared_row_decls=[f"tdsl::Vec<{storage_type(op.dtype)}, {self.vec}>* const srow{op.index} = "
                              f"reinterpret_cast<tdsl::Vec<{storage_type(op.dtype)}, {self.vec}>*>"
                              f"(tdsl::dynamic_shared()) + (idx_t){n} * {self.shared_row_span(peel)};"
                              for n, op in enumerate(shared_row)],
            shared_row_issues=[f"tdsl::cp_async16_ordered(&srow{op.index}[{self.shared_row_slot()}], "
                               f"in{op.index} + {self.offset(op)});" for op in shared_row],
            ring_decls=[f"__shared__ tdsl::Vec<{storage_type(op.dtype)}, {self.vec}> "
                        f"ring{op.index}[{self.s.stages}][{self.s.items}][{self.s.block}];"
                        for op in ringed] if staged else [],
            ring_issues=[f"tdsl::cp_async16_ordered(&ring{op.index}[slot][j][threadIdx.x], "
                         f"in{op.index} + {self.offset(op)});" for op in ringed] if staged else [],
            ring_reads=[f"b{op.index}[j] = ring{op.index}[stage][j][threadIdx.x];" for op in ringed] if staged else [],
            ahead=ahead,
            ahead_decls=[f"tdsl::Vec<{storage_type(op.dtype)}, {self.vec}>* const next{op.index} = "
                         f"reinterpret_cast<tdsl::Vec<{storage_type(op.dtype)}, {self.vec}>*>"
                         f"(tdsl::dynamic_shared()) + {n * self.s.items * self.s.block};"
                         for n, op in enumerate(ringed)] if ahead else [],
            ahead_issues=[f"tdsl::cp_async16_ordered(&next{op.index}[{self.ahead_slot()}], "
                          f"in{op.index} + {self.offset(op)});" for op in ringed] if ahead else [],
            ahead_reads=[f"b{op.index}[j] = next{op.index}[{self.ahead_slot()}];" for op in ringed] if ahead else [],
            packed=packed, uniform=uniform, row_loads=row_loads, row_stmts0=row_stmts[0], phases=phase_code,
            has_full_outputs=bool(full_outs) and not split,
            out_decls=decl, out_lanes=self.lane_loop(out_body), out_stores=stores, out_loads=out_late if cached else per_row_loads,
            row_stores=row_stores)

    def shared_row_slot(self) -> str:
        """Where vector c of a row copied into shared memory lies in this block's copy: at c
        (a block a row); a cluster's block, whose threads take a stretch of `block` vectors of
        every TPR (the cluster's threads), at its stretch's number times `block` plus its thread."""
        return "c" if self.s.cluster == 1 else f"c / TPR * {self.s.block} + threadIdx.x"

    def shared_row_span(self, peel: bool) -> str:
        """Vectors a per-row input's copy takes in this block's shared memory (rows.shared_row_bytes)."""
        vectors = f"rvec / {self.vec}" if peel else "rvec"
        return f"({vectors})" if self.s.cluster == 1 else f"(({vectors} + TPR - 1) / TPR * {self.s.block})"

    def check_shared_row(self, ops: list[Operand]) -> None:
        """A guard for schedules given by hand: a row copied into shared memory, as `fits()` checks it
        (rows.shared_row_refusal); the launch sizes its shared memory (rows.shared_row_bytes)."""
        why = shared_row_operand_refusal(self.s, [(op.dtype.itemsize, self.mode(op) == "vec") for op in ops])
        if why:
            raise TdslCompileError(f"schedule {self.s.tag}: {why}")

    def ahead_slot(self) -> str:
        """Where a thread's vector j of the next row lies in its block's shared memory
        (resident.cluster_prefetch_bytes): vector j of every thread together."""
        return f"j * {self.s.block} + threadIdx.x"

    def check_ahead(self, per_row: list[Operand], ringed: list[Operand]) -> None:
        """A guard for schedules given by hand: a row prefetched into shared memory, as `fits()`
        checks it (resident.cluster_prefetch_refusal)."""
        why = shared_row_operand_refusal(self.s, [(op.dtype.itemsize, self.mode(op) == "vec") for op in per_row])
        if why or len(ringed) != len(per_row):
            raise TdslCompileError(f"schedule {self.s.tag}: a row prefetched into shared memory moves "
                                   f"in 16-byte vectors of every per-row input, each along the row")

    def mark_next_row(self, finish: list[str]) -> None:
        """Mark where a prefetching cluster's blocks start copying their next row (reduce.cu.j2,
        next_row_ahead): after the first reduction's block barrier, which every read of this row's
        shared-memory copies comes before, and before the exchange across the cluster."""
        at = next((i for i, line in enumerate(finish) if "tdsl::block_reduce<" in line), None)
        if at is None:
            raise TdslScheduleError(f"{self.s.tag}: a prefetching cluster's row starts with a block reduction")
        finish.insert(at + 1, NEXT_ROW_MARK)

    def check_ring(self, ringed: list[Operand]) -> None:
        """A guard for schedules given by hand: the ring's limits, as `fits()` checks them."""
        why = ring_refusal(self.s, [(op.dtype.itemsize, self.mode(op) == "vec") for op in ringed])
        if why:
            raise TdslCompileError(f"schedule {self.s.tag}: {why}")

    def reduce_final(self, fused: bool = False) -> dict:
        """Stage 2 of a split reduction: combine the partials, finish each row. `nlanes`
        threads a row each add every nlanes-th split's partials; the first adds the
        others' sums (through shared memory) and finishes the row. `fused`: in the split
        kernel's last block (last_block), which takes every row and reads partials that
        other blocks of the same kernel stored."""
        lay = self.layout
        self.vec = 1        # a thread a row (a column), whatever stage 1's vectors were
        reduces = [v for v in self.group.values if v.op == "reduce"]
        r_dims = set(self.group.axes)
        uniform, uniform_ids = self.uniform_lines()
        per_row_inputs = [op for op in lay.inputs if not (set(op.dims) & r_dims)]
        done = uniform_ids | {op.value.id for op in per_row_inputs} | {r.id for r in reduces}
        before = [v for v in self.group.values if not (set(v.dims) & r_dims) and v.id not in done
                  and not self.depends_on_reduce(v)]
        after = [v for v in self.group.values if not (set(v.dims) & r_dims) and v.id not in done
                 and self.depends_on_reduce(v)]
        gather, meet, finish = [], [], []
        count = " * ".join(f"n{l}" for l in lay.reduced_loops) or "1"
        # the lanes' sums meet in one shared buffer, a reduction at a time (a buffer each
        # took 4 KB a reduction of f64 at 512 threads: 14 of them over the 48 KB a block has);
        # an online pair's partials (m, s) combine as pairs, both in the buffer at once
        width = max(reg_bytes(r.dtype) for r in reduces)
        fresh = "true" if fused else "false"
        pair = online_pair_alone(self.group)
        if pair:
            m, sm = pair
            T, km, ks = reg_type(m.dtype), reduces.index(m), reduces.index(sm)
            gather = [f"{T} acc{m.id} = {_identity('max', m.dtype)}, acc{sm.id} = {literal(0, m.dtype)};",
                      f"if (live) tdsl::online_combine_partials<{GATHER_BATCH}, {fresh}>(acc{m.id}, acc{sm.id}, "
                      f"part{km} + row, part{ks} + row, share, lanes, nsplit, all_rows);"]
            meet = [f"{T}* lane_m = reinterpret_cast<{T}*>(lane_bytes);",
                    f"{T}* lane_s = lane_m + {self.s.block};",
                    f"lane_m[threadIdx.x] = acc{m.id};", f"lane_s[threadIdx.x] = acc{sm.id};", "__syncthreads();",
                    f"if (share == 0) for (int j = 1; j < lanes; ++j) tdsl::online_combine(acc{m.id}, acc{sm.id}, "
                    f"lane_m[j * rows_per_block + threadIdx.x], lane_s[j * rows_per_block + threadIdx.x]);",
                    "__syncthreads();"]
            finish = [f"tdsl::online_finish(acc{m.id}, acc{sm.id}, ({count}) > 0);",
                      f"const {T} v{m.id} = acc{m.id};", f"const {T} v{sm.id} = acc{sm.id};"]
        for k, r in enumerate([] if pair else reduces):     # (a pair's two met above, together)
            T, op = reg_type(r.dtype), _REDUCE_OP[r.attr("kind")]
            gather += [f"{T} acc{r.id} = {_identity(r.attr('kind'), r.dtype)};",
                       f"if (live) acc{r.id} = tdsl::combine_partials<{GATHER_BATCH}, {op}, {fresh}>("
                       f"acc{r.id}, part{k} + row, share, lanes, nsplit, all_rows);"]
            meet += [f"reinterpret_cast<{T}*>(lane_bytes)[threadIdx.x] = acc{r.id};", "__syncthreads();",
                     f"if (share == 0) for (int j = 1; j < lanes; ++j) acc{r.id} = {op}::combine(acc{r.id}, "
                     f"reinterpret_cast<const {T}*>(lane_bytes)[j * rows_per_block + threadIdx.x]);",
                     "__syncthreads();"]
            finish.append(f"const {T} v{r.id} = acc{r.id}"
                          + (f" / ({T})({count});" if r.attr("kind") == "mean" else ";"))
        finish += [self.define(v) for v in after]
        return dict(
            rows=" * ".join(f"n{l}" for l in lay.kept_loops) or "1",
            uniform=[] if fused else uniform, row_coords=self.coords(list(lay.kept_loops), "row"),
            row_loads=[f"const {reg_type(op.dtype)} v{op.value.id} = "
                       f"{to_reg(f'in{op.index}[{self.offset(op)}]', op.dtype)};" for op in per_row_inputs],
            row_stmts0=[self.define(v) for v in before], gather=gather, meet=meet, finish=finish,
            lane_bytes=self.s.block * width * (2 if pair else 1),
            first="0" if fused else "(idx_t)blockIdx.x", blocks="1" if fused else "(idx_t)gridDim.x",
            row_stores=[f"out{op.index}[{self.offset(op)}] = {to_storage(f'v{op.value.id}', op.dtype)};"
                        for op in lay.outputs])

    def direct_body(self, roots, available) -> list[str]:
        """Statements computing `roots` at the current coordinates, reading
        inputs straight from memory (the c<loop> variables are set)."""
        vals = self.closure(roots, available)
        used = {o.id for v in vals for o in v.operands} | {r.id for r in roots}
        body = [f"const {reg_type(op.dtype)} v{op.value.id} = "
                f"{to_reg(f'in{op.index}[{self.offset(op)}]', op.dtype)};"
                for op in self.layout.inputs if op.value.id in used and not available(op.value)]
        return body + [self.define(v) for v in vals]

    def values_to_keep(self, phase_roots: dict, available_at) -> dict[int, int]:
        """Costly element values a later phase needs again, by the phase that
        computes them: a cached row keeps them in registers instead of
        recomputing (softmax's exp(x - max) is computed once, not twice)."""
        first: dict[int, int] = {}
        for p in sorted(phase_roots):
            for v in self.closure(phase_roots[p], available_at(p)):
                first.setdefault(v.id, p)
        keep = {}
        for p in sorted(phase_roots):
            for v in self.closure(phase_roots[p], available_at(p)):
                if first[v.id] < p and v.op in COSTLY_OPS and v.dims:
                    keep[v.id] = first[v.id]
        # and the first value a later phase needs again whose chain of element work is
        # KEPT_CHAIN values or more (a causal mask's where(idx <= idx, s * scale, -inf) is five)
        for p in sorted(phase_roots):
            stack, seen = list(phase_roots[p]), set()
            while stack:
                v = stack.pop()
                if v.id in seen or keep.get(v.id, p) < p or available_at(p)(v) or v.id not in self.values:
                    continue
                seen.add(v.id)
                if (first[v.id] < p and v.dims
                        and len(self.closure([v], available_at(first[v.id]))) >= KEPT_CHAIN):
                    keep[v.id] = first[v.id]
                else:
                    stack.extend(v.operands)
        return keep

    def cross_thread_online(self, m: Value, sm: Value) -> str:
        if self.s.row_threads == 1:
            return ""
        if self.s.row_threads <= 32:
            return f"tdsl::online_warp_reduce<{self.s.row_threads}>(acc{m.id}, acc{sm.id});"
        return (f"tdsl::online_block_reduce<{self.s.block}>(acc{m.id}, acc{sm.id}, "
                f"scratch{m.id}[flip], scratch{sm.id}[flip]);")

    def tile_lanes(self, r: Value, kv: int, together: int = 1) -> int:
        """Lanes of a column vector one round of column_tile_finish takes: all `kv`, unless
        the block's slots for them (`together` accumulators a lane: an online pair's 2)
        would pass 16 KiB (8-byte accumulators, 16 byte columns)."""
        lanes = kv
        while lanes > 1 and together * self.tile_bytes(r, lanes) > 16384:
            lanes //= 2
        return lanes

    def tile_bytes(self, r: Value, lanes: int) -> int:
        """Shared memory for `lanes` of reduction `r`'s accumulators a thread of the block."""
        return self.s.block * lanes * reg_bytes(r.dtype)

    def column_tile_finish(self, reduces: list[Value], pair: Optional[tuple], kv: int) -> list[str]:
        """A split reduction's tile of RPB columns (vectors of kv lanes; kv 1: no vector),
        TPR threads each, combined a reduction at a time through one shared buffer
        (tile_bytes): each thread puts L lanes side by side, then partial o of the tile's
        RPB * L (column o / L's lane o % L) is added over the TPR threads by thread
        o % block and stored, neighbouring threads on neighbouring partials. Two barriers a
        round of L lanes (tile_lanes), where every thread adding every lane took two a lane
        (H100 2026-11-27: that cost a bf16 mean over 65536x1024 8 us of 62). An online
        `pair` (m, s) goes as one: both accumulators of each lane, in the buffer's two
        halves, combined as pairs (tdsl::online_combine)."""
        lines = []
        for unit in ([pair] if pair else [(r,) for r in reduces]):  # in turn: a barrier ends each round
            T, lanes = reg_type(unit[0].dtype), self.tile_lanes(unit[0], kv, len(unit))
            lines += [f"{T}* tile{r.id} = reinterpret_cast<{T}*>(tile_bytes)"
                      + (f" + {i * self.s.block * lanes};" if i else ";") for i, r in enumerate(unit)]
            for e0 in range(0, kv, lanes):
                puts = [f"tile{r.id}[threadIdx.x] = acc{r.id};" if kv == 1 else
                        f"tile{r.id}[threadIdx.x * {lanes} + i] = acc{r.id}[{e0} + i];" for r in unit]
                put = puts if kv == 1 else ["#pragma unroll", f"for (int i = 0; i < {lanes}; ++i) "
                                            + (puts[0] if len(puts) == 1 else "{ " + " ".join(puts) + " }")]
                at = f"((idx_t)blockIdx.y * nrows + first + o / {lanes}) * {kv} + {e0} + o % {lanes}"
                other = lambda r: f"tile{r.id}[o + t * RPB * {lanes}]"     # noqa: E731 (thread t's partial)
                if pair:
                    m, sm = pair
                    total = [f"    {T} top = tile{m.id}[o], total = tile{sm.id}[o];",
                             f"    for (int t = 1; t < TPR; ++t) tdsl::online_combine(top, total, {other(m)}, "
                             f"{other(sm)});",
                             f"    part{reduces.index(m)}[{at}] = top;", f"    part{reduces.index(sm)}[{at}] = total;"]
                else:
                    [r] = unit
                    total = [f"    {T} total = tile{r.id}[o];",
                             f"    for (int t = 1; t < TPR; ++t) total = {_REDUCE_OP[r.attr('kind')]}::combine("
                             f"total, {other(r)});", f"    part{reduces.index(r)}[{at}] = total;"]
                # (RPB * L partials: more than the block's threads where TPR < L)
                lines += put + ["__syncthreads();", f"for (int o = threadIdx.x; o < RPB * {lanes}; o += {self.s.block}) {{",
                                f"    if (first + o / {lanes} >= nrows) break;"] + total + ["}", "__syncthreads();"]
        return lines

    def cross_thread(self, r: Value) -> str:
        """Combine reduction `r`'s accumulator across the threads that share its row or
        column (a split's tile of columns: column_tile_finish)."""
        return " ".join(self.cross_thread_lines(r))

    def cross_thread_lines(self, r: Value) -> list[str]:
        """cross_thread's statements: across a warp's lanes or the block's threads, then (a row
        shared by a cluster's blocks) across the cluster's blocks."""
        op = _REDUCE_OP[r.attr("kind")]
        if self.s.row_threads == 1:
            return []
        if self.s.row_threads <= 32:    # a row's lanes: an aligned group of a warp
            return [f"acc{r.id} = tdsl::warp_reduce<{op}, {self.s.row_threads}>(acc{r.id});"]
        block = f"acc{r.id} = tdsl::block_reduce<{op}, {self.s.block}>(acc{r.id}, scratch{r.id}[flip]);"
        if self.s.cluster > 1:      # then across the blocks of the cluster sharing the row
            return [block, f"acc{r.id} = tdsl::cluster_reduce<{op}, {self.s.cluster}>(acc{r.id}, cslot{r.id}[flip], "
                           f"&cbar{r.id}[flip], cparity);"]
        return [block]


def render(graph: Graph, group: Group, layout: Layout, schedule: Schedule, stage: int = 1) -> KernelSource:
    name = schedule.kernel_name(graph.name, group.index, stage)
    return _Renderer(graph, group, layout, schedule).render(name, stage)
