"""The autotuner: build the space, compile it in parallel, check and time each
candidate on the GPU, choose, store the winners, install them.

    report = autotune(kernel, {"M": 4096, "N": 4096, "K": 4096}, budget=60)

Groups are tuned one after another, each timed as a whole call with the
groups before it at their winners and the ones after at their defaults. In a
group the default is checked and timed first (so even a tiny budget leaves a
baseline), then the other candidates in the search space's order; the budget
is looked at between candidates and stops the search, never a measurement.
`dry_run` does everything up to the first launch and needs no GPU.
"""
from __future__ import annotations

import math
import statistics
import time
import warnings
from typing import Optional

from ..errors import TdslError, TdslRuntimeError
from ..schedule.choose import launches
from .db import dtypes_text, kernel_fingerprint, make_record, open_db, resolve_db_path
from .compile import Compilation
from .progress import Progress
from .report import TuneReport
from .roofline import peak_for, work
from .safety import corrupt, fault_tag
from .select import Timed, choose, confirm, relative_spread
from .space import MAX_CANDIDATES, Candidate, DeviceLimits, call_partition, search_space, unique_labels
from .workload import Workload


SPIN_UP_SECONDS = 0.3      # the GPU's clocks rise before anything is timed
REFINE_WINDOW = 0.05       # candidates this close to the best are timed twice
REFINE_MAX = 8
CONFIRM_ROUNDS = 3         # a winner other than the default is timed against it this many times in turn


def dry_run(kernel, extents: dict, *, arch: str = "sm_90a", sm_count: int = 132,
            limits: DeviceLimits = DeviceLimits(), max_candidates: int = MAX_CANDIDATES,
            workers: Optional[int] = None, progress: bool = False, schedules: Optional[dict] = None,
            stream=None) -> TuneReport:
    """The search space with every candidate compiled (NVRTC, no GPU needed)
    and pruned where it cannot run, with the reasons."""
    from ..runtime.toolchain import check_arch
    check_arch(arch)        # a clear error now, not one compile failure per candidate
    start = time.monotonic()
    mode, note = call_partition(kernel, extents, sm_count, arch)
    spaces = search_space(kernel, extents, sm_count=sm_count, limits=limits, arch=arch,
                          max_candidates=max_candidates, schedules=schedules, mode=mode)
    prog = _progress(spaces, progress, "autotune --dry-run", stream)
    comp = Compilation(kernel, spaces, arch, workers, limits).start()
    prog.set_phase("compiling")
    comp.finish(on_candidate=lambda c: prog.count(c.status))
    prog.close()
    report = TuneReport(kernel.name, dict(extents), "", arch, spaces, work(kernel.graph, extents),
                        origin="dry run", partition=mode, partition_note=note)
    report.compile_seconds = report.seconds = time.monotonic() - start
    report.compiled_now, report.from_cache = comp.compiled, comp.cached
    return report


def _progress(spaces, enabled: bool, desc: str, stream) -> Progress:
    prog = Progress(sum(len(g.candidates) for g in spaces), desc, enabled, stream)
    for g in spaces:
        for c in g.candidates:
            if c.status == "pruned":
                prog.count("pruned")
    return prog


def _cupy():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
        why = "no CUDA device found"
    except ImportError:
        why = "CuPy is not installed (pip install tiledsl[cuda13])"
    except Exception as err:   # noqa: BLE001 - any driver failure means "no GPU here"
        why = f"no usable CUDA device ({type(err).__name__})"
    raise TdslRuntimeError(f"autotuning times kernels on an NVIDIA GPU: {why}. "
                           f"`tiledsl autotune --dry-run` lists and compiles the search space without one")


def autotune(kernel, extents: dict, *, budget: Optional[float] = None, db=None, store: bool = True,
             retune: bool = False, progress: bool = False, max_candidates: int = MAX_CANDIDATES,
             workers: Optional[int] = None, seed: Optional[int] = None, scalars: Optional[dict] = None,
             peers: tuple = (), device: Optional[int] = None, fault: Optional[str] = None,
             stream=None) -> TuneReport:
    """Tune every group of `kernel` at `extents` on the GPU and install the
    winners (Launcher.overrides). A warm database (an exact record for every
    group) is used as is unless `retune`. `db`: a path, False (no database),
    or None ($TILEDSL_TUNING_DB, else the default file)."""
    cupy = _cupy()
    device = cupy.cuda.runtime.getDevice() if device is None else device
    with cupy.cuda.Device(device):
        return _Tuner(kernel, extents, device, budget, db, store, retune, progress, max_candidates,
                      workers, seed, scalars or {}, tuple(peers), fault_tag(fault), stream).run()


class _Tuner:
    def __init__(self, kernel, extents, device, budget, db, store, retune, progress, max_candidates,
                 workers, seed, scalars, peers, fault, stream):
        from ..runtime import launcher_for
        from ..runtime.launcher import _device_identity, _sm_count, device_arch, hbm_bandwidth
        self.start = time.monotonic()
        self.deadline = self.start + budget if budget else None
        self.kernel, self.extents, self.device = kernel, dict(extents), device
        self.store, self.retune, self.progress, self.workers = store, retune, progress, workers
        self.seed, self.scalars, self.peers, self.fault, self.stream = seed, scalars, peers, fault, stream
        if kernel._launcher is None:
            kernel._launcher = launcher_for(kernel)
        self.mode, note = call_partition(kernel, extents, sm_count=_sm_count(device), arch=device_arch(device))
        self.launcher = kernel._launcher.partition_launcher(self.mode)   # the launcher the call reaches
        self.name, self.cc = _device_identity(device)
        self.arch, self.sm_count = device_arch(device), _sm_count(device)
        self.limits = DeviceLimits.of_device(device)
        self.db_path = resolve_db_path(db)
        self.spaces = search_space(kernel, extents, sm_count=self.sm_count, limits=self.limits, arch=self.arch,
                                   max_candidates=max_candidates, hbm_gbps=hbm_bandwidth(device), mode=self.mode)
        self.report = TuneReport(kernel.name, self.extents, self.name, self.arch, self.spaces,
                                 work(kernel.graph, extents), peak_for(self.name), budget=budget,
                                 db_path=str(self.db_path) if self.db_path else None,
                                 partition=self.mode, partition_note=note)

    # -- the whole run ------------------------------------------------------------
    def run(self) -> TuneReport:
        """The search; a run that ends in an error or an interrupt leaves the launcher's
        pins as they were, never a candidate it was timing (one found wrong among them)."""
        from ..runtime.launcher import set_overrides
        before = (dict(self.launcher.overrides), self.launcher.pinned_extents)
        try:
            return self._run()
        except BaseException:
            set_overrides(self.launcher, *before)
            raise

    def _run(self) -> TuneReport:
        from ..runtime.launcher import set_overrides
        from ..runtime.measure import copy_bandwidth
        report = self.report
        if self.db_path is not None and not self.retune and self._from_database():
            set_overrides(self.launcher, report.winners, self.extents)
            report.seconds = time.monotonic() - self.start
            return report
        prog = _progress(self.spaces, self.progress, f"autotune {self.kernel.name}", self.stream)
        try:
            t0 = time.monotonic()
            prog.set_phase("compiling")
            comp = Compilation(self.kernel, self.spaces, self.arch, self.workers, self.limits).start()
            try:                                          # inputs and reference, while the workers compile
                self.load = Workload(self.kernel, self.extents, seed=self.seed, scalars=self.scalars,
                                     device=self.device)
            except BaseException:
                comp.abort()
                raise
            comp.finish(self.deadline, lambda c: prog.count(c.status, finished=c.status != "compiled"))
            report.compile_seconds = time.monotonic() - t0
            report.compiled_now, report.from_cache = comp.compiled, comp.cached
            report.stopped_by_budget = any(c.status == "skipped" for g in self.spaces for c in g.candidates)
            report.copy_bandwidth = copy_bandwidth(self.device)
            self._launched_defaults()
            prog.set_phase("timing")
            self.load.upload()
            self._spin_up()
            winners: dict = {}
            for g in self.spaces:
                self._tune_group(g, winners, prog)
                if g.winner is not None:
                    winners[g.index] = g.winner.schedule
                else:
                    winners[g.index] = g.default
            set_overrides(self.launcher, report.winners, self.extents)
            if self.peers:
                prog.set_phase("peers")
                self._time_peers()
        finally:
            prog.close()
        self._store()
        report.seconds = time.monotonic() - self.start
        return report

    def _launched_defaults(self) -> None:
        """Each group's default made what an untuned call launches (Launcher.launched_default):
        a split along rows runs, once compiled, as many splits as fill every SM's room, not
        the rules' count search_space starts from, so the default is timed (and beaten, or
        not) at that count. Where a candidate already has that schedule (compiled, since the
        filling counts are among the candidates) it becomes the default and the rules'
        count is dropped; else the default candidate takes the schedule."""
        for g in self.spaces:
            launched = self._launched_default(g)
            if launched == g.default:
                continue
            base = next(c for c in g.candidates if c.is_default)
            same = next((c for c in g.candidates if c.schedule == launched), None)
            if same is None:        # (its kernel text the same but where the last block's finish flips)
                base.schedule, same = launched, base
                base.stages = tuple(launch.stage for launch in launches(g.problem, launched))
            else:
                same.is_default = True
            g.candidates = [same] + [c for c in g.candidates if c is not same and c is not base]
            g.default = launched
            unique_labels(g.candidates)

    def _launched_default(self, g):
        """Group space `g`'s schedule as an untuned call launches it, or the rules' default
        where that cannot be said (a default that cannot compile is reported when timed)."""
        try:
            return self.launcher.launched_default(g.index, g.problem, self.device)
        except Exception:   # noqa: BLE001 - CUDA and compile errors come in many types
            return g.default

    def _from_database(self) -> bool:
        db = open_db(self.db_path)
        found = []
        for g in self.spaces:
            hit = db.lookup(kernel_fingerprint(self.kernel), self.name, self.cc, g.index, self.extents,
                            g.problem, dtypes_text(self.kernel.graph), self.mode)
            if hit is None or hit[2] != "exact":
                return False
            found.append(hit)
        for g, (schedule, record, _) in zip(self.spaces, found):
            c = Candidate(g.index, schedule, is_default=schedule in (g.default, self._launched_default(g)),
                          status="timed", median=record.get("seconds"))
            g.candidates, g.winner, g.origin = [c], c, "database"
        self.report.origin = "database"
        return True

    # -- one group ----------------------------------------------------------------
    def _tune_group(self, g, winners: dict, prog: Progress) -> None:
        from ..runtime.launcher import set_overrides
        others = {s.index: winners.get(s.index, s.default) for s in self.spaces if s.index != g.index}
        best = None
        for c in g.candidates:
            if c.status == "skipped" and c.is_default:
                c.mark("compiled")                    # the baseline is timed whatever the budget
            if c.status != "compiled":
                continue
            if not c.is_default and self.deadline is not None and time.monotonic() > self.deadline:
                c.mark("skipped", "budget spent")
                self.report.stopped_by_budget = True
                prog.count("skipped")
                continue
            set_overrides(self.launcher, {**others, g.index: c.schedule})
            after = _corrupt_all if self.fault is not None and self.fault == c.tag else None
            try:
                if self._check(c, after):
                    m = self.load.time(lambda i: self.load.call(i, after), slower_than=best)
                    c.median, c.samples, c.cut_short = m.median, m.samples, m.cut_short
                    c.spread = math.nan if m.cut_short else m.spread
                    c.mark("timed", "cut short: over 1.5x the best so far" if m.cut_short else "")
                    best = m.median if best is None else min(best, m.median)
            except Exception as err:   # noqa: BLE001 - CUDA errors come in many types; each is recorded
                c.mark("failed", f"launch: {type(err).__name__}: {str(err).splitlines()[0][:300]}"
                       if str(err) else f"launch: {type(err).__name__}")
                self._check_context(c)
            prog.count(c.status)
        self._refine(g, others)
        timed = [c for c in g.candidates if c.status == "timed"]
        g.choice = choose([Timed(c.tag, c.median, c.spread, c.resources) for c in timed],
                          default=next((c.tag for c in timed if c.is_default), None))
        if g.choice.winner is not None:
            self._confirm(g, others, timed)
            g.winner = next(c for c in timed if c.tag == g.choice.winner.tag)
        else:
            g.origin = "default: no candidate passed"
            self.report.warnings.append(f"group {g.index}: no candidate gave a correct, timed result; "
                                        f"the default {g.default.tag} stays (not stored)")

    def _spin_up(self, seconds: float = SPIN_UP_SECONDS) -> None:
        """Run the default schedules for a moment before timing anything: an
        idle GPU's clocks need that long to rise, and the default, timed
        first, would otherwise look slower than it is."""
        import cupy
        from ..runtime.launcher import set_overrides
        set_overrides(self.launcher, {g.index: g.default for g in self.spaces})
        end = time.monotonic() + seconds
        i = 0
        try:
            while time.monotonic() < end:
                for _ in range(8):
                    self.load.call(i % self.load.n_sets)
                    i += 1
                cupy.cuda.Device(self.device).synchronize()
        except Exception:   # noqa: BLE001 - a default that cannot run is reported when it is timed
            pass

    def _refine(self, g, others: dict) -> None:
        """Time the candidates within REFINE_WINDOW of the best once more and
        pool the repeats: the choice among near-equal schedules then rests on
        two measurements taken apart, not on one."""
        from ..runtime.launcher import set_overrides
        timed = [c for c in g.candidates if c.status == "timed" and not c.cut_short]
        if len(timed) < 2 or (self.deadline is not None and time.monotonic() > self.deadline):
            return
        best = min(c.median for c in timed)
        close = sorted((c for c in timed if c.median <= best * (1 + REFINE_WINDOW)),
                       key=lambda c: (not c.is_default, c.median, c.tag))[:REFINE_MAX]   # the default first
        for c in sorted(close, key=lambda c: c.tag):
            set_overrides(self.launcher, {**others, g.index: c.schedule})
            try:
                m = self.load.time()
            except Exception:   # noqa: BLE001 - it ran a moment ago; keep the first measurement
                continue
            c.samples = list(c.samples) + list(m.samples)
            c.median = statistics.median(c.samples)
            c.spread = relative_spread(c.samples)

    def _confirm(self, g, others: dict, timed: list) -> None:
        """A winner that is not the default is timed against it again, the two in
        turn for CONFIRM_ROUNDS rounds (default then winner, then winner then
        default, ...), so that clocks drifting over the search, or within a round,
        weigh on both alike; it must still beat the default by more than the noise,
        overall and in every round."""
        from ..runtime.launcher import set_overrides
        default = next((c for c in timed if c.is_default), None)
        winner = next(c for c in timed if c.tag == g.choice.winner.tag)
        if default is None or winner is default:
            return
        samples: dict = {default.tag: [], winner.tag: []}
        rounds = []
        try:
            for r in range(CONFIRM_ROUNDS):
                pair = {}
                for c in (default, winner) if r % 2 == 0 else (winner, default):
                    set_overrides(self.launcher, {**others, g.index: c.schedule})
                    pair[c.tag] = self.load.time().samples
                    samples[c.tag] += pair[c.tag]
                rounds.append((statistics.median(pair[default.tag]), statistics.median(pair[winner.tag])))
        except Exception:   # noqa: BLE001 - both ran a moment ago; keep the search's choice
            return
        g.choice = confirm(g.choice, Timed(default.tag, default.median, default.spread, default.resources),
                           statistics.median(samples[default.tag]), statistics.median(samples[winner.tag]),
                           rounds)

    def _check(self, c: Candidate, after) -> bool:
        """One call into fresh poisoned outputs against the float64 reference;
        False (and a loud warning) when wrong."""
        errors = self.load.check(after)
        c.error = max(errors)
        tolerances = self.load.tolerances
        bad = [(k, e) for k, e in enumerate(errors) if not e <= tolerances[k]]
        if not bad:
            return True
        k, e = bad[0]
        c.mark("wrong", f"result {k} is wrong: relative error {e:.2e} > {tolerances[k]:.0e} "
                        f"against the float64 reference")
        warnings.warn(f"tiledsl autotune: schedule {c.tag} of {self.kernel.name} gives a WRONG result "
                      f"({c.reason}); it was rejected. This is a tiledsl compiler bug; please report it.",
                      RuntimeWarning, stacklevel=2)
        return False

    def _check_context(self, c: Candidate) -> None:
        """A launch error that poisons the CUDA context ends the run."""
        import cupy
        try:
            cupy.cuda.Device(self.device).synchronize()
            cupy.zeros(1).sum().item()
        except Exception as err:   # noqa: BLE001
            raise TdslRuntimeError(f"autotune: the CUDA context is unusable after candidate {c.tag} "
                                   f"({c.reason}; then {type(err).__name__}); restart the process. "
                                   f"This is a tiledsl bug; please report it.") from None

    # -- peers and the database ----------------------------------------------------
    def _time_peers(self) -> None:
        from .peers import PeerResult, runners, time_peer
        for name, fn, note in runners(self.kernel, list(self.peers), self.extents):
            result = PeerResult(name, note=note)
            self.report.peers.append(result)
            if fn is None:
                continue
            result.error, result.seconds, why = time_peer(self.load, fn)
            result.note = why or result.note

    def _store(self) -> None:
        if not self.store or self.db_path is None:
            return
        records = []
        for g in self.spaces:
            if g.winner is None or g.origin != "search":
                continue
            default = next((c for c in g.candidates if c.is_default), None)
            records.append(make_record(
                self.kernel, g.index, self.extents, self.name, self.cc, g.winner.schedule, partition=self.mode,
                seconds=g.winner.median, default_seconds=default.median if default else None,
                noise_band=g.choice.band, candidates=len(g.candidates),
                timed=len(g.by_status("timed")), complete=not self.report.stopped_by_budget))
        if not records:
            return
        try:
            open_db(self.db_path).store(records)
            self.report.stored = True
        except TdslError as err:
            self.report.warnings.append(f"the winners were not stored: {err.message}")


def _corrupt_all(outs) -> None:
    for o in outs:
        corrupt(o)
