"""Every example parses, checks, and its NumPy reference computes the right math.

The expected values are written out by hand here in float64 NumPy, from the
same random inputs, and compared by relative norm error with the project's
tolerances (f32 1e-5, f16 2e-3, bf16 1e-2). Inputs are fresh on every run
(the seed is printed); sizes include 1, odd sizes that are multiples of
nothing in particular, and at least one larger size per example.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy as np
import pytest

import tiledsl
from tiledsl.errors import TdslArgumentError, TdslError, TdslShapeError, TdslTypeError
from tiledsl.inputs import relative_error

from conftest import EXAMPLE_FILES, EXAMPLES

BF16 = np.dtype(ml_dtypes.bfloat16)
TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-3, BF16: 1e-2,
       np.dtype(np.float64): 1e-12}
ODD = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 61, 67, 97, 101, 127)
ODD_SMALL = ODD[:11]        # for kernels with three or more dims: keep the work small


def load(file: str, name: str | None = None) -> tiledsl.Kernel:
    prog = tiledsl.compile(EXAMPLES / file)
    if name is not None:
        assert isinstance(prog, tiledsl.Module)
        return getattr(prog, name)
    assert isinstance(prog, tiledsl.Kernel)
    return prog


def f64(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def normal(rng, shape, dtype, scale=1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(dtype)


# erfc(-z), not 1 + erf(z): the sum cancels for negative inputs (gelu(-8.19) ~ -1.1e-15 came out
# 20% off in float64, on a single-element draw)
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


# ---- the hand-written math ------------------------------------------------------------
def np_add_scale_bias_relu(x, y, s, bias):
    return [np.maximum((f64(x) + f64(y)) * s + f64(bias), 0.0)]


def np_softmax(x):
    x = f64(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return [e / e.sum(axis=1, keepdims=True)]


def np_layernorm(x, w, b, eps=1e-5):
    x = f64(x)
    mu = x.sum(axis=1, keepdims=True) / x.shape[1]
    xc = x - mu
    var = (xc ** 2).sum(axis=1, keepdims=True) / x.shape[1]
    return [xc / np.sqrt(var + eps) * f64(w)[None, :] + f64(b)[None, :]]


def np_rmsnorm(x, w, eps=1e-6):
    x = f64(x)
    ms = (x * x).sum(axis=1, keepdims=True) / x.shape[1]
    return [x / np.sqrt(ms + eps) * f64(w)[None, :]]


def np_column_sum(x):
    return [f64(x).sum(axis=0)]


def np_gelu_bias(x, bias):
    v = f64(x) + f64(bias)[None, None, :]
    return [0.5 * v * _erfc(-v / math.sqrt(2.0))]


def np_batched_matmul(a, b):
    return [np.matmul(f64(a), f64(b))]


def np_linear_relu(x, w, b):
    return [np.maximum(f64(x) @ f64(w) + f64(b), 0.0)]


def np_mlp(x, w1, b1, w2, b2):
    h = np.maximum(f64(x) @ f64(w1) + f64(b1), 0.0).astype(np.float16)    # the example stores h in f16
    return [f64(h) @ f64(w2) + f64(b2)]


def _attention(q, k, v, scale, causal):
    s = np.einsum("td,sd->ts", f64(q), f64(k)) * scale
    if causal:
        t_idx = np.arange(s.shape[0])[:, None]
        s_idx = np.arange(s.shape[1])[None, :]
        s = np.where(s_idx <= t_idx, s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p = (p / p.sum(axis=1, keepdims=True)).astype(np.float16)     # the example rounds them to f16
    return [f64(p) @ f64(v)]


def np_attention(q, k, v, scale):
    return _attention(q, k, v, scale, causal=False)


def np_causal_attention(q, k, v, scale):
    return _attention(q, k, v, scale, causal=True)


def np_sincos(x):
    return [np.sin(f64(x)), np.cos(f64(x))]


# ---- inputs ---------------------------------------------------------------------------
@dataclass
class Case:
    file: str
    kernel: str | None
    dims: tuple[str, ...]
    large: dict                       # one larger size
    make: Callable                    # (rng, extents) -> (args, kwargs)
    expected: Callable                # the hand-written math
    out_dtypes: tuple                 # NumPy dtypes of the results


def _f16_rows(rng, e):
    return normal(rng, (e["M"], e["N"]), np.float16)


CASES = {
    "add_scale_bias_relu": Case(
        "add_scale_bias_relu.tdsl", None, ("N",), {"N": 100_003},
        lambda rng, e: ((normal(rng, e["N"], np.float32), normal(rng, e["N"], np.float32),
                         float(rng.uniform(0.5, 2.0)), normal(rng, e["N"], np.float32)), {}),
        np_add_scale_bias_relu, (np.float32,)),
    "softmax": Case(
        "softmax.tdsl", None, ("M", "N"), {"M": 67, "N": 1031},
        lambda rng, e: ((normal(rng, (e["M"], e["N"]), np.float32, 3.0),), {}),
        np_softmax, (np.float32,)),
    "layernorm": Case(
        "layernorm.tdsl", None, ("M", "N"), {"M": 65, "N": 1000},
        lambda rng, e: ((_f16_rows(rng, e) + np.float16(rng.uniform(-2, 2)),
                         normal(rng, e["N"], np.float32), normal(rng, e["N"], np.float32)), {}),
        np_layernorm, (np.float16,)),
    "rmsnorm": Case(
        "rmsnorm.tdsl", None, ("M", "N"), {"M": 33, "N": 2047},
        lambda rng, e: ((_f16_rows(rng, e), normal(rng, e["N"], np.float16)), {}),
        np_rmsnorm, (np.float16,)),
    "column_sum": Case(
        "column_sum.tdsl", None, ("M", "N"), {"M": 1001, "N": 131},
        lambda rng, e: ((normal(rng, (e["M"], e["N"]), np.float32),), {}),
        np_column_sum, (np.float32,)),
    "gelu_bias": Case(
        "gelu_bias.tdsl", None, ("B", "T", "C"), {"B": 3, "T": 129, "C": 257},
        lambda rng, e: ((normal(rng, (e["B"], e["T"], e["C"]), BF16, 2.0),
                         normal(rng, e["C"], BF16)), {}),
        np_gelu_bias, (BF16,)),
    "batched_matmul": Case(
        "batched_matmul.tdsl", None, ("B", "M", "K", "N"), {"B": 3, "M": 130, "K": 257, "N": 129},
        lambda rng, e: ((normal(rng, (e["B"], e["M"], e["K"]), np.float16),
                         normal(rng, (e["B"], e["K"], e["N"]), np.float16)), {}),
        np_batched_matmul, (np.float16,)),
    "linear_relu": Case(
        "linear.tdsl", None, ("M", "K", "N"), {"M": 129, "K": 300, "N": 131},
        lambda rng, e: ((normal(rng, (e["M"], e["K"]), np.float16),
                         normal(rng, (e["K"], e["N"]), np.float16, 1 / math.sqrt(e["K"])),
                         normal(rng, e["N"], np.float32)), {}),
        np_linear_relu, (np.float16,)),
    "mlp": Case(
        "mlp.tdsl", None, ("M", "D", "H", "E"), {"M": 97, "D": 130, "H": 257, "E": 65},
        lambda rng, e: ((normal(rng, (e["M"], e["D"]), np.float16),
                         normal(rng, (e["D"], e["H"]), np.float16, 1 / math.sqrt(e["D"])),
                         normal(rng, e["H"], np.float32),
                         normal(rng, (e["H"], e["E"]), np.float16, 1 / math.sqrt(e["H"])),
                         normal(rng, e["E"], np.float32)), {}),
        np_mlp, (np.float16,)),
    "attention": Case(
        "attention.tdsl", "attention", ("T", "S", "D"), {"T": 200, "S": 333, "D": 64},
        lambda rng, e: ((normal(rng, (e["T"], e["D"]), np.float16),
                         normal(rng, (e["S"], e["D"]), np.float16),
                         normal(rng, (e["S"], e["D"]), np.float16),
                         1 / math.sqrt(e["D"])), {}),
        np_attention, (np.float16,)),
    "causal_attention": Case(
        "attention.tdsl", "causal_attention", ("T", "S", "D"), {"T": 333, "S": 200, "D": 64},
        lambda rng, e: ((normal(rng, (e["T"], e["D"]), np.float16),
                         normal(rng, (e["S"], e["D"]), np.float16),
                         normal(rng, (e["S"], e["D"]), np.float16),
                         1 / math.sqrt(e["D"])), {}),
        np_causal_attention, (np.float16,)),
    "sincos": Case(
        "sincos.tdsl", None, ("N",), {"N": 65_537},
        lambda rng, e: ((normal(rng, e["N"], np.float32, 10.0),), {}),
        np_sincos, (np.float32, np.float32)),
}


def extents_for(case: Case, size: str, rng) -> dict:
    if size == "one":
        return {d: 1 for d in case.dims}
    odd = ODD if len(case.dims) < 3 else ODD_SMALL
    if size == "odd":
        return {d: int(rng.choice(odd)) for d in case.dims}
    if size == "mixed":   # some dims 1, others odd
        return {d: (1 if rng.random() < 0.5 else int(rng.choice(odd))) for d in case.dims}
    return dict(case.large)


def as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def test_every_example_is_covered():
    files = {c.file for c in CASES.values()}
    assert files == {p.name for p in EXAMPLE_FILES}, "an example has no hand-written check"


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_compiles(path):
    prog = tiledsl.compile(path)
    kernels = list(prog) if isinstance(prog, tiledsl.Module) else [prog]
    assert kernels
    for k in kernels:
        assert k.file == str(path)
        assert k.ir_text().startswith(f"kernel {k.name}(")
    # the same program from its text
    again = tiledsl.compile(path.read_text())
    names = again.names if isinstance(again, tiledsl.Module) else [again.name]
    assert names == [k.name for k in kernels]


@pytest.mark.parametrize("size", ["one", "odd", "mixed", "large"])
@pytest.mark.parametrize("name", list(CASES))
def test_example_reference_matches_numpy(name, size, rng):
    case = CASES[name]
    k = load(case.file, case.kernel)
    extents = extents_for(case, size, rng)
    print(f"{name}: extents {extents}")
    args, kwargs = case.make(rng, extents)
    expected = case.expected(*args, **kwargs)
    for compute in ("exact", "f64"):
        got = as_tuple(k.reference(*args, compute=compute, **kwargs))
        assert len(got) == len(expected) == len(case.out_dtypes)
        for i, (g, e, dtype) in enumerate(zip(got, expected, case.out_dtypes)):
            g = np.asarray(g)
            assert g.shape == e.shape, (compute, i, g.shape, e.shape)
            if compute == "exact":
                assert g.dtype == np.dtype(dtype), (i, g.dtype, dtype)
            err = relative_error(g, e)
            tol = TOL[np.dtype(dtype)]
            assert err <= tol, f"{name} result {i} ({compute}): relative error {err:.3g} > {tol}"
            if compute == "f64":
                # f64 holds every float in float64 and rounds only at explicit casts: an
                # f16/bf16 result is the float64 math rounded once at the store; an f32
                # result computed in f32 has no cast and is the float64 math itself.
                rounded = e if np.dtype(dtype) == np.float32 else np.asarray(e).astype(dtype)
                err = relative_error(g, rounded)
                assert err <= 1e-9, f"{name} result {i}: f64 mode is not f64 math ({err:.3g})"


def test_layernorm_eps_default_and_keyword(rng):
    k = load("layernorm.tdsl")
    m, n = 5, 3
    x = normal(rng, (m, n), np.float16) * np.float16(1e-3)   # variance comparable to eps
    w, b = normal(rng, n, np.float32), normal(rng, n, np.float32)
    default = k.reference(x, w, b, compute="f64")
    assert relative_error(default, np_layernorm(x, w, b, 1e-5)[0]) <= 2e-3
    big = k.reference(x, w, b, eps=0.5, compute="f64")
    assert relative_error(big, np_layernorm(x, w, b, 0.5)[0]) <= 2e-3
    positional = k.reference(x, w, b, 0.5, compute="f64")
    np.testing.assert_array_equal(big, positional)
    assert relative_error(big, default) > 1e-2    # eps really reaches the math


def test_causal_mask_blocks_the_future(rng):
    """Row t of causal attention depends only on keys/values at s <= t."""
    k = load("attention.tdsl", "causal_attention")
    t, s, d = 6, 6, 8
    q = normal(rng, (t, d), np.float16)
    kk = normal(rng, (s, d), np.float16)
    v = normal(rng, (s, d), np.float16)
    base = k.reference(q, kk, v, 0.3)
    v2 = v.copy()
    v2[-1] += np.float16(5)      # change only the last key/value position
    kk2 = kk.copy()
    kk2[-1] -= np.float16(3)
    changed = k.reference(q, kk2, v2, 0.3)
    np.testing.assert_array_equal(base[:-1], changed[:-1])
    assert not np.array_equal(base[-1], changed[-1])
    # row 0 sees only position 0: the result is v[0] (rounded to f16)
    np.testing.assert_allclose(f64(base[0]), f64(v[0]), rtol=2e-3, atol=1e-3)


# ---- argument errors ------------------------------------------------------------------
def test_reference_dim_mismatch_message(rng):
    k = load("add_scale_bias_relu.tdsl")
    x = normal(rng, 1024, np.float32)
    with pytest.raises(TdslShapeError) as info:
        k.reference(x, x, 1.0, normal(rng, 1000, np.float32))
    assert "dim N: x has 1024, bias has 1000" in str(info.value)
    # located at the offending parameter in the source, with a caret
    assert "add_scale_bias_relu.tdsl:2:" in str(info.value)
    assert "bias: f32[N]" in str(info.value) and "^" in str(info.value)


def test_reference_dim_mismatch_second_dim(rng):
    k = load("layernorm.tdsl")
    with pytest.raises(TdslShapeError, match=r"dim N: x has 8, w has 9"):
        k.reference(normal(rng, (4, 8), np.float16), normal(rng, 9, np.float32),
                    normal(rng, 8, np.float32))


def test_reference_wrong_dtype(rng):
    k = load("layernorm.tdsl")
    x32 = normal(rng, (4, 8), np.float32)
    w, b = normal(rng, 8, np.float32), normal(rng, 8, np.float32)
    with pytest.raises(TdslTypeError) as info:
        k.reference(x32, w, b)
    msg = str(info.value)
    assert "'x' is declared f16 but the array is f32" in msg
    assert "astype(float16)" in msg


def test_reference_wrong_dtype_bf16(rng):
    k = load("gelu_bias.tdsl")
    with pytest.raises(TdslTypeError, match="'bias' is declared bf16 but the array is f16"):
        k.reference(normal(rng, (1, 2, 3), BF16), normal(rng, 3, np.float16))


def test_reference_unsupported_dtype(rng):
    k = load("softmax.tdsl")
    with pytest.raises(TdslTypeError, match="unsupported dtype"):
        k.reference(np.zeros((2, 3), np.complex64))


def test_reference_wrong_rank(rng):
    k = load("softmax.tdsl")
    with pytest.raises(TdslShapeError,
                       match=r"'x' is declared with 2 dims \[M, N\] but the array has shape \(6,\)"):
        k.reference(normal(rng, 6, np.float32))
    with pytest.raises(TdslShapeError, match=r"shape \(1, 2, 3\)"):
        k.reference(normal(rng, (1, 2, 3), np.float32))


def test_reference_argument_count_and_names(rng):
    k = load("add_scale_bias_relu.tdsl")
    x = normal(rng, 4, np.float32)
    with pytest.raises(TdslArgumentError, match=r"missing 1 argument: bias"):
        k.reference(x, x, 1.0)
    with pytest.raises(TdslArgumentError, match=r"missing 2 arguments: s, bias"):
        k.reference(x, x)
    with pytest.raises(TdslArgumentError, match=r"takes 4 arguments .* but 5 were given"):
        k.reference(x, x, 1.0, x, x)
    with pytest.raises(TdslArgumentError, match=r"has no parameter 'scale'"):
        k.reference(x, x, bias=x, scale=1.0)
    with pytest.raises(TdslArgumentError, match=r"got two values for 'x'"):
        k.reference(x, x, 1.0, x, x=x)
    # keywords in any order work
    out = k.reference(bias=x, s=2.0, y=x, x=x)
    np.testing.assert_allclose(out, np_add_scale_bias_relu(x, x, 2.0, x)[0], rtol=1e-6)


def test_reference_scalar_and_array_kinds(rng):
    k = load("add_scale_bias_relu.tdsl")
    x = normal(rng, 4, np.float32)
    with pytest.raises(TdslTypeError, match="'s' is an f32 scalar; got str"):
        k.reference(x, x, "2", x)
    with pytest.raises(TdslTypeError, match="'s' is an f32 scalar; got ndarray"):
        k.reference(x, x, np.ones(1, np.float32), x)
    with pytest.raises(TdslTypeError, match="overflows f32"):
        k.reference(x, x, 1e300, x)
    for huge in (10 ** 400, -10 ** 5000):     # past every float, and past int-to-text's limit
        with pytest.raises(TdslTypeError, match=r"'s' = an integer of \d+ bits overflows f32"):
            k.reference(x, x, huge, x)
    counts = tiledsl.compile("kernel c(x: f32[N], n: i32) -> f32[N] { return x * f32(n) }")
    with pytest.raises(TdslTypeError, match=r"'n' = an integer of 16610 bits does not fit in i32"):
        counts.reference(x, 10 ** 5000)
    with pytest.raises(TdslArgumentError, match="'x' must be an array of f32\\[N\\]; got list"):
        k.reference([1.0, 2.0], x, 1.0, x)
    # a 0-d array and a NumPy scalar are fine as scalars
    a = k.reference(x, x, np.float32(2.0), x)
    b = k.reference(x, x, np.array(2.0), x)
    np.testing.assert_array_equal(a, b)


def test_reference_refuses_masked_and_big_endian_arrays_by_name(rng):
    k = tiledsl.compile("kernel k(x: f32[N]) -> f32[N] { return x * 2.0 }")
    x = normal(rng, 3, np.float32)
    with pytest.raises(TdslArgumentError, match=r"got a NumPy masked array; pass x.filled\(value\)"):
        k.reference(np.ma.masked_array(x, mask=[0, 1, 0]))      # (its mask would be ignored)
    with pytest.raises(TdslTypeError, match=r"is big-endian \(>f4\); convert it first \(.astype\(float32\)\)"):
        k.reference(x.astype(">f4"))
    with pytest.raises(TdslTypeError, match=r"of an unsupported dtype \(complex64\)"):
        k.reference(x.astype(np.complex64))


def test_reference_bad_compute_mode(rng):
    k = load("sincos.tdsl")
    with pytest.raises(TdslArgumentError, match="compute must be 'exact' or 'f64'"):
        k.reference(normal(rng, 3, np.float32), compute="f32")


@pytest.mark.parametrize("name", ["add_scale_bias_relu", "softmax", "attention", "linear_relu"])
def test_calling_kernel_with_numpy_points_to_reference(name, rng):
    case = CASES[name]
    k = load(case.file, case.kernel)
    args, kwargs = case.make(rng, {d: 3 for d in case.dims})
    with pytest.raises(TdslArgumentError) as info:
        k(*args, **kwargs)
    msg = str(info.value)
    assert ".reference" in msg and "NumPy array" in msg
    assert f"{k.name}.reference(...)" in msg


def test_calling_kernel_with_numpy_keyword_argument(rng):
    k = load("add_scale_bias_relu.tdsl")
    x = normal(rng, 3, np.float32)
    with pytest.raises(TdslArgumentError, match=r"'bias' is a NumPy array"):
        k(None, None, 1.0, bias=x)


class _InterfaceOnly:
    """A device array known only by its __cuda_array_interface__ (no dtype attribute)."""
    shape = (4,)
    __cuda_array_interface__ = dict(shape=(4,), typestr="<f4", data=(4096, False), version=3)


def test_an_array_interface_without_cupy_gets_a_clear_error(monkeypatch):
    """Without CuPy a call on a device array says what to install (not ModuleNotFoundError),
    and cuda_source, which reads only shapes and dtypes, reads the interface's typestr."""
    monkeypatch.setitem(__import__("sys").modules, "cupy", None)      # `import cupy` fails
    k = tiledsl.compile("kernel k(x: f32[N], s: f32) -> f32[N] { return x * s }")
    for call in (lambda: k(_InterfaceOnly(), 2.0), lambda: k(_InterfaceOnly(), 2.0, out=_InterfaceOnly())):
        with pytest.raises(TdslError, match=r"needs CuPy: pip install tiledsl\[cuda13\]"):
            call()
    assert "__global__" in k.cuda_source(_InterfaceOnly(), 2.0)


# ---- speed ----------------------------------------------------------------------------
@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_parse_and_check_is_fast(path):
    tiledsl.compile(path)          # warm: imports, the Lark parser, caches
    best = math.inf
    for _ in range(3):             # best of three: robust to a busy 2-core machine
        t0 = time.perf_counter()
        tiledsl.compile(path)
        best = min(best, time.perf_counter() - t0)
    assert best < 0.05, f"{path.name}: parse+check took {best * 1e3:.1f} ms"


def test_all_examples_error_free_as_one_module():
    """Every example's kernels, concatenated into one file, still compile as a module."""
    text = "\n".join(p.read_text() for p in EXAMPLE_FILES)
    mod = tiledsl.compile(text)
    assert isinstance(mod, tiledsl.Module)
    expected = []
    for p in EXAMPLE_FILES:
        prog = tiledsl.compile(p)
        expected += prog.names if isinstance(prog, tiledsl.Module) else [prog.name]
    assert mod.names == expected
    with pytest.raises(TdslError):
        tiledsl.compile(text + "\n" + (EXAMPLES / "softmax.tdsl").read_text())   # duplicate kernel
