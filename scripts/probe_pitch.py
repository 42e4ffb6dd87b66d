"""Probe (device run): what padding an operand's rows to 128 bytes would buy where
they are a multiple of 16 bytes but not of 32 (3000 f16 values: 6000 bytes). The
product with the operand padded is timed as the next aligned size (3008: 6016
bytes), and the padding itself as a 2-D copy into rows of that pitch
(cudaMemcpy2DAsync); against the product as it is.

    python scripts/probe_pitch.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import time_cuda  # noqa: E402

MM = "kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }"


def gemm_us(m, n, k):
    kern = tiledsl.compile(MM)
    a = cp.random.standard_normal((m, k)).astype(cp.float16)
    b = cp.random.standard_normal((k, n)).astype(cp.float16)
    out = cp.empty((m, n), cp.float16)
    return time_cuda(lambda i: kern(a, b, out=out), repeats=30, warmup_ms=200).median_us


def pad_us(rows, cols):
    src = cp.random.standard_normal((rows, cols)).astype(cp.float16)
    pitch = (cols * 2 + 127) // 128 * 128
    dst = cp.empty((rows, pitch // 2), cp.float16)
    stream = cp.cuda.get_current_stream()
    return time_cuda(lambda i: cp.cuda.runtime.memcpy2DAsync(dst.data.ptr, pitch, src.data.ptr, cols * 2, cols * 2,
                                                             rows, 3, stream.ptr), repeats=30, warmup_ms=100).median_us


for name, shape, padded, copies in (
        ("B's rows (N = 3000)", (3072, 3000, 3072), (3072, 3008, 3072), [(3072, 3000)]),
        ("A's rows (K = 3000)", (3072, 3072, 3000), (3072, 3072, 3008), [(3072, 3000)]),
        ("both (3000^3)", (3000, 3000, 3000), (3000, 3008, 3008), [(3000, 3000), (3000, 3000)])):
    t0 = gemm_us(*shape)
    t1 = gemm_us(*padded)
    tc = sum(pad_us(*c) for c in copies)
    flop = 2 * shape[0] * shape[1] * shape[2]
    print(f"{name:22s} as is {t0:6.1f} us ({flop / t0 / 1e6:5.1f} TFLOP/s); padded {t1:6.1f} + copies {tc:5.1f} = "
          f"{t1 + tc:6.1f} us ({t0 / (t1 + tc):.3f}x)", flush=True)
