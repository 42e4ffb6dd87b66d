"""Probe (device run): norms of NCHW activations, whose reductions skip a dim in the middle
(batch-norm statistics and their application over (B, H, W) keeping C, and a global average
pool over (H, W)). Each default, and each of the tuner's candidates for its group, checked
against float64 and timed (CUDA events, inputs rotated, three interleaved rounds, median µs)
beside torch and a copy of the same bytes.

    python scripts/probe_nchw.py [--candidates]
"""
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import ran_schedules, time_cuda  # noqa: E402
from tiledsl.inputs import random_arguments, relative_error  # noqa: E402
from tiledsl.runtime import launcher_for  # noqa: E402
from tiledsl.runtime.launcher import _sm_count, device_arch, set_overrides  # noqa: E402
from tiledsl.schedule.choose import candidates  # noqa: E402
from tiledsl.schedule.layout import plan_layout  # noqa: E402
from tiledsl.schedule.partition import partition  # noqa: E402
from tiledsl.schedule.problem import problem  # noqa: E402

STATS = ("kernel s(x: {t}[B, C, H, W]) -> (f32[C], f32[C]) {{\n    mu = mean(f32(x), axis=(B, H, W))\n"
         "    d = f32(x) - mu\n    return mu, mean(d * d, axis=(B, H, W))\n}}")
APPLY = ("kernel a(x: {t}[B, C, H, W], g: f32[C], b: f32[C]) -> {t}[B, C, H, W] {{\n"
         "    mu = mean(f32(x), axis=(B, H, W))\n    d = f32(x) - mu\n"
         "    return {t}(d * rsqrt(mean(d * d, axis=(B, H, W)) + 1e-5) * g + b)\n}}")
POOL = "kernel p(x: {t}[B, C, H, W]) -> f32[B, C] {{\n    return mean(f32(x), axis=(H, W))\n}}"
SHAPES = [dict(B=32, C=256, H=56, W=56), dict(B=32, C=64, H=112, W=112), dict(B=128, C=512, H=14, W=14)]
CASES = [(f"{kind} {t} {s['B']}x{s['C']}x{s['H']}x{s['W']}", src.format(t=t), s, kind, t)
         for s in SHAPES for t in ("f32", "f16") for kind, src in (("stats", STATS), ("apply", APPLY), ("pool", POOL))]
TORCH = {"float32": torch.float32, "float16": torch.float16}


def torch_call(kind, args):
    x = torch.as_tensor(args[0], device="cuda")
    if kind == "stats":
        return lambda: torch.var_mean(x.float(), dim=(0, 2, 3), unbiased=False) if x.dtype != torch.float32 \
            else torch.var_mean(x, dim=(0, 2, 3), unbiased=False)
    if kind == "apply":
        g, b = torch.as_tensor(args[1], device="cuda"), torch.as_tensor(args[2], device="cuda")
        return lambda: F.batch_norm(x, None, None, g.to(x.dtype), b.to(x.dtype), training=True, eps=1e-5)
    return lambda: x.float().mean(dim=(2, 3)) if x.dtype != torch.float32 else x.mean(dim=(2, 3))


def main() -> None:
    with_candidates = "--candidates" in sys.argv
    keep = [a for a in sys.argv[1:] if not a.startswith("--")]
    arch, sms = device_arch(0), _sm_count(0)
    for name, src, extents, kind, t in CASES:
        if keep and not any(k in name for k in keep):
            continue
        k = tiledsl.compile(src)
        host = [random_arguments(k.graph, extents, seed=s) for s in (1, 2, 3)]
        sets = [[cp.asarray(a) if isinstance(a, np.ndarray) else a for a in h] for h in host]
        want = k.reference(*host[0], compute="f64")
        want = want if isinstance(want, tuple) else (want,)
        variants = [("default", None)]
        if with_candidates:
            [group] = partition(k.graph)
            p = problem(group, plan_layout(group, k.graph), extents, frozenset(), sms, arch)
            variants += [(c.tag, c) for c in candidates(p, k.hints)]
        nbytes = sum(a.nbytes for a in sets[0] if hasattr(a, "nbytes")) + sum(
            int(np.prod([extents[d] for d in r.dims])) * r.dtype.itemsize for r in k.graph.results)
        src_copy = [cp.empty(nbytes // 2, cp.uint8) for _ in range(3)]
        dst_copy = [cp.empty(nbytes // 2, cp.uint8) for _ in range(3)]
        timed = {}
        runs = []
        for tag, s in variants:
            kk = tiledsl.compile(src)
            if s is not None:
                kk._launcher = launcher_for(kk)
                set_overrides(kk._launcher, {0: s})
            try:
                got = kk(*sets[0])
                cp.cuda.runtime.deviceSynchronize()
            except Exception as err:  # noqa: BLE001
                print(f"  {name} {tag}: {type(err).__name__}: {str(err)[:120]}", flush=True)
                continue
            got = got if isinstance(got, tuple) else (got,)
            err = max(relative_error(cp.asarray(g).get().astype(np.float64), np.asarray(w, np.float64))
                      for g, w in zip(got, want))
            outs = got
            runs.append((tag, lambda i, kk=kk, o=outs: kk(*sets[i], out=o if len(o) > 1 else o[0]), err, kk))
        tx = torch_call(kind, host[0])
        runs.append(("torch", lambda i: tx(), 0.0, None))
        runs.append(("copy of the same bytes", lambda i: dst_copy[i].data.copy_from_device_async(
            src_copy[i].data, nbytes // 2), 0.0, None))
        for _ in range(3):
            for tag, fn, _, _ in runs:
                timed.setdefault(tag, []).append(time_cuda(fn, n_sets=3, repeats=20, warmup_ms=20).median_us)
        copy_us = statistics.median(timed["copy of the same bytes"])
        print(f"{name}: {nbytes / 1e6:.0f} MB, copy of the same bytes {copy_us:.1f} us", flush=True)
        for tag, _, err, kk in runs[:-1]:
            us = statistics.median(timed[tag])
            extra = f"err {err:.1e}  {ran_schedules(kk)}" if kk is not None else ""
            print(f"  {us:8.1f} us  x{copy_us / us:4.2f} copy  {tag}  {extra}", flush=True)


if __name__ == "__main__":
    main()
