"""Probe (device run): rows whose default schedule row_share_fits changed
(2026-11-25), timed under the old rule (a thread holds up to 32 elements of its
row whatever their width: ptxas spilled 8 to 584 bytes) and the new one (at most
row_register_budget words, 8 elements read one by one into 8-byte results).
Each schedule checked against the float64 reference first; three interleaved
rounds, median microseconds, GB/s over the bytes moved, ratio to copy. Each
schedule's streamed twin (items 0: the row looped over, no share held) too.

    python scripts/probe_row_share.py
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda  # noqa: E402
from tiledsl.inputs import random_arguments, relative_error  # noqa: E402
from tiledsl.runtime.launcher import _sm_count, device_arch, hbm_bandwidth, set_overrides  # noqa: E402
from tiledsl.schedule import choose  # noqa: E402
from tiledsl.schedule.schedules import MAX_ROW_ELEMENTS  # noqa: E402

CASES = [
    ("softmax f32", "kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n"
                    " return e / sum(e, axis=N)\n}", {"M": 2048, "N": 8193}),
    ("two f32", "kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] {\n return x * y + sum(x, axis=N)\n}",
     {"M": 2048, "N": 16384}),
    ("three f32", "kernel f(x: f32[M, N], y: f32[M, N], z: f32[M, N]) -> f32[M, N] {\n"
                  " return x * y + z + sum(x * z, axis=N)\n}", {"M": 4096, "N": 4097}),
    ("f64", "kernel f(x: f64[M, N]) -> f64[M, N] {\n return x + sum(x, axis=N)\n}", {"M": 2048, "N": 16384}),
    ("layernorm f16 w", "kernel f(x: f16[M, N], w: f16[N], b: f16[N]) -> f16[M, N] {\n m = mean(x, axis=N)\n"
                        " d = x - m\n v = mean(d * d, axis=N)\n return d * rsqrt(v + 0.00001) * w + b\n}",
     {"M": 2048, "N": 20000}),
    ("layernorm f16 w", "kernel f(x: f16[M, N], w: f16[N], b: f16[N]) -> f16[M, N] {\n m = mean(x, axis=N)\n"
                        " d = x - m\n v = mean(d * d, axis=N)\n return d * rsqrt(v + 0.00001) * w + b\n}",
     {"M": 4096, "N": 10000}),
    ("softmax f32", "kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n"
                    " return e / sum(e, axis=N)\n}", {"M": 4096, "N": 12001}),
    ("two f32", "kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] {\n return x * y + sum(x, axis=N)\n}",
     {"M": 2048, "N": 8193}),
    ("bf16 transposed", "kernel f(x: bf16[M, N]) -> f32[N, M] {\n return x.T * sum(x, axis=N)\n}",
     {"M": 2048, "N": 8193}),
]


def old_rule(p, items, vec, hoisted=True):
    return items * vec <= MAX_ROW_ELEMENTS


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    new_rule = choose.row_share_fits
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
        choose.row_share_fits = old_rule
        old = choose.default(p, k.hints)
        choose.row_share_fits = new_rule
        new = choose.default(p, k.hints)
        variants = {"old": old, "new": new}     # and each streamed (items 0) at its block
        for s in (old, new):
            variants.setdefault(f"streamed {s.block}", replace(s, items=0, keep=False))
        first_label: dict = {}
        for label, s in variants.items():
            first_label.setdefault(s, label)
        variants = {label: s for s, label in first_label.items()}
        for label, s in variants.items():
            set_overrides(launcher, {0: s})
            out.fill(float("nan"))
            got = k(*sets[0], out=out)
            err = relative_error(cp.asnumpy(got).astype(np.float64), want)
            print(f"{name} {ext} {label} {s.tag}: err {err:.1e}", flush=True)
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
            row.append(f"  {label:14s} {s.tag:30s} {us:8.1f} us {nbytes / us / 1e3 / copy:5.2f}x copy")
        print(f"{name} {ext['M']}x{ext['N']}:\n" + "\n".join(row))


if __name__ == "__main__":
    main()
