"""Probe (device run): bf16 kernels in vectors under their defaults, each checked
against the float64 reference first, then timed (three interleaved rounds, median
microseconds, GB/s over the bytes moved). Run in an old tree and this one (device_pass.sh
`ab` with PROBE=scripts/probe_bf16.py) to see what widening bf16 lanes from their 32-bit
words (tdsl::bf16_lane) moved.

    python scripts/probe_bf16.py
"""
import os
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import input_sets_needed, time_cuda  # noqa: E402
from tiledsl.inputs import TOLERANCE, random_arguments, relative_error  # noqa: E402

LAYERNORM = """kernel layernorm(x: bf16[M, N], w: bf16[N], b: bf16[N], eps: f32 = 1e-5) -> bf16[M, N] {
    mu  = mean(x, axis=N)
    xc  = x - mu
    var = mean(xc * xc, axis=N)
    return xc * rsqrt(var + eps) * w + b
}"""
RMSNORM = "kernel rmsnorm(x: bf16[M, N], w: bf16[N]) -> bf16[M, N] { return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }"
SOFTMAX = "kernel softmax(x: bf16[M, N]) -> bf16[M, N] {\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}"
BIAS_GELU = "kernel g(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return gelu(x + b) }"
CASES = [(name, src, dict(M=m, N=n)) for name, src in (("layernorm", LAYERNORM), ("rmsnorm", RMSNORM),
                                                      ("softmax", SOFTMAX))
         for m, n in ((4096, 8192), (16384, 4096), (65536, 1024))] + [
    ("bias+gelu", BIAS_GELU, dict(M=16384, N=4096))]


def main() -> None:
    setups = []
    for name, src, extents in CASES:
        k = tiledsl.compile(src)
        host = random_arguments(k.graph, extents)
        want = k.reference(*host, compute="f64")
        nbytes = sum(a.nbytes for a in host if isinstance(a, np.ndarray)) + 2 * extents["M"] * extents["N"]
        n_sets = input_sets_needed(nbytes)
        sets = [[cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host] for _ in range(n_sets)]
        out = k(*sets[0])
        err = relative_error(cp.asnumpy(out), want)
        assert err <= TOLERANCE["bf16"], (name, extents, err)
        setups.append((name, extents, k, sets, out, nbytes))
    times = {i: [] for i in range(len(setups))}
    for _ in range(3):
        for i, (name, extents, k, sets, out, nbytes) in enumerate(setups):
            times[i].append(time_cuda(lambda j: k(*sets[j], out=out), n_sets=len(sets), repeats=30,
                                      warmup_ms=50).median_us)
    for i, (name, extents, k, sets, out, nbytes) in enumerate(setups):
        us = float(np.median(times[i]))
        print(f"{name:10s} {extents['M']:6d}x{extents['N']:<5d} {us:8.1f} us {nbytes / us / 1e3:6.0f} GB/s  "
              f"rounds {' '.join(f'{t:.1f}' for t in times[i])}")


if __name__ == "__main__":
    main()
