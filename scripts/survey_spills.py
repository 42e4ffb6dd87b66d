"""Compile the default schedules of programs with several inputs along a reduction or many
weights (and, with --examples, the memory-bound examples and their dtype variants) over a grid of
shapes, for sm_90a (H100 and H200 bandwidth) and sm_80, with no GPU, and print each kernel that
spills (ptxas: local memory at the schedule's register cap). 2026-12-05: 886 kernels of these
programs over a smaller grid, about 70 spilled; after registers.SEVERAL_ROWS_WORDS and its kin none
there, and over this grid 6 of 1236 (the layernorm of x + r and of x + r + q at 300x262144, streamed 4
deep on sm_90a: 8 to 40 bytes); after registers.stream_depth (2026-12-05 evening), 0 of 1236 (about 2
minutes). Rows of 513 and 2049 added then: 2 of 1474 (a warp's 17 bf16 elements one by one beside
late f32 weights; 5 elements beside w and b at 32 registers, found with a wider grid) until
registers.BF16_ELEMENTS_BESIDE_LATE_WEIGHTS and full_occupancy_words: 0 of 1484. With --examples, 0 of 320.

    python scripts/survey_spills.py [--examples]        (about 5 minutes on one core)
"""
import itertools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiledsl  # noqa: E402
from tiledsl.codegen import groups_for  # noqa: E402
from tiledsl.codegen.cuda import render  # noqa: E402
from tiledsl.errors import TdslError  # noqa: E402
from tiledsl.runtime import toolchain  # noqa: E402
from tiledsl.schedule.choose import plan  # noqa: E402
from tiledsl.schedule.problem import problem  # noqa: E402

NORM = " c = {h} - mean({h}, axis=N)\n return c * rsqrt(mean(c * c, axis=N) + 1e-5) * w + b"
TEMPLATES = {   # {t}: the rows' dtype, {w}: the weights'
    "layernorm of x + r": "kernel f(x: {t}[M, N], r: {t}[M, N], w: {w}[N], b: {w}[N]) -> ({t}[M, N], {t}[M, N]) {{\n"
                          " h = x + r\n" + NORM.format(h="h") + ", h\n}}",
    "rmsnorm of x + r": "kernel f(x: {t}[M, N], r: {t}[M, N], w: {w}[N]) -> ({t}[M, N], {t}[M, N]) {{\n"
                        " h = x + r\n return h, h * rsqrt(mean(h * h, axis=N) + 1e-6) * w\n}}",
    "softmax of x * r + w": "kernel f(x: {t}[M, N], r: {t}[M, N], w: {w}[N]) -> {t}[M, N] {{\n"
                            " h = x * r + w\n e = exp(h - max(h, axis=N))\n return e / sum(e, axis=N)\n}}",
    "softmax of x + r": "kernel f(x: {t}[M, N], r: {t}[M, N]) -> ({t}[M, N], {t}[M, N]) {{ h = x + r\n"
                        " e = exp(h - max(h, axis=N))\n return e / sum(e, axis=N), h }}",
    "layernorm of x + r + q": "kernel f(x: {t}[M, N], r: {t}[M, N], q: {t}[M, N], w: {w}[N], b: {w}[N]) -> {t}[M, N] {{\n"
                              " h = x + r + q\n" + NORM.format(h="h") + "\n}}",
    "layernorm, three weights": "kernel f(x: {t}[M, N], w: {w}[N], b: {w}[N], g: {w}[N]) -> {t}[M, N] {{\n"
                                + NORM.format(h="x") + " * g\n}}",
    "layernorm": "kernel f(x: {t}[M, N], w: {w}[N], b: {w}[N]) -> {t}[M, N] {{\n" + NORM.format(h="x") + "\n}}",
    "rmsnorm": "kernel f(x: {t}[M, N], w: {w}[N]) -> {t}[M, N] {{ return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }}",
    "logsumexp of x + r": "kernel f(x: {t}[M, N], r: {t}[M, N]) -> f32[M] {{ h = f32(x) + f32(r)\n"
                          " m = max(h, axis=N)\n return log(sum(exp(h - m), axis=N)) + m }}",
    "column sum of x * r": "kernel f(x: {t}[M, N], r: {t}[M, N]) -> f32[N] {{ return sum(f32(x) * f32(r), axis=M) }}",
}
DTYPES = [("f16", "f32"), ("bf16", "f32"), ("f16", "f16"), ("f32", "f32"), ("bf16", "bf16")]
TARGETS = [("sm_90a", 4800.0), ("sm_90a", 3352.0), ("sm_80", 2000.0)]
ROWS = (1, 7, 300, 1001, 16384)
LENGTHS = (513, 1000, 1299, 2049, 4097, 8192, 12001, 20001, 36000, 65536, 100000, 262144)


def programs(examples: bool) -> dict:
    if examples:
        from dump_defaults import programs as example_programs
        return example_programs()
    return {f"{name} {t}/{w}": src.format(t=t, w=w) for name, src in TEMPLATES.items() for t, w in DTYPES}


def main() -> None:
    examples = "--examples" in sys.argv[1:]
    seen, spilled = set(), 0
    for name, src in programs(examples).items():
        k = tiledsl.compile(src)
        for (arch, gbps), m, n in itertools.product(TARGETS, ROWS, LENGTHS):
            if m * n > 2 ** 28:
                continue
            extents = {d: 1 for d in k.graph.dims}
            extents[k.graph.dims[-1]] = n
            if len(k.graph.dims) > 1:
                extents[k.graph.dims[-2]] = m
            try:
                groups = groups_for(k.graph, extents, 132, arch)
            except TdslError:
                continue
            for group, layout in groups:
                for launch in plan(problem(group, layout, extents, set(), 132, arch, gbps), k.hints):
                    key = (name, arch, launch.schedule.tag, launch.stage)
                    if key in seen:
                        continue
                    seen.add(key)
                    ks = render(k.graph, group, layout, launch.schedule, launch.stage)
                    usage = toolchain.compile_cuda(ks.source, arch=arch).resources[ks.name]
                    if usage.spill_stores or usage.local_bytes:
                        spilled += 1
                        print(f"{name} {arch} {gbps:.0f} GB/s {m}x{n}: {launch.schedule.tag} "
                              f"{usage.registers} registers, {usage.local_bytes} local bytes", flush=True)
    print(f"{len(seen)} kernels compiled, {spilled} spilled")


if __name__ == "__main__":
    main()
