"""Probe (device run): a result over whole rows stored across them (laid out
along a kept dim while the threads walk the reduced one) written from the reduce
group, fused (the partition until 2026-11-25), against a reduce group writing
the row statistics and a pointwise group that transposes through tiles (the
partition since, `_Partitioner.stored_across_rows`). Each checked against the
float64 reference; three interleaved rounds, median microseconds, and the ratio
of the program's bytes (inputs read once, the result written once) to copy.

    python scripts/probe_across_rows.py
"""
import os
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda  # noqa: E402
from tiledsl.inputs import random_arguments, relative_error  # noqa: E402
from tiledsl.schedule import partition  # noqa: E402

CASES = [
    ("bf16 -> f32 x.T * sum", "kernel f(x: bf16[M, N]) -> f32[N, M] {\n return x.T * sum(x, axis=N)\n}",
     {"M": 2048, "N": 8193}),
    ("f32 (x - max).T", "kernel f(x: f32[M, N]) -> f32[N, M] {\n return (x - max(x, axis=N)).T\n}",
     {"M": 4096, "N": 4096}),
    ("f16 softmax.T", "kernel f(x: f16[M, N]) -> f16[N, M] {\n e = exp(x - max(x, axis=N))\n"
                      " return f16(e / sum(e, axis=N)).T\n}", {"M": 4096, "N": 4096}),
    ("f32 column-normalized.T", "kernel f(x: f32[M, N]) -> f32[N, M] {\n return (x / sum(x, axis=M)).T\n}",
     {"M": 4096, "N": 4096}),
    ("f32 (x - max).T few rows", "kernel f(x: f32[M, N]) -> f32[N, M] {\n return (x - max(x, axis=N)).T\n}",
     {"M": 8, "N": 1000000}),
]


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    across = partition._Partitioner.stored_across_rows
    setups, times = [], {}
    for name, src, ext in CASES:
        host = None
        variants = {}
        for label, rule in (("fused", lambda *a: False), ("split", across)):
            partition._Partitioner.stored_across_rows = rule
            k = tiledsl.compile(src.replace("kernel f(", f"kernel {label}("))   # own cache keys: the IR names it
            host = host if host is not None else random_arguments(k.graph, ext, seed=1)
            want = k.reference(*host, compute="f64")
            nbytes = sum(h.nbytes for h in host if isinstance(h, np.ndarray)) + \
                want.size * k.graph.results[0].dtype.itemsize
            sets = [[cp.asarray(h) for h in host] for _ in range(input_sets_needed(nbytes))]
            out = k(*sets[0])
            out.fill(float("nan"))
            got = k(*sets[0], out=out)
            err = relative_error(cp.asnumpy(got).astype(np.float64), want)
            kinds = [g.kind for g in k._launcher.groups]
            print(f"{name} {ext} {label}: groups {kinds} err {err:.1e}", flush=True)
            variants[label] = (k, sets, out)
        partition._Partitioner.stored_across_rows = across
        setups.append((name, ext, variants, nbytes))
    for _ in range(3):
        for name, ext, variants, nbytes in setups:
            for label, (k, sets, out) in variants.items():
                t = time_cuda(lambda i: k(*sets[i], out=out), n_sets=len(sets), repeats=20, warmup_ms=20)
                times.setdefault((name, label), []).append(t.median_us)
    for name, ext, variants, nbytes in setups:
        row = [f"  {label:6s} {sorted(times[(name, label)])[1]:8.1f} us "
               f"{nbytes / sorted(times[(name, label)])[1] / 1e3 / copy:5.2f}x copy" for label in variants]
        print(f"{name} {ext['M']}x{ext['N']}:\n" + "\n".join(row), flush=True)


if __name__ == "__main__":
    main()
