"""Time every candidate schedule of the memory-bound benchmark shapes (device run).

Prints, per workload, the candidates ranked by median time with the default
rule's choice marked, so the default can be kept close to the measured best.

    python benchmarks/sweep.py [--only softmax] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.bench_memory import LAYERNORM16_TDSL  # noqa: E402
from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda  # noqa: E402
from tiledsl.inputs import TOLERANCE, random_arguments, relative_error  # noqa: E402
from tiledsl.runtime.launcher import hbm_bandwidth, set_overrides  # noqa: E402
from tiledsl.schedule.choose import candidates, default  # noqa: E402
from tiledsl.schedule.problem import problem  # noqa: E402

POINTWISE = "kernel f(x: f32[N], y: f32[N], s: f32, bias: f32[N]) -> f32[N] { return relu((x + y) * s + bias) }"
CHAIN = "kernel chain(x: f32[M, N]) -> f32[M, N] { return sigmoid(relu((x + 1) * 2) - 0.5) }"

WORKLOADS = [
    ("pointwise", POINTWISE, dict(N=1 << 26)),
    ("chain", CHAIN, dict(M=16384, N=4096)),
] + [("softmax", "examples/softmax.tdsl", dict(M=m, N=n))
     for m, n in ((16384, 1024), (8192, 4096), (4096, 16384), (32768, 781))] + [
    (name, f"examples/{name}.tdsl", dict(M=m, N=n)) for name in ("layernorm", "rmsnorm")
    for m, n in ((16384, 4096), (65536, 1024), (4096, 8192))] + [
    ("layernorm16", LAYERNORM16_TDSL, dict(M=m, N=n)) for m, n in ((16384, 4096), (65536, 1024), (4096, 8192))]


def main() -> None:
    import cupy
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    ap.add_argument("--json")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--shapes", help="only these shapes, e.g. 4096x8192,32768x781")
    ap.add_argument("--widest", action="store_true", help="only candidates with the widest vectors")
    ap.add_argument("--match", help="only candidates whose tag this regular expression finds (and the default)")
    ap.add_argument("--source", action="append", default=[], metavar="FILE:MxN",
                    help="also sweep this .tdsl file at M=m,N=n (e.g. my.tdsl:16384x4096); repeatable")
    ap.add_argument("--ps-scan", type=int, default=0, metavar="N",
                    help="then time the N best persistent candidates at every blocks_per_sm "
                         "(with the blocks the compiled kernel can keep resident per SM)")
    args = ap.parse_args()
    copy = copy_bandwidth()["gbps"]
    results = []
    sm = cupy.cuda.runtime.deviceGetAttribute(16, 0)
    extra = [(f.rsplit(":", 1)[0], f.rsplit(":", 1)[0],
              dict(zip("MN", map(int, f.rsplit(":", 1)[1].split("x"))))) for f in args.source]
    for name, src, extents in WORKLOADS + extra:
        if args.only and args.only not in name:
            continue
        if args.shapes and "x".join(str(v) for v in extents.values()) not in args.shapes.split(","):
            continue
        k = tiledsl.compile(src)
        host = random_arguments(k.graph, extents)
        want = k.reference(*host, compute="f64")
        nbytes = sum(a.nbytes for a in host if isinstance(a, np.ndarray))
        nbytes += sum(int(np.prod([extents[d] for d in r.dims])) * r.dtype.itemsize for r in k.graph.results)
        n_sets = input_sets_needed(nbytes)
        sets = [[cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in host] for _ in range(n_sets)]
        out = k(*sets[0])
        launcher = k._launcher
        group, layout = launcher.groups[0], launcher.layouts[0]
        p = problem(group, layout, extents, frozenset(), sm, "sm_90a", hbm_bandwidth(0))
        base = default(p, k.hints)
        cands = candidates(p, k.hints)
        if args.widest:
            cands = [s for s in cands if s.vec == max(c.vec for c in cands)]
        if args.match:
            cands = [s for s in cands if re.search(args.match, s.tag)]
        if base not in cands:
            cands.append(base)
        rows = []
        for s in cands:
            set_overrides(launcher, {0: s})
            try:
                got = k(*sets[0], out=out)
                err = relative_error(cupy.asnumpy(got), want)
                t = time_cuda(lambda i: k(*sets[i], out=out), n_sets=n_sets, repeats=args.repeats, warmup_ms=50)
            except tiledsl.TdslError as e:
                print(f"  {s.tag}: {str(e).splitlines()[0]}")
                continue
            ok = err <= TOLERANCE[k.graph.results[0].dtype.name]
            rows.append((t.median_us, s, err, ok))
        set_overrides(launcher, {})
        rows.sort(key=lambda r: r[0])
        best = rows[0][0]
        print(f"\n## {name} {extents}  ({len(rows)} candidates, {nbytes / 1e6:.0f} MB moved)")
        firsts = {}     # the best of each family: plain, register prefetch, shared-memory ring
        for us, s, err, ok in rows:
            firsts.setdefault("ring" if s.stages > 1 else "prefetch" if s.prefetch else "plain", s)
        for rank, (us, s, err, ok) in enumerate(rows):
            mark = " <= default" if s == base else ""
            if rank < 6 or s == base or s in firsts.values():
                gbps = nbytes / us / 1e3
                print(f"  {rank:2d} {us:8.1f} us {gbps:6.0f} GB/s {us / best:5.2f}x  {s.tag} "
                      f"ps{s.blocks_per_sm}{'' if ok else ' WRONG err=%.1e' % err}{mark}")
        if args.ps_scan:
            scan_persistent(args, k, launcher, sets, n_sets, out, nbytes,
                            [s for _, s, _, ok in rows if ok and s.blocks_per_sm][:args.ps_scan])
        results.append(dict(name=name, extents=extents, nbytes=nbytes,
                            rows=[dict(us=us, schedule=repr(s), err=err, ok=ok) for us, s, err, ok in rows],
                            default=repr(base)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(copy_gbps=copy, results=results), f, indent=1)


def scan_persistent(args, k, launcher, sets, n_sets, out, nbytes, schedules) -> None:
    """Each persistent schedule at every grid of 1 to 2048/block blocks per SM, with the
    resident count the occupancy calculator gives for its compiled kernel."""
    import cupy
    from dataclasses import replace
    for s in schedules:
        times = []
        for ps in range(1, 2048 // s.block + 1):
            set_overrides(launcher, {0: replace(s, blocks_per_sm=ps)})
            k(*sets[0], out=out)
            times.append((ps, time_cuda(lambda i: k(*sets[i], out=out), n_sets=n_sets,
                                        repeats=args.repeats).median_us))
        [program] = [p for p in launcher._plans.values()][-1:]
        fn, grid, block, _, shared = program.steps[0]
        resident = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, int(block[0]), shared)
        print(f"  {s.tag} (resident {resident}/SM): "
              + "  ".join(f"ps{ps} {us:.1f}" for ps, us in times), flush=True)
    set_overrides(launcher, {})


if __name__ == "__main__":
    main()
