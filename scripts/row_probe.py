"""What the row probes share (probe_row_share.py, probe_exact_items.py,
probe_short_rows.py; device runs): a program set up on device 0 (inputs rotated
past the L2, its float64 reference, the bytes it moves, its first group's
Problem), a schedule's error on it, and the schedules of every case timed in
interleaved rounds (a slow stretch of the host costs each a round, not one its
result) and reported as median microseconds and a ratio to copy."""
import os
import statistics
import sys
import time
from typing import Optional
from contextlib import contextmanager
from dataclasses import dataclass, field

sys.path.insert(0, os.getcwd())
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, input_sets_needed, time_cuda  # noqa: E402
from tiledsl.errors import TdslError  # noqa: E402
from tiledsl.inputs import random_arguments, relative_error  # noqa: E402
from tiledsl.runtime.launcher import _sm_count, device_arch, hbm_bandwidth, set_overrides  # noqa: E402
from tiledsl.schedule import choose  # noqa: E402
from tiledsl.schedule.problem import problem as group_problem  # noqa: E402
from tiledsl.tune.compile import Compilation  # noqa: E402
from tiledsl.tune.space import DeviceLimits, search_space  # noqa: E402


@dataclass
class RowCase:
    name: str
    extents: dict
    kernel: object
    problem: object           # the first group's problem.Problem on this GPU
    sets: list                # input sets to rotate through
    out: object
    want: object              # the float64 reference
    nbytes: int               # inputs read once, the result written once
    variants: dict = field(default_factory=dict)      # label -> Schedule of group 0


def prepare(name: str, src: str, extents: dict) -> RowCase:
    k = tiledsl.compile(src)
    host = random_arguments(k.graph, extents, seed=1)
    want = k.reference(*host, compute="f64")
    wants = want if isinstance(want, tuple) else (want,)      # (several results: each written once)
    nbytes = sum(h.nbytes for h in host if isinstance(h, np.ndarray)) + sum(
        w.size * r.dtype.itemsize for w, r in zip(wants, k.graph.results))
    def device(h):      # scalars (0-d) stay Python numbers
        return cp.asarray(h) if isinstance(h, np.ndarray) and h.ndim else (h.item() if hasattr(h, "item") else h)
    sets = [[device(h) for h in host] for _ in range(input_sets_needed(nbytes))]
    out = k(*sets[0])
    launcher = k._launcher
    p = group_problem(launcher.groups[0], launcher.layouts[0], extents, sm_count=_sm_count(0),
                      arch=device_arch(0), hbm_gbps=hbm_bandwidth(0))
    return RowCase(name, extents, k, p, sets, out, want, nbytes)


def prepared(cases: list, only: list) -> list:
    """(case, its default schedule) for each (name, source, extents) of `cases` whose name
    holds one of `only` (all when empty)."""
    out = []
    for name, src, ext in cases:
        if only and not any(o in name for o in only):
            continue
        case = prepare(name, src, ext)
        out.append((case, choose.default(case.problem, case.kernel.hints)))
    return out


def error(case: RowCase, schedule) -> float:
    """The relative error of the case's result under `schedule`, its output poisoned first."""
    set_overrides(case.kernel._launcher, {0: schedule})
    # NaN poisons a float result (bf16's dtype among them); an integer one, its dtype's least value
    outs = case.out if isinstance(case.out, tuple) else (case.out,)
    for o in outs:
        o.fill(np.iinfo(o.dtype).min if o.dtype.kind in "iu" else float("nan"))
    got = case.kernel(*case.sets[0], out=case.out)
    got, want = (got, case.want) if isinstance(got, tuple) else ((got,), (case.want,))
    return max(relative_error(cp.asnumpy(g).astype(np.float64), w) for g, w in zip(got, want))


def exact(case: RowCase, variants: dict, bound: float = 2e-3) -> dict:
    """The variants whose result is within `bound` of the reference (a schedule that
    cannot run counts as infinitely far); the others are printed and dropped."""
    kept = {}
    for label, s in variants.items():
        try:
            err = error(case, s)
        except TdslError as e:
            err = float("inf")
            print(f"{case.name} {case.extents} {label}: {e}")
        if err <= bound:
            kept[label] = s
        else:
            print(f"{case.name} {case.extents} {label} {s.tag}: err {err:.1e}, dropped", flush=True)
    return kept


def fastest_candidates(case: RowCase, keep: int = 6, bound: float = 2e-3) -> tuple:
    """(the first group's default, the `keep` fastest of its tuner candidates that compute
    the right result): every candidate compiled in parallel, timed once (10 calls), then
    checked against the float64 reference in rank order."""
    k = case.kernel
    space = search_space(k, case.extents, sm_count=_sm_count(0), limits=DeviceLimits.of_device(0),
                         max_candidates=400, arch=device_arch(0), hbm_gbps=hbm_bandwidth(0))[0]
    Compilation(k, [space], device_arch(0)).start().finish()
    quick = []
    for s in (c.schedule for c in space.candidates if c.status != "pruned"):
        set_overrides(k._launcher, {0: s})
        try:
            k(*case.sets[0], out=case.out)
        except TdslError as e:
            print(f"  {s.tag}: {str(e).splitlines()[0]}")
            continue
        t = time_cuda(lambda i: k(*case.sets[i], out=case.out), n_sets=len(case.sets), repeats=10, warmup_ms=5)
        quick.append((t.median_us, s))
    set_overrides(k._launcher, {})
    quick.sort(key=lambda r: r[0])
    kept = []
    for _, s in quick:
        if len(kept) == keep:
            break
        err = error(case, s)
        if err <= bound:
            kept.append(s)
        else:
            print(f"  {s.tag}: WRONG err {err:.1e}")
    set_overrides(k._launcher, {})
    print(f"{case.name}: {len(quick)} candidates ran", flush=True)
    return space.default, kept


def distinct(variants: dict) -> dict:
    """The variants with each schedule once, under its first label."""
    first_label: dict = {}
    for label, s in variants.items():
        first_label.setdefault(s, label)
    return {label: s for s, label in first_label.items()}


def in_a_row_us(case: RowCase, schedule, calls: int = 1000) -> float:
    """Host microseconds a call of `calls` calls in a row of the case under `schedule` on its
    first input set, the stream drained at the end; the best of 3 rounds."""
    k, x, out = case.kernel, case.sets[0], case.out
    set_overrides(k._launcher, {0: schedule})
    k(*x, out=out)
    best = float("inf")
    for _ in range(3):
        cp.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            k(*x, out=out)
        cp.cuda.runtime.deviceSynchronize()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def report_in_a_row(cases: list, calls: int, name_width: int = 16) -> None:
    """Each case's variants timed `calls` calls in a row (in_a_row_us), a line a case."""
    print(f"in a row, host us a call ({calls} calls on one input, best of 3):")
    for case in cases:
        times = "  ".join(f"{label} {in_a_row_us(case, s, calls):7.2f}" for label, s in case.variants.items())
        print(f"  {case.name:{name_width}s} {times}", flush=True)
        set_overrides(case.kernel._launcher, {})


def interleaved(runs: dict, rounds: int = 3) -> dict:
    """label -> the median microseconds of each of `rounds` interleaved rounds, for `runs`: label ->
    (launcher, overrides, fn, n_sets), fn(i) one call on input set i, the launcher (None: not
    tiledsl's) under `overrides` while it is timed and under none after."""
    times = {label: [] for label in runs}
    for _ in range(rounds):
        for label, (launcher, overrides, fn, n_sets) in runs.items():
            if launcher is not None:
                set_overrides(launcher, overrides)
            fn(0)
            times[label].append(time_cuda(fn, n_sets=n_sets, repeats=20, warmup_ms=20).median_us)
    for launcher, *_ in runs.values():
        if launcher is not None:
            set_overrides(launcher, {})
    return times


def report_interleaved(title: str, nbytes: int, copy_gbps: float, times: dict, marked: str,
                       against: Optional[str] = None) -> None:
    """Print `interleaved`'s times fastest first: median us, x copy, x the run labelled
    `against` where one is named, each round's median; `marked` (a label) gets the arrow."""
    base = statistics.median(times[against]) if against else None
    print(f"## {title} ({nbytes / 1e6:.0f} MB)", flush=True)
    for lab in sorted(times, key=lambda lab: statistics.median(times[lab])):
        us = statistics.median(times[lab])
        ratio = f" {base / us:5.3f}x {against}" if base else ""
        print(f"  {lab:40s} {us:8.1f} us {nbytes / us / 1e3 / copy_gbps:5.2f}x copy{ratio}  "
              f"[{' '.join(f'{t:.1f}' for t in times[lab])}]{' <= default' if lab == marked else ''}", flush=True)


def time_and_report(cases: list, copy_gbps: float, rounds: int = 3, label_width: int = 14,
                    tag_width: int = 34) -> None:
    times: dict = {}
    for _ in range(rounds):
        for n, case in enumerate(cases):
            k, sets, out = case.kernel, case.sets, case.out
            for s in case.variants.values():
                set_overrides(k._launcher, {0: s})
                t = time_cuda(lambda i: k(*sets[i], out=out), n_sets=len(sets), repeats=20, warmup_ms=20)
                times.setdefault((n, s), []).append(t.median_us)
    for n, case in enumerate(cases):
        rows = []
        for label, s in case.variants.items():
            us = statistics.median(times[(n, s)])
            tag = s.tag + (f" s{s.splits}" if s.splits else "")
            rows.append(f"  {label:{label_width}s} {tag:{tag_width}s} {us:8.1f} us "
                        f"{case.nbytes / us / 1e3 / copy_gbps:5.2f}x copy")
        print(f"{case.name} {'x'.join(map(str, case.extents.values()))}:\n" + "\n".join(rows), flush=True)


def run(cases: list, variants_of, label_width: int = 14, each: bool = False, tag_width: int = 34) -> None:
    """The probe's main: copy bandwidth, then each case of `cases` (name, source, extents)
    named on the command line (all when none) with the schedules `variants_of(case,
    default)` gives (label -> Schedule), each checked against float64 first, timed and reported.
    `each`: a case is timed and reported as soon as its variants are known, so that a call cut
    short by the device's 10 minutes still reports the cases before it (its rounds then
    interleave that case's variants only)."""
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    kept = []
    for case, d in prepared_lazily(cases, sys.argv[1:]) if each else prepared(cases, sys.argv[1:]):
        case.variants = exact(case, distinct(variants_of(case, d)))
        if each:
            time_and_report([case], copy, label_width=label_width, tag_width=tag_width)
            case.sets = case.out = None     # its device memory back before the next case
        else:
            kept.append(case)
    time_and_report(kept, copy, label_width=label_width, tag_width=tag_width)


def prepared_lazily(cases: list, only: list):
    """prepared(), a case at a time: each set up only when the one before is done with."""
    for name, src, ext in cases:
        if not only or any(o in name for o in only):
            case = prepare(name, src, ext)
            yield case, choose.default(case.problem, case.kernel.hints)


@contextmanager
def constants(module, **values):
    """Module constants set to `values` for the block (a rule turned off to time the
    default it replaced), then restored (a name the module lacks is set too, and left None:
    nothing of that tree calls it)."""
    saved = {name: getattr(module, name, None) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
