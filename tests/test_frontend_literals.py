"""Literals at the edges: huge and run-together numbers, exact integer folding,
float overflow, out-of-range comparisons, defaults, keywords and parameter order.

Every bad input must give a located TdslError of the right kind; semantics are
checked against plain NumPy.
"""
from __future__ import annotations

import numpy as np
import pytest

import tiledsl
from tiledsl.errors import TdslError, TdslNameError, TdslShapeError, TdslSyntaxError, TdslTypeError

F32, F64 = np.float32, np.float64
HUGE = "1" * 5000          # past Python's 4300-digit int() limit


def kernel(src: str) -> tiledsl.Kernel:
    k = tiledsl.compile(src, file="t.tdsl")
    assert isinstance(k, tiledsl.Kernel)
    return k


def located_error(src: str, kind: type, line: int, col: int, *words: str) -> TdslError:
    """The error `src` raises: of exactly `kind`, at line:col, its message holding `words`."""
    with pytest.raises(TdslError) as info:
        tiledsl.compile(src, file="t.tdsl")
    err = info.value
    assert type(err) is kind, f"{type(err).__name__}: {err}"
    assert str(err).startswith(f"t.tdsl:{line}:{col}: error: "), str(err)
    assert "^" in str(err)   # the line is quoted with a caret
    for word in words:
        assert word in err.message, (word, err.message)
    return err


# ---- A2: integer literals past Python's int-string limit ------------------------------
@pytest.mark.parametrize("src,col", [
    (f"kernel k(x: f32[N]) -> f32[N] {{\n    return x * {HUGE} }}", 16),
    (f"kernel k(x: f32[N]) -> f32[N] {{\n    return x * -{HUGE} }}", 17),
    (f"kernel k(x: f32[N],\n s: f32 = {HUGE}) -> f32[N] {{ return x }}", 11),
    (f"kernel k(x: f32[N],\n y: f32[{HUGE}]) -> f32[N] {{ return x }}", 9),
    (f"kernel k(x: f32[N]) -> f32 {{\n return sum(x, axis={HUGE}) }}", 21),
    (f"kernel k(x: f32[N]) -> f32[N] {{ return x }}\nschedule k {{ warps({HUGE}) }}", 20),
])
def test_huge_integer_literal_is_a_located_error(src, col):
    located_error(src, TdslSyntaxError, 2, col, "integer literal too large", "5000 digits")


def test_integer_literal_of_many_leading_zeros_is_fine():
    k = kernel("kernel k(x: i32[N]) -> i32[N] { return x + " + "0" * 5000 + "7 }")
    np.testing.assert_array_equal(k.reference(np.array([1, 2], np.int32)), [8, 9])


# ---- A6: literal-only integer expressions are exact -----------------------------------
@pytest.mark.parametrize("src,col,value", [
    ("kernel k(x: i32[N]) -> i32[N] {\n    return x * (65536 * 65536) }", 17, "4294967296"),
    ("kernel k(x: f32[N]) -> i32 {\n    return 2147483647 + 1 }", 12, "2147483648"),
    ("kernel k(x: i8[N]) -> i8[N] {\n    c = 100 * 2\n    return x + c }", 9, "200"),   # where c is
    ("kernel k(x: i32[N]) -> i32[N] {\n    return x + abs(-2147483648) }", 16, "2147483648"),
])
def test_literal_expression_that_does_not_fit_is_an_error(src, col, value):
    located_error(src, TdslTypeError, 2, col, "literal-only expression", f"(= {value})", "does not fit")


def test_literal_expression_past_every_type():
    big = "1" + "0" * 300
    located_error(f"kernel k(x: f64[N]) -> f64[N] {{\n    return x * ({big} * {big}) }}",
                  TdslTypeError, 2, 17, "too large for any type")


def test_minimum_integers_can_be_written(rng):
    x = rng.integers(-1000, 1000, 5).astype(np.int32)
    k = kernel("kernel k(x: i32[N]) -> (i32[N], i32[N]) { return x + -2147483648, i32(-2147483648) + x }")
    for out in k.reference(x):
        np.testing.assert_array_equal(out, x + np.int32(-2 ** 31))
    k = kernel("kernel k(x: i64[N]) -> i64[N] { return x + -9223372036854775808 }")
    x64 = x.astype(np.int64)
    np.testing.assert_array_equal(k.reference(x64), x64 + np.int64(-2 ** 63))


def test_integer_literal_expression_is_folded_exactly(rng):
    # In f32 step by step, 16777217 rounds to 16777216 and adding 1 rounds back.
    x = rng.integers(-100, 100, 7).astype(F32)
    k = kernel("kernel k(x: f32[N]) -> f32[N] { return x + (16777217 + 1) }")
    assert [v.op for v in k.graph.values].count("const") == 1
    np.testing.assert_array_equal(k.reference(x), x + F32(16777218))
    # intermediate values past i32 are fine when the result fits
    k = kernel("kernel k(x: i32[N]) -> i32[N] { c = 65536 * 65536\n return x + (c - 4294967295) }")
    xi = x.astype(np.int32)
    np.testing.assert_array_equal(k.reference(xi), xi + 1)
    k = kernel("kernel k(x: i64[N]) -> (i64, i64[N]) { return 2147483647 + 1, x * maximum(-3, relu(-5)) }")
    scalar, scaled = k.reference(x.astype(np.int64))
    assert int(scalar) == 2 ** 31
    np.testing.assert_array_equal(scaled, x.astype(np.int64) * 0)


def test_long_chains_of_assigned_literals_are_built_once():
    """Each variable doubles the last: walking the tree again for every use would take 2**40 steps."""
    body = "a0 = 1\n" + "".join(f"a{i} = a{i - 1} + a{i - 1}\n" for i in range(1, 41))
    k = kernel(f"kernel k(x: i64[N]) -> i64[N] {{ {body} return x + a40 }}")
    np.testing.assert_array_equal(k.reference(np.array([1], np.int64)), [2 ** 40 + 1])
    body = "a0 = 0.5\n" + "".join(f"a{i} = a{i - 1} + a{i - 1}\n" for i in range(1, 41))
    k = kernel(f"kernel k(x: f64[N]) -> f64[N] {{ {body} return x + a40 }}")
    np.testing.assert_array_equal(k.reference(np.array([1], F64)), [2.0 ** 39 + 1])


# ---- A7: float literals that overflow -------------------------------------------------
@pytest.mark.parametrize("src,col,text", [
    ("kernel k(x: f32[N]) -> f32[N] {\n    return x + 1e400 }", 16, "literal 1e400 is too large for f32"),
    ("kernel k(x: f64[N]) -> f64[N] {\n    return x + 1e309 }", 16, "literal 1e309 is too large for f64"),
    ("kernel k(x: f32[N],\n s: f32 = 1e400) -> f32[N] { return x }", 11, "default 1e400 is too large for f32"),
    ("kernel k(x: f32[N],\n s: f64 = -" + "9" * 5000 + ".0) -> f32[N] { return x }", 11,
     "is too large for f64"),
])
def test_float_literal_too_large_for_every_type(src, col, text):
    err = located_error(src, TdslTypeError, 2, col, text, "write inf for infinity")
    assert len(err.message) < 200   # a 5000-digit number is shortened


def test_too_large_for_f32_but_not_for_f64():
    located_error("kernel k(x: f32[N]) -> f32[N] {\n    return x * 1e39 }", TdslTypeError, 2, 16,
                  "literal 1e39 is too large for f32")
    k = kernel("kernel k(x: f64[N]) -> f64[N] { return x * 1e39 }")
    assert k.reference(np.ones(1, F64))[0] == 1e39


# ---- B4: numbers run into names -------------------------------------------------------
@pytest.mark.parametrize("text,col,number,rest", [
    ("x + 1_000", 17, "1", "name '_000'"),
    ("x + 0x10", 17, "0", "name 'x10'"),
    ("x + 1f", 17, "1", "name 'f'"),
    ("x * 2.5f", 19, "2.5", "name 'f'"),
    ("x + 1e", 17, "1", "name 'e'"),
    ("1.T", 14, "1.", "name 'T'"),
    ("x + 12abc", 18, "12", "name 'abc'"),
])
def test_number_run_into_a_name(text, col, number, rest):
    src = f"kernel k(x: f32[N]) -> f32[N] {{\n    return {text}\n}}"
    located_error(src, TdslSyntaxError, 2, col, f"unexpected {rest} right after the number '{number}'")


def test_run_together_tokens_elsewhere():
    located_error("kernel k(x: f32[N, 3x]) -> f32[N] { return x }", TdslSyntaxError, 1, 21,
                  "name 'x' right after the number '3'")
    located_error("kernel k(x: f32[N]) -> f32[N] { return x }\nschedule k { warps(4_0) }",
                  TdslSyntaxError, 2, 21, "name '_0' right after the number '4'")
    located_error("kernel k(x: f32[N]) -> f32[N] {\n    return x + 1e+ }", TdslSyntaxError, 2, 17,
                  "an exponent needs digits")


def test_numbers_next_to_operators_still_parse():
    k = kernel("kernel k(x: f32[N]) -> f32[N] { return x*2+1.5e1-.5+1.-2e-1 }")
    np.testing.assert_allclose(k.reference(np.ones(2, F32)), [2 + 15 - 0.5 + 1 - 0.2] * 2, rtol=1e-6)


# ---- B6: true and false are keywords --------------------------------------------------
@pytest.mark.parametrize("src,line,col,what", [
    ("kernel k(x: f32[N],\n true: f32[N]) -> f32[N] { return x }", 2, 2, "parameter"),
    ("kernel k(x: f32[N]) -> f32[N] {\n    false = x\n    return x }", 2, 5, "value"),
    ("kernel k(x: f32[N,\n true]) -> f32[N] { return x }", 2, 2, "dim"),
])
def test_true_and_false_cannot_be_names(src, line, col, what):
    located_error(src, TdslNameError, line, col, "is a keyword", f"cannot name a {what}")


# ---- B7: defaults inf, -inf, nan, pi --------------------------------------------------
def test_constant_defaults(rng):
    k = kernel("kernel k(x: f32[N], m: bool[N], fill: f32 = -inf, s: f64 = pi, q: f32 = +nan)"
               " -> (f32[N], f64[N], f32[N]) { return where(m, x, fill), x * s, x + q }")
    x = rng.standard_normal(9).astype(F32)
    m = rng.random(9) < 0.5
    masked, scaled, nans = k.reference(x, m)
    np.testing.assert_array_equal(masked, np.where(m, x, F32(-np.inf)))
    np.testing.assert_allclose(scaled, x.astype(F64) * np.pi, rtol=1e-15)
    assert np.isnan(nans).all()
    np.testing.assert_array_equal(k.reference(x, m, fill=0.0)[0], np.where(m, x, F32(0)))


@pytest.mark.parametrize("src,kind,col,words", [
    ("kernel k(x: f32[N],\n n: i32 = -inf) -> f32[N] { return x }", TdslTypeError, 11,
     ("default -inf is not an integer", "'n' is i32")),
    ("kernel k(x: f32[N],\n n: i64 = pi) -> f32[N] { return x }", TdslTypeError, 11,
     ("default pi is not an integer",)),
    ("kernel k(x: f32[N],\n b: bool = nan) -> f32[N] { return x }", TdslTypeError, 12,
     ("true or false",)),
    ("kernel k(x: f32[N],\n s: f32 = Inf) -> f32[N] { return x }", TdslNameError, 11,
     ("unknown default 'Inf'", "did you mean 'inf'")),
])
def test_bad_constant_defaults(src, kind, col, words):
    located_error(src, kind, 2, col, *words)


def test_default_expected_wording():
    err = located_error("kernel k(x: f32[N],\n s: f32 = ) -> f32[N] { return x }", TdslSyntaxError, 2, 11,
                        "expected")
    assert err.message.count("a number") == 1 and "an integer" not in err.message


# ---- B8: literal dims cannot repeat ---------------------------------------------------
def test_repeated_literal_dim_says_how_to_write_it():
    located_error("kernel k(p: f32[N, 3],\n r: f32[3, 3]) -> f32[N, 3] { return p @ r }", TdslShapeError,
                  2, 12, "dim 3 appears twice", "a literal dim is named by its value", "[R, C]")


# ---- C5: a program without kernels ----------------------------------------------------
@pytest.mark.parametrize("src", ["", "# only a comment\n", "\n\n"])
def test_no_kernel_is_located(src):
    located_error(src, TdslSyntaxError, 1, 1, "no kernel in the program")


# ---- C8: flat chains of literals ------------------------------------------------------
def test_flat_chains_of_literals_compile_like_chains_of_names():
    ones = " + ".join(["1"] * 199)
    names = " + ".join(["x"] * 199)
    for src in (f"x + {ones}", f"{ones} + x", f"x + {names}"):
        k = kernel(f"kernel k(x: i32[N]) -> i32[N] {{ return {src} }}")
        np.testing.assert_array_equal(k.reference(np.array([1], np.int32)), [200])


# ---- C9: comparisons with out-of-range integer literals -------------------------------
def test_comparison_with_an_out_of_range_literal_is_exact(rng):
    k = kernel("kernel k(w: i8[N], u: u32[N]) -> (bool[N], bool[N], bool[N], bool[N]) "
               "{ return w < 200, u == -1, w >= -129, 100 * 3 > w }")
    w = rng.integers(-128, 128, 11).astype(np.int8)
    u = rng.integers(0, 2 ** 32, 11, dtype=np.int64).astype(np.uint32)
    expected = (w < 200, u == -1, w >= -129, 300 > w)   # NumPy 2 compares with Python ints exactly
    for got, want in zip(k.reference(w, u), expected):
        np.testing.assert_array_equal(got, want)
    k = kernel("kernel k(x: f32[N]) -> (bool, bool) { return 3000000000 > 2147483647 + 1, -1 == 4294967295 }")
    assert [bool(b) for b in k.reference(np.ones(1, F32))] == [True, False]
    located_error("kernel k(x: i64[N]) -> bool[N] {\n    return x < 9223372036854775808 }", TdslTypeError,
                  2, 16, "does not fit in i64")
    located_error("kernel k(x: i8[N]) -> i8[N] {\n    return where(x < 0, x, 200) }", TdslTypeError,
                  2, 28, "literal 200 does not fit in i8")


# ---- C14: parameters with defaults come last ------------------------------------------
@pytest.mark.parametrize("params,late", [("x: f32[N], s: f32 = 1,\n t: f32", "t"),
                                         ("s: f32 = 1,\n x: f32[N], t: f32", "x")])
def test_parameter_without_default_after_one_with(params, late):
    located_error(f"kernel k({params}) -> f32[N] {{ return x }}", TdslSyntaxError, 2, 2,
                  f"parameter '{late}' has no default but follows 's'", "defaults come last")
