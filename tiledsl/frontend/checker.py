"""Syntax tree → checked IR.

Resolves names, binds dims, broadcasts by dim name, types every expression
(f16/bf16 arithmetic in f32, weak literals), and inserts every cast
explicitly. All user mistakes surface here as located TdslErrors.

Literals are *weak*: a literal-only expression (`2`, `1 / 3`, `-inf`) has no
dtype until it meets a typed value, and is then built directly in that value's
type, so `x_f64 * (1 / 3)` divides in f64 and `x_f16 + 1` stays in f32.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from .. import dtypes as dt
from ..dtypes import DType
from ..errors import (Loc, TdslError, TdslNameError, TdslShapeError, TdslSyntaxError,
                      TdslTypeError, did_you_mean)
from ..ir.graph import Graph, ParamInfo, ResultInfo, Value, broadcast_dims
from ..schedule.hints import check_hints
from . import ast

UNARY_FUNCS = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "sin", "cos", "tanh",
               "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "erf", "floor", "ceil"}
INT_UNARY = {"abs", "relu"}                  # these keep integer types; the rest are float math
BINARY_FUNCS = {"maximum", "minimum"}
LOGICAL_FUNCS = {"logical_and": "and", "logical_or": "or", "logical_not": "not"}
REDUCTIONS = {"sum", "mean", "max", "min"}
SPECIAL_FUNCS = {"where", "idx"}
FUNCTIONS = UNARY_FUNCS | BINARY_FUNCS | set(LOGICAL_FUNCS) | REDUCTIONS | SPECIAL_FUNCS
CONSTANTS = {"inf": math.inf, "nan": math.nan, "pi": math.pi}
BINARY_OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "**": "pow"}
COMPARE_OPS = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
RESERVED = FUNCTIONS | set(CONSTANTS) | set(dt.DTYPES)
# Where a value may stand these read as literals, so a parameter, value or dim
# named so could never be referred to.
KEYWORDS = {"true", "false"}


@dataclass(frozen=True)
class Weak:
    """A literal-only expression, typed only when it meets a typed value."""
    expr: ast.Expr
    kind: str   # 'int' or 'float'

    @property
    def default(self) -> DType:
        return dt.i32 if self.kind == "int" else dt.f32


Operand = Union[Value, Weak]


class _KernelChecker:
    def __init__(self, kernel: ast.Kernel, file: str):
        self.k = kernel
        self.file = file
        self.values: list[Value] = []
        self.params: list[ParamInfo] = []
        self.dim_decl: dict[str, Loc] = {}
        self.fixed: dict[str, int] = {}
        self.scope: dict[str, tuple[Operand, Loc]] = {}
        self.param_values: dict[str, Value] = {}
        # Variables bound to literal-only expressions, evaluated or built once each (a
        # chain `b = a + a`, `c = b + b`, ... would otherwise be walked exponentially often).
        self.weak_ints: dict[str, int] = {}
        self.weak_values: dict[tuple[str, DType], Value] = {}

    # -- IR construction ---------------------------------------------------
    def emit(self, op: str, operands, dtype: DType, dims, loc: Optional[Loc], **attrs) -> Value:
        v = Value(len(self.values), op, tuple(operands), dtype, tuple(dims),
                  tuple(sorted(attrs.items())), loc)
        self.values.append(v)
        return v

    def cast(self, v: Value, dtype: DType, loc: Optional[Loc] = None) -> Value:
        if v.dtype == dtype:
            return v
        return self.emit("cast", [v], dtype, v.dims, loc or v.loc, to=dtype)

    # -- signature ---------------------------------------------------------
    def dtype_of(self, name: str, loc: Loc) -> DType:
        if name not in dt.DTYPES:
            raise TdslTypeError(f"unknown dtype '{name}'{did_you_mean(name, dt.DTYPES)} "
                                f"(dtypes: {', '.join(dt.DTYPES)})", loc)
        return dt.DTYPES[name]

    def dims_of(self, decl: ast.TypeDecl, what: str) -> tuple[str, ...]:
        seen: dict[str, Loc] = {}
        for d in decl.dims or ():
            if d.name in KEYWORDS:
                raise TdslNameError(f"'{d.name}' is a keyword and cannot name a dim", d.loc)
            if d.name in seen and d.extent is not None:
                # Dims are told apart by name and a literal is named by its value, so
                # f32[3, 3] would be one dim twice.
                raise TdslShapeError(f"dim {d.name} appears twice in the type of {what}; a literal "
                                     f"dim is named by its value, so a type cannot repeat one: name "
                                     f"the dims instead ([R, C]) and pass arrays of size {d.name}",
                                     d.loc)
            if d.name in seen:
                raise TdslShapeError(f"dim {d.name} appears twice in the type of {what}; give each "
                                     f"dim its own name (sizes may still be equal at call time)", d.loc)
            if d.extent is not None and d.extent < 1:
                raise TdslShapeError(f"a literal dim must be at least 1, found {d.extent}", d.loc)
            if d.extent is not None and d.extent >= 2 ** 63:
                raise TdslShapeError(f"literal dim {d.extent} is too large", d.loc)
            seen[d.name] = d.loc
        return tuple(seen)

    def check_signature(self) -> None:
        names: dict[str, Loc] = {}
        with_default: Optional[ast.Param] = None
        for i, p in enumerate(self.k.params):
            if p.name in names:
                raise TdslNameError(f"parameter '{p.name}' is declared twice (first at "
                                    f"{names[p.name].line}:{names[p.name].col})", p.loc)
            if p.name in KEYWORDS:
                raise TdslNameError(f"'{p.name}' is a keyword and cannot name a parameter", p.loc)
            if p.name in RESERVED or p.name in ("T",):
                raise TdslNameError(f"'{p.name}' is a built-in name and cannot be a parameter", p.loc)
            if p.default is not None:
                with_default = with_default or p
            elif with_default is not None:   # as in Python: arguments bind by position
                raise TdslSyntaxError(f"parameter '{p.name}' has no default but follows "
                                      f"'{with_default.name}', which has one; parameters with "
                                      f"defaults come last", p.loc)
            names[p.name] = p.loc
            dtype = self.dtype_of(p.type.dtype, p.type.dtype_loc)
            dims = self.dims_of(p.type, f"'{p.name}'") if p.type.dims is not None else None
            for d in p.type.dims or ():
                self.dim_decl.setdefault(d.name, d.loc)
                if d.extent is not None:
                    self.fixed[d.name] = d.extent
            default = None
            if p.default is not None:
                if dims is not None:
                    raise TdslTypeError(f"only scalar parameters take defaults; '{p.name}' is a tensor",
                                        p.default.loc)
                default = self.check_default(p, dtype)
            info = ParamInfo(p.name, i, dtype, dims, default, p.loc)
            self.params.append(info)
            self.param_values[p.name] = self.emit("param", [], dtype, dims or (), p.loc,
                                                  name=p.name, index=i)
        clash = set(names) & set(self.dim_decl)
        if clash:
            name = sorted(clash)[0]
            raise TdslNameError(f"'{name}' names both a parameter and a dim; use different names",
                                self.dim_decl[name])

    def check_default(self, p: ast.Param, dtype: DType):
        default = p.default
        if isinstance(default, ast.Bool):
            if not dtype.is_bool:
                raise TdslTypeError(f"default {str(default.value).lower()} does not fit parameter "
                                    f"'{p.name}' of type {dtype}", default.loc)
            return default.value
        if dtype.is_bool:
            raise TdslTypeError(f"parameter '{p.name}' is bool; its default must be true or false",
                                default.loc)
        if isinstance(default, ast.Number):
            value, text = default.value, _shortened(default.text or repr(default.value))
        else:   # a constant, maybe negated: -inf
            name = default.operand if isinstance(default, ast.Negate) else default
            if name.id not in CONSTANTS:
                raise TdslNameError(f"unknown default '{name.id}'{did_you_mean(name.id, CONSTANTS)}; "
                                    f"a default is a number, inf, nan, pi, true or false", name.loc)
            negative = isinstance(default, ast.Negate)
            value = -CONSTANTS[name.id] if negative else CONSTANTS[name.id]
            text = ("-" if negative else "") + name.id
        if isinstance(value, float) and not dtype.is_float:
            raise TdslTypeError(f"default {text} is not an integer, but '{p.name}' is {dtype}",
                                default.loc)
        return literal_value(value, dtype, default.loc, f"default {text}",
                             written=isinstance(default, ast.Number))

    def check_results(self) -> list[ResultInfo]:
        results = []
        for i, t in enumerate(self.k.results):
            dtype = self.dtype_of(t.dtype, t.dtype_loc)
            dims = self.dims_of(t, f"result {i}") if t.dims is not None else ()
            for d in t.dims or ():
                if d.name not in self.dim_decl:
                    raise TdslShapeError(f"result dim {d.name} is not a dim of any parameter; every "
                                         f"result dim must come from an input"
                                         f"{did_you_mean(d.name, self.dim_decl)}", d.loc)
            results.append(ResultInfo(i, dtype, dims, t.loc))
        return results

    # -- statements --------------------------------------------------------
    def check(self) -> Graph:
        self.check_signature()
        results = self.check_results()
        outputs = None
        for stmt in self.k.body:
            if outputs is not None:
                raise TdslSyntaxError("statement after return; the return must come last", stmt.loc)
            if isinstance(stmt, ast.Assign):
                self.assign(stmt)
            else:
                outputs = self.return_(stmt, results)
        if outputs is None:
            raise TdslSyntaxError(f"kernel '{self.k.name}' has no return statement", self.k.end_loc)
        return Graph(self.k.name, tuple(self.params), tuple(results), tuple(self.values),
                     tuple(outputs), tuple(sorted(self.fixed.items())), self.k.loc)

    def assign(self, stmt: ast.Assign) -> None:
        name = stmt.target
        if name in self.scope:
            first = self.scope[name][1]
            raise TdslNameError(f"'{name}' is already assigned at line {first.line}; each name is "
                                f"assigned once", stmt.target_loc)
        if name in self.param_values:
            raise TdslNameError(f"'{name}' is a parameter and cannot be reassigned", stmt.target_loc)
        if name in KEYWORDS:
            raise TdslNameError(f"'{name}' is a keyword and cannot name a value", stmt.target_loc)
        if name in RESERVED:
            raise TdslNameError(f"'{name}' is a built-in name and cannot be assigned", stmt.target_loc)
        if name in self.dim_decl:
            raise TdslNameError(f"'{name}' is a dim of this kernel and cannot name a value",
                                stmt.target_loc)
        self.scope[name] = (self.expr(stmt.value), stmt.target_loc)

    def return_(self, stmt: ast.Return, results: list[ResultInfo]) -> list[Value]:
        if len(stmt.values) != len(results):
            raise TdslShapeError(f"kernel '{self.k.name}' declares {len(results)} result"
                                 f"{'s' if len(results) != 1 else ''} but returns {len(stmt.values)}",
                                 stmt.loc)
        outputs = []
        for expr, res in zip(stmt.values, results):
            v = self.expr(expr)
            if isinstance(v, Weak):
                fits = res.dtype.is_float or (v.kind == "int" and res.dtype.is_integer)
                v = self.materialize(v, res.dtype.compute if fits else v.default)
            outputs.append(self.store(v, res, expr.loc))
        return outputs

    def store(self, v: Value, res: ResultInfo, loc: Loc) -> Value:
        declared = f"{res.dtype}[{', '.join(res.dims)}]" if res.dims else str(res.dtype)
        if set(v.dims) != set(res.dims):
            found = f"[{', '.join(v.dims)}]" if v.dims else "no dims (a scalar)"
            missing = [d for d in res.dims if d not in v.dims]
            extra = [d for d in v.dims if d not in res.dims]
            hint = (f"; {'dims' if len(missing) > 1 else 'dim'} {', '.join(missing)} "
                    f"{'are' if len(missing) > 1 else 'is'} missing (a result does not broadcast)" if missing
                    else f"; reduce over {', '.join(extra)} or declare {'them' if len(extra) > 1 else 'it'}")
            raise TdslShapeError(f"result {res.index} is declared {declared} but the expression has "
                                 f"{found}{hint}", loc)
        if not _implicitly_converts(v.dtype, res.dtype):
            raise TdslTypeError(f"result {res.index} is declared {res.dtype} but the expression is "
                                f"{v.dtype}; convert explicitly with {res.dtype}(...)", loc)
        v = self.cast(v, res.dtype, loc)
        if v.dims != res.dims:
            v = self.emit("permute", [v], v.dtype, res.dims, loc, order=res.dims)
        return v

    # -- expressions -------------------------------------------------------
    def expr(self, e: ast.Expr) -> Operand:
        if isinstance(e, ast.Number):
            return Weak(e, "int" if isinstance(e.value, int) else "float")
        if isinstance(e, ast.Bool):
            return self.emit("const", [], dt.bool_, (), e.loc, value=e.value)
        if isinstance(e, ast.Name):
            return self.name(e)
        if isinstance(e, ast.Negate):
            x = self.expr(e.operand)
            if isinstance(x, Weak):
                return Weak(e, x.kind)
            self.no_bool(x, "-", e.loc)
            x = self.cast(x, x.dtype.compute)
            return self.emit("neg", [x], x.dtype, x.dims, e.loc)
        if isinstance(e, ast.Binary):
            return self.binary(e)
        if isinstance(e, ast.Attribute):
            return self.attribute(e)
        if isinstance(e, ast.Call):
            return self.call(e)
        raise TdslSyntaxError("unsupported expression", e.loc)   # unreachable: parser builds no other

    def name(self, e: ast.Name) -> Operand:
        if e.id in self.scope:
            return self.scope[e.id][0]
        if e.id in self.param_values:
            return self.param_values[e.id]
        if e.id in CONSTANTS:
            return Weak(e, "float")
        if e.id in self.dim_decl:
            raise TdslNameError(f"'{e.id}' is a dim, not a value; use idx({e.id}) for the index "
                                f"along it", e.loc)
        if e.id in FUNCTIONS or e.id in dt.DTYPES:
            raise TdslNameError(f"'{e.id}' is a function; call it as {e.id}(...)", e.loc)
        known = list(self.scope) + list(self.param_values) + list(CONSTANTS)
        raise TdslNameError(f"unknown name '{e.id}'{did_you_mean(e.id, known)}", e.loc)

    def no_bool(self, v: Value, op: str, loc: Loc) -> None:
        if v.dtype.is_bool:
            raise TdslTypeError(f"'{op}' does not take bool operands; convert with i32(...) or "
                                f"f32(...) first, or use logical_and/logical_or/logical_not", loc)

    def materialize(self, w: Weak, dtype: DType) -> Value:
        """Build a literal-only expression in `dtype`: an integer one as the one constant
        it equals exactly, a float one with every constant and op in `dtype`."""
        e = w.expr
        if w.kind == "int":
            value = self.exact_int(e)
            what = (f"literal {_shortened(e.text or str(value))}" if isinstance(e, ast.Number)
                    else f"this literal-only expression (= {value})")
            return self.emit("const", [], dtype, (), e.loc, value=literal_value(value, dtype, e.loc, what))
        if isinstance(e, ast.Number):
            value = literal_value(e.value, dtype, e.loc, f"literal {_shortened(e.text or repr(e.value))}",
                                  written=True)
            return self.emit("const", [], dtype, (), e.loc, value=value)
        if isinstance(e, ast.Name):
            if e.id in CONSTANTS:
                return self.emit("const", [], dtype, (), e.loc,
                                 value=literal_value(CONSTANTS[e.id], dtype, e.loc))
            key = (e.id, dtype)               # a variable bound to a weak value
            if key not in self.weak_values:
                self.weak_values[key] = self.materialize(self.scope[e.id][0], dtype)
            return self.weak_values[key]
        if isinstance(e, ast.Negate):
            x = self.materialize(Weak(e.operand, w.kind), dtype)
            return self.emit("neg", [x], dtype, (), e.loc)
        if isinstance(e, ast.Binary):
            lhs = self.materialize(Weak(e.lhs, w.kind), dtype)
            rhs = self.materialize(Weak(e.rhs, w.kind), dtype)
            return self.emit(BINARY_OPS[e.op], [lhs, rhs], dtype, (), e.loc)
        assert isinstance(e, ast.Call)
        args = [self.materialize(Weak(a, w.kind), dtype) for a in e.args]
        op = e.func if e.func in UNARY_FUNCS else e.func
        return self.emit(op, args, dtype, (), e.loc)

    def exact_int(self, e: ast.Expr) -> int:
        """The value of an integer literal-only expression, computed exactly: Python ints do
        not wrap, so `65536 * 65536` is 2**32 whatever type it is then built in."""
        if isinstance(e, ast.Name):   # a variable bound to a literal-only expression
            if e.id not in self.weak_ints:
                self.weak_ints[e.id] = self.exact_int(self.scope[e.id][0].expr)
            return self.weak_ints[e.id]
        if isinstance(e, ast.Number):
            value = e.value
        elif isinstance(e, ast.Negate):
            value = -self.exact_int(e.operand)
        elif isinstance(e, ast.Binary):   # integer-valued: + - * (/ and ** give floats)
            a, b = self.exact_int(e.lhs), self.exact_int(e.rhs)
            value = a + b if e.op == "+" else a - b if e.op == "-" else a * b
        else:                             # abs, relu, maximum, minimum
            assert isinstance(e, ast.Call)
            args = [self.exact_int(a) for a in e.args]
            value = {"abs": lambda: abs(args[0]), "relu": lambda: max(args[0], 0),
                     "maximum": lambda: max(args), "minimum": lambda: min(args)}[e.func]()
        if abs(value) >= 2 ** 1024:   # past f64's range: no type holds it; also bounds the work
            raise TdslTypeError("this literal-only expression is too large for any type", e.loc)
        return value

    def unify(self, a: Operand, b: Operand, op: str, loc: Loc, int_ok: bool = True):
        """Bring two operands to one compute dtype, materializing weak ones."""
        if isinstance(a, Weak) and isinstance(b, Weak):
            kind = "float" if "float" in (a.kind, b.kind) else "int"
            dtype = dt.f32 if kind == "float" or not int_ok else dt.i32
            if op in COMPARE_OPS and dtype.is_integer and not all(
                    _fits(self.exact_int(w.expr), dtype) for w in (a, b)):
                dtype = dt.i64   # compared exactly, as below
            return self.materialize(a, dtype), self.materialize(b, dtype), dtype
        if isinstance(a, Weak) or isinstance(b, Weak):
            weak, strong = (a, b) if isinstance(a, Weak) else (b, a)
            self.no_bool_unless_compare(strong, op, loc)
            target = strong.dtype.compute
            if target.is_bool:   # true == 2 is false, as in NumPy: compare as numbers
                target = weak.default
            if (weak.kind == "float" or not int_ok) and not target.is_float:
                target = dt.f32
            if op in COMPARE_OPS and weak.kind == "int" and target.is_integer:
                # As NumPy compares with a Python int: exactly, so `x_i8 < 200` is all true.
                value = self.exact_int(weak.expr)
                if not _fits(value, target) and _fits(value, dt.i64):
                    target = dt.i64
            w = self.materialize(weak, target)
            s = self.cast(strong, target)
            return (w, s, target) if weak is a else (s, w, target)
        self.no_bool_unless_compare(a, op, loc)
        self.no_bool_unless_compare(b, op, loc)
        target = dt.promote(a.dtype, b.dtype).compute
        if not int_ok and not target.is_float:
            target = dt.f32
        return self.cast(a, target), self.cast(b, target), target

    def no_bool_unless_compare(self, v: Value, op: str, loc: Loc) -> None:
        if op not in ("==", "!=", "where"):
            self.no_bool(v, op, loc)

    def binary(self, e: ast.Binary) -> Operand:
        lhs, rhs = self.expr(e.lhs), self.expr(e.rhs)
        if e.op == "@":
            return self.matmul(lhs, rhs, e)
        if isinstance(lhs, Weak) and isinstance(rhs, Weak) and e.op not in COMPARE_OPS:
            float_result = "float" in (lhs.kind, rhs.kind) or e.op in ("/", "**")
            return Weak(e, "float" if float_result else "int")
        if e.op in COMPARE_OPS:
            a, b, _ = self.unify(lhs, rhs, e.op, e.op_loc)
            if a.dtype.is_bool and e.op not in ("==", "!="):
                raise TdslTypeError(f"'{e.op}' does not order bool values", e.op_loc)
            return self.emit(COMPARE_OPS[e.op], [a, b], dt.bool_, broadcast_dims(a.dims, b.dims), e.loc)
        float_only = e.op in ("/", "**")   # true division and power always give floats
        a, b, dtype = self.unify(lhs, rhs, e.op, e.op_loc, int_ok=not float_only)
        return self.emit(BINARY_OPS[e.op], [a, b], dtype, broadcast_dims(a.dims, b.dims), e.loc)

    def matmul(self, lhs: Operand, rhs: Operand, e: ast.Binary) -> Value:
        for side, v in (("left", lhs), ("right", rhs)):
            if isinstance(v, Weak) or not v.dims:
                raise TdslShapeError(f"the {side} operand of @ is a scalar; @ needs tensors "
                                     f"(use * to scale)", e.op_loc)
            if not v.dtype.is_float:
                raise TdslTypeError(f"@ needs float operands, the {side} one is {v.dtype}; "
                                    f"convert with f32(...) or f16(...)", e.op_loc)
        common = dt.promote(lhs.dtype, rhs.dtype)
        a, b = self.cast(lhs, common), self.cast(rhs, common)
        k_a = a.dims[-1]
        k_b = b.dims[-2] if len(b.dims) >= 2 else b.dims[-1]
        if k_a != k_b:
            # Named broadcasting may have reordered an operand's dims; contract
            # by name when exactly one dim is shared between the two last pairs.
            shared = [d for d in a.dims[-2:] if d in b.dims[-2:]]
            if len(shared) == 1:
                a, b = self.contract_last(a, shared[0], -1, e), self.contract_last(b, shared[0], -2, e)
                k_a = k_b = shared[0]
        if k_a != k_b:
            raise TdslShapeError(f"@ contracts the last dim of its left operand with the second-to-last "
                                 f"of its right: {k_a} vs {k_b} (dims [{', '.join(a.dims)}] @ "
                                 f"[{', '.join(b.dims)}]); they must be the same dim", e.op_loc)
        m = (a.dims[-2],) if len(a.dims) >= 2 else ()
        n = (b.dims[-1],) if len(b.dims) >= 2 else ()
        batch = broadcast_dims(a.dims[:-2], b.dims[:-2])
        dims = batch + m + n
        if len(set(dims)) != len(dims) or k_a in batch:
            raise TdslShapeError(f"[{', '.join(a.dims)}] @ [{', '.join(b.dims)}] would give a result "
                                 f"with a repeated dim; name the dims of the two operands apart",
                                 e.op_loc)
        return self.emit("matmul", [a, b], common.compute, dims, e.loc, contract=k_a)

    def contract_last(self, v: Value, k: str, position: int, e: ast.Binary) -> Value:
        """`v` with `k` moved to `position` (-1 or -2) by swapping its last two dims."""
        if len(v.dims) < 2 or v.dims[position] == k:
            return v
        order = v.dims[:-2] + (v.dims[-1], v.dims[-2])
        return self.emit("permute", [v], v.dtype, order, e.op_loc, order=order)

    def attribute(self, e: ast.Attribute) -> Value:
        if e.attr != "T":
            raise TdslNameError(f"unknown attribute '.{e.attr}'; tensors have only .T", e.attr_loc)
        v = self.expr(e.value)
        if isinstance(v, Weak) or len(v.dims) < 2:
            have = "a scalar" if isinstance(v, Weak) or not v.dims else f"dims [{', '.join(v.dims)}]"
            raise TdslShapeError(f".T swaps the last two dims and needs at least 2; the value has {have}",
                                 e.attr_loc)
        order = v.dims[:-2] + (v.dims[-1], v.dims[-2])
        return self.emit("permute", [v], v.dtype, order, e.loc, order=order)

    # -- calls -------------------------------------------------------------
    def call(self, e: ast.Call) -> Operand:
        f = e.func
        if f in dt.DTYPES:
            self.arity(e, 1)
            return self.convert(self.expr(e.args[0]), dt.DTYPES[f], e.loc)
        if f not in FUNCTIONS:
            if f in self.scope or f in self.param_values:
                raise TdslNameError(f"'{f}' is a value, not a function", e.func_loc)
            raise TdslNameError(f"unknown function '{f}'"
                                f"{did_you_mean(f, FUNCTIONS | set(dt.DTYPES))}", e.func_loc)
        if f in REDUCTIONS:
            return self.reduction(e)
        if f == "idx":
            return self.idx(e)
        if f == "where":
            self.arity(e, 3)
            cond = self.expr(e.args[0])
            if isinstance(cond, Weak) or not cond.dtype.is_bool:
                found = "a number" if isinstance(cond, Weak) else cond.dtype
                raise TdslTypeError(f"the condition of where must be bool (a comparison), found {found}",
                                    e.args[0].loc)
            a, b = self.expr(e.args[1]), self.expr(e.args[2])
            a, b, dtype = self.unify(a, b, "where", e.loc)
            dims = broadcast_dims(broadcast_dims(a.dims, b.dims), cond.dims)  # values set the order
            return self.emit("where", [cond, a, b], dtype, dims, e.loc)
        if f in LOGICAL_FUNCS:
            n = 1 if f == "logical_not" else 2
            self.arity(e, n)
            args = [self.expr(a) for a in e.args]
            for arg, src in zip(args, e.args):
                if isinstance(arg, Weak) or not arg.dtype.is_bool:
                    raise TdslTypeError(f"{f} takes bool values (comparisons)", src.loc)
            dims = args[0].dims if n == 1 else broadcast_dims(args[0].dims, args[1].dims)
            return self.emit(LOGICAL_FUNCS[f], args, dt.bool_, dims, e.loc)
        if f in BINARY_FUNCS:
            self.arity(e, 2)
            lhs, rhs = self.expr(e.args[0]), self.expr(e.args[1])
            if isinstance(lhs, Weak) and isinstance(rhs, Weak):
                return Weak(e, "float" if "float" in (lhs.kind, rhs.kind) else "int")
            a, b, dtype = self.unify(lhs, rhs, f, e.loc)
            return self.emit(f, [a, b], dtype, broadcast_dims(a.dims, b.dims), e.loc)
        # unary math
        self.arity(e, 1)
        x = self.expr(e.args[0])
        if isinstance(x, Weak):
            return Weak(e, x.kind if f in INT_UNARY else "float")
        self.no_bool(x, f, e.loc)
        dtype = x.dtype.compute
        if f not in INT_UNARY and not dtype.is_float:
            dtype = dt.f32
        x = self.cast(x, dtype)
        return self.emit(f, [x], dtype, x.dims, e.loc)

    def arity(self, e: ast.Call, n: int) -> None:
        if e.kwargs:
            raise TdslSyntaxError(f"{e.func}() takes no keyword arguments", e.kwargs[0].loc)
        if len(e.args) != n:
            raise TdslSyntaxError(f"{e.func}() takes {n} argument{'s' if n != 1 else ''}, "
                                  f"found {len(e.args)}", e.loc)

    def convert(self, x: Operand, dtype: DType, loc: Loc) -> Value:
        if isinstance(x, Weak):
            base = dtype.compute if (dtype.is_float or x.kind == "int") else dt.f32
            if dtype.is_bool:
                base = dt.f32 if x.kind == "float" else dt.i32
            x = self.materialize(x, base)
        return self.cast(x, dtype, loc)

    def dim_list(self, value: Union[ast.Expr, ast.TupleExpr]) -> list[tuple[str, Loc]]:
        items = value.items if isinstance(value, ast.TupleExpr) else (value,)
        out = []
        for item in items:
            if isinstance(item, ast.Name):
                name = item.id
            elif isinstance(item, ast.Number) and isinstance(item.value, int):
                name = str(item.value)
            else:
                raise TdslSyntaxError("expected a dim name, such as axis=N or axis=(M, N)", item.loc)
            if name not in self.dim_decl:
                raise TdslNameError(f"unknown dim '{name}'{did_you_mean(name, self.dim_decl)} "
                                    f"(this kernel's dims: {', '.join(self.dim_decl) or 'none'})", item.loc)
            if any(name == n for n, _ in out):
                raise TdslShapeError(f"dim {name} is named twice", item.loc)
            out.append((name, item.loc))
        return out

    def reduction(self, e: ast.Call) -> Value:
        if not e.args:
            raise TdslSyntaxError(f"{e.func}() needs the value to reduce, e.g. {e.func}(x, axis=N)", e.loc)
        if len(e.args) > 1:
            hint = ""
            if e.func in ("max", "min") and len(e.args) == 2:
                hint = f"; for the elementwise {e.func}imum of two values use {e.func}imum(a, b)"
            elif isinstance(e.args[1], ast.Name) and e.args[1].id in self.dim_decl:
                hint = f"; name the dims to reduce with axis=, e.g. {e.func}(x, axis={e.args[1].id})"
            raise TdslSyntaxError(f"{e.func}() takes 1 value to reduce, found {len(e.args)}{hint}", e.loc)
        axes_kw = None
        for kw in e.kwargs:
            if kw.name != "axis":
                raise TdslSyntaxError(f"{e.func}() takes only the keyword 'axis', found '{kw.name}'",
                                      kw.loc)
            if axes_kw is not None:
                raise TdslSyntaxError(f"{e.func}() is given axis= twice; name several dims as "
                                      f"axis=(M, N)", kw.loc)
            axes_kw = kw
        x = self.expr(e.args[0])
        if isinstance(x, Weak):
            x = self.materialize(x, x.default)
        if axes_kw is None:
            axes = x.dims
        else:
            axes = []
            for name, loc in self.dim_list(axes_kw.value):
                if name not in x.dims:
                    have = f"dims [{', '.join(x.dims)}]" if x.dims else "no dims"
                    raise TdslShapeError(f"{e.func}() cannot reduce over {name}: the value has {have}",
                                         loc)
                axes.append(name)
            axes = tuple(axes)
        kind = e.func
        if kind in ("sum", "mean"):
            dtype = (x.dtype.compute if x.dtype.is_float else
                     dt.f32 if kind == "mean" else dt.i64)
        else:
            if x.dtype.is_bool:
                raise TdslTypeError(f"{kind}() of bool values: convert with i32(...) first", e.loc)
            dtype = x.dtype.compute
        x = self.cast(x, dtype)
        dims = tuple(d for d in x.dims if d not in axes)
        return self.emit("reduce", [x], dtype, dims, e.loc, kind=kind, axes=axes)

    def idx(self, e: ast.Call) -> Value:
        self.arity(e, 1)
        [(name, _)] = self.dim_list(e.args[0])
        return self.emit("idx", [], dt.i64, (name,), e.loc, dim=name)


def _implicitly_converts(src: DType, dst: DType) -> bool:
    """Conversions a return may make silently: within a kind, or to a wider kind."""
    order = {"bool": 0, "uint": 1, "int": 1, "float": 2}
    return order[src.kind] <= order[dst.kind]


def _fits(value: int, dtype: DType) -> bool:
    info = np.iinfo(dtype.numpy)
    return info.min <= value <= info.max


def _shortened(text: str) -> str:
    """A number's text as messages quote it: a 5000-digit one is cut in the middle."""
    return text if len(text) <= 40 else f"{text[:20]}...{text[-10:]}"


def literal_value(value, dtype: DType, loc: Loc, what: str = "", written: bool = False):
    """A literal converted to `dtype`, or a located error when it does not fit.

    `what` names it in messages ("literal 1e39"); `written` says it is a number as
    written, whose float is inf only when it is too large for any type (1e400),
    unlike the constant inf.
    """
    what = what or f"literal {value}"
    if dtype.is_bool:
        return bool(value)
    if dtype.is_integer:
        if isinstance(value, float):
            if not math.isfinite(value):
                raise TdslTypeError(f"{value} has no {dtype} value", loc)
            value = int(value)
        info = np.iinfo(dtype.numpy)
        if not info.min <= value <= info.max:
            raise TdslTypeError(f"{what} does not fit in {dtype} ({info.min} to {info.max})", loc)
        return int(value)
    fmax = dt.float_max(dtype)
    try:
        as_float = float(value)
    except OverflowError:   # an int past f64's range
        as_float = math.inf
    if abs(as_float) > fmax and (math.isfinite(as_float) or written or isinstance(value, int)):
        hint = "; write inf for infinity" if math.isinf(as_float) else ""
        raise TdslTypeError(f"{what} is too large for {dtype} (largest {fmax:g}){hint}", loc)
    return as_float


def check_program(program: ast.Program) -> tuple[list[Graph], dict]:
    """Check every kernel and schedule block; returns the graphs and the hints per kernel."""
    if not program.kernels:
        raise TdslSyntaxError("no kernel in the program (write one as "
                              "kernel NAME(PARAMS) -> RESULT { ... })",
                              Loc(program.file, 1, 1, 2, program.source))
    graphs: list[Graph] = []
    seen: dict[str, ast.Kernel] = {}
    for k in program.kernels:
        if k.name in seen:
            first = seen[k.name].name_loc
            raise TdslNameError(f"kernel '{k.name}' is defined twice (first at line {first.line})",
                                k.name_loc)
        seen[k.name] = k
        try:
            graphs.append(_KernelChecker(k, program.file).check())
        except RecursionError:
            raise TdslError("kernel too deeply nested to check", k.loc) from None
    hints = check_hints(program, {g.name: g for g in graphs})
    return graphs, hints
