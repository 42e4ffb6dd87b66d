"""Probe (device run): a thread's share of a row as a power of two (the default's
rule until 2026-11-25) against the exact share, ceil(row / threads) (the rule
since, rows.row_share), for rows whose length is no power of two: the default
schedule under each, and a few other shares of the row. A power-of-two share of
a 12001-element row at 512 threads is 32 elements, 9 of them past the row's end:
registers held for nothing (ptxas: softmax f32 spills 8 bytes at 32, none at
24), so the old default streamed that row.
Each schedule is checked against the float64 reference first; three interleaved
rounds, median microseconds, ratio to copy; registers and spills from the cubin.

    python scripts/probe_exact_items.py
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
import row_probe  # noqa: E402  (beside this script)
from benchmarks.common import copy_bandwidth  # noqa: E402
from tiledsl.codegen import render  # noqa: E402
from tiledsl.runtime import toolchain  # noqa: E402
from tiledsl.runtime.launcher import device_arch  # noqa: E402
from tiledsl.schedule import choose, rows  # noqa: E402

SOFTMAX = "kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}"
TWO = "kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] {\n return x * y + sum(x, axis=N)\n}"
THREE = ("kernel f(x: f32[M, N], y: f32[M, N], z: f32[M, N]) -> f32[M, N] {\n"
         " return x * y + z + sum(x * z, axis=N)\n}")
LN16 = ("kernel f(x: f16[M, N], w: f32[N], b: f32[N]) -> f16[M, N] {\n m = mean(x, axis=N)\n"
        " d = x - m\n v = mean(d * d, axis=N)\n return d * rsqrt(v + 0.00001) * w + b\n}")
RMS = ("kernel f(x: f16[M, N], w: f16[N]) -> f16[M, N] {\n"
       " return x * rsqrt(mean(x * x, axis=N) + 0.00001) * w\n}")
# (name, source, extents, [(threads, items)]: held shares to time beside the default)
LNH = ("kernel f(x: f16[M, N], w: f16[N], b: f16[N]) -> f16[M, N] {\n m = mean(x, axis=N)\n"
        " d = x - m\n v = mean(d * d, axis=N)\n return d * rsqrt(v + 0.00001) * w + b\n}")
CASES = [
    ("softmax f32", SOFTMAX, {"M": 4096, "N": 12001}, [(512, 32), (1024, 12)]),
    ("softmax f32", SOFTMAX, {"M": 2048, "N": 8193}, [(512, 32), (768, 11)]),
    ("softmax f32", SOFTMAX, {"M": 32768, "N": 781}, [(96, 9)]),
    ("softmax f32", SOFTMAX, {"M": 16384, "N": 3001}, []),
    ("softmax f32", SOFTMAX, {"M": 8192, "N": 5000}, [(512, 3)]),
    ("softmax f32", SOFTMAX, {"M": 4096, "N": 10000}, []),
    ("softmax f32", SOFTMAX, {"M": 16384, "N": 3000}, []),
    ("two f32", TWO, {"M": 2048, "N": 8193}, [(1024, 16)]),
    ("layernorm f16 w32", LN16, {"M": 4096, "N": 10000}, [(384, 4)]),
    ("layernorm f16 w32", LN16, {"M": 32768, "N": 781}, []),
    ("layernorm f16 w16", LNH, {"M": 32768, "N": 781}, []),
    ("layernorm f16 w16", LNH, {"M": 4096, "N": 10000}, [(384, 4)]),
    ("rmsnorm f16", RMS, {"M": 32768, "N": 781}, []),
    ("rmsnorm f16", RMS, {"M": 16384, "N": 3000}, []),
    ("rmsnorm f16", RMS, {"M": 4096, "N": 10000}, [(384, 4)]),
]


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    arch = device_arch(0)
    print(f"copy {copy:.0f} GB/s, {arch}")
    cases = []
    for name, src, ext, shares in CASES:
        case = row_probe.prepare(name, src, ext)
        k, p = case.kernel, case.problem
        exact_share = rows.row_share
        rows.row_share = lambda rows, threads: 1 << (exact_share(rows, threads) - 1).bit_length()
        pow2 = choose.default(p, k.hints)
        rows.row_share = exact_share
        d = choose.default(p, k.hints)
        variants = {"pow2": pow2, "exact": d}
        vec = d.vec if d.kind == "reduce_row" and d.items else choose.max_vector(p, k.hints.vector)
        for threads, items in shares:
            base = d if d.items else replace(d, unroll=0)
            variants[f"{threads}x{items}"] = replace(base, block=threads, row_threads=threads, items=items, vec=vec,
                                                     keep=False, prefetch=False, blocks_per_sm=0, min_blocks=1,
                                                     stages=1, unroll=0)
        for label, s in list(variants.items()):
            launcher = k._launcher
            ks = render(k.graph, launcher.groups[0], launcher.layouts[0], s, 1)
            usage = toolchain.compile_cuda(ks.source, arch=arch).resources.get(ks.name)   # None without cuobjdump
            regs = f"regs {usage.registers} local {usage.local_bytes}" if usage else "regs ?"
            err = row_probe.error(case, s)
            print(f"{name} {ext} {label} {s.tag}: {regs} err {err:.1e}", flush=True)
            if not err <= 1e-2:
                del variants[label]
        case.variants = row_probe.distinct(variants)
        cases.append(case)
    row_probe.time_and_report(cases, copy, label_width=10)


if __name__ == "__main__":
    main()
