"""Probe (device run): GEMM schedules under sustained load, in alternation: the
default, each schedule an --alt label names (scripts/probe_pick.py: a regular
expression on the candidates' tags, a split, or a tile built directly) and
cuBLAS, each timed after 200 ms of warm-up, in turn, for several rounds in
rotating order (an H100 at its 700 W holds about two thirds of its clock; short
sweeps time it at full clock).

    python scripts/probe_sustained.py [--rounds 5] [--case 4096x4096x4096[:abT] ...] [--alt LABEL ...]

Without --case and --alt: the shapes and plain tiles that bounded the producer loop
at K = 2048 (2026-11-26).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402

from benchmarks.common import round_orders, time_cuda  # noqa: E402
from scripts.probe_pick import pinned  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--case", action="append", default=[], help="MxNxK, with ':abT' for a @ b.T (repeatable)")
ap.add_argument("--alt", action="append", default=[], help="a schedule to time beside the default (scripts/probe_pick.py)")
args = ap.parse_args()
PLAIN = r"m128n256k64_s4_tma_g8_x32$"
CASES = ([(c.split(":")[0], c.split(":")[1] if ":" in c else "ab", args.alt) for c in args.case] if args.case else
         [("8192x8192x1024", "ab", [PLAIN]), ("4096x4096x4096", "ab", [PLAIN]), ("8192x8192x2048", "ab", [PLAIN]),
          ("1024x1024x8192", "ab", [r"m64n128k64_s8_tma_g8_x32$"])])

for shape, kind, alts in CASES:
    m, n, k = map(int, shape.split("x"))
    kerns = {}
    for label in ["default"] + alts:
        kern, shown, base = pinned(kind, m, n, k, label)
        if kern is None:
            print(f"  no candidate matches {label}")
            continue
        kerns[shown] = kern
    b_shape = (k, n) if kind == "ab" else (n, k)
    sets = [(cp.random.standard_normal((m, k)).astype(cp.float16),
             cp.random.standard_normal(b_shape).astype(cp.float16)) for _ in range(4)]
    out = cp.empty((m, n), cp.float16)
    runs = {name: (lambda kern: lambda a, b: kern(a, b, out=out))(kern) for name, kern in kerns.items()}
    runs["cuBLAS"] = (lambda a, b: cp.matmul(a, b, out=out)) if kind == "ab" else (lambda a, b: cp.matmul(a, b.T, out=out))
    times = {name: [] for name in runs}
    names = list(runs)
    for order in round_orders(len(names), args.rounds):
        for name in (names[i] for i in order):
            times[name].append(time_cuda(lambda i: runs[name](*sets[i]), n_sets=4, repeats=30, warmup_ms=200).median_us)
    flop = 2 * m * n * k
    print(f"{kind} {m}x{n}x{k} (default {base.tag}{f'@{base.splits}' if base.splits else ''})", flush=True)
    for name, ts in times.items():
        med = sorted(ts)[len(ts) // 2]
        print(f"  {name:44s} " + " ".join(f"{t:7.1f}" for t in ts) + f" us; median {flop / med / 1e6:6.1f} TFLOP/s",
              flush=True)
