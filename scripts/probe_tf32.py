"""Probe (device run): TF32 products whose f32 operands are laid out along M or N.

wgmma reads TF32 operands K-major only, so with `tf32(true)` an operand such as
w [K, N] of `x @ w` is first copied laid out along K by a transposing kernel
(`ir.passes.tf32_operands_along_k`); before, such a product stayed exact f32 on
the CUDA cores. Times, per shape: that program (copy + TF32 product), the same
product with w stored [N, K] (`x @ w.T`: no copy), an f16 w widened to f32
(computed from a parameter: written along K by a kernel of its own), the
exact f32 program, and
cuBLAS TF32 through torch (allow_tf32) on the same layout. Each tiledsl program
is checked against the float64 reference first. Medians of CUDA event times;
three interleaved rounds.

    python scripts/probe_tf32.py
"""
import statistics
import sys

import cupy
import torch

import tiledsl
from tiledsl.codegen import sources_for
from tiledsl.inputs import TOLERANCE, random_arguments, relative_error
from tiledsl.runtime.measure import time_rounds

KN = "kernel mm(x: f32[M, K], w: f32[K, N]) -> f32[M, N] { return x @ w }"
NK = "kernel mm(x: f32[M, K], w: f32[N, K]) -> f32[M, N] { return x @ w.T }"
WIDENED = "kernel mm(x: f32[M, K], w: f16[K, N]) -> f32[M, N] { return x @ w }"    # w widened to f32
TF32 = "\nschedule mm { tf32(true) }"
SHAPES = [dict(M=4096, N=4096, K=4096), dict(M=8192, N=8192, K=2048), dict(M=2048, N=2048, K=2048)]
ROUNDS, REPEAT = 3, 10


def main() -> None:
    print(cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
    torch.backends.cuda.matmul.allow_tf32 = True
    programs = {"tiledsl tf32 x @ w, w [K, N] (copy + TF32)": KN + TF32,
                "tiledsl tf32 x @ w.T, w [N, K] (TF32)": NK + TF32,
                "tiledsl tf32 x @ w, w f16 [K, N] widened (copy + TF32)": WIDENED + TF32,
                "tiledsl exact f32 x @ w, w [K, N]": KN}
    for e in SHAPES:
        flop = 2 * e["M"] * e["N"] * e["K"]
        impls = {}
        for label, src in programs.items():
            k = tiledsl.compile(src)
            host = random_arguments(k.graph, e, seed=7)
            dev = [cupy.asarray(a) for a in host]
            out = k(*dev)
            if e["M"] * e["N"] * e["K"] <= 1 << 33:
                err = relative_error(cupy.asnumpy(out), k.reference(*host, compute="f64"))
                assert err <= TOLERANCE["tf32" if "tf32" in label else "f32"], (label, err)
            tags = " + ".join(s.schedule.tag for s in sources_for(k, e, sm_count=132, arch="sm_90a"))
            impls[f"{label} [{tags}]"] = (lambda k=k, dev=dev, out=out: k(*dev, out=out))
            if "[K, N] (copy" in label:
                x, w = (torch.as_tensor(a, device="cuda") for a in dev)
                tout = torch.empty((e["M"], e["N"]), device="cuda")
                impls["torch TF32 x @ w, w [K, N] (cuBLAS)"] = lambda x=x, w=w, tout=tout: torch.matmul(x, w, out=tout)
        times = time_rounds(impls, ROUNDS, REPEAT)
        print(f"M={e['M']} N={e['N']} K={e['K']}")
        for label, t in times.items():
            m = statistics.median(t)
            print(f"  {label:100s} {m:9.1f} us  {flop / m / 1e6:6.1f} TFLOP/s")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
