"""CUDA rendering and compilation on the CPU: every schedule variant of the
memory-bound kernels compiles for sm_90a and sm_80 with NVRTC (no GPU), with
no local-memory spills; the pointwise path loads 128 bits per access."""
from __future__ import annotations

import functools
import re
from dataclasses import replace

import numpy as np
import pytest

import tiledsl
from tiledsl.codegen import sources_for
from tiledsl.codegen import cuda
from tiledsl.codegen.cuda import literal, render
from tiledsl.dtypes import DTYPES
from tiledsl.errors import TdslError
from tiledsl.schedule.choose import candidates, default, fits, launches
from tiledsl.schedule.problem import operand_words, problem
from tiledsl.schedule.columns import column_tile_split
from tiledsl.schedule import registers, rows
from tiledsl.schedule.resident import without_spilled_prefetch
from tiledsl.schedule.hints import Hints
from tiledsl.schedule.layout import plan_layout
from tiledsl.schedule.guards import deciding_lane, load_guards
from tiledsl.schedule.partition import describe, partition
from tiledsl.schedule.schedules import Schedule, combine_lanes, stream_unroll_rule, stream_words

import test_gpu_memory
from conftest import EXAMPLES

toolchain = pytest.importorskip("tiledsl.runtime.toolchain")
if not toolchain.available():
    pytest.skip("NVRTC (cuda-bindings + nvidia-cuda-nvrtc) is not installed", allow_module_level=True)

ARCHS = ("sm_90a", "sm_80")

PROGRAMS = {
    "pointwise": ("kernel f(x: f32[N], y: f32[N], s: f32, b: f32[N]) -> f32[N] "
                  "{ return relu((x + y) * s + b) }", dict(N=1 << 20)),
    "bias_f16": ("kernel f(x: f16[M, N], b: f16[N]) -> f16[M, N] { return gelu(x + b) }",
                 dict(M=64, N=4096)),
    # a transposed input and a transposed output: the transposing tiles (and the flat walk)
    "transposes": ("kernel t(x: f16[M, N], b: f32[N], y: bf16[N, M]) -> (f32[N, M], f16[M, N]) "
                   "{ z = x * b + y.T\n return z.T, f16(z) }", dict(M=256, N=512)),
    # rows of 781: vectors that straddle rows (x, the result), b read lane by lane
    "bias_straddled": ("kernel f(x: bf16[M, N], b: bf16[N], s: f32) -> bf16[M, N] { return gelu(x * s + b) }",
                       dict(M=64, N=781)),
    "softmax": ("examples/softmax.tdsl", dict(M=64, N=4096)),
    "layernorm": ("examples/layernorm.tdsl", dict(M=64, N=4096)),
    # all f16, as in a half-precision model: hoisted 16-bit weights
    "layernorm_f16": ((EXAMPLES / "layernorm.tdsl").read_text().replace("w: f32[N], b: f32[N]", "w: f16[N], b: f16[N]"),
                      dict(M=64, N=4096)),
    "rmsnorm_bf16": ("kernel r(x: bf16[M, N], w: bf16[N]) -> bf16[M, N] "
                     "{ return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }", dict(M=64, N=4096)),
    # rows too long for a block's registers: looped, or shared by a cluster's blocks (sm_90a)
    "softmax_long": ("examples/softmax.tdsl", dict(M=64, N=65536)),
    # 16-bit rows in vectors: up to 64 elements a thread (packed two a register)
    "softmax_f16_long": ("kernel f(x: f16[M, N]) -> f16[M, N] {\n e = exp(x - max(x, axis=N))\n"
                         " return e / sum(e, axis=N)\n}", dict(M=64, N=50304)),
    "layernorm_long": ("examples/layernorm.tdsl", dict(M=64, N=65536)),
    "column_sum": ("examples/column_sum.tdsl", dict(M=64, N=100000)),
    "column_sum_split": ("examples/column_sum.tdsl", dict(M=16384, N=1024)),
    "total_split": ("kernel t(x: f16[M, N]) -> f32 { return mean(x) }", dict(M=4096, N=4096)),
    # softmax's max and sum(exp) across memory, one online pass (partition.online_partner): a
    # column's chunks a thread, vectors of 8 columns in tiles, a block down a column
    "softmax_over_m_f16": ("kernel s(x: f16[M, N]) -> f16[M, N] {\n e = exp(x - max(x, axis=M))\n"
                           " return f16(e / sum(e, axis=M))\n}", dict(M=65536, N=776)),
    # two f32 vectors an iteration of the streamed loop: spilled under ptxas's own unroll
    "dot_split": ("kernel t(x: f32[M, N], y: f32[M, N]) -> f32 { return sum(x * y) }", dict(M=4096, N=4096)),
    "linear_f32": ("kernel mm(a: f32[M, K], b: f32[K, N], bias: f32[N]) -> f32[M, N] { return relu(a @ b + bias) }",
                   dict(M=1000, K=512, N=768)),
    # few tiles over a long K: split-K candidates (and their combining kernels)
    "skinny_f32": ("kernel mm(a: f32[M, K], b: f32[K, N], bias: f32[N]) -> f32[M, N] { return relu(a @ b + bias) }",
                   dict(M=200, K=8192, N=300)),
    "linear": ("kernel lin(x: f16[M, K], w: f16[N, K], b: f32[N]) -> f16[M, N] { return relu(x @ w.T + b) }",
               dict(M=1000, K=512, N=768)),
    "linear_kn": ("kernel lin(x: f16[M, K], w: f16[K, N], b: f32[N]) -> f16[M, N] { return relu(x @ w + b) }",
                  dict(M=1000, K=512, N=768)),
    # A contiguous along M and B along N: both tiles kept [k][rows], read transposed
    "linear_mn": ("kernel lin(xt: bf16[K, M], w: bf16[K, N], b: f32[N]) -> bf16[M, N] { return relu(xt.T @ w + b) }",
                  dict(M=1000, K=512, N=768)),
}


def _variants():
    for name, (src, extents) in PROGRAMS.items():
        k = tiledsl.compile(src)
        for g in partition(k.graph):
            lay = plan_layout(g, k.graph)
            for arch in ARCHS:    # wgmma schedules exist for sm_90a only
                p = problem(g, lay, extents, arch=arch)
                seen = set()      # split counts and grids change the launch only: one compile per code
                for s in candidates(p):
                    if s.guarded and s.unroll:      # (the same loop as at the rule's depth, fewer loads in flight)
                        continue
                    for stage in ((1, 2) if s.splits else (1,)):
                        if (s.code, stage) not in seen:
                            seen.add((s.code, stage))
                            yield pytest.param(k, g, lay, s, stage, arch, id=f"{name}-{s.tag}-s{stage}-{arch}")


def _pipelined_variants():
    """Row reductions that prefetch (two row buffers per thread) or keep a cp.async ring of rows
    in shared memory: candidates only with many rows."""
    for name, extents in (("softmax", dict(M=32768, N=781)), ("layernorm", dict(M=4096, N=8192)),
                          ("layernorm_f16", dict(M=4096, N=8192)), ("rmsnorm_bf16", dict(M=4096, N=8192))):
        k = tiledsl.compile(PROGRAMS[name][0])
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        for arch in ARCHS:
            seen = set()    # blocks_per_sm changes the launch only: one compile per code
            for s in candidates(problem(g, lay, extents, arch=arch)):
                if (s.prefetch or s.stages > 1) and s.code not in seen:
                    seen.add(s.code)
                    yield pytest.param(k, g, lay, s, 1, arch, id=f"{name}-rows-{s.tag}-ps{s.blocks_per_sm}-{arch}")


def _shared_row_variants():
    """Looped rows copied into shared memory (Schedule.shared_row): rows too long to hold
    twice in an SM's registers, peeled and whole, with weights and with two per-row inputs."""
    for src, extents in (("kernel s(x: f16[M, N]) -> f16[M, N] {\n e = exp(x - max(x, axis=N))\n"
                          " return e / sum(e, axis=N)\n}", dict(M=4096, N=50257)),
                         ((EXAMPLES / "layernorm.tdsl").read_text().replace("f16", "bf16"), dict(M=4096, N=40000)),
                         ("kernel d(x: f16[M, N], y: f16[M, N]) -> f32[M] { return sum(f32(x) * f32(y), axis=N) }",
                          dict(M=300, N=30001))):
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        for arch in ARCHS:
            seen = set()
            for s in candidates(problem(g, lay, extents, arch=arch)):
                if s.shared_row and s.code not in seen:
                    seen.add(s.code)
                    yield pytest.param(k, g, lay, s, 1, arch, id=f"{k.graph.name}-{extents['N']}-{s.tag}-{arch}")


WHOLE_COLUMN_PROGRAMS = {
    "softmax_over_m": "kernel s(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=M))\n return e / sum(e, axis=M)\n}",
    "softmax_over_m_bf16": "kernel s(x: bf16[M, N]) -> bf16[M, N] {\n e = exp(f32(x) - max(f32(x), axis=M))\n"
                           " return bf16(e / sum(e, axis=M))\n}",
    "batch_norm": test_gpu_memory.BATCHNORM,
    "centered_two_inputs": "kernel c(x: f32[M, N], y: f32[M, N]) -> f32[M, N] { h = x * y\n return h - mean(h, axis=M) }",
}


def _whole_column_variants():
    """The columns partition's defaults (columns.whole_columns): columns held a few threads each
    at up to 16 elements a thread, and longer ones walked twice; every column length the held
    shares change at."""
    from tiledsl.schedule.columns import whole_columns
    for name, src in WHOLE_COLUMN_PROGRAMS.items():
        k = tiledsl.compile(src)
        [g] = partition(k.graph, columns=True)
        lay = plan_layout(g, k.graph)
        seen = set()
        for m in (1, 16, 17, 33, 64, 100, 256, 512, 777):
            for arch in ARCHS:
                s = whole_columns(problem(g, lay, dict(M=m, N=1 << 16), arch=arch))
                if (s.code, arch) not in seen:
                    seen.add((s.code, arch))
                    yield pytest.param(k, g, lay, s, 1, arch, id=f"{name}-columns-{s.tag}-{arch}")


SHARED_ROW_VARIANTS = list(_shared_row_variants())
VARIANTS = list(_variants()) + list(_pipelined_variants()) + SHARED_ROW_VARIANTS + list(_whole_column_variants())


def _compile(k, g, lay, s, arch, stage=1):
    ks = render(k.graph, g, lay, s, stage)
    compiled = toolchain.compile_cuda(ks.source, arch=arch)
    return ks, compiled, compiled.resources[ks.name]


@pytest.mark.parametrize("k,g,lay,s,stage,arch", VARIANTS)
def test_every_variant_compiles_without_spills(k, g, lay, s, stage, arch):
    ks, compiled, usage = _compile(k, g, lay, s, arch, stage)
    assert compiled.cubin
    assert usage.spill_stores == 0 and usage.spill_loads == 0, usage
    assert usage.local_bytes == 0, usage
    assert usage.registers <= 255
    if s.shared_row:    # the row's vectors come in by cp.async, 16 bytes each, and are read from shared memory
        sass = toolchain.sass(compiled.cubin)
        assert toolchain.has_instruction(sass, "LDGSTS.E.BYPASS.128") and toolchain.has_instruction(sass, "LDS.128")
    if s.wgmma:     # the warpgroup path really runs on wgmma, fed by cp.async or by TMA
        sass = toolchain.sass(compiled.cubin)
        assert toolchain.has_instruction(sass, "HGMMA")
        assert toolchain.has_instruction(sass, "UTMALDG.2D" if s.tma else "LDGSTS.E.BYPASS.128")
        assert not toolchain.has_instruction(sass, "LDGSTS.E.BYPASS.128" if s.tma else "UTMALDG.2D")
        assert "C7510" not in compiled.log and "serialized" not in compiled.log   # wgmma left asynchronous


# at the compiler's own unroll (an explicit one changes a pragma's number); every sm_90a variant, and every
# fourth sm_80 one (the headers' code for older GPUs: __CUDA_ARCH__ below 900)
NVRTC_12_VARIANTS = [v for v in VARIANTS if v.values[3].unroll == 0 and v.values[5] == "sm_90a"] + \
    [v for v in VARIANTS if v.values[3].unroll == 0 and v.values[5] == "sm_80"][::4]


@pytest.mark.parametrize("k,g,lay,s,stage,arch", NVRTC_12_VARIANTS)
def test_every_variant_compiles_with_nvrtc_12(k, g, lay, s, stage, arch):
    """What NVRTC 13 compiles above, NVRTC 12's front end takes too: GPU images' CuPy (the
    H200's, 2026-12-05) compile with it, and it refused constructs 13 takes (generic lambdas
    in __device__ code: every shifted kernel failed on the GPU)."""
    assert _nvrtc12_errors(render(k.graph, g, lay, s, stage).source, arch, ptx_only=True) == "", s.tag


def test_there_are_many_variants():
    assert len(VARIANTS) >= 100


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", ["pointwise", "bias_f16", "bias_straddled", "softmax", "rmsnorm_bf16"])
def test_default_schedules_use_128_bit_loads_and_stores(name, arch):
    src, extents = PROGRAMS[name]
    k = tiledsl.compile(src)
    [ks] = sources_for(k, extents)
    compiled = toolchain.compile_cuda(ks.source, arch=arch)
    sass = toolchain.sass(compiled.cubin)
    assert toolchain.has_instruction(sass, "LDG.E.128"), ks.name
    assert toolchain.has_instruction(sass, "STG.E.128"), ks.name
    assert not toolchain.has_instruction(sass, "LDL") and not toolchain.has_instruction(sass, "STL")


BIAS_GELU = "kernel f(x: {t}[M, N], b: {t}[N]) -> {t}[M, N] {{ return gelu(x + b) }}"


def _problem_of(src: str, extents: dict, misaligned=()):
    """(kernel, Problem) of a one-group program; `misaligned`: names of parameters not 16-byte aligned."""
    k = tiledsl.compile(src)
    [g] = partition(k.graph)
    lay = plan_layout(g, k.graph)
    bad = {id(op) for op in lay.inputs if op.value.attr("name") in misaligned}
    return k, problem(g, lay, extents, frozenset(bad), 132, "sm_90a")


@pytest.mark.parametrize("src,extents,misaligned,why", [
    ("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return x + b }", dict(M=100, N=5), (),
     "innermost extent of 8 or more (here 5)"),
    ("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return x + b }", dict(M=100, N=781), ("x",),
     "16-byte aligned"),
    ("kernel f(x: f32[M, N], y: f32[N, M]) -> f32[M, N] { return x + y.T }", dict(M=100, N=781), (),
     "no operand laid out across the innermost loop"),
])
def test_vectors_straddling_rows_are_refused_where_they_cannot_run(src, extents, misaligned, why):
    """fits() says why a straddling walk cannot run: a row shorter than a vector (it would cross
    two rows' ends), an operand over every loop not 16-byte aligned, a transposed operand; and
    the schedule itself is refused for anything but an untiled flat pointwise walk in vectors."""
    k, p = _problem_of(src, extents, misaligned)
    s = Schedule("pointwise", block=128, vec=8, items=2, straddle=True)
    assert why in fits(p, s)
    assert not any(c.straddle and c.vec == 8 for c in candidates(p, k.hints))
    assert not default(p, k.hints).straddle or default(p, k.hints).vec < 8
    for bad in (dict(kind="reduce_row", row_threads=128, block=128, vec=8, items=1), dict(kind="pointwise", vec=1),
                dict(kind="pointwise", vec=4, tile=(32, 32))):
        with pytest.raises(TdslError, match="straddle"):
            Schedule(straddle=True, **bad)


@pytest.mark.parametrize("src,extents,why", [
    ("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return x + b }", dict(M=15, N=781),
     "two runs or more of the outermost loop (15)"),
    ("kernel f(x: bf16[M, N], y: bf16[M, N]) -> bf16[M, N] { return x + y }", dict(M=64, N=781),
     "an input without that loop"),
    ("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return x + b }", dict(M=(65535 * 8 + 1) * 8, N=9),
     "more than 65535 groups"),
])
def test_straddled_runs_of_rows_are_refused_where_they_cannot_run(src, extents, why):
    """A walk of runs of vec rows whose vectors straddle them (Schedule.outer and straddle)
    needs two runs, an input without the outermost loop to read once, and its groups of runs
    (and the rows after them) within the grid's 65535 blocks along y: fits() says which."""
    k, p = _problem_of(src, extents)
    s = Schedule("pointwise", block=128, vec=8, items=8, outer=True, straddle=True)
    assert why in fits(p, s)
    assert not any(c.outer and c.straddle and c.vec == 8 and c.items == 8 for c in candidates(p, k.hints))


def test_straddled_runs_of_rows_read_a_broadcast_once_a_thread():
    """Walking runs of 8 rows of 781 (Schedule.outer and straddle), a thread reads b's lanes
    once, before its items, then x's vectors of every run at the flat index: no division per
    item by the row's length, and its launch covers the runs, then the rows after them."""
    k, p = _problem_of("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return gelu(x + b) }",
                       dict(M=8 * 41 + 3, N=781))
    s = Schedule("pointwise", block=128, vec=8, items=4, outer=True, straddle=True)
    assert s in candidates(p, k.hints) and not fits(p, s)
    src = render(k.graph, p.group, p.layout, s, 1).source
    body = src[src.index("if ((idx_t)blockIdx.y < slices)"):src.index("} else {    // the rows after")]
    once, walk = body.split("for (int j = 0;", 1)
    assert "in1[" in once and "in1[" not in walk and "in0 + t * 8" in walk
    assert "% n1" not in walk and "/ n1" not in walk
    [launch] = launches(p, s)
    assert launch.grid == (7, -(-41 // 4) + 1, 1)      # 781 vectors a run; 41 runs, 4 a thread; 3 rows after
    ks, compiled, usage = _compile(k, p.group, p.layout, s, "sm_90a")
    assert usage.spill_stores == 0 and usage.local_bytes == 0, usage
    assert toolchain.has_instruction(toolchain.sass(compiled.cubin), "LDG.E.128")


@pytest.mark.parametrize("src,extents,outer,items", [
    (BIAS_GELU.format(t="bf16"), dict(M=8192, N=16384), True, 8),        # costly math: rows walked
    (BIAS_GELU.format(t="f32"), dict(M=8192, N=8192), True, 8),
    (BIAS_GELU.format(t="bf16"), dict(M=65536, N=768), True, 8),         # 96 vectors a row: half a block
    (BIAS_GELU.format(t="bf16"), dict(M=65536, N=256), False, 2),        # 32 vectors a row: flat
    (BIAS_GELU.format(t="bf16"), dict(M=7, N=8192), False, 2),           # 8 blocks walked: flat's 28
    (BIAS_GELU.format(t="f16"), dict(M=132, N=4096), True, 4),           # 4 rows keep 132 blocks
    ("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return relu(x + b) }", dict(M=8192, N=16384), False, 2),
    ("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return silu(x + b) }", dict(M=65536, N=768), False, 2),
    ("kernel f(x: f16[M, N], s: f16[N], t: f16[N]) -> f16[M, N] { return sigmoid(x * s + t) }",
     dict(M=16384, N=4096), False, 2),                                   # one or two SFU instructions: flat
    ("kernel f(x: f32[M, N], b: f32[N]) -> f32[M, N] { return x + b }", dict(M=16384, N=1021), False, 8),
    ("kernel f(x: f32[M, N], b: f32[N]) -> f32[M, N] { return x + b }", dict(M=16384, N=1022), False, 4),
    ("kernel f(x: f32[N], y: f32[N]) -> f32[N] { return x * y }", dict(N=(1 << 26) + 1), False, 4),
    ("kernel f(x: f32[N], y: f32[N]) -> f32[N] { return x * y }", dict(N=1 << 20), False, 2),
])
def test_pointwise_defaults_walk_rows_where_math_is_costly_or_there_are_no_vectors(src, extents, outer, items):
    """pointwise.outer_items, flat_items: a broadcast input (b of x[M, N] + b[N]) under long
    math (gelu), or of 16-bit single elements, is loaded once for 8 rows a thread, where a
    row's vectors fill half a block and the blocks are as many as the SMs; memory-bound math
    walks flat, a block moving BLOCK_BYTES of its operands over every loop (more items a
    thread where vectors are narrow or there are none)."""
    k = tiledsl.compile(src)
    [ks] = sources_for(k, extents)
    assert (ks.schedule.outer, ks.schedule.items) == (outer, items), ks.name


@pytest.mark.parametrize("src,extents,vec,items,outer", [
    ("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return relu(x + b) }", dict(M=32768, N=781), 8, 4, True),
    (BIAS_GELU.format(t="bf16"), dict(M=32768, N=781), 8, 4, True),
    # runs of 8 rows whose blocks would not fill the GPU (2 groups of 4 runs, 7 blocks each): flat
    (BIAS_GELU.format(t="bf16"), dict(M=64, N=781), 8, 2, False),
    # an input without the outermost loop of two loops (p[T, C]): runs of rows of T x C
    ("kernel f(x: bf16[B, T, C], p: bf16[T, C]) -> bf16[B, T, C] { return x + p }", dict(B=32, T=1023, C=1023),
     8, 4, True),
    ("kernel f(x: bf16[N], y: bf16[N]) -> bf16[N] { return x + y }", dict(N=(1 << 26) + 1), 8, 2, False),
    ("kernel f(x: i8[N]) -> i8[N] { return x + x }", dict(N=(1 << 26) + 2), 4, 4, False),    # (8-bit: EIGHT_BIT_VECTOR)
    ("kernel f(x: f16[M, N], s: f16[M]) -> f16[M, N] { return x * s }", dict(M=32768, N=1001), 8, 2, False),    # (s has the outermost loop)
    # two operands gathered lane by lane: GATHERED_LANES keeps the vectors to 4, a block moving 6 KB
    ("kernel f(x: f16[M, N], s: f16[N], t: f16[N]) -> f16[M, N] { return x * s + t }",
     dict(M=16384, N=1001), 4, 4, True),
    # whole-row vectors of 4 bytes or more stay: f32 single elements, bf16 pairs, i8 quads
    ("kernel f(x: f32[M, N], b: f32[N]) -> f32[M, N] { return x + b }", dict(M=16384, N=1021), 0, 8, False),
    ("kernel f(x: bf16[N], y: bf16[N]) -> bf16[N] { return x + y }", dict(N=(1 << 26) + 2), 0, 4, False),
    ("kernel f(x: i8[N]) -> i8[N] { return x + x }", dict(N=(1 << 26) + 4), 0, 4, False),
    # a broadcast of 8 MiB or more is still loaded once for 8 rows (outer_items), odd rows or not
    ("kernel f(x: bf16[B, S], p: bf16[S]) -> bf16[B, S] { return x + p }", dict(B=8, S=(1 << 22) + 13), 0, 8, True),
])
def test_pointwise_defaults_straddle_rows_where_whole_row_vectors_are_narrower_than_4_bytes(src, extents, vec, items,
                                                                                         outer):
    """pointwise.straddle_default: where the innermost extent leaves whole-row vectors of
    fewer than 4 bytes, the default's vectors (`vec`, 0: none straddle) run across rows; in
    runs of vec rows, `items` a thread (outer, pointwise.straddled_runs), where an input
    without the outermost loop is read and the runs' blocks fill the GPU."""
    k = tiledsl.compile(src)
    [ks] = sources_for(k, extents)
    s = ks.schedule
    assert (s.vec if s.straddle else 0, s.items, s.outer) == (vec, items, outer), ks.name
    assert "_sd_" in ks.name if vec else "_sd_" not in ks.name


@pytest.mark.parametrize("src,n,block", [
    ("kernel f(x: i8[N]) -> i8[N] { return x + x }", 1 << 26, 256),     # 2 items of 8 (registers): 4 KB at 128
    ("kernel f(x: i8[N]) -> i8[N] { return x + x }", (1 << 26) + 1, 256),   # the same, straddling
    ("kernel f(x: i8[N]) -> i8[N] { return x + x }", 1 << 18, 128),     # 256 threads: 64 blocks, under the SMs
    ("kernel f(x: i8[N]) -> f16[N] { return f16(x) * 0.5 }", 1 << 26, 128),     # 3 bytes an element: 6 KB
    ("kernel f(x: f32[N]) -> f32[N] { return x * 2.0 }", 1 << 26, 128),
])
def test_a_flat_walk_whose_registers_cap_its_items_takes_more_threads(src, n, block):
    """pointwise.flat_block: where a thread's registers hold its items under 8 and a block of
    128 moves less than BLOCK_BYTES, the block doubles while the blocks stay as many as the SMs."""
    [ks] = sources_for(tiledsl.compile(src), dict(N=n))
    assert ks.schedule.block == block, ks.name


EIGHT_BIT_PROGRAMS = [   # (source, extents, (vec, items, block, outer, straddle)) of the default
    ("kernel f(x: i8[N]) -> i8[N] { return x + x }", dict(N=1 << 26), (4, 4, 256, False, False)),
    ("kernel f(x: i8[N]) -> i8[N] { return x + x }", dict(N=(1 << 26) + 1), (4, 4, 256, False, True)),
    ("kernel f(x: i8[M, N], b: i8[N]) -> i8[M, N] { return x + b }", dict(M=16384, N=4096), (4, 4, 256, True, False)),
    ("kernel f(x: i8[M, N], s: f16[N]) -> f16[M, N] { return f16(x) * s }", dict(M=16384, N=4096),
     (4, 4, 256, True, False)),
    ("kernel f(x: i8[M, N], s: f32[N]) -> f32[M, N] { return f32(x) * s }", dict(M=16384, N=4096),
     (4, 4, 256, True, False)),
    # a 16-bit stream beside a broadcast stays flat, in 16-byte vectors
    ("kernel f(x: f16[M, N], s: f32[N]) -> i8[M, N] { return i8(x * s) }", dict(M=16384, N=4096),
     (8, 2, 128, False, False)),
    # rows of fewer vectors than half a block of 256 stay flat: a walk along rows would leave most
    # of its threads idle (the row's vectors are a block's lanes)
    ("kernel f(x: i8[M, N], b: i8[N]) -> i8[M, N] { return x + b }", dict(M=16384, N=300), (4, 2, 512, False, False)),
]


@pytest.mark.parametrize("src,extents,want", EIGHT_BIT_PROGRAMS)
def test_eight_bit_streams_load_a_word_a_thread_in_blocks_of_256_and_walk_rows_beside_a_broadcast(src, extents, want):
    """pointwise.eight_bit_stream: where every streamed input is 8-bit, vectors of 4 (a 32-bit
    load), 4 items, 256 threads; walking rows (outer) where a broadcast is read, rather than
    dividing each vector's index to find its column. Compiled without spills."""
    [ks] = sources_for(tiledsl.compile(src), extents)
    s = ks.schedule
    assert (s.vec, s.items, s.block, s.outer, s.straddle) == want, ks.name
    usage = next(iter(toolchain.compile_cuda(ks.source, arch="sm_90a").resources.values()))
    assert usage.local_bytes == 0 and usage.spill_stores == 0, (ks.name, usage)


_WIDE = test_gpu_memory.WIDENING      # results wider than the inputs along the rows
WIDENING_PROGRAMS = [(_WIDE[0], dict(M=16384, N=4096)), (_WIDE[0], dict(M=16384, N=1001)),   # (odd rows: one loop)
                     (_WIDE[1], dict(M=16384, N=4096)), (_WIDE[2], dict(M=4096, N=8192)),
                     (_WIDE[3], dict(M=65536, N=1024))]


@pytest.mark.parametrize("src,extents", WIDENING_PROGRAMS)
def test_a_result_wider_than_its_inputs_is_stored_16_bytes_a_thread(src, extents):
    """problem.vector_bound: the vector is sized by the narrow input (16 bytes of f16 is 8
    elements) but capped so each thread's store moves 16 bytes: two halves 16 bytes apart wrote
    half of every sector a warp's store touched (f32(x) of f16 16384x4096 on an H200: 0.69x copy
    at vectors of 8, 0.94x at 4). Loads of 8 bytes, stores of 16, and no spills."""
    k = tiledsl.compile(src)
    [ks] = sources_for(k, extents)
    assert ks.schedule.vec == 4, ks.name
    assert "tdsl::store<float, 4>(" in ks.source and "tdsl::store<float, 8>(" not in ks.source
    assert ks.schedule.items * ks.schedule.vec >= 8, ks.name   # (bytes in flight kept)
    usage = next(iter(toolchain.compile_cuda(ks.source, arch="sm_90a").resources.values()))
    assert usage.local_bytes == 0 and usage.spill_stores == 0, (ks.name, usage)


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_a_bias_and_gelu_walking_rows_computes_in_fewer_instructions_an_element(dtype):
    """The default outer walk of gelu(x + b) finds b's column once a thread, where the flat
    walk divided each vector's index by N: fewer SASS instructions an element (ptxas sm_90a,
    2026-12-02: bf16 448 for 16 elements flat, under 26 an element walking 8 rows), and no
    spills at 8 rows."""
    k = tiledsl.compile(BIAS_GELU.format(t=dtype))
    extents = dict(M=8192, N=8192)
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, extents, frozenset(), 132, "sm_90a")
    walked = default(p)
    flat = replace(walked, outer=False, items=2)
    per_element = {}
    for s in (walked, flat):
        compiled = toolchain.compile_cuda(render(k.graph, g, lay, s, 1).source, arch="sm_90a")
        usage = next(iter(compiled.resources.values()))
        assert usage.local_bytes == 0 and usage.spill_stores == 0, (s.tag, usage)
        count = sum(toolchain.sass_opcodes(toolchain.sass(compiled.cubin)).values())
        per_element[s.tag] = count / (s.items * s.vec)
    assert walked.outer and per_element[walked.tag] < 0.95 * per_element[flat.tag], per_element


@pytest.mark.parametrize("src,extents", [
    ("kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return relu(x + b) }", dict(M=8192, N=16384)),
    ("kernel f(x: f32[B, T, C], p: f32[T, C], s: f32[B]) -> f32[B, T, C] { return x * s + p }",
     dict(B=3, T=100, C=1000)),
])
def test_a_flat_walk_addresses_operands_over_every_loop_by_the_flat_index(src, extents):
    """codegen.cuda._Renderer.offset: in a flat pointwise walk, the operands over every loop (x and the
    result) sit at the walk's own index; only a broadcast operand's address needs the
    coordinates, so the store's loop divides by no extent. Before, the store recomputed
    every coordinate: 520 SASS instructions for 16 elements of a bias and gelu, 448 after
    (ptxas sm_90a; such costly math now walks the outermost loop by default: below)."""
    k = tiledsl.compile(src)
    [ks] = sources_for(k, extents)
    assert ks.schedule.kind == "pointwise" and not ks.schedule.outer, ks.name
    store_loop = ks.source[ks.source.rindex("#pragma unroll"):]
    assert "in0 + t * " in ks.source and "(out0 + t * " in store_loop, ks.source
    stored = [line for line in store_loop.splitlines() if "out0" in line]
    assert stored and all("c0" not in line and "c1" not in line for line in stored), stored


@pytest.mark.parametrize("arch", ARCHS)
def test_a_float_cast_to_a_narrow_integer_is_one_hardware_conversion(arch):
    """tdsl::to_int from f32 is PTX's cvt.rzi, which saturates to the destination's range and
    takes NaN to 0 (the GPU test of casts checks every edge): one F2I.S8 an element of an
    int8 quantization, no compares. Before, the generic cast's range checks took 96 FSETP for
    32 elements (912 SASS instructions against 624; H200 16384x4096 58.2 -> 51.2 us)."""
    src = ("kernel f(x: bf16[M, N]) -> (i8[M, N], f32[M]) {\n scale = max(abs(x), axis=N) / 127\n"
           " return i8(x / scale), scale\n}")
    k = tiledsl.compile(src)
    [ks] = sources_for(k, dict(M=16384, N=4096))
    sass = toolchain.sass(toolchain.compile_cuda(ks.source, arch=arch).cubin)
    elements = ks.schedule.items * ks.schedule.vec
    conversions = [line for line in sass.splitlines() if "F2I" in line]
    assert len(conversions) == elements and all("F2I.S8" in line for line in conversions), conversions[:2]
    assert sass.count("FSETP") < elements // 4, sass.count("FSETP")


CAUSAL_SOFTMAX = ("kernel f(s: f16[B, Q, K], scale: f32 = 0.088388, neg: f32 = -inf) -> f16[B, Q, K] {\n"
                  " z = where(idx(K) <= idx(Q), s * scale, neg)\n e = exp(z - max(z, axis=K))\n"
                  " return e / sum(e, axis=K)\n}")


@pytest.mark.parametrize("src,guards", [
    (CAUSAL_SOFTMAX, {0: [("le", True)]}),
    # the other branch, an offset, a cast on the way, a band (two conditions, both asked)
    ("kernel f(x: f16[M, N]) -> f32[M] { return sum(where(idx(N) > idx(M) + 3, 0.0, f32(x) * 2.0), axis=N) }",
     {0: [("gt", False)]}),
    ("kernel f(x: f32[M, N]) -> f32[M] { return sum(where(logical_and(idx(N) <= idx(M) + 2, "
     "idx(N) + 2 >= idx(M)), x, 0.0), axis=N) }", {0: [("and", True)]}),
    # needed everywhere: read beside the where, in its condition, stored, in both branches
    ("kernel f(x: f32[M, N]) -> f32[M] { return sum(where(idx(N) > idx(M), 0.0, x) + x, axis=N) }", {}),
    ("kernel f(x: f32[M, N]) -> f32[M] { return sum(where(x > 1.0, 0.0, x), axis=N) }", {}),
    ("kernel f(x: f32[M, N]) -> f32[M, N] { return x * sum(where(idx(N) > idx(M), 0.0, x), axis=N) }", {}),
    ("kernel f(x: f32[M, N]) -> f32[M] { return sum(where(idx(N) > idx(M), x * 3.0, x), axis=N) }", {}),
    # a condition on another tensor guards nothing; one of a scalar does
    ("kernel f(x: f32[M, N], y: f32[N]) -> f32[M] { return sum(where(y > 0.0, x, 0.0), axis=N) }", {}),
    ("kernel f(x: f32[M, N], t: i64) -> f32[M] { return sum(where(idx(N) < t, x, 0.0), axis=N) }",
     {0: [("lt", True)]}),
])
def test_inputs_needed_only_where_an_index_condition_holds(src, guards):
    """schedule/guards.load_guards: the inputs that reach every result and reduction only through
    a where's branch whose condition needs no memory, with those conditions."""
    k = tiledsl.compile(src)
    [g] = [g for g in partition(k.graph) if g.kind == "reduce"]
    of = load_guards(g)
    found = {i: [(c.op, taken) for c, taken in of[inp.id]] for i, inp in enumerate(g.inputs) if inp.id in of}
    assert found == guards
    shown = describe([g])      # (tiledsl emit --stage schedule)
    assert ("only where" in shown) == bool(guards) and ("only where not" in shown) == (guards == {0: [("gt", False)]})


def test_a_condition_on_a_full_reduction_another_kernel_stored_guards_no_load():
    """sum(p0) is a 0-d value the first kernel stores and the pointwise one reads with its
    elements: a where on it guards no load (before 2026-12-03 the guard read it undefined, and
    NVRTC rejected the kernel; tests/test_codegen_fuzz.py found it). Every kernel compiles."""
    k = tiledsl.compile("kernel f(p0: f16[M], p1: f16[M, N], p2: f16) -> f64[M, N] "
                        "{ return p0 + where(sum(p0) < p2, p0, p1) }")
    groups = partition(k.graph)
    assert [g.kind for g in groups] == ["reduce", "pointwise"]
    assert load_guards(groups[1]) == {}
    for ks in sources_for(k, dict(M=5, N=3)):
        assert toolchain.compile_cuda(ks.source, arch="sm_90a").cubin


@pytest.mark.parametrize("cond,taken,lane", [
    ("idx(N) <= idx(M)", True, 0), ("idx(N) <= idx(M)", False, -1), ("idx(N) + 2 >= idx(M)", True, -1),
    ("idx(M) < idx(N) - 1", True, -1), ("idx(M) >= idx(N) - 1", True, 0), ("f32(idx(N)) + 0.5 < 3.0", True, 0),
    ("logical_not(idx(N) > idx(M))", True, 0), ("idx(M) > 3", False, 0),
    ("idx(N) == idx(M)", True, None), ("f32(idx(N)) * 0.5 < 3.0", True, None), ("idx(N) + t < idx(M)", True, None),
    ("i32(idx(N)) < idx(M)", True, None), ("logical_and(idx(N) <= idx(M), idx(N) >= 2)", True, None),
])
def test_the_lane_that_decides_whether_a_masked_vector_is_needed(cond, taken, lane):
    """schedule/guards.deciding_lane: where a condition grows along the lanes, the branch it
    guards is needed on a prefix of a vector's lanes (the first decides) or a suffix (the last);
    elsewhere every lane is asked (an i64 index plus an unknown scalar may wrap around; an i32
    cast may too)."""
    k = tiledsl.compile(f"kernel f(x: f32[M, N], t: i64) -> f32[M] {{ return sum(where({cond}, x, 0.0), axis=N) }}")
    where = next(v for v in k.graph.values if v.op == "where")
    assert deciding_lane(where.operands[0], taken, {"N"}) == lane


def test_a_causal_softmax_reads_only_the_vectors_its_mask_keeps_and_scales_each_element_once():
    """A causal mask's scores past the diagonal reach no result: a vector of them whose first
    lane is masked is read from the tensor's start, which every such lane shares from L1, not
    from its own place (half the reads of a square row block leave HBM alone), and
    the masked, scaled value is kept for the exp's phase rather than computed again (each f16
    element widened once, not twice: 472 SASS instructions for 16 elements against 536, no branch;
    ptxas sm_90a)."""
    k = tiledsl.compile(CAUSAL_SOFTMAX)
    [ks] = sources_for(k, dict(B=32, Q=2048, K=2048))
    assert ks.schedule.keep and ks.schedule.vec == 8, ks.name
    load = ks.source[ks.source.index("bool need0 = false;"):]
    load = load[:load.index("tdsl::load<unsigned short, 8>") + 100]
    assert "const int e = 0;" in load and "in0 + (need0 ? " in load and "for (int e" not in load, load
    assert "keep8[j][e] = v8;" in ks.source and ks.source.count("tdsl::f16_to_f32(") == 1, ks.source
    sass = toolchain.sass(toolchain.compile_cuda(ks.source, arch="sm_90a").cubin)
    elements = ks.schedule.items * ks.schedule.vec
    assert sass.count("HADD2.F32") == elements, sass.count("HADD2.F32")


def test_few_long_rows_use_a_split_reduction():
    for src, extents in (PROGRAMS["column_sum_split"], PROGRAMS["total_split"]):
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        s = default(problem(g, plan_layout(g, k.graph), extents))
        assert s.kind == "reduce_split" and s.splits >= 2, s
    k = tiledsl.compile(PROGRAMS["softmax"][0])      # a full-size result cannot be split
    g = partition(k.graph)[0]
    assert default(problem(g, plan_layout(g, k.graph), dict(M=2, N=1 << 20))).kind == "reduce_row"


def test_unaligned_sizes_fall_back_to_narrow_vectors():
    k = tiledsl.compile(PROGRAMS["softmax"][0])
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    assert default(problem(g, lay, dict(M=3, N=781))).vec == 1      # odd rows: scalar access
    assert default(problem(g, lay, dict(M=3, N=1026))).vec == 2
    assert default(problem(g, lay, dict(M=3, N=1024))).vec == 4


def test_a_schedule_that_does_not_fit_is_rejected_with_a_reason():
    k = tiledsl.compile(PROGRAMS["softmax"][0])
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, dict(M=3, N=781))
    s = default(problem(g, lay, dict(M=3, N=1024)))
    assert "multiple of 4" in fits(p, s)


def _rows(name, extents):
    k = tiledsl.compile(PROGRAMS[name][0])
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    return k, g, lay, problem(g, lay, extents)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_row_ring_copies_rows_by_cp_async_and_reads_them_from_shared_memory(arch):
    """The ring's rows never pass through registers on their way in: the row input is read by
    LDGSTS (cp.async) into shared memory and LDS.128 out of it; hoisted f32 weights stay LDG."""
    k, g, lay, p = _rows("layernorm", dict(M=16384, N=4096))
    ring = Schedule("reduce_row", block=512, vec=8, items=1, row_threads=512, stages=3, blocks_per_sm=2)
    assert fits(p, ring) == ""
    plain = Schedule("reduce_row", block=512, vec=8, items=1, row_threads=512, blocks_per_sm=2)
    ops = {}
    for label, s in (("ring", ring), ("plain", plain)):
        ks, compiled, usage = _compile(k, g, lay, s, arch)
        assert usage.spill_stores == 0 and usage.local_bytes == 0
        ops[label] = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
        ops[label + "_smem"] = usage.shared_bytes

    def count(label, prefix):
        return sum(n for op, n in ops[label].items() if op.startswith(prefix))
    assert count("ring", "LDGSTS") >= 2 and count("plain", "LDGSTS") == 0
    assert count("ring", "LDS.128") >= 1 and count("ring", "LDGDEPBAR") >= 1
    assert count("ring", "LDG.E.128") < count("plain", "LDG.E.128")   # x left the register loads
    assert ops["ring_smem"] - ops["plain_smem"] == 3 * 512 * 16      # three 16-byte slots a thread


@pytest.mark.parametrize("name,vec,reductions", [("softmax", 4, 2), ("layernorm", 8, 2), ("rmsnorm_bf16", 8, 1)])
@pytest.mark.parametrize("form", [{}, {"prefetch": True}, {"stages": 2}], ids=["kept", "prefetch", "ring"])
def test_a_block_reduction_costs_one_barrier(name, vec, reductions, form):
    """Each block reduction's per-warp slots come in two sets that alternate rows take turns
    with, so a reduction needs one barrier, not a second to free its slots: the kernel's
    barriers are one per reduction, for a block holding its row in registers, prefetching
    its next row, or copying rows ahead through its ring."""
    k, g, lay, p = _rows(name, dict(M=16384, N=4096))
    s = Schedule("reduce_row", block=512, vec=vec, items=8 // vec, row_threads=512, blocks_per_sm=2, **form)
    assert fits(p, s) == ""
    ks, compiled, usage = _compile(k, g, lay, s, "sm_90a")
    assert usage.spill_stores == 0 and usage.local_bytes == 0
    assert "flip ^= 1" in ks.source
    ops = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
    assert sum(n for op, n in ops.items() if op.startswith("BAR.SYNC")) == reductions


@pytest.mark.parametrize("arch", ARCHS)
def test_unhoisted_row_invariant_inputs_are_loaded_after_the_reductions(arch):
    """layernorm's f32 weight and bias, not hoisted, are loaded where the output needs them,
    after both block reductions: before, they were loaded with the row and held 32 registers
    through the reductions (64 in all); now 48, and 40 without spills for 1536 threads."""
    k, g, lay, p = _rows("layernorm", dict(M=16384, N=4096))
    s = Schedule("reduce_row", block=256, vec=8, items=2, row_threads=256, hoist=False)
    ks, compiled, usage = _compile(k, g, lay, s, arch)
    lines = toolchain.sass(compiled.cubin).splitlines()
    barriers = [i for i, line in enumerate(lines) if "BAR.SYNC" in line]
    loads = [i for i, line in enumerate(lines) if re.search(r"\bLDG\.E\.128", line)]
    assert len(barriers) == 2      # two block reductions, a barrier each (alternating slots)
    assert len([i for i in loads if i < barriers[0]]) == 2          # the row: 2 x 16 bytes of f16
    assert len([i for i in loads if i > barriers[-1]]) == 8         # weight and bias: 2 x 2 x 32 bytes
    assert usage.registers <= 48 and usage.spill_stores == 0
    capped = replace(s, min_blocks=6)
    assert fits(p, capped) == "" and capped in candidates(p) and capped.tag.endswith("_nh_r40_x32")
    _, _, usage = _compile(k, g, lay, capped, arch)
    assert usage.registers <= 40 and usage.spill_stores == 0 and usage.local_bytes == 0
    # hoisted, the same weights stay in registers through the row: no 40-register candidate
    assert not any(c.hoist and c.min_blocks > 1 and c.items == 2 for c in candidates(p))


@pytest.mark.parametrize("arch", ARCHS)
def test_hoisted_16_bit_weights_stay_packed_through_the_row_loop(arch):
    """A prefetching persistent block holds layernorm's f16 weight and bias packed, two values a
    register, and widens them where they are used. Left to itself, ptxas widened them once ahead
    of the row loop and held both forms: 63 registers and 16 bytes of spills under the block's 64."""
    k, g, lay, p = _rows("layernorm_f16", dict(M=4096, N=8192))
    s = default(p)
    assert s.hoist and s.prefetch and s.blocks_per_sm
    ks, compiled, usage = _compile(k, g, lay, s, arch)
    assert re.findall(r"tdsl::keep_packed\((\w+)\[j\]\)", ks.source) == ["b1", "b2"]   # not the row's x
    assert usage.spill_stores == 0 and usage.spill_loads == 0 and usage.local_bytes == 0, usage
    assert usage.registers <= 56, usage
    # f32 weights are loaded as they are used: nothing to keep packed
    k32, g32, lay32, p32 = _rows("layernorm", dict(M=4096, N=8192))
    assert "keep_packed(" not in render(k32.graph, g32, lay32, default(p32), 1).source.split('extern "C"')[1]


def test_the_layernorm_default_follows_the_gpus_memory_bandwidth_per_sm():
    """Below 30 GB/s of peak HBM bandwidth per SM (an H100: 3.35 TB/s over 132 SMs), rows
    with f32 weights run a block per row with the weights loaded late and registers for
    1536 threads; with more (an H200: 4.9 TB/s) or unknown bandwidth, or few rows per SM,
    a persistent block hoists the weights and prefetches its next row. (On an H200, rows of
    65536x1024 take a warp each instead, rows.warp_row_bytes, and those of 16384x4096 a
    block of 128 threads, shares.late_wide_share.)"""
    k = tiledsl.compile((EXAMPLES / "layernorm.tdsl").read_text())
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    pick = lambda m, n, gbps: default(problem(g, lay, dict(M=m, N=n), hbm_gbps=gbps))  # noqa: E731
    for m, n in ((16384, 4096), (65536, 1024)):
        h100 = pick(m, n, 3352.0)
        assert not h100.hoist and not h100.prefetch and h100.blocks_per_sm == 0
        assert h100.min_blocks * h100.block == 1536 and h100.tag.endswith("_nh_r40_x32")
        for gbps in (0.0, 4915.0):
            other = pick(m, n, gbps)
            if (n, gbps) == (1024, 4915.0):     # 4096 bytes a row, under the H200's warp_row_bytes
                assert (other.row_threads, other.block) == (32, 128), other.tag
                continue
            if gbps:                            # 64 bytes a thread, weights late (shares.late_wide_share)
                assert (other.row_threads, other.items, other.hoist, other.blocks_per_sm) == (128, 4, False, 0)
                continue
            assert other.hoist and other.prefetch and other.blocks_per_sm > 0 and other.min_blocks == 1
    assert pick(4096, 8192, 3352.0).prefetch                    # 31 rows per SM
    # from rows.LATE_HEAVY_ROWS_PER_SM (40) rows per SM on an H100 the weights go late; on an
    # H200, or where the bandwidth is unknown, the persistent block stays up to 64
    heavy, late_rows = rows.LATE_HEAVY_ROWS_PER_SM * 132, rows.LATE_ROWS_PER_SM * 132
    assert pick(heavy - 132, 8192, 3352.0).prefetch
    # (at 256 threads of four vectors, not 512 of two: shares.halved_heavy_share)
    for m in (heavy, late_rows - 2 * 132, late_rows - 132):
        late = pick(m, 8192, 3352.0)
        assert late.tag.endswith("_t256_nh_x32") and not late.blocks_per_sm and not late.hoist, (m, late.tag)
        assert (late.items, late.min_blocks) == (4, 1), late.tag
        for gbps in (0.0, 4915.0):
            assert pick(m, 8192, gbps).prefetch, (m, gbps)
    # ... rows of fewer than rows.LATE_HEAVY_MIN_ROW (4096) elements keep the persistent block up to 64
    for n in (1024, 2048, rows.LATE_HEAVY_MIN_ROW - 8):
        assert pick(heavy, n, 3352.0).prefetch and pick(late_rows - 132, n, 3352.0).prefetch, n
        assert pick(late_rows, n, 3352.0).tag.endswith("_nh_r40_x32"), n
    assert pick(heavy, rows.LATE_HEAVY_MIN_ROW, 3352.0).tag.endswith("_nh_r40_x32")
    # f16 weights, twice the row rather than four times: late on any GPU at 64 rows per SM and
    # more, and at 31 rows per SM where the bandwidth per SM is low
    k16, g16, lay16, _ = _rows("layernorm_f16", dict(M=4096, N=8192))
    pick16 = lambda m, n, gbps: default(problem(g16, lay16, dict(M=m, N=n), hbm_gbps=gbps))  # noqa: E731
    for m, n, gbps in ((4096, 8192, 3352.0), (16384, 4096, 3352.0), (16384, 4096, 0.0), (65536, 1024, 0.0)):
        late = pick16(m, n, gbps)
        assert late.tag.endswith("_nh_r40_x32") and not late.blocks_per_sm and not late.hoist
    assert pick16(16384, 4096, 4915.0).tag.endswith("_t128_nh_x32")       # shares.late_wide_share
    assert pick16(4096, 8192, 4915.0).prefetch and pick16(4096, 8192, 0.0).prefetch
    rms = tiledsl.compile((EXAMPLES / "rmsnorm.tdsl").read_text())   # an f16 weight is not hoisted anyway
    g2 = partition(rms.graph)[0]
    p2 = problem(g2, plan_layout(g2, rms.graph), dict(M=16384, N=4096), hbm_gbps=3352.0)
    assert default(p2) == default(replace(p2, hbm_gbps=0.0))


def _norm_default(name: str, m: int, n: int, gbps: float):
    """(problem, default schedule) of a row norm (or softmax) at m x n on a GPU of `gbps` peak HBM
    bandwidth."""
    k = _norm_program(name)
    g = partition(k.graph)[0]
    p = problem(g, plan_layout(g, k.graph), dict(M=m, N=n), hbm_gbps=gbps)
    return p, default(p)


@functools.lru_cache(maxsize=None)
def _norm_program(name: str):
    return tiledsl.compile({"layernorm": (EXAMPLES / "layernorm.tdsl").read_text(), "layernorm16": LAYERNORM16,
                            "layernorm_bf16": LAYERNORM16.replace("f16", "bf16"),
                            "layernorm_bf16_f32w": (EXAMPLES / "layernorm.tdsl").read_text().replace("f16", "bf16"),
                            "layernorm_f32": (EXAMPLES / "layernorm.tdsl").read_text().replace("f16", "f32"),
                            "layernorm_costly_weights": "kernel c(x: f16[M, N], w: f32[N], b: f32[N]) -> f16[M, N] {\n"
                                                        " return (x - mean(x, axis=N)) * exp(w) + b\n}",
                            "softmax": (EXAMPLES / "softmax.tdsl").read_text(),
                            "softmax_f16": (EXAMPLES / "softmax.tdsl").read_text().replace("f32[M, N]", "f16[M, N]"),
                            "rmsnorm_f32": (EXAMPLES / "rmsnorm.tdsl").read_text().replace("f16", "f32"),
                            "rmsnorm": (EXAMPLES / "rmsnorm.tdsl").read_text()}[name])


def _assert_a_block_a_row_with_late_weights(name: str, m: int, n: int, threads: int, items: int) -> None:
    """The H200's default (4800 GB/s) at m x n: a block a row of `threads` threads holding
    `items` vectors of 8 each, its weights loaded late, no persistent grid, nothing kept."""
    p, s = _norm_default(name, m, n, 4800.0)
    assert (s.block, s.row_threads, s.items, s.vec) == (threads, threads, items, 8), (name, m, n, s.tag)
    assert not s.hoist and not s.prefetch and not s.blocks_per_sm and not s.keep, s.tag
    [launch] = launches(p, s)
    assert launch.grid[0] == m, s.tag


def test_many_16_bit_rows_with_heavy_weights_take_64_bytes_a_thread_and_load_the_weights_late():
    """shares.late_wide_share: on a GPU with much bandwidth per SM and at least 64 rows an SM, a
    16-bit row whose weights outweigh it (layernorm with f32 or f16 weight and bias) takes a
    block a row of at most 128 threads holding 4 or more vectors each, its weights loaded late,
    no persistent grid; an H100's bandwidth per SM, fewer rows, and rmsnorm (weights lighter
    than the row) keep their rules. The H200's figures are in the rule's docstring."""
    for name in ("layernorm", "layernorm16", "layernorm_bf16"):
        for (m, n), (threads, items) in {(16384, 4096): (128, 4), (16384, 8192): (128, 8), (16384, 3072): (64, 6),
                                         (8448, 5120): (128, 5), (32768, 2048): (64, 4)}.items():
            _assert_a_block_a_row_with_late_weights(name, m, n, threads, items)
            assert _norm_default(name, m, n, 3352.0)[1] != _norm_default(name, m, n, 4800.0)[1], (name, m, n)
        assert _norm_default(name, 4096, 8192, 4800.0)[1].row_threads == 512, name    # 31 rows an SM: persistent
    for m, n in ((16384, 4096), (16384, 3072)):         # rmsnorm's f16 weight is lighter than the row
        assert _norm_default("rmsnorm", m, n, 4800.0)[1].row_threads == 256


def test_fewer_16_bit_rows_with_heavy_weights_and_48_bytes_a_thread_take_half_the_threads():
    """shares.halved_late_share: on a GPU with much bandwidth per SM, with 24 to 63 rows an SM (6 to
    63 where half is 256 threads or more), a 16-bit row whose weights outweigh it and whose default
    share is three vectors a thread (48 bytes) takes half the threads, five or six vectors each, its
    weights loaded late, a block a row. Elsewhere (an H100, fewer rows, other shares, rmsnorm's
    lighter weight) the rules before it stand. The H200's figures are in the rule's docstring."""
    for name in ("layernorm", "layernorm16", "layernorm_bf16"):
        for (m, n), (threads, items) in {(4096, 6144): (128, 6), (8192, 6144): (128, 6), (4096, 5120): (128, 5),
                                         (4096, 10240): (256, 5), (4096, 12288): (256, 6),
                                         (3200, 5128): (128, 6)}.items():
            _assert_a_block_a_row_with_late_weights(name, m, n, threads, items)
            h100 = _norm_default(name, m, n, 3352.0)[1]
            assert h100.items == 3 and h100.row_threads == 2 * threads, h100.tag
        for (m, n), (threads, items) in {(2048, 12288): (256, 6), (1024, 10240): (256, 5),
                                         (3000, 8200): (256, 5)}.items():     # 7 to 23 rows an SM
            _assert_a_block_a_row_with_late_weights(name, m, n, threads, items)
        for m, n in ((512, 12288), (768, 12288)):      # under 6 rows an SM: the rules before it
            threads = 1024 if name == "layernorm" and m == 768 else 512     # doubled_prefetch_pays
            assert _norm_default(name, m, n, 4800.0)[1].row_threads == threads, (name, m, n)
        # 15 rows an SM, 128 threads halved from 256: the rules before it, but fuller_block_pays
        s = _norm_default(name, 2048, 6144, 4800.0)[1]
        assert (s.row_threads, s.items) == ((512, 2) if name == "layernorm" else (256, 3)), (name, s.tag)
    for m, n in ((4096, 6144), (4096, 12288), (2048, 12288)):     # rmsnorm's f16 weight is lighter than the row
        assert _norm_default("rmsnorm", m, n, 4800.0)[1].items == 3


@pytest.mark.parametrize("arch", ARCHS)
def test_16_bit_rows_with_heavy_weights_and_64_bytes_a_thread_at_512_take_256_threads(arch):
    """shares.halved_late_share at 64 bytes: on a GPU with much bandwidth per SM, from 6 to 63 rows an
    SM or from 2 to 4 (one wave of blocks of 512), a 16-bit row whose weights outweigh it and that
    512 threads would read four vectors each of (rows of 13000 to 16384), where
    doubled_prefetch_pays does not take it to 1024 threads, goes to a block a row of 256 threads,
    seven or eight vectors each, its weights loaded late. An H100, rmsnorm's lighter weight, more
    than one wave under 6 rows an SM, fewer than 2 rows an SM, and shares of 64 bytes at 256 threads
    keep the rules before it."""
    for name in ("layernorm16", "layernorm_bf16", "layernorm"):
        for (m, n), items in {(6144, 16384): 8, (8000, 16384): 8, (5000, 14336): 7, (7000, 13000): 7}.items():
            _assert_a_block_a_row_with_late_weights(name, m, n, 256, items)
            assert _norm_default(name, m, n, 3352.0)[1].row_threads == 512, (name, m, n)
    for name in ("layernorm16", "layernorm_bf16"):      # f16 weights: not doubled at 2 to 32 rows an SM
        for m in (2048, 4096):
            _assert_a_block_a_row_with_late_weights(name, m, 16384, 256, 8)
    for name in ("layernorm16", "layernorm_bf16", "layernorm", "layernorm_bf16_f32w"):    # one wave: 2 to 4 an SM
        for (m, n), items in {(300, 16384): 8, (512, 16384): 8, (420, 14336): 7, (528, 14336): 7}.items():
            _assert_a_block_a_row_with_late_weights(name, m, n, 256, items)
            assert _norm_default(name, m, n, 3352.0)[1].row_threads == 512, (name, m, n)
        for m, n in ((263, 16384), (600, 14336), (700, 14336)):      # under 2 an SM; beyond one wave, under 6
            assert _norm_default(name, m, n, 4800.0)[1].row_threads in (512, 1024), (name, m, n)
    assert _norm_default("rmsnorm", 512, 16384, 4800.0)[1].row_threads == 512
    for name, m in (("layernorm16", 4096), ("layernorm", 6144), ("layernorm_bf16", 2048)):   # ptxas: no spills
        k = _norm_program(name)
        g = partition(k.graph)[0]
        _, _, usage = _compile(k, g, plan_layout(g, k.graph), _norm_default(name, m, 16384, 4800.0)[1], arch)
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (name, usage)
    assert _norm_default("layernorm", 4096, 16384, 4800.0)[1].row_threads == 1024       # doubled_prefetch_pays
    assert _norm_default("rmsnorm", 4096, 16384, 4800.0)[1].row_threads == 512
    for name in ("layernorm16", "layernorm"):       # 64 rows an SM and more: not measured, the rules before it
        assert _norm_default(name, 8448, 16384, 4800.0)[1].row_threads == 512, name
    s = _norm_default("layernorm16", 16384, 8192, 4800.0)[1]       # 256 threads at 64 bytes: late_wide_share
    assert s.row_threads == 128, s.tag


@pytest.mark.parametrize("arch", ARCHS)
def test_prefetching_blocks_of_512_launch_only_what_an_sm_holds_at_once(arch):
    """shares.prefetching_blocks_per_sm: on a GPU with much bandwidth per SM, a persistent block of
    512 threads that prefetches its next row is launched as many times an SM as its registers let
    be resident at once (ptxas: over 42 registers, so two), not twice that; an H100, blocks of 256,
    and blocks that do not prefetch keep the SM's 2048 threads."""
    for name, src in (("layernorm", (EXAMPLES / "layernorm.tdsl").read_text()), ("layernorm16", LAYERNORM16)):
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        for (m, n), (h200, h100) in {(4096, 8192): (2, 4), (2048, 8192): (2, 4), (4096, 4096): (8, 8)}.items():
            p = problem(g, lay, dict(M=m, N=n), hbm_gbps=4800.0)
            s = default(p)
            assert s.prefetch and s.blocks_per_sm == h200, (name, m, n, s.tag, s.blocks_per_sm)
            assert launches(p, s)[0].grid[0] == h200 * p.sm_count
            slow = default(replace(p, hbm_gbps=3352.0))
            assert not slow.prefetch or slow.blocks_per_sm == h100, (name, m, n, slow.tag)
            if s.block == 512:
                _, _, usage = _compile(k, g, lay, s, arch)
                words = -(-usage.registers // 8) * 8      # registers are granted 8 a thread at a time
                assert 65536 // (512 * words) == h200 and usage.spill_stores == 0, usage
        held = default(problem(g, lay, dict(M=768, N=12288), hbm_gbps=4800.0))
        if name == "layernorm16":       # no prefetch at 512 threads (doubled_prefetch_pays: not f16 weights)
            assert held.block == 512 and not held.prefetch and held.blocks_per_sm in (0, 4), held.tag


def test_few_f16_rows_with_weights_twice_as_heavy_keep_512_threads_and_prefetch():
    """rows.fuller_block_pays: on a GPU with much bandwidth per SM, with 5 to 23 rows an SM, an f16
    row in vectors of 8 whose weights weigh more than twice the row (layernorm's f32 weight and
    bias) keeps 512 threads at two vectors each, its weights hoisted and the next row prefetched by
    a persistent block, where 512 threads leave at most 3/8 of their vector slots idle; fuller_block's
    256 threads stand for bf16 rows, f16 weights, rows of 4104, fewer or more rows, and an H100."""
    for m in (768, 2048, 3072):
        for n in (5120, 6144):
            s = _norm_default("layernorm", m, n, 4800.0)[1]
            assert (s.row_threads, s.items, s.hoist, s.prefetch, s.blocks_per_sm) == (512, 2, True, True, 2), s.tag
        for name, m_, n, gbps in (("layernorm_bf16", m, 6144, 4800.0), ("layernorm16", m, 6144, 4800.0),
                                  ("layernorm", m, 4104, 4800.0), ("layernorm", m, 6144, 3352.0)):
            assert _norm_default(name, m_, n, gbps)[1].row_threads == 256, (name, m_, n, gbps)
    for m in (512, 4096):       # 3.9 rows an SM; 31 (halved_late_share: 128 threads)
        assert _norm_default("layernorm", m, 6144, 4800.0)[1].row_threads in (128, 256), m


@pytest.mark.parametrize("arch", ARCHS)
def test_few_long_rows_with_heavy_weights_take_a_prefetching_block_of_1024_once_an_sm(arch):
    """rows.doubled_prefetch_pays: on a GPU with much bandwidth per SM, with 4 to 12 rows an SM (to
    32 where at most a fifth of the slots is idle), a row that 512 threads hold too much of to
    prefetch, whose weights outweigh it more than twice (f16 or bf16 rows with f32 weight and
    bias) with at most a quarter of 1024 threads' slots idle, or twice with none idle, goes to a
    persistent block of 1024 threads that hoists the weights and prefetches its next row,
    launched once an SM: ptxas gives it registers for exactly one resident block and no spills.
    More or fewer rows, 3/8 of the slots idle, f16 weights with a quarter idle, rmsnorm's light
    weight, pinned stages, weights under costly math and an H100 keep the rules before it."""
    cases = {("layernorm", 768, 12288): 2, ("layernorm", 1024, 12288): 2, ("layernorm", 1536, 12288): 2,
             ("layernorm", 1024, 14336): 2, ("layernorm", 768, 16384): 2, ("layernorm_bf16_f32w", 1024, 12288): 2,
             ("layernorm_f32", 1024, 12288): 3, ("layernorm16", 1024, 16384): 2,
             ("layernorm", 529, 16384): 2, ("layernorm", 660, 16384): 2, ("layernorm", 600, 12288): 2,   # 4 to 5
             ("layernorm_bf16_f32w", 560, 12288): 2, ("layernorm_f32", 600, 12288): 3, ("layernorm16", 600, 16384): 2}
    for (name, m, n), items in cases.items():
        p, s = _norm_default(name, m, n, 4800.0)
        assert (s.row_threads, s.items, s.hoist, s.prefetch, s.blocks_per_sm) == (1024, items, True, True, 1), \
            (name, m, n, s.tag)
        assert launches(p, s)[0].grid[0] == p.sm_count, s.tag
        for stages in (1, 2):       # pinned: no prefetch (stages = 1) or a ring, so 512 threads
            assert default(p, Hints(stages=stages)).row_threads <= 512, (name, m, n, stages)
        if (m, n) in ((1024, 12288), (1024, 16384)):
            k = _norm_program(name)
            g = partition(k.graph)[0]
            _, _, usage = _compile(k, g, plan_layout(g, k.graph), s, arch)
            assert usage.registers <= 64 and usage.spill_stores == 0 and usage.local_bytes == 0, (name, usage)
    for name, m, n, gbps in (("layernorm", 1600, 12288, 4800.0), ("layernorm", 2048, 12288, 4800.0),
                             ("layernorm", 528, 16384, 4800.0),         # 4 rows an SM: one wave of 512s
                             ("layernorm", 1024, 10240, 4800.0), ("layernorm16", 1024, 12288, 4800.0),
                             ("layernorm", 512, 12288, 4800.0), ("layernorm", 1024, 12288, 3352.0),
                             ("rmsnorm", 1024, 16384, 4800.0)):
        s = _norm_default(name, m, n, gbps)[1]
        assert s.row_threads <= 512, (name, m, n, gbps, s.tag)
    # weights under costly math are loaded where used (rows.hoist_choices), so nothing to prefetch beside
    s = _norm_default("layernorm_costly_weights", 1024, 12288, 4800.0)[1]
    assert s.row_threads <= 512 and not s.hoist, s.tag


def test_few_f32_rows_without_weights_take_256_threads_at_the_same_idle_slots():
    """rows.few_plain_rows: on a GPU with much bandwidth per SM, with 4 to 12 rows an SM, an f32
    softmax row that 512 threads would read 64 bytes each of, keeping their exps, and 256 threads
    hold with the same idle slots goes to 256 threads holding twice as much, its exps not kept;
    more or fewer rows, shares of 48 bytes, 16-bit rows, rows with weights and an H100 keep 512."""
    for (m, n), items in {(661, 8192): 8, (1024, 8192): 8, (1584, 8192): 8, (1024, 8188): 8, (529, 8192): 8,
                          (600, 7680): 8}.items():
        s = _norm_default("softmax", m, n, 4800.0)[1]
        assert (s.row_threads, s.items, s.vec, s.keep) == (256, items, 4, False), (m, n, s.tag)
        assert _norm_default("softmax", m, n, 3352.0)[1].row_threads == 512, (m, n)
    for m, n in ((528, 8192), (1585, 8192), (1024, 6144)):     # too few or many rows; no kept exps at 512
        assert _norm_default("softmax", m, n, 4800.0)[1].row_threads == 512, (m, n)
    assert _norm_default("softmax_f16", 1024, 16384, 4800.0)[1].row_threads == 512
    for name, vec in (("softmax_f16", 8), ("rmsnorm_f32", 4)):      # 16-bit; weights
        assert not rows.few_plain_rows(_norm_default(name, 1024, 8192, 4800.0)[0], 8192 // vec, vec), name
    assert rows.few_plain_rows(_norm_default("softmax", 1024, 8192, 4800.0)[0], 2048, 4)


def _sass_steps(sass: str) -> list[tuple[int, str, int, int]]:
    """(address, instruction, scoreboard it sets when done or 7, scoreboards it waits on) of
    each SASS instruction, read from the control bits of its second 64-bit word (Volta and
    later: bits 41-63 hold stall 4, yield 1, write scoreboard 3, read scoreboard 3, wait mask 6)."""
    lines, steps = sass.splitlines(), []
    for i, line in enumerate(lines[:-1]):
        m = re.search(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* 0x", line)
        if m:
            control = int(re.search(r"0x([0-9a-f]{16})", lines[i + 1]).group(1), 16) >> 41
            steps.append((int(m.group(1), 16), m.group(2), (control >> 5) & 7, (control >> 11) & 0x3f))
    return steps


def _waits_on_the_next_row(sass: str) -> list[str]:
    """The instructions of a prefetching kernel's row loop, before the row's first reduction (its
    first shuffle), that wait on a scoreboard of the loop's loads: the next row's, which that
    loop waits for only when it moves them in (slow paths, CALLs, aside)."""
    steps = _sass_steps(sass)
    back = [(a, int(t, 16)) for a, text, _, _ in steps for t in re.findall(r"BRA (?:\S+, )?(0x[0-9a-f]+)$", text)
            if int(t, 16) < a]
    end, head = max(back, key=lambda b: b[0] - b[1])        # the outermost loop: the rows'
    body = [st for st in steps if head <= st[0] <= end]
    loads = [st for st in body if "LDG" in st[1]]
    boards = sum(1 << st[2] for st in {st[2]: st for st in loads if st[2] != 7}.values())
    first_shuffle = next(st[0] for st in body if "SHFL" in st[1])
    return [f"{a:#x} {text}" for a, text, _, wait in body
            if loads[0][0] < a < first_shuffle and wait & boards and not text.startswith("CALL")]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", ["layernorm", "layernorm16", "layernorm_bf16x", "layernorm_f32"])
def test_a_prefetching_row_is_reduced_without_waiting_for_the_next(name, arch, monkeypatch):
    """A persistent block that prefetches its next row reduces this one without waiting for the
    next row's loads (codegen/cuda.py, moves_prefetched_rows): loaded straight into its buffers, a bf16
    row's first read waited on the prefetch's scoreboard, and the prefetch overlapped nothing
    (layernorm 4096x8192 50.3 us against 39.2, H200). f16 rows (not moved) and bf16 and f32 rows
    with f32 weights (moved), in SASS; the checker itself is checked on the straight form of a bf16
    row with f32 weights. (bf16 rows with bf16 weights stay straight and may wait: moved, they
    spilled 16 bytes under NVRTC 13.0.)"""
    layernorm = (EXAMPLES / "layernorm.tdsl").read_text()
    src = {"layernorm_f32": layernorm.replace("f16", "f32"), "layernorm_bf16x": layernorm.replace("f16", "bf16")}
    k = tiledsl.compile(src[name]) if name in src else _norm_program(name)
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    prefetching = [s for m, n in ((4096, 8192), (4096, 4096), (2048, 6144))
                   if (s := default(problem(g, lay, dict(M=m, N=n), hbm_gbps=4800.0))).prefetch]
    assert len(prefetching) >= 2 - (name == "layernorm_f32"), name
    for s in prefetching:
        ks, compiled, usage = _compile(k, g, lay, s, arch)
        assert ("next < nrows ? next : row" in ks.source) == (name in ("layernorm_bf16x", "layernorm_f32"))
        assert _waits_on_the_next_row(toolchain.sass(compiled.cubin)) == [], (s.tag, arch)
        assert usage.spill_stores == 0, usage
    if name == "layernorm_bf16x" and arch == "sm_90a":     # straight, as before: it waits at once
        monkeypatch.setattr(cuda, "moves_prefetched_rows", lambda rows, weights: False)
        ks, compiled, _ = _compile(k, g, lay, s, arch)
        assert "next < nrows ? next : row" not in ks.source
        assert _waits_on_the_next_row(toolchain.sass(compiled.cubin)), s.tag


def test_many_rmsnorm_rows_of_two_vectors_a_thread_take_one_on_a_gpu_with_little_bandwidth_per_sm():
    """shares.single_vector_share: where each SM has little HBM bandwidth (an H100), a 16-bit row
    in vectors of 8 with weights no heavier than the row (rmsnorm's f16 weight) that the rules
    would give two vectors a thread, with at least 128 rows an SM, takes twice the threads at
    one vector each, up to 256, its weight hoisted. The H100's figures are in the rule's docstring."""
    for m, n, threads in ((65536, 1024, 128), (32768, 1024, 128), (32768, 2048, 256), (128 * 132, 1024, 128)):
        p, s = _norm_default("rmsnorm", m, n, 3352.0)
        assert (s.block, s.row_threads, s.items, s.vec, s.hoist) == (threads, threads, 1, 8, True), (m, n, s.tag)
        assert not s.blocks_per_sm and not s.prefetch, s.tag
        [launch] = launches(p, s)
        assert launch.grid[0] == m, s.tag
        for gbps in (0.0, 4800.0):      # unknown or much bandwidth per SM: not this rule
            assert _norm_default("rmsnorm", m, n, gbps)[1].items != 1, (m, n, gbps)
    for m, n in ((128 * 132 - 1, 1024),        # under 128 rows an SM
                 (32768, 4096),                # two vectors a thread at 256 threads: 512 once doubled
                 (65536, 512)):                # a warp a row
        assert _norm_default("rmsnorm", m, n, 3352.0)[1].items != 1, (m, n)
    for name in ("layernorm16", "layernorm", "softmax_f16", "rmsnorm_f32"):   # heavier weights, none, or f32 rows
        assert _norm_default(name, 65536, 1024, 3352.0)[1].items != 1, name


def test_many_rows_with_weights_over_twice_their_bytes_late_at_512_threads_take_256_on_a_gpu_with_little_bandwidth_per_sm():
    """shares.halved_heavy_share: where each SM has little HBM bandwidth (an H100), a 16-bit row in
    vectors of 8 whose weights take over twice its bytes (f32 weight and bias), loaded late by 512
    threads reading two vectors each (from 40 rows an SM, rows of 4096 or more), takes 256 threads
    reading four, the weights still late, registers budgeted for 1024 threads. Unknown or much
    bandwidth, f16 weights, rows that 256 threads read already and fewer rows keep their rules.
    The H100's figures are in the rule's docstring."""
    for name in ("layernorm", "layernorm_bf16_f32w"):
        # (rows of 6152 to 8192 elements: 512 threads read two vectors each, 256 would idle more slots)
        for m, n in ((8192, 8192), (16384, 8192), (6144, 8192), (40 * 132, 8192), (8192, 7168), (8192, 8000)):
            p, s = _norm_default(name, m, n, 3352.0)
            assert (s.block, s.row_threads, s.items, s.vec) == (256, 256, 4, 8), (name, m, n, s.tag)
            assert not s.hoist and not s.prefetch and not s.blocks_per_sm and s.min_blocks == 1, s.tag
            [launch] = launches(p, s)
            assert launch.grid[0] == m, s.tag
            for gbps in (0.0, 4800.0):
                assert _norm_default(name, m, n, gbps)[1] != s, (name, m, n, gbps)
        assert _norm_default(name, 40 * 132 - 1, 8192, 3352.0)[1].prefetch, name       # under 40 rows an SM
        assert _norm_default(name, 16384, 4096, 3352.0)[1].tag.endswith("_t256_nh_r40_x32"), name
    for name in ("layernorm16", "layernorm_bf16"):          # f16 weights: twice the row, no more
        assert _norm_default(name, 8192, 8192, 3352.0)[1].tag.endswith("_t512_nh_r40_x32"), name


def test_persistent_rows_with_nothing_to_prefetch_go_back_to_a_block_a_row_on_a_gpu_with_little_bandwidth_per_sm():
    """shares.unpinned_hoisted_rows: where each SM has little HBM bandwidth (an H100), a row whose
    weights, no heavier than twice it (all-f16 layernorm), a persistent block would hoist without
    prefetching (three vectors a thread) runs a block a row from 30 rows an SM, its weights still
    hoisted, registers budgeted for 1024 threads. Fewer rows, unknown or much bandwidth keep the
    persistent block (or their own rules). The H100's figures are in the rule's docstring."""
    for m, n, threads in ((16384, 6144, 256), (4096, 6144, 256), (8192, 5120, 256), (8192, 12288, 512),
                          (30 * 132, 10240, 512), (16384, 8200, 512)):
        p, s = _norm_default("layernorm16", m, n, 3352.0)
        assert (s.block, s.row_threads, s.items, s.vec) == (threads, threads, 3, 8), (m, n, s.tag)
        assert s.hoist and not s.prefetch and not s.blocks_per_sm and s.min_blocks == 1, s.tag
        [launch] = launches(p, s)
        assert launch.grid[0] == m, s.tag
        for gbps in (0.0, 4800.0):
            assert _norm_default("layernorm16", m, n, gbps)[1] != s, (m, n, gbps)
    for m, n in ((30 * 132 - 1, 6144), (2048, 12288), (700, 12288)):     # under 30 rows an SM
        s = _norm_default("layernorm16", m, n, 3352.0)[1]
        assert s.blocks_per_sm and s.hoist and not s.prefetch, (m, n, s.tag)


def test_row_defaults_leave_few_vector_slots_idle_and_keep_enough_bytes_in_flight():
    """Rows held by a block: 256 threads where 512 would leave more of the row's vector slots
    idle (rows.fuller_block), no kept values at 512 threads under 64 bytes a thread
    (shares.keep_pays); on GPUs with much bandwidth per SM, 16-bit rows that 512 threads read
    32 bytes each go to 256 threads reading 64 (shares.deeper_share_pays), and long packed
    16-bit rows keep exp's values (rows.packed_keeps_pay), held by twice the threads where the
    fewest would hold 64 elements each (rows.halved_packed_share). The H200's figures are in the
    rules' docstrings."""
    def pick(src, m, n, gbps):
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        return default(problem(g, plan_layout(g, k.graph), dict(M=m, N=n), hbm_gbps=gbps))
    softmax, rmsnorm = ((EXAMPLES / f"{name}.tdsl").read_text() for name in ("softmax", "rmsnorm"))
    softmax16 = softmax.replace("f32[M, N]", "f16[M, N]")
    for gbps in (3352.0, 4800.0, 0.0):
        s = pick(softmax, 8192, 5120, gbps)             # 1280 vectors: 1536 slots at 512, 1280 at 256
        assert (s.block, s.items, s.vec) == (256, 5, 4), s.tag
        s = pick(rmsnorm, 8192, 6144, gbps)             # 768 vectors: 1024 slots at 512, 768 at 256
        assert (s.block, s.items, s.vec) == (256, 3, 8), s.tag
        s = pick(softmax, 8192, 6144, gbps)             # 48 bytes a thread at 512: nothing kept
        assert (s.block, s.items, s.keep) == (512, 3, False), s.tag
        s = pick(softmax, 4096, 8192, gbps)             # 64 bytes a thread: kept
        assert (s.block, s.items, s.keep) == (512, 4, True), s.tag
    h100, h200 = pick(rmsnorm, 4096, 8192, 3352.0), pick(rmsnorm, 4096, 8192, 4800.0)
    assert (h100.block, h100.items, h100.keep, h100.hoist) == (512, 2, False, False), h100.tag
    assert (h200.block, h200.items, h200.keep, h200.hoist) == (256, 4, False, True), h200.tag
    h100, h200 = pick(softmax16, 16384, 4096, 3352.0), pick(softmax16, 16384, 4096, 4800.0)
    assert (h100.block, h100.items, h100.keep) == (128, 4, False), h100.tag
    assert (h200.block, h200.items, h200.keep) == (128, 4, True), h200.tag
    # 64 elements a thread at the fewest threads: twice the threads instead, kept below 512
    # (rows.halved_packed_share); on an H100's bandwidth per SM the fewest threads, nothing kept
    for n, h200_pick in ((8192, (256, 4, True)), (16384, (512, 4, False))):
        h100, h200 = pick(softmax16, 4096, n, 3352.0), pick(softmax16, 4096, n, 4800.0)
        assert (h100.block, h100.items, h100.keep) == (h200_pick[0] // 2, 8, False), h100.tag
        assert (h200.block, h200.items, h200.keep) == h200_pick, h200.tag
    for n in (5120, 6144, 32768):       # 40 and 48 elements a thread, or 1024 threads: as they were
        assert pick(softmax16, 4096, n, 4800.0) == pick(softmax16, 4096, n, 3352.0), n
    # bf16 rows keep exp's values at 512 threads too (no 16-bit approximation of their exp)
    softmax_bf16 = softmax.replace("f32[M, N]", "bf16[M, N]")
    for m, n in ((333, 16384), (4096, 16384), (2048, 15000)):
        h200 = pick(softmax_bf16, m, n, 4800.0)
        assert (h200.block, h200.items, h200.keep) == (512, 4, True), h200.tag
        assert not pick(softmax_bf16, m, n, 3352.0).keep, (m, n)


def test_elements_divided_by_a_row_value_multiply_by_its_reciprocal_once_per_row():
    """softmax's exp(x - max) / sum: one reciprocal per row, a multiply per element (a correctly
    rounded f32 divide is a dozen instructions); f64 and element-by-element divides stay divides."""
    k = tiledsl.compile((EXAMPLES / "softmax.tdsl").read_text())
    [ks] = sources_for(k, dict(M=32768, N=781))
    kernel = ks.source[ks.source.index('extern "C"'):]      # (the helpers' header aside)
    assert re.search(r"const float rcp(\d+) = 1\.0f / v\1;", kernel)
    assert " / " not in kernel.split("rcp", 1)[1].split("\n", 1)[1]     # no divide after it
    ops = toolchain.sass_opcodes(toolchain.sass(toolchain.compile_cuda(ks.source, arch="sm_90a").cubin))
    assert ops.get("FMNMX.NAN", 0) >= 8          # NaN-propagating max in one instruction
    for src in ("kernel f(x: f64[M, N]) -> f64[M, N] { return x / sum(x, axis=N) }",
                "kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] { return x / y + sum(x, axis=N) }"):
        [other] = sources_for(tiledsl.compile(src), dict(M=64, N=256))
        other = other.source[other.source.index('extern "C"'):]
        assert "rcp" not in other and " / " in other


def test_a_row_ring_that_cannot_run_is_rejected_with_a_reason():
    from tiledsl.errors import TdslCompileError, TdslScheduleError
    k, g, lay, p = _rows("softmax", dict(M=4096, N=781))      # odd rows: no 16-byte vectors
    s = Schedule("reduce_row", block=128, vec=1, items=8, row_threads=128, stages=2, blocks_per_sm=8)
    assert "16-byte vectors" in fits(p, s)
    with pytest.raises(TdslCompileError, match="16-byte vectors"):
        render(k.graph, g, lay, s)
    k, g, lay, p = _rows("softmax", dict(M=4096, N=16384))    # 64 KB of rows a stage
    s = Schedule("reduce_row", block=512, vec=4, items=8, row_threads=512, stages=2, blocks_per_sm=2)
    assert "KB of shared memory" in fits(p, s)
    for bad in (dict(stages=2, prefetch=True), dict(stages=5), dict(stages=2, items=0)):
        with pytest.raises(TdslScheduleError, match="ring"):
            Schedule("reduce_row", block=256, vec=4, row_threads=256, **{"items": 1, **bad})
    with pytest.raises(TdslScheduleError, match="cp.async stages"):
        Schedule("pointwise", block=256, vec=4, items=2, stages=2)


def test_stages_in_a_schedule_block_pins_a_row_ring_or_turns_the_prefetch_off():
    layernorm = open(EXAMPLES / "layernorm.tdsl").read()
    ring = tiledsl.compile(layernorm + "\nschedule layernorm { stages(3) }\n")
    [ks] = sources_for(ring, dict(M=16384, N=4096))
    assert ks.name.endswith("_s3_x32") and "cp_async16_ordered" in ks.source
    [ks] = sources_for(ring, dict(M=16384, N=8192))         # three stages would not fit: two
    assert ks.name.endswith("_s2_x32")
    off = tiledsl.compile(layernorm + "\nschedule layernorm { stages(1) }\n")
    [ks] = sources_for(off, dict(M=4096, N=8192))
    [default_ks] = sources_for(tiledsl.compile(layernorm), dict(M=4096, N=8192))
    assert "_p_" in default_ks.name and "_p_" not in ks.name and "_s" not in ks.name.split("_t512")[1]
    softmax = tiledsl.compile(open(EXAMPLES / "softmax.tdsl").read() + "\nschedule softmax { stages(4) }\n")
    [ks] = sources_for(softmax, dict(M=4096, N=781))         # scalar rows: no ring, the usual schedule
    [plain] = sources_for(tiledsl.compile(open(EXAMPLES / "softmax.tdsl").read()), dict(M=4096, N=781))
    assert ks.name == plain.name


def test_64_bit_indexing_past_2_to_the_31():
    k = tiledsl.compile("kernel inc(x: i8[N]) -> i8[N] { return x + 1 }")
    [small] = sources_for(k, dict(N=1000))
    [large] = sources_for(k, dict(N=2 ** 31 + 3))
    assert "typedef int idx_t" in small.source
    assert "typedef long long idx_t" in large.source
    compiled = toolchain.compile_cuda(large.source, arch="sm_90a")
    assert compiled.resources[large.name].spill_stores == 0


def test_32_bit_indices_only_where_a_step_past_the_end_still_fits():
    """An index steps up to a whole range past its end before its loop ends (a thread's chunk of a
    row, a grid-stride walk): 32-bit indices serve ranges up to 2**30 so that step cannot wrap.
    A single row of 2**31 - 5 took 32-bit indices until 2026-12-05, its guarded chunks
    (`first_c += 8 * TPR`) wrapping negative at the row's end."""
    row = tiledsl.compile("kernel total(x: f16[N]) -> f32 { return sum(f32(x), axis=N) }")
    inc = tiledsl.compile("kernel inc(x: i8[N]) -> i8[N] { return x + 1 }")
    for k, n, width in [(row, 2 ** 31 - 5, "long long"), (inc, 2 ** 31 - 1, "long long"),
                        (inc, 2 ** 30 + 1, "long long"), (inc, 2 ** 30, "int"), (row, 2 ** 30, "int")]:
        for ks in sources_for(k, dict(N=n)):
            assert f"typedef {width} idx_t" in ks.source, (k.graph.name, n, ks.name)


def test_generated_code_holds_no_user_text():
    # A user's names never reach CUDA: parameters and values are renamed.
    src = "kernel evil_name(secret_input: f32[Dim0]) -> f32[Dim0] { temp_value = secret_input * 3\n return temp_value }"
    k = tiledsl.compile(src)
    [ks] = sources_for(k, dict(Dim0=10))
    body = ks.source[ks.source.index('extern "C"'):]
    for word in ("secret_input", "temp_value", "Dim0"):
        assert word not in body
    assert re.search(r"\btdsl_evil_name_g0_", body)   # the kernel name: validated and prefixed


@pytest.mark.parametrize("value,dtype,expected", [
    (0.1, "f32", float(np.float32(0.1))), (0.1, "f64", 0.1), (1e-5, "f16", float(np.float16(1e-5))),
    (3.0, "bf16", 3.0), (-2.5, "f32", -2.5),
])
def test_float_literals_are_reprinted_exactly(value, dtype, expected):
    text = literal(value, DTYPES[dtype])
    assert float.fromhex(text.rstrip("f")) == expected


@pytest.mark.parametrize("value,dtype,text", [
    (float("inf"), "f32", "__int_as_float(0x7f800000)"), (float("-inf"), "f32", "__int_as_float(0xff800000)"),
    (float("nan"), "f64", "__longlong_as_double(0x7ff8000000000000LL)"),
    (-2 ** 63, "i64", "(-9223372036854775807LL - 1)"), (7, "i32", "((int)7LL)"), (True, "bool", "true"),
])
def test_special_literals(value, dtype, text):
    assert literal(value, DTYPES[dtype]) == text


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_precision_matmul_uses_tensor_cores(dtype, arch):
    k = tiledsl.compile(f"kernel mm(a: {dtype}[M, K], b: {dtype}[K, N]) -> {dtype}[M, N] {{ return a @ b }}")
    for extents in (dict(M=4096, K=4096, N=4096), dict(M=100, K=70, N=50)):
        [ks] = sources_for(k, extents, arch=arch)
        assert ks.schedule.mma
        compiled = toolchain.compile_cuda(ks.source, arch=arch)
        usage = compiled.resources[ks.name]
        assert usage.spill_stores == 0 and usage.local_bytes == 0, usage
        sass = toolchain.sass(compiled.cubin)
        # Hopper's aligned calls take warpgroup MMA (HGMMA); the rest mma.sync (HMMA)
        want = "HGMMA" if ks.schedule.wgmma else "HMMA"
        assert toolchain.has_instruction(sass, want)
        assert ks.schedule.wgmma == (arch == "sm_90a" and extents["M"] == 4096)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("layout", ["a @ b", "a @ bt.T", "at.T @ b", "at.T @ bt.T"])
def test_pipelined_matmul_moves_tiles_asynchronously(layout, arch):
    # x @ w with w[K, N] keeps B as [k][n] (transposed ldmatrix, or wgmma's N-major B); x @ w.T
    # as [n][k]; at.T @ w with at[K, M] keeps A as [k][m] likewise (one kernel, no copy first).
    # On Hopper the tensor memory accelerator copies the tiles (UTMALDG), elsewhere cp.async.
    a_type = "at: f16[K, M]" if layout.startswith("at") else "a: f16[M, K]"
    b_type = "bt: f16[N, K]" if layout.endswith("bt.T") else "b: f16[K, N]"
    k = tiledsl.compile(f"kernel mm({a_type}, {b_type}) -> f16[M, N] {{ return {layout} }}")
    [ks] = sources_for(k, dict(M=4096, K=4096, N=4096), arch=arch)
    assert ks.schedule.stages > 1 and ks.schedule.shared_bytes > 48 * 1024
    compiled = toolchain.compile_cuda(ks.source, arch=arch)
    usage = compiled.resources[ks.name]
    assert usage.spill_stores == 0 and usage.local_bytes == 0, usage
    sass = toolchain.sass(compiled.cubin)
    if arch == "sm_90a":
        assert ks.schedule.wgmma and ks.schedule.tma and toolchain.has_instruction(sass, "HGMMA")
        assert toolchain.has_instruction(sass, "UTMALDG.2D") and not toolchain.has_instruction(sass, "LDGSTS")
    else:
        assert toolchain.has_instruction(sass, "LDGSTS")
        assert toolchain.has_instruction(sass, "LDSM") and toolchain.has_instruction(sass, "HMMA")
        # a tile kept [k][rows] is read by the transposing ldmatrix
        assert toolchain.has_instruction(sass, "LDSM.16.MT88.4") == (layout != "a @ bt.T")


def test_pipeline_schedules_that_cannot_fit_are_refused_with_the_reason():
    with pytest.raises(tiledsl.TdslError, match="KB of shared memory"):
        Schedule("matmul", block=256, tile=(256, 256, 64), micro=(64, 128), mma=True, vec=8, stages=4)
    with pytest.raises(tiledsl.TdslError, match="16-byte vectors"):
        Schedule("matmul", block=256, tile=(128, 256, 32), micro=(64, 64), mma=True, vec=1, stages=3)


@pytest.mark.parametrize("directives,says", [
    ("warps(1)", "warps(1) cannot run at these sizes: invalid matmul schedule (block 32, tile 64x128x32): the "
                 "warp tile's accumulators do not fit in registers"),
    ("tile(M=4096, N=4096, K=4096)", "block must be a multiple of 32"),
    ("stages(8) tile(M=128, N=256, K=128)", "tile(M=128, N=256, K=128), stages(8) cannot run at these sizes"),
    ("tile(M=24, N=8, K=16)", "cannot cover a 24x8 tile: its rows must be a multiple of 16"),
])
def test_a_schedule_block_that_cannot_run_is_reported_at_the_block(directives, says):
    """What a schedule block pins but cannot run is reported at the block (file, line,
    column, caret), in the block's own words, never as a dump of the internal Schedule
    (nor as a warps() count the block does not give)."""
    src = ("kernel lin(x: f16[M, K], w: f16[K, N]) -> f16[M, N] {\n    return x @ w\n}\n"
           f"schedule lin {{\n    {directives}\n}}\n")
    with pytest.raises(tiledsl.TdslError) as info:
        sources_for(tiledsl.compile(src), dict(M=512, N=512, K=512))
    assert info.value.loc is not None and info.value.loc.line == 4, str(info.value)
    assert says in info.value.message and "Schedule(" not in str(info.value), str(info.value)


def test_long_kernel_names_are_capped_but_stay_distinct():
    names = [sources_for(tiledsl.compile(f"kernel {'a' * 45}{c}(x: f32[N]) -> f32[N] {{ return x * 2.0 }}"),
                         dict(N=1000))[0].name for c in "xy"]
    assert names[0] != names[1] and all(n.startswith("tdsl_" + "a" * 32 + "_") and len(n) < 80 for n in names)


def test_a_batch_past_the_grid_is_reported_at_the_product():
    k = tiledsl.compile("kernel k(x: f16[B, M, K], w: f16[K, N]) -> f16[B, M, N] {\n    return x @ w\n}")
    with pytest.raises(tiledsl.TdslError, match=r"over 70000 products \(its batch dims B\) is more than the 65535") \
            as info:
        sources_for(k, dict(B=70000, M=16, K=16, N=16))
    assert (info.value.loc.line, info.value.loc.col) == (2, 12)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("weight", ["w: f32[N, K]", "w: f32[K, N]"])
def test_tf32_is_opt_in_and_reads_its_operands_along_k(weight, arch):
    expr = "x @ w.T" if "[N, K]" in weight else "x @ w"
    body = f"kernel lin(x: f32[M, K], {weight}) -> f32[M, N] {{ return {expr} }}"
    extents = dict(M=4096, K=4096, N=4096)
    [exact] = sources_for(tiledsl.compile(body), extents, arch=arch)
    *copies, opted = sources_for(tiledsl.compile(body + "\nschedule lin { tf32(true) }"), extents, arch=arch)
    assert not exact.schedule.mma          # f32 stays exact IEEE unless asked
    # wgmma reads TF32 K-major only: w [K, N] is first copied laid out along K, by a transposing tile
    assert [c.schedule.tile for c in copies] == ([] if expr == "x @ w.T" else [(64, 64)])
    if arch == "sm_90a":
        assert opted.schedule.wgmma and opted.schedule.vec == 4
        compiled = toolchain.compile_cuda(opted.source, arch=arch)
        assert "tf32" in opted.source and toolchain.has_instruction(toolchain.sass(compiled.cubin), "HGMMA")
        assert compiled.resources[opted.name].spill_stores == 0
    else:                                  # mma.sync TF32 is not built: exact f32, on the copy where made
        assert opted.schedule == exact.schedule


@pytest.mark.parametrize("extents", [dict(M=1, K=4, N=4096), dict(M=4096, K=8192, N=4096)])
def test_tf32_tiles_copied_by_cp_async_are_rounded_to_nearest_as_tma_rounds_them(extents):
    """wgmma truncates raw f32 to TF32; TMA's TFLOAT32 maps round to nearest. A TF32
    tile that cp.async copies (K within one tile, or the tuner's cp.async twin) is
    rounded in place by the threads that copied it (before: truncated, 1.1e-3 relative
    error at 1x4x4096 on an H100, over the TF32 tolerance of 1e-3)."""
    k = tiledsl.compile("kernel lin(x: f32[M, K], w: f32[N, K]) -> f32[M, N] { return x @ w.T }\n"
                        "schedule lin { tf32(true) }")
    [ks] = sources_for(k, extents, arch="sm_90a")
    assert ks.schedule.wgmma and ks.schedule.vec == 4
    for s in (ks.schedule, replace(ks.schedule, tma=not ks.schedule.tma)):
        source = render(k.graph, *_only_group(k), s).source
        rounds = source.count("tdsl::round_tf32_shared16(")
        assert rounds == (0 if s.tma else 2), (s.tag, rounds)
        sass = toolchain.sass(toolchain.compile_cuda(source, arch="sm_90a").cubin)
        assert toolchain.has_instruction(sass, "HGMMA")
        assert toolchain.has_instruction(sass, "STS.128") or s.tma


def _only_group(k):
    [g] = partition(k.graph)
    return g, plan_layout(g, k.graph)


def test_f32_matmul_stays_exact_on_cuda_cores():
    k = tiledsl.compile("kernel mm(a: f32[M, K], b: f32[K, N]) -> f32[M, N] { return a @ b }")
    [ks] = sources_for(k, dict(M=512, K=512, N=512))
    assert not ks.schedule.mma
    sass = toolchain.sass(toolchain.compile_cuda(ks.source, arch="sm_90a").cubin)
    assert toolchain.has_instruction(sass, "FFMA") and not toolchain.has_instruction(sass, "HMMA")


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_f32_matmul_loads_the_next_tile_before_it_multiplies_this_one(arch):
    # The global loads of tile k+1 must be issued ahead of tile k's multiply-adds so
    # their latency hides behind them. A branch around the loads let the compiler sink
    # them to their shared-memory stores after the multiply: 0.77x cuBLAS, against 0.90x.
    k = tiledsl.compile("kernel mm(a: f32[M, K], b: f32[K, N]) -> f32[M, N] { return a @ b }")
    [ks] = sources_for(k, dict(M=4096, K=4096, N=4096))
    assert ks.schedule.vec == 4 and not ks.schedule.mma
    lines = toolchain.sass(toolchain.compile_cuda(ks.source, arch=arch).cubin).splitlines()
    ffma = [i for i, line in enumerate(lines) if re.search(r"\bFFMA\b", line)]
    first_barrier = next(i for i, line in enumerate(lines) if "BAR.SYNC" in line)
    loop_loads = [i for i, line in enumerate(lines) if "LDG.E.128" in line and i > first_barrier]
    assert len(ffma) >= 1024 and loop_loads
    assert sum(i < ffma[len(ffma) // 2] for i in loop_loads) >= len(loop_loads) / 2, (loop_loads, ffma[0], ffma[-1])


def test_unaligned_short_rows_fill_every_thread_slot_within_32_registers():
    # softmax over rows of 781 f32 (no 16-byte vectors): scalar loads leave few bytes in
    # flight per thread, so the default budgets registers for all 2048 threads of an SM
    k = tiledsl.compile((EXAMPLES / "softmax.tdsl").read_text())
    [ks] = sources_for(k, dict(M=32768, N=781))
    assert ks.schedule.vec == 1 and ks.schedule.min_blocks * ks.schedule.block == 2048
    assert "_r32_" in ks.name and f"__launch_bounds__({ks.schedule.block}, {ks.schedule.min_blocks})" in ks.source
    usage = toolchain.compile_cuda(ks.source, arch="sm_90a").resources[ks.name]
    assert usage.registers <= 32 and usage.spill_stores == 0
    [aligned] = sources_for(k, dict(M=32768, N=784))       # 16-byte rows keep the usual budget
    assert aligned.schedule.vec == 4 and aligned.schedule.min_blocks == 1


def test_a_row_reduction_budgets_registers_for_1024_1536_or_2048_threads_only():
    assert Schedule("reduce_row", block=256, vec=1, items=4, row_threads=256, min_blocks=8).tag.endswith("_r32_x32")
    assert Schedule("reduce_row", block=256, vec=1, items=4, row_threads=256, min_blocks=6).tag.endswith("_r40_x32")
    assert Schedule("reduce_row", block=512, vec=1, items=4, row_threads=512, min_blocks=3).register_cap == 40
    for blocks in (4, 5, 7):
        with pytest.raises(tiledsl.TdslError, match="1024 threads per SM"):
            Schedule("reduce_row", block=256, vec=1, items=4, row_threads=256, min_blocks=blocks)
    with pytest.raises(tiledsl.TdslError, match="1024 threads per SM"):   # that is min_blocks 1
        Schedule("reduce_row", block=512, vec=1, items=4, row_threads=512, min_blocks=2)
    with pytest.raises(tiledsl.TdslError, match="only row and split reductions and GEMMs"):
        Schedule("pointwise", block=256, vec=4, items=2, min_blocks=8)


def test_a_split_reduction_may_budget_registers_for_1536_or_2048_threads():
    tile = Schedule("reduce_split", block=512, vec=8, items=0, row_threads=16, splits=8, min_blocks=4)
    assert tile.register_cap == 32 and "_t16_r32_" in tile.tag
    assert Schedule("reduce_split", block=512, vec=8, items=0, row_threads=16, splits=8, min_blocks=3).register_cap == 40
    for blocks in (2, 5):
        with pytest.raises(tiledsl.TdslError, match="split reduction budgets registers"):
            Schedule("reduce_split", block=512, vec=8, items=0, row_threads=16, splits=8, min_blocks=blocks)
    with pytest.raises(tiledsl.TdslError, match="in 2 or more splits"):     # a split's own checks still hold
        Schedule("reduce_split", block=512, vec=8, items=0, row_threads=16, splits=1, min_blocks=4)


@pytest.mark.parametrize("src", [
    "kernel f(x: f16[M, N]) -> f32[N] { return sum(x, axis=M) }",
    "kernel f(x: f16[M, N]) -> (f32[N], f32[N]) { return sum(x, axis=M), max(x, axis=M) }",
    "kernel f(x: bf16[M, N]) -> (f32[N], f32[N], f32[N], f32[N], f32[N]) {\n"
    " return sum(x, axis=M), max(x, axis=M), min(x, axis=M), sum(x * x, axis=M), sum(abs(x), axis=M)\n}",
    "kernel f(x: i8[M, N]) -> i64[N] { return sum(x, axis=M) }",
    "kernel f(x: f32[M, N]) -> f32[N] { return max(x, axis=M) }",
])
def test_column_tiles_fit_their_registers_and_share_one_buffer(src):
    """The default for columns across memory, and every column tile the tuner is offered
    with registers for 2048 threads (columns.column_tile_split(full=True)), compile for
    sm_90a without spilling; a tile's reductions take turns in one buffer of at most
    16 KiB (five of them took 80 KiB of static shared memory each in its own)."""
    k = tiledsl.compile(src)
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, dict(M=65536, N=768))
    tiles = [s for s in candidates(p) if s.kind == "reduce_split" and 1 < s.row_threads < s.block]
    assert tiles
    for s in [default(p)] + [s for s in tiles if s.min_blocks > 1]:
        ks = render(k.graph, g, lay, s, 1)
        usage = toolchain.compile_cuda(ks.source, arch="sm_90a").resources[ks.name]
        assert usage.spill_stores == 0 and usage.spill_loads == 0, s.tag
        assert s not in tiles or usage.shared_bytes <= 16384, (s.tag, usage.shared_bytes)


COLUMNS_WITH_VALUES_OF_THEIR_OWN = [
    "kernel f(x: f16[M, N]) -> f32[N] { return sum(x * f32(idx(N)), axis=M) }",
    "kernel f(x: bf16[M, N]) -> f32[N] { return mean(x, axis=M) * f32(idx(N)) }",
    "kernel f(x: f16[M, N], b: f16[N]) -> f32[N] { return sum(x, axis=M) + f32(b) }",
    # a batch norm's variance about a mean another kernel computed; a weighted column sum
    "kernel f(x: f16[M, N], mu: f32[N]) -> f32[N] {\n d = f32(x) - mu\n return mean(d * d, axis=M)\n}",
    "kernel f(x: bf16[M, N], w: f32[N], g: f64[N]) -> f32[N] { return sum(f32(x) * w / f32(g), axis=M) }",
]


@pytest.mark.parametrize("src", COLUMNS_WITH_VALUES_OF_THEIR_OWN)
@pytest.mark.parametrize("extents", [dict(M=4096, N=1024), dict(M=65536, N=768), dict(M=1 << 20, N=64)])
def test_columns_with_values_of_their_own_take_vectors(src, extents):
    """Vectors of columns hold a column's own values a lane each (its inputs, an idx() of
    it, what they compute before the reductions: codegen's lane_held_lines), so such
    programs get the default shape a plain column sum of x gets, in vectors (they had taken
    one column a thread, after a vector default that rendering refused). The default
    and every candidate render, and the default compiles for sm_90a without spills: the
    held values count in its register budget (columns.accumulator_words)."""
    def default_of(src):
        k = tiledsl.compile(src)
        [g] = partition(k.graph)
        lay = plan_layout(g, k.graph)
        p = problem(g, lay, extents)
        return k, g, lay, p, default(p)

    k, g, lay, p, d = default_of(src)
    x = k.graph.param("x").dtype.name
    plain = default_of(f"kernel c(x: {x}[M, N]) -> f32[N] {{ return sum(x, axis=M) }}")[-1]
    assert d.vec > 1 and (d.kind, d.vec, d.block, d.row_threads) == (plain.kind, plain.vec, plain.block,
                                                                     plain.row_threads), (d.tag, plain.tag)
    for s in [d] + candidates(p):
        for stage in (1, 2) if s.splits else (1,):
            render(k.graph, g, lay, s, stage)
    ks = render(k.graph, g, lay, d, 1)
    usage = toolchain.compile_cuda(ks.source, arch="sm_90a").resources[ks.name]
    assert usage.spill_stores == 0 and usage.spill_loads == 0, (d.tag, usage)


@pytest.mark.parametrize("hbm_gbps", [3352.0, 0.0])      # an H100's rules, and an unknown GPU's
@pytest.mark.parametrize("src,extents", test_gpu_memory.COLUMN_TILE_DEFAULTS + [
    (src, extents) for src in COLUMNS_WITH_VALUES_OF_THEIR_OWN for extents in (dict(M=65536, N=768),)])
def test_column_defaults_at_the_gpu_tests_shapes_do_not_spill(src, extents, hbm_gbps):
    """The defaults the GPU tests run for columns across memory, compiled for sm_90a as an
    H100 (132 SMs) would plan them: none spills. A middle axis's index and x @ w's x over
    the rows alone spilled 8 and 16 bytes under registers for 2048 threads; the GPU's spill
    warning (TdslPerformanceWarning) found them, not a CPU test, which had not compiled
    these shapes."""
    assert_defaults_do_not_spill(tiledsl.compile(src), extents, hbm_gbps)


_COMPILED_DEFAULTS: dict = {}      # CUDA text -> its sm_90a resource usage (many sizes and GPUs share a kernel)


@functools.lru_cache(maxsize=None)
def trig_frame_bytes() -> int:
    """Local memory that CUDA's own f32 sin and cos take under this NVRTC, not spills: their
    slow path for large arguments (Payne-Hanek reduction) keeps its words in a stack array
    under NVRTC 13.0 (32 bytes; the device's CuPy), in registers under 13.5 (none)."""
    src = ('extern "C" __global__ void trig(float* y, const float* x) '
           '{ y[threadIdx.x] = sinf(x[threadIdx.x]) + cosf(x[threadIdx.x]); }')
    return toolchain.compile_cuda(src, arch="sm_90a").resources["trig"].local_bytes


def local_bytes_allowed(source: str) -> int:
    """The local memory a kernel may take without spilling: trig_frame_bytes where its body
    calls sin or cos, else none."""
    body = source[source.index('extern "C"'):]
    return trig_frame_bytes() if re.search(r"\btdsl::(sin|cos)\(", body) else 0


def assert_defaults_do_not_spill(k, extents: dict, hbm_gbps: float) -> None:
    """The kernels a call of `k` at `extents` runs on a 132-SM GPU of `hbm_gbps`, compiled
    for sm_90a: none spills, nor takes local memory beyond local_bytes_allowed."""
    for ks in sources_for(k, extents, 132, "sm_90a", hbm_gbps):
        usage = _COMPILED_DEFAULTS.get(ks.source)
        if usage is None:
            usage = _COMPILED_DEFAULTS[ks.source] = toolchain.compile_cuda(ks.source, arch="sm_90a").resources[ks.name]
        assert not usage.spill_stores and usage.local_bytes <= local_bytes_allowed(ks.source), (extents, ks.name, usage)


@pytest.mark.parametrize("hbm_gbps", [3352.0, 4800.0])    # an H100's rules, an H200's
@pytest.mark.parametrize("name", test_gpu_memory.MEMORY_EXAMPLES + list(test_gpu_memory.VARIANTS))
def test_memory_example_defaults_at_the_gpu_tests_shapes_do_not_spill(name, hbm_gbps):
    """The kernels the GPU tests run for every memory-bound example and dtype variant, at each
    of their sizes, compiled for sm_90a as an H100 or an H200 (whose faster memory picks other
    rules) would plan them: none spills. The bf16 layernorm's prefetching row at 4096x8192,
    an H200's default, spilled 24 bytes (ptxas split its packed vectors a lane a register, see
    tdsl::bf16_lane); only the GPU's spill check had compiled it."""
    k = test_gpu_memory._example_program(name)
    for size in test_gpu_memory.SHAPES_2D:
        assert_defaults_do_not_spill(k, test_gpu_memory.extents_for(k.graph.dims, size), hbm_gbps)


INDEX_MATH_SUM = """kernel prop(p0: {dt}[M], p1: f16) -> {rt} {{
    t0 = p0
    t1 = abs(idx(M))
    t2 = where((p0 < idx(M)), t0, t1)
    return sum(t2)
}}"""


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt,rt", [("i8", "i8"), ("f16", "f32")])
def test_held_peeled_rows_beside_index_math_hold_few_elements_and_do_not_spill(dt, rt, arch):
    """registers.PEELED_INDEX_MATH_ELEMENTS: a reduction computing 8-byte values from indices
    alone (idx() math) over a peeled row held in registers. ptxas computes a thread's whole share
    of them ahead of the loads; at 32 elements a thread the i8 sum took 128 registers and spilled
    16 bytes on sm_80 (CI's codegen fuzz, 2026-12-06). Such shares hold at most 8 elements: a
    larger one is refused with the reason, and the default and every peeled candidate compile
    without spills. Rows with no index math, or not peeled, keep their shares."""
    k = tiledsl.compile(INDEX_MATH_SUM.format(dt=dt, rt=rt))
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, dict(M=1031), arch=arch)
    wide = Schedule("reduce_row", block=128, vec=8, items=4, row_threads=32, hoist=False, peel=True)
    assert "8-byte index math" in fits(p, wide)
    assert not fits(p, replace(wide, items=1, row_threads=128))
    peeled = [s for s in candidates(p) if s.peel and s.items]
    assert peeled and all(s.items * s.vec <= registers.PEELED_INDEX_MATH_ELEMENTS for s in peeled)
    for s in [default(p)] + peeled:
        ks, compiled, usage = _compile(k, g, lay, s, arch)
        assert not usage.spill_stores and usage.local_bytes == 0, (s.tag, usage)
    plain = tiledsl.compile(f"kernel f(x: {dt}[M]) -> {rt} {{ return sum(x) }}")
    gp = partition(plain.graph)[0]
    pp = problem(gp, plan_layout(gp, plain.graph), dict(M=1031), arch=arch)
    assert not fits(pp, wide)


BF16_LAYERNORM = (EXAMPLES / "layernorm.tdsl").read_text().replace("f16", "bf16").replace("f32[N]", "bf16[N]")


@pytest.mark.parametrize("hbm_gbps", [3352.0, 4800.0])
@pytest.mark.parametrize("extents", [dict(M=512, N=4352), dict(M=512, N=8448), dict(M=8192, N=6144)])
def test_bf16_weights_are_not_hoisted_beside_24_elements_a_thread(extents, hbm_gbps):
    """A bf16 layernorm with bf16 weight and bias at 24 elements a thread: hoisted, its
    weights spilled 8 bytes at 64 registers (Problem.words_per_row_element counts them at
    three quarters of a word); the default loads them late instead, and nothing spills."""
    assert_defaults_do_not_spill(tiledsl.compile(BF16_LAYERNORM), extents, hbm_gbps)


@pytest.mark.parametrize("src", ["kernel f(x: f16[M, N]) -> f32[N] { return sum(x, axis=M) }"]
                         + COLUMNS_WITH_VALUES_OF_THEIR_OWN[:4])
@pytest.mark.parametrize("extents", [dict(M=16384, N=4096), dict(M=8192, N=8192), dict(M=65536, N=776),
                                     dict(M=65536, N=768), dict(M=1 << 20, N=128)])
def test_column_tiles_run_in_one_wave(src, extents):
    """The 16-bit column tiles' first kernel launches no more blocks than an H100's SMs
    hold at once, counted from the registers ptxas gives the kernel and its shared memory:
    blocks past them wait for a second wave and take the wave's time again (a batch norm's
    variance f16 16384x4096, 288 blocks of 264 places: 56.4 us, 50.1 in 256 blocks; H100
    2026-11-27)."""
    k = tiledsl.compile(src)
    [g] = partition(k.graph)
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, extents, sm_count=132, arch="sm_90a", hbm_gbps=3352.0)
    s = default(p)
    assert s.kind == "reduce_split" and s.vec == 8 and s.row_threads < s.block, s.tag
    ks = render(k.graph, g, lay, s, 1)
    usage = toolchain.compile_cuda(ks.source, arch="sm_90a").resources[ks.name]
    warps = s.block // 32
    warp_registers = -(-usage.registers * 32 // 256) * 256          # allocated 256 at a time
    by_registers = (65536 // warp_registers) // warps
    by_shared = (228 * 1024) // (usage.shared_bytes + 1024)          # 1 KiB the system keeps a block
    by_threads = 2048 // s.block
    grid = launches(p, s)[0].grid
    assert grid[0] * grid[1] <= 132 * min(by_registers, by_shared, by_threads), (s.tag, grid, usage)


def test_a_combining_kernel_shares_one_buffer_among_its_reductions():
    """A split reduction's second kernel: the lanes of a row meet in one shared buffer of
    8 bytes a thread, whatever the count of reductions (a buffer each took 57 KiB of static
    shared memory for 14 f64 sums, past the 48 KiB a block has without opting in)."""
    for n in (1, 14):
        src = (f"kernel f(x: f64[N]) -> ({', '.join(['f64'] * n)}) "
               f"{{ return {', '.join(f'sum(x * {i + 1}.0)' for i in range(n))} }}")
        k = tiledsl.compile(src)
        [g] = partition(k.graph)
        lay = plan_layout(g, k.graph)
        s = default(problem(g, lay, dict(N=1 << 24)))
        assert s.kind == "reduce_split" and combine_lanes(s) > 1, s.tag
        ks = render(k.graph, g, lay, s, 2)
        usage = toolchain.compile_cuda(ks.source, arch="sm_90a").resources[ks.name]
        assert usage.shared_bytes == 8 * s.block and usage.spill_stores == 0, (n, usage)


def test_a_tile_of_16_bit_columns_fits_32_registers_without_spilling():
    """columns.column_tile_split(full=True): launch bounds for 4 blocks of 512 an SM, as the
    hand-written kernel of scripts/probe_col_tiles.py runs; ptxas must fit it unspilled."""
    k = tiledsl.compile("kernel f(x: bf16[M, N]) -> f32[N] { return mean(x, axis=M) }")
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    s = column_tile_split(problem(g, lay, dict(M=65536, N=768)), 32, 512, full=True)
    assert s.min_blocks == 4 and s.vec == 8
    ks = render(k.graph, g, lay, s, 1)
    assert "__launch_bounds__(512, 4)" in ks.source
    usage = toolchain.compile_cuda(ks.source, arch="sm_90a").resources[ks.name]
    assert usage.registers <= 32 and usage.spill_stores == 0 and usage.spill_loads == 0


@pytest.mark.parametrize("src,extents,kind", [
    ("kernel mv(a: f16[M, K], v: f16[K], b: f32[M]) -> f16[M] { return relu(a @ v + b) }",
     dict(M=4096, K=4096), "reduce_row"),
    ("kernel vm(x: f32[K], w: f32[K, N]) -> f32[N] { return x @ w }", dict(K=1024, N=262144), "reduce_col"),
    # too few columns to fill the GPU a thread each: split into chunks of K (columns.columns_split)
    ("kernel vm(x: f32[K], w: f32[K, N]) -> f32[N] { return x @ w }", dict(K=1024, N=32768), "reduce_split"),
    ("kernel vm(x: f32[K], w: f32[K, N]) -> f32[N] { return x @ w }", dict(K=16384, N=1024), "reduce_split"),
    ("kernel dot(a: f32[K], b: f32[K]) -> f32 { return a @ b }", dict(K=1 << 20), "reduce_split"),
    ("kernel bmv(a: f32[B, M, K], v: f32[K]) -> f32[B, M] { return a @ v }", dict(B=4, M=1000, K=999), "reduce_row"),
])
def test_products_with_a_vector_are_sums_of_products(src, extents, kind):
    """A @ v, v @ B and a dot product are reductions (sum(A * v, axis=K) in f32), so they
    run at memory bandwidth on the row, column and split templates; the GEMM needs M and N."""
    k = tiledsl.compile(src)
    assert all(v.op != "matmul" for v in k.graph.values)
    [reduce] = [v for v in k.graph.values if v.op == "reduce"]
    assert reduce.attr("kind") == "sum" and reduce.attr("axes") == ("K",) and reduce.dtype.name == "f32"
    sources = sources_for(k, extents)
    assert sources[0].schedule.kind == kind
    for ks in sources:
        usage = toolchain.compile_cuda(ks.source, arch="sm_90a").resources[ks.name]
        assert usage.spill_stores == 0 and usage.local_bytes == 0
    # the reference agrees with NumPy's matmul in float64
    rng = np.random.default_rng()
    small = {d: min(n, 37) for d, n in extents.items()}
    args = [rng.standard_normal(tuple(small[d] for d in p.dims)).astype(p.dtype.numpy) if not p.is_scalar else None
            for p in k.graph.params]
    a, b = (x.astype(np.float64) for x in args[:2])
    want = np.matmul(a, b)
    if len(args) > 2:
        want = np.maximum(want + args[2], 0)
    got = np.asarray(k.reference(*args), np.float64)
    assert np.linalg.norm(got - want) <= 2e-3 * np.linalg.norm(want)


def test_schedule_block_pins_the_gemm_on_every_gpu():
    # examples/linear.tdsl pins 128x256x64, 4 stages, 8 warps: wgmma's two warpgroups on
    # Hopper; on sm_80 mma.sync warp tiles as deep as 163 KB of shared memory allows;
    # a call that cannot pipeline keeps an unpinned tile it can hold in 48 KB.
    from pathlib import Path
    k = tiledsl.compile(Path(__file__).resolve().parent.parent / "examples" / "linear.tdsl")
    big = dict(M=4096, N=4096, K=4096)
    [hopper] = sources_for(k, big, arch="sm_90a")
    assert hopper.schedule.wgmma and hopper.schedule.tile == (128, 256, 64) and hopper.schedule.stages == 4
    [ampere] = sources_for(k, big, arch="sm_80")
    assert not ampere.schedule.wgmma and ampere.schedule.tile == (128, 256, 64)
    assert ampere.schedule.stages == 3 and ampere.schedule.shared_bytes <= 163 * 1024
    [odd] = sources_for(k, dict(M=100, N=70, K=50), arch="sm_90a")
    assert odd.schedule.stages == 1 and odd.schedule.tile[2] == 32
    with pytest.raises(tiledsl.TdslError, match="shared memory"):
        sources_for(tiledsl.compile("kernel m(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }\n"
                                    "schedule m { tile(M=256, N=256, K=128) warps(8) }"), big, arch="sm_80")


def test_a_streamed_loop_takes_an_explicit_unroll_that_the_tuner_may_try():
    """`Schedule.unroll` writes the streamed loop's `#pragma unroll n` (0 leaves the compiler's
    rule); candidates() offers 16 and 32 words of loads in flight beside it, never a copy of the
    rule, and only where the elements stream through a loop."""
    k = tiledsl.compile("kernel vm(x: f32[K], w: f32[K, N]) -> f32[N] { return x @ w }")
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, dict(K=8192, N=8192))
    base = default(p)
    assert base.unroll == 0 and base.kind == "reduce_split"
    unrolled = [s for s in candidates(p) if s.unroll]
    # x and W: 2 words an iteration (rows read element by element: 4 and 8 beside the rule's 16)
    assert {s.unroll for s in unrolled if s.vec == 1 and s.kind != "reduce_row"} == {8, 16}
    # vectors of 4 columns: 4 words of W and one of x (16 // 5 = 3 by the rule)
    assert {s.unroll for s in unrolled if s.vec == 4 and s.kind != "reduce_row"} == {2, 4}
    assert all(s.streamed for s in unrolled) and all(replace(s, unroll=0) in candidates(p) for s in unrolled)
    s16 = replace(base, unroll=16)
    assert s16.tag.endswith("_u16_x32") and s16.tag != base.tag and fits(p, s16) == ""
    text = render(k.graph, g, lay, s16, 1).source
    assert text.count("#pragma unroll 16\n") == 1 and "#pragma unroll 16" not in render(k.graph, g, lay, base, 1).source
    for arch in ARCHS:
        usage = toolchain.compile_cuda(text, arch=arch).resources[render(k.graph, g, lay, s16, 1).name]
        assert usage.spill_stores == 0 and usage.local_bytes == 0
    # two f32 vectors an iteration: the rule already unrolls by 2, so 2 is not offered again
    k2 = tiledsl.compile("kernel d(x: f32[K], y: f32[K]) -> f32 { return sum(x * y) }")
    g2 = partition(k2.graph)[0]
    p2 = problem(g2, plan_layout(g2, k2.graph), dict(K=1 << 24))
    assert {s.unroll for s in candidates(p2) if s.vec == 4} == {0, 4}
    # one row that a split spreads over the GPU: no block-a-row candidates (slower, and less exact)
    assert candidates(p2) and all(s.kind == "reduce_split" for s in candidates(p2))
    # rows kept in registers have no streamed loop
    soft = tiledsl.compile((EXAMPLES / "softmax.tdsl").read_text())
    gs = partition(soft.graph)[0]
    ps = problem(gs, plan_layout(gs, soft.graph), dict(M=4096, N=1024))
    assert all(s.unroll == 0 for s in candidates(ps) if s.items > 0)
    with pytest.raises(tiledsl.TdslError, match="only a streamed loop"):
        replace(default(ps), unroll=4)
    with pytest.raises(tiledsl.TdslError, match="unroll must be one of"):
        replace(base, unroll=3)


@pytest.mark.parametrize("name", ["softmax", "rmsnorm"])
def test_a_looped_row_read_element_by_element_is_unrolled_16_deep(name):
    """Rows too long for registers whose length breaks 16-byte alignment loop over single
    elements: every pass gets `#pragma unroll 16` (ptxas's own ~4 left softmax 2048x50257 at
    597 against 352 us, H100), or an online pass chunks of 16, without spilling; the tuner
    may still try 4 and 8. (Rows whose weights outweigh them, layernorm's: the test below.)"""
    k = tiledsl.compile((EXAMPLES / f"{name}.tdsl").read_text())
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    # a row that cannot be peeled to aligned vectors: its inputs misaligned (or weights over N
    # heavier than the row: layernorm's f32 weight and bias against f16 x)
    misaligned = frozenset(id(op) for op in lay.inputs)
    p = problem(g, lay, dict(M=2048, N=50257), misaligned)
    s = default(p)
    assert (s.kind, s.items, s.vec, s.unroll, s.peel) == ("reduce_row", 0, 1, 0, False)
    assert default(problem(g, lay, dict(M=2048, N=50257))).peel
    # f32 rows of 50257, 264 at once (53 MB), outgrow the L2: softmax takes one pass; the
    # others have no such choice and keep the field's default (and their names)
    assert s.online and "_2p" not in s.tag
    fits_l2 = default(replace(p, loops=(p.loops[0], 25001)))     # 264 rows of 100 KB at once
    assert fits_l2.items == 0 and fits_l2.online != (name == "softmax")
    text = render(k.graph, g, lay, s, 1)
    loops = text.source.count("for (idx_t c = rbegin + lane; c < rend; c += TPR)")
    assert loops >= 1 and text.source.count("#pragma unroll 16\n") == loops
    # softmax's online pass takes chunks of 16 elements instead
    assert text.source.count("first_c += (idx_t)16 * TPR") == (name == "softmax")
    assert {c.unroll for c in candidates(p) if c.streamed and c.vec == 1} == {0, 4, 8}
    assert not any(c.peel for c in candidates(p))
    for arch in ARCHS:
        usage = toolchain.compile_cuda(text.source, arch=arch).resources[text.name]
        assert usage.spill_stores == 0 and usage.local_bytes == 0
    # aligned rows (vectors of 16 bytes) keep ptxas's unroll
    aligned = default(problem(g, lay, dict(M=2048, N=50256)))
    assert aligned.vec > 1 and "#pragma unroll 16" not in render(k.graph, g, lay, aligned, 1).source


@pytest.mark.parametrize("rows_dtype", ["f16", "bf16"])
def test_rows_read_one_by_one_whose_weights_outweigh_them_take_256_threads_and_shallow_unrolls(rows_dtype):
    """rows.element_stream: layernorm rows of odd lengths whose f32 w and b outweigh them four
    times stream element by element. At 512 threads and 16 deep the old default
    never ran its unrolled body at 4097 (8 trips a thread): 344.4 us against 116.1 at 256
    threads (H200 2026-12-05). With many rows, 256 threads up to 33 trips; else 512 at 4
    deep; never deeper than half a thread's trips; no spills."""
    k, g, lay = _kernel_group((EXAMPLES / "layernorm.tdsl").read_text().replace("f16", rows_dtype))
    want = {(16384, 4097): (256, 8), (16384, 6001): (256, 8), (8192, 8193): (256, 0), (16384, 8449): (512, 4),
            (4096, 8193): (512, 4), (4096, 20001): (512, 4), (64, 4097): (512, 4), (1, 100003): (512, 4)}
    for (m, n), (threads, unroll) in want.items():
        p = problem(g, lay, dict(M=m, N=n), frozenset(), 132, "sm_90a", 4800.0)
        s = default(p)
        assert (s.kind, s.vec, s.items, s.peel, s.block, s.row_threads, s.unroll) == \
            ("reduce_row", 1, 0, False, threads, threads, unroll), (m, n, s)
    pinned = default(problem(g, lay, dict(M=16384, N=4097), frozenset(), 132, "sm_90a", 4800.0), Hints(threads=512))
    assert (pinned.block, pinned.unroll) == (512, 4)
    s = default(problem(g, lay, dict(M=16384, N=4097), frozenset(), 132, "sm_90a", 4800.0))
    text = render(k.graph, g, lay, s, 1)
    loops = text.source.count("for (idx_t c = rbegin + lane; c < rend; c += TPR)")
    assert loops == 3 and text.source.count("#pragma unroll 8\n") == loops
    for arch in ARCHS:
        usage = toolchain.compile_cuda(text.source, arch=arch).resources[text.name]
        assert usage.spill_stores == 0 and usage.local_bytes == 0


def _row_loads_between_branches(sass: str, opcode: str = "LDG.E.U16") -> list[int]:
    """The row loads (`opcode`) of each stretch of SASS between branches, stretches with none left out."""
    counts = [0]
    for line in sass.splitlines():
        op = line.split("*/")[1] if "*/" in line else line     # (/*address*/ instruction ; /*encoding*/)
        if opcode in op:
            counts[-1] += 1
        if re.search(r"\bBRA\b", op):
            counts.append(0)
    return [n for n in counts if n]


@pytest.mark.parametrize("arch", ARCHS)
def test_guarded_chunks_put_a_row_s_last_loads_in_flight_together(arch):
    """Schedule.guarded: a row read element by element walks chunks of its unroll, each element
    guarded. Under `#pragma unroll 8` ptxas's remainder loop loads one element between branches
    (23 trips a thread: 7 loads one after another); guarded, every stretch of SASS that loads the
    row loads 8 or more. The tuner offers the twin of each such candidate (a block's warps on a
    row), none of peeled, vector or cluster rows."""
    k = tiledsl.compile((EXAMPLES / "layernorm.tdsl").read_text())
    [g] = partition(k.graph)
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, dict(M=5000, N=6001), frozenset(), 132, arch, 4800.0)
    s = default(p)
    assert (s.block, s.vec, s.unroll, s.guarded) == (256, 1, 8, False)
    offered = candidates(p)
    twins = [c for c in offered if c.guarded]
    assert replace(s, guarded=True) in twins and all(c.tag.endswith("_gd_x32") for c in twins)
    assert all(c.vec == 1 and c.items == 0 and c.cluster == 1 for c in twins)
    assert {replace(c, guarded=False) for c in twins} <= set(offered)
    plain, guarded = (toolchain.compile_cuda(render(k.graph, g, lay, c, 1).source, arch=arch)
                      for c in (s, replace(s, guarded=True)))
    assert 1 in _row_loads_between_branches(toolchain.sass(plain.cubin))
    assert min(_row_loads_between_branches(toolchain.sass(guarded.cubin))) >= 8
    usage = next(iter(guarded.resources.values()))
    assert usage.spill_stores == 0 and usage.local_bytes == 0
    with pytest.raises(TdslError, match="walks guarded chunks"):
        replace(s, vec=8, guarded=True)
    with pytest.raises(TdslError, match="walks guarded chunks"):
        replace(s, items=24, unroll=0, guarded=True)


def test_a_row_read_one_by_one_is_never_unrolled_deeper_than_half_its_trips():
    """A loop unrolled U deep whose thread walks the row fewer than U times runs only ptxas's
    remainder, one load in flight (rows.element_stream): every default streaming a row
    element by element, of the norms at odd lengths on both GPUs, unrolls at most half its
    trips (or not at all)."""
    sources = {"layernorm": (EXAMPLES / "layernorm.tdsl").read_text(),
               "rmsnorm": (EXAMPLES / "rmsnorm.tdsl").read_text(),
               "softmax": (EXAMPLES / "softmax.tdsl").read_text()}
    sources["rmsnorm_f32w"] = sources["rmsnorm"].replace("w: f16[N]", "w: f32[N]")
    sources["layernorm_f32"] = sources["layernorm"].replace("f16", "f32")
    seen = 0
    for name, src in sources.items():
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        for m in (7, 1000, 16384):
            for n in (2049, 3001, 4097, 6001, 8193, 12001, 20001, 50257):
                for misaligned in (frozenset(), frozenset(id(op) for op in lay.inputs)):
                    for gbps in (3352.0, 4800.0):
                        p = problem(g, lay, dict(M=m, N=n), misaligned, 132, "sm_90a", gbps)
                        s = default(p)
                        if s.kind != "reduce_row" or s.vec != 1 or s.items or s.row_threads < 32:
                            continue
                        words, wide = stream_words(s, lay)
                        depth = s.unroll or stream_unroll_rule(s, words, wide)
                        assert depth == 1 or 2 * depth <= n // s.row_threads, (name, m, n, s)
                        seen += 1
    assert seen >= 100


@pytest.mark.parametrize("arch", ARCHS)
def test_a_held_row_of_narrow_inputs_and_8_byte_results_holds_at_most_8_elements(arch):
    """row_share_fits caps a held share at 8 elements where a result along the row is 8 bytes
    wide and every input narrower, in vectors too: the codegen fuzz's (2026-12-05) full sum
    beside two f64 results over four f16 rows of 1000 was held by a warp at 32 elements a
    thread in vectors of 2 and spilled 88 bytes on sm_90a (112 on sm_80)."""
    src = ("kernel prop(p0: f16[1000], p1: f16[1000], p2: f16[1000], p3: f16[1000]) -> (f64[1000], f64[1000]) {\n"
           " t5 = where((p0 < p2), abs(i32(floor(p3))), sum(i32(floor(p1))))\n"
           " return where(logical_and(idx(1000) < p0, p0 < p2), 2, t5), p1\n}")
    k = tiledsl.compile(src)
    [g] = partition(k.graph)
    lay = plan_layout(g, k.graph)
    s = default(problem(g, lay, {k.graph.dims[0]: 1000}, frozenset(), 132, arch, 0.0))
    assert s.kind == "reduce_row" and s.items * s.vec <= 8, s.tag
    ks, compiled, usage = _compile(k, g, lay, s, arch)
    assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)
    # f64 inputs count their own words: an f64 softmax's share stays as wide as before
    f64 = tiledsl.compile((EXAMPLES / "softmax.tdsl").read_text().replace("f32", "f64"))
    [g64] = partition(f64.graph)
    p64 = problem(g64, plan_layout(g64, f64.graph), dict(M=4096, N=1024), frozenset(), 132, arch, 4800.0)
    assert registers.row_share_fits(p64, 8, 2)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_row_read_element_by_element_storing_8_byte_results_unrolls_less(arch):
    """stream_words counts 2 words for each 8-byte result stored along a row read one by one:
    the codegen fuzz's full max over i8 [1000, 5] stored transposed in f64 beside a bf16 copy
    (2026-12-04) spilled 20 bytes at 64 registers on sm_90a unrolled 16 deep; 4 deep it
    does not; so an i64 result. (Rows with 4-byte results keep 16: the test above.)"""
    src = ("kernel prop(p0: i8[1000, 5], p1: bool[1000]) -> (bf16[1000, 5], {t}[5, 1000]) {{\n"
           "    t2 = p0.T.T\n    t3 = where((p0 < p0), p0, p0)\n    return t2, maximum(t3.T, max(t3))\n}}")
    for t, unroll in (("f64", 4), ("i64", 4)):
        k = tiledsl.compile(src.format(t=t))
        [g] = partition(k.graph)
        lay = plan_layout(g, k.graph)
        s = default(problem(g, lay, {"1000": 1000, "5": 5}, frozenset(), 132, arch))
        assert (s.kind, s.vec, s.items, s.unroll) == ("reduce_row", 1, 0, 0), s.tag
        ks, _, usage = _compile(k, g, lay, s, arch)
        assert ks.source.count(f"#pragma unroll {unroll}\n") == 2, (t, ks.source.count("#pragma unroll"))
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (t, usage)


@pytest.mark.parametrize("name", ["softmax", "rmsnorm"])
def test_a_looped_row_whose_length_breaks_alignment_is_peeled_to_aligned_vectors(name):
    """Rows of 131073, too long for a block to hold and streamed where clusters are not
    taken: 16-byte vectors from each row's first aligned element (Schedule.peel), 4 of
    them in flight (the unroll rule: 16 words), the head and tail one element at a time;
    rmsnorm's weight over N gathered lane by lane. No spills; whole-vector loads."""
    k = tiledsl.compile((EXAMPLES / f"{name}.tdsl").read_text())
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, dict(M=2048, N=131073))
    s = default(p, clusters=False)
    assert (s.kind, s.items, s.vec, s.peel) == ("reduce_row", 0, 16 // k.graph.params[0].dtype.itemsize, True)
    assert "_pe_" in s.tag and not fits(p, s)
    text = render(k.graph, g, lay, s, 1).source
    passes = 2      # softmax: max and sum in one pass (rows outgrow the L2), then the output; rmsnorm: two
    assert text.count("for (idx_t c = lane; c < ragged; c += TPR)") == passes
    assert text.count("c < vend") >= passes
    if name == "rmsnorm":       # the weight's lanes, one by one (its alignment is not the row's)
        assert "b1[0].v[e] = in1[c1 + e * (1)];" in text
    usage = toolchain.compile_cuda(text, arch="sm_90a")
    assert usage.resources[render(k.graph, g, lay, s, 1).name].spill_stores == 0
    assert toolchain.has_instruction(toolchain.sass(usage.cubin), "LDG.E.128")
    # candidates: the streamed peeled rows at three block sizes (first, as the widest
    # vectors), and the element-by-element ones still
    peeled = [c for c in candidates(p) if c.peel and not c.items]
    assert {c.block for c in peeled} == {256, 512, 1024} and any(c.vec == 1 for c in candidates(p))
    # peeling needs rows the only operands along the row besides weights, aligned bases,
    # and a looped row a warp or more wide
    assert "alignment" in fits(problem(g, lay, dict(M=2048, N=50257), frozenset(id(op) for op in lay.inputs)), s)
    with pytest.raises(tiledsl.TdslError, match="peeled"):
        replace(s, row_threads=16, block=256)
    with pytest.raises(tiledsl.TdslError, match="peeled"):
        replace(s, items=2, prefetch=True)


@pytest.mark.parametrize("length", [781, 1000, 3001, 4097, 5000, 8193, 10000, 12001])
def test_a_default_row_share_is_exact_not_a_power_of_two(length):
    """The last of a thread's vectors holds part of the row: no thread holds a whole
    vector past the row's end (a power-of-two share of 8193 elements held 32 a thread
    at 512 threads, 15 of them past the end, and spilled)."""
    # (layernorm's scalar rows hold f32 weights too: at 4097 and more they stream)
    for src in [EXAMPLES / "softmax.tdsl"] + ([EXAMPLES / "layernorm.tdsl"] if length % 8 == 0 else []):
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        s = default(problem(g, lay, dict(M=4096, N=length), hbm_gbps=3352.0))
        assert s.kind == "reduce_row" and s.items >= 1, s
        row_vectors = length // s.vec
        assert (s.items - 1) * s.row_threads < row_vectors <= s.items * s.row_threads, (length, s)


def test_a_row_share_over_its_registers_streams_widens_or_loads_its_weights_late():
    """row_share_fits: a thread's share of a row over its register budget (the old
    defaults spilled 24 to 136 bytes) is held peeled to aligned vectors by more threads
    (long_row_schedule), or, where its inputs are misaligned, read one by one,
    unrolled to 16 elements in flight over all its inputs; vectorized, it takes 1024
    threads, or loads its row-invariant weights late where that alone makes it fit. Each
    compiles without spilling."""
    cases = [
        ("kernel f(x: f32[M, N], y: f32[M, N], z: f32[M, N]) -> f32[M, N] {\n"
         "    return x * y + z + sum(x * z, axis=N)\n}", dict(M=4096, N=4097),
         dict(block=512, vec=4, items=2, peel=True), None),
        ("kernel f(x: f32[M, N], y: f32[M, N], z: f32[M, N]) -> f32[M, N] {\n"
         "    return x * y + z + sum(x * z, axis=N)\n}", dict(M=4096, N=4097, misaligned=True),
         dict(block=512, vec=1, items=0, peel=False), "#pragma unroll 4\n"),
        ("kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] {\n    return x * y + sum(x, axis=N)\n}",
         dict(M=2048, N=8193), dict(block=512, vec=4, items=4, peel=True), None),
        ("kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] {\n    return x * y + sum(x, axis=N)\n}",
         dict(M=2048, N=8193, misaligned=True), dict(block=512, vec=1, items=0), "#pragma unroll 8\n"),
        ("kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] {\n    return x * y + sum(x, axis=N)\n}",
         dict(M=2048, N=16384, arch="sm_80"), dict(block=1024, vec=4, items=4), None),
        # (on sm_90a, copied into shared memory by one block of 1024 instead: rows.shared_row_alone)
        ("kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] {\n    return x * y + sum(x, axis=N)\n}",
         dict(M=2048, N=16384), dict(block=1024, vec=4, items=0, shared_row=True), None),
        ("kernel f(x: f16[M, N], w: f16[N], b: f16[N]) -> f16[M, N] {\n    m = mean(x, axis=N)\n"
         "    d = x - m\n    v = mean(d * d, axis=N)\n    return d * rsqrt(v + 0.00001) * w + b\n}",
         dict(M=2048, N=16384), dict(block=512, vec=8, items=4, hoist=False), None),
        # exact shares (row_share): 24 elements of a 12001-element row fit where 32 spilled
        # (misaligned: read one by one; else peeled, 6 vectors of 4)
        ("kernel f(x: f32[M, N]) -> f32[M, N] {\n    e = exp(x - max(x, axis=N))\n"
         "    return e / sum(e, axis=N)\n}", dict(M=4096, N=12001, misaligned=True), dict(block=512, vec=1, items=24),
         None),
        ("kernel f(x: f32[M, N]) -> f32[M, N] {\n    e = exp(x - max(x, axis=N))\n"
         "    return e / sum(e, axis=N)\n}", dict(M=4096, N=12001), dict(block=512, vec=4, items=6, peel=True), None),
    ]
    for source, extents, want, pragma in cases:
        k = tiledsl.compile(source)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        extents = dict(extents)
        misaligned = frozenset(id(op) for op in lay.inputs) if extents.pop("misaligned", False) else frozenset()
        arch = extents.pop("arch", "sm_90a")
        s = default(problem(g, lay, extents, misaligned, arch=arch, hbm_gbps=3352.0))
        assert {f: getattr(s, f) for f in want} == want, (extents, s)
        for arch in ARCHS:
            ks, _, usage = _compile(k, g, lay, s, arch)
            assert pragma is None or pragma in ks.source
            assert usage.spill_stores == 0 and usage.local_bytes == 0, (extents, arch, usage)


# -- split-K on tensor cores and the warpgroup GEMM's tile rule ------------------------------------

SKINNY_F16 = "kernel mm(a: f16[M, K], b: f16[K, N], bias: f32[N]) -> f16[M, N] { return relu(a @ b + bias) }"
SKINNY_TF32 = ("kernel lin(x: f32[M, K], w: f32[N, K]) -> f32[M, N] { return x @ w.T }\n"
               "schedule lin { tf32(true) }")


def _tensor_core_split_variants():
    for label, src in (("f16", SKINNY_F16), ("tf32", SKINNY_TF32)):
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        for arch in ARCHS:
            seen = set()
            for s in candidates(problem(g, lay, dict(M=256, K=65536, N=256), arch=arch), k.hints):
                if s.mma and s.splits and s.code not in seen:
                    seen.add(s.code)
                    for stage in (1, 2):
                        yield pytest.param(k, g, lay, s, stage, arch, id=f"{label}-{s.tag}-s{stage}-{arch}")


TC_SPLIT_VARIANTS = list(_tensor_core_split_variants())


def test_the_tensor_core_split_candidates_cover_wgmma_and_mma_sync():
    tags = {(v.values[3].tag, v.values[5]) for v in TC_SPLIT_VARIANTS}
    assert any("_wg_" in t and a == "sm_90a" for t, a in tags) and any("_wg_tf32_" in t for t, _ in tags)
    assert any("_tc_" in t and a == "sm_80" for t, a in tags)
    assert all("_sk_" in t for t, _ in tags)


@pytest.mark.parametrize("k,g,lay,s,stage,arch", TC_SPLIT_VARIANTS)
def test_every_tensor_core_split_k_variant_compiles_without_spills(k, g, lay, s, stage, arch):
    ks, compiled, usage = _compile(k, g, lay, s, arch, stage)
    assert usage.spill_stores == 0 and usage.spill_loads == 0 and usage.local_bytes == 0, usage
    sass = toolchain.sass(compiled.cubin)
    if stage == 1:     # the chunks multiply on tensor cores and store f32 partials (no epilogue)
        assert toolchain.has_instruction(sass, "HGMMA" if s.wgmma else "HMMA")
        assert "part0" in ks.source and "relu" not in ks.source.split('extern "C"')[1]
    else:              # the combining kernel: no tensor cores, no shared memory, the epilogue
        assert not toolchain.has_instruction(sass, "HGMMA") and not toolchain.has_instruction(sass, "HMMA")
        assert usage.shared_bytes == 0 and "nsplit" in ks.source


# (M, N, K) -> (the block tile's M x N, K chunks) of the f16 default on Hopper, as measured
# (scripts/gemm_sweep.py cases 19-34, H100 2026-11-22; 1024x1024x8192 and 768x768x8192 with
# TMA copies, 17:48: unsplit 64x128 tiles in 8 stages, where cp.async's split 128x256; the
# splits of 256x256x65536, 512x512x16384 and 384x384x32768 under sustained load, 2026-11-26,
# and the uneven splits, 768x768x8192 and seven held-out shapes)
WGMMA_DEFAULTS = {(256, 256, 65536): ((64, 128), 16), (512, 512, 16384): ((64, 128), 4),
                  (384, 384, 32768): ((128, 128), 8),
                  (1024, 1024, 8192): ((64, 128), 0), (64, 4096, 16384): ((64, 128), 4),
                  (64, 1024, 65536): ((64, 128), 16),
                  # split unevenly where no power of two fills more SMs than the unsplit tiles
                  (768, 768, 8192): ((128, 128), 3), (512, 512, 6144): ((64, 128), 3),
                  (1024, 768, 16384): ((128, 256), 5), (384, 1536, 16384): ((128, 256), 7),
                  (768, 768, 4096): ((64, 128), 0), (896, 896, 8192): ((64, 128), 0),
                  # but not in two chunks of 2048: 128x4096x4096 19.4 us unsplit, 24.0 split
                  (512, 512, 4096): ((64, 128), 0), (128, 4096, 4096): ((64, 128), 0),
                  # as many SMs filled by a tile twice as large: not worth a second kernel
                  (1024, 1024, 4096): ((64, 128), 0), (16, 8192, 8192): ((64, 64), 0),
                  (1024, 2048, 8192): ((128, 128), 0), (2048, 2048, 8192): ((128, 256), 0),
                  (1536, 1536, 4096): ((128, 192), 0), (1000, 1000, 1000): ((64, 128), 0),
                  (4096, 4096, 4096): ((128, 256), 0), (8192, 8192, 1024): ((128, 256), 0)}


@pytest.mark.parametrize("shape", list(WGMMA_DEFAULTS), ids=lambda s: "x".join(map(str, s)))
def test_the_warpgroup_default_tile_and_split(shape):
    m, n, kk = shape
    k = tiledsl.compile("kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }")
    first, *rest = sources_for(k, dict(M=m, N=n, K=kk))
    tile, splits = WGMMA_DEFAULTS[shape]
    assert first.schedule.wgmma and first.schedule.tile[:2] == tile and first.schedule.splits == splits
    assert [ks.name[-3:] for ks in rest] == (["_s2"] if splits else [])
    assert first.schedule.tma == (tile != (64, 64))
    if tile == (64, 128) and not splits:
        assert first.schedule.stages == (8 if kk >= 2048 else 5)
    if splits and m > 64:   # a split block alone on its SM: shared memory full of stages
        assert first.schedule.stages == {(64, 128): 8, (128, 128): 6, (128, 256): 4}[tile]
        assert first.schedule.specialized == (tile == (64, 128))
    if not splits:     # grouped 8 row tiles at a time wherever there are several, even in one wave
        assert first.schedule.group == (8 if m > tile[0] else 0)


def test_cp_async_tiles_still_split_at_equal_fill():
    """Without TMA (b has one of the product's two batch dims: no map coordinate for
    it) a split 128x256 tile still beats 64x128 tiles filling as many SMs (H100: +19-21%)."""
    k = tiledsl.compile("kernel bmm(a: f16[B, H, M, K], b: f16[H, K, N]) -> f16[B, H, M, N] { return a @ b }")
    first, final = sources_for(k, dict(B=1, H=1, M=1024, N=1024, K=8192))
    assert not first.schedule.tma and first.schedule.tile[:2] == (128, 256) and first.schedule.splits == 4


def test_split_k_on_tensor_cores_elsewhere_and_when_pinned():
    k = tiledsl.compile("kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }")
    ampere, _ = sources_for(k, dict(M=256, N=256, K=65536), arch="sm_80")
    assert ampere.schedule.mma and not ampere.schedule.wgmma and ampere.schedule.splits >= 2
    # split_k(n) keeps f16 on the tensor cores (it used to move the product to CUDA cores)
    pinned = tiledsl.compile("kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }\n"
                             "schedule mm { split_k(3) }")
    for arch in ARCHS:
        first, final = sources_for(pinned, dict(M=300, N=200, K=1000), arch=arch)
        assert first.schedule.mma and first.schedule.splits == 3 and final.name.endswith("_s2")
    one, = sources_for(tiledsl.compile("kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }\n"
                                       "schedule mm { split_k(1) }"), dict(M=256, N=256, K=65536))
    assert not one.schedule.splits


def test_a_split_k_combining_launch_asks_for_no_shared_memory():
    from tiledsl.schedule.choose import launches
    k = tiledsl.compile(SKINNY_F16)
    g = partition(k.graph)[0]
    p = problem(g, plan_layout(g, k.graph), dict(M=256, K=65536, N=256))
    first, final = launches(p, default(p))
    assert first.shared_bytes == first.schedule.shared_bytes > 48 * 1024 and final.shared_bytes == 0
    assert first.grid[2] == first.schedule.splits and final.stage == 2


def test_split_k_counts_outside_2_to_64_are_refused():
    s = Schedule("matmul", block=256, tile=(128, 128, 64), micro=(64, 128), mma=True, wgmma=True, vec=8,
                 stages=4, splits=8)
    assert "_sk_" in s.tag and s.code.splits == 2
    with pytest.raises(tiledsl.TdslError, match="2 to 64 chunks"):
        replace(s, splits=65)


def test_short_k_products_share_each_sm_between_two_blocks():
    # at most 4 K tiles (attention's head dim of 64, say): two 128x128 blocks an SM
    k = tiledsl.compile((EXAMPLES / "batched_matmul.tdsl").read_text())
    [ks] = sources_for(k, dict(B=32, M=512, N=512, K=64))
    assert ks.schedule.wgmma and ks.schedule.tile[:2] == (128, 128) and ks.schedule.min_blocks == 2
    compiled = toolchain.compile_cuda(ks.source, arch="sm_90a")
    usage = compiled.resources[ks.name]
    assert usage.registers * ks.schedule.block * 2 <= 65536 and usage.spill_stores == 0, usage
    assert 2 * ks.schedule.shared_bytes <= 228 * 1024
    mm = tiledsl.compile("kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }")
    assert sources_for(mm, dict(M=4096, N=4096, K=512))[0].schedule.min_blocks == 1   # longer K: 128x256


# -- short rows and skinny transposes ---------------------------------------------------------------

@pytest.mark.parametrize("name,length,vec,threads", [
    ("softmax", 1, 1, 1), ("softmax", 3, 1, 2), ("softmax", 8, 4, 2), ("softmax", 13, 1, 8),
    ("softmax", 16, 4, 4), ("softmax", 64, 4, 16), ("softmax", 100, 4, 32), ("softmax", 101, 1, 32),
    ("softmax", 128, 4, 32), ("rmsnorm", 8, 8, 1), ("rmsnorm", 13, 1, 8), ("rmsnorm", 64, 8, 8),
    ("softmax", 129, None, None), ("rmsnorm", 129, None, None)])
def test_short_rows_take_part_of_a_warp_each(name, length, vec, threads):
    """short_row_schedule: rows of at most 128 elements take the fewest threads (1 to
    32) that hold at most 16 bytes each in at most 4 accesses and use half of each
    sector they read (the general rule gave a row of 8 elements 64 threads); longer
    rows take a warp each. Each compiles without spilling; where rows share a
    warp, each row's reduction shuffles within its own lanes."""
    k = tiledsl.compile(EXAMPLES / f"{name}.tdsl")
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    s = default(problem(g, lay, dict(M=1 << 17, N=length), hbm_gbps=3352.0))
    if vec is None:     # longer: a warp or half of one a row (warp_row_schedule, below)
        assert (s.block, s.row_threads) in ((128, 32), (256, 16)), s
        return
    assert (s.kind, s.block, s.row_threads, s.vec) == ("reduce_row", 256, threads, vec), s
    assert s.items * s.vec * threads >= length > (s.items * s.vec - 1) * threads or s.items == 1, s
    assert s.hoist == (name == "softmax")       # rmsnorm's weight is loaded where it is used
    for arch in ARCHS:
        ks, _, usage = _compile(k, g, lay, s, arch)
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (length, arch, usage)
    shuffles = re.findall(r"tdsl::warp_reduce<tdsl::\w+, (\d+)>", ks.source)
    assert shuffles == ([str(threads)] * {"softmax": 2, "rmsnorm": 1}[name] if threads > 1 else []), shuffles


LAYERNORM16 = ("kernel l(x: f16[M, N], w: f16[N], b: f16[N]) -> f16[M, N] {\n mu = mean(x, axis=N)\n"
               " xc = x - mu\n return xc * rsqrt(mean(xc * xc, axis=N) + 1e-5) * w + b\n}")
LSE32 = "kernel l(x: f32[M, N]) -> f32[M] {\n m = max(x, axis=N)\n return m + log(sum(exp(x - m), axis=N))\n}"


@pytest.mark.parametrize("src,length,vec,peel,threads", [
    ("softmax", 129, 1, False, 32), ("softmax", 200, 4, False, 32), ("softmax", 257, 1, False, 32),
    ("softmax", 511, 1, False, 32), ("softmax", 512, None, None, None), ("rmsnorm", 129, 1, False, 16),
    ("rmsnorm", 159, 1, False, 16), ("rmsnorm", 161, 1, False, 32), ("rmsnorm", 255, 1, False, 32),
    (LAYERNORM16, 197, 1, False, 32),
    ("rmsnorm", 256, 8, False, 16), ("rmsnorm", 257, 1, False, 32), ("rmsnorm", 513, 8, True, 32),
    ("rmsnorm", 1001, 8, True, 32), ("rmsnorm", 1024, None, None, None), ("layernorm", 200, 8, False, 16),
    ("layernorm", 257, 1, False, 32), ("layernorm", 1000, 8, False, 32), (LAYERNORM16, 513, 1, False, 32),
    (LSE32, 1000, 4, False, 32), (LSE32, 1021, 4, True, 32), (LSE32, 1023, None, None, None)])
def test_many_light_rows_take_a_warp_each_four_a_block(src, length, vec, peel, threads):
    """warp_row_schedule: rows longer than 128 elements that move fewer than 4096 bytes
    (read and written; a weight over N read from cache) take a warp each, 4 rows a block
    of 128 (rows of at most 512 bytes an input: half a warp, 16 rows a block of 256; read
    element by element with a branch per element, at most 320 bytes: rmsnorm over 159, not 161): a
    block a row was bound by how fast SMs take in blocks. In vectors, peeled where the
    length alone breaks alignment, from 512 elements, and the weights are no heavier than
    the row (layernorm's weight and bias are not), else element by element; 4096 bytes or more
    (softmax f32 over 512, rmsnorm f16 over 1024, logsumexp f32 over 1023: 4092 and a
    result), the general rule, a block a row. Each
    compiles without spilling; a row's reductions shuffle across its warp, never through
    shared memory."""
    k = tiledsl.compile(EXAMPLES / f"{src}.tdsl" if "kernel" not in src else src)
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    s = default(problem(g, lay, dict(M=1 << 16, N=length), hbm_gbps=3352.0))
    if vec is None:
        assert s.row_threads >= 64 and s.row_threads == s.block, s
        return
    assert (s.kind, s.block, s.row_threads, s.vec, s.peel) == ("reduce_row", 4096 // threads, threads, vec, peel), s
    assert s.items * s.vec * threads >= length - (2 * vec - 2 if peel else 0), s
    pinned = default(problem(g, lay, dict(M=1 << 16, N=length), hbm_gbps=3352.0), Hints(threads=64))
    assert pinned.row_threads == pinned.block == 64, pinned       # threads(n) pins the general rule
    for arch in ARCHS:
        ks, _, usage = _compile(k, g, lay, s, arch)
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (length, arch, usage)
    body = ks.source[ks.source.index('extern "C"'):]
    assert set(re.findall(r"tdsl::warp_reduce<tdsl::\w+, (\d+)>", body)) == {str(threads)}, body
    assert "block_reduce" not in body and "__syncthreads" not in body, body


SOFTMAX_OF = "kernel s(x: {t}[M, N]) -> {t}[M, N] {{\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}}"
GATED_RMSNORM = ("kernel g(x: f16[M, N], w: f16[N]) -> f16[M, N] "
                 "{ return silu(x) * rsqrt(mean(x * x, axis=N) + 1e-6) * w }")
LSE16 = "kernel l(x: f16[M, N]) -> f32[M] {\n m = max(f32(x), axis=N)\n return m + log(sum(exp(f32(x) - m), axis=N))\n}"


@pytest.mark.parametrize("src,length,threads,keep,branchless", [
    (SOFTMAX_OF.format(t="f16"), 197, 16, True, True), (SOFTMAX_OF.format(t="f16"), 129, 16, True, True),
    (SOFTMAX_OF.format(t="bf16"), 255, 16, True, True), (SOFTMAX_OF.format(t="f32"), 13, 8, True, True),
    (LSE16, 199, 16, True, True), (SOFTMAX_OF.format(t="f16"), 257, 32, True, False),
    (SOFTMAX_OF.format(t="f16"), 511, 32, True, False), (SOFTMAX_OF.format(t="f32"), 199, 32, True, False),
    (GATED_RMSNORM, 197, 32, True, False), ("rmsnorm", 129, 16, False, False), ("rmsnorm", 161, 32, False, False),
    ("layernorm", 257, 32, False, False),
    (SOFTMAX_OF.format(t="f16"), 256, 16, False, False)])
def test_rows_read_element_by_element_keep_costly_values_and_share_warps_without_branches(
        src, length, threads, keep, branchless):
    """Rows of a warp or part of one, read element by element (a length that breaks
    16-byte alignment), are bound by instructions where each element takes a costly
    function: such a default keeps the values a later phase needs again (exp(x - max))
    where its elements take at most ELEMENT_KEEP_WORDS registers, and where rows share
    a warp, computes every element it holds and leaves those past the row's end out by a
    select and a predicate, not a branch around each. Weights loaded late keep the
    branches (more registers there cost more than the branches); so do rows without a
    costly function (rmsnorm, layernorm: nothing to keep) and rows in vectors. Each
    compiles without spilling."""
    k = tiledsl.compile(EXAMPLES / f"{src}.tdsl" if "kernel" not in src else src)
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    s = default(problem(g, lay, dict(M=1 << 16, N=length), hbm_gbps=3352.0))
    assert (s.row_threads, s.keep, s.vec == 1) == (threads, keep, length % 8 != 0), s.tag
    for arch in ARCHS:
        ks, compiled, usage = _compile(k, g, lay, s, arch)
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (length, arch, usage)
    assert ("const bool inside" in ks.source) == branchless, s.tag
    if branchless:      # no branch per element: those left are the shuffles' (and their fallback's)
        branches = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))["BSSY"]
        assert branches <= 1 + ks.source.count("tdsl::warp_reduce<"), (s.tag, branches)
        if any(set(op.dims) & set(g.axes) for op in lay.outputs):      # results over the row: stored where inside
            assert "if (live && inside)" in ks.source, ks.source


@pytest.mark.parametrize("name,length,hbm_gbps,warp", [
    ("rmsnorm", 1024, 3352.0, False), ("rmsnorm", 1024, 4800.0, True), ("rmsnorm", 1024, 0.0, False),
    ("rmsnorm", 1432, 4800.0, True), ("rmsnorm", 1440, 4800.0, False), ("softmax", 1024, 4800.0, False),
    ("layernorm", 1000, 3352.0, True), ("layernorm", 1000, 0.0, True)])
def test_faster_memory_gives_heavier_rows_a_warp(name, length, hbm_gbps, warp):
    """warp_row_bytes: 4096 bytes a row, or what the GPU's peak bandwidth moves in 1.2 ns
    (the time the SMs take to take in a block) where that is more: 5760 on an H200 (4800
    GB/s). There rmsnorm rows of 1024 and 1432 f16 take a warp each; rows of 1440 (5760
    bytes) take a block, as softmax f32 rows of 1024 (8192) do. On an H100, or where the
    bandwidth is not known (0): 4096."""
    k = tiledsl.compile(EXAMPLES / f"{name}.tdsl")
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    s = default(problem(g, lay, dict(M=1 << 16, N=length), hbm_gbps=hbm_gbps))
    assert (s.row_threads == 32 and s.block == 128) == warp, s.tag
    assert (s.row_threads == s.block) != warp, s.tag


@pytest.mark.parametrize("extents,tile", [
    (dict(M=8, N=4194304), (512, 8)), (dict(M=3, N=1000), (1024, 4)), (dict(M=15, N=70001), (256, 16)),
    (dict(M=2, N=300), (2048, 2)),
    # the innermost loop short: walked flat (rows of the operand across it come from cache)
    (dict(M=4194304, N=8), ()), (dict(M=5, N=100), ()), (dict(M=1, N=5000), ())])
def test_a_transpose_with_a_short_loop_takes_a_skinny_tile(extents, tile):
    """skinny_tile: `x.T` with one loop 2 to 15 long, the other at least 256, moves
    whole lines of the short side through shared memory (x.T of [8, 2^22] f32 walked
    flat wrote each element in a sector of its own: 17x slower). Compiles without
    spilling, its staged tile in static shared memory."""
    k = tiledsl.compile("kernel t(x: f32[M, N]) -> f32[N, M] { return x.T }")
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    s = default(problem(g, lay, extents, hbm_gbps=3352.0))
    assert s.kind == "pointwise" and s.tile == tile, s
    if tile:
        for arch in ARCHS:
            _, _, usage = _compile(k, g, lay, s, arch)
            assert usage.spill_stores == 0 and usage.local_bytes == 0 and usage.shared_bytes <= 48 * 1024


@pytest.mark.parametrize("columns,threads", [(1, 256), (5, 32), (8, 32), (33, 4), (200, 1), (4096, 1)])
def test_a_split_reduction_across_memory_takes_a_tile_of_columns(columns, threads):
    """split_schedule: a reduction over M of x[M, N] with few columns gives each column
    256 / columns threads (rounded to a power of two) of a 256-thread block, a warp
    reading whole lines, which combine through shared memory; it compiles without
    spilling. A schedule sharing a row among some threads of a block where rows lie
    along memory is refused with the reason."""
    k = tiledsl.compile("kernel c(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }")
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    s = default(problem(g, lay, dict(M=1 << 20, N=columns), hbm_gbps=3352.0))
    assert s.kind == "reduce_split" and s.splits >= 2, s
    if columns == 1:            # one row: a block-wide one, along memory
        assert s.row_threads == s.block, s
        return
    assert (s.block, s.row_threads) == (256, threads), s
    # the splits fill 132 SMs with 2 blocks' worth of threads that have a column, however
    # many of a tile's threads hang past the last one (33 columns: 132 of 256)
    busy = columns * threads
    assert (s.splits - 1) * busy < 2 * 132 * 256 <= s.splits * busy, (s.splits, busy)
    for arch in ARCHS:
        ks, _, usage = _compile(k, g, lay, s, arch)
        assert usage.spill_stores == 0 and usage.local_bytes == 0, usage
    kernel = ks.source[ks.source.index('extern "C"'):]
    assert ("__syncthreads()" in kernel) == (threads > 1)
    rows = tiledsl.compile("kernel r(x: f32[M, N]) -> f32[M] { return sum(x, axis=N) }")
    g = partition(rows.graph)[0]
    lay = plan_layout(g, rows.graph)
    along = replace(default(problem(g, lay, dict(M=4, N=1 << 20), hbm_gbps=3352.0)), row_threads=8)
    with pytest.raises(TdslError, match="only across memory"):
        render(rows.graph, g, lay, along, 1)


ONLINE_SOFTMAX = "kernel s(x: {t}[M, N]) -> {t}[M, N] {{\n e = exp(x - max(x, axis=N))\n return {t}(e / sum(e, axis=N))\n}}"
ONLINE_LSE = "kernel l(x: {t}[M, N]) -> {t}[M] {{\n m = max(x, axis=N)\n return {t}(m + log(sum(exp(x - m), axis=N)))\n}}"


@pytest.mark.parametrize("src,dtype,passes", [(ONLINE_SOFTMAX, "f32", 2), (ONLINE_SOFTMAX, "f16", 2),
                                              (ONLINE_LSE, "f32", 1), (ONLINE_LSE, "f64", 1)])
@pytest.mark.parametrize("threads", [0, 32, 1024])
def test_a_looped_row_takes_max_and_sum_of_exp_in_one_pass(src, dtype, passes, threads):
    """A row too long for registers is streamed by every phase; softmax and logsumexp
    take max(x) and sum(exp(x - max)) in one of them (tdsl::online_add_chunk; its exps on
    ex2.approx where a 16-bit result or a log hides their error), so a softmax reads its
    row twice and a logsumexp once (Schedule.online; False: a pass each). Rows kept in
    registers keep two phases. Compiles without spilling at a warp, a block and the
    default's threads a row."""
    k = tiledsl.compile(src.format(t=dtype))
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    # (rows held by a cluster's blocks where they would be streamed twice: not here)
    s = default(problem(g, lay, dict(M=64, N=100003), sm_count=132, hbm_gbps=3352.0), clusters=False)
    assert s.kind == "reduce_row" and s.items == 0, s
    if threads:
        s = replace(s, block=128 if threads == 32 else threads, row_threads=threads)
    for online in (True, False):        # and the two-pass twin the tuner may pick
        for arch in ARCHS:
            ks, _, usage = _compile(k, g, lay, replace(s, online=online), arch)
            assert usage.spill_stores == 0 and usage.local_bytes == 0, usage
        kernel = ks.source[ks.source.index('extern "C"'):]
        # rows of 100003 are peeled to aligned vectors (f64: 16 bytes are 2 of them): each
        # stream's head and tail go one element at a time, an online chunk each
        assert s.peel and s.vec == 16 // k.graph.params[0].dtype.itemsize
        # on ex2.approx where the error is hidden: a 16-bit softmax's rounding, an f32 logsumexp's log
        approx = dtype == "f16" or (src is ONLINE_LSE and dtype == "f32")
        assert kernel.count("tdsl::online_add_chunk<true>(") == 2 * online * approx
        assert kernel.count("tdsl::online_add_chunk(") == 2 * online * (not approx)
        assert kernel.count("for (idx_t first_c = rbegin + lane") == online
        assert kernel.count("for (idx_t c = rbegin + lane") == passes + 1 - 2 * online
        assert kernel.count("for (idx_t c = lane; c < ragged; c += TPR)") == passes + 1 - online
    held = default(problem(g, lay, dict(M=4096, N=1024), sm_count=132, hbm_gbps=3352.0))
    assert held.items > 0
    ks, _, _ = _compile(k, g, lay, held, "sm_90a")
    assert "online_add_chunk(" not in ks.source[ks.source.index('extern "C"'):]


# -- names in the generated CUDA -------------------------------------------------------------
_TYPE = (r"(?:const\s+)?(?:idx_t|int|unsigned|bool|float|double|long long|unsigned short|unsigned char|"
         r"signed char|short|tdsl::Vec<[^<>]+>)\s+")
_NAME = r"([A-Za-z_]\w*)\s*(?=[=\[;,)]|$)"


def _declared(statement: str) -> list[str]:
    """Names a statement declares: `T a = 1, b = 2` (top-level commas), or none."""
    m = re.match(r"\s*" + _TYPE + _NAME, statement)
    if not m:
        return []
    names, depth, rest = [m.group(1)], 0, statement[m.end():]
    for i, ch in enumerate(rest):
        depth += ch in "([{" and 1 or ch in ")]}" and -1 or 0
        if ch == "," and depth == 0:
            follow = re.match(r"\s*" + _NAME, rest[i + 1:])
            if follow:
                names.append(follow.group(1))
    return names


def shadowed_names(kernel: str) -> list[str]:
    """'name (line n)' for each declaration in `kernel` (the text from `extern "C"`) of a
    name an enclosing scope already declares. Scopes follow braces; a for-loop's
    variable belongs to the loop's body. Re-bound on purpose, so allowed: `row` (a
    prefetch or ring block names the row it loads so, and the row's coordinate lines
    serve it: everything after it in that scope too), and coordinates c<n>/q<n> in a
    bare block (`{` alone), where an offset is evaluated at other coordinates."""
    scopes: list[tuple[set, bool]] = [(set(), False)]      # (names, bare block)
    found = []

    def declare(name: str, n: int) -> None:
        outer = [i for i, (names, _) in enumerate(scopes[:-1]) if name in names]
        if outer and not (name == "row" or any("row" in names for names, _ in scopes[outer[-1] + 1:])
                          or (scopes[-1][1] and re.fullmatch(r"[cq]\d+", name))):
            found.append(f"{name} (line {n})")
        scopes[-1][0].add(name)

    for n, line in enumerate(kernel.splitlines(), 1):
        code = line.split("//")[0]
        pending = []
        head = re.match(r"\s*for\s*\((.*?);", code)
        if head:
            pending = _declared(head.group(1))
            code = code[head.end():]
            if not code.rstrip().endswith("{"):     # a loop without braces: one statement
                code = "{" + code + "}"
        bare = code.strip() == "{"
        for part in re.split(r"([{}])", code):
            if part == "{":
                scopes.append((set(), bare))
                for name in pending:
                    declare(name, n)
                pending = []
            elif part == "}":
                scopes.pop()
            else:
                for statement in part.split(";"):
                    for name in _declared(statement):
                        declare(name, n)
    return found


def test_the_scope_check_finds_a_shadowed_name():
    """The looped online pass once named its chunk loop `c0`, the row's own coordinate:
    every load read the wrong row (an illegal address on the GPU), and NVRTC said nothing."""
    bad = ("extern \"C\" __global__ void k(long long n0_arg) {\n    const idx_t c0 = row;\n"
           "    for (idx_t c0 = lane; c0 < rend; c0 += 16) {\n        x = c0;\n    }\n}\n")
    assert shadowed_names(bad) == ["c0 (line 3)"]
    fine = bad.replace("idx_t c0 = lane; c0 < rend; c0 += 16", "idx_t first_c = lane; first_c < rend; first_c += 16")
    assert shadowed_names(fine) == []
    assert shadowed_names("{\n int e = 0;\n for (int e = 0; e < 4; ++e) y[e] = 0;\n}\n") == ["e (line 3)"]
    nested = "{\n const idx_t a = f(1, 2), c1 = 2;\n for (int i = 0; i < 2; ++i) {\n float c1 = 0;\n }\n}\n"
    assert shadowed_names(nested) == ["c1 (line 4)"]


def _scope_variants():
    """Every candidate of the programs above at their sizes, and looped rows one pass or two."""
    for name, (src, extents) in PROGRAMS.items():
        k = tiledsl.compile(src)
        for g in partition(k.graph):
            lay = plan_layout(g, k.graph)
            for s in candidates(problem(g, lay, extents, arch="sm_90a")):
                yield name, k, g, lay, s
    for src in (ONLINE_SOFTMAX.format(t="f16"), ONLINE_LSE.format(t="f32")):
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        for s in candidates(problem(g, lay, dict(M=64, N=100003), arch="sm_90a")):
            yield "looped", k, g, lay, s


def test_no_generated_kernel_shadows_a_name():
    """No rendered kernel declares a name its enclosing scopes hold (NVRTC accepts it;
    the inner name silently wins)."""
    seen, bad = 0, []
    for name, k, g, lay, s in _scope_variants():
        for stage in (1, 2) if s.splits else (1,):
            text = render(k.graph, g, lay, s, stage).source
            found = shadowed_names(text[text.index('extern "C"'):])
            seen += 1
            if found:
                bad.append(f"{name} {s.tag} stage {stage}: {found[:3]}")
    assert seen > 500 and not bad, bad[:10]


def test_nvrtc_compiles_the_device_branches_of_the_helpers():
    """tdsl.cuh keeps host versions of a few helpers (#else of __CUDA_ARCH__, for the CPU
    tests that run kernels on the host); NVRTC must take the device ones: max.NaN and the
    f16 conversions in one instruction each."""
    k = tiledsl.compile("kernel f(x: f16[M, N]) -> f16[M] { return f16(max(x, axis=N)) }")
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    text = render(k.graph, g, lay, default(problem(g, lay, dict(M=64, N=4096))), 1)
    for arch in ARCHS:
        ops = toolchain.sass_opcodes(toolchain.sass(toolchain.compile_cuda(text.source, arch=arch).cubin))
        assert ops["FMNMX.NAN"] and ops["HADD2.F32"], ops


# -- vectors of columns ------------------------------------------------------------------------
COLUMN_PROGRAMS = [
    ("kernel c(x: f16[M, N]) -> f32[N] { return mean(x, axis=M) }", dict(M=9001, N=776), {2: "", 4: ".64", 8: ".128"}),
    ("kernel c(x: bf16[B, T, C], s: f32) -> bf16[B, C] { return bf16(max(x, axis=T) * s) }", dict(B=3, T=1001, C=264),
     {2: "", 4: ".64", 8: ".128"}),
    ("kernel c(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=5003, N=1028), {2: ".64", 4: ".128"}),
]


@pytest.mark.parametrize("src,extents,loads", COLUMN_PROGRAMS)
def test_a_reduction_across_memory_takes_vectors_of_columns(src, extents, loads):
    """Column reductions (and their splits) may take 2, 4 or 8 neighbouring columns a
    thread: one vector load a row where a thread a column read one element (2 bytes in
    f16), each column its own accumulator and its own store or partial. Every such
    candidate compiles for both targets without spilling and loads whole vectors."""
    k = tiledsl.compile(src)
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, extents, arch="sm_90a")
    vectors = [s for s in candidates(p) if s.vec > 1]
    assert {s.vec for s in vectors} == set(loads) and {s.kind for s in vectors} >= {"reduce_col"}
    for s in vectors:
        if s.unroll:
            continue
        for stage in (1, 2) if s.splits else (1,):
            text = render(k.graph, g, lay, s, stage)
            for arch in ARCHS:
                compiled = toolchain.compile_cuda(text.source, arch=arch)
                usage = compiled.resources[text.name]
                assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)
                if stage == 1 and arch == "sm_90a":
                    ops = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
                    assert {o for o in ops if o.startswith("LDG")} == {f"LDG.E{loads[s.vec]}.CONSTANT"}, (s.tag, ops)
            if stage == 1:
                assert f"row * {s.vec}" in text.source and f"[{s.vec}];" in text.source


def test_vectors_of_columns_are_refused_where_they_cannot_run():
    def refusal(src, extents, vec, misaligned=False, **change):
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        bad = frozenset(id(op) for op in lay.inputs) if misaligned else frozenset()
        p = problem(g, lay, extents, bad)
        return fits(p, replace(Schedule("reduce_col", block=256, vec=1, items=0, row_threads=1), vec=vec, **change))
    col = "kernel c(x: f16[M, N]) -> f32[N] { return sum(x, axis=M) }"
    assert refusal(col, dict(M=100, N=64), 8) == ""
    assert "multiple of 8" in refusal(col, dict(M=100, N=60), 8)
    assert "16-byte aligned" in refusal(col, dict(M=100, N=64), 8, misaligned=True)
    assert "at most 16 bytes" in refusal(col.replace("f16[M", "f32[M"), dict(M=100, N=64), 8)
    # a column's own inputs are held a lane each, read lane by lane: any layout
    weighted = "kernel c(x: f16[M, N], w: f32[N]) -> f32[N] { return sum(x, axis=M) * w }"
    assert refusal(weighted, dict(M=100, N=64), 8) == ""
    # a split's tile of columns takes vectors too (column_tile_split); a block one column wide does not
    assert fits(*_split_across(col, dict(M=100000, N=8), vec=2, row_threads=4)) == ""
    assert "row_threads 1" in fits(*_split_across(col, dict(M=100000, N=8), vec=2, row_threads=32))
    assert {s.vec for s in candidates(problem(*_group(weighted), dict(M=100, N=64)))} >= {1, 8}
    # sum(x - mean(x)) across memory: two kernels, the second reading the first's mean a column
    k = tiledsl.compile("kernel c(x: f32[M, N]) -> f32[N] { return sum(x - mean(x, axis=M), axis=M) }")
    second = partition(k.graph)[1]
    assert {s.vec for s in candidates(problem(second, plan_layout(second, k.graph), dict(M=100000, N=64)))} >= {1, 4}


def test_an_online_pair_in_vectors_of_columns_takes_chunks_of_at_most_eight_rows():
    """Each lane of a vector of columns holds a chunk of the pair's rows (xs[lanes][steps]):
    at most cuda.ONLINE_CHUNK of them, whatever the unroll. Vectors of 2 f16 columns
    unrolled 16 deep took 32 registers of chunk and spilled 8 bytes at 64 registers under
    NVRTC 13.0 (the device's; a GPU test's warning found it). No candidate spills."""
    src = ("kernel l(x: f16[B, T, C]) -> f32[B, C] {\n m = max(f32(x), axis=T)\n"
           " return m + log(sum(exp(f32(x) - m), axis=T))\n}")
    k = tiledsl.compile(src)
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, dict(B=2, T=40009, C=264), frozenset(), 132, "sm_90a")
    picked = [s for s in candidates(p, k.hints) if s.kind == "reduce_col" and s.vec > 1]
    assert {(s.vec, s.unroll) for s in picked} >= {(2, 16), (4, 16), (8, 8)}
    for s in picked:
        ks = render(k.graph, g, lay, s, 1)
        lanes, steps = map(int, re.search(r"xs\[(\d+)\]\[(\d+)\];", ks.source).groups())
        assert lanes == s.vec and steps <= cuda.ONLINE_CHUNK, (s.tag, lanes, steps)
        usage = toolchain.compile_cuda(ks.source, arch="sm_90a").resources[ks.name]
        assert usage.spill_stores == 0 and usage.spill_loads == 0, (s.tag, usage)


@pytest.mark.parametrize("src,extents", [
    ("kernel c(x: f16[B, T, C]) -> f32[B, C] { return sum(x, axis=T) }", dict(B=2, T=5001, C=136)),
    ("kernel c(x: bf16[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=20011, N=64))])
def test_no_tile_of_columns_the_tuner_offers_spills(src, extents):
    """Tiles of 16-byte vectors of columns (columns.column_tile_split): registers for 2048
    threads only where a lane's one accumulator is all it keeps beside its index; a middle
    axis's index spilled 16-32 bytes at 32 registers (the GPU tests' warnings, 2026-12-02)."""
    k = tiledsl.compile(src)
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, extents, frozenset(), 132, "sm_90a")
    tiles = {replace(s, splits=2): s for s in candidates(p, k.hints) if s.kind == "reduce_split" and s.vec == 8}
    assert tiles and any(s.min_blocks > 1 for s in tiles) == (len(extents) == 2)
    for s in tiles:
        ks = render(k.graph, g, lay, s, 1)
        usage = toolchain.compile_cuda(ks.source, arch="sm_90a").resources[ks.name]
        assert usage.spill_stores == 0 and usage.spill_loads == 0, (s.tag, usage)


def test_many_16_bit_columns_take_a_tile_with_chunks_of_16_loads():
    """Over 16896 columns or more (a middle axis: sums over T of f16 B x T x C), a thread a
    column read 2 bytes a row; 16-bit columns take tiles of 8-column vectors there down to
    chunks of 16 loads a thread (elsewhere 32), and compile without spills. f32 columns
    and chunks shorter than that keep a thread a column."""
    src = "kernel f(x: {t}[B, T, C]) -> f32[B, C] {{ return sum(x, axis=T) }}"
    g, lay = _group(src.format(t="f16"))
    s = default(problem(g, lay, dict(B=64, T=1024, C=512), frozenset(), 132, "sm_90a", 4800.0))
    assert (s.kind, s.vec, s.block) == ("reduce_split", 8, 512), s.tag
    assert 1024 // s.splits // s.row_threads == 16, (s.splits, s.row_threads)
    k = tiledsl.compile(src.format(t="f16"))
    [gk] = partition(k.graph)
    ks, _, usage = _compile(k, gk, plan_layout(gk, k.graph), s, "sm_90a")
    assert usage.spill_stores == 0 and usage.local_bytes == 0, usage
    short = default(problem(g, lay, dict(B=64, T=512, C=512), frozenset(), 132, "sm_90a", 4800.0))
    assert (short.kind, short.vec, short.row_threads) == ("reduce_split", 1, 1), short.tag
    g32, lay32 = _group(src.format(t="f32"))
    wide = default(problem(g32, lay32, dict(B=64, T=1024, C=512), frozenset(), 132, "sm_90a", 4800.0))
    assert (wide.kind, wide.vec, wide.row_threads) == ("reduce_split", 1, 1), wide.tag


RESIDUAL_NORMS = [     # a residual add returned beside its norm (and a softmax of two row inputs)
    "kernel f(x: {t}[M, N], r: {t}[M, N], w: {w}[N], b: {w}[N]) -> ({t}[M, N], {t}[M, N]) {{\n"
    " h = x + r\n c = h - mean(h, axis=N)\n return c * rsqrt(mean(c * c, axis=N) + 1e-5) * w + b, h\n}}",
    "kernel f(x: {t}[M, N], r: {t}[M, N], w: {w}[N]) -> ({t}[M, N], {t}[M, N]) {{\n"
    " h = x + r\n return h, h * rsqrt(mean(h * h, axis=N) + 1e-6) * w\n}}",
    "kernel f(x: {t}[M, N], r: {t}[M, N], w: {w}[N]) -> {t}[M, N] {{\n"
    " h = x * r + w\n e = exp(h - max(h, axis=N))\n return e / sum(e, axis=N)\n}}"]


@pytest.mark.parametrize("t,w", [("f16", "f32"), ("bf16", "f16")])
@pytest.mark.parametrize("src", RESIDUAL_NORMS, ids=["layernorm", "rmsnorm", "softmax"])
def test_a_peeled_row_s_unrolls_count_its_weights(src, t, w):
    """The tuner's explicit unrolls of a peeled row (rows.stream_unrolls) count its weights'
    vectors beside its rows' (registers.peeled_weight_words): a residual add and its f16 layernorm at
    67 x 40003, 4 iterations deep (8 words of x and r, 16 of f32 w and b each), spilled 12 bytes
    at 64 registers (sm_90a; the GPU tests' spill warnings, 2026-12-04). None spills now."""
    k = tiledsl.compile(src.format(t=t, w=w))
    [g] = partition(k.graph)
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, dict(M=67, N=40003), frozenset(), 132, "sm_90a", 4800.0)
    unrolled = [s for s in candidates(p) if s.kind == "reduce_row" and s.peel and s.unroll]
    for s in unrolled:
        _, _, usage = _compile(k, g, lay, s, "sm_90a")
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)
    if w == "f32" and "c = h" in src:
        assert not any(s.unroll == 4 for s in unrolled), [s.tag for s in unrolled]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("t,w,cap", [("f16", "f32", 24), ("bf16", "f32", 24), ("f16", "f16", 32), ("bf16", "bf16", 32)])
def test_a_residual_row_held_beside_late_weights_holds_fewer_elements(t, w, cap, arch):
    """registers.late_weights_crowd: the layernorm of x + r beside f32 w and b held 40 elements a
    thread at 1001 x 36000 and 32 in a cluster's block at 50000 to 100000, and spilled 32 and 8
    bytes at 64 registers on sm_90a; beside f16 w and b, 40 spilled 8 bytes on sm_80 (the CPU's
    spill check of 2026-12-05). Its defaults hold at most 24 and 32 now and spill none; where the
    default copies the row by a cluster's blocks instead (rows.wide_rows_copied), the share they
    would hold does."""
    k = tiledsl.compile(RESIDUAL_NORMS[0].format(t=t, w=w))
    [g] = partition(k.graph)
    lay = plan_layout(g, k.graph)
    held = []
    for n in (36000, 50000, 100000):
        p = problem(g, lay, dict(M=1001, N=n), frozenset(), 132, arch, 4800.0)
        s = default(p)
        if s.shared_row and s.cluster > 1:
            s = rows.cluster_row_schedule(p, s.vec) or s
        if s.items:
            held.append(s.items * s.vec)
            _, _, usage = _compile(k, g, lay, s, arch)
            assert usage.spill_stores == 0 and usage.local_bytes == 0, (n, s.tag, usage)
    assert max(held, default=0) <= cap and (held or arch == "sm_80"), held


MANY_INPUT_ROWS = {     # rows beside several row inputs or many weights: {t} the rows' dtype, {w} the weights'
    "rmsnorm of x + r": "kernel f(x: {t}[M, N], r: {t}[M, N], w: {w}[N]) -> ({t}[M, N], {t}[M, N]) {{\n"
                        " h = x + r\n return h, h * rsqrt(mean(h * h, axis=N) + 1e-6) * w\n}}",
    "softmax of x * r + w": RESIDUAL_NORMS[2],
    "layernorm of x + r + q": "kernel f(x: {t}[M, N], r: {t}[M, N], q: {t}[M, N], w: {w}[N], b: {w}[N]) -> {t}[M, N] {{\n"
                              " h = x + r + q\n c = h - mean(h, axis=N)\n"
                              " return c * rsqrt(mean(c * c, axis=N) + 1e-5) * w + b\n}}",
    "layernorm, three weights": "kernel f(x: {t}[M, N], w: {w}[N], b: {w}[N], g: {w}[N]) -> {t}[M, N] {{\n"
                                " c = x - mean(x, axis=N)\n return c * rsqrt(mean(c * c, axis=N) + 1e-5) * w + b * g\n}}",
    "layernorm of x + r": RESIDUAL_NORMS[0],
    "softmax of x + r": "kernel f(x: {t}[M, N], r: {t}[M, N]) -> ({t}[M, N], {t}[M, N]) {{ h = x + r\n"
                        " e = exp(h - max(h, axis=N))\n return e / sum(e, axis=N), h }}",
    "logsumexp of x + r": "kernel f(x: {t}[M, N], r: {t}[M, N]) -> f32[M] {{ h = f32(x) + f32(r)\n"
                          " m = max(h, axis=N)\n return log(sum(exp(h - m), axis=N)) + m }}",
    "column sum of x * r": "kernel f(x: {t}[M, N], r: {t}[M, N]) -> f32[N] {{ return sum(f32(x) * f32(r), axis=M) }}",
    "layernorm": "kernel f(x: {t}[M, N], w: {w}[N], b: {w}[N]) -> {t}[M, N] {{\n"
                 " c = x - mean(x, axis=N)\n return c * rsqrt(mean(c * c, axis=N) + 1e-5) * w + b\n}}"}


HEAVIER_WEIGHTS = {     # programs whose weights over N take twice the row's bytes an element, or four times
    "all-bf16 layernorm": ((EXAMPLES / "layernorm.tdsl").read_text().replace("f16", "bf16")
                           .replace("f32[N]", "bf16[N]"), True),
    "all-f16 layernorm": ((EXAMPLES / "layernorm.tdsl").read_text().replace("f32[N]", "f16[N]"), True),
    "layernorm of x + r": (MANY_INPUT_ROWS["layernorm of x + r"].format(t="f16", w="f32"), True),
    "rmsnorm f16 with an f32 w": (test_gpu_memory.RMSNORM_F32_W, True),
    "layernorm f16 with f32 w and b": ((EXAMPLES / "layernorm.tdsl").read_text(), False)}


@pytest.mark.parametrize("name", HEAVIER_WEIGHTS)
def test_long_rows_whose_weights_take_twice_their_bytes_are_held_peeled(name):
    """rows.held_peel_weights_fit: a long row of an odd length, 8192 elements or more, is held peeled
    (its weights gathered lane by lane) where its weights take at most twice its bytes an element (H200
    2026-12-05: 9-12% faster than read element by element at 8193 and 20001; H100 2026-12-06: 2-37%
    at five shapes, a cluster's share of 40003 too), and read element by element (held or looped) at
    four times, and below 8192 elements. Rows of more than 64 KB that two copies fit an SM's shared
    memory are copied there peeled instead (rows.shared_row_schedule: the 16-bit rows of 40003, x + r
    at 20001), and longer ones by 4 blocks of a cluster (rows.copied_cluster_share: x + r at 40003).
    The peeled defaults compile for sm_90a and sm_80 without spilling."""
    src, peeled = HEAVIER_WEIGHTS[name]
    k, g, lay = _kernel_group(src)
    for (m, n), long in (((16384, 4097), False), ((4096, 8193), True), ((4096, 20001), True),
                         ((300, 3001), False), ((1001, 40003), True)):
        p = problem(g, lay, dict(M=m, N=n), frozenset(), 132, "sm_90a", 4800.0)
        assert rows.weights_outweigh_row(p) and rows.held_peel_weights_fit(p) == (peeled and n >= 8192)
        s = default(p)
        if peeled and long:
            copied = n == 40003 or (n, name) == (20001, "layernorm of x + r")     # (over 64 KB a row)
            assert (s.peel, s.vec, s.items > 0, s.shared_row) == (True, 8, not copied, copied), (m, n, s.tag)
            assert s.cluster == (4 if (name, n) == ("layernorm of x + r", 40003) else 1), s.tag
            for arch in ARCHS if s.cluster == 1 else ("sm_90a",):
                usage = _compile(k, g, lay, default(replace(p, arch=arch)), arch)[2]
                assert usage.spill_stores == 0 and usage.local_bytes == 0, (arch, m, n, usage)
        else:
            assert (s.peel, s.vec) == (False, 1), (m, n, s.tag)


SHIFTED_DEFAULTS = [   # (program, M, N, arch, shifted, copied): rows.shifted_where_heavier
    ("layernorm of x + r", 4096, 8193, "sm_90a", True, False),      # 512 threads, 2 vectors a thread
    ("layernorm of x + r", 4096, 8193, "sm_80", False, False),      # (44 registers there: 48 shifted)
    ("layernorm of x + r", 4096, 20001, "sm_90a", True, True),      # 80 KB a row: copied, two an SM
    ("layernorm of x + r", 1001, 40003, "sm_90a", True, True),      # copied by 4 blocks of a cluster
    ("layernorm of x + r", 100, 40003, "sm_90a", False, False),     # fewer rows than SMs: held by 4 blocks
    ("rmsnorm f16 with an f32 w", 4096, 20001, "sm_90a", True, False),
    ("rmsnorm f16 with an f32 w", 8192, 8193, "sm_90a", True, False),   # one weight: 8 vectors beside it fit
    ("all-f16 layernorm", 8192, 8193, "sm_90a", False, False),      # 8 vectors beside two weights: 64 registers
    ("all-f16 layernorm", 2048, 40001, "sm_90a", True, True),
    ("all-bf16 layernorm", 1001, 40003, "sm_80", True, True)]


@pytest.mark.parametrize("name,m,n,arch,shifted,copied", SHIFTED_DEFAULTS,
                         ids=[f"{c[0]}-{c[1]}x{c[2]}-{c[3]}" for c in SHIFTED_DEFAULTS])
def test_weights_heavier_than_a_peeled_row_are_shifted_where_they_fit(name, m, n, arch, shifted, copied):
    """rows.shifted_where_heavier: a peeled row (held, or copied into shared memory) whose weights take
    twice its bytes reads them in vectors shifted by its head where the shifted vectors fit its
    registers (H200 2026-12-06: 14-26% faster than gathered at six shapes), else gathers them; rows too
    long for two copies an SM are copied by 4 blocks of a cluster from as many rows as SMs (fewer: held
    by the cluster's blocks, whose shifted weights do not fit 44 registers); the same
    program with weights no heavier than its rows (16-bit weights beside 16-bit x + r, or a 16-bit w
    beside an f16 x) keeps gathering them. Each shifted default compiles without spilling."""
    k, g, lay = _kernel_group(HEAVIER_WEIGHTS[name][0])
    p = problem(g, lay, dict(M=m, N=n), frozenset(), 132 if arch == "sm_90a" else 108, arch,
                4800.0 if arch == "sm_90a" else 2000.0)
    s = default(p)
    assert (s.peel, s.vec, s.shift, s.shared_row) == (True, 8, shifted, copied), s.tag
    if not shifted:
        assert "registers a thread" in fits(p, replace(s, shift=True)), s.tag
    else:
        usage = _compile(k, g, lay, s, arch)[2]
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)
    light = HEAVIER_WEIGHTS[name][0].replace("f32[N]", "f16[N]")
    if light != HEAVIER_WEIGHTS[name][0]:
        k, g, lay = _kernel_group(light)
        p = problem(g, lay, dict(M=m, N=n), frozenset(), p.sm_count, arch, p.hbm_gbps)
        s = default(p)
        assert s.peel and not rows.weights_outweigh_row(p) and not s.shift, s.tag


MANY_INPUT_DEFAULTS = [     # (program, t, w, M, N, arch, GB/s): each default spilled before 2026-12-05
    ("rmsnorm of x + r", "f16", "f16", 7, 20001, "sm_90a", 4800.0),     # held peeled, 40 words
    ("rmsnorm of x + r", "bf16", "f32", 7, 20001, "sm_80", 2000.0),
    ("softmax of x * r + w", "f32", "f32", 7, 20001, "sm_90a", 4800.0),
    ("softmax of x * r + w", "f16", "f16", 1001, 65536, "sm_80", 2000.0),   # streamed 4 deep on sm_80
    ("layernorm of x + r + q", "f16", "f16", 7, 20001, "sm_90a", 4800.0),
    ("layernorm of x + r + q", "f32", "f32", 7, 20001, "sm_90a", 4800.0),   # a cluster's, 36 words
    ("layernorm of x + r", "f32", "f32", 7, 36000, "sm_90a", 4800.0),
    ("layernorm of x + r", "f16", "f32", 7, 36000, "sm_80", 2000.0),
    ("layernorm, three weights", "f16", "f32", 16384, 8192, "sm_90a", 4800.0),   # 64 elements beside w, b, g
    ("layernorm, three weights", "bf16", "f32", 7, 100000, "sm_90a", 4800.0),
    ("layernorm, three weights", "f32", "f32", 7, 65536, "sm_90a", 4800.0),
    ("layernorm, three weights", "f16", "f32", 7, 65536, "sm_80", 2000.0),    # streamed 1 deep, 56 words at 2
    ("layernorm of x + r", "f16", "f32", 300, 262144, "sm_90a", 4800.0),    # streamed, 96 words at 4: now 2
    ("layernorm of x + r", "bf16", "f32", 132, 262144, "sm_90a", 3352.0),
    ("layernorm of x + r + q", "f16", "f32", 300, 262144, "sm_90a", 4800.0),   # 112 words at 4, 56 at 2
    ("layernorm of x + r + q", "bf16", "bf16", 300, 262144, "sm_90a", 4800.0),
    ("layernorm, three weights", "bf16", "f32", 1, 513, "sm_80", 2000.0),   # a warp held 17 bf16 one by one
    ("layernorm", "bf16", "f32", 1, 2049, "sm_90a", 4800.0),      # 5 elements at 32 registers: 40 bytes
    ("layernorm", "f16", "f32", 7, 100000, "sm_80", 2000.0),
    ("softmax of x + r", "f16", "f16", 7, 20001, "sm_90a", 4800.0),       # no weights: held peeled, 40 words
    ("softmax of x + r", "f32", "f32", 7, 20001, "sm_80", 2000.0),
    ("logsumexp of x + r", "f32", "f32", 300, 20001, "sm_90a", 4800.0),    # streamed 8 deep, 64 words
    ("logsumexp of x + r", "f32", "f32", 300, 36000, "sm_80", 2000.0),
    ("column sum of x * r", "f16", "f16", 16384, 8192, "sm_90a", 4800.0),  # a tile at 32 registers
    ("column sum of x * r", "bf16", "bf16", 16384, 8192, "sm_80", 2000.0)]


@pytest.mark.parametrize("name,t,w,m,n,arch,gbps", MANY_INPUT_DEFAULTS,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}x{c[4]}-{c[5]}" for c in MANY_INPUT_DEFAULTS])
def test_defaults_beside_many_inputs_do_not_spill(name, t, w, m, n, arch, gbps):
    """registers.row_share_fits holds at most SEVERAL_ROWS_WORDS of several row inputs and
    late_weights_crowd's elements; a streamed row's loop goes no deeper than keeps its loads in flight
    within STREAM_DEPTH_WORDS (registers.stream_depth); a logsumexp's streamed f32 rows share
    LSE_F32_UNROLL's depth; a 16-bit column tile at 32 registers reads one input. Surveys of 886 defaults
    of these programs (3 to 5 dtype pairs, M 7 to 16384, N 1000 to 100000, both archs) and then of 1236
    (rows of 262144 too; scripts/survey_spills.py; 2026-12-05) found these spilling 8 to 88 bytes."""
    k = tiledsl.compile(MANY_INPUT_ROWS[name].format(t=t, w=w))
    [g] = partition(k.graph)
    lay = plan_layout(g, k.graph)
    s = default(problem(g, lay, dict(M=m, N=n), frozenset(), 132, arch, gbps))
    _, _, usage = _compile(k, g, lay, s, arch)
    assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)


FULL_OCCUPANCY_SHARES = [   # (program, rows' dtype, weights', elements a thread, whether 32 registers may hold them)
    ("layernorm", "bf16", "f32", 5, False),     # 15 words beside w and b spilled 40 bytes (one row of 2049)
    ("layernorm", "f32", "f32", 5, False),
    ("layernorm", "bf16", "bf16", 4, True),
    ("layernorm of x + r", "f32", "f32", 3, False),    # 12 words of x + r of f32: 8 bytes
    ("layernorm of x + r", "f32", "f32", 2, True),
    ("layernorm of x + r + q", "f32", "f32", 2, True),
    ("softmax of x * r + w", "bf16", "f32", 5, True)]  # one weight: 15 words, none spilled


@pytest.mark.parametrize("name,t,w,items,fits_32", FULL_OCCUPANCY_SHARES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}" for c in FULL_OCCUPANCY_SHARES])
def test_full_occupancy_holds_fewer_words_beside_two_weights_or_wide_row_inputs(name, t, w, items, fits_32):
    """registers.full_occupancy_words: a row read element by element at 32 registers holds at most 12
    words beside two or more weights and 10 beside several 4-byte row inputs (16 otherwise). What it
    lets through compiles for sm_90a at 32 registers without spilling; what it refuses spilled there,
    and the default of one row of that length no longer takes it (the layernorm of one bf16 row of
    2049: 40 bytes, the CPU survey of 2026-12-05)."""
    k, g, lay = _kernel_group(MANY_INPUT_ROWS[name].format(t=t, w=w))
    n = 512 * items - 3
    p = problem(g, lay, dict(M=1, N=n), frozenset(), 132, "sm_90a", 4800.0)
    assert registers.full_occupancy_fits(p, items, 1, False) == fits_32
    s = Schedule("reduce_row", block=512, vec=1, items=items, row_threads=512, min_blocks=4)
    _, _, usage = _compile(k, g, lay, s, "sm_90a")
    assert (usage.local_bytes == 0) == fits_32, usage
    d = default(p)
    _, _, usage = _compile(k, g, lay, d, "sm_90a")
    assert usage.spill_stores == 0 and usage.local_bytes == 0, (d.tag, usage)


def test_bf16_rows_read_one_by_one_hold_fewer_elements_beside_late_weights():
    """registers.BF16_ELEMENTS_BESIDE_LATE_WEIGHTS: a thread holds at most 14 bf16 elements read one by
    one beside weights loaded late (a warp's layernorm of 513 with f32 w, b and g spilled 8 to 56 bytes
    at 16 to 20); f16 rows, and bf16 rows in vectors, keep the wider caps."""
    layernorm = MANY_INPUT_ROWS["layernorm, three weights"]
    shares = {}
    for t in ("bf16", "f16"):
        g, lay = _group(layernorm.format(t=t, w="f32"))
        p = problem(g, lay, dict(M=1, N=513), frozenset(), 132, "sm_90a", 4800.0)
        shares[t] = [n for n in range(8, 21) if registers.row_share_fits(p, n, 1, hoisted=False)]
        assert registers.row_share_fits(p, 4, 8, hoisted=False, packed=True)
    assert max(shares["bf16"]) == 14 and max(shares["f16"]) == 20, shares


STREAM_DEPTHS = [   # (program, rows' dtype, weights', words an iteration loads, depth on sm_90a, on sm_80)
    ("softmax of x + r", "f16", "f16", 8, 4, 4),
    ("rmsnorm of x + r", "f16", "f16", 12, 2, 2),      # 48 words at 4: softmax of x * r + w spilled there
    ("layernorm of x + r", "bf16", "f32", 24, 2, 2),
    ("layernorm of x + r + q", "f16", "f32", 28, 2, 1),  # 56 words at 2: none spilled on sm_90a, 8 bytes on sm_80
    ("layernorm, three weights", "f16", "f32", 28, 2, 1)]


@pytest.mark.parametrize("name,t,w,words,deep_90a,deep_80", STREAM_DEPTHS, ids=[c[0] for c in STREAM_DEPTHS])
def test_a_streamed_row_keeps_as_many_loads_in_flight_as_fit_its_registers(name, t, w, words, deep_90a, deep_80):
    """registers.stream_depth: a streamed 16-bit row unrolls its loop 4 deep where 4 iterations' loads
    (its row inputs' and its weights' vectors) take at most 32 words, else 2 deep within 56 words on
    sm_90a and 48 elsewhere, else not at all; rows of 262144 streamed take that depth and,
    compiled for its GPU does not spill (4 deep, 64 to 112 words spilled 8 to 40 bytes on both)."""
    k, g, lay = _kernel_group(MANY_INPUT_ROWS[name].format(t=t, w=w))
    for arch, depth in (("sm_90a", deep_90a), ("sm_80", deep_80)):
        p = problem(g, lay, dict(M=300, N=262144), frozenset(), 132, arch, 4800.0)
        assert sum(operand_words(op, 8) * 8 for op in p.layout.reduced_inputs) == words
        assert registers.stream_depth(p, 8) == depth, arch
        s = rows.streamed_or_shared(p, 8, Hints(), clusters=False)
        assert (s.items, s.vec, s.unroll) == (0, 8, depth), s.tag
        _, _, usage = _compile(k, g, lay, s, arch)
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (arch, s.tag, usage)


F32_COLUMN_TILES = [   # (program, extents, whether an H200 takes the tile)
    ("kernel f(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=16384, N=4096), True),
    ("kernel f(x: f32[M, N]) -> f32[N] { return sum(x * x, axis=M) }", dict(M=1 << 20, N=64), True),
    ("kernel f(x: f32[B, C]) -> f32[C] { return mean(x, axis=B) }", dict(B=65536, C=768), True),
    ("kernel f(x: f32[M, N]) -> (f32[N], f32[N]) { return sum(x, axis=M), max(x, axis=M) }",
     dict(M=65537, N=1028), True),
    # too few column tiles for 2 splits; chunks under 16 loads a thread; 4-byte integers
    ("kernel f(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=2048, N=32768), False),
    ("kernel f(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=16384, N=1000), False),
    ("kernel f(x: i32[M, N]) -> i64[N] { return sum(x, axis=M) }", dict(M=16384, N=4096), False)]


@pytest.mark.parametrize("src,extents,tiled", F32_COLUMN_TILES, ids=[str(e) for _, e, _ in F32_COLUMN_TILES])
def test_f32_columns_take_tiles_of_16_byte_vectors_where_memory_is_fast(src, extents, tiled):
    """f32 reductions across memory on an H200's class of GPU (columns.f32_column_tile): tiles
    of 16 vectors of 4 columns, 32 threads down each chunk, in whole waves of blocks (sum
    16384x4096 68.7 -> 66.3 us, H200 2026-12-04); an H100's rules and an unknown GPU's keep
    a thread a column, as do the shapes the tile does not suit. Compiled for sm_90a and
    sm_80, the tiles do not spill."""
    g, lay = _group(src)
    for gbps in (4800.0, 3352.0, 0.0):
        s = default(problem(g, lay, extents, frozenset(), 132, "sm_90a", gbps))
        if tiled and gbps == 4800.0:
            assert (s.kind, s.vec, s.block, s.row_threads) == ("reduce_split", 4, 512, 32), s.tag
            assert s == column_tile_split(problem(g, lay, extents, frozenset(), 132, "sm_90a", gbps), 16, 512)
            k = tiledsl.compile(src)
            [gk] = partition(k.graph)
            for arch in ARCHS:
                _, _, usage = _compile(k, gk, plan_layout(gk, k.graph), s, arch)
                assert usage.spill_stores == 0 and usage.local_bytes == 0, (arch, usage)
        else:
            assert not (s.kind == "reduce_split" and s.vec == 4 and 1 < s.row_threads < s.block), (gbps, s.tag)


def test_a_16_bit_result_is_rounded_once_where_only_stored():
    """A cast to f16/bf16 that nothing in its kernel reads again is rounded by its store
    alone (to_storage): rounding it first cost two conversions an element (sm_90a SASS of
    the gelu: 16 f16 -> f32 HADD2 and 16 F2FP for 16 elements; bf16: 16 F2F). A cast that
    other values read keeps its rounding."""
    for t, convert in (("f16", "HADD2"), ("bf16", "F2F")):
        k = tiledsl.compile(f"kernel f(x: {t}[N]) -> {t}[N] {{ return gelu(x) }}")
        [g] = partition(k.graph)
        lay = plan_layout(g, k.graph)
        s = default(problem(g, lay, dict(N=1 << 26)))
        ks, compiled, _ = _compile(k, g, lay, s, "sm_90a")
        body = ks.source[ks.source.index('extern "C"'):]
        assert f"round_{t}(" not in body and f"f32_to_{t}(v" in body, t
        ops = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
        lanes = s.vec * s.items        # (f16 loads widen to f32 through HADD2 once a lane)
        converts = sum(n for op, n in ops.items() if op == convert or op.startswith(convert + "."))
        assert converts == (lanes if t == "f16" else 0), (t, ops)
    reused = tiledsl.compile("kernel f(x: f32[N]) -> (f16[N], f32[N]) {\n y = f16(x * 3.0)\n"
                             " return y, f32(y) + 1.0\n}")
    [g] = partition(reused.graph)
    lay = plan_layout(g, reused.graph)
    ks = render(reused.graph, g, lay, default(problem(g, lay, dict(N=1000))), 1)
    assert "tdsl::round_f16(" in ks.source[ks.source.index('extern "C"'):]


@pytest.mark.parametrize("kind", ["online pair", "sum", "max", "mean"])
def test_short_columns_take_a_few_a_warp(kind):
    """Reductions over M with 64 to 1023 rows (columns.short_columns): t threads down each
    column of a block of 256, a warp's columns covering whole 32-byte sectors, a lane 16 to
    64 rows of softmax's online pair (96 of others), t doubled only where the columns' threads
    would not fill 2 blocks of 128 an SM; small problems, long columns and reductions over
    rows keep their rules, and so do other reductions over 16896 columns or more; no spills."""
    from tiledsl.schedule.columns import SHORT_COLUMN_ROWS_A_LANE, short_columns
    from tiledsl.schedule.problem import pow2_at_least
    src = {"online pair": "kernel s(x: {t}[M, N]) -> {t}[M, N] {{\n e = exp(x - max(x, axis=M))\n"
                          " return {t}(e / sum(e, axis=M))\n}}",
           "sum": "kernel c(x: {t}[M, N]) -> f32[N] {{ return sum(x, axis=M) }}",
           "max": "kernel c(x: {t}[M, N]) -> {t}[N] {{ return max(x, axis=M) }}",
           "mean": "kernel c(x: {t}[M, N]) -> {t}[M, N] {{ return x - {t}(mean(x, axis=M)) }}"}[kind]
    per_lane = SHORT_COLUMN_ROWS_A_LANE[0 if kind == "online pair" else 1]
    seen = set()
    for t in ("f32", "f16", "bf16", "f64"):
        g, lay = _group(src.format(t=t))
        itemsize = lay.inputs[0].dtype.itemsize
        for m in (64, 100, 129, 256, 511, 777, 1000, 1023):
            for n in (1000, 3000, 8192, 16895, 65536, 1 << 20):
                p = problem(g, lay, dict(M=m, N=n), frozenset(), 132, "sm_90a")
                rule = short_columns(p)
                if m * n < 1 << 19 or (kind != "online pair" and n >= 16896):
                    assert rule is None
                    continue
                assert default(p) == rule, (t, m, n)
                threads = rule.row_threads
                seen.add(threads)
                assert rule.kind == "reduce_row" and rule.block == 256 and rule.items == 0
                assert rule.online       # (one pass over the pair; other reductions have one anyway)
                assert 256 // threads * itemsize >= 32, (t, m, n, threads)       # whole sectors a warp
                assert 16 <= m / threads and (m / threads <= per_lane or threads == 2), (t, m, n, threads)
                base = min(max(2, pow2_at_least(-(-m // per_lane))), 8 * itemsize)
                assert threads == base or (threads > base and n * threads // 2 < 2 * 132 * 128), (t, m, n)
    assert seen >= ({2, 4, 8, 16} if kind == "online pair" else {4, 8, 16})
    g, lay = _group(src.format(t="f32"))
    for extents in (dict(M=1024, N=4096), dict(M=300, N=200), dict(M=63, N=100000)):
        assert short_columns(problem(g, lay, extents, frozenset(), 132, "sm_90a")) is None, extents
    if kind in ("online pair", "mean"):     # (their results are over both dims: over rows too)
        g, lay = _group(src.format(t="f32").replace("axis=M", "axis=N"))
        assert short_columns(problem(g, lay, dict(M=8192, N=512), frozenset(), 132, "sm_90a")) is None
    # the tuner offers the rule's threads a column, half and twice; each compiles without spills
    k = tiledsl.compile(src.format(t="bf16"))
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, dict(M=1000, N=8192), frozenset(), 132, "sm_90a")
    offered = {replace(c, unroll=0) for c in candidates(p, k.hints)
               if c.kind == "reduce_row" and c.block == 256 and not c.items and c.row_threads < 256}
    assert {c.row_threads for c in offered} >= {8, 16, 32}
    for c in offered:
        ks = render(k.graph, g, lay, c, 1)
        usage = toolchain.compile_cuda(ks.source, arch="sm_90a").resources[ks.name]
        assert usage.spill_stores == 0 and usage.spill_loads == 0, (c.tag, usage)


def _group(src):
    return _kernel_group(src)[1:]


def _kernel_group(src):
    """The compiled kernel, its first group and that group's layout."""
    k = tiledsl.compile(src)
    g = partition(k.graph)[0]
    return k, g, plan_layout(g, k.graph)


def _split_across(src, extents, **change):
    g, lay = _group(src)
    p = problem(g, lay, extents)
    return p, Schedule("reduce_split", block=32, items=0, splits=8, **change)


def test_16_bit_math_takes_the_hardwares_approximations_only_where_rounded_to_16_bits():
    """exp, sigmoid, silu and gelu whose every use rounds them to f16 or bf16 run on
    ex2.approx and rcp.approx (tdsl::<fn>_narrow; gelu's erfc as exp(-z^2 + P(t)) * t):
    a bf16 gelu took 55 instructions an element (compute-bound at 0.48x copy on an H200).
    Where the f32 value is used as such, the f32 functions stay."""
    # (16-bit arithmetic is held in f32 between operations: silu(x) * x multiplies the f32 silu)
    k = tiledsl.compile("kernel f(x: f16[N], y: f16[N]) -> (f16[N], f32[N], f16[N], f16[N]) {\n"
                        "    return exp(x), sigmoid(f32(x)), silu(x) * x, gelu(y)\n}")
    src = k.cuda_source(np.zeros(64, np.float16), np.zeros(64, np.float16))
    body = src[src.index('extern "C"'):]
    assert body.count("tdsl::exp_narrow(") == 1 and body.count("tdsl::gelu_narrow(") == 1
    assert body.count("tdsl::sigmoid(") == 1 and body.count("tdsl::silu(") == 1 and "sigmoid_narrow" not in body
    for arch in ARCHS:
        assert toolchain.compile_cuda(src, arch=arch).cubin
    # the instructions an element of a 16-bit gelu, with the f32 one for scale
    counts = {}
    for t in ("f16", "f32"):
        g = tiledsl.compile(f"kernel g(x: {t}[N]) -> {t}[N] {{ return gelu(x) }}")
        c = toolchain.compile_cuda(g.cuda_source(np.zeros(1 << 20, t.replace("f", "float"))), arch="sm_90a")
        ops = toolchain.sass_opcodes(toolchain.sass(c.cubin))
        counts[t] = sum(ops.values()) / (ops["MUFU.EX2"] or 1)     # an exp an element
    assert counts["f16"] < 30 < 50 < counts["f32"], counts


def test_exps_that_reach_16_bit_results_through_sums_and_quotients_take_the_approximation():
    """A 16-bit softmax's exp feeds the sum and the quotient, both rounded to 16 bits at the
    end: it runs on ex2.approx without flushing (tdsl::exp_approx; 5 instructions, not expf's
    8), and where its argument is x - max(x) over the row, flushing (tdsl::exp_narrow, 2: each
    row holds a 1, so no sum is of subnormals alone). An exp any of whose uses is an f32
    result, a difference, or a sum that is not only of exps' positive values (whose
    cancellation would magnify the error), keeps expf."""
    def body(src, shape=(64, 100)):
        k = tiledsl.compile(src)
        dt = {"f16": np.float16, "f32": np.float32}[src.split("x: ")[1][:3]]
        text = k.cuda_source(np.zeros(shape, dt))
        return text, text[text.index('extern "C"'):]
    sm = "kernel sm(x: {t}[M, N]) -> {t}[M, N] {{ e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N) }}"
    text, b = body(sm.format(t="f16"))
    assert b.count("tdsl::exp_narrow(") >= 1 and "tdsl::exp(" not in b and "tdsl::exp_approx(" not in b
    unshifted = body("kernel sm(x: f16[M, N]) -> f16[M, N] { e = exp(x)\n return e / sum(e, axis=N) }")[1]
    assert "tdsl::exp_approx(" in unshifted and "tdsl::exp_narrow(" not in unshifted      # (sums of subnormals)
    other = body("kernel sm(x: f16[M, N]) -> f16[M, N] { e = exp(x - max(x * 2.0, axis=N))\n"
                 " return e / sum(e, axis=N) }")[1]
    assert "tdsl::exp_approx(" in other and "tdsl::exp_narrow(" not in other      # (the max of another value)
    for arch in ARCHS:
        assert toolchain.compile_cuda(text, arch=arch).cubin
    ops = toolchain.sass_opcodes(toolchain.sass(toolchain.compile_cuda(text, arch="sm_90a").cubin))
    assert ops["MUFU.EX2"] >= 1 and ops["FFMA.SAT"] == 0, ops      # (expf reduces its argument by FFMA.SAT)
    keeps = {
        "f32 result": sm.format(t="f32"),
        "logsumexp": "kernel l(x: f16[M, N]) -> f16[M] { m = max(x, axis=N)\n return log(sum(exp(x - m), axis=N)) + m }",
        "a difference": "kernel d(x: f16[M, N]) -> f16[M, N] { e = exp(x)\n return e / sum(e, axis=N) - e }",
        "also a result": "kernel r(x: f16[M, N]) -> (f16[M, N], f32[M, N]) { e = exp(x)\n return e / sum(e, axis=N), e }",
        "a sum with x": "kernel s(x: f16[M, N]) -> f16[M] { return sum(exp(x) * x, axis=N) }",
    }
    for why, src in keeps.items():
        assert "tdsl::exp_approx(" not in body(src)[1], why
    # a product's sum: x * exp(x) may be negative, so its sum may cancel; exp * exp may not
    assert "tdsl::exp_approx(" in body("kernel p(x: f16[M, N]) -> f16[M] { e = exp(x)\n"
                                       " return f16(max(e * e, axis=N)) }")[1]


def test_a_logsumexp_s_exps_take_the_approximation():
    """An f32 exp(x - max(x)) whose every use is a sum over the max's axes that only a log
    reads (a logsumexp, a log-softmax) runs on ex2.approx.ftz (tdsl::exp_narrow): the sum
    holds exp(0) = 1, so its relative error e costs log(sum) at most e * log(sum), and a
    vocabulary's logsumexp was bound by expf's instructions. Where the exps reach a result
    another way, or the sum is over fewer axes than the max (no 1 in it), or is itself a
    result, expf stays."""
    def body(src, extents=None):
        text = "\n".join(s.source for s in sources_for(tiledsl.compile(src), extents or dict(M=64, N=100)))
        return text, text[text.index('extern "C"'):]
    takes = {
        "logsumexp": "kernel l(x: f32[M, N]) -> f32[M] { m = max(x, axis=N)\n return m + log(sum(exp(x - m), axis=N)) }",
        "log-softmax": "kernel l(x: f32[M, N]) -> f32[M, N] { m = max(x, axis=N)\n"
                       " return x - m - log(sum(exp(x - m), axis=N)) }",
        "of a mean": "kernel l(x: f32[M, N]) -> f32[M] { m = max(x, axis=N)\n return m + log(mean(exp(x - m), axis=N)) }",
        "of bf16": "kernel l(x: bf16[M, N]) -> f32[M] { m = max(f32(x), axis=N)\n"
                   " return m + log(sum(exp(f32(x) - m), axis=N)) }",
    }
    for why, src in takes.items():
        text, b = body(src)
        assert b.count("tdsl::exp_narrow(") >= 1 and "tdsl::exp(" not in b, why
        for arch in ARCHS:
            assert toolchain.compile_cuda(text, arch=arch).cubin
        ops = toolchain.sass_opcodes(toolchain.sass(toolchain.compile_cuda(text, arch="sm_90a").cubin))
        assert ops["MUFU.EX2"] >= 1 and ops["FFMA.SAT"] == 0, (why, ops)     # (expf's argument reduction)
    keeps = {
        "softmax": "kernel s(x: f32[M, N]) -> f32[M, N] { e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N) }",
        "the sum a result": "kernel l(x: f32[M, N]) -> (f32[M], f32[M]) { m = max(x, axis=N)\n"
                            " s = sum(exp(x - m), axis=N)\n return m + log(s), s }",
        "the sum used otherwise": "kernel l(x: f32[M, N]) -> f32[M] { m = max(x, axis=N)\n"
                                  " s = sum(exp(x - m), axis=N)\n return m + log(s) + s }",
        "no max subtracted": "kernel l(x: f32[M, N]) -> f32[M] { return log(sum(exp(x), axis=N)) }",
        "a sum of another value": "kernel l(x: f32[M, N]) -> f32[M] { m = max(x, axis=N)\n"
                                  " return m + log(sum(exp(x - m) * x, axis=N)) }",
        "f64": "kernel l(x: f64[M, N]) -> f64[M] { m = max(x, axis=N)\n return m + log(sum(exp(x - m), axis=N)) }",
    }
    # a sum over fewer axes than the max: a partial sum need not hold the 1
    keeps["a partial sum"] = ("kernel l(x: f32[B, M, N]) -> f32[B, M] { m = max(x, axis=(M, N))\n"
                              " return m + log(sum(exp(x - m), axis=N)) }")
    for why, src in keeps.items():
        b = body(src, dict(B=4, M=64, N=100))[1]
        assert "tdsl::exp(" in b and "tdsl::exp_narrow(" not in b and "tdsl::exp_approx(" not in b, why


def test_a_row_too_long_for_a_block_is_shared_by_a_cluster_on_sm_90a():
    """Softmax over rows of 65536 f32: on sm_90a 4 blocks of 512 threads share a row, each
    holding 8 float4 of it, and exchange each reduction's value by st.async into the others'
    shared memory, counted by a barrier there: no cluster barrier, and so no MEMBAR.ALL.GPU
    (which waited for the last row's stores), but at the start (the barriers set up) and the
    end (no block leaves while another may still write to it). On sm_80 the row streams."""
    k, g, lay, p = _rows("softmax", dict(M=200, N=65536))
    s = default(p)
    assert (s.cluster, s.block, s.items, s.vec) == (4, 512, 8, 4), s.tag
    assert "_c4_" in s.tag and launches(p, s)[0].grid == (800, 1, 1)
    # (from 2 rows an SM, the blocks of a cluster copy their shares into shared memory)
    many = default(_rows("softmax", dict(M=1024, N=65536))[3])
    assert (many.cluster, many.block, many.shared_row) == (8, 256, True), many.tag
    assert default(problem(g, lay, dict(M=1024, N=65536), arch="sm_80")).items == 0
    assert default(p, clusters=False).items == 0
    # the tuner's space: every share that fits (2, 4 and 8 blocks of 512 and 1024), none on sm_80
    shares = {(c.cluster, c.block) for c in candidates(p) if c.cluster > 1 and not c.shared_row}
    assert shares == {(4, 512), (8, 512), (2, 1024), (4, 1024), (8, 1024)}
    # ... and copies of its shares in shared memory (256 KB a row: a block's copy takes 64 or 32 KB;
    # two blocks' 128 KB, one block of 1024 an SM)
    copied = {(c.cluster, c.block) for c in candidates(p) if c.cluster > 1 and c.shared_row}
    assert copied == {(c, b) for c in (4, 8) for b in (256, 512, 1024)} | {(2, 1024)}
    assert not any(c.cluster > 1 for c in candidates(problem(g, lay, dict(M=1024, N=65536), arch="sm_80")))
    ks, compiled, usage = _compile(k, g, lay, s, "sm_90a")
    assert usage.spill_stores == 0 and usage.local_bytes == 0
    assert "__cluster_dims__(4, 1, 1)" in ks.source
    ops = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
    count = lambda prefix: sum(n for op, n in ops.items() if op.startswith(prefix))  # noqa: E731
    assert count("STAS") == 2 and count("SYNCS.PHASECHK") >= 2     # a reduction's exchange: max, sum
    assert count("UCGABAR_ARV") == 2 and count("MEMBAR.ALL.GPU") == 2


SOFTMAX_F16 = "kernel f(x: f16[M, N]) -> f16[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}"
RMSNORM_BF16 = "kernel r(x: bf16[M, N], w: bf16[N]) -> bf16[M, N] { return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }"


@pytest.mark.parametrize("arch", ARCHS)
def test_many_rows_too_long_to_hold_twice_in_registers_are_copied_into_shared_memory(arch):
    """rows.shared_row_schedule: many rows whose per-row inputs take more than 64 KB, two of
    which fit an SM's shared memory (sm_90a 228 KB, sm_80 164), are copied there by blocks of
    512 threads (two passes for max and sum(exp)); the launch asks for the row's vectors (bf16
    rows of 40000 fit two an SM on sm_80 too, f16 rows of 50257 do not), and
    the kernel copies them by cp.async without spills. Not rows of 64 KB (held by 512 threads),
    few rows, rows two of which overflow the SM (on sm_90a, one block of 1024 copies those that one
    fits: rows.shared_row_alone), nor peeled rows whose f32 weights outweigh them."""
    from tiledsl.schedule.choose import launches
    ln_bf16 = (EXAMPLES / "layernorm.tdsl").read_text().replace("f16", "bf16")
    big = arch == "sm_90a"
    cases = [(SOFTMAX_F16, dict(M=4096, N=50257), big), (SOFTMAX_F16, dict(M=2048, N=36000), True),
             (SOFTMAX_F16, dict(M=2048, N=32768), False), (SOFTMAX_F16, dict(M=500, N=50257), False),
             ("examples/softmax.tdsl", dict(M=2048, N=28000), big),
             ("examples/softmax.tdsl", dict(M=2048, N=30000), big),     # (one an SM: rows.shared_row_alone)
             (ln_bf16, dict(M=2048, N=40000), True), (RMSNORM_BF16, dict(M=2048, N=40001), True),
             ((EXAMPLES / "layernorm.tdsl").read_text(), dict(M=4096, N=40001), False)]
    for src, extents, copied in cases:
        src = open(src).read() if src.endswith(".tdsl") else src
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        p = problem(g, lay, extents, arch=arch)
        s = default(p)
        assert s.shared_row == copied, (extents, s.tag)
        if not copied:
            continue
        assert (s.block, s.items, s.online) == (512 if rows.shared_rows_fit_twice(p, s) else 1024, 0,
                                                 "max(" not in src), s.tag
        [launch] = launches(p, s)
        assert launch.shared_bytes == len(lay.row_inputs) * (p.row_length // s.vec) * 16
        assert launch.grid[0] == p.rows
        ks, compiled, usage = _compile(k, g, lay, s, arch)
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)
        assert toolchain.has_instruction(toolchain.sass(compiled.cubin), "LDGSTS.E.BYPASS.128"), s.tag
    # sm_86 (and sm_89, sm_120) give an SM 100 KB: no two rows of more than 64 KB, and a block 98
    k = tiledsl.compile(SOFTMAX_F16)
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    assert not default(problem(g, lay, dict(M=4096, N=36000), arch="sm_86")).shared_row
    s = Schedule("reduce_row", block=512, vec=8, items=0, row_threads=512, shared_row=True, online=False)
    assert "more than the 98 KB" in fits(problem(g, lay, dict(M=4096, N=50264), arch="sm_86"), s)
    assert not fits(problem(g, lay, dict(M=4096, N=50264), arch=arch), s)


COPIED_ALONE = [    # (program, M, N, arch, copied by one block of 1024 a row): rows.shared_row_alone
    ("layernorm of x + r", 1001, 40960, "sm_90a", True),    # 160 KB of x and r a row
    ("layernorm of x + r", 4096, 32768, "sm_90a", True),    # 128 KB: two do not fit an SM
    ("rmsnorm", 1024, 100000, "sm_90a", True),              # 195 KB
    ("layernorm f32", 2048, 32768, "sm_90a", True),         # (its weights twice the row's bytes)
    ("softmax f32", 1024, 40000, "sm_90a", True),           # (8 blocks of a cluster before)
    ("layernorm of x + r", 1001, 40960, "sm_80", False),    # (not measured there)
    ("layernorm bf16", 1024, 100000, "sm_90a", False),      # f32 w and b: four times the row's bytes
    ("layernorm of x + r", 1001, 40003, "sm_90a", False),   # peeled: 4 blocks of a cluster copy it
    ("rmsnorm", 1024, 131072, "sm_90a", False),             # 256 KB: more than a block's 227
    ("layernorm of x + r", 200, 40960, "sm_90a", False),    # fewer than 2 rows an SM
    ("softmax f32", 2048, 28000, "sm_90a", False)]          # 109 KB: two an SM, 512 threads each


def _copied_alone_program(name: str) -> str:
    ln = (EXAMPLES / "layernorm.tdsl").read_text()
    return {"layernorm of x + r": HEAVIER_WEIGHTS["layernorm of x + r"][0],
            "rmsnorm": (EXAMPLES / "rmsnorm.tdsl").read_text(), "layernorm f32": ln.replace("f16", "f32"),
            "layernorm bf16": ln.replace("f16", "bf16"), "softmax f32": (EXAMPLES / "softmax.tdsl").read_text(),
            "rmsnorm bf16": RMSNORM_BF16, "softmax f16": SOFTMAX_F16,
            "rmsnorm of x + r": MANY_INPUT_ROWS["rmsnorm of x + r"].format(t="f16", w="f16"),
            "layernorm of x + r + q": MANY_INPUT_ROWS["layernorm of x + r + q"].format(t="f16", w="f32"),
            "layernorm of x + r + q f32": MANY_INPUT_ROWS["layernorm of x + r + q"].format(t="f32", w="f32")}[name]


@pytest.mark.parametrize("name,m,n,arch,alone", COPIED_ALONE, ids=[f"{c[0]}-{c[1]}x{c[2]}-{c[3]}" for c in COPIED_ALONE])
def test_rows_two_copies_of_which_overflow_an_sm_are_copied_by_one_block_of_1024(name, m, n, arch, alone):
    """rows.shared_row_alone: rows in whole 16-byte vectors whose per-row inputs overflow two copies in
    an SM's shared memory (over 112 KB on sm_90a) but fit one block's 227 KB, with weights at most twice
    their bytes, from 2 rows an SM, are copied there by one block of 1024 threads a row (H100
    2026-12-06: the layernorm of x + r 4096x40960 0.77x -> 0.97x copy): the launch asks for the whole
    row's vectors, one block a row, and the kernel copies them by cp.async without spills. Not on sm_80,
    beside weights four times the row's bytes, peeled rows, rows over 227 KB, few rows, nor rows two
    copies of which fit (512 threads)."""
    k, g, lay = _kernel_group(_copied_alone_program(name))
    p = problem(g, lay, dict(M=m, N=n), frozenset(), 132 if arch == "sm_90a" else 108, arch,
                3352.0 if arch == "sm_90a" else 2000.0)
    s = default(p)
    assert (s.block == 1024 and s.shared_row and s.cluster == 1) == alone, s.tag
    if not alone:
        return
    assert (s.row_threads, s.items, s.peel, s.online) == (1024, 0, False, "softmax" not in name), s.tag
    assert s.vec * lay.row_inputs[0].dtype.itemsize == 16, s.tag
    [launch] = launches(p, s)
    assert launch.shared_bytes == len(lay.row_inputs) * (n // s.vec) * 16 and launch.grid[0] == m
    ks, compiled, usage = _compile(k, g, lay, s, arch)
    assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)
    assert toolchain.has_instruction(toolchain.sass(compiled.cubin), "LDGSTS.E.BYPASS.128"), s.tag


COPIED_BY_CLUSTERS = [    # (program, M, N, arch, (threads, blocks) of the cluster copying it, or None)
    ("layernorm of x + r", 512, 65536, "sm_90a", (256, 8)),      # 256 KB of x and r: over a block's 227
    ("layernorm of x + r", 264, 131072, "sm_90a", (256, 8)),     # 512 KB: shares of 64 KB, two an SM
    ("layernorm of x + r", 300, 262144, "sm_90a", (1024, 8)),    # 1 MB: shares of 128 KB, one an SM
    ("rmsnorm", 1024, 100001, "sm_90a", (256, 4)),               # peeled, 195 KB: rows.shared_row_alone
    ("softmax f32", 1024, 40001, "sm_90a", (256, 4)),            # peeled, 156 KB (8 blocks before)
    ("layernorm of x + r", 512, 65536, "sm_80", None),           # (no clusters)
    ("layernorm of x + r", 200, 65536, "sm_90a", None),          # fewer than 2 rows an SM
    ("layernorm of x + r", 300, 1048576, "sm_90a", None),        # 4 MB: shares of 512 KB; streamed
    ("rmsnorm bf16", 1024, 131072, "sm_90a", None),              # one input: held by 4 blocks of 512
    ("softmax f16", 2048, 60001, "sm_90a", None),                # peeled, held by one block of 1024
    ("layernorm of x + r", 1001, 40960, "sm_90a", None),         # aligned, 160 KB: one block of 1024 copies it
    ("layernorm of x + r + q", 512, 65536, "sm_90a", (256, 8)),  # three f16 inputs, 384 KB
    ("layernorm of x + r + q f32", 300, 36000, "sm_90a", None),  # three f32 inputs: 12 bytes an element
    ("rmsnorm of x + r", 512, 65536, "sm_90a", None),            # 4 blocks of 512 hold 4 vectors a thread
    ("rmsnorm of x + r", 300, 262144, "sm_90a", None)]           # 8 blocks of 1024 likewise


@pytest.mark.parametrize("name,m,n,arch,copy", COPIED_BY_CLUSTERS,
                         ids=[f"{c[0]}-{c[1]}x{c[2]}-{c[3]}" for c in COPIED_BY_CLUSTERS])
def test_rows_over_a_block_s_shared_memory_or_peeled_are_copied_by_a_cluster_s_blocks(name, m, n, arch, copy):
    """rows.wide_rows_copied: rows of several per-row inputs (x and r) in whole 16-byte vectors over one
    block's shared memory (227 KB), from 2 rows an SM, are copied into it by the 8 blocks of a cluster,
    each its share: of 256 threads where two shares fit an SM, else of 1024 (H100 2026-12-06: the
    layernorm of x + r 300x262144 500.6 -> 323.2 us). rows.shared_row_alone: peeled rows of 112 to 227
    KB that no block of 1024 holds are copied by 4 blocks of 256 (rmsnorm f16 1024x100001 163.8 ->
    138.6). The launch is a whole number of clusters with each block's share of the row, and the kernel
    copies it by cp.async without spills. Not on sm_80, few rows, shares over a block's shared memory,
    rows of one input over 227 KB or of inputs over 8 bytes an element, rows a cluster's blocks hold 4
    vectors a thread of (rmsnorm of x + r), peeled rows one block of 1024 holds, nor aligned rows one
    block copies."""
    k, g, lay = _kernel_group(_copied_alone_program(name))
    p = problem(g, lay, dict(M=m, N=n), frozenset(), 132 if arch == "sm_90a" else 108, arch,
                3352.0 if arch == "sm_90a" else 2000.0)
    s = default(p)
    assert ((s.block, s.cluster) if s.shared_row and s.cluster > 1 else None) == copy, s.tag
    if copy is None:
        return
    assert (s.row_threads, s.items, s.peel, s.online) == (copy[0], 0, n % 8 != 0, "softmax" not in name), s.tag
    assert s in candidates(p), s.tag     # (the tuner's space: 1 MB rows' copies one an SM too)
    [launch] = launches(p, s)
    assert launch.shared_bytes == rows.shared_row_bytes(p, s) <= 227 << 10
    assert launch.grid[0] % s.cluster == 0
    assert len(lay.row_inputs) * -(-(n // s.vec) // (s.block * s.cluster)) * 16 * s.block == launch.shared_bytes
    ks, compiled, usage = _compile(k, g, lay, s, arch)
    assert f"__cluster_dims__({s.cluster}, 1, 1)" in ks.source
    assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)
    assert toolchain.has_instruction(toolchain.sass(compiled.cubin), "LDGSTS.E.BYPASS.128"), s.tag


LSE_BF16 = "kernel l(x: bf16[M, N]) -> f32[M] {\n m = max(f32(x), axis=N)\n return m + log(sum(exp(f32(x) - m), axis=N))\n}"
LSE_F32 = "kernel l(x: f32[M, N]) -> f32[M] {\n m = max(x, axis=N)\n return m + log(sum(exp(x - m), axis=N))\n}"


@pytest.mark.parametrize("arch", ARCHS)
def test_a_logsumexp_s_long_rows_are_streamed_or_copied_by_256_threads(arch):
    """rows.logsumexp_rows: rows reduced to max and sum(exp) alone (no result over the row),
    from 2 rows an SM, a block a row: streamed in one pass from 96 KB (peeled where the length
    breaks alignment) by 256 threads, f32 rows unrolled 8 deep (16-bit ones 4 below 4 rows an SM);
    16-bit rows copied into shared memory by 256 threads and reduced twice there from 40 KB
    (at 4 rows an SM). Compiles without spills. Not rows of 32 KB, fewer rows, f32 rows of 64
    KB, a softmax (its results over the row), nor a group with another reduction beside the pair."""
    cases = [(LSE_BF16, dict(M=2048, N=50257), "streamed"), (LSE_BF16, dict(M=1024, N=128256), "streamed"),
             (LSE_BF16, dict(M=300, N=128256), "streamed"), (LSE_F32, dict(M=4096, N=32000), "streamed"),
             (LSE_BF16, dict(M=4096, N=24000), "copied"), (LSE_BF16, dict(M=4096, N=20481), "copied"),
             (LSE_F32, dict(M=4096, N=16384), None), (LSE_BF16, dict(M=4096, N=16384), None),
             (LSE_BF16, dict(M=200, N=128256), None), (LSE_BF16, dict(M=300, N=24000), None),
             (SOFTMAX_F16.replace("f16", "bf16"), dict(M=2048, N=50257), None),
             (LSE_F32.replace("return m +", "return sum(x, axis=N) + m +"), dict(M=4096, N=32000), None)]
    for src, extents, how in cases:
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        p = problem(g, lay, extents, arch=arch)
        s = default(p)
        if how is None:
            assert rows.logsumexp_rows(p, k.hints) is None and (s.block, s.items) != (256, 0), (extents, s.tag)
            continue
        assert (s.block, s.row_threads, s.items, s.cluster) == (256, 256, 0, 1), (extents, s.tag)
        assert (s.online, s.shared_row) == ((True, False) if how == "streamed" else (False, True)), (extents, s.tag)
        unroll = 0 if how == "copied" else 8 if src == LSE_F32 else 4 if p.rows < 4 * 132 else 0
        assert s.unroll == unroll, (extents, s.tag)
        assert s.peel == (p.row_length % s.vec != 0) and s.vec * k.graph.params[0].dtype.itemsize == 16, (extents, s.tag)
        ks, compiled, usage = _compile(k, g, lay, s, arch)
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)
        assert ("online_add_chunk<true>(" in ks.source) == (how == "streamed"), s.tag


def test_a_vocabulary_s_rows_are_copied_into_shared_memory_by_the_blocks_of_a_cluster():
    """rows.shared_cluster_schedule: the softmax (and log-softmax) of rows that no block of
    1024 threads holds and two of whose copies overflow an SM (a language model's vocabulary,
    from 2 rows an SM) are copied into shared memory by the 8 blocks of a cluster, 256
    threads each, on sm_90a: a block's launch asks for its share's stretches alone, and the
    kernel copies them by cp.async, reads them back (LDS.128) and exchanges each reduction
    (STAS) without spills. Not the norms, rows a block of 1024 holds, few rows, nor sm_80;
    a logsumexp of such rows streams them in one pass (its results one a row)."""
    lse = ("kernel l(x: bf16[M, N]) -> f32[M] {\n m = max(f32(x), axis=N)\n"
           " return m + log(sum(exp(f32(x) - m), axis=N))\n}")
    softmax_bf16 = SOFTMAX_F16.replace("f16", "bf16")
    cases = [(softmax_bf16, dict(M=1024, N=128256), True), (softmax_bf16, dict(M=300, N=151936), True),
             ("examples/softmax.tdsl", dict(M=512, N=128256), True), (SOFTMAX_F16, dict(M=300, N=131075), True),
             (softmax_bf16, dict(M=200, N=128256), False), (SOFTMAX_F16, dict(M=2048, N=60000), False),
             (RMSNORM_BF16, dict(M=1024, N=131072), False), (lse, dict(M=1024, N=128256), False)]
    for src, extents, copied in cases:
        src = open(src).read() if src.endswith(".tdsl") else src
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        p = problem(g, lay, extents, arch="sm_90a")
        s = default(p)
        assert (s.shared_row and s.cluster > 1) == copied, (extents, s.tag)
        assert not default(problem(g, lay, extents, arch="sm_80")).cluster > 1
        if src == lse:
            assert (s.items, s.cluster, s.online) == (0, 1, True), s.tag
        if not copied:
            continue
        assert (s.cluster, s.block, s.items, s.online) == (8, 256, 0, False), s.tag
        [launch] = launches(p, s)
        stretches = -(-(p.row_length // s.vec) // (8 * 256))
        assert launch.shared_bytes == stretches * 256 * 16 and launch.grid[0] == 8 * p.rows
        ks, compiled, usage = _compile(k, g, lay, s, "sm_90a")
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)
        assert "c / TPR * 256 + threadIdx.x" in ks.source
        sass = toolchain.sass(compiled.cubin)
        for op in ("LDGSTS.E.BYPASS.128", "LDS.128", "STAS"):
            assert toolchain.has_instruction(sass, op), (s.tag, op)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_row_whose_length_breaks_alignment_is_held_peeled_in_registers(arch):
    """Rows of 1536 elements or more whose length breaks 16-byte alignment are held in
    registers peeled to aligned vectors (rows.long_row_schedule) by the fewest threads
    whose share fits, else by a cluster's blocks (sm_90a): in 16-byte vectors, without
    spills, the head and tail re-read by each phase. Not where f32 weights outweigh an f16
    row (their lanes gathered), nor short rows (781: element by element)."""
    # (source, extents, (block, items, vec, cluster), passes over the head and tail: a reduction
    # level each and the output's)
    cases = [(SOFTMAX_F16, dict(M=32768, N=1537), (32, 6, 8, 1), 3),
             (SOFTMAX_F16, dict(M=16384, N=3001), (64, 6, 8, 1), 3),
             ("examples/softmax.tdsl", dict(M=8192, N=4097), (128, 8, 4, 1), 3),
             (SOFTMAX_F16, dict(M=8192, N=10001), (256, 5, 8, 1), 3),
             # (few rows: many are copied into shared memory, rows.shared_row_schedule)
             (SOFTMAX_F16, dict(M=500, N=50257), (1024, 7, 8, 1), 3),
             (RMSNORM_BF16, dict(M=500, N=40001), (1024, 5, 8, 1), 2),
             # (few rows: from 2 an SM, a cluster's blocks copy them, rows.shared_cluster_schedule)
             ("examples/softmax.tdsl", dict(M=200, N=65537), (512, 8, 4, 4) if arch == "sm_90a" else None, 3)]
    for src, extents, want, passes in cases:
        k = tiledsl.compile(open(src).read() if src.endswith(".tdsl") else src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        p = problem(g, lay, extents, arch=arch)
        s = default(p)
        assert s.peel, s.tag
        if want is None:        # too long for a block: streamed peeled without clusters
            assert s.items == 0, s.tag
            continue
        assert (s.block, s.items, s.vec, s.cluster) == want, s.tag
        assert not (s.hoist and p.has_row_invariant_inputs()), s.tag     # (weights loaded late)
        ks, compiled, usage = _compile(k, g, lay, s, arch)
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)
        sass = toolchain.sass(compiled.cubin)
        assert toolchain.has_instruction(sass, "LDG.E.128"), s.tag
        assert ks.source.count("for (idx_t c = lane; c < ragged; c += TPR)") == passes, s.tag
    for src, extents in ((EXAMPLES / "layernorm.tdsl", dict(M=4096, N=20001)),
                         (EXAMPLES / "softmax.tdsl", dict(M=32768, N=781))):
        k = tiledsl.compile(src.read_text())
        g = partition(k.graph)[0]
        s = default(problem(g, plan_layout(g, k.graph), extents, arch=arch))
        assert not s.peel and s.vec == 1, s.tag
    # every held peeled candidate of a program with a weight compiles without spills, its weight
    # gathered a lane at a time or shifted by the head (Schedule.shift)
    k = tiledsl.compile(RMSNORM_BF16)
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    held = [c for c in candidates(problem(g, lay, dict(M=64, N=6001), arch=arch)) if c.peel and c.items]
    gathered = {c for c in held if not c.shift}
    assert len(gathered) == 4 and {replace(c, shift=False) for c in held if c.shift} == gathered
    assert all(not c.hoist for c in held)
    for c in held:
        usage = _compile(k, g, lay, c, arch)[2]
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (c.tag, usage)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_long_16_bit_row_without_weights_is_held_by_the_fewest_threads_it_fits(arch):
    """Softmax f16 over 4096 columns or more (rows.long_row_schedule): the fewest threads
    of a block whose share fits, up to 64 elements a thread packed two a register, nothing
    kept; more rows in flight an SM (8192x8192: 109.5 -> 94.3 us on an H100). Norms, whose
    weights gained nothing so, and f32 rows keep their rule."""
    k = tiledsl.compile(SOFTMAX_F16)
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    for n, want in ((4096, (128, 4)), (8192, (128, 8)), (10000, (256, 5)), (32000, (512, 8)), (50304, (1024, 7))):
        # (rows of 50304, 100 KB: few of them; many are copied into shared memory, rows.shared_row_schedule)
        s = default(problem(g, lay, dict(M=4096 if n < 50304 else 500, N=n), arch=arch))
        assert (s.block, s.items, s.vec, s.keep, s.min_blocks, s.cluster) == (*want, 8, False, 1, 1), (n, s.tag)
        if n in (8192, 32000):
            usage = _compile(k, g, lay, s, arch)[2]
            assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)
    ring = default(problem(g, lay, dict(M=4096, N=8192), arch=arch), Hints(stages=3))     # pinned: kept
    assert ring.stages > 1, ring.tag      # (as many as shared memory holds)
    short = default(problem(g, lay, dict(M=4096, N=2048), arch=arch))      # shorter: the rule before (16 elements)
    assert (short.block, short.items, short.keep) == (128, 2, True), short.tag
    for src in (EXAMPLES / "rmsnorm.tdsl", EXAMPLES / "softmax.tdsl"):
        k = tiledsl.compile(src.read_text())
        g = partition(k.graph)[0]
        s = default(problem(g, plan_layout(g, k.graph), dict(M=4096, N=8192), arch=arch))
        assert (s.block, s.items) == (512, 2 if "rmsnorm" in src.name else 4), s.tag


def test_a_peeled_row_held_in_registers_that_cannot_run_is_refused_with_a_reason():
    row = dict(kind="reduce_row", block=256, vec=8, items=5, row_threads=256, peel=True)
    Schedule(**row)
    for fields, why in ((dict(prefetch=True), "neither prefetched nor staged"),
                        (dict(stages=2), "neither prefetched nor staged"),
                        (dict(vec=1), "read in vectors"), (dict(row_threads=16, block=256), "a warp or more")):
        with pytest.raises(TdslError, match=why):
            Schedule(**{**row, **fields})
    k = tiledsl.compile(RMSNORM_BF16)
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, dict(M=64, N=10001))
    assert "hoist false" in fits(p, Schedule(**row))
    assert fits(p, Schedule(**row, hoist=False)) == ""
    assert "does not fit" in fits(p, Schedule(**{**row, "items": 4}, hoist=False))
    # (1250 whole vectors fit 256 threads of 5: the head and tail go apart)
    assert fits(problem(g, lay, dict(M=64, N=10007)), Schedule(**row, hoist=False)) == ""
    with pytest.raises(TdslError, match="hoist false"):
        render(k.graph, g, lay, Schedule(**row))


def test_a_row_shared_by_a_cluster_that_cannot_run_is_refused_with_a_reason():
    row = dict(kind="reduce_row", block=512, vec=4, items=8, row_threads=512)
    for fields, why in ((dict(cluster=3), "cluster is 1"), (dict(cluster=16), "cluster is 1"),
                        (dict(prefetch=True, cluster=4), "only on a persistent grid"),
                        (dict(stages=2, cluster=4), "neither staged"),
                        (dict(blocks_per_sm=2, cluster=4), "persistent"),
                        (dict(persistent=True), "a row shared by a cluster's blocks loop"),
                        (dict(row_threads=32, block=128, cluster=2), "a block's threads all on it")):
        with pytest.raises(TdslError, match=why):
            Schedule(**{**row, **fields})
    with pytest.raises(TdslError, match="only a row reduction shares a row"):
        Schedule("pointwise", block=256, vec=4, items=1, cluster=2)
    s = Schedule(**row, cluster=4)
    k, g, lay, p = _rows("softmax", dict(M=1024, N=65536))
    assert fits(p, s) == "" and fits(p, replace(s, items=0, online=False)) == ""     # held, or streamed together
    assert "sm_90a" in fits(problem(g, lay, dict(M=1024, N=65536), arch="sm_80"), s)
    assert "does not fit" in fits(problem(g, lay, dict(M=1024, N=65536 * 2)), s)
    k = tiledsl.compile("kernel m(x: i16[M, N]) -> i16[M, N] { return x - max(x, axis=N) }")
    [g] = partition(k.graph)
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, dict(M=8, N=65536))
    assert "4- or 8-byte" in fits(p, Schedule(**{**row, "vec": 8, "items": 4}, cluster=4))
    assert not any(c.cluster > 1 for c in candidates(p))


def test_rows_a_cluster_of_1024_threads_holds_go_to_resident_clusters_that_prefetch():
    """resident.resident_clusters: softmax over rows of 1 MB f32 (8 blocks of 1024 threads, one an SM,
    each holding 8 float4 of a row) runs on a persistent grid of clusters, each block copying its
    share of its next row into shared memory (cp.async: LDGSTS, then LDS.128 at the next row's
    start) after the first reduction's barrier and before the exchange across the cluster; the
    launch asks for that share (128 KB) and the kernel does not spill. No more rows than clusters
    fit the GPU take the persistent grid alone; rows with weights prefetch too (layernorm f32,
    without spilling), but where the compiled kernel spills (rmsnorm f32: the copies' addresses
    crowd the 64 registers) resident.without_spilled_prefetch drops the prefetch, and the kernel
    then does not spill; rows of blocks of 512 (two an SM) stay a cluster a row, with both as
    tuner candidates; a prefetch beyond a block's shared memory is refused."""
    k, g, lay, p = _rows("softmax", dict(M=300, N=262144))
    s = default(p)
    assert (s.cluster, s.block, s.items, s.persistent, s.prefetch) == (8, 1024, 8, True, True), s.tag
    assert s.tag.endswith("_p_c8_pst_x32")
    [launch] = launches(p, s)
    assert launch.shared_bytes == 8 * 1024 * 16 and launch.grid == (2400, 1, 1)    # (cut to the resident ones at launch)
    ks, compiled, soft_usage = _compile(k, g, lay, s, "sm_90a")
    assert soft_usage.spill_stores == 0 and soft_usage.local_bytes == 0
    body = ks.source[ks.source.index("__cluster_dims__"):]
    # the next row's copies come after the max's block reduction and before its exchange
    assert (body.index("block_reduce<tdsl::Max") < body.index("const idx_t next = row + (idx_t)gridDim.x / 8")
            < body.index("cluster_reduce<tdsl::Max"))
    assert body.count("tdsl::cp_async16_ordered(&next0[j * 1024 + threadIdx.x]") == 2    # the first row, each next
    ops = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
    assert any(op.startswith("LDGSTS") for op in ops) and "LDS.128" in ops and not any(
        op.startswith("LDG.E.128") for op in ops), sorted(ops)      # every row through shared memory
    # a cluster a row as before: the same kernel reads its rows itself
    ks0, compiled0, _ = _compile(k, g, lay, replace(s, persistent=False, prefetch=False), "sm_90a")
    ops0 = toolchain.sass_opcodes(toolchain.sass(compiled0.cubin))
    assert not any(op.startswith("LDGSTS") for op in ops0) and any(op.startswith("LDG.E.128") for op in ops0)
    few = default(_rows("softmax", dict(M=16, N=262144))[3])       # (16 clusters of 8: no next row)
    assert (few.cluster, few.persistent, few.prefetch) == (8, True, False), few.tag
    assert default(_rows("softmax", dict(M=17, N=262144))[3]).prefetch
    for example, spills in (("rmsnorm.tdsl", True), ("layernorm.tdsl", False)):
        norm = tiledsl.compile((EXAMPLES / example).read_text().replace("f16", "f32"))
        [ng] = partition(norm.graph)
        nlay = plan_layout(ng, norm.graph)
        held = default(problem(ng, nlay, dict(M=300, N=262144)), norm.hints)
        assert (held.cluster, held.block, held.persistent, held.prefetch) == (8, 1024, True, True), held.tag
        usage = _compile(norm, ng, nlay, held, "sm_90a")[2]
        assert bool(usage.local_bytes) == spills, (example, usage)
        kept = without_spilled_prefetch(held, usage)
        assert kept == (replace(held, prefetch=False) if spills else held), kept.tag
        if spills:
            usage = _compile(norm, ng, nlay, kept, "sm_90a")[2]
            assert usage.spill_stores == 0 and usage.local_bytes == 0, usage
    assert without_spilled_prefetch(s, soft_usage) == s     # (softmax's does not spill)
    # blocks of 512, two an SM: as they were; persistent and prefetching twins for the tuner
    k5, g5, lay5, p5 = _rows("softmax", dict(M=200, N=65536 - 28))
    s5 = default(p5)
    assert (s5.cluster, s5.block, s5.persistent, s5.prefetch) == (4, 512, False, False), s5.tag
    twins = {(c.persistent, c.prefetch) for c in candidates(p5) if (c.cluster, c.block, c.items) == (4, 512, 8)}
    assert twins == {(False, False), (True, False), (True, True)}
    # two per-row inputs of 8 float4 a thread at 1024 threads: 256 KB, over a block's shared memory
    two = tiledsl.compile("kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] { return x * y + sum(x, axis=N) }")
    [tg] = partition(two.graph)
    tp = problem(tg, plan_layout(tg, two.graph), dict(M=300, N=262144))
    big = Schedule("reduce_row", block=1024, vec=4, items=8, row_threads=1024, cluster=8, persistent=True,
                   prefetch=True)
    assert "the next row's share takes 256 KB" in fits(tp, big)
    assert fits(tp, replace(big, prefetch=False)) == ""


@pytest.mark.parametrize("arch", ARCHS)
def test_a_16_bit_row_in_vectors_holds_up_to_64_elements_a_thread(arch):
    """Softmax f16 over rows of 50304 streamed (32 elements a thread at most: 1024 threads
    held 32768): its values packed two a register, a thread holds 56 (7 vectors of 8) at
    1024 threads, without spills and keeping nothing between phases (kept values are f32:
    at 40 elements they spilled). Layernorm f16 over 65536 holds 64 with its f32 weights
    loaded late (hoisted they spilled 660 bytes)."""
    # (500 rows: many rows of 100 KB are copied into shared memory, rows.shared_row_schedule)
    k, g, lay, p = _rows("softmax_f16_long", dict(M=500, N=50304))
    s = default(problem(g, lay, dict(M=500, N=50304), arch=arch))
    assert (s.block, s.items, s.vec, s.cluster, s.keep) == (1024, 7, 8, 1, False), s.tag
    ks, compiled, usage = _compile(k, g, lay, s, arch)
    assert usage.spill_stores == 0 and usage.local_bytes == 0
    k, g, lay, p = _rows("layernorm_long", dict(M=1024, N=65536))
    s = default(problem(g, lay, dict(M=1024, N=65536), arch=arch))
    assert (s.block, s.items, s.vec, s.hoist) == (1024, 8, 8, False), s.tag
    ks, compiled, usage = _compile(k, g, lay, s, arch)
    assert usage.spill_stores == 0 and usage.local_bytes == 0
    with pytest.raises(TdslError, match="at most 32, or 64 16-bit"):
        Schedule("reduce_row", block=512, vec=8, items=9, row_threads=512)
    # f32 rows stay at 32 elements a thread
    k, g, lay, p = _rows("softmax_long", dict(M=1024, N=65536))
    assert default(problem(g, lay, dict(M=1024, N=65536), arch="sm_80")).items == 0


def test_a_schedule_block_pins_the_blocks_sharing_a_row_or_none():
    """`cluster(n)`: a row shared by n blocks (512 threads, else 1024, or those of
    `threads`), where a share fits on sm_90a; `cluster(1)`: a block a row, streaming it."""
    src = (EXAMPLES / "softmax.tdsl").read_text()
    ext = dict(M=1024, N=65536)

    def chosen(block: str, arch: str = "sm_90a", extents=ext):
        k = tiledsl.compile(src + f"\nschedule softmax {{ {block} }}\n")
        [g] = partition(k.graph)
        return default(problem(g, plan_layout(g, k.graph), extents, arch=arch), k.hints)
    assert (chosen("cluster(8)").cluster, chosen("cluster(8)").block) == (8, 512)
    assert (chosen("cluster(2) threads(1024)").cluster, chosen("cluster(2) threads(1024)").items) == (2, 8)
    assert chosen("cluster(1)").items == 0 and chosen("cluster(1)").cluster == 1
    assert chosen("cluster(4)", "sm_80").cluster == 1
    assert chosen("cluster(2)", extents=dict(M=64, N=4096)).cluster == 2   # pinned where a block would do
    assert chosen("cluster(2)", extents=dict(M=64, N=262144 * 4)).cluster == 1   # no share of 2 fits: streams


def test_few_long_streamed_rows_are_offered_to_a_cluster_streaming_together():
    """Fewer rows than SMs, each too long for a cluster's registers (batch-norm statistics
    over (B, H, W) of 64 channels): the tuner's candidates stream each row by the blocks of
    a cluster together (items 0), as well as by a block alone, at the widest vector, each
    thread at least 4 vectors of the row; on sm_80, with as many rows as SMs, or with a
    2-byte reduction, none. A softmax's are two-pass (online=False): the one-pass merge of
    max and sum(exp) is a block's own, and fits() refuses it there (its rows came out wrong
    on an H100). Defaults stay a block a row."""
    src = ("kernel s(x: f32[B, C, H, W]) -> (f32[C], f32[C]) {\n    mu = mean(x, axis=(B, H, W))\n"
           "    d = x - mu\n    return mu, mean(d * d, axis=(B, H, W))\n}")
    k = tiledsl.compile(src)
    [g] = partition(k.graph)
    lay = plan_layout(g, k.graph)
    nchw = dict(B=32, C=64, H=112, W=112)
    found = [s for s in candidates(problem(g, lay, nchw, frozenset(), 132, "sm_90a")) if s.cluster > 1]
    assert found and all(s.items == 0 and s.vec == 4 for s in found), [s.tag for s in found]
    assert {(s.block, s.cluster) for s in found} == {(b, c) for b in (256, 512, 1024) for c in (2, 4, 8)}
    for s in found:
        ks = render(k.graph, g, lay, s, 1)
        [usage] = toolchain.resource_usage(toolchain.compile_cuda(ks.source, arch="sm_90a").cubin).values()
        assert usage.local_bytes == 0, (s.tag, usage)
    assert default(problem(g, lay, nchw, frozenset(), 132, "sm_90a")).tag == "row_b1024_v4_i0_t1024_x32"
    assert not [s for s in candidates(problem(g, lay, nchw, frozenset(), 132, "sm_80")) if s.cluster > 1]
    assert not [s for s in candidates(problem(g, lay, dict(nchw, C=132), frozenset(), 132, "sm_90a"))
                if s.cluster > 1 and s.items == 0 and not s.shared_row]     # (copies: shared_row_clusters)
    k, g, lay, p = _rows("softmax", dict(M=100, N=1 << 19))
    together = [s for s in candidates(p) if s.cluster > 1 and s.items == 0]
    assert together and not any(s.online for s in together)
    assert "two passes" in fits(p, replace(together[0], online=True)) and fits(p, together[0]) == ""
    assert default(p).cluster == 1
    k = tiledsl.compile("kernel m(x: i16[M, N]) -> i16[M] { return max(x, axis=N) }")
    [g] = partition(k.graph)
    p = problem(g, plan_layout(g, k.graph), dict(M=8, N=1 << 22), frozenset(), 132, "sm_90a")
    assert not [s for s in candidates(p) if s.cluster > 1]


@pytest.mark.parametrize("arch", ARCHS)
def test_splits_of_few_rows_are_one_kernel_finished_by_its_last_block(arch):
    """columns.finished_by_last_block: a split reduction whose rows its combining block takes
    in one pass (rows x combine_lanes <= block) is one launch. The kernel counts its finished
    blocks by thread 0's acquire-release add between barriers (tdsl::counted_last: MEMBAR.ALL.GPU,
    ATOMG, and no sequentially consistent fence), reads the other blocks' partials past
    the read-only path (LDG.E.STRONG, never .CONSTANT), zeroes the counter, and compiles without
    spills. Column means of 64 columns in 264 splits (lanes 32, 8 rows a pass) keep two kernels."""
    cases = [(src, extents) for src, extents in test_gpu_memory.LAST_BLOCK_PROGRAMS]
    cases.append(("kernel cm(x: f16[R, C]) -> f32[C] { return mean(x, axis=R) }", dict(R=65536, C=64)))
    for src, extents in cases:
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        p = problem(g, lay, extents, arch=arch)
        s = default(p)
        assert s.kind == "reduce_split", (extents, s.tag)
        one = p.rows * combine_lanes(s) <= s.block
        assert s.last_block == one == (extents != dict(R=65536, C=64)), (extents, s.tag)
        assert [launch.stage for launch in launches(p, s)] == ([1] if one else [1, 2]), s.tag
        if not one:
            continue
        ks, compiled, usage = _compile(k, g, lay, s, arch)
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)
        assert "tdsl::counted_last(done," in ks.source and "*done = 0;" in ks.source and "_lb_" in ks.name
        sass = toolchain.sass(compiled.cubin)
        ops = toolchain.sass_opcodes(sass)
        assert any(o.startswith("ATOMG.E.ADD") for o in ops) and "MEMBAR.ALL.GPU" in ops, s.tag
        assert "MEMBAR.SC.GPU" not in ops, s.tag
        assert any(re.fullmatch(r"LDG\.E(\.64)?\.STRONG\.SYS", o) for o in ops), (s.tag, sorted(ops))


def test_splits_along_rows_fill_every_sm_s_room_once_compiled():
    """columns.splits_filling_room: a default split along rows (one block of 512 an SM) takes
    as many splits as the compiled kernel's residency fills, at most max_splits, finished by
    its last block where that block still takes every row in one pass; an unknown residency,
    a split of columns, or rows too short for more splits keep the default."""
    from tiledsl.schedule.columns import max_splits, splits_filling_room
    cases = [("kernel f(x: f16[N]) -> f16 { return max(x) }", dict(N=1 << 26), 3, 396),
             ("kernel f(x: f32[N]) -> f32 { return sum(x) }", dict(N=1 << 26), 2, 264),
             ("kernel f(x: f32[M, N]) -> f32[M] { return sum(x, axis=N) }", dict(M=8, N=1 << 22), 2, 33),
             ("kernel f(x: f32[N]) -> f32 { return sum(x) }", dict(N=40000), 4, None)]
    for src, extents, resident, want in cases:
        k = tiledsl.compile(src)
        [g] = partition(k.graph)
        p = problem(g, plan_layout(g, k.graph), extents, frozenset(), 132, "sm_90a")
        s = default(p)
        assert s.kind == "reduce_split" and s.splits < resident * 132 // p.rows, (extents, s.splits)
        filled = splits_filling_room(p, s, resident)
        want = want or max_splits(p, s.row_threads, s.vec)
        assert filled.splits == want and filled.tag == s.tag, (extents, filled.splits, filled.tag)
        assert filled.last_block == (p.rows * combine_lanes(filled) <= filled.block)
        assert [launch.stage for launch in launches(p, filled)] == [1]
        assert splits_filling_room(p, s, None) == s
        # the tuner times what the launcher would run at any residency of 1 to 4 blocks an SM
        for r in range(1, 5):
            assert splits_filling_room(p, s, r) in candidates(p), (extents, r)
    k = tiledsl.compile("kernel cm(x: f16[R, C]) -> f32[C] { return mean(x, axis=R) }")
    [g] = partition(k.graph)
    p = problem(g, plan_layout(g, k.graph), dict(R=65536, C=64), frozenset(), 132, "sm_90a")
    s = default(p)
    assert s.kind == "reduce_split" and splits_filling_room(p, s, 8) == s


def test_only_a_split_reduction_is_finished_by_its_last_block():
    with pytest.raises(TdslError, match="last_block"):
        Schedule("reduce_row", block=256, vec=4, items=4, row_threads=256, last_block=True)
    assert Schedule("reduce_split", block=512, vec=4, items=0, row_threads=512, splits=8,
                    last_block=True).tag.endswith("_lb_x32")


@pytest.mark.parametrize("arch", ARCHS)
def test_splits_of_lengths_that_break_the_vectors_are_peeled(arch):
    """A split reduction along rows whose length is no multiple of the vector reads each
    chunk in 16-byte vectors from the row's first aligned element, the few elements before
    and after them one at a time by the first split (columns.split_schedule): 128-bit loads
    in the SASS, no spills. Until 2026-12-03 such rows were read an element at a time."""
    cases = [("kernel f(x: f32[N]) -> f32 { return sum(x) }", dict(N=(1 << 26) + 1), 4),
             ("kernel f(x: f16[N]) -> f16 { return max(x) }", dict(N=(1 << 24) + 3), 8),
             ("kernel f(x: f32[M, N], w: f32[N]) -> f32[M] { return sum(x * w, axis=N) }", dict(M=8, N=(1 << 20) + 5), 4)]
    for src, extents, vec in cases:
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        s = default(problem(g, lay, extents, arch=arch))
        assert (s.kind, s.peel, s.vec) == ("reduce_split", True, vec), s.tag
        ks, compiled, usage = _compile(k, g, lay, s, arch)
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (s.tag, usage)
        assert toolchain.has_instruction(toolchain.sass(compiled.cubin), "LDG.E.128"), s.tag
        assert "(blockIdx.y == 0 ? ragged : 0)" in ks.source
    with pytest.raises(TdslError, match="peeled"):
        Schedule("reduce_split", block=256, vec=4, items=0, row_threads=32, splits=8, peel=True)


RESIDUAL_LAYERNORM = RESIDUAL_NORMS[0].format(t="f16", w="f32")
LAYERNORM_F32 = (EXAMPLES / "layernorm.tdsl").read_text().replace("f16[M, N]", "f32[M, N]")
RMSNORM_F32 = "kernel r(x: f32[M, N], w: f32[N]) -> f32[M, N] { return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }"
SHIFTED_WEIGHTS = [     # (source, extents, the weights' scalar load): peeled rows with 4-byte weights, f16 rows
    # (vectors of 8) and f32 rows (vectors of 4), and with 16-bit weights beside 16-bit rows (vectors of 8)
    ((EXAMPLES / "layernorm.tdsl").read_text(), dict(M=1001, N=20001), "LDG.E"),
    (RESIDUAL_LAYERNORM, dict(M=67, N=8193), "LDG.E"),
    (RMSNORM_F32, dict(M=64, N=8193), "LDG.E"),
    ((EXAMPLES / "layernorm.tdsl").read_text().replace("f32[N]", "f16[N]"), dict(M=1001, N=20001), "LDG.E.U16"),
    ((EXAMPLES / "rmsnorm.tdsl").read_text().replace("f16", "bf16"), dict(M=4096, N=4099), "LDG.E.U16")]


def _sass_loads(cubin) -> dict:
    """Global load instructions by width in a cubin's SASS: {'LDG.E': n, 'LDG.E.128': n, ...}."""
    ops = [op.replace(".CONSTANT", "") for op in re.findall(r"\b(LDG\.E[.A-Z0-9]*)", toolchain.sass(cubin))]
    return {op: ops.count(op) for op in set(ops)}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("src,extents,scalar", SHIFTED_WEIGHTS,
                         ids=["layernorm", "residual layernorm", "rmsnorm f32", "layernorm all f16", "rmsnorm bf16"])
def test_peeled_rows_may_read_their_weights_in_vectors_shifted_by_the_head(src, extents, scalar, arch):
    """Schedule.shift: the tuner offers every peeled row with its 4- or 2-byte weights over the row read
    in 16-byte vectors from their aligned start and shifted by the row's head in registers
    (tdsl::load_shifted), not gathered a lane at a time. Each compiles without spills or local
    memory where its gathered twin does (the shift indexes registers at constants only; a looped
    row unrolled so that 48 words are in flight), its weights' scalar loads gone but the head's
    and tail's: fewer scalar loads than gathered, and fewer for each 16-byte one. Weights whose
    lanes do not fill 16-byte pieces (f16 beside f32 rows: vectors of 4), unpeeled rows, and held
    shares that with the weights' vectors pass registers.SHIFTED_HELD_WORDS are refused the shift."""
    k = tiledsl.compile(src)
    [g] = partition(k.graph)
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, extents, frozenset(), 132, arch, 4800.0)
    found = candidates(p)
    peeled = [s for s in found if s.peel and not s.shift and not s.unroll]   # (shifted: fewer unrolls fit)
    # every peeled row is offered shifted, but a held share too large beside the weights' vectors
    too_big = [s for s in peeled if "registers a thread" in fits(p, replace(s, shift=True))]
    assert peeled and all(replace(s, shift=True) in found for s in peeled if s not in too_big), [s.tag for s in peeled]
    assert all(s.items and registers.shifted_held_words(p, replace(s, shift=True)) > 44 for s in too_big)
    picks = [s for s in peeled if not s.shared_row and s.cluster == 1 and s not in too_big]
    assert {s.items > 0 for s in picks} == {True, False}, [s.tag for s in picks]    # looped and held
    for s in picks:
        shifted = replace(s, shift=True)
        assert fits(p, shifted) == "" and shifted.tag.endswith("_pe_sw_x32")
        ks, compiled, usage = _compile(k, g, lay, shifted, arch)
        assert "tdsl::load_shifted<" in ks.source
        _, gathered, was = _compile(k, g, lay, s, arch)
        assert was.spill_stores == 0 and usage.spill_stores == 0 and usage.local_bytes == 0, (shifted.tag, usage)
        before, after = _sass_loads(gathered.cubin), _sass_loads(compiled.cubin)
        assert after[scalar] < before[scalar], (s.tag, before, after)
        assert after[scalar] / after["LDG.E.128"] < before[scalar] / before["LDG.E.128"], (s.tag, before, after)
    narrow = tiledsl.compile(RMSNORM_F32.replace("w: f32[N]", "w: f16[N]"))     # f16 w, 8 bytes a vector of 4
    [g16] = partition(narrow.graph)
    p16 = problem(g16, plan_layout(g16, narrow.graph), extents, frozenset(), 132, arch, 4800.0)
    peeled16 = [s for s in candidates(p16) if s.peel]
    assert peeled16 and not any(s.shift for s in peeled16)
    assert "lanes fill 16-byte pieces" in fits(p16, replace(peeled16[0], shift=True))
    with pytest.raises(TdslError, match="shift"):
        replace(picks[0], peel=False, shift=True)
    # a held share of 64 f16 elements a thread beside f32 w and b's vectors (64 words) is refused
    # the shift (it spilled 152 bytes on sm_90a); 48 a thread (56 words) only on sm_90a
    kl = tiledsl.compile((EXAMPLES / "layernorm.tdsl").read_text())
    [gl] = partition(kl.graph)
    pl = problem(gl, plan_layout(gl, kl.graph), dict(M=1001, N=8193), frozenset(), 132, arch, 4800.0)
    eight, six = (rows.held_row_share(pl, 8, t, peel=True) for t in (128, 192))
    assert (eight.items, six.items) == (8, 6)
    assert "64 registers a thread" in fits(pl, replace(eight, shift=True)) and not fits(pl, eight)
    assert ("56 registers a thread" in fits(pl, replace(six, shift=True))) == (arch != "sm_90a")
    # peeled rows of 8-byte weights (vectors of 2), and peeled splits, are offered no shift
    for other, ext in [("kernel f(x: f64[M, N], w: f64[N]) -> f64[M] { return sum(x * w, axis=N) }", dict(M=100, N=4099)),
                       ("kernel f(x: f32[M, N], w: f32[N]) -> f32[M] { return sum(x * w, axis=N) }",
                        dict(M=8, N=(1 << 22) + 1))]:
        ko = tiledsl.compile(other)
        [go] = partition(ko.graph)
        po = problem(go, plan_layout(go, ko.graph), ext, frozenset(), 132, arch, 4800.0)
        offered = candidates(po)
        assert any(s.peel for s in offered) and not any(s.shift for s in offered), ext


@functools.lru_cache(maxsize=1)
def _nvrtc12():
    import ctypes
    import nvidia
    from pathlib import Path
    found = [p for base in nvidia.__path__ for p in Path(base).glob("cuda_nvrtc/lib/libnvrtc.so.12")]
    return ctypes.CDLL(str(found[0])) if found else None


def _nvrtc12_errors(source: str, arch: str, ptx_only: bool = False) -> str:
    """NVRTC 12's errors compiling `source` for `arch` ('' when it compiles): the CUDA 12
    toolkits that the cuda12 extra serves, and GPU images, run it. `ptx_only`: its front end
    alone (compute_XX, no ptxas). libnvrtc.so.12 comes from nvidia-cuda-nvrtc-cu12 (the dev
    extra); the test skips without it."""
    import ctypes
    lib = _nvrtc12()
    if lib is None:
        pytest.skip("no libnvrtc.so.12 (pip install nvidia-cuda-nvrtc-cu12)")
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"tiledsl.cu", 0, None, None) == 0
    target = arch.replace("sm_", "compute_") if ptx_only else arch
    opts = [f"--gpu-architecture={target}".encode(), b"-std=c++17"]
    status = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return "" if status == 0 else "\n".join(l for l in log.value.decode(errors="replace").splitlines() if "error" in l)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("src,extents,scalar", SHIFTED_WEIGHTS[:1] + SHIFTED_WEIGHTS[3:4],
                         ids=["layernorm", "layernorm all f16"])
def test_shifted_weights_compile_with_nvrtc_12(src, extents, scalar, arch):
    """tdsl::load_shifted compiles with NVRTC 12 as with 13, looped and held: each_index takes
    functors with a templated __device__ operator(), not generic lambdas (NVRTC 12 took each lambda
    in a __device__ function for a host function, and refused every shifted kernel on the H200's
    CuPy, 2026-12-05)."""
    k = tiledsl.compile(src)
    [g] = partition(k.graph)
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, extents, frozenset(), 132, arch, 4800.0)
    shifted = [s for s in candidates(p) if s.shift and not s.unroll and s.cluster == 1]
    assert {s.items > 0 for s in shifted} == {True, False}, [s.tag for s in shifted]
    for s in (shifted[0], [s for s in shifted if s.items][0]):
        assert _nvrtc12_errors(render(k.graph, g, lay, s, 1).source, arch) == "", s.tag


@pytest.mark.parametrize("src,extents,tag,words,refused", [
    # a warp a row (four a block): 48 words held, 56 refused (it spilled 8 bytes on sm_90a)
    ((EXAMPLES / "layernorm.tdsl").read_text(), dict(M=4096, N=1001), "row_b128_v8_i4_t32_nh_pe_sw_x32", 48, False),
    ((EXAMPLES / "layernorm.tdsl").read_text(), dict(M=4096, N=1299), "row_b128_v8_i6_t32_nh_pe_sw_x32", 56, True),
    # a cluster's share: 44 words held, 48 refused (f32 rows: 20 bytes spilled)
    (LAYERNORM_F32, dict(M=1024, N=100003), "row_b512_v4_i7_t512_nh_c8_pe_sw_x32", 44, False),
    (LAYERNORM_F32, dict(M=1024, N=65537), "row_b512_v4_i8_t512_nh_c4_pe_sw_x32", 48, True)],
    ids=["warp 48", "warp 56", "cluster 44", "cluster 48"])
def test_shifted_warp_rows_and_cluster_shares_hold_fewer_registers(src, extents, tag, words, refused):
    """registers.shifted_held_limit: on sm_90a a held peeled row's shifted share may count 56 words a
    block a row, but 52 a warp a row and 44 a cluster's share, as ptxas spilled past them.
    Each case compiled as though the limit were lifted: the refused ones spill, the held ones do not."""
    k = tiledsl.compile(src)
    [g] = partition(k.graph)
    lay = plan_layout(g, k.graph)
    p = problem(g, lay, extents, frozenset(), 132, "sm_90a", 4800.0)
    [s] = [c for c in candidates(p) if c.tag == tag.replace("_sw", "")]
    shifted = replace(s, shift=True)
    assert registers.shifted_held_words(p, shifted) == words
    assert ("registers a thread" in fits(p, shifted)) == refused
    _, _, usage = _compile(k, g, lay, shifted, "sm_90a")
    assert (usage.spill_stores > 0) == refused, usage
