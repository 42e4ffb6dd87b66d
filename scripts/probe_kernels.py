"""Probe (device run): where a GEMM's time goes, kernel by kernel. Each schedule (the
default, and each --alt LABEL of scripts/probe_pick.py) and cuBLAS run under
torch's profiler (CUPTI sees every kernel of the process, CuPy's included); prints each
kernel's name and mean device time, and the gaps between a call's kernels.

    python scripts/probe_kernels.py --case 256x256x65536[:abT] [--alt LABEL ...] [--calls 50]
"""
import argparse
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from scripts.probe_pick import pinned  # noqa: E402


ap = argparse.ArgumentParser()
ap.add_argument("--case", action="append", required=True, help="MxNxK, with ':abT' for a @ b.T")
ap.add_argument("--alt", action="append", default=[], help="a schedule (scripts/probe_pick.py)")
ap.add_argument("--calls", type=int, default=50)
args = ap.parse_args()
for case in args.case:
    shape, _, kind = case.partition(":")
    kind = kind or "ab"
    m, n, k = map(int, shape.split("x"))
    a = cp.random.standard_normal((m, k)).astype(cp.float16)
    b = cp.random.standard_normal((k, n) if kind == "ab" else (n, k)).astype(cp.float16)
    out = cp.empty((m, n), cp.float16)
    runs = {}
    for label in ["default"] + args.alt:
        kern, tag, base = pinned(kind, m, n, k, label)
        if kern is None:
            print(f"  no candidate matches {label}")
            continue
        runs[f"default {base.tag}" if tag == "default" else tag] = (lambda kern: lambda: kern(a, b, out=out))(kern)
    runs["cuBLAS"] = (lambda: cp.matmul(a, b, out=out)) if kind == "ab" else (lambda: cp.matmul(a, b.T, out=out))
    print(f"{kind} {m}x{n}x{k}", flush=True)
    for name, run in runs.items():
        for _ in range(20):
            run()
        cp.cuda.Device().synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.calls):
                run()
            cp.cuda.Device().synchronize()
        events = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                         and "memcpy" not in e.name.lower() and "memset" not in e.name.lower()),
                        key=lambda e: e.time_range.start)
        per = defaultdict(list)
        for e in events:
            per[e.name].append(e.time_range.end - e.time_range.start)
        per_call = len(events) // args.calls if args.calls else 0
        gaps = [events[i + 1].time_range.start - events[i].time_range.end
                for i in range(len(events) - 1) if per_call > 1 and (i + 1) % per_call]
        span = sum(e.time_range.end - e.time_range.start for e in events) / args.calls
        print(f"  {name}: {len(events)} kernels, {span:.1f} us of kernels a call"
              + (f", gap between a call's kernels {sorted(gaps)[len(gaps) // 2]:.1f} us" if gaps else ""))
        for kname, ts in per.items():
            print(f"      {sorted(ts)[len(ts) // 2]:8.1f} us  x{len(ts) // args.calls}  {kname[:110]}")
