"""Probe (device run): many rows of 129 to 2048 elements. Rows of at most 128 take part
of a warp (rows.short_row_schedule); longer ones took a block each (row_threads =
block, 64 or more threads), so 131072 rows were 131072 blocks, until rows moving under
4096 bytes took a warp each (rows.warp_row_schedule). Here the default, the default
before that (`block a row`), and a warp a row with several rows a block (row_threads 32,
blocks of 128 to 512), in aligned vectors, peeled to them where the row's length breaks
alignment, or element by element. Each schedule is checked against the float64 reference first; three
interleaved rounds, median microseconds, and the ratio of the bytes moved to copy.

    python scripts/probe_mid_rows.py [names to keep]      (SUBWARP=1: 16 and 8 threads a row too)
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import row_probe  # noqa: E402  (beside this script)
from benchmarks.bench_memory import LAYERNORM16_TDSL, LAYERNORM_TDSL, RMSNORM_TDSL  # noqa: E402
from probe_cluster_rows import RMS_BF16  # noqa: E402
from probe_online import LSE, softmax  # noqa: E402
from tiledsl.schedule import choose, registers, rows  # noqa: E402
from tiledsl.schedule.schedules import Schedule  # noqa: E402

ATTENTION_SOFTMAX = ("kernel a(x: f16[B, H, S, T], s: f32) -> f16[B, H, S, T] {\n"
                     " e = exp((x - max(x, axis=T)) * s)\n return e / sum(e, axis=T)\n}")
CASES = [("softmax f16", softmax("f16"), {"M": 131072, "N": 256}),
         ("softmax f16", softmax("f16"), {"M": 65536, "N": 512}),
         ("softmax f16", softmax("f16"), {"M": 32768, "N": 1024}),
         ("softmax f16", softmax("f16"), {"M": 16384, "N": 2048}),
         ("softmax f32", softmax("f32"), {"M": 131072, "N": 256}),
         ("softmax f32", softmax("f32"), {"M": 65536, "N": 512}),
         ("softmax f32", softmax("f32"), {"M": 16384, "N": 1024}),
         ("softmax f32", softmax("f32"), {"M": 100000, "N": 200}),
         ("rmsnorm f16", RMSNORM_TDSL, {"M": 131072, "N": 256}),
         ("rmsnorm f16", RMSNORM_TDSL, {"M": 65536, "N": 1024}),
         ("layernorm f16", LAYERNORM_TDSL, {"M": 131072, "N": 256}),
         ("layernorm f16", LAYERNORM_TDSL, {"M": 65536, "N": 1024}),
         ("layernorm16", LAYERNORM16_TDSL, {"M": 65536, "N": 1024}),
         ("softmax f16 odd", softmax("f16"), {"M": 131072, "N": 257}),
         ("softmax f16 odd", softmax("f16"), {"M": 65536, "N": 513}),
         ("softmax f16 odd", softmax("f16"), {"M": 32768, "N": 1001}),
         ("softmax f32 odd", softmax("f32"), {"M": 131072, "N": 257}),
         ("softmax f32 odd", softmax("f32"), {"M": 65536, "N": 513}),
         ("rmsnorm bf16 odd", RMS_BF16, {"M": 131072, "N": 257}),
         ("layernorm16 odd", LAYERNORM16_TDSL, {"M": 65536, "N": 513}),
         ("layernorm f16 odd", LAYERNORM_TDSL, {"M": 65536, "N": 513}),
         ("logsumexp f32", LSE, {"M": 131072, "N": 300}),
         ("few softmax f16", softmax("f16"), {"M": 2048, "N": 256}),
         ("few softmax f32 odd", softmax("f32"), {"M": 600, "N": 511}),
         ("few rmsnorm f16", RMSNORM_TDSL, {"M": 264, "N": 768}),
         ("softmax f16 odd 16-bit", softmax("f16"), {"M": 16384, "N": 1201}),
         ("rmsnorm bf16 odd 16-bit", RMS_BF16, {"M": 16384, "N": 1299}),
         ("common layernorm f16", LAYERNORM_TDSL, {"M": 65536, "N": 768}),
         ("common layernorm16", LAYERNORM16_TDSL, {"M": 65536, "N": 768}),
         ("common rmsnorm f16", RMSNORM_TDSL, {"M": 65536, "N": 768}),
         ("common softmax f16", softmax("f16"), {"M": 65536, "N": 1000}),
         ("common softmax f32", softmax("f32"), {"M": 65536, "N": 384}),
         ("common attention f16", ATTENTION_SOFTMAX, {"B": 8, "H": 16, "S": 512, "T": 512}),
         ("common attention f16", ATTENTION_SOFTMAX, {"B": 32, "H": 12, "S": 197, "T": 197}),
         ("peelcut softmax f16", softmax("f16"), {"M": 75648, "N": 197}),
         ("peelcut softmax f16", softmax("f16"), {"M": 262144, "N": 129}),
         ("peelcut softmax f16", softmax("f16"), {"M": 65536, "N": 385}),
         ("peelcut softmax bf16", softmax("bf16"), {"M": 131072, "N": 257}),
         ("peelcut rmsnorm bf16", RMS_BF16, {"M": 75648, "N": 197}),
         ("peelcut rmsnorm bf16", RMS_BF16, {"M": 65536, "N": 385}),
         ("peelcut attention f16", ATTENTION_SOFTMAX, {"B": 16, "H": 16, "S": 257, "T": 257}),
         ("peelcut softmax f32", softmax("f32"), {"M": 75648, "N": 197}),
         ("sub softmax f16", softmax("f16"), {"M": 131072, "N": 256}),
         ("sub softmax f32", softmax("f32"), {"M": 131072, "N": 256}),
         ("sub softmax f16", softmax("f16"), {"M": 262144, "N": 129}),
         ("sub softmax f16", softmax("f16"), {"M": 75648, "N": 197}),
         ("sub rmsnorm f16", RMSNORM_TDSL, {"M": 131072, "N": 256}),
         ("sub layernorm f16", LAYERNORM_TDSL, {"M": 65536, "N": 768}),
         ("sub softmax f32", softmax("f32"), {"M": 65536, "N": 384}),
         ("sub softmax f16", softmax("f16"), {"M": 65536, "N": 512}),
         ("wide rmsnorm f16", RMSNORM_TDSL, {"M": 65536, "N": 1024}),
         ("wide layernorm f16", LAYERNORM_TDSL, {"M": 65536, "N": 1024}),
         ("wide layernorm16", LAYERNORM16_TDSL, {"M": 65536, "N": 1024}),
         ("wide softmax f16", softmax("f16"), {"M": 65536, "N": 1024}),
         ("wide softmax f16", softmax("f16"), {"M": 32768, "N": 1536}),
         ("wide softmax f32", softmax("f32"), {"M": 32768, "N": 1024}),
         ("wide softmax f32", softmax("f32"), {"M": 65536, "N": 512}),
         ("wide rmsnorm f16", RMSNORM_TDSL, {"M": 32768, "N": 1536})]


SUBWARP = os.environ.get("SUBWARP") == "1"     # also part of a warp a row (16 and 8 threads)


def variants(p, d, hints) -> dict:
    """The default; the default before rows took a warp each (`block a row`: no
    warp_row_schedule, 16-bit rows peeled from PEELED_ROW like the others); and a warp a
    row in blocks of 128, 256 and 512 threads: vectors as wide as alignment allows, peeled
    ones where the length breaks it, single elements."""
    out = {"default": d}
    with row_probe.constants(rows, WARP_ROW_BYTES=0, WARP_ROW_NS=0.0, PEELED_ROW_16=rows.PEELED_ROW):
        out["block a row"] = choose.default(p, hints)
    peel = rows.peel_vector(p) > 1 and choose.max_vector(p) == 1
    for vec, peeled in sorted({(choose.max_vector(p), False), (1, False)}
                              | ({(rows.peel_vector(p), True)} if peel else set())):
        held = rows.held_row_share(p, vec, 32, peel=peeled)
        if not held:
            continue
        for block in (128, 256, 512):
            out[f"{'pe ' if peeled else ''}v{vec} w b{block}"] = replace(held, block=block)
        if SUBWARP and not peeled:   # part of a warp a row (rows sharing a warp), 256 threads a block
            for tpr in (16, 8):
                items = rows.row_share(p.row_length // vec, tpr)
                if registers.row_share_fits(p, items, vec, hoisted=False, packed=True):
                    out[f"v{vec} t{tpr} b256"] = Schedule("reduce_row", block=256, vec=vec, items=items,
                                                          row_threads=tpr, hoist=not p.has_row_invariant_inputs(),
                                                          index64=p.index64)
    return out


def main() -> None:
    row_probe.run(CASES, lambda case, d: variants(case.problem, d, case.kernel.hints))


if __name__ == "__main__":
    main()
