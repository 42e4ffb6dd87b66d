"""Probe (device run): what 16-bit row kernels pay for accurate math they round away.

Text-patched versions of the rendered kernels, timed in alternation with the compiler's own
(three interleaved rounds, median µs), each checked against the float64 reference first:
  plain  the compiler's kernel
  ftz    every exp on ex2.approx.ftz (tdsl::exp_narrow): 2 instructions, not expf's 8
  sub    every exp on ex2.approx without ftz (subnormal results kept): 5 instructions
  once   a result stored as f16/bf16 converted once (not rounded, widened, then narrowed)
  both   ftz and once
  plainld  16-byte loads as ld.global.v4.b32 (L1), not ld.global.nc
  nofollow without tdsl::follow_in_stream (griddepcontrol wait / launch_dependents)
  min<k> registers capped for k resident blocks an SM (__launch_bounds__)
Softmax f16/bf16 (its exps feed the sum and the quotient, both rounded to 16 bits at the end),
and the norms (once only), at the shapes where 16-bit softmax trailed Triton.

    python scripts/probe_fastexp.py [labels to keep]
"""
import os
import re
import statistics
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, time_cuda  # noqa: E402
from probe_gaps import SOURCES, triton_call  # noqa: E402
from row_probe import prepare  # noqa: E402
from text_patch import install, mode_errors  # noqa: E402
from tiledsl.runtime.launcher import set_overrides  # noqa: E402
from tiledsl.schedule.choose import candidates, default  # noqa: E402

SUB = r'''
__device__ __forceinline__ float exp_sub_(float x) {
    float r; asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x * 1.44269504088896340736f)); return r;
}
'''
PLAIN_LOAD = r'''
template <class T, int N>
__device__ __forceinline__ tdsl::Vec<T, N> load_plain_(const T* p) {
    tdsl::Vec<T, N> v;
    if constexpr (sizeof(v) == 16) {
        unsigned u[4];
        asm volatile("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(u[0]), "=r"(u[1]), "=r"(u[2]), "=r"(u[3]) : "l"(p));
        memcpy(&v, u, 16);
    } else {
        v = *reinterpret_cast<const tdsl::Vec<T, N>*>(p);
    }
    return v;
}
'''
ONCE = re.compile(r"const float (v\d+) = tdsl::round_(f16|bf16)\((v\d+)\);")


def once(src: str) -> str:
    for var, kind, arg in ONCE.findall(src):
        src = src.replace(f"tdsl::f32_to_{kind}({var})", f"tdsl::f32_to_{kind}({arg})")
    return src


def transform(src: str, mode: str) -> str:
    if mode in ("ftz", "both"):
        src = src.replace("tdsl::exp(", "tdsl::exp_narrow(")
    if mode == "sub":
        src = src.replace("tdsl::exp(", "exp_sub_(").replace('extern "C" __global__', SUB + 'extern "C" __global__', 1)
    if mode in ("once", "both"):
        src = once(src)
    if "plainld" in mode:        # loads through L1 as plain ld.global, not the non-coherent path
        src = src.replace("tdsl::load<", "load_plain_<").replace('extern "C" __global__', PLAIN_LOAD + 'extern "C" __global__', 1)
    if "nofollow" in mode:       # no wait for the kernel before, nor early launch of the next
        src = src.replace("tdsl::follow_in_stream();", "")
    if mode.startswith("min"):     # registers for `min<k>` resident blocks an SM
        src = re.sub(r"__launch_bounds__\((\d+), (\d+)\)", lambda m: f"__launch_bounds__({m.group(1)}, {mode[3:]})", src)
    return src


MODE = install("fastexp", lambda src, schedule: transform(src, MODE["on"]))


def use(mode: str) -> None:
    """Render kernels as `mode` from here on (plain: the compiler's own)."""
    MODE["on"] = False if mode == "plain" else mode


SOURCES = dict(SOURCES, softmaxbf16=SOURCES["softmax16"].replace("f16[M, N]", "bf16[M, N]"))
SM_MODES = ("plain", "ftz", "sub", "once", "both")
NORM_MODES = ("plain", "once")
# (name, shape, tag patterns beside the default, modes)
MIN_MODES = ("plain", "min3", "min4")
LD_MODES = ("plain", "plainld", "nofollow", "plainld+nofollow")
FAST = ("plain", "ftz", "sub")
CASES = [("softmax", (32768, 781), [], ("plain", "sub", "nofollow", "plainld")),
         ("softmax", (16384, 1024), [], ("plain", "sub", "nofollow", "plainld")),
         ("softmax16", (4096, 8192), ["b256_v8_i4_t256_k_x32", "b512_v8_i2_t512_x32"], FAST),
         ("softmax16", (8192, 8192), ["b256_v8_i4_t256_k_x32"], FAST),
         ("softmax16", (16384, 4096), [], FAST),
         ("softmax16", (4096, 16384), [], FAST),
         ("softmax16", (65536, 1024), [], FAST),
         ("softmaxbf16", (16384, 4096), [], FAST),
         ("softmax16", (4096, 8192), ["b256_v8_i4_t256_k_x32", "b512_v8_i2_t512_x32"], LD_MODES),
         ("softmax", (8192, 4096), ["b512_v4_i2_t512_x32"], LD_MODES),
         ("layernorm", (16384, 4096), [], LD_MODES),
         ("rmsnorm", (4096, 8192), [], LD_MODES),
         ("softmax16", (4096, 8192), ["b512_v8_i2_t512_x32", "b256_v8_i4_t256_x32"], MIN_MODES + ("ftz",)),
         ("softmax16", (8192, 8192), ["b512_v8_i2_t512_x32"], MIN_MODES + ("ftz",)),
         ("softmax", (8192, 4096), ["b512_v4_i2_t512_x32", "b512_v4_i2_t512_k_x32"], MIN_MODES),
         ("softmax", (32768, 781), [], MIN_MODES),
         ("softmax16", (4096, 8192), ["b256_v8_i4_t256_k_x32", "b512_v8_i2_t512_k_x32", "b512_v8_i2_t512_x32"], SM_MODES),
         ("softmax16", (8192, 8192), ["b256_v8_i4_t256_k_x32", "b512_v8_i2_t512_k_x32"], SM_MODES),
         ("softmax16", (16384, 4096), ["b256_v8_i2_t256_k_x32", "b512_v8_i1_t512_k_x32"], SM_MODES),
         ("softmax16", (4096, 16384), ["b512_v8_i4_t512_k_x32", "b1024_v8_i2_t1024_k_x32"], SM_MODES),
         ("softmax16", (65536, 1024), [], SM_MODES),
         ("softmaxbf16", (16384, 4096), ["b256_v8_i2_t256_k_x32"], SM_MODES),
         ("layernorm", (16384, 4096), ["b256_v8_i2_t256_nh_r40_x32"], NORM_MODES),
         ("layernorm", (4096, 8192), [], NORM_MODES),
         ("layernorm16", (16384, 4096), [], NORM_MODES),
         ("layernorm16", (4096, 8192), [], NORM_MODES),
         ("rmsnorm", (16384, 4096), [], NORM_MODES),
         ("rmsnorm", (4096, 8192), [], NORM_MODES)]


def dump_triton(name: str, case, label: str) -> None:
    """Triton's kernel at this shape: registers and spills printed, its cubin kept under $OUT."""
    import torch
    import triton
    from benchmarks import triton_peers as tp
    if not name.startswith("softmax"):
        return
    x = torch.from_dlpack(case.sets[0][0])
    out = torch.empty_like(x)
    block = triton.next_power_of_2(x.shape[1])
    ck = tp._softmax_kernel[(x.shape[0],)](out, x, x.stride(0), out.stride(0), x.shape[1], BLOCK=block,
                                           num_warps=tp._num_warps(block))
    print(f"  triton kernel: {tp._num_warps(block) * 32} threads, {ck.n_regs} registers, {ck.n_spills} spills",
          flush=True)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], f"triton_{label}.cubin"), "wb") as f:
            f.write(ck.asm["cubin"])


def main() -> None:
    only = sys.argv[1:]
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    seen = set()
    for name, (m, n), patterns, modes in CASES:
        label = f"{name}-{m}x{n}"
        if only and (not any(o == label for o in only) or label in seen):
            continue
        seen.add(label)
        case = prepare(name, SOURCES[name], dict(M=m, N=n))
        k = case.kernel
        base = default(case.problem, k.hints)
        cands = candidates(case.problem, k.hints)
        # a kernel object a mode: a warm call keeps the functions it was planned with
        text = open(SOURCES[name]).read() if SOURCES[name].endswith(".tdsl") else SOURCES[name]
        kernels = {mode: tiledsl.compile(text + f"\n# mode {mode}\n") for mode in modes}
        chosen = [base] + [next(s for s in cands if s.tag.endswith(p)) for p in patterns
                           if any(s.tag.endswith(p) for s in cands)]
        chosen = list(dict.fromkeys(chosen))
        runs = mode_errors(case, kernels, chosen, use)
        tri = triton_call(name, case)
        dump_triton(name, case, label)
        tri_t = []
        for _ in range(3):
            for (s, mode), res in runs.items():
                use(mode)
                km = kernels[mode]
                set_overrides(km._launcher, {0: s})
                fn = lambda i: km(*case.sets[i], out=case.out)   # noqa: E731
                res.append(time_cuda(fn, n_sets=len(case.sets), repeats=20, warmup_ms=15).median_us)
            tri_t.append(time_cuda(tri, n_sets=len(case.sets), repeats=20, warmup_ms=15).median_us)
        use("plain")
        t_tri = statistics.median(tri_t)
        print(f"## {label}: triton {t_tri:.1f} us ({case.nbytes / t_tri / 1e3 / copy:.3f}x copy)", flush=True)
        for (s, mode), (err, *ts) in runs.items():
            us = statistics.median(ts)
            print(f"  {s.tag:36s} {mode:5s} {us:7.1f} us {case.nbytes / us / 1e3 / copy:5.3f}x copy "
                  f"{t_tri / us:5.3f}x triton err {err:.1e} [{' '.join('%.1f' % t for t in ts)}]"
                  f"{' DEFAULT' if s == base else ''}", flush=True)
        case.sets = case.want = None


if __name__ == "__main__":
    main()
