"""Programs with an index mask (a causal softmax, a lower triangle, a masked row sum),
compiled four ways: as before 2026-12-02 17:00 ("none"), keeping a chain of element work
between phases only ("keep", codegen KEPT_CHAIN), loading only the vectors the mask
needs only ("guard", schedule/guards.py), and both (today's default). Each variant is
checked against the float64 reference with its outputs poisoned, then all are timed in
interleaved rounds (medians of CUDA-event medians) beside torch and a copy of the bytes.

    python scripts/probe_masked.py [names to keep]
"""
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda  # noqa: E402
from tiledsl.codegen import cuda  # noqa: E402
from tiledsl.inputs import random_arguments, relative_error  # noqa: E402

CAUSAL = """kernel f(s: {t}[B, Q, K], scale: f32 = 0.088388, neg: f32 = -inf) -> {t}[B, Q, K] {{
    z = where(idx(K) <= idx(Q), s * scale, neg)
    e = exp(z - max(z, axis=K))
    return e / sum(e, axis=K)
}}"""
TRIL = "kernel f(x: {t}[M, N]) -> {t}[M, N] {{ return where(idx(N) <= idx(M), x, 0.0) }}"
MASKED_SUM = "kernel f(x: {t}[M, N]) -> f32[M] {{ return sum(where(idx(N) <= idx(M), f32(x), 0.0), axis=N) }}"
CASES = [
    ("causal softmax f16", CAUSAL.format(t="f16"), {"B": 32, "Q": 2048, "K": 2048}),
    ("causal softmax f16", CAUSAL.format(t="f16"), {"B": 256, "Q": 512, "K": 512}),
    ("causal softmax bf16", CAUSAL.format(t="bf16"), {"B": 8, "Q": 4096, "K": 4096}),
    ("causal softmax f32", CAUSAL.format(t="f32"), {"B": 16, "Q": 2048, "K": 2048}),
    ("tril f32", TRIL.format(t="f32"), {"M": 16384, "N": 16384}),
    ("masked row sum bf16", MASKED_SUM.format(t="bf16"), {"M": 16384, "N": 8192}),
]
VARIANTS = ("none", "keep", "guard", "both")


class patched:
    """The codegen as `variant` had it, while a kernel's first calls render it."""
    def __init__(self, variant: str):
        self.variant = variant

    def __enter__(self):
        self.saved = cuda.load_guards, cuda.KEPT_CHAIN
        if self.variant in ("none", "keep"):
            cuda.load_guards = lambda group: {}
        if self.variant in ("none", "guard"):
            cuda.KEPT_CHAIN = 1 << 30

    def __exit__(self, *exc):
        cuda.load_guards, cuda.KEPT_CHAIN = self.saved


def torch_peer(name, args):
    import torch
    def tensor(a):
        if a.dtype.kind == "V":
            return torch.as_tensor(a.view("uint16"), device="cuda").view(torch.bfloat16)
        return torch.as_tensor(a, device="cuda")
    t = tensor(args[0])
    if name.startswith("causal"):
        q, k = t.shape[-2:]
        mask = torch.ones(q, k, dtype=torch.bool, device="cuda").tril()
        return lambda: torch.softmax((t * args[1]).masked_fill(~mask, float("-inf")), dim=-1)
    if name.startswith("tril"):
        return lambda: torch.tril(t)
    if name.startswith("masked row sum"):
        return lambda: torch.tril(t).sum(dim=-1, dtype=torch.float32)
    return None


def main() -> None:
    only = sys.argv[1:]
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    rows = []
    for name, src, ext in CASES:
        if only and not any(o in name for o in only):
            continue
        impls = {}
        for variant in VARIANTS:
            k = tiledsl.compile(src.replace("kernel f(", f"kernel {variant}("))   # (kernels are cached by their IR)
            host = random_arguments(k.graph, ext, seed=11)
            want = k.reference(*host, compute="f64")
            nbytes = sum(h.nbytes for h in host if isinstance(h, np.ndarray)) + want.size * k.graph.results[0].dtype.itemsize
            sets = [[cp.asarray(h) if isinstance(h, np.ndarray) else h for h in host]
                    for _ in range(input_sets_needed(nbytes))]
            with patched(variant):
                out = k(*sets[0])
                for one in sets:
                    k(*one, out=out)
            out.fill(float("nan"))
            k(*sets[0], out=out)
            err = relative_error(cp.asnumpy(out).astype(np.float64), want)
            print(f"{name} {ext} {variant}: err {err:.1e}", flush=True)
            impls[variant] = (lambda i, k=k, sets=sets, out=out: k(*sets[i], out=out), len(sets))
        try:
            peer = torch_peer(name, sets[0])
        except Exception as e:          # noqa: BLE001 - reported, not fatal
            peer = None
            print(f"  torch: {type(e).__name__}: {e}")
        if peer is not None:
            impls["torch"] = (lambda i, f=peer: f(), 1)
        same = copy_bandwidth(nbytes // 2, repeats=10, rotate=True)
        rows.append((name, ext, nbytes, 2 * same["bytes"] / same["gbps"] / 1e3, impls))
    times: dict = {}
    for _ in range(3):
        for name, ext, _, _, impls in rows:
            for label, (fn, n_sets) in impls.items():
                t = time_cuda(fn, n_sets=n_sets, repeats=20, warmup_ms=20)
                times.setdefault((name, str(ext), label), []).append(t.median_us)
    for name, ext, nbytes, same_us, impls in rows:
        print(f"{name} {'x'.join(map(str, ext.values()))} ({nbytes / 2**20:.0f} MiB; a copy of them "
              f"{same_us:.1f} us, {nbytes / same_us / 1e3 / copy:.2f}x copy):")
        for label in impls:
            us = statistics.median(times[(name, str(ext), label)])
            print(f"  {label:8s} {us:8.1f} us {nbytes / us / 1e3 / copy:5.2f}x copy {same_us / us:5.2f}x same copy",
                  flush=True)


if __name__ == "__main__":
    main()
