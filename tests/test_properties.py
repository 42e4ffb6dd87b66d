"""Property test: random well-typed expressions over named dims, against NumPy.

Hypothesis draws a few named dims (M, N, K, extents 1-7), parameters of
random dtypes (f16/f32/f64) over random subsets and orders of those dims, and
an expression tree from + - * / maximum minimum where, every function of
the language (exp exp2 log log2 sqrt rsqrt sin cos tanh sigmoid gelu gelu_tanh silu erf
abs relu floor ceil, unary minus, casts), ** with a literal exponent,
comparisons and logical ops (inside where), reductions sum/max/min/mean over one, several or all
dims, literals and .T, with some subexpressions bound to names.

From the same draw it writes BOTH the .tdsl text and an independent float64
NumPy evaluation (np.einsum for the by-name alignment, written here from the
language's rules, not the library's code). `k.reference(..., compute="f64")`
must agree within 1e-9 relative, with NaN in the same places.

Inputs are small dyadic numbers (k/4), so sums and products are exact and
only transcendental functions and division round; divisors are kept away
from zero (`a / (abs(b) + 1)`) so that the sign of a zero never decides an
infinity.
"""
from __future__ import annotations

import math
import os
import re
import string
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import tiledsl
from tiledsl.inputs import relative_error
from tiledsl.reference import evaluate

DIM_NAMES = ("M", "N", "K", "B")    # the first three unless a build asks for max_dims=4
LETTERS = {d: string.ascii_lowercase[i] for i, d in enumerate(DIM_NAMES)}    # for np.einsum
F32_MAX = float(np.finfo(np.float32).max)
NP_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
LITERALS = ("0.5", "1", "2", "3", "0.25", "1.5")
INT_DTYPES = ["i8", "u8", "i32", "i64", "bool"]     # parameters drawn with `ints` (bool: conditions only)
INT_RESULTS = ("i8", "u8", "i32", "i64")            # what a result drawn as "int" is declared


def _elementwise(fn):
    """A float64 function of arrays (0-d too) from a scalar one of the math module."""
    each = np.frompyfunc(fn, 1, 1)
    return lambda v: np.asarray(each(v), dtype=np.float64)


_erfc = _elementwise(math.erfc)


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-v))


# function: (its text around the argument, its float64 value), from the language's
# definitions (LANGUAGE.md, README; gelu = x * Phi(x), 1 + erf(z) written as erfc(-z); gelu_tanh
# = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))))
FUNCTIONS = {
    "exp": ("exp({})", np.exp), "exp2": ("exp2({})", np.exp2), "tanh": ("tanh({})", np.tanh),
    "abs": ("abs({})", np.abs), "relu": ("relu({})", lambda v: np.maximum(v, 0.0)),
    "sigmoid": ("sigmoid({})", _sigmoid), "neg": ("(-{})", np.negative),
    "sin": ("sin({})", np.sin), "cos": ("cos({})", np.cos),
    "log": ("log(abs({}) + 1)", lambda v: np.log(np.abs(v) + 1.0)),
    "log2": ("log2(abs({}) + 1)", lambda v: np.log2(np.abs(v) + 1.0)),
    "sqrt": ("sqrt(abs({}))", lambda v: np.sqrt(np.abs(v))),
    "rsqrt": ("rsqrt(abs({}) + 1)", lambda v: 1.0 / np.sqrt(np.abs(v) + 1.0)),
    "gelu": ("gelu({})", lambda v: 0.5 * v * _erfc(-v / math.sqrt(2.0))),
    "gelu_tanh": ("gelu_tanh({})",
                  lambda v: 0.5 * v * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3)))),
    "silu": ("silu({})", lambda v: v * _sigmoid(v)),
    "erf": ("erf({})", _elementwise(math.erf)),
}
STEPS = {"floor": ("floor({})", np.floor), "ceil": ("ceil({})", np.ceil)}
POWER_ROUNDS = re.compile(r"\*\* (?![23]\))")   # a power rounds but ** 2 and ** 3 (products) of these values
ROUNDING = {f for f in FUNCTIONS if f not in ("abs", "relu", "neg")} | {"mean"}   # their values may round


def result_dims(a: tuple, b: tuple) -> tuple:
    """The language's rule for an elementwise result's dims (see LANGUAGE.md): an
    operand whose dims contain the other's keeps its order; otherwise the left
    operand's dims, then the right's new ones."""
    if set(b) <= set(a):
        return a
    if set(a) <= set(b):
        return b
    return a + tuple(d for d in b if d not in a)


@dataclass
class Node:
    text: str
    dims: tuple            # the language's dim order for this value
    value: np.ndarray      # float64, axes in `dims` order
    weak: bool = False     # a literal-only expression
    is_bool: bool = False
    is_int: bool = False   # an integer expression (int_expr): its value here ignores wrap-around


@dataclass
class Program:
    extents: dict
    params: list = field(default_factory=list)       # (name, dtype, dims or None)
    args: list = field(default_factory=list)
    stmts: list = field(default_factory=list)
    magnitude: float = 1.0                           # largest finite intermediate seen
    overflows: bool = False                          # an intermediate past f32's range, or not finite

    def see(self, v: np.ndarray) -> None:
        if v.dtype == np.bool_:
            return
        finite = np.abs(v[np.isfinite(v)])
        if finite.size:
            self.magnitude = max(self.magnitude, float(finite.max()))
        self.overflows |= finite.size < v.size or bool(finite.size and finite.max() > F32_MAX)


def align(node: Node, dims: tuple, extents: dict) -> np.ndarray:
    """node.value with axes permuted to `dims` order (by einsum) and size 1 where it lacks a dim."""
    present = [d for d in dims if d in node.dims]
    spec = "".join(LETTERS[d] for d in node.dims) + "->" + "".join(LETTERS[d] for d in present)
    v = np.einsum(spec, node.value)
    shape = [extents[d] if d in node.dims else 1 for d in dims]
    return v.reshape(shape)


class Builder:
    def __init__(self, data, prog: Program, rng: np.random.Generator, products: int = 0, bf16: bool = False,
                 exact_conditions: bool = False, indices: bool = False):
        self.data, self.prog, self.rng, self.bf16 = data, prog, rng, bf16
        self.exact_conditions = exact_conditions
        self.indices = indices           # idx(D) leaves
        self.inexact_names: set[str] = set()    # bound names whose values round (exp, /, mean, ...)
        self.pool: list[Node] = []
        self.int_pool: list[Node] = []          # integer values (int_expr) to reuse
        self.count = 0
        self.products = products if len(prog.extents) >= 3 else 0   # the weight of "product"

    def draw(self, strategy):
        return self.data.draw(strategy)

    def choose(self, options):
        return self.draw(st.sampled_from(options))

    # -- leaves --------------------------------------------------------------------
    def leaf(self) -> Node:
        declared = sorted({d for _, _, dims in self.prog.params for d in dims or ()})
        index = ["index"] if self.indices and declared else []     # a dim exists only where a parameter declares it
        kind = self.choose(["param", "param", "param", "literal", "reuse"] + index)
        if kind == "reuse" and self.pool:
            return self.choose(self.pool)
        if kind == "index":     # idx(D): the position along D, an integer
            d = self.choose(declared)
            return Node(f"idx({d})", (d,), np.arange(self.prog.extents[d], dtype=np.float64))
        if kind == "literal":
            text = self.choose(LITERALS)
            node = Node(text, (), np.array(float(text)), weak=True)
            if self.draw(st.booleans()) and self.draw(st.booleans()):
                node = Node(f"(-{text})", (), -node.value, weak=True)
            return node
        numbers = self.numeric_params()
        if not numbers:
            return self.leaf_literal()
        name, dtype, dims = self.choose(numbers)
        value = np.asarray(self.prog.args[int(name[1:])], dtype=np.float64)
        return Node(name, dims or (), value)

    def numeric_params(self) -> list:
        """The parameters a number may be (a bool one is a condition only)."""
        return [p for p in self.prog.params if p[1] != "bool"]

    def leaf_literal(self) -> Node:
        return Node(LITERALS[0], (), np.array(float(LITERALS[0])), weak=True)

    # -- inner nodes ---------------------------------------------------------------
    def expr(self, depth: int) -> Node:
        if depth <= 0:
            return self.leaf()
        kind = self.choose(["leaf", "binary", "binary", "unary", "reduce", "where", "transpose",
                            "power"] + ["product"] * self.products + ["integer"] * self.indices)
        if kind == "integer":
            node = self.integer(depth - 1)
        elif kind == "product":
            node = self.product()
        elif kind == "leaf":
            node = self.leaf()
        elif kind == "binary":
            node = self.binary(self.expr(depth - 1), self.expr(depth - 1))
        elif kind == "unary":
            node = self.unary(self.expr(depth - 1))
        elif kind == "reduce":
            node = self.reduce(self.expr(depth - 1))
        elif kind == "where":
            node = self.where(self.condition(depth - 1), self.expr(depth - 1), self.expr(depth - 1))
        elif kind == "transpose":
            node = self.transpose(self.expr(depth - 1))
        else:
            base = self.expr(depth - 1)
            exp = self.choose(["2", "3", "0.5", "1.5", "4", "0.25", "2.5", "-1", "-0.5"])
            if exp.startswith("-"):     # of at least 1: no infinity whose sign a zero's decides
                base = Node(f"(abs({base.text}) + 1)", base.dims, np.abs(base.value) + 1.0, weak=base.weak)
            x = base.value
            with np.errstate(all="ignore"):     # ** 2 and ** 3 are products in the language, rounded so
                value = x * x if exp == "2" else x * x * x if exp == "3" else np.power(x, float(exp))
            node = Node(f"({base.text} ** {exp})", base.dims, value, weak=base.weak)
        return self.maybe_bind(node)

    # -- integer expressions (results declared i8, u8, i32 or i64) -------------------
    def int_leaf(self) -> Node:
        """An integer parameter, idx(D), a small literal, a count (i32 of a condition),
        or i32/i64 of the floor of an exactly computed float."""
        ints = [p for p in self.prog.params if p[1] in INT_RESULTS]
        declared = sorted({d for _, _, dims in self.prog.params for d in dims or ()})
        kind = self.choose(["param", "param", "literal", "reuse", "floor", "count"]
                           + (["index"] if declared else []))
        if kind == "param" and ints:
            name, _, dims = self.choose(ints)
            return Node(name, dims or (), np.asarray(self.prog.args[int(name[1:])], dtype=np.float64), is_int=True)
        if kind == "reuse" and self.int_pool:
            return self.choose(self.int_pool)
        if kind == "index":
            d = self.choose(declared)
            return Node(f"idx({d})", (d,), np.arange(self.prog.extents[d], dtype=np.float64), is_int=True)
        if kind == "count":
            c = self.condition(0)
            return Node(f"i32({c.text})", c.dims, np.asarray(c.value, dtype=np.float64), is_int=True)
        if kind == "floor" and self.numeric_params():
            a = self.exact_leaf()
            cast = self.choose(["i32", "i64"])
            return Node(f"{cast}(floor({a.text}))", a.dims, np.floor(a.value), is_int=True)
        text = self.choose(["1", "2", "3"])
        return Node(text, (), np.array(float(text)), weak=True, is_int=True)

    def int_expr(self, depth: int) -> Node:
        """An integer-valued expression: + - * maximum minimum, unary minus, abs, where,
        sum/max/min and .T over int_leaf()s. Narrow integers wrap as NumPy's do; the
        exact interpreter is the oracle (the value here ignores wrap-around)."""
        if depth <= 0:
            return self.int_leaf()
        kind = self.choose(["leaf", "binary", "binary", "unary", "reduce", "where", "transpose"])
        if kind == "leaf":
            node = self.int_leaf()
        elif kind == "binary":
            a, b = self.int_expr(depth - 1), self.int_expr(depth - 1)
            op = self.choose(["+", "-", "*", "maximum", "minimum"])
            dims = result_dims(a.dims, b.dims)
            x, y = align(a, dims, self.prog.extents), align(b, dims, self.prog.extents)
            text = f"{op}({a.text}, {b.text})" if op in ("maximum", "minimum") else f"({a.text} {op} {b.text})"
            value = {"+": np.add, "-": np.subtract, "*": np.multiply, "maximum": np.maximum,
                     "minimum": np.minimum}[op](x, y)
            value = np.broadcast_to(value, [self.prog.extents[d] for d in dims])
            node = Node(text, dims, value, weak=a.weak and b.weak, is_int=True)
        elif kind == "unary":
            a = self.int_expr(depth - 1)
            node = (Node(f"(-{a.text})", a.dims, -a.value, weak=a.weak, is_int=True) if self.draw(st.booleans())
                    else Node(f"abs({a.text})", a.dims, np.abs(a.value), weak=a.weak, is_int=True))
        elif kind == "reduce":
            node = self.reduce(self.int_expr(depth - 1), kinds=("sum", "max", "min"))
        elif kind == "where":
            c, a, b = self.condition(depth - 1), self.int_expr(depth - 1), self.int_expr(depth - 1)
            node = replace(self.where(c, a, b), is_int=True)
        else:
            node = self.transpose(self.int_expr(depth - 1))
        return self.maybe_bind(node)

    def integer(self, depth: int) -> Node:
        """An int_expr() in float arithmetic (its integer type promotes to the float one
        there), bound to a name counted inexact: where it wrapped, its value is not the one
        here, and a large integer rounds on its way to f32."""
        a = self.int_expr(depth)
        name = f"t{self.count}"
        self.count += 1
        self.prog.stmts.append(f"{name} = {a.text}")
        self.inexact_names.add(name)
        return Node(name, a.dims, a.value, weak=a.weak)

    def product(self) -> Node:
        """a @ b over two new parameters [Z, X] and [X, Y] of one dtype (a maybe
        declared [X, Z] and used as .T), each maybe through an exact elementwise op
        (values stay multiples of 1/16, so f32 accumulation is exact). In a program of
        four dims the fourth may be a batch dim of either operand or both."""
        z, x, y, *rest = self.draw(st.permutations(tuple(self.prog.extents)))
        sides = self.choose(["none", "left", "right", "both", "both"]) if rest else "none"
        left, right = (tuple(rest) if sides in (side, "both") else () for side in ("left", "right"))
        dtype = self.choose(["f16", "f16", "f32"] + (["bf16"] if self.bf16 else []))
        operands = []
        for dims, may_transpose, batch in (((z, x), True, left), ((x, y), False, right)):
            transposed = may_transpose and self.draw(st.booleans())
            declared = batch + (dims[::-1] if transposed else dims)
            dims = batch + dims
            shape = [self.prog.extents[d] for d in declared]
            value = self.rng.integers(1, 9, size=shape) / 4 * self.rng.choice([-1, 1], size=shape)
            name = f"p{len(self.prog.params)}"
            self.prog.params.append((name, dtype, declared))
            self.prog.args.append(value.astype(numpy_dtype(dtype)))
            node = Node(name, declared, value)
            if transposed:
                node = Node(f"{name}.T", dims, np.swapaxes(value, -1, -2))
            op = self.choose(["plain", "relu", "neg", "half"])
            if op == "relu":
                node = Node(f"relu({node.text})", dims, np.maximum(node.value, 0.0))
            elif op == "neg":
                node = Node(f"(-{node.text})", dims, -node.value)
            elif op == "half":
                node = Node(f"({node.text} * 0.5)", dims, node.value * 0.5)
            operands.append(node)
        a, b = operands
        out = (left or right) + (z, y)
        spec = ",".join("".join(LETTERS[d] for d in n.dims) for n in (a, b)) + "->" + "".join(LETTERS[d] for d in out)
        return Node(f"({a.text} @ {b.text})", out, np.einsum(spec, a.value, b.value))

    def inexact(self, node: Node) -> bool:
        """Whether the value rounds on the way (a transcendental function, a division,
        a mean), where a GPU and NumPy may differ by an ulp; + - * max min of these
        small dyadic numbers, and products of them, are exact."""
        words = set(re.findall(r"[A-Za-z_]\w*", node.text))
        return ("/" in node.text or bool(POWER_ROUNDS.search(node.text))
                or bool(words & (ROUNDING | self.inexact_names)))

    def exact_leaf(self) -> Node:
        numbers = self.numeric_params()
        if not numbers:
            return self.leaf_literal()
        name, dtype, dims = self.choose(numbers)
        return Node(name, dims or (), np.asarray(self.prog.args[int(name[1:])], dtype=np.float64))

    def maybe_bind(self, node: Node) -> Node:
        if not node.is_int:     # (an integer's value here ignores wrap-around: no scale for tolerances)
            self.prog.see(node.value)
        pool = self.int_pool if node.is_int else self.pool
        if node.is_bool or not self.draw(st.integers(0, 4)) == 0:
            pool.append(node)
            return node
        name = f"t{self.count}"
        if self.inexact(node):
            self.inexact_names.add(name)
        self.count += 1
        self.prog.stmts.append(f"{name} = {node.text}")
        bound = Node(name, node.dims, node.value, node.weak, is_int=node.is_int)
        pool.append(bound)
        return bound

    def binary(self, a: Node, b: Node) -> Node:
        op = self.choose(["+", "-", "*", "/", "maximum", "minimum"])
        dims = result_dims(a.dims, b.dims)
        x, y = align(a, dims, self.prog.extents), align(b, dims, self.prog.extents)
        with np.errstate(all="ignore"):
            if op == "/":   # keep the divisor at least 1 in size
                text = f"({a.text} / (abs({b.text}) + 1))"
                value = x / (np.abs(y) + 1.0)
            elif op in ("maximum", "minimum"):
                text = f"{op}({a.text}, {b.text})"
                value = getattr(np, op)(x, y)
            else:
                text = f"({a.text} {op} {b.text})"
                value = {"+": np.add, "-": np.subtract, "*": np.multiply}[op](x, y)
        value = np.broadcast_to(value, [self.prog.extents[d] for d in dims])
        return Node(text, dims, value, weak=a.weak and b.weak)

    def unary(self, a: Node) -> Node:
        """Every function of the language, on arguments where the GPU and NumPy agree
        but for rounding: log, log2 and rsqrt of abs(a) + 1, sqrt of abs(a); floor, ceil
        and narrowing casts only of values computed exactly (an ulp's difference would
        move them by a whole step); exp and exp2 of rounded values only under 32 in size
        (an f32 ulp of exp(6) = 403.4 moved exp(exp(6) + p) by 3e-5 relative: GPU fuzz)."""
        f = self.choose(list(FUNCTIONS) + list(STEPS) + ["cast"])
        if f in (*STEPS, "cast") and self.inexact(a):
            f = "abs"
        if f in ("exp", "exp2") and self.inexact(a) and np.any(np.abs(np.nan_to_num(a.value)) > 32):
            f = "tanh"
        if f == "cast":
            return self.cast(a)
        template, fn = {**FUNCTIONS, **STEPS}[f]
        with np.errstate(all="ignore"):
            value = fn(a.value)
        return Node(template.format(a.text), a.dims, value, weak=a.weak)

    def cast(self, a: Node) -> Node:
        """f16(a), bf16(a), f32(a) or f64(a): rounds to that dtype (an explicit cast
        rounds in every interpreter), a value of that dtype from then on."""
        dtype = self.choose(["f16", "f32", "f64"] + (["bf16"] if self.bf16 else []))
        with np.errstate(all="ignore"):
            value = np.asarray(a.value).astype(numpy_dtype(dtype)).astype(np.float64)
        return Node(f"{dtype}({a.text})", a.dims, value)

    def reduce(self, a: Node, kinds: tuple = ("sum", "max", "min", "mean")) -> Node:
        kind = self.choose(list(kinds))
        if a.weak or not a.dims or self.draw(st.integers(0, 3)) == 0:
            axes = a.dims          # no axis: everything
            text = f"{kind}({a.text})"
        else:
            axes = tuple(self.draw(st.lists(st.sampled_from(a.dims), min_size=1, unique=True)))
            spelled = axes[0] if len(axes) == 1 and self.draw(st.booleans()) else \
                "(" + ", ".join(axes) + ("," if len(axes) == 1 else "") + ")"
            text = f"{kind}({a.text}, axis={spelled})"
        idx = tuple(a.dims.index(d) for d in axes)
        x = a.value
        with np.errstate(all="ignore"):
            if kind == "sum":
                value = x.sum(axis=idx) if idx else x
            elif kind == "mean":
                count = int(np.prod([self.prog.extents[d] for d in axes])) if axes else 1
                value = (x.sum(axis=idx) if idx else x) / count
            else:
                value = (x.max(axis=idx) if kind == "max" else x.min(axis=idx)) if idx else x
        dims = tuple(d for d in a.dims if d not in axes)
        return Node(text, dims, np.asarray(value, dtype=np.float64), is_int=a.is_int)

    def condition(self, depth: int) -> Node:
        flags = [p for p in self.prog.params if p[1] == "bool"]
        if flags and self.draw(st.integers(0, 2)) == 0:     # a bool parameter
            name, _, dims = self.choose(flags)
            return Node(name, dims or (), np.asarray(self.prog.args[int(name[1:])]), is_bool=True)
        if depth > 0 and self.draw(st.integers(0, 3)) == 0:
            op = self.choose(["logical_and", "logical_or", "logical_not"])
            if op == "logical_not":
                c = self.condition(depth - 1)
                return Node(f"logical_not({c.text})", c.dims, np.logical_not(c.value), is_bool=True)
            c1, c2 = self.condition(depth - 1), self.condition(depth - 1)
            dims = result_dims(c1.dims, c2.dims)
            value = getattr(np, op)(align(c1, dims, self.prog.extents),
                                    align(c2, dims, self.prog.extents))
            value = np.broadcast_to(value, [self.prog.extents[d] for d in dims])
            return Node(f"{op}({c1.text}, {c2.text})", dims, value, is_bool=True)
        a, b = self.expr(max(0, depth - 1)), self.expr(max(0, depth - 1))
        if self.exact_conditions:   # an ulp's difference must not flip the comparison
            a, b = (self.exact_leaf() if self.inexact(n) else n for n in (a, b))
        op = self.choose(["<", "<=", ">", ">=", "==", "!="])
        dims = result_dims(a.dims, b.dims)
        x, y = align(a, dims, self.prog.extents), align(b, dims, self.prog.extents)
        with np.errstate(all="ignore"):
            value = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                     "==": np.equal, "!=": np.not_equal}[op](x, y)
        value = np.broadcast_to(value, [self.prog.extents[d] for d in dims])
        return Node(f"({a.text} {op} {b.text})", dims, value, is_bool=True)

    def where(self, c: Node, a: Node, b: Node) -> Node:
        dims = result_dims(result_dims(a.dims, b.dims), c.dims)
        e = self.prog.extents
        value = np.where(align(c, dims, e), align(a, dims, e), align(b, dims, e))
        value = np.broadcast_to(value, [e[d] for d in dims])
        return Node(f"where({c.text}, {a.text}, {b.text})", dims, value, weak=False)

    def transpose(self, a: Node) -> Node:
        if a.weak or len(a.dims) < 2:
            return a
        dims = a.dims[:-2] + (a.dims[-1], a.dims[-2])
        return Node(f"{a.text}.T", dims, np.swapaxes(a.value, -1, -2), is_int=a.is_int)


def numpy_dtype(name: str):
    if name in ("i8", "i32", "i64", "u8"):
        return np.dtype(name.replace("i", "int").replace("u", "uint"))
    if name == "bool":
        return np.dtype(np.bool_)
    if name == "bf16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return NP_DTYPES[name]


def build(data, sizes: tuple = (), max_elements: int = 0, result_dtypes: tuple = ("f64", "f64", "bool"),
          products: int = 0, min_dims: int = 1, bf16: bool = False,
          exact_conditions: bool = False, ints: bool = False,
          literal_dims: bool = False, max_dims: int = 3) -> tuple[str, Program, list, list]:
    """A random program, its parameters' values and its results' float64 values.
    Extents are 1-7, or drawn from `sizes` with their product at most
    `max_elements` (the GPU fuzz test); each result's declared dtype is drawn
    from `result_dtypes`, a bool result being a condition, an "int" one i8, u8, i32 or
    i64 of an integer expression (int_expr; its value in `expected` ignores wrap-around,
    so only the exact interpreter is its oracle); the values in `expected` are float64
    regardless. With
    `products` (a weight: 8 of the other node kinds weigh 1 each), three-dim programs
    may hold matrix products of new parameters; `min_dims` programs have at least that
    many dims; with `bf16`, parameters may be bf16 too (ml_dtypes arrays); with
    `exact_conditions`, comparisons only take values computed without rounding (on
    the GPU, tanh may be an ulp off NumPy's, and `tanh(a) < tanh(b)` flip); with
    `ints`, parameters may be i8, u8, i32 or i64 (integers from -8, or 0, to 8) or bool
    (used as conditions), and leaves may be `idx(D)`
    (the float64 values in `expected` then ignore integer wrap-around, so only the
    exact interpreter is an oracle); with `literal_dims`, a dim whose extent no other dim
    has may be written as that extent (`x: f32[M, 7]`, `sum(x, axis=7)`, `idx(7)`), and
    `prog.extents` names it so (the key "7"), as the compiler's graph does; with `max_dims=4`,
    programs may have a fourth dim B (in them a product may have it as a batch dim)."""
    seed = data.draw(st.integers(0, 2 ** 32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    n_dims = data.draw(st.integers(min_dims, max_dims), label="n_dims")
    dims = data.draw(st.permutations(DIM_NAMES[:max_dims]), label="dims")[:n_dims]
    extents, room = {}, max_elements
    for d in dims:
        if sizes:
            extents[d] = data.draw(st.sampled_from([s for s in sizes if s <= room] or [1]), label=f"extent {d}")
            room //= extents[d]
        else:
            extents[d] = data.draw(st.integers(1, 7), label=f"extent {d}")
    prog = Program(extents)
    n_params = data.draw(st.integers(2, 4), label="n_params")
    for i in range(n_params):
        dtype = data.draw(st.sampled_from(sorted(NP_DTYPES) + (["bf16"] if bf16 else [])
                                          + (INT_DTYPES if ints else [])), label=f"p{i} dtype")
        low = 0 if dtype == "u8" else -8
        if data.draw(st.integers(0, 5)) == 0:
            pdims = None                                    # a scalar parameter
            arg = bool(rng.integers(0, 2)) if dtype == "bool" else int(rng.integers(low, 9)) \
                if dtype in INT_DTYPES else float(rng.integers(1, 9) / 4 * rng.choice([-1, 1]))
        else:
            pdims = tuple(data.draw(st.lists(st.sampled_from(dims), min_size=1, unique=True),
                                    label=f"p{i} dims"))
            shape = [extents[d] for d in pdims]
            values = rng.integers(1, 9, size=shape) / 4 * rng.choice([-1, 1], size=shape)
            if dtype in INT_DTYPES:
                values = rng.integers(low, 9, size=shape) if dtype != "bool" else rng.random(shape) < 0.5
            arg = values.astype(numpy_dtype(dtype))
        prog.params.append((f"p{i}", dtype, pdims))
        prog.args.append(arg)
    builder = Builder(data, prog, rng, products, bf16, exact_conditions, indices=ints)
    n_results = data.draw(st.integers(1, 2), label="n_results")
    results = []
    result_types = [data.draw(st.sampled_from(result_dtypes), label="result dtype") for _ in range(n_results)]
    result_types = [data.draw(st.sampled_from(INT_RESULTS), label="int result") if t == "int" else t
                    for t in result_types]
    for dtype in result_types:     # a bool result is a condition (comparisons, logic, bool parameters)
        depth = data.draw(st.integers(1, 4), label="depth")
        node = (builder.condition(depth) if dtype == "bool" else builder.int_expr(depth) if dtype in INT_RESULTS
                else builder.expr(depth))
        order = tuple(data.draw(st.permutations(node.dims), label="store order"))
        results.append((node, order))
    params = ", ".join(f"{n}: {t}" + (f"[{', '.join(d)}]" if d is not None else "")
                       for n, t, d in prog.params)
    types = [f"{t}[{', '.join(order)}]" if order else t for t, (_, order) in zip(result_types, results)]
    result_type = types[0] if len(types) == 1 else f"({', '.join(types)})"
    body = "".join(f"    {s}\n" for s in prog.stmts)
    ret = ", ".join(node.text for node, _ in results)
    source = f"kernel prop({params}) -> {result_type} {{\n{body}    return {ret}\n}}\n"
    if literal_dims:
        source = literal_dim_names(data, source, prog)
    if ints:    # a literal-only value the builder met with an integer it does not fit (-1 with a u8):
        try:    # the checker refuses the program at the literal, rightly; draw another
            tiledsl.compile(source)
        except tiledsl.TdslTypeError as err:
            if "does not fit in" not in err.message:
                raise
            reject()
    expected = [np.einsum(
        "".join(LETTERS[d] for d in node.dims) + "->" + "".join(LETTERS[d] for d in order),
        np.asarray(node.value, dtype=np.float64)) for node, order in results]
    return source, prog, expected, results


def literal_dim_names(data, source: str, prog: Program) -> str:
    """`source` with some dims written as their extents (a literal dim is named by its
    value, so only an extent no other dim has), and prog.extents keyed so."""
    extents = dict(prog.extents)
    for d, n in extents.items():
        unique = list(extents.values()).count(n) == 1
        if unique and data.draw(st.integers(0, 2), label=f"dim {d} literal") == 0:
            source = re.sub(rf"\b{d}\b", str(n), source)
            prog.extents = {str(n) if k == d else k: v for k, v in prog.extents.items()}
    return source


def scale(k, prog: Program) -> tuple[float, bool]:
    """(the largest finite intermediate, whether any is past f32's range or not finite), of
    the generator's values and of the exact interpreter's (integers wrap there, and an
    integer subexpression in float arithmetic may have): what tolerances are scaled by."""
    trace: dict = {}
    evaluate(k.graph, tuple(prog.args), {}, trace=trace)
    magnitude = prog.magnitude if math.isfinite(prog.magnitude) else 1.0
    overflows = prog.overflows
    for value in k.graph.values:
        v = trace[value.id]
        if value.op in ("param", "const", "idx") or v.dtype == np.bool_ or not v.size:
            continue                      # (as the generator's: computed values only)
        v = np.asarray(v, dtype=np.float64)
        finite = np.abs(v[np.isfinite(v)])
        if finite.size:
            magnitude = max(magnitude, float(finite.max()))
        overflows |= finite.size < v.size or bool(finite.size and finite.max() > F32_MAX)
    return magnitude, overflows


def close(got: np.ndarray, expected: np.ndarray, magnitude: float) -> bool:
    got = np.asarray(got, dtype=np.float64)
    if got.shape != expected.shape:
        return False
    if not np.array_equal(np.isnan(got), np.isnan(expected)):
        return False
    with np.errstate(invalid="ignore"):   # inf - inf inside relative_error
        err = relative_error(got, expected)
    if err <= 1e-9:
        return True
    # elementwise, allowing rounding at the scale of the largest intermediate value
    # (a difference of two sums summed in different orders)
    ok = np.isnan(expected) | (got == expected) | (
        np.abs(got - expected) <= 1e-9 * np.abs(expected) + 1e-13 * magnitude)
    return bool(np.all(ok))


# TDSL_PROPERTY_EXAMPLES=N runs more (or fewer) examples than CI's 250.
EXAMPLES = int(os.environ.get("TDSL_PROPERTY_EXAMPLES", "250"))


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_expressions_match_numpy(data):
    source, prog, expected, results = build(data, products=2, max_dims=4)
    note = f"source:\n{source}\nextents: {prog.extents}\nargs: {prog.args}"
    k = tiledsl.compile(source)
    # the computed value has the dims in the order the language's rule gives; the store
    # permutes to the declared order when that differs
    for i, (node, order) in enumerate(results):
        v = k.graph.outputs[i]
        # a result repeating an earlier one is a copy of it, its own value (`return t0, t0`)
        if v.op == "cast" and v.operands[0].dtype == v.dtype and any(v.operands[0] is o
                                                                     for o in k.graph.outputs[:i]):
            v = v.operands[0]
        if order != node.dims:
            assert v.op == "permute" and v.dims == order, note
            v = v.operands[0]
        assert v.dims == node.dims, f"result {i}: IR dims {v.dims}, expected {node.dims}\n{note}"
    got = k.reference(*prog.args, compute="f64")
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected), note
    for i, (g, e) in enumerate(zip(got, expected)):
        assert close(g, e, prog.magnitude), (
            f"result {i}: relative error {relative_error(g, e):.3g}\n{note}\n"
            f"got {np.asarray(g)!r}\nexpected {e!r}\nIR:\n{k.ir_text()}")
    # the exact (storage-precision) interpreter runs the same program too
    exact = k.reference(*prog.args)
    exact = exact if isinstance(exact, tuple) else (exact,)
    for g, e, r in zip(exact, expected, k.graph.results):
        assert np.asarray(g).shape == e.shape, note
        assert np.asarray(g).dtype == r.dtype.numpy, note        # float64, or bool


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_keyword_arguments_match_positional(data):
    source, prog, _, _ = build(data)
    k = tiledsl.compile(source)
    names = [p[0] for p in prog.params]
    order = data.draw(st.permutations(names), label="keyword order")
    kwargs = {n: prog.args[names.index(n)] for n in order}
    a = k.reference(*prog.args, compute="f64")
    b = k.reference(**kwargs, compute="f64")
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        np.testing.assert_array_equal(x, y)


def test_result_dims_rule_examples():
    """The helper above encodes the brief's rule; pin it so that a typo shows here."""
    assert result_dims(("M", "N"), ("M",)) == ("M", "N")
    assert result_dims(("M",), ("M", "N")) == ("M", "N")
    assert result_dims(("N", "M"), ("M", "N")) == ("N", "M")
    assert result_dims(("M", "K"), ("K", "N")) == ("M", "K", "N")
    assert result_dims((), ("K",)) == ("K",)


def test_scale_sees_the_interpreters_wrapped_integers_and_overflows():
    """Tolerances scale by the largest intermediate the interpreter computed, not only the
    generator's (an i8 that wrapped, 100 * 100 being 16, then in float arithmetic), and an
    exp past f32's range makes the program one that overflows."""
    k = tiledsl.compile("kernel f(x: i8[N], y: f32[N]) -> f32[N] {\n    t = x * x\n    return t * y\n}\n")
    x, y = np.array([100, -128, 3], np.int8), np.array([0.5, 1.0, 2.0], np.float32)
    prog = Program({"N": 3}, args=[x, y], magnitude=64.0)     # what the generator saw, ignoring the wrap
    assert scale(k, prog) == (64.0, False)                    # i8: 10000 wraps to 16, 16384 to 0, 9
    prog.args = [np.array([11, 2, 3], np.int8), y]
    assert scale(k, prog) == (121.0, False)                   # the interpreter's t = 121 counts
    k = tiledsl.compile("kernel f(x: f32[N]) -> f32[N] {\n    return exp(x * 100) - 1\n}\n")
    prog = Program({"N": 2}, args=[np.array([0.5, 1.0], np.float32)], magnitude=10.0)
    magnitude, overflows = scale(k, prog)
    assert overflows and magnitude == pytest.approx(np.exp(np.float32(50)), rel=1e-6)
