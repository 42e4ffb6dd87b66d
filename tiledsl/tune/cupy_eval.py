"""The kernel's IR evaluated op by op with an array library: the "CuPy,
unfused" peer of `tiledsl bench` (one CuPy call per IR value, every
intermediate in memory), what a user would write without tiledsl.

It mirrors reference.py (compute='exact'): each value is held in its IR
dtype, operands are aligned by dim name. One difference, on purpose: a
contraction of f16/bf16 operands runs as the library's matmul in the
operand dtype (cuBLAS: tensor cores, f32 accumulation) and is then widened,
so its result is rounded to the operand dtype once, as `(x @ w).astype(f32)`
would be. `xp` is CuPy on the GPU; NumPy lets the CPU tests check it.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.graph import Graph, Value
from ..reference import binary_functions, cast, unary_functions


def _special(xp, name: str):
    if xp is np:
        try:
            import scipy.special as sp
            return getattr(sp, name)
        except ImportError:
            fn = getattr(math, name)
            return lambda x: np.asarray(np.frompyfunc(fn, 1, 1)(x), dtype=x.dtype)
    import cupyx.scipy.special as sp
    return getattr(sp, name)


def _unary(xp):
    def erfc(x):          # looked up on first use: only gelu needs it
        return _special(xp, "erfc")(x)

    def erf(x):
        return _special(xp, "erf")(x)
    return unary_functions(xp, erf, erfc)


class Evaluator:
    """evaluate(values, extents) → the kernel's results, one library call per IR value."""

    def __init__(self, graph: Graph, xp):
        self.graph, self.xp = graph, xp
        self.unary, self.binary = _unary(xp), binary_functions(xp)

    def __call__(self, values: list, extents: dict):
        xp, env = self.xp, {}

        def aligned(operand: Value, dims) -> object:
            arr = env[operand.id]
            present = [d for d in dims if d in operand.dims]
            arr = xp.transpose(arr, [operand.dims.index(d) for d in present])
            return arr.reshape([extents[d] if d in operand.dims else 1 for d in dims])

        for v in self.graph.values:
            out = self._eval(v, values, env, extents, aligned)
            out = xp.asarray(out)
            env[v.id] = out if out.dtype == v.dtype.numpy else out.astype(v.dtype.numpy)
        outs = [env[o.id] for o in self.graph.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _eval(self, v: Value, values, env, extents, aligned):
        xp = self.xp
        if v.op == "param":
            arg = values[v.attr("index")]
            return xp.asarray(arg, dtype=v.dtype.numpy)
        if v.op == "const":
            return xp.asarray(np.array(v.attr("value"), dtype=v.dtype.numpy))
        if v.op == "idx":
            return xp.arange(extents[v.attr("dim")], dtype=xp.int64)
        if v.op == "cast":
            return cast(env[v.operands[0].id], v.dtype.numpy, xp)
        if v.op == "permute":
            src = v.operands[0]
            return xp.transpose(env[src.id], [src.dims.index(d) for d in v.dims])
        if v.op == "reduce":
            return self._reduce(v, env)
        if v.op == "matmul":
            a, b = v.operands
            batch = tuple(d for d in v.dims if d in a.dims[:-2] or d in b.dims[:-2])
            av = aligned(a, batch + a.dims[-2:]) if len(a.dims) >= 2 else env[a.id]
            bv = aligned(b, batch + b.dims[-2:]) if len(b.dims) >= 2 else env[b.id]
            if av.dtype != bv.dtype:
                av, bv = av.astype(v.dtype.numpy), bv.astype(v.dtype.numpy)
            return xp.matmul(av, bv).astype(v.dtype.numpy)
        args = [aligned(o, v.dims) for o in v.operands]
        if v.op == "where":
            return xp.where(*args)
        if v.op in self.unary:
            return self.unary[v.op](*args)
        return self.binary[v.op](*args)

    def _reduce(self, v: Value, env):
        xp = self.xp
        src = v.operands[0]
        x = env[src.id]
        axes = tuple(src.dims.index(d) for d in v.attr("axes"))
        kind, dtype = v.attr("kind"), v.dtype.numpy
        if kind == "sum":
            return xp.sum(x, axis=axes, dtype=dtype)
        if kind == "mean":
            return xp.mean(x, axis=axes, dtype=dtype)
        reducer = xp.max if kind == "max" else xp.min
        if x.size == 0:
            identity = (-np.inf if kind == "max" else np.inf) if np.dtype(dtype).kind == "f" else \
                (np.iinfo(dtype).min if kind == "max" else np.iinfo(dtype).max)
            shape = [n for i, n in enumerate(x.shape) if i not in axes]
            return xp.full(shape, identity, dtype)
        return reducer(x, axis=axes)
