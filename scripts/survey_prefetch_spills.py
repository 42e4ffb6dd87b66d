"""Compile the prefetching twin (Schedule.prefetch, resident.persistent_cluster_twins) of every
default that holds its rows across a cluster's blocks of 1024 on a persistent grid, for sm_90a,
with no GPU, and print its registers and local memory. 2026-12-06: of 60 kernels (11 programs,
f32/f16/bf16 rows with f32 or like weights, rows of 200000, 262144 and 524288) one spilled, rmsnorm
f32 at 262144 (8 float4 a thread, 16 bytes); hence resident.without_spilled_prefetch asks the
compiled kernel rather than a rule on weights.

    python scripts/survey_prefetch_spills.py        (about 2 minutes on one core)
"""
import itertools
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiledsl  # noqa: E402
from survey_spills import TEMPLATES  # noqa: E402
from tiledsl.codegen.cuda import render  # noqa: E402
from tiledsl.runtime import toolchain  # noqa: E402
from tiledsl.schedule import resident  # noqa: E402
from tiledsl.schedule.choose import default  # noqa: E402
from tiledsl.schedule.layout import plan_layout  # noqa: E402
from tiledsl.schedule.partition import partition  # noqa: E402
from tiledsl.schedule.problem import problem  # noqa: E402

progs = dict(TEMPLATES)
progs["rmsnorm"] = "kernel r(x: {t}[M, N], w: {w}[N]) -> {t}[M, N] {{ return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }}"
progs["layernorm"] = ("kernel l(x: {t}[M, N], w: {w}[N], b: {w}[N]) -> {t}[M, N] {{\n m = mean(x, axis=N)\n d = x - m\n"
        " return d * rsqrt(mean(d * d, axis=N) + 1e-5) * w + b\n}}")
progs["softmax"] = "kernel f(x: {t}[M, N]) -> {t}[M, N] {{\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}}"
progs["l2norm"] = "kernel n(x: {t}[M, N]) -> {t}[M, N] {{ return x * rsqrt(sum(x * x, axis=N) + 1e-12) }}"
progs["logsumexp"] = "kernel s(x: {t}[M, N]) -> f32[M] {{ m = max(x, axis=N)\n return log(sum(exp(x - m), axis=N)) + m }}"


def main() -> None:
    for name, t, w, n in itertools.product(progs, ["f32", "f16", "bf16"], ["f32", "same"], [262144, 200000, 524288]):
        w = t if w == "same" else w
        try:
            k = tiledsl.compile(progs[name].format(t=t, w=w))
        except tiledsl.TdslError:      # (a program some dtype cannot take)
            continue
        for g in partition(k.graph):
            lay = plan_layout(g, k.graph)
            p = problem(g, lay, dict(M=300, N=n), frozenset(), 132, "sm_90a", 3352.0)
            s = default(p, k.hints)
            if not (s.kind == "reduce_row" and s.cluster > 1 and s.persistent):
                continue
            twins = resident.persistent_cluster_twins(p, replace(s, persistent=False, prefetch=False))
            if len(twins) < 2:
                print(f"{name:26s} {t:4s} {w:4s} {n}: {s.tag} has no prefetching twin")
                continue
            ks = render(k.graph, g, lay, twins[1], 1)
            u = toolchain.compile_cuda(ks.source, arch="sm_90a").resources[ks.name]
            print(f"{name:26s} {t:4s} {w:4s} {n}: default {s.tag:42s} weights {len(p.layout.weight_inputs)}, "
                  f"prefetching {u.registers} registers, {u.local_bytes} bytes local", flush=True)


if __name__ == "__main__":
    main()
