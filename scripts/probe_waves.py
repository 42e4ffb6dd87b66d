"""Probe (device run): the tuner against the defaults where a row kernel's blocks fill a
little more than a whole number of waves (the last wave a quarter full or less, counted
from ptxas's registers on an H100: /tmp scans of 2026-11-27), step (3) of
benchmarks/tune_check.py on these shapes instead of its held-out set.

    python scripts/probe_waves.py
"""
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import tune_check  # noqa: E402

EX = os.path.join(os.getcwd(), "examples")


def tail_shapes(small: bool):
    rows = [("rmsnorm f16 %dx%d" % mn, "rmsnorm", dict(M=mn[0], N=mn[1]))
            for mn in ((4096, 1024), (1000, 4096), (2048, 2048), (500, 8192), (4096, 4096), (300, 32000))]
    rows += [("softmax f32 300x32000", "softmax", dict(M=300, N=32000)),
             ("layernorm f16 300x32000", "layernorm", dict(M=300, N=32000))]
    out = [(n, os.path.join(EX, f"{e}.tdsl"), x) for n, e, x in rows]
    return out + [("gelu(x + bias) bf16 1x10000x512", os.path.join(EX, "gelu_bias.tdsl"), dict(B=1, T=10000, C=512))]


tune_check.held_out = tail_shapes
if __name__ == "__main__":
    sys.exit(tune_check.main(["--held-out", "--shape-budget", "12", "--ab-rounds", "5"] + sys.argv[1:]))
