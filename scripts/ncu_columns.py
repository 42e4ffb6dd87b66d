"""Device run under Nsight Compute: softmax over M of x[M, N] (tiledsl's default kernels:
the (m, s) partials, their combine, the elements) at a few shapes, each called three
times, for `ncu` to time kernel by kernel (device_pass.sh `ncucols`):

    ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        python scripts/ncu_columns.py 1000x1000 4096x4096
"""
import os
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402

import tiledsl  # noqa: E402

SRC = "kernel f(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=M))\n return e / sum(e, axis=M)\n}"
k = tiledsl.compile(SRC)
for shape in sys.argv[1:]:
    m, n = map(int, shape.split("x"))
    x = cp.random.standard_normal((m, n), dtype=cp.float32)
    out = cp.empty_like(x)
    for _ in range(3):
        k(x, out=out)
cp.cuda.runtime.deviceSynchronize()
