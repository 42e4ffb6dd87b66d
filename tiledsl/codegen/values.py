"""C++ text for a value of a dtype: widened into a register, narrowed for a store, a
vector's lane, and constants re-printed exactly from their parsed value (no text of the
user's file reaches CUDA)."""
from __future__ import annotations

import math

import numpy as np

from ..dtypes import DType


def to_reg(expr: str, d: DType) -> str:
    if d.name == "f16":
        return f"tdsl::f16_to_f32({expr})"
    if d.name == "bf16":
        return f"tdsl::bf16_to_f32({expr})"
    return expr


def vector_lane(vector: str, d: DType) -> str:
    """Lane `e` of a loaded vector, in registers. A bf16 lane is widened from its 32-bit
    word (tdsl::bf16_lane): widened from its own 16 bits, ptxas split every vector into a
    register a lane first (a bf16 layernorm's prefetching row with hoisted weights took 74
    registers and spilled under 64; from the words, 55)."""
    if d.name == "bf16":
        return f"tdsl::bf16_lane({vector}, e)"
    return to_reg(f"{vector}.v[e]", d)


def to_storage(expr: str, d: DType) -> str:
    if d.name == "f16":
        return f"tdsl::f32_to_f16({expr})"
    if d.name == "bf16":
        return f"tdsl::f32_to_bf16({expr})"
    return f"({d.ctype})({expr})"


def literal(value, d: DType) -> str:
    """A constant re-printed exactly in C++ (hex floats; inf/nan by bit pattern)."""
    if d.is_bool:
        return "true" if value else "false"
    if d.is_integer:
        v = int(value)
        if d.bits == 64 and v == -2 ** 63:
            return "(-9223372036854775807LL - 1)"
        return f"(({d.ctype}){v}LL)"
    v = float(value)
    double = d.name == "f64"
    if d.name == "f16":
        v = float(np.float16(v))
    elif d.name == "bf16":
        v = _bf16_round(v) if math.isfinite(v) else v
    elif not double:
        v = float(np.float32(v))
    if math.isnan(v):
        return "__longlong_as_double(0x7ff8000000000000LL)" if double else "__int_as_float(0x7fffffff)"
    if math.isinf(v):
        if double:
            return f"__longlong_as_double({'0xfff0000000000000' if v < 0 else '0x7ff0000000000000'}LL)"
        return f"__int_as_float({'0xff800000' if v < 0 else '0x7f800000'})"
    return v.hex() if double else v.hex() + "f"


def _bf16_round(v: float) -> float:
    """v rounded to the nearest bf16 (ties to even), as the GPU's cvt.rn does."""
    bits = int(np.array(v, dtype=np.float32).view(np.uint32))
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return float(np.array(bits, dtype=np.uint32).view(np.float32))
