"""Binding a call's arguments to a kernel's parameters.

Shared by the reference interpreter and the GPU launcher, so both accept and
reject exactly the same calls: argument count and names, dtypes, ranks, and
the extent of every named dim (`dim N: x has 1024, bias has 1000`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from .dtypes import DType, float_max
from .errors import TdslArgumentError, TdslShapeError, TdslTypeError
from .ir.graph import Graph, ParamInfo


@dataclass
class Bound:
    values: list          # per parameter, in order: the array, or the scalar as a Python number
    extents: dict         # dim name -> extent


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _signature_text(graph: Graph) -> str:
    return ", ".join(p.name for p in graph.params)


def collect_arguments(graph: Graph, args: tuple, kwargs: dict) -> list:
    """Positional and keyword arguments → one value per parameter (defaults filled)."""
    params = graph.params
    if len(args) > len(params):
        raise TdslArgumentError(f"{graph.name}() takes {_plural(len(params), 'argument')} "
                                f"({_signature_text(graph)}) but {len(args)} were given", graph.loc)
    values: list[Any] = list(args) + [_MISSING] * (len(params) - len(args))
    names = [p.name for p in params]
    for key, val in kwargs.items():
        if key not in names:
            raise TdslArgumentError(f"{graph.name}() has no parameter '{key}'; parameters are "
                                    f"{_signature_text(graph)}", graph.loc)
        i = names.index(key)
        if values[i] is not _MISSING:
            raise TdslArgumentError(f"{graph.name}() got two values for '{key}'", params[i].loc)
        values[i] = val
    for i, p in enumerate(params):
        if values[i] is _MISSING:
            if p.default is None:
                missing = [q.name for q, v in zip(params, values) if v is _MISSING and q.default is None]
                raise TdslArgumentError(f"{graph.name}() is missing "
                                        f"{_plural(len(missing), 'argument')}: {', '.join(missing)}",
                                        p.loc)
            values[i] = p.default
    return values


_MISSING = object()


def scalar_value(p: ParamInfo, value) -> Any:
    """A scalar argument as a Python number of the parameter's kind, range-checked."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.generic):
        value = value.item()
    if p.dtype.is_bool:
        if not isinstance(value, bool):
            raise TdslTypeError(f"'{p.name}' is bool; pass True or False, not {value!r}", p.loc)
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        article = "a" if p.dtype.name in ("bf16", "bool", "u8", "u32") else "an"     # an i32, an f32; a bf16
        raise TdslTypeError(f"'{p.name}' is {article} {p.dtype} scalar; got {type(value).__name__}", p.loc)
    if p.dtype.is_integer:
        if isinstance(value, float):
            raise TdslTypeError(f"'{p.name}' is {p.dtype}; got the float {value!r}", p.loc)
        info = np.iinfo(p.dtype.numpy)
        if not info.min <= value <= info.max:
            shown = value if abs(value) < 10 ** 30 else f"an integer of {abs(value).bit_length()} bits"
            raise TdslTypeError(f"'{p.name}' = {shown} does not fit in {p.dtype}", p.loc)
        return int(value)
    try:
        value = float(value)
    except OverflowError:       # an int past every float (10**400)
        raise TdslTypeError(f"'{p.name}' = an integer of {abs(value).bit_length()} bits overflows {p.dtype}",
                            p.loc) from None
    if math.isfinite(value) and abs(value) > float_max(p.dtype):
        raise TdslTypeError(f"'{p.name}' = {value!r} overflows {p.dtype}", p.loc)
    return value


def _unsupported(array) -> str:
    """How an array of no dtype of the language is described (NumPy's byte order named)."""
    dtype = getattr(array, "dtype", None)
    if dtype is None:
        return "of an unsupported dtype"
    if getattr(dtype, "byteorder", "=") == ">":
        return f"big-endian ({dtype.str}); convert it first (.astype({dtype.newbyteorder('=').name}))"
    return f"of an unsupported dtype ({dtype})"


def bind(graph: Graph, args: tuple, kwargs: dict, *,
         dtype_of: Callable[[Any], Optional[DType]],
         shape_of: Callable[[Any], Optional[tuple]],
         describe: Callable[[Any], str]) -> Bound:
    """Check every argument against the signature and bind each dim's extent.

    `dtype_of`/`shape_of` read an array argument (None when it is not an array
    of the kind this path accepts); `describe` names a rejected argument.
    """
    values = collect_arguments(graph, args, kwargs)
    extents: dict[str, int] = dict(graph.fixed_extents)
    first_binder: dict[str, str] = {}
    for p, value in zip(graph.params, values):
        if p.is_scalar:
            values[p.index] = scalar_value(p, value)
            continue
        shape = shape_of(value)
        if shape is None:
            raise TdslArgumentError(f"'{p.name}' must be an array of {p.dtype}[{', '.join(p.dims)}]; "
                                    f"got {describe(value)}", p.loc)
        dtype = dtype_of(value)
        if dtype != p.dtype:
            raise TdslTypeError(f"'{p.name}' is declared {p.dtype} but the array is "
                                f"{dtype or _unsupported(value)}"
                                + (f"; convert it first (.astype({p.dtype.numpy.name}))"
                                   if dtype is not None else ""), p.loc)
        if len(shape) != len(p.dims):
            raise TdslShapeError(f"'{p.name}' is declared with {_plural(len(p.dims), 'dim')} "
                                 f"[{', '.join(p.dims)}] but the array has shape {tuple(shape)}", p.loc)
        for dim, extent in zip(p.dims, shape):
            extent = int(extent)
            if dim in extents and extents[dim] != extent:
                who = first_binder.get(dim)
                first = f"{who} has {extents[dim]}" if who else f"it is fixed at {extents[dim]}"
                raise TdslShapeError(f"dim {dim}: {first}, {p.name} has {extent}", p.loc)
            extents.setdefault(dim, extent)
            first_binder.setdefault(dim, p.name)
    return Bound(values, extents)
