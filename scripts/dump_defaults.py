"""The default schedules (and grids) of the memory-bound examples and their dtype variants
over a grid of shapes and GPUs, one line a case, with no GPU: to show what a change of the
rules moves, or that a refactor moves nothing.

    python scripts/dump_defaults.py > before.txt     (in the old tree)
    python scripts/dump_defaults.py > after.txt; diff before.txt after.txt

GPUs: 132 SMs with unknown bandwidth (0), an H100's 3352 GB/s and an H200's 4800 GB/s.
"""
import itertools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tiledsl  # noqa: E402
from tiledsl.codegen import groups_for  # noqa: E402
from tiledsl.errors import TdslError  # noqa: E402
from tiledsl.schedule.choose import plan  # noqa: E402
from tiledsl.schedule.problem import problem  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def programs() -> dict[str, str]:
    """name -> source: every example without a matmul, and the row norms' dtype variants."""
    out = {}
    for f in sorted(os.listdir(EXAMPLES)):
        src = open(os.path.join(EXAMPLES, f)).read()
        if f.endswith(".tdsl") and "@" not in src:
            out[f.removesuffix(".tdsl")] = src
    ln, sm = out["layernorm"], out["softmax"]
    out.update({
        "layernorm_f16w": ln.replace("w: f32[N], b: f32[N]", "w: f16[N], b: f16[N]"),
        "layernorm_bf16": ln.replace("f16", "bf16"),
        "layernorm_all_bf16": ln.replace("f16", "bf16").replace("f32[N]", "bf16[N]"),
        "layernorm_f32": ln.replace("f16", "f32"),
        "softmax_f16": sm.replace("f32[M, N]", "f16[M, N]"),
        "softmax_bf16": sm.replace("f32[M, N]", "bf16[M, N]"),
        "rmsnorm_f32": out["rmsnorm"].replace("f16", "f32"),
    })
    return out


ROWS = (1, 7, 64, 132, 300, 529, 700, 1024, 1600, 2048, 3072, 4096, 6144, 8192, 16384, 65536)
LENGTHS = (1, 24, 100, 781, 1024, 2048, 4096, 5120, 6144, 8192, 8200, 10240, 12288, 14336, 16384, 32768,
           65536, 100003, 131072, 262144)     # (the last: rows held or copied by a cluster's blocks)
GBPS = (0.0, 3352.0, 4800.0)


def extents_for(dims, m: int, n: int) -> dict:
    """The program's dims at m x n: the last dim n, the one before it m, any other 1."""
    dims = list(dims)
    sizes = {d: 1 for d in dims}
    if dims:
        sizes[dims[-1]] = n
    if len(dims) > 1:
        sizes[dims[-2]] = m
    return sizes


def main() -> None:
    for name, src in programs().items():
        k = tiledsl.compile(src)
        seen = set()
        for m, n, gbps in itertools.product(ROWS, LENGTHS, GBPS):
            extents = extents_for(k.graph.dims, m, n)
            key = (tuple(sorted(extents.items())), gbps)
            if key in seen:
                continue
            seen.add(key)
            try:
                launches = [launch for group, layout in groups_for(k.graph, extents, 132, "sm_90a")
                            for launch in plan(problem(group, layout, extents, set(), 132, "sm_90a", gbps), k.hints)]
                what = " ".join(f"{launch.schedule.tag}/ps{launch.schedule.blocks_per_sm}/{launch.grid}"
                                for launch in launches)
            except TdslError as e:
                what = f"error: {e}"
            shape = "x".join(str(v) for v in extents.values())
            print(f"{name} {shape} {gbps:.0f}: {what}")


if __name__ == "__main__":
    main()
