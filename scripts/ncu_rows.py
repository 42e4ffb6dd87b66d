"""Device run under Nsight Compute: one row kernel of tiledsl (a schedule picked by tag) and
Triton's softmax at the same shape, each called a few times, for `ncu` to profile.

    ncu --section SpeedOfLight --section Occupancy --section LaunchStats \
        python scripts/ncu_rows.py softmax16 4096 8192 b512_v8_i2_t512_x32
NCU_CALLS=1 calls each once (3 by default). MODE=<a probe_fastexp.py mode> profiles tiledsl's kernels text-patched so.
"""
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cupy as cp  # noqa: E402

import probe_fastexp  # noqa: E402  (its text patches: MODE=min4, ftz, ... in the environment)

from probe_gaps import SOURCES, triton_call  # noqa: E402
from row_probe import prepare  # noqa: E402
from tiledsl.runtime.launcher import set_overrides  # noqa: E402
from tiledsl.schedule.choose import candidates  # noqa: E402

probe_fastexp.use(os.environ.get("MODE", "plain"))
name, m, n, *tags = sys.argv[1:]
CALLS = int(os.environ.get("NCU_CALLS", 3))     # calls of each: 1 profiles each kernel once
case = prepare(name, SOURCES[name], dict(M=int(m), N=int(n)))
k = case.kernel
for tag in tags:
    s = next(s for s in candidates(case.problem, k.hints) if s.tag.endswith(tag))
    set_overrides(k._launcher, {0: s})
    for i in range(CALLS):
        k(*case.sets[i % len(case.sets)], out=case.out)
tri = triton_call(name, case)
for i in range(3):
    tri(i % len(case.sets))
cp.cuda.runtime.deviceSynchronize()
