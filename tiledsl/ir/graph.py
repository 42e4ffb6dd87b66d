"""The IR: a typed dataflow graph over named dims.

Every `Value` has a dtype and an ordered tuple of dim names. Operands of
elementwise ops broadcast *by name*: an operand that lacks a dim of the result
is constant along it. Operands always arrive in the op's own dtype: the checker
inserts every cast explicitly, so later stages never guess at promotion.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

from ..dtypes import DType
from ..errors import Loc

UNARY_OPS = ("neg", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos",
             "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "erf", "floor", "ceil", "not")
ARITH_OPS = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "and", "or")
COMPARE_OPS = ("lt", "le", "gt", "ge", "eq", "ne")
REDUCE_KINDS = ("sum", "mean", "max", "min")
ELEMENTWISE_OPS = UNARY_OPS + ARITH_OPS + COMPARE_OPS + ("where", "cast")
LEAF_OPS = ("param", "const", "idx")
ALL_OPS = LEAF_OPS + ELEMENTWISE_OPS + ("reduce", "matmul", "permute")

Attr = Union[int, float, bool, str, tuple, DType, None]


@dataclass(frozen=True, eq=False)
class Value:
    """One node of the graph. Compared and hashed by identity."""
    id: int
    op: str
    operands: tuple["Value", ...]
    dtype: DType
    dims: tuple[str, ...]
    attrs: tuple[tuple[str, Attr], ...] = ()
    loc: Optional[Loc] = field(default=None, repr=False)

    def attr(self, name: str, default: Any = None) -> Any:
        for key, value in self.attrs:
            if key == name:
                return value
        return default

    @property
    def is_scalar(self) -> bool:
        return not self.dims


@dataclass(frozen=True)
class ParamInfo:
    name: str
    index: int
    dtype: DType
    dims: Optional[tuple[str, ...]]          # None for a scalar parameter
    default: Optional[Union[int, float, bool]]
    loc: Loc

    @property
    def is_scalar(self) -> bool:
        return self.dims is None


@dataclass(frozen=True)
class ResultInfo:
    index: int
    dtype: DType
    dims: tuple[str, ...]
    loc: Loc


@dataclass(frozen=True)
class Graph:
    name: str
    params: tuple[ParamInfo, ...]
    results: tuple[ResultInfo, ...]
    values: tuple[Value, ...]                # in topological order
    outputs: tuple[Value, ...]               # one per result, matching it exactly
    fixed_extents: tuple[tuple[str, int], ...]   # literal dims: ("4", 4)
    loc: Loc

    def param(self, name: str) -> ParamInfo:
        return next(p for p in self.params if p.name == name)

    @property
    def dims(self) -> tuple[str, ...]:
        """Every dim the kernel's parameters bind, in order of first appearance."""
        seen: dict[str, None] = {}
        for p in self.params:
            for d in p.dims or ():
                seen.setdefault(d)
        return tuple(seen)

    def users(self) -> dict[int, list[Value]]:
        out: dict[int, list[Value]] = {v.id: [] for v in self.values}
        for v in self.values:
            for o in v.operands:
                out[o.id].append(v)
        return out


def reaches(v: Value, hit, within) -> bool:
    """Whether computing `v` through the values whose ids are in `within` reaches a value
    (one of them, or an input they read) for which `hit` holds."""
    stack, seen = [v], set()
    while stack:
        u = stack.pop()
        if u.id in seen:
            continue
        seen.add(u.id)
        if hit(u):
            return True
        if u.id in within:
            stack.extend(u.operands)
    return False


def unpermuted(value: Value) -> Value:
    """The value a chain of permutes (`x.T`) reads: a product reads a transposed
    operand in place, its offsets following loops rather than dim order."""
    while value.op == "permute":
        value = value.operands[0]
    return value


def stored_copy(operand: Value) -> Optional[Value]:
    """The copy laid out along K that a TF32 product reads its operand through
    (`ir.passes.tf32_operands_along_k`: a permute marked `stored`, maybe seen
    through one more permute), or None."""
    for v in (operand, operand.operands[0] if operand.op == "permute" else None):
        if v is not None and v.op == "permute" and v.attr("stored"):
            return v
    return None


def broadcast_dims(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    """The dims of an elementwise result: an operand whose dims contain the
    other's keeps its order; otherwise the left's dims, then the right's new ones."""
    if set(b) <= set(a):
        return a
    if set(a) <= set(b):
        return b
    return a + tuple(d for d in b if d not in a)
