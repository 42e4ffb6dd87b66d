"""Probe (device run): rows held in registers and read element by element (a length
that breaks 16-byte alignment: vec 1), whose kernels are bound by instructions more
than by memory (softmax f16 131072x257 at 0.64x copy on an H100). Here each case's
default and the default with `keep` flipped (costly element values such as exp(x - max)
kept in registers between phases, not computed again). Run in two trees to compare
code generation (A/B: `device_pass.sh elemrows_ab`). Each schedule is checked against
the float64 reference first; three interleaved rounds, median microseconds.

    python scripts/probe_element_rows.py [names to keep]
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import row_probe  # noqa: E402  (beside this script)
from benchmarks.bench_memory import LAYERNORM16_TDSL, LAYERNORM_TDSL, RMSNORM_TDSL  # noqa: E402
from probe_cluster_rows import RMS_BF16  # noqa: E402
from probe_mid_rows import ATTENTION_SOFTMAX  # noqa: E402
from probe_online import LSE, softmax  # noqa: E402

LSE16 = "kernel l(x: f16[M, N]) -> f32[M] {\n m = max(f32(x), axis=N)\n return m + log(sum(exp(f32(x) - m), axis=N))\n}"
GATED = ("kernel g(x: f16[M, N], w: f16[N]) -> f16[M, N] "
         "{ return silu(x) * rsqrt(mean(x * x, axis=N) + 1e-6) * w }")
CASES = [("vit softmax f16", ATTENTION_SOFTMAX, {"B": 32, "H": 12, "S": 197, "T": 197}),
         ("softmax f16", softmax("f16"), {"M": 262144, "N": 129}),
         ("softmax f16", softmax("f16"), {"M": 131072, "N": 257}),
         ("softmax f16", softmax("f16"), {"M": 65536, "N": 385}),
         ("softmax bf16", softmax("bf16"), {"M": 131072, "N": 257}),
         ("softmax f32", softmax("f32"), {"M": 75648, "N": 197}),
         ("softmax f32", softmax("f32"), {"M": 32768, "N": 781}),
         ("softmax f32", softmax("f32"), {"M": 16384, "N": 1201}),
         ("softmax f32", softmax("f32"), {"M": 1048576, "N": 13}),
         ("rmsnorm bf16", RMS_BF16, {"M": 75648, "N": 197}),
         ("rmsnorm f16", RMSNORM_TDSL, {"M": 65536, "N": 385}),
         ("rmsnorm f16", RMSNORM_TDSL, {"M": 1048576, "N": 13}),
         ("layernorm f16", LAYERNORM_TDSL, {"M": 65536, "N": 513}),
         ("layernorm16", LAYERNORM16_TDSL, {"M": 65536, "N": 513}),
         ("logsumexp f16", LSE16, {"M": 131072, "N": 257}),
         ("logsumexp f32", LSE, {"M": 4096, "N": 50257}),
         ("softmax f16", softmax("f16"), {"M": 65536, "N": 449}),
         ("softmax f16", softmax("f16"), {"M": 131072, "N": 255}),
         ("gated rmsnorm f16", GATED, {"M": 65536, "N": 385}),
         ("aligned softmax f16", softmax("f16"), {"M": 131072, "N": 256})]


def variants(p, d) -> dict:
    return {"default": d, f"keep {not d.keep}": replace(d, keep=not d.keep)}


def main() -> None:
    row_probe.run(CASES, lambda case, d: variants(case.problem, d), label_width=16)


if __name__ == "__main__":
    main()
