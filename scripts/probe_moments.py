"""Probe (device run): layernorm's two block reductions (the mean, then the mean
square about it) against one reduction of the sum and the sum of squares,
var = E[x^2] - mean^2, taken only where that cannot cancel (mean^2 <= 4 var);
otherwise the row falls back to the centered second pass it has now. Text-patched
into the rendered kernels, timed in alternation, three rounds, at the benchmark's
layernorm shapes, on inputs centred near 0 (one pass) and far from it (fallback).

    python scripts/probe_moments.py
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
template <int threads>
__device__ __forceinline__ void pair_block_reduce(float& a, float& b, float* sa, float* sb) {
    constexpr int warps = threads / 32;
#pragma unroll
    for (int o = 16; o > 0; o /= 2) { a += __shfl_xor_sync(0xffffffffu, a, o); b += __shfl_xor_sync(0xffffffffu, b, o); }
    if (warps == 1) return;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) { sa[warp] = a; sb[warp] = b; }
    __syncthreads();
    a = sa[lane % warps]; b = sb[lane % warps];
#pragma unroll
    for (int o = warps / 2; o > 0; o /= 2) { a += __shfl_xor_sync(0xffffffffu, a, o); b += __shfl_xor_sync(0xffffffffu, b, o); }
}
'''

def moments(src: str) -> str:
    first = re.search(r"(float acc(\d+) = 0x0\.0p\+0f;\n)", src)
    a = first.group(2)
    comb = re.search(rf"acc{a} = tdsl::Sum::combine\(acc{a}, v(\d+)\);", src)
    x = comb.group(1)
    red = re.search(rf"acc{a} = tdsl::block_reduce<tdsl::Sum, (\d+)>\(acc{a}, scratch{a}\[flip\]\);\n(\s*)"
                    rf"const float v(\d+) = acc{a} / \(float\)\(n1\);", src)
    threads, ind, mean = red.group(1), red.group(2), red.group(3)
    second = re.compile(r"float acc(\d+) = 0x0\.0p\+0f;\n(.*?)(acc\1 = tdsl::block_reduce<tdsl::Sum, \d+>\(acc\1, "
                        r"scratch\1\[flip\]\);)\n(\s*)const float v(\d+) = acc\1 / \(float\)\(n1\);", re.S)
    s2 = second.search(src, red.end())
    b, body, bred, ind2, var = s2.groups()
    out = (src[:first.start()] + first.group(1) + f"{ind}float accq_ = 0.f;\n" + src[first.end():comb.end()]
           + f" accq_ = fmaf(v{x}, v{x}, accq_);" + src[comb.end():red.start()]
           + f"pair_block_reduce<{threads}>(acc{a}, accq_, scratch{a}[flip], scratchq_[flip]);\n{ind}"
           + f"const float v{mean} = acc{a} / (float)(n1);\n{ind}"
           + f"const float varq_ = fmaxf(accq_ / (float)(n1) - v{mean} * v{mean}, 0.f);\n{ind}"
           + f"const bool centered_ = !(4.f * varq_ >= v{mean} * v{mean});"
           + src[red.end():s2.start()]
           + f"float acc{b} = 0x0.0p+0f;\n{ind2}if (centered_) {{\n{body}{bred}\n{ind2}}}\n"
           + f"{ind2}const float v{var} = centered_ ? acc{b} / (float)(n1) : varq_;" + src[s2.end():])
    out = out.replace("    int flip = 0;", "    __shared__ float scratchq_[2][32];\n    int flip = 0;", 1)
    out = out.replace('extern "C" __global__', HELPER + '\nextern "C" __global__', 1)
    return out


FLAG = install("moments", lambda src, schedule: moments(src))

LN = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "layernorm.tdsl")).read()
CASES = [("layernorm", LN, 4096, 8192, ["DEFAULT", "nh_r40_x32$"]),
         ("layernorm16", LAYERNORM16_TDSL, 4096, 8192, ["DEFAULT", "nh_r40_x32$"]),
         ("layernorm", LN, 16384, 4096, ["DEFAULT"]),
         ("layernorm", LN, 65536, 1024, ["DEFAULT"]),
         ("layernorm16", LAYERNORM16_TDSL, 65536, 1024, ["DEFAULT"]),
         ("layernorm16", LAYERNORM16_TDSL, 16384, 4096, ["DEFAULT"])]
only = sys.argv[1:]
ref_copy = copy_bandwidth()["gbps"]
print(f"copy 1 GiB: {ref_copy:.0f} GB/s", flush=True)
for name, src, M, N, pats in CASES:
    if only and f"{name}:{M}x{N}" not in only:
        continue
    ks = {False: tiledsl.compile(src), True: tiledsl.compile(src + "\n# moments\n")}
    host = random_arguments(ks[False].graph, dict(M=M, N=N))
    far = [a.copy() if isinstance(a, np.ndarray) else a for a in host]
    far[0] = (far[0].astype(np.float32) * 3 + 20).astype(far[0].dtype)     # a mean far from 0: the fallback
    nbytes = host[0].nbytes * 2 + host[1].nbytes + host[2].nbytes
    n_sets = input_sets_needed(nbytes)
    same = copy_bandwidth(nbytes // 2, repeats=30, rotate=True, warmup_ms=100)["gbps"]
    ks[False](*[cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in host])
    base, chosen = schedules(ks[False], dict(M=M, N=N), pats, same=lambda s, b: s.vec == b.vec and s != b)
    print(f"\n## {name} {M}x{N}: copy of same bytes {same:.0f} GB/s ({same / ref_copy:.3f}x)", flush=True)
    for data_name, data in (("near 0", host), ("far", far)):
        want = ks[False].reference(*data, compute="f64")
        sets = [[cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in data] for _ in range(n_sets)]
        for s in chosen:
            report(time_both(ks, FLAG, s, sets, n_sets, want), (f"{data_name:6s} two", f"{data_name:6s} one"), s, base,
                   nbytes, ref_copy, same)
