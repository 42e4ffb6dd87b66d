"""The NumPy reference interpreter: the language's semantics, executed plainly.

Each IR value becomes a NumPy array whose axes follow the value's dims;
elementwise operands are aligned by dim name before NumPy broadcasts them.

`compute="exact"` holds every value in its IR dtype (f32 arithmetic for f16
inputs, rounding at every cast) and is what the GPU must match bit-for-bit
in spirit. `compute="f64"` holds every float value in float64 (explicit casts
still round), the high-precision baseline tests compare GPU results against.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .dtypes import DType, from_numpy
from .errors import TdslArgumentError
from .ir.graph import Graph, Value
from .signature import bind


def _host_dtype(x):
    return from_numpy(x.dtype) if isinstance(x, np.ndarray) else None


def _host_shape(x):
    if isinstance(x, np.ndarray) and not isinstance(x, np.ma.MaskedArray):
        return x.shape
    return None


def _describe(x) -> str:
    if isinstance(x, np.ma.MaskedArray):     # its mask would be ignored
        return "a NumPy masked array; pass x.filled(value) (or x.data to ignore the mask)"
    if hasattr(x, "__cuda_array_interface__") or hasattr(x, "get"):
        return (f"a GPU array ({type(x).__module__}.{type(x).__name__}); reference() runs on the "
                f"CPU: pass NumPy arrays (for CuPy, x.get())")
    return f"{type(x).__name__}"


def bind_host(graph: Graph, args: tuple, kwargs: dict):
    return bind(graph, args, kwargs, dtype_of=_host_dtype, shape_of=_host_shape, describe=_describe)


def _erf(x: np.ndarray) -> np.ndarray:
    try:
        from scipy.special import erf
        return erf(x)
    except ImportError:
        return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=x.dtype)


def _erfc(x: np.ndarray) -> np.ndarray:
    try:
        from scipy.special import erfc
        return erfc(x)
    except ImportError:
        return np.asarray(np.frompyfunc(math.erfc, 1, 1)(x), dtype=x.dtype)


def float_to_int(x, dtype, xp=np):
    """Floats `x` cast to the integer `dtype` as the generated code casts them (tdsl::to_int):
    toward zero, saturating at the type's range, NaN -> 0. (NumPy leaves values out of range
    undefined: on x86 they come out as the type's minimum.)"""
    info = np.iinfo(dtype)
    t = xp.trunc(x.astype(np.float64))
    t = xp.where(xp.isnan(t), 0.0, t)
    past_hi = float(info.max) + 1.0         # a power of two: exact
    inside = xp.clip(t, float(info.min), np.nextafter(past_hi, 0.0)).astype(dtype)
    return xp.where(t >= past_hi, xp.asarray(info.max, dtype=dtype), inside)


def cast(x, dtype, xp=np):
    """`x` converted to the NumPy `dtype` as the generated code converts it: floats to
    integers by float_to_int, everything else as NumPy's astype rounds."""
    if np.issubdtype(dtype, np.integer) and x.dtype.kind == "f":
        return float_to_int(x, dtype, xp)
    return x.astype(dtype)


def unary_functions(xp, erf, erfc) -> dict:
    """The elementwise functions by IR op name, written once for any NumPy-like
    library `xp` (NumPy here, CuPy for the tuner's unfused peer)."""
    def sigmoid(x):
        return 1 / (1 + xp.exp(-x))
    return {
        "neg": xp.negative, "abs": xp.abs, "exp": xp.exp, "exp2": xp.exp2, "log": xp.log,
        "log2": xp.log2, "sqrt": xp.sqrt, "rsqrt": lambda x: 1 / xp.sqrt(x), "sin": xp.sin,
        "cos": xp.cos, "tanh": xp.tanh, "sigmoid": sigmoid,
        "relu": lambda x: xp.maximum(x, xp.zeros((), x.dtype)),
        # 1 + erf(z) as erfc(-z): accurate where erf(z) is close to -1
        "gelu": lambda x: 0.5 * x * erfc(-x / np.sqrt(x.dtype.type(2))),
        "gelu_tanh": lambda x: 0.5 * x * (1 + xp.tanh(x.dtype.type(math.sqrt(2 / math.pi))
                                                      * (x + x.dtype.type(0.044715) * x * x * x))),
        "silu": lambda x: x * sigmoid(x), "erf": erf, "floor": xp.floor, "ceil": xp.ceil,
        "not": xp.logical_not,
    }


_UNARY = unary_functions(np, _erf, _erfc)
def binary_functions(xp) -> dict:
    """The two-operand elementwise functions by IR op name, for any NumPy-like `xp`."""
    return {
        "add": xp.add, "sub": xp.subtract, "mul": xp.multiply, "div": xp.divide, "pow": xp.power,
        "maximum": xp.maximum, "minimum": xp.minimum, "and": xp.logical_and, "or": xp.logical_or,
        "lt": xp.less, "le": xp.less_equal, "gt": xp.greater, "ge": xp.greater_equal,
        "eq": xp.equal, "ne": xp.not_equal,
    }


_BINARY = binary_functions(np)


class _Interpreter:
    def __init__(self, graph: Graph, extents: dict, compute: str):
        self.graph, self.extents, self.wide = graph, extents, compute == "f64"
        self.env: dict[int, np.ndarray] = {}

    def hold(self, dtype: DType) -> np.dtype:
        """The NumPy dtype a value of `dtype` is held in."""
        if self.wide and dtype.is_float:
            return np.dtype(np.float64)
        return dtype.numpy

    def aligned(self, operand: Value, dims: tuple[str, ...]) -> np.ndarray:
        """The operand's array with axes in `dims` order, size-1 where it lacks a dim."""
        arr = self.env[operand.id]
        present = [d for d in dims if d in operand.dims]
        arr = np.transpose(arr, [operand.dims.index(d) for d in present])
        return arr.reshape([self.extents[d] if d in operand.dims else 1 for d in dims])

    def run(self, values: list) -> list[np.ndarray]:
        for v in self.graph.values:
            out = self.eval(v, values)
            self.env[v.id] = np.asarray(out).astype(self.hold(v.dtype), copy=False)
        return [self.env[o.id] for o in self.graph.outputs]

    def eval(self, v: Value, values: list) -> Any:
        if v.op == "param":
            arg = values[v.attr("index")]
            return np.asarray(arg, dtype=self.hold(v.dtype)) if not v.dims else \
                np.asarray(arg).astype(self.hold(v.dtype), copy=False)
        if v.op == "const":
            return np.array(v.attr("value"), dtype=self.hold(v.dtype))
        if v.op == "idx":
            return np.arange(self.extents[v.attr("dim")], dtype=np.int64)
        if v.op == "cast":
            rounded = cast(self.env[v.operands[0].id], v.dtype.numpy)   # round through the target type
            return rounded.astype(self.hold(v.dtype))
        if v.op == "permute":
            src = v.operands[0]
            return np.transpose(self.env[src.id], [src.dims.index(d) for d in v.dims])
        if v.op == "reduce":
            return self.reduce(v)
        if v.op == "matmul":
            return self.matmul(v)
        args = [self.aligned(o, v.dims) for o in v.operands]
        if v.op == "where":
            return np.where(*args)
        if v.op in _UNARY:
            return _UNARY[v.op](*args)
        return _BINARY[v.op](*args)

    def reduce(self, v: Value) -> np.ndarray:
        src = v.operands[0]
        x = self.env[src.id]
        axes = tuple(src.dims.index(d) for d in v.attr("axes"))
        kind = v.attr("kind")
        dtype = self.hold(v.dtype)
        if kind == "sum":
            return np.sum(x, axis=axes, dtype=dtype)
        if kind == "mean":
            return np.mean(x, axis=axes, dtype=dtype) if x.size or not axes else \
                np.full(np.sum(x, axis=axes).shape, np.nan, dtype)
        identity = (-np.inf if kind == "max" else np.inf) if dtype.kind == "f" else \
            (np.iinfo(dtype).min if kind == "max" else np.iinfo(dtype).max)
        reducer = np.max if kind == "max" else np.min
        return reducer(x, axis=axes, initial=identity)

    def matmul(self, v: Value) -> np.ndarray:
        a, b = v.operands
        batch = tuple(d for d in v.dims if d in a.dims[:-2] or d in b.dims[:-2])
        dtype = self.hold(v.dtype)
        av = self.aligned(a, batch + a.dims[-2:]).astype(dtype) if len(a.dims) >= 2 else \
            self.env[a.id].astype(dtype)
        if len(b.dims) >= 2:
            bv = self.aligned(b, batch + b.dims[-2:]).astype(dtype)
        else:
            bv = self.env[b.id].astype(dtype)
        out = np.matmul(av, bv)
        # matmul's result dims are batch + m + n; NumPy gives them in that order
        return out


def evaluate(graph: Graph, args: tuple, kwargs: dict, compute: str = "exact", trace: dict | None = None):
    """Run `graph` on NumPy arguments; one array per result (0-d for scalars). With
    `trace`, every value's array is put there too, by value id (to see intermediates)."""
    if compute not in ("exact", "f64"):
        raise TdslArgumentError(f"compute must be 'exact' or 'f64', not {compute!r}")
    bound = bind_host(graph, args, kwargs)
    with np.errstate(all="ignore"):   # inf and nan are values here, as on the GPU
        interpreter = _Interpreter(graph, bound.extents, compute)
        outputs = interpreter.run(bound.values)
    if trace is not None:
        trace.update(interpreter.env)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)
