"""Probe (device run): where a split-K GEMM's wrong elements are."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from tiledsl.runtime import launcher_for  # noqa: E402
from tiledsl.runtime.launcher import set_overrides  # noqa: E402
from tiledsl.schedule.schedules import Schedule  # noqa: E402

src = "kernel mm(a: f32[M, K], b: f32[K, N]) -> f32[M, N] { return a @ b }"
for (m, n, k), (tm, tn, blk), splits in [((256, 256, 4096), (16, 8, 128), 2), ((128, 256, 4096), (16, 8, 128), 2),
                                        ((256, 128, 4096), (16, 8, 128), 2), ((256, 256, 4096), (16, 8, 128), 3),
                                        ((512, 512, 4096), (16, 8, 128), 4), ((256, 256, 4096), (8, 16, 128), 2)]:
    kern = tiledsl.compile(src)
    kern._launcher = launcher_for(kern)
    s = Schedule("matmul", block=blk, tile=(128, 128, 8), micro=(tm, tn), vec=4, splits=splits)
    set_overrides(kern._launcher, {0: s})
    a = cp.random.standard_normal((m, k), dtype=cp.float32)
    b = cp.random.standard_normal((k, n), dtype=cp.float32)
    out = cp.full((m, n), cp.nan, cp.float32)
    kern(a, b, out=out)
    ref = a @ b
    bad = ~cp.isclose(out, ref, rtol=1e-3, atol=1e-2)
    rows, cols = cp.nonzero(bad)
    print((m, n, k), s.tag, splits, "bad", int(bad.sum()), "nan", int(cp.isnan(out).sum()),
          "tiles", sorted(set(zip(cp.asnumpy(rows // 128).tolist(), cp.asnumpy(cols // 128).tolist()))),
          "rows%128", sorted(set(cp.asnumpy(rows % 128).tolist()))[:8], "cols%128", sorted(set(cp.asnumpy(cols % 128).tolist()))[:8],
          "nan-free bad", int((bad & ~cp.isnan(out)).sum()), flush=True)
