"""Random programs through the whole CPU side of the compiler: partition,
schedule, render and NVRTC, for sm_90a and sm_80.

The programs are the GPU fuzz test's (tests/test_gpu_fuzz.py): the property
test's generator at sizes up to 4097. Every group of every program must
render and compile for both architectures under its default schedule (and
under a candidate of the tuner's drawn for each group), and under the default
schedule without spills or local memory on either. The bugs this found and
the GPU fuzz test found (2026-11-23) are pinned below.

TDSL_CODEGEN_FUZZ_EXAMPLES=N compiles N programs (default 150).
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tiledsl
from tiledsl.codegen import sources_for
from tiledsl.errors import TdslCompileError, TdslError
from tiledsl.codegen.cuda import render
from tiledsl.runtime import toolchain
from tiledsl.schedule.choose import candidates
from tiledsl.schedule.problem import problem
from tiledsl.schedule.layout import plan_layout
from tiledsl.schedule.partition import partition

from test_properties import build

pytestmark = pytest.mark.skipif(not toolchain.available(), reason="NVRTC (cuda-bindings) is not installed")

SIZES = (1, 2, 3, 5, 7, 16, 31, 33, 64, 127, 129, 256, 1000, 1031, 4097)   # extents, one per dim
MAX_ELEMENTS = 1 << 21                                                      # their product at most
PRODUCT_SIZES = (1, 7, 16, 33, 64, 100, 128, 129, 192, 256, 1000)  # more that tensor-core tiles take
EXAMPLES = int(os.environ.get("TDSL_CODEGEN_FUZZ_EXAMPLES", "150"))
ARCHS = ("sm_90a", "sm_80")
HBM_GBPS = (0.0, 3352.0)    # the rules of an unknown GPU (an H200's) and an H100's


def fuzz_test(examples: int):
    """A Hypothesis test drawing `examples` programs (no example database: each run
    draws afresh; a failure prints its draws)."""
    def wrap(test):
        return settings(max_examples=examples, deadline=None, database=None,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])(
            given(st.data())(test))
    return wrap


def compile_all(kernel, extents, hbm_gbps: float = 0.0) -> list[str]:
    """Compiles every kernel for both architectures, planned for a GPU of `hbm_gbps` peak
    memory bandwidth (0: unknown; some rules read it); the ones that spill or use local
    memory. CUDA's sin and cos reduce a huge argument (Payne-Hanek) in a local array (f32:
    32 bytes, f64: 40; ptxas sm_90a and sm_80, CUDA 13), touched only there: a program
    taking them may have a stack frame, but no spill."""
    trig = any(v.op in ("sin", "cos") for v in kernel.graph.values)
    problems = []
    for arch in ARCHS:
        for ks in sources_for(kernel, extents, arch=arch, hbm_gbps=hbm_gbps):
            usage = toolchain.compile_cuda(ks.source, arch=arch).resources[ks.name]
            if usage.spill_stores or usage.spill_loads or (usage.local_bytes and not trig):
                problems.append(f"{ks.name} on {arch}: {usage}")
    return problems


@fuzz_test(EXAMPLES)
def test_random_programs_render_and_compile_without_spills(data):
    source, prog, _, _ = build(data, SIZES, MAX_ELEMENTS, ("f64", "f32", "f16", "bf16", "bool", "int"), products=1,
                               bf16=True, ints=True, literal_dims=True, max_dims=4)
    k = tiledsl.compile(source)
    hbm = data.draw(st.sampled_from(HBM_GBPS), label="peak HBM GB/s")
    problems = compile_all(k, prog.extents, hbm)
    assert not problems, f"{problems}\nsource:\n{source}\nextents: {prog.extents}, HBM {hbm} GB/s"


@fuzz_test(EXAMPLES // 3)
def test_random_products_render_and_compile_without_spills(data):
    source, prog, _, _ = build(data, PRODUCT_SIZES, 1 << 22, ("f32", "f16", "bf16", "bool"), products=6, min_dims=3, bf16=True,
                               max_dims=4)
    k = tiledsl.compile(source)
    hbm = data.draw(st.sampled_from(HBM_GBPS), label="peak HBM GB/s")
    problems = compile_all(k, prog.extents, hbm)
    assert not problems, f"{problems}\nsource:\n{source}\nextents: {prog.extents}, HBM {hbm} GB/s"


def drawn_candidates(data, kernel, extents, arch: str, sm_count: int = 132) -> dict:
    """{group index: a schedule drawn from the tuner's candidates for it} (groups
    without candidates keep their default), for sm_count SMs of `arch`."""
    picks = {}
    for i, group in enumerate(partition(kernel.graph)):
        p = problem(group, plan_layout(group, kernel.graph), extents, frozenset(), sm_count, arch)
        found = candidates(p, kernel.hints)
        if found:
            picks[i] = found[data.draw(st.integers(0, len(found) - 1), label=f"group {i} candidate")]
    return picks


@fuzz_test(EXAMPLES // 3)
def test_random_programs_compile_under_random_candidates(data):
    """A candidate the tuner may time must compile (it may spill: the tuner prunes on
    the compiler's resource report), each stage of a split one too."""
    source, prog, _, _ = build(data, SIZES, MAX_ELEMENTS, ("f64", "f32", "f16", "bf16", "bool"), products=2, bf16=True,
                               max_dims=4)
    k = tiledsl.compile(source)
    for arch in ARCHS:
        picks = drawn_candidates(data, k, prog.extents, arch)
        for i, group in enumerate(partition(k.graph)):
            if i in picks:
                for stage in (1, 2) if picks[i].splits else (1,):
                    ks = render(k.graph, group, plan_layout(group, k.graph), picks[i], stage)
                    assert toolchain.compile_cuda(ks.source, arch=arch).cubin, ks.name


def hint_block(data, dims) -> str:
    """A `schedule prop { ... }` block of one to three directives drawn with their
    arguments (legal or not for the program: an illegal one must be refused)."""
    def tile():
        chosen = data.draw(st.lists(st.sampled_from(sorted(dims)), min_size=1, unique=True), label="tile dims")
        return "tile(" + ", ".join(f"{d}={data.draw(st.sampled_from([16, 32, 64, 128, 256]))}" for d in chosen) + ")"
    options = [lambda: f"stages({data.draw(st.integers(1, 5))})",
               lambda: f"warps({data.draw(st.sampled_from([1, 2, 4, 8]))})",
               lambda: f"threads({data.draw(st.sampled_from([32, 64, 128, 256, 512, 1024]))})",
               lambda: f"vector({data.draw(st.sampled_from([1, 2, 4, 8]))})",
               lambda: f"split_k({data.draw(st.integers(1, 8))})",
               lambda: f"group({data.draw(st.integers(1, 8))})",
               lambda: f"tf32({data.draw(st.sampled_from(['true', 'false']))})",
               tile]
    picks = data.draw(st.lists(st.integers(0, len(options) - 1), min_size=1, max_size=3, unique=True),
                      label="directives")
    return "schedule prop {\n" + "".join(f"    {options[i]()}\n" for i in picks) + "}\n"


@fuzz_test(EXAMPLES // 3)
def test_random_programs_with_schedule_blocks_compile_or_are_refused(data):
    """A schedule block pins what the user asked for, or the call is refused with a
    TdslError (a schedule error; never another exception, nor a TdslCompileError,
    which says the generated code failed); what it pins compiles."""
    source, prog, _, _ = build(data, SIZES, MAX_ELEMENTS, ("f64", "f32", "f16", "bf16", "bool"), products=3, bf16=True,
                               max_dims=4)
    source += hint_block(data, prog.extents)
    try:
        k = tiledsl.compile(source)
        for arch in ARCHS:
            kernels = sources_for(k, prog.extents, arch=arch)
            for ks in kernels:
                assert toolchain.compile_cuda(ks.source, arch=arch).cubin, ks.name
    except TdslCompileError:
        raise
    except TdslError:
        pass


# Found by the tests above and the GPU fuzz test. Before the fixes, each raised ValueError in the renderer
# or was rejected by NVRTC ("identifier v3 is undefined").
FOUND = {
    # a result computed from scalars only: a group without loops
    "scalar_result": ("kernel f(a: f32, b: f16) -> f32 {\n    return a * b + 1\n}\n", {}),
    "scalar_results_with_arrays": ("kernel f(x: f16[N], a: f32) -> (bf16, f32[N]) {\n"
                                   "    return a - 1, x * a\n}\n", {"N": 1000}),
    # results that are a parameter or repeat another: each its own buffer, written
    "a_parameter_and_a_repeated_result": ("kernel f(x: f32[N], s: bf16) -> (f32[N], f32[N], f32[N], bf16) {\n"
                                          "    y = x * 2\n    return y, y, x, s\n}\n", {"N": 1000}),
    # a value without dims computed from a full reduction another kernel stored
    "cast_of_a_stored_statistic": ("kernel f(x: f64[M, N], y: f32[N]) -> f16[M, N] {\n"
                                   "    t = mean(tanh(y))\n    return where(x > 0, x, t)\n}\n",
                                   {"M": 33, "N": 1031}),
    "cast_of_a_stored_statistic_transposed": (
        "kernel f(x: f64[N, M], y: f32[N]) -> f16[M, N] {\n"
        "    t = mean(tanh(y))\n    return sigmoid(where(y * y >= sigmoid(y), sigmoid(x.T), t))\n}\n",
        {"M": 33, "N": 1031}),
    # an output over some of a reduction's reduced dims
    "statistic_times_a_vector": ("kernel f(x: f32[K, N, M], y: f16[K]) -> bf16[K] {\n"
                                 "    return y * mean(x)\n}\n", {"K": 7, "N": 5, "M": 3}),
    # max/min of 8-bit integers across lanes: NVRTC rejected the shuffle (it returns an int)
    "max_and_min_of_8_bit_integers": ("kernel f(x: i8[M, N], y: u8[N]) -> (i8[M], u8) {\n"
                                      "    return max(x, axis=N), min(y)\n}\n", {"M": 7, "N": 1000}),
    # pointwise kernels holding more than their registers (64): 8 f32 inputs at vector 4 and
    # items 2 spilled 40 bytes; f16 and f32 operands gathered across the inner loop, 16
    "eight_f32_inputs": ("kernel f(" + ", ".join(f"x{i}: f32[M, N]" for i in range(8)) + ") -> f32[M, N] {\n"
                         "    return " + " + ".join(f"x{i}" for i in range(8)) + "\n}\n", {"M": 33, "N": 1024}),
    # six inputs read an element at a time, 8 items a thread (48 words counted, the items'
    # indices not): 8 bytes spilled on sm_80 until held_words counted a word an item
    "six_inputs_an_element_at_a_time": (
        "kernel f(p0: f16[M], p1: f16[M], p2: f16[M, N, K], p3: i8[M], p4: f16[M, N], p5: f16[N, K]) -> "
        "(f64[M, K], i8[N, K, M]) {\n    t1 = p4 @ p5\n    t3 = where(p2 < p4, i32(floor(p5)), p3)\n"
        "    return p0 + t1, where(p0 < p1, t3, p3)\n}\n", {"M": 1, "N": 1, "K": 1}),
    # i8 and i64 inputs added in i64, 8 items of single elements: 4 bytes spilled on sm_90a and
    # sm_80 until held_words counted i64 math as it did f64 (CI, 2026-12-03)
    "i64_math_an_element_at_a_time": (
        "kernel f(p0: f16[M], p1: i8[M], p2: i64[M, N, K, B], p3: f16[M, N], p4: f16[N, K]) -> "
        "(f64[M], bool[M, N, B, K]) {\n    t1 = p3 @ p4\n    t8 = (p1 + p2) + (p0 + p2)\n"
        "    return p0, t1 < t8\n}\n", {"M": 1, "N": 1, "K": 1, "B": 1}),
    "gathered_operands": ("kernel f(p0: f16[M], p1: bf16[N, K, M], p2: f16[M, N], p3: f16[N, K]) -> "
                          "(f32[N, K, M], f32[M, K, N]) {\n    t1 = p2 @ p3\n"
                          "    return p0 + p1, where(p0 <= p0, t1, p2)\n}\n", {"M": 16, "N": 1, "K": 1}),
    # the 32-register row schedule storing across the row (spilled 8 bytes on sm_90a) or
    # 8-byte results (4 on sm_80)
    "row_sum_stored_across_the_row": ("kernel f(p0: f32[M, N], p1: f32[M]) -> f32[N, M] {\n"
                                      "    return p0 + p1 + sum(p0)\n}\n", {"M": 1, "N": 999}),
    "row_sum_stored_in_f64": ("kernel f(p0: f16[M, N], p1: f16[M]) -> f64[N, M] {\n"
                              "    return p0 + p1 + sum(p0)\n}\n", {"M": 1, "N": 1000}),
    # the 32-register row schedule with idx() of either loop of a row of two: spilled 8 bytes on sm_90a
    # (found as exp(where(..., exp(sum(x))))), bounded here so the GPU run does not overflow f32
    "index_of_the_rows_outer_loop": ("kernel f(a: f16, x: f16[M, K]) -> f32[K, M] {\n"
                                     "    return exp(where(a < 0.5, idx(K) / (abs(x) + 1) + a, tanh(sum(x))) * 0.25)\n"
                                     "}\n",
                                     {"M": 2, "K": 129}),
    "index_of_the_rows_inner_loop": ("kernel f(a: f16, x: f16[M, K]) -> f32[K, M] {\n"
                                     "    return exp(where(a < 0.5, a / (abs(x) + 1) + exp(idx(M)), tanh(sum(x))))\n"
                                     "}\n", {"M": 2, "K": 129}),
    # rows whose share a thread held passed its registers (row_share_fits; the first found
    # here, the rest by the row-length scan below): f16 widened into f64 results at 16
    # elements (8 bytes), two f32 inputs at 32 (120), f64 at 32 (136), layernorm with f16
    # weights at 32 (16)
    "full_sum_widened_to_f64": ("kernel f(p0: f16[M, N], p1: f16) -> f64[N, M] {\n"
                                "    return p0.T + sum(p0)\n}\n", {"M": 1000, "N": 5}),
    "two_f32_rows_of_10000": ("kernel f(x: f32[M, N], y: f32[M, N]) -> f32[N, M] {\n"
                              "    return (x * y).T + sum(x, axis=N)\n}\n", {"M": 7, "N": 10000}),
    "f64_rows_of_16384": ("kernel f(x: f64[M, N]) -> f64[M, N] {\n"
                          "    return x + sum(x, axis=N)\n}\n", {"M": 7, "N": 16384}),
    "layernorm_f16_weights_rows_of_20000": ("kernel f(x: f16[M, N], w: f16[N], b: f16[N]) -> f16[M, N] {\n"
                                            "    m = mean(x, axis=N)\n    d = x - m\n"
                                            "    v = mean(d * d, axis=N)\n"
                                            "    return d * rsqrt(v + 0.00001) * w + b\n}\n", {"M": 7, "N": 20000}),
    # streamed rows of 8-byte elements summed in f32: ptxas's own unroll spilled 8 bytes
    "wide_rows_summed_in_f32": ("kernel f(y: i64[M, N]) -> f32[M] {\n"
                                "    return mean(y, axis=N)\n}\n", {"M": 33, "N": 100000}),
    # an f64 result over a full sum's row of f16, held in registers (512 threads, 32 elements
    # each): 2 bytes spilled at 64 registers on sm_80 (schedules.budgeted_threads, 2026-11-27)
    "f64_result_over_a_held_f16_row": ("kernel f(p0: f16[M, N], p1: bf16[N]) -> (f64[M, N], f64[N]) {\n"
                                       "    t0 = where((p0 < p0), p0, p0)\n"
                                       "    return sum(t0) + (p0 + p0 + p1), p1\n}\n", {"M": 64, "N": 256}),
    # an f32 row and an i8 one a warp holds, 32 elements a thread: i8 counted at a quarter
    # register each, 72 bytes spilled on sm_80 (problem.operand_words counts them as 16-bit ones)
    "f32_and_i8_rows_a_warp_holds": ("kernel f(p0: f32[M], p1: i8[M]) -> f32[M] {\n"
                                     "    return sum(p0) + p1\n}\n", {"M": 1000}),
    # tanh of an i8 row a warp holds at 32 elements a thread: 76 bytes spilled on sm_90a (CI)
    "tanh_of_an_i8_row_a_warp_holds": ("kernel f(p0: i8[M]) -> f64 {\n    return sum(tanh(p0))\n}\n",
                                       {"M": 1000}),
    # a full sum of i64 with results over its one row, read element by element: the unroll
    # counted no input (none over a kept dim), so 16 deep; 16 bytes spilled on sm_90a
    "full_i64_sum_with_results_over_its_row": (
        "kernel f(p0: i64[M, N], p1: f16) -> (f64[M, N], f64[M, N]) {\n"
        "    t6 = sum(where(p0 < p0, p0, p0))\n"
        "    t10 = where(logical_and(p0 < idx(M), p0 <= p0), p1, abs(p0))\n"
        "    return where(p0 < p0, p0, p0), t6 + t10\n}\n", {"M": 33, "N": 127}),
    # a row at full occupancy (32 registers) holding an i64 full sum beside its elements:
    # 8 bytes spilled on sm_90a until registers.full_occupancy_fits counted it
    "i64_full_sum_beside_a_row_at_full_occupancy": (
        "kernel f(p0: i64[M, N], p3: f16[K, N], q: f32[M, N], r: f32[M, N]) -> f32[M, K] {\n"
        "    return sum(sum(p0) + r + ((0.5 + p3) + (abs(p0) + q + p0)), axis=N)\n}\n", {"M": 1, "N": 129, "K": 1}),
    # f64 math in a pointwise kernel at vector 8 (a bf16 input leads), into bool: 16 bytes
    # spilled at items 2 until pointwise.held_words counted the f64 values (GPU fuzz)
    "f64_comparison_stored_as_bool": (
        "kernel f(p2: f64, p3: bf16[M, N, K], p4: f16[M, N], p5: f16[M, K]) -> bool[M, N, K] {\n"
        "    return p3 < (-p4.T) @ relu(p5) + p2\n}\n", {"N": 1, "K": 16, "M": 1}),
    # a full sum over a literal dim and N, an input over N alone gathered in the row: 8 bytes
    # spilled at full occupancy (32 registers) until registers.full_occupancy_fits refused it (GPU fuzz)
    "a_row_of_two_loops_with_an_input_over_one": (
        "kernel f(p0: f32[16, N], p1: bf16[N]) -> u8 {\n    return sum(i32(p0 < p1))\n}\n", {"16": 16, "N": 127}),
    "an_i8_row_of_three_loops_with_an_input_over_one": (     # (32 bytes spilled)
        "kernel f(p0: i8[N], p1: i8[M, N, 1]) -> i8 {\n    return sum(i32(floor(p0)) + p1)\n}\n",
        {"N": 64, "M": 64, "1": 1}),
    # f64 rows across memory at full occupancy, 4 elements a thread (16 words): 16 bytes spilled
    # until registers.full_occupancy_fits left 4 words to 64-bit sums and addresses (GPU fuzz)
    "f64_rows_across_memory_at_full_occupancy": (
        "kernel f(p0: f64[K, N], p1: f64[K, N, 7]) -> f32[7, N] {\n    return sum(p0 + p1, axis=K)\n}\n",
        {"K": 256, "N": 256, "7": 7}),
    # an i64 row shared by a cluster of 8 blocks of 1024, 18 elements a thread: 92 bytes spilled
    # until registers.cluster_share_fits held i64 shares to 24 words (GPU fuzz)
    "i64_row_shared_by_a_cluster": (
        "kernel f(p1: i64[K, 64, 2]) -> i8 {\n    t0 = abs(p1)\n    return sum(t0 + sum(t0))\n}\n",
        {"K": 1031, "64": 64, "2": 2}),
    # a full sum over [1, 1000] in two phases, its one row's input hoisted before the row loop (a
    # weight: nothing is kept) and held by a warp, 8 vectors a lane: 40 bytes spilled at 64
    # registers on sm_90a until rows.hoist_choices left such inputs unhoisted (CI, 2026-11-29)
    "a_full_sum_in_two_phases_hoisted": (
        "kernel f(p0: f16, p1: f32[M, 1000]) -> f64 {\n    t2 = (p0 + p1) + sum(p1)\n"
        "    return sum(t2) / (abs(p0) + 1)\n}\n", {"M": 1, "1000": 1000}),
    # a 16-bit row over two loops (1000 and K, N kept between them) a warp held packed, 64
    # elements a lane in vectors of 2: 8 bytes spilled on sm_90a, 16 on sm_80, until
    # registers.packed_rows kept packing to rows of one loop (CI, 2026-11-29)
    "a_packed_row_over_two_loops": (
        "kernel f(p0: bool, p1: f16[1000, N, K]) -> (f64[1000, N, K], f64[1000, N, K]) {\n"
        "    t3 = sum(p1) + p1\n    t5 = sum(where(p0, p1, 0.5), axis=(1000, K))\n"
        "    return t3 + (t5 + p1), p1\n}\n", {"1000": 1000, "N": 2, "K": 2}),
    # rows of 5 in straddling vectors of 4, an i8 over the rows compared with idx(5) in i64, 8
    # items: 76 bytes spilled on sm_90a until pointwise.held_words counted 64-bit math over any
    # loop of a straddling walk (CI, 2026-12-07)
    "straddled_rows_of_five_beside_an_i8_over_the_rows": (
        "kernel prop(p0: bool[M, 5], p1: i8[M]) -> bool[M, 5] {\n    t0 = idx(5)\n    return (t0 < p1)\n}\n",
        {"M": 1, "5": 5}),
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_programs_the_fuzzer_found_compile(name):
    source, extents = FOUND[name]
    k = tiledsl.compile(source)
    assert not compile_all(k, extents)


LONG_ROWS = {   # one kind of row each: inputs of several widths, 8-byte results, transposed stores
    "softmax_f32": "kernel f(x: f32[M, N]) -> f32[M, N] {\n    e = exp(x - max(x, axis=N))\n"
                   "    return e / sum(e, axis=N)\n}\n",
    "three_f32": "kernel f(x: f32[M, N], y: f32[M, N], z: f32[M, N]) -> f32[M, N] {\n"
                 "    return x * y + z + sum(x * z, axis=N)\n}\n",
    "two_f64": "kernel f(x: f64[M, N], y: f64[M, N]) -> f64[M, N] {\n    return x * y + sum(x, axis=N)\n}\n",
    "bf16_transposed": "kernel f(x: bf16[M, N]) -> f32[N, M] {\n    return x.T * sum(x, axis=N)\n}\n",
    "i64_into_f64": "kernel f(x: i64[M, N]) -> f64[M, N] {\n    return x + sum(x, axis=N)\n}\n",
}


@pytest.mark.parametrize("n", [4097, 8193, 16384, 32769])
@pytest.mark.parametrize("name", sorted(LONG_ROWS))
def test_rows_up_to_the_streaming_length_fit_their_registers(name, n):
    """Rows that a thread still holds a share of (up to 32 elements a thread at 1024
    threads) at lengths around the powers of two that change the share: the default
    schedule compiles without spills (they spilled 8 to 584 bytes before
    row_share_fits, 2026-11-25)."""
    k = tiledsl.compile(LONG_ROWS[name])
    assert not compile_all(k, {"M": 3, "N": n})


@pytest.mark.parametrize("program", [
    *(f"kernel p(x: {t}[N]) -> {t}[N] {{ return {f}(x) + sum(x) }}"
      for t in ("f32", "f64") for f in ("sin", "cos", "log", "erf", "gelu")),
    "kernel p(w: f32[N], x: f16[M, N]) -> f16[M, N] { return sin(w) * x + sum(x, axis=N) }"])
def test_costly_math_of_row_invariant_inputs_does_not_spill(program):
    """A single row's inputs, and weights, are row-invariant: hoisted, the compiler computed
    their costly math once before the row loop and held it all (f32 sin over one row of
    1000 spilled 1984 bytes a thread; GPU fuzz, 2026-11-27). They are loaded where used
    (rows.invariant_costly_math)."""
    k = tiledsl.compile(program)
    assert not compile_all(k, {"M": 300, "N": 1000})
    # nor do the tuner's candidates hoist them (hoisted, they spilled: compiled only to be pruned)
    for arch in ARCHS:
        for group in partition(k.graph):
            p = problem(group, plan_layout(group, k.graph), {"M": 300, "N": 1000}, frozenset(), 132, arch)
            assert not [s.tag for s in candidates(p, k.hints) if s.kind == "reduce_row" and s.items and s.hoist]


def test_an_output_over_some_reduced_dims_is_written_by_a_pointwise_group():
    """mean(x) over K, N, M times y[K]: the reduce group stores the mean, and a
    pointwise group over K writes the result (a reduce group's outputs span the
    kept dims, or the kept dims and every reduced dim)."""
    k = tiledsl.compile(FOUND["statistic_times_a_vector"][0])
    groups = partition(k.graph)
    assert [g.kind for g in groups] == ["reduce", "pointwise"]
    assert groups[0].outputs[0].op == "reduce" and groups[1].kept == ("K",)
    assert groups[1].outputs == tuple(k.graph.outputs)


@pytest.mark.parametrize("extents", [{"M": 4096, "N": 1000}, {"M": 4096, "N": 4096}, {"M": 100000, "N": 33}])
@pytest.mark.parametrize("example", ["softmax", "layernorm"])
def test_f64_row_kernels_do_not_spill(example, extents):
    """An f64 softmax and layernorm under the usual 64-register cap spilled 80 and
    72 bytes a thread (sm_90a); f64 functions now budget 128 registers."""
    from conftest import EXAMPLES
    source = (EXAMPLES / f"{example}.tdsl").read_text().replace("f16", "f64").replace("f32", "f64")
    assert not compile_all(tiledsl.compile(source), extents)


def test_each_result_is_its_own_value():
    """`return y, y, x`: before, the kernel wrote y once and x was x itself, so the
    second buffer was never written and the third never filled (GPU fuzz test)."""
    k = tiledsl.compile(FOUND["a_parameter_and_a_repeated_result"][0])
    outs = k.graph.outputs
    assert len({o.id for o in outs}) == len(outs)
    assert [o.op for o in outs] == ["mul", "cast", "cast", "cast"]
    assert outs[1].operands[0] is outs[0] and outs[2].operands[0].op == "param"
    over_n, scalar = partition(k.graph)
    assert over_n.outputs == tuple(outs[:3]) and scalar.outputs == (outs[3],) and not scalar.kept


def test_16_bit_scalar_parameters_round_to_their_dtype_on_the_gpu():
    """A scalar arrives as a double; an f16 or bf16 one is rounded to its dtype, as
    the reference rounds it (f16 0.3 is 0.30004883: a * b + 1 differed by 1e-5)."""
    k = tiledsl.compile(FOUND["scalar_result"][0])
    (ks,) = sources_for(k, {})
    assert "tdsl::round_f16(s1)" in ks.source and "((float)s0)" in ks.source
