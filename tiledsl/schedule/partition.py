"""Partition a kernel's IR into fusion groups: one GPU kernel each.

Anchors are the values that need a whole-tensor view: reductions and
matmuls. Elementwise values are never stored; each group recomputes the ones
it needs, so intermediates reach memory only where a group boundary forces it.

- A *reduce group* holds every reduction with one (kept dims K, reduced dims R)
  signature and epoch, with the elementwise work before them and the outputs
  that use only their results fused in (softmax, layernorm: one kernel).
- A *pointwise group* writes the outputs that need no reduction of their own
  group, all outputs with one dim set together.
- A *matmul group* holds one contraction, with the elementwise work after it
  fused into its epilogue.

A matmul operand computed elementwise from another matmul group's product is
stored by that group, not recomputed: where the product is stored only for
it, the temporary becomes the operand itself. Before/after, for
`h = f16(relu(x @ w1 + b1)); return h @ w2`: group 0 writes x @ w1 (f32) and
group 1 recomputes h tile by tile in its prologue → group 0 writes h (f16,
half the bytes) from its epilogue and group 1's A operand is a plain input,
which the tensor cores' asynchronous copies can load. Likewise a 16-bit operand
computed from a reduce group's statistics (attention's `f16(p / sum(p))`) is
written by that group rather than recomputed from the f32 scores.

The epoch of an anchor counts the group boundaries on its longest input path,
so a group only reads temporaries of groups of lower epoch: the order is
acyclic by construction. Before/after, for `x - mean(x, axis=M)` then
`sum(..., axis=N)`:  one graph → [reduce(K=N, R=M), reduce(K=M, R=N)].
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Mapping, Optional

from ..ir.graph import Graph, Value, stored_copy, unpermuted
from .guards import load_guards


@dataclass(frozen=True)
class Group:
    kind: str                        # 'pointwise', 'reduce' or 'matmul'
    index: int                       # position in launch order
    values: tuple[Value, ...]        # computed here, in topological order
    inputs: tuple[Value, ...]        # read from memory: params or other groups' temps
    outputs: tuple[Value, ...]       # written to memory: graph outputs or temps
    kept: tuple[str, ...]            # K: dims that index rows (reduce) / all dims (pointwise)
    axes: tuple[str, ...]            # R: reduced dims (reduce groups only)

    @property
    def space(self) -> frozenset:
        return frozenset(self.kept) | frozenset(self.axes)

    # (cached, read-only: the schedule rules ask for these many times a plan, and a Group never changes)
    @cached_property
    def _reduction_levels(self) -> Mapping[int, int]:
        return MappingProxyType(_levels_of(self))

    @cached_property
    def _online_pairs(self) -> Mapping[int, tuple[Value, Value]]:
        return MappingProxyType(_online_pairs_of(self))


def _is_anchor(v: Value) -> bool:
    return v.op in ("reduce", "matmul")


def _class_of(v: Value):
    if v.op == "reduce":
        return ("reduce", frozenset(v.dims), frozenset(v.attr("axes")))
    return ("matmul", v.id)


class _Partitioner:
    def __init__(self, graph: Graph, spread: bool = False, columns: bool = False):
        self.graph, self.spread, self.columns = graph, spread, columns
        self.by_id = {v.id: v for v in graph.values}
        self.epoch: dict[int, int] = {}
        self.stored: dict[int, tuple] = {}     # elementwise value id -> the group key that stores it
        for paired in (not spread, False):
            self.set_epochs(paired)
            if self.pairs_alone():
                break

    def set_epochs(self, paired: bool) -> None:
        """Each anchor's epoch; with `paired`, a sum(exp(a - m)) across memory shares its
        max's group (an online pair: one pass over the columns) instead of starting one."""
        for v in self.graph.values:
            if _is_anchor(v):
                deps = self.anchors_feeding(v.operands)
                across = v.op == "reduce" and self.walks_across(v)
                partner = online_partner(v) if paired and across else None
                self.epoch[v.id] = max((self.epoch[d.id] + (_class_of(d) != _class_of(v)
                                                            or (across and d is not partner)
                                                            or (self.spread and d.op == "reduce"))
                                        for d in deps), default=0)

    def pairs_alone(self) -> bool:
        """Whether every group across memory that holds more than one level is an online
        pair alone (the max and its sum(exp(a - max)), nothing else): what its column and
        split schedules compute in one pass."""
        for anchors in self.members().values():
            if anchors[0].op != "reduce" or not self.walks_across(anchors[0]):
                continue
            ids = {a.id for a in anchors}
            nested = [a for a in anchors if any(d.id in ids for d in self.anchors_feeding(a.operands))]
            if nested and not (len(anchors) == 2 and online_partner(anchors[1]) is anchors[0]):
                return False
        return True

    def walks_across(self, reduction: Value) -> bool:
        """walks_across, unless the partition keeps columns whole (`columns`): then a
        reduction across memory groups as one along rows does."""
        return not self.columns and walks_across(reduction)

    def anchors_feeding(self, roots, through_stored: bool = False) -> list[Value]:
        """Anchors reachable from `roots` through elementwise values only; with
        `through_stored` False, a stored elementwise value stands for its group."""
        found: dict[int, Value] = {}
        stack, seen = list(roots), set()
        while stack:
            v = stack.pop()
            if v.id in seen:
                continue
            seen.add(v.id)
            if _is_anchor(v) or (v.id in self.stored and not through_stored):
                found[v.id] = v
            elif v.op != "param":
                stack.extend(v.operands)
        return list(found.values())

    def group_key(self, source: Value):
        """The group of an anchor, or of the group that stores an elementwise value."""
        if source.id in self.stored:
            return self.stored[source.id]
        return (_class_of(source), self.epoch[source.id])

    def producer(self, operand: Value, members: dict, itemsize: int = 0) -> Optional[tuple]:
        """The key of the group that can store a computed matmul operand at no
        more memory traffic than the product's prologue would cost, else None:
        - one other matmul product, the operand an elementwise function of it over
          the same dims (it replaces the product's own temporary);
        - one reduce group over the operand's dims, the operand 16-bit and computed
          from that group's reductions and what they read (attention's
          `f16(p / sum(p))`: written in 2 bytes and read in 2, where the prologue
          would read the f32 scores again);
        - a 16-bit operand computed from parameters only (`f16(x) @ w`, `f16(x * s) @ w`):
          a pointwise kernel of its own writes it before the product runs. The
          tensor-core tiles of a prologue load element by element with no
          pipeline: 4096^3 took 4506 us fused against 242 for both kernels, and
          512^3 50 against 23 (H100 2026-11-23, scripts/probe_prologue.py).
        `h.T @ w` stores h as computed and reads it in place (`unpermuted`): the
        tensor-core tiles read an A or B contiguous along M or N transposed, from
        shared memory. `itemsize`: as if the operand were stored in this many
        bytes an element (a cast not yet written)."""
        operand = unpermuted(operand)
        if operand.op == "param" or _is_anchor(operand):
            return None
        feeders = self.anchors_feeding([operand], through_stored=True)
        if not feeders:     # from parameters only: a pointwise kernel of its own, run first
            return (("operand", operand.id), -1) if (itemsize or operand.dtype.itemsize) == 2 else None
        if len(feeders) == 1 and feeders[0].op == "matmul" and set(operand.dims) == set(feeders[0].dims):
            return self.group_key(feeders[0])
        reductions = {self.group_key(f) for f in feeders if f.op == "reduce"}
        if len(reductions) != 1 or (itemsize or operand.dtype.itemsize) != 2:
            return None
        key = next(iter(reductions))
        read = {a.id for a in self.anchors_feeding([o for a in members[key] for o in a.operands],
                                                   through_stored=True)}
        if (set(operand.dims) <= key[0][1] | key[0][2]
                and all(self.group_key(f) == key or f.id in read for f in feeders)):
            return key
        return None

    def operands_to_store(self, members: dict) -> dict[int, tuple]:
        """Matmul operands to store in the group that produces them (`producer`)."""
        chosen = {}
        for m in self.graph.values:
            if m.op != "matmul":
                continue
            for operand in m.operands:
                copy = stored_copy(operand)
                if copy is not None:    # a TF32 operand's copy laid out along K: a kernel of its own, run first
                    chosen[copy.id] = (("operand", copy.id), -1)
                    continue
                key = self.producer(operand, members)
                if key is not None and key != self.group_key(m):
                    chosen[unpermuted(operand).id] = key
        return chosen

    def members(self) -> dict:
        """Group key -> its anchors."""
        out: dict = {}
        for v in self.graph.values:
            if _is_anchor(v):
                out.setdefault(self.group_key(v), []).append(v)
        return out

    def run(self) -> list[Group]:
        members = self.members()
        # Store an operand instead of a product only where no group needs the
        # product itself (else both would reach memory; a reduce group's row
        # statistics, if still needed, are vectors).
        candidates = self.operands_to_store(members)
        for v_id, key in candidates.items():
            if key[0][0] == "operand":
                members[key] = [self.by_id[v_id]]
        while True:
            self.stored = dict(candidates)
            outputs_of, pointwise, needed_by = self.reads(members)
            product = {v_id: members[key][0].id for v_id, key in candidates.items() if key[0][0] == "matmul"}
            alone = {v_id: key for v_id, key in candidates.items() if product.get(v_id) not in needed_by}
            if alone == candidates:
                break
            candidates = alone

        order = launch_order(members)
        groups = []
        for key in order:
            anchors = members[key]
            temps = [a for a in anchors if a.id in needed_by]
            temps += [self.by_id[v_id] for v_id, k in self.stored.items() if k == key and v_id in needed_by]
            roots = list(dict.fromkeys(anchors + outputs_of[key] + temps))
            cls = key[0]
            if cls[0] == "reduce":
                kept = tuple(d for d in anchors[0].operands[0].dims if d in cls[1])
                axes = tuple(d for d in anchors[0].operands[0].dims if d in cls[2])
                groups.append(self.build("reduce", len(groups), roots, outputs_of[key] + temps,
                                         key, kept, axes))
            elif cls[0] == "operand":
                groups.append(self.build("pointwise", len(groups), roots, outputs_of[key] + temps,
                                         key, anchors[0].dims, ()))
            else:
                groups.append(self.build("matmul", len(groups), roots, outputs_of[key] + temps,
                                         key, anchors[0].dims, (anchors[0].attr("contract"),)))
        for dims, outs in pointwise.items():
            kept = max((o.dims for o in outs), key=len)
            groups.append(self.build("pointwise", len(groups), outs, outs, None, kept, ()))
        return groups

    def reads(self, members: dict):
        """Which group writes each output (pointwise ones by dim set), and which
        anchors and stored values other groups read."""
        outputs_of: dict = {key: [] for key in members}
        pointwise: dict = {}        # dim set -> outputs
        loose = []      # outputs no anchor feeds, placed once the groups' own outputs are known
        for out in dict.fromkeys(self.graph.outputs):   # an output value may be returned twice
            anchors = self.anchors_feeding([out])
            if not anchors:
                loose.append(out)
                continue
            keys = {self.group_key(a) for a in anchors}
            if len(keys) == 1:
                key = next(iter(keys))
                if key[0][0] == "reduce" and self.written_over_rows(out, key, members):
                    outputs_of[key].append(out)
                    continue
                if key[0][0] in ("matmul", "operand") and set(out.dims) <= set(members[key][0].dims):
                    outputs_of[key].append(out)
                    continue
            pointwise.setdefault(frozenset(out.dims), []).append(out)
        for out in loose:
            key = self.rows_reading_its_inputs(out, members, outputs_of)
            if key is not None:
                outputs_of[key].append(out)
            else:
                pointwise.setdefault(frozenset(out.dims), []).append(out)

        # Anchors read by another group are stored as temporaries.
        needed_by: dict[int, set] = {}
        def note_reads(key, roots):
            for a in self.anchors_feeding(roots):
                if self.group_key(a) != key:
                    needed_by.setdefault(a.id, set()).add(key)
        for key, anchors in members.items():
            note_reads(key, [o for a in anchors for o in a.operands] + outputs_of[key])
        for outs in pointwise.values():
            note_reads(None, outs)

        return outputs_of, pointwise, needed_by

    def written_over_rows(self, out: Value, key, members: dict) -> bool:
        """Whether reduce group `key` writes `out`: per-row outputs and outputs over whole
        rows; one over some of the reduced dims only (mean(x) * y[N] after reducing M and
        N) is written by a pointwise group reading the statistic."""
        kept, reduced = key[0][1], key[0][2]
        return (set(out.dims) <= kept | reduced
                and set(out.dims) - kept in (set(), set() if self.spread else set(reduced))
                and not self.stored_across_rows(out, key, members)
                and not (set(out.dims) & reduced and self.walks_across(members[key][0])))

    def rows_reading_its_inputs(self, out: Value, members: dict, outputs_of: dict):
        """For an output that no reduction feeds, the key of the first reduce group (in
        launch order) that already writes an output over whole rows of the same dims and
        reads every tensor `out` is computed from; else None. Its row kernel holds or
        streams those elements anyway and stores `out` beside its own result, where a
        pointwise kernel would read them all again. (A group writing per-row values only
        keeps them so: those may split their rows over the GPU.) Before/after for a
        residual add beside an rmsnorm of it, `h = x + r; return h, rmsnorm(h)`: [reduce
        writes rmsnorm(h); pointwise reads x, r and writes h] -> [reduce reads x, r and
        writes both]."""
        reads = self.params_read([out])
        if self.spread or not reads:
            return None
        for key in launch_order(members):
            if (key[0][0] == "reduce" and set(out.dims) == key[0][1] | key[0][2]
                    and any(set(o.dims) == set(out.dims) for o in outputs_of[key])
                    and reads <= self.params_read([o for a in members[key] for o in a.operands])
                    and self.written_over_rows(out, key, members)):
                return key
        return None

    def params_read(self, roots) -> set:
        """Ids of the tensor parameters `roots` read through elementwise values (not
        through anchors or stored values)."""
        found, stack, seen = set(), list(roots), set()
        while stack:
            v = stack.pop()
            if v.id in seen or _is_anchor(v) or v.id in self.stored:
                continue
            seen.add(v.id)
            if v.op == "param":
                if v.dims:
                    found.add(v.id)
            else:
                stack.extend(v.operands)
        return found

    def stored_across_rows(self, out: Value, key, members: dict) -> bool:
        """Whether an output over whole rows is stored along the dim that the reduce
        group's threads do not walk: the group's widest input spanning every dim has
        its innermost dim reduced (threads walk along rows) and the output's is kept,
        or the other way round. Such an output goes to a pointwise group of its own,
        which reads the row statistics and transposes through tiles: written from the
        reduce group, each element took a 32-byte sector of its own (bf16[M, N] ->
        f32[N, M], `x.T * sum(x, axis=N)` at 2048x8193: 326 us, 0.10x copy; H100
        2026-11-25). Before/after: [reduce(K=M, R=N) writes out] -> [reduce(K=M,
        R=N) writes sum, pointwise(M, N) writes out]."""
        kept, reduced = key[0][1], key[0][2]
        if not set(out.dims) & reduced:
            return False
        widest = _widest_param([o for a in members[key] for o in a.operands], kept | reduced)
        return widest is not None and (out.dims[-1] in kept) != (widest.dims[-1] in kept)

    def build(self, kind, index, roots, writes, key, kept, axes) -> Group:
        """Collect what the group computes (walking back from its roots) and reads."""
        local: dict[int, Value] = {}
        reads: dict[int, Value] = {}
        stack = list(roots)
        while stack:
            v = stack.pop()
            if v.id in local or v.id in reads:
                continue
            if v.op == "param" or ((_is_anchor(v) or v.id in self.stored)
                                   and (key is None or self.group_key(v) != key)):
                reads[v.id] = v
                continue
            local[v.id] = v
            stack.extend(v.operands)
        values = tuple(v for v in self.graph.values if v.id in local)
        inputs = tuple(v for v in self.graph.values if v.id in reads)
        outputs = tuple(dict.fromkeys(writes))
        return Group(kind, index, values, inputs, outputs, tuple(kept), tuple(axes))


def launch_order(members: dict) -> list:
    """Group keys in the order their kernels launch: by epoch, then kind, then first anchor."""
    return sorted(members, key=lambda k: (k[1], k[0][0], min(a.id for a in members[k])))


def walks_across(reduction: Value) -> bool:
    """Whether a reduction runs across memory: the widest parameter it reads (through
    elementwise values) over every dim of its space has its innermost dim kept, so
    the elements of one reduction lie a row apart (`sum(x, axis=M)` of x[M, N]).
    Such a reduction keeps its group to one level and to results without a reduced
    dim, which the column and split schedules compute with neighbouring threads
    reading neighbouring elements. A later level (softmax's sum of exp(x - max))
    starts a group of its own, and a result over whole columns (its normalized
    elements) goes to a pointwise group reading the statistics: one kernel walked
    each column with the threads of a block, each element in a 32-byte sector of
    its own (softmax over M of f32[4096, 4096]: 395.9 us, 0.11x copy; of [2^21, 8]:
    2293 us; x - mean(x, axis=M) of [16384, 4096]: 2192 us; H100 2026-11-25).
    Before/after for softmax over M: [reduce(K=N, R=M) writes out] -> [reduce
    writes max, reduce writes sum, pointwise writes out]."""
    widest = _widest_param(reduction.operands, set(reduction.dims) | set(reduction.attr("axes")))
    return widest is not None and widest.dims[-1] in reduction.dims


def _widest_param(roots, space: set) -> Optional[Value]:
    """The widest parameter over exactly `space` that `roots` read through elementwise
    values (the one whose layout a group over that space walks), or None."""
    stack, seen, widest = list(roots), set(), None
    while stack:
        v = stack.pop()
        if v.id in seen:
            continue
        seen.add(v.id)
        if v.op == "param":
            if set(v.dims) == space and v.dims and (widest is None or v.dtype.itemsize > widest.dtype.itemsize):
                widest = v
        elif not _is_anchor(v):
            stack.extend(v.operands)
    return widest


def reduction_levels(group: Group) -> Mapping[int, int]:
    """Reduction id -> its level in the group: 1 + the deepest level among the group's
    reductions it reads (softmax: max 1, the sum of exp(x - max) 2). A row kernel
    computes each level in a phase of its own."""
    return group._reduction_levels


def _levels_of(group: Group) -> dict[int, int]:
    ids = {v.id for v in group.values}
    depth: dict[int, int] = {}      # value id -> the deepest level it reads (its own, for a reduction)
    for v in group.values:          # in topological order
        d = max((depth[o.id] for o in v.operands if o.id in ids), default=0)
        depth[v.id] = d + 1 if v.op == "reduce" else d
    return {v.id: depth[v.id] for v in group.values if v.op == "reduce"}


def per_row_before_reductions(group: Group) -> list[Value]:
    """A reduce group's values computed a row (some dim, none reduced) before any of its
    reductions has a result: an idx() of the kept dims, a cast of a per-row input. A row
    kernel computes them in its first phase."""
    axes, after, out = set(group.axes), set(), []
    for v in group.values:          # in topological order
        if v.op == "reduce" or any(o.id in after for o in v.operands):
            after.add(v.id)
        elif v.dims and not set(v.dims) & axes:
            out.append(v)
    return out


def online_partner(sm: Value) -> Optional[Value]:
    """m where `sm` is sum(exp(a - m)) and m = max(a) over the same dims, in f32 or f64
    (the two statistics one pass can take together, s kept relative to the running max
    and rescaled as it grows), else None."""
    if sm.op != "reduce" or sm.attr("kind") != "sum":
        return None
    e = sm.operands[0]
    if e.op != "exp" or e.dtype != sm.dtype or e.operands[0].op != "sub":
        return None
    a, m = e.operands[0].operands
    if (m.op == "reduce" and m.attr("kind") == "max" and m.dtype == sm.dtype and m.dtype.name in ("f32", "f64")
            and m.operands[0].id == a.id and a.dtype == m.dtype and set(m.dims) == set(sm.dims)
            and set(m.attr("axes")) == set(sm.attr("axes"))):
        return m
    return None


def online_pairs(group: Group) -> Mapping[int, tuple[Value, Value]]:
    """Level -> (m, s) where the level's one reduction is m = max(a) and the next
    level's one is s = sum(exp(a - m)) (`online_partner`): a looped row reduction
    may take both in one pass over the row (Schedule.online); a group across memory
    holding both (partition) must."""
    return group._online_pairs


def _online_pairs_of(group: Group) -> dict[int, tuple[Value, Value]]:
    level = reduction_levels(group)
    reduces = {v.id: v for v in group.values if v.op == "reduce"}
    pairs: dict[int, tuple[Value, Value]] = {}
    for p in sorted(set(level.values())):
        here = [reduces[i] for i, lv in level.items() if lv == p]
        after = [reduces[i] for i, lv in level.items() if lv == p + 1]
        if len(here) != 1 or len(after) != 1 or p - 1 in pairs:
            continue
        if online_partner(after[0]) is here[0]:
            pairs[p] = (here[0], after[0])
    return pairs


def online_pair_alone(group: Group) -> Optional[tuple[Value, Value]]:
    """(m, s) where the group's reductions are one online pair and nothing else (partials
    of both can be combined by a second kernel, a split reduction's, as pairs), else None."""
    reduces = tuple(v for v in group.values if v.op == "reduce")
    return reduces if len(reduces) == 2 and list(online_pairs(group).values()) == [reduces] else None


def stored_by_its_producer(graph: Graph, operand: Value, itemsize: int = 0) -> bool:
    """Whether the partition can store this computed matmul operand (as if of
    `itemsize` bytes an element, where given) in the group that produces it, so
    that its product reads it as a plain input."""
    parts = _Partitioner(graph)
    return parts.producer(operand, parts.members(), itemsize) is not None


def partition(graph: Graph, spread: bool = False, columns: bool = False) -> list[Group]:
    """The fusion groups of `graph`, in an order that respects their temporaries.

    `spread`: for a few long rows (runtime/launcher.py decides per call class), each
    reduction level in a group of its own, writing only per-row values, and the results
    over whole rows in pointwise groups: then every reduction can split its rows over
    the GPU. Before/after, softmax: [reduce(max, sum(exp(x - max))) writes out] ->
    [reduce(max) writes m], [reduce(sum(exp(x - m))) writes s], [pointwise writes
    exp(x - m) / s].

    `columns`: reductions across memory (`walks_across`) group as reductions along rows
    do, with the work after them and their results over whole columns. For short columns
    (schedule.problem.runs_columns decides per call class) one kernel then reads each
    column from memory once, where the default's pointwise kernel reads x a second time.
    Before/after, softmax over M: [reduce(max, sum) writes m, s; pointwise writes
    exp(x - m) / s] -> [reduce(max, sum) writes out]."""
    return _Partitioner(graph, spread, columns).run()


PARTITION_MODES = ("", "spread", "columns")


def partition_of(graph: Graph, mode: str) -> list[Group]:
    """The partition named `mode`: "" the fused one, "spread" or "columns" (`partition`)."""
    if mode not in PARTITION_MODES:
        raise ValueError(f"no partition {mode!r}")
    return partition(graph, spread=mode == "spread", columns=mode == "columns")


def describe(groups: list[Group]) -> str:
    """One line per group, for `tiledsl emit --stage schedule`."""
    lines = []
    for g in groups:
        guards = load_guards(g)     # inputs read only where a mask needs them
        ins = ", ".join(f"%{v.id}" + (" only where " + " or ".join(
            f"{'' if taken else 'not '}%{c.id}" for c, taken in guards[v.id]) if v.id in guards else "")
            for v in g.inputs)
        outs = ", ".join(f"%{v.id}" for v in g.outputs)
        dims = f"kept=[{', '.join(g.kept)}]" + (f" reduced=[{', '.join(g.axes)}]" if g.axes else "")
        lines.append(f"group {g.index}: {g.kind} {dims} reads ({ins}) writes ({outs}) "
                     f"computes {len(g.values)} values")
    return "\n".join(lines)
