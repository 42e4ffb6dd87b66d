"""Probe (device run): the two-layer MLP example against cuBLAS through torch.

Times `examples/mlp.tdsl` (the hidden activation stored in f16) and the same
program with the hidden activation left in f32 (no `f16(...)`: the second
product then multiplies f32 by f32), each checked against the float64
reference first, beside torch's f16 MLP (addmm with the bias, relu in place,
addmm: cuBLAS) and the two bare cuBLAS GEMMs (cupy.matmul). Medians of CUDA
event times; three interleaved rounds. Run it from another checkout's root
(PYTHONPATH) to time that code's partition on the same lease.

    python scripts/probe_mlp.py
"""
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import cupy  # noqa: E402
import torch  # noqa: E402

import tiledsl  # noqa: E402
from tiledsl.codegen import sources_for  # noqa: E402
from tiledsl.inputs import TOLERANCE, random_arguments, relative_error  # noqa: E402
from tiledsl.runtime.measure import time_rounds  # noqa: E402
from tiledsl.schedule.partition import describe, partition  # noqa: E402

with open(os.path.join(ROOT, "examples", "mlp.tdsl")) as f:
    MLP16 = f.read()
MLP32 = MLP16.replace("h = f16(relu(x @ w1 + b1))", "h = relu(x @ w1 + b1)")
assert MLP32 != MLP16
SHAPES = [dict(M=2048, D=1024, H=4096, E=1024), dict(M=128, D=4096, H=11008, E=4096),
          dict(M=8192, D=4096, H=16384, E=4096)]
ROUNDS, REPEAT = 3, 30


def main() -> None:
    print(f"tiledsl from {os.path.dirname(tiledsl.__file__)}; {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    for e in SHAPES:
        flop = 2 * e["M"] * e["H"] * (e["D"] + e["E"])
        host = random_arguments(tiledsl.compile(MLP16).graph, e, seed=7)
        dev = [cupy.asarray(a) for a in host]
        impls = {}
        for label, src in (("tiledsl, h in f16", MLP16), ("tiledsl, h in f32", MLP32)):
            k = tiledsl.compile(src)
            out = k(*dev)
            if e["M"] <= 2048:      # the float64 reference of the largest shape takes minutes on the host
                err = relative_error(cupy.asnumpy(out), k.reference(*host, compute="f64"))
                print(f"  {label}: relative error {err:.2e}")
                assert err <= TOLERANCE["f16"], f"{label}: {err}"     # NaN fails too
            tags = " + ".join(s.schedule.tag for s in sources_for(k, e, sm_count=132, arch="sm_90a"))
            print("   ", describe(partition(k.graph)).replace("\n", "\n    "), "\n    schedules:", tags)
            impls[label] = (lambda k=k, out=out: k(*dev, out=out))
        x, w1, b1, w2, b2 = (torch.as_tensor(a, device="cuda") for a in dev)
        b1h, b2h = b1.half(), b2.half()

        def torch_mlp():
            return torch.addmm(b2h, torch.addmm(b1h, x, w1).relu_(), w2)
        impls["torch f16 (addmm, relu_, addmm)"] = torch_mlp
        hc = cupy.empty((e["M"], e["H"]), cupy.float16)
        xc, w1c, w2c = dev[0], dev[1], dev[3]
        impls["cuBLAS: the two GEMMs alone"] = lambda: (cupy.matmul(xc, w1c, out=hc), cupy.matmul(hc, w2c))
        times = time_rounds(impls, ROUNDS, REPEAT)
        best = min(statistics.median(t) for t in times.values())
        print(f"MLP M={e['M']} D={e['D']} H={e['H']} E={e['E']} ({flop / 1e9:.1f} GFLOP)")
        for label, t in times.items():
            m = statistics.median(t)
            print(f"  {label:34s} {m:9.1f} us  {flop / m / 1e6:6.1f} TFLOP/s  x{best / m:.3f} of the fastest  "
                  f"rounds {', '.join(f'{v:.1f}' for v in t)}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
