"""Random arguments for a kernel, and how far a result is from its reference.

Used by `tiledsl run`, the benchmarks, the tuner's safety check and the tests,
so every one of them draws inputs and judges results the same way.
"""
from __future__ import annotations

import math
import re
from typing import Optional

import numpy as np

from .dtypes import DType
from .errors import TdslArgumentError
from .ir.graph import Graph

# Ops whose inputs should stay positive, or random data would be mostly NaN.
_POSITIVE_DOMAIN = {"log", "log2", "sqrt", "rsqrt", "pow"}

# Relative-norm tolerances by result dtype (the project's standard).
TOLERANCE = {"f64": 1e-12, "f32": 1e-5, "f16": 2e-3, "bf16": 1e-2, "tf32": 1e-3,
             "bool": 0.0, "i8": 0.0, "i16": 0.0, "i32": 0.0, "i64": 0.0, "u8": 0.0, "u32": 0.0}


SIZE_LIMIT = 2 ** 63          # extents are int64 on the host and in the kernels


def parse_sizes(text: Optional[str]) -> dict[str, int]:
    """--shape 'M=4096,N=1024' → {'M': 4096, 'N': 1024}: ASCII digits only (str.isdigit
    also takes '²' and '١٢'), each name once, each size below 2^63."""
    sizes: dict[str, int] = {}
    for part in filter(None, (text or "").replace(" ", "").split(",")):
        name, _, value = part.partition("=")
        if not name or not re.fullmatch(r"[0-9]+", value):
            raise TdslArgumentError(f"--shape takes NAME=SIZE pairs separated by commas, e.g. "
                                    f"M=4096,N=1024; got {part!r}")
        if name in sizes:
            raise TdslArgumentError(f"--shape gives {name} twice ({name}={sizes[name]} and {part})")
        if int(value) >= SIZE_LIMIT:
            raise TdslArgumentError(f"--shape: {part} is too large; a size must be below 2^63")
        sizes[name] = int(value)
    return sizes


def extents_for(sizes: dict[str, int], graph: Graph) -> dict[str, int]:
    """The extents of `graph`'s dims: its literal dims, and its named ones from `sizes`
    (names of other kernels' dims are left out; each of its own must be there)."""
    extents = dict(graph.fixed_extents)
    extents.update((d, n) for d, n in sizes.items() if d in graph.dims and d not in extents)
    missing = [d for d in graph.dims if d not in extents]
    if missing:
        raise TdslArgumentError(f"--shape must give {', '.join(missing)} for {graph.name} "
                                f"(dims: {', '.join(graph.dims)})")
    return extents


def _draw(rng: np.random.Generator, dtype: DType, shape, positive: bool) -> np.ndarray:
    if dtype.is_bool:
        return rng.random(shape) < 0.5
    if dtype.is_integer:
        lo = 0 if dtype.kind == "uint" or positive else -8
        return rng.integers(lo, 9, size=shape).astype(dtype.numpy)
    values = rng.uniform(0.25, 2.0, shape) if positive else rng.standard_normal(shape)
    return values.astype(dtype.numpy)


# A result with at most this many elements gets positive inputs (random_arguments).
FEW_ELEMENTS = 4


def random_arguments(graph: Graph, extents: dict[str, int], seed: Optional[int] = None) -> list:
    """Fresh random NumPy arguments, one per parameter (scalars as Python numbers).

    Positive where an op needs it, where a result has at most a few elements
    (FEW_ELEMENTS) at these extents, or where something is divided by a sum of so
    few: a sum of zero-mean terms can land near zero by chance, and the relative
    error of a result that small measures the draw, not the kernel (a dot product
    of 2^20 normal f32 values once missed 1e-5 so, H100 2026-11-22; a column sum of
    1000x1, 2026-11-23). Positive terms keep each element's contribution visible:
    a dropped or doubled one still shows."""
    rng = np.random.default_rng(seed)
    positive = (any(v.op in _POSITIVE_DOMAIN for v in graph.values)
                or any(math.prod(extents.get(d, 1) for d in r.dims) <= FEW_ELEMENTS for r in graph.results)
                or _divides_by_a_short_sum(graph, extents))
    args = []
    for p in graph.params:
        if p.is_scalar:
            if p.default is not None:
                args.append(p.default)
            else:
                args.append(_draw(rng, p.dtype, (), True).item())
        else:
            args.append(_draw(rng, p.dtype, tuple(extents[d] for d in p.dims), positive))
    return args


def _divides_by_a_short_sum(graph: Graph, extents: dict[str, int]) -> bool:
    """Whether a division's divisor is a sum or mean of few elements (FEW_ELEMENTS) at these
    extents, seen through casts and negation: `x / sum(x)` of zero-mean terms divides by a
    value near zero now and then, and its relative error then measures the draw (1.65e-5
    over 2^18 f32 once, H100 2026-11-27)."""
    for v in graph.values:
        if v.op != "div":
            continue
        d = v.operands[1]
        while d.op in ("cast", "neg"):
            d = d.operands[0]
        if d.op == "reduce" and d.attr("kind") in ("sum", "mean") \
                and math.prod(extents.get(x, 1) for x in d.dims) <= FEW_ELEMENTS:
            return True
    return False


def relative_error(result, reference) -> float:
    """‖result − reference‖ / ‖reference‖ in float64; inf when NaN appears
    anywhere the reference has none (NaN never passes)."""
    r = np.asarray(result, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    if r.shape != ref.shape:
        return float("inf")
    ref_nan = np.isnan(ref)
    if np.any(np.isnan(r) != ref_nan):
        return float("inf")
    finite = ~ref_nan & np.isfinite(ref)
    if np.any(np.isinf(ref) & (r != ref)):
        return float("inf")
    diff = np.linalg.norm(r[finite] - ref[finite])     # masked first: inf - inf warns
    norm = np.linalg.norm(ref[finite])
    if norm == 0:
        return float(diff)
    return float(diff / norm)
