"""Probe (device run): rows of 3 to 128 elements, many of them. The default gives a
row at least 64 threads (`choose.default`: 64 to 512 a row), so a row of 8 f32
leaves 62 of them idle; here against a warp a row (row_threads 32, several rows
a block) and, where the build allows it, fewer threads a row. Each schedule is
checked against the float64 reference first; three interleaved rounds, median
microseconds, and the ratio of the bytes moved to copy.

    python scripts/probe_short_rows.py
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda  # noqa: E402
from tiledsl.errors import TdslError  # noqa: E402
from tiledsl.inputs import random_arguments, relative_error  # noqa: E402
from tiledsl.runtime.launcher import _sm_count, device_arch, hbm_bandwidth, set_overrides  # noqa: E402
from tiledsl.schedule import choose  # noqa: E402

SOFTMAX = "kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}"
RMS = ("kernel f(x: f16[M, N], w: f16[N]) -> f16[M, N] {\n"
       " return x * rsqrt(mean(x * x, axis=N) + 0.00001) * w\n}")
CASES = [("softmax f32", SOFTMAX, {"M": 1 << 21, "N": 8}), ("softmax f32", SOFTMAX, {"M": 1 << 20, "N": 16}),
         ("softmax f32", SOFTMAX, {"M": 1 << 19, "N": 32}), ("softmax f32", SOFTMAX, {"M": 1 << 18, "N": 64}),
         ("softmax f32", SOFTMAX, {"M": 1 << 17, "N": 100}), ("softmax f32", SOFTMAX, {"M": 1 << 17, "N": 128}),
         ("softmax f32", SOFTMAX, {"M": 1 << 21, "N": 3}), ("rmsnorm f16", RMS, {"M": 1 << 19, "N": 64})]


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    setups, times = [], {}
    for name, src, ext in CASES:
        k = tiledsl.compile(src)
        host = random_arguments(k.graph, ext, seed=1)
        want = k.reference(*host, compute="f64")
        nbytes = sum(h.nbytes for h in host if isinstance(h, np.ndarray)) + want.size * \
            k.graph.results[0].dtype.itemsize
        sets = [[cp.asarray(h) for h in host] for _ in range(input_sets_needed(nbytes))]
        out = k(*sets[0])
        launcher = k._launcher
        p = choose.problem(launcher.groups[0], launcher.layouts[0], ext, sm_count=_sm_count(0),
                           arch=device_arch(0), hbm_gbps=hbm_bandwidth(0))
        d = choose.default(p, k.hints)
        variants = {"default": d}
        for vec in sorted({d.vec, 1}):
            rvec = ext["N"] // vec
            for tpr in (32, 16, 8, 4, 2, 1):
                for block in (128, 256):
                    try:
                        variants[f"v{vec} t{tpr} b{block}"] = replace(
                            d, block=block, row_threads=tpr, vec=vec, items=choose.row_share(rvec, tpr), keep=False,
                            prefetch=False, blocks_per_sm=0, min_blocks=1, stages=1, unroll=0)
                    except TdslError:
                        pass
        for label, s in list(variants.items()):
            set_overrides(launcher, {0: s})
            try:
                out.fill(float("nan"))
                got = k(*sets[0], out=out)
                err = relative_error(cp.asnumpy(got).astype(np.float64), want)
            except TdslError as e:
                err = float("inf")
                print(f"{name} {ext} {label}: {e}")
            if not err <= 2e-3:
                print(f"{name} {ext} {label} {s.tag}: err {err:.1e}, dropped", flush=True)
                del variants[label]
        setups.append((name, ext, k, launcher, variants, sets, out, nbytes))
    for _ in range(3):
        for name, ext, k, launcher, variants, sets, out, nbytes in setups:
            for s in variants.values():
                set_overrides(launcher, {0: s})
                t = time_cuda(lambda i: k(*sets[i], out=out), n_sets=len(sets), repeats=20, warmup_ms=20)
                times.setdefault((name, str(ext), s), []).append(t.median_us)
    for name, ext, k, launcher, variants, sets, out, nbytes in setups:
        row = []
        for label, s in variants.items():
            us = sorted(times[(name, str(ext), s)])[1]
            row.append(f"  {label:14s} {s.tag:34s} {us:8.1f} us {nbytes / us / 1e3 / copy:5.2f}x copy")
        print(f"{name} {ext['M']}x{ext['N']}:\n" + "\n".join(row), flush=True)


if __name__ == "__main__":
    main()
