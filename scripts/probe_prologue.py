"""Probe (device run): tensor-core products whose A operand is computed
elementwise or laid out along M.

A product such as `f16(x) @ w` (x f32) or `f16(x * s) @ w` read its A operand
in the GEMM's prologue, element by element, before the partition stored such
operands with a pointwise kernel of their own; `at.T @ w` (at [K, M]) was
copied transposed first, before the tensor-core tiles read an M-contiguous A
in place. Times each program as tiledsl runs it, beside the same work as two
tiledsl kernels (the operand stored in f16 [M, K] by a pointwise kernel, then
a plain product), the plain product alone, and torch (the operand made by
torch, then cuBLAS; `at.T` is a view cuBLAS reads transposed). Each tiledsl program is
checked against the float64 reference first. Medians of CUDA event times;
three interleaved rounds.

    python scripts/probe_prologue.py ["A transposed" ...]     (only these programs)
"""
import statistics
import sys

import cupy
import torch

import tiledsl
from tiledsl.codegen import sources_for
from tiledsl.inputs import TOLERANCE, random_arguments, relative_error
from tiledsl.runtime.measure import time_rounds

PROGRAMS = {
    "cast": ("kernel p(x: f32[M, K], w: f16[K, N]) -> f32[M, N] { return f16(x) @ w }",
             "kernel c(x: f32[M, K]) -> f16[M, K] { return f16(x) }",
             lambda x, w: torch.matmul(x.half(), w)),
    "scale": ("kernel p(x: f16[M, K], s: f16[K], w: f16[K, N]) -> f32[M, N] { return f16(x * s) @ w }",
              "kernel c(x: f16[M, K], s: f16[K]) -> f16[M, K] { return f16(x * s) }",
              lambda x, s, w: torch.matmul(x * s, w)),
    "A transposed": ("kernel p(at: f16[K, M], w: f16[K, N]) -> f32[M, N] { return at.T @ w }",
                     "kernel c(at: f16[K, M]) -> f16[M, K] { return at.T }",
                     lambda at, w: torch.matmul(at.T, w)),
}
PLAIN = "kernel g(a: f16[M, K], w: f16[K, N]) -> f32[M, N] { return a @ w }"
SHAPES = [dict(M=4096, N=4096, K=4096), dict(M=1024, N=4096, K=4096), dict(M=128, N=4096, K=4096),
          dict(M=512, N=512, K=512)]
ROUNDS, REPEAT = 3, 20


def main() -> None:
    print(cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
    plain = tiledsl.compile(PLAIN)
    for name, (src, pre_src, torch_fn) in PROGRAMS.items():
        if sys.argv[1:] and name not in sys.argv[1:]:
            continue
        fused, pre = tiledsl.compile(src), tiledsl.compile(pre_src)
        for e in SHAPES:
            flop = 2 * e["M"] * e["N"] * e["K"]
            host = random_arguments(fused.graph, e, seed=3)
            dev = [cupy.asarray(a) for a in host]
            out = fused(*dev)
            if e["M"] * e["N"] * e["K"] <= 1 << 32:
                err = relative_error(cupy.asnumpy(out), fused.reference(*host, compute="f64"))
                assert err <= TOLERANCE["f16"], err      # NaN fails too
            a16 = pre(*dev[:-1])
            two_out = plain(a16, dev[-1])
            tags = " + ".join(s.schedule.tag for s in sources_for(fused, e, sm_count=132, arch="sm_90a"))
            tdev = [torch.as_tensor(a, device="cuda") for a in dev]
            impls = {
                f"tiledsl fused ({tags})": lambda: fused(*dev, out=out),
                "tiledsl two kernels": lambda: plain(pre(*dev[:-1], out=a16), dev[-1], out=two_out),
                "tiledsl plain product alone": lambda: plain(a16, dev[-1], out=two_out),
                "torch (cuBLAS; the operand made first)": lambda: torch_fn(*tdev),
            }
            times = time_rounds(impls, ROUNDS, REPEAT)
            print(f"{name} M={e['M']} N={e['N']} K={e['K']}")
            for label, t in times.items():
                m = statistics.median(t)
                print(f"  {label:60s} {m:9.1f} us  {flop / m / 1e6:6.1f} TFLOP/s")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
