"""Probe (device run): pointwise kernels of many inputs under the items and
vector widths around the default (`pointwise.held_words`): n f32 or f16
inputs summed, 16M elements each, every schedule checked against the float64
reference first; three interleaved rounds, median microseconds, and GB/s over
the bytes moved. Before 2026-11-23 the default was 2 items at the widest
vector whatever the inputs (8 f32 inputs spilled 40 bytes under 64 registers).

    python scripts/probe_inputs.py
"""
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda  # noqa: E402
from tiledsl.inputs import relative_error  # noqa: E402
from tiledsl.runtime.launcher import set_overrides  # noqa: E402
from tiledsl.schedule.choose import default  # noqa: E402
from tiledsl.schedule.problem import problem  # noqa: E402

ELEMENTS = 1 << 24
CASES = [(dtype, n) for dtype in ("f32", "f16") for n in (4, 5, 6, 8, 12)]


def program(dtype: str, n: int) -> str:
    params = ", ".join(f"x{i}: {dtype}[N]" for i in range(n))
    return f"kernel add{n}({params}) -> {dtype}[N] {{ return {' + '.join(f'x{i}' for i in range(n))} }}"


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s")
    times: dict = {}
    setups = []
    for dtype, n in CASES:
        k = tiledsl.compile(program(dtype, n))
        ext = {"N": ELEMENTS}
        host = [np.random.default_rng(i).standard_normal(ELEMENTS).astype(np.float32 if dtype == "f32" else np.float16)
                for i in range(n)]
        want = k.reference(*host, compute="f64")
        nbytes = (n + 1) * host[0].nbytes
        sets = [[cp.asarray(h) for h in host] for _ in range(input_sets_needed(nbytes))]
        out = k(*sets[0])           # (plans the launcher)
        launcher = k._launcher
        base = default(problem(launcher.groups[0], launcher.layouts[0], ext), k.hints)
        schedules = {base} | {replace(base, vec=v, items=i) for v in (base.vec, max(1, base.vec // 2))
                              for i in (1, 2, 4)}
        checked = []
        for s in sorted(schedules, key=lambda s: (s.vec, s.items)):
            set_overrides(launcher, {0: s})
            err = relative_error(cp.asnumpy(k(*sets[0], out=out)), want)
            print(f"{dtype} x{n} {s.tag}: err {err:.1e}{'  <= default' if s == base else ''}", flush=True)
            checked.append(s)
        setups.append((dtype, n, k, launcher, base, sets, out, nbytes, checked))
    for _ in range(3):
        for dtype, n, k, launcher, base, sets, out, nbytes, checked in setups:
            for s in checked:
                set_overrides(launcher, {0: s})
                t = time_cuda(lambda i: k(*sets[i], out=out), n_sets=len(sets), repeats=20, warmup_ms=20)
                times.setdefault((dtype, n, s), []).append(t.median_us)
    for dtype, n, k, launcher, base, sets, out, nbytes, checked in setups:
        set_overrides(launcher, {})
        for s in checked:
            us = sorted(times[(dtype, n, s)])[1]
            print(f"{dtype} x{n} {s.tag:28s} {us:8.1f} us {nbytes / us / 1e3:6.0f} GB/s "
                  f"{nbytes / us / 1e3 / copy:5.2f}x copy{'  <= default' if s == base else ''}")


if __name__ == "__main__":
    main()
