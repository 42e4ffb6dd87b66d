"""Probe (device run): why Triton's column sums (benchmarks/triton_peers.py) beat tiledsl's on
narrow columns (1M rows of 64 or 128 columns). Times Triton's kernel at fixed tiles with 1 to 4
pipeline stages, prints what its PTX loads with (ld.global vectors, cp.async), and times
tiledsl's default beside them; three interleaved rounds, median microseconds.

    python scripts/probe_triton_cols.py
"""
import os
import re
import statistics
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks import triton_peers as tp  # noqa: E402
from benchmarks.common import copy_bandwidth, time_cuda  # noqa: E402

SRC = "kernel f(x: {t}[M, N]) -> f32[N] {{ return sum(x, axis=M) }}"
CASES = [("f16", 1 << 20, 64, [(16, 64, 4, 8), (64, 64, 4, 8), (32, 64, 2, 8)]),
         ("f16", 1 << 20, 128, [(64, 128, 4, 8), (32, 128, 4, 4), (64, 128, 2, 8)]),
         ("f32", 1 << 20, 64, [(64, 64, 4, 8), (32, 64, 4, 8)])]
TORCH = {"f16": torch.float16, "f32": torch.float32}


def ptx_loads(ptx: str) -> str:
    ops = {}
    for m in re.finditer(r"^\s*(@%p\d+\s+)?((ld\.global|cp\.async|ldmatrix|ld\.shared)[\w.]*)", ptx, re.M):
        ops[m.group(2)] = ops.get(m.group(2), 0) + 1
    return ", ".join(f"{k} x{v}" for k, v in sorted(ops.items()))


def main() -> None:
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    for dt, m, n, tiles in CASES:
        xs = [torch.randn(m, n, device="cuda").to(TORCH[dt]) + 0.5 for _ in range(3)]
        want = xs[0].double().sum(0)
        out = torch.empty(n, device="cuda", dtype=torch.float32)
        calls = {}
        for bm, bn, waves, nw in tiles:
            for stages in (1, 2, 3, 4):
                tn = triton.cdiv(n, bn)
                grid = (tn, max(1, min(triton.cdiv(m, bm), triton.cdiv(waves * sms, tn))))

                def call(i, bm=bm, bn=bn, waves=waves, nw=nw, stages=stages, grid=grid):
                    out.zero_()
                    return tp._column_sum_kernel[grid](xs[i], out, m, n, n, BLOCK_M=bm, BLOCK_N=bn, WAVES=waves,
                                                       num_warps=nw, num_stages=stages)
                compiled = call(0)
                err = ((out.double() - want).norm() / want.norm()).item()
                label = f"triton bm{bm} bn{bn} w{waves} nw{nw} st{stages}"
                print(f"{dt} {m}x{n} {label}: err {err:.1e}; {ptx_loads(compiled.asm['ptx'])}", flush=True)
                calls[label] = call
        k = tiledsl.compile(SRC.format(t=dt))
        cx = [cp.from_dlpack(x) for x in xs]
        co = cp.empty(n, cp.float32)
        k(cx[0], out=co)
        print(f"tiledsl default: {k.schedules if hasattr(k, 'schedules') else ''}", flush=True)
        calls["tiledsl default"] = lambda i: k(cx[i], out=co)
        calls["torch.sum"] = lambda i: xs[i].sum(0, dtype=torch.float32)
        times = {}
        for _ in range(3):
            for label, call in calls.items():
                times.setdefault(label, []).append(time_cuda(call, n_sets=3, repeats=20, warmup_ms=20).median_us)
        nbytes = xs[0].numel() * xs[0].element_size()
        print(f"{dt} {m}x{n} ({nbytes / 2**20:.0f} MiB read):")
        for us, label in sorted((statistics.median(v), label) for label, v in times.items()):
            print(f"  {us:8.1f} us {nbytes / us / 1e3 / copy:5.2f}x copy  {label}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
