#!/usr/bin/env python
"""Memory-bound workloads: tiledsl against CuPy, torch and Triton, in one run.

    python benchmarks/bench_memory.py --json out.json        # the full run (< 6 min on an H100)
    python benchmarks/bench_memory.py --quick                 # a short smoke run

Prints the device, library versions and date, the measured copy bandwidth, one
markdown table of every workload x implementation (time, GB/s, fraction of copy
bandwidth, speed relative to the best non-tiledsl implementation, relative error
against a float64 computation on the device), then the launch-overhead and
compile-time numbers. --json saves all of it. See benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common as C  # noqa: E402

C.ensure_repo_on_path()

# ---- the tiledsl programs ------------------------------------------------------------------
FUSED_RELU_TDSL = """
kernel fused_relu(x: f32[N], y: f32[N], s: f32, bias: f32[N]) -> f32[N] {
    return relu((x + y) * s + bias)
}
"""
CHAIN5_TDSL = """
kernel chain5(x: f32[M, N]) -> f32[M, N] {
    return sigmoid(relu((x + 1.0) * 2.0) - 0.5)
}
"""
SOFTMAX_TDSL = (C.EXAMPLES / "softmax.tdsl").read_text()       # f32[M, N] -> f32[M, N]
LAYERNORM_TDSL = (C.EXAMPLES / "layernorm.tdsl").read_text()   # f16 x, f32 w/b, eps 1e-5 -> f16
# all f16, as in a half-precision model (torch's .half(), Triton's layer-norm tutorial)
LAYERNORM16_TDSL = LAYERNORM_TDSL.replace("w: f32[N], b: f32[N]", "w: f16[N], b: f16[N]")
assert LAYERNORM16_TDSL != LAYERNORM_TDSL
LN16 = "layernorm (w, b f16)"
RMSNORM_TDSL = (C.EXAMPLES / "rmsnorm.tdsl").read_text()       # f16 x, f16 w, eps 1e-6 -> f16
COLUMN_SUM_TDSL = (C.EXAMPLES / "column_sum.tdsl").read_text()  # f32[M, N] -> f32[N], sum over M
COLUMN_SUM16_TDSL = COLUMN_SUM_TDSL.replace("x: f32[M, N]", "x: f16[M, N]")
assert COLUMN_SUM16_TDSL != COLUMN_SUM_TDSL
COLSUM, COLSUM16 = "column sum", "column sum (x f16)"

LN_EPS = 1e-5
RMS_EPS = 1e-6

FULL_SHAPES = {
    "relu((x+y)*s+bias)": [(64 << 20,)],
    "sigmoid(relu((x+1)*2)-0.5)": [(16384, 4096)],
    # short rows (several a warp) last: 2^21 x 8 and 2^18 x 64
    "softmax": [(16384, 1024), (8192, 4096), (4096, 16384), (32768, 781), (2097152, 8), (262144, 64)],
    "layernorm": [(16384, 4096), (65536, 1024), (4096, 8192)],
    LN16: [(16384, 4096), (65536, 1024), (4096, 8192)],
    "rmsnorm": [(16384, 4096), (65536, 1024), (4096, 8192), (524288, 64)],
    # reductions across memory: a bias's gradient, a batch's statistics (the result keeps N)
    COLSUM: [(16384, 4096)],
    COLSUM16: [(16384, 4096), (65536, 768), (1048576, 128), (1024, 65536)],
}
QUICK_SHAPES = {
    "relu((x+y)*s+bias)": [(16 << 20,)],
    "sigmoid(relu((x+1)*2)-0.5)": [(4096, 4096)],
    "softmax": [(8192, 4096), (32768, 781)],
    "layernorm": [(16384, 4096)],
    LN16: [(4096, 8192)],
    "rmsnorm": [(16384, 4096)],
    COLSUM16: [(16384, 4096)],
}


class NotApplicable(Exception):
    """This implementation does not exist for this workload (shown as n/a)."""


@dataclass
class Family:
    name: str
    dtype: str               # for the table
    out_dtype: str           # tiledsl dtype name of the result, for the tolerance
    make: Callable           # (cupy, rs, shape) -> dict of inputs (cupy arrays and scalars)
    order: tuple             # argument order of the tiledsl kernel
    out: Callable            # (cupy, inputs) -> (shape, numpy dtype) of the result
    ref64: Callable          # (cupy, inputs) -> float64 cupy result
    impls: list              # [(name, builder)]; builder(ctx, inputs) -> zero-arg runner


class Ctx:
    """What the builders need: the libraries and the compiled tiledsl kernels."""

    def __init__(self, cupy, torch, peers, kernels: dict):
        self.cupy, self.torch, self.peers, self.kernels = cupy, torch, peers, kernels
        self.notes: dict = {}          # per implementation row, filled by builders
        self._cache: dict = {}

    def t(self, a):
        """A CuPy array as a torch tensor (zero copy); scalars pass through."""
        if self.torch is None:
            raise NotApplicable("torch with CUDA not available")
        if isinstance(a, (int, float)):
            return a
        return self.torch.from_dlpack(a)

    def once(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]


# ---- builders shared by all families ---------------------------------------------------------


def tiledsl_builder(kernel_key: str, family_ref: list):
    def build(ctx: Ctx, inp: dict):
        k = ctx.kernels.get(kernel_key)
        if isinstance(k, Exception):
            raise k
        fam = family_ref[0]
        args = [inp[a] for a in fam.order]
        shape, dtype = fam.out(ctx.cupy, inp)
        out = ctx.cupy.empty(shape, dtype=dtype)
        k(*args, out=out)
        ctx.notes["schedule"] = C.ran_schedules(k)

        def run():
            k(*args, out=out)
            return out
        return run
    return build


def triton_builder(fn_name: str, arg_names: tuple, result=None, note="", **kw):
    """A Triton peer of triton_peers.py; `result(torch, args)` allocates its output (else one
    like the first argument). `note` is a string, or `note(peers, args)` asked after a first call."""
    def build(ctx: Ctx, inp: dict):
        if ctx.peers is None:
            raise NotApplicable("Triton peers not importable")
        ok, why = ctx.peers.available()
        if not ok:
            raise NotApplicable(why)
        fn = getattr(ctx.peers, fn_name)
        args = [ctx.t(inp[a]) for a in arg_names]
        out = result(ctx.torch, args) if result else ctx.torch.empty_like(args[0])
        said = note
        if callable(note):      # a note about the first call (a pick it made, say): make it now, untimed
            fn(*args, out=out, **kw)
            said = note(ctx.peers, args)
        if said:
            ctx.notes["triton"] = said
        return lambda: fn(*args, out=out, **kw)
    return build


def na(reason: str):
    def build(ctx, inp):
        raise NotApplicable(reason)
    return build


# ---- pointwise: relu((x + y) * s + bias) ---------------------------------------------------


def _make_relu(cp, rs, shape):
    n = shape[0]
    return {"x": rs.standard_normal(n, dtype=cp.float32), "y": rs.standard_normal(n, dtype=cp.float32),
            "s": 1.5, "bias": rs.standard_normal(n, dtype=cp.float32)}


def _ref_relu(cp, inp):
    x, y, b = (inp[k].astype(cp.float64) for k in ("x", "y", "bias"))
    return cp.maximum((x + y) * inp["s"] + b, 0.0)


def _relu_cupy(ctx, inp):
    cp, s = ctx.cupy, ctx.cupy.float32(inp["s"])
    x, y, b = inp["x"], inp["y"], inp["bias"]
    return lambda: cp.maximum((x + y) * s + b, cp.float32(0))


def _relu_ek(ctx, inp):
    cp = ctx.cupy
    ek = ctx.once("relu_ek", lambda: cp.ElementwiseKernel(
        "float32 x, float32 y, float32 s, float32 b", "float32 z",
        "z = fmaxf((x + y) * s + b, 0.0f)", "bench_fused_relu"))
    x, y, b, s = inp["x"], inp["y"], inp["bias"], cp.float32(inp["s"])
    out = cp.empty_like(x)
    return lambda: ek(x, y, s, b, out)


def _relu_fuse(ctx, inp):
    cp = ctx.cupy

    def make():
        @cp.fuse(kernel_name="bench_fuse_relu")
        def f(x, y, s, b):
            return cp.maximum((x + y) * s + b, 0)
        return f
    f = ctx.once("relu_fuse", make)
    x, y, b, s = inp["x"], inp["y"], inp["bias"], cp.float32(inp["s"])
    return lambda: f(x, y, s, b)


def _relu_torch(ctx, inp):
    torch = ctx.torch
    if torch is None:
        raise NotApplicable("torch with CUDA not available")
    x, y, b, s = ctx.t(inp["x"]), ctx.t(inp["y"]), ctx.t(inp["bias"]), inp["s"]
    return lambda: torch.relu((x + y) * s + b)


# ---- pointwise: sigmoid(relu((x + 1) * 2) - 0.5) --------------------------------------------


def _make_chain(cp, rs, shape):
    return {"x": rs.standard_normal(shape, dtype=cp.float32)}


def _ref_chain(cp, inp):
    x = inp["x"].astype(cp.float64)
    return 1.0 / (1.0 + cp.exp(-(cp.maximum((x + 1.0) * 2.0, 0.0) - 0.5)))


def _chain_cupy(ctx, inp):
    cp, x = ctx.cupy, inp["x"]

    def run():
        t = (x + 1) * 2
        t = cp.maximum(t, 0)
        t = t - 0.5
        return 1 / (1 + cp.exp(-t))
    return run


def _chain_ek(ctx, inp):
    cp = ctx.cupy
    ek = ctx.once("chain_ek", lambda: cp.ElementwiseKernel(
        "float32 x", "float32 z",
        "float v = fmaxf((x + 1.0f) * 2.0f, 0.0f) - 0.5f; z = 1.0f / (1.0f + expf(-v))",
        "bench_chain5"))
    x = inp["x"]
    out = cp.empty_like(x)
    return lambda: ek(x, out)


def _chain_fuse(ctx, inp):
    cp = ctx.cupy

    def make():
        @cp.fuse(kernel_name="bench_fuse_chain5")
        def f(x):
            return 1 / (1 + cp.exp(-(cp.maximum((x + 1) * 2, 0) - 0.5)))
        return f
    f = ctx.once("chain_fuse", make)
    x = inp["x"]
    return lambda: f(x)


def _chain_torch(ctx, inp):
    torch = ctx.torch
    if torch is None:
        raise NotApplicable("torch with CUDA not available")
    x = ctx.t(inp["x"])
    return lambda: torch.sigmoid(torch.relu((x + 1) * 2) - 0.5)


# ---- softmax (f32) ---------------------------------------------------------------------------


def _make_softmax(cp, rs, shape):
    return {"x": rs.standard_normal(shape, dtype=cp.float32) * cp.float32(2)}


def _ref_softmax(cp, inp):
    x = inp["x"].astype(cp.float64)
    e = cp.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_cupy(ctx, inp):
    cp, x = ctx.cupy, inp["x"]

    def run():
        e = cp.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return run


def _softmax_kernels(ctx, inp):
    cp = ctx.cupy
    sumexp = ctx.once("softmax_sumexp", lambda: cp.ReductionKernel(
        "float32 x, float32 m", "float32 s", "expf(x - m)", "a + b", "s = a", "0",
        "bench_softmax_sumexp"))
    div = ctx.once("softmax_div", lambda: cp.ElementwiseKernel(
        "float32 x, float32 m, float32 s", "float32 y", "y = expf(x - m) / s", "bench_softmax_div"))
    x = inp["x"]
    out = cp.empty_like(x)

    def run():
        m = x.max(axis=1, keepdims=True)
        s = sumexp(x, m, axis=1, keepdims=True)
        return div(x, m, s, out)
    return run


def _softmax_torch(ctx, inp):
    torch = ctx.torch
    if torch is None:
        raise NotApplicable("torch with CUDA not available")
    x = ctx.t(inp["x"])
    return lambda: torch.softmax(x, dim=1)


# ---- layernorm (f16 x, f32 w/b) --------------------------------------------------------------


def _make_layernorm(cp, rs, shape, weights="float32"):
    m, n = shape
    return {"x": (rs.standard_normal(shape, dtype=cp.float32) + cp.float32(0.5)).astype(cp.float16),
            "w": rs.standard_normal(n, dtype=cp.float32).astype(weights),
            "b": rs.standard_normal(n, dtype=cp.float32).astype(weights)}


def _make_layernorm16(cp, rs, shape):
    return _make_layernorm(cp, rs, shape, "float16")


def _ref_layernorm(cp, inp):
    x = inp["x"].astype(cp.float64)
    mu = x.mean(axis=1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(axis=1, keepdims=True)
    return xc / cp.sqrt(var + LN_EPS) * inp["w"].astype(cp.float64) + inp["b"].astype(cp.float64)


def _layernorm_cupy(ctx, inp):
    cp = ctx.cupy
    x, w, b = inp["x"], inp["w"], inp["b"]

    def run():
        xf = x.astype(cp.float32)
        mu = xf.mean(axis=1, keepdims=True)
        xc = xf - mu
        var = (xc * xc).mean(axis=1, keepdims=True)
        return (xc * (1 / cp.sqrt(var + cp.float32(LN_EPS))) * w + b).astype(cp.float16)
    return run


def _layernorm_kernels(ctx, inp):
    cp = ctx.cupy
    rsum = ctx.once("ln_sum", lambda: cp.ReductionKernel(
        "T x", "float32 y", "static_cast<float>(x)", "a + b", "y = a", "0", "bench_ln_sum"))
    rsq = ctx.once("ln_sqdev", lambda: cp.ReductionKernel(
        "T x, float32 mu", "float32 y",
        "(static_cast<float>(x) - mu) * (static_cast<float>(x) - mu)", "a + b", "y = a", "0",
        "bench_ln_sqdev"))
    apply = ctx.once("ln_apply", lambda: cp.ElementwiseKernel(
        "T x, float32 mu, float32 var, W w, W b, float32 eps", "T y",
        "y = (T)((static_cast<float>(x) - mu) * rsqrtf(var + eps) * static_cast<float>(w) "
        "+ static_cast<float>(b))", "bench_ln_apply"))
    x, w, b = inp["x"], inp["w"], inp["b"]
    inv_n = cp.float32(1.0 / x.shape[1])
    eps = cp.float32(LN_EPS)
    out = cp.empty_like(x)

    def run():
        mu = rsum(x, axis=1, keepdims=True) * inv_n
        var = rsq(x, mu, axis=1, keepdims=True) * inv_n
        return apply(x, mu, var, w, b, eps, out)
    return run


def _layernorm_torch(ctx, inp):
    torch = ctx.torch
    if torch is None:
        raise NotApplicable("torch with CUDA not available")
    F = torch.nn.functional
    x, w, b = ctx.t(inp["x"]), ctx.t(inp["w"]), ctx.t(inp["b"])
    n = x.shape[1]
    try:                                  # f16 input with f32 weights, as tiledsl's example
        F.layer_norm(x[:1], (n,), w, b, LN_EPS)
    except RuntimeError:                  # this torch wants matching dtypes: f16 weights
        w, b = w.half(), b.half()
        ctx.notes["torch-ln"] = "torch: f16 weights (no mixed-dtype layer_norm)"
    return lambda: F.layer_norm(x, (n,), w, b, LN_EPS)


# ---- rmsnorm (f16 x, f16 w) ------------------------------------------------------------------


def _make_rmsnorm(cp, rs, shape):
    m, n = shape
    return {"x": rs.standard_normal(shape, dtype=cp.float32).astype(cp.float16),
            "w": rs.standard_normal(n, dtype=cp.float32).astype(cp.float16)}


def _ref_rmsnorm(cp, inp):
    x = inp["x"].astype(cp.float64)
    ms = (x * x).mean(axis=1, keepdims=True)
    return x / cp.sqrt(ms + RMS_EPS) * inp["w"].astype(cp.float64)


def _rmsnorm_cupy(ctx, inp):
    cp = ctx.cupy
    x, w = inp["x"], inp["w"]

    def run():
        xf = x.astype(cp.float32)
        ms = (xf * xf).mean(axis=1, keepdims=True)
        return (xf * (1 / cp.sqrt(ms + cp.float32(RMS_EPS))) * w).astype(cp.float16)
    return run


def _rmsnorm_kernels(ctx, inp):
    cp = ctx.cupy
    rsq = ctx.once("rms_sumsq", lambda: cp.ReductionKernel(
        "T x", "float32 y", "static_cast<float>(x) * static_cast<float>(x)", "a + b", "y = a", "0",
        "bench_rms_sumsq"))
    apply = ctx.once("rms_apply", lambda: cp.ElementwiseKernel(
        "T x, float32 ss, T w, float32 inv_n, float32 eps", "T y",
        "y = (T)(static_cast<float>(x) * rsqrtf(ss * inv_n + eps) * static_cast<float>(w))",
        "bench_rms_apply"))
    x, w = inp["x"], inp["w"]
    inv_n = cp.float32(1.0 / x.shape[1])
    eps = cp.float32(RMS_EPS)
    out = cp.empty_like(x)

    def run():
        ss = rsq(x, axis=1, keepdims=True)
        return apply(x, ss, w, inv_n, eps, out)
    return run


def _rmsnorm_torch(ctx, inp):
    torch = ctx.torch
    if torch is None:
        raise NotApplicable("torch with CUDA not available")
    F = torch.nn.functional
    x, w = ctx.t(inp["x"]), ctx.t(inp["w"])
    n = x.shape[1]
    if hasattr(F, "rms_norm"):
        return lambda: F.rms_norm(x, (n,), w, RMS_EPS)
    ctx.notes["torch-rms"] = "torch: no F.rms_norm, unfused ops"

    def run():
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(dim=1, keepdim=True) + RMS_EPS) * w).half()
    return run


# ---- column sums (x f32 or f16, sums f32) -------------------------------------------------------


def _make_column_sum(dtype):
    def make(cp, rs, shape):
        return {"x": (rs.standard_normal(shape, dtype=cp.float32) + cp.float32(0.5)).astype(dtype)}
    return make


def _ref_column_sum(cp, inp):
    return inp["x"].astype(cp.float64).sum(axis=0)


def _column_sum_cupy(ctx, inp):
    cp, x = ctx.cupy, inp["x"]
    out = cp.empty(x.shape[1], dtype=cp.float32)
    return lambda: cp.sum(x, axis=0, dtype=cp.float32, out=out)


def _column_sum_note(peers, args):
    cfg = peers.column_sum_config(args[0])
    tile = "" if cfg is None else " {BLOCK_M}x{BLOCK_N}, {WAVES} a SM, {num_warps} warps".format(**cfg)
    return f"triton: atomic adds; tile{tile} picked by timing 48 (first call, untimed)"


def _column_sum_torch(ctx, inp):
    torch = ctx.torch
    if torch is None:
        raise NotApplicable("torch with CUDA not available")
    x = ctx.t(inp["x"])
    out = torch.empty(x.shape[1], dtype=torch.float32, device=x.device)
    return lambda: torch.sum(x, dim=0, dtype=torch.float32, out=out)


# ---- the families ----------------------------------------------------------------------------


def families() -> list[Family]:
    fams = []

    def fam(name, dtype, out_dtype, make, order, out, ref, key, impls_after):
        ref_list: list = []
        f = Family(name, dtype, out_dtype, make, order, out, ref,
                   [("tiledsl", tiledsl_builder(key, ref_list))] + impls_after)
        ref_list.append(f)
        fams.append(f)

    fam("relu((x+y)*s+bias)", "f32", "f32", _make_relu, ("x", "y", "s", "bias"),
        lambda cp, i: (i["x"].shape, cp.float32), _ref_relu, "fused_relu",
        [("cupy (unfused)", _relu_cupy), ("cupy.ElementwiseKernel", _relu_ek),
         ("cupy.fuse", _relu_fuse), ("torch (eager, unfused)", _relu_torch),
         ("triton", triton_builder("fused_relu", ("x", "y", "s", "bias")))])
    fam("sigmoid(relu((x+1)*2)-0.5)", "f32", "f32", _make_chain, ("x",),
        lambda cp, i: (i["x"].shape, cp.float32), _ref_chain, "chain5",
        [("cupy (unfused)", _chain_cupy), ("cupy.ElementwiseKernel", _chain_ek),
         ("cupy.fuse", _chain_fuse), ("torch (eager, unfused)", _chain_torch),
         ("triton", triton_builder("chain5", ("x",)))])
    no_fuse = na("n/a: cupy.fuse cannot fuse a reduction followed by elementwise ops")
    fam("softmax", "f32", "f32", _make_softmax, ("x",),
        lambda cp, i: (i["x"].shape, cp.float32), _ref_softmax, "softmax",
        [("cupy (unfused)", _softmax_cupy), ("cupy kernels (3 passes)", _softmax_kernels),
         ("cupy.fuse", no_fuse), ("torch.softmax", _softmax_torch),
         ("triton", triton_builder("softmax", ("x",)))])
    layernorm_peers = [("cupy (unfused)", _layernorm_cupy), ("cupy kernels (3 passes)", _layernorm_kernels),
                       ("cupy.fuse", no_fuse), ("torch F.layer_norm", _layernorm_torch),
                       ("triton", triton_builder("layernorm", ("x", "w", "b"), eps=LN_EPS))]
    fam("layernorm", "f16 (w, b f32)", "f16", _make_layernorm, ("x", "w", "b"),
        lambda cp, i: (i["x"].shape, cp.float16), _ref_layernorm, "layernorm", layernorm_peers)
    fam(LN16, "f16", "f16", _make_layernorm16, ("x", "w", "b"),
        lambda cp, i: (i["x"].shape, cp.float16), _ref_layernorm, "layernorm16", layernorm_peers)
    fam("rmsnorm", "f16", "f16", _make_rmsnorm, ("x", "w"),
        lambda cp, i: (i["x"].shape, cp.float16), _ref_rmsnorm, "rmsnorm",
        [("cupy (unfused)", _rmsnorm_cupy), ("cupy kernels (2 passes)", _rmsnorm_kernels),
         ("cupy.fuse", no_fuse), ("torch F.rms_norm", _rmsnorm_torch),
         ("triton", triton_builder("rmsnorm", ("x", "w"), eps=RMS_EPS))])
    column_peers = [("cupy.sum", _column_sum_cupy), ("torch.sum", _column_sum_torch),
                    ("triton", triton_builder(
                        "column_sum", ("x",), note=_column_sum_note,
                        result=lambda torch, a: torch.empty(a[0].shape[1], dtype=torch.float32, device=a[0].device)))]
    fam(COLSUM, "f32", "f32", _make_column_sum("float32"), ("x",),
        lambda cp, i: ((i["x"].shape[1],), cp.float32), _ref_column_sum, "column_sum", column_peers)
    fam(COLSUM16, "f16 (sums f32)", "f32", _make_column_sum("float16"), ("x",),
        lambda cp, i: ((i["x"].shape[1],), cp.float32), _ref_column_sum, "column_sum16", column_peers)
    return fams


TDSL_SOURCES = {"fused_relu": FUSED_RELU_TDSL, "chain5": CHAIN5_TDSL, "softmax": SOFTMAX_TDSL,
                "layernorm": LAYERNORM_TDSL, "layernorm16": LAYERNORM16_TDSL, "rmsnorm": RMSNORM_TDSL,
                "column_sum": COLUMN_SUM_TDSL, "column_sum16": COLUMN_SUM16_TDSL}


def compile_kernels() -> dict:
    """Each tiledsl program compiled once; a failure is kept and reported per row."""
    import tiledsl
    kernels: dict[str, Any] = {}
    for key, src in TDSL_SOURCES.items():
        try:
            kernels[key] = tiledsl.compile(src)
        except Exception as err:  # noqa: BLE001
            kernels[key] = err
    return kernels


# ---- running one workload ------------------------------------------------------------------


def run_family(ctx: Ctx, fam: Family, shape: tuple, args, l2_bytes: int, seed: int) -> list:
    import numpy as np
    from tiledsl.inputs import TOLERANCE
    cp = ctx.cupy
    rows = []
    shape_text = "×".join(str(s) for s in shape)
    rs = cp.random.RandomState(seed)
    first = fam.make(cp, rs, shape)
    in_bytes = C.nbytes_of(*first.values())
    out_shape, out_dtype = fam.out(cp, first)
    out_bytes = int(np.dtype(out_dtype).itemsize) * int(_prod(out_shape))
    n_sets = C.input_sets_needed(in_bytes + out_bytes, l2_bytes)
    sets = [first] + [fam.make(cp, rs, shape) for _ in range(n_sets - 1)]
    ref = fam.ref64(cp, first)
    flush = C.L2Flusher() if args.flush_l2 else None
    tol = TOLERANCE[fam.out_dtype]
    # Built and checked one after another, then timed in rounds (C.round_orders): each round
    # every implementation in turn, a different one first, and the median of its rounds' medians.
    ready = []      # (row, runners)
    for impl, build in fam.impls:
        if args.impl and not any(s in impl for s in args.impl):
            continue
        row = C.Row(fam.name, shape_text, fam.dtype, impl, bytes=in_bytes + out_bytes)
        rows.append(row)
        ctx.notes = {}
        try:
            runners = [build(ctx, s) for s in sets]
            result = runners[0]()
            C.synchronize()
            row.rel_err = C.device_rel_error(result, ref)
            del result
            notes = list(ctx.notes.values())
            if row.rel_err is not None and not row.rel_err <= tol:
                notes.append(f"EXCEEDS {fam.out_dtype} tolerance {tol:g}")
            row.note = "; ".join(notes)
            ready.append((row, runners))
        except NotApplicable as why:
            row.note = str(why)
        except Exception as err:  # noqa: BLE001 - report and go on
            row.note = C.short_error(err)
    medians: dict = {id(row): [] for row, _ in ready}
    for order in C.round_orders(len(ready), args.rounds):
        for row, runners in (ready[i] for i in order):
            if row.note.startswith("n/a"):
                continue
            try:
                timing = C.time_cuda(lambda i: runners[i](), n_sets=n_sets, warmup=args.warmup,
                                     warmup_ms=args.warmup_ms, repeats=args.repeats, flush=flush)
                medians[id(row)].append(timing.median_us)
                row.min_us = timing.min_us if row.min_us is None else min(row.min_us, timing.min_us)
            except Exception as err:  # noqa: BLE001 - report and go on
                row.note = "n/a: " + C.short_error(err)
    for row, _ in ready:
        if medians[id(row)] and not row.note.startswith("n/a"):
            row.time_us = statistics.median(medians[id(row)])
    ready = None
    for row in rows:
        print(f"  {fam.name:28s} {shape_text:>12s} {row.impl:26s} "
              f"{'' if row.time_us is None else f'{row.time_us:10.1f} µs'} "
              f"{'' if row.rel_err is None else f'err {row.rel_err:.1e}'} {row.note}", flush=True)
    del sets, first, ref, flush
    C.free_pools()
    return rows


def _prod(shape) -> int:
    p = 1
    for s in shape:
        p *= int(s)
    return p


def compile_cases(quick: bool) -> list:
    cases = [("softmax 4096×1024", {"src": SOFTMAX_TDSL,
                                     "args": [{"kind": "array", "shape": [4096, 1024], "dtype": "float32"}]})]
    if not quick:
        cases += [
            ("relu((x+y)*s+bias) 1M", {"src": FUSED_RELU_TDSL, "args": [
                {"kind": "array", "shape": [1 << 20], "dtype": "float32"},
                {"kind": "array", "shape": [1 << 20], "dtype": "float32"},
                {"kind": "scalar", "value": 1.5},
                {"kind": "array", "shape": [1 << 20], "dtype": "float32"}]}),
            ("layernorm 4096×1024", {"src": LAYERNORM_TDSL, "args": [
                {"kind": "array", "shape": [4096, 1024], "dtype": "float16"},
                {"kind": "array", "shape": [1024], "dtype": "float32"},
                {"kind": "array", "shape": [1024], "dtype": "float32"}]}),
        ]
    return cases


def main(argv: Optional[list] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", metavar="PATH", help="also save everything as JSON here")
    p.add_argument("--quick", action="store_true", help="a short smoke run: fewer shapes and repeats")
    # short kernels after the host's pauses: warm up long enough for the clocks to rise
    C.add_run_options(p, quick_repeats=5, quick_warmup=2, warmup_ms=200.0)
    p.add_argument("--flush-l2", action="store_true",
                   help="also write a 256 MB buffer before each timed run (input rotation is always on)")
    p.add_argument("--only", action="append", default=[], metavar="TEXT",
                   help="only workloads whose name contains TEXT (repeatable)")
    p.add_argument("--impl", action="append", default=[], metavar="TEXT",
                   help="only implementations whose name contains TEXT (repeatable)")
    p.add_argument("--launch-calls", type=int, default=None,
                   help="calls per launch-overhead loop (default 10000; quick 1000)")
    p.add_argument("--skip-launch", action="store_true", help="leave out the launch-overhead loops")
    p.add_argument("--skip-compile", action="store_true", help="leave out the compile-time runs")
    args = C.parse_run_options(p, argv)
    args.repeats = args.repeats or (5 if args.quick else 30)
    args.warmup = args.warmup if args.warmup is not None else (2 if args.quick else 5)
    n_calls = args.launch_calls or (1000 if args.quick else 10_000)
    t_start = time.perf_counter()

    try:
        cupy = C.import_cupy()
        if cupy.cuda.runtime.getDeviceCount() == 0:
            raise RuntimeError("no CUDA device")
    except Exception as err:  # noqa: BLE001
        print(f"bench_memory: needs CuPy and an NVIDIA GPU ({type(err).__name__}: {err})", file=sys.stderr)
        return 2
    import numpy as np
    torch = C.optional_torch()
    try:
        import triton_peers as peers
    except Exception:  # noqa: BLE001
        peers = None
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % (2 ** 31))

    dev = C.device_info()
    vers = C.versions()
    print("# tiledsl memory-bound benchmark\n")
    print(f"- date: {C.now_text()}")
    print(f"- device: {dev['name']} (sm {dev['compute_capability']}, {dev['sm_count']} SMs, "
          f"L2 {dev['l2_bytes'] / 2**20:.0f} MiB, {dev['memory_bytes'] / 2**30:.0f} GiB)")
    print("- versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    print(f"- timing: CUDA events, median of {args.repeats} runs after {args.warmup} warm-up runs "
          f"and more to {args.warmup_ms:g} ms, in {args.rounds} rounds (each implementation in turn, "
          f"the median of the rounds' medians); "
          f"inputs rotated among sets totalling ≥ 3× L2{'; L2 flushed before each run' if args.flush_l2 else ''}; "
          f"input seed {seed}")
    print(f"- streams: {C.streams_note()}")
    if peers is not None and not peers.available()[0]:
        print(f"- triton: {peers.available()[1]}")

    copy = C.copy_bandwidth(256 << 20 if args.quick else 1 << 30, repeats=5 if args.quick else 10)
    copy_gbps = copy["gbps"]
    print(f"- copy bandwidth ({copy['bytes'] / 2**30:.2f} GiB device-to-device, read + write): "
          f"cudaMemcpy {copy['memcpy_gbps']:.0f} GB/s, copy kernel {copy['copy_kernel_gbps']:.0f} GB/s "
          f"→ {copy_gbps:.0f} GB/s is the reference\n", flush=True)

    kernels = compile_kernels()
    ctx = Ctx(cupy, torch, peers, kernels)
    shapes = QUICK_SHAPES if args.quick else FULL_SHAPES
    rows: list = [C.Row("copy", f"{copy['bytes'] >> 20} MiB", "u8", "cudaMemcpy D2D",
                        time_us=copy["memcpy_us"], bytes=2 * copy["bytes"]),
                  C.Row("copy", f"{copy['bytes'] >> 20} MiB", "u8", "cupy.copyto",
                        time_us=copy["copy_kernel_us"], bytes=2 * copy["bytes"])]
    for i, fam in enumerate(families()):
        if args.only and not any(s in fam.name for s in args.only):
            continue
        for j, shape in enumerate(shapes[fam.name]):
            rows += run_family(ctx, fam, shape, args, dev["l2_bytes"], seed + 1000 * i + j)
    C.finalize(rows, copy_gbps)
    print("\n## Results\n")
    print(C.markdown_table(rows))
    print("\nGB/s counts each input read once and each output written once; × copy BW is that "
          "over the measured copy bandwidth; × best peer is the best non-tiledsl time over this "
          "row's time (above 1: faster than every peer); rel. error is against float64 on the "
          "device.", flush=True)

    print("\n## Against a copy of the same bytes\n", flush=True)
    same = C.same_size_copies(rows, copy_gbps, repeats=args.repeats, warmup=args.warmup,
                              warmup_ms=args.warmup_ms)
    print(C.simple_table(
        ["workload", "shape", "dtype", "MiB moved", "copy of them (GB/s)", "× reference copy", "tiledsl ×",
         "best peer ×"],
        [[s["workload"], s["shape"], s["dtype"], f"{s['bytes'] / 2**20:.0f}", f"{s['copy_gbps']:.0f}",
          f"{s['vs_reference_copy']:.2f}", C._fmt(s.get("tiledsl"), ".2f"), C._fmt(s.get("best_peer"), ".2f")]
         for s in same]))
    print("\nA copy of the workload's bytes (half read, half written, buffers rotated as the inputs are) "
          "pays the launch, ramp-up and last wave a kernel of that size pays; tiledsl × and best peer × "
          "are their GB/s over it.", flush=True)

    launch = []
    if not args.skip_launch:
        print(f"\n## Launch overhead (tiny x + y, sizes 1000..1063 in turn, best of 5 rounds of {n_calls} calls)\n", flush=True)
        launch = C.launch_overhead(n_calls, peers)
        print(C.simple_table(["impl", "mode", "µs per call", "note"],
                             [[r["impl"], r["mode"], "—" if r["us_per_call"] is None else
                               f"{r['us_per_call']:.2f}", r["note"]] for r in launch]), flush=True)

    compile_rows = []
    if not args.skip_compile:
        print("\n## Compile time (fresh processes; cold = empty tiledsl/CuPy caches)\n", flush=True)
        compile_rows = C.compile_times(compile_cases(args.quick))

        def f(v, spec):
            return "—" if v is None else format(v, spec)
        print(C.simple_table(
            ["kernel", "phase", "import tiledsl+cupy (s)", "compile() (ms)",
             "first call (ms)", "second call (ms)", "note"],
            [[r["kernel"], r["phase"], f(r["import_s"], ".2f"), f(r["parse_check_ms"], ".1f"),
              f(r["first_call_ms"], ".1f"), f(r["second_call_ms"], ".2f"), r["note"]]
             for r in compile_rows]))
        print("\nfirst call = from after tiledsl.compile() returns to the first kernel completing "
              "(code generation, NVRTC or the disk cache, module load, launch).")

    elapsed = time.perf_counter() - t_start
    print(f"\nTotal benchmark time: {elapsed:.0f} s")
    if args.json:
        C.save_json(args.json, {
            "date": C.now_text(), "device": dev, "versions": vers, "seed": seed,
            "settings": {"repeats": args.repeats, "warmup": args.warmup, "warmup_ms": args.warmup_ms,
                         "flush_l2": args.flush_l2,
                         "quick": args.quick, "launch_calls": n_calls},
            "streams": C.streams_note(), "copy_bandwidth": copy,
            "rows": [r.to_dict() for r in rows], "same_size_copy": same, "launch_overhead": launch,
            "compile_time": compile_rows, "elapsed_s": elapsed})
        print(f"saved {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
