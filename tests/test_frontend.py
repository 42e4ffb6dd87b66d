"""Focused unit tests of the language's semantics: parsing, checking, IR, reference.

Expected values are computed here with plain NumPy (or by hand), never by
the code under test.
"""
from __future__ import annotations

import math
import sys

import ml_dtypes
import numpy as np
import pytest

import tiledsl
from tiledsl import dtypes as dt
from tiledsl.errors import (Loc, TdslError, TdslNameError, TdslShapeError, TdslSyntaxError,
                            TdslTypeError)
from tiledsl.ir.graph import Graph, ParamInfo, ResultInfo, Value
from tiledsl.ir.passes import eliminate_common_subexpressions, run_passes
from tiledsl.ir.verify import IRVerificationError, verify

from conftest import EXAMPLES

F32, F64, F16 = np.float32, np.float64, np.float16


def kernel(src: str) -> tiledsl.Kernel:
    k = tiledsl.compile(src)
    assert isinstance(k, tiledsl.Kernel)
    return k


def ops(k: tiledsl.Kernel) -> list[str]:
    return [v.op for v in k.graph.values]


def computed(k: tiledsl.Kernel, i: int = 0) -> Value:
    """The value a result is computed as, before the store's permute and cast."""
    v = k.graph.outputs[i]
    while v.op in ("permute", "cast") and v.operands:
        v = v.operands[0]
    return v


def ramp(*shape, dtype=F32, start=1):
    return (np.arange(math.prod(shape)) + start).reshape(shape).astype(dtype)


# ---- precedence and associativity -----------------------------------------------------
def test_unary_minus_binds_looser_than_power():
    k = kernel("kernel k(x: f32[N]) -> f32[N] { return -x**2 }")
    x = np.array([3.0, -2.0], F32)
    np.testing.assert_array_equal(k.reference(x), [-9.0, -4.0])
    assert ops(k)[-2:] == ["mul", "neg"]        # the square (x * x, multiplied out), then the minus


def test_power_takes_a_negative_exponent():
    k = kernel("kernel k(x: f32[N]) -> f32[N] { return x * 2**-1 }")
    np.testing.assert_array_equal(k.reference(np.array([4.0, 6.0], F32)), [2.0, 3.0])
    k = kernel("kernel k(x: f32[N]) -> f32[N] { return x**-2 }")
    np.testing.assert_array_equal(k.reference(np.array([2.0, 4.0], F32)), [0.25, 0.0625])


def test_weak_negative_power_literal():
    k = kernel("kernel k(x: f32[N]) -> f32[N] { return x + -2**2 }")
    np.testing.assert_array_equal(k.reference(np.array([0.0], F32)), [-4.0])


@pytest.mark.parametrize("expr,expected", [
    ("a - b - c", (10.0 - 4.0) - 3.0),          # 3, right-assoc would give 9
    ("a / b / c", (10.0 / 4.0) / 3.0),          # 0.8333, right-assoc 7.5
    ("a - b * c", 10.0 - 4.0 * 3.0),
    ("a * b - c", 10.0 * 4.0 - 3.0),
    ("(a - b) * c", (10.0 - 4.0) * 3.0),
    ("-a * b", -40.0),
    ("a - -b", 14.0),
    ("a * -b", -40.0),
    ("a + b / c * a", 10.0 + 4.0 / 3.0 * 10.0),
])
def test_binary_associativity(expr, expected):
    a, b, c = np.array([10.0], F64), np.array([4.0], F64), np.array([3.0], F64)
    k = kernel(f"kernel k(a: f64[N], b: f64[N], c: f64[N]) -> f64[N] {{ return {expr} }}")
    assert k.reference(a, b, c)[0] == expected


def test_power_is_right_associative():
    k = kernel("kernel k(a: f64[N], b: f64[N], c: f64[N]) -> f64[N] { return a ** b ** c }")
    out = k.reference(np.array([2.0]), np.array([3.0]), np.array([2.0]))
    assert out[0] == 2.0 ** 9            # (2 ** 3) ** 2 would be 64
    k = kernel("kernel k(a: f64[N]) -> f64[N] { return a ** 3 ** 2 }")
    assert k.reference(np.array([2.0]))[0] == 512.0


def test_comparison_binds_loosest():
    k = kernel("kernel k(a: f32[N], b: f32[N]) -> bool[N] { return a < b + 1 }")
    a, b = np.array([1.5, 3.0], F32), np.array([1.0, 1.0], F32)
    np.testing.assert_array_equal(k.reference(a, b), [True, False])


def test_matmul_shares_precedence_with_multiply():
    k = kernel("kernel k(x: f64[M, K], w: f64[K, N], s: f64) -> f64[M, N] { return x @ w * s }")
    x, w = ramp(2, 3, dtype=F64), ramp(3, 4, dtype=F64)
    np.testing.assert_array_equal(k.reference(x, w, 2.0), (x @ w) * 2.0)
    assert ops(k)[-2:] == ["matmul", "mul"]


def test_transpose_binds_tighter_than_minus():
    k = kernel("kernel k(x: f32[M, N]) -> f32[N, M] { return -x.T }")
    x = ramp(2, 3)
    np.testing.assert_array_equal(k.reference(x), -x.T)
    assert computed(k).op == "neg" and computed(k).dims == ("N", "M")


def test_chained_comparison_is_a_syntax_error():
    with pytest.raises(TdslSyntaxError):
        kernel("kernel k(a: f32[N]) -> bool[N] { return a < a < a }")


# ---- named broadcasting ---------------------------------------------------------------
@pytest.mark.parametrize("params,expr,dims", [
    ("x: f32[M, N], mu: f32[M]", "x - mu", ("M", "N")),
    ("x: f32[M, N], mu: f32[M]", "mu - x", ("M", "N")),
    ("a: f32[M], b: f32[N]", "a + b", ("M", "N")),
    ("a: f32[M], b: f32[N]", "b + a", ("N", "M")),
    ("x: f32[M, N], y: f32[N, M]", "x + y", ("M", "N")),
    ("x: f32[M, N], y: f32[N, M]", "y + x", ("N", "M")),
    ("a: f32[M, K], b: f32[K, N]", "a * b", ("M", "K", "N")),
    ("a: f32[K, N], b: f32[M, K]", "a * b", ("K", "N", "M")),
    ("a: f32[M], s: f32", "s * a", ("M",)),
    ("a: f32[N, M], b: f32[K]", "maximum(a, b)", ("N", "M", "K")),
    ("a: f32[M], b: f32[N], c: f32[K]", "where(a > 0, b, c)", ("N", "K", "M")),
])
def test_broadcast_result_dim_order(params, expr, dims):
    # declare the result in sorted order: the store may permute, the computed order is the IR's
    k = kernel(f"kernel k({params}) -> f32[{', '.join(sorted(dims))}] {{ return {expr} }}")
    assert computed(k).dims == dims


def test_broadcast_aligns_by_name_not_position():
    k = kernel("kernel k(x: f64[M, N], y: f64[N, M], b: f64[M]) -> f64[M, N] { return x + y * b }")
    x, y, b = ramp(2, 3, dtype=F64), ramp(3, 2, dtype=F64, start=10), np.array([2.0, -1.0])
    np.testing.assert_array_equal(k.reference(x, y, b), x + y.T * b[:, None])


def test_outer_product_by_name():
    k = kernel("kernel k(a: f64[M], b: f64[N]) -> f64[N, M] { return a * b }")
    a, b = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0])
    np.testing.assert_array_equal(k.reference(a, b), np.outer(b, a))


# ---- reductions -----------------------------------------------------------------------
def test_reduction_over_several_axes_and_none(rng):
    src = """kernel k(x: f64[B, M, N]) -> (f64[M], f64, f64[B], f64[B, N]) {
        return sum(x, axis=(B, N)), max(x), mean(x, axis=(N, M)), min(x, axis=M)
    }"""
    x = rng.standard_normal((2, 3, 4))
    s, mx, mean, mn = kernel(src).reference(x)
    np.testing.assert_allclose(s, x.sum(axis=(0, 2)), rtol=1e-12)
    assert np.asarray(mx).shape == () and mx == x.max()
    np.testing.assert_allclose(mean, x.mean(axis=(1, 2)), rtol=1e-12)
    np.testing.assert_array_equal(mn, x.min(axis=1))


def test_reduction_axis_tuple_with_one_element():
    k = kernel("kernel k(x: f64[M, N]) -> f64[M] { return mean(x, axis=(N,)) }")
    x = ramp(2, 4, dtype=F64)
    np.testing.assert_array_equal(k.reference(x), x.mean(axis=1))


def test_reduction_of_a_broadcast_value():
    k = kernel("kernel k(a: f64[M], b: f64[N]) -> f64[N] { return sum(a * b, axis=M) }")
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, -1.0])
    np.testing.assert_array_equal(k.reference(a, b), b * a.sum())


def test_reduction_dims_named_twice():
    with pytest.raises(TdslShapeError, match="dim N is named twice"):
        kernel("kernel k(x: f32[M, N]) -> f32[M] { return sum(x, axis=(N, N)) }")


def test_reductions_accumulate_f16_in_f32():
    k = kernel("kernel k(x: f16[N]) -> f16 { return sum(x) }")
    red = next(v for v in k.graph.values if v.op == "reduce")
    assert red.dtype == dt.f32 and red.operands[0].dtype == dt.f32
    x = np.full(4096, 1.0, F16)       # in f16 the running sum would stick at 2048
    assert float(k.reference(x)) == 4096.0


def test_integer_reductions():
    src = """kernel k(x: i32[N]) -> (i64, f32, i32, i32) {
        return sum(x), mean(x), max(x), min(x)
    }"""
    k = kernel(src)
    x = np.array([2_000_000_000, 2_000_000_000, -7], np.int32)
    s, mean, mx, mn = k.reference(x)
    assert s.dtype == np.int64 and int(s) == 3_999_999_993       # no i32 overflow
    assert mean.dtype == np.float32 and float(mean) == pytest.approx(3_999_999_993 / 3, rel=1e-6)
    assert (int(mx), int(mn)) == (2_000_000_000, -7)


# ---- weak literals and dtypes ---------------------------------------------------------
def test_f16_plus_literal_computes_in_f32():
    k = kernel("kernel k(x: f16[N]) -> f32[N] { return x + 1 }")
    add = computed(k)
    assert add.op == "add" and add.dtype == dt.f32
    const = next(o for o in add.operands if o.op == "const")
    assert const.dtype == dt.f32
    assert any(v.op == "cast" and v.dtype == dt.f32 and v.operands[0].op == "param"
               for v in k.graph.values)
    x = np.array([2048.0, 0.1], F16)            # 2048 + 1 is not representable in f16
    np.testing.assert_array_equal(k.reference(x), x.astype(F32) + F32(1))


def test_f64_times_one_third_is_exact_f64():
    k = kernel("kernel k(x: f64[N]) -> f64[N] { return x * (1 / 3) }")
    div = next(v for v in k.graph.values if v.op == "div")
    assert div.dtype == dt.f64 and all(o.dtype == dt.f64 for o in div.operands)
    x = np.array([3.0, 1.0, 7.0])
    assert np.array_equal(k.reference(x), x * (1.0 / 3.0))
    assert not np.array_equal(x * np.float64(np.float32(1) / np.float32(3)), x * (1.0 / 3.0))


def test_f32_times_one_third_is_f32():
    k = kernel("kernel k(x: f32[N]) -> f32[N] { return x * (1 / 3) }")
    assert {v.dtype for v in k.graph.values if v.op != "param"} == {dt.f32}
    x = np.array([3.0, 1.0, 7.0], F32)
    np.testing.assert_array_equal(k.reference(x), x * (F32(1) / F32(3)))


@pytest.mark.parametrize("src_type,expr,result", [
    ("i32", "x + 1", dt.i32),
    ("i8", "x * 2", dt.i8),
    ("i32", "x + 1.5", dt.f32),
    ("i32", "x / 2", dt.f32),
    ("i64", "x ** 2", dt.f32),
    ("f64", "x + 1", dt.f64),
    ("bf16", "x * 0.5", dt.f32),
    ("u8", "x + 1", dt.u8),
    ("i32", "maximum(x, 3)", dt.i32),
    ("i32", "abs(x)", dt.i32),
    ("i32", "exp(x)", dt.f32),
    ("f16", "-x", dt.f32),
])
def test_literals_never_widen(src_type, expr, result):
    k = kernel(f"kernel k(x: {src_type}[N]) -> f64[N] {{ return {expr} }}")
    assert computed(k).dtype == result


@pytest.mark.parametrize("a,b,result", [
    ("f16", "f32", dt.f32), ("f16", "bf16", dt.f32), ("f32", "f64", dt.f64),
    ("i32", "i64", dt.i64), ("u8", "i8", dt.i16), ("u32", "i32", dt.i64), ("i32", "f16", dt.f32),
])
def test_promotion_of_two_tensors(a, b, result):
    k = kernel(f"kernel k(x: {a}[N], y: {b}[N]) -> f64[N] {{ return x + y }}")
    add = computed(k)
    assert add.dtype == result and all(o.dtype == result for o in add.operands)


def test_mixed_int_promotion_numerics():
    k = kernel("kernel k(x: u8[N], y: i8[N]) -> i16[N] { return x + y }")
    x, y = np.array([250, 0], np.uint8), np.array([100, -128], np.int8)
    out = k.reference(x, y)
    assert out.dtype == np.int16
    np.testing.assert_array_equal(out, [350, -128])


def test_integer_arithmetic_wraps_in_its_type():
    k = kernel("kernel k(x: i32[N]) -> i32[N] { return x * 2 }")
    out = k.reference(np.array([2 ** 30, 3], np.int32))
    np.testing.assert_array_equal(out, np.array([2 ** 30, 3], np.int32) * np.int32(2))


def test_literal_that_does_not_fit_its_type():
    with pytest.raises(TdslTypeError, match="does not fit in i8"):
        kernel("kernel k(x: i8[N]) -> i8[N] { return x + 300 }")
    with pytest.raises(TdslTypeError, match="too large for f16"):
        kernel("kernel k(x: f32[N], h: f16 = 70000) -> f32[N] { return x * h }")
    with pytest.raises(TdslTypeError, match="not an integer"):
        kernel("kernel k(x: f32[N], n: i32 = 1.5) -> f32[N] { return x * n }")


def test_f16_default_at_the_limit_is_fine():
    k = kernel("kernel k(x: f32[N], h: f16 = 65504) -> f32[N] { return x * h }")
    np.testing.assert_array_equal(k.reference(np.ones(2, F32)), [65504.0, 65504.0])


def test_integer_division_is_true_division():
    k = kernel("kernel k(x: i32[N], y: i32[N]) -> f32[N] { return x / y }")
    np.testing.assert_allclose(k.reference(np.array([7, -7], np.int32), np.array([2, 2], np.int32)),
                               [3.5, -3.5])


# ---- results: implicit casts and permuted stores -------------------------------------
def test_implicit_result_cast_f32_to_f16(rng):
    k = kernel("kernel k(x: f32[N]) -> f16[N] { return x * 3 }")
    assert k.graph.outputs[0].op == "cast" and k.graph.outputs[0].dtype == dt.f16
    x = rng.standard_normal(100).astype(F32)
    out = k.reference(x)
    assert out.dtype == F16
    np.testing.assert_array_equal(out, (x * F32(3)).astype(F16))


def test_implicit_result_widening():
    k = kernel("kernel k(x: i32[N], b: bool[N]) -> (f64[N], i64[N]) { return x, b }")
    y, z = k.reference(np.array([1, -2], np.int32), np.array([True, False]))
    assert y.dtype == F64 and z.dtype == np.int64
    np.testing.assert_array_equal(y, [1.0, -2.0])
    np.testing.assert_array_equal(z, [1, 0])


def test_float_to_int_needs_an_explicit_cast():
    with pytest.raises(TdslTypeError, match=r"convert explicitly with i32\(...\)"):
        kernel("kernel k(x: f32[N]) -> i32[N] { return x }")
    k = kernel("kernel k(x: f32[N]) -> i32[N] { return i32(x) }")
    np.testing.assert_array_equal(k.reference(np.array([2.7, -2.7], F32)), [2, -2])


def test_transposed_store(rng):
    k = kernel("kernel k(x: f32[M, N]) -> f32[N, M] { return x * 2 }")
    assert k.graph.outputs[0].op == "permute" and k.graph.outputs[0].dims == ("N", "M")
    x = rng.standard_normal((3, 5)).astype(F32)
    out = k.reference(x)
    assert out.shape == (5, 3)
    np.testing.assert_array_equal(out, (x * 2).T)


def test_permuted_store_of_three_dims(rng):
    k = kernel("kernel k(x: f64[A, B, C]) -> f64[C, A, B] { return x }")
    x = rng.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(k.reference(x), np.transpose(x, (2, 0, 1)))


def test_scalar_result():
    k = kernel("kernel k(x: f32[N]) -> f32 { return sum(x) * 0.5 }")
    out = k.reference(np.array([1.0, 2.0, 3.0], F32))
    assert np.asarray(out).shape == () and float(out) == 3.0


def test_literal_result_materializes_in_the_result_type():
    k = kernel("kernel k(x: f32[N]) -> (f32[N], f64) { return x, 1 / 3 }")
    _, third = k.reference(np.zeros(1, F32))
    assert third.dtype == F64 and float(third) == 1 / 3


# ---- idx, where, masks ----------------------------------------------------------------
def test_causal_mask_with_idx_and_where(rng):
    k = kernel("kernel k(x: f64[M, N]) -> f64[M, N] { return where(idx(N) <= idx(M), x, -inf) }")
    x = rng.standard_normal((4, 6))
    expected = np.where(np.arange(6)[None, :] <= np.arange(4)[:, None], x, -np.inf)
    np.testing.assert_array_equal(k.reference(x), expected)
    idx = [v for v in k.graph.values if v.op == "idx"]
    assert {v.attr("dim") for v in idx} == {"M", "N"} and all(v.dtype == dt.i64 for v in idx)


def test_idx_arithmetic():
    k = kernel("kernel k(x: f32[N]) -> f32[N] { return x + f32(idx(N)) * 2 }")
    np.testing.assert_array_equal(k.reference(np.zeros(4, F32)), [0.0, 2.0, 4.0, 6.0])
    k = kernel("kernel k(x: f32[N]) -> i64[N] { return idx(N) * 3 + 1 }")
    np.testing.assert_array_equal(k.reference(np.zeros(3, F32)), [1, 4, 7])


def test_where_broadcasts_and_promotes():
    k = kernel("kernel k(c: bool[M], a: f16[N], b: f64) -> f64[M, N] { return where(c, a, b) }")
    c, a = np.array([True, False]), np.array([1.5, 2.5, 3.5], F16)
    out = k.reference(c, a, 9.0)
    np.testing.assert_array_equal(out, np.where(c[:, None], a[None, :].astype(F64), 9.0))
    assert computed(k).dtype == dt.f64


# ---- bool ops -------------------------------------------------------------------------
def test_logical_ops():
    src = """kernel k(x: f32[N], y: f32[N]) -> (bool[N], bool[N], bool[N], bool[N]) {
        return logical_and(x > 0, y > 0), logical_or(x > 0, y > 0), logical_not(x > 0),
               (x > 0) == (y > 0)
    }"""
    x, y = np.array([1, 1, -1, -1], F32), np.array([1, -1, 1, -1], F32)
    a, o, n, e = kernel(src).reference(x, y)
    np.testing.assert_array_equal(a, [True, False, False, False])
    np.testing.assert_array_equal(o, [True, True, True, False])
    np.testing.assert_array_equal(n, [False, False, True, True])
    np.testing.assert_array_equal(e, [True, False, False, True])


def test_bool_params_and_literals():
    k = kernel("kernel k(m: bool[N], x: f32[N], flip: bool = false) -> f32[N] {"
               " return where(m != flip, x, 0) }")
    m, x = np.array([True, False]), np.array([5.0, 7.0], F32)
    np.testing.assert_array_equal(k.reference(m, x), [5.0, 0.0])
    np.testing.assert_array_equal(k.reference(m, x, flip=True), [0.0, 7.0])
    with pytest.raises(TdslTypeError, match="pass True or False"):
        k.reference(m, x, 1)


def test_bool_cannot_be_ordered_or_added():
    with pytest.raises(TdslTypeError, match="'<' does not take bool operands"):
        kernel("kernel k(x: f32[N]) -> bool[N] { return (x > 0) < (x > 1) }")
    with pytest.raises(TdslTypeError, match="logical_and"):
        kernel("kernel k(x: f32[N]) -> f32[N] { return -(x > 0) }")
    with pytest.raises(TdslTypeError, match="bool"):
        kernel("kernel k(x: f32[N]) -> f32 { return sum(x) + max(x > 0) }")
    with pytest.raises(TdslTypeError, match="bool values"):
        kernel("kernel k(x: f32[N]) -> bool[N] { return logical_and(x, x > 0) }")


def test_bool_compared_with_integer_literal():
    try:                   # rejecting it is a fine fix too
        k = kernel("kernel k(b: bool[N]) -> bool[N] { return b == 2 }")
    except TdslTypeError:
        return
    b = np.array([True, False])
    np.testing.assert_array_equal(k.reference(b), b == 2)


# ---- casts ----------------------------------------------------------------------------
def test_casts_round_through_the_target_type(rng):
    src = """kernel k(x: f32[N]) -> (f32[N], f32[N], i32[N], bool[N], f64[N]) {
        return f32(f16(x)), f32(bf16(x)), i32(x), bool(x), f64(x)
    }"""
    x = np.array([1.0001, -2.5, 0.0, 65519.0, 3.999], F32)
    h, b, i, t, d = kernel(src).reference(x)
    np.testing.assert_array_equal(h, x.astype(F16).astype(F32))
    np.testing.assert_array_equal(b, x.astype(ml_dtypes.bfloat16).astype(F32))
    np.testing.assert_array_equal(i, [1, -2, 0, 65519, 3])
    np.testing.assert_array_equal(t, [True, True, False, True, True])
    assert d.dtype == F64
    assert not np.array_equal(h, x)     # the f16 round trip really rounded


def test_cast_of_a_literal():
    k = kernel("kernel k(x: f32[N]) -> (f16, i32, bool) { return f16(1 / 3), i32(7), bool(0) }")
    h, i, b = k.reference(np.zeros(1, F32))
    assert h.dtype == F16 and h == F16(1 / 3)
    assert i.dtype == np.int32 and int(i) == 7
    assert b.dtype == np.bool_ and not bool(b)


# ---- unary math in f64 against the textbook formulas ------------------------------------
_erf = np.vectorize(math.erf, otypes=[F64])
_erfc = np.vectorize(math.erfc, otypes=[F64])     # gelu as erfc(-z): 1 + erf(z) cancels below zero
UNARY = {
    "exp": np.exp, "exp2": lambda x: 2.0 ** x, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "abs": np.abs, "sin": np.sin, "cos": np.cos,
    "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "relu": lambda x: np.where(x > 0, x, 0.0),
    "gelu": lambda x: 0.5 * x * _erfc(-x / math.sqrt(2)),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "silu": lambda x: x / (1 + np.exp(-x)), "erf": _erf, "floor": np.floor, "ceil": np.ceil,
}


@pytest.mark.parametrize("func", sorted(UNARY))
def test_unary_function_in_f64(func, rng):
    k = kernel(f"kernel k(x: f64[N]) -> f64[N] {{ return {func}(x) }}")
    x = rng.uniform(0.1, 3.0, 50) if func in ("log", "log2", "sqrt", "rsqrt") \
        else rng.uniform(-4.0, 4.0, 50)
    np.testing.assert_allclose(k.reference(x), UNARY[func](x), rtol=1e-13, atol=1e-15)


def test_gelu_is_the_exact_erf_form_not_tanh():
    k = kernel("kernel k(x: f64[N]) -> f64[N] { return gelu(x) - gelu_tanh(x) }")
    x = np.array([-2.0, -1.0, 1.0, 2.0])
    diff = k.reference(x)
    expected = UNARY["gelu"](x) - UNARY["gelu_tanh"](x)
    np.testing.assert_allclose(diff, expected, rtol=1e-9, atol=1e-15)
    assert np.all(np.abs(diff) > 1e-5)


def test_unary_on_a_scalar_parameter():
    k = kernel("kernel k(x: f64[N], s: f64) -> f64[N] { return x + exp(s) + sigmoid(s) + tanh(s) }")
    out = k.reference(np.zeros(2), 0.5)
    np.testing.assert_allclose(out, math.exp(0.5) + 1 / (1 + math.exp(-0.5)) + math.tanh(0.5),
                               rtol=1e-14)


def test_gelu_on_a_scalar():
    k = kernel("kernel k(x: f64[N], s: f64) -> f64[N] { return x + gelu(s) }")
    expected = 0.5 * 0.7 * (1 + math.erf(0.7 / math.sqrt(2)))
    np.testing.assert_allclose(k.reference(np.zeros(2), 0.7), [expected] * 2, rtol=1e-14)


def test_gelu_on_a_scalar_without_scipy(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy", None)          # `import scipy...` -> ImportError
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    k = kernel("kernel k(x: f64[N], s: f64) -> f64[N] { return x + gelu(s) }")
    expected = 0.5 * 0.7 * (1 + math.erf(0.7 / math.sqrt(2)))
    np.testing.assert_allclose(k.reference(np.zeros(2), 0.7), [expected] * 2, rtol=1e-14)


def test_gelu_on_tensors_without_scipy(monkeypatch, rng):
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    k = tiledsl.compile(EXAMPLES / "gelu_bias.tdsl")
    x = rng.standard_normal((2, 3, 5)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal(5).astype(ml_dtypes.bfloat16)
    v = x.astype(F64) + b.astype(F64)
    expected = 0.5 * v * _erfc(-v / math.sqrt(2))
    out = k.reference(x, b, compute="f64")
    np.testing.assert_allclose(np.asarray(out, F64), expected.astype(ml_dtypes.bfloat16).astype(F64),
                               rtol=1e-2, atol=1e-2)


def test_maximum_minimum_and_power(rng):
    k = kernel("""kernel k(a: f64[N], b: f64[N]) -> (f64[N], f64[N], f64[N]) {
        return maximum(a, b), minimum(a, 0), abs(a) ** b
    }""")
    a, b = rng.standard_normal(20), rng.standard_normal(20)
    mx, mn, pw = k.reference(a, b)
    np.testing.assert_array_equal(mx, np.maximum(a, b))
    np.testing.assert_array_equal(mn, np.minimum(a, 0))
    np.testing.assert_allclose(pw, np.abs(a) ** b, rtol=1e-14)


def test_constants():
    k = kernel("kernel k(x: f64[N]) -> f64[N] { return x * pi + where(x > 0, inf, -inf) }")
    out = k.reference(np.array([1.0, -1.0]))
    np.testing.assert_array_equal(out, [np.inf, -np.inf])
    k = kernel("kernel k(x: f64[N]) -> f64[N] { return x * pi }")
    assert k.reference(np.array([2.0]))[0] == 2 * math.pi
    k = kernel("kernel k(x: f64[N]) -> f64[N] { return x + nan }")
    assert np.isnan(k.reference(np.array([2.0]))[0])


# ---- matmul ---------------------------------------------------------------------------
def test_matmul_variants(rng):
    src = """kernel k(a: f64[B, M, K], w: f64[K, N], v: f64[K], u: f64[M]) ->
             (f64[B, M, N], f64[B, M], f64[N], f64[B, K]) {
        return a @ w, a @ v, v @ w, u @ a
    }"""
    a, w = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))
    v, u = rng.standard_normal(4), rng.standard_normal(3)
    aw, av, vw, ua = kernel(src).reference(a, w, v, u)
    np.testing.assert_allclose(aw, a @ w, rtol=1e-12)
    np.testing.assert_allclose(av, a @ v, rtol=1e-12)
    np.testing.assert_allclose(vw, v @ w, rtol=1e-12)
    np.testing.assert_allclose(ua, np.einsum("m,bmk->bk", u, a), rtol=1e-12)


def test_matmul_contracts_by_name_when_one_dim_is_shared(rng):
    k = kernel("kernel k(x: f64[M, K], w: f64[N, K]) -> f64[M, N] { return x @ w }")
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    np.testing.assert_allclose(k.reference(x, w), x @ w.T, rtol=1e-12)


def test_matmul_f16_accumulates_in_f32():
    k = kernel("kernel k(a: f16[M, K], b: f16[K, N]) -> f32[M, N] { return a @ b }")
    mm = next(v for v in k.graph.values if v.op == "matmul")
    assert mm.dtype == dt.f32 and mm.operands[0].dtype == dt.f16
    a, b = np.ones((1, 4096), F16), np.ones((4096, 1), F16)
    assert k.reference(a, b)[0, 0] == 4096.0        # an f16 accumulator sticks at 2048


def test_matmul_batch_dims_by_name(rng):
    k = kernel("kernel k(a: f64[B, M, K], b: f64[B, K, N]) -> f64[M, B, N] { return a @ b }")
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    np.testing.assert_allclose(k.reference(a, b), np.transpose(a @ b, (1, 0, 2)), rtol=1e-12)


def test_matmul_repeated_dim_is_an_error():
    with pytest.raises(TdslShapeError, match="repeated dim"):
        kernel("kernel k(a: f32[M, K], b: f32[K, M]) -> f32[M] { return sum(a @ b, axis=M) }")


# ---- signature, defaults, keywords ----------------------------------------------------
def test_defaults_and_keyword_arguments():
    k = kernel("kernel k(x: f64[N], a: f64 = 2.0, b: i32 = -3, c: bool = true) -> f64[N] "
               "{ return where(c, x * a + f64(b), x) }")
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(k.reference(x), x * 2 - 3)
    np.testing.assert_array_equal(k.reference(x, b=10), x * 2 + 10)
    np.testing.assert_array_equal(k.reference(x, 0.5, c=False), x)
    np.testing.assert_array_equal(k.reference(b=1, x=x, a=1.0), x + 1)
    assert [p.default for p in k.graph.params] == [None, 2.0, -3, True]
    assert k.signature == "k(x: f64[N], a: f64 = 2.0, b: i32 = -3, c: bool = true) -> f64[N]"


def test_literal_dims_are_fixed(rng):
    k = kernel("kernel k(x: f32[3, N]) -> f32[N] { return sum(x, axis=3) }")
    x = rng.standard_normal((3, 5)).astype(F32)
    np.testing.assert_allclose(k.reference(x), x.sum(axis=0), rtol=1e-6)
    with pytest.raises(TdslShapeError, match="dim 3: it is fixed at 3, x has 4"):
        k.reference(rng.standard_normal((4, 5)).astype(F32))


def test_reference_does_not_modify_inputs(rng):
    k = tiledsl.compile(EXAMPLES / "layernorm.tdsl")
    x = rng.standard_normal((3, 5)).astype(F16)
    w, b = rng.standard_normal(5).astype(F32), rng.standard_normal(5).astype(F32)
    copies = [a.copy() for a in (x, w, b)]
    k.reference(x, w, b)
    k.reference(x, w, b, compute="f64")
    for a, c in zip((x, w, b), copies):
        np.testing.assert_array_equal(a, c)


def test_reference_accepts_non_contiguous_views(rng):
    k = kernel("kernel k(x: f64[M, N], b: f64[N]) -> f64[M, N] { return x + b }")
    big = rng.standard_normal((6, 8))
    x, b = big[::2, 1::2], big[0, ::2]
    np.testing.assert_array_equal(k.reference(x, b), x + b)


def test_statements_names_and_keywords_as_prefixes():
    src = """
    # comments anywhere
    kernel k(x: f32[N], true_mask: bool[N],) -> f32[N] {   # trailing comma
        return_value = where(true_mask, x, 0);            # a name starting with a keyword
        kernel_out = return_value * 2
        return kernel_out;
    }
    """
    k = kernel(src)
    np.testing.assert_array_equal(k.reference(np.array([1.0, 2.0], F32), np.array([True, False])),
                                  [2.0, 0.0])


def test_flat_sum_below_the_nesting_limit():
    terms = " + ".join(["x"] * 150)
    k = kernel(f"kernel k(x: f32[N]) -> f32[N] {{ return {terms} }}")
    np.testing.assert_array_equal(k.reference(np.ones(2, F32)), [150.0, 150.0])


def test_assigned_literal_stays_weak():
    k = kernel("kernel k(x: f16[N]) -> f16[N] { c = 1 / 3\n return x * c }")
    assert {v.dtype for v in k.graph.values if v.op in ("const", "div")} == {dt.f32}
    k = kernel("kernel k(x: f64[N]) -> f64[N] { c = 1 / 3\n return x * c }")
    assert {v.dtype for v in k.graph.values if v.op in ("const", "div")} == {dt.f64}


@pytest.mark.parametrize("src,err,text", [
    ("kernel k(x: f32[N], N: f32) -> f32[N] { return x }", TdslNameError, "names both a parameter and a dim"),
    ("kernel k(x: f32[N]) -> f32[N] { N = x\n return N }", TdslNameError, "dim of this kernel"),
    ("kernel k(x: f32[N]) -> f32[N] { x = x * 2\n return x }", TdslNameError, "is a parameter"),
    ("kernel k(x: f32[N]) -> f32[N] { exp = x\n return x }", TdslNameError, "built-in"),
    ("kernel k(x: f32[N]) -> f32[N] { return exp }", TdslNameError, "is a function"),
    ("kernel k(x: f32[N]) -> f32[N] { return exp(x, x) }", TdslSyntaxError, "takes 1 argument"),
    ("kernel k(x: f32[N]) -> f32[N] { return idx(x) }", TdslNameError, "unknown dim 'x'"),
    ("kernel k(x: f32[N]) -> f32 { return sum(x, axis=1.5) }", TdslSyntaxError, "expected a dim name"),
    ("kernel k(x: f32[N], b: bool = 1) -> f32[N] { return x }", TdslTypeError, "true or false"),
    ("kernel k(x: f32[N], b: f32 = true) -> f32[N] { return x }", TdslTypeError, "does not fit"),
    ("kernel k(x: f32[M, N]) -> f32[M, N] { return x @ x }", TdslShapeError, "N vs M"),
])
def test_checker_rejects(src, err, text):
    with pytest.raises(err, match=text):
        kernel(src)


# ---- modules and compile() ------------------------------------------------------------
TWO = """
kernel double(x: f32[N]) -> f32[N] { return x * 2 }
kernel half(x: f32[N]) -> f32[N] { return x / 2 }
"""


def test_module_api():
    mod = tiledsl.compile(TWO)
    assert isinstance(mod, tiledsl.Module)
    assert mod.names == ["double", "half"]
    assert len(mod) == 2 and "half" in mod and "third" not in mod
    assert mod["half"] is mod.half
    assert [k.name for k in mod] == ["double", "half"]
    x = np.array([4.0], F32)
    assert mod.double.reference(x)[0] == 8.0 and mod["half"].reference(x)[0] == 2.0
    with pytest.raises(AttributeError, match="has no kernel 'third'; it has double, half"):
        mod.third
    with pytest.raises(KeyError):
        mod["third"]
    assert "double, half" in repr(mod)


def test_module_from_example():
    mod = tiledsl.compile(EXAMPLES / "attention.tdsl")
    assert mod.names == ["attention", "causal_attention"]
    assert mod.attention.file == str(EXAMPLES / "attention.tdsl")


def test_compile_path_forms(tmp_path):
    p = tmp_path / "one.tdsl"
    p.write_text("kernel one(x: f32[N]) -> f32[N] { return x + 1 }\n")
    for src in (p, str(p)):
        k = tiledsl.compile(src)
        assert isinstance(k, tiledsl.Kernel) and k.name == "one" and k.file == str(p)
    k = tiledsl.compile(p.read_text())
    assert k.file == "<string>"
    k = tiledsl.compile(p.read_text(), file="named.tdsl")
    assert k.file == "named.tdsl"
    with pytest.raises(TdslNameError) as info:
        tiledsl.compile("kernel k(x: f32[N]) -> f32[N] { return y }", file="mine.tdsl")
    assert str(info.value).startswith("mine.tdsl:1:")


def test_compile_errors_for_bad_inputs(tmp_path):
    with pytest.raises(TdslError, match="cannot read"):
        tiledsl.compile(tmp_path / "missing.tdsl")
    with pytest.raises(TdslError, match="cannot read"):
        tiledsl.compile(str(tmp_path / "missing.tdsl"))
    bad = tmp_path / "latin1.tdsl"
    bad.write_bytes(b"# caf\xe9\nkernel k(x: f32[N]) -> f32[N] { return x }\n")
    with pytest.raises(TdslError, match="not UTF-8"):
        tiledsl.compile(bad)
    with pytest.raises(TdslError, match="not int"):
        tiledsl.compile(42)
    with pytest.raises(TdslError, match="no kernel"):
        tiledsl.compile("# nothing here\n")
    # a NUL is never a path (the CPU fuzz, 2026-12-05: a one-line text with a '/' and a NUL was opened
    # as a file and raised ValueError); as text it is a program's error, as a path object a read's
    with pytest.raises(TdslError, match="no kernel"):
        tiledsl.compile("#\x00La5xP4%Z|,AC/)zp#ROyerNorrNor")
    with pytest.raises(TdslError, match="cannot read .*NUL"):
        tiledsl.compile(tmp_path / "a\x00b.tdsl")


def test_kernel_repr_and_ir_text():
    k = tiledsl.compile(EXAMPLES / "linear.tdsl")
    assert repr(k) == "<tiledsl.Kernel linear_relu(x: f16[M, K], w: f16[K, N], b: f32[N]) -> f16[M, N]>"
    assert k.ir is k.graph
    assert k.hints.tile == (("M", 128), ("N", 256), ("K", 64))
    assert (k.hints.stages, k.hints.warps) == (4, 8)
    assert k.hints.tile_of("K") == 64 and k.hints.tile_of("Q") is None
    plain = tiledsl.compile(EXAMPLES / "softmax.tdsl")
    assert plain.hints.tile == () and plain.hints.warps is None


# ---- IR: verifier and passes ----------------------------------------------------------
LOC = Loc("<ir>", 1, 1)


def _param(i, name, dtype, dims):
    return Value(i, "param", (), dtype, dims, (("index", i), ("name", name)), LOC)


def _graph(values, outputs, params, results):
    return Graph("g", tuple(params), tuple(results), tuple(values), tuple(outputs), (), LOC)


def _two_params():
    x = _param(0, "x", dt.f32, ("N",))
    y = _param(1, "y", dt.f64, ("N",))
    params = [ParamInfo("x", 0, dt.f32, ("N",), None, LOC), ParamInfo("y", 1, dt.f64, ("N",), None, LOC)]
    return x, y, params


def test_verifier_accepts_a_valid_graph():
    x, y, params = _two_params()
    cx = Value(2, "cast", (x,), dt.f64, ("N",), (("to", dt.f64),))
    add = Value(3, "add", (cx, y), dt.f64, ("N",))
    g = _graph([x, y, cx, add], [add], params, [ResultInfo(0, dt.f64, ("N",), LOC)])
    assert verify(g) is g
    assert run_passes(g).values[-1].op == "add"


def _broken(kind):
    x, y, params = _two_params()
    res = [ResultInfo(0, dt.f64, ("N",), LOC)]
    cx = Value(2, "cast", (x,), dt.f64, ("N",), (("to", dt.f64),))
    if kind == "mixed dtypes":
        v = Value(2, "add", (x, y), dt.f64, ("N",))
        return _graph([x, y, v], [v], params, res)
    if kind == "use before definition":
        v = Value(2, "add", (cx, y), dt.f64, ("N",))
        return _graph([x, y, v, dataclasses_replace(cx, id=3)], [v], params, res)
    if kind == "f16 arithmetic":
        h = Value(2, "cast", (x,), dt.f16, ("N",), (("to", dt.f16),))
        v = Value(3, "mul", (h, h), dt.f16, ("N",))
        return _graph([x, y, h, v], [v], params, [ResultInfo(0, dt.f16, ("N",), LOC)])
    if kind == "output mismatch":
        return _graph([x, y, cx], [cx], params, [ResultInfo(0, dt.f32, ("N",), LOC)])
    if kind == "unbound dim":
        v = Value(3, "add", (cx, y), dt.f64, ("M",))
        return _graph([x, y, cx, v], [v], params, [ResultInfo(0, dt.f64, ("M",), LOC)])
    if kind == "bad reduce axes":
        v = Value(3, "reduce", (cx,), dt.f64, (), (("axes", ("M",)), ("kind", "sum")))
        return _graph([x, y, cx, v], [v], params, [ResultInfo(0, dt.f64, (), LOC)])
    if kind == "unknown op":
        v = Value(3, "frobnicate", (cx,), dt.f64, ("N",))
        return _graph([x, y, cx, v], [v], params, res)
    if kind == "wrong arity":
        v = Value(3, "add", (cx,), dt.f64, ("N",))
        return _graph([x, y, cx, v], [v], params, res)
    if kind == "duplicate id":
        v = Value(2, "add", (cx, y), dt.f64, ("N",))
        return _graph([x, y, cx, v], [v], params, res)
    raise AssertionError(kind)


def dataclasses_replace(v, **kw):
    import dataclasses
    return dataclasses.replace(v, **kw)


@pytest.mark.parametrize("kind", ["mixed dtypes", "use before definition", "f16 arithmetic",
                                  "output mismatch", "unbound dim", "bad reduce axes", "unknown op",
                                  "wrong arity", "duplicate id"])
def test_verifier_rejects(kind):
    with pytest.raises(IRVerificationError, match="internal error: IR of kernel 'g' is invalid"):
        verify(_broken(kind))
    with pytest.raises(IRVerificationError):
        run_passes(_broken(kind))


def test_cse_merges_duplicate_subexpressions(rng):
    k = kernel("""kernel k(x: f32[M, N]) -> f32[M, N] {
        a = x - mean(x, axis=N)
        b = x - mean(x, axis=N)
        return a * b + exp(x) * exp(x)
    }""")
    names = ops(k)
    assert names.count("sub") == 1 and names.count("reduce") == 1 and names.count("exp") == 1
    assert names.count("mul") == 2
    x = rng.standard_normal((3, 4)).astype(F32)
    xc = x - x.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(k.reference(x), xc * xc + np.exp(x) ** 2, rtol=1e-5)


def test_cse_keeps_different_constants():
    k = kernel("kernel k(x: f32[N]) -> f32[N] { return x * 2 + x * 3 }")
    assert ops(k).count("mul") == 2 and ops(k).count("const") == 2
    np.testing.assert_array_equal(k.reference(np.array([1.0], F32)), [5.0])


def test_cse_pass_on_a_hand_built_graph():
    x, y, params = _two_params()
    c1 = Value(2, "cast", (x,), dt.f64, ("N",), (("to", dt.f64),))
    c2 = Value(3, "cast", (x,), dt.f64, ("N",), (("to", dt.f64),))
    add = Value(4, "add", (c1, c2), dt.f64, ("N",))
    g = _graph([x, y, c1, c2, add], [add], params, [ResultInfo(0, dt.f64, ("N",), LOC)])
    out = verify(eliminate_common_subexpressions(g))
    assert [v.op for v in out.values] == ["param", "param", "cast", "add"]
    add2 = out.values[-1]
    assert add2.operands[0] is add2.operands[1] is out.values[2]
    assert [v.id for v in out.values] == [0, 1, 2, 3]


@pytest.mark.parametrize("dtype", ["f64", "f32", "f16"])
def test_literal_powers_become_products_and_roots(dtype, rng):
    """x ** 2 and x ** 3 (literal exponents) become products, exact where pow on a GPU
    was not, and x ** 0.5 a sqrt, as NumPy's is (-0 stays -0, -inf and negatives give
    NaN); other exponents, and a tensor one, stay powers."""
    k = kernel(f"kernel k(x: {dtype}[N], e: f32[N]) -> (f64[N], f64[N], f64[N], f64[N], f64[N]) "
               "{ return x ** 2, x ** 3, x ** 2.5, x ** e, x ** 0.5 }")
    names = ops(k)
    assert names.count("mul") == 2 and names.count("pow") == 2 and names.count("sqrt") == 1, names
    special = [-0.0, 0.0, -np.inf, np.inf, np.nan, -1.0]
    x = np.concatenate([rng.standard_normal(64) * 4, special]).astype({"f64": F64, "f32": F32,
                                                                        "f16": np.float16}[dtype])
    xw = x.astype(F64 if dtype == "f64" else F32)
    with np.errstate(invalid="ignore"):
        square, cube, _, _, root = k.reference(x, np.full(x.size, 2.0, F32))
        np.testing.assert_array_equal(square, xw * xw)
        np.testing.assert_array_equal(cube, xw * xw * xw)
        np.testing.assert_array_equal(root, np.sqrt(xw))
    assert np.signbit(root[64]) and not np.signbit(root[65])      # sqrt(-0) is -0


def test_dead_values_are_removed_but_params_stay():
    k = kernel("kernel k(x: f32[N], unused: f32[M]) -> f32[N] { y = exp(x)\n return x * 2 }")
    assert "exp" not in ops(k)
    assert [v.attr("name") for v in k.graph.values if v.op == "param"] == ["x", "unused"]
    assert [v.id for v in k.graph.values] == list(range(len(k.graph.values)))


def test_graph_dims_and_users():
    k = tiledsl.compile(EXAMPLES / "mlp.tdsl")
    assert k.graph.dims == ("M", "D", "H", "E")
    users = k.graph.users()
    x = next(v for v in k.graph.values if v.op == "param" and v.attr("name") == "x")
    assert [u.op for u in users[x.id]] == ["matmul"]


# ---- bf16 scalars ---------------------------------------------------------------------
def test_bf16_scalar_default():
    k = kernel("kernel k(x: f32[N], s: bf16 = 0.5) -> f32[N] { return x * s }")
    np.testing.assert_array_equal(k.reference(np.array([2.0, 4.0], F32)), [1.0, 2.0])


def test_bf16_scalar_argument():
    k = kernel("kernel k(x: f32[N], s: bf16) -> f32[N] { return x * s }")
    np.testing.assert_array_equal(k.reference(np.array([2.0, 4.0], F32), 0.5), [1.0, 2.0])


def test_bf16_literal_overflow_is_a_tdsl_error_or_fits():
    """Whatever the fix, a too-large bf16 default must be a TdslError, never a crash."""
    with pytest.raises(TdslError, match="too large for bf16"):
        kernel("kernel k(x: f32[N], s: bf16 = 1e39) -> f32[N] { return x * s }")


# ---- literal-only results -------------------------------------------------------------
@pytest.mark.parametrize("expr", ["1 / 2", "2.7", "exp(1)"])
def test_weak_float_result_into_int(expr):
    with pytest.raises(TdslTypeError, match="convert explicitly"):
        kernel(f"kernel k(x: f32[N]) -> i32 {{ return {expr} }}")


@pytest.mark.parametrize("expr", ["-1", "sigmoid(2)", "1 - 2"])
def test_weak_float_result_into_bool(expr):
    try:
        k = kernel(f"kernel k(x: f32[N]) -> bool {{ return {expr} }}")
    except TdslError:
        return
    out = k.reference(np.ones(1, F32))
    assert out.dtype == np.bool_ and bool(out) is True     # any nonzero number is true


def test_int_literal_result_is_fine():
    k = kernel("kernel k(x: f32[N]) -> (i32, i64, f16) { return 7, -3 * 4, 1 / 4 }")
    a, b, c = k.reference(np.ones(1, F32))
    assert (int(a), int(b), float(c)) == (7, -12, 0.25)
    assert (a.dtype, b.dtype, c.dtype) == (np.int32, np.int64, F16)


# ---- calls: keywords and arity --------------------------------------------------------
def test_repeated_axis_keyword_is_an_error():
    with pytest.raises(TdslError):
        kernel("kernel k(x: f32[M, N]) -> f32[N] { return sum(x, axis=N, axis=M) }")


def test_reduction_without_a_value_says_so():
    with pytest.raises(TdslSyntaxError, match=r"sum\(\) needs the value to reduce"):
        kernel("kernel k(x: f32[N]) -> f32 { return sum(axis=N) }")


def test_utf8_bom_is_accepted(tmp_path):
    p = tmp_path / "bom.tdsl"
    p.write_bytes(b"\xef\xbb\xbfkernel k(x: f32[N]) -> f32[N] { return x }\n")
    assert tiledsl.compile(p).name == "k"


def test_crlf_line_endings(tmp_path):
    p = tmp_path / "crlf.tdsl"
    p.write_bytes(b"kernel k(x: f32[N]) -> f32[N] {\r\n    return xx\r\n}\r\n")
    with pytest.raises(TdslNameError) as info:
        tiledsl.compile(p)
    lines = str(info.value).split("\n")
    assert lines[0].endswith(":2:12: error: unknown name 'xx'; did you mean 'x'?")
    assert lines[1] == "        return xx"
    assert lines[2] == "               ^~"
    p.write_bytes(b"kernel k(x: f32[N]) -> f32[N] {\r\n    return x * 2\r\n}\r\n")
    np.testing.assert_array_equal(tiledsl.compile(p).reference(np.ones(2, F32)), [2.0, 2.0])
