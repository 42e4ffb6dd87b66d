"""The autotuner's search space on the CPU: static pruning with reasons,
parallel compilation into the compilation cache, resource pruning from the
cubin's report, compile failures and the budget."""
from __future__ import annotations

import time
from dataclasses import replace

import pytest

import tiledsl
from tiledsl.runtime import cache, toolchain
from tiledsl.runtime.launcher import kernel_key_parts
from tiledsl.runtime.toolchain import ResourceUsage
from tiledsl.schedule.choose import candidates, default
from tiledsl.schedule.schedules import Schedule
from tiledsl.tune.compile import Compilation, WorkerPool, _compile_here
from tiledsl.tune.runner import dry_run
from tiledsl.tune.space import DeviceLimits, config_label, resource_problem, search_space

pytestmark = pytest.mark.skipif(not toolchain.available(), reason="NVRTC is not installed")

POINTWISE = "kernel f(x: f32[N], y: f32[N], s: f32, bias: f32[N]) -> f32[N] { return relu((x + y) * s + bias) }"
SOFTMAX = "kernel softmax(x: f32[M, N]) -> f32[M, N] { e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N) }"


def test_static_pruning_before_compiling_says_why():
    k = tiledsl.compile(POINTWISE)
    ext = dict(N=1000)
    planted = [Schedule("pointwise", block=256, vec=8, items=1),                  # f32: at most 4 wide
               Schedule("pointwise", block=1024, vec=4, items=1),                 # over the device's 512
               Schedule("pointwise", block=256, vec=4, items=1, index64=True),   # wrong index width
               Schedule("reduce_col", block=256, vec=1, items=0, row_threads=1),
               Schedule("pointwise", block=128, vec=4, items=2)]
    [space] = search_space(k, ext, limits=DeviceLimits(max_threads_per_block=512), schedules={0: planted})
    by_tag = {c.schedule: c for c in space.candidates}
    assert space.candidates[0].is_default and space.candidates[0].status == "pending"
    assert by_tag[planted[0]].status == "pruned" and "vector width 8" in by_tag[planted[0]].reason
    assert by_tag[planted[1]].reason == "1024 threads per block, more than the device's 512"
    assert "index width" in by_tag[planted[2]].reason
    assert "reduction schedule for a pointwise group" in by_tag[planted[3]].reason
    assert by_tag[planted[4]].status == "pending" and by_tag[planted[4]].reason == ""
    assert all(c.reason.startswith(("does not fit:", "1024 threads")) for c in space.candidates
               if c.status == "pruned")


def test_the_default_is_always_in_the_space_and_first_even_when_capped():
    k = tiledsl.compile(SOFTMAX)
    ext = dict(M=4096, N=1024)
    [space] = search_space(k, ext, max_candidates=3)
    assert len(space.candidates) == 3 and space.candidates[0].is_default
    assert space.candidates[0].schedule == space.default
    [space] = search_space(k, ext, schedules={0: [Schedule("reduce_row", block=1024, vec=1, items=0,
                                                           row_threads=1024)]})
    assert [c.is_default for c in space.candidates] == [True, False]


def test_labels_are_unique_where_tags_repeat():
    k = tiledsl.compile(SOFTMAX)
    [space] = search_space(k, dict(M=4096, N=1024))
    tags = [c.schedule.tag for c in space.candidates]
    labels = [c.tag for c in space.candidates]
    assert len(set(tags)) < len(tags)             # persistent-grid twins share a kernel (and its tag)
    assert len(set(labels)) == len(labels)
    twin = next(c for c in space.candidates if c.schedule.blocks_per_sm)
    assert config_label(twin.schedule) == f"{twin.schedule.tag}_ps{twin.schedule.blocks_per_sm}"
    # split-K twins share a kernel too: each label names its chunk count, two included
    mm = tiledsl.compile("kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }")
    [gemm] = search_space(mm, dict(M=256, N=256, K=65536))
    split = [c for c in gemm.candidates if c.schedule.splits]
    assert split and all(c.tag.endswith(f"_sp{c.schedule.splits}") for c in split)
    assert config_label(replace(split[0].schedule, splits=2)) == split[0].schedule.tag + "_sp2"


def test_resource_problems():
    limits = DeviceLimits()
    ok = ResourceUsage(registers=64, shared_bytes=1024, local_bytes=0, spill_stores=0, spill_loads=0)
    assert resource_problem(ok, 256, limits) == ""
    assert resource_problem(None, 256, limits) == ""
    spill = ResourceUsage(64, 0, 16, spill_stores=16, spill_loads=8)
    assert resource_problem(spill, 256, limits) == "spills registers (16 bytes stored, 8 bytes loaded per thread)"
    unknown = ResourceUsage(64, 0, 32, spill_stores=None, spill_loads=None)
    assert "32 bytes of local memory" in resource_problem(unknown, 256, limits)
    assert resource_problem(ResourceUsage(128, 0, 0, 0, 0), 1024, limits) == \
        "128 registers x 1024 threads = 131072 as allocated, more than the 65536 registers of a block"
    assert resource_problem(ResourceUsage(64, 0, 0, 0, 0), 1024, limits) == ""      # exactly full
    assert "as allocated" in resource_problem(ResourceUsage(65, 0, 0, 0, 0), 1000, limits)  # 72 x 1024
    assert "more than the 49152 a block may declare" in \
        resource_problem(ResourceUsage(32, 50000, 0, 0, 0), 128, limits)
    assert "more than 255" in resource_problem(ResourceUsage(256, 0, 0, 0, 0), 32, limits)


def test_dry_run_compiles_in_parallel_prunes_by_resources_and_fills_the_cache(cache_dir):
    k = tiledsl.compile(POINTWISE)
    ext = dict(N=1 << 20)
    limits = DeviceLimits(registers_per_block=5000)      # small, so some blocks need too many
    report = dry_run(k, ext, limits=limits, max_candidates=6, workers=2)
    [space] = report.groups
    assert report.origin == "dry run" and len(space.candidates) == 6
    pruned = [c for c in space.candidates if c.status == "pruned"]
    compiled = [c for c in space.candidates if c.status == "compiled"]
    assert pruned and compiled and len(pruned) + len(compiled) == 6
    def allocated(c):
        return -(-c.registers * 32 // 256) * 256 * (c.schedule.block // 32)
    for c in pruned:
        assert allocated(c) > 5000 and "registers x" in c.reason
    for c in compiled:
        assert 0 < c.registers and allocated(c) <= 5000
    # every cubin is in the disk cache, under the key the launcher looks up
    disk = cache.DiskCache(cache_dir)
    ir = k.ir_text()
    for c in space.candidates:
        key = cache.kernel_key(kernel_key_parts(ir, 0, c.schedule, 1), "sm_90a")
        assert disk.get(key) is not None, c.tag
    assert report.compiled_now >= 1
    text = report.table()
    assert "pruned" in text and "registers x" in text and "(default)" in text
    # a second run compiles nothing
    cache._clear_memory_cache()
    again = dry_run(k, ext, limits=limits, max_candidates=6, workers=2)
    assert again.compiled_now == 0 and again.from_cache == report.compiled_now + report.from_cache
    assert [(c.tag, c.status, c.registers) for c in again.groups[0].candidates] == \
        [(c.tag, c.status, c.registers) for c in space.candidates]


def test_a_candidate_that_fails_to_compile_is_recorded_and_the_rest_go_on(cache_dir, monkeypatch):
    import tiledsl.codegen.cuda as cuda
    k = tiledsl.compile(POINTWISE.replace("relu(", "sigmoid("))
    ext = dict(N=4096)
    space = search_space(k, ext, max_candidates=3)
    victim = space[0].candidates[1].schedule
    real = cuda.render

    def broken(graph, group, layout, schedule, stage=1):
        src = real(graph, group, layout, schedule, stage)
        if schedule == victim:
            return cuda.KernelSource(src.name, src.source + "\nthis is not C++;\n", src.schedule, src.layout)
        return src
    monkeypatch.setattr(cuda, "render", broken)
    Compilation(k, space, "sm_90a", workers=2).start().finish()
    statuses = {c.schedule: (c.status, c.reason) for c in space[0].candidates}
    assert statuses[victim][0] == "failed" and statuses[victim][1].startswith("compile: ")
    assert [s for s, (st, _) in statuses.items() if st == "compiled"] == \
        [c.schedule for c in space[0].candidates if c.schedule != victim]


def test_a_spent_budget_skips_what_has_not_compiled(cache_dir):
    k = tiledsl.compile(POINTWISE.replace("relu(", "tanh("))
    space = search_space(k, dict(N=4096), max_candidates=4)
    comp = Compilation(k, space, "sm_90a", workers=2).start()
    t0 = time.monotonic()
    comp.finish(deadline=time.monotonic() - 1)
    assert time.monotonic() - t0 < 5
    assert {c.status for c in space[0].candidates} == {"skipped"}
    assert all(c.reason == "budget spent before it compiled" for c in space[0].candidates)


def test_worker_pool_answers_cubins_and_errors():
    ok = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2; }'
    pool = WorkerPool(2)
    try:
        pool.submit("a", ok, "sm_80")
        pool.submit("b", "not CUDA", "sm_80")
        pool.submit("c", ok, "sm_90a")
        answers = dict(pool.done.get(timeout=60) for _ in range(3))
    finally:
        pool.close()
    assert "cubin" in answers["a"] and "cubin" in answers["c"] and answers["a"]["resources"]["k"]["registers"] > 0
    assert "NVRTC rejected" in answers["b"]["error"]
    assert all(p.poll() is not None for p in pool.procs)
    here = _compile_here(ok, "sm_80")
    assert here["resources"] == answers["a"]["resources"]


def test_candidates_come_from_the_schedule_module():
    # the tuner adds nothing of its own: the default plus candidates(), in order
    k = tiledsl.compile(SOFTMAX)
    [space] = search_space(k, dict(M=64, N=4096))
    p = space.problem
    want = [default(p, k.hints)] + [s for s in candidates(p, k.hints) if s != default(p, k.hints)]
    assert [c.schedule for c in space.candidates] == want[:64]


def test_workers_that_cannot_start_leave_the_work_to_this_process(cache_dir, monkeypatch):
    import sys
    monkeypatch.setattr(sys, "executable", sys.executable + "-missing")   # Popen fails: no workers at all
    k = tiledsl.compile(POINTWISE.replace("relu(", "exp("))
    space = search_space(k, dict(N=1024), max_candidates=2)
    Compilation(k, space, "sm_90a", workers=2).start().finish()
    assert [c.status for c in space[0].candidates] == ["compiled", "compiled"]


def test_workers_that_die_hand_their_jobs_back(cache_dir, monkeypatch):
    import sys
    import tiledsl.tune.compile as comp
    real = comp.subprocess.Popen

    def broken_worker(argv, **kw):     # a "worker" that exits at once, as if tiledsl failed to import
        return real([sys.executable, "-c", "pass"], **kw)
    monkeypatch.setattr(comp.subprocess, "Popen", broken_worker)
    k = tiledsl.compile(POINTWISE.replace("relu(", "log("))
    space = search_space(k, dict(N=1024), max_candidates=3)
    Compilation(k, space, "sm_90a", workers=2).start().finish()
    assert [c.status for c in space[0].candidates] == ["compiled"] * 3


@pytest.mark.parametrize("extents,splits_first", [(dict(M=4096, N=4096, K=4096), False),
                                                  (dict(M=1024, N=1024, K=8192), True)])
def test_a_capped_gemm_search_on_hopper_times_the_warpgroup_tiles_first(extents, splits_first):
    """The first 64 candidates at f16 4096^3: the default, every unsplit warpgroup
    tile, the persistent loops, the likeliest producer-warpgroup twins; no mma.sync or SIMT tile
    (they never won on Hopper). Where 128x256 tiles leave SMs idle (1024^2x8192),
    split-K forms share the first rank with the unsplit tiles."""
    k = tiledsl.compile("kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }")
    [space] = search_space(k, extents, hbm_gbps=3352)
    picked = [c.schedule for c in space.candidates]
    assert len(picked) == 64 and all(s.wgmma for s in picked)
    every = candidates(space.problem, k.hints)
    assert {s for s in every if s.wgmma and not s.splits and not (s.persistent or s.specialized)
            and s.tma != (s.tile[:2] == (64, 64))
            and s.tile[:2] in ((128, 256), (128, 128))} <= set(picked)
    assert any(s.splits for s in picked) == splits_first
    if not splits_first:
        assert {s for s in every if s.persistent and not s.specialized} <= set(picked)
        # then the producer-warpgroup twins, 128x256 tiles of 4 stages first, grouped (alone and in pairs)
        first = {s for s in every if s.specialized and s.stages == 4 and s.tile[1] == 256 and s.group}
        assert first <= set(picked) and any(s.cluster == 2 for s in first)


def test_the_space_of_a_reduction_that_streams_nothing():
    """A sum of a scalar parameter has no loop to stream: its candidates are listed, and
    no unroll is offered for a loop that loads nothing (stream_words counts at least half
    a word: the hypothesis fuzz found a division by zero, 2026-11-25)."""
    import tiledsl
    from tiledsl.schedule.choose import candidates
    from tiledsl.schedule.problem import problem
    from tiledsl.schedule.rows import stream_unrolls
    from tiledsl.schedule.layout import plan_layout
    from tiledsl.schedule.partition import partition
    k = tiledsl.compile("kernel f(p0: f16, p1: f16) -> f64 { return f64(sum(p0)) }")
    g = partition(k.graph)[0]
    p = problem(g, plan_layout(g, k.graph), {}, sm_count=132)
    found = candidates(p)
    assert found and all(s.unroll == 0 or s.streamed for s in found)
    assert all(n <= 16 for s in found for n in stream_unrolls(p, s))


def test_a_call_that_runs_spread_tunes_the_spread_groups():
    """At sizes where a call runs the spread partition (a few long rows), the search space is
    that partition's groups (the fused one's would pin a block a row), the report says so, and
    the candidates compile under the keys the spread launcher looks up; at other sizes the
    space is the fused partition's."""
    from tiledsl.runtime.launcher import Launcher, kernel_key_parts
    from tiledsl.tune.compile import Compilation
    k = tiledsl.compile("kernel share(x: f32[N]) -> f32[N] { return x / sum(x) }")
    spread = dry_run(k, dict(N=1 << 22), max_candidates=3)
    assert [(g.kind, g.partition) for g in spread.groups] == [("reduce", "spread"), ("pointwise", "spread")]
    assert spread.partition == "spread" and "runs spread: 2 groups" in spread.table()
    assert spread.to_json()["partition"] == "spread"
    assert all(c.status == "compiled" for g in spread.groups for c in g.candidates), spread.table()
    other = Launcher(k, spread=True)
    g = search_space(k, dict(N=1 << 22), max_candidates=3, mode="spread")[1]
    comp = Compilation(k, [g], "sm_90a")
    assert set(comp.jobs) == {kernel_key_parts(other.ir_text, 1, c.schedule, stage)
                              for c in g.candidates for stage in c.stages}
    usual = dry_run(k, dict(N=1 << 12), max_candidates=2)
    assert [(g.kind, g.partition) for g in usual.groups] == [("reduce", "")] and usual.partition == ""
    assert "note:" not in usual.table()


def test_a_call_that_keeps_columns_whole_tunes_its_one_group(monkeypatch):
    """Likewise where a call runs the columns partition (short columns; turned on here:
    problem.COLUMNS_MAX_ROWS): its one group's space holds the columns held whole in
    registers at 1 to 32 threads a column, which compile without spills; long columns get
    the fused partition's two groups."""
    import tiledsl.schedule.problem as problem_module
    monkeypatch.setattr(problem_module, "COLUMNS_MAX_ROWS", 1023)
    k = tiledsl.compile("kernel c(x: f32[M, N]) -> f32[M, N] { return x - mean(x, axis=M) }")
    whole = dry_run(k, dict(M=64, N=4096))
    assert [(g.kind, g.partition) for g in whole.groups] == [("reduce", "columns")]
    assert "keeps columns whole: 1 group(s)" in whole.table()
    from tiledsl.schedule.columns import held_column
    g = whole.groups[0]
    shares = {held_column(g.problem, t, block) for t in (4, 8, 16, 32) for block in (128, 256)}  # (16 rows a thread at most)
    assert held_column(g.problem, 2) is None
    held = [c for c in g.candidates if c.schedule in shares]
    assert len(held) == len(shares) and all(c.status == "compiled" for c in held), whole.table()
    usual = dry_run(k, dict(M=4096, N=4096), max_candidates=2)
    assert len(usual.groups) == 2 and usual.partition == ""


def test_a_full_reductions_space_holds_its_persistent_cluster_rows():
    """A reduction to a scalar whose row a cluster's blocks share has persistent twins, and
    fits() judges them as rows: it asked them a GEMM's question (the product's batch), an
    IndexError on a one-loop problem (tests/test_codegen_fuzz.py's draw, 2026-12-07)."""
    k = tiledsl.compile("kernel total(x: f16[M, N]) -> f64 { return f64(sum(x)) }")
    [space] = search_space(k, dict(M=3, N=4097))
    persistent = [c for c in space.candidates if c.schedule.persistent]
    assert persistent and all(c.schedule.cluster > 1 and c.status == "pending" for c in persistent)
