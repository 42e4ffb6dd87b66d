"""Graph-to-graph passes. Each one is followed by the verifier (`run_passes`)."""
from __future__ import annotations

import dataclasses
from typing import Callable

from .graph import Graph, Value
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


PIPELINE: tuple[Callable[[Graph], Graph], ...] = (
    eliminate_common_subexpressions,
    eliminate_dead_values,
)


def run_passes(graph: Graph, passes=PIPELINE) -> Graph:
    verify(graph)
    for p in passes:
        graph = verify(p(graph))
    return graph
