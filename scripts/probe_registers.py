"""Probe (CPU or device): this machine's NVRTC version, and the registers and spills of the
default prefetching row kernels of layernorm in five dtype mixes, as the toolchain compiles them
here (cuobjdump's counts; where it is missing, none), each also in the prefetching row's other form
(codegen.cuda.moves_prefetched_rows flipped). The device's NVRTC (13.0 on 2026-11-29) spilled
where a newer one did not.

    python scripts/probe_registers.py
"""
import os
import sys

sys.path.insert(0, os.getcwd())
import tiledsl  # noqa: E402
from tiledsl.codegen import cuda  # noqa: E402
from tiledsl.codegen.cuda import render  # noqa: E402
from tiledsl.runtime import toolchain  # noqa: E402
from tiledsl.schedule.choose import default  # noqa: E402
from tiledsl.schedule.layout import plan_layout  # noqa: E402
from tiledsl.schedule.partition import partition  # noqa: E402
from tiledsl.schedule.problem import problem  # noqa: E402

LN = open("examples/layernorm.tdsl").read()
ALL16 = LN.replace("w: f32[N], b: f32[N]", "w: f16[N], b: f16[N]")
PROGRAMS = {"layernorm": LN, "layernorm_bf16x": LN.replace("f16", "bf16"), "layernorm_f32": LN.replace("f16", "f32"),
            "layernorm_f16": ALL16, "layernorm_bf16": ALL16.replace("f16", "bf16")}


def main() -> None:
    try:
        import cupy
        print("cupy NVRTC", cupy.cuda.nvrtc.getVersion(), "driver", cupy.cuda.runtime.driverGetVersion())
    except ImportError:
        print("no cupy")
    original = cuda.moves_prefetched_rows
    for name, src in PROGRAMS.items():
        k = tiledsl.compile(src)
        g = partition(k.graph)[0]
        lay = plan_layout(g, k.graph)
        for m, n in ((4096, 8192), (4096, 4096), (2048, 6144)):
            s = default(problem(g, lay, dict(M=m, N=n), hbm_gbps=4800.0))
            if not s.prefetch:
                continue
            for flipped in (False, True):
                cuda.moves_prefetched_rows = (lambda rows, weights: not original(rows, weights)) if flipped else original
                ks = render(k.graph, g, lay, s, 1)
                for arch in ("sm_90a", "sm_80"):
                    c = toolchain.compile_cuda(ks.source, arch=arch)
                    moved = "next < nrows ? next : row" in ks.source
                    print(f"{name:16s} {m}x{n} {s.tag:30s} {'moved' if moved else 'straight':8s} {arch}: {c.resources.get(ks.name, 'no counts')}")
    cuda.moves_prefetched_rows = original


if __name__ == "__main__":
    main()
