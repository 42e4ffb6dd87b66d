"""Probe (device run): the default schedules of the row norms and softmax at the benchmark's
shapes and at shapes the defaults were not fitted to, each checked against the float64
reference (its output poisoned first), then timed with Triton's kernel beside it (three
interleaved rounds, median microseconds). Run in an old tree and this one (device_pass.sh
`ab` with PROBE=scripts/probe_defaults.py) to see what a change of default rules moved.

    python scripts/probe_defaults.py [names to keep]
    SHAPES="layernorm:4096x6144 layernorm16:4096x8192" python scripts/probe_defaults.py   (these cases only)
"""
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common import time_cuda  # noqa: E402
from probe_gaps import SOURCES, TOLERANCE, triton_call  # noqa: E402
from row_probe import prepare  # noqa: E402
from tiledsl.inputs import relative_error  # noqa: E402
from tiledsl.schedule.choose import default  # noqa: E402

SHAPES = {"softmax": [(16384, 1024), (8192, 4096), (4096, 16384), (32768, 781), (8192, 5120), (16384, 5120),
                      (8192, 6144), (8192, 7168), (4096, 8192), (4096, 12288)],
          "rmsnorm": [(16384, 4096), (65536, 1024), (4096, 8192), (3072, 8192), (6144, 8192), (4096, 7168),
                      (8192, 5120), (8192, 6144), (8192, 12288), (512, 8192)],
          "layernorm": [(16384, 4096), (65536, 1024), (4096, 8192), (8192, 5120), (8192, 6144), (8192, 7168)],
          "layernorm16": [(16384, 4096), (65536, 1024), (4096, 8192), (8192, 5120), (8192, 6144), (8192, 7168)],
          "softmax16": [(8192, 5120), (4096, 8192), (8192, 8192), (4096, 16384), (16384, 4096), (65536, 1024),
                        (8192, 6144), (8192, 10000), (2048, 32768), (4096, 32000)],
          "softmaxbf16": [(4096, 8192), (8192, 8192), (4096, 16384), (8192, 5120)]}


def main() -> None:
    only = sys.argv[1:]
    cases = []
    shapes_of = SHAPES
    if os.environ.get("SHAPES"):        # SHAPES="layernorm:4096x6144 layernorm16:4096x8192": these cases only
        shapes_of = {}
        for case in os.environ["SHAPES"].split():
            name, mn = case.split(":")
            shapes_of.setdefault(name, []).append(tuple(int(v) for v in mn.split("x")))
    for name, shapes in shapes_of.items():
        for m, n in shapes:
            label = f"{name}-{m}x{n}"
            if only and not any(o in label for o in only):
                continue
            case = prepare(name, SOURCES[name], dict(M=m, N=n))
            k = case.kernel
            case.out.fill(float("nan"))
            k(*case.sets[0], out=case.out)
            err = relative_error(cp.asnumpy(case.out).astype(np.float64), case.want)
            assert err <= TOLERANCE[name], (label, err)
            s = default(case.problem, k.hints)
            cases.append((label, f"{s.tag} ps{s.blocks_per_sm}", case, k, triton_call(name, case)))
            case.want = None        # (the float64 reference of every case at once would fill the host)
    times = {}
    for _ in range(3):
        for label, tag, case, k, tri in cases:
            for who, fn in (("tdsl", lambda i: k(*case.sets[i], out=case.out)), ("triton", tri)):
                times.setdefault((label, who), []).append(
                    time_cuda(fn, n_sets=len(case.sets), repeats=30, warmup_ms=20).median_us)
    for label, tag, case, k, tri in cases:
        us, tus = statistics.median(times[(label, "tdsl")]), statistics.median(times[(label, "triton")])
        print(f"{label:22s} {tag:38s} {us:8.1f} us  triton {tus:8.1f}  {tus / us:5.3f}x", flush=True)


if __name__ == "__main__":
    main()
