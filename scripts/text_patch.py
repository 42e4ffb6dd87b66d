"""Helpers for probes that time text-patched kernels against the compiler's own
(device runs): `install` routes every rendered kernel through a text transform
while FLAG["on"] (the cache keyed apart), `schedules` picks the schedules to time,
`time_both` checks both versions against the reference and times them in
alternation."""
import re

import cupy
import numpy as np

import tiledsl.codegen.cuda as cg
import tiledsl.runtime.launcher as L
from benchmarks.common import time_cuda
from tiledsl.inputs import relative_error
from tiledsl.runtime.launcher import hbm_bandwidth, set_overrides
from tiledsl.schedule.choose import candidates, default
from tiledsl.schedule.problem import problem


def install(tag: str, transform) -> dict:
    """FLAG: while FLAG["on"], each kernel's CUDA is transform(source, schedule). FLAG["on"]
    may name a version (a transform reading it): each version is cached apart."""
    flag = {"on": False}
    render, key_parts = cg.render, L.kernel_key_parts

    def patched(graph, group, layout, schedule, stage=1):
        ks = render(graph, group, layout, schedule, stage)
        if not flag["on"]:
            return ks
        return cg.KernelSource(ks.name, transform(ks.source, schedule), ks.schedule, ks.layout)
    cg.render = patched
    L.kernel_key_parts = lambda *a: key_parts(*a) + ((tag, flag["on"]) if flag["on"] else ())
    return flag


def schedules(kernel, extents: dict, patterns: list, per_pattern: int = 1, same=lambda s, base: True) -> tuple:
    """(the default, [schedules to time]): "DEFAULT", or up to `per_pattern`
    candidates whose tag a pattern finds and `same(s, default)` accepts."""
    sm = cupy.cuda.runtime.deviceGetAttribute(16, 0)
    launcher = kernel._launcher
    p = problem(launcher.groups[0], launcher.layouts[0], extents, frozenset(), sm, "sm_90a", hbm_bandwidth(0))
    base = default(p, kernel.hints)
    cands = candidates(p, kernel.hints)
    chosen = []
    for pat in patterns:
        chosen += [base] if pat == "DEFAULT" else \
            [s for s in cands if re.search(pat, s.tag) and same(s, base)][:per_pattern]
    return base, chosen


def mode_errors(case, kernels: dict, chosen: list, use) -> dict:
    """{(schedule, mode): [relative error]} for each schedule of `chosen` under each mode's
    kernel of `kernels` (rendered as `use(mode)` says), its output poisoned first; NaN where
    any element came back NaN."""
    runs = {}
    for s in chosen:
        for mode, km in kernels.items():
            use(mode)
            km(*case.sets[0], out=case.out)
            set_overrides(km._launcher, {0: s})
            case.out.fill(float("nan"))
            got = cupy.asnumpy(km(*case.sets[0], out=case.out)).astype(np.float64)
            runs[(s, mode)] = [relative_error(got, case.want) if not np.isnan(got).any() else float("nan")]
    return runs


def time_modes(case, kernels: dict, runs: dict, use) -> None:
    """One round: each (schedule, mode) of `runs` (mode_errors') timed, its median µs appended."""
    for (s, mode), res in runs.items():
        use(mode)
        km = kernels[mode]
        set_overrides(km._launcher, {0: s})
        res.append(time_cuda(lambda i: km(*case.sets[i], out=case.out), n_sets=len(case.sets),
                             repeats=20, warmup_ms=15).median_us)


def time_both(kernels: dict, flag: dict, schedule, sets: list, n_sets: int, want) -> dict:
    """{on: [relative error, µs of each of three rounds]} for the plain (False) and
    patched (True) kernels pinned to `schedule`, outputs poisoned before the checked call."""
    res, outs = {False: [], True: []}, {}
    for on in (False, True):
        flag["on"] = on
        k = kernels[on]
        k(*sets[0])
        set_overrides(k._launcher, {0: schedule})
        outs[on] = cupy.full(want.shape, cupy.nan, dtype=sets[0][0].dtype)
        got = cupy.asnumpy(k(*sets[0], out=outs[on]))
        assert not np.isnan(got).any()
        res[on].append(relative_error(got, want))
    flag["on"] = False
    for rnd in range(3):
        for on in ((False, True) if rnd % 2 == 0 else (True, False)):
            k = kernels[on]
            t = time_cuda(lambda i: k(*sets[i], out=outs[on]), n_sets=n_sets, repeats=40, warmup_ms=60)
            res[on].append(t.median_us)
    return res


def report(res: dict, labels: tuple, schedule, base, nbytes: int, ref_copy: float, same: float) -> None:
    """One line per version of time_both's result: its rounds, the best, and that as a
    share of the reference copy and of a copy of the same bytes."""
    for on in (False, True):
        err, *ts = res[on]
        us = min(ts)
        print(f"  {labels[on]} {schedule.tag:36s} ps{schedule.blocks_per_sm} {'DEF' if schedule == base else '   '} "
              f"{' '.join('%.1f' % t for t in ts)} us  best {us:.1f}  {nbytes / us / 1e3 / ref_copy:.3f}x copy  "
              f"{nbytes / us / 1e3 / same:.3f}x same  err {err:.1e}", flush=True)
