"""The syntax tree: frozen dataclasses, each carrying its source location.

The tree records what the user wrote and nothing more; names, dims and dtypes
are resolved by the checker, which turns this tree into IR.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from ..errors import Loc


@dataclass(frozen=True)
class Name:
    loc: Loc
    id: str


@dataclass(frozen=True)
class Number:
    loc: Loc
    value: Union[int, float]   # int for integer literals, float otherwise
    text: str = ""             # as written, for messages ("1e400" reads as inf)


@dataclass(frozen=True)
class Bool:
    loc: Loc
    value: bool


@dataclass(frozen=True)
class Negate:
    loc: Loc
    operand: "Expr"


@dataclass(frozen=True)
class Binary:
    loc: Loc
    op: str            # + - * / @ ** < <= > >= == !=
    op_loc: Loc
    lhs: "Expr"
    rhs: "Expr"


@dataclass(frozen=True)
class TupleExpr:
    loc: Loc
    items: tuple["Expr", ...]


@dataclass(frozen=True)
class Keyword:
    loc: Loc
    name: str
    value: Union["Expr", TupleExpr]


@dataclass(frozen=True)
class Call:
    loc: Loc
    func: str
    func_loc: Loc
    args: tuple["Expr", ...]
    kwargs: tuple[Keyword, ...]


@dataclass(frozen=True)
class Attribute:
    loc: Loc
    value: "Expr"
    attr: str
    attr_loc: Loc


Expr = Union[Name, Number, Bool, Negate, Binary, Call, Attribute]


@dataclass(frozen=True)
class DimDecl:
    loc: Loc
    name: str                   # a literal dim is named by its extent: "4"
    extent: Optional[int]       # set for literal dims


@dataclass(frozen=True)
class TypeDecl:
    loc: Loc
    dtype: str
    dtype_loc: Loc
    dims: Optional[tuple[DimDecl, ...]]   # None: a scalar


@dataclass(frozen=True)
class Param:
    loc: Loc
    name: str
    type: TypeDecl
    default: Optional[Union[Number, Bool, Name, Negate]]   # a Name: inf, nan or pi


@dataclass(frozen=True)
class Assign:
    loc: Loc
    target: str
    target_loc: Loc
    value: Expr


@dataclass(frozen=True)
class Return:
    loc: Loc
    values: tuple[Expr, ...]


Stmt = Union[Assign, Return]


@dataclass(frozen=True)
class Kernel:
    loc: Loc
    name: str
    name_loc: Loc
    params: tuple[Param, ...]
    results: tuple[TypeDecl, ...]
    results_loc: Loc
    body: tuple[Stmt, ...]
    end_loc: Loc                # the closing brace, for "missing return"


@dataclass(frozen=True)
class Directive:
    loc: Loc
    name: str
    args: tuple[Expr, ...]
    kwargs: tuple[Keyword, ...]


@dataclass(frozen=True)
class ScheduleBlock:
    loc: Loc
    kernel: str
    kernel_loc: Loc
    directives: tuple[Directive, ...]


@dataclass(frozen=True)
class Program:
    file: str
    source: str
    kernels: tuple[Kernel, ...]
    schedules: tuple[ScheduleBlock, ...]
