"""Probe (device run): reductions across memory whose columns have values of their own (a
batch norm's given mean, a weight over the columns, an idx() of them), their defaults timed
alone (CUDA events, three rounds, median µs) and checked against float64; for an A/B of
the column vectors' lane-held values (`device_pass.sh ab` with PROBE=this script).

    python scripts/probe_column_values.py
"""
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import ran_schedules, time_cuda  # noqa: E402
from tiledsl.inputs import random_arguments, relative_error  # noqa: E402

BN = "kernel v(x: {t}[M, N], mu: f32[N]) -> f32[N] {{\n d = f32(x) - mu\n return mean(d * d, axis=M)\n}}"
CASES = [("column sum f16 65536x768 (no values)", "kernel s(x: f16[M, N]) -> f32[N] { return sum(x, axis=M) }",
          dict(M=65536, N=768)),
         ("batch-norm variance f16 65536x768", BN.format(t="f16"), dict(M=65536, N=768)),
         ("batch-norm variance f16 16384x4096", BN.format(t="f16"), dict(M=16384, N=4096)),
         ("batch-norm variance f16 8192x8192", BN.format(t="f16"), dict(M=8192, N=8192)),
         ("column sum f16 16384x4096 (no values)", "kernel s(x: f16[M, N]) -> f32[N] { return sum(x, axis=M) }",
          dict(M=16384, N=4096)),
         ("weighted column sum f16 16384x4096", "kernel w(x: f16[M, N], w: f16[N]) -> f32[N] "
          "{ return sum(f32(x * w), axis=M) }", dict(M=16384, N=4096)),
         ("batch-norm variance bf16 1048576x128", BN.format(t="bf16"), dict(M=1 << 20, N=128)),
         ("batch-norm variance f32 16384x4096", BN.format(t="f32"), dict(M=16384, N=4096)),
         ("weighted column sum f16 65536x1024", "kernel w(x: f16[M, N], w: f16[N]) -> f32[N] "
          "{ return sum(f32(x * w), axis=M) }", dict(M=65536, N=1024)),
         ("idx-weighted column sum f16 65536x776", "kernel c(x: f16[M, N]) -> f32[N] "
          "{ return sum(x * f32(idx(N)), axis=M) * f32(idx(N)) }", dict(M=65536, N=776))]


def on_device(a):
    """A host argument on the GPU as a CuPy array (torch only where this CuPy holds no bf16:
    a torch tensor's call costs tens of microseconds more on the host), scalars as they are."""
    if not isinstance(a, np.ndarray):
        return a
    try:
        dev = cp.asarray(a)
        if dev.dtype == a.dtype:
            return dev
    except Exception:  # noqa: BLE001 - an older CuPy without bf16
        pass
    return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).cuda().view(torch.bfloat16)


def main() -> None:
    jobs = []
    for name, src, extents in CASES:
        k = tiledsl.compile(src)
        host = [random_arguments(k.graph, extents, seed=s) for s in (1, 2, 3)]
        sets = [[on_device(a) for a in h] for h in host]
        try:
            out = k(*sets[0])
            got = cp.asarray(out).get().astype(np.float64)
        except Exception as err:  # noqa: BLE001 - a case this tree cannot run: say so, go on
            print(f"  {name}: {type(err).__name__}: {err}", flush=True)
            continue
        want = np.asarray(k.reference(*host[0], compute="f64"), np.float64)
        jobs.append((name, k, sets, out, relative_error(got, want)))
    times = {}
    for _ in range(3):
        for name, k, sets, out, _ in jobs:
            times.setdefault(name, []).append(time_cuda(lambda i, k=k, s=sets, o=out: k(*s[i], out=o), n_sets=3,
                                                        repeats=30,
                                                        warmup_ms=30).median_us)
    for name, k, sets, _, err in jobs:
        print(f"  {statistics.median(times[name]):8.1f} us  {name}  err {err:.1e}  {ran_schedules(k)}", flush=True)


if __name__ == "__main__":
    main()
