"""The IR verifier: run after every pass, it turns a broken invariant into an
internal error at the pass that broke it, instead of wrong CUDA later."""
from __future__ import annotations

from ..dtypes import DTYPES, f32, i64
from ..errors import TdslError
from .graph import (ALL_OPS, ARITH_OPS, COMPARE_OPS, REDUCE_KINDS, UNARY_OPS, Graph, Value,
                    broadcast_dims)


class IRVerificationError(TdslError):
    """An IR invariant does not hold: a tiledsl bug, never the user's."""


def _fail(graph: Graph, value: Value | None, why: str) -> None:
    where = f" at %{value.id} ({value.op})" if value is not None else ""
    raise IRVerificationError(f"internal error: IR of kernel '{graph.name}' is invalid{where}: {why}")


def _elementwise_dims(operands) -> tuple[str, ...]:
    dims: tuple[str, ...] = ()
    for o in operands:
        dims = broadcast_dims(dims, o.dims)
    return dims


def verify(graph: Graph) -> Graph:
    seen: set[int] = set()
    ids: set[int] = set()
    known_dims = set(graph.dims)
    for v in graph.values:
        if v.id in ids:
            _fail(graph, v, "duplicate value id")
        ids.add(v.id)
        if v.op not in ALL_OPS:
            _fail(graph, v, f"unknown op '{v.op}'")
        if v.dtype not in DTYPES.values():
            _fail(graph, v, f"unknown dtype {v.dtype}")
        if len(set(v.dims)) != len(v.dims):
            _fail(graph, v, f"repeated dim in {v.dims}")
        if not set(v.dims) <= known_dims:
            _fail(graph, v, f"dims {v.dims} not bound by any parameter")
        for o in v.operands:
            if o.id not in seen:
                _fail(graph, v, f"operand %{o.id} used before it is defined")
        _verify_op(graph, v)
        seen.add(v.id)
    if len(graph.outputs) != len(graph.results):
        _fail(graph, None, "outputs and declared results differ in number")
    for out, res in zip(graph.outputs, graph.results):
        if out.id not in seen:
            _fail(graph, out, "output is not in the graph")
        if out.dtype != res.dtype or out.dims != res.dims:
            _fail(graph, out, f"output {out.dtype}{list(out.dims)} does not match the "
                              f"declared {res.dtype}{list(res.dims)}")
    return graph


def _verify_op(graph: Graph, v: Value) -> None:
    ops = v.operands
    arity = {"param": 0, "const": 0, "idx": 0, "where": 3, "cast": 1, "reduce": 1,
             "matmul": 2, "permute": 1}
    expected = arity.get(v.op, 1 if v.op in UNARY_OPS else 2)
    if len(ops) != expected:
        _fail(graph, v, f"takes {expected} operands, has {len(ops)}")
    if v.op == "param":
        p = graph.param(v.attr("name"))
        if p.dtype != v.dtype or (p.dims or ()) != v.dims:
            _fail(graph, v, "param value does not match its declaration")
    elif v.op == "const":
        if v.dims:
            _fail(graph, v, "constants are scalars")
    elif v.op == "idx":
        if v.dims != (v.attr("dim"),) or v.dtype != i64:
            _fail(graph, v, "idx is an i64 along its one dim")
    elif v.op in UNARY_OPS or v.op in ARITH_OPS:
        if any(o.dtype != v.dtype for o in ops):
            _fail(graph, v, "operands must already have the op's dtype")
        if v.dtype.name in ("f16", "bf16"):
            _fail(graph, v, "arithmetic on f16/bf16 must be done in f32")
        logical = v.op in ("and", "or", "not")
        if logical != v.dtype.is_bool:
            _fail(graph, v, "bool values take only logical ops, and logical ops only bool values")
        if v.op in ("div", "pow") or (v.op in UNARY_OPS and v.op not in ("neg", "abs", "relu", "not")):
            if not v.dtype.is_float:
                _fail(graph, v, f"'{v.op}' is computed in a float type")
        if v.dims != _elementwise_dims(ops):
            _fail(graph, v, f"dims {v.dims} are not the broadcast of the operands' dims")
    elif v.op in COMPARE_OPS:
        if ops[0].dtype != ops[1].dtype or v.dtype.name != "bool":
            _fail(graph, v, "a comparison takes two operands of one dtype and gives bool")
        if v.dims != _elementwise_dims(ops):
            _fail(graph, v, "dims are not the broadcast of the operands' dims")
    elif v.op == "where":
        c, a, b = ops
        if c.dtype.name != "bool" or a.dtype != v.dtype or b.dtype != v.dtype:
            _fail(graph, v, "where takes a bool condition and two operands of its dtype")
        if v.dims != _elementwise_dims((a, b, c)):
            _fail(graph, v, "dims are not the broadcast of the operands' dims")
    elif v.op == "cast":
        if v.dims != ops[0].dims or v.attr("to") != v.dtype:
            _fail(graph, v, "a cast keeps dims and produces its 'to' dtype")
    elif v.op == "reduce":
        axes = v.attr("axes")
        if v.attr("kind") not in REDUCE_KINDS:
            _fail(graph, v, f"unknown reduction {v.attr('kind')}")
        if not set(axes) <= set(ops[0].dims):
            _fail(graph, v, f"reduced axes {axes} not in operand dims {ops[0].dims}")
        if v.dims != tuple(d for d in ops[0].dims if d not in axes):
            _fail(graph, v, "reduction result dims must be the operand's minus the axes")
        if ops[0].dtype != v.dtype or v.dtype.name in ("f16", "bf16"):
            _fail(graph, v, "a reduction accumulates in its operand's (compute) dtype")
    elif v.op == "matmul":
        a, b = ops
        k = v.attr("contract")
        if a.dtype != b.dtype or not a.dtype.is_float:
            _fail(graph, v, "matmul operands share one float dtype")
        if v.dtype != a.dtype.compute or (v.dtype != f32 and v.dtype.name != "f64"):
            _fail(graph, v, "matmul accumulates in f32 (f64 for f64)")
        if a.dims[-1] != k or (b.dims[-2] if len(b.dims) > 1 else b.dims[-1]) != k:
            _fail(graph, v, f"contracted dim {k} is not a's last and b's second-to-last")
        if k in v.dims:
            _fail(graph, v, "the contracted dim survives the matmul")
    elif v.op == "permute":
        if sorted(v.dims) != sorted(ops[0].dims) or v.dtype != ops[0].dtype:
            _fail(graph, v, "permute reorders dims and nothing else")
