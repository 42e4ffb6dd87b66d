"""Programs and inputs at the edges of the number types, shared by the host and GPU tests:
floats cast to every integer type (NaN, infinities, values past each type's range and at
its ends) and i32/i64 arithmetic that overflows."""
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
