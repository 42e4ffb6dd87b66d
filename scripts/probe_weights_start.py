"""Probe (device run): do a wide layernorm's hoisted weights cost a fixed start-up,
paid before its rows stream?  The default at N=8192 (a persistent block of 512 that
prefetches its next row) loads its f32 weight and bias (64 KB a block, 17 MB over the
grid, all from the same L2 lines) before the first row. Text-patched variants of that
kernel, each checked against the unpatched one, timed in interleaved rounds over
row counts, beside a copy of the same bytes:

- rows_first: the first row's loads issued before the weights'
- weights_in_loop: the weights loaded in the first iteration, after the next row's
  prefetch, so two rows stream before them
- noweights: the control, w = 1 and b = 0 as constants (checked against the program
  run on ones and zeros); what the weights cost at most

A gap to the control that stays the same in microseconds as the rows grow is a start-up
cost; one that grows with them is throughput. Where the defaults prefetch no row, or with
WSTART_WHICH=x, the weights loaded late (a block a row at 1536 threads, `t512_nh_r40`, and
the persistent `t512_nh_p`), each also with x's loads past L1 (L1::no_allocate) and the
weights' kept there (L1::evict_last).

H100 2026-12-07 00:42: no weights at all is no faster at 4096 rows and up; the default's
ratio to a copy of its bytes falls from 0.95x at 4096 rows to 0.90x at 8192 (BENCHMARKS.md,
"A wide layernorm's hoisted weights are not its missing microseconds").

    python scripts/probe_weights_start.py [M ...]   (default: 1056 2048 4096 8192)
    (environment: WSTART_WHICH="w x pf", the default: "w x"; pf: the late-weight kernel
     with its weights' lines prefetched into L1 after the row's loads are issued. H100
     2026-12-07 12:30: slower everywhere, f32 weights 4096x8192 52.4 -> 57.0 us and
     8192x8192 97.3 -> 110.2, f16 ones level or 1% slower)
"""
import os
from dataclasses import replace
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, time_cuda  # noqa: E402
from tiledsl.codegen.cuda import render  # noqa: E402
from tiledsl.runtime import launcher_for, toolchain  # noqa: E402
from tiledsl.inputs import relative_error  # noqa: E402
from tiledsl.runtime.launcher import _load, _sm_count, set_overrides  # noqa: E402
from tiledsl.schedule.schedules import Schedule  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_rows import raw_call  # noqa: E402

LOOP = ("    for (idx_t row = (idx_t)blockIdx.x * RPB + threadIdx.x / TPR; row < nrows; "
        "row += (idx_t)gridDim.x * RPB) {\n")
FIRST = "    {   // the first row's elements"
FIRST_ROW = "(idx_t)blockIdx.x * RPB + threadIdx.x / TPR"
N = 8192
WHICH = os.environ.get("WSTART_WHICH", "w x").split()   # w: the start-up patches; x: weights late, cache hints
# a block a row of 512, the weights loaded late, registers for 1536 threads (`t512_nh_r40`)
LATE = Schedule("reduce_row", block=512, vec=8, items=2, row_threads=512, hoist=False, min_blocks=3)


def parts(src):
    """(head, weights' loads, first row's loads, the loop and the rest)."""
    i_first, i_loop = src.index(FIRST), src.index(LOOP)
    i_weights = src.rindex("#pragma unroll\n    for (int j", 0, i_first)
    return src[:i_weights], src[i_weights:i_first], src[i_first:i_loop], src[i_loop:]


def rows_first(src):
    head, weights, first, rest = parts(src)     # (in the first row's branch: ptxas hoists them above it)
    at = first.rindex("        }\n    }\n")
    return head + first[:at] + weights + first[at:] + rest


def weights_in_loop(src):
    head, weights, first, rest = parts(src)
    at = rest.index("        {\n            float acc")         # after the next row's prefetch
    guarded = f"        if (row == {FIRST_ROW}) {{\n" + weights + "        }\n"
    return head + first + rest[:at] + guarded + rest[at:]


def noweights(src):
    head, weights, first, rest = parts(src)
    out = head + first + rest
    out = re.sub(r".*tdsl::keep_packed\(b[12]\[j\]\);\n", "", out)
    out = re.sub(r"const float (v\d+) = [^;]*\bb1\[j\]\.v\[e\][^;]*;", r"const float \1 = 1.0f;", out)
    return re.sub(r"const float (v\d+) = [^;]*\bb2\[j\]\.v\[e\][^;]*;", r"const float \1 = 0.0f;", out)


HINT_HELPER = """
namespace tdsl {
// a vector of 16-byte pieces loaded with a PTX cache hint: x streamed past L1 (load_x),
// weights kept there (load_w)
#define TDSL_HINTED(NAME, OP) \\
template <class T, int N> __device__ __forceinline__ Vec<T, N> NAME(const T* p) { \\
    static_assert(sizeof(Vec<T, N>) % 16 == 0, "16-byte pieces"); \\
    Vec<T, N> r; unsigned* u = reinterpret_cast<unsigned*>(&r); \\
    _Pragma("unroll") for (int q = 0; q < (int)sizeof(Vec<T, N>) / 16; ++q) \\
        asm(OP " {%0,%1,%2,%3}, [%4];" : "=r"(u[4 * q]), "=r"(u[4 * q + 1]), "=r"(u[4 * q + 2]), \\
            "=r"(u[4 * q + 3]) : "l"(p + q * 16 / (int)sizeof(T))); \\
    return r; \\
}
TDSL_HINTED(load_x, "ld.global.nc.L1::no_allocate.v4.u32")
TDSL_HINTED(load_w, "ld.global.nc.L1::evict_last.v4.u32")
}
"""


def hinted(src, x=False, w=False):
    """x's loads (their offset starts at the row, c0) past L1, and/or the weights' kept in it."""
    out = src
    if x:
        out = re.sub(r"tdsl::load<([\w ]+, \d+)>\((in0 \+ \(c0\))", r"tdsl::load_x<\1>(\2", out)
    if w:
        out = re.sub(r"tdsl::load<([\w ]+, \d+)>\((in[12] \+ c1\))", r"tdsl::load_w<\1>(\2", out)
    assert out != src, "nothing to hint"
    return out.replace('extern "C"', HINT_HELPER + '\nextern "C"', 1)


X_LOADS_END = ("b0[j] = tdsl::load<unsigned short, 8>(in0 + (c0) * n1 + c1);\n"
               "            }\n        }\n")
L1_PREFETCH = """#pragma unroll
        for (int j = 0; j < 2; ++j) {   // (probe) the weights' lines asked into L1 now, read after the reductions
            const idx_t c = lane + (idx_t)j * TPR;
            if (c < rvec && (lane & 3) == 0) {
                asm volatile("prefetch.global.L1 [%0];" :: "l"(in1 + c * 8));
                asm volatile("prefetch.global.L1 [%0];" :: "l"(in2 + c * 8));
            }
        }
"""


def weights_prefetched(src):
    """The late-weight kernel asking L1 for its weights' lines (one thread of the four that
    share a 128-byte line) as soon as its row's loads are issued."""
    assert src.count(X_LOADS_END) == 1, "not the late-weight row kernel this patch knows"
    return src.replace(X_LOADS_END, X_LOADS_END + L1_PREFETCH)


def source_of(k, L, sets, schedule):
    """(source, kernel name, launch step, schedule) of group 0 under `schedule` (None: the default)."""
    set_overrides(L, {0: schedule} if schedule else {})
    k(*sets[0])
    [program] = L._plans.values()
    set_overrides(L, {})
    s = program.choices[0][0]
    src = render(L.graph, L.groups[0], L.layouts[0], s, 1).source
    return src, program, s


def variants_of(k, L, sets):
    """label -> (source, program, schedule) of each variant timed for this program."""
    out = {}
    src, program, d = source_of(k, L, sets, None)
    out["default " + d.tag] = (src, program, d)
    if "w" in WHICH and FIRST in src and LOOP in src:      # a persistent block that prefetches its next row
        for v, patch in (("rows_first", rows_first), ("weights_in_loop", weights_in_loop), ("noweights", noweights)):
            out[v] = (patch(src), program, d)
    if "x" in WHICH:
        late_p = replace(LATE, prefetch=True, blocks_per_sm=4, min_blocks=1)     # its persistent, prefetching twin
        for s in (LATE, late_p):
            if s == d:
                continue
            t, prog, _ = source_of(k, L, sets, s)
            out[s.tag] = (t, prog, s)
        for name in list(out):
            t, prog, s = out[name]
            if not s.hoist and name in (s.tag, "default " + s.tag):
                out[name + " x.noalloc"] = (hinted(t, x=True), prog, s)
                out[name + " x.noalloc w.last"] = (hinted(t, x=True, w=True), prog, s)
    if "pf" in WHICH:      # the late-weight block a row, its weights' lines prefetched into L1
        label = next((v for v in ("default " + LATE.tag, LATE.tag) if v in out), None)
        if label is None:
            label = LATE.tag
            out[label] = source_of(k, L, sets, LATE)
        t, prog, s = out[label]
        out[LATE.tag + " w.prefetch"] = (weights_prefetched(t), prog, s)
    return out


def probe(label, src_text, wdtype, m, copy_gbps, rs):
    k = tiledsl.compile(src_text)
    L = k._launcher = launcher_for(k)
    def make():
        x = cp.asarray(rs.standard_normal((m, N), np.float32)).astype(cp.float16)
        w = cp.asarray(rs.standard_normal(N, np.float32)).astype(wdtype)
        b = cp.asarray(rs.standard_normal(N, np.float32)).astype(wdtype)
        return (x, w, b, 1e-5)
    sets = [make() for _ in range(2)]
    ref = k(*sets[0])
    plain = k(sets[0][0], cp.ones(N, wdtype), cp.zeros(N, wdtype), 1e-5)
    outs = [cp.empty_like(ref) for _ in range(2)]
    sms = _sm_count(0)
    runs = {}
    for vlabel, (text, program, schedule) in variants_of(k, L, sets).items():
        fn, grid, block, picks, shared = program.steps[0]
        name = re.search(r"__global__ void (?:__launch_bounds__\(\d+, \d+\)\s*)?(\w+)\(", text).group(1)
        consts = [np.int64(c) for c in program.constants]
        cubin = toolchain.compile_cuda(text, arch="sm_90a")
        res = next(iter(cubin.resources.values()), None)
        f = _load(cubin.cubin, name, 0, shared)
        call = raw_call(f, sets, outs, consts, picks, block, shared)
        run = (lambda call, g: lambda i: call(i, g))(call, grid)
        outs[0].fill(float("nan"))
        run(0)
        err = relative_error(cp.asnumpy(outs[0]), cp.asnumpy(plain if vlabel == "noweights" else ref))
        if not err < 2e-3:
            print(f"  {label} M={m} {vlabel}: err {err:.1e}, dropped", flush=True)
            continue
        runs[f"{vlabel} g{grid[0]}"] = (run, res)
        resident = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(f.ptr, int(block[0]), shared)
        if schedule.blocks_per_sm and grid[0] > sms * resident:   # only the blocks resident at once
            runs[f"{vlabel} g{sms * resident}"] = ((lambda call, g: lambda i: call(i, g))(
                call, (sms * resident,) + tuple(grid[1:])), res)
    times = {v: [] for v in runs}
    for _ in range(3):
        for v, (run, _) in runs.items():
            times[v].append(time_cuda(run, n_sets=2, repeats=30, warmup_ms=20).median_us)
    c = copy_bandwidth(m * N * 2, repeats=30, rotate=True, warmup_ms=20)
    copy_us = min(c["memcpy_us"], c["copy_kernel_us"])
    nbytes = 2 * m * N * 2 + 2 * N * np.dtype(wdtype).itemsize
    print(f"{label} {m}x{N}, copy of the bytes {copy_us:.1f} us:", flush=True)
    base = statistics.median(next(iter(times.values())))
    for v, t in times.items():
        us = statistics.median(t)
        regs = runs[v][1].registers if runs[v][1] else "-"
        print(f"  {v:52s} r{regs:<3} {us:7.1f} us  {nbytes / us / 1e3 / copy_gbps:5.3f}x copy  "
              f"{copy_us / us:5.3f}x own copy  {us - base:+5.1f}  ({' '.join(f'{x:.1f}' for x in t)})", flush=True)


def main():
    rs = np.random.default_rng()
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    rows = [int(a) for a in sys.argv[1:]] or [1056, 2048, 4096, 8192]
    ln = open("examples/layernorm.tdsl").read()
    for m in rows:
        probe("layernorm f32 w,b", ln, np.float32, m, copy, rs)
        probe("layernorm f16 w,b", ln.replace("f32[N]", "f16[N]"), np.float16, m, copy, rs)


if __name__ == "__main__":
    main()
