"""GPU fuzzing: random well-typed programs run on the GPU against the reference.

The property test's generator (tests/test_properties.py: named dims in any
order, parameters of f16/bf16/f32/f64/i32/i64 over random subsets of them, expression
trees with broadcasting, reductions over one, several or all dims, where,
comparisons, .T, results stored in any dim order) draws programs here at
sizes from 1 to 4097 (up to 2^21 elements; a dim may be written as its extent),
with results declared f64, f32, f16, bf16, bool, or i8, u8, i32, i64 (integer
expressions; narrow ones wrap). Every program that compiles must run on the GPU
(issue 3: "every valid program without @ runs on the GPU"), and each result must
match the exact interpreter (`k.reference(...)`, the language's storage precision):

- NaN, +inf and -inf exactly where the reference has them;
- finite elements within rtol of the element plus atol of the largest finite
  intermediate value of the program (sums in another order; one rounding of
  the result's dtype);
- with out=, buffers poisoned with NaN first, so an element never written fails;
- on a second call as well (fresh buffers), which with contiguous inputs takes
  the launcher's generated warm call instead of the checked path.

Half the calls pass out=, and a quarter of the 2-D and 3-D arguments are
passed as non-contiguous views (the launcher's copying path).

Inputs are small dyadic numbers (k/4), so sums and products are exact and
only exp, tanh, sigmoid, division, means and the result's rounding differ between
the GPU and the interpreter; comparisons take only exactly computed values (an
ulp's difference in tanh flipped `tanh(a) < tanh(b)` in a first version).

Programs of three dims may hold matrix products of new parameters (f16, bf16 or f32,
one operand maybe transposed, through exact elementwise ops), and a second
test draws mostly those. TDSL_GPU_FUZZ_EXAMPLES=N runs N programs a test (default 60); a failure prints the
source, extents and arguments' seed, and Hypothesis shrinks it first.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import strategies as st

import tiledsl
from tiledsl.errors import TdslCompileError, TdslError
from tiledsl.inputs import TOLERANCE

from gpu_helpers import (check, cupy_supports_bf16, gpu_status, host_arguments, poison, still_poisoned,
                         synchronize, to_host)
from test_codegen_fuzz import FOUND, MAX_ELEMENTS, PRODUCT_SIZES, SIZES, drawn_candidates, fuzz_test, hint_block
from test_properties import build, scale

_GPU_OK, _GPU_WHY = gpu_status()


def needs_gpu(test):
    return pytest.mark.gpu(pytest.mark.skipif(not _GPU_OK, reason=f"needs an NVIDIA GPU and CuPy: {_GPU_WHY}")(test))


EXAMPLES = int(os.environ.get("TDSL_GPU_FUZZ_EXAMPLES", "60"))
# relative tolerance per result dtype; f64 results of f16/f32 inputs are computed in f32
RTOL = {"f64": 1e-5, "f32": 1e-5, "f16": 2e-3, "bf16": 1e-2}
ATOL = 2e-5      # times the largest finite intermediate


def tolerance(dtype, magnitude: float) -> tuple[float, float]:
    """(rtol, atol) for a result of `dtype`: a bool one (a comparison of exactly computed
    values) and an integer one exactly."""
    return (0.0, 0.0) if not dtype.is_float else (RTOL[dtype.name], ATOL * magnitude)


def result_dtypes() -> tuple:
    """What results are declared ("int": i8, u8, i32 or i64 of an integer expression)."""
    return ("f64", "f32", "f16", "bf16", "bool", "int") if _GPU_OK and cupy_supports_bf16() else \
        ("f64", "f32", "f16", "bool", "int")


def mismatch(got: np.ndarray, ref: np.ndarray, rtol: float, atol: float, overflows: bool = False) -> str:
    """'' when `got` matches `ref` as the module docstring says, else why not. Where the
    program `overflows` f32, NaN, +inf and -inf are told apart from finite values only:
    CUDA contracts a * b + c into one fused multiply-add, whose product is never rounded
    to -inf on its own, so where the reference adds -inf (a product that overflowed) and
    +inf (an exp), NaN, the GPU gave +inf (GPU fuzz, 2026-11-27)."""
    g, r = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if g.shape != r.shape:
        return f"shape {g.shape}, reference {r.shape}"
    classes = ((("not finite", lambda v: ~np.isfinite(v)),) if overflows else
               (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)))
    for what, test in classes:
        wrong = test(g) != test(r)
        if wrong.any():
            at = np.argwhere(wrong)[:3].tolist() if r.ndim else []
            return (f"{int(wrong.sum())} of {r.size} elements differ in being {what} (first at {at}: "
                    f"got {g[tuple(at[0])] if at else g}, reference {r[tuple(at[0])] if at else r})")
    finite = np.isfinite(r)
    with np.errstate(invalid="ignore"):
        bad = finite & ~(np.abs(g - r) <= rtol * np.abs(r) + atol)
    if bad.any():
        at = np.argwhere(bad)[:3].tolist() if r.ndim else [[]]
        first = tuple(at[0])
        return (f"{int(bad.sum())} of {r.size} elements off by more than {rtol:g} relative + {atol:.3g} "
                f"(first at {at}: got {g[first]!r}, reference {r[first]!r})")
    return ""


def to_gpu(arg, noncontiguous: bool):
    import cupy
    if not isinstance(arg, np.ndarray):
        return arg
    if noncontiguous and arg.ndim >= 2:
        return cupy.asfortranarray(cupy.asarray(arg))
    return cupy.asarray(arg)


def run_program(data, products: int = 1, min_dims: int = 1, sizes: tuple = SIZES,
                max_elements: int = MAX_ELEMENTS, pinned: bool = False, hinted: bool = False) -> str:
    """Draws one program, runs it on the GPU; '' when every result matches, else
    a description of the first that does not (or of a non-TdslError raised).
    With `pinned`, each group runs a schedule drawn from the tuner's candidates;
    with `hinted`, the program has a schedule block drawn at random, and a call
    it makes illegal must be refused with a TdslError before anything is written."""
    bf16 = "bf16" in result_dtypes()
    source, prog, _, _ = build(data, sizes, max_elements, result_dtypes(), products, min_dims, bf16,
                               exact_conditions=True, ints=True, literal_dims=True, max_dims=4)
    if hinted:
        source += hint_block(data, prog.extents)
    try:
        k = tiledsl.compile(source)
    except TdslError:
        return ""           # the generator writes only valid programs; a refused schedule block
    picks = {}
    if pinned:
        from tiledsl.runtime import launcher_for
        from tiledsl.runtime.launcher import _sm_count, device_arch, set_overrides
        picks = drawn_candidates(data, k, prog.extents, device_arch(0), _sm_count(0))
        k._launcher = launcher_for(k)
        set_overrides(k._launcher, picks)
    use_out = data.draw(st.booleans(), label="out=")
    layout = [data.draw(st.integers(0, 3), label=f"layout {i}") == 0 for i in range(len(prog.args))]
    note = (f"source:\n{source}\nextents: {prog.extents}, out=: {use_out}, non-contiguous: {layout}, "
            f"schedules: {({i: s.tag for i, s in picks.items()})}")
    exact = k.reference(*prog.args)
    exact = exact if isinstance(exact, tuple) else (exact,)
    args = [to_gpu(a, nc) for a, nc in zip(prog.args, layout)]
    magnitude, overflows = scale(k, prog)
    # twice: the first call takes the checked path and plans the call class; the second,
    # with contiguous inputs, the generated warm call
    from tiledsl.runtime import launcher as launcher_module
    launcher_module._WARNED.clear()     # (warned once a process: another program's kernel may read the same)
    why = _calls(k, args, exact, use_out, hinted, magnitude, overflows, note)
    spills = launcher_module.default_spills()
    if not why and spills and not pinned:     # a default that spills computes right, slowly: a defect too
        return f"{spills[0]}\n{note}"
    return why


def _calls(k, args, exact, use_out: bool, hinted: bool, magnitude: float, overflows: bool, note: str) -> str:
    for call in ("first call", "second call"):
        try:
            if use_out:
                outs = [poison(np.shape(e), r.dtype) for e, r in zip(exact, k.graph.results)]
                k(*args, out=outs[0] if len(outs) == 1 else tuple(outs))
                got = outs
            else:
                got = k(*args)
                got = list(got) if isinstance(got, tuple) else [got]
            synchronize()
        except TdslError as err:
            if not hinted or isinstance(err, TdslCompileError):
                return f"{call}: {type(err).__name__}: {err}\n{note}"
            written = [i for i, o in enumerate(outs) if not still_poisoned(o)] if use_out else []
            return f"refused ({err}) after writing results {written}\n{note}" if written else ""
        except Exception as err:    # noqa: BLE001 - reported with the program
            return f"{call}: {type(err).__name__}: {err}\n{note}"
        for i, (g, e, r) in enumerate(zip(got, exact, k.graph.results)):
            h = to_host(g)
            unwritten = int((np.asarray(h).view(np.uint8) > 1).sum()) if r.dtype.name == "bool" else 0  # poison byte
            if unwritten:
                return f"{call}, result {i} (bool): {unwritten} elements unwritten\n{note}"
            why = mismatch(h.astype(np.float64) if r.dtype.name == "bf16" else h, e, *tolerance(r.dtype, magnitude),
                           overflows=overflows)
            if why:
                return f"{call}, result {i} ({r.dtype}): {why}\n{note}"
    return ""


@needs_gpu
@fuzz_test(EXAMPLES)
def test_random_programs_on_the_gpu(data):
    why = run_program(data)
    assert not why, why


@needs_gpu
@fuzz_test(EXAMPLES)
def test_random_products_on_the_gpu(data):
    """Three-dim programs, most with matrix products (f16 on the tensor cores, f32 on
    the CUDA cores) fused with the elementwise work and reductions around them."""
    why = run_program(data, products=6, min_dims=3, sizes=PRODUCT_SIZES, max_elements=1 << 22)
    assert not why, why


@needs_gpu
@fuzz_test(EXAMPLES)
def test_random_programs_with_schedule_blocks(data):
    """A random schedule block (stages, warps, threads, vector, split_k, group, tf32,
    tiles): the call runs what it pins, or is refused before anything is written."""
    why = run_program(data, products=3, hinted=True)
    assert not why, why


@needs_gpu
@fuzz_test(EXAMPLES)
def test_random_programs_under_random_candidates(data):
    """Each group pinned to a schedule drawn from the tuner's candidates (rings,
    prefetching, persistent, split, transposing tiles, every GEMM tile), as
    `autotune` may pick it."""
    why = run_program(data, products=2, pinned=True)
    assert not why, why


def test_mismatch_catches_what_it_must():
    """The judge itself: each kind of difference is reported, agreement is not."""
    ref = np.array([1.0, np.nan, np.inf, -np.inf, 0.0])
    assert mismatch(ref.copy(), ref, 1e-5, 0.0) == ""
    for i, bad in ((0, 1.001), (1, 0.0), (2, 1e300), (3, np.inf), (4, np.nan), (0, np.nan)):
        got = ref.copy()
        got[i] = bad
        assert mismatch(got, ref, 1e-5, 0.0), (i, bad)
    assert mismatch(np.array([1.0 + 1e-6]), np.array([1.0]), 1e-5, 0.0) == ""
    assert mismatch(np.array([1e-3]), np.array([0.0]), 1e-5, 2e-3) == ""
    assert mismatch(np.array([1.0, 2.0]), np.array([1.0]), 1e-5, 0.0)


@needs_gpu
@pytest.mark.parametrize("out_kind", ["alloc", "out"])
@pytest.mark.parametrize("name", sorted(FOUND))
def test_programs_the_fuzzer_found_run(name, out_kind):
    """The programs tests/test_codegen_fuzz.py pins, run against the float64 reference.
    An f64 result computed through narrower floats is held to their tolerance (the kernel
    computes in their precision, then widens): f16 parameters, or f32 ones such as tanh of
    an integer."""
    source, extents = FOUND[name]
    k = tiledsl.compile(source)
    tolerance = None
    if any(r.dtype.name == "f64" for r in k.graph.results):
        narrow = [TOLERANCE[v.dtype.name] for v in k.graph.values if v.dtype.is_float and v.dtype.name != "f64"]
        tolerance = max(narrow, default=None)
    check(k, host_arguments(k, extents), extents, out_kind, tolerance=tolerance)
