"""Probe (device run): time text-patched variants of the generated row kernels
(the block reduction's trailing barrier dropped, a reciprocal for the divide,
a fast exp, registers budgeted for more threads, a persistent grid cut to the
resident blocks; for layernorm: weights in shared memory, cache hints, L2
prefetch ahead, weights loaded late) against the unpatched kernel and Triton,
to learn what limits them before changing the compiler.

    python scripts/probe_rows.py [layernorm] [late] [eight] [wide: 4096x8192 only]
    (environment: SHAPES="16384x4096 ..." the layernorm shapes, VARIANTS="base smem ..." the patches)

H100, 2026-11-22: softmax f32 32768x781 77.4 us as generated, 73.3 us with
registers budgeted for 2048 threads (Triton 73.0; now the default for such
rows). Layernorm (09:10-09:17): loading the unhoisted f32 weights late, where
the output reads them, took 16384x4096 from 102 to 94.5 us with registers
capped at 40, and 65536x1024 to 94.0 us; now what the compiler does
(BENCHMARKS.md, "Late loads"). Shared-memory weights, evict-first loads and
L2 prefetching did less or worse."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks import triton_peers as T  # noqa: E402
from benchmarks.common import copy_bandwidth, time_cuda  # noqa: E402
from tiledsl.codegen.cuda import render  # noqa: E402
from tiledsl.runtime import launcher_for, toolchain  # noqa: E402
from tiledsl.runtime.launcher import _load, set_overrides  # noqa: E402
from tiledsl.schedule.schedules import Schedule  # noqa: E402

NOSYNC_OLD = """    v = warp_reduce<Op, warps>(v);
    __syncthreads();
    return v;"""
NOSYNC_NEW = """    v = warp_reduce<Op, warps>(v);
    return v;"""


CHAN_HELPER = """
namespace tdsl {
// (count, mean, M2) of two disjoint sets merged (Chan et al.): one block-wide
// reduction gives a row's mean and variance, stable as the two-pass form.
__device__ __forceinline__ void chan_merge(float& n, float& m, float& q, float n2, float m2, float q2) {
    const float t = n + n2;
    if (t == 0.0f) return;
    const float d = m2 - m, f = n2 / t;
    m += d * f;
    q += q2 + d * d * n * f;
    n = t;
}
template <int threads>
__device__ __forceinline__ void block_chan(float& n, float& m, float& q, float* scratch) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        chan_merge(n, m, q, __shfl_xor_sync(0xffffffffu, n, o), __shfl_xor_sync(0xffffffffu, m, o),
                   __shfl_xor_sync(0xffffffffu, q, o));
    constexpr int warps = threads / 32;
    if (warps == 1) return;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) { scratch[3 * warp] = n; scratch[3 * warp + 1] = m; scratch[3 * warp + 2] = q; }
    __syncthreads();
    n = 0.0f; m = 0.0f; q = 0.0f;
#pragma unroll
    for (int w = 0; w < warps; ++w) chan_merge(n, m, q, scratch[3 * w], scratch[3 * w + 1], scratch[3 * w + 2]);
    __syncthreads();
}
}
"""


def chan(src):
    """layernorm's two block reductions (mean, then mean of squared deviations) as one."""
    start = src.find("            float acc5 = 0x0.0p+0f;")
    end = src.find("            const float v10 = tdsl::rsqrt(v9);")
    if start < 0 or end < 0 or "scratch8[" not in src:
        return None
    items = re.search(r"for \(int j = 0; j < (\d+); \+\+j\)", src[start:]).group(1)
    tpr = re.search(r"constexpr int TPR = (\d+);", src).group(1)
    body = f"""            float n_ = 0.0f, s_ = 0.0f;
#pragma unroll
            for (int j = 0; j < {items}; ++j) {{
                const idx_t c = lane + (idx_t)j * TPR;
                if (c < rvec) {{
#pragma unroll
                    for (int e = 0; e < 8; ++e) s_ += tdsl::f16_to_f32(b0[j].v[e]);
                    n_ += 8.0f;
                }}
            }}
            float m_ = n_ > 0.0f ? s_ / n_ : 0.0f, q_ = 0.0f;
#pragma unroll
            for (int j = 0; j < {items}; ++j) {{
                const idx_t c = lane + (idx_t)j * TPR;
                if (c < rvec) {{
#pragma unroll
                    for (int e = 0; e < 8; ++e) {{ const float d = tdsl::f16_to_f32(b0[j].v[e]) - m_; q_ += d * d; }}
                }}
            }}
            tdsl::block_chan<{tpr}>(n_, m_, q_, chan_scratch);
            const float v5 = m_;
        {{
            const float v8 = q_ / (float)(n1);
            const float v9 = (v8 + v3);
"""
    out = src[:start] + body + src[end:]
    out = out.replace("    __shared__ float scratch5[", "    __shared__ float chan_scratch[3 * 32];\n    __shared__ float scratch5[", 1)
    return out.replace('extern "C"', CHAN_HELPER + '\nextern "C"', 1)


STREAM_HELPER = """
namespace tdsl {
// 16 bytes loaded / stored with a cache hint (evict-first: .cs; or not kept in L1)
template <class T, int N> __device__ __forceinline__ Vec<T, N> load_hint(const T* p) {
    static_assert(sizeof(T) * N == 16, "16-byte vectors");
    Vec<T, N> r; unsigned* u = reinterpret_cast<unsigned*>(&r);
    asm("LDHINT {%0,%1,%2,%3}, [%4];" : "=r"(u[0]), "=r"(u[1]), "=r"(u[2]), "=r"(u[3]) : "l"(p));
    return r;
}
template <class T, int N> __device__ __forceinline__ void store_cs(T* p, const Vec<T, N>& v) {
    static_assert(sizeof(T) * N == 16, "16-byte vectors");
    const unsigned* u = reinterpret_cast<const unsigned*>(&v);
    asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" :: "l"(p), "r"(u[0]), "r"(u[1]), "r"(u[2]), "r"(u[3]) : "memory");
}
}
"""


def hinted(src, load=None, store=False):
    """Per-row 16-bit loads with a PTX cache hint, and/or stores evict-first."""
    out = src
    if load:
        out = out.replace("tdsl::load<unsigned short, 8>(", "tdsl::load_hint<unsigned short, 8>(")
    if store:
        out = out.replace("tdsl::store<unsigned short, 8>(", "tdsl::store_cs<unsigned short, 8>(")
    helper = STREAM_HELPER.replace("LDHINT", load or "ld.global.cs.v4.u32")
    return out.replace('extern "C"', helper + '\nextern "C"', 1) if out != src else None


def shared_hoist(src):
    """Row-invariant inputs (loaded before the row loop) kept in per-thread
    shared-memory slots instead of registers: no barrier, each thread reads its own."""
    block = int(re.search(r"__launch_bounds__\((\d+),", src).group(1))
    head = src[:src.find("for (idx_t row =")]
    names = sorted(set(re.findall(r"(b\d+)\[j\] = tdsl::load<float, \d+>\(in\d+ \+ c1\);", head)))
    if not names:
        return None
    out = src
    for b in names:
        decl = re.search(r"tdsl::Vec<float, (\d+)> " + b + r"\[(\d+)\];", out)
        out = out.replace(decl.group(0), f"__shared__ tdsl::Vec<float, {decl.group(1)}> {b}s[{decl.group(2)}][{block}];")
        out = out.replace(f"{b}[j]", f"{b}s[j][threadIdx.x]")
    return out


def bounds(src, threads):
    lb = re.search(r"__launch_bounds__\((\d+), (\d+)\)", src)
    b = int(lb.group(1))
    if threads % b or b * int(lb.group(2)) >= threads:
        return None
    return src.replace(lb.group(0), f"__launch_bounds__({b}, {threads // b})")


PF_HELPER = """
namespace tdsl {
// sm_90: one thread asks for a whole contiguous range to be brought into L2
__device__ __forceinline__ void prefetch_l2_bulk(const void* p, unsigned bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(p), "r"(bytes) : "memory");
}
}
"""
LOOP = "    for (idx_t row = (idx_t)blockIdx.x * RPB + threadIdx.x / TPR; row < nrows; row += (idx_t)gridDim.x * RPB) {\n"


def l2_prefetch(src, distance):
    """Persistent rows: lane 0 has x's row `distance` rows (of this block's) ahead
    brought into L2 by one bulk prefetch; the first `distance` at the start."""
    if LOOP not in src or "gridDim.x * RPB" not in src:
        return None
    ahead = lambda k: (f"{{ const idx_t far = {k}; if (lane == 0 && far < nrows) "
                       f"tdsl::prefetch_l2_bulk(in0 + (size_t)far * n1, (unsigned)n1 * 2u); }}")
    start = "\n".join("    " + ahead(f"(idx_t)blockIdx.x * RPB + threadIdx.x / TPR + (idx_t){k} * gridDim.x * RPB")
                      for k in range(1, distance + 1))
    out = src.replace(LOOP, start + "\n" + LOOP + "        " + ahead(f"row + (idx_t){distance + 1} * gridDim.x * RPB") + "\n", 1)
    return out.replace('extern "C"', PF_HELPER + '\nextern "C"', 1)


def l2_prefetch_blocks(src, ahead_blocks):
    """A block per row: block b has row b + ahead_blocks brought into L2."""
    if LOOP not in src or "gridDim.x * RPB" not in src:
        return None
    pf = (f"    {{ const idx_t far = (idx_t)blockIdx.x * RPB + threadIdx.x / TPR + {ahead_blocks}; if (lane == 0 && far < nrows) "
          f"tdsl::prefetch_l2_bulk(in0 + (size_t)far * n1, (unsigned)n1 * 2u); }}\n")
    return src.replace(LOOP, pf + LOOP, 1).replace('extern "C"', PF_HELPER + '\nextern "C"', 1)


def late(src):
    """Unhoisted row-invariant inputs (f32 weights) loaded in the output loop,
    where they are used, instead of with the row before its reductions."""
    start = src.find("for (idx_t row")
    head, body = src[:start], src[start:]
    lines = re.findall(r"\n *(b\d+\[j\] = tdsl::load<float, \d+>\(in\d+ \+ c1\);)", body)
    if not lines or "p0[" in src:
        return None
    for line in lines:
        body = body.replace(line, "", 1)
    i = body.find("tdsl::Vec<unsigned short, 8> o0;")
    return head + body[:i] + " ".join(lines) + "\n                " + body[i:]


def ln_variants(src, name):
    """layernorm: where the registers go (weights in shared memory, budgets) and cache hints."""
    out = {"base": src}
    lt = late(src)
    if lt:
        for label, text in (("late", lt), ("late+lb_1280", bounds(lt, 1280)), ("late+lb_1536", bounds(lt, 1536)),
                            ("late+lb_1536+ld.cs", bounds(lt, 1536) and hinted(bounds(lt, 1536), "ld.global.cs.v4.u32"))):
            if text:
                out[label] = text
    if "late" in sys.argv[1:]:
        return out if lt else {"base": src, "ld.cs": hinted(src, "ld.global.cs.v4.u32")}
    for d in (1, 2, 4):
        pf = l2_prefetch(src, d)
        if pf and "p0[" in src:
            out[f"l2pf{d}"] = pf
            out[f"l2pf{d}+ld.cs"] = hinted(pf, "ld.global.cs.v4.u32")
    if "p0[" not in src and "ring" not in src:
        for a in (1056, 2112, 4224):
            out[f"l2pf+{a}blocks"] = l2_prefetch_blocks(src, a)
    sm = shared_hoist(src)
    for label, text in (("lb_1536", bounds(src, 1536)), ("lb_full", bounds(src, 2048)),
                        ("smem", sm), ("smem+lb_1536", sm and bounds(sm, 1536)),
                        ("smem+lb_full", sm and bounds(sm, 2048)),
                        ("ld.cs", hinted(src, "ld.global.cs.v4.u32")),
                        ("ld.nc.noalloc", hinted(src, "ld.global.nc.L1::no_allocate.v4.u32")),
                        ("st.cs", hinted(src, store=True)),
                        ("ld.cs+st.cs", hinted(src, "ld.global.cs.v4.u32", True)),
                        ("smem+ld.nc.noalloc+st.cs", sm and hinted(sm, "ld.global.nc.L1::no_allocate.v4.u32", True)),
                        ("smem+lb_1536+ld.cs+st.cs", sm and bounds(sm, 1536) and hinted(bounds(sm, 1536), "ld.global.cs.v4.u32", True))):
        if text:
            out[label] = text
    return out


def variants(src, name):
    if "scratch8[" in src:
        return ln_variants(src, name)
    out = {"base": src}
    if "tdsl::exp(" in src:     # the approximate exp Triton's tl.exp lowers to
        out["fastexp"] = src.replace("tdsl::exp(", "__expf(")
    if chan(src):
        out["chan"] = chan(src)
    if NOSYNC_OLD in src:
        out["nosync"] = src.replace(NOSYNC_OLD, NOSYNC_NEW)
    lb = re.search(r"__launch_bounds__\((\d+), (\d+)\)", src)
    if lb and int(lb.group(1)) * int(lb.group(2)) < 2048:
        out["lb_full"] = src.replace(lb.group(0), f"__launch_bounds__({lb.group(1)}, {2048 // int(lb.group(1))})")
    if lb and 1536 % int(lb.group(1)) == 0 and int(lb.group(1)) * int(lb.group(2)) < 1536:
        # 40 registers, 1536 threads: what 8-element layernorm rows fit without spilling (ptxas)
        out["lb_1536"] = src.replace(lb.group(0), f"__launch_bounds__({lb.group(1)}, {1536 // int(lb.group(1))})")
    if "(v3 / v4)" in src:
        r = src.replace("const float v4 = acc4;", "const float v4 = acc4; const float r4 = 1.0f / v4;")
        r = r.replace("(v3 / v4)", "(v3 * r4)")
        out["recip"] = r
        out["recip+nosync"] = r.replace(NOSYNC_OLD, NOSYNC_NEW)
        out["recip+fastexp"] = r.replace("tdsl::exp(v2)", "__expf(v2)")
        if lb:
            out["recip+lb_full"] = r.replace(lb.group(0), f"__launch_bounds__({lb.group(1)}, {2048 // int(lb.group(1))})")
    return out


def probe(path, ext, make, triton_fn, schedules=(), patch_schedules=()):
    k = tiledsl.compile(open(path).read())
    L = k._launcher = launcher_for(k)
    sets = [make() for _ in range(2)]
    ref = k(*sets[0])
    nbytes = sum(a.nbytes for a in sets[0] if hasattr(a, "nbytes") and a.size > 10000) + ref.nbytes
    print(f"## {path} {ext}  ({nbytes / 1e6:.0f} MB moved)", flush=True)

    def report(label, fn):
        t = time_cuda(lambda i: fn(i), n_sets=2, repeats=30).median_us
        print(f"  {label:40s} {t:8.1f} us  {nbytes / t / 1e3:7.0f} GB/s  {nbytes / t / 1e3 / BW:5.3f}x copy", flush=True)

    outs = [cp.empty_like(ref) for _ in range(2)]
    report("tiledsl default", lambda i: k(*sets[i], out=outs[i]))
    report("tiledsl default, allocating", lambda i: k(*sets[i]))
    if triton_fn is not None:
        import torch
        tsets = [[torch.as_tensor(a, device="cuda") if hasattr(a, "data") else a for a in st] for st in sets]
        report("triton", lambda i: triton_fn(*tsets[i]))
    for s in schedules:
        try:
            set_overrides(L, {0: s})
            o = k(*sets[0])
            err = float(cp.linalg.norm(o.astype(cp.float64) - ref.astype(cp.float64)) / cp.linalg.norm(ref.astype(cp.float64)))
            report(f"{s.tag} (err {err:.0e})", lambda i: k(*sets[i], out=outs[i]))
        except Exception as e:  # noqa: BLE001
            print("  ", s, "FAILED", str(e)[:200])
    set_overrides(L, {})
    k(*sets[0])
    [program] = L._plans.values()
    for schedule in [program.choices[0][0], *patch_schedules]:
        patched(k, L, program, schedule, sets, outs, ref, report)


def raw_call(f, sets, outs, consts, picks, block, shared):
    """call(i, grid): a patched kernel on input set i, its arguments as the launcher passes them."""
    def call(i, grid):
        arrays = [a for a in sets[i] if hasattr(a, "data")]
        scalars = [np.float64(a) for a in sets[i] if not hasattr(a, "data")]
        names = consts + arrays + [outs[i]] + scalars
        f(grid, block, tuple(names[j] for j in picks), shared_mem=shared)
    return call


def patched_error(run, outs, ref) -> float:
    """Relative error of a patched kernel's first output, poisoned before the run."""
    outs[0].fill(float("nan"))
    run(0)
    return float(cp.linalg.norm(outs[0].astype(cp.float64) - ref.astype(cp.float64))
                 / cp.linalg.norm(ref.astype(cp.float64)))


def patched(k, L, program, schedule, sets, outs, ref, report):
    fn, grid, block, picks, shared = program.steps[0]
    if schedule != program.choices[0][0]:
        set_overrides(L, {0: schedule})
        k(*sets[0])
        [program] = L._plans.values()
        fn, grid, block, picks, shared = program.steps[0]
        set_overrides(L, {})
    src = render(L.graph, L.groups[0], L.layouts[0], schedule, 1).source
    name = schedule.kernel_name(L.graph.name, 0, 1)
    print("  default schedule:", schedule.tag, "grid", grid, "block", block)
    consts = [np.int64(c) for c in program.constants]
    keep = os.environ.get("VARIANTS", "").split()       # labels to time (all when unset)
    for label, text in variants(src, name).items():
        if keep and label not in keep:
            continue
        cubin = toolchain.compile_cuda(text, arch="sm_90a")
        res = cubin.resources.get(name)
        if res and res.shared_bytes > 48 * 1024:
            print(f"  patch {label}: {res.shared_bytes} bytes of static shared memory, skipped")
            continue
        f = _load(cubin.cubin, name, 0, shared)
        call = raw_call(f, sets, outs, consts, picks, block, shared)

        def run(i, call=call):
            call(i, grid)       # the grid as it is when run: re-timed below at the resident count
        err = patched_error(run, outs, ref)
        resident = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(f.ptr, int(block[0]), shared)
        report(f"patch {label} r{res.registers if res else '?'} occ{resident * int(block[0])} (err {err:.0e})", run)
        if grid[0] > 132 * resident and grid[0] % 132 == 0 and grid[0] < 132 * 64:
            full = grid
            grid = (132 * resident,) + tuple(grid[1:])
            report(f"  ..., persistent grid = {resident} resident/SM (not {full[0] // 132})", run)
            grid = full


def main():
    global BW
    rs = np.random.default_rng()
    BW = copy_bandwidth()["gbps"]
    print(f"copy {BW:.0f} GB/s")
    m, n = 32768, 781
    if "layernorm" not in sys.argv[1:]:
        probe("examples/softmax.tdsl", (m, n), lambda: (cp.asarray(rs.standard_normal((m, n), np.float32)),),
            (lambda x: T.softmax(x)) if T.available()[0] else None,
            [Schedule("reduce_row", block=128, vec=1, items=25, row_threads=32, keep=True),
             Schedule("reduce_row", block=256, vec=1, items=25, row_threads=32, keep=True),
             Schedule("reduce_row", block=64, vec=1, items=13, row_threads=64, keep=True),
             Schedule("reduce_row", block=128, vec=1, items=8, row_threads=128, keep=True, blocks_per_sm=8),
             Schedule("reduce_row", block=256, vec=1, items=4, row_threads=256, keep=True)],
            [Schedule("reduce_row", block=128, vec=1, items=8, row_threads=128)])
    shapes = ((4096, 8192),) if "wide" in sys.argv[1:] else ((16384, 4096), (65536, 1024), (4096, 8192))
    if os.environ.get("SHAPES"):        # e.g. SHAPES="16384x4096"
        shapes = tuple(tuple(int(v) for v in mn.split("x")) for mn in os.environ["SHAPES"].split())
    for m, n in (() if "softmax" in sys.argv[1:] else shapes):
        def make(m=m, n=n):
            return (cp.asarray(rs.standard_normal((m, n), np.float32)).astype(cp.float16),
                    cp.asarray(rs.standard_normal(n, np.float32)), cp.asarray(rs.standard_normal(n, np.float32)), 1e-5)
        # 8 elements a thread (items=1): registers for 1536 threads without spills (see lb_1536)
        eight = [Schedule("reduce_row", block=n // 8, vec=8, items=1, row_threads=n // 8, hoist=hoist, blocks_per_sm=ps)
                 for hoist, ps in ((True, 0), (False, 0), (True, 1536 // (n // 8)), (True, 2048 // (n // 8)))
                 if ps == 0 or 1536 % (n // 8) == 0] if n // 8 <= 1024 else []
        probe("examples/layernorm.tdsl", (m, n), make,
              (lambda x, w, b, e: T.layernorm(x, w, b, e)) if T.available()[0] else None, (),
              [Schedule("reduce_row", block=n // 16, vec=8, items=2, row_threads=n // 16, hoist=False)]
              + ([Schedule("reduce_row", block=n // 32, vec=8, items=4, row_threads=n // 32, hoist=False)] if n >= 4096 else [])
              + (eight if "eight" in sys.argv[1:] else []))


if __name__ == "__main__":
    main()
