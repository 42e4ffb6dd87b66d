"""Probe (device run): the attention examples as written (the probabilities
rounded to f16: the softmax kernel stores them, the second product reads them
by TMA into the warpgroup tensor cores) and with the probabilities left in f32
(without the `f16(...)`: the second product multiplies f32 by f32 on the CUDA
cores), each checked against the float64 reference first, beside torch's fused
attention in f16 (scaled_dot_product_attention) for scale. Medians of CUDA
event times, three interleaved rounds.

    python scripts/probe_attention.py
"""
import math
import os
import statistics

import cupy
import torch

import tiledsl
from tiledsl.codegen import sources_for
from tiledsl.inputs import TOLERANCE, random_arguments, relative_error
from tiledsl.runtime.measure import time_gpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "examples", "attention.tdsl")) as f:
    F16 = f.read()
F32 = F16.replace("f16(p / sum(p, axis=S)) @ v", "(p / sum(p, axis=S)) @ v")
assert F32 != F16
SHAPES = [dict(T=1024, S=1024, D=64), dict(T=2048, S=2048, D=128), dict(T=4096, S=4096, D=64)]


def main() -> None:
    for e in SHAPES:
        for name in ("attention", "causal_attention"):
            impls = {}
            host = None
            for label, src in (("tiledsl, p in f16", F16), ("tiledsl, p in f32", F32)):
                k = tiledsl.compile(src)[name]
                if host is None:
                    host = random_arguments(k.graph, e, seed=11)
                    host[3] = 1 / math.sqrt(e["D"])
                    dev = [cupy.asarray(a) for a in host[:3]] + [host[3]]
                out = k(*dev)
                err = relative_error(cupy.asnumpy(out), k.reference(*host, compute="f64"))
                assert err <= TOLERANCE["f16"], f"{label}: {err}"     # NaN fails too
                tags = " + ".join(s.schedule.tag for s in sources_for(k, e, sm_count=132, arch="sm_90a"))
                print(f"  {name} {label}: relative error {err:.1e}; {tags}")
                impls[label] = (lambda k=k, out=out: k(*dev, out=out))
            q, kk, v = (torch.as_tensor(a, device="cuda")[None, None] for a in dev[:3])
            causal = name == "causal_attention"
            impls["torch SDPA f16"] = lambda: torch.nn.functional.scaled_dot_product_attention(
                q, kk, v, is_causal=causal, scale=host[3])
            times = {label: [] for label in impls}
            for _ in range(3):
                for label, fn in impls.items():
                    times[label].append(time_gpu(fn, repeat=20) * 1e6)
            print(f"{name} T={e['T']} S={e['S']} D={e['D']}")
            for label, t in times.items():
                print(f"  {label:20s} {statistics.median(t):9.1f} us   rounds {', '.join(f'{x:.1f}' for x in t)}")


if __name__ == "__main__":
    main()
