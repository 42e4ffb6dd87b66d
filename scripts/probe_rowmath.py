"""Probe (device run): the per-row arithmetic of the norm kernels, text-patched into
the rendered default kernels and timed against them in alternation (three rounds):

- noround: a result cast to f16 and then stored as f16 is rounded once, at the store
  (the cast's f32 -> f16 -> f32 trip and the store's f32 -> f16 are three
  conversions an element where one gives the same bits);
- rsq: rsqrt on the hardware's approximation (rsqrtf: MUFU.RSQ, 2 ulp) instead of a
  correctly rounded 1 / sqrt;
- rcpn: a mean as the sum times 1/n (computed once per kernel) instead of a divide
  by n, once a row;
- all three.

    python scripts/probe_rowmath.py [name:MxN ...]
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy  # noqa: E402

import tiledsl  # noqa: E402
import tiledsl.codegen.cuda as cg  # noqa: E402
import tiledsl.runtime.launcher as L  # noqa: E402
from benchmarks.bench_memory import LAYERNORM16_TDSL, LAYERNORM_TDSL, RMSNORM_TDSL  # noqa: E402
from benchmarks.common import copy_bandwidth, input_sets_needed  # noqa: E402
from tiledsl.inputs import random_arguments  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from text_patch import report, schedules, time_both  # noqa: E402


def noround(src: str) -> str:
    # only where the rounded value is what the next line stores
    return re.sub(r"const float (v\d+) = tdsl::round_f16\((v\d+)\);(\s*\S+ = tdsl::f32_to_f16\(\1\);)",
                  r"const float \1 = \2;\3", src)


def rsq(src: str) -> str:
    return src.replace("tdsl::rsqrt(", "rsqrtf(")


def rcpn(src: str) -> str:
    src = src.replace("const idx_t n1 = (idx_t)n1_arg;",
                      "const idx_t n1 = (idx_t)n1_arg;\n    const float inv_n1_ = 1.0f / (float)(n1);", 1)
    return re.sub(r"(acc\d+) / \(float\)\(n1\)", r"\1 * inv_n1_", src)


VARIANTS = {"noround": noround, "rsq": rsq, "rcpn": rcpn,
            "all": lambda s: rcpn(rsq(noround(s)))}
STATE = {"on": False, "variant": None}
_render, _key_parts = cg.render, L.kernel_key_parts


def _patched(graph, group, layout, schedule, stage=1):
    ks = _render(graph, group, layout, schedule, stage)
    if not STATE["on"]:
        return ks
    new = VARIANTS[STATE["variant"]](ks.source)
    assert new != ks.source, f"{STATE['variant']} changed nothing in {ks.name}"
    return cg.KernelSource(ks.name, new, ks.schedule, ks.layout)


cg.render = _patched
L.kernel_key_parts = lambda *a: _key_parts(*a) + ((STATE["variant"],) if STATE["on"] else ())


class _Flag(dict):      # time_both's flag: turning it on turns on this variant
    def __setitem__(self, k, v):
        STATE[k] = v
        super().__setitem__(k, v)


CASES = [("layernorm", LAYERNORM_TDSL, 4096, 8192), ("layernorm16", LAYERNORM16_TDSL, 4096, 8192),
         ("layernorm16", LAYERNORM16_TDSL, 65536, 1024), ("rmsnorm", RMSNORM_TDSL, 65536, 1024),
         ("rmsnorm", RMSNORM_TDSL, 4096, 8192), ("layernorm", LAYERNORM_TDSL, 65536, 1024),
         ("layernorm", LAYERNORM_TDSL, 16384, 4096)]
only = sys.argv[1:]
ref_copy = copy_bandwidth()["gbps"]
print(f"copy 1 GiB: {ref_copy:.0f} GB/s", flush=True)
for name, src, M, N in CASES:
    if only and f"{name}:{M}x{N}" not in only:
        continue
    plain = tiledsl.compile(src)
    host = random_arguments(plain.graph, dict(M=M, N=N))
    arrays = [a for a in host if hasattr(a, "nbytes")]
    nbytes = arrays[0].nbytes * 2 + sum(a.nbytes for a in arrays[1:])
    n_sets = input_sets_needed(nbytes)
    same = copy_bandwidth(nbytes // 2, repeats=30, rotate=True, warmup_ms=100)["gbps"]
    sets = [[cupy.asarray(a) if hasattr(a, "nbytes") else a for a in host] for _ in range(n_sets)]
    plain(*sets[0])
    base, chosen = schedules(plain, dict(M=M, N=N), ["DEFAULT"])
    want = plain.reference(*host, compute="f64")
    print(f"\n## {name} {M}x{N}: copy of same bytes {same:.0f} GB/s ({same / ref_copy:.3f}x)", flush=True)
    for variant in VARIANTS:
        STATE["variant"] = variant
        ks = {False: plain, True: tiledsl.compile(src + f"\n# {variant}\n")}
        flag = _Flag(on=False)
        report(time_both(ks, flag, base, sets, n_sets, want), ("plain  ", f"{variant:7s}"), base, base,
               nbytes, ref_copy, same)
