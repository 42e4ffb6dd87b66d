"""Programs and inputs at the edges of the number types, shared by the host and GPU tests:
floats cast to every integer type (NaN, infinities, values past each type's range and at
its ends), i32/i64 arithmetic that overflows, and every finite 16-bit float through the
16-bit functions (GELU_16)."""
from __future__ import annotations

import math

import numpy as np

CASTS = ("kernel c(x: f32[N], y: f64[N], h: f16[N]) -> (i8[N], i16[N], i32[N], i64[N], u8[N], u32[N], i32[N], "
         "u8[N], i64[N], i32[N]) { return i8(x), i16(x), i32(x), i64(x), u8(x), u32(x), i32(y), u8(h), i64(y), "
         "i32(1e10) + i32(x * 0.0) }")
SPECIAL = [math.nan, math.inf, -math.inf, 1e10, -1e10, -1.7, 1.7, 300.0, -129.5, 255.9, 256.0, 2147483647.0,
           2147483648.0, -2147483649.0, 9.3e18, -9.3e18, 0.0, -0.0, 65504.0, -65504.0]
WRAPS = ("kernel w(x: i32[N], y: i64[N]) -> (bool[N], i32[N], i32[N], i32[N], i64[N], i64[N], i32) "
         "{ return x + 1 > x, x * 3, -x, abs(x), y + y, y * 5, sum(x) }")


def cast_inputs(rng: np.random.Generator) -> list:
    """CASTS's x, y, h: SPECIAL, then random values of a few thousand."""
    x = np.concatenate([SPECIAL, rng.standard_normal(23) * 1e3])
    with np.errstate(over="ignore"):        # (f16 takes the largest to inf)
        return [x.astype(np.float32), x.astype(np.float64), x.astype(np.float16)]


def wrap_inputs(rng: np.random.Generator) -> list:
    """WRAPS's x (i32) and y (i64): each type's ends, then random values over its range."""
    out = []
    for dtype in (np.int32, np.int64):
        info = np.iinfo(dtype)
        ends = [info.max, info.min, info.max // 2 + 7, -1, 0]
        out.append(np.concatenate([np.array(ends, dtype),
                                   rng.integers(info.min, info.max, 28, dtype=dtype, endpoint=True)]))
    return out


GELU_16 = "kernel g(x: {t}[N]) -> {t}[N] {{ return gelu(x) }}"
# Results of GELU_16 over every finite input that may differ from the correctly rounded
# gelu, and by one unit in the last place at most. Run on the host (exact exp and
# reciprocal), the f32 math of tdsl::gelu_narrow (erfc through a polynomial of degree 7,
# tdsl.cuh) missed 11 f16 values of 63488 and no bf16 one; Numerical Recipes' degree 9,
# before it, missed 4 and 0, and a fit of degree 6 47 and 1 (2026-12-02).
GELU_16_MISSES = 32


def every_finite_16_bit(name: str) -> np.ndarray:
    """Every finite value of f16 or bf16 ("f16", "bf16"), in bit order."""
    from tiledsl.dtypes import DTYPES, numpy_dtype
    values = np.arange(1 << 16, dtype=np.uint16).view(numpy_dtype(DTYPES[name]))
    return values[np.isfinite(values.astype(np.float32))]


def rounding_misses(got: np.ndarray, want: np.ndarray) -> tuple:
    """(results that differ from `want` (float64) rounded to got's 16-bit type, the most
    units in the last place any is off by), NaN matching NaN only."""
    exact = want.astype(got.dtype)
    g64, w64 = got.astype(np.float64), exact.astype(np.float64)
    off = ~((g64 == w64) | (np.isnan(g64) & np.isnan(w64)))

    def ordered(a):     # sign and magnitude bits -> integers in the order of the values
        bits = a.view(np.uint16).astype(np.int64)
        return np.where(bits & 0x8000, -(bits & 0x7FFF), bits)
    units = np.abs(ordered(got) - ordered(exact))[off]
    return int(off.sum()), int(units.max()) if off.any() else 0
