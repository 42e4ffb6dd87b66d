"""Matmul on the GPU (marker gpu): the tiled GEMM with fused prologues and
epilogues against the float64 reference, on poisoned outputs."""
from __future__ import annotations

from pathlib import Path

import pytest

import tiledsl
from tiledsl.inputs import TOLERANCE, random_arguments

from gpu_helpers import check, gpu_status, planned_launches

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
_ok, _why = gpu_status()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _ok, reason=_why)]

SHAPES = [dict(M=1, K=1, N=1), dict(M=17, K=65, N=33), dict(M=127, K=63, N=255),
          dict(M=1000, K=1000, N=1000), dict(M=300, K=7, N=129)]


def _run(src, extents, out_kind="out"):
    k = tiledsl.compile(EXAMPLES / src[len("examples/"):] if src.startswith("examples/") else src)
    check(k, random_arguments(k.graph, extents), extents, out_kind)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("extents", SHAPES, ids=lambda e: "x".join(map(str, e.values())))
def test_plain_matmul(dtype, extents):
    _run(f"kernel mm(a: {dtype}[M, K], b: {dtype}[K, N]) -> {dtype}[M, N] {{ return a @ b }}", extents)


@pytest.mark.parametrize("extents", SHAPES[1:4], ids=lambda e: "x".join(map(str, e.values())))
def test_linear_relu_example(extents):
    _run("examples/linear.tdsl", extents)


def test_weight_stored_transposed_like_nn_linear():
    _run("kernel lin(x: f16[M, K], w: f16[N, K], b: f32[N]) -> f16[M, N] { return gelu(x @ w.T + b) }",
         dict(M=200, K=96, N=130))


def test_epilogue_kinds_residual_scale_two_outputs_and_transposed_store():
    src = ("kernel ep(x: f32[M, K], w: f32[K, N], r: f32[M, N], s: f32) -> (f32[N, M], f16[M, N]) {\n"
           "  y = x @ w * s + r\n  return y, f16(sigmoid(y)) }")
    _run(src, dict(M=70, K=40, N=90))


def test_prologue_casts_and_scaling():
    _run("kernel pro(x: f16[M, K], w: f32[K, N]) -> f32[M, N] { return (x * 2) @ exp(w) }",
         dict(M=33, K=17, N=65))


@pytest.mark.parametrize("extents", [dict(B=1, M=1, K=1, N=1), dict(B=3, M=100, K=70, N=50),
                                     dict(B=32, M=64, K=64, N=64)],
                         ids=lambda e: "x".join(map(str, e.values())))
def test_batched_example(extents):
    _run("examples/batched_matmul.tdsl", extents)


def test_batch_broadcast_by_name():
    _run("kernel bb(a: f32[B, M, K], w: f32[K, N]) -> f32[B, M, N] { return a @ w }",
         dict(B=4, M=30, K=20, N=10))


def test_mlp_example_two_matmuls():
    _run("examples/mlp.tdsl", dict(M=100, D=64, H=96, E=40))


@pytest.mark.parametrize("src", [
    # the operand stored by the first product's epilogue: read transposed, nn.Linear weights, returned too
    "kernel f(x: f16[M, D], w1: f16[D, H], w2: f16[E, M]) -> f16[E, H] {\n"
    "  h = f16(gelu(x @ w1))\n  return w2 @ h }",
    "kernel f(x: f16[M, D], w1: f16[H, D], w2: f16[E, H]) -> f16[M, E] {\n"
    "  h = f16(silu(x @ w1.T))\n  return h @ w2.T }",
    "kernel f(x: f16[M, D], w1: f16[D, H], w2: f16[H, E]) -> (f16[M, E], f16[M, H]) {\n"
    "  h = f16(relu(x @ w1))\n  return h @ w2, h }",
    # the product is needed by a reduction too: stored once, the operand recomputed
    "kernel f(x: f16[M, D], w1: f16[D, H], w2: f16[H, E]) -> (f16[M, E], f32[M]) {\n"
    "  y = x @ w1\n  h = f16(relu(y))\n  return h @ w2, sum(y, axis=H) }",
], ids=["transposed", "linear", "returned", "also-reduced"])
@pytest.mark.parametrize("extents", [dict(M=1, D=1, H=1, E=1), dict(M=100, D=72, H=136, E=40),
                                     dict(M=300, D=256, H=520, E=264)], ids=lambda e: "x".join(map(str, e.values())))
def test_two_products_with_the_operand_between_them_stored(src, extents):
    _run(src, extents)


@pytest.mark.parametrize("src", [
    # a 16-bit operand computed from parameters only: written by a pointwise kernel, then a plain product
    "kernel f(x: f32[M, K], w: f16[K, N]) -> f32[M, N] { return f16(x) @ w }",
    "kernel f(x: f16[M, K], s: f16[K], w: f16[K, N]) -> f16[M, N] { return f16(x * s) @ w }",
    "kernel f(x: bf16[M, K], w: f32[N, K]) -> f32[M, N] { return x @ bf16(w).T }",
    "kernel f(x: f32[K, M], w: f16[K, N]) -> f32[M, N] { return f16(x).T @ f16(w * 2.0) }",
    "kernel f(x: f32[M, K], w: f16[K, N], v: f16[K, N]) -> (f32[M, N], f32[M, N], f16[M, K]) {\n"
    "  a = f16(x)\n  return a @ w, a @ v, a }",
    # an A laid out along M: read in place, kept [k][m] in shared memory and read transposed
    "kernel f(at: f16[K, M], w: f16[N, K]) -> f32[M, N] { return at.T @ w.T }",
    "kernel f(x: bf16[B, K, M], w: bf16[K, N]) -> bf16[B, M, N] { return x.T @ w }",
    "kernel f(x: f16[M, K], w1: f16[K, N], w2: f16[M, K]) -> f16[N, K] {\n"
    "  h = f16(relu(x @ w1))\n  return h.T @ w2 }",
], ids=["cast", "scaled", "b-transposed", "both-a-transposed", "shared-and-returned", "a-transposed",
        "batched-a-transposed", "product-stored-transposed"])
@pytest.mark.parametrize("extents", [dict(M=1, N=1, K=1, B=1), dict(M=100, N=136, K=72, B=3),
                                     dict(M=520, N=264, K=300, B=2)], ids=lambda e: "x".join(map(str, e.values())))
def test_an_operand_from_parameters_stored_before_its_product(src, extents):
    _run(src, extents)


@pytest.mark.parametrize("src", [
    "kernel f(x: f32[M, K], w: f16[K, N]) -> f32[M, N] { return f16(x) @ w }",
    "kernel f(x: f16[M, K], s: f16[K], w: f16[K, N]) -> f16[M, N] { return f16(x * s) @ w }",
    "kernel f(at: f16[K, M], w: f16[K, N]) -> f32[M, N] { return at.T @ w }",
], ids=["cast", "scaled", "a-transposed"])
def test_an_operand_from_parameters_then_the_warpgroup_product(src):
    # sizes whose product takes the TMA-fed warpgroup tiles, with ragged edges
    _run(src, dict(M=1100, N=2056, K=1000))


@pytest.mark.parametrize("src", [
    # the f16 probabilities stored by the softmax kernel: scores laid out [S, T] (a reduction over
    # the outer dim), read transposed; a product whose B operand they are, its result transposed
    "kernel f(s: f32[S, T], v: f16[S, D]) -> f16[T, D] {\n  m = max(s, axis=S)\n  p = exp(s - m)\n"
    "  return f16(p / sum(p, axis=S)).T @ v }",
    "kernel g(q: f16[T, D], k: f16[S, D], v: f16[S, D]) -> f16[D, T] {\n  s = k @ q.T\n"
    "  p = exp(s - max(s, axis=S))\n  return v.T @ f16(p / sum(p, axis=S)) }",
], ids=["outer-axis", "operand-b"])
@pytest.mark.parametrize("extents", [dict(S=1, T=1, D=1), dict(S=300, T=200, D=64), dict(S=1030, T=77, D=40)],
                         ids=lambda e: "x".join(map(str, e.values())))
def test_probabilities_stored_by_the_softmax_kernel(src, extents):
    _run(src, extents)


@pytest.mark.parametrize("name", ["attention", "causal_attention"])
def test_attention_examples(name):
    mod = tiledsl.compile(EXAMPLES / "attention.tdsl")
    k = mod[name]
    extents = dict(T=100, S=120, D=64)
    args = random_arguments(k.graph, extents)
    args[3] = 0.125
    check(k, args, extents, "out")


def test_allocating_and_repeated_calls_agree():
    k = tiledsl.compile(EXAMPLES / "linear.tdsl")
    extents = dict(M=64, K=32, N=48)
    for _ in range(3):
        check(k, random_arguments(k.graph, extents), extents, "alloc")


@pytest.mark.parametrize("layout", ["a @ b", "a @ bt.T", "at.T @ b", "at.T @ bt.T"])
@pytest.mark.parametrize("extents", [dict(M=40, K=24, N=56), dict(M=130, K=96, N=72), dict(M=33, K=17, N=9)],
                         ids=lambda e: "x".join(map(str, e.values())))
def test_tensor_core_operand_layouts(layout, extents):
    src = (f"kernel lay(a: f16[M, K], b: f16[K, N], at: f16[K, M], bt: f16[N, K]) -> f32[M, N] "
           f"{{ return {layout} }}")
    _run(src, extents)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_large_tiles(dtype):
    # Sizes that fill the GPU choose the 128x128 tiles (tensor cores for f16/bf16).
    src = f"kernel big(a: {dtype}[M, K], b: {dtype}[K, N]) -> {dtype}[M, N] {{ return a @ b }}"
    k = tiledsl.compile(src)
    from tiledsl.codegen import sources_for
    extents = dict(M=2048 + 3, K=136, N=2048 - 5)
    [ks] = sources_for(k, extents)
    assert ks.schedule.tile[0] == 128, ks.schedule
    check(k, random_arguments(k.graph, extents), extents, "out")


def _tensor_core_candidates():
    for dtype, layout in (("f16", "a @ b"), ("f16", "a @ bt.T"), ("bf16", "a @ b"), ("f16", "at.T @ b"),
                          ("bf16", "at.T @ bt.T")):
        a_decl = "at: {t}[K, M]" if layout.startswith("at") else "a: {t}[M, K]"
        b_decl = "bt: {t}[N, K]" if layout.endswith("bt.T") else "b: {t}[K, N]"
        src = (f"kernel tc({a_decl.format(t=dtype)}, {b_decl.format(t=dtype)}, bias: f32[N]) -> {dtype}[M, N] "
               f"{{ return relu({layout} + bias) }}")
        yield from _pipelined(src, f"{dtype}-{layout.replace(' ', '')}")
    yield from _pipelined(TF32, "tf32")
    for layout in ("a @ b", "at.T @ bt.T"):    # vectorized f32 SIMT tiles, both fast-dim orientations
        yield from _pipelined(f"kernel s(a: f32[M, K], b: f32[K, N], at: f32[K, M], bt: f32[N, K]) -> f32[M, N] "
                              f"{{ return {layout} }}", f"f32-{layout.replace(' ', '')}")


def _pipelined(src, label):
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import candidates
    from tiledsl.schedule.problem import problem
    k = tiledsl.compile(src)
    launcher = launcher_for(k)
    p = problem(launcher.groups[0], launcher.layouts[0], TAIL_SHAPE, frozenset(), 132, "sm_90a")
    for s in candidates(p, k.hints):
        if s.vec > 1:
            yield pytest.param(src, s, id=f"{label}-{s.tag}")


# f32 operands read as TF32 by wgmma: opted in by the schedule block
TF32 = ("kernel lin(x: f32[M, K], w: f32[N, K], b: f32[N]) -> f32[M, N] { return relu(x @ w.T + b) }\n"
        "schedule lin { tf32(true) }")


# K leaves a partial 64-wide tile; M and N leave partial block tiles.
TAIL_SHAPE = dict(M=200, K=136, N=264)


def _pinned(src, schedule):
    """The kernel of `src` with its GEMM pinned to `schedule` (a wgmma schedule
    skips the test on GPUs other than Hopper), and its tolerance."""
    import cupy
    from tiledsl.runtime import launcher_for
    from tiledsl.runtime.launcher import set_overrides
    if schedule.wgmma and cupy.cuda.Device().compute_capability != "90":
        pytest.skip("wgmma needs an sm_90 GPU")
    k = tiledsl.compile(src)
    k._launcher = launcher_for(k)
    set_overrides(k._launcher, {0: schedule})
    return k, TOLERANCE["tf32"] if k.hints.tf32 else None


@pytest.mark.parametrize("src,schedule", list(_tensor_core_candidates()))
def test_every_pipelined_tensor_core_schedule(src, schedule):
    k, tolerance = _pinned(src, schedule)
    check(k, random_arguments(k.graph, TAIL_SHAPE), TAIL_SHAPE, "out", tolerance=tolerance)


# TF32 keeps 10 mantissa bits: a single output element of a 4-term dot product can
# cancel to a relative error past TF32's 1e-3 norm tolerance, so the size-1 case has
# one row and one 4-long K but enough columns for the norm to mean something. wgmma
# truncates f32 to TF32 where cp.async feeds it, for a norm error of about 0.8e-3:
# over 256 columns that crossed 1e-3 on one draw (H100, 2026-11-22); 4096 columns hold
# it near its mean. (TMA's TFLOAT32 maps round to nearest: 2.9e-4, as cuBLAS.)
@pytest.mark.parametrize("extents", [dict(M=1, K=4, N=4096), dict(M=1000, K=1000, N=1000),
                                     dict(M=2048 + 3, K=516, N=2048 - 5)],
                         ids=lambda e: "x".join(map(str, e.values())))
def test_tf32_opt_in(extents):
    from tiledsl.codegen import sources_for
    k = tiledsl.compile(TF32)
    [ks] = sources_for(k, extents)
    assert ks.schedule.wgmma and ks.schedule.vec == 4    # TF32 tensor cores, not the exact SIMT path
    errors = check(k, random_arguments(k.graph, extents), extents, "out", tolerance=TOLERANCE["tf32"])
    if extents["K"] >= 512:    # TF32 really rounds: an exact f32 GEMM would be far closer
        assert errors[0] > 1e-6


# f32 operands laid out along M or N or computed, with TF32 opted in: each is first written laid out
# along K (wgmma reads TF32 K-major plain inputs only), then the product runs on the tensor cores.
TF32_LAYOUTS = {
    "b-along-n": "kernel mm(x: f32[M, K], w: f32[K, N], b: f32[N]) -> f32[M, N] { return relu(x @ w + b) }",
    "a-along-m": "kernel mm(xt: f32[K, M], w: f32[N, K]) -> f32[M, N] { return xt.T @ w.T }",
    "both": "kernel mm(xt: f32[K, M], w: f32[K, N]) -> f32[M, N] { return xt.T @ w }",
    "batched": "kernel mm(x: f32[B, M, K], w: f32[K, N]) -> f32[B, M, N] { return x @ w }",
    # computed from parameters only: written laid out along K by a kernel of its own
    "computed": "kernel mm(x: f32[M, K], w: f16[K, N]) -> f32[M, N] { return exp(x * 0.5) @ w }",
}


@pytest.mark.parametrize("name", list(TF32_LAYOUTS))
@pytest.mark.parametrize("extents", [dict(M=1, K=4, N=4096, B=1), dict(M=1000, K=1000, N=1000, B=2),
                                     dict(M=2048 + 3, K=516, N=2048 - 4, B=1)],
                         ids=lambda e: "x".join(map(str, e.values())))
def test_tf32_opt_in_with_operands_laid_out_along_m_or_n(name, extents):
    import cupy
    from tiledsl.codegen import sources_for
    k = tiledsl.compile(TF32_LAYOUTS[name] + "\nschedule mm { tf32(true) }")
    *copies, ks = sources_for(k, extents)
    assert copies and all(c.schedule.kind == "pointwise" for c in copies)
    hopper = cupy.cuda.Device().compute_capability == "90"
    assert not hopper or extents["N"] % 4 or (ks.schedule.wgmma and ks.schedule.vec == 4), ks.schedule.tag
    check(k, random_arguments(k.graph, extents), extents, "out", tolerance=TOLERANCE["tf32"])


# Split-K: few output tiles over a long K. K = 5003 leaves every chunk but the last a
# whole number of K tiles, and the last one short; K = 4100 lets f32 move in 16-byte
# vectors (its chunks end mid-tile too). Both leave partial M and N tiles.
SKINNY = dict(M=200, K=5003, N=300)
SKINNY_VECTORS = dict(M=200, K=4100, N=300)
SKINNY_SRC = "kernel mm(a: f32[M, K], b: f32[K, N], bias: f32[N]) -> f32[M, N] { return relu(a @ b + bias) }"


def _split_candidates():
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import candidates
    from tiledsl.schedule.problem import problem
    k = tiledsl.compile(SKINNY_SRC)
    lau = launcher_for(k)
    for extents in (SKINNY, SKINNY_VECTORS):
        for s in candidates(problem(lau.groups[0], lau.layouts[0], extents, frozenset(), 132)):
            if s.splits:
                yield pytest.param(s, extents, id=f"{s.tag}-sp{s.splits}-K{extents['K']}")


def test_split_k_is_the_default_for_few_tiles_over_a_long_k():
    from tiledsl.codegen import sources_for
    k = tiledsl.compile(SKINNY_SRC)
    first, final = sources_for(k, SKINNY)
    assert first.schedule.splits >= 2 and final.name.endswith("_s2")
    _run(SKINNY_SRC, SKINNY)


@pytest.mark.parametrize("schedule,extents", list(_split_candidates()))
def test_every_split_k_schedule(schedule, extents):
    from tiledsl.runtime import launcher_for
    from tiledsl.runtime.launcher import set_overrides
    k = tiledsl.compile(SKINNY_SRC)
    k._launcher = launcher_for(k)
    set_overrides(k._launcher, {0: schedule})
    for _ in range(2):      # the checked path, then the warm one
        check(k, random_arguments(k.graph, extents), extents, "out")
    check(k, random_arguments(k.graph, extents), extents, "alloc")


@pytest.mark.parametrize("extents", [dict(B=3, M=70, K=1000, N=50), dict(B=1, M=1, K=1, N=1),
                                     dict(B=2, M=5, K=3, N=7)],
                         ids=lambda e: "x".join(map(str, e.values())))
def test_split_k_pinned_by_a_schedule_block_batched_f16_with_a_scalar(extents):
    # more chunks than K tiles leave chunks empty: they contribute zeros
    src = ("kernel bmm(a: f16[B, M, K], b: f16[B, K, N], s: f32) -> f16[B, M, N] { return (a @ b) * s }\n"
           "schedule bmm { split_k(3) }")
    from tiledsl.codegen import sources_for
    k = tiledsl.compile(src)
    assert sources_for(k, extents)[0].schedule.splits == 3
    _run(src, extents)


# Split-K on tensor cores: K = 5000 leaves the last K tile short and the chunks
# uneven; M and N leave partial block tiles.
TC_SKINNY = dict(M=200, K=5000, N=264)


def _tensor_core_split_candidates():
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import candidates
    from tiledsl.schedule.problem import problem
    for label, src in (("f16", "kernel mm(a: f16[M, K], b: f16[K, N], bias: f32[N]) -> f16[M, N] "
                               "{ return relu(a @ b + bias) }"),
                       ("f16-bT", "kernel mm(a: f16[M, K], bt: f16[N, K]) -> f32[M, N] { return a @ bt.T }"),
                       ("bf16", "kernel mm(a: bf16[M, K], b: bf16[K, N]) -> bf16[M, N] { return a @ b }"),
                       ("tf32", TF32)):
        k = tiledsl.compile(src)
        launcher = launcher_for(k)
        p = problem(launcher.groups[0], launcher.layouts[0], TC_SKINNY, frozenset(), 132, "sm_90a")
        for s in candidates(p, k.hints):
            if s.mma and s.splits:
                yield pytest.param(src, s, id=f"{label}-{s.tag}-sp{s.splits}")


@pytest.mark.parametrize("src,schedule", list(_tensor_core_split_candidates()))
def test_every_tensor_core_split_k_schedule(src, schedule):
    k, tolerance = _pinned(src, schedule)
    for _ in range(2):      # the checked path, then the warm one
        check(k, random_arguments(k.graph, TC_SKINNY), TC_SKINNY, "out", tolerance=tolerance)
    check(k, random_arguments(k.graph, TC_SKINNY), TC_SKINNY, "alloc", tolerance=tolerance)


def test_tensor_core_split_k_is_the_default_for_few_tiles_over_a_long_k():
    from tiledsl.codegen import sources_for
    src = "kernel mm(a: f16[M, K], b: f16[K, N], bias: f32[N]) -> f16[M, N] { return relu(a @ b + bias) }"
    extents = dict(M=256, K=65536, N=256)
    first, final = sources_for(tiledsl.compile(src), extents)
    assert first.schedule.mma and first.schedule.splits >= 2 and final.name.endswith("_s2")
    _run(src, extents)


@pytest.mark.parametrize("extents", [dict(M=130, K=136, N=72), dict(M=64, K=64, N=64), dict(M=1, K=8, N=8)],
                         ids=lambda e: "x".join(map(str, e.values())))
def test_tensor_core_split_k_with_empty_chunks(extents):
    # 8 chunks of at most 3 K tiles: most chunks are empty and contribute zeros
    src = ("kernel mm(a: f16[M, K], b: f16[K, N], s: f32) -> f16[M, N] { return (a @ b) * s }\n"
           "schedule mm { split_k(8) }")
    from tiledsl.codegen import sources_for
    [first, _] = sources_for(tiledsl.compile(src), extents)
    assert first.schedule.mma and first.schedule.splits == 8
    _run(src, extents)


@pytest.mark.parametrize("extents", [dict(M=1000, K=12296, N=760), dict(M=384, K=16392, N=1480),
                                     dict(M=384, K=6200, N=760)], ids=lambda e: "x".join(map(str, e.values())))
def test_the_default_splits_k_unevenly_where_powers_of_two_fill_no_more_sms(extents):
    """5, 7 and 3 chunks of a K that is no multiple of the tile (the last chunks shorter); the
    3 chunks with a producer warpgroup."""
    from tiledsl.codegen import sources_for
    src = "kernel mm(a: f16[M, K], b: f16[K, N], bias: f32[N]) -> f16[M, N] { return relu(a @ b + bias) }"
    k = tiledsl.compile(src)
    first, final = sources_for(k, extents)
    assert first.schedule.splits == {12296: 5, 16392: 7, 6200: 3}[extents["K"]] and final.name.endswith("_s2")
    for out_kind in ("out", "out", "alloc"):     # the checked call, then the warm one
        check(k, random_arguments(k.graph, extents), extents, out_kind)


OVERLAPPING = {
    "gemm": ("kernel mm(a: f16[M, K], b: f16[K, N], bias: f32[N]) -> f16[M, N] { return relu(a @ b + bias) }",
             [dict(M=256, K=65536, N=256), dict(M=200, K=40000, N=264)]),
    "f32 gemm": ("kernel mm(a: f32[M, K], b: f32[K, N]) -> f32[M, N] { return a @ b }", [dict(M=200, K=30000, N=136)]),
    "sum": ("kernel total(x: f32[N]) -> f32 { return sum(x) }", [dict(N=(1 << 24) + 3)]),
    "column means": ("kernel cm(x: f16[R, C]) -> f32[C] { return mean(x, axis=R) }", [dict(R=65537, C=72)]),
    # programs of several fusion groups: every kernel after the first overlaps the one before
    "attention": ("kernel attention(q: f16[T, D], k: f16[S, D], v: f16[S, D], scale: f32) -> f16[T, D] {\n"
                  "    s = q @ k.T * scale\n    p = exp(s - max(s, axis=S))\n"
                  "    return f16(p / sum(p, axis=S)) @ v\n}", [dict(T=300, S=520, D=64), dict(T=1, S=8, D=8)]),
    "mlp": ("kernel mlp(x: f16[M, D], w1: f16[D, H], b1: f32[H], w2: f16[H, E], b2: f32[E]) -> f16[M, E] {\n"
            "    h = f16(relu(x @ w1 + b1))\n    return h @ w2 + b2\n}", [dict(M=200, D=136, H=264, E=72)]),
    "split column means, then subtract": ("kernel f(x: f32[M, N]) -> f32[M, N] { return x - mean(x, axis=M) }",
                                          [dict(M=65537, N=72)]),
    "rmsnorm, then product": ("kernel f(x: f16[M, N], w: f16[N, E]) -> f16[M, E] {\n"
                              "    h = f16(x * rsqrt(mean(x * x, axis=N) + 1e-6))\n    return h @ w\n}",
                              [dict(M=300, N=520, E=72)]),
}


@pytest.mark.parametrize("program", list(OVERLAPPING))
@pytest.mark.parametrize("overlap", ["1", "0"], ids=["overlapping", "usual"])
@pytest.mark.parametrize("stream", ["default", "own"])
def test_a_programs_later_kernels_launch_to_overlap_the_one_before(program, overlap, stream, monkeypatch):
    """On Hopper the warm call launches every kernel of a program after the first (a split's
    second kernel, the next fusion group's) to overlap the one before it (programmatic
    dependent launch); each waits for the one before in the kernel. Correct launched either
    way, on the default stream and on one of its own."""
    import cupy
    if cupy.cuda.Device().compute_capability != "90":
        pytest.skip("the overlapping launch is tested on sm_90")
    monkeypatch.setenv("TILEDSL_DEPENDENT_LAUNCH", overlap)
    src, shapes = OVERLAPPING[program]
    k = tiledsl.compile(src)
    with (cupy.cuda.Stream(non_blocking=True) if stream == "own" else cupy.cuda.Stream.null):
        for extents in shapes:
            for out_kind in ("out", "out", "alloc", "alloc"):
                check(k, random_arguments(k.graph, extents), extents, out_kind)
    calls = list(k._launcher._fast.values())
    assert calls
    for call in calls:
        launches = call.source.count("launch(FP") + call.source.count("launch_ex(d")
        # (a sum of one row is one kernel, finished by its last block: Schedule.last_block)
        assert launches == 1 if program == "sum" else launches > 1, call.source
    _launched_as_planned(k, overlap)


def _launched_as_planned(kernel, overlap: str) -> None:
    """Each warm call launches each kernel to overlap the one before, or the usual way, as
    its planned program says; each program says so where dependent.overlaps_the_kernel_before
    does from the driver's residency (a memory-bound kernel where its blocks spread; a GEMM's,
    a combining kernel), nowhere with TILEDSL_DEPENDENT_LAUNCH=0."""
    said = [program.dependent for program, _ in planned_launches(kernel, overlap)]
    for call in kernel._launcher._fast.values():
        launches = call.source.count("launch(FP") + call.source.count("launch_ex(d")
        assert [f"launch_ex(d{n}.address, FP{n}," in call.source for n in range(launches)] in said, call.source


CHAIN = {   # calls in a row, each reading what the one before wrote
    "scale": "kernel scale(x: f32[N], s: f32) -> f32[N] { return x * s + 1.0 }",
    "rms": "kernel rms(x: f32[N]) -> f32[N] { return x * rsqrt(mean(x * x) + 1e-6) }",
    "total": "kernel total(x: f32[N]) -> f32 { return sum(x) }",                        # a split, one kernel
    "bump": "kernel bump(x: f32[N], t: f32[O]) -> f32[N] { return x + sum(t) * 1e-7 }",  # two kernels
}


def _chain(k: dict, host, pause) -> tuple:
    """CHAIN's calls in a row, 12 times over, each reading what the one before wrote and
    overwriting what an earlier one read, with CuPy's own kernels between; `pause()` after
    every call. The result, and the same steps replayed in float64 by NumPy."""
    import cupy
    import numpy as np
    n = host.size
    x, y, t = cupy.asarray(host), cupy.full(n, cupy.nan, cupy.float32), cupy.full((), cupy.nan, cupy.float32)
    want = host.astype(np.float64)
    for step in range(12):
        k["scale"](x, 0.5, out=y)             # reads x
        pause()
        k["rms"](y, out=x)                    # reads y, overwrites x (read by the call before)
        pause()
        k["total"](x, out=t)
        pause()
        k["bump"](x, t.reshape(1), out=y)     # reads x and t
        pause()
        x = y * 2.0 if step % 3 == 0 else y.copy()     # CuPy's kernels between
        y = cupy.full(n, cupy.nan, cupy.float32) if step % 4 == 0 else y
        w = want * 0.5 + 1.0
        w = w / np.sqrt(np.mean(w * w) + 1e-6)
        w = w + w.sum() * 1e-7
        want = w * 2.0 if step % 3 == 0 else w
    return cupy.asnumpy(x), want


@pytest.mark.parametrize("overlap", ["1", "0"], ids=["overlapping", "usual"])
@pytest.mark.parametrize("stream", ["default", "own"])
def test_calls_in_a_row_keep_the_streams_order(overlap, stream, monkeypatch):
    """Each call's first kernel is launched to overlap the last kernel before it in the
    stream (tiledsl's or CuPy's) and waits for its end and writes. Calls in a row give
    bit for bit what the same calls give with the stream drained after each (nothing left
    to overlap; the kernels are deterministic), and NumPy's float64 replay to 1e-4 (twelve
    rounds of single-block f32 sums over 4M elements compound past f32's 1e-5)."""
    import cupy
    import numpy as np
    if cupy.cuda.Device().compute_capability != "90":
        pytest.skip("the overlapping launch is tested on sm_90")
    monkeypatch.setenv("TILEDSL_DEPENDENT_LAUNCH", overlap)
    k = {name: tiledsl.compile(src) for name, src in CHAIN.items()}
    host = np.random.default_rng().standard_normal((1 << 22) + 3).astype(np.float32)
    with (cupy.cuda.Stream(non_blocking=True) if stream == "own" else cupy.cuda.Stream.null) as s:
        drained, want = _chain(k, host, s.synchronize)
        in_a_row, _ = _chain(k, host, lambda: None)
    assert not np.isnan(in_a_row).any()
    assert np.array_equal(in_a_row, drained)
    assert np.linalg.norm(in_a_row - want) / np.linalg.norm(want) <= 1e-4
    assert all(kernel._launcher._fast for kernel in k.values())
    for kernel in k.values():
        _launched_as_planned(kernel, overlap)


@pytest.mark.parametrize("cluster", [1, 2], ids=["alone", "pairs"])
@pytest.mark.parametrize("tile", [(128, 128), (64, 128)], ids=["128x128", "64x128"])
@pytest.mark.parametrize("extents", [dict(M=330, K=136, N=72), dict(M=64, K=64, N=200), dict(M=1, K=8, N=8)],
                         ids=lambda e: "x".join(map(str, e.values())))
def test_a_split_k_with_a_producer_warpgroup_with_empty_chunks(extents, tile, cluster):
    """A block a tile and chunk with a producer warpgroup, alone and in pairs sharing B, in 8
    chunks of at most 3 K tiles (most empty: zeros), over an odd count of tile rows (the last
    pair's second tile past the end, copying its half of B all the same)."""
    from dataclasses import replace
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import candidates
    from tiledsl.schedule.problem import problem
    src = "kernel mm(a: f16[M, K], b: f16[K, N], s: f32) -> f16[M, N] { return (a @ b) * s }"
    k = tiledsl.compile(src)
    launcher = launcher_for(k)
    p = problem(launcher.groups[0], launcher.layouts[0], dict(M=256, K=65536, N=256), frozenset(), 132, "sm_90a")
    s = next(c for c in candidates(p, k.hints)
             if c.specialized and c.splits and c.cluster == cluster and c.tile[:2] == tile)
    k, _ = _pinned(src, replace(s, splits=8))
    for out_kind in ("out", "out", "alloc"):
        check(k, random_arguments(k.graph, extents), extents, out_kind)


@pytest.mark.parametrize("extents", [dict(B=3, M=100, K=1000, N=72), dict(B=2, M=64, K=4096, N=136)],
                         ids=lambda e: "x".join(map(str, e.values())))
def test_tensor_core_split_k_of_a_batch(extents):
    # each product's chunks land in their own slice of the partials (aligned operands: wgmma on Hopper)
    src = ("kernel bmm(a: f16[B, M, K], b: f16[B, K, N], bias: f32[N]) -> f16[B, M, N] "
           "{ return relu(a @ b + bias) }\nschedule bmm { split_k(4) }")
    from tiledsl.codegen import sources_for
    first, final = sources_for(tiledsl.compile(src), extents)
    assert first.schedule.mma and first.schedule.splits == 4 and final.name.endswith("_s2")
    _run(src, extents)
    _run(src, extents, "alloc")


# The warpgroup GEMM's tiles copied by the tensor memory accelerator (TMA): the default
# on Hopper wherever both operands are 2-D 16-bit inputs with rows of whole 16 bytes.
TMA_SOURCES = {
    "f16-ab-relu": "kernel mm(a: f16[M, K], b: f16[K, N], bias: f32[N]) -> f16[M, N] { return relu(a @ b + bias) }",
    "bf16-abT": "kernel mm(a: bf16[M, K], bt: bf16[N, K]) -> f32[M, N] { return a @ bt.T }",
    "f16-scaled": "kernel mm(a: f16[M, K], b: f16[K, N], s: f32) -> f16[M, N] { return (a @ b) * s }",
}


def _hopper_only():
    import cupy
    if cupy.cuda.Device().compute_capability != "90":
        pytest.skip("TMA and wgmma need an sm_90 GPU")


@pytest.mark.parametrize("label", list(TMA_SOURCES))
@pytest.mark.parametrize("extents", [dict(M=1000, K=1000, N=1000), dict(M=2049, K=520, N=1032),
                                     dict(M=8, K=8, N=8), dict(M=300, K=4104, N=136)],
                         ids=lambda e: "x".join(map(str, e.values())))
def test_tma_copies_are_right_past_every_edge(label, extents):
    """The default's tiles copied by TMA (pinned where the default's 64x64 tiles take
    cp.async): boxes past the M, N and K tails, or larger than the whole product,
    read zeros; the checked path (first call), the warm one, an allocated result."""
    _hopper_only()
    from dataclasses import replace
    from tiledsl.codegen import sources_for
    src = TMA_SOURCES[label]
    s = sources_for(tiledsl.compile(src), extents)[0].schedule
    assert s.wgmma and (s.tma or s.tile[:2] == (64, 64)), s
    k, _ = _pinned(src, replace(s, tma=True))
    for out_kind in ("out", "out", "alloc"):
        check(k, random_arguments(k.graph, extents), extents, out_kind)


def _persistent_candidates():
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import candidates
    from tiledsl.schedule.problem import problem
    tf32 = "kernel lin(x: f32[M, K], w: f32[N, K]) -> f32[M, N] { return x @ w.T }\nschedule lin { tf32(true) }"
    for label, src in [*TMA_SOURCES.items(), ("tf32-abT", tf32)]:
        k = tiledsl.compile(src)
        launcher = launcher_for(k)
        p = problem(launcher.groups[0], launcher.layouts[0], dict(M=2100, K=200, N=2056), frozenset(), 132, "sm_90a")
        for s in candidates(p, k.hints):
            if s.persistent or s.specialized:
                yield pytest.param(src, s, id=f"{label}-{s.tag}")


@pytest.mark.parametrize("src,schedule", list(_persistent_candidates()))
@pytest.mark.parametrize("extents", [dict(M=2100, K=200, N=2056), dict(M=2100, K=8, N=2056),
                                     dict(M=2100, K=64, N=2056), dict(M=8, K=8, N=8),
                                     dict(M=300, K=1000, N=520)],
                         ids=lambda e: "x".join(map(str, e.values())))
def test_every_persistent_schedule(src, schedule, extents):
    """More output tiles than blocks (153 of 128x256 for 132 blocks, 561 of 64x128),
    ragged on every side; K of one partial tile, of one whole tile (the copies S - 2
    ahead cross into later output tiles from the start), of four, and of 16 (a
    specialized block's stages refilled through many phases of their barriers); one
    tile in all. Persistent loops, and the specialized blocks (a producer warpgroup),
    persistent or a block a tile."""
    k, tolerance = _pinned(src, schedule)
    for out_kind in ("out", "alloc"):
        check(k, random_arguments(k.graph, extents), extents, out_kind, tolerance=tolerance)


def _specialized_candidates():
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import candidates
    from tiledsl.schedule.problem import problem
    sources = {"f16-abT": "kernel mm(a: f16[M, K], bt: f16[N, K]) -> f16[M, N] { return a @ bt.T }",
               "bf16-abT": TMA_SOURCES["bf16-abT"]}
    for label, src in sources.items():
        k = tiledsl.compile(src)
        launcher = launcher_for(k)
        p = problem(launcher.groups[0], launcher.layouts[0], dict(M=2100, K=200, N=2056), frozenset(), 132, "sm_90a")
        for s in candidates(p, k.hints):
            if s.specialized:
                yield pytest.param(src, s, id=f"{label}-{s.tag}")


@pytest.mark.parametrize("src,schedule", list(_specialized_candidates()))
def test_specialized_results_leave_by_tma_or_from_the_threads(src, schedule):
    """A specialized block's results leave by TMA where its rows are whole 16 bytes and
    the result starts on 16 bytes, else from its threads: N = 2052 and 2054 (rows 8
    bytes over for 2- and for 4-byte results); one row (a box taller than the result);
    130 rows (the second warpgroup's box mostly past the end); and out= one element
    into a buffer (2 or 4 bytes off 16), every element poisoned and written."""
    import cupy
    import numpy as np
    from tiledsl.inputs import relative_error
    k, tolerance = _pinned(src, schedule)
    for extents in (dict(M=1, K=64, N=2056), dict(M=130, K=200, N=2052), dict(M=300, K=520, N=2054),
                    dict(M=130, K=200, N=264)):
        check(k, random_arguments(k.graph, extents), extents, "out", tolerance=tolerance)
    extents = dict(M=300, K=200, N=520)
    host = random_arguments(k.graph, extents)
    want = k.reference(*host, compute="f64")
    result = k.graph.results[0]
    flat = cupy.full(300 * 520 + 1, cupy.nan, dtype=result.dtype.numpy)
    out = flat[1:].reshape(300, 520)
    assert out.data.ptr % 16
    k(*[cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in host], out=out)
    got = cupy.asnumpy(out).astype(np.float64)
    assert not np.isnan(got).any() and np.isnan(float(flat[0])), "an element unwritten, or one before the result"
    assert relative_error(got, want) <= (tolerance or TOLERANCE[result.dtype.name])


def test_tma_maps_follow_each_calls_arrays():
    """A map holds its array's address: every call with new arrays (the pool hands
    freed addresses out again, with other contents) reads those arrays."""
    _hopper_only()
    k = tiledsl.compile(TMA_SOURCES["f16-ab-relu"])
    extents = dict(M=300, K=264, N=200)
    for _ in range(6):
        check(k, random_arguments(k.graph, extents), extents, "out")
    assert any(any(program.maps) for program in k._launcher._plans.values()), "no launch took tensor maps"


def test_tma_not_taken_where_rows_are_not_whole_16_bytes_or_partly_batched():
    _hopper_only()
    from tiledsl.codegen import sources_for
    k = tiledsl.compile(TMA_SOURCES["f16-ab-relu"])
    for extents in (dict(M=100, K=100, N=100), dict(M=64, K=64, N=100)):      # 200-byte rows: no vectors
        assert not sources_for(k, extents)[0].schedule.tma
        check(k, random_arguments(k.graph, extents), extents, "out")
    # b has one of the product's two batch dims: no single map coordinate for it, cp.async
    part = tiledsl.compile("kernel bmm(a: f16[B, H, M, K], b: f16[H, K, N]) -> f16[B, H, M, N] { return a @ b }")
    extents = dict(B=2, H=3, M=200, K=136, N=72)
    assert not sources_for(part, extents)[0].schedule.tma
    check(part, random_arguments(part.graph, extents), extents, "out")


# batched products whose operands TMA copies through 3-D maps (or a 2-D one shared by the batch)
BATCHED_TMA = {
    "f16-both": "kernel bmm(a: f16[B, M, K], b: f16[B, K, N]) -> f16[B, M, N] { return a @ b }",
    "f16-shared-w-relu": ("kernel lin(x: f16[B, M, K], w: f16[K, N], bias: f32[N]) -> f16[B, M, N] "
                          "{ return relu(x @ w + bias) }"),
    "bf16-bt": "kernel bmm(a: bf16[B, M, K], bt: bf16[B, N, K]) -> f32[B, M, N] { return a @ bt.T }",
    "f16-two-batch-dims": "kernel bmm(a: f16[B, H, M, K], b: f16[B, H, K, N]) -> f16[B, H, M, N] { return a @ b }",
    "tf32": ("kernel bmm(a: f32[B, M, K], bt: f32[B, N, K]) -> f32[B, M, N] { return a @ bt.T }\n"
             "schedule bmm { tf32(true) }"),
}


@pytest.mark.parametrize("label", list(BATCHED_TMA))
@pytest.mark.parametrize("extents", [dict(B=3, M=200, K=264, N=136), dict(B=1, M=8, K=8, N=8),
                                     dict(B=5, M=1000, K=520, N=1032)],
                         ids=lambda e: "x".join(map(str, e.values())))
def test_tma_copies_batched_operands(label, extents):
    """Each product's boxes come from its own slice of a 3-D map (product bz), or
    from the one 2-D map of an operand the batch shares; ragged on every side."""
    _hopper_only()
    from dataclasses import replace
    from tiledsl.codegen import sources_for
    src = BATCHED_TMA[label]
    if label == "f16-two-batch-dims":
        extents = dict(extents, H=2)
    k0 = tiledsl.compile(src)
    s = sources_for(k0, extents)[0].schedule
    one_k_tile = extents["K"] <= s.tile[2]      # (the default keeps cp.async there; pinned to TMA here)
    assert s.wgmma and (s.tma or s.tile[:2] == (64, 64) or one_k_tile), s
    k, tolerance = _pinned(src, replace(s, tma=True))
    for out_kind in ("out", "alloc"):
        check(k, random_arguments(k.graph, extents), extents, out_kind, tolerance=tolerance)

def test_a_persistent_grid_of_pairs_fits_on_the_gpu_at_once():
    """The paired producer loop (3000^3's default) launches no more pairs than the driver
    says fit at once (cuOccupancyMaxActiveClusters), whole pairs, and its result is right."""
    _hopper_only()
    import cupy
    from tiledsl.runtime.clusters import max_active_clusters
    k = tiledsl.compile("kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }")
    extents = dict(M=3000, N=3000, K=3000)
    check(k, random_arguments(k.graph, extents), extents, "out")
    [program] = list(k._launcher._plans.values())
    schedule = program.choices[0][0]
    assert schedule.cluster == 2 and schedule.persistent, schedule.tag
    [(fn, grid, block, _, shared)] = program.steps
    fits = max_active_clusters(fn.ptr, grid[0], block[0], shared)
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    assert fits is not None and 2 * fits <= sms, fits
    assert grid[0] == min(sms // 2, fits) * 2, (grid, fits, sms)
