"""Readable text form of the IR (`tiledsl emit --stage ir`)."""
from __future__ import annotations

from .graph import Graph, Value


def _type(dtype, dims) -> str:
    return f"{dtype}[{', '.join(dims)}]" if dims else str(dtype)


def _attrs(v: Value) -> str:
    parts = []
    for key, val in v.attrs:
        if v.op == "param" and key in ("name", "index"):
            continue
        if isinstance(val, tuple):
            val = "(" + ", ".join(map(str, val)) + ")"
        elif isinstance(val, float):
            val = repr(val)
        parts.append(f"{key}={val}")
    return (" " + " ".join(parts)) if parts else ""


def format_value(v: Value) -> str:
    if v.op == "param":
        head = f"param {v.attr('name')}"
    else:
        head = v.op + "".join(f" %{o.id}" if i == 0 else f", %{o.id}" for i, o in enumerate(v.operands))
    return f"%{v.id} = {head}{_attrs(v)} : {_type(v.dtype, v.dims)}"


def format_graph(graph: Graph) -> str:
    params = ", ".join(f"{p.name}: {_type(p.dtype, p.dims or ())}"
                       + (f" = {p.default!r}" if p.default is not None else "") for p in graph.params)
    results = ", ".join(_type(r.dtype, r.dims) for r in graph.results)
    lines = [f"kernel {graph.name}({params}) -> ({results}) {{"]
    lines += [f"  {format_value(v)}" for v in graph.values]
    lines.append("  return " + ", ".join(f"%{o.id}" for o in graph.outputs))
    lines.append("}")
    return "\n".join(lines)
