"""Probe (device run): the shapes where the memory-bound benchmark's default trails Triton by
1-2% on this GPU, and neighbours of them the defaults were not fitted to. Every candidate of
the tuner's space (compiled in parallel first) is checked against the float64 reference and
timed once; then the six fastest, the default and Triton's kernel are timed in three
interleaved rounds (median microseconds, ratio to Triton).

    python scripts/probe_gaps.py [names to keep, e.g. softmax-8192x4096]
    python scripts/probe_gaps.py softmax16:4096x16384 rmsnorm:8192x16384 ...   (these cases only)
"""
import dataclasses
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from benchmarks import triton_peers  # noqa: E402
from benchmarks.bench_memory import LAYERNORM16_TDSL  # noqa: E402
from benchmarks.common import copy_bandwidth  # noqa: E402
from row_probe import fastest_candidates, interleaved, prepare, report_interleaved  # noqa: E402
from tiledsl.runtime.launcher import hbm_bandwidth  # noqa: E402

SOURCES = {"softmax": "examples/softmax.tdsl", "rmsnorm": "examples/rmsnorm.tdsl",
           "layernorm": "examples/layernorm.tdsl",
           "layernorm16": LAYERNORM16_TDSL,
           "layernormallbf16": LAYERNORM16_TDSL.replace("f16", "bf16"),
           "layernormbf16": open("examples/layernorm.tdsl").read().replace("f16", "bf16"),
           "layernorm32": open("examples/layernorm.tdsl").read().replace("f16", "f32"),
           "softmax16": open("examples/softmax.tdsl").read().replace("f32[M, N]", "f16[M, N]"),
           "softmaxbf16": open("examples/softmax.tdsl").read().replace("f32[M, N]", "bf16[M, N]")}
SHAPES = {"softmax": [(8192, 4096), (12288, 4096), (8192, 5120), (32768, 781), (32768, 800), (20000, 781)],
          "rmsnorm": [(4096, 8192), (3072, 8192), (4096, 7168), (6144, 8192)]}
TOLERANCE = {"softmax": 1e-5, "rmsnorm": 2e-3, "layernorm": 2e-3, "layernorm16": 2e-3, "layernormbf16": 1e-2,
             "layernormallbf16": 1e-2, "layernorm32": 1e-5, "softmax16": 2e-3,
             "softmaxbf16": 1e-2}


def triton_call(name, case):
    x = torch.from_dlpack(case.sets[0][0])
    out = torch.empty_like(x)
    xs = [torch.from_dlpack(s[0]) for s in case.sets]
    if name.startswith("softmax"):
        return lambda i: triton_peers.softmax(xs[i], out=out)
    ws = [torch.from_dlpack(s[1]) for s in case.sets]
    if name == "rmsnorm":
        return lambda i: triton_peers.rmsnorm(xs[i], ws[i], 1e-6, out=out)
    bs = [torch.from_dlpack(s[2]) for s in case.sets]
    return lambda i: triton_peers.layernorm(xs[i], ws[i], bs[i], 1e-5, out=out)


def main() -> None:
    named = [a.split(":") for a in sys.argv[1:] if ":" in a]
    only = [a for a in sys.argv[1:] if ":" not in a]
    cases = [(name, (m, n)) for name, shapes in SHAPES.items() for m, n in shapes]
    if named:
        cases = [(name, tuple(int(v) for v in mn.split("x"))) for name, mn in named]
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s  HBM peak {hbm_bandwidth(0):.0f} GB/s", flush=True)
    for name, (m, n) in cases:
        label = f"{name}-{m}x{n}"
        if only and not any(o in label for o in only):
            continue
        case = prepare(name, SOURCES[name], dict(M=m, N=n))
        k = case.kernel
        default, keep = fastest_candidates(case, 6, TOLERANCE[name])
        if default not in keep:
            keep.append(default)
        if default.blocks_per_sm:     # a persistent default: its grid at half and twice its blocks an SM
            for per_sm in (default.blocks_per_sm // 2, default.blocks_per_sm * 2):
                other = dataclasses.replace(default, blocks_per_sm=per_sm)
                if per_sm and other not in keep:
                    keep.append(other)
        plain = lambda i: k(*case.sets[i], out=case.out)   # noqa: E731
        runs = {f"{s.tag} ps{s.blocks_per_sm}": (k._launcher, {0: s}, plain, len(case.sets)) for s in keep}
        runs["triton"] = (None, None, triton_call(name, case), len(case.sets))
        default_label = f"{default.tag} ps{default.blocks_per_sm}"
        report_interleaved(label, case.nbytes, copy, interleaved(runs), default_label, against="triton")

if __name__ == "__main__":
    main()
