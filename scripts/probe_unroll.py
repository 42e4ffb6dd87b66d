"""Probe (device run): streamed (looped) reductions with the loop's unroll chosen by
tiledsl (`#pragma unroll N`, at most 16 words of loads in flight a thread) against
ptxas's own choice (the pragma taken out: `before`). Run each in a fresh process with
its own cache directory:

    TILEDSL_CACHE_DIR=/tmp/a python scripts/probe_unroll.py
    TILEDSL_CACHE_DIR=/tmp/b python scripts/probe_unroll.py before
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import ran_schedules, time_cuda  # noqa: E402
from tiledsl.inputs import random_arguments  # noqa: E402

if "before" in sys.argv[1:]:
    import jinja2
    from tiledsl.codegen import cuda
    base = cuda._env()

    def env():
        text = base.loader.get_source(base, "reduce.cu.j2")[0]
        text = re.sub(r"\n\{% if stream_unroll %\}\n#pragma unroll \{\{ stream_unroll \}\}\n\{% endif %\}", "", text)
        return base.overlay(loader=jinja2.ChoiceLoader([jinja2.DictLoader({"reduce.cu.j2": text}), base.loader]))
    cuda._env = env

CASES = [("sum f32", "kernel t(x: f32[K]) -> f32 { return sum(x) }", dict(K=1 << 26)),
         ("dot f32", "kernel t(a: f32[K], b: f32[K]) -> f32 { return a @ b }", dict(K=1 << 26)),
         ("mse f32", "kernel t(x: f32[K], y: f32[K]) -> f32 { return mean((x - y) * (x - y)) }", dict(K=1 << 26)),
         ("row dot f16", "kernel t(x: f16[M, K], y: f16[M, K]) -> f32[M] { return sum(x * y, axis=K) }",
          dict(M=4, K=1 << 24)),
         ("softmax long rows", "examples/softmax.tdsl", dict(M=64, N=200000)),
         ("column sum", "examples/column_sum.tdsl", dict(M=16384, N=1024)),
         ("mv f32", "kernel t(a: f32[M, K], v: f32[K]) -> f32[M] { return a @ v }", dict(M=8192, K=8192)),
         ("vm f32", "kernel t(x: f32[K], w: f32[K, N]) -> f32[N] { return x @ w }", dict(K=8192, N=8192))]
for label, src, extents in CASES:
    k = tiledsl.compile(src)
    sets = [[cp.asarray(a) if hasattr(a, "shape") else a for a in random_arguments(k.graph, extents, seed)]
            for seed in (1, 2)]
    nbytes = sum(a.nbytes for a in sets[0] if hasattr(a, "nbytes"))
    k(*sets[0])
    t = time_cuda(lambda i: k(*sets[i]), n_sets=2, repeats=30, warmup_ms=100)
    tags = ran_schedules(k)
    print(f"{'before' if 'before' in sys.argv[1:] else 'now':6s} {label:18s} {t.median_us:8.1f} us "
          f"{nbytes / t.median_us / 1e3:6.0f} GB/s  {tags}", flush=True)
