"""Probe (device run): row kernels with one 16-byte vector per thread (a row's
threads = its vectors, up to 1024), registers budgeted for 1024 or all 2048
threads, weights hoisted or loaded late, against the default schedule and
Triton's kernel; three interleaved rounds at every benchmark row shape
(BENCHMARKS.md, "Summary").

    python scripts/probe_onevec.py [REGEX over "name MxN"]
"""
import os
import re
import sys
from dataclasses import replace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
os.chdir(ROOT)

import cupy  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import tiledsl  # noqa: E402
import triton_peers as T  # noqa: E402
from benchmarks.bench_memory import LAYERNORM16_TDSL  # noqa: E402
from benchmarks.common import input_sets_needed, time_cuda  # noqa: E402
from tiledsl.inputs import TOLERANCE, random_arguments, relative_error  # noqa: E402
from tiledsl.runtime.launcher import hbm_bandwidth, set_overrides  # noqa: E402
from tiledsl.schedule.choose import default  # noqa: E402
from tiledsl.schedule.problem import problem  # noqa: E402

def read(name: str) -> str:
    with open(f"examples/{name}.tdsl") as f:
        return f.read()


NORM_SHAPES = [(16384, 4096), (65536, 1024), (4096, 8192)]
CASES = ([("softmax", read("softmax"), m, n, lambda a, o: T.softmax(a[0], out=o))
          for m, n in ((16384, 1024), (8192, 4096), (4096, 16384), (32768, 781))]
         + [(name, src, m, n, lambda a, o: T.layernorm(a[0], a[1], a[2], 1e-5, out=o))
            for name, src in (("layernorm", read("layernorm")), ("ln16", LAYERNORM16_TDSL)) for m, n in NORM_SHAPES]
         + [("rmsnorm", read("rmsnorm"), m, n, lambda a, o: T.rmsnorm(a[0], a[1], 1e-6, out=o))
            for m, n in NORM_SHAPES])


def one_vector_variants(name: str, base, n: int) -> list:
    """The default, then a thread per 16-byte vector of the row (up to 1024 threads),
    registers for 1024 threads or all 2048, weights hoisted or (norms) late."""
    rvec = -(-n // base.vec)
    tpr = min(1024, 1 << (rvec - 1).bit_length())
    out = [base]
    if base.vec > 1 and base.items:
        for hoist in (True, False) if name != "softmax" else (True,):
            for min_blocks in (1, 2048 // tpr):
                out.append(replace(base, block=tpr, row_threads=tpr, items=max(1, -(-rvec // tpr)), hoist=hoist,
                                   keep=False, prefetch=False, blocks_per_sm=0, min_blocks=min_blocks, stages=1))
    return list(dict.fromkeys(out))


def main() -> None:
    only = sys.argv[1] if len(sys.argv) > 1 else ""
    sm_count = cupy.cuda.runtime.deviceGetAttribute(16, 0)     # cudaDevAttrMultiProcessorCount
    for name, src, m, n, triton_fn in CASES:
        if only and not re.search(only, f"{name} {m}x{n}"):
            continue
        k = tiledsl.compile(src)
        host = random_arguments(k.graph, dict(M=m, N=n))
        want = k.reference(*host, compute="f64")
        nbytes = sum(a.nbytes for a in host if isinstance(a, np.ndarray)) + m * n * host[0].dtype.itemsize
        n_sets = input_sets_needed(nbytes)
        sets = [[cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in host] for _ in range(n_sets)]
        out = k(*sets[0])
        launcher = k._launcher
        p = problem(launcher.groups[0], launcher.layouts[0], dict(M=m, N=n), frozenset(), sm_count, "sm_90a",
                    hbm_bandwidth(0))
        base = default(p, k.hints)
        tolerance = TOLERANCE[k.graph.results[0].dtype.name]
        correct = []
        for s in one_vector_variants(name, base, n):
            set_overrides(launcher, {0: s})
            out[...] = float("nan")         # poisoned: every element must be written
            err = relative_error(cupy.asnumpy(k(*sets[0], out=out)), want)
            if err <= tolerance:
                correct.append(s)
            else:
                print(f"  WRONG {s.tag}: relative error {err:.1e}")
        torch_sets = [[torch.from_dlpack(a) if isinstance(a, cupy.ndarray) else a for a in s] for s in sets]
        torch_out = torch.from_dlpack(out)
        times: dict = {}
        for _ in range(3):      # rounds interleave every implementation
            times.setdefault("triton", []).append(time_cuda(
                lambda i: triton_fn(torch_sets[i], torch_out), n_sets=n_sets, repeats=30, warmup_ms=60).median_us)
            for s in correct:
                set_overrides(launcher, {0: s})
                label = f"{s.tag} ps{s.blocks_per_sm}" + (" (default)" if s == base else "")
                times.setdefault(label, []).append(time_cuda(
                    lambda i: k(*sets[i], out=out), n_sets=n_sets, repeats=30, warmup_ms=60).median_us)
        set_overrides(launcher, {})
        print(f"## {name} {m}x{n}", flush=True)
        for label, ts in sorted(times.items(), key=lambda kv: np.median(kv[1])):
            print(f"  {np.median(ts):7.1f} us (min {min(ts):7.1f})  {label}", flush=True)


if __name__ == "__main__":
    main()
