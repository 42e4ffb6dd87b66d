"""Probe (device run): programs of several kernels (split GEMMs and reductions, programs of
several fusion groups), and calls in a row (a case's fourth field: each call reads the one
before's result), timed with every kernel launched to overlap the one before it and the usual
way, in turn (TILEDSL_DEPENDENT_LAUNCH read per call class: each
program is compiled twice, once per setting), three rounds.

    python scripts/probe_overlap.py [--rounds N] [--host] [label ...]

--host also times each setting's calls by the host's clock (20000 calls in a row, the best of
the rounds): what a call costs where the GPU waits on the launches.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import round_orders, time_cuda  # noqa: E402
from tiledsl.codegen import sources_for  # noqa: E402
from tiledsl.inputs import random_arguments  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
ATTENTION = open(os.path.join(EXAMPLES, "attention.tdsl")).read().split("kernel causal_attention")[0]
MLP = open(os.path.join(EXAMPLES, "mlp.tdsl")).read()
SCALE = "kernel scale(x: f32[N], s: f32) -> f32[N] { return x * s + 1.0 }"
SOFTMAX = "kernel sm(x: f32[M, N]) -> f32[M, N] { e = exp(x - max(x, axis=N))\nreturn e / sum(e, axis=N) }"
CASES = [
    ("sum(x) f32 2^24", "kernel total(x: f32[N]) -> f32 { return sum(x) }", dict(N=1 << 24)),
    ("sum(x) f32 4096x4096", "kernel total(x: f32[M, N]) -> f32 { return sum(x) }", dict(M=4096, N=4096)),
    ("column means f16 65536x64", "kernel cm(x: f16[R, C]) -> f32[C] { return mean(x, axis=R) }",
     dict(R=65536, C=64)),
    ("softmax f32 64x200000", SOFTMAX, dict(M=64, N=200000)),
    ("f16 a @ b 512x512x16384", "kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }",
     dict(M=512, N=512, K=16384)),
    ("attention 1024x1024x64", ATTENTION, dict(T=1024, S=1024, D=64)),
    ("attention 2048x2048x128", ATTENTION, dict(T=2048, S=2048, D=128)),
    ("mlp 2048,1024,4096,1024", MLP, dict(M=2048, D=1024, H=4096, E=1024)),
    ("rmsnorm then product f16 2048x4096x4096", "kernel f(x: f16[M, N], w: f16[N, E]) -> f16[M, E] {\n"
     "    h = f16(x * rsqrt(mean(x * x, axis=N) + 1e-6))\n    return h @ w\n}", dict(M=2048, N=4096, E=4096)),
    ("column means, then subtract f32 65536x256", "kernel f(x: f32[M, N]) -> f32[M, N] "
     "{ return x - mean(x, axis=M) }", dict(M=65536, N=256)),
    ("attention 4096x4096x64", ATTENTION, dict(T=4096, S=4096, D=64)),
    ("attention 256x256x64", ATTENTION, dict(T=256, S=256, D=64)),
    ("4 calls in a row: x * s + 1, f32 2^24", SCALE, dict(N=1 << 24), 4),
    ("4 calls in a row: x * s + 1, f32 2^20", SCALE, dict(N=1 << 20), 4),
    ("4 calls in a row: softmax f32 8192x4096", SOFTMAX, dict(M=8192, N=4096), 4),
    ("rmsnorm then product f16 64x1024x1024", "kernel f(x: f16[M, N], w: f16[N, E]) -> f16[M, E] {\n"
     "    h = f16(x * rsqrt(mean(x * x, axis=N) + 1e-6))\n    return h @ w\n}", dict(M=64, N=1024, E=1024)),
]
args = sys.argv[1:]
rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 3
host = "--host" in args
only = [a for a in args if a not in ("--rounds", "--host", str(rounds))]


def in_a_row(k, args, calls: int):
    """k(*args), then k again on each call's result, `calls` calls in all."""
    out = k(*args)
    for _ in range(calls - 1):
        out = k(out, *args[1:])
    return out


def host_us(k, sets, in_row, calls=20000) -> float:
    cp.cuda.runtime.deviceSynchronize()
    t0 = time.perf_counter()
    for i in range(calls):
        in_a_row(k, sets[i & 3], in_row)
    cp.cuda.runtime.deviceSynchronize()
    return (time.perf_counter() - t0) / calls * 1e6


for label, src, extents, *row in CASES:
    in_row = row[0] if row else 1
    if only and label not in only:
        continue
    probe = tiledsl.compile(src)
    sets = [[cp.asarray(a) if hasattr(a, "nbytes") else a for a in random_arguments(probe.graph, extents)]
            for _ in range(4)]
    kernels = {}
    for setting in ("1", "0"):
        os.environ["TILEDSL_DEPENDENT_LAUNCH"] = setting
        k = tiledsl.compile(src)
        k(*sets[0])
        k(*sets[1])     # planned (and warm) under this setting
        kernels["overlapping" if setting == "1" else "usual"] = k
    names = list(kernels)
    times = {n: [] for n in names}
    walls = {n: [] for n in names}
    for order in round_orders(len(names), rounds):
        for n in (names[i] for i in order):
            times[n].append(time_cuda(lambda i: in_a_row(kernels[n], sets[i], in_row), n_sets=4, repeats=30,
                                      warmup_ms=200).median_us)
            if host:
                walls[n].append(host_us(kernels[n], sets, in_row))
    kernels_run = [s.name.split("_g", 1)[1] for s in sources_for(probe, extents)]
    print(f"{label} ({len(kernels_run)} kernels: {', '.join(kernels_run)})", flush=True)
    for n in names:
        print(f"  {n:12s} " + " ".join(f"{t:7.1f}" for t in times[n]) + f" us  (median {sorted(times[n])[len(times[n]) // 2]:.1f})"
              + (f"; host clock, best round: {min(walls[n]):.2f} us a call" if host else ""), flush=True)
