"""Probe (device run): f16 a @ b at N^3 (argument, default 8192) run back to back
for 2 s at a time, the default schedule, its persistent form and cuBLAS in turn,
twice, while nvidia-smi samples the SM clock and board power every 20 ms: what
each sustains once the GPU is at its power limit. Writes $OUT/clk.txt.

    OUT=/tmp python scripts/probe_clocks.py 4096
"""
import datetime
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from dataclasses import replace
import numpy as np, cupy as cp
import tiledsl
from tiledsl.runtime import launcher_for
from tiledsl.runtime.launcher import set_overrides
from tiledsl.schedule.choose import default
from tiledsl.schedule.problem import problem
SRC = "kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }"
m = n = k = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
a = cp.asarray(np.random.standard_normal((m, k)).astype(np.float16))
b = cp.asarray(np.random.standard_normal((k, n)).astype(np.float16))
out = cp.empty((m, n), cp.float16)
kerns = {}
for label in ("default", "pst"):
    kern = tiledsl.compile(SRC + f"\n# {label}\n")
    lau = kern._launcher = launcher_for(kern)
    p = problem(lau.groups[0], lau.layouts[0], dict(M=m, N=n, K=k), frozenset(), 132)
    s = default(p)
    if label == "pst":
        s = replace(s, persistent=True)
    set_overrides(lau, {0: s})
    kern(a, b, out=out)
    kerns[label] = kern
kerns["cublas"] = None
cp.cuda.Device().synchronize()
log = open(os.environ["OUT"] + "/clk.txt", "w")
smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader,nounits", "-lms", "20"], stdout=log)
time.sleep(1)
marks = []
for rnd in range(2):
    for label, kern in kerns.items():
        t0 = time.time(); n_runs = 0
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        while time.time() - t0 < 2.0:
            for _ in range(5):
                if kern is None:
                    cp.matmul(a, b, out=out)
                else:
                    kern(a, b, out=out)
            n_runs += 5
            e1.record(); e1.synchronize()
        us = cp.cuda.get_elapsed_time(e0, e1) * 1e3 / n_runs
        marks.append((label, t0, time.time(), us))
        time.sleep(0.5)
smi.terminate(); smi.wait(); log.close()
rows = []
for line in open(os.environ["OUT"] + "/clk.txt"):
    try:
        ts, clk, pw = [x.strip() for x in line.split(",")]
        t = datetime.datetime.strptime(ts, "%Y/%m/%d %H:%M:%S.%f").timestamp()
        rows.append((t, float(clk), float(pw)))
    except Exception:
        pass
for label, t0, t1, us in marks:
    sel = [(c, p) for t, c, p in rows if t0 + 0.3 <= t <= t1]
    if sel:
        print(f"{label:8s} {us:8.1f} us/run  sm clock {np.mean([c for c, _ in sel]):6.0f} MHz  power {np.mean([p for _, p in sel]):5.0f} W  ({len(sel)} samples)")
    else:
        print(label, us, "no samples")
