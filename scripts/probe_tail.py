"""Probe (device run): does the last partial wave of rows cost the wide-row
norms their missing microseconds?  Layernorm (f32 and f16 weights) and rmsnorm
at N=8192 over row counts around 4096, whole multiples of the SM count among
them, each under its default schedule, beside a copy of the same bytes.

    python scripts/probe_tail.py [names]
"""
import os
import sys

sys.path.insert(0, os.getcwd())
import row_probe  # noqa: E402  (beside this script)
from benchmarks.common import copy_bandwidth  # noqa: E402
from tiledsl.runtime.launcher import _sm_count  # noqa: E402

LN = open("examples/layernorm.tdsl").read()
RMS = open("examples/rmsnorm.tdsl").read()
PROGRAMS = [("layernorm", LN), ("layernorm16", LN.replace("f32[N]", "f16[N]")), ("rmsnorm", RMS)]


def main() -> None:
    sms = _sm_count(0)
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s, {sms} SMs")
    rows = sorted({30 * sms, 4096, 32 * sms, 33 * sms})
    cases = [(f"{name} M={m}", src, {"M": m, "N": 8192}) for name, src in PROGRAMS for m in rows]
    prepared = []
    for case, d in row_probe.prepared(cases, sys.argv[1:]):
        case.variants = {"default": d}
        prepared.append(case)
    row_probe.time_and_report(prepared, copy, label_width=8)
    for m in rows:      # what a copy of a row count's bytes (read + write, f16) reaches
        c = copy_bandwidth(m * 8192 * 2, repeats=30, rotate=True, warmup_ms=50)
        print(f"copy of {m}x8192 f16: {min(c['memcpy_us'], c['copy_kernel_us']):.1f} us "
              f"({c['gbps'] / copy:.3f}x the 1 GiB copy)")


if __name__ == "__main__":
    main()
