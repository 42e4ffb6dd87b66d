"""Where the host's microseconds go in a warm call of a program of several kernels (device
run): softmax over M of a [300, 200] f32 (two kernels, two temporaries) took ~20 us of host
time a call where its GPU work takes 3 (scripts/probe_short_columns.py, H200 2026-12-02),
against ~5.4 for one pointwise kernel. Each line: the best of 5 rounds of 5000 calls
(round-robin over the lines), the launch queue drained at the end of each round.

    python scripts/probe_launch_multi.py
"""
import os
import re
import sys

sys.path.insert(0, os.getcwd())     # (the tree run from: device_pass.sh `ab` runs an old one too)
import cupy as cp  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import best_host_us  # noqa: E402
from tiledsl.runtime.launcher import _warm_call  # noqa: E402

N, ROUNDS = 5000, 5
LINES = []


def noop(*a, **kw):
    return 0


PROGRAMS = {
    "x + y": ("kernel f(x: f32[M, N], y: f32[M, N]) -> f32[M, N] { return x + y }", 2),
    "softmax over N": ("kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=N))\n"
                       " return e / sum(e, axis=N)\n}", 1),
    "softmax over M": ("kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=M))\n"
                       " return e / sum(e, axis=M)\n}", 1),
    "x - mean(x, axis=M)": ("kernel f(x: f32[M, N]) -> f32[M, N] { return x - mean(x, axis=M) }", 1),
}
for label, (src, n_in) in PROGRAMS.items():
    k = tiledsl.compile(src)
    args = tuple(cp.random.standard_normal((300, 200), cp.float32) for _ in range(n_in))
    o = k(*args)
    k(*args, out=o)
    L = k._launcher
    key = L._key_function(n_in)(args, o)
    fast = L._fast[key]
    print(f"--- {label}: {len(L.groups)} groups ({tiledsl.__file__})\n{fast.source}", flush=True)
    ptrs = tuple(a.data.ptr for a in args) + (o.data.ptr,)
    bound = fast.bound
    quiet = {n: noop for n in bound if n in ("launch", "launch_ex") or re.fullmatch(r"F\d+", n)}
    no_launch = _warm_call(fast.source, tuple(quiet.get(n, v) for n, v in bound.items()))
    no_temps = _warm_call(fast.source, tuple(
        (lambda shape, dtype: o) if n == "ndarray" else quiet.get(n, v) for n, v in bound.items()))
    LINES.append((f"{label}: k(*args, out=o)", lambda k=k, a=args, o=o: k(*a, out=o)))
    LINES.append((f"{label}: fast(...)", lambda f=fast, a=args, o=o, p=ptrs: f(a, o, *p)))
    LINES.append((f"{label}: fast(...), no launch", lambda f=no_launch, a=args, o=o, p=ptrs: f(a, o, *p)))
    LINES.append((f"{label}: fast(...), no launch nor temps", lambda f=no_temps, a=args, o=o, p=ptrs: f(a, o, *p)))
    LINES.append((f"{label}: dispatch key", lambda kf=L._key_function(n_in), a=args, o=o: kf(a, o)))
LINES.append(("cp.ndarray((200,), f32)", lambda: cp.ndarray((200,), cp.float32)))
LINES.append(("cp.ndarray((1, 200), f32)", lambda: cp.ndarray((1, 200), cp.float32)))
best = best_host_us(LINES, N, ROUNDS)
for label, _ in LINES:
    print(f"{label:56s} {best[label]:6.2f} us", flush=True)
