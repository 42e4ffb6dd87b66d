"""Probe (device run): row kernels whose blocks fill a few waves, the last part-full: the
default against the same row held by half or a quarter of the threads (twice or four
times the elements each, more rows resident at once) and against the row streamed by
256 threads (re-read from L2). Each variant is checked against float64 first, then
timed in three interleaved rounds (CUDA events, median of 30 runs, inputs rotated over
three sets, out= given), µs.

    python scripts/probe_row_waves.py
"""
import os
import statistics
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import time_cuda  # noqa: E402
from tiledsl.inputs import random_arguments, relative_error  # noqa: E402
from tiledsl.runtime.launcher import set_overrides  # noqa: E402

EX = os.path.join(os.getcwd(), "examples")
PROGRAMS = {"rmsnorm f16": open(os.path.join(EX, "rmsnorm.tdsl")).read(),
            "layernorm f16": open(os.path.join(EX, "layernorm.tdsl")).read(),
            "softmax f16": "kernel s(x: f16[M, N]) -> f16[M, N] {\n e = exp(x - max(x, axis=N))\n"
                           " return e / sum(e, axis=N)\n}"}
SHAPES = [(m, n) for n in (2048, 4096, 8192) for m in (500, 1000, 1500, 2000, 3000)] + [(300, 32000), (600, 32000)]
if os.environ.get("FEW"):      # FEW=1: few long rows, around the default's first wave
    SHAPES = [(m, n) for n in (8192, 16384) for m in (132, 200, 264, 330, 400, 500, 600, 700, 800)]
    PROGRAMS.pop("softmax f16")


def variants(k, extents):
    """(name, overrides) of the default and its alternatives (a one-group kernel)."""
    k(*[cp.asarray(a) if isinstance(a, np.ndarray) else a for a in random_arguments(k.graph, extents, seed=9)])
    plan = list(k._launcher._plans.values())[-1]
    [(gi, (d, _))] = plan.choices.items()
    out = [("default", {}, d)]
    if d.kind == "reduce_row" and d.items:
        for f in (4,) if os.environ.get("FEW") else (2, 4):
            if d.row_threads % f == 0 and d.row_threads // f >= 32:
                t = d.row_threads // f
                try:
                    out.append((f"/{f}", {gi: replace(d, block=t, row_threads=t, items=d.items * f, blocks_per_sm=0,
                                                       prefetch=False, min_blocks=1)}, None))
                except tiledsl.TdslError as e:
                    print(f"  /{f}: {str(e)[:90]}")
        out.append(("streamed", {gi: replace(d, block=256, row_threads=256, items=0, blocks_per_sm=0, prefetch=False,
                                             keep=False, min_blocks=1, unroll=4)}, None))
    return out


def main() -> None:
    for name, src in PROGRAMS.items():
        for m, n in SHAPES:
            extents = dict(M=m, N=n)
            k = tiledsl.compile(src)
            host = [random_arguments(k.graph, extents, seed=s) for s in (1, 2, 3)]
            sets = [[cp.asarray(a) if isinstance(a, np.ndarray) else a for a in h] for h in host]
            want = np.asarray(k.reference(*host[0], compute="f64"), np.float64)
            jobs = []
            for vname, over, d in variants(k, extents):
                set_overrides(k._launcher, over)
                try:
                    out = k(*sets[0])
                    err = relative_error(cp.asarray(out).get().astype(np.float64), want)
                except Exception as e:  # noqa: BLE001 - a variant that does not fit: say so, go on
                    print(f"  {name} {m}x{n} {vname}: {type(e).__name__}: {str(e)[:100]}", flush=True)
                    continue
                tag = (d or list(over.values())[0]).tag
                jobs.append([vname, over, out, err, tag, []])
            for _ in range(3):
                for job in jobs:
                    set_overrides(k._launcher, job[1])
                    job[5].append(time_cuda(lambda i, s=sets, o=job[2]: k(*s[i], out=o), n_sets=3, repeats=30,
                                            warmup_ms=20).median_us)
            base = statistics.median(jobs[0][5])
            print(f"{name} {m}x{n}: " + "; ".join(
                f"{j[0]} {statistics.median(j[5]):.1f} ({base / statistics.median(j[5]):.3f}x, {j[4]}, err {j[3]:.0e})"
                for j in jobs), flush=True)


if __name__ == "__main__":
    main()
