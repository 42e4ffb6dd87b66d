"""Probe (device run): f64 row and pointwise kernels under the register budget
they had before 2026-11-23 (64 registers, and the 32- and 40-register row
schedules) against the current one (128 where they compute f64 functions):
three interleaved rounds, median microseconds, each checked against the
float64 reference first.

    python scripts/probe_f64.py
"""
import sys, os
sys.path.insert(0, os.getcwd())
import cupy as cp, numpy as np
import tiledsl
import tiledsl.schedule.rows as rows
import tiledsl.schedule.schedules as schedules
from benchmarks.common import time_cuda
from tiledsl.codegen import sources_for

SM = open("examples/softmax.tdsl").read().replace("f32", "f64")
LN = open("examples/layernorm.tdsl").read().replace("f16", "f64").replace("f32", "f64")
GELU = "kernel g(x: f64[M, N], b: f64[N]) -> f64[M, N] { return gelu(x + b) * sigmoid(x) }"
CASES = [("softmax", SM, dict(M=4096, N=1000)), ("softmax", SM, dict(M=4096, N=4096)), ("softmax", SM, dict(M=100000, N=33)),
         ("layernorm", LN, dict(M=4096, N=1000)), ("layernorm", LN, dict(M=4096, N=4096)), ("layernorm", LN, dict(M=100000, N=33)),
         ("gelu*sigmoid", GELU, dict(M=8192, N=4096))]
real = rows.computes_f64_math


def variant(old):
    rows.computes_f64_math = (lambda v: False) if old else real
    schedules.F64_MATH_THREADS = 1024 if old else 512


res = {}
for rnd in range(3):
    for old in (True, False):
        variant(old)
        for name, src, ext in CASES:
            k = tiledsl.compile(src)
            args = []
            for p in k.graph.params:
                if p.is_scalar: continue
                shape = tuple(ext[d] for d in p.dims)
                args.append(cp.random.standard_normal(shape))
            out = k(*args)
            if rnd == 0:
                ref = k.reference(*[a.get() for a in args], compute="f64")
                err = float(np.linalg.norm(out.get() - ref) / np.linalg.norm(ref))
                tags = [s.schedule.tag for s in sources_for(k, ext)]
                print(name, ext, "old" if old else "new", tags, "err", err, flush=True)
            t = time_cuda(lambda i: k(*args, out=out), repeats=20, warmup_ms=20).median_us
            res.setdefault((name, tuple(ext.values()), old), []).append(t)
for (name, ext, old), v in sorted(res.items()):
    print(f"{name} {ext} {'old' if old else 'new'}: {sorted(v)[1]:.1f} us  {[round(x,1) for x in v]}")
