"""Fusion groups (schedule/partition.py): which values reach memory, and who
computes the rest. Checked on the IR alone; the GPU tests run the same
programs against the reference."""
from __future__ import annotations

import pytest

import tiledsl
from tiledsl.schedule.choose import default
from tiledsl.schedule.problem import problem
from tiledsl.schedule.layout import operand_input, plan_layout
from tiledsl.schedule.partition import partition

from conftest import EXAMPLES
from test_gpu_memory import BATCHNORM


def _groups(src):
    k = tiledsl.compile(src)
    return k, partition(k.graph)


def _writes(g):
    return [(v.op, str(v.dtype), v.dims) for v in g.outputs]


def test_mlp_stores_the_f16_hidden_activation_from_the_first_epilogue():
    k, (g0, g1) = _groups(EXAMPLES / "mlp.tdsl")
    assert (g0.kind, g1.kind) == ("matmul", "matmul")
    # Before: group 0 wrote x @ w1 in f32 and group 1 recomputed bias, relu and the cast per tile.
    assert _writes(g0) == [("cast", "f16", ("M", "H"))]
    assert [v.op for v in g0.values] == ["matmul", "add", "relu", "cast"]
    assert [v.op for v in g1.values] == ["matmul", "add", "cast"]      # no prologue left
    assert g0.outputs[0] in g1.inputs
    mm = next(v for v in g1.values if v.op == "matmul")
    assert operand_input(plan_layout(g1, k.graph), mm.operands[0]) is not None   # A is read, not computed


@pytest.mark.parametrize("src", [
    # the hidden activation read transposed by the second product
    "kernel f(x: f16[M, D], w1: f16[D, H], w2: f16[E, M]) -> f16[E, H] {\n"
    "  h = f16(gelu(x @ w1))\n  return w2 @ h }",
    # nn.Linear weights (w.T) on both layers
    "kernel f(x: f16[M, D], w1: f16[H, D], w2: f16[E, H]) -> f16[M, E] {\n"
    "  h = f16(silu(x @ w1.T))\n  return h @ w2.T }",
])
def test_an_elementwise_operand_of_a_product_is_stored_in_place_of_the_product(src):
    _, (g0, g1) = _groups(src)
    assert _writes(g0) == [("cast", "f16", g0.outputs[0].dims)]
    assert g0.outputs[0] in g1.inputs and not any(v.op in ("gelu", "silu") for v in g1.values)


def test_the_product_is_stored_once_where_another_group_needs_it_too():
    # sum(y) needs y itself: storing h as well would write both; h is recomputed instead
    _, groups = _groups("kernel f(x: f16[M, D], w1: f16[D, H], w2: f16[H, E]) -> (f16[M, E], f32[M]) {\n"
                        "  y = x @ w1\n  h = f16(relu(y))\n  return h @ w2, sum(y, axis=H) }")
    g0 = groups[0]
    assert _writes(g0) == [("matmul", "f32", ("M", "H"))]
    assert [v.op for v in groups[1].values] == ["relu", "cast", "matmul", "cast"]


def test_a_returned_operand_is_written_once_and_read_back():
    _, (g0, g1) = _groups("kernel f(x: f16[M, D], w1: f16[D, H], w2: f16[H, E]) -> (f16[M, E], f16[M, H]) {\n"
                          "  h = f16(relu(x @ w1))\n  return h @ w2, h }")
    assert _writes(g0) == [("cast", "f16", ("M", "H"))]
    assert g0.outputs[0] in g1.inputs


def test_attention_stores_its_f16_probabilities_from_the_softmax_kernel():
    # f16(p / sum(p)) needs the scores (read by the softmax group anyway) and its row statistics:
    # written in 2 bytes and read in 2 where the prologue would read the f32 scores again
    mod = tiledsl.compile(EXAMPLES / "attention.tdsl")
    for name in ("attention", "causal_attention"):
        k = mod[name]
        g0, g1, g2 = partition(k.graph)
        assert [g.kind for g in (g0, g1, g2)] == ["matmul", "reduce", "matmul"]
        assert _writes(g1) == [("cast", "f16", ("T", "S"))] and g1.outputs[0] in g2.inputs
        assert [v.op for v in g2.values] == ["matmul", "cast"]
        s = default(problem(g2, plan_layout(g2, k.graph), dict(T=2048, S=2048, D=128), frozenset(), 132,
                            "sm_90a"), k.hints)
        assert s.wgmma and s.tma, s.tag


def test_an_operand_that_needs_two_products_or_f32_statistics_stays_a_prologue():
    # the probabilities in f32: storing them would add a write and a read of T x S f32 values
    text = (EXAMPLES / "attention.tdsl").read_text().replace("f16(p / sum(p, axis=S))", "(p / sum(p, axis=S))")
    groups = partition(tiledsl.compile(text)["attention"].graph)
    assert [g.kind for g in groups] == ["matmul", "reduce", "matmul"]
    assert [v.op for v in groups[0].outputs] == ["matmul"]
    assert "exp" in [v.op for v in groups[2].values]
    _, (g0, g1, g2) = _groups("kernel f(a: f16[M, K], b: f16[K, N], c: f16[M, K], d: f16[K, N], "
                              "e: f16[N, P]) -> f32[M, P] {\n  return f16(a @ b + c @ d) @ e }")
    assert [g.kind for g in (g0, g1, g2)] == ["matmul"] * 3
    assert all(_writes(g)[0][0] == "matmul" for g in (g0, g1))


def test_the_mlp_runs_both_products_on_the_warpgroup_tensor_cores():
    k, groups = _groups(EXAMPLES / "mlp.tdsl")
    extents = dict(M=2048, D=1024, H=4096, E=1024)
    for g in groups:
        s = default(problem(g, plan_layout(g, k.graph), extents, frozenset(), 132, "sm_90a"), k.hints)
        assert s.wgmma and s.tma, s.tag


@pytest.mark.parametrize("src, operand", [
    ("kernel f(x: f32[M, K], w: f16[K, N]) -> f32[M, N] { return f16(x) @ w }", ("cast", "f16", ("M", "K"))),
    ("kernel f(x: f16[M, K], s: f16[K], w: f16[K, N]) -> f32[M, N] { return f16(x * s) @ w }",
     ("cast", "f16", ("M", "K"))),
    ("kernel f(x: bf16[M, K], w: f32[N, K]) -> f32[M, N] { return x @ bf16(w).T }", ("cast", "bf16", ("N", "K"))),
], ids=["cast", "scaled", "b-transposed"])
def test_a_16_bit_operand_from_parameters_is_written_by_a_pointwise_kernel_first(src, operand):
    # Before: the product computed it tile by tile in its prologue, whose tensor-core tiles load
    # element by element (4096^3: 4506 us against 242 for both kernels, H100 2026-11-23)
    k, (g0, g1) = _groups(src)
    assert (g0.kind, g1.kind) == ("pointwise", "matmul")
    assert _writes(g0) == [operand] and g0.outputs[0] in g1.inputs
    assert [v.op for v in g1.values if v.op != "permute"] == ["matmul"]      # no prologue left
    s = default(problem(g1, plan_layout(g1, k.graph), dict(M=4096, N=4096, K=4096), frozenset(), 132,
                        "sm_90a"), k.hints)
    assert s.wgmma and s.tma, s.tag


def test_an_operand_from_parameters_is_written_once_for_two_products_and_a_result():
    k, groups = _groups("kernel f(x: f32[M, K], w: f16[K, N], v: f16[K, P]) -> (f32[M, N], f32[M, P], f16[M, K]) {\n"
                        "  a = f16(x)\n  return a @ w, a @ v, a }")
    assert [g.kind for g in groups] == ["pointwise", "matmul", "matmul"]
    assert _writes(groups[0]) == [("cast", "f16", ("M", "K"))]
    assert all(groups[0].outputs[0] in g.inputs for g in groups[1:])


def test_an_f32_operand_from_parameters_stays_a_prologue():
    # f32 x f32 runs on the CUDA cores, which read their tiles element by element anyway
    _, groups = _groups("kernel f(x: f16[M, K], w: f32[K, N]) -> f32[M, N] { return (x * 2) @ exp(w) }")
    assert [g.kind for g in groups] == ["matmul"]


@pytest.mark.parametrize("src, groups", [
    ("kernel f(at: f16[K, M], w: f16[K, N]) -> f32[M, N] { return at.T @ w }", ["matmul"]),
    ("kernel f(x: f16[B, K, M], w: f16[K, N]) -> f32[B, M, N] { return x.T @ w }", ["matmul"]),
    ("kernel f(x: f32[K, M], w: f16[N, K]) -> f32[M, N] { return f16(x).T @ w.T }", ["pointwise", "matmul"]),
], ids=["param", "batched", "computed"])
def test_a_16_bit_a_laid_out_along_m_is_read_in_place_by_the_warpgroup_tiles(src, groups):
    # the tiles keep such an A [k][m] in shared memory and wgmma reads it transposed: no
    # transposed copy first (a computed A is stored as computed, [K, M], by a kernel of its own)
    k, gs = _groups(src)
    assert [g.kind for g in gs] == groups
    if len(gs) == 2:
        assert _writes(gs[0]) == [("cast", "f16", ("K", "M"))] and gs[0].outputs[0] in gs[1].inputs
    g = gs[-1]
    lay = plan_layout(g, k.graph)
    s = default(problem(g, lay, dict(B=2, M=4096, N=4096, K=4096), frozenset(), 132, "sm_90a"), k.hints)
    assert s.wgmma and s.tma, s.tag
    # sm_80: the cp.async pipeline of mma.sync tiles, A read by ldmatrix.trans
    s80 = default(problem(g, lay, dict(B=2, M=4096, N=4096, K=4096), frozenset(), 132, "sm_80"), k.hints)
    assert s80.mma and s80.stages > 1, s80.tag


def test_a_product_stores_its_result_as_computed_for_the_next_products_transposed_a():
    k, (g0, g1) = _groups("kernel f(x: f16[M, D], w1: f16[D, H], w2: f16[M, E]) -> f16[H, E] {\n"
                          "  h = f16(relu(x @ w1))\n  return h.T @ w2 }")
    assert (g0.kind, g1.kind) == ("matmul", "matmul")
    assert g0.outputs[0].op == "cast" and g0.outputs[0].dims == ("M", "H") and g0.outputs[0] in g1.inputs
    s = default(problem(g1, plan_layout(g1, k.graph), dict(M=4096, D=1024, H=4096, E=1024), frozenset(), 132,
                        "sm_90a"), k.hints)
    assert s.wgmma and s.tma, s.tag


def test_a_laid_out_along_k_or_f32_is_read_in_place():
    for src in ("kernel f(a: f16[M, K], wt: f16[N, K]) -> f32[N, M] { return wt @ a.T }",
                "kernel f(at: f32[K, M], w: f32[K, N]) -> f32[M, N] { return at.T @ w }"):
        _, groups = _groups(src)
        assert [g.kind for g in groups] == ["matmul"]


def test_tf32_reads_an_operand_laid_out_along_n_through_a_copy_laid_out_along_k():
    # wgmma reads TF32 operands K-major only: with tf32(true), w [K, N] is copied to [N, K] first
    src = "kernel mm(x: f32[M, K], w: f32[K, N]) -> f32[M, N] { return x @ w }"
    k, (g,) = _groups(src)
    assert g.kind == "matmul"
    k, (g0, g1) = _groups(src + "\nschedule mm { tf32(true) }")
    assert (g0.kind, g1.kind) == ("pointwise", "matmul")
    [copy] = g0.outputs
    assert copy.op == "permute" and copy.attr("stored") and copy.dims == ("N", "K") and copy in g1.inputs
    e = dict(M=4096, N=4096, K=4096)
    s = default(problem(g1, plan_layout(g1, k.graph), e, frozenset(), 132, "sm_90a"), k.hints)
    assert s.wgmma and s.vec == 4 and s.tma, s.tag
    # the copy changes nothing the program computes
    import numpy as np
    from tiledsl.inputs import random_arguments
    args = random_arguments(k.graph, dict(M=5, N=7, K=3), seed=1)
    plain = tiledsl.compile(src)
    assert np.array_equal(k.reference(*args, compute="f64"), plain.reference(*args, compute="f64"))


@pytest.mark.parametrize("src,split", [
    # the result laid out along the kept dim M, the row along N: a pointwise group transposes it
    ("kernel f(x: bf16[M, N]) -> f32[N, M] { return x.T * sum(x, axis=N) }", True),
    ("kernel f(x: f32[M, N]) -> f32[N, M] { return (x - max(x, axis=N)).T }", True),
    # reduced over M with N innermost: the columns are what threads walk, so [N, M] is across
    ("kernel f(x: f32[M, N]) -> f32[N, M] { return (x / sum(x, axis=M)).T }", True),
    # stored as the rows are walked: one kernel
    ("kernel f(x: f32[M, N]) -> f32[M, N] { return x / sum(x, axis=N) }", False),
    # a reduction across memory (over M, N innermost) writes only its statistic (walks_across)
    ("kernel f(x: f32[M, N]) -> f32[M, N] { return x / sum(x, axis=M) }", True),
    # per-row results are stored from the reduce group whatever their layout
    ("kernel f(x: f32[B, M, N]) -> f32[M, B] { return sum(x, axis=N).T }", False),
])
def test_a_result_over_whole_rows_stored_across_them_is_written_by_a_pointwise_group(src, split):
    k, groups = _groups(src)
    out = k.graph.outputs[0]
    writer = next(g for g in groups if out in g.outputs)
    assert writer.kind == ("pointwise" if split else "reduce")
    assert len(groups) == (2 if split else 1)
    if split:       # the reduce group stores only its statistic, which the pointwise group reads
        [reduce] = [g for g in groups if g.kind == "reduce"]
        assert [v.op for v in reduce.outputs] == ["reduce"] and reduce.outputs[0] in writer.inputs


@pytest.mark.parametrize("src,groups_wanted", [
    # softmax over M, N innermost: the max and sum(exp(x - max)), an online pair, in one pass
    # (partition.online_partner), then the elements (each column read twice, neighbouring
    # threads on neighbouring columns, where one kernel walked each column down)
    ("kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=M))\n return e / sum(e, axis=M)\n}",
     ["reduce", "pointwise"]),
    # logsumexp over a middle axis: the pair and its per-column result, one kernel
    ("kernel f(x: f32[B, T, C]) -> f32[B, C] {\n m = max(x, axis=T)\n return m + log(sum(exp(x - m), axis=T))\n}",
     ["reduce"]),
    # the pair beside another reduction of the max's level: no pair alone, a group a level
    ("kernel f(x: f32[M, N]) -> (f32[M, N], f32[N]) {\n e = exp(x - max(x, axis=M))\n"
     " return e / sum(e, axis=M), sum(x, axis=M)\n}", ["reduce", "reduce", "pointwise"]),
    # a sum of exp(y - max(x)): no pair, a level a group as before
    ("kernel f(x: f32[M, N], y: f32[M, N]) -> f32[N] { return sum(exp(y - max(x, axis=M)), axis=M) }",
     ["reduce", "reduce"]),
    ("kernel f(x: f32[M, N]) -> f32[M, N] { return x - mean(x, axis=M) }", ["reduce", "pointwise"]),
    ("kernel f(x: f16[B, T, C]) -> f32[B, C] {\n m = mean(x, axis=T)\n return mean((x - m) * (x - m), axis=T)\n}",
     ["reduce", "reduce"]),
    # per-column results of one level: one kernel, as before
    ("kernel f(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", ["reduce"]),
    # along the rows (N innermost, reduced): one kernel of two levels, as before
    ("kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}",
     ["reduce"]),
    # x laid out [N, M] (M innermost) and reduced over M: along memory, one kernel
    ("kernel f(x: f32[N, M]) -> f32[N, M] {\n e = exp(x - max(x, axis=M))\n return e / sum(e, axis=M)\n}",
     ["reduce"]),
])
def test_a_reduction_across_memory_takes_one_level_a_group(src, groups_wanted):
    """walks_across: a reduction whose elements lie a row apart keeps its group to one
    level and to per-column results; the result, computed from x and the statistics,
    is written by a pointwise group (tests/test_gpu_memory.py runs these programs)."""
    from tiledsl.schedule.partition import online_pair_alone, reduction_levels, walks_across
    k, groups = _groups(src)
    assert [g.kind for g in groups] == groups_wanted
    for g in groups:
        reductions = [v for v in g.values if v.op == "reduce"]
        if reductions and walks_across(reductions[0]):
            assert all(not set(o.dims) & set(g.axes) for o in g.outputs), g
            assert len(set(reduction_levels(g).values())) == 1 or online_pair_alone(g), g


COLUMN_SOFTMAX = "kernel cs(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=M))\n return e / sum(e, axis=M)\n}"


@pytest.mark.parametrize("src,split,levels", [
    (COLUMN_SOFTMAX, ["reduce", "pointwise"], 2),
    (BATCHNORM, ["reduce", "reduce", "pointwise"], 2),
    ("kernel f(x: f32[M, N]) -> f32[M, N] { return x - mean(x, axis=M) }", ["reduce", "pointwise"], 1),
    # over a middle axis, a result beside the statistic
    ("kernel f(x: bf16[B, T, C]) -> (bf16[B, T, C], f32[B, C]) {\n s = sum(f32(x), axis=T)\n"
     " return bf16(f32(x) / s), s\n}", ["reduce", "pointwise"], 1),
])
def test_a_columns_partition_writes_results_over_whole_columns_from_the_reduction_s_group(src, split, levels):
    """partition(columns=True), for short columns: a reduction across memory groups as one along
    rows does, all its levels and its results over whole columns in one reduce group; the
    default partition (walks_across) writes those results from a pointwise group reading x
    again, and runs a level a group where the levels are no online pair."""
    from tiledsl.schedule.partition import reduction_levels, walks_across
    k = tiledsl.compile(src)
    default_groups, whole = partition(k.graph), partition(k.graph, columns=True)
    assert [g.kind for g in default_groups] == split
    assert [g.kind for g in whole] == ["reduce"]
    reductions = [v for v in whole[0].values if v.op == "reduce"]
    assert walks_across(reductions[0]) and len(set(reduction_levels(whole[0]).values())) == levels
    assert set(whole[0].outputs) == set(k.graph.outputs)
    assert all(v.op == "param" for v in whole[0].inputs)


@pytest.mark.parametrize("src", [EXAMPLES / "softmax.tdsl", EXAMPLES / "layernorm.tdsl",
                                 "kernel f(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }",
                                 "kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] { return x * y + 1.0 }"])
def test_a_columns_partition_leaves_programs_without_results_over_whole_columns_as_they_are(src):
    k = tiledsl.compile(src)
    assert partition(k.graph, columns=True) == partition(k.graph)


@pytest.mark.parametrize("longest", [0, 512, 1023])
def test_columns_are_kept_whole_for_short_columns_only(longest, monkeypatch):
    """`runs_columns`: where the default partition writes a reduction across memory's results
    from a pointwise kernel and the columns are at most COLUMNS_MAX_ROWS long (0: never, as
    until the columns partition is timed on a GPU); `partition_at` (what emit shows and the
    launcher runs) follows it."""
    import tiledsl.schedule.problem as problem_module
    from tiledsl.codegen import partition_at
    monkeypatch.setattr(problem_module, "COLUMNS_MAX_ROWS", longest)

    def mode(src, extents):
        return partition_at(tiledsl.compile(src).graph, extents, 132, "sm_90a")[2]
    wide = 4096
    if longest == 0:
        assert mode(COLUMN_SOFTMAX, dict(M=1, N=wide)) == mode(BATCHNORM, dict(M=64, N=wide)) == ""
        return
    assert mode(COLUMN_SOFTMAX, dict(M=longest, N=wide)) == "columns"
    assert mode(BATCHNORM, dict(M=1, N=wide)) == "columns"
    assert mode(COLUMN_SOFTMAX, dict(M=longest + 1, N=wide)) == ""
    assert mode(SOFTMAX, dict(M=64, N=wide)) == ""          # along rows: one group already
    assert mode("kernel f(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=64, N=wide)) == ""
    groups, _, _ = partition_at(tiledsl.compile(COLUMN_SOFTMAX).graph, dict(M=64, N=wide), 132, "sm_90a")
    assert [g.kind for g in groups] == ["reduce"]


SOFTMAX = "kernel sm(x: f32[M, N]) -> f32[M, N] { e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N) }"
SHARE = "kernel share(x: f32[N]) -> f32[N] { return x / sum(x) }"


@pytest.mark.parametrize("src, levels", [(SOFTMAX, 2), (SHARE, 1), (EXAMPLES / "layernorm.tdsl", 2),
                                         (EXAMPLES / "rmsnorm.tdsl", 1)])
def test_a_spread_partition_splits_every_reduction_level_and_writes_rows_pointwise(src, levels):
    """Spread (for a few long rows): each reduction level a reduce group of its own that
    writes per-row values only, so it can split its rows; the results over whole rows from
    one pointwise group reading them. Before: one reduce group writing everything."""
    k = tiledsl.compile(src)
    fused, spread = partition(k.graph), partition(k.graph, spread=True)
    assert [g.kind for g in fused] == ["reduce"]
    assert [g.kind for g in spread] == ["reduce"] * levels + ["pointwise"]
    for g in spread[:-1]:
        assert all(set(v.dims) <= set(g.kept) for v in g.outputs)
        p = problem(g, plan_layout(g, k.graph), {d: 1 << 20 for d in g.kept + g.axes} | {d: 2 for d in g.kept})
        assert p.splittable()
    assert spread[-1].outputs == fused[0].outputs


def test_spread_is_taken_for_a_few_long_rows_only():
    """`few_long_rows`: a reduce group with results over whole rows, 4 SMs or more a row, rows
    of 2^18 or more; and a sum alone splits its rows already. `sources_for` (what emit shows
    and the launcher runs) follows it."""
    from tiledsl.codegen import sources_for
    from tiledsl.schedule.problem import few_long_rows

    def spread(src, extents, sm_count=132):
        k = tiledsl.compile(src)
        groups = partition(k.graph)
        return few_long_rows(groups, [plan_layout(g, k.graph) for g in groups], extents, sm_count, "sm_90a")
    assert spread(SHARE, dict(N=1 << 22)) and spread(SOFTMAX, dict(M=33, N=1 << 18))
    assert not spread(SHARE, dict(N=(1 << 18) - 1))                  # a block streams it soon enough
    assert not spread(SOFTMAX, dict(M=34, N=1 << 18))                # 4 rows an SM: a block a row fills it
    assert spread(SOFTMAX, dict(M=34, N=1 << 18), sm_count=136)
    assert not spread("kernel total(x: f32[N]) -> f32 { return sum(x) }", dict(N=1 << 24))
    names = [s.name for s in sources_for(tiledsl.compile(SOFTMAX), dict(M=1, N=1 << 22))]
    # each reduction level split over the GPU, one kernel each (its last block finishes the row)
    assert [n.split("_")[2] for n in names] == ["g0", "g1", "g2"], names
    assert names[0].endswith("_lb_x32") and names[1].endswith("_lb_x32") and "_pw_" in names[2]


ADD_RMSNORM = ("kernel f(x: bf16[M, N], r: bf16[M, N], w: bf16[N]) -> (bf16[M, N], bf16[M, N]) {\n"
               " h = x + r\n return h, h * rsqrt(mean(h * h, axis=N) + 1e-6) * w\n}")
ADD_LAYERNORM = ("kernel f(x: f16[M, N], r: f16[M, N], w: f32[N], b: f32[N]) -> (f16[M, N], f16[M, N]) {\n"
                 " h = x + r\n c = h - mean(h, axis=N)\n return c * rsqrt(mean(c * c, axis=N) + 1e-5) * w + b, h\n}")


@pytest.mark.parametrize("src,loose,fused", [
    # a residual add returned beside the norm of its sum (vLLM's fused_add_rms_norm)
    (ADD_RMSNORM, 0, True),
    (ADD_LAYERNORM, 1, True),
    # the input itself returned beside its softmax
    ("kernel f(x: f32[M, N]) -> (f32[M, N], f32[M, N]) {\n e = exp(x - max(x, axis=N))\n"
     " return x * 1.0, e / sum(e, axis=N)\n}", 0, True),
    # the group writes per-row values only, which may split their rows: x * 2 stays pointwise
    ("kernel f(x: f32[M, N]) -> (f32[M, N], f32[M]) { return x * 2.0, sum(x, axis=N) }", 0, False),
    # y is read by no reduction: a pointwise kernel reads it
    ("kernel f(x: f32[M, N], y: f32[M, N]) -> (f32[M, N], f32[M, N]) { return y * 2.0, x / sum(x, axis=N) }",
     0, False),
    # stored across the rows the reduce group walks: a pointwise kernel transposes it
    ("kernel f(x: f32[M, N], r: f32[M, N]) -> (f32[N, M], f32[M, N]) {\n h = x + r\n"
     " return h.T, h / sum(h, axis=N)\n}", 0, False),
    # a reduction across memory (over M, N innermost) writes only its statistic
    ("kernel f(x: f32[M, N], r: f32[M, N]) -> (f32[M, N], f32[M, N]) {\n h = x + r\n"
     " return h, h / sum(h, axis=M)\n}", 0, False),
])
def test_an_output_no_reduction_feeds_is_written_by_the_row_kernel_that_reads_its_inputs(src, loose, fused):
    """partition.rows_reading_its_inputs: an output computed elementwise from tensors a reduce
    group reads anyway, beside that group's own results over the same whole rows, is stored
    by its row kernel; before, a pointwise kernel read those tensors again (fused add and
    rmsnorm: 4 tensors read instead of 2). `loose`: that output's position."""
    k, groups = _groups(src)
    loose = k.graph.outputs[loose]
    writer = next(g for g in groups if loose in g.outputs)
    assert writer.kind == ("reduce" if fused else "pointwise")
    if fused:
        assert len(groups) == 1 and set(writer.outputs) == set(k.graph.outputs)
        spread = partition(k.graph, spread=True)        # few long rows: each level splits, rows pointwise
        assert loose in spread[-1].outputs and spread[-1].kind == "pointwise"


def test_a_group_s_reduction_levels_and_online_pairs_are_computed_once_and_read_only():
    """The schedule rules ask for these many times a plan (a layernorm's planning took half
    the time before they were cached), so each Group computes them once; shared between
    callers, they cannot be changed by one."""
    from tiledsl.schedule.partition import online_pairs, reduction_levels
    _, (g,) = _groups(SOFTMAX)
    m, s = (v for v in g.values if v.op == "reduce")
    assert dict(reduction_levels(g)) == {m.id: 1, s.id: 2}
    assert dict(online_pairs(g)) == {1: (m, s)}
    assert reduction_levels(g) is reduction_levels(g) and online_pairs(g) is online_pairs(g)
    with pytest.raises(TypeError):
        online_pairs(g)[2] = (m, s)
    with pytest.raises(TypeError):
        reduction_levels(g)[m.id] = 3


def test_a_layout_s_row_major_and_a_problem_s_splittable_are_computed_once():
    """Asked a dozen times and twice a plan: each Layout and Problem computes them once,
    and the answers are those of the rules (rows of softmax over N are row-major and not
    splittable, since their results are per element; sums over M are neither)."""
    from tiledsl.schedule.layout import plan_layout, row_major
    from tiledsl.schedule.problem import problem
    for src, major, split in ((SOFTMAX, True, False),
                              ("kernel f(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", False, True)):
        k, (g,) = _groups(src)
        lay = plan_layout(g, k.graph)
        p = problem(g, lay, dict(M=512, N=1024))
        assert row_major(lay) is major and p.row_major() is major and p.splittable() is split
        assert "is_row_major" in vars(lay) and "_splittable" in vars(p)
        vars(lay)["is_row_major"] = not major       # (a cached answer is what the next call reads)
        assert row_major(lay) is (not major)
        del vars(lay)["is_row_major"]
        assert row_major(lay) is major
