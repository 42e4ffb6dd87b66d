"""Inputs a group needs only where an index condition holds.

In `where(idx(K) <= idx(Q), s * scale, -inf)` (a causal mask) the elements of s
past the diagonal never reach a result: the where takes its other branch there.
A kernel may leave such a vector of s unread when its condition is false in
every lane, and a causal softmax then reads half of s. The condition must be
computable without memory (indices, scalars and literals), so that it costs a
few integer instructions where the load it saves costs bandwidth.
"""
from __future__ import annotations

from ..ir.graph import Value, reaches

# A condition and the branch it guards: True for where's second operand (taken
# where the condition holds), False for its third (taken where it does not).
Guard = tuple[Value, bool]


def index_only(v: Value, group_ids: set[int]) -> bool:
    """Whether `v` is computed from indices, scalar parameters and literals alone: no tensor
    read from memory and no reduction (known only after a pass over the row). An input of
    the group may be a scalar parameter only: a 0-d value another kernel stored (a full
    reduction) is read from memory with the elements, not before their loads."""
    return not reaches(v, lambda u: (bool(u.dims) or u.op != "param") if u.id not in group_ids
                       else u.op in ("reduce", "matmul", "param"), group_ids)


def load_guards(group) -> dict[int, tuple[Guard, ...]]:
    """For each tensor input of `group` that reaches its results and reductions only
    through branches of wheres with index-only conditions: those conditions, each
    with the branch it takes (the input is needed where any of them holds)."""
    group_ids = {v.id for v in group.values}
    users: dict[int, list[tuple[Value, int]]] = {}
    for v in group.values:
        for i, o in enumerate(v.operands):
            users.setdefault(o.id, []).append((v, i))
    sinks = {v.id for v in group.outputs} | {v.id for v in group.values if v.op in ("reduce", "matmul")}
    out: dict[int, tuple[Guard, ...]] = {}
    for inp in group.inputs:
        if not inp.dims or inp.id in sinks:
            continue
        guards: dict[tuple[int, bool], Guard] = {}
        stack, seen, escapes = [inp], set(), False
        while stack and not escapes:
            v = stack.pop()
            for user, i in users.get(v.id, []):
                if user.op == "where" and i > 0 and index_only(user.operands[0], group_ids):
                    guards.setdefault((user.operands[0].id, i == 1), (user.operands[0], i == 1))
                    continue
                if user.id in sinks:
                    escapes = True
                    break
                if user.id not in seen:
                    seen.add(user.id)
                    stack.append(user)
        polarities = {}
        for c, taken in guards.values():
            polarities.setdefault(c.id, set()).add(taken)
        if guards and not escapes and all(len(p) == 1 for p in polarities.values()):
            out[inp.id] = tuple(guards.values())
    return out


def deciding_lane(c: Value, taken: bool, lane_dims: set):
    """Which lane of a vector (its lanes walk `lane_dims`) decides whether any lane needs
    the branch that condition `c` guards (`taken`: the branch where it holds): 0 where the
    branch is needed on a prefix of the lanes, -1 on a suffix, None where every lane must
    be asked. A prefix or a suffix comes of comparing a value that grows along the lanes
    (an index, plus what is constant along them) with one constant along them."""
    def varies(v: Value) -> bool:
        return bool(set(v.dims) & lane_dims)

    def bounded(v: Value) -> bool:     # an addend that cannot wrap an i64 index around
        return v.op == "idx" or v.op == "const" and abs(v.attr("value", 2 ** 62)) < 2 ** 62

    def growing(v: Value) -> bool:
        if not varies(v) or v.op == "idx":
            return True
        if v.op == "cast":          # (not to narrower ints, which wrap)
            return v.dtype.name in ("i64", "f32", "f64") and growing(v.operands[0])
        a, b = (v.operands + (None, None))[:2]
        wraps = v.dtype.name.startswith(("i", "u"))
        if v.op == "add":
            return all(growing(o) and (not wraps or varies(o) or bounded(o)) for o in (a, b))
        if v.op == "sub":
            return growing(a) and not varies(b) and (not wraps or bounded(b))
        return False
    if not varies(c):
        return 0
    if c.op == "not":
        return deciding_lane(c.operands[0], not taken, lane_dims)
    if c.op in ("lt", "le", "gt", "ge"):
        a, b = c.operands
        if growing(a) and not varies(b):
            prefix = c.op in ("lt", "le")       # a grows past b
        elif growing(b) and not varies(a):
            prefix = c.op in ("gt", "ge")       # b grows past a
        else:
            return None
        return 0 if prefix == taken else -1
    return None
