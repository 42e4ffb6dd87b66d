"""Peers to time tiledsl against: cuBLAS, CuPy unfused, Triton.

  cublas  cupy.matmul, for a kernel that is exactly one `a @ b` of two
          parameters (with at most a cast of the result to the operand dtype)
  cupy    the IR evaluated op by op with CuPy (tune/cupy_eval.py)
  triton  n/a: tiledsl has no generic lowering of its IR to Triton; the
          memory-bound examples have hand-written Triton peers in
          benchmarks/triton_peers.py (benchmarks/bench_memory.py)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

PEERS = ("cublas", "cupy", "triton")
TRITON_NA = ("n/a: tiledsl has no generic lowering of a kernel's IR to Triton "
             "(hand-written Triton peers of the examples: benchmarks/bench_memory.py)")


@dataclass
class PeerResult:
    name: str                      # 'cuBLAS (cupy.matmul)', ...
    seconds: Optional[float] = None
    error: Optional[float] = None  # relative error against the float64 reference
    note: str = ""                 # why it did not run


def time_peer(load, fn) -> tuple[Optional[float], Optional[float], str]:
    """(largest error against the reference, median seconds, '') for a peer on the
    workload's inputs, or (None, None, why) when it cannot run: reported, not fatal."""
    try:
        error = max(load.errors_of(fn(load.sets[0])))
        return error, load.time(lambda i: fn(load.sets[i])).median, ""
    except Exception as err:   # noqa: BLE001 - a peer that cannot run is reported, not fatal
        return None, None, f"n/a: {type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"


def parse_peers(text: Optional[str]) -> list[str]:
    from ..errors import TdslArgumentError
    names = [n.strip().lower() for n in (text or "").split(",") if n.strip()]
    bad = [n for n in names if n not in PEERS]
    if bad:
        raise TdslArgumentError(f"--vs: unknown peer {', '.join(bad)}; choose from {', '.join(PEERS)}")
    return list(dict.fromkeys(names))


def plain_matmul(graph) -> Optional[tuple[int, int]]:
    """(index of a, index of b) when the kernel is exactly `a @ b` on two
    parameters, its result as declared (dims in order; dtype the operands'
    or the f32 accumulator), else None."""
    work = [v for v in graph.values if v.op not in ("param",)]
    mm = [v for v in work if v.op == "matmul"]
    if len(mm) != 1 or len(graph.outputs) != 1:
        return None
    mm = mm[0]
    a, b = mm.operands
    if a.op != "param" or b.op != "param" or a.dtype != b.dtype or len(a.dims) < 2 or len(b.dims) < 2:
        return None
    if a.dims[:-2] != b.dims[:-2] or a.dims[-1] != b.dims[-2]:
        return None
    rest = [v for v in work if v is not mm]
    out = graph.outputs[0]
    if rest and not (len(rest) == 1 and rest[0].op == "cast" and rest[0].operands[0] is mm
                     and rest[0].dtype == a.dtype and out is rest[0]):
        return None
    if not rest and out is not mm:
        return None
    if tuple(out.dims) != tuple(a.dims[:-1]) + (b.dims[-1],):
        return None
    return a.attr("index"), b.attr("index")


def runners(kernel, names: list[str], extents: dict) -> list[tuple[str, Optional[Callable], str]]:
    """(display name, fn(args) -> result or None, note) per requested peer."""
    import cupy
    out = []
    for name in names:
        if name == "cublas":
            pair = plain_matmul(kernel.graph)
            if pair is None:
                out.append(("cuBLAS (cupy.matmul)", None, "n/a: the kernel is not a plain a @ b"))
                continue
            ia, ib = pair
            dtype = kernel.graph.outputs[0].dtype.numpy
            out.append(("cuBLAS (cupy.matmul)",
                        lambda args, ia=ia, ib=ib, dt=dtype: cupy.matmul(args[ia], args[ib]).astype(dt, copy=False),
                        ""))
        elif name == "cupy":
            from .cupy_eval import Evaluator
            ev = Evaluator(kernel.graph, cupy)
            out.append(("CuPy, unfused", lambda args, ev=ev: ev(list(args), extents), ""))
        else:
            out.append(("Triton", None, TRITON_NA))
    return out
