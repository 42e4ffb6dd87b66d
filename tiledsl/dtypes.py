"""Element types and the promotion rules of the language.

f16 and bf16 are storage types: arithmetic on them happens in f32 (`compute`).
Promotion never looks at values, only at types; literals are "weak" and take
the type of what they meet (see the checker).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class DType:
    name: str
    kind: str        # 'bool', 'int', 'uint' or 'float'
    bits: int
    ctype: str       # the CUDA C++ type that stores it

    def __str__(self) -> str:
        return self.name

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    @property
    def compute(self) -> "DType":
        """The type arithmetic on this type is carried out in."""
        return f32 if self.name in ("f16", "bf16") else self

    @property
    def numpy(self) -> np.dtype:
        return numpy_dtype(self)


bool_ = DType("bool", "bool", 8, "bool")
i8 = DType("i8", "int", 8, "signed char")
i16 = DType("i16", "int", 16, "short")
i32 = DType("i32", "int", 32, "int")
i64 = DType("i64", "int", 64, "long long")
u8 = DType("u8", "uint", 8, "unsigned char")
u32 = DType("u32", "uint", 32, "unsigned int")
f16 = DType("f16", "float", 16, "__half")
bf16 = DType("bf16", "float", 16, "__nv_bfloat16")
f32 = DType("f32", "float", 32, "float")
f64 = DType("f64", "float", 64, "double")

DTYPES: dict[str, DType] = {d.name: d for d in (bool_, i8, i16, i32, i64, u8, u32, f16, bf16, f32, f64)}


def bfloat16_numpy() -> np.dtype:
    """NumPy has no bf16; ml_dtypes provides it (it comes with JAX and the dev extra)."""
    try:
        import ml_dtypes
    except ImportError:
        from .errors import TdslTypeError
        raise TdslTypeError("bf16 arrays on the CPU need the 'ml_dtypes' package "
                            "(pip install ml_dtypes)") from None
    return np.dtype(ml_dtypes.bfloat16)


@lru_cache(maxsize=None)
def numpy_dtype(dtype: DType) -> np.dtype:
    if dtype is bf16 or dtype.name == "bf16":
        return bfloat16_numpy()
    return np.dtype({"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32,
                     "i64": np.int64, "u8": np.uint8, "u32": np.uint32, "f16": np.float16,
                     "f32": np.float32, "f64": np.float64}[dtype.name])


_BY_NUMPY: dict = {}


def from_numpy(dtype) -> DType | None:
    """The language's dtype for a NumPy/CuPy dtype (or None when there is none)."""
    found = _BY_NUMPY.get(dtype, False)
    if found is not False:
        return found
    key = dtype
    dtype = np.dtype(dtype)
    found = None
    if dtype.name == "bfloat16":
        found = bf16
    for d in DTYPES.values():
        if found is None and d is not bf16 and numpy_dtype(d) == dtype:
            found = d
    _BY_NUMPY[key] = found
    return found


def float_max(d: DType) -> float:
    """The largest finite value of a float dtype (np.finfo does not know bf16)."""
    return {"f16": 65504.0, "bf16": 3.3895313892515355e38,
            "f32": 3.4028234663852886e38, "f64": 1.7976931348623157e308}[d.name]


def _float_rank(d: DType) -> int:
    return {"f16": 1, "bf16": 1, "f32": 2, "f64": 3}[d.name]


def promote(a: DType, b: DType) -> DType:
    """The common type of two strongly typed operands (before compute widening)."""
    if a == b:
        return a
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.is_float and b.is_float:
        ra, rb = _float_rank(a), _float_rank(b)
        if ra == rb:          # f16 with bf16: neither holds the other
            return f32
        return a if ra > rb else b
    if a.is_float:
        return a
    if b.is_float:
        return b
    # Two integers: the narrowest signed or same-signedness type holding both.
    if a.kind == b.kind:
        return a if a.bits >= b.bits else b
    signed, unsigned = (a, b) if a.kind == "int" else (b, a)
    if signed.bits > unsigned.bits:
        return signed
    return {8: i16, 16: i32, 32: i64}.get(unsigned.bits, i64)
