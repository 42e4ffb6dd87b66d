"""Probe (device run): is softmax f32 32768x781's bimodal time a property of the
buffers (where they lie in memory) or of the moment? Times the default kernel and
Triton on each of several input/output pairs separately, in alternation.

    python scripts/probe_place.py [M N]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks import triton_peers as T  # noqa: E402
from benchmarks.common import time_cuda  # noqa: E402

m, n = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (32768, 781)
k = tiledsl.compile(open("examples/softmax.tdsl").read())
rs = np.random.default_rng()
pairs = []
for i in range(6):
    x = cp.asarray(rs.standard_normal((m, n), np.float32))
    pairs.append((x, cp.empty_like(x)))
import torch  # noqa: E402
tpairs = [(torch.as_tensor(x, device="cuda"), torch.as_tensor(o, device="cuda")) for x, o in pairs]
for rnd in range(2):
    for i, (x, o) in enumerate(pairs):
        t = time_cuda(lambda _: k(x, out=o), repeats=40)
        tt = time_cuda(lambda _: T.softmax(tpairs[i][0], out=tpairs[i][1]), repeats=40)
        print(f"round {rnd} pair {i} x@{x.data.ptr % (1 << 21):#x}/2M o@{o.data.ptr % (1 << 21):#x}/2M: "
              f"tiledsl median {t.median_us:6.1f} min {t.min_us:6.1f} max {max(t.samples_us):6.1f} | "
              f"triton (same buffers) median {tt.median_us:6.1f} min {tt.min_us:6.1f}", flush=True)
    # the same input, the output in each other pair's buffer
    x = pairs[0][0]
    for j, (_, o) in enumerate(pairs):
        t = time_cuda(lambda _: k(x, out=o), repeats=40)
        print(f"round {rnd} x0 -> o{j}: {t.median_us:6.1f} (min {t.min_us:6.1f})", flush=True)
# as the benchmark times it: consecutive runs on different buffers (inputs never in L2)
for rnd in range(3):
    for label, fn in (("tiledsl", lambda i: k(pairs[i][0], out=pairs[i][1])),
                      ("triton", lambda i: T.softmax(tpairs[i][0], out=tpairs[i][1]))):
        for sets in (2, 6):
            t = time_cuda(fn, n_sets=sets, repeats=30, warmup=5)
            s = sorted(t.samples_us)
            print(f"round {rnd} {label:8s} rotating {sets} pairs: median {t.median_us:6.1f}  "
                  f"samples {' '.join(f'{v:.0f}' for v in s[::3])}", flush=True)
