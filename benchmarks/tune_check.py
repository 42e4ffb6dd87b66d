"""Device check of the autotuner: issue 5's must-shows in one run (H200).

  (1) a GEMM search at f16 4096^3 over up to 64 candidates finishes in <= 60 s
      wall, compiling included (from an empty compilation cache), and its
      winner is within 3% of the best of an exhaustive re-timing of the same
      space (every candidate again, with more repeats);
  (2) a second run with the tuning database warm finishes in <= 1 s and picks
      the same config;
  (3) tuned vs untuned (default) time across the benchmark's GEMM and
      reduction shapes, and the geometric mean of the speedups;
  (4) a planted wrong schedule is rejected by the safety check.

    python benchmarks/tune_check.py --json tune_check.json
    python benchmarks/tune_check.py --cpu-smoke      # no GPU: everything up to the first launch
    python benchmarks/tune_check.py --held-out       # (3) alone, on shapes the defaults were not fitted on

Exit status 0 when every must-show passes, 1 otherwise (the JSON is written
either way). The compilation cache and the tuning database are fresh
temporary folders unless --keep-cache / --db are given.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tiledsl  # noqa: E402
from tiledsl.runtime.launcher import set_overrides  # noqa: E402
from tiledsl.tune import autotune, dry_run  # noqa: E402
from tiledsl.tune.workload import Workload  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MM = "kernel mm(a: {t}[M, K], b: {t}[K, N]) -> {t}[M, N] {{ return a @ b }}"
TF32 = "kernel mm(a: f32[M, K], w: f32[N, K]) -> f32[M, N] { return a @ w.T }\nschedule mm { tf32(true) }"
BMM = "kernel bmm(a: f16[B, M, K], b: f16[B, K, N]) -> f16[B, M, N] { return a @ b }"
LINEAR_RELU = "kernel linear_relu(x: f16[M, K], w: f16[K, N], b: f32[N]) -> f16[M, N] { return relu(x @ w + b) }"
SEARCH_LIMIT_S, WARM_LIMIT_S, WITHIN = 60.0, 1.0, 0.03
TUNED_SPEEDUP = 1.1     # the target: tuned >= 1.1x the untuned default (geometric mean)


def workloads(small: bool) -> list[tuple[str, str, dict]]:
    """(name, source or example path, extents): the benchmark's shapes, or tiny
    ones of the same kernels (--small, for tests)."""
    if small:
        gemm = [("gemm f16 4096^3", MM.format(t="f16"), dict(M=128, N=128, K=64)),
                ("gemm f16 4000^3", MM.format(t="f16"), dict(M=100, N=100, K=100)),
                ("gemm f16 16x8192x8192", MM.format(t="f16"), dict(M=16, N=256, K=256)),
                ("gemm f32 4096^3", MM.format(t="f32"), dict(M=64, N=64, K=64))]
        red = [("softmax f32 16384x1024", "softmax", dict(M=64, N=256)),
               ("layernorm f16 16384x4096", "layernorm", dict(M=32, N=512)),
               ("rmsnorm f16 16384x4096", "rmsnorm", dict(M=32, N=512))]
        return gemm + [(n, str(ROOT / "examples" / f"{e}.tdsl"), x) for n, e, x in red]
    # bench_gemm's shapes: f16 at all eight, bf16 at the cubes, f32 and TF32, batched, the fused linear
    gemm = [(f"gemm f16 {m}^3" if m == n == k else f"gemm f16 {m}x{n}x{k}", MM.format(t="f16"), dict(M=m, N=n, K=k))
            for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192), (4000, 4000, 4000),
                            (8192, 8192, 1024), (16, 8192, 8192), (256, 256, 65536), (1024, 1024, 8192),
                            (2048, 2048, 8192))]
    gemm += [(f"gemm bf16 {m}^3", MM.format(t="bf16"), dict(M=m, N=m, K=m)) for m in (4096, 8192)]
    gemm += [(f"gemm f32 {m}^3", MM.format(t="f32"), dict(M=m, N=m, K=m)) for m in (4096, 8192)]
    gemm += [(f"gemm tf32 {m}^3", TF32, dict(M=m, N=m, K=m)) for m in (4096, 8192)]
    gemm += [("bmm f16 32x(512x512x64)", BMM, dict(B=32, M=512, N=512, K=64)),
             ("relu(x@w+b) f16 4096^3", LINEAR_RELU, dict(M=4096, N=4096, K=4096))]
    red = [(f"softmax f32 {m}x{n}", "softmax", dict(M=m, N=n))
           for m, n in ((16384, 1024), (8192, 4096), (4096, 16384), (32768, 781))]
    red += [(f"{k} f16 {m}x{n}", k, dict(M=m, N=n)) for k in ("layernorm", "rmsnorm")
            for m, n in ((16384, 4096), (65536, 1024), (4096, 8192))]
    return gemm + [(n, str(ROOT / "examples" / f"{e}.tdsl"), x) for n, e, x in red]


def held_out(small: bool) -> list[tuple[str, str, dict]]:
    """(name, source or example path, extents): shapes the default rules were
    not fitted on (--held-out). Fixed before they were first measured: the
    layers of a 7B-parameter language model (hidden 4096, FFN 11008, vocabulary
    50257, tokens 2048 or a decode batch of 128), cubes and ragged sizes no
    tile divides, a small batched GEMM, the two-layer MLP example, rows of
    other widths, column sums, and (added 2026-11-23 03:00, also before they
    were timed) logsumexp, l2-normalize, mean and variance, a full sum and a
    bf16 pointwise kernel. (3) on these measures what tuning buys where the
    defaults are a guess, not a fit."""
    if small:
        gemm = [("gemm f16 2048x11008x4096", MM.format(t="f16"), dict(M=96, N=200, K=64)),
                ("mlp f16 2048x1024x4096x1024", str(ROOT / "examples" / "mlp.tdsl"), dict(M=64, D=64, H=128, E=64))]
        red = [("softmax f32 2048x50257", "softmax", dict(M=8, N=3001)),
               ("column_sum f32 65536x512", "column_sum", dict(M=700, N=96))]
        return gemm + [(n, str(ROOT / "examples" / f"{e}.tdsl"), x) for n, e, x in red]
    shape = lambda m, n, k: f"{m}^3" if m == n == k else f"{m}x{n}x{k}"    # noqa: E731
    gemm = [(f"gemm f16 {shape(m, n, k)}", MM.format(t="f16"), dict(M=m, N=n, K=k))
            for m, n, k in ((2048, 11008, 4096), (2048, 4096, 11008), (128, 4096, 4096), (128, 11008, 4096),
                            (3072, 3072, 3072), (5000, 3000, 2000))]
    gemm += [("gemm bf16 2048x4096x4096", MM.format(t="bf16"), dict(M=2048, N=4096, K=4096)),
             ("gemm bf16 1024^3", MM.format(t="bf16"), dict(M=1024, N=1024, K=1024)),
             ("gemm f32 2000^3", MM.format(t="f32"), dict(M=2000, N=2000, K=2000)),
             ("bmm f16 64x(256x256x128)", BMM, dict(B=64, M=256, N=256, K=128)),
             ("mlp f16 2048x1024x4096x1024", str(ROOT / "examples" / "mlp.tdsl"),
              dict(M=2048, D=1024, H=4096, E=1024))]
    red = [(f"softmax f32 {m}x{n}", "softmax", dict(M=m, N=n)) for m, n in ((2048, 50257), (65536, 256))]
    red += [(f"layernorm f16 {m}x{n}", "layernorm", dict(M=m, N=n)) for m, n in ((2048, 5120), (32768, 768))]
    red += [(f"rmsnorm f16 {m}x{n}", "rmsnorm", dict(M=m, N=n)) for m, n in ((2048, 11008), (16384, 2048))]
    red += [(f"column_sum f32 {m}x{n}", "column_sum", dict(M=m, N=n)) for m, n in ((65536, 512), (4096, 16384))]
    # added after the first runs (2026-11-23 03:00), before they were timed: other reductions and a pointwise
    more = [("logsumexp f32 4096x50257", LOGSUMEXP, dict(M=4096, N=50257)),
            ("l2-normalize f16 8192x4096", L2NORM, dict(M=8192, N=4096)),
            ("mean, variance f32 16384x2048", MEAN_VAR, dict(M=16384, N=2048)),
            ("column sum f16 8192x8192", COLUMN_SUM16, dict(M=8192, N=8192)),
            ("sum f32 67108864", TOTAL, dict(N=67108864)),
            ("gelu(x + bias) bf16 8x2048x4096", str(ROOT / "examples" / "gelu_bias.tdsl"), dict(B=8, T=2048, C=4096))]
    return gemm + [(n, str(ROOT / "examples" / f"{e}.tdsl"), x) for n, e, x in red] + more


LOGSUMEXP = "kernel lse(x: f32[M, N]) -> f32[M] {\n  m = max(x, axis=N)\n  return log(sum(exp(x - m), axis=N)) + m\n}"
L2NORM = "kernel l2n(x: f16[M, N]) -> f16[M, N] { return x * rsqrt(sum(x * x, axis=N) + 1e-12) }"
MEAN_VAR = ("kernel mv(x: f32[M, N]) -> (f32[M], f32[M]) {\n  mu = mean(x, axis=N)\n"
            "  return mu, mean((x - mu) * (x - mu), axis=N)\n}")
COLUMN_SUM16 = "kernel cs(x: f16[M, N]) -> f32[N] { return sum(x, axis=M) }"
TOTAL = "kernel total(x: f32[N]) -> f32 { return sum(x) }"


def compile_kernel(src: str):
    """tiledsl.compile (tests replace it to run the script on a pretend GPU)."""
    return tiledsl.compile(src)


def say(text: str = "") -> None:
    print(text, flush=True)


# -- (1) the GEMM search and its exhaustive re-timing ---------------------------------------

def gemm_search(args, db: str, name: str, src: str, extents: dict) -> dict:
    k = compile_kernel(src)
    t0 = time.perf_counter()
    report = autotune(k, extents, budget=args.budget, db=db, retune=True, progress=True,
                      max_candidates=args.max_candidates, seed=1)
    wall = time.perf_counter() - t0
    say(report.table(top=12))
    [g] = report.groups
    say(f"\n(1) exhaustive re-timing of the {len(g.candidates)} candidates of {name} ...")
    load = Workload(k, extents, seed=2).upload()
    rows = []
    for c in g.candidates:
        if c.status not in ("timed", "skipped"):
            continue                       # pruned, failed or wrong: not part of the runnable space
        set_overrides(k._launcher, {0: c.schedule})
        try:
            errors = load.check()
            if not all(e <= t for e, t in zip(errors, load.tolerances)):
                rows.append(dict(tag=c.tag, wrong=True, error=max(errors)))
                continue
            m = load.time(target=args.exhaustive_seconds)
        except Exception as err:   # noqa: BLE001 - a CUDA error of one candidate: recorded, not fatal
            rows.append(dict(tag=c.tag, failed=f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"))
            continue
        rows.append(dict(tag=c.tag, seconds=m.median, search_seconds=c.median, spread=m.spread,
                         repeats=len(m.samples)))
    set_overrides(k._launcher, report.winners)
    timed = sorted((r for r in rows if "seconds" in r), key=lambda r: r["seconds"])
    best = timed[0] if timed else None
    winner = next((r for r in timed if r["tag"] == g.winner.tag), None) if g.winner else None
    excess = winner["seconds"] / best["seconds"] - 1 if winner and best else math.inf
    for r in timed[:8]:
        mark = " <= search winner" if winner is r else ""
        say(f"    {r['seconds'] * 1e6:9.1f} us ({r['repeats']:3d} repeats, search {r['search_seconds'] * 1e6 if r['search_seconds'] else float('nan'):9.1f} us)  {r['tag']}{mark}")
    if winner is not None and winner not in timed[:8]:
        say(f"    {winner['seconds'] * 1e6:9.1f} us  {winner['tag']} <= search winner")
    return dict(name=name, extents=extents, wall_s=wall, stopped_by_budget=report.stopped_by_budget,
                candidates=len(g.candidates), counts=report.counts(), winner=g.winner.tag if g.winner else None,
                compile_s=report.compile_seconds, exhaustive=rows,
                exhaustive_best=best["tag"] if best else None,
                winner_excess=excess, search_ok=wall <= SEARCH_LIMIT_S, within_ok=excess <= WITHIN,
                report=report.to_json(), _report=report, _kernel=k)


# -- (2) the warm database ------------------------------------------------------------------------

def warm_rerun(db: str, src: str, extents: dict, first, cli: bool = True) -> dict:
    """The search again, database warm: in this process (the must-show), and
    for information as a new `tiledsl autotune` process (which also pays for
    starting Python, importing CuPy and creating a CUDA context)."""
    k = compile_kernel(src)                # a new kernel object, as in a new process
    t0 = time.perf_counter()
    report = autotune(k, extents, db=db, progress=False)
    wall = time.perf_counter() - t0
    same = report.winners == first.winners
    say(report.table())
    out = dict(wall_s=wall, origin=report.origin, winner=[c.tag for c in (g.winner for g in report.groups) if c],
               same_config=same, ok=wall <= WARM_LIMIT_S and same and report.origin == "database")
    if cli:
        import subprocess
        with tempfile.NamedTemporaryFile("w", suffix=".tdsl", delete=False) as f:
            f.write(src)
        shape = ",".join(f"{d}={n}" for d, n in extents.items())
        t0 = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "tiledsl.cli", "autotune", f.name, "--shape", shape, "--db", db,
                              "--vs", "", "-q"], capture_output=True, text=True, timeout=120, cwd=str(ROOT))
        out["cli_wall_s"] = time.perf_counter() - t0
        out["cli_from_database"] = run.returncode == 0 and "database:" in run.stdout
        say(f"    `tiledsl autotune` as a new process: {out['cli_wall_s']:.2f} s wall, answered from the "
            f"database: {out['cli_from_database']}")
    return out


# -- (3) tuned vs default -----------------------------------------------------------------------------

def tuned_vs_default(k, extents: dict, report, rounds: int, seconds: float) -> dict:
    """Default and tuned schedules timed alternately (rounds x each), medians compared."""
    import statistics
    defaults = {g.index: g.default for g in report.groups}
    tuned = {**defaults, **report.winners}
    if tuned == defaults:      # the same kernels: timing them against themselves only measures noise
        set_overrides(k._launcher, report.winners)
        return dict(default_s=None, tuned_s=None, speedup=1.0, same=True,
                    default=" + ".join(g.default.tag for g in report.groups),
                    tuned=" + ".join(g.default.tag for g in report.groups))
    load = Workload(k, extents, seed=3, reference=False).upload()
    times: dict = {"default": [], "tuned": []}
    for _ in range(rounds):
        for which, overrides in (("default", defaults), ("tuned", tuned)):
            set_overrides(k._launcher, overrides)
            times[which].append(load.time(target=seconds).median)
    set_overrides(k._launcher, report.winners)
    d, t = statistics.median(times["default"]), statistics.median(times["tuned"])
    return dict(default_s=d, tuned_s=t, speedup=d / t,
                default=" + ".join(g.default.tag for g in report.groups),
                tuned=" + ".join(g.winner.tag if g.winner else g.default.tag for g in report.groups))


def chosen(args) -> list[tuple[str, str, dict]]:
    return held_out(args.small) if args.held_out else workloads(args.small)


def shapes_sweep(args, db: str, first: dict | None, start: float) -> dict:
    rows = []
    for name, src, extents in chosen(args):
        if args.only and not any(o in name for o in args.only.split(",")):
            continue
        if time.perf_counter() - start > args.max_minutes * 60:
            rows.append(dict(name=name, skipped=f"over the {args.max_minutes:g}-minute guard"))
            say(f"  {name}: skipped (time guard)")
            continue
        try:
            k = compile_kernel(src)
            t0 = time.perf_counter()
            if first is not None and first["name"] == name:
                report, k = first["_report"], first["_kernel"]
            else:
                report = autotune(k, extents, budget=args.shape_budget, db=db, retune=True, progress=False,
                                  max_candidates=args.max_candidates, seed=4)
            search = time.perf_counter() - t0
            # why each group's winner won (a challenger the side-by-side rounds overruled, say)
            why = "; ".join(g.choice.reason for g in report.groups if g.choice is not None)
            row = dict(name=name, extents=extents, search_s=search, counts=report.counts(),
                       stopped_by_budget=report.stopped_by_budget, why=why,
                       **tuned_vs_default(k, extents, report, args.ab_rounds, args.ab_seconds))
        except Exception as err:   # noqa: BLE001 - one workload's failure is reported, the rest go on
            row = dict(name=name, extents=extents, error=f"{type(err).__name__}: {err}",
                       traceback=traceback.format_exc())
            say(f"  {name}: ERROR {row['error']}")
            rows.append(row)
            continue
        rows.append(row)
        if row.get("same"):
            say(f"  {name:26s} the default won: x1 by identity (not timed again)    (search {search:5.1f} s)  {row['tuned']}")
            if "side by side" in why:
                say(f"  {'':26s} {why}")
        else:
            say(f"  {name:26s} default {row['default_s'] * 1e6:9.1f} us  tuned {row['tuned_s'] * 1e6:9.1f} us  "
                f"x{row['speedup']:.3f}  (search {search:5.1f} s)  {row['tuned']}")
    speedups = [r["speedup"] for r in rows if "speedup" in r]
    geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else None
    return dict(rows=rows, geomean_speedup=geomean, measured=len(speedups), target=args.speedup_target,
                ok=bool(speedups) and len(speedups) == len(rows) and geomean >= args.speedup_target)


# -- (4) a planted wrong schedule ---------------------------------------------------------------------

def planted(args, db: str, name: str, src: str, extents: dict, victim: str | None) -> dict:
    k = compile_kernel(src)
    if victim is None:                     # no earlier winner to plant on: find one
        victim = autotune(k, extents, budget=args.shape_budget, db=False, progress=False,
                          max_candidates=args.max_candidates).groups[0].winner.tag
        k = compile_kernel(src)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = autotune(k, extents, budget=args.shape_budget, db=False, progress=False,
                          max_candidates=args.max_candidates, fault=victim)
    [g] = report.groups
    bad = next((c for c in g.candidates if c.tag == victim), None)
    loud = any("WRONG" in str(w.message) and victim in str(w.message) for w in caught)
    say(report.table(top=5))
    ok = (bad is not None and bad.status == "wrong" and g.winner is not None and g.winner.tag != victim
          and loud and victim in [c.tag for c in report.wrong])
    return dict(name=name, planted=victim, status=bad.status if bad else None, reason=bad.reason if bad else None,
                winner=g.winner.tag if g.winner else None, warned=loud, ok=ok)


# -- the whole check ------------------------------------------------------------------------------------------

def _step(out: dict, key: str, fn):
    """Run one must-show; an exception is recorded (and fails it), the rest go on."""
    try:
        out[key] = fn()
    except Exception as err:   # noqa: BLE001
        out[key] = dict(error=f"{type(err).__name__}: {err}", traceback=traceback.format_exc(), ok=False)
        say(f"  ERROR in {key}: {out[key]['error']}\n{out[key]['traceback']}")
    return out[key]


def device_check(args) -> dict:
    start = time.perf_counter()
    db = args.db or os.path.join(os.environ["TILEDSL_CACHE_DIR"], "tuning.json")
    out: dict = dict(db=db)
    import cupy
    from tiledsl.runtime.launcher import _device_identity
    out["device"], out["cc"] = _device_identity(cupy.cuda.runtime.getDevice())
    say(f"tune_check on {out['device']} (cc {out['cc']}); cache {os.environ['TILEDSL_CACHE_DIR']}; db {db}")
    if args.held_out:
        say("\n== (3) on the held-out shapes: tuned vs default")
        _step(out, "sweep", lambda: shapes_sweep(args, db, None, start))
        out["seconds"] = time.perf_counter() - start
        return out
    name, src, extents = workloads(args.small)[0]

    say(f"\n== (1) {name}: search (budget {args.budget:g} s, up to {args.max_candidates} candidates)")
    first = _step(out, "search", lambda: gemm_search(args, db, name, src, extents))
    report = first.get("_report")
    out["search"] = {key: v for key, v in first.items() if not key.startswith("_")}

    say("\n== (2) the same search with the database warm")
    if report is not None:
        _step(out, "warm", lambda: warm_rerun(db, src, extents, report, cli=not args.small))
    else:
        out["warm"] = dict(error="no search to rerun", ok=False)

    say("\n== (3) tuned vs default")
    _step(out, "sweep", lambda: shapes_sweep(args, db, first if report is not None else None, start))

    say("\n== (4) a planted wrong schedule")
    rows = {r["name"]: r for r in out["sweep"].get("rows", [])}
    p_name, p_src, p_ext = next(w for w in workloads(args.small) if w[0].startswith("softmax"))
    victim = rows.get(p_name, {}).get("tuned")
    _step(out, "planted", lambda: planted(args, db, p_name, p_src, p_ext,
                                          victim if victim and "+" not in victim else None))
    out["seconds"] = time.perf_counter() - start
    return out


def summary(out: dict) -> tuple[list[str], bool]:
    if "search" not in out:         # --held-out: step (3) alone, for information; it passes if every shape ran
        sw = out["sweep"]
        if "error" in sw:
            return [f"(3) held-out shapes: FAIL: {sw['error']}"], False
        ran = sw["measured"] == len(sw["rows"])
        mean = f"{sw['geomean_speedup']:.3f}x" if sw["geomean_speedup"] else "n/a"
        return [f"(3) held-out shapes, tuned vs default over {sw['measured']} of {len(sw['rows'])} shapes: "
                f"geometric mean speedup {mean} (for information; every shape ran: {ran})"], ran
    s, w, sw, p = out["search"], out["warm"], out["sweep"], out["planted"]
    verdict = lambda ok: "PASS" if ok else "FAIL"     # noqa: E731
    broken = [f"({n}) {key}: FAIL: {part['error']}" for n, (key, part) in
              enumerate((("search", s), ("warm", w), ("sweep", sw), ("planted", p)), 1) if "error" in part]
    if broken:
        return broken, False
    lines = [
        f"(1) {s['name']}: search {s['wall_s']:.1f} s wall incl. compiling {s['compile_s']:.1f} s "
        f"(<= {SEARCH_LIMIT_S:g} s: {verdict(s['search_ok'])}); {s['candidates']} candidates {s['counts']}",
        f"    winner {s['winner']} is {s['winner_excess']:+.2%} from the exhaustive best {s['exhaustive_best']} "
        f"(<= {WITHIN:.0%}: {verdict(s['within_ok'])})",
        f"(2) warm database: {w['wall_s']:.3f} s (<= {WARM_LIMIT_S:g} s), {w['origin']}, same config "
        f"{w['same_config']}: {verdict(w['ok'])}"
        + (f" (as a new CLI process: {w['cli_wall_s']:.2f} s)" if "cli_wall_s" in w else ""),
        f"(3) tuned vs default over {sw['measured']} shapes: geometric mean speedup "
        + (f"{sw['geomean_speedup']:.3f}x" if sw["geomean_speedup"] else "n/a")
        + f" (>= {sw.get('target', TUNED_SPEEDUP)}x): {verdict(sw['ok'])}",
        f"(4) planted wrong schedule {p['planted']} on {p['name']}: {p['status']} ({p['reason']}); "
        f"winner {p['winner']}; warned {p['warned']}: {verdict(p['ok'])}",
    ]
    ok = s["search_ok"] and s["within_ok"] and w["ok"] and sw["ok"] and p["ok"]
    return lines, ok


# -- without a GPU ------------------------------------------------------------------------------------------------

def cpu_smoke(args) -> dict:
    """Everything up to the first launch, for every workload: parse, search
    space, compile (NVRTC) with pruning, inputs and the float64 reference,
    the fault's victim chosen from the space."""
    rows, ok = [], True
    for name, src, extents in chosen(args):
        if args.only and not any(o in name for o in args.only.split(",")):
            continue
        row = dict(name=name, extents=extents)
        try:
            k = compile_kernel(src)
            report = dry_run(k, extents, max_candidates=args.max_candidates)
            counts = report.counts()
            defaults = [g.candidates[0] for g in report.groups]     # a group's default comes first
            row.update(counts=counts, default=" + ".join(d.tag for d in defaults),
                       default_status=" + ".join(sorted({d.status for d in defaults})))
            row["ok"] = all(d.status == "compiled" for d in defaults) and not counts.get("failed")
            if not args.no_reference:
                load = Workload(k, extents, seed=1)
                row["reference_shapes"] = [list(e.shape) for e in load.expected_host]
            row["victim"] = next((c.tag for c in report.groups[0].candidates if c.status == "compiled"), None)
        except Exception as err:   # noqa: BLE001
            row.update(ok=False, error=f"{type(err).__name__}: {err}", traceback=traceback.format_exc())
        ok = ok and row["ok"]
        rows.append(row)
        say(f"  {name:26s} {'ok' if row['ok'] else 'FAILED'}  {row.get('counts', row.get('error'))}  "
            f"default {row.get('default')}")
    return dict(cpu_smoke=rows, ok=ok)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--cpu-smoke", action="store_true", help="no GPU: everything up to the first launch")
    ap.add_argument("--small", action="store_true", help="tiny shapes of the same kernels (tests)")
    ap.add_argument("--held-out", action="store_true",
                    help="only (3), on shapes the default rules were not fitted on (see held_out)")
    ap.add_argument("--only", help="step (3) and --cpu-smoke: only workloads whose name contains one of these")
    ap.add_argument("--budget", type=float, default=55.0, help="(1)'s search budget in seconds (default 55)")
    ap.add_argument("--shape-budget", type=float, default=20.0, help="(3)'s budget per shape (default 20)")
    ap.add_argument("--max-candidates", type=int, default=64)
    ap.add_argument("--speedup-target", type=float, default=TUNED_SPEEDUP,
                    help=f"(3)'s geometric-mean target (default {TUNED_SPEEDUP}, the issue's)")
    ap.add_argument("--exhaustive-seconds", type=float, default=0.15,
                    help="(1)'s exhaustive timing per candidate (default 0.15 s of repeats)")
    ap.add_argument("--ab-rounds", type=int, default=3, help="(3): alternating default/tuned rounds")
    ap.add_argument("--ab-seconds", type=float, default=0.1, help="(3): timed seconds per round")
    ap.add_argument("--max-minutes", type=float, default=6.0, help="(3) skips what is left after this")
    ap.add_argument("--db", help="tuning database (default: a fresh one)")
    ap.add_argument("--keep-cache", action="store_true", help="use the usual compilation cache, not a fresh one")
    ap.add_argument("--no-reference", action="store_true", help="--cpu-smoke: skip the float64 references")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if not args.keep_cache:          # (1) counts compiling: start from an empty compilation cache
        os.environ["TILEDSL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tdsl-tune-check-")
    os.environ.setdefault("TILEDSL_CACHE_DIR", str(Path.home() / ".cache" / "tiledsl"))
    if args.cpu_smoke:
        out = cpu_smoke(args)
        ok = out["ok"]
        say(f"cpu smoke: {'all ok' if ok else 'FAILURES above'}")
    else:
        out = device_check(args)
        lines, ok = summary(out)
        out["summary"], out["ok"] = lines, ok
        say("\n== summary")
        for line in lines:
            say(line)
        say(f"total {out['seconds']:.0f} s: {'ALL PASS' if ok else 'SOME FAIL'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
