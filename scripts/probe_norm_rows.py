"""Probe (device run): norms over rows a warp or part of one reads element by element (a
length that breaks 16-byte alignment): the default loads the weights late, in the phase
that reads them; here also hoisted (loaded once a thread, held through the row loop), and
half a warp or a warp a row. Each schedule is checked against the float64 reference first;
three interleaved rounds, median microseconds.

    python scripts/probe_norm_rows.py [names to keep]      (SWEEP=1: lengths 129 to 255)

BRANCHLESS=1: rows sharing a warp whose weights are not loaded late are rendered without a
branch per element, costly function or not (the library keeps that to rows with one);
compare with a run without it on the same machine. PREFETCH=1: a warp a row also on
persistent blocks that load their next row while they reduce this one (8 or 16 blocks of
128 an SM), where a thread's two rows fit (registers.prefetch_fits).
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import row_probe  # noqa: E402  (beside this script)
from benchmarks.bench_memory import LAYERNORM16_TDSL, LAYERNORM_TDSL, RMSNORM_TDSL  # noqa: E402
from probe_cluster_rows import RMS_BF16  # noqa: E402
from probe_element_rows import GATED  # noqa: E402
from probe_mid_rows import ATTENTION_SOFTMAX  # noqa: E402
from probe_online import softmax  # noqa: E402
from tiledsl.codegen import cuda as codegen_cuda  # noqa: E402
from tiledsl.errors import TdslError  # noqa: E402
from tiledsl.schedule import choose, registers, rows  # noqa: E402

CASES = [("rmsnorm bf16", RMS_BF16, {"M": 75648, "N": 197}),
         ("rmsnorm f16", RMSNORM_TDSL, {"M": 65536, "N": 385}),
         ("rmsnorm f16", RMSNORM_TDSL, {"M": 131072, "N": 255}),
         ("layernorm f16", LAYERNORM_TDSL, {"M": 65536, "N": 513}),
         ("layernorm16", LAYERNORM16_TDSL, {"M": 65536, "N": 513}),
         ("layernorm16", LAYERNORM16_TDSL, {"M": 131072, "N": 257}),
         ("gated rmsnorm f16", GATED, {"M": 65536, "N": 385}),
         ("rmsnorm f16", RMSNORM_TDSL, {"M": 262144, "N": 129}),
         ("rmsnorm bf16", RMS_BF16, {"M": 131072, "N": 199}),
         ("softmax f16", softmax("f16"), {"M": 262144, "N": 129}),
         ("softmax f16", softmax("f16"), {"M": 131072, "N": 255}),
         ("vit softmax f16", ATTENTION_SOFTMAX, {"B": 32, "H": 12, "S": 197, "T": 197})]


# SWEEP=1: half a warp against a warp over norm rows of 129 to 255 elements (about 64 MiB read each)
SWEEP_CASES = [(f"sweep {name}", src, {"M": (1 << 25) // n, "N": n})
               for name, src, lengths in (("rmsnorm f16", RMSNORM_TDSL, (129, 145, 161, 177, 193, 209, 225, 241, 255)),
                                          ("rmsnorm bf16", RMS_BF16, (131, 163, 197)),
                                          ("layernorm16", LAYERNORM16_TDSL, (129, 161, 193, 225, 255)),
                                          ("layernorm f16", LAYERNORM_TDSL, (129, 193, 255)))
               for n in lengths]
SWEEP = os.environ.get("SWEEP") == "1"
BRANCHLESS = os.environ.get("BRANCHLESS") == "1"
PREFETCH = os.environ.get("PREFETCH") == "1"


def sweep_variants(p, d) -> dict:
    out = {}
    for tpr, block in ((16, 256), (32, 128)):
        s = replace(d, row_threads=tpr, block=block, items=rows.row_share(p.row_length, tpr))
        if not choose.fits(p, s):
            out[f"t{tpr}"] = s
    return out


def variants(p, d) -> dict:
    out = {"default": d}
    for tpr in (16, 32):
        items = rows.row_share(p.row_length, tpr)
        block = 256 if tpr == 16 else 128
        for hoist in (False, True) if p.has_row_invariant_inputs() else (True,):
            s = replace(d, row_threads=tpr, block=block, items=items, hoist=hoist,
                        keep=registers.element_keeps_fit(p, items, d.vec))
            if not choose.fits(p, s):
                out[f"t{tpr}{' hoisted' if hoist else ' late'}"] = s
            if PREFETCH and tpr == 32 and registers.prefetch_fits(p, items, d.vec):
                for per_sm in (8, 16):
                    try:
                        s = replace(d, row_threads=tpr, block=block, items=items, hoist=hoist, prefetch=True,
                                    blocks_per_sm=per_sm, keep=registers.element_keeps_fit(p, items, d.vec))
                    except TdslError:
                        continue
                    if not choose.fits(p, s):
                        out[f"t{tpr}{' hoisted' if hoist else ' late'} p{per_sm}"] = s
    return out


def main() -> None:
    if BRANCHLESS:
        codegen_cuda.branchless_elements = lambda group, weights_late: not weights_late
    if SWEEP:
        row_probe.run(SWEEP_CASES, lambda case, d: sweep_variants(case.problem, d), label_width=16)
    else:
        row_probe.run(CASES, lambda case, d: variants(case.problem, d), label_width=16)


if __name__ == "__main__":
    main()
