"""Probe (device run): layernorm's two block reductions (the mean, then the
variance about it) against one, each thread's (count, mean, M2) merged across
the block by Chan's formula, text-patched into the rendered kernels and timed
in alternation, three rounds, at the benchmark's layernorm shapes.

    python scripts/probe_chan.py
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import numpy as np, cupy
import tiledsl
from benchmarks.bench_memory import LAYERNORM16_TDSL
from benchmarks.common import copy_bandwidth, input_sets_needed
from tiledsl.inputs import random_arguments

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from text_patch import install, report, schedules, time_both  # noqa: E402

HELPER = r'''
__device__ __forceinline__ void chan_merge(float& n, float& m, float& q, float n2, float m2, float q2) {
    const float nn = n + n2;
    const float r = nn > 0.f ? __fdividef(n2, nn) : 0.f;
    const float d = m2 - m;
    m = fmaf(d, r, m);
    q = q + q2 + d * d * n * r;
    n = nn;
}
template <int width>
__device__ __forceinline__ void chan_warp(float& n, float& m, float& q) {
#pragma unroll
    for (int o = width / 2; o > 0; o /= 2) {
        const float n2 = __shfl_xor_sync(0xffffffffu, n, o), m2 = __shfl_xor_sync(0xffffffffu, m, o),
                    q2 = __shfl_xor_sync(0xffffffffu, q, o);
        chan_merge(n, m, q, n2, m2, q2);
    }
}
template <int threads>
__device__ __forceinline__ void chan_block(float& n, float& m, float& q, float (*scratch)[3]) {
    chan_warp<32>(n, m, q);
    constexpr int warps = threads / 32;
    if (warps > 1) {
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        if (lane == 0) { scratch[warp][0] = n; scratch[warp][1] = m; scratch[warp][2] = q; }
        __syncthreads();
        n = scratch[lane % warps][0]; m = scratch[lane % warps][1]; q = scratch[lane % warps][2];
        chan_warp<warps>(n, m, q);
    }
    m = __shfl_sync(0xffffffffu, m, 0);     // lane 0 of every warp merged in the same order
    q = __shfl_sync(0xffffffffu, q, 0);
}
'''

def chan(src: str, items: int, vec: int) -> str:
    red = r"(acc(\d+)) = tdsl::block_reduce<tdsl::Sum, (\d+)>\(acc\2, scratch\2\[flip\]\);\n(\s*)const float v(\d+) = acc\2 / \(float\)\(n1\);"
    ms = list(re.finditer(red, src))
    assert len(ms) == 2, len(ms)
    a, b = ms
    mean_v, var_v, threads = a.group(5), b.group(5), a.group(3)
    ind = a.group(4)
    head = src[:a.start()]
    mid = src[a.end():b.start()]
    tail = src[b.end():]
    cnt = f"int cnt_ = 0;{ind}for (int j = 0; j < {items}; ++j) cnt_ += (lane + (idx_t)j * TPR < rvec) ? {vec} : 0;"
    first = f"{cnt}{ind}const float mloc_ = cnt_ ? acc{a.group(2)} / (float)cnt_ : 0.f;"
    mid = mid.replace(f"- v{mean_v})", "- mloc_)")
    ind2 = b.group(4)
    second = (f"float n_ = (float)cnt_, m_ = mloc_, q_ = acc{b.group(2)};{ind2}"
              f"chan_block<{threads}>(n_, m_, q_, chan_scratch[flip]);{ind2}"
              f"const float v{mean_v} = m_;{ind2}const float v{var_v} = q_ / (float)(n1);")
    out = head + first + mid + second + tail
    out = out.replace("    int flip = 0;", "    __shared__ float chan_scratch[2][32][3];\n    int flip = 0;", 1)
    out = out.replace('extern "C" __global__', HELPER + '\nextern "C" __global__', 1)
    return out


FLAG = install("chan", lambda src, schedule: chan(src, schedule.items, schedule.vec))

LN = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "layernorm.tdsl")).read()
CASES = [("layernorm", LN, 4096, 8192, ["p_x32$", "nh_r40_x32$"]),
         ("layernorm16", LAYERNORM16_TDSL, 4096, 8192, ["nh_r40_x32$", "_p_x32$"]),
         ("layernorm", LN, 16384, 4096, ["DEFAULT"]),
         ("layernorm", LN, 65536, 1024, ["DEFAULT"]),
         ("layernorm16", LAYERNORM16_TDSL, 65536, 1024, ["DEFAULT"])]
ref_copy = copy_bandwidth()["gbps"]
print(f"copy 1 GiB: {ref_copy:.0f} GB/s", flush=True)
for name, src, M, N, pats in CASES:
    ks = {False: tiledsl.compile(src), True: tiledsl.compile(src + "\n# chan\n")}
    host = random_arguments(ks[False].graph, dict(M=M, N=N))
    host[0] = (host[0].astype(np.float32) * 3 + 20).astype(host[0].dtype)   # a mean far from 0
    want = ks[False].reference(*host, compute="f64")
    nbytes = host[0].nbytes * 2 + host[1].nbytes + host[2].nbytes
    n_sets = input_sets_needed(nbytes)
    sets = [[cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in host] for _ in range(n_sets)]
    same = copy_bandwidth(nbytes // 2, repeats=30, rotate=True, warmup_ms=100)["gbps"]
    ks[False](*sets[0])
    base, chosen = schedules(ks[False], dict(M=M, N=N), pats, per_pattern=2,
                             same=lambda s, b: s.vec == 8 and s.block == b.block)
    print(f"\n## {name} {M}x{N}: copy of same bytes {same:.0f} GB/s ({same / ref_copy:.3f}x)", flush=True)
    for s in chosen:
        report(time_both(ks, FLAG, s, sets, n_sets, want), ("two ", "chan"), s, base, nbytes, ref_copy, same)
