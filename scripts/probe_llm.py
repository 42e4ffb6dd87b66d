"""Probe (device run): the memory-bound steps of a language model's layer and of its
training step, fused as people write them, under tiledsl's defaults, against torch
(its fused op where it has one) and a copy of the same bytes: fused residual add and
rmsnorm (vLLM's fused_add_rms_norm), the same with layernorm, SwiGLU's silu(g) * u,
a bias and gelu, a scaled and causally masked softmax of attention scores, a row's
absmax int8 quantization and an Adam step. Each call's every result is poisoned,
computed and checked against the float64 reference first; then the implementations
are timed in interleaved rounds (median µs a call, CUDA events).

    python scripts/probe_llm.py [names to keep]
    LLM_BEFORE=1 python scripts/probe_llm.py [names]   (also each program compiled as before
        2026-12-02 16:00, an output no reduction feeds in a pointwise kernel of its own, and
        before 17:00: every vector read whatever its mask, no chain of element work kept)
"""
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda  # noqa: E402
from tiledsl.inputs import random_arguments, relative_error  # noqa: E402

ADD_RMSNORM = """kernel f(x: bf16[M, N], r: bf16[M, N], w: bf16[N]) -> (bf16[M, N], bf16[M, N]) {
    h = x + r
    return h, h * rsqrt(mean(h * h, axis=N) + 0.000001) * w
}"""
ADD_LAYERNORM = """kernel f(x: bf16[M, N], r: bf16[M, N], w: bf16[N], b: bf16[N]) -> (bf16[M, N], bf16[M, N]) {
    h = x + r
    hc = h - mean(h, axis=N)
    return h, hc * rsqrt(mean(hc * hc, axis=N) + 0.00001) * w + b
}"""
SWIGLU = "kernel f(g: bf16[M, N], u: bf16[M, N]) -> bf16[M, N] { return silu(g) * u }"
BIAS_GELU = "kernel f(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] { return gelu(x + b) }"
MASKED_SOFTMAX = """kernel f(s: f16[B, Q, K], scale: f32 = 0.088388, neg: f32 = -inf) -> f16[B, Q, K] {
    z = where(idx(K) <= idx(Q), s * scale, neg)
    e = exp(z - max(z, axis=K))
    return e / sum(e, axis=K)
}"""
QUANT = """kernel f(x: bf16[M, N]) -> (i8[M, N], f32[M]) {
    scale = max(abs(x), axis=N) / 127
    return i8(x / scale), scale
}"""
ADAM = """kernel f(p: f32[N], g: f32[N], m: f32[N], v: f32[N], lr: f32, b1: f32, b2: f32, c1: f32, c2: f32,
             eps: f32) -> (f32[N], f32[N], f32[N]) {
    m2 = b1 * m + (1 - b1) * g
    v2 = b2 * v + (1 - b2) * g * g
    return p - lr * (m2 / c1) / (sqrt(v2 / c2) + eps), m2, v2
}"""
ADAM_SCALARS = {"lr": 1e-3, "b1": 0.9, "b2": 0.999, "c1": 1 - 0.9 ** 10, "c2": 1 - 0.999 ** 10, "eps": 1e-8}


def torch_peer(name, args):
    """A torch call of the same computation on the case's arguments (torch tensors viewing
    the CuPy arrays), or None where this torch lacks the op."""
    import torch
    import torch.nn.functional as F
    def tensor(a):      # CuPy holds bf16 as 2-byte voids: torch takes their bits
        if a.dtype.kind == "V":
            return torch.as_tensor(a.view("uint16"), device="cuda").view(torch.bfloat16)
        return torch.as_tensor(a, device="cuda")
    t = [tensor(a) if isinstance(a, cp.ndarray) else a for a in args]
    if name.startswith("add rmsnorm"):
        x, r, w = t
        def run():
            h = x + r
            return h, F.rms_norm(h, (h.shape[-1],), w, 1e-6)
        return run
    if name.startswith("add layernorm"):
        x, r, w, b = t
        return lambda: (lambda h: (h, F.layer_norm(h, (h.shape[-1],), w, b, 1e-5)))(x + r)
    if name.startswith("swiglu"):
        g, u = t
        return lambda: F.silu(g) * u
    if name.startswith("bias gelu"):
        x, b = t
        return lambda: F.gelu(x + b)
    if name.startswith("masked softmax"):
        s = t[0]
        q, k = s.shape[-2:]
        mask = torch.ones(q, k, dtype=torch.bool, device="cuda").tril()
        return lambda: torch.softmax((s * t[1]).masked_fill(~mask, float("-inf")), dim=-1)
    if name.startswith("quant"):
        x = t[0]

        def run():
            scale = x.abs().amax(dim=-1).float() / 127
            return (x / scale[:, None]).to(torch.int8), scale
        return run
    if name.startswith("adam"):
        p, g, m, v = (a.clone() for a in t[:4])
        if not hasattr(torch, "_fused_adam_"):
            return None
        step = torch.tensor([10.0], device="cuda")
        return lambda: torch._fused_adam_([p], [g], [m], [v], [], [step], lr=1e-3, beta1=0.9, beta2=0.999,
                                          weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    return None


CASES = [
    ("add rmsnorm bf16", ADD_RMSNORM, {"M": 16384, "N": 4096}),
    ("add rmsnorm bf16", ADD_RMSNORM, {"M": 4096, "N": 8192}),
    ("add layernorm bf16", ADD_LAYERNORM, {"M": 16384, "N": 4096}),
    ("swiglu bf16", SWIGLU, {"M": 8192, "N": 14336}),
    ("bias gelu bf16", BIAS_GELU, {"M": 8192, "N": 16384}),
    ("masked softmax f16", MASKED_SOFTMAX, {"B": 32, "Q": 2048, "K": 2048}),
    ("masked softmax f16", MASKED_SOFTMAX, {"B": 256, "Q": 512, "K": 512}),
    ("masked softmax bf16", MASKED_SOFTMAX.replace("f16", "bf16"), {"B": 8, "Q": 4096, "K": 4096}),
    ("quant int8", QUANT, {"M": 16384, "N": 4096}),
    ("adam f32", ADAM, {"N": 1 << 26}),
]


class Case:
    def __init__(self, name, src, extents, before=False):
        self.name, self.extents = name, extents
        if before:      # a name of its own: kernels are cached by their IR, which has no partition
            from tiledsl.codegen import cuda
            from tiledsl.schedule.partition import _Partitioner
            placed, _Partitioner.rows_reading_its_inputs = _Partitioner.rows_reading_its_inputs, \
                lambda self, out, members, outputs_of: None
            guards, cuda.load_guards = cuda.load_guards, lambda group: {}     # (and before 2026-12-02 17:00:
            chain, cuda.KEPT_CHAIN = cuda.KEPT_CHAIN, 1 << 30                 # every vector read, no chain kept)
            try:
                self.__init__(name, src.replace("kernel f(", "kernel before("), extents)
            finally:
                _Partitioner.rows_reading_its_inputs, cuda.load_guards, cuda.KEPT_CHAIN = placed, guards, chain
            return
        self.kernel = k = tiledsl.compile(src)
        host = random_arguments(k.graph, extents, seed=7)
        for n, p in enumerate(k.graph.params):
            if p.name in ADAM_SCALARS and name.startswith("adam"):
                host[n] = ADAM_SCALARS[p.name]
            if name.startswith("adam") and p.name == "v":
                host[n] = np.abs(host[n])
        want = k.reference(*host, compute="f64")
        self.want = want if isinstance(want, tuple) else (want,)
        outs_bytes = sum(w.size * r.dtype.itemsize for w, r in zip(self.want, k.graph.results))
        self.nbytes = sum(h.nbytes for h in host if isinstance(h, np.ndarray)) + outs_bytes
        dev = [cp.asarray(h) if isinstance(h, np.ndarray) else h for h in host]
        self.sets = [dev] + [[cp.asarray(h) if isinstance(h, np.ndarray) else h for h in host]
                             for _ in range(input_sets_needed(self.nbytes) - 1)]
        got = k(*dev)
        self.outs = got if isinstance(got, tuple) else (got,)
        self.groups = len(k._launcher.groups)

    def check(self) -> float:
        """The worst relative error of the results, every output poisoned first."""
        for o in self.outs:
            o.fill(-1 if o.dtype.kind in "iu" else float("nan"))
        self.call()(0)
        return max(relative_error(cp.asnumpy(o).astype(np.float64), w) for o, w in zip(self.outs, self.want))

    def call(self):
        k, outs = self.kernel, self.outs if len(self.outs) > 1 else self.outs[0]
        return lambda i: k(*self.sets[i], out=outs)

def main() -> None:
    only = sys.argv[1:]
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    cases = []
    for name, src, ext in CASES:
        if only and not any(o in name for o in only):
            continue
        c = Case(name, src, ext)
        err = c.check()
        print(f"{name} {ext}: {c.groups} kernel(s), err {err:.1e}", flush=True)
        c.impls = {"tiledsl": c.call()}
        if os.environ.get("LLM_BEFORE"):
            print("  compiled as before:", flush=True)
            old = Case(name, src, ext, before=True)
            print(f"  before: {old.groups} kernel(s), err {old.check():.1e}", flush=True)
            c.impls["tiledsl before"] = old.call()
        try:
            peer = torch_peer(name, c.sets[0]) if os.environ.get("LLM_TORCH", "1") != "0" else None
        except Exception as e:          # noqa: BLE001 - a peer that cannot run is reported, not fatal
            peer = None
            print(f"  torch: {type(e).__name__}: {e}")
        if peer is not None:
            c.impls["torch"] = lambda i, f=peer: f()
        same = copy_bandwidth(c.nbytes // 2, repeats=10, rotate=True)
        c.same_copy_us = 2 * same["bytes"] / same["gbps"] / 1e3
        cases.append(c)
    times: dict = {}
    for _ in range(3):
        for c in cases:
            for label, fn in c.impls.items():
                t = time_cuda(fn, n_sets=len(c.sets), repeats=20, warmup_ms=20)
                times.setdefault((c.name, str(c.extents), label), []).append(t.median_us)
    for c in cases:
        print(f"{c.name} {'x'.join(map(str, c.extents.values()))} ({c.nbytes / 2**20:.0f} MiB; "
              f"a copy of them {c.same_copy_us:.1f} us, {c.nbytes / c.same_copy_us / 1e3 / copy:.2f}x copy):")
        for label in c.impls:
            us = statistics.median(times[(c.name, str(c.extents), label)])
            print(f"  {label:40s} {us:8.1f} us {c.nbytes / us / 1e3 / copy:5.2f}x copy "
                  f"{c.same_copy_us / us:5.2f}x same copy", flush=True)


if __name__ == "__main__":
    main()
