"""Probe (device run): what a 16-bit gelu pays for its erfc, and which pointwise tiles
hide it. `tdsl::gelu_narrow` takes erfc(z) = t * exp(P(t) - z^2), t = 1 / (1 + z/2), with
P a polynomial fit. Versions of the rendered kernel with P of other degrees (GELU_FITS
below: Numerical Recipes' degree 9, which it had until 2026-12-02, and fits of lower
degree) are text-patched in and timed in alternation with the compiler's own at several
schedules (three interleaved rounds, median us), each first checked against the float64
reference with its output poisoned, and counted for results that differ from the correctly
rounded 16-bit gelu.

    python scripts/probe_gelu.py [names to keep]
"""
import os
import re
import statistics
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth  # noqa: E402
from row_probe import prepare  # noqa: E402
from text_patch import install, time_modes  # noqa: E402
from tiledsl.inputs import relative_error  # noqa: E402
from tiledsl.runtime.launcher import set_overrides  # noqa: E402
from tiledsl.schedule.choose import candidates, default  # noqa: E402

# P's coefficients, constant term first: Numerical Recipes' erfcc, and least-squares fits of
# log(erfc(z) / t) + z^2 over z in [0, 10] (errors weighted 30x looser past z = 4.5, where
# only bf16 results stay above zero)
GELU_FITS = {
    "nr9": [-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
            -0.82215223, 0.17087277],
    "deg6": [-1.26830416, 1.03988213, 0.148575169, 0.732382037, -1.04500899, 0.451891142, -0.0594142555],
    "deg5": [-1.26551747, 1.00938788, 0.282271627, 0.431294166, -0.676778892, 0.219348891],
}
POLY = re.compile(r"float p = [-0-9.]+f;(\s*p = fmaf\(t, p, [-0-9.]+f\);)+", re.S)


def horner(coeffs: list) -> str:
    lines = [f"float p = {coeffs[-1]!r}f;"] + [f"p = fmaf(t, p, {c!r}f);" for c in coeffs[-2::-1]]
    return " ".join(lines)


def transform(src: str, mode) -> str:
    out = POLY.sub(lambda m: horner(GELU_FITS[mode]), src)
    assert out != src, "gelu_narrow's polynomial not found"
    return out


MODE = install("gelu_fit", lambda src, schedule: transform(src, MODE["on"]))
SOURCE = "kernel g(x: {t}[N]) -> {t}[N] {{ return gelu(x) }}"
CASES = [("f16 gelu", "f16", 1 << 26), ("bf16 gelu", "bf16", 1 << 26)]
PATTERNS = ("b128_v4_i4_", "b128_v8_i4_", "b256_v8_i2_", "b128_v4_i2_")
MODES = ("plain", "nr9", "deg6", "deg5")


def use(mode: str) -> None:
    MODE["on"] = False if mode == "plain" else mode


def rounded_mismatch(got: np.ndarray, want: np.ndarray, dtype: str) -> float:
    """The share of results that differ from the float64 gelu rounded to the same 16 bits."""
    if dtype == "f16":
        ref = want.astype(np.float16)
    else:      # bf16 by round to nearest even on float32's bits
        u = want.astype(np.float32).view(np.uint32).astype(np.uint64)
        ref = ((((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32))
        got = got.astype(np.float32)
    return float(np.mean(got != ref))


def main() -> None:
    only = sys.argv[1:]
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    for name, dtype, n in CASES:
        if only and not any(o in name for o in only):
            continue
        src = SOURCE.format(t=dtype)
        case = prepare(name, src, dict(N=n))
        base = default(case.problem, case.kernel.hints)
        cands = candidates(case.problem, case.kernel.hints)
        chosen = list(dict.fromkeys([base] + [s for p in PATTERNS for s in cands if p in s.tag + "_"][:len(PATTERNS)]))
        kernels = {mode: tiledsl.compile(src + f"\n# mode {mode}\n") for mode in MODES}
        runs = {}
        for s in chosen:
            for mode in MODES:
                use(mode)
                km = kernels[mode]
                km(*case.sets[0], out=case.out)
                set_overrides(km._launcher, {0: s})
                case.out.fill(float("nan"))
                got = cp.asnumpy(km(*case.sets[0], out=case.out))
                wide = got.astype(np.float64)
                err = relative_error(wide, case.want) if not np.isnan(wide).any() else float("nan")
                assert err <= 1e-2, (name, s.tag, mode, err)
                runs[(s, mode)] = [err, rounded_mismatch(got, case.want, dtype)]
        for _ in range(3):
            time_modes(case, kernels, runs, use)
        use("plain")
        print(f"## {name} {n}", flush=True)
        for (s, mode), (err, off, *ts) in runs.items():
            us = statistics.median(ts)
            print(f"  {s.tag:28s} {mode:5s} {us:7.1f} us {case.nbytes / us / 1e3 / copy:5.3f}x copy "
                  f"err {err:.1e} off-by-rounding {off:.5f} [{' '.join('%.1f' % t for t in ts)}]"
                  f"{' DEFAULT' if s == base else ''}", flush=True)
        case.sets = case.want = None


if __name__ == "__main__":
    main()
