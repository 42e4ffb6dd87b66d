"""A plain Triton GEMM with an optional bias + relu epilogue: the Triton peer of
bench_gemm.py (torch CUDA tensors in and out).

    matmul(a, b, out=None)               a: [M, K], b: [K, N] (f16/bf16) -> a.dtype [M, N]
    linear_relu(x, w, bias, out=None)    relu(x @ w + bias), bias f32 [N] -> x.dtype [M, N]
    chosen_config()                      the autotuner's pick for the last call, as text

One kernel: block tiles over (M, N) in grouped order (GROUP_M block rows share
their B tiles in L2), a K loop of masked loads feeding `tl.dot` with an f32
accumulator, and the epilogue (bias, relu, cast) before a masked store. A few
autotune configs of the usual H100 sizes, so tuning stays short. Not tuned further.

`import triton` is guarded: without Triton (or torch with CUDA) `available()`
returns (False, why) and the benchmark shows these rows as n/a with that note.
"""
from __future__ import annotations

# One place decides whether Triton can run here (the memory-bound peers' module).
from triton_peers import available, tl, torch, triton  # noqa: F401 - torch is used by the wrappers


def _configs():
    shapes = [  # (BM, BN, BK, warps, stages)
        (128, 256, 64, 8, 3),
        (128, 128, 64, 8, 4),
        (128, 128, 64, 4, 4),
        (64, 128, 64, 4, 4),
        (128, 64, 64, 4, 4),
    ]
    return [triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8}, num_warps=w, num_stages=s)
            for bm, bn, bk, w, s in shapes]


if triton is not None:

    @triton.autotune(configs=_configs(), key=["M", "N", "K", "HAS_BIAS", "RELU"])
    @triton.jit
    def _gemm_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
                     stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     HAS_BIAS: tl.constexpr, RELU: tl.constexpr,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
        # Which output tile: blocks walk GROUP_M tile rows at a time, column by column.
        pid = tl.program_id(0)
        tiles_m = tl.cdiv(M, BM)
        tiles_n = tl.cdiv(N, BN)
        per_group = GROUP_M * tiles_n
        first_row = (pid // per_group) * GROUP_M
        rows_here = tl.minimum(tiles_m - first_row, GROUP_M)
        tile_m = first_row + (pid % per_group) % rows_here
        tile_n = (pid % per_group) // rows_here

        offs_m = tile_m * BM + tl.arange(0, BM)
        offs_n = tile_n * BN + tl.arange(0, BN)
        offs_k = tl.arange(0, BK)
        # Rows/columns past the edge read a valid row instead (wrapped); the store masks them.
        a_rows = offs_m % M
        b_cols = offs_n % N
        a_ptrs = a_ptr + a_rows[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + b_cols[None, :] * stride_bn

        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for step in range(0, tl.cdiv(K, BK)):
            k_left = K - step * BK
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BK * stride_ak
            b_ptrs += BK * stride_bk

        if HAS_BIAS:
            bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)
            acc = acc + bias.to(tl.float32)[None, :]
        if RELU:
            acc = tl.maximum(acc, 0.0)
        c = acc.to(c_ptr.dtype.element_ty)
        c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _need():
    ok, why = available()
    if not ok:
        raise RuntimeError(why)


def _launch(a, b, bias, out, relu: bool):
    _need()
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"shapes {tuple(a.shape)} @ {tuple(b.shape)} do not chain")
    m, k = a.shape
    n = b.shape[1]
    if out is None:
        out = torch.empty((m, n), dtype=a.dtype, device=a.device)
    has_bias = bias is not None

    def grid(meta):
        return (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)

    _gemm_kernel[grid](a, b, out, bias if has_bias else out, m, n, k,
                       a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                       out.stride(0), out.stride(1), HAS_BIAS=has_bias, RELU=relu)
    return out


def matmul(a, b, out=None):
    """a @ b, result in a.dtype (f32 accumulation)."""
    return _launch(a, b, None, out, relu=False)


def linear_relu(x, w, bias, out=None):
    """relu(x @ w + bias) with the bias and relu applied in the GEMM's epilogue."""
    return _launch(x, w, bias, out, relu=True)


def chosen_config() -> str:
    """The autotuner's choice for the most recent call ('' before any)."""
    if triton is None:
        return ""
    cfg = getattr(_gemm_kernel, "best_config", None)
    if cfg is None:
        return ""
    kw = cfg.kwargs
    return (f"BM{kw.get('BM')} BN{kw.get('BN')} BK{kw.get('BK')} w{cfg.num_warps} "
            f"s{cfg.num_stages}")
