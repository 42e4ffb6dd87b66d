"""Graph-to-graph passes. Each one is followed by the verifier (`run_passes`)."""
from __future__ import annotations

import dataclasses
from typing import Callable

from .graph import Graph, Value, broadcast_dims, unpermuted
from .verify import verify


def _rebuild(graph: Graph, keep: list[Value], replace: dict[int, Value]) -> Graph:
    """Renumber kept values densely, rewiring operands through `replace`."""
    new: dict[int, Value] = {}
    values = []
    for v in keep:
        operands = tuple(new[replace.get(o.id, o).id] for o in v.operands)
        nv = dataclasses.replace(v, id=len(values), operands=operands)
        new[v.id] = nv
        values.append(nv)
    outputs = tuple(new[replace.get(o.id, o).id] for o in graph.outputs)
    return dataclasses.replace(graph, values=tuple(values), outputs=outputs)


def eliminate_common_subexpressions(graph: Graph) -> Graph:
    """Merge values computed twice from the same operands (x - mu written twice)."""
    seen: dict[tuple, Value] = {}
    replace: dict[int, Value] = {}
    keep = []
    for v in graph.values:
        key = (v.op, tuple(replace.get(o.id, o).id for o in v.operands), v.dtype, v.dims,
               tuple((k, repr(a)) for k, a in v.attrs))
        if key in seen:
            replace[v.id] = seen[key]
        else:
            seen[key] = v
            keep.append(v)
    return _rebuild(graph, keep, replace)


def eliminate_dead_values(graph: Graph) -> Graph:
    """Drop values no output depends on (parameters stay: they are the signature)."""
    live = {o.id for o in graph.outputs}
    for v in reversed(graph.values):
        if v.id in live:
            live.update(o.id for o in v.operands)
    keep = [v for v in graph.values if v.id in live or v.op == "param"]
    return _rebuild(graph, keep, {})


def lower_vector_products(graph: Graph) -> Graph:
    """A product with a one-dim operand (A @ v, v @ B, a dot product) as what it is, a sum
    of products over the contracted dim: sum(A * v, axis=K) in the accumulation dtype.
    A reduction runs at memory bandwidth, as a matrix-vector product should; the GEMM
    templates need both M and N."""
    fresh = max((v.id for v in graph.values), default=-1) + 1
    keep: list[Value] = []
    replace: dict[int, Value] = {}

    def add(op: str, operands: tuple, dtype, dims: tuple, loc, **attrs) -> Value:
        nonlocal fresh
        v = Value(fresh, op, operands, dtype, dims, tuple(sorted(attrs.items())), loc)
        fresh += 1
        keep.append(v)
        return v

    for v in graph.values:
        if v.op != "matmul" or all(len(o.dims) >= 2 for o in v.operands):
            keep.append(v)
            continue
        a, b = (o if o.dtype == v.dtype else add("cast", (o,), v.dtype, o.dims, v.loc, to=v.dtype)
                for o in (replace.get(o.id, o) for o in v.operands))
        k = v.attr("contract")
        products = add("mul", (a, b), v.dtype, broadcast_dims(a.dims, b.dims), v.loc)
        # batch + M (or batch + N): the matmul's own result dims, which the verifier checks
        total = add("reduce", (products,), v.dtype, tuple(d for d in products.dims if d != k), v.loc,
                    kind="sum", axes=(k,))
        replace[v.id] = total
    return _rebuild(graph, keep, replace)


def rewrite_literal_powers(graph: Graph) -> Graph:
    """`x ** 2` as x * x, `x ** 3` as x * x * x and `x ** 0.5` as sqrt(x) (a literal
    exponent). CUDA's pow is not exact where the power is: in f64, 0.25 ** 2 gave
    0.06249999999999999, 1.75 ** 3 -5.359374999999999, and ** 0.5 was an ulp off at 7
    of 24 values on an H100 (`scripts/probe_pow.py`), so `x ** 2 < y` flipped at ties.
    A square is one rounding, as a correctly rounded pow's, a square root is correctly
    rounded, and both cost a few instructions where pow costs dozens. `x ** 0.5` is
    sqrt as NumPy's is (-0 stays -0, -inf gives NaN, where C's pow gives +0 and +inf).
    The reference runs the same graph, so both compute the same operations.
    Before/after for `x ** 3`: `%2 = pow %0, %1 (const 3.0)` -> `%2 = mul %0, %0; %3 = mul %2, %0`;
    for `x ** 0.5`: `%2 = pow %0, %1 (const 0.5)` -> `%2 = sqrt %0`."""
    fresh = max((v.id for v in graph.values), default=-1) + 1
    keep: list[Value] = []
    replace: dict[int, Value] = {}
    for v in graph.values:
        power = _literal_power(v)
        if not power:
            keep.append(v)
            continue
        base = replace.get(v.operands[0].id, v.operands[0])     # (x ** 2) ** 2: a product already
        if power == 0.5:
            result = Value(fresh, "sqrt", (base,), v.dtype, v.dims, (), v.loc)
            fresh += 1
            keep.append(result)
        else:
            result = base
            for _ in range(int(power) - 1):
                result = Value(fresh, "mul", (result, base), v.dtype, v.dims, (), v.loc)
                fresh += 1
                keep.append(result)
        replace[v.id] = result
    return _rebuild(graph, keep, replace) if replace else graph


def _literal_power(v: Value) -> float:
    """0.5, 2 or 3 where `v` is `x ** 0.5`, `x ** 2` or `x ** 3` (a literal exponent, x of
    v's own dtype and dims), else 0."""
    if v.op != "pow":
        return 0
    base, exponent = v.operands
    if exponent.op != "const" or exponent.attr("value") not in (0.5, 2, 3):
        return 0
    return exponent.attr("value") if (base.dtype, base.dims) == (v.dtype, v.dims) else 0


def from_parameters_only(v: Value) -> bool:
    """Whether `v` is computed elementwise from parameters and constants (no
    reduction or product on the way): a kernel of its own can write it first."""
    seen, todo = set(), [v]
    while todo:
        u = todo.pop()
        if u.op in ("reduce", "matmul"):
            return False
        if u.id not in seen:
            seen.add(u.id)
            todo.extend(u.operands)
    return True


def tf32_operands_along_k(graph: Graph) -> Graph:
    """For a kernel that opts in to TF32 (`schedule <kernel> { tf32(true) }`): an f32
    product operand read straight from a parameter laid out along M or N (`x @ w`
    with w [K, N], `at.T @ w`), or computed from parameters only (`exp(x) @ w.T`,
    a widened f16 weight), is read through a copy laid out along K, a permute
    marked `stored` that the partition writes with a pointwise kernel of its own,
    since wgmma reads TF32 operands K-major and as plain inputs only. The copy
    costs a pass over the operand; the product then runs on the tensor cores.
    Before/after for `x @ w`: matmul(x, w) -> matmul(x, permute(permute(w) to
    [N, K], stored) back to [K, N])."""
    fresh = max((v.id for v in graph.values), default=-1) + 1
    keep: list[Value] = []

    def add(operand: Value, dims: tuple, loc, **attrs) -> Value:
        nonlocal fresh
        v = Value(fresh, "permute", (operand,), operand.dtype, dims, tuple(sorted(dict(order=dims, **attrs).items())), loc)
        fresh += 1
        keep.append(v)
        return v

    for v in graph.values:
        if v.op == "matmul" and all(o.dtype.name == "f32" and len(o.dims) >= 2 for o in v.operands):
            k = v.attr("contract")
            # a parameter along K is read in place; a value along K that a product or a reduction
            # computes may be stored by its group; anything else keeps the product off TF32, and
            # then no copy is made for the other operand either
            bases = [unpermuted(o) for o in v.operands]
            copied = [from_parameters_only(b) and not (b.op == "param" and b.dims[-1] == k) for b in bases]
            if all(c or b.dims[-1] == k for c, b in zip(copied, bases)):
                operands = []
                for c, o in zip(copied, v.operands):
                    if c:   # the copy, then (where its dims differ) the product's view of it
                        along_k = tuple(d for d in o.dims if d != k) + (k,)
                        copy = add(o, along_k, v.loc, stored=True)
                        o = copy if along_k == o.dims else add(copy, o.dims, v.loc)
                    operands.append(o)
                v = dataclasses.replace(v, operands=tuple(operands))
        keep.append(v)
    return _rebuild(graph, keep, {})


def distinct_results(graph: Graph) -> Graph:
    """Each result its own computed value, so that a kernel writes each result's
    buffer: a result that is a parameter, or that repeats an earlier result, is
    a copy (a cast to its own dtype). Runs after common subexpressions merge.
    Before/after for `return y, y, x`: outputs (%2, %2, %0) -> (%2, cast %2, cast %0);
    before, the second buffer was never written and the third was x itself."""
    fresh = max((v.id for v in graph.values), default=-1) + 1
    copies, seen = [], set()
    outputs = list(graph.outputs)
    for j, v in enumerate(outputs):
        if v.op == "param" or v.id in seen:
            outputs[j] = Value(fresh, "cast", (v,), v.dtype, v.dims, (("to", v.dtype),), v.loc)
            copies.append(outputs[j])
            fresh += 1
        seen.add(outputs[j].id)
    if not copies:
        return graph
    graph = dataclasses.replace(graph, values=graph.values + tuple(copies), outputs=tuple(outputs))
    return _rebuild(graph, list(graph.values), {})


PIPELINE: tuple[Callable[[Graph], Graph], ...] = (
    lower_vector_products,
    rewrite_literal_powers,
    eliminate_common_subexpressions,
    eliminate_dead_values,
    distinct_results,
)


def run_passes(graph: Graph, passes=PIPELINE) -> Graph:
    verify(graph)
    for p in passes:
        graph = verify(p(graph))
    return graph
