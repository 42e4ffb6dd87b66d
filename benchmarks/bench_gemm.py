#!/usr/bin/env python
"""GEMM: tiledsl against cuBLAS (through CuPy and torch) and Triton, in one run.

    python benchmarks/bench_gemm.py --json gemm.json      # the full run (< 4 min on an H200)
    python benchmarks/bench_gemm.py --quick               # f16 4096^3, fused relu(x@w+b), 16x8192x8192
    python benchmarks/bench_gemm.py --markdown            # tables ready to paste into BENCHMARKS.md

Workloads (M x N x K; a: [M, K], b: [K, N], the result in the operands' dtype):
  f16 and bf16 a @ b at 4096^3, 8192^3, 4000^3, 8192x8192x1024, 16x8192x8192;
  f16 a @ b at 256x256x65536 (split-K), 1024x1024x8192 and 2048x2048x8192;
  f32 a @ b at 4096^3 and 8192^3 (tiledsl: exact f32 on CUDA cores; cuBLAS SGEMM, TF32 off);
  TF32 a @ w.T, w: [N, K], at the same sizes (tiledsl's schedule { tf32(true) }, which reads TF32
    through wgmma where both operands are K-contiguous; cuBLAS with TF32 allowed);
  batched f16 32 x (512x512x64) (examples/batched_matmul.tdsl);
  fused relu(x @ w + b), f16 x and w, f32 b, f16 result, at 4096^3;
  f16 a.T @ b with a stored [K, M] (a weight gradient's x.T @ dy) at 4096^3 and 8192^3: tiledsl
    reads the M-contiguous A in place, cuBLAS reads the transposed view in place.

Every row: median time over CUDA-event timings after warm-up, with the inputs
rotated among enough sets that they are not L2-resident; TFLOP/s; speed
relative to the fastest cuBLAS row and to the fastest peer; the relative error
against a float64 result (against a float32 cuBLAS result, TF32 off, above
--ref64-max-gflop: 8192^3 by default); tiledsl's schedule. Then a summary against
the matmul issue's targets. See benchmarks/README.md for the memory-bound twin.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common as C  # noqa: E402

C.ensure_repo_on_path()

# ---- the tiledsl programs ------------------------------------------------------------------

PLAIN_TDSL = "kernel mm_{t}(a: {t}[M, K], b: {t}[K, N]) -> {t}[M, N] {{\n    return a @ b\n}}\n"
# The TF32 opt-in. tiledsl reads TF32 through wgmma (sm_90a) with both operands contiguous
# along K: A as [M, K], B as an nn.Linear-style [N, K] used as w.T (elsewhere f32 stays exact).
# Its name has no 'tf32' in it: the generated source is searched for TF32 code.
TF32_TDSL = ("kernel mm_optin(a: f32[M, K], w: f32[N, K]) -> f32[M, N] {\n    return a @ w.T\n}\n"
             "schedule mm_optin {\n    tf32(true)\n}\n")
BATCHED_FILE = C.EXAMPLES / "batched_matmul.tdsl"   # f16[B, M, K] @ f16[B, K, N] -> f16[B, M, N]
BATCHED_INLINE = ("kernel bmm(a: f16[B, M, K], b: f16[B, K, N]) -> f16[B, M, N] {\n"
                  "    return a @ b\n}\n")
# Not examples/linear.tdsl: its schedule block pins mma.sync tiles; this is the same
# program with the default schedule.
LINEAR_RELU_TDSL = ("kernel linear_relu(x: f16[M, K], w: f16[K, N], b: f32[N]) -> f16[M, N] {\n"
                    "    return relu(x @ w + b)\n}\n")

AT_TDSL = "kernel mm_at(a: f16[K, M], b: f16[K, N]) -> f16[M, N] {\n    return a.T @ b\n}\n"

NA_TF32 = ("n/a: tf32(true) chose no TF32 code here (tiledsl's TF32 needs sm_90a and K-contiguous "
           "operands)")

# ---- workloads ---------------------------------------------------------------------------------

PLAIN_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4000, 4000, 4000),
                (8192, 8192, 1024), (16, 8192, 8192)]          # (M, N, K)
# f16 only: few output tiles over a long K (split-K on tensor cores), and mid-size
# products whose 128x256 tiles fall short of a wave
F16_EXTRA_SHAPES = [(256, 256, 65536), (1024, 1024, 8192), (2048, 2048, 8192)]
TRITON_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]      # f16 rows with a Triton peer
F32_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]
BATCHED = (32, 512, 512, 64)                                   # (B, M, N, K)
FUSED_SHAPE = (4096, 4096, 4096)
AT_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]

OP_PLAIN, OP_BATCHED, OP_FUSED = "a @ b", "batched a @ b", "relu(x @ w + b)"
OP_TF32 = "a @ w.T"         # the TF32 rows: w is [N, K] (K-contiguous), as tiledsl's TF32 path needs
OP_AT = "a.T @ b"           # a is [K, M] (M-contiguous), as x of a weight gradient x.T @ dy


@dataclass(frozen=True)
class Workload:
    op: str                 # OP_PLAIN, OP_BATCHED, OP_FUSED, OP_TF32 or OP_AT
    dtype: str              # f16, bf16, f32, tf32 (tf32: f32 storage, TF32 math)
    m: int
    n: int
    k: int
    batch: int = 0
    triton: bool = False    # has a Triton peer

    @property
    def bt(self) -> bool:
        """B is stored [N, K] and used transposed."""
        return self.op == OP_TF32

    @property
    def at(self) -> bool:
        """A is stored [K, M] and used transposed."""
        return self.op == OP_AT

    @property
    def storage(self) -> str:
        return "f32" if self.dtype == "tf32" else self.dtype

    @property
    def shape(self) -> str:
        s = f"{self.m}×{self.n}×{self.k}"
        return f"{self.batch}×({s})" if self.batch else s

    @property
    def name(self) -> str:
        return f"{self.dtype} {self.op} {self.shape}"

    @property
    def flop(self) -> int:
        return 2 * max(1, self.batch) * self.m * self.n * self.k

    @property
    def extents(self) -> dict:
        e = dict(M=self.m, N=self.n, K=self.k)
        if self.batch:
            e["B"] = self.batch
        return e

    def matches(self, texts) -> bool:
        if not texts:
            return True
        hay = [self.name.lower(), self.name.replace("×", "x").lower()]
        for t in (t.lower() for t in texts):
            if t in ("f16", "bf16", "f32", "tf32"):       # a dtype alone: that dtype ('f16' is in 'bf16')
                if t == self.dtype:
                    return True
            elif any(t in h for h in hay):
                return True
        return False


def full_workloads() -> list[Workload]:
    out = []
    for dt in ("f16", "bf16"):
        for m, n, k in PLAIN_SHAPES:
            out.append(Workload(OP_PLAIN, dt, m, n, k, triton=dt == "f16" and (m, n, k) in TRITON_SHAPES))
    for m, n, k in F16_EXTRA_SHAPES:
        out.append(Workload(OP_PLAIN, "f16", m, n, k))
    for m, n, k in F32_SHAPES:
        out.append(Workload(OP_PLAIN, "f32", m, n, k))
    for m, n, k in F32_SHAPES:
        out.append(Workload(OP_TF32, "tf32", m, n, k))
    b, m, n, k = BATCHED
    out.append(Workload(OP_BATCHED, "f16", m, n, k, batch=b))
    out.append(Workload(OP_FUSED, "f16", *FUSED_SHAPE, triton=True))
    for m, n, k in AT_SHAPES:
        out.append(Workload(OP_AT, "f16", m, n, k))
    return out


def quick_workloads() -> list[Workload]:
    return [Workload(OP_PLAIN, "f16", 4096, 4096, 4096, triton=True),
            Workload(OP_FUSED, "f16", *FUSED_SHAPE, triton=True),
            Workload(OP_PLAIN, "f16", 16, 8192, 8192)]


# ---- rows --------------------------------------------------------------------------------------


@dataclass
class GemmRow:
    workload: str
    shape: str
    dtype: str
    impl: str
    role: str                          # tiledsl | cublas | peer | baseline (cuBLAS, not the full result)
    flop: int
    time_us: Optional[float] = None
    min_us: Optional[float] = None
    tflops: Optional[float] = None
    vs_cublas: Optional[float] = None  # fastest cuBLAS row's time / this time
    vs_best_peer: Optional[float] = None
    rel_err: Optional[float] = None
    ref: str = ""
    schedule: str = ""
    note: str = ""
    wrong: bool = False
    first_call_s: Optional[float] = None

    def to_dict(self) -> dict:
        return asdict(self)


def finalize(rows: list[GemmRow]) -> None:
    groups: dict[tuple, list[GemmRow]] = {}
    for r in rows:
        groups.setdefault((r.workload, r.shape, r.dtype), []).append(r)
        if r.time_us:
            r.tflops = r.flop / (r.time_us * 1e-6) / 1e12
    for group in groups.values():
        cublas = [r.time_us for r in group if r.role in ("cublas", "baseline") and r.time_us]
        peers = [r.time_us for r in group if r.role in ("cublas", "peer") and r.time_us]
        for r in group:
            if r.time_us and cublas:
                r.vs_cublas = min(cublas) / r.time_us
            if r.time_us and peers and r.role != "baseline":
                r.vs_best_peer = min(peers) / r.time_us


class NotApplicable(Exception):
    """This implementation does not exist here (shown as n/a with the reason)."""


# ---- arrays: CuPy first, torch where CuPy cannot (bf16 on an older CuPy) ----------------------


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def bf16_numpy():
    import ml_dtypes
    import numpy as np
    return np.dtype(ml_dtypes.bfloat16)


class Ctx:
    def __init__(self, cupy, torch, tri, kernels: dict, dev: dict, arch: str, args):
        self.cupy, self.torch, self.tri, self.kernels = cupy, torch, tri, kernels
        self.dev, self.arch, self.args = dev, arch, args
        self.notes: list = []
        self._cupy_bf16: Optional[bool] = None

    def kernel(self, key: str):
        k = self.kernels.get(key)
        if isinstance(k, Exception):
            raise k
        if k is None:
            raise NotApplicable(f"n/a: no tiledsl kernel {key!r}")
        return k

    @property
    def cupy_bf16(self) -> bool:
        """Whether this CuPy holds bf16 arrays (CuPy >= 14 with ml_dtypes)."""
        if self._cupy_bf16 is None:
            cp = self.cupy
            try:
                x = cp.arange(8, dtype=cp.float32) - 3.5
                y = x.astype(bf16_numpy()).astype(cp.float32)
                self._cupy_bf16 = bool((y == x).all())
            except Exception:  # noqa: BLE001
                self._cupy_bf16 = False
        return self._cupy_bf16

    def need_torch(self):
        if self.torch is None:
            raise NotApplicable("n/a: torch with CUDA not available")
        return self.torch

    def t(self, x):
        """A CuPy array as a torch tensor (zero copy)."""
        if _is_torch(x):
            return x
        torch = self.need_torch()
        try:
            return torch.from_dlpack(x)
        except Exception:  # noqa: BLE001 - a CuPy bf16 array DLPack does not carry
            if x.dtype == bf16_numpy():
                return torch.from_dlpack(x.view(self.cupy.int16)).view(torch.bfloat16)
            raise

    def matrix(self, rs, shape, dtype: str):
        """Standard normal values in `dtype` (f16, bf16, f32)."""
        cp = self.cupy
        x = rs.standard_normal(shape, dtype=cp.float32)
        if dtype == "f32":
            return x
        if dtype == "f16":
            return x.astype(cp.float16)
        if self.cupy_bf16:
            return x.astype(bf16_numpy())
        torch = self.torch
        if torch is None:
            raise NotApplicable("n/a: bf16 needs CuPy with ml_dtypes bf16 support, or torch")
        return torch.from_dlpack(x).to(torch.bfloat16)

    def f64(self, x):
        """A device array as a CuPy float64 array (for errors and references)."""
        cp = self.cupy
        if _is_torch(x):
            return cp.from_dlpack(x.detach().to(self.torch.float32).contiguous()).astype(cp.float64)
        try:
            return x.astype(cp.float64)
        except Exception:  # noqa: BLE001 - bf16 casts missing in this CuPy
            return cp.from_dlpack(self.t(x).float().contiguous()).astype(cp.float64)

    def f32(self, x):
        cp = self.cupy
        if _is_torch(x):
            return cp.from_dlpack(x.detach().to(self.torch.float32).contiguous())
        if x.dtype == cp.float32:
            return x
        try:
            return x.astype(cp.float32)
        except Exception:  # noqa: BLE001
            return cp.from_dlpack(self.t(x).float().contiguous())

    def empty(self, like, shape, dtype: str):
        """An output array of the same library as `like`."""
        if _is_torch(like):
            torch = self.torch
            tdt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[dtype]
            return torch.empty(shape, dtype=tdt, device=like.device)
        cp = self.cupy
        npdt = {"f16": cp.float16, "f32": cp.float32}.get(dtype) or bf16_numpy()
        return cp.empty(shape, dtype=npdt)


def poison(x) -> None:
    """NaN into an output buffer, so a region the kernel never writes shows as an error."""
    try:
        if _is_torch(x):
            x.fill_(float("nan"))
        else:
            x.fill(float("nan"))
    except Exception:  # noqa: BLE001 - e.g. a bf16 fill this CuPy lacks; the check still runs
        pass


# ---- math modes: CuPy's compute type and torch's TF32 flag --------------------------------------

CUPY_COMPUTE_DEFAULT, CUPY_COMPUTE_TF32 = 1, 7     # cupy._core._routines_linalg COMPUTE_TYPE_*


def _cupy_linalg():
    import cupy._core._routines_linalg as L
    return L


def cupy_compute_type_text() -> str:
    try:
        import numpy as np
        L = _cupy_linalg()
        t = L.get_compute_type(np.float32)
        return f"{L.compute_type_to_str(t)} (CUPY_TF32={os.environ.get('CUPY_TF32', 'unset')})"
    except Exception as err:  # noqa: BLE001
        return f"unknown ({type(err).__name__})"


@contextlib.contextmanager
def cupy_f32_compute(kind: int):
    """cupy.matmul on float32 with this cuBLAS compute type (DEFAULT: SGEMM; TF32), restored after."""
    import numpy as np
    try:
        L = _cupy_linalg()
        old = L.get_compute_type(np.float32)
    except Exception as err:  # noqa: BLE001
        raise NotApplicable(f"n/a: cannot set CuPy's compute type ({type(err).__name__})") from None
    L.set_compute_type(np.float32, kind)
    try:
        yield
    finally:
        L.set_compute_type(np.float32, old)


@contextlib.contextmanager
def torch_tf32(torch, enabled: bool):
    """torch float32 matmuls with TF32 allowed or not, restored after. Uses
    torch.backends.cuda.matmul.fp32_precision where it exists (torch >= 2.9, where
    mixing it with the legacy allow_tf32 flag is an error), else allow_tf32."""
    if torch is None:
        yield
        return
    mm = torch.backends.cuda.matmul
    if hasattr(mm, "fp32_precision"):
        old = mm.fp32_precision
        mm.fp32_precision = "tf32" if enabled else "ieee"
        attr = "fp32_precision"
    else:
        old = mm.allow_tf32
        mm.allow_tf32 = enabled
        attr = "allow_tf32"
    try:
        yield
    finally:
        try:
            setattr(mm, attr, old)
        except Exception:  # noqa: BLE001
            pass


# ---- implementations ---------------------------------------------------------------------------


@dataclass
class Impl:
    name: str
    role: str                                   # tiledsl | cublas | peer | baseline
    build: Callable                             # (ctx, w, inputs) -> zero-arg runner returning the result
    mode: Optional[Callable] = None             # (ctx) -> context manager around build, check and timing
    tag: Optional[Callable] = None              # (ctx, w) -> schedule text, after the first call
    check: bool = True                          # compare with the reference


def _operands(inp: dict) -> list:
    return [inp["a"], inp["b"]] + ([inp["bias"]] if "bias" in inp else [])


def _out_shape(w: Workload) -> tuple:
    return (w.batch, w.m, w.n) if w.batch else (w.m, w.n)


def tiledsl_build(key: str):
    def build(ctx: Ctx, w: Workload, inp: dict):
        if key == "mm_tf32":
            why = tiledsl_tf32_missing(ctx, w)
            if why:
                raise NotApplicable(why)
        k = ctx.kernel(key)
        args = _operands(inp)
        out = ctx.empty(args[0], _out_shape(w), w.storage)
        poison(out)
        if _is_torch(args[0]):
            ctx.notes.append("torch operands (this CuPy has no bf16): tiledsl takes its checked call path")

        def run():
            return k(*args, out=out)
        return run
    return build


def schedule_tags(kernel, extents: dict, dev: dict, arch: str) -> str:
    """The schedule of each kernel a call at these extents runs (tiledsl.codegen.sources_for)."""
    from tiledsl.codegen import sources_for
    sm = int(dev.get("sm_count") or 132)
    try:
        srcs = sources_for(kernel, extents, sm_count=sm, arch=arch)
    except TypeError:             # a tiledsl whose sources_for takes no arch
        srcs = sources_for(kernel, extents, sm_count=sm)
    return " + ".join("its chunks' sum" if s.schedule.splits and s.name.endswith("_s2")
                      else s.schedule.tag + (f" in {s.schedule.splits} chunks of K" if s.schedule.splits else "")
                      for s in srcs)


def tiledsl_tag(key: str):
    def tag(ctx: Ctx, w: Workload) -> str:
        return schedule_tags(ctx.kernel(key), w.extents, ctx.dev, ctx.arch)
    return tag


def tiledsl_tf32_missing(ctx: Ctx, w: Workload) -> str:
    """'' when tiledsl's generated code for the tf32(true) kernel uses TF32, else the n/a note."""
    from tiledsl.codegen import sources_for
    k = ctx.kernel("mm_tf32")
    sm = int(ctx.dev.get("sm_count") or 132)
    try:
        srcs = sources_for(k, w.extents, sm_count=sm, arch=ctx.arch)
    except TypeError:
        srcs = sources_for(k, w.extents, sm_count=sm)
    uses = any(getattr(s.schedule, "tf32", False) or "tf32" in s.schedule.tag
               or "tf32" in s.source.replace(s.name, "").lower() for s in srcs)
    return "" if uses else NA_TF32


def cupy_matmul(ctx: Ctx, w: Workload, inp: dict):
    cp = ctx.cupy
    a, b = inp["a"], inp["b"]
    if _is_torch(a):
        raise NotApplicable("n/a: this CuPy has no bf16 arrays")
    if w.bt:
        b = b.T                     # a view: cuBLAS reads it transposed, no copy
    if w.at:
        a = a.T
    out = ctx.empty(a, _out_shape(w), w.storage)
    return lambda: cp.matmul(a, b, out=out)


def torch_matmul(ctx: Ctx, w: Workload, inp: dict):
    torch = ctx.need_torch()
    a, b = ctx.t(inp["a"]), ctx.t(inp["b"])
    if w.bt:
        b = b.t()                   # a view: cuBLAS reads it transposed, no copy
    if w.at:
        a = a.t()
    out = torch.empty(_out_shape(w), dtype=a.dtype, device=a.device)
    return lambda: torch.matmul(a, b, out=out)


def triton_matmul(ctx: Ctx, w: Workload, inp: dict):
    tri = _triton(ctx)
    torch = ctx.need_torch()
    a, b = ctx.t(inp["a"]), ctx.t(inp["b"])
    out = torch.empty(_out_shape(w), dtype=a.dtype, device=a.device)
    return lambda: tri.matmul(a, b, out=out)


def cupy_unfused(ctx: Ctx, w: Workload, inp: dict):
    """Three kernels: the GEMM into an f16 buffer, + b (computed in f32, stored f16), max(., 0)."""
    cp = ctx.cupy
    x, wt, b = inp["a"], inp["b"], inp["bias"]
    out = cp.empty(_out_shape(w), dtype=cp.float16)

    def run():
        cp.matmul(x, wt, out=out)
        cp.add(out, b, out=out)
        cp.maximum(out, 0, out=out)
        return out
    return run


def torch_addmm_relu(ctx: Ctx, w: Workload, inp: dict):
    """torch.addmm (cuBLAS, bias in the GEMM) then relu_ in place. torch wants one dtype: f16 bias."""
    torch = ctx.need_torch()
    x, wt = ctx.t(inp["a"]), ctx.t(inp["b"])
    b16 = ctx.t(inp["bias"]).to(torch.float16)
    out = torch.empty(_out_shape(w), dtype=torch.float16, device=x.device)
    ctx.notes.append("bias cast to f16 (addmm takes one dtype)")

    def run():
        torch.addmm(b16, x, wt, out=out)
        return torch.relu_(out)
    return run


def triton_linear_relu(ctx: Ctx, w: Workload, inp: dict):
    tri = _triton(ctx)
    torch = ctx.need_torch()
    x, wt, b = ctx.t(inp["a"]), ctx.t(inp["b"]), ctx.t(inp["bias"])
    out = torch.empty(_out_shape(w), dtype=torch.float16, device=x.device)
    return lambda: tri.linear_relu(x, wt, b, out=out)


def _triton(ctx: Ctx):
    if ctx.args.no_triton:
        raise NotApplicable("n/a: --no-triton")
    if ctx.tri is None:
        raise NotApplicable("n/a: benchmarks/triton_gemm.py not importable")
    ok, why = ctx.tri.available()
    if not ok:
        raise NotApplicable(f"n/a: {why}")
    return ctx.tri


def triton_tag(ctx: Ctx, w: Workload) -> str:
    return ctx.tri.chosen_config() if ctx.tri is not None else ""


def impls_for(w: Workload) -> list[Impl]:
    if w.op == OP_FUSED:
        impls = [Impl("tiledsl (fused epilogue)", "tiledsl", tiledsl_build("linear_relu"),
                      tag=tiledsl_tag("linear_relu")),
                 Impl("cuBLAS GEMM alone (cupy.matmul, no bias/relu)", "baseline", cupy_matmul, check=False),
                 Impl("CuPy unfused (matmul, + b, maximum)", "peer", cupy_unfused),
                 Impl("torch addmm + relu_", "peer", torch_addmm_relu)]
        if w.triton:
            impls.append(Impl("Triton (bias+relu epilogue, autotuned)", "peer", triton_linear_relu,
                              tag=triton_tag))
        return impls
    if w.op == OP_BATCHED:
        # CuPy's batched matmul computes f16 batches in f32 (casts, SGEMM, cast back): a peer,
        # not the cuBLAS baseline.
        return [Impl("tiledsl", "tiledsl", tiledsl_build("bmm"), tag=tiledsl_tag("bmm")),
                Impl("cupy.matmul (batched; CuPy upcasts f16 to f32)", "peer", cupy_matmul),
                Impl("cuBLAS (torch.matmul, batched)", "cublas", torch_matmul)]
    if w.dtype == "f32":
        return [Impl("tiledsl (exact f32, CUDA cores)", "tiledsl", tiledsl_build("mm_f32"),
                     tag=tiledsl_tag("mm_f32")),
                Impl("cuBLAS SGEMM (cupy.matmul, TF32 off)", "cublas", cupy_matmul,
                     mode=lambda ctx: cupy_f32_compute(CUPY_COMPUTE_DEFAULT)),
                Impl("cuBLAS SGEMM (torch.matmul, TF32 off)", "cublas", torch_matmul,
                     mode=lambda ctx: torch_tf32(ctx.torch, False))]
    if w.dtype == "tf32":
        return [Impl("tiledsl (tf32(true))", "tiledsl", tiledsl_build("mm_tf32"), tag=tiledsl_tag("mm_tf32")),
                Impl("cuBLAS TF32 (torch.matmul, TF32 allowed)", "cublas", torch_matmul,
                     mode=lambda ctx: torch_tf32(ctx.torch, True)),
                Impl("cuBLAS TF32 (cupy.matmul, COMPUTE_TYPE_TF32)", "cublas", cupy_matmul,
                     mode=lambda ctx: cupy_f32_compute(CUPY_COMPUTE_TF32))]
    key = "mm_at" if w.at else f"mm_{w.dtype}"
    # CuPy's bf16 support is new (v14) and its matmul may not reach cuBLAS: a peer only.
    cupy_row = (Impl("cuBLAS (cupy.matmul)", "cublas", cupy_matmul) if w.dtype == "f16" else
                Impl("cupy.matmul (bf16: not counted as cuBLAS)", "peer", cupy_matmul))
    impls = [Impl("tiledsl", "tiledsl", tiledsl_build(key), tag=tiledsl_tag(key)),
             cupy_row,
             Impl("cuBLAS (torch.matmul)", "cublas", torch_matmul)]
    if w.triton:
        impls.append(Impl("Triton (autotuned)", "peer", triton_matmul, tag=triton_tag))
    return impls


# ---- inputs and the reference ---------------------------------------------------------------------


def make_inputs(ctx: Ctx, w: Workload, rs) -> dict:
    if w.batch:
        a_shape, b_shape = (w.batch, w.m, w.k), (w.batch, w.k, w.n)
    else:
        a_shape, b_shape = ((w.k, w.m) if w.at else (w.m, w.k)), ((w.n, w.k) if w.bt else (w.k, w.n))
    inp = {"a": ctx.matrix(rs, a_shape, w.storage), "b": ctx.matrix(rs, b_shape, w.storage)}
    if w.op == OP_FUSED:
        inp["bias"] = rs.standard_normal((w.n,), dtype=ctx.cupy.float32)
    return inp


def reference(ctx: Ctx, w: Workload, inp: dict):
    """(reference array, what it is): float64 up to --ref64-max-gflop, else float32
    cuBLAS (TF32 off) on the same operands."""
    cp = ctx.cupy
    if w.flop <= ctx.args.ref64_max_gflop * 1e9:
        a, b = ctx.f64(inp["a"]), ctx.f64(inp["b"])
        r = cp.matmul(a.T if w.at else a, b.T if w.bt else b)
        what = "f64"
        if "bias" in inp:
            r = cp.maximum(r + inp["bias"].astype(cp.float64), 0.0)
    else:
        try:
            mode = cupy_f32_compute(CUPY_COMPUTE_DEFAULT)
            mode.__enter__()
            what = "f32 cuBLAS"
        except NotApplicable:             # CuPy's compute type out of reach: its default
            mode, what = None, f"f32 cuBLAS (CUPY_TF32={os.environ.get('CUPY_TF32', 'unset')})"
        try:
            a, b = ctx.f32(inp["a"]), ctx.f32(inp["b"])
            r = cp.matmul(a.T if w.at else a, b.T if w.bt else b)
        finally:
            if mode is not None:
                mode.__exit__(None, None, None)
        if "bias" in inp:
            r = cp.maximum(r + inp["bias"], cp.float32(0))
    del a, b
    return r, what


# ---- one workload ---------------------------------------------------------------------------------


def run_workload(ctx: Ctx, w: Workload, seed: int) -> list[GemmRow]:
    from tiledsl.inputs import TOLERANCE
    cp = ctx.cupy
    args = ctx.args
    tol = TOLERANCE[w.dtype]
    impls = impls_for(w)
    rows: list[GemmRow] = []

    def new_row(impl: Impl) -> GemmRow:
        return GemmRow(w.op, w.shape, w.dtype, impl.name, impl.role, w.flop)

    try:
        rs = cp.random.RandomState(seed)
        first = make_inputs(ctx, w, rs)
        in_bytes = C.nbytes_of(*first.values())
        out_bytes = math.prod(_out_shape(w)) * (4 if w.storage == "f32" else 2)
        n_sets = C.input_sets_needed(in_bytes + out_bytes, ctx.dev.get("l2_bytes", 0))
        sets = [first] + [make_inputs(ctx, w, rs) for _ in range(n_sets - 1)]
        ref, ref_what = reference(ctx, w, first)
    except Exception as err:  # noqa: BLE001 - the whole workload is n/a
        why = str(err) if isinstance(err, NotApplicable) else f"n/a: {_short(err)}"
        for impl in impls:
            row = new_row(impl)
            row.note = why
            rows.append(row)
            _print_row(row)
        C.free_pools()
        return rows

    # Built and checked one after another, then timed in rounds (C.round_orders).
    ready = []      # (row, runners, impl)
    for impl in impls:
        row = new_row(impl)
        row.ref = ref_what
        ctx.notes = []
        try:
            with impl.mode(ctx) if impl.mode else contextlib.nullcontext():
                runners = [impl.build(ctx, w, s) for s in sets]
                t0 = time.perf_counter()
                result = runners[0]()
                C.synchronize()
                row.first_call_s = time.perf_counter() - t0
                if impl.check:
                    row.rel_err = C.device_rel_error(ctx.f64(result), ref)
                del result
                if impl.tag is not None:
                    try:
                        row.schedule = impl.tag(ctx, w)
                    except Exception as err:  # noqa: BLE001
                        row.schedule = f"? ({type(err).__name__})"
            row.note = "; ".join(_notes(row, impl, w, tol, list(dict.fromkeys(ctx.notes))))
            ready.append((row, runners, impl))
        except NotApplicable as why:
            row.note = str(why)
        except Exception as err:  # noqa: BLE001 - report and go on
            row.note = f"n/a: {_short(err)}"
        rows.append(row)
    medians: dict[int, list] = {id(row): [] for row, _, _ in ready}
    for order in C.round_orders(len(ready), args.rounds):
        for row, runners, impl in (ready[i] for i in order):
            try:
                with impl.mode(ctx) if impl.mode else contextlib.nullcontext():
                    timing = C.time_cuda(lambda i: runners[i](), n_sets=n_sets, warmup=args.warmup,
                                         warmup_ms=args.warmup_ms, repeats=args.repeats)
                medians[id(row)].append(timing.median_us)
                row.min_us = timing.min_us if row.min_us is None else min(row.min_us, timing.min_us)
            except Exception as err:  # noqa: BLE001 - report and go on
                row.note = f"n/a: {_short(err)}"
    for row, _, _ in ready:
        if medians[id(row)] and not row.note.startswith("n/a"):
            row.time_us = statistics.median(medians[id(row)])
    ready = None
    for row in rows:
        _print_row(row)
    del sets, first, ref
    C.free_pools()
    return rows


def _notes(row: GemmRow, impl: Impl, w: Workload, tol: float, notes: list) -> list:
    """A checked row's notes: a wrong tiledsl result first, then what the builders said."""
    if not impl.check:
        notes.append("GEMM alone, not the full result: the × cuBLAS baseline")
    elif row.rel_err is not None and not row.rel_err <= tol:
        if impl.role == "tiledsl":
            row.wrong = True
            notes.insert(0, f"WRONG rel err {row.rel_err:.1e} (tol {tol:g})")
        else:
            notes.append(f"exceeds {w.dtype} tol {tol:g}")
    if w.dtype == "tf32" and impl.role in ("cublas", "tiledsl") and row.rel_err is not None and row.rel_err < 1e-5:
        notes.append("error looks like full f32: TF32 apparently not used")
    return notes


def _short(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:160]


def _print_row(r: GemmRow) -> None:
    t = f"{r.time_us:10.1f} µs {r.flop / (r.time_us * 1e-6) / 1e12:7.1f} TFLOP/s" if r.time_us else ""
    e = f"err {r.rel_err:.1e}" if r.rel_err is not None else ""
    print(f"  {r.dtype:4s} {r.workload:15s} {r.shape:20s} {r.impl:46s} {t:30s} {e:12s} "
          f"{r.schedule} {r.note}".rstrip(), flush=True)


# ---- compile the tiledsl programs ------------------------------------------------------------------


def compile_kernels() -> dict:
    import tiledsl
    srcs = {f"mm_{t}": PLAIN_TDSL.format(t=t) for t in ("f16", "bf16", "f32")}
    srcs["mm_tf32"] = TF32_TDSL
    srcs["linear_relu"] = LINEAR_RELU_TDSL
    srcs["mm_at"] = AT_TDSL
    kernels: dict[str, Any] = {}
    for key, src in srcs.items():
        try:
            kernels[key] = tiledsl.compile(src)
        except Exception as err:  # noqa: BLE001 - reported in the rows
            kernels[key] = err
    try:
        kernels["bmm"] = tiledsl.compile(BATCHED_FILE)
    except Exception:  # noqa: BLE001 - missing or changed example: the same program inline
        try:
            kernels["bmm"] = tiledsl.compile(BATCHED_INLINE)
        except Exception as err:  # noqa: BLE001
            kernels["bmm"] = err
    return kernels


# ---- tables and the summary -------------------------------------------------------------------------


def _f(v, spec: str) -> str:
    return "—" if v is None else format(v, spec)


HEAD = ["workload", "M×N×K", "dtype", "impl", "time (µs)", "TFLOP/s", "× cuBLAS", "× best peer",
        "rel. error", "ref", "schedule", "note"]


def _cells(r: GemmRow) -> list[str]:
    return [r.workload, r.shape, r.dtype, r.impl, _f(r.time_us, ".1f"), _f(r.tflops, ".1f"),
            _f(r.vs_cublas, ".2f"), _f(r.vs_best_peer, ".2f"), _f(r.rel_err, ".1e"),
            r.ref if r.rel_err is not None else "—", r.schedule or "—",
            r.note.replace("|", "/").replace("\n", " ")[:140]]


def markdown_rows(rows: list[GemmRow]) -> str:
    numeric = {"time (µs)", "TFLOP/s", "× cuBLAS", "× best peer", "rel. error"}
    lines = ["| " + " | ".join(HEAD) + " |",
             "|" + "|".join("---:" if h in numeric else "---" for h in HEAD) + "|"]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    return "\n".join(lines)


def text_table(head: list[str], body: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    fmt = "  ".join(f"{{:{w}s}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*["-" * w for w in widths])]
    lines += [fmt.format(*[str(c) for c in row]) for row in body]
    return "\n".join(line.rstrip() for line in lines)


def _find(rows, dtype, op, shape, role="tiledsl", impl_prefix=None) -> Optional[GemmRow]:
    for r in rows:
        if r.dtype == dtype and r.workload == op and r.shape == shape and r.role == role \
                and (impl_prefix is None or r.impl.startswith(impl_prefix)):
            return r
    return None


def _shape3(m, n, k) -> str:
    return f"{m}×{n}×{k}"


def summary(rows: list[GemmRow]) -> list[dict]:
    """Each target of the matmul issue: the measured ratios and whether it is met."""
    cube4, cube8 = _shape3(4096, 4096, 4096), _shape3(8192, 8192, 8192)
    skinny = _shape3(16, 8192, 8192)
    targets = [
        ("f32 ≥ 0.90× cuBLAS at 4096³ and 8192³", 0.90,
         [("f32", OP_PLAIN, cube4, "4096³"), ("f32", OP_PLAIN, cube8, "8192³")], None),
        ("f16/bf16 ≥ 0.70× cuBLAS at 4096³ and 8192³", 0.70,
         [(dt, OP_PLAIN, s, f"{dt} {lab}") for dt in ("f16", "bf16")
          for s, lab in ((cube4, "4096³"), (cube8, "8192³"))], None),
        ("TF32 ≥ 0.60× cuBLAS TF32", 0.60,
         [("tf32", OP_TF32, cube4, "4096³"), ("tf32", OP_TF32, cube8, "8192³")], None),
        ("fused relu(x@w+b) f16 4096³ ≥ 1.5× CuPy unfused", 1.5,
         [("f16", OP_FUSED, cube4, "4096³")], "CuPy unfused"),
        ("16×8192×8192 ≥ 0.8× cuBLAS", 0.80,
         [("f16", OP_PLAIN, skinny, "f16"), ("bf16", OP_PLAIN, skinny, "bf16")], None),
    ]
    out = []
    for text, goal, items, against in targets:
        parts, ratios, measured, failed = [], [], 0, False
        for dtype, op, shape, label in items:
            r = _find(rows, dtype, op, shape)
            if r is None:
                continue                      # not run (--only / --quick)
            measured += 1
            ratio = None
            if r.time_us and against is None:
                ratio = r.vs_cublas
            elif r.time_us:
                peer = _find(rows, dtype, op, shape, role="peer", impl_prefix=against)
                ratio = peer.time_us / r.time_us if peer is not None and peer.time_us else None
            if ratio is None:
                why = r.note if not r.time_us else f"no {against or 'cuBLAS'} time"
                parts.append(f"{label}: {why or 'n/a'}")
                failed = True
                continue
            ratios.append(ratio)
            flag = " WRONG" if r.wrong else ""
            parts.append(f"{label} {ratio:.2f}×{flag}")
            failed = failed or r.wrong or ratio < goal
        if not measured:
            status = "not measured"
        else:
            status = "not met" if failed else "met"
            if measured < len(items) and status == "met":
                status = "met (partly measured)"
        out.append({"target": text, "goal": goal, "measured": "; ".join(parts) or "—",
                    "ratios": ratios, "status": status})
    wrong = [r for r in rows if r.role == "tiledsl" and r.wrong]
    checked = [r for r in rows if r.role == "tiledsl" and r.rel_err is not None]
    if checked:
        out.append({"target": "every tiledsl result within its dtype's tolerance", "goal": None,
                    "measured": (f"{len(checked) - len(wrong)}/{len(checked)} within tolerance"
                                 + (": WRONG " + ", ".join(f"{r.dtype} {r.workload} {r.shape}" for r in wrong)
                                    if wrong else "")),
                    "ratios": [], "status": "not met" if wrong else "met"})
    return out


# ---- main ----------------------------------------------------------------------------------------


def device_arch() -> str:
    cupy = C.import_cupy()
    cc = str(cupy.cuda.Device().compute_capability)
    return "sm_90a" if cc == "90" else f"sm_{cc}"


def main(argv: Optional[list] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", metavar="PATH", help="also save every row, the summary, device and versions here")
    p.add_argument("--markdown", action="store_true",
                   help="print the tables as Markdown, ready to paste into BENCHMARKS.md")
    p.add_argument("--quick", action="store_true",
                   help="f16 4096³ (with Triton), fused relu(x@w+b) 4096³ and f16 16×8192×8192 only")
    p.add_argument("--only", action="append", default=[], metavar="TEXT",
                   help="only workloads whose name contains TEXT, e.g. 'bf16', '8192x8192x1024', 'relu' "
                        "(names read 'DTYPE OP M×N×K'; x works for ×; repeatable)")
    # 200 ms of warm-up for every implementation: under sustained load an H100 settles at a lower
    # clock (its 700 W), and one timed first after the host's pause (the reference, new inputs)
    # ran at another clock than the peers after it: 8192x8192x1024 read 0.84x cuBLAS timed after
    # 5 runs, 0.96-1.02x where each side had warmed alike (H100 2026-11-26)
    C.add_run_options(p, quick_repeats=10, quick_warmup=3, warmup_ms=200.0)
    p.add_argument("--no-triton", action="store_true", help="leave out the Triton peers (no autotuning)")
    p.add_argument("--ref64-max-gflop", type=float, default=2 * 4096 ** 3 / 1e9,
                   help="float64 reference up to this many GFLOP (default: 4096³), float32 cuBLAS above")
    args = C.parse_run_options(p, argv)
    args.repeats = args.repeats or (10 if args.quick else 30)
    args.warmup = args.warmup if args.warmup is not None else (3 if args.quick else 5)
    t_start = time.perf_counter()

    workloads = [w for w in (quick_workloads() if args.quick else full_workloads()) if w.matches(args.only)]
    if not workloads:
        print(f"bench_gemm: no workload matches --only {args.only}; the workloads are:\n  "
              + "\n  ".join(w.name for w in full_workloads()), file=sys.stderr)
        return 2

    try:
        cupy = C.import_cupy()
        if cupy.cuda.runtime.getDeviceCount() == 0:
            raise RuntimeError("no CUDA device")
    except Exception as err:  # noqa: BLE001
        print(f"bench_gemm: needs a GPU: CuPy and an NVIDIA GPU ({type(err).__name__}: {err})",
              file=sys.stderr)
        return 2
    import numpy as np
    torch = C.optional_torch()
    try:
        import triton_gemm as tri
    except Exception:  # noqa: BLE001
        tri = None
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % (2 ** 31))

    dev = C.device_info()
    vers = C.versions()
    arch = device_arch()
    header = [
        f"date: {C.now_text()}",
        f"device: {dev['name']} (sm {dev['compute_capability']}, {dev['sm_count']} SMs, "
        f"L2 {dev['l2_bytes'] / 2**20:.0f} MiB, {dev['memory_bytes'] / 2**30:.0f} GiB); tiledsl arch {arch}",
        "versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()),
        f"timing: CUDA events, median of {args.repeats} runs after {args.warmup} warm-up runs "
        f"and more to {args.warmup_ms:g} ms, in {args.rounds} rounds (each implementation in turn, the median "
        f"of the rounds' medians); inputs "
        f"rotated among sets totalling ≥ 3× L2; outputs preallocated (tiledsl out=); input seed {seed}",
        f"reference: float64 (CuPy) up to {args.ref64_max_gflop:.0f} GFLOP, float32 cuBLAS with TF32 off above",
        f"CuPy float32 matmul compute type at start: {cupy_compute_type_text()} "
        f"(the SGEMM rows force DEFAULT, the CuPy TF32 row TF32)",
        f"streams: {C.streams_note()}",
    ]
    if tri is None:
        header.append("triton: benchmarks/triton_gemm.py not importable")
    elif not tri.available()[0]:
        header.append(f"triton: {tri.available()[1]}")
    print("# tiledsl GEMM benchmark\n")
    for line in header:
        print(f"- {line}")
    print(flush=True)

    kernels = compile_kernels()
    ctx = Ctx(cupy, torch, tri, kernels, dev, arch, args)
    rows: list[GemmRow] = []
    for i, w in enumerate(workloads):
        print(f"{w.name}", flush=True)
        rows += run_workload(ctx, w, seed + 1000 * i)
    finalize(rows)
    summ = summary(rows)
    elapsed = time.perf_counter() - t_start

    legend = ("TFLOP/s counts 2·M·N·K (× batch) per call. × cuBLAS: the fastest cuBLAS row of the "
              "workload (f16 and f32: CuPy or torch; bf16 and batched: torch; TF32 rows against cuBLAS "
              "TF32; the fused row against cuBLAS's GEMM alone) over this row's time, above 1 is "
              "faster. × best peer: the same against every "
              "non-tiledsl implementation of the full result. rel. error: ‖result − ref‖/‖ref‖ on the first "
              "input set, before timing (ref f32 cuBLAS: CuPy's own SGEMM row is then 0 by construction).")
    if args.markdown:
        print("\n## GEMM (benchmarks/bench_gemm.py)\n")
        for line in header:
            print(f"- {line}")
        print()
        print(markdown_rows(rows))
        print(f"\n{legend}\n")
        print("### Against the matmul issue's targets (same run)\n")
        print(C.simple_table(["target", "measured", "met"],
                             [[s["target"], s["measured"].replace("|", "/"), s["status"]] for s in summ]))
    else:
        print("\n## Results\n")
        print(text_table(HEAD, [_cells(r) for r in rows]))
        print(f"\n{legend}")
        print("\n## Against the matmul issue's targets\n")
        print(text_table(["target", "status", "measured"],
                         [[s["target"], s["status"], s["measured"]] for s in summ]))
    first_calls = [r.first_call_s for r in rows if r.role == "tiledsl" and r.first_call_s]
    if first_calls:
        print(f"\ntiledsl first calls (code generation, NVRTC, load, one run): {sum(first_calls):.1f} s "
              f"in all, at most {max(first_calls):.2f} s")
    print(f"Total benchmark time: {elapsed:.0f} s" + ("  (over the 4-minute budget)" if elapsed > 240 else ""))
    if args.json:
        C.save_json(args.json, {
            "date": C.now_text(), "device": dev, "versions": vers, "arch": arch, "seed": seed,
            "settings": {"repeats": args.repeats, "warmup": args.warmup, "warmup_ms": args.warmup_ms,
                         "quick": args.quick,
                         "only": args.only, "no_triton": args.no_triton,
                         "ref64_max_gflop": args.ref64_max_gflop},
            "cupy_f32_compute_type": cupy_compute_type_text(), "streams": C.streams_note(),
            "rows": [r.to_dict() for r in rows], "summary": summ, "elapsed_s": elapsed})
        print(f"saved {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
