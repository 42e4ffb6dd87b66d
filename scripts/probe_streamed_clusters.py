"""Probe (device run): streamed rows too few to fill the GPU a block each, as the default
streams them now (the blocks of a cluster together: rows.streamed_or_shared) and as before
(a block a row, the same schedule with cluster 1). Both checked against float64, timed
side by side (CUDA events, inputs rotated, three interleaved rounds, median µs).

    python scripts/probe_streamed_clusters.py [names to keep]
"""
import os
import statistics
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import time_cuda  # noqa: E402
from tiledsl.inputs import random_arguments, relative_error  # noqa: E402
from tiledsl.runtime import launcher_for  # noqa: E402
from tiledsl.runtime.launcher import _sm_count, device_arch, set_overrides  # noqa: E402
from tiledsl.schedule.choose import default  # noqa: E402
from tiledsl.schedule.layout import plan_layout  # noqa: E402
from tiledsl.schedule.partition import partition  # noqa: E402
from tiledsl.schedule.problem import problem  # noqa: E402

from probe_nchw import APPLY, STATS  # noqa: E402  (the batch norms timed there)

LSE = "kernel l(x: f32[M, N]) -> f32[M] {\n    m = max(x, axis=N)\n    return m + log(sum(exp(x - m), axis=N))\n}"
SOFTMAX = open("examples/softmax.tdsl").read()
CASES = [("bn apply f32 32x64x112x112", APPLY.format(t="f32"), dict(B=32, C=64, H=112, W=112)),
         ("bn stats f32 32x64x112x112", STATS.format(t="f32"), dict(B=32, C=64, H=112, W=112)),
         ("bn apply f32 16x96x128x128", APPLY.format(t="f32"), dict(B=16, C=96, H=128, W=128)),
         ("softmax f32 100x524288", SOFTMAX, dict(M=100, N=1 << 19)),
         ("softmax f32 48x1000003", SOFTMAX, dict(M=48, N=1000003)),
         ("logsumexp f32 64x1048576", LSE, dict(M=64, N=1 << 20)),
         ("layernorm f16 120x1048576", open("examples/layernorm.tdsl").read(), dict(M=120, N=1 << 20))]


def main() -> None:
    keep = sys.argv[1:]
    arch, sms = device_arch(0), _sm_count(0)
    for name, src, extents in CASES:
        if keep and not any(k in name for k in keep):
            continue
        k0 = tiledsl.compile(src)
        groups = partition(k0.graph)
        p = problem(groups[0], plan_layout(groups[0], k0.graph), extents, frozenset(), sms, arch)
        new = default(p, k0.hints)
        if len(groups) != 1 or new.cluster == 1 or new.items:
            print(f"{name}: not a streamed cluster here ({new.tag}, {len(groups)} groups)", flush=True)
            continue
        host = [random_arguments(k0.graph, extents, seed=s) for s in (1, 2, 3)]
        sets = [[cp.asarray(a) if isinstance(a, np.ndarray) else a for a in h] for h in host]
        want = k0.reference(*host[0], compute="f64")
        want = want if isinstance(want, tuple) else (want,)
        runs = []
        for tag, s in (("cluster (new default)", new), ("a block a row (old default)", replace(new, cluster=1))):
            k = tiledsl.compile(src)
            k._launcher = launcher_for(k)
            set_overrides(k._launcher, {0: s})
            got = k(*sets[0])
            got = got if isinstance(got, tuple) else (got,)
            err = max(relative_error(cp.asarray(g).get().astype(np.float64), np.asarray(w, np.float64))
                      for g, w in zip(got, want))
            runs.append((f"{tag} {s.tag}", lambda i, k=k, o=got: k(*sets[i], out=o if len(o) > 1 else o[0]), err))
        times = {}
        for _ in range(3):
            for tag, fn, _ in runs:
                times.setdefault(tag, []).append(time_cuda(fn, n_sets=3, repeats=20, warmup_ms=20).median_us)
        print(name, flush=True)
        for tag, _, err in runs:
            print(f"  {statistics.median(times[tag]):8.1f} us  {tag}  err {err:.1e}", flush=True)


if __name__ == "__main__":
    main()
