"""Probe (device run): a survey of common memory-bound programs at shapes the
benchmark does not cover, each under its default schedule, to find the slow
paths: median microseconds and the ratio of the bytes moved (inputs read once,
the result written once) to copy. Each result is checked against the float64
reference first; three rounds, a case's schedules interleaved. Each case is
reported as soon as it is timed, so a call cut short still reports the ones before.

    python scripts/probe_survey.py [names to keep]
    SURVEY_ALL=1 python scripts/probe_survey.py [names]   (also the 4 fastest of every tuner candidate)
    SURVEY_CLUSTERS=1 python scripts/probe_survey.py [names]   (a row also shared by a cluster's blocks)
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
import row_probe  # noqa: E402  (beside this script)
from tiledsl.schedule import choose, columns, rows  # noqa: E402

K = "kernel f"
CASES = [
    ("column sums", f"{K}(x: f32[M, N]) -> f32[N] {{ return sum(x, axis=M) }}", {"M": 16384, "N": 4096}),
    ("column sums, 8 wide", f"{K}(x: f32[M, N]) -> f32[N] {{ return sum(x, axis=M) }}", {"M": 1 << 22, "N": 8}),
    ("column sums, 33 wide", f"{K}(x: f32[M, N]) -> f32[N] {{ return sum(x, axis=M) }}", {"M": 1 << 20, "N": 33}),
    ("row sums", f"{K}(x: f32[M, N]) -> f32[M] {{ return sum(x, axis=N) }}", {"M": 1 << 16, "N": 1024}),
    ("middle-axis sums", f"{K}(x: f32[B, T, C]) -> f32[B, C] {{ return sum(x, axis=T) }}",
     {"B": 64, "T": 1024, "C": 512}),
    ("full sum", f"{K}(x: f32[N]) -> f32 {{ return sum(x) }}", {"N": 1 << 26}),
    ("column softmax", f"{K}(x: f32[M, N]) -> f32[M, N] {{\n e = exp(x - max(x, axis=M))\n"
     " return e / sum(e, axis=M)\n}", {"M": 4096, "N": 4096}),
    ("column softmax, 64 tall", f"{K}(x: f32[M, N]) -> f32[M, N] {{\n e = exp(x - max(x, axis=M))\n"
     " return e / sum(e, axis=M)\n}", {"M": 64, "N": 1 << 20}),
    ("column softmax, 8 wide", f"{K}(x: f32[M, N]) -> f32[M, N] {{\n e = exp(x - max(x, axis=M))\n"
     " return e / sum(e, axis=M)\n}", {"M": 1 << 21, "N": 8}),
    ("logsumexp", f"{K}(x: f32[M, N]) -> f32[M] {{\n m = max(x, axis=N)\n"
     " return m + log(sum(exp(x - m), axis=N))\n}", {"M": 16384, "N": 1024}),
    ("l2 normalize", f"{K}(x: f32[M, N]) -> f32[M, N] {{ return x * rsqrt(sum(x * x, axis=N)) }}",
     {"M": 16384, "N": 1024}),
    ("row scale", f"{K}(x: f32[M, N], b: f32[M]) -> f32[M, N] {{ return x * b }}", {"M": 16384, "N": 4096}),
    ("3-D bias", f"{K}(x: f32[B, T, C], p: f32[T, C]) -> f32[B, T, C] {{ return x + p }}",
     {"B": 32, "T": 1024, "C": 1024}),
    ("bf16 gelu", f"{K}(x: bf16[N]) -> bf16[N] {{ return gelu(x) }}", {"N": 1 << 26}),
    ("f16 gelu", f"{K}(x: f16[N]) -> f16[N] {{ return gelu(x) }}", {"N": 1 << 26}),
    ("bf16 silu", f"{K}(x: bf16[N]) -> bf16[N] {{ return silu(x) }}", {"N": 1 << 26}),
    ("f32 gelu", f"{K}(x: f32[N]) -> f32[N] {{ return gelu(x) }}", {"N": 1 << 26}),
    ("vocab softmax f16", f"{K}(x: f16[M, N]) -> f16[M, N] {{\n e = exp(x - max(x, axis=N))\n"
     " return e / sum(e, axis=N)\n}", {"M": 4096, "N": 50257}),
    ("column centering", f"{K}(x: f32[M, N]) -> f32[M, N] {{ return x - mean(x, axis=M) }}",
     {"M": 16384, "N": 4096}),
    ("long-row softmax", f"{K}(x: f32[M, N]) -> f32[M, N] {{\n e = exp(x - max(x, axis=N))\n"
     " return e / sum(e, axis=N)\n}", {"M": 256, "N": 1 << 18}),
    ("batch mean", f"{K}(x: f16[B, C]) -> f32[C] {{ return mean(x, axis=B) }}", {"B": 1 << 16, "C": 768}),
    ("batch mean bf16", f"{K}(x: bf16[B, C]) -> f32[C] {{ return mean(x, axis=B) }}", {"B": 1 << 16, "C": 1024}),
    ("column sums f16", f"{K}(x: f16[M, N]) -> f16[N] {{ return sum(x, axis=M) }}", {"M": 16384, "N": 4096}),
    ("middle-axis sums f16", f"{K}(x: f16[B, T, C]) -> f32[B, C] {{ return sum(x, axis=T) }}",
     {"B": 64, "T": 1024, "C": 512}),
    ("column max bf16, 64 wide", f"{K}(x: bf16[M, N]) -> bf16[N] {{ return max(x, axis=M) }}",
     {"M": 1 << 20, "N": 64}),
    # broadcast operands of a flat walk: the column of b (x[M, N] + b[N]) divides each vector's index
    ("bias gelu bf16", f"{K}(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] {{ return gelu(x + b) }}",
     {"M": 8192, "N": 16384}),
    ("bias gelu f16 4096", f"{K}(x: f16[M, N], b: f16[N]) -> f16[M, N] {{ return gelu(x + b) }}",
     {"M": 16384, "N": 4096}),
    ("bias gelu f32", f"{K}(x: f32[M, N], b: f32[N]) -> f32[M, N] {{ return gelu(x + b) }}",
     {"M": 8192, "N": 8192}),
    ("bias silu bf16 768", f"{K}(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] {{ return silu(x + b) }}",
     {"M": 65536, "N": 768}),
    ("scale shift f32", f"{K}(x: f32[M, N], s: f32[N], t: f32[N]) -> f32[M, N] {{ return x * s + t }}",
     {"M": 16384, "N": 4096}),
    ("bias relu f16 3-D", f"{K}(x: f16[B, T, C], b: f16[C]) -> f16[B, T, C] {{ return relu(x + b) }}",
     {"B": 64, "T": 1024, "C": 1024}),
    # rows or lengths that break 16-byte alignment: no vectors (a flat walk of single elements)
    ("odd add bf16", f"{K}(x: bf16[N], y: bf16[N]) -> bf16[N] {{ return x + y }}", {"N": (1 << 26) + 1}),
    ("odd add f32", f"{K}(x: f32[N], y: f32[N]) -> f32[N] {{ return x + y }}", {"N": (1 << 25) + 1}),
    ("odd bias relu bf16", f"{K}(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] {{ return relu(x + b) }}",
     {"M": 32768, "N": 781}),
    ("odd bias f32", f"{K}(x: f32[M, N], b: f32[N]) -> f32[M, N] {{ return x + b }}", {"M": 16384, "N": 1021}),
    ("odd bias gelu bf16", f"{K}(x: bf16[M, N], b: bf16[N]) -> bf16[M, N] {{ return gelu(x + b) }}",
     {"M": 32768, "N": 781}),
    ("odd row scale f16", f"{K}(x: f16[M, N], s: f16[M]) -> f16[M, N] {{ return x * s }}", {"M": 32768, "N": 1001}),
    ("odd 3-D bias bf16", f"{K}(x: bf16[B, T, C], p: bf16[T, C]) -> bf16[B, T, C] {{ return x + p }}",
     {"B": 32, "T": 1023, "C": 1023}),
    ("vec2 bias f32", f"{K}(x: f32[M, N], b: f32[N]) -> f32[M, N] {{ return x + b }}", {"M": 16384, "N": 1022}),
    ("vec2 add bf16", f"{K}(x: bf16[N], y: bf16[N]) -> bf16[N] {{ return x + y }}", {"N": (1 << 26) + 2}),
    ("vec4 add bf16", f"{K}(x: bf16[N], y: bf16[N]) -> bf16[N] {{ return x + y }}", {"N": (1 << 26) + 4}),
    ("odd scale shift f16", f"{K}(x: f16[M, N], s: f16[N], t: f16[N]) -> f16[M, N] {{ return x * s + t }}",
     {"M": 16384, "N": 1001}),
    ("odd bias relu f32", f"{K}(x: f32[M, N], b: f32[N]) -> f32[M, N] {{ return relu(x + b) }}",
     {"M": 8192, "N": 999}),
    ("vec2 relu bf16", f"{K}(x: bf16[N]) -> bf16[N] {{ return relu(x) }}", {"N": (1 << 26) + 2}),
    ("vec2 scale f32", f"{K}(x: f32[N]) -> f32[N] {{ return x * 2.0 }}", {"N": (1 << 26) + 2}),
    ("vec4 add i8", f"{K}(x: i8[N]) -> i8[N] {{ return x + x }}", {"N": (1 << 26) + 4}),
    ("odd add i8", f"{K}(x: i8[N]) -> i8[N] {{ return x + x }}", {"N": (1 << 26) + 1}),
    ("whole add i8", f"{K}(x: i8[N]) -> i8[N] {{ return x + x }}", {"N": 1 << 26}),
    # programs users write that no earlier probe timed: casts, masks, integer and mixed widths,
    # reductions over two axes, log-softmax, a vocabulary's logsumexp
    ("cast f16 f32", f"{K}(x: f16[M, N]) -> f32[M, N] {{ return f32(x) }}", {"M": 16384, "N": 4096}),
    ("cast f32 bf16", f"{K}(x: f32[M, N]) -> bf16[M, N] {{ return bf16(x) }}", {"M": 16384, "N": 4096}),
    ("scale i32 f32", f"{K}(x: i32[N], s: f32 = 0.5) -> f32[N] {{ return f32(x) * s }}", {"N": 1 << 26}),
    ("mask bool", f"{K}(x: f32[N]) -> bool[N] {{ return x > 0.0 }}", {"N": 1 << 26}),
    ("masked f16", f"{K}(m: bool[M, N], x: f16[M, N]) -> f16[M, N] {{ return where(m, x, 0.0) }}",
     {"M": 16384, "N": 4096}),
    ("clamp f32", f"{K}(x: f32[N], lo: f32 = -1.0, hi: f32 = 1.0) -> f32[N] {{ return minimum(maximum(x, lo), hi) }}",
     {"N": 1 << 26}),
    ("add i64", f"{K}(x: i64[N], y: i64[N]) -> i64[N] {{ return x + y }}", {"N": 1 << 25}),
    ("dropout bf16", f"{K}(u: f32[M, N], x: bf16[M, N], p: f32 = 0.1) -> bf16[M, N] {{\n"
     " return where(u > p, x / (1.0 - p), 0.0)\n}", {"M": 8192, "N": 4096}),
    ("mixed add bf16", f"{K}(x: f32[M, N], y: bf16[M, N]) -> bf16[M, N] {{ return x + y }}",
     {"M": 16384, "N": 4096}),
    ("full max f16", f"{K}(x: f16[N]) -> f16 {{ return max(x) }}", {"N": 1 << 26}),
    # full reductions and few long rows (split reductions) at other dtypes and sizes
    ("full sum bf16", f"{K}(x: bf16[N]) -> f32 {{ return sum(f32(x)) }}", {"N": 1 << 26}),
    ("full max f32", f"{K}(x: f32[N]) -> f32 {{ return max(x) }}", {"N": 1 << 25}),
    ("full mean f32 2^22", f"{K}(x: f32[N]) -> f32 {{ return mean(x) }}", {"N": 1 << 22}),
    ("full norm f32", f"{K}(x: f32[N]) -> f32 {{ return sqrt(sum(x * x)) }}", {"N": 1 << 24}),
    ("full mse f16", f"{K}(x: f16[N], y: f16[N]) -> f32 {{\n d = f32(x) - f32(y)\n return mean(d * d)\n}}",
     {"N": 1 << 25}),
    ("full sum odd", f"{K}(x: f32[N]) -> f32 {{ return sum(x) }}", {"N": (1 << 26) + 1}),
    ("full max f16 odd", f"{K}(x: f16[N]) -> f16 {{ return max(x) }}", {"N": (1 << 26) + 3}),
    ("full-ish sums 8 rows", f"{K}(x: f32[M, N]) -> f32[M] {{ return sum(x, axis=N) }}", {"M": 8, "N": 1 << 22}),
    ("two-axis sums", f"{K}(x: f32[B, T, C]) -> f32[C] {{ return sum(x, axis=(B, T)) }}",
     {"B": 64, "T": 1024, "C": 512}),
    ("spatial mean f16", f"{K}(x: f16[B, C, H, W]) -> f32[B, C] {{ return mean(f32(x), axis=(H, W)) }}",
     {"B": 128, "C": 256, "H": 28, "W": 28}),
    ("row variance", f"{K}(x: f32[M, N]) -> f32[M] {{\n d = x - mean(x, axis=N)\n"
     " return mean(d * d, axis=N)\n}", {"M": 16384, "N": 4096}),
    ("log softmax", f"{K}(x: f32[M, N]) -> f32[M, N] {{\n m = max(x, axis=N)\n"
     " return x - m - log(sum(exp(x - m), axis=N))\n}", {"M": 16384, "N": 1024}),
    ("vocab lse bf16", f"{K}(x: bf16[M, N]) -> f32[M] {{\n m = max(f32(x), axis=N)\n"
     " return m + log(sum(exp(f32(x) - m), axis=N))\n}", {"M": 4096, "N": 32000}),
    ("outer product f32", f"{K}(a: f32[M], b: f32[N]) -> f32[M, N] {{ return a * b }}", {"M": 8192, "N": 8192}),
    ("positions f32", f"{K}(s: f32[M], u: f32[N]) -> f32[M, N] {{ return s * f32(idx(N)) + u * f32(idx(M)) }}",
     {"M": 8192, "N": 8192}),
    ("sample bias bf16", f"{K}(x: bf16[B, T, C], y: bf16[B, C]) -> bf16[B, T, C] {{ return x + y }}",
     {"B": 32, "T": 1024, "C": 1024}),
    ("leaky relu bf16", f"{K}(x: bf16[N]) -> bf16[N] {{ return where(x > 0.0, x, 0.01 * x) }}", {"N": 1 << 26}),
    ("two outputs f32 f16", f"{K}(x: f32[M, N]) -> (f32[M, N], f16[M, N]) {{ return x * 2.0, f16(x) }}",
     {"M": 16384, "N": 4096}),
    # a broadcast along the rows beside few bytes an element: a flat walk divides each vector's index
    ("bcast add i8", f"{K}(x: i8[M, N], b: i8[N]) -> i8[M, N] {{ return x + b }}", {"M": 16384, "N": 4096}),
    ("bcast dequant i8 f16", f"{K}(x: i8[M, N], s: f16[N]) -> f16[M, N] {{ return f16(x) * s }}",
     {"M": 16384, "N": 4096}),
    ("bcast quant f16 i8", f"{K}(x: f16[M, N], s: f32[N]) -> i8[M, N] {{ return i8(x * s) }}",
     {"M": 16384, "N": 4096}),
    ("bcast scale bf16 f32", f"{K}(x: bf16[M, N], s: f32[N]) -> bf16[M, N] {{ return x * s }}",
     {"M": 16384, "N": 4096}),
    ("bcast bias f16 f32", f"{K}(x: f16[M, N], b: f16[N]) -> f32[M, N] {{ return f32(x + b) }}",
     {"M": 16384, "N": 4096}),
    # results wider than the inputs along the rows (f16 in, f32 out): stores of 16 bytes a thread
    ("widen softmax f16 1024", f"{K}(x: f16[M, N]) -> f32[M, N] {{\n e = exp(f32(x) - max(f32(x), axis=N))\n"
     " return e / sum(e, axis=N)\n}", {"M": 16384, "N": 1024}),
    ("widen softmax f16 8192", f"{K}(x: f16[M, N]) -> f32[M, N] {{\n e = exp(f32(x) - max(f32(x), axis=N))\n"
     " return e / sum(e, axis=N)\n}", {"M": 4096, "N": 8192}),
    ("widen rmsnorm f16", f"{K}(x: f16[M, N], w: f32[N]) -> f32[M, N] {{\n"
     " return x * rsqrt(mean(f32(x) * f32(x), axis=N) + 0.00001) * w\n}", {"M": 4096, "N": 8192}),
    ("widen rmsnorm bf16", f"{K}(x: bf16[M, N], w: f32[N]) -> f32[M, N] {{\n"
     " return x * rsqrt(mean(f32(x) * f32(x), axis=N) + 0.00001) * w\n}", {"M": 65536, "N": 1024}),
    ("widen scale i8", f"{K}(x: i8[M, N], s: f32[N]) -> f32[M, N] {{ return f32(x) * s }}", {"M": 16384, "N": 4096}),
    ("widen odd cast f16", f"{K}(x: f16[M, N]) -> f32[M, N] {{ return f32(x) }}", {"M": 16384, "N": 1001}),
    ("rmsnorm f16 5120", "kernel f(x: f16[M, N], w: f16[N]) -> f16[M, N] {\n"
     " return x * rsqrt(mean(x * x, axis=N) + 0.00001) * w\n}", {"M": 16384, "N": 5120}),
]


def variants_of(case, d) -> dict:
    """label -> Schedule: the case's default `d`, and beside it what the environment asks for."""
    variants = {"default": d}
    if d.streamed:      # SURVEY_UNROLL="4 8": the streamed default at those unrolls too
        variants.update({f"unroll {u}": replace(d, unroll=int(u))
                         for u in os.environ.get("SURVEY_UNROLL", "").split()})
    # SURVEY_VEC="1 2 4 8": a column reduction's default taking that many columns a thread,
    # alone and at the SURVEY_UNROLL unrolls, where the columns allow it
    for v in os.environ.get("SURVEY_VEC", "").split() if d.kind in ("reduce_col", "reduce_split") else ():
        wide = replace(d, vec=int(v), row_threads=1)
        if d.kind == "reduce_split":    # its splits filling the GPU, as the tuner's
            wide = columns.split_schedule(case.problem, int(v)) or wide
        if d.kind in ("reduce_col", "reduce_split") and not columns.column_vector_refusal(case.problem, wide):
            variants[f"vec {v}"] = wide
            variants.update({f"vec {v} unroll {u}": replace(wide, unroll=int(u))
                             for u in os.environ.get("SURVEY_UNROLL", "").split()})
    # SURVEY_SPLITS="264 528": a split reduction's default at those splits, alone and at the unrolls
    for n in os.environ.get("SURVEY_SPLITS", "").split() if d.kind == "reduce_split" else ():
        variants[f"splits {n}"] = replace(d, splits=int(n))
        variants.update({f"splits {n} unroll {u}": replace(d, splits=int(n), unroll=int(u))
                         for u in os.environ.get("SURVEY_UNROLL", "").split()})
    # SURVEY_CLUSTERS=1: a row's default beside its shares over a cluster's blocks
    if os.environ.get("SURVEY_CLUSTERS") and d.kind == "reduce_row" and d.vec > 1:
        variants.update({f"cl {s.cluster}x{s.block}": s
                         for s in rows.cluster_row_shares(case.problem, d.vec, peel=d.peel)})
    # a straddling default beside its walks of runs of vec rows (Schedule.outer and straddle:
    # an input without the outermost loop read once for the runs), 2 to 8 runs, blocks of 128
    if d.kind == "pointwise" and d.straddle and not d.outer:
        variants.update({f"runs {s.items} v{s.vec}": s for s in choose.candidates(case.problem)
                         if s.outer and s.straddle and s.block == 128})
    if os.environ.get("SURVEY_ALL"):
        _, fastest = row_probe.fastest_candidates(case, 4)
        variants.update({f"cand {n}": s for n, s in enumerate(fastest) if s != d})
    return variants


def main() -> None:
    # each case timed and reported as soon as its variants are known, its memory freed before the
    # next: the 88 cases take more than a call's 300 s on an H100 (2026-12-06, nothing printed)
    row_probe.run(CASES, variants_of, label_width=8, tag_width=40, each=True)


if __name__ == "__main__":
    main()
