"""Time every tensor-core GEMM schedule candidate at a few shapes (device run).

Candidates compile in parallel worker processes first (into the disk cache),
then each is checked against cuBLAS and timed with CUDA events.

    python scripts/gemm_sweep.py [--quick] [--top 8]
"""
import argparse
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from tiledsl.runtime import launcher_for  # noqa: E402
from tiledsl.schedule.choose import candidates, default  # noqa: E402
from tiledsl.schedule.problem import problem  # noqa: E402

KERNELS = {
    "ab": "kernel mm(a: {t}[M, K], b: {t}[K, N]) -> {t}[M, N] {{ return a @ b }}",
    "abT": "kernel mm(a: {t}[M, K], b: {t}[N, K]) -> {t}[M, N] {{ return a @ b.T }}",
    "relu": "kernel mm(a: {t}[M, K], b: {t}[K, N], bias: f32[N]) -> {t}[M, N] {{ return relu(a @ b + bias) }}",
    "tf32": "kernel mm(a: {t}[M, K], b: {t}[N, K]) -> {t}[M, N] {{ return a @ b.T }}\nschedule mm {{ tf32(true) }}",
    "abT32": "kernel mm(a: {t}[M, K], b: {t}[N, K]) -> f32[M, N] {{ return a @ b.T }}",    # f32 results
}
CASES = [("f32", "ab", (4096, 4096, 4096)), ("f32", "ab", (1000, 1000, 1000)), ("f32", "ab", (8192, 8192, 8192)),
         ("f32", "tf32", (4096, 4096, 4096)), ("f32", "tf32", (8192, 8192, 8192)), ("f16", "ab", (4096, 4096, 4096)), ("f16", "abT", (4096, 4096, 4096)),
         ("f16", "ab", (8192, 8192, 8192)), ("f16", "ab", (1000, 1000, 1000)),
         ("f16", "ab", (16, 8192, 8192)), ("f16", "ab", (8192, 8192, 1024)),
         ("bf16", "ab", (4096, 4096, 4096)), ("f16", "ab", (4000, 4000, 4000)), ("f16", "relu", (4096, 4096, 4096)),
         ("f32", "ab", (256, 256, 65536)), ("f32", "relu", (512, 512, 16384)),     # 14, 15: split-K
         # 16-18: which of 4000^3's dimensions costs it (rows of 8000 bytes straddle 128-byte lines)
         ("f16", "ab", (4000, 4096, 4096)), ("f16", "ab", (4096, 4000, 4096)), ("f16", "ab", (4096, 4096, 4000)),
         # 19-28: tensor-core split-K (few output tiles over a long K)
         ("f16", "ab", (256, 256, 65536)), ("f16", "relu", (512, 512, 16384)), ("f16", "ab", (1024, 1024, 4096)),
         ("f16", "ab", (64, 4096, 16384)), ("bf16", "ab", (1024, 1024, 8192)), ("f32", "tf32", (256, 256, 32768)),
         ("f16", "ab", (16, 8192, 8192)), ("f16", "abT", (768, 768, 8192)), ("f16", "ab", (1024, 2048, 8192)),
         ("f16", "ab", (64, 1024, 65536)),
         # 29-32: mid-size products whose 128x256 tiles fall just short of a wave
         ("f16", "ab", (2048, 2048, 8192)), ("f16", "ab", (2048, 1024, 4096)), ("f16", "ab", (1536, 1536, 4096)),
         ("f16", "ab", (1024, 2048, 2048)),
         # 33-34: large products where 128x192 tiles leave less of the last wave idle than 128x256
         ("f16", "ab", (3000, 3000, 3000)), ("f16", "ab", (6144, 3072, 4096)),
         # 35-40: short K (16 K tiles or fewer), where a tile's prologue and epilogue weigh most
         ("f16", "ab", (4096, 4096, 1024)), ("f16", "ab", (16384, 4096, 512)), ("f16", "ab", (8192, 8192, 512)),
         ("bf16", "ab", (8192, 8192, 1024)), ("f16", "relu", (8192, 4096, 1024)), ("f16", "ab", (2048, 8192, 1024)),
         # 41-44: short K, f32 results
         ("bf16", "abT32", (8192, 8192, 1024)), ("f16", "abT32", (4096, 4096, 1024)), ("f32", "tf32", (8192, 8192, 1024)),
         ("f16", "abT32", (8192, 8192, 512)),
         # 45-46: tall short-K products (16384x4096x512, case 36, lost 3.5% to the producer loop)
         ("f16", "ab", (16384, 4096, 1024)), ("f16", "ab", (32768, 2048, 512)),
         # 47-54: K from 2048 to 6144, where the producer loop's TMA-stored results may pay too
         ("f16", "ab", (8192, 8192, 2048)), ("bf16", "abT32", (4096, 4096, 4096)), ("f16", "ab", (8192, 4096, 4096)),
         ("f16", "ab", (4096, 4096, 3072)), ("f16", "relu", (8192, 8192, 4096)), ("f32", "tf32", (8192, 8192, 4096)),
         ("f16", "ab", (6144, 6144, 4096)), ("f16", "ab", (4096, 4096, 6144)),
         # 55-58: which of 3000^3's dimensions costs it (0.65x cuBLAS; rows of 6000 bytes)
         ("f16", "ab", (3072, 3072, 3072)), ("f16", "ab", (3000, 3072, 3072)), ("f16", "ab", (3072, 3000, 3072)),
         ("f16", "ab", (3072, 3072, 3000)), ("f16", "abT", (3072, 3000, 3072)), ("f16", "abT", (3000, 3000, 3000)),
         # 61-62: one tile an SM or fewer, long K (a producer warpgroup beside one multiplying warpgroup?)
         ("f16", "ab", (1024, 1024, 8192)), ("f16", "ab", (1024, 2048, 4096)),
         # 63-68: the 64x128 8-stage tile's shapes, with and without a producer warpgroup
         ("bf16", "ab", (1024, 1024, 8192)), ("f16", "abT", (768, 768, 8192)), ("f16", "ab", (128, 4096, 4096)),
         ("f16", "ab", (256, 4096, 4096)), ("f16", "abT32", (1024, 1024, 8192)), ("f16", "relu", (1000, 1000, 4096)),
         # 69-72: which of relu(x @ w + b) 1000x1000x4096's dimensions the producer loses on
         ("f16", "ab", (1000, 1000, 4096)), ("f16", "ab", (1024, 1000, 4096)), ("f16", "relu", (1024, 1024, 4096)),
         ("f16", "abT", (1024, 1000, 4096)),
         # 73: the producer loop's tile where the result's rows are 16 bytes past a multiple of 32
         ("f16", "abT", (8192, 8200, 1024))]


def _label(s) -> str:
    """A candidate's name: its tag, and its K chunks where split (a launch-only field)."""
    return s.tag + (f" sp{s.splits}" if s.splits else "")


def _problem(kern, shape):
    m, n, k = shape
    launcher = launcher_for(kern)
    return launcher, problem(launcher.groups[0], launcher.layouts[0], dict(M=m, N=n, K=k), frozenset(), 132)


def _compile(job):
    src, shape, schedule = job
    kern = tiledsl.compile(src)
    launcher, _ = _problem(kern, shape)
    t0 = time.perf_counter()
    try:
        launcher.binary(0, schedule, 1, "sm_90a")
        return time.perf_counter() - t0, ""
    except Exception as err:  # noqa: BLE001 - reported per candidate
        return 0.0, str(err).splitlines()[0][:100]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=6)
    ap.add_argument("--quick", action="store_true", help="the first two cases only")
    ap.add_argument("--all", action="store_true", help="also the scalar (vec=1) candidates")
    ap.add_argument("--cases", help="indices into CASES, e.g. 0,1,2")
    ap.add_argument("--compile-only", action="store_true", help="no GPU needed")
    ap.add_argument("--sets", type=int, default=1, help="input sets to rotate among (past L2)")
    ap.add_argument("--warmup-ms", type=float, default=0.0,
                    help="warm-up per candidate in ms: 200 reaches the clock an H100 holds under sustained load")
    ap.add_argument("--match", help="only candidates whose tag (plus ' sp<n>' when split) this regular "
                                    "expression finds, and the default")
    args = ap.parse_args()
    jobs, plan = [], []
    cases = [CASES[int(i)] for i in args.cases.split(",")] if args.cases else CASES[:2] if args.quick else CASES
    for dtype, kind, shape in cases:
        src = KERNELS[kind].format(t=dtype)
        kern = tiledsl.compile(src)
        _, p = _problem(kern, shape)
        base = default(p, kern.hints)
        cands = [s for s in candidates(p, kern.hints) if s.vec > 1 or args.all]
        if args.match:
            cands = [s for s in cands if s == base or re.search(args.match, _label(s))]
        plan.append((dtype, kind, shape, src, cands, base))
        jobs += [(src, shape, s) for s in cands]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=min(16, os.cpu_count() or 2)) as pool:
        results = list(pool.map(_compile, jobs))
    failed = [(j[2].tag, e) for j, (_, e) in zip(jobs, results) if e]
    print(f"compiled {len(jobs)} candidates in {time.perf_counter() - t0:.1f} s wall "
          f"(slowest {max(t for t, _ in results):.1f} s); failed: {failed or 'none'}", flush=True)
    if args.compile_only:
        return
    import cupy as cp
    from benchmarks.common import time_cuda
    from tiledsl.runtime.launcher import set_overrides
    for dtype, kind, (m, n, k), src, cands, base in plan:
        np_t = np.float32 if dtype == "f32" else np.float16
        kern = tiledsl.compile(src)
        rng = np.random.default_rng()
        if dtype == "bf16":
            import ml_dtypes
            np_t = ml_dtypes.bfloat16
        a = cp.asarray(rng.standard_normal((m, k)).astype(np_t))
        b_shape = (k, n) if kind not in ("abT", "abT32", "tf32") else (n, k)
        b = cp.asarray(rng.standard_normal(b_shape).astype(np_t))
        extra = [cp.asarray(rng.standard_normal(n).astype(np.float32))] if kind == "relu" else []
        bm = b if kind not in ("abT", "abT32", "tf32") else b.T
        ref = cp.matmul(a.astype(cp.float32), bm.astype(cp.float32))
        if kind == "relu":
            ref = cp.maximum(ref + extra[0], 0)
        out = cp.empty((m, n), cp.float32 if kind == "abT32" else a.dtype)
        flop = 2 * m * n * k
        if kind == "tf32":     # cuBLAS with TF32 allowed, through torch
            import torch
            torch.backends.cuda.matmul.allow_tf32 = True
            ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(bm, device="cuda")
            tout = torch.empty((m, n), device="cuda")
            t_cublas = time_cuda(lambda i: torch.matmul(ta, tb, out=tout), repeats=10, warmup_ms=args.warmup_ms).median_us
        else:
            t_cublas = time_cuda(lambda i: cp.matmul(a, bm, out=out) if kind != "abT32"      # (16-bit results)
                                 else cp.matmul(a, bm), repeats=10, warmup_ms=args.warmup_ms).median_us
        sets = [(a, b)] + [(a.copy(), b.copy()) for _ in range(args.sets - 1)]
        launcher = kern._launcher = launcher_for(kern)
        rows = []
        for s in cands:
            set_overrides(launcher, {0: s})
            try:
                out.fill(float("nan"))
                kern(a, b, *extra, out=out)
                err = float(cp.linalg.norm(out.astype(cp.float32) - ref) / cp.linalg.norm(ref))
                ok = err <= (1e-3 if kind == "tf32" else {"f16": 2e-3, "bf16": 1e-2, "f32": 1e-5}[dtype])
                t = time_cuda(lambda i: kern(*sets[i % len(sets)], *extra, out=out), repeats=10,
                              n_sets=len(sets), warmup_ms=args.warmup_ms).median_us
                rows.append((t, _label(s) + ("" if ok else f" WRONG err={err:.1e}"), s == base))
            except Exception as err:  # noqa: BLE001
                rows.append((float("inf"), _label(s) + " FAILED " + str(err).splitlines()[0][:90], s == base))
        set_overrides(launcher, {})
        rows.sort(key=lambda r: r[0])
        print(f"## {dtype} {kind} {m}x{n}x{k}: cuBLAS {flop / t_cublas / 1e6:.1f} TFLOP/s; "
              f"default {base.tag}", flush=True)
        bad = [tag for _, tag, _ in rows if "WRONG" in tag or "FAILED" in tag]
        print("  wrong or failed:", bad or "none")
        for rank, (t, tag, is_default) in enumerate(rows):
            if rank < args.top or is_default:
                print(f"  {rank + 1:3d}. {flop / t / 1e6:7.1f} TFLOP/s  {t_cublas / t:5.2f}x cuBLAS  {tag}"
                      + ("  <- default" if is_default else ""), flush=True)


if __name__ == "__main__":
    main()
