"""Probe (device run): pointwise kernels with a transposed operand.

Times each program under its default schedule, the flat schedule it had
before transposing tiles (vectors along the innermost loop, the transposed
operand read or written element by element across it) and every transposing
tile of the tuner's space, beside CuPy's and torch's transposed copies where
the program is one, and a copy of the same bytes (`cupy.copyto` of half of
them: at 64 MiB a copy itself reaches only about 0.6x the 1 GiB copy). Each
schedule is checked against the float64 reference first. GB/s counts each
operand's bytes once; x copy = over the measured 1 GiB device-to-device copy.
Medians of CUDA event times, three rounds.

    python scripts/probe_transpose.py [--skinny]
"""
import statistics
import sys

import cupy
import torch

import tiledsl
from tiledsl.inputs import TOLERANCE, random_arguments, relative_error
from tiledsl.runtime import launcher_for
from tiledsl.runtime.launcher import set_overrides
from tiledsl.runtime.measure import copy_bandwidth, time_rounds
from tiledsl.schedule.choose import candidates, default
from tiledsl.schedule.problem import max_vector, problem
from tiledsl.schedule.layout import plan_layout
from tiledsl.schedule.partition import partition
from tiledsl.schedule.schedules import Schedule

CASES = [
    ("kernel t(x: f16[M, N]) -> f16[N, M] { return x.T }", dict(M=4096, N=4096), "copy"),
    ("kernel t(x: f16[M, N]) -> f16[N, M] { return x.T }", dict(M=8192, N=8192), "copy"),
    ("kernel t(x: f32[M, N]) -> f32[N, M] { return x.T }", dict(M=8192, N=4096), "copy"),
    ("kernel t(x: f32[M, N], y: f32[N, M]) -> f32[M, N] { return x + y.T }", dict(M=4096, N=4096), None),
    ("kernel t(x: bf16[B, T, C], s: f32) -> bf16[B, C, T] { return x.T * s }", dict(B=16, T=2048, C=512), None),
]
# One loop 2 to 15 long (`--skinny`): the default is a skinny tile (pointwise.skinny_tile),
# before 2026-11-25 the flat schedule, element by element across the short loop.
SKINNY_CASES = [
    ("kernel t(x: f32[M, N]) -> f32[N, M] { return x.T }", dict(M=8, N=4194304), "copy"),
    ("kernel t(x: f32[M, N]) -> f32[N, M] { return x.T }", dict(M=4194304, N=8), "copy"),
    ("kernel t(x: f16[M, N]) -> f16[N, M] { return x.T }", dict(M=4, N=8388608), "copy"),
    ("kernel t(x: f16[M, N]) -> f16[N, M] { return x.T }", dict(M=3, N=8388608), "copy"),
    ("kernel t(x: f32[M, N], y: f32[N, M]) -> f32[M, N] { return x + y.T }", dict(M=2097152, N=12), None),
]
ROUNDS, REPEAT = 3, 20


def main() -> None:
    copy = copy_bandwidth()
    print(f"{cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}; copy {copy / 1e9:.0f} GB/s")
    for src, extents, peer in (SKINNY_CASES if "--skinny" in sys.argv else CASES):
        k = tiledsl.compile(src)
        host = random_arguments(k.graph, extents, seed=5)
        dev = [cupy.asarray(a) if hasattr(a, "shape") else a for a in host]
        expected = k.reference(*host, compute="f64")
        (g,) = partition(k.graph)
        p = problem(g, plan_layout(g, k.graph), extents, frozenset(), 132, "sm_90a")
        base = default(p, k.hints)
        flat = Schedule("pointwise", block=128, vec=max_vector(p), items=2, index64=p.index64)   # the old default
        schedules = {f"default {base.tag}": base, f"flat {flat.tag}": flat}
        if "--skinny" not in sys.argv:      # (the tuner's square tiles fit a skinny loop badly: 0.02-0.2x copy)
            schedules.update({s.tag: s for s in candidates(p, k.hints) if s.tile and s != base})
        nbytes = sum(a.nbytes for a in dev if hasattr(a, "nbytes"))
        nbytes += sum(r.dtype.itemsize for r in k.graph.results) * expected.size if hasattr(expected, "size") else 0
        impls = {}
        for label, s in schedules.items():
            kk = tiledsl.compile(src)
            kk._launcher = launcher_for(kk)
            set_overrides(kk._launcher, {0: s})
            out = kk(*dev)
            err = relative_error(cupy.asnumpy(out), expected)
            assert err <= TOLERANCE[str(k.graph.results[0].dtype)], (label, err)
            impls[label] = (lambda kk=kk, out=out: kk(*dev, out=out))
        if peer == "copy":
            x, tx = dev[0], torch.as_tensor(dev[0], device="cuda")
            impls["cupy.ascontiguousarray(x.T)"] = lambda: cupy.ascontiguousarray(x.T)
            impls["torch x.t().contiguous()"] = lambda: tx.t().contiguous()
        same = cupy.empty(nbytes // 2, dtype=cupy.uint8)
        same_out = cupy.empty_like(same)
        impls["copy of the same bytes"] = lambda: cupy.copyto(same_out, same)
        times = time_rounds(impls, ROUNDS, REPEAT)
        print(f"{src.split('{')[1].strip(' }')}  {extents}  ({nbytes / 2**20:.0f} MiB moved)")
        for label, t in times.items():
            m = statistics.median(t)
            print(f"  {label:44s} {m:9.1f} us  {nbytes / m / 1e3:7.0f} GB/s  x{nbytes / m / 1e-6 / copy:.2f} copy")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
