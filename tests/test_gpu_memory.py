"""GPU tests for memory-bound programs (no `@`): every such example and a wide set of
generated programs, in f32/f16/bf16, at size 1, at tails and at large sizes, in
both calling modes (the kernel allocates; out= into NaN-poisoned buffers), plus
non-contiguous inputs, torch tensors, argument errors that must write nothing,
and a pointwise kernel over more than 2**31 elements.

Every result is compared with the NumPy reference in float64
(`k.reference(..., compute="f64")`) by relative norm error, with the project's
tolerance for the result's dtype (tiledsl.inputs.TOLERANCE); integer and bool
results must be exact. Inputs are fresh on every run; the seed is printed (shown
by pytest on failure) and TDSL_TEST_SEED=<seed> replays it.

Without CuPy or a CUDA device every test here is skipped (marker `gpu`).
Run: python -m pytest -q -m gpu tests/test_gpu_memory.py
     (add -m "gpu and not slow" to leave out the >2**31-element test)
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import pytest

import tiledsl
from tiledsl.inputs import relative_error
from tiledsl.errors import (TdslArgumentError, TdslError, TdslShapeError, TdslTypeError)

from gpu_helpers import (as_list, bf16_numpy, check, device_count, draw, free_memory,
                         fresh_seed, gpu_status, host_arguments, planned_launches, poison, require_torch,
                         result_shapes, sample_positions, still_poisoned, synchronize, to_device,
                         to_host)

_GPU_OK, _GPU_WHY = gpu_status()
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not _GPU_OK, reason=f"needs an NVIDIA GPU and CuPy: {_GPU_WHY}")]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MODES = ["alloc", "out"]


@functools.lru_cache(maxsize=None)
def compiled(src: str):
    """tiledsl.compile once per program text or example file name per session."""
    if src.endswith(".tdsl") and "\n" not in src:
        return tiledsl.compile(EXAMPLES / src)
    return tiledsl.compile(src)


def fresh(src: str):
    """A kernel of its own, for a test that pins its schedules (set_overrides): pinned on
    the shared one, they stayed for the next test of the same program on that worker
    (softmax's rows of 100 kept a schedule pinned for rows of 16)."""
    return compiled.__wrapped__(src)


@pytest.fixture
def rng() -> np.random.Generator:
    seed = fresh_seed()
    print(f"rng seed {seed} (replay with TDSL_TEST_SEED={seed})")
    return np.random.default_rng(seed)


@pytest.fixture(autouse=True)
def _release_memory():
    yield
    free_memory()


# ---- shapes --------------------------------------------------------------------------
# size 1, tails (sizes that are multiples of nothing useful), a single long row and column,
# and one large case per program.
SHAPES_2D = {"1x1": (1, 1), "3x7": (3, 7), "17x1000": (17, 1000), "129x1023": (129, 1023),
             "1000x1": (1000, 1), "1x4097": (1, 4097), "2048x4097": (2048, 4097),
             "large-4096x8192": (4096, 8192)}
SHAPES_3D = {"1x1x1": (1, 1, 1), "2x3x7": (2, 3, 7), "3x17x1000": (3, 17, 1000),
             "1x129x1023": (1, 129, 1023), "5x1000x1": (5, 1000, 1), "1x1x4097": (1, 1, 4097),
             "2x2048x4097": (2, 2048, 4097), "large-4x1024x8192": (4, 1024, 8192)}


def extents_for(dims: tuple[str, ...], size: str) -> dict:
    """Extents for a kernel's dims from a size name: 1-D kernels get the element count
    of the 2-D shape, 3-D kernels the 3-D shape of the same name family."""
    if len(dims) == 1:
        m, n = SHAPES_2D[size]
        return {dims[0]: m * n}
    if len(dims) == 2:
        return dict(zip(dims, SHAPES_2D[size]))
    if len(dims) == 3:
        key = {"1x1": "1x1x1", "3x7": "2x3x7", "17x1000": "3x17x1000", "129x1023": "1x129x1023",
               "1000x1": "5x1000x1", "1x4097": "1x1x4097", "2048x4097": "2x2048x4097",
               "large-4096x8192": "large-4x1024x8192"}[size]
        return dict(zip(dims, SHAPES_3D[key]))
    raise ValueError(dims)


# ---- the examples --------------------------------------------------------------------
MEMORY_EXAMPLES = ["add_scale_bias_relu", "softmax", "layernorm", "rmsnorm", "column_sum",
                   "gelu_bias", "sincos"]

# dtype variants of the examples, written out here
VARIANTS = {
    "softmax_f16": """
kernel softmax_f16(x: f16[M, N]) -> f16[M, N] {
    e = exp(x - max(x, axis=N))
    return e / sum(e, axis=N)
}""",
    "softmax_bf16": """
kernel softmax_bf16(x: bf16[M, N]) -> bf16[M, N] {
    e = exp(x - max(x, axis=N))
    return e / sum(e, axis=N)
}""",
    # bf16, f16 (hoisted 16-bit weights kept packed) and f32, all one dtype
    **{f"layernorm_{t}": f"""
kernel layernorm_{t}(x: {t}[M, N], w: {t}[N], b: {t}[N], eps: f32 = 1e-5) -> {t}[M, N] {{
    mu  = mean(x, axis=N)
    xc  = x - mu
    var = mean(xc * xc, axis=N)
    return xc * rsqrt(var + eps) * w + b
}}""" for t in ("bf16", "f16", "f32")},
    # bf16 rows with f32 weights: a prefetching row moved through its buffers (codegen/cuda.py,
    # moves_prefetched_rows)
    "layernorm_bf16_f32w": """
kernel layernorm_bf16_f32w(x: bf16[M, N], w: f32[N], b: f32[N], eps: f32 = 1e-5) -> bf16[M, N] {
    mu  = mean(x, axis=N)
    xc  = x - mu
    var = mean(xc * xc, axis=N)
    return xc * rsqrt(var + eps) * w + b
}""",
    "rmsnorm_bf16": """
kernel rmsnorm_bf16(x: bf16[M, N], w: bf16[N], eps: f32 = 1e-6) -> bf16[M, N] {
    return x * rsqrt(mean(x * x, axis=N) + eps) * w
}""",
    "rmsnorm_f32": """
kernel rmsnorm_f32(x: f32[M, N], w: f32[N], eps: f32 = 1e-6) -> f32[M, N] {
    return x * rsqrt(mean(x * x, axis=N) + eps) * w
}""",
    "add_scale_bias_relu_f16": """
kernel add_scale_bias_relu_f16(x: f16[N], y: f16[N], s: f32, bias: f16[N]) -> f16[N] {
    return relu((x + y) * s + bias)
}""",
    "add_scale_bias_relu_bf16": """
kernel add_scale_bias_relu_bf16(x: bf16[N], y: bf16[N], s: f32, bias: bf16[N]) -> bf16[N] {
    return relu((x + y) * s + bias)
}""",
    "column_sum_f16": """
kernel column_sum_f16(x: f16[M, N]) -> f32[N] {
    return sum(x, axis=M)
}""",
    "column_sum_bf16": """
kernel column_sum_bf16(x: bf16[M, N]) -> bf16[N] {
    return sum(x, axis=M)
}""",
    "gelu_bias_f32": """
kernel gelu_bias_f32(x: f32[B, T, C], bias: f32[C]) -> f32[B, T, C] {
    return gelu(x + bias)
}""",
    "gelu_bias_f16": """
kernel gelu_bias_f16(x: f16[B, T, C], bias: f16[C]) -> f16[B, T, C] {
    return gelu(x + bias)
}""",
    "sincos_f16": """
kernel sincos_f16(x: f16[N]) -> (f16[N], f16[N]) {
    return sin(x), cos(x)
}""",
    "sincos_bf16": """
kernel sincos_bf16(x: bf16[N]) -> (bf16[N], bf16[N]) {
    return sin(x), cos(x)
}""",
}


def _example_program(name: str):
    return compiled(f"{name}.tdsl") if name in MEMORY_EXAMPLES else compiled(VARIANTS[name])


def _has_scipy() -> bool:
    try:
        import scipy.special  # noqa: F401
        return True
    except ImportError:
        return False


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", list(SHAPES_2D))
@pytest.mark.parametrize("name", MEMORY_EXAMPLES + list(VARIANTS))
def test_memory_example(name, size, mode):
    k = _example_program(name)
    extents = extents_for(k.graph.dims, size)
    if "gelu" in name and size.startswith("large") and not _has_scipy():
        # without SciPy the reference's erf is a Python loop: 32M calls take minutes
        extents = {"B": 2, "T": 257, "C": 1031}
    host = host_arguments(k, extents)
    check(k, host, extents, mode)


# ---- generated programs --------------------------------------------------------------
S1 = [{"N": n} for n in (1, 7, 1000, 4097, 1_000_003)]
S2 = [{"M": m, "N": n} for m, n in ((1, 1), (3, 7), (17, 1000), (129, 1023), (1000, 1),
                                      (1, 4097), (2048, 4097))]
# one of the two transposed loops 2 to 15 long: skinny transposing tiles (pointwise.skinny_tile)
S2_SKINNY = [{"M": m, "N": n} for m, n in ((8, 4097), (3, 1000), (4099, 6), (2, 300), (15, 70001),
                                            (1000003, 4), (4, 255))]
S3 = [{"B": b, "T": t, "C": c} for b, t, c in ((1, 1, 1), (2, 3, 7), (3, 17, 1000), (4, 129, 33),
                                                 (5, 1000, 1), (1, 1, 4097), (2, 1024, 1031))]
S3_BMN = [{"B": b, "M": m, "N": n} for b, m, n in ((1, 1, 1), (2, 3, 7), (3, 17, 1000),
                                                     (7, 129, 33), (2, 1000, 1), (4, 512, 1031))]


@dataclass
class Program:
    src: str
    shapes: list
    # (rng, kernel, extents) -> host args; None: tiledsl.inputs.random_arguments
    make: Optional[Callable] = None
    tolerance: Optional[float] = None
    ids: list = field(default_factory=list)


def _normal_args(kind: str = "normal", scale: float = 1.0):
    """Every tensor parameter drawn with `draw(kind)`; scalars from random_arguments."""
    def make(rng, k, extents):
        args = []
        for p in k.graph.params:
            if p.is_scalar:
                args.append(p.default if p.default is not None else
                            float(np.float32(rng.uniform(0.5, 2.0))) if p.dtype.is_float else
                            int(rng.integers(-5, 6)))
            else:
                args.append(draw(rng, tuple(extents[d] for d in p.dims), p.dtype.numpy, kind, scale))
        return args
    return make


PROGRAMS: dict[str, Program] = {
    # --- pointwise, broadcasting by name in different dim orders ---
    "bias_btc": Program("""
kernel bias_btc(x: f32[B, T, C], bias: f32[C]) -> f32[B, T, C] {
    return x + bias
}""", S3),
    "bias_btc_f16_f32": Program("""
kernel bias_btc_f16_f32(x: f16[B, T, C], bias: f32[C]) -> f16[B, T, C] {
    return x * 0.5 + bias
}""", S3),
    "row_scale": Program("""
kernel row_scale(x: f32[M, N], r: f32[M]) -> f32[M, N] {
    return x * r
}""", S2),
    "col_shift": Program("""
kernel col_shift(x: f32[M, N], c: f32[N]) -> f32[M, N] {
    return x - c
}""", S2),
    "outer_product": Program("""
kernel outer_product(r: f32[M], c: f32[N]) -> f32[M, N] {
    return r * c
}""", S2),
    "transposed_result": Program("""
kernel transposed_result(x: f32[M, N], c: f32[N]) -> f32[N, M] {
    return x * 2.0 + c
}""", S2),
    "transposed_result_f16": Program("""
kernel transposed_result_f16(x: f16[M, N], r: f16[M]) -> f16[N, M] {
    return x - r
}""", S2),
    "transposed_input": Program("""
kernel transposed_input(a: f32[M, N], b: f32[N, M]) -> f32[M, N] {
    return a - b
}""", S2),
    # transposing tiles (both loops >= 16): a copy, a batched scaled copy, two results in two layouts
    "transpose_copy_f16": Program("""
kernel transpose_copy_f16(x: f16[M, N]) -> f16[N, M] {
    return x.T
}""", S2),
    "transpose_batched_bf16": Program("""
kernel transpose_batched_bf16(x: bf16[B, T, C], s: f32) -> bf16[B, C, T] {
    return x.T * s
}""", S3),
    "transpose_two_layouts": Program("""
kernel transpose_two_layouts(x: f16[M, N], b: f32[N], y: bf16[N, M]) -> (f32[N, M], f16[M, N]) {
    z = x * b + y.T
    return z.T, f16(z)
}""", S2),
    # five f64 operands across the walk: 64x64 tiles of them would take 166 KB of static shared
    # memory (the launch would fail), so the tile shrinks to 32x32
    "transpose_many_f64": Program("""
kernel transpose_many_f64(a: f64[M, N], b: f64[N, M], c: f64[N, M], d: f64[N, M]) -> (f64[N, M], f64[N, M]) {
    z = a + b.T * c.T + d.T
    return z.T, (z * 2.0).T
}""", S2),
    # results over whole rows stored across them: the reduce group writes the row statistics
    # and a pointwise group writes the result through transposing tiles (partition.py)
    "softmax_stored_across_rows_f16": Program("""
kernel softmax_stored_across_rows_f16(x: f16[M, N]) -> f16[N, M] {
    e = exp(x - max(x, axis=N))
    return f16(e / sum(e, axis=N)).T
}""", S2),
    "scaled_by_row_sums_across_bf16": Program("""
kernel scaled_by_row_sums_across_bf16(x: bf16[M, N], y: f32[M]) -> (f32[N, M], f32[M]) {
    s = sum(x, axis=N)
    return x.T * s + y, s
}""", S2),
    "centered_columns_across": Program("""
kernel centered_columns_across(x: f32[M, N]) -> f32[N, M] {
    return (x - mean(x, axis=M)).T
}""", S2),
    "transpose_skinny_f16": Program("""
kernel transpose_skinny_f16(x: f16[M, N]) -> f16[N, M] {
    return x.T
}""", S2_SKINNY),
    "transposed_sum_skinny": Program("""
kernel transposed_sum_skinny(x: f32[M, N], y: f32[N, M], c: f32[N]) -> (f32[N, M], f32[M, N]) {
    z = x + y.T * c
    return z.T, z
}""", S2_SKINNY),
    "centered_rows_across_skinny_bf16": Program("""
kernel centered_rows_across_skinny_bf16(x: bf16[M, N]) -> f32[N, M] {
    return (x - max(x, axis=N)).T
}""", S2_SKINNY),
    "mixed_order_3d": Program("""
kernel mixed_order_3d(x: f32[B, T, C], y: f32[C, B], z: f32[T]) -> f32[T, B, C] {
    return x * y + z
}""", S3),
    "mixed_dtypes": Program("""
kernel mixed_dtypes(x: f16[B, T, C], b: bf16[C]) -> f32[B, T, C] {
    return x + b
}""", S3),
    "axpby_scalars": Program("""
kernel axpby_scalars(x: f32[N], y: f32[N], a: f32, b: f32 = 0.5) -> f32[N] {
    return a * x + b * y
}""", S1),
    "int_pointwise": Program("""
kernel int_pointwise(x: i32[M, N], k: i32, y: i32[N]) -> i32[M, N] {
    return x * k + y - 3
}""", S2),
    "chain_math": Program("""
kernel chain_math(x: f32[M, N]) -> f32[M, N] {
    a = tanh(x) * sigmoid(x) + silu(x) - exp2(-abs(x)) + log2(abs(x) + 1.0)
    b = maximum(x, 0.25) * minimum(x, -0.25) + floor(x * 4.0) - ceil(x * 2.0)
    return (a + b) / (abs(x) + 1.0) + sqrt(abs(x)) * (abs(x) ** 1.5) - relu(-x)
}""", S2, _normal_args()),
    "chain5": Program("""
kernel chain5(x: f32[M, N]) -> f32[M, N] {
    return sigmoid(relu((x + 1.0) * 2.0) - 0.5)
}""", S2),
    "several_outputs": Program("""
kernel several_outputs(x: f32[M, N], y: f32[N]) -> (f32[M, N], f16[M, N], f32[N, M]) {
    s = x + y
    return s, f16(s * s), s - 1.0
}""", S2),
    "outputs_of_different_dims": Program("""
kernel outputs_of_different_dims(x: f32[M, N]) -> (f32[M], f32[M, N]) {
    m = max(x, axis=N)
    return m, x - m
}""", S2),
    # --- masks and indices ---
    "causal_mask": Program("""
kernel causal_mask(x: f32[M, N]) -> f32[M, N] {
    return where(idx(N) <= idx(M), x, 0.0)
}""", S2),
    "where_values_f16": Program("""
kernel where_values_f16(x: f16[M, N], y: f16[M, N]) -> f16[M, N] {
    return where(x > y, x - y, (y - x) * 0.5)
}""", S2),
    "index_values": Program("""
kernel index_values(x: f32[M, N]) -> (i64[M, N], i64[N, M]) {
    v = idx(M) * 100000 + idx(N)
    return v, v
}""", S2),
    "threshold_bool": Program("""
kernel threshold_bool(x: f32[M, N], t: f32) -> bool[M, N] {
    return x > t
}""", S2),
    "causal_softmax": Program("""
kernel causal_softmax(x: f32[M, N]) -> f32[M, N] {
    s = where(idx(N) <= idx(M), x, -inf)
    e = exp(s - max(s, axis=N))
    return e / sum(e, axis=N)
}""", S2),
    # --- casts ---
    "casts_from_f32": Program("""
kernel casts_from_f32(x: f32[N]) -> (f16[N], bf16[N], i32[N], f32[N]) {
    return f16(x), bf16(x * 2.0), i32(floor(x * 4.0)), f32(f16(x)) - x
}""", S1, _normal_args(scale=8.0)),
    "casts_from_int": Program("""
kernel casts_from_int(x: i32[M, N]) -> (f32[M, N], f16[M, N]) {
    return f32(x) * 0.5 + 1.0, f16(x)
}""", S2),
    # --- integer reductions ---
    "int_sums": Program("""
kernel int_sums(x: i32[M, N]) -> (i64[M], i32[N]) {
    return sum(x, axis=N), sum(x, axis=M)
}""", S2),
    # --- reductions over the inner dim ---
    "inner_sum_max_min": Program("""
kernel inner_sum_max_min(x: f32[M, N]) -> (f32[M], f32[M], f32[M]) {
    return sum(x, axis=N), max(x, axis=N), min(x, axis=N)
}""", S2, _normal_args("offset")),
    "inner_mean_f16": Program("""
kernel inner_mean_f16(x: f16[M, N]) -> f32[M] {
    return mean(x, axis=N)
}""", S2, _normal_args("offset")),
    # --- reductions over an outer dim ---
    "outer_sum_max": Program("""
kernel outer_sum_max(x: f32[M, N]) -> (f32[N], f32[N]) {
    return sum(x, axis=M), max(x, axis=M)
}""", S2, _normal_args("offset")),
    "outer_mean_f16": Program("""
kernel outer_mean_f16(x: f16[M, N]) -> f16[N] {
    return mean(x, axis=M)
}""", S2, _normal_args("offset")),
    # --- a middle dim ---
    "middle_sum": Program("""
kernel middle_sum(x: f32[B, T, C]) -> f32[B, C] {
    return sum(x, axis=T)
}""", S3, _normal_args("offset")),
    "middle_max_transposed_f16": Program("""
kernel middle_max_transposed_f16(x: f16[B, T, C]) -> f16[C, B] {
    return max(x, axis=T)
}""", S3),
    # --- several dims ---
    "reduce_inner_two": Program("""
kernel reduce_inner_two(x: f32[B, M, N]) -> f32[B] {
    return sum(x, axis=(M, N))
}""", S3_BMN, _normal_args("offset")),
    "reduce_outer_and_inner": Program("""
kernel reduce_outer_and_inner(x: f32[B, M, N]) -> f32[M] {
    return max(x, axis=(B, N))
}""", S3_BMN),
    "reduce_outer_two": Program("""
kernel reduce_outer_two(x: f32[B, M, N]) -> f32[N] {
    return sum(x, axis=(B, M))
}""", S3_BMN, _normal_args("offset")),
    "channel_center_3d": Program("""
kernel channel_center_3d(x: f32[B, T, C]) -> f32[B, T, C] {
    return x - mean(x, axis=(B, T))
}""", S3, _normal_args("offset")),
    # --- full reductions to a scalar (up to 10**7 elements) ---
    "full_sum_squares": Program("""
kernel full_sum_squares(x: f32[N]) -> f32 {
    return sum(x * x)
}""", [{"N": n} for n in (1, 7, 1000, 1_000_003, 10_000_000)]),
    "full_max_mean_2d": Program("""
kernel full_max_mean_2d(x: f32[M, N]) -> (f32, f32) {
    return max(abs(x)), mean(x)
}""", S2 + [{"M": 2500, "N": 4000}], _normal_args("offset")),
    "full_int_sum": Program("""
kernel full_int_sum(x: i32[N]) -> i64 {
    return sum(x)
}""", [{"N": n} for n in (1, 7, 1000, 1_000_003, 10_000_000)]),
    # --- normalizations and statistics ---
    "logsumexp": Program("""
kernel logsumexp(x: f32[M, N]) -> f32[M] {
    m = max(x, axis=N)
    return log(sum(exp(x - m), axis=N)) + m
}""", S2, _normal_args(scale=3.0)),
    "l2_normalize": Program("""
kernel l2_normalize(x: f32[M, N]) -> f32[M, N] {
    return x * rsqrt(sum(x * x, axis=N) + 1e-12)
}""", S2, _normal_args()),
    "mean_variance": Program("""
kernel mean_variance(x: f32[M, N]) -> (f32[M], f32[M]) {
    mu = mean(x, axis=N)
    xc = x - mu
    return mu, mean(xc * xc, axis=N)
}""", S2, _normal_args("offset")),
    "softmax_outer": Program("""
kernel softmax_outer(x: f32[M, N]) -> f32[M, N] {
    e = exp(x - max(x, axis=M))
    return e / sum(e, axis=M)
}""", S2),
    # reductions across memory (partition.walks_across): a group a level, the result pointwise
    "softmax_outer_skinny_f16": Program("""
kernel softmax_outer_skinny_f16(x: f16[M, N]) -> f16[M, N] {
    e = exp(x - max(x, axis=M))
    return f16(e / sum(e, axis=M))
}""", S2_SKINNY),
    "variance_over_t_bf16": Program("""
kernel variance_over_t_bf16(x: bf16[B, T, C]) -> (f32[B, C], f32[B, T, C]) {
    m = mean(x, axis=T)
    d = x - m
    v = mean(d * d, axis=T)
    return v, d * rsqrt(v + 0.001)
}""", S3, _normal_args("offset")),
    # --- programs that need two kernels (a reduction feeding another reduction/pass) ---
    "two_pass_centered_sq": Program("""
kernel two_pass_centered_sq(x: f32[M, N]) -> f32[M] {
    return sum((x - mean(x, axis=M)) ** 2, axis=N)
}""", S2, _normal_args("offset")),
    "column_normalize": Program("""
kernel column_normalize(x: f32[M, N]) -> f32[M, N] {
    return x / sum(abs(x), axis=M)
}""", S2),
    # --- a literal dim ---
    "literal_dim": Program("""
kernel literal_dim(x: f32[M, 4], w: f32[4]) -> f32[M] {
    return sum(x * w, axis=4)
}""", [{"M": m} for m in (1, 7, 1000, 100_003)], _normal_args("offset")),
}


def _program_cases():
    for name, prog in PROGRAMS.items():
        for extents in prog.shapes:
            sid = "x".join(f"{d}{v}" for d, v in extents.items())
            yield pytest.param(name, extents, id=f"{name}-{sid}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, extents", list(_program_cases()))
def test_generated_program(name, extents, mode, rng):
    prog = PROGRAMS[name]
    k = compiled(prog.src)
    full = dict(k.graph.fixed_extents)
    full.update(extents)
    host = prog.make(rng, k, full) if prog.make else host_arguments(k, full, int(rng.integers(2 ** 62)))
    check(k, host, full, mode, tolerance=prog.tolerance)


def test_every_generated_program_compiles_to_one_kernel():
    for name, prog in PROGRAMS.items():
        k = compiled(prog.src)
        assert isinstance(k, tiledsl.Kernel) and k.name == name


# ---- many sizes, one kernel ----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_many_sizes_in_a_row(mode, rng):
    """64 consecutive sizes through one Kernel object: every launch is right (a per-size
    specialization, if any, must not leak between sizes)."""
    k = compiled("add_scale_bias_relu.tdsl")
    for n in range(1000, 1064):
        host = host_arguments(k, {"N": n}, int(rng.integers(2 ** 62)))
        check(k, host, {"N": n}, mode)
    s = compiled("softmax.tdsl")
    for m, n in ((1, 1), (5, 1000), (1, 1001), (3, 2), (130, 31), (2, 8193), (1, 1)):
        host = host_arguments(s, {"M": m, "N": n}, int(rng.integers(2 ** 62)))
        check(s, host, {"M": m, "N": n}, mode)


def test_keyword_and_scalar_forms(rng):
    k = compiled("layernorm.tdsl")
    e = {"M": 33, "N": 1031}
    x, w, b = host_arguments(k, e, int(rng.integers(2 ** 62)))[:3]
    check(k, [x, w, b], e, "alloc", host_kwargs={"eps": 0.25})
    check(k, [x, w, b, np.float32(0.25)], e, "out")                 # a NumPy scalar as eps
    a = compiled("add_scale_bias_relu.tdsl")
    xs = [draw(rng, 4097, np.float32) for _ in range(3)]
    check(a, [xs[0], xs[1], np.array(1.5), xs[2]], {"N": 4097}, "out",   # a 0-d array scalar
          device_args=[to_device(xs[0]), to_device(xs[1]), np.array(1.5), to_device(xs[2])])


@pytest.mark.parametrize("which", ["casts", "wraps"])
def test_number_type_edges_on_the_gpu_match_the_reference(which, rng):
    """Floats cast to every integer type (NaN, infinities, past each range: toward zero,
    saturating, NaN -> 0) and i32/i64 arithmetic that overflows (wrapping; NVCC folded
    `x + 1 > x` to true where C++ leaves overflow undefined) give the reference's exact
    values on the GPU, every output poisoned first."""
    import cupy
    import edge_values
    src, args = ((edge_values.CASTS, edge_values.cast_inputs(rng)) if which == "casts"
                 else (edge_values.WRAPS, edge_values.wrap_inputs(rng)))
    k = fresh(src)
    want = k.reference(*args)
    for poison_value in (7, 0):      # (twice: an unwritten bool shows under one of the two)
        outs = tuple(cupy.full(np.shape(w), poison_value, np.asarray(w).dtype) for w in want)
        got = k(*[cupy.asarray(a) for a in args], out=outs)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(cupy.asnumpy(g), w)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_a_16_bit_gelu_is_correctly_rounded_nearly_everywhere_on_the_gpu(dtype):
    """gelu of every finite f16 and bf16 value, its output poisoned, against the float64
    gelu rounded to the same type: as on the host (test_host_kernels), at most
    GELU_16_MISSES results miss the correct rounding, each by one unit, now with the
    hardware's approximate exp2 and reciprocal. Their flushing takes results below f32's
    smallest normal (bf16 x near -13) to zero, which counts as right."""
    import edge_values
    k = fresh(edge_values.GELU_16.format(t=dtype))
    x = edge_values.every_finite_16_bit(dtype)
    out = poison((x.size,), dtype)
    got = np.asarray(to_host(k(to_device(x), out=out))).astype(x.dtype)   # (torch's bf16 comes back as f32)
    want = np.asarray(k.reference(x, compute="f64"), np.float64)
    flushed = (np.abs(want) < np.finfo(np.float32).tiny) & (got.astype(np.float64) == 0)
    misses, units = edge_values.rounding_misses(got, np.where(flushed, 0.0, want))
    assert misses <= edge_values.GELU_16_MISSES and units <= 1, (misses, units)


# ---- non-contiguous inputs -----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_strided_slices_as_inputs(mode, rng):
    import cupy
    soft = compiled("softmax.tdsl")
    big = draw(rng, (129, 2 * 1023), np.float32, scale=3.0)
    dev = cupy.asarray(big)
    check(soft, [big[:, ::2]], {"M": 129, "N": 1023}, mode, device_args=[dev[:, ::2]],
          label="x[:, ::2]")
    check(soft, [big[::3, 5:905]], {"M": 43, "N": 900}, mode, device_args=[dev[::3, 5:905]],
          label="x[::3, 5:905]")

    asbr = compiled("add_scale_bias_relu.tdsl")
    n = 10_001
    x3 = draw(rng, 3 * n, np.float32)
    ycol = draw(rng, (n, 5), np.float32)
    b = draw(rng, n, np.float32)
    check(asbr, [x3[::3], ycol[:, 2], 0.75, b], {"N": n}, mode,
          device_args=[cupy.asarray(x3)[::3], cupy.asarray(ycol)[:, 2], 0.75, cupy.asarray(b)],
          label="x[::3], y[:, 2]")

    ln = compiled("layernorm.tdsl")
    xs = draw(rng, (64, 2 * 4096), np.float16)
    w, bb = draw(rng, 8192, np.float32), draw(rng, 8192, np.float32)
    check(ln, [xs[:, ::2], w[::2], bb[1::2]], {"M": 64, "N": 4096}, mode,
          device_args=[cupy.asarray(xs)[:, ::2], cupy.asarray(w)[::2], cupy.asarray(bb)[1::2]],
          label="x[:, ::2], w[::2], b[1::2]")


@pytest.mark.parametrize("mode", MODES)
def test_transposed_views_as_inputs(mode, rng):
    """x.T of a C-contiguous [N, M] array where the kernel expects [M, N]: the same
    numbers as the host's x.T, in Fortran order on the device."""
    import cupy
    soft = compiled("softmax.tdsl")
    a = draw(rng, (1023, 129), np.float32, scale=2.0)           # [N, M] in memory
    check(soft, [a.T], {"M": 129, "N": 1023}, mode, device_args=[cupy.asarray(a).T], label="x.T")

    col = compiled("column_sum.tdsl")
    check(col, [a.T], {"M": 129, "N": 1023}, mode, device_args=[cupy.asarray(a).T], label="x.T")

    tin = compiled(PROGRAMS["transposed_input"].src)
    m, n = 257, 1031
    amn = draw(rng, (m, n), np.float32)
    bmn = draw(rng, (m, n), np.float32)                          # b is declared [N, M]: pass b.T
    check(tin, [amn, bmn.T], {"M": m, "N": n}, mode,
          device_args=[cupy.asarray(amn), cupy.asarray(bmn).T], label="b.T")

    mix = compiled(PROGRAMS["mixed_order_3d"].src)
    e = {"B": 3, "T": 65, "C": 257}
    x = draw(rng, (3, 65, 257), np.float32)
    y_bc = draw(rng, (3, 257), np.float32)                       # y is declared [C, B]
    z = draw(rng, 65, np.float32)
    check(mix, [x, y_bc.T, z], e, mode,
          device_args=[cupy.asarray(x), cupy.asarray(y_bc).T, cupy.asarray(z)], label="y.T")
    # a 3-D input with permuted strides: x stored as [C, T, B], passed transposed
    x_ctb = draw(rng, (257, 65, 3), np.float32)
    check(mix, [x_ctb.transpose(2, 1, 0), y_bc.T, z], e, mode,
          device_args=[cupy.asarray(x_ctb).transpose(2, 1, 0), cupy.asarray(y_bc).T,
                       cupy.asarray(z)], label="x.transpose(2, 1, 0)")


def test_broadcast_stride0_input(rng):
    """A zero-stride (broadcast) view as an input is read correctly."""
    import cupy
    col = compiled(PROGRAMS["col_shift"].src)
    c = draw(rng, 1023, np.float32)
    row = draw(rng, 1023, np.float32)
    host_x = np.broadcast_to(row, (65, 1023))
    check(col, [np.ascontiguousarray(host_x), c], {"M": 65, "N": 1023}, "out",
          device_args=[cupy.broadcast_to(cupy.asarray(row), (65, 1023)), cupy.asarray(c)],
          label="broadcast_to")


# ---- streams -------------------------------------------------------------------------


def test_runs_on_the_current_cupy_stream(rng):
    """Work queued on a non-blocking stream before the call is seen by the kernel, and
    the result is complete once that stream is synchronized."""
    import cupy
    k = compiled("softmax.tdsl")
    host = draw(rng, (2048, 4097), np.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x = cupy.asarray(host)
        y = x * 0.0
        for _ in range(20):            # keep the stream busy so a wrong stream would race
            y = y + x * 0.05
        out = poison((2048, 4097), "f32")
        k(y, out=out)
        alloc = k(y)
    stream.synchronize()
    from tiledsl.inputs import relative_error
    ref = k.reference(to_host(y), compute="f64")
    assert relative_error(to_host(out), ref) <= 1e-5
    assert relative_error(to_host(alloc), ref) <= 1e-5


# ---- torch tensors -------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_torch_tensors_as_inputs(mode, rng):
    torch = require_torch()
    soft = compiled("softmax.tdsl")
    host = draw(rng, (129, 1023), np.float32, scale=2.0)
    check(soft, [host], {"M": 129, "N": 1023}, mode, device_args=[torch.from_numpy(host).cuda()],
          out_lib="torch" if mode == "out" else "cupy", label="torch")
    # a transposed torch view
    check(soft, [host.T], {"M": 1023, "N": 129}, mode,
          device_args=[torch.from_numpy(host).cuda().t()], label="torch .t()")

    ln = compiled("layernorm.tdsl")
    e = {"M": 65, "N": 1000}
    args = host_arguments(ln, e, int(rng.integers(2 ** 62)))
    check(ln, args, e, mode, device_args=[to_device(a, "torch") for a in args],
          out_lib="torch" if mode == "out" else "cupy", label="torch")

    gelu = compiled("gelu_bias.tdsl")        # bf16 in and out, as torch tensors
    e = {"B": 2, "T": 33, "C": 1031}
    args = host_arguments(gelu, e, int(rng.integers(2 ** 62)))
    check(gelu, args, e, mode, device_args=[to_device(a, "torch") for a in args],
          out_lib="torch" if mode == "out" else "cupy", label="torch bf16")


def test_torch_and_cupy_mixed(rng):
    torch = require_torch()
    import cupy
    k = compiled("add_scale_bias_relu.tdsl")
    e = {"N": 12_345}
    x, y, s, b = host_arguments(k, e, int(rng.integers(2 ** 62)))
    check(k, [x, y, s, b], e, "out",
          device_args=[torch.from_numpy(x).cuda(), cupy.asarray(y), s, torch.from_numpy(b).cuda()],
          label="torch + cupy")


# ---- errors: nothing launches and nothing is written ---------------------------------


def _poisoned_out(k, extents):
    outs = [poison(shape, res.dtype) for shape, res in zip(result_shapes(k, extents), k.graph.results)]
    return outs, (outs[0] if len(outs) == 1 else tuple(outs))


def _assert_untouched(outs):
    synchronize()
    for i, o in enumerate(as_list(outs)):
        assert still_poisoned(o), f"out= buffer {i} was written by a call that raised"


def test_numpy_input_points_to_reference(rng):
    k = compiled("softmax.tdsl")
    e = {"M": 4, "N": 9}
    outs, out = _poisoned_out(k, e)
    with pytest.raises(TdslArgumentError) as info:
        k(draw(rng, (4, 9), np.float32), out=out)
    assert ".reference" in str(info.value)
    _assert_untouched(outs)

    ln = compiled("layernorm.tdsl")
    e = {"M": 4, "N": 9}
    outs, out = _poisoned_out(ln, e)
    x = to_device(draw(rng, (4, 9), np.float16))
    with pytest.raises(TdslArgumentError) as info:
        ln(x, draw(rng, 9, np.float32), to_device(draw(rng, 9, np.float32)), out=out)
    assert "'w'" in str(info.value) and ".reference" in str(info.value)
    _assert_untouched(outs)


def test_numpy_out_buffer_is_rejected(rng):
    k = compiled("softmax.tdsl")
    x = to_device(draw(rng, (4, 9), np.float32))
    host_out = np.full((4, 9), np.nan, np.float32)
    with pytest.raises(TdslArgumentError):
        k(x, out=host_out)
    assert np.all(np.isnan(host_out))


def test_wrong_dtype_writes_nothing(rng):
    ln = compiled("layernorm.tdsl")
    e = {"M": 8, "N": 64}
    outs, out = _poisoned_out(ln, e)
    x32 = to_device(draw(rng, (8, 64), np.float32))                 # declared f16
    w, b = to_device(draw(rng, 64, np.float32)), to_device(draw(rng, 64, np.float32))
    with pytest.raises(TdslTypeError) as info:
        ln(x32, w, b, out=out)
    assert "'x' is declared f16 but the array is f32" in str(info.value)
    _assert_untouched(outs)

    gelu = compiled("gelu_bias.tdsl")
    e = {"B": 1, "T": 2, "C": 3}
    outs, out = _poisoned_out(gelu, e)
    with pytest.raises(TdslTypeError, match="'bias' is declared bf16 but the array is f16"):
        gelu(to_device(draw(rng, (1, 2, 3), bf16_numpy())), to_device(draw(rng, 3, np.float16)),
             out=out)
    _assert_untouched(outs)

    ints = compiled(PROGRAMS["int_sums"].src)
    e = {"M": 3, "N": 5}
    outs, out = _poisoned_out(ints, e)
    with pytest.raises(TdslTypeError):
        ints(to_device(draw(rng, (3, 5), np.int64)), out=out)
    _assert_untouched(outs)


def test_wrong_shape_writes_nothing(rng):
    k = compiled("add_scale_bias_relu.tdsl")
    e = {"N": 1024}
    outs, out = _poisoned_out(k, e)
    x = to_device(draw(rng, 1024, np.float32))
    with pytest.raises(TdslShapeError) as info:
        k(x, x, 1.0, to_device(draw(rng, 1000, np.float32)), out=out)
    assert "dim N: x has 1024, bias has 1000" in str(info.value)
    _assert_untouched(outs)

    soft = compiled("softmax.tdsl")
    e = {"M": 2, "N": 3}
    outs, out = _poisoned_out(soft, e)
    with pytest.raises(TdslShapeError, match=r"shape \(6,\)"):
        soft(to_device(draw(rng, 6, np.float32)), out=out)
    with pytest.raises(TdslShapeError):
        soft(to_device(draw(rng, (1, 2, 3), np.float32)), out=out)
    _assert_untouched(outs)


def test_wrong_argument_count_writes_nothing(rng):
    k = compiled("add_scale_bias_relu.tdsl")
    outs, out = _poisoned_out(k, {"N": 16})
    x = to_device(draw(rng, 16, np.float32))
    with pytest.raises(TdslArgumentError, match="missing 1 argument: bias"):
        k(x, x, 1.0, out=out)
    with pytest.raises(TdslArgumentError, match="takes 4 arguments"):
        k(x, x, 1.0, x, x, out=out)
    with pytest.raises(TdslArgumentError, match="has no parameter 'scale'"):
        k(x, x, bias=x, scale=1.0, out=out)
    with pytest.raises(TdslTypeError):
        k(x, x, "2", x, out=out)
    _assert_untouched(outs)


def test_bad_out_buffers_are_rejected(rng):
    """out= of the wrong shape, dtype, count, or non-contiguous, or two results sharing
    one buffer: an error (a TdslError subclass) and no launch."""
    import cupy
    soft = compiled("softmax.tdsl")
    x = to_device(draw(rng, (16, 33), np.float32))
    for bad in (poison((16, 32), "f32"), poison((33, 16), "f32"), poison((16, 33), "f16"),
                poison((16, 33, 1), "f32")):
        with pytest.raises((TdslArgumentError, TdslShapeError, TdslTypeError)):
            soft(x, out=bad)
        _assert_untouched([bad])
    wide = poison((16, 66), "f32")
    with pytest.raises(TdslArgumentError):
        soft(x, out=wide[:, ::2])                                   # non-contiguous
    _assert_untouched([wide])

    sc = compiled("sincos.tdsl")
    xs = to_device(draw(rng, 100, np.float32))
    one = poison((100,), "f32")
    with pytest.raises(TdslArgumentError):
        sc(xs, out=one)                                             # two results, one buffer
    with pytest.raises(TdslArgumentError):
        sc(xs, out=(one, one))                                      # overlapping outputs
    big = poison((150,), "f32")
    with pytest.raises(TdslArgumentError):
        sc(xs, out=(big[:100], big[50:]))                           # partly overlapping
    _assert_untouched([one, big])
    ok = (poison((100,), "f32"), cupy.full((100,), np.nan, np.float32))
    sc(xs, out=ok)                                                  # and a good pair works
    synchronize()
    assert not any(np.isnan(to_host(o)).any() for o in ok)


def test_arrays_on_two_devices_are_rejected(rng):
    if device_count() < 2:
        pytest.skip("needs two GPUs")
    import cupy
    k = compiled("add_scale_bias_relu.tdsl")
    host = [draw(rng, 1000, np.float32) for _ in range(3)]
    with cupy.cuda.Device(0):
        x, y = cupy.asarray(host[0]), cupy.asarray(host[1])
        out = poison((1000,), "f32")
    with cupy.cuda.Device(1):
        b = cupy.asarray(host[2])
    with cupy.cuda.Device(0):
        with pytest.raises(TdslError) as info:
            k(x, y, 1.0, b, out=out)
        assert "device" in str(info.value).lower()
        _assert_untouched([out])
    with cupy.cuda.Device(1):
        out1 = poison((1000,), "f32")
    with cupy.cuda.Device(0):
        with pytest.raises(TdslError):
            k(x, y, 1.0, x, out=out1)                               # out= on the other device
    with cupy.cuda.Device(1):
        _assert_untouched([out1])
    # all on device 1 works, with device 1 current
    with cupy.cuda.Device(1):
        args = [cupy.asarray(h) for h in host]
        got = k(args[0], args[1], 1.0, args[2])
        ref = k.reference(host[0], host[1], 1.0, host[2], compute="f64")
        from tiledsl.inputs import relative_error
        assert relative_error(to_host(got), ref) <= 1e-5


# ---- more than 2**31 elements ----------------------------------------------------------
HUGE = {
    "f16": ("""
kernel inc_f16(x: f16[N]) -> f16[N] {
    return x + 1.0
}""", np.float16),
    "i8": ("""
kernel inc_i8(x: i8[N]) -> i8[N] {
    return x + 1
}""", np.int8),
}


def _fill_huge(x, dtype, seed: int, chunk: int = 1 << 27) -> None:
    """Random values into a huge 1-D device array, a chunk at a time (little extra memory)."""
    import cupy
    rs = cupy.random.RandomState(seed)
    n = x.size
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        if dtype == np.int8:
            x[start:stop] = rs.randint(-100, 101, size=stop - start, dtype=np.int32).astype(cupy.int8)
        else:
            x[start:stop] = rs.standard_normal(stop - start, dtype=cupy.float32).astype(dtype)


def _expected_inc(x, dtype):
    if dtype == np.int8:
        return (x.astype(np.int32) + 1).astype(np.int8)
    return (x.astype(np.float32) + np.float32(1)).astype(dtype)


def _device_mismatches(x, y, dtype, chunk: int = 1 << 27) -> int:
    bad = 0
    for start in range(0, x.size, chunk):
        stop = min(x.size, start + chunk)
        bad += int((y[start:stop] != _expected_inc(x[start:stop], dtype)).sum())
    return bad


@pytest.mark.slow
@pytest.mark.parametrize("n", [2 ** 31 + 3, 2 ** 31 - 1])     # past 32-bit indices; a step short of them
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("which", list(HUGE))
def test_pointwise_over_2_to_the_31_elements(which, mode, n):
    import cupy
    src, dtype = HUGE[which]
    k = compiled(src)
    itemsize = np.dtype(dtype).itemsize
    free, _total = cupy.cuda.runtime.memGetInfo()
    need = 2 * n * itemsize + (1 << 31)           # x, y, and chunked temporaries
    if free < need:
        pytest.skip(f"needs {need / 2**30:.1f} GiB free on the GPU, has {free / 2**30:.1f}")
    seed = fresh_seed()
    print(f"{which} {mode}: seed {seed} (replay with TDSL_TEST_SEED={seed})")
    x = cupy.empty(n, dtype=dtype)
    _fill_huge(x, dtype, seed % (2 ** 31))
    if mode == "alloc":
        y = k(x)
    else:
        y = poison((n,), k.graph.results[0].dtype)
        returned = k(x, out=y)
        assert returned is None or returned is y or int(returned.data.ptr) == int(y.data.ptr)
    synchronize()
    assert tuple(y.shape) == (n,) and y.dtype == np.dtype(dtype)

    # spot check on the host: every 7919th element, both ends, around element 2**31 and
    # around byte offset 2**31
    pos = sample_positions(n, 7919, around=(2 ** 31, (2 ** 31) // itemsize))
    idx = cupy.asarray(pos)
    xs, ys = x[idx].get(), y[idx].get()
    np.testing.assert_array_equal(ys, _expected_inc(xs, dtype))
    np.testing.assert_array_equal(ys, k.reference(xs))        # the project's reference agrees
    # the last elements, past 2**31, exactly
    np.testing.assert_array_equal(y[-8:].get(), _expected_inc(x[-8:].get(), dtype))
    # and every element, compared on the device with CuPy
    assert _device_mismatches(x, y, dtype) == 0
    del x, y, idx


@pytest.mark.slow
def test_a_row_one_step_short_of_2_to_the_31_elements():
    """A single row of 2**31 - 5 (its walks' steps past the end once wrapped 32-bit indices:
    problem.INDEX32_SPAN), summed whole by the default, against CuPy's float64 sum."""
    import cupy
    k = compiled("kernel total(x: f16[N]) -> f32 { return sum(f32(x), axis=N) }")
    n = 2 ** 31 - 5
    free, _total = cupy.cuda.runtime.memGetInfo()
    if free < 2 * n * 2:
        pytest.skip(f"needs {4 * n / 2**30:.1f} GiB free on the GPU, has {free / 2**30:.1f}")
    seed = fresh_seed()
    print(f"seed {seed} (replay with TDSL_TEST_SEED={seed})")
    x = cupy.empty(n, dtype=np.float16)
    _fill_huge(x, np.float16, seed % (2 ** 31))
    x[-3:] = 60000.0        # the row's last elements outweigh the bound: a sum that stops short fails
    want = sum(float(x[i:i + (1 << 27)].sum(dtype=cupy.float64)) for i in range(0, n, 1 << 27))
    got = float(k(x))
    assert abs(got - want) <= 1e-5 * float(cupy.abs(x).sum(dtype=cupy.float64)), (got, want)
    del x


# ---- products with a vector: sums of products ----------------------------------------------

VECTOR_PRODUCTS = {
    "mv": "kernel mv(a: f32[M, K], v: f32[K]) -> f32[M] { return a @ v }",
    "mv_f16_epilogue": "kernel mv16(a: f16[M, K], v: f16[K], b: f32[M]) -> f16[M] { return relu(a @ v + b) }",
    "vm": "kernel vm(x: f32[K], w: f32[K, N]) -> f32[N] { return x @ w }",
    "vm_bf16": "kernel vm16(x: bf16[K], w: bf16[K, N]) -> bf16[N] { return x @ w }",
    "dot": "kernel dot(a: f32[K], b: f32[K]) -> f32 { return a @ b }",
    "batched_mv": "kernel bmv(a: f32[B, M, K], v: f32[K]) -> f32[B, M] { return a @ v }",
}


@pytest.mark.parametrize("size", [1, 7, 1000, 4099, 1 << 20])
@pytest.mark.parametrize("name", list(VECTOR_PRODUCTS))
def test_products_with_a_vector(name, size):
    """A @ v, v @ B and dot products run as reductions: exact at tails, size 1, long K."""
    k = compiled(VECTOR_PRODUCTS[name])
    dims = k.graph.dims
    if size == 1 << 20 and len(dims) > 1:
        extents = {d: (3 if d == "B" else 1 << 20 if d == "K" else 5) for d in dims}   # long K, few rows
    else:
        extents = {d: (3 if d == "B" else size if d == "K" else max(1, size // 3 + 1)) for d in dims}
    check(k, host_arguments(k, extents), extents, "out")
    if size == 4099:    # and many rows against a short K
        wide = {d: (2 if d == "B" else 33 if d == "K" else 20000) for d in dims}
        check(k, host_arguments(k, wide), wide, "alloc")


# ---- every row-reduction schedule ----------------------------------------------------------

# Enough rows for the persistent (blocks_per_sm) and prefetching schedules to be candidates,
# with row counts and row lengths that leave partial blocks and partial vectors.
ROW_PROGRAMS = [("softmax.tdsl", dict(M=1001, N=781)), ("softmax.tdsl", dict(M=700, N=4100)),
                ("layernorm.tdsl", dict(M=611, N=8192 + 8)), ("rmsnorm.tdsl", dict(M=999, N=1032)),
                # f16 weights hoisted and kept packed (keep_packed), and scalar rows of them
                ("layernorm_f16", dict(M=611, N=8192 + 8)), ("layernorm_f16", dict(M=577, N=1031)),
                # rows moved through their prefetch buffers (bf16 and f32 rows with f32 weights)
                ("layernorm_bf16_f32w", dict(M=611, N=8192 + 8)), ("layernorm_f32", dict(M=611, N=6144 + 4))]
# Shapes whose rows fit a shared-memory ring: only the ring schedules of these (f16 rows with
# hoisted and unhoisted f32 weights, f32 rows), with partial vectors per thread at the row's end.
RING_PROGRAMS = [("layernorm.tdsl", dict(M=1001, N=1032)), ("softmax.tdsl", dict(M=777, N=1028))]
# Short rows: only the candidates of a warp a row or part of one (several rows a warp).
SHORT_ROW_PROGRAMS = [("softmax.tdsl", dict(M=1001, N=24)), ("layernorm_f16", dict(M=611, N=100))]


def _row_program(name: str):
    return compiled(name) if name.endswith(".tdsl") else compiled(VARIANTS[name])


def _row_candidates():
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import candidates
    from tiledsl.schedule.problem import problem
    for name, extents, only in ([(*np_, "all") for np_ in ROW_PROGRAMS] + [(*np_, "rings") for np_ in RING_PROGRAMS]
                                + [(*np_, "warps") for np_ in SHORT_ROW_PROGRAMS]):
        k = _row_program(name)
        launcher = launcher_for(k)
        p = problem(launcher.groups[0], launcher.layouts[0], extents, frozenset(), 132, "sm_90a")
        for s in candidates(p, k.hints):
            wanted = {"all": True, "rings": s.stages > 1, "warps": s.row_threads <= 32}[only]
            if s.kind == "reduce_row" and wanted:
                label = "x".join(map(str, extents.values()))
                yield pytest.param(name, extents, s, id=f"{name.removesuffix('.tdsl')}-{label}-{s.tag}-ps{s.blocks_per_sm}")


@pytest.mark.parametrize("name,extents,schedule", list(_row_candidates()))
def test_every_row_reduction_schedule(name, extents, schedule):
    """Each candidate the tuner may pick (prefetching or not, persistent or not) is exact
    at tails, on the device's own SM count (the grid may differ from the one planned)."""
    from tiledsl.runtime import launcher_for
    from tiledsl.runtime.launcher import set_overrides
    k = tiledsl.compile(EXAMPLES / name if name.endswith(".tdsl") else VARIANTS[name])
    k._launcher = launcher_for(k)
    set_overrides(k._launcher, {0: schedule})
    check(k, host_arguments(k, extents), extents, "out")


# Blocks of any multiple of 32 threads, their warp count no power of two (a schedule from a
# tuning database, or one written by hand): tdsl::block_reduce combined such warps wrongly
# until 2026-11-25 (softmax f32 4096x12001 at 768 threads: relative error 0.55). Rows held
# (a share of `items` elements a thread, the last partial), streamed, and split.
ODD_WARP_BLOCKS = [96, 160, 384, 736, 992]
ODD_WARP_PROGRAMS = [("softmax.tdsl", lambda b: dict(M=37, N=5 * b - 3), 5),
                     ("layernorm.tdsl", lambda b: dict(M=29, N=16 * b - 8), 2),
                     ("softmax.tdsl", lambda b: dict(M=5, N=40001), 0),
                     ("kernel m(x: f16[M, N]) -> f32[M] { return mean(x, axis=N) }", lambda b: dict(M=3, N=40009), 0)]


@pytest.mark.parametrize("peeled", [False, True])
@pytest.mark.parametrize("block", ODD_WARP_BLOCKS)
@pytest.mark.parametrize("program", range(len(ODD_WARP_PROGRAMS)))
def test_reductions_at_blocks_of_any_warp_count(program, block, peeled):
    """Rows of a length that breaks alignment read element by element, or peeled to
    aligned vectors (Schedule.peel): held (softmax over 5 * block - 3) or streamed."""
    from tiledsl.runtime import launcher_for
    from tiledsl.runtime.launcher import set_overrides
    from tiledsl.schedule.choose import default
    from tiledsl.schedule.problem import problem
    from tiledsl.schedule.rows import peel_vector, row_share
    name, extents_for, items = ODD_WARP_PROGRAMS[program]
    extents = extents_for(block)
    k = fresh(name)
    k._launcher = launcher_for(k)
    p = problem(k._launcher.groups[0], k._launcher.layouts[0], extents, frozenset(), 132, "sm_90a")
    base = default(p, k.hints)
    vec = peel_vector(p) if peeled else base.vec if not base.peel else 1
    if peeled and (vec == 1 or base.kind == "reduce_split"):
        pytest.skip("rows in vectors already, or split")
    if peeled and items:    # the whole vectors' share
        items = row_share(p.row_length // vec, block)
    if base.kind == "reduce_split":
        s = replace(base, block=block, row_threads=block, unroll=0)
    else:
        s = replace(base, kind="reduce_row", block=block, row_threads=block, items=items, keep=False,
                    prefetch=False, blocks_per_sm=0, min_blocks=1, stages=1, unroll=0, cluster=1, vec=vec,
                    peel=peeled)
        assert not items or (items - 1) * block < p.row_length // s.vec < items * block   # the last share partial
    set_overrides(k._launcher, {0: s})
    check(k, host_arguments(k, extents), extents, "out")


# Rows shared by part of a warp (row_threads 1 to 16, 32 / row_threads rows a warp): the warp
# walks its rows together and a lane past the last row stores nothing. Row counts that leave a
# warp partly past the end, row lengths that leave a share partial, results over whole rows
# (softmax, layernorm with its weights hoisted or not) and per row (a mean), and one block per SM
# so blocks loop over rows.
SUBWARP_PROGRAMS = [("softmax.tdsl", dict(M=1001, N=13)), ("softmax_f16", dict(M=37, N=8)),
                    ("layernorm.tdsl", dict(M=611, N=24)), ("rmsnorm.tdsl", dict(M=3, N=30)),
                    ("kernel m(x: f32[M, N]) -> f32[M] { return mean(x, axis=N) }", dict(M=4099, N=3))]


@pytest.mark.parametrize("vector", [False, True])
@pytest.mark.parametrize("per_sm", [0, 1])
@pytest.mark.parametrize("tpr", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("program", range(len(SUBWARP_PROGRAMS)))
def test_rows_shared_by_part_of_a_warp(program, tpr, per_sm, vector):
    from tiledsl.runtime import launcher_for
    from tiledsl.runtime.launcher import set_overrides
    from tiledsl.schedule.choose import default
    from tiledsl.schedule.problem import max_vector, problem
    from tiledsl.schedule.rows import row_share
    name, extents = SUBWARP_PROGRAMS[program]
    k = fresh(VARIANTS.get(name, name))
    k._launcher = launcher_for(k)
    p = problem(k._launcher.groups[0], k._launcher.layouts[0], extents, frozenset(), 132, "sm_90a")
    vec = max_vector(p, 0) if vector else 1
    base = default(p, k.hints)
    s = replace(base, kind="reduce_row", block=128, row_threads=tpr, vec=vec,
                items=row_share(p.row_length // vec, tpr), keep=False, prefetch=False,
                blocks_per_sm=per_sm, min_blocks=1, stages=1, unroll=0)
    set_overrides(k._launcher, {0: s})
    check(k, host_arguments(k, extents), extents, "out")


# Looped rows (too long for registers): max(x) and sum(exp(x - max)) in one pass (tdsl::online_add_chunk),
# or in two (Schedule.online), at a thread, a warp and a block a row, with rows that hold -inf, +inf
# and NaN: the result is what the two passes of the reference give (NaN, inf and finite in the same places).
ONLINE_PROGRAMS = {
    "softmax_f32": "kernel s(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}",
    "softmax_f16": "kernel s(x: f16[M, N]) -> f16[M, N] {\n e = exp(x - max(x, axis=N))\n return f16(e / sum(e, axis=N))\n}",
    "lse_f32": "kernel l(x: f32[M, N]) -> f32[M] {\n m = max(x, axis=N)\n return m + log(sum(exp(x - m), axis=N))\n}",
    "lse_f64": "kernel l(x: f64[M, N]) -> f64[M] {\n m = max(x, axis=N)\n return m + log(sum(exp(x - m), axis=N))\n}",
}


@pytest.mark.parametrize("online", [True, False])
@pytest.mark.parametrize("threads", [0, 1, 32, 1024, "held"])
@pytest.mark.parametrize("name", list(ONLINE_PROGRAMS))
def test_looped_rows_take_max_and_sum_in_one_pass(name, threads, online, rng):
    import cupy
    from tiledsl.inputs import TOLERANCE, relative_error
    from tiledsl.runtime import launcher_for
    from tiledsl.runtime.launcher import set_overrides
    from tiledsl.schedule.choose import default
    from tiledsl.schedule.problem import problem
    k = fresh(ONLINE_PROGRAMS[name])
    # a thread a row sums its row alone, in order: 40009 f32 terms of exp(x - max) in order are
    # off by ~6e-5 (NumPy, float32 one by one), 4001 by ~7e-6; that schedule takes shorter rows
    n = 4001 if threads == 1 else 40009
    extents = dict(M=13, N=n)
    k._launcher = launcher_for(k)
    p = problem(k._launcher.groups[0], k._launcher.layouts[0], extents, frozenset(), 132, "sm_90a")
    s = default(p, k.hints)
    if threads == "held":       # the default as it is: softmax's rows held peeled (a block, or a cluster's)
        if not (s.items and s.peel) or not online:
            pytest.skip("rows held peeled: softmax's default (once)")
        if s.cluster > 1:
            _needs_clusters()
        threads = 0
    elif s.items and n == 40009:    # held peeled (rows.long_row_schedule): streamed here
        s = replace(s, items=0, cluster=1, min_blocks=1)
    assert s.kind == "reduce_row" and (s.items == 0 or n < 40009 or s.peel), s
    if threads:
        peel = s.peel and threads >= 32     # (rows peeled to aligned vectors take a warp or more)
        s = replace(s, block={1: 64, 32: 128}.get(threads, threads), row_threads=threads, items=0, keep=False,
                    prefetch=False, stages=1, blocks_per_sm=0, min_blocks=1, unroll=0, peel=peel,
                    vec=s.vec if peel else 1)
    if s.items == 0:        # one pass (online) or two
        s = replace(s, online=online)
    set_overrides(k._launcher, {0: s})
    dtype = k.graph.params[0].dtype.numpy
    x = (rng.standard_normal((13, n)) * 4).astype(dtype)
    inf = np.inf
    x[0] = -inf                                     # all -inf: NaN, as exp(-inf - -inf)
    x[1, rng.integers(0, n, 50)] = -inf             # some -inf: they add nothing
    x[2, 17] = inf                                  # one +inf: NaN (exp(inf - inf) in the sum)
    x[3, n - 9] = np.nan
    x[4, :5] = -inf                                 # -inf before the first finite element
    x[5] += 60 if dtype != np.float16 else 5        # large: the max keeps exp finite
    x[6, n - 10] = 30 if dtype != np.float16 else 8  # one large element late in the row
    want = np.asarray(k.reference(x, compute="f64"))
    got = cupy.asnumpy(k(cupy.asarray(x))).astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (name, np.argwhere(np.isnan(got) != np.isnan(want))[:5])
    assert np.array_equal(np.isinf(got), np.isinf(want)) and np.array_equal(got[np.isinf(got)], want[np.isinf(want)])
    finite = np.isfinite(want)
    assert finite.sum() > want.size // 2
    err = relative_error(got[finite], want[finite])
    assert err <= TOLERANCE[k.graph.results[0].dtype.name], (name, s.tag, err)


# Reductions whose elements stream through a loop (column, split and looped row schedules), at
# sizes that leave partial blocks, chunks and vectors: every candidate, with and without an
# explicit unroll of the loop.
STREAMED_PROGRAMS = [("column_sum.tdsl", dict(M=5003, N=77)),
                     ("kernel vm(x: f32[K], w: f32[K, N]) -> f32[N] { return x @ w }", dict(K=5001, N=33)),
                     ("kernel d(x: f32[M, N], y: f32[M, N]) -> f32 { return sum(x * y) }", dict(M=33, N=5001)),
                     ("kernel m(x: f16[M, N]) -> f32[M] { return mean(x, axis=N) }", dict(M=3, N=40009)),
                     ("softmax.tdsl", dict(M=5, N=40001)),
                     # across memory, few columns: tiles of 8 and 64 columns (columns.split_schedule)
                     ("kernel c(x: f16[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=40009, N=5)),
                     ("kernel c(x: f32[M, N], y: f32[N]) -> f32[N] { return max(x * y, axis=M) }",
                      dict(M=9001, N=33)),
                     # vectors of 2, 4 and 8 columns, split or not (columns.column_vectors)
                     ("kernel c(x: f16[M, N]) -> f32[N] { return mean(x, axis=M) }", dict(M=9001, N=776)),
                     ("kernel c(x: bf16[B, T, C], s: f32) -> bf16[B, C] { return bf16(max(x, axis=T) * s) }",
                      dict(B=3, T=1001, C=264)),
                     ("kernel c(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=5003, N=1028)),
                     # 16-byte vectors of columns, a column's rows shared by a block (column_tile_split)
                     ("kernel c(x: f16[B, T, C]) -> f32[B, C] { return sum(x, axis=T) }", dict(B=2, T=5001, C=136)),
                     ("kernel c(x: bf16[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=20011, N=64)),
                     # many columns, split into chunks of their reductions (columns.columns_split)
                     ("kernel vm(x: f32[K], w: f32[K, N]) -> f32[N] { return x @ w }", dict(K=301, N=17011)),
                     ("kernel c(x: f16[B, T, C]) -> f32[B, C] { return sum(x, axis=T) }", dict(B=3, T=259, C=6007)),
                     # short columns a few a warp (columns.short_columns): 16 threads a column of f16, 8 of f32
                     ("kernel c(x: f16[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=777, N=1003)),
                     ("kernel c(x: f32[M, N]) -> f32[M, N] { return x - mean(x, axis=M) }", dict(M=300, N=2001)),
                     # looped rows of lengths that break alignment, peeled to aligned vectors or not
                     # (Schedule.peel): a weight over N gathered lane by lane; mixed widths
                     ("kernel n(x: f16[M, N], w: f32[N], b: f32[N]) -> f16[M, N] {\n m = mean(x, axis=N)\n"
                      " d = x - m\n return f16(d * rsqrt(mean(d * d, axis=N) + 1e-5) * w + b)\n}", dict(M=7, N=20001)),
                     ("kernel m(x: f16[M, N], y: f32[M, N], s: f32[M]) -> f32[M, N] { z = x * y + s\n"
                      " return z - max(z, axis=N) }", dict(M=6, N=30011))]


def _streamed_schedules():
    """(program number, name, extents, schedule) for each streamed candidate."""
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import candidates
    from tiledsl.schedule.problem import problem
    for n, (name, extents) in enumerate(STREAMED_PROGRAMS):
        k = compiled(name)
        launcher = launcher_for(k)
        p = problem(launcher.groups[0], launcher.layouts[0], extents, frozenset(), 132, "sm_90a")
        yield from ((n, name, extents, s) for s in candidates(p, k.hints) if s.streamed)


@pytest.mark.parametrize("name,extents,schedule", [
    pytest.param(name, extents, s, id=f"p{n}-{'x'.join(map(str, extents.values()))}-{s.tag}-sp{s.splits}")
    for n, name, extents, s in _streamed_schedules()])
def test_every_streamed_reduction_schedule(name, extents, schedule):
    """Each streamed candidate the tuner may time (an explicit unroll or the compiler's rule)
    is exact at tails, written everywhere (poisoned outputs)."""
    from tiledsl.runtime import launcher_for
    from tiledsl.runtime.launcher import set_overrides
    k = fresh(name)
    k._launcher = launcher_for(k)
    set_overrides(k._launcher, {0: schedule})
    check(k, host_arguments(k, extents), extents, "out")


COLUMN_TILE_DEFAULTS = [
    # tails everywhere: a part tile of columns, a short last chunk of rows
    ("kernel c(x: f16[M, N]) -> f32[N] { return mean(x, axis=M) }", dict(M=65537, N=776)),
    ("kernel c(x: bf16[B, T, C]) -> f32[B, C] { return sum(x, axis=T) }", dict(B=2, T=40009, C=1032)),
    ("kernel c(x: f16[M, N]) -> f32[N] { return max(x, axis=M) }", dict(M=300007, N=136)),
    ("kernel c(x: f16[M, N], s: f32) -> f16[N] { return f16(sum(x, axis=M) * s) }", dict(M=1000003, N=64)),
    ("kernel vm(x: f16[K], w: f16[K, N]) -> f32[N] { return x @ w }", dict(K=30011, N=2056)),
    ("kernel c(x: f16[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=1031, N=65544)),
    # many columns over a middle axis, chunks of 16 loads a thread (of 515 and 516 rows)
    ("kernel c(x: f16[B, T, C]) -> f32[B, C] { return sum(x, axis=T) }", dict(B=33, T=1031, C=520)),
    # several reductions: registers for 1024 threads, one shared buffer in turn
    ("kernel c(x: bf16[M, N]) -> (f32[N], f32[N], f32[N]) {\n"
     " return sum(x, axis=M), max(x, axis=M), sum(x * x, axis=M)\n}", dict(M=70001, N=1000))]


@pytest.mark.parametrize("src,extents", COLUMN_TILE_DEFAULTS, ids=[str(e) for _, e in COLUMN_TILE_DEFAULTS])
def test_16_bit_columns_default_to_tiles_of_vectors(src, extents):
    """16-bit reductions across memory run by default in tiles of 16-byte column vectors,
    a column's rows shared by a block (columns.column_tile_default): exact at tails,
    every element written."""
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import default
    from tiledsl.schedule.problem import problem
    from tiledsl.runtime.launcher import _sm_count
    k = fresh(src)
    launcher = launcher_for(k)
    p = problem(launcher.groups[0], launcher.layouts[0], extents, frozenset(), _sm_count(0), "sm_90a")
    d = default(p, k.hints)
    assert d.kind == "reduce_split" and d.vec == 8 and 1 < d.row_threads < d.block, d
    # registers for 2048 threads for one reduction over plain columns; 1024 for several, a
    # middle axis, or x @ w's x over the rows alone (which spilled at 32 registers)
    plain = len(k.graph.results) == 1 and "[B, T, C]" not in src and "@" not in src
    assert d.min_blocks * d.block == (2048 if plain else d.block), d
    check(k, host_arguments(k, extents), extents, "out")


F32_COLUMN_TILE_DEFAULTS = [
    # a part tile of columns (1025 vectors, 65 tiles of 16) and a short last chunk of rows
    ("kernel c(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=16387, N=4100)),
    # one tile, 528 chunks; two reductions; a scalar after the reduction
    ("kernel c(x: f32[M, N]) -> f32[N] { return mean(x, axis=M) }", dict(M=1000003, N=64)),
    ("kernel c(x: f32[M, N]) -> (f32[N], f32[N]) { return sum(x, axis=M), max(x, axis=M) }",
     dict(M=65537, N=1028)),
    ("kernel c(x: f32[B, C], s: f32) -> f32[C] { return sum(x * x, axis=B) * s }", dict(B=262147, C=260))]


@pytest.mark.parametrize("src,extents", F32_COLUMN_TILE_DEFAULTS, ids=[str(e) for _, e in F32_COLUMN_TILE_DEFAULTS])
def test_f32_columns_default_to_tiles_where_memory_is_fast(src, extents):
    """f32 reductions across memory on a GPU with much bandwidth per SM (an H200) run by
    default in tiles of 16 vectors of 4 columns (columns.f32_column_tile), elsewhere a thread
    a column: exact at tails, every element written, under the schedule the launcher plans."""
    k, d = _default_here(src, extents)
    tiled = (d.kind, d.vec, d.block, d.row_threads) == ("reduce_split", 4, 512, 32)
    assert tiled == _much_bandwidth_here(), d.tag
    check(k, host_arguments(k, extents), extents, "out")
    ran = [program.choices[0][0] for program in k._launcher._plans.values()]
    assert d in ran, ([s.tag for s in ran], d.tag)


@pytest.mark.parametrize("src,extents", [
    ("kernel c(x: f16[M, N]) -> f32[N] { return sum(x * f32(idx(N)), axis=M) * f32(idx(N)) }",
     dict(M=65537, N=776)),
    ("kernel c(x: bf16[M, N]) -> f32[N] { return mean(x, axis=M) * f32(idx(N)) }", dict(M=1000003, N=64)),
    ("kernel v(x: f16[M, N], mu: f32[N]) -> f32[N] {\n d = f32(x) - mu\n return mean(d * d, axis=M)\n}",
     dict(M=65536, N=768)),
    ("kernel w(x: bf16[B, T, C], w: f32[C, B]) -> f32[B, C] { return sum(f32(x) * w.T, axis=T) + w.T }",
     dict(B=3, T=40001, C=1032))])
def test_16_bit_columns_with_values_of_their_own(src, extents):
    """Columns with values of their own before their reductions (an idx() of the columns,
    a batch norm's given mean, a weight laid out across the columns) hold them a lane of
    the column vectors each (codegen's lane_held_lines): their default reads vectors."""
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import default
    from tiledsl.schedule.problem import problem
    from tiledsl.runtime.launcher import _sm_count
    k = fresh(src)
    launcher = launcher_for(k)
    p = problem(launcher.groups[0], launcher.layouts[0], extents, frozenset(), _sm_count(0), "sm_90a")
    assert default(p, k.hints).vec > 1
    check(k, host_arguments(k, extents), extents, "out")


PAIR_SOFTMAX = ("kernel s(x: {t}[M, N]) -> {t}[M, N] {{\n e = exp(x - max(x, axis=M))\n"
                " return {t}(e / sum(e, axis=M))\n}}")
PAIR_PROGRAMS = [   # softmax and logsumexp across memory: tails everywhere, one column, few rows
    (PAIR_SOFTMAX.format(t="f32"), dict(M=5003, N=777)), (PAIR_SOFTMAX.format(t="f16"), dict(M=65537, N=776)),
    (PAIR_SOFTMAX.format(t="bf16"), dict(M=301, N=1032)), (PAIR_SOFTMAX.format(t="f32"), dict(M=100003, N=1)),
    (PAIR_SOFTMAX.format(t="f32"), dict(M=64, N=100003)), (PAIR_SOFTMAX.format(t="f32"), dict(M=1, N=70)),
    # columns of 256 to 1024 rows (a block down each column, and their split candidates), tails in both
    (PAIR_SOFTMAX.format(t="f32"), dict(M=777, N=3004)), (PAIR_SOFTMAX.format(t="f16"), dict(M=300, N=8200)),
    # short columns a few a warp (columns.short_columns): 32 threads a column, 16 of bf16
    (PAIR_SOFTMAX.format(t="f32"), dict(M=999, N=1001)), (PAIR_SOFTMAX.format(t="bf16"), dict(M=1000, N=601)),
    ("kernel l(x: f16[B, T, C]) -> f32[B, C] {\n m = max(f32(x), axis=T)\n"
     " return m + log(sum(exp(f32(x) - m), axis=T))\n}", dict(B=2, T=40009, C=264))]


def _pair_schedules():
    """(program number, source, extents, schedule): the default (None) and every distinct
    candidate of the pair's group but a block a column held in registers."""
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import candidates
    from tiledsl.schedule.problem import problem
    for n, (src, extents) in enumerate(PAIR_PROGRAMS):
        k = compiled(src)
        launcher = launcher_for(k)
        p = problem(launcher.groups[0], launcher.layouts[0], extents, frozenset(), 132, "sm_90a")
        picked = {}
        for s in candidates(p, k.hints):
            if not (s.kind == "reduce_row" and s.items):
                picked.setdefault(replace(s.code, min_blocks=1), s)
        yield n, src, extents, None
        yield from ((n, src, extents, s) for s in picked.values())


@pytest.mark.parametrize("src,extents,schedule", [
    pytest.param(src, extents, s, id=f"p{n}-{'x'.join(map(str, extents.values()))}-{s.tag if s else 'default'}"
                                     f"-sp{s.splits if s else ''}")
    for n, src, extents, s in _pair_schedules()])
def test_every_online_pair_across_memory(src, extents, schedule):
    """softmax's max and sum(exp(x - max)) across memory in one pass (partition.online_partner):
    every column, split and row candidate of the pair's group, exact at tails, written everywhere."""
    from tiledsl.runtime import launcher_for
    from tiledsl.runtime.launcher import set_overrides
    k = fresh(src)
    k._launcher = launcher_for(k)
    assert [v.attr("kind") for v in k._launcher.groups[0].values if v.op == "reduce"] == ["max", "sum"]
    if schedule is not None:
        set_overrides(k._launcher, {0: schedule})
    check(k, host_arguments(k, extents), extents, "out")


def test_warm_calls_that_keep_their_temporaries_run_right_on_two_streams():
    """A warm call keeps small temporaries per thread and stream (launcher.KEPT_TEMP_BYTES):
    calls queued back to back on one stream with no wait between them, then on two streams at
    once, each into its own poisoned output, all match their references; one new size too."""
    import cupy as cp
    k = fresh(PAIR_SOFTMAX.format(t="f32"))
    extents = dict(M=700, N=1000)
    hosts = [host_arguments(k, extents) for _ in range(4)]
    wants = [k.reference(*h, compute="f64") for h in hosts]
    xs = [cp.asarray(h[0]) for h in hosts]
    outs = [cp.full(x.shape, cp.nan, cp.float32) for x in xs]
    k(xs[0], out=outs[0])                       # the checked path plans the class
    for x, o in zip(xs, outs):
        o.fill(cp.nan)
    synchronize()
    for x, o in zip(xs, outs):                  # warm calls, one stream, no wait between
        k(x, out=o)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    twins = [cp.full(x.shape, cp.nan, cp.float32) for x in xs]
    synchronize()                               # (the poison written before other streams write)
    for i, (x, o) in enumerate(zip(xs, twins)):
        with streams[i % 2]:
            k(x, out=o)
    synchronize()
    for got in (outs, twins):
        for o, want in zip(got, wants):
            h = cp.asnumpy(o).astype(np.float64)
            assert not np.isnan(h).any() and relative_error(h, want) <= 1e-5
    small = host_arguments(k, dict(M=65, N=9000))
    got = k(cp.asarray(small[0]))
    assert relative_error(cp.asnumpy(got).astype(np.float64), k.reference(*small, compute="f64")) <= 1e-5


def test_every_streamed_program_offers_unrolled_candidates():
    assert {n for n, _, _, s in _streamed_schedules() if s.unroll} == set(range(len(STREAMED_PROGRAMS)))


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("extents", [dict(M=1001, N=1032), dict(M=700, N=4096 + 8), dict(M=3, N=8)])
def test_stages_pinned_on_a_row_reduction(stages, extents):
    """`stages(n)` in a schedule block: a row ring (or, with 1, no prefetch) exact at row tails,
    with fewer rows than SMs (an idle persistent block), f16 rows and f32 weights."""
    k = compiled((EXAMPLES / "layernorm.tdsl").read_text() + f"\nschedule layernorm {{ stages({stages}) }}\n")
    check(k, host_arguments(k, extents), extents, "out")


def test_warm_calls_keep_every_check(rng):
    """After a call class is warm (its launch specialized), calls of the same shapes still get
    the checks that depend on the arrays themselves: overlapping out=, a non-contiguous or
    misaligned view, another dtype; and fresh inputs give fresh, correct results."""
    import cupy
    from tiledsl.inputs import relative_error
    soft = compiled("softmax.tdsl")
    host = draw(rng, (64, 100), np.float32)
    x = to_device(host)
    want = soft.reference(host, compute="f64")
    out = poison((64, 100), "f32")
    for _ in range(3):                                  # the first call plans, the rest take the fast path
        soft(x, out=out)
    synchronize()
    assert relative_error(to_host(out), want) <= 1e-5
    for _ in range(2):                                  # out= as a 1-tuple, twice: the checked path
        out1 = poison((64, 100), "f32")
        soft(x, out=(out1,))
        synchronize()
        assert relative_error(to_host(out1), want) <= 1e-5
    with pytest.raises(TdslArgumentError):
        soft(x, out=x)                                  # out= over its own (reduced) input
    synchronize()
    assert np.array_equal(to_host(x), host)             # and nothing was launched
    big = to_device(draw(rng, (64, 202), np.float32))
    view = big[:, 1:101]                                # same shape, strided rows, 4-byte aligned
    res = soft(view)
    synchronize()
    assert relative_error(to_host(res), soft.reference(to_host(big)[:, 1:101], compute="f64")) <= 1e-5
    flat = to_device(draw(rng, 64 * 100 + 1, np.float32))
    shifted = flat[1:].reshape(64, 100)                 # contiguous but not 16-byte aligned
    res = soft(shifted)
    synchronize()
    assert relative_error(to_host(res), soft.reference(to_host(flat)[1:].reshape(64, 100), compute="f64")) <= 1e-5
    with pytest.raises((TdslArgumentError, TdslTypeError)):
        soft(x.astype(cupy.float16), out=out)           # another dtype, same shape
    for _ in range(3):                                  # allocating, fresh inputs each time
        host = draw(rng, (64, 100), np.float32)
        res = soft(to_device(host))
        synchronize()
        assert relative_error(to_host(res), soft.reference(host, compute="f64")) <= 1e-5


def test_warm_calls_tell_apart_shapes_of_one_size(rng):
    """A warm call's class holds a rank-1 array's size and a rank-2 array's length and size
    (launcher._shape_key), not CuPy's shape tuple: shapes of one size each get their own class,
    written whole and allocated in their own shape; an array of the wrong rank and an empty
    one take the checked path (its error; its empty result of the right shape)."""
    import cupy
    soft = compiled("softmax.tdsl")
    for shape in [(64, 100), (100, 64), (32, 200), (6400, 1), (1, 6400), (64, 100)]:
        for _ in range(2):                              # the first call of a class plans, the second is warm
            host = draw(rng, shape, np.float32)
            out = poison(shape, "f32")
            soft(to_device(host), out=out)
            res = soft(to_device(host))
            synchronize()
            want = soft.reference(host, compute="f64")
            assert res.shape == shape
            assert relative_error(to_host(out), want) <= 1e-5 and relative_error(to_host(res), want) <= 1e-5
    with pytest.raises(TdslShapeError):
        soft(to_device(draw(rng, 6400, np.float32)))   # rank 1 where softmax takes rank 2, same size
    for shape in [(0, 100), (0, 64), (0, 100)]:
        for _ in range(2):
            assert soft(cupy.empty(shape, cupy.float32)).shape == shape
    add = tiledsl.compile("kernel add(x: f32[N], y: f32[N]) -> f32[N] { return x + y }")
    for n in (1000, 1, 1000, 1):
        x, y = draw(rng, n, np.float32), draw(rng, n, np.float32)
        out = poison((n,), "f32")
        add(to_device(x), to_device(y), out=out)
        synchronize()
        assert relative_error(to_host(out), x.astype(np.float64) + y) <= 1e-5
    with pytest.raises(TdslShapeError):
        add(to_device(draw(rng, (10, 100), np.float32)), to_device(draw(rng, 1000, np.float32)))


def test_warm_calls_from_several_threads_at_once(rng):
    """Warm launches pack their arguments into per-thread blocks for the driver: threads
    calling one kernel at the same time (each on its own stream, some on their first call)
    must each get their own inputs' results, with scalars and outputs they passed."""
    import threading
    import cupy
    k = tiledsl.compile("kernel f(x: f32[N], y: f32[N], s: f32) -> f32[N] { return x * s + y }")
    n_threads, calls = 6, 40
    hosts = [[(draw(rng, 1000 + 7 * t, np.float32), draw(rng, 1000 + 7 * t, np.float32))
              for _ in range(calls)] for t in range(n_threads)]
    k(to_device(hosts[0][0][0]), to_device(hosts[0][0][1]), 1.5)        # warm in the main thread
    errors, results = [], [[None] * calls for _ in range(n_threads)]
    start = threading.Barrier(n_threads)

    def work(t):
        try:
            with cupy.cuda.Stream(non_blocking=True) as stream:
                pairs = [(to_device(x), to_device(y)) for x, y in hosts[t]]
                outs = [poison(x.shape, "f32") for x, _ in hosts[t]]
                stream.synchronize()
                start.wait()
                for i, ((x, y), o) in enumerate(zip(pairs, outs)):
                    if i % 2:
                        k(x, y, 0.5 + t, out=o)
                    else:                                   # allocating
                        outs[i] = k(x, y, 0.5 + t)
                stream.synchronize()
                results[t] = [to_host(o) for o in outs]
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for t in range(n_threads):
        for (x, y), got in zip(hosts[t], results[t]):
            want = x.astype(np.float64) * (0.5 + t) + y
            assert got.shape == want.shape and np.isfinite(got).all()
            assert np.linalg.norm(got - want) / np.linalg.norm(want) <= 1e-5


# Transposing tiles: every candidate of the tuner's space, at sizes that leave partial tiles
# along both loops and several coordinates of the batch loop.
TRANSPOSING_PROGRAMS = [("transpose_two_layouts", dict(M=100, N=130)),
                        ("transpose_batched_bf16", dict(B=3, T=70, C=33)),
                        ("transpose_copy_f16", dict(M=264, N=200)),     # 4-element accesses, 128-wide tiles
                        ("transpose_many_f64", dict(M=100, N=130))]


def _transposing_schedules():
    from tiledsl.schedule.choose import candidates
    from tiledsl.schedule.problem import problem
    from tiledsl.schedule.layout import plan_layout
    from tiledsl.schedule.partition import partition
    for name, extents in TRANSPOSING_PROGRAMS:
        k = tiledsl.compile(PROGRAMS[name].src)
        (g,) = partition(k.graph)
        p = problem(g, plan_layout(g, k.graph), extents, frozenset(), 132, "sm_90a")
        for s in candidates(p, k.hints):
            if s.tile:
                yield pytest.param(name, extents, s, id=f"{name}-{s.tag}")


@pytest.mark.parametrize("name,extents,schedule", list(_transposing_schedules()))
def test_every_transposing_tile(name, extents, schedule):
    from tiledsl.runtime import launcher_for
    from tiledsl.runtime.launcher import set_overrides
    k = tiledsl.compile(PROGRAMS[name].src)
    k._launcher = launcher_for(k)
    set_overrides(k._launcher, {0: schedule})
    check(k, host_arguments(k, extents), extents, "out")


@pytest.mark.parametrize("dtype", ["f64", "f32", "f16"])
def test_literal_powers_are_products_and_roots_on_the_gpu(dtype, rng):
    """`x ** 2` and `x ** 3` are x * x and x * x * x bit for bit, `x ** 0.5` is sqrt(x)
    (correctly rounded; -0, -inf and negatives as NumPy's sqrt), and `x ** 2 < y` holds at
    ties exactly where the products say. CUDA's f64 pow is not exact there (0.25 ** 2 gave
    0.06249999999999999 on an H100, ** 0.5 an ulp off at 7 of 24 values), and the GPU fuzz
    found `p ** 2 < q` flipped at a tie; the IR rewrites such powers
    (`passes.rewrite_literal_powers`)."""
    k = compiled(f"kernel p(x: {dtype}[N], y: {dtype}[N]) -> (f64[N], f64[N], bool[N], f64[N]) "
                 "{ return x ** 2, x ** 3, x ** 2 < y, x ** 0.5 }")
    store = {"f64": np.float64, "f32": np.float32, "f16": np.float16}[dtype]
    wide = np.float64 if dtype == "f64" else np.float32        # 16-bit values are computed in f32
    dyadic = rng.integers(-32, 33, size=4099) / 8
    special = [-0.0, 0.0, -np.inf, np.inf, np.nan, -1.0]
    x = np.concatenate([dyadic, rng.standard_normal(4099) * 3, np.abs(rng.standard_normal(4099)) * 1e3,
                        special]).astype(store)
    xw = x.astype(wide)
    with np.errstate(invalid="ignore", over="ignore"):
        square, cube, root = xw * xw, xw * xw * xw, np.sqrt(xw)
    with np.errstate(over="ignore"):
        y = np.where(rng.random(x.size) < 0.5, square, rng.standard_normal(x.size) * 9).astype(store)
    got = [to_host(a) for a in k(to_device(x), to_device(y))]

    def same(g, w):     # bit for bit but NaN's sign (the GPU's NaN is positive, x86's negative)
        number = ~np.isnan(w)
        return np.array_equal(g, w.astype(np.float64), equal_nan=True) and \
            np.array_equal(np.signbit(g[number]), np.signbit(w[number]))
    assert same(got[0], square), x[got[0] != square][:6]
    assert same(got[1], cube), x[got[1] != cube][:6]
    assert same(got[3], root), x[got[3] != root][:6]
    with np.errstate(invalid="ignore"):
        ties = y.astype(wide) == square
        assert ties.sum() > 1000 and np.array_equal(got[2], square < y.astype(wide))


@pytest.mark.parametrize("fn", ["exp", "sigmoid", "silu", "gelu"])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_16_bit_functions_round_every_value_within_an_ulp(fn, dtype):
    """An f32 function whose every use rounds it to f16 or bf16 runs on the hardware's
    approximations (tdsl::<fn>_narrow). Over every 16-bit value, each result is the
    float64 result rounded to the dtype or its neighbour; infinities, NaNs and signs
    where the reference has them. A result under 2^-116 may flush to zero (the
    approximations flush f32 subnormals, and x / (1 + exp(-x)) overflows below -88.7
    exactly as the f32 division does)."""
    k = compiled(f"kernel f(x: {dtype}[N]) -> {dtype}[N] {{ return {fn}(x) }}")
    src = k.cuda_source(np.zeros(8, np.float16 if dtype == "f16" else bf16_numpy()))
    assert f"tdsl::{fn}_narrow(" in src       # (the f32 function, exact to an ulp or two, elsewhere)
    npt = np.float16 if dtype == "f16" else bf16_numpy()
    x = np.arange(1 << 16, dtype=np.uint16).view(npt)
    got = to_host(k(to_device(x))).astype(npt)
    want = np.asarray(k.reference(x, compute="f64"), np.float64).astype(npt)
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w)), x[np.isnan(g) != np.isnan(w)][:8]
    finite = np.isfinite(w)
    assert np.array_equal(np.isinf(g), np.isinf(w)) and np.array_equal(g[~finite & ~np.isnan(w)],
                                                                         w[~finite & ~np.isnan(w)])
    gb = got.view(np.uint16).astype(np.int64)
    wb = want.view(np.uint16).astype(np.int64)
    close = (np.abs(gb - wb) <= 1) | (g == w) | ((np.abs(w) < 2.0 ** -116) & (np.abs(g) < 2.0 ** -116))
    bad = finite & ~close
    assert not bad.any(), list(zip(x[bad][:6].astype(np.float64), g[bad][:6], w[bad][:6]))


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("shift", ["max subtracted", "none, values near -90"])
def test_16_bit_softmax_exps_on_the_approximation_stay_within_tolerance(dtype, shift, rng):
    """A 16-bit softmax's exps feed the sum and the quotient before the 16-bit rounding:
    they run on ex2.approx, flushing subnormals where the max is subtracted (each row holds
    a 1: tdsl::exp_narrow), else not (tdsl::exp_approx). Rows of widths that break alignment
    and of the 4096x16384 benchmark's width, against float64. Written without subtracting
    the max, over inputs near -90, every exp is an f32 subnormal (exp(-90) = 8.2e-40, still
    17 bits): had they been flushed, the sum would be 0 and every result NaN. (Near -100
    they keep 5 bits: expf's results miss the tolerance too.)"""
    body = "e = exp(x - max(x, axis=N))" if shift == "max subtracted" else "e = exp(x)"
    k = compiled(f"kernel sm(x: {dtype}[M, N]) -> {dtype}[M, N] {{ {body}\n"
                 f"return e / sum(e, axis=N) }}")
    npt = np.float16 if dtype == "f16" else bf16_numpy()
    for m, n in ((33, 777), (7, 16384), (300, 24)):
        fn = "exp_narrow" if shift == "max subtracted" else "exp_approx"
        assert f"tdsl::{fn}(" in k.cuda_source(np.zeros((m, n), npt))
        x = rng.standard_normal((m, n)) * (3 if shift == "max subtracted" else 0.5)
        x = (x - (90 if shift != "max subtracted" else 0)).astype(npt)
        want = np.asarray(k.reference(x, compute="f64"), np.float64)
        assert np.isfinite(want).all()
        out = to_device(np.full((m, n), np.nan, npt))
        got = to_host(k(to_device(x), out=out)).astype(np.float64)
        assert not np.isnan(got).any(), (m, n)
        err = np.linalg.norm(got - want) / np.linalg.norm(want)
        assert err <= (2e-3 if dtype == "f16" else 1e-2), (m, n, err)


LSE_F32 = "kernel l(x: {t}[M, N]) -> f32[M] {{ m = max(f32(x), axis=N)\n return m + log(sum(exp(f32(x) - m), axis=N)) }}"
LOG_SOFTMAX_F32 = ("kernel l(x: f32[M, N]) -> f32[M, N] { m = max(x, axis=N)\n"
                   " return x - m - log(sum(exp(x - m), axis=N)) }")


@pytest.mark.parametrize("src", [LSE_F32.format(t="f32"), LSE_F32.format(t="bf16"), LOG_SOFTMAX_F32],
                         ids=["logsumexp", "logsumexp of bf16", "log-softmax"])
@pytest.mark.parametrize("scale", [1.0, 30.0])
def test_f32_logsumexp_exps_on_the_approximation_stay_within_a_few_ulps(src, scale, rng):
    """An f32 logsumexp's exps run on ex2.approx.ftz (tdsl::exp_narrow; in a streamed row,
    online_add_chunk<true>): the sum holds exp(0) = 1, so log(sum) keeps a relative error
    under the approximation's 2^-22. Element by element within 4e-6 of max(1, |result|)
    against float64, rows held (777, 16384 wide), held by a cluster (100003), of a vocabulary
    (32000) and, bf16, streamed online (600 x 128256); values spread by `scale` around an
    offset of 1000 (the max's own rounding)."""
    k = compiled(src)
    dt = bf16_numpy() if "bf16" in src else np.float32
    shapes = ((33, 777), (7, 16384), (3, 100003), (5, 32000)) + (((600, 128256),) if "bf16" in src else ())
    for m, n in shapes:
        cuda = k.cuda_source(np.zeros((m, n), dt))
        assert "tdsl::exp_narrow(" in cuda or "online_add_chunk<true>(" in cuda, (m, n)
        assert "tdsl::exp(" not in cuda[cuda.index('extern "C"'):], (m, n)
        x = (rng.standard_normal((m, n)) * scale + 1000.0).astype(dt)
        want = np.asarray(k.reference(x, compute="f64"), np.float64)
        out = to_device(np.full(want.shape, np.nan, np.float32))
        got = np.asarray(to_host(k(to_device(x), out=out))).astype(np.float64)
        assert np.isfinite(got).all(), (m, n)
        far = np.abs(got - want) > 4e-6 * np.maximum(1.0, np.abs(want))
        assert not far.any(), (m, n, got[far][:4], want[far][:4])
        assert relative_error(got, want) <= 1e-5


# A few long rows with results over the whole row run spread: each reduction level split
# over the GPU, the results written by a pointwise kernel (schedule.problem.few_long_rows).
SPREAD_SOFTMAX = ("kernel sm(x: f32[M, N]) -> f32[M, N] { e = exp(x - max(x, axis=N))\n"
                  "return e / sum(e, axis=N) }")
SPREAD = {
    "x / sum(x)": ("kernel share(x: f32[N]) -> f32[N] { return x / sum(x) }",
                   [dict(N=(1 << 22) + 3), dict(N=1 << 18)]),
    "x / max(abs(x)), f16": ("kernel q(x: f16[N]) -> f16[N] { return x / max(abs(x)) }", [dict(N=(1 << 20) + 5)]),
    "softmax": (SPREAD_SOFTMAX, [dict(M=1, N=(1 << 20) + 7), dict(M=33, N=1 << 18)]),
    "layernorm": ((EXAMPLES / "layernorm.tdsl").read_text(), [dict(M=3, N=(1 << 19) + 8)]),
    "the sum and the share": ("kernel two(x: f32[M, N]) -> (f32[M, N], f32[M]) { s = sum(x, axis=N)\n"
                              "return x / s, s }", [dict(M=2, N=(1 << 20) + 1)]),
}


@pytest.mark.parametrize("program", list(SPREAD))
def test_a_few_long_rows_run_spread(program):
    from tiledsl.inputs import random_arguments
    src, shapes = SPREAD[program]
    k = tiledsl.compile(src)
    for extents in shapes:
        for out_kind in ("out", "out", "alloc", "alloc"):
            check(k, random_arguments(k.graph, extents), extents, out_kind)
    spread = k._launcher._others.get("spread")
    assert spread is not None and spread._plans, "ran unspread"
    for plan in spread._plans.values():
        kinds = [spread.groups[i].kind for i in sorted(plan.choices)]
        splits = [s for s, _ in plan.choices.values() if s.splits > 1]
        assert splits and kinds[-1] == "pointwise", (kinds, plan.choices)
        # a split finished by its last block is one kernel, any other split two
        assert len(plan.steps) == len(kinds) + sum(not s.last_block for s in splits), plan.choices


# A batch norm's normalization over M with a weight and bias over N (tests/test_partition.py, the host
# and codegen tests share it)
BATCHNORM = ("kernel bn(x: f16[M, N], w: f32[N], b: f32[N]) -> f16[M, N] {\n c = f32(x) - mean(f32(x), axis=M)\n"
             " return f16(c * rsqrt(mean(c * c, axis=M) + 1e-5) * w + b)\n}")


# Results over whole short columns written by their reduction's own kernel (partition(columns=True),
# schedule.problem.runs_columns): one kernel where the default runs a pointwise one after the statistics
WHOLE_COLUMNS = {
    "softmax over M": ("kernel cs(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=M))\n"
                       " return e / sum(e, axis=M)\n}", [dict(M=64, N=1 << 16), dict(M=1, N=1001),
                                                        dict(M=777, N=4099), dict(M=33, N=100003)]),
    "softmax over M bf16": ("kernel cs(x: bf16[M, N]) -> bf16[M, N] {\n e = exp(f32(x) - max(f32(x), axis=M))\n"
                            " return bf16(e / sum(e, axis=M))\n}", [dict(M=250, N=8191), dict(M=5, N=3)]),
    "batch norm f16": (BATCHNORM, [dict(M=256, N=1 << 14), dict(M=17, N=1000)]),
    "x - mean over T": ("kernel f(x: f32[B, T, C]) -> f32[B, T, C] { return x - mean(x, axis=T) }",
                        [dict(B=3, T=100, C=4097), dict(B=1, T=1, C=64)]),
}


@pytest.mark.parametrize("program", list(WHOLE_COLUMNS))
def test_results_over_whole_short_columns_come_from_one_kernel(program, monkeypatch):
    """Turned on here (problem.COLUMNS_MAX_ROWS is 0 until the partition is timed on a GPU)."""
    import tiledsl.schedule.problem as problem_module
    from tiledsl.inputs import random_arguments
    monkeypatch.setattr(problem_module, "COLUMNS_MAX_ROWS", 1023)
    src, shapes = WHOLE_COLUMNS[program]
    k = tiledsl.compile(src)
    for extents in shapes:
        for out_kind in ("out", "alloc"):
            check(k, random_arguments(k.graph, extents), extents, out_kind)
    whole = k._launcher._others.get("columns")
    assert whole is not None and whole._plans, "ran the split partition"
    for plan in whole._plans.values():
        assert [whole.groups[i].kind for i in sorted(plan.choices)] == ["reduce"], plan.choices


def test_rows_enough_to_fill_the_gpu_stay_fused():
    from tiledsl.inputs import random_arguments
    k = tiledsl.compile(SPREAD_SOFTMAX)
    extents = dict(M=200, N=1 << 18)       # 4 rows an SM or more on any GPU of up to 800 SMs
    check(k, random_arguments(k.graph, extents), extents, "out")
    assert "spread" not in k._launcher._others


# Rows too long for one block's registers, shared by the blocks of a cluster (sm_90a,
# Schedule.cluster), held or, where rows are few, streamed: every share the tuner may pick, at rows whose last share is partial,
# rows fewer than the clusters in flight and many more (each block's slots and barriers
# reused row after row: their phases), weights over N hoisted or loaded late, and
# reductions exchanged as 4 bytes (f32, i32) and 8 (f64, i64).
CLUSTER_PROGRAMS = [("softmax.tdsl", dict(M=301, N=65536 - 28)),
                    ("layernorm.tdsl", dict(M=37, N=40000)),
                    ("rmsnorm.tdsl", dict(M=3, N=131072 - 8)),
                    ("kernel c(x: f64[M, N]) -> f64[M, N] { return x - mean(x, axis=N) }", dict(M=5, N=36002)),
                    ("kernel s(x: i32[M, N]) -> (i32[M], i32[M, N]) {\n m = max(x, axis=N)\n"
                     " return sum(x, axis=N), x - m\n}", dict(M=9, N=66000)),
                    ("kernel s(x: i64[M, N]) -> i64[M, N] { return x * sum(x, axis=N) }", dict(M=4, N=40000)),
                    ("kernel l(x: f32[M, N]) -> f32[M, N] { return x / max(abs(x), axis=N) }", dict(M=1, N=200000)),
                    # few rows streamed by a cluster's blocks together: in two passes or one (online)
                    ("softmax.tdsl", dict(M=7, N=300004)),
                    ("kernel l(x: f32[M, N]) -> f32[M] {\n m = max(x, axis=N)\n"
                     " return m + log(sum(exp(x - m), axis=N))\n}", dict(M=5, N=(1 << 20) + 4)),
                    # a batch norm over (B, H, W): rows of three stretches, each streamed by a cluster too
                    ("kernel a(x: f16[B, C, H, W], g: f32[C], b: f32[C]) -> f16[B, C, H, W] {\n"
                     " mu = mean(f32(x), axis=(B, H, W))\n d = f32(x) - mu\n"
                     " return f16(d * rsqrt(mean(d * d, axis=(B, H, W)) + 1e-5) * g + b)\n}", dict(B=3, C=5, H=101, W=97))]


def _pinned_params(programs: list, wanted, suffix=lambda s: ""):
    """pytest params (source, extents, schedule): each candidate that `wanted` keeps of each
    program (planned as on an H100: 132 SMs, sm_90a)."""
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import candidates
    from tiledsl.schedule.problem import problem
    for n, (src, extents) in enumerate(programs):
        k = compiled(src)
        launcher = launcher_for(k)
        p = problem(launcher.groups[0], launcher.layouts[0], extents, frozenset(), 132, "sm_90a")
        kept = [s for s in candidates(p, k.hints) if wanted(s)]
        assert kept, (src, extents)
        name = src.removesuffix(".tdsl") if src.endswith(".tdsl") else f"program{n}"
        label = "x".join(map(str, extents.values()))
        yield from (pytest.param(src, extents, s, id=f"{name}-{label}-{s.tag}{suffix(s)}") for s in kept)


def _much_bandwidth_here() -> bool:
    """Whether this GPU has much HBM bandwidth per SM, as the row rules reckon it
    (rows.much_bandwidth_per_sm)."""
    from tiledsl.runtime.launcher import _sm_count, hbm_bandwidth
    from tiledsl.schedule.rows import LATE_LOADS_GBPS_PER_SM
    return hbm_bandwidth(0) / _sm_count(0) >= LATE_LOADS_GBPS_PER_SM


def _default_here(src: str, extents: dict):
    """A fresh kernel of `src` (its launcher built) and its first group's default
    schedule on this GPU at `extents`."""
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import default
    k = fresh(src)
    k._launcher = launcher_for(k)
    return k, default(_problem_here(k, extents), k.hints)


def _problem_here(k, extents: dict):
    """Kernel `k`'s first group (its launcher built) at `extents` on this GPU."""
    from tiledsl.runtime.launcher import _sm_count, device_arch, hbm_bandwidth
    from tiledsl.schedule.problem import problem
    return problem(k._launcher.groups[0], k._launcher.layouts[0], extents, frozenset(), _sm_count(0),
                   device_arch(0), hbm_bandwidth(0))


def _check_pinned(src: str, extents: dict, schedule) -> None:
    """The program run under `schedule`, its outputs poisoned, against float64."""
    from tiledsl.runtime import launcher_for
    from tiledsl.runtime.launcher import set_overrides
    k = fresh(src)
    k._launcher = launcher_for(k)
    set_overrides(k._launcher, {0: schedule})
    check(k, host_arguments(k, extents), extents, "out", label=schedule.tag)


# Tall columns a thread each (reduce_col, a tuner candidate): a float sum gathers 256 steps at
# a time before they join the running sum (cuda.COLUMN_SUM_BLOCK). In one chain, a million f32
# rows reached 2.9e-5 relative error on the host emulator, past f32's 1e-5.
TALL_COLUMN_PROGRAMS = [
    ("kernel c(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=1000003, N=3)),
    ("kernel c(x: f32[M, N]) -> (f32[N], f32[N]) { return mean(x, axis=M), max(x, axis=M) }",
     dict(M=700001, N=2)),
    ("kernel c(x: f16[M, N]) -> f32[N] { return sum(f32(x) * f32(x), axis=M) }", dict(M=1000003, N=16)),
]


@pytest.mark.parametrize("src,extents,schedule",
                         list(_pinned_params(TALL_COLUMN_PROGRAMS, lambda s: s.kind == "reduce_col")))
def test_tall_columns_a_thread_each_sum_accurately(src, extents, schedule):
    _check_pinned(src, extents, schedule)


# Pointwise groups with an input without the outermost loop: every walk along that loop
# (Schedule.outer) the tuner offers, at rows and vectors no block or item count divides
OUTER_PROGRAMS = [
    ("kernel f(x: f32[B, T, C], p: f32[T, C]) -> f32[B, T, C] { return x + p }", dict(B=13, T=33, C=1000)),
    ("kernel f(x: bf16[A, B, C], p: f32[B, C], w: f16[C], s: f32) -> bf16[A, B, C] "
     "{ return bf16(gelu(x * s + p) * w) }", dict(A=7, B=5, C=4104)),
    ("kernel f(x: f32[M, N], p: f16[N]) -> (f32[M, N], f16[M, N]) {\n y = x * p\n return y, f16(y + 1.0)\n}",
     dict(M=3, N=70001))]


@pytest.mark.parametrize("src,extents,schedule", list(_pinned_params(OUTER_PROGRAMS, lambda s: s.outer)))
def test_walks_along_the_outermost_loop(src, extents, schedule):
    _check_pinned(src, extents, schedule)


def test_a_large_broadcast_input_is_loaded_once_for_several_rows_by_default():
    """x[8, 2^22 + 12] + p (p over 16 MiB, f32): by default each thread takes a vector of
    all 8 rows and loads p's once (pointwise.outer_items); x[64, 2^17] + p (512 KiB) walks
    flat. Both right at the GPU, outputs poisoned."""
    src = "kernel f(x: f32[B, S], p: f32[S]) -> f32[B, S] { return x + p }"
    for extents, outer in ((dict(B=8, S=(1 << 22) + 12), True), (dict(B=64, S=1 << 17), False)):
        k, s = _default_here(src, extents)
        assert s.outer == outer and (not outer or s.items == 8), s.tag
        check(k, host_arguments(k, extents), extents, "out")


@pytest.mark.parametrize("src,extents,walk,items", [
    ("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return gelu(x + b) }", dict(M=8195, N=4104), "outer", 8),
    ("kernel f(x: f32[M, N], b: f32[N]) -> f32[M, N] { return gelu(x + b) }", dict(M=1003, N=8192), "outer", 8),
    ("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return relu(x + b) }", dict(M=1001, N=1021),
     "runs", 4),
    ("kernel f(x: f32[M, N], b: f32[N]) -> f32[M, N] { return x + b }", dict(M=1001, N=1021), "flat", 8),
    ("kernel f(x: bf16[N], y: bf16[N]) -> bf16[N] { return x + y }", dict(N=(1 << 20) + 3), "straddle", 2),
    ("kernel f(x: f32[N]) -> f32[N] { return x * 2.0 }", dict(N=(1 << 20) + 2), "flat", 4),
], ids=["gelu-bf16", "gelu-f32", "odd-bias-bf16", "odd-bias-f32", "odd-flat", "two-wide-flat"])
def test_costly_or_unvectored_broadcasts_walk_rows_by_default(src, extents, walk, items):
    """Costly math over a broadcast input (gelu(x + b)) walks 8 rows a thread by default, b
    loaded once (pointwise.outer_items); 16-bit single elements walk vectors that straddle rows
    (pointwise.straddle_default), in runs of vec rows beside a broadcast (straddled_runs); a
    flat walk's thread takes more items where its vectors are narrow (flat_items). Right at
    the GPU, outputs poisoned, rows no 8 divides."""
    k, s = _default_here(src, extents)
    got = "runs" if s.outer and s.straddle else "outer" if s.outer else "straddle" if s.straddle else "flat"
    assert (got, s.items) == (walk, items), s.tag
    check(k, host_arguments(k, extents), extents, "out")


# Row lengths that break the whole-row vectors: every walk whose vectors straddle rows
# (Schedule.straddle) the tuner offers, with operands read lane by lane (without the innermost
# loop, without a middle one), a mask over the coordinates, and a tail after the last whole vector
STRADDLE_PROGRAMS = [
    ("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return relu(x + b) }", dict(M=1001, N=781)),
    ("kernel f(x: f32[B, T, C], p: f32[B, C]) -> f32[B, T, C] { return x + p }", dict(B=5, T=33, C=1001)),
    ("kernel f(x: f16[M, N], s: f16[M], t: f32) -> f16[M, N] { return f16(x * s + t) }", dict(M=513, N=37)),
    ("kernel f(x: bf16[N], y: bf16[N]) -> bf16[N] { return gelu(x + y) }", dict(N=(1 << 20) + 5)),
    ("kernel f(x: f32[M, N]) -> f32[M, N] { return where(idx(N) <= idx(M), x, 0.0) + f32(idx(M)) }",
     dict(M=300, N=67)),
]


@pytest.mark.parametrize("src,extents,schedule", list(_pinned_params(STRADDLE_PROGRAMS, lambda s: s.straddle)))
def test_vectors_that_straddle_rows(src, extents, schedule):
    _check_pinned(src, extents, schedule)


# Straddling vectors walked in runs of vec rows (Schedule.outer and straddle): every such walk
# the tuner offers, with runs the items do not divide, rows after the last run (whole vectors and a
# tail), inputs read once for the runs (over one inner loop, two, and with the outermost only
# beside them), a mask over the coordinates, and the benchmark's rows of 781
STRADDLED_RUN_PROGRAMS = [
    ("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return gelu(x + b) }", dict(M=8 * 37 + 5, N=781)),
    ("kernel f(x: f32[B, T, C], p: f32[C], q: f32[T]) -> f32[B, T, C] { return x + p * q }", dict(B=45, T=3, C=5)),
    ("kernel f(x: f16[M, N], s: f16[M], b: f16[N], t: f16) -> f16[M, N] { return x * s + b * t }",
     dict(M=301, N=37)),
    ("kernel f(x: f32[M, N], b: f32[N]) -> f32[M, N] { return where(idx(N) <= idx(M), x, b) + f32(idx(M)) }",
     dict(M=300, N=67)),
    ("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return relu(x + b) }", dict(M=32768, N=781)),
]


@pytest.mark.parametrize("src,extents,schedule",
                         list(_pinned_params(STRADDLED_RUN_PROGRAMS, lambda s: s.outer and s.straddle)))
def test_vectors_that_straddle_rows_walked_in_runs_of_rows(src, extents, schedule):
    _check_pinned(src, extents, schedule)


# Looped rows copied into shared memory (Schedule.shared_row): every such candidate the tuner
# offers (256 to 1024 threads, one pass or two), at rows peeled (lengths no
# vector divides) and whole, with weights read from global memory, two per-row inputs, and
# rows of 100 KB, two blocks an SM
SHARED_ROW_PROGRAMS = [
    ("kernel s(x: f16[M, N]) -> f16[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}",
     dict(M=67, N=50257)),
    ("kernel s(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}",
     dict(M=5, N=25000)),
    ("kernel n(x: bf16[M, N], w: f32[N], b: f32[N]) -> bf16[M, N] {\n m = mean(x, axis=N)\n d = x - m\n"
     " return bf16(d * rsqrt(mean(d * d, axis=N) + 1e-5) * w + b)\n}", dict(M=9, N=40000)),
    ("kernel d(x: f16[M, N], y: f16[M, N]) -> f32[M] { return sum(f32(x) * f32(y), axis=N) }",
     dict(M=300, N=30001)),
]


@pytest.mark.parametrize("src,extents,schedule", list(_pinned_params(SHARED_ROW_PROGRAMS, lambda s: s.shared_row and s.cluster == 1)))
def test_rows_copied_into_shared_memory(src, extents, schedule):
    _check_pinned(src, extents, schedule)


# Rows too long for two copies in an SM's shared memory, copied there by the blocks of a
# cluster, each its share (Schedule.shared_row, cluster > 1): every such candidate, whole and
# peeled, with weights, two per-row inputs, and a reduction alone; stretches of the last
# share partial
CLUSTER_SHARED_ROW_PROGRAMS = [
    ("kernel s(x: bf16[M, N]) -> bf16[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}",
     dict(M=67, N=128256)),
    ("kernel s(x: f16[M, N]) -> f16[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}",
     dict(M=5, N=131075)),
    (SHARED_ROW_PROGRAMS[2][0], dict(M=9, N=120000)),
    ("kernel d(x: f16[M, N], y: f16[M, N]) -> f32[M] { return sum(f32(x) * f32(y), axis=N) }",
     dict(M=300, N=70001)),
    ("kernel l(x: bf16[M, N]) -> f32[M] {\n m = max(f32(x), axis=N)\n"
     " return m + log(sum(exp(f32(x) - m), axis=N))\n}", dict(M=7, N=128256)),
]


@pytest.mark.parametrize("src,extents,schedule", list(_pinned_params(
    CLUSTER_SHARED_ROW_PROGRAMS, lambda s: s.shared_row and s.cluster > 1)))
def test_rows_copied_into_shared_memory_by_the_blocks_of_a_cluster(src, extents, schedule):
    _needs_clusters()
    _check_pinned(src, extents, schedule)


def test_a_vocabulary_s_rows_are_copied_into_shared_memory_by_a_cluster_by_default():
    """Softmax over a language model's vocabulary, bf16 [300, 128256] (256 KB rows: no block
    holds two an SM) and the log-softmax of f16 [270, 151936]: by default the 8 blocks of a
    cluster, 256 threads each, copy a row's shares into their shared memory; right at the GPU
    with outputs poisoned."""
    _needs_clusters()
    log_softmax = ("kernel f(x: f16[M, N]) -> f16[M, N] {\n m = max(f32(x), axis=N)\n"
                   " return f16(f32(x) - m - log(sum(exp(f32(x) - m), axis=N)))\n}")
    for src, extents in ((CLUSTER_SHARED_ROW_PROGRAMS[0][0], dict(M=300, N=128256)),
                         (log_softmax, dict(M=270, N=151936))):
        k, s = _default_here(src, extents)
        assert s.shared_row and (s.cluster, s.block) == (8, 256), (extents, s.tag)
        check(k, host_arguments(k, extents), extents, "out", label=s.tag)


# A residual add returned beside the norm of its sum (vLLM's fused_add_rms_norm, and the same
# with layernorm): the row kernel stores both (partition.rows_reading_its_inputs). Every row
# candidate, held and looped, at rows no block or vector divides, and rows copied into shared
# memory; each output poisoned and checked
RESIDUAL_NORM_PROGRAMS = [
    ("kernel f(x: bf16[M, N], r: bf16[M, N], w: bf16[N]) -> (bf16[M, N], bf16[M, N]) {\n"
     " h = x + r\n return h, h * rsqrt(mean(h * h, axis=N) + 1e-6) * w\n}", dict(M=1001, N=4100)),
    ("kernel f(x: f16[M, N], r: f16[M, N], w: f32[N], b: f32[N]) -> (f16[M, N], f16[M, N]) {\n"
     " h = x + r\n c = h - mean(h, axis=N)\n return c * rsqrt(mean(c * c, axis=N) + 1e-5) * w + b, h\n}",
     dict(M=67, N=40003)),
]


@pytest.mark.parametrize("src,extents,schedule", list(_pinned_params(
    RESIDUAL_NORM_PROGRAMS, lambda s: s.kind == "reduce_row" and s.cluster == 1)))
def test_a_residual_add_is_stored_by_the_row_kernel_of_its_norm(src, extents, schedule):
    _check_pinned(src, extents, schedule)


def test_a_residual_add_and_its_norm_run_as_one_kernel_by_default():
    """At 4096 x 8192 and 16384 x 4096 (and a few long rows, spread over the GPU: there the
    sum is stored by the pointwise kernel that writes the norm), both results right with
    outputs poisoned."""
    for src in (RESIDUAL_NORM_PROGRAMS[0][0], RESIDUAL_NORM_PROGRAMS[1][0]):
        for extents in (dict(M=4096, N=8192), dict(M=16384, N=4096), dict(M=2, N=1 << 19)):
            k, s = _default_here(src, extents)
            assert len(k._launcher.groups) == 1
            check(k, host_arguments(k, extents), extents, "out", label=s.tag)


@pytest.mark.parametrize("w", ["f32", "f16"])
@pytest.mark.parametrize("n", [36000, 50000, 100000])
def test_a_residual_layernorm_s_long_held_rows_by_default(n, w):
    """The layernorm of x + r over rows a block or a cluster holds (registers.late_weights_crowd: these
    defaults spilled until 2026-12-05; a default that spills fails here, conftest), exact."""
    src = RESIDUAL_NORM_PROGRAMS[1][0].replace("f32[N]", f"{w}[N]")
    extents = dict(M=301, N=n)
    k, s = _default_here(src, extents)
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


MANY_INPUT_ROWS = [     # several inputs along a reduction, or three weights: defaults that spilled until 2026-12-05
    ("kernel f(x: f16[M, N], r: f16[M, N], w: f16[N]) -> (f16[M, N], f16[M, N]) {\n"
     " h = x + r\n return h, h * rsqrt(mean(h * h, axis=N) + 1e-6) * w\n}", dict(M=7, N=20001)),
    ("kernel f(x: f32[M, N], r: f32[M, N], w: f32[N]) -> f32[M, N] {\n"
     " h = x * r + w\n e = exp(h - max(h, axis=N))\n return e / sum(e, axis=N)\n}", dict(M=7, N=20001)),
    ("kernel f(x: f16[M, N], r: f16[M, N], q: f16[M, N], w: f16[N], b: f16[N]) -> f16[M, N] {\n"
     " h = x + r + q\n c = h - mean(h, axis=N)\n return c * rsqrt(mean(c * c, axis=N) + 1e-5) * w + b\n}",
     dict(M=7, N=20001)),
    ("kernel f(x: f16[M, N], w: f32[N], b: f32[N], g: f32[N]) -> f16[M, N] {\n"
     " c = x - mean(x, axis=N)\n return c * rsqrt(mean(c * c, axis=N) + 1e-5) * w + b * g\n}", dict(M=4099, N=8192)),
    (RESIDUAL_NORM_PROGRAMS[1][0].replace("f16", "f32"), dict(M=7, N=36000)),
    ("kernel f(x: f16[M, N], r: f16[M, N]) -> (f16[M, N], f16[M, N]) { h = x + r\n"
     " e = exp(h - max(h, axis=N))\n return e / sum(e, axis=N), h }", dict(M=7, N=20001)),
    ("kernel f(x: f32[M, N], r: f32[M, N]) -> f32[M] { h = x + r\n m = max(h, axis=N)\n"
     " return log(sum(exp(h - m), axis=N)) + m }", dict(M=300, N=20001)),
    ("kernel f(x: f16[M, N], r: f16[M, N]) -> f32[N] { return sum(f32(x) * f32(r), axis=M) }", dict(M=16384, N=8192))]


@pytest.mark.parametrize("src,extents", MANY_INPUT_ROWS, ids=[f"{i}-{e['M']}x{e['N']}" for i, (_, e) in
                                                            enumerate(MANY_INPUT_ROWS)])
def test_rows_beside_many_inputs_by_default(src, extents):
    """registers.SEVERAL_ROWS_WORDS and late_weights_crowd (a default that spills fails here), exact."""
    k, s = _default_here(src, extents)
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


MASKED_PROGRAMS = [     # inputs read only where an index condition holds (schedule/guards.py)
    ("kernel f(s: f16[B, Q, K], scale: f32 = 0.088388, neg: f32 = -inf) -> f16[B, Q, K] {\n"
     " z = where(idx(K) <= idx(Q), s * scale, neg)\n e = exp(z - max(z, axis=K))\n return e / sum(e, axis=K)\n}",
     dict(B=3, Q=301, K=1032)),
    ("kernel u(x: bf16[M, N]) -> f32[M] { return sum(where(idx(N) > idx(M) + 7, 0.0, f32(x) * 3.0), axis=N) }",
     dict(M=517, N=4104)),
    ("kernel b(x: f32[M, N]) -> f32[M] {\n"
     " return sum(where(logical_and(idx(N) <= idx(M) + 2, idx(N) + 2 >= idx(M)), x * 2.0, 0.0), axis=N)\n}",
     dict(M=303, N=300)),
]


@pytest.mark.parametrize("src,extents,schedule", list(_pinned_params(
    MASKED_PROGRAMS, lambda s: s.kind == "reduce_row" and s.cluster == 1)))
def test_inputs_read_only_where_their_mask_holds(src, extents, schedule):
    _check_pinned(src, extents, schedule)


def test_a_causal_softmax_reads_its_scores_below_the_diagonal_by_default():
    """The attention scores' causal softmax at the sizes of a language model's layer (f16 and
    bf16, 2048 and 4096 a row; rows of 1000, no vectors), and triangles kept pointwise, right
    with outputs poisoned (that the masked vectors are left unread: test_codegen)."""
    causal = MASKED_PROGRAMS[0][0]
    for src, extents in ((causal, dict(B=16, Q=2048, K=2048)),
                         (causal.replace("f16", "bf16"), dict(B=2, Q=4096, K=4096)),
                         (causal, dict(B=64, Q=1000, K=1000)),
                         ("kernel t(x: f32[M, N]) -> f32[M, N] { return where(idx(N) <= idx(M), x, 0.0) }",
                          dict(M=8192, N=8192)),
                         ("kernel t(x: bf16[M, N], s: f32) -> bf16[M, N] { return where(idx(N) < idx(M), 0.0, x * s) }",
                          dict(M=1001, N=4104))):
        k, s = _default_here(src, extents)
        check(k, host_arguments(k, extents), extents, "out", label=s.tag)


def test_rows_too_long_to_hold_twice_in_registers_are_copied_into_shared_memory_by_default():
    """The vocab softmax, f16 [4096, 50257] (100 KB rows, each block copying its row into
    shared memory, two blocks an SM), and many bf16 layernorm rows of 40000 (80 KB),
    right at the GPU with their outputs poisoned; rows of 64 KB stay held in registers."""
    cases = ((SHARED_ROW_PROGRAMS[0][0], dict(M=4096, N=50257), True),
             (SHARED_ROW_PROGRAMS[2][0], dict(M=1200, N=40000), True),
             (SHARED_ROW_PROGRAMS[0][0], dict(M=2000, N=32000), False))
    for src, extents, copied in cases:
        k, s = _default_here(src, extents)
        assert s.shared_row == copied, (extents, s.tag)
        check(k, host_arguments(k, extents), extents, "out", label=s.tag)


def test_a_logsumexp_s_long_rows_by_default():
    """rows.logsumexp_rows at the GPU, outputs poisoned: bf16 rows of 50257 streamed by 256
    threads peeled, f32 rows of 32000 streamed unrolled 8 deep, bf16 rows of 24000 copied into
    shared memory (enough rows for 4 an SM on an H100 or H200)."""
    cases = ((LSE_F32.format(t="bf16"), dict(M=600, N=50257), "streamed"),
             (LSE_F32.format(t="f32"), dict(M=300, N=32000), "streamed"),
             (LSE_F32.format(t="bf16"), dict(M=600, N=24000), "copied"))
    for src, extents, how in cases:
        k, s = _default_here(src, extents)
        assert (s.items, s.online, s.shared_row) == (0, how == "streamed", how == "copied"), s.tag
        check(k, host_arguments(k, extents), extents, "out", label=s.tag)


def _needs_clusters():
    from tiledsl.runtime.launcher import device_arch
    if device_arch(0) != "sm_90a":
        pytest.skip("blocks sharing a row through distributed shared memory need an sm_90a GPU")


@pytest.mark.parametrize("src,extents,schedule", list(_pinned_params(CLUSTER_PROGRAMS, lambda s: s.cluster > 1)))
def test_rows_shared_by_the_blocks_of_a_cluster(src, extents, schedule):
    _needs_clusters()
    _check_pinned(src, extents, schedule)


def test_long_rows_are_shared_by_a_cluster_by_default_and_reuse_their_barriers():
    """The default for softmax over rows of 65536 f32 on sm_90a: fewer than 2 rows an SM,
    4 blocks of 512 threads a row, each holding its share; rows 44 longer take 8 blocks (a
    quarter of them would be 36 elements a thread, over the 32 it may hold). 2000 rows are
    copied into shared memory by 8 blocks of 256 (rows.shared_cluster_schedule)."""
    from tiledsl.runtime import launcher_for
    from tiledsl.runtime.launcher import _sm_count, device_arch
    from tiledsl.schedule.choose import default
    from tiledsl.schedule.problem import problem
    _needs_clusters()
    k = fresh("softmax.tdsl")
    k._launcher = launcher_for(k)
    for extents, blocks, copied in ((dict(M=200, N=65536), 4, False), (dict(M=7, N=65536 + 44), 8, False),
                                    (dict(M=2000, N=65536), 8, True)):
        p = problem(k._launcher.groups[0], k._launcher.layouts[0], extents, frozenset(), _sm_count(0),
                    device_arch(0))
        s = default(p, k.hints)
        assert (s.cluster, s.shared_row) == (blocks, copied), s.tag
        check(k, host_arguments(k, extents), extents, "out")


def test_rows_of_1_mb_go_to_resident_clusters_that_prefetch_their_next_rows():
    """Softmax over rows of about 1 MB f32 (8 blocks of 1024 threads a row, one an SM) by default:
    only the clusters resident at once are launched (the grid a whole number of clusters, fewer
    than the rows), each looping over rows and copying its next row's shares into shared memory
    (resident.resident_clusters). Right, every element written, at rows more than one a cluster and
    not a multiple of them, a last share partial (262140 = 65535 vectors of 4); layernorm f32 with
    its weights too; rmsnorm f32, whose prefetching kernel spills, persistent alone as launched
    (Launcher._prefetch_in_registers). The same rows a cluster a row agree."""
    from tiledsl.runtime.launcher import set_overrides
    _needs_clusters()
    rms = "kernel r(x: f32[M, N], w: f32[N]) -> f32[M, N] { return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }"
    ln = (EXAMPLES / "layernorm.tdsl").read_text().replace("f16", "f32")
    for src, extents, prefetch in (("softmax.tdsl", dict(M=37, N=262140), True), (rms, dict(M=40, N=262144), False),
                                   (ln, dict(M=40, N=262144), True)):     # (33 rows of it run spread)
        k, s = _default_here(src, extents)
        assert (s.cluster, s.block, s.persistent, s.prefetch) == (8, 1024, True, True), s.tag
        s = k._launcher.launched_default(0, _problem_here(k, extents), 0)
        assert (s.cluster, s.block, s.persistent, s.prefetch) == (8, 1024, True, prefetch), s.tag
        args = host_arguments(k, extents)
        check(k, args, extents, "out", label=s.tag)
        [program] = [pr for pr in k._launcher._plans.values() if pr.extents == extents]
        [(_, grid, _, _, shared)] = program.steps
        assert shared == (8 * 1024 * 16 if prefetch else 0)
        assert grid[0] % 8 == 0 and grid[0] < 8 * extents["M"], grid      # cut to the clusters resident at once
        set_overrides(k._launcher, {0: replace(s, persistent=False, prefetch=False)})
        check(k, args, extents, "out", label="a cluster a row")
        set_overrides(k._launcher, {})


# 16-bit rows in vectors: a thread holds up to 64 elements (packed two a register), a block
# alone or a cluster's blocks; every such candidate, at rows whose last share is partial.
PACKED_PROGRAMS = [("kernel f(x: f16[M, N]) -> f16[M, N] {\n e = exp(x - max(x, axis=N))\n"
                    " return e / sum(e, axis=N)\n}", dict(M=37, N=50304 - 8)),
                   ("layernorm.tdsl", dict(M=29, N=65536 - 16)),
                   ("kernel r(x: bf16[M, N], w: bf16[N]) -> bf16[M, N] "
                    "{ return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }", dict(M=5, N=60000)),
                   ("kernel f(x: bf16[M, N]) -> bf16[M, N] {\n e = exp(x - max(x, axis=N))\n"
                    " return e / sum(e, axis=N)\n}", dict(M=3, N=128256))]


# Rows whose length breaks 16-byte alignment held in registers peeled to aligned vectors
# (Schedule.peel with items): each row's head and tail, fewer than a vector each, read again
# by each phase; a weight over N gathered lane by lane; mixed widths; every such candidate, a
# block alone or a cluster's blocks, at rows with every head (0 to 7 elements).
PEELED_HELD_PROGRAMS = [("softmax.tdsl", dict(M=33, N=4097)),
                        ("kernel f(x: f16[M, N]) -> f16[M, N] {\n e = exp(x - max(x, axis=N))\n"
                         " return e / sum(e, axis=N)\n}", dict(M=17, N=10001)),
                        ("kernel r(x: bf16[M, N], w: bf16[N]) -> bf16[M, N] "
                         "{ return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }", dict(M=9, N=40001)),
                        ("kernel m(x: f16[M, N], y: f32[M, N], s: f32[M]) -> f32[M, N] { z = x * y + s\n"
                         " return z - max(z, axis=N) }", dict(M=6, N=6011)),
                        ("softmax.tdsl", dict(M=11, N=65537)),
                        ("kernel f(x: f16[M, N]) -> f16[M, N] {\n e = exp(x - max(x, axis=N))\n"
                         " return e / sum(e, axis=N)\n}", dict(M=37, N=2053)),
                        ("kernel l(x: f32[M, N]) -> f32[M, N] { return x / max(abs(x), axis=N) }",
                         dict(M=2, N=200001))]


@pytest.mark.parametrize("src,extents,schedule", list(_pinned_params(
    PEELED_HELD_PROGRAMS, lambda s: s.kind == "reduce_row" and s.peel and s.items > 0)))
def test_rows_held_peeled_to_aligned_vectors(src, extents, schedule):
    if schedule.cluster > 1:
        _needs_clusters()
    _check_pinned(src, extents, schedule)


def test_rows_breaking_alignment_are_held_peeled_by_default():
    """The defaults (rows.long_row_schedule) on this GPU: softmax f32 over 4097 (a block
    of 128) and 65537 (a cluster's blocks on sm_90a, else streamed peeled), f16 over 50257
    (a block of 1024, 56 elements a thread) and 1537 (a warp), rmsnorm bf16 over 3001 (64
    threads), against float64, outputs poisoned."""
    from tiledsl.runtime.launcher import device_arch
    for src, extents in (("softmax.tdsl", dict(M=300, N=4097)), ("softmax.tdsl", dict(M=150, N=65537)),
                         (PEELED_HELD_PROGRAMS[1][0], dict(M=40, N=50257)),
                         (PEELED_HELD_PROGRAMS[1][0], dict(M=999, N=1537)),
                         (PEELED_HELD_PROGRAMS[2][0], dict(M=500, N=3001))):
        k, s = _default_here(src, extents)
        assert s.peel and (s.items > 0 or device_arch(0) != "sm_90a"), s.tag
        check(k, host_arguments(k, extents), extents, "out", label=s.tag)


@pytest.mark.parametrize("dtype,extents", [("f16", dict(M=300, N=8192)), ("bf16", dict(M=77, N=10000)),
                                          ("f16", dict(M=33, N=32000)), ("bf16", dict(M=1000, N=4096)),
                                          ("f16", dict(M=41, N=16384)), ("bf16", dict(M=333, N=16376)),
                                          ("bf16", dict(M=700, N=15000))])
def test_long_16_bit_rows_without_weights_are_held_by_the_fewest_threads(dtype, extents):
    """The defaults of rows.long_row_schedule for softmax in 16 bits: 128 to 512 threads,
    up to 64 elements a thread, against float64, outputs poisoned."""
    k, s = _default_here(PEELED_HELD_PROGRAMS[1][0].replace("f16", dtype), extents)
    assert s.block <= 512 and s.items * s.vec >= 32, s.tag
    # exp's values kept at 32 elements a thread below 512 threads (bf16: up to 512) where the GPU has
    # much bandwidth per SM (rows.packed_keeps_pay; rows.halved_packed_share takes 256 or 512 threads
    # over 128 or 256)
    assert s.keep == (s.items * s.vec == 32 and (s.block < 512 or dtype == "bf16") and _much_bandwidth_here()), s.tag
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


LAYERNORM_F16_WEIGHTS = ("kernel l(x: f16[M, N], w: f16[N], b: f16[N]) -> f16[M, N] {\n mu = mean(x, axis=N)\n"
                         " xc = x - mu\n return xc * rsqrt(mean(xc * xc, axis=N) + 1e-5) * w + b\n}")


@pytest.mark.parametrize("src,extents", [("layernorm.tdsl", dict(M=16385, N=4096)),
                                         ("layernorm.tdsl", dict(M=8500, N=3000)),
                                         (LAYERNORM_F16_WEIGHTS, dict(M=8449, N=5128)),
                                         (LAYERNORM_F16_WEIGHTS.replace("f16", "bf16"), dict(M=9000, N=2056))],
                         ids=["f32w-16385x4096", "f32w-8500x3000", "f16w-8449x5128", "bf16w-9000x2056"])
def test_many_16_bit_rows_with_heavy_weights_by_default(src, extents):
    """The default for many 16-bit rows whose weights outweigh them (shares.late_wide_share on a
    GPU with much bandwidth per SM: a block a row of at most 128 threads, 4 or more vectors
    each, weights loaded late; elsewhere the rules before it), rows that leave part of a
    thread's share idle, against float64, outputs poisoned."""
    from tiledsl.runtime.launcher import _sm_count
    k, s = _default_here(src, extents)
    if _much_bandwidth_here() and extents["M"] >= 64 * _sm_count(0):
        assert s.row_threads <= 128 and s.items >= 4 and not s.hoist and not s.blocks_per_sm, s.tag
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


@pytest.mark.parametrize("rows_per_sm,n", [(31, 6144), (30, 12280), (62, 5120)], ids=["31/SM-6144", "30/SM-12280",
                                                                                 "62/SM-5120"])
def test_many_all_f16_layernorm_rows_of_three_vectors_a_thread_by_default(rows_per_sm, n):
    """On a GPU with little bandwidth per SM (an H100), all-f16 layernorm rows that a persistent
    block would hoist without prefetching (three vectors a thread) run a block a row from 30
    rows an SM, the weights hoisted (shares.unpinned_hoisted_rows); a row of 12280 leaves part of
    the last vector slots idle. Rows counted on this GPU's SMs (one more, so the last wave is
    partial), against float64, outputs poisoned."""
    from tiledsl.runtime.launcher import _sm_count, hbm_bandwidth
    extents = dict(M=rows_per_sm * _sm_count(0) + 1, N=n)
    k, s = _default_here(LAYERNORM_F16_WEIGHTS, extents)
    if hbm_bandwidth(0) > 0 and not _much_bandwidth_here():
        assert s.items == 3 and s.hoist and not s.blocks_per_sm and not s.prefetch, s.tag
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


@pytest.mark.parametrize("rows_per_sm,n", [(128, 1024), (129, 2048), (130, 1528)], ids=["128/SM-1024", "129/SM-2048",
                                                                                      "130/SM-1528"])
def test_many_rmsnorm_rows_one_vector_a_thread_by_default(rows_per_sm, n):
    """On a GPU with little bandwidth per SM (an H100), rmsnorm's 16-bit rows that would take two
    vectors a thread take one, at twice the threads (shares.single_vector_share), from 128 rows an
    SM; a row of 1528 leaves part of the doubled block idle. Rows counted on this GPU's SMs (one
    more, so the last wave is partial), against float64, outputs poisoned."""
    from tiledsl.runtime.launcher import _sm_count
    extents = dict(M=rows_per_sm * _sm_count(0) + 1, N=n)
    k, s = _default_here("rmsnorm.tdsl", extents)
    if not _much_bandwidth_here():
        assert s.items == 1 and s.vec == 8 and s.row_threads == s.block >= 128 and s.hoist, s.tag
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


@pytest.mark.parametrize("src,rows_per_sm,n", [("layernorm.tdsl", 40, 8192), ("layernorm.tdsl", 63, 4096),
                                               (VARIANTS["layernorm_bf16_f32w"], 48, 8184),
                                               ("layernorm.tdsl", 41, 7168), ("layernorm.tdsl", 40, 6152)],
                         ids=["f32w-40/SM-8192", "f32w-63/SM-4096", "bf16-f32w-48/SM-8184", "f32w-41/SM-7168",
                              "f32w-40/SM-6152"])
def test_40_to_63_16_bit_rows_an_sm_with_heavy_weights_by_default(src, rows_per_sm, n):
    """From rows.LATE_HEAVY_ROWS_PER_SM rows an SM, on a GPU with little bandwidth per SM (an
    H100), rows of rows.LATE_HEAVY_MIN_ROW elements or more whose f32 weights outweigh them run a
    block a row with the weights loaded late: registers for 1536 threads, or 256 threads of four
    vectors where 512 would read two (rows of 6152 to 8192: shares.halved_heavy_share, which leaves
    a quarter of a row of 6152's slots idle); elsewhere the persistent block stays. Rows counted
    on this GPU's SMs (a row more, so the last wave is partial), against float64, outputs poisoned."""
    from tiledsl.runtime.launcher import _sm_count, hbm_bandwidth
    extents = dict(M=rows_per_sm * _sm_count(0) + 1, N=n)
    k, s = _default_here(src, extents)
    if hbm_bandwidth(0) > 0 and not _much_bandwidth_here():
        assert not s.hoist and not s.blocks_per_sm, s.tag
        if n > 6144:
            assert (s.block, s.items, s.min_blocks) == (256, 4, 1), s.tag
        else:
            assert s.min_blocks * s.block == 1536, s.tag
    else:
        assert s.prefetch and s.blocks_per_sm, s.tag
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


@pytest.mark.parametrize("src,extents", [("layernorm.tdsl", dict(M=4096, N=6144)),
                                         ("layernorm.tdsl", dict(M=4097, N=10240)),
                                         (LAYERNORM_F16_WEIGHTS, dict(M=4096, N=12280)),
                                         (LAYERNORM_F16_WEIGHTS.replace("f16", "bf16"), dict(M=3300, N=5128)),
                                         ("layernorm.tdsl", dict(M=4096, N=8192)),
                                         ("layernorm.tdsl", dict(M=2049, N=8184)),
                                         (LAYERNORM_F16_WEIGHTS, dict(M=4095, N=8192)),
                                         (LAYERNORM_F16_WEIGHTS, dict(M=2049, N=16376)),
                                         ("layernorm.tdsl", dict(M=6000, N=14336))],
                         ids=["f32w-4096x6144", "f32w-4097x10240", "f16w-4096x12280", "bf16w-3300x5128",
                              "f32w-4096x8192", "f32w-2049x8184", "f16w-4095x8192", "f16w-2049x16376",
                              "f32w-6000x14336"])
def test_fewer_16_bit_rows_with_heavy_weights_by_default(src, extents):
    """The default for 16 to 63 16-bit rows an SM whose weights outweigh them, on a GPU with much
    bandwidth per SM: half the threads where a thread would read 48 bytes (shares.halved_late_share),
    or 64 at 512 threads (rows of 14336 and 16376: seven or eight vectors at 256), else a
    prefetching block of 512 launched only as often as an SM holds it at once
    (shares.prefetching_blocks_per_sm); elsewhere the rules before them. Against float64, outputs
    poisoned, rows and lengths that leave part of a block or a thread's share idle."""
    k, s = _default_here(src, extents)
    if _much_bandwidth_here():
        if extents["N"] not in (8184, 8192):     # 48 bytes a thread by default, or 64 at 512 threads
            assert s.items in (5, 6, 7, 8) and s.row_threads in (128, 256) and not s.hoist and not s.blocks_per_sm, s.tag
        else:
            assert s.prefetch and s.block == 512 and s.blocks_per_sm == 2, s.tag
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


@pytest.mark.parametrize("src,extents", [("layernorm.tdsl", dict(M=1000, N=12296)),
                                         (VARIANTS["layernorm_bf16_f32w"], dict(M=777, N=14336)),
                                         (VARIANTS["layernorm_f32"], dict(M=1001, N=12288)),
                                         (LAYERNORM_F16_WEIGHTS, dict(M=1030, N=16384)),
                                         ("layernorm.tdsl", dict(M=601, N=12296)),
                                         (VARIANTS["layernorm_bf16_f32w"], dict(M=561, N=14336))],
                         ids=["f32w-1000x12296", "bf16-f32w-777x14336", "f32-1001x12288", "f16w-1030x16384",
                              "f32w-601x12296", "bf16-f32w-561x14336"])
def test_few_long_rows_with_heavy_weights_by_default(src, extents):
    """The default for 4 to 12 long rows an SM whose weights outweigh them, on a GPU with much
    bandwidth per SM: a persistent block of 1024 threads hoisting the weights and prefetching
    its next row, once an SM (rows.doubled_prefetch_pays); elsewhere the rules before it.
    Against float64, outputs poisoned, rows that leave the last blocks a row fewer and (at
    12296) part of the block's vector slots idle."""
    from tiledsl.runtime.launcher import _sm_count
    k, s = _default_here(src, extents)
    if _much_bandwidth_here() and 4 * _sm_count(0) < extents["M"] <= 12 * _sm_count(0):
        assert s.block == 1024 and s.prefetch and s.hoist and s.blocks_per_sm == 1, s.tag
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


@pytest.mark.parametrize("src,extents", [(LAYERNORM_F16_WEIGHTS, dict(M=421, N=14336)),
                                         ("layernorm.tdsl", dict(M=300, N=16376)),
                                         (LAYERNORM_F16_WEIGHTS.replace("f16", "bf16"), dict(M=500, N=16384))],
                         ids=["f16w-421x14336", "f32w-300x16376", "bf16-bf16w-500x16384"])
def test_few_16_bit_rows_with_heavy_weights_in_one_wave_by_default(src, extents):
    """The default for 2 to 4 long 16-bit rows an SM whose weights outweigh them, on a GPU with
    much bandwidth per SM: a block a row of 256 threads, seven or eight vectors each, the
    weights loaded late (shares.halved_late_share within one wave of blocks of 512); elsewhere
    the rules before it. Against float64, outputs poisoned, a row (16376) that leaves the
    last thread's share part idle."""
    from tiledsl.runtime.launcher import _sm_count
    k, s = _default_here(src, extents)
    if _much_bandwidth_here() and 2 * _sm_count(0) <= extents["M"] <= 4 * _sm_count(0):
        assert s.row_threads == 256 and s.items in (7, 8) and not s.hoist and not s.blocks_per_sm, s.tag
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


@pytest.mark.parametrize("extents", [dict(M=701, N=8192), dict(M=1000, N=8188), dict(M=1583, N=8192),
                                     dict(M=601, N=7684)],
                         ids=["701x8192", "1000x8188", "1583x8192", "601x7684"])
def test_few_f32_rows_without_weights_by_default(extents):
    """The default for 4 to 12 f32 softmax rows an SM on a GPU with much bandwidth per SM:
    256 threads holding twice the row each rather than 512 keeping their exps
    (rows.few_plain_rows); elsewhere the rules before it. Against float64, outputs poisoned,
    a row (8188) that leaves the last thread's share part idle."""
    from tiledsl.runtime.launcher import _sm_count
    k, s = _default_here("softmax.tdsl", extents)
    if _much_bandwidth_here() and 4 * _sm_count(0) < extents["M"] <= 12 * _sm_count(0):
        assert s.row_threads == 256 and s.items == -(-extents["N"] // 1024) and not s.keep, s.tag
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


# Many light rows (rows.warp_row_schedule): a warp a row, 4 rows a block of 128, in vectors,
# peeled where the length breaks alignment, else element by element; row counts that leave the
# last block part empty, a result per row, weights hoisted or gathered.
WARP_ROW_PROGRAMS = [("softmax.tdsl", dict(M=4099, N=200)),
                     (PEELED_HELD_PROGRAMS[1][0], dict(M=1001, N=257)),      # softmax f16
                     (PEELED_HELD_PROGRAMS[2][0], dict(M=77, N=1001)),       # rmsnorm bf16
                     ("layernorm.tdsl", dict(M=37, N=257)),
                     ("kernel l(x: f32[M, N]) -> f32[M] {\n m = max(x, axis=N)\n"
                      " return m + log(sum(exp(x - m), axis=N))\n}", dict(M=6, N=1021)),
                     (LAYERNORM_F16_WEIGHTS, dict(M=3, N=513))]


@pytest.mark.parametrize("src,extents", WARP_ROW_PROGRAMS + [
    ("softmax.tdsl", dict(M=1, N=129)), ("softmax.tdsl", dict(M=262147, N=255)),
    (WARP_ROW_PROGRAMS[1][0], dict(M=131073, N=511)), (WARP_ROW_PROGRAMS[2][0], dict(M=2, N=1023)),
    (WARP_ROW_PROGRAMS[1][0], dict(M=262145, N=129)), (WARP_ROW_PROGRAMS[1][0], dict(M=1, N=256)),
    (WARP_ROW_PROGRAMS[2][0], dict(M=33, N=200)), ("layernorm.tdsl", dict(M=1000, N=256))],
    ids=lambda v: "x".join(map(str, v.values())) if isinstance(v, dict) else v[:12])
def test_many_light_rows_take_a_warp_each_by_default(src, extents):
    """The default (rows.warp_row_schedule) for rows of 129 to 1023 elements moving
    under 4096 bytes: a warp a row, 4 a block (half a warp, 16 a block, where a row of
    each input is 512 bytes or less); against float64, outputs poisoned."""
    k, s = _default_here(src, extents)
    assert (s.block, s.row_threads) in ((128, 32), (256, 16)), s.tag
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


@pytest.mark.parametrize("src,extents,schedule", list(_pinned_params(
    WARP_ROW_PROGRAMS, lambda s: s.kind == "reduce_row" and s.row_threads in (16, 32) and s.block > 32)))
def test_rows_taking_a_warp_each_several_a_block(src, extents, schedule):
    _check_pinned(src, extents, schedule)


# rows read element by element (lengths that break 16-byte alignment) whose elements take
# exp: costly values kept between phases, and rows sharing a warp computed without a branch
# per element (what lies past a row's end left out by a select and a predicate); weights
# loaded late keep the branches
ELEMENT_ROW_PROGRAMS = [
    ("kernel a(x: f16[B, H, S, T], s: f32) -> f16[B, H, S, T] {\n e = exp((x - max(x, axis=T)) * s)\n"
     " return e / sum(e, axis=T)\n}", dict(B=2, H=3, S=197, T=197)),
    ("kernel s(x: bf16[M, N]) -> bf16[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}",
     dict(M=5003, N=255)),
    ("kernel s(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}",
     dict(M=100003, N=13)),
    ("kernel l(x: f16[M, N]) -> f32[M] {\n m = max(f32(x), axis=N)\n return m + log(sum(exp(f32(x) - m), axis=N))\n}",
     dict(M=4097, N=199)),
    ("kernel g(x: f16[M, N], w: f16[N]) -> f16[M, N] { return silu(x) * rsqrt(mean(x * x, axis=N) + 1e-6) * w }",
     dict(M=1001, N=197))]


@pytest.mark.parametrize("src,extents", ELEMENT_ROW_PROGRAMS + [
    (ELEMENT_ROW_PROGRAMS[1][0], dict(M=1, N=129)), (ELEMENT_ROW_PROGRAMS[1][0], dict(M=262147, N=129)),
    (ELEMENT_ROW_PROGRAMS[2][0], dict(M=7, N=3))],
    ids=lambda v: "x".join(map(str, v.values())) if isinstance(v, dict) else v[:12])
def test_rows_read_element_by_element_by_default(src, extents):
    """The defaults of rows a warp or part of one reads element by element; against
    float64, outputs poisoned."""
    k, s = _default_here(src, extents)
    assert s.vec == 1 and s.row_threads <= 32, s.tag
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


@pytest.mark.parametrize("src,extents,schedule", list(_pinned_params(
    ELEMENT_ROW_PROGRAMS, lambda s: s.kind == "reduce_row" and s.vec == 1 and s.row_threads <= 32 and s.block > 32)))
def test_rows_read_element_by_element_every_candidate(src, extents, schedule):
    _check_pinned(src, extents, schedule)


@pytest.mark.parametrize("src,extents,schedule", list(_pinned_params(
    PACKED_PROGRAMS, lambda s: s.kind == "reduce_row" and s.items * s.vec > 32, lambda s: f"-ps{s.blocks_per_sm}")))
def test_16_bit_rows_held_64_elements_a_thread(src, extents, schedule):
    if schedule.cluster > 1:
        _needs_clusters()
    _check_pinned(src, extents, schedule)


WIDENING = [    # results wider than the inputs along the rows (test_codegen's WIDENING_PROGRAMS)
    "kernel f(x: f16[M, N]) -> f32[M, N] { return f32(x) }",
    "kernel f(x: i8[M, N], s: f32[N]) -> f32[M, N] { return f32(x) * s }",
    "kernel f(x: f16[M, N]) -> f32[M, N] {\n e = exp(f32(x) - max(f32(x), axis=N))\n return e / sum(e, axis=N)\n}",
    "kernel f(x: bf16[M, N], w: f32[N]) -> f32[M, N] {\n return x * rsqrt(mean(f32(x) * f32(x), axis=N) + 0.00001) * w\n}",
]

# Results wider than their inputs along the rows store 16 bytes a thread (problem.vector_bound):
# the widening programs of test_codegen at sizes no tile divides, a last block part empty, one row.
@pytest.mark.parametrize("src,extents", [
    (WIDENING[0], dict(M=37, N=4100)), (WIDENING[0], dict(M=301, N=1001)), (WIDENING[0], dict(M=1, N=5)),
    (WIDENING[1], dict(M=77, N=1028)), (WIDENING[2], dict(M=39, N=8196)), (WIDENING[2], dict(M=1, N=12)),
    (WIDENING[3], dict(M=1001, N=1036))])
def test_results_wider_than_their_inputs_by_default(src, extents):
    """Against float64, outputs poisoned, under this GPU's default: vectors of 4 that store
    16 bytes, not 8 (32 bytes in two halves)."""
    k, s = _default_here(src, extents)
    assert s.vec <= 4, s.tag
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


# 8-bit streams (pointwise.eight_bit_stream): vectors of 4, 4 items, 256 threads, walking rows
# beside a broadcast: the last row group and the last block of a row part empty (301 rows, 257
# vectors a row), a straddling tail, integer results exact.
@pytest.mark.parametrize("src,extents,outer", [
    ("kernel f(x: i8[M, N], b: i8[N]) -> i8[M, N] { return x + b }", dict(M=301, N=1028), True),
    ("kernel f(x: i8[M, N], s: f16[N]) -> f16[M, N] { return f16(x) * s }", dict(M=301, N=1028), True),
    (WIDENING[1], dict(M=301, N=1028), True),
    ("kernel f(x: i8[N]) -> i8[N] { return x + x }", dict(N=(1 << 20) + 1), False),
    ("kernel f(x: i8[N]) -> i8[N] { return x + x }", dict(N=(1 << 20) + 4), False),
    ("kernel f(x: i8[N]) -> i8[N] { return x + x }", dict(N=1), False)])
def test_eight_bit_streams_by_default(src, extents, outer):
    """Against float64, outputs poisoned, under this GPU's default."""
    k, s = _default_here(src, extents)
    assert s.vec <= 4 and s.outer == outer, s.tag
    check(k, host_arguments(k, extents), extents, "out", label=s.tag)


# Split reductions with few rows: one kernel, its last block combining the partials
# (Schedule.last_block), at lengths no vector or split divides (rows peeled to aligned vectors).
LAST_BLOCK_PROGRAMS = [
    ("kernel f(x: f32[N]) -> f32 { return sum(x) }", dict(N=(1 << 22) + 3)),
    ("kernel f(x: f16[N]) -> f16 { return max(x) }", dict(N=(1 << 24) + 8)),
    ("kernel f(x: bf16[N]) -> f32 { return mean(f32(x)) }", dict(N=5000001)),
    ("kernel f(x: f32[N]) -> f32 { return sqrt(sum(x * x)) }", dict(N=(1 << 20) + 1)),
    ("kernel f(x: i32[N]) -> i32 { return sum(x) }", dict(N=(1 << 22) + 1)),
    # rows finished with an input of their own; columns a warp each; an online pair over M
    ("kernel f(x: f32[M, N], w: f32[M]) -> f32[M] { return sum(x, axis=N) * w }", dict(M=8, N=(1 << 20) + 5)),
    # peeled rows, each starting at another offset, beside a weight read lane by lane
    ("kernel f(x: bf16[M, N], w: bf16[N]) -> f32[M] { return sum(f32(x) * f32(w), axis=N) }",
     dict(M=5, N=(1 << 21) + 3)),
    ("kernel f(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=(1 << 22) + 1, N=8)),
    ("kernel f(x: f32[M, N]) -> f32[N] {\n m = max(x, axis=M)\n return m + log(sum(exp(x - m), axis=M))\n}",
     dict(M=200003, N=5)),
]


@pytest.mark.parametrize("src,extents", LAST_BLOCK_PROGRAMS)
def test_splits_of_few_rows_are_one_kernel_finished_by_its_last_block(src, extents):
    """Each program's default is a split finished by its last block; its results, poisoned,
    against float64, the first call and warm ones (fresh inputs each); the stream's counter of
    finished blocks is zero again after every call."""
    from tiledsl.runtime.launcher import _DONE_COUNTERS
    k, s = _default_here(src, extents)
    assert s.kind == "reduce_split" and s.last_block, s.tag
    for call in range(3):
        check(k, host_arguments(k, extents), extents, "out" if call % 2 else "alloc", label=f"{s.tag} call {call}")
        assert all(int(a.get()[0]) == 0 for a, _ in _DONE_COUNTERS.values())


PLACEMENT_PROGRAMS = [
    ("kernel f(x: f16[N]) -> f16 { return max(x) }", dict(N=(1 << 24) + 8), "fills"),
    ("kernel f(x: f32[N]) -> f32 { return sum(x) }", dict(N=1 << 23), "fills"),
    ("kernel f(x: f32[M, N]) -> f32[M] { return sum(x, axis=N) }", dict(M=8, N=(1 << 21) + 5), "fills"),
    ("kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}",
     dict(M=16384, N=1024), "waves"),
    ("kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}",
     dict(M=40, N=1024), "few"),
    ("kernel f(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=16384, N=4096), None),
]


@pytest.mark.parametrize("src, extents, expect", PLACEMENT_PROGRAMS)
def test_launches_overlap_the_kernel_before_only_where_their_blocks_spread(src, extents, expect):
    """Each planned kernel launches to overlap the one before it exactly where the driver's
    residency says its blocks still spread (dependent.overlaps_the_kernel_before): a default
    split along rows fills every SM's room (columns.splits_filling_room) and overlaps, rows
    in waves of blocks overlap, 40 rows of blocks do not, a combining kernel does. Six calls
    in a row on fresh inputs, each into its own poisoned out=, every result then against
    float64."""
    import cupy as cp
    from tiledsl.runtime.launcher import _sm_count
    k = fresh(src)
    rng = np.random.default_rng(fresh_seed())
    hosts = [host_arguments(k, extents, int(rng.integers(2 ** 62))) for _ in range(6)]
    first = as_list(k(*[cp.asarray(a) for a in hosts[0]]))
    outs = [[poison(o.shape, o.dtype) for o in first] for _ in hosts]
    for h, o in zip(hosts, outs):
        k(*[cp.asarray(a) for a in h], out=o[0] if len(o) == 1 else tuple(o))
    for n, (h, o) in enumerate(zip(hosts, outs)):
        for got, want in zip(o, as_list(k.reference(*h, compute="f64"))):
            err = relative_error(got.get().astype(np.float64), want)
            assert err <= 1e-5, (n, err)
    planned = planned_launches(k)
    assert planned and all(resident for _, facts in planned for _, resident in facts)
    program, [(blocks, resident), *_] = planned[-1]
    room = resident * _sm_count(0)
    if expect == "fills":
        assert len(program.steps) == 1 and blocks == room // extents.get("M", 1) * extents.get("M", 1)
    if expect is not None:
        assert program.dependent[0] == (expect != "few"), (blocks, room)


def test_splits_finished_by_their_last_block_on_two_streams_at_once():
    """Full sums and maxima launched in turn on two streams (their kernels may run at once,
    each stream with its own counter), 12 calls each on fresh inputs, every result exact
    against NumPy's (integers) or within f32's tolerance."""
    import cupy as cp
    from tiledsl.runtime.launcher import _DONE_COUNTERS
    ksum = fresh("kernel f(x: i32[N]) -> i64 { return sum(i64(x)) }")
    kmax = fresh("kernel f(x: f32[N]) -> f32 { return max(x) }")
    rng = np.random.default_rng(fresh_seed())
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    calls = []
    for i in range(12):
        n = int(rng.integers(1 << 20, 1 << 22))
        xi = rng.integers(-1000, 1000, n, dtype=np.int32)
        xf = rng.standard_normal(n).astype(np.float32)
        with streams[i % 2]:
            di, df = cp.asarray(xi), cp.asarray(xf)
            calls.append((ksum(di), int(xi.astype(np.int64).sum()), kmax(df), float(xf.max())))
    for s in streams:
        s.synchronize()
    for got_sum, want_sum, got_max, want_max in calls:
        assert int(got_sum) == want_sum and float(got_max) == want_max
    assert len(_DONE_COUNTERS) >= 2 and all(int(a.get()[0]) == 0 for a, _ in _DONE_COUNTERS.values())


SHIFTED_WEIGHT_CASES = [    # peeled rows with 4- and 2-byte weights, every head among their rows
    ((EXAMPLES / "layernorm.tdsl").read_text(), dict(M=37, N=4099)),
    RESIDUAL_NORM_PROGRAMS[1],      # (the residual add's f16 layernorm with f32 w and b, 67 x 40003)
    ("kernel r(x: f32[M, N], w: f32[N]) -> f32[M, N] { return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }",
     dict(M=33, N=8193)),
    ((EXAMPLES / "layernorm.tdsl").read_text().replace("f32[N]", "f16[N]"), dict(M=37, N=4099)),
    ((EXAMPLES / "rmsnorm.tdsl").read_text().replace("f16", "bf16"), dict(M=41, N=1299))]


def _candidates_where(cases: list, keep) -> list:
    """pytest params (source, extents, schedule) of every candidate an H200 (132 SMs, 4800 GB/s)
    offers each one-kernel (source, extents) of `cases` for which `keep(schedule)` holds."""
    from tiledsl.schedule.choose import candidates
    from tiledsl.schedule.layout import plan_layout
    from tiledsl.schedule.partition import partition
    from tiledsl.schedule.problem import problem
    out = []
    for src, extents in cases:
        k = tiledsl.compile(src)
        [g] = partition(k.graph)
        p = problem(g, plan_layout(g, k.graph), extents, frozenset(), 132, "sm_90a", 4800.0)
        out += [pytest.param(src, extents, s, id=f"{'x'.join(map(str, extents.values()))}-{s.tag}")
                for s in candidates(p, k.hints) if keep(s)]
    return out


def _check_overridden(src: str, extents: dict, schedule) -> None:
    """`src` at `extents` launched at `schedule` (its one group's), checked as check() does."""
    from tiledsl.runtime import launcher_for
    from tiledsl.runtime.launcher import set_overrides
    k = fresh(src)
    k._launcher = launcher_for(k)
    set_overrides(k._launcher, {0: schedule})
    check(k, host_arguments(k, extents), extents, "out")


@pytest.mark.parametrize("src,extents,schedule", _candidates_where(SHIFTED_WEIGHT_CASES, lambda s: s.shift))
def test_weights_shifted_by_each_row_s_head(src, extents, schedule):
    """Every candidate reading a peeled row's 4- or 2-byte weights in vectors shifted by the row's head
    (Schedule.shift: looped, held, in shared memory, a cluster's) exact, every element written."""
    _check_overridden(src, extents, schedule)


ELEMENT_STREAMS = [     # rows read one by one whose weights outweigh them (rows.element_stream)
    ((EXAMPLES / "layernorm.tdsl").read_text(), dict(M=16384, N=4097)),     # 256 threads, 8 deep
    ((EXAMPLES / "layernorm.tdsl").read_text(), dict(M=8192, N=8193)),      # 256 threads, the rule's 16
    ((EXAMPLES / "layernorm.tdsl").read_text(), dict(M=300, N=20001)),      # 512 threads, 4 deep
    ((EXAMPLES / "layernorm.tdsl").read_text(), dict(M=7, N=4097)),
    ((EXAMPLES / "layernorm.tdsl").read_text(), dict(M=5000, N=6001)),      # 23 trips: 2 of 8 and a remainder
    ((EXAMPLES / "layernorm.tdsl").read_text().replace("f16", "bf16"), dict(M=6000, N=8191)),
    ((EXAMPLES / "layernorm.tdsl").read_text().replace("f16", "bf16").replace("f32[N]", "bf16[N]"),
     dict(M=6000, N=8191)),     # (twice the row's bytes, below 8192 elements)
    (RESIDUAL_NORM_PROGRAMS[1][0], dict(M=4500, N=6001))]


@pytest.mark.parametrize("src,extents", ELEMENT_STREAMS, ids=[str(e) for _, e in ELEMENT_STREAMS])
def test_rows_read_one_by_one_whose_weights_outweigh_them_run_right(src, extents):
    """The default of each (a row streamed element by element: 256 or 512 threads, unrolled no
    deeper than half a thread's trips) within tolerance, every element written."""
    k, s = _default_here(src, extents)
    assert (s.kind, s.vec, s.items, s.peel) == ("reduce_row", 1, 0, False), s
    check(k, host_arguments(k, extents), extents, "out")


RMSNORM_F32_W = ("kernel f(x: f16[M, N], w: f32[N]) -> f16[M, N] "
                 "{ return x * rsqrt(mean(f32(x) * f32(x), axis=N) + 1e-6) * w }")
HELD_PEELED = [     # long rows whose weights take twice their bytes: held peeled (rows.held_peel_weights_fit)
    ((EXAMPLES / "layernorm.tdsl").read_text().replace("f16", "bf16").replace("f32[N]", "bf16[N]"),
     dict(M=6000, N=8193)),
    ((EXAMPLES / "layernorm.tdsl").read_text().replace("f32[N]", "f16[N]"), dict(M=8192, N=8193)),
    (RESIDUAL_NORM_PROGRAMS[1][0], dict(M=4500, N=9001)),
    (RESIDUAL_NORM_PROGRAMS[1][0], dict(M=7, N=16001)),
    (RMSNORM_F32_W, dict(M=300, N=20001))]


@pytest.mark.parametrize("src,extents", HELD_PEELED, ids=[str(e) for _, e in HELD_PEELED])
def test_long_rows_held_peeled_beside_twice_their_bytes_of_weights_run_right(src, extents):
    """The default of each (held peeled in vectors of 8, its weights gathered lane by lane) within
    tolerance, every element written."""
    k, s = _default_here(src, extents)
    assert (s.kind, s.vec, s.items > 0, s.peel) == ("reduce_row", 8, True, True), s
    check(k, host_arguments(k, extents), extents, "out")


SHIFTED_DEFAULTS = [    # peeled rows whose weights outweigh them, read shifted (rows.shifted_where_heavier)
    (RESIDUAL_NORM_PROGRAMS[1][0], dict(M=4096, N=8193)),      # held by 512 threads
    (RESIDUAL_NORM_PROGRAMS[1][0], dict(M=4096, N=20001)),     # 80 KB a row: copied into shared memory
    (RESIDUAL_NORM_PROGRAMS[1][0], dict(M=1001, N=40003)),     # 160 KB: copied by 4 blocks of a cluster
    (RESIDUAL_NORM_PROGRAMS[1][0], dict(M=300, N=40003)),
    (RMSNORM_F32_W, dict(M=4096, N=20001)),
    (RMSNORM_F32_W, dict(M=8192, N=8193)),
    ((EXAMPLES / "layernorm.tdsl").read_text().replace("f32[N]", "f16[N]"), dict(M=2048, N=40001)),
    ((EXAMPLES / "layernorm.tdsl").read_text().replace("f16", "bf16").replace("f32[N]", "bf16[N]"),
     dict(M=1001, N=40003))]


@pytest.mark.parametrize("src,extents", SHIFTED_DEFAULTS, ids=[str(e) for _, e in SHIFTED_DEFAULTS])
def test_peeled_rows_beside_heavier_weights_shift_them_by_default_and_run_right(src, extents):
    """The default of each (peeled, held or copied, its weights in vectors shifted by each row's head)
    within tolerance, every element written."""
    k, s = _default_here(src, extents)
    assert (s.kind, s.vec, s.peel, s.shift) == ("reduce_row", 8, True, True), s
    check(k, host_arguments(k, extents), extents, "out")


COPIED_ALONE = [   # rows two copies of which overflow an SM, copied by one block of 1024 (rows.shared_row_alone)
    (RESIDUAL_NORM_PROGRAMS[1][0], dict(M=1001, N=40960)),     # x and r: 160 KB a row
    ((EXAMPLES / "rmsnorm.tdsl").read_text(), dict(M=300, N=100000)),
    ((EXAMPLES / "layernorm.tdsl").read_text().replace("f16", "f32"), dict(M=300, N=32768 + 4)),
    ((EXAMPLES / "softmax.tdsl").read_text(), dict(M=300, N=40000))]


@pytest.mark.parametrize("src,extents", COPIED_ALONE, ids=[str(e) for _, e in COPIED_ALONE])
def test_rows_copied_by_one_block_of_1024_by_default_run_right(src, extents):
    """The default of each on an H100 or H200 (copied into shared memory by one block of 1024 threads a
    row) within tolerance, every element written."""
    from tiledsl.runtime.launcher import device_arch
    from tiledsl.schedule import rows
    k, s = _default_here(src, extents)
    if s.shared_row and s.block == 1024:
        assert (s.kind, s.items, s.cluster, s.peel) == ("reduce_row", 0, 1, False), s
    else:       # (another GPU: its own default, checked all the same)
        assert device_arch(0) not in rows.SHARED_ROW_ALONE_ARCHS, s.tag
    check(k, host_arguments(k, extents), extents, "out")


COPIED_BY_CLUSTERS = [     # rows copied into shared memory by a cluster's blocks, each its share
    (RESIDUAL_NORM_PROGRAMS[1][0], dict(M=300, N=65536)),        # rows.wide_rows_copied: 8 blocks of 256
    (RESIDUAL_NORM_PROGRAMS[1][0], dict(M=264, N=262144)),       # 8 of 1024, one an SM
    ((EXAMPLES / "rmsnorm.tdsl").read_text(), dict(M=300, N=100001)),     # peeled: 4 of 256
    ((EXAMPLES / "softmax.tdsl").read_text(), dict(M=300, N=40001))]


@pytest.mark.parametrize("src,extents", COPIED_BY_CLUSTERS, ids=[str(e) for _, e in COPIED_BY_CLUSTERS])
def test_rows_copied_by_a_cluster_s_blocks_by_default_run_right(src, extents):
    """The default of each on an H100 or H200 (copied into shared memory by the blocks of a cluster: rows
    over one block's shared memory, rows.wide_rows_copied; peeled rows, rows.shared_row_alone) within
    tolerance, every element written."""
    from tiledsl.runtime.launcher import device_arch
    k, s = _default_here(src, extents)
    if device_arch(0) == "sm_90a":
        assert (s.kind, s.items, s.shared_row, s.cluster > 1) == ("reduce_row", 0, True, True), s.tag
    check(k, host_arguments(k, extents), extents, "out")


GUARDED_CASES = ELEMENT_STREAMS[4:5] + ELEMENT_STREAMS[6:7] + [
    ((EXAMPLES / "softmax.tdsl").read_text(), dict(M=5, N=40001))]


@pytest.mark.parametrize("src,extents,schedule", _candidates_where(GUARDED_CASES, lambda s: s.guarded))
def test_guarded_chunks_of_rows_read_one_by_one(src, extents, schedule):
    """Every candidate walking guarded chunks of a row read element by element (Schedule.guarded)
    within tolerance, every element written."""
    _check_overridden(src, extents, schedule)
