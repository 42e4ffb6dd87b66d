"""Probe (device run): reductions across memory (column sums and means of x[M, N], N
innermost: a bias's gradient, a batch's statistics) by hand-written kernels that read 16
bytes of neighbouring columns a thread and share each column among several threads of a
block (row groups), against tiledsl's default and its other column schedules, torch and
CuPy. The hand kernel: a block of TC threads across the columns (VEC columns each) by RG
row groups; each thread walks every RG-th row of its block's chunk of rows, UNROLL loads
in flight; the row groups combine in shared memory and each chunk's partial sums go to a
buffer that a second kernel adds. Every result is checked against float64 first; three
interleaved rounds, median microseconds, and the bytes read over copy bandwidth.

    python scripts/probe_col_tiles.py [names to keep]      (SWEEP=1: chunk lengths of the column tiles)
"""
import os
import statistics
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import row_probe  # noqa: E402  (beside this script)
from benchmarks import triton_peers  # noqa: E402
from benchmarks.common import copy_bandwidth, optional_torch, time_cuda  # noqa: E402
from tiledsl.errors import TdslError  # noqa: E402
from tiledsl.inputs import relative_error  # noqa: E402
from tiledsl.runtime.launcher import _sm_count, set_overrides  # noqa: E402
from tiledsl.schedule import choose  # noqa: E402
from tiledsl.schedule.schedules import Schedule  # noqa: E402

SUM = "kernel f(x: {t}[M, N]) -> f32[N] {{ return sum(x, axis=M) }}"
MEAN = "kernel f(x: {t}[M, N]) -> f32[N] {{ return mean(x, axis=M) }}"
CASES = [("mean f16", MEAN.format(t="f16"), {"M": 65536, "N": 768}),
         ("mean bf16", MEAN.format(t="bf16"), {"M": 65536, "N": 1024}),
         ("sum f32", SUM.format(t="f32"), {"M": 16384, "N": 4096}),
         ("sum f16", SUM.format(t="f16"), {"M": 16384, "N": 4096}),
         ("sum f32 small", SUM.format(t="f32"), {"M": 4096, "N": 1024}),
         ("sum f16 wide", SUM.format(t="f16"), {"M": 1024, "N": 65536}),
         ("sum f32 wide", SUM.format(t="f32"), {"M": 2048, "N": 32768}),
         ("sum f32 narrow", SUM.format(t="f32"), {"M": 1 << 20, "N": 64}),
         ("sum f16 narrow", SUM.format(t="f16"), {"M": 1 << 20, "N": 128}),
         ("sum f16 64 columns", SUM.format(t="f16"), {"M": 1 << 20, "N": 64}),
         ("sum f16 square", SUM.format(t="f16"), {"M": 8192, "N": 8192}),
         ("sum bf16 4096", SUM.format(t="bf16"), {"M": 4096, "N": 4096})]

SWEEP = os.environ.get("SWEEP") == "1"  # the default's column tiles at chunk lengths, the old default, one hand kernel
# (threads across the columns, row groups, loads in flight, waves of blocks)
HAND_SHAPES = ((32, 8, 4, 1), (64, 4, 4, 1), (64, 8, 4, 1), (128, 2, 4, 1), (128, 4, 4, 1),
               (64, 4, 8, 1), (64, 4, 4, 2), (256, 1, 4, 1), (32, 16, 4, 1))
CTYPE = {"f16": "__half", "bf16": "__nv_bfloat16", "f32": "float"}
TO_F32 = {"f16": "__half2float", "bf16": "__bfloat162float", "f32": ""}

HAND = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define T {ctype}
#define VEC {vec}
#define TC {tc}
#define RG {rg}
#define UNROLL {unroll}
union Pack {{ uint4 u; T v[VEC]; }};
extern "C" __global__ void __launch_bounds__(TC * RG) partial_sums(const T* __restrict__ x, float* __restrict__ part,
                                                                   long long M, int N, long long chunk) {{
    __shared__ float s[RG > 1 ? RG - 1 : 1][TC][VEC + 1];
    const int tc = threadIdx.x % TC, rg = threadIdx.x / TC;
    const int col0 = (blockIdx.x * TC + tc) * VEC;
    const long long rbegin = (long long)blockIdx.y * chunk;
    const long long rend = M < rbegin + chunk ? M : rbegin + chunk;
    float acc[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc[e] = 0.f;
    if (col0 < N) {{
        long long r = rbegin + rg;
        for (; r + (long long)(UNROLL - 1) * RG < rend; r += (long long)UNROLL * RG) {{
            Pack p[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) p[u].u = __ldg((const uint4*)(x + (r + (long long)u * RG) * N + col0));
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
#pragma unroll
                for (int e = 0; e < VEC; ++e) acc[e] += {to_f32}(p[u].v[e]);
        }}
        for (; r < rend; r += RG) {{
            Pack p;
            p.u = __ldg((const uint4*)(x + r * N + col0));
#pragma unroll
            for (int e = 0; e < VEC; ++e) acc[e] += {to_f32}(p.v[e]);
        }}
    }}
    if (RG > 1) {{
        if (rg > 0) {{
#pragma unroll
            for (int e = 0; e < VEC; ++e) s[rg - 1][tc][e] = acc[e];
        }}
        __syncthreads();
        if (rg > 0) return;
#pragma unroll
        for (int g = 0; g < RG - 1; ++g)
#pragma unroll
            for (int e = 0; e < VEC; ++e) acc[e] += s[g][tc][e];
    }}
    if (col0 < N) {{
#pragma unroll
        for (int e = 0; e < VEC; ++e) part[(long long)blockIdx.y * N + col0 + e] = acc[e];
    }}
}}
extern "C" __global__ void add_partials(const float* __restrict__ part, float* __restrict__ out, int N, int splits,
                                        float scale) {{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= N) return;
    float a = 0.f;
    for (int s = 0; s < splits; ++s) a += part[(long long)s * N + c];
    out[c] = a * scale;
}}
"""


class Hand:
    def __init__(self, dtype: str, n: int, m: int, tc: int, rg: int, unroll: int, waves: int, mean: bool):
        self.vec = 16 // (4 if dtype == "f32" else 2)
        self.tc = min(tc, n // self.vec)
        self.rg, self.n, self.m = rg, n, m
        mod = cp.RawModule(code=HAND.format(ctype=CTYPE[dtype], vec=self.vec, tc=self.tc, rg=rg, unroll=unroll,
                                            to_f32=TO_F32[dtype]), options=("-std=c++17",))
        self.partial, self.add = mod.get_function("partial_sums"), mod.get_function("add_partials")
        self.gx = -(-n // (self.tc * self.vec))
        per_sm = max(1, 2048 // (self.tc * rg))
        want = _sm_count(0) * per_sm * waves
        self.splits = max(1, min(want // self.gx, -(-m // (rg * unroll))))
        self.chunk = -(-m // self.splits)
        self.splits = -(-m // self.chunk)
        self.part = cp.empty((self.splits, n), cp.float32)
        self.scale = np.float32(1.0 / m if mean else 1.0)
        self.label = f"hand tc{self.tc} rg{rg} u{unroll} w{waves} ({self.gx}x{self.splits} blocks)"

    def __call__(self, x, out):
        self.partial((self.gx, self.splits), (self.tc * self.rg,),
                     (x, self.part, np.int64(self.m), np.int32(self.n), np.int64(self.chunk)))
        self.add((-(-self.n // 256),), (256,), (self.part, out, np.int32(self.n), np.int32(self.splits), self.scale))
        return out


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    torch = optional_torch()
    jobs = []
    for case, d in row_probe.prepared(CASES, sys.argv[1:]):
        k, p = case.kernel, case.problem
        dtype = case.name.split()[1]
        mean = case.name.startswith("mean")
        m, n = case.extents["M"], case.extents["N"]
        variants = {"default": d}
        if SWEEP:   # column tiles of 16 and 32 vectors, registers for 2048 threads, chunks of L loads a thread
            for columns in (16, 32):
                t = columns.column_tile_split(p, columns, 512, full=True)
                if t is None:
                    continue
                for loads in (8, 16, 32, 64, 128, 256):
                    splits = min(t.splits, -(-p.row_length // (loads * t.row_threads)))
                    if splits >= 2 and replace(t, splits=splits) not in variants.values():
                        variants.setdefault(f"cols{columns} {loads} loads s{splits}", replace(t, splits=splits))
            for s in choose.candidates(p, k.hints):     # the old default: pairs of columns
                if s.kind == "reduce_split" and s.row_threads == 1 and s.vec == columns.paired_columns(p):
                    variants.setdefault(s.tag + f" s{s.splits}", s)
                    break
        elif d.kind == "reduce_split":        # more chunks (more blocks an SM), and narrower blocks
            limit = columns.max_splits(p, d.row_threads, d.vec)
            for block in sorted({d.block, 128}):
                for times in (1, 2, 4, 8):
                    splits = min(limit, d.splits * times * d.block // block)
                    try:
                        v = replace(d, block=block, splits=splits,
                                    row_threads=d.row_threads if block == d.block else 1)
                    except TdslError:
                        continue
                    if not choose.fits(p, v):
                        variants.setdefault(f"b{block} splits {splits}", v)
        if d.kind == "reduce_split" and d.row_threads > 1:     # the tile with more loads in flight a thread
            for unroll in (2, 4, 8):
                for blocks in dict.fromkeys((d.min_blocks, 1)):
                    try:
                        v = replace(d, unroll=unroll, min_blocks=blocks)
                    except TdslError:
                        continue
                    if not choose.fits(p, v):
                        variants.setdefault(f"default u{unroll} b{blocks}", v)
        for s in choose.candidates(p, k.hints) if not SWEEP else ():
            if s.kind in ("reduce_split", "reduce_col") and s != d:
                variants.setdefault(s.tag + f" s{s.splits}", s)
        vec = 16 // (4 if dtype == "f32" else 2)
        for tc, rg, unroll, waves in HAND_SHAPES if not SWEEP else ():   # tiledsl's tiles in the hand kernels' shapes
            tc = min(tc, n // vec)
            gx, block = -(-n // (tc * vec)), tc * rg
            splits = max(1, min(_sm_count(0) * max(1, 2048 // block) * waves // gx, -(-m // (rg * unroll))))
            for blocks in dict.fromkeys((1, 2048 // block)):
                try:
                    v = Schedule("reduce_split", block=block, vec=vec, items=0, row_threads=rg, splits=splits,
                                 unroll=unroll, min_blocks=blocks, index64=p.index64)
                except TdslError:
                    continue
                if splits >= 2 and not choose.fits(p, v):
                    variants.setdefault(f"tdsl tc{tc} rg{rg} u{unroll} w{waves} b{blocks} ({gx}x{splits})", v)
        variants = row_probe.exact(case, variants, bound=1e-4)
        calls = {}      # label -> (setup before timing, call)
        for label, s in variants.items():
            calls[f"{label} {s.tag}" if label == "default" else label] = (
                lambda s=s, k=k: set_overrides(k._launcher, {0: s}), lambda i, k=k, c=case: k(*c.sets[i], out=c.out))
        x0 = case.sets[0][0]
        for tc, rg, unroll, waves in HAND_SHAPES if not SWEEP else ((32, 16, 4, 1),):
            h = Hand(dtype, n, m, tc, rg, unroll, waves, mean)
            if h.label in calls:
                continue
            got = h(x0, cp.full(n, np.nan, cp.float32))
            err = relative_error(cp.asnumpy(got).astype(np.float64), case.want)
            if not err <= 1e-4:
                print(f"{case.name} {h.label}: err {err:.1e}, dropped", flush=True)
                continue
            calls[h.label] = (None, lambda i, h=h, c=case: h(c.sets[i][0], c.out))
        peers = {"cupy.sum(axis=0, f32)": lambda i, c=case: c.sets[i][0].sum(axis=0, dtype=cp.float32)}
        if torch is not None:
            try:
                tx = [torch.as_tensor(s[0], device="cuda") for s in case.sets]
            except Exception as e:      # (a dtype torch cannot take from CuPy)
                print(f"{case.name}: torch: {e}")
            else:
                peers["torch.mean(dim=0, f32)" if mean else "torch.sum(dim=0, f32)"] = (
                    (lambda i, tx=tx: tx[i].mean(dim=0, dtype=torch.float32)) if mean
                    else (lambda i, tx=tx: tx[i].sum(dim=0, dtype=torch.float32)))
                if triton_peers.available()[0]:     # benchmarks/triton_peers.py: tile picked by timing, sums only
                    tout = torch.empty(n, dtype=torch.float32, device="cuda")
                    triton_peers.column_sum(tx[0], out=tout)
                    best = triton_peers.column_sum_config(tx[0])
                    peers[f"triton sums {best}"] = lambda i, tx=tx, tout=tout: triton_peers.column_sum(tx[i], out=tout)
        for label, call in peers.items():
            try:
                call(0)
            except Exception as e:
                print(f"{case.name}: {label}: {e}")
            else:
                calls[label] = (None, call)
        jobs.append((case, calls))
    times = {}
    for _ in range(3):
        for n_case, (case, calls) in enumerate(jobs):
            for label, (setup, call) in calls.items():
                if setup is not None:
                    setup()
                t = time_cuda(call, n_sets=len(case.sets), repeats=20, warmup_ms=20)
                times.setdefault((n_case, label), []).append(t.median_us)
    for n_case, (case, calls) in enumerate(jobs):
        nbytes = case.sets[0][0].nbytes
        rows = sorted(((statistics.median(times[(n_case, label)]), label) for label in calls))
        print(f"{case.name} {case.extents['M']}x{case.extents['N']} ({nbytes / 2**20:.0f} MiB read):")
        for us, label in rows[:12] + [r for r in rows[12:] if r[1].startswith(("default", "torch", "cupy"))]:
            print(f"  {us:8.1f} us {nbytes / us / 1e3 / copy:5.2f}x copy  {label}")
        sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except TdslError as e:
        raise SystemExit(f"probe: {e}")
