"""The autotuner's GPU-side logic on a pretend GPU (tests/fake_gpu.py): the
search, the safety check rejecting a planted wrong schedule, budget, failed
launches, the database round trip, determinism, the CLI and Kernel.autotune.
The real thing runs in test_tune_gpu.py and benchmarks/tune_check.py."""
from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

import tiledsl
from tiledsl import cli
from tiledsl.runtime import toolchain
from tiledsl.tune import autotune
from tiledsl.tune.db import TuningDB
from tiledsl.tune.space import config_label

import fake_gpu
from conftest import EXAMPLES

pytestmark = pytest.mark.skipif(not toolchain.available(), reason="NVRTC is not installed")

SOFTMAX = "kernel softmax(x: f32[M, N]) -> f32[M, N] { e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N) }"
MATMUL = "kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }"
TWO_GROUPS = "kernel two(x: f32[M, N]) -> f32[M] { c = x - mean(x, axis=M)\n return sum(c * c, axis=N) }"
EXT = dict(M=64, N=256)


@pytest.fixture
def gpu(monkeypatch, cache_dir, tmp_path):
    monkeypatch.setenv("TILEDSL_TUNING_DB", str(tmp_path / "tuning.json"))
    return fake_gpu.install(monkeypatch)


def _kernel(src=SOFTMAX, **launcher):
    k = tiledsl.compile(src)
    k._launcher = fake_gpu.FakeLauncher(k, **launcher)
    return k


def _fastest(report, group=0):
    timed = [c for c in report.groups[group].candidates if c.status == "timed"]
    return min(timed, key=lambda c: c.median)


def test_a_search_times_every_candidate_picks_by_the_rule_stores_and_installs(gpu, tmp_path):
    k = _kernel()
    report = autotune(k, EXT, max_candidates=8, workers=2)
    [g] = report.groups
    assert report.origin == "search" and report.device == fake_gpu.DEVICE_NAME
    timed = g.by_status("timed")
    assert len(timed) >= 6 and all(c.error <= 1e-5 for c in timed)
    assert all(fake_gpu.cost_of(c.tag) <= c.median * 1.05 and c.median <= fake_gpu.cost_of(c.tag) * 1.05
               for c in timed)
    best = min(c.median for c in timed)
    assert g.winner.median <= best * (1 + g.choice.band)
    # the ones near the best (the best at least) were timed twice, the rest once
    near = [c for c in timed if c.median <= best * 1.04]
    far = [c for c in timed if c.median > best * 1.06 and not c.cut_short]
    assert near and far
    assert all(len(c.samples) > len(f.samples) for c in near for f in far)
    tied = [c for c in timed if c.median <= best * (1 + g.choice.band)]
    assert g.winner is min(tied, key=lambda c: (c.resources, c.tag))
    assert k._launcher.overrides == {0: g.winner.schedule}
    [record] = TuningDB(tmp_path / "tuning.json").records()
    assert record["tag"] == config_label(g.winner.schedule) and record["extents"] == EXT
    assert record["device"] == fake_gpu.DEVICE_NAME and record["cc"] == "90" and record["complete"]
    assert report.stored and report.default_seconds and report.tuned_seconds
    text = report.table()
    assert "WINNER" in text and "default" in text and "TB/s" in text and "stored in" in text


def test_a_planted_wrong_schedule_is_rejected_loudly_and_never_wins(gpu):
    honest = autotune(_kernel(), EXT, max_candidates=8, db=False)
    planted = honest.groups[0].winner.tag
    k = _kernel()
    with pytest.warns(RuntimeWarning, match=f"{planted}.*WRONG result.*compiler bug"):
        report = autotune(k, EXT, max_candidates=8, db=False, fault=planted)
    [g] = report.groups
    bad = next(c for c in g.candidates if c.tag == planted)
    assert bad.status == "wrong" and "relative error" in bad.reason and bad.median is None
    assert g.winner is not None and g.winner.tag != planted
    assert [c.tag for c in report.wrong] == [planted]
    assert f"!! REJECTED {planted}" in report.table()


def test_fault_injection_by_environment_variable(gpu, monkeypatch):
    k = _kernel()
    default_tag = autotune(k, EXT, max_candidates=2, db=False).groups[0].candidates[0].tag
    monkeypatch.setenv("TILEDSL_TUNE_FAULT", default_tag)
    with pytest.warns(RuntimeWarning, match="WRONG"):
        report = autotune(_kernel(), EXT, max_candidates=2, db=False)
    assert report.groups[0].candidates[0].status == "wrong"


def test_nan_never_passes_and_a_kernel_that_writes_nothing_is_caught(gpu):
    k = _kernel()
    real = k._launcher.__call__

    class Lazy(fake_gpu.FakeLauncher):
        def __call__(self, args, kwargs, out):
            if self.label(dict(zip(k.graph.dims, args[0].shape))) == skip:
                fake_gpu.Clock.now += 1e-6          # "fast": it does nothing at all
                return out
            return real(args, kwargs, out)
    first = autotune(k, EXT, max_candidates=4, db=False)
    skip = first.groups[0].candidates[1].tag
    k._launcher = Lazy(k)
    with pytest.warns(RuntimeWarning):
        report = autotune(k, EXT, max_candidates=4, db=False)
    c = report.groups[0].candidates[1]
    assert c.status == "wrong" and c.error == float("inf")
    assert report.groups[0].winner.tag != skip


def test_a_failed_launch_is_recorded_and_skipped(gpu):
    probe = autotune(_kernel(), EXT, max_candidates=5, db=False)
    victim = probe.groups[0].candidates[2].tag
    report = autotune(_kernel(fail_tags={victim}), EXT, max_candidates=5, db=False)
    c = report.groups[0].candidates[2]
    assert c.status == "failed" and "cudaErrorLaunchOutOfResources" in c.reason
    assert len(report.groups[0].by_status("timed")) == 4
    assert f"FAILED  {victim}" not in report.table() and "FAILED" in report.table()


def test_the_budget_stops_the_search_but_the_default_is_always_timed(gpu):
    report = autotune(_kernel(), EXT, max_candidates=8, budget=1e-9, db=False)
    [g] = report.groups
    assert report.stopped_by_budget
    assert g.candidates[0].is_default and g.candidates[0].status == "timed"
    assert g.winner is g.candidates[0]
    assert all(c.status == "skipped" for c in g.candidates[1:])
    assert "budget" in report.table()


def test_a_warm_database_answers_at_once_with_the_same_config(gpu, tmp_path):
    db = tmp_path / "warm.json"
    first = autotune(_kernel(), EXT, max_candidates=8, db=db)
    k = _kernel()
    t0 = time.monotonic()
    second = autotune(k, EXT, max_candidates=8, db=db)
    assert time.monotonic() - t0 < 1.0
    assert second.origin == "database" and k._launcher.calls == 0
    assert second.winners == first.winners
    assert k._launcher.overrides == first.winners
    third = autotune(_kernel(), EXT, max_candidates=8, db=db, retune=True)
    assert third.origin == "search"
    other_shape = autotune(_kernel(), dict(M=128, N=256), max_candidates=4, db=db)
    assert other_shape.origin == "search"          # only an exact record skips the search
    assert len(TuningDB(db).records()) == 2


def test_a_call_that_runs_spread_is_tuned_as_spread_and_stored_under_its_partition(gpu, tmp_path):
    """A few long rows run spread (a reduction split over the GPU, then a pointwise kernel):
    both of its groups are timed, the winners are pinned on the spread launcher for that call
    class, and the records name the partition,
    so a warm database answers the spread groups and never the fused partition's group 0."""
    db = tmp_path / "spread.json"
    src, ext = "kernel share(x: f32[N]) -> f32[N] { return x / sum(x) }", dict(N=1 << 22)
    k = _kernel(src)
    report = autotune(k, ext, max_candidates=4, db=db)
    assert report.partition == "spread" and "runs spread: 2 groups" in report.table()
    assert [(g.kind, g.origin) for g in report.groups] == [("reduce", "search"), ("pointwise", "search")]
    assert all(g.by_status("timed") for g in report.groups)
    assert k._launcher.mode == "spread" and k._launcher.overrides == report.winners and len(report.winners) == 2
    assert k._launcher.pinned_extents == ext
    records = TuningDB(db).records()
    assert sorted((r["partition"], r["group"]) for r in records) == [("spread", 0), ("spread", 1)]
    again = autotune(_kernel(src), ext, max_candidates=4, db=db)
    assert again.origin == "database" and again.winners == report.winners
    fused = TuningDB(db).lookup(records[0]["kernel_hash"], fake_gpu.DEVICE_NAME, "90", 0, ext)
    assert fused is None
    short = autotune(_kernel(src), dict(N=1 << 12), max_candidates=2, db=db)
    assert short.partition == "" and short.origin == "search" and len(short.groups) == 1


def test_an_interrupted_search_leaves_the_pins_it_found(gpu, monkeypatch):
    """Ctrl-C (or any error) in the middle of a search: the launcher's pins are restored,
    not left on the candidate being timed (which may be one just found wrong)."""
    from tiledsl.tune import runner
    k = _kernel()
    before = {0: "pinned by an earlier run"}
    k._launcher.overrides, k._launcher.pinned_extents = dict(before), dict(M=8, N=8)
    pinned = []

    def interrupt(self, g, others):
        pinned.append(dict(self.launcher.overrides))
        raise KeyboardInterrupt
    monkeypatch.setattr(runner._Tuner, "_refine", interrupt)
    with pytest.raises(KeyboardInterrupt):
        autotune(k, EXT, max_candidates=4, db=False)
    assert pinned and pinned[0] != before
    assert k._launcher.overrides == before and k._launcher.pinned_extents == dict(M=8, N=8)


def test_two_runs_with_different_noise_pick_the_same_winner(gpu):
    picks = {autotune(_kernel(seed=s, noise=0.003), EXT, max_candidates=10, db=False).groups[0].winner.tag
             for s in range(3)}
    assert len(picks) == 1


def test_near_equal_schedules_tie_the_default_first_then_the_cheapest(gpu):
    flat = lambda tag: 1e-4 * (1.001 if "b1024" in tag else 1.0)    # all within noise of each other
    report = autotune(_kernel(cost=flat, noise=0.0005), EXT, max_candidates=10, db=False)
    [g] = report.groups
    assert len(g.choice.tied) == len(g.by_status("timed"))
    assert g.winner.is_default and "default" in g.choice.reason     # nothing beats it: it stays
    default_tag = g.winner.schedule.tag
    slow_default = lambda tag: 1e-4 * (1.05 if default_tag in tag else 1.001 if "b1024" in tag else 1.0)
    report = autotune(_kernel(cost=slow_default, noise=0.0005), EXT, max_candidates=10, db=False)
    [g] = report.groups
    rest = [c for c in g.by_status("timed") if not c.is_default]
    assert not g.winner.is_default and default_tag not in g.choice.tied
    assert g.winner is min(rest, key=lambda c: (c.resources, c.tag))


def test_a_winner_that_does_not_beat_the_default_side_by_side_gives_way(gpu, monkeypatch):
    """Clocks drift over a search: a schedule that looked 10% faster there but times like the
    default when the two are timed in turn does not replace it."""
    from tiledsl.tune import runner
    state = {"searching": True}
    cost = lambda tag: 1e-4 * (0.9 if "b512" in tag and state["searching"] else 1.0)
    search_refine = runner._Tuner._refine

    def refine_then_drift(self, g, others):
        search_refine(self, g, others)
        state["searching"] = False
    monkeypatch.setattr(runner._Tuner, "_refine", refine_then_drift)
    ext = dict(M=64, N=1024)        # rows a block each by default (lighter ones take a warp)
    report = autotune(_kernel(cost=cost, noise=0.0005), ext, max_candidates=16, db=False)
    [g] = report.groups
    assert "b512" in g.choice.challenger and "b512" not in g.winner.tag
    assert g.winner.is_default and g.choice.overruled and "side by side" in g.choice.reason
    state["searching"] = True           # still 10% faster side by side: it wins, confirmed
    monkeypatch.setattr(runner._Tuner, "_refine", search_refine)
    report = autotune(_kernel(cost=cost, noise=0.0005), ext, max_candidates=16, db=False)
    [g] = report.groups
    assert "b512" in g.winner.tag and not g.choice.overruled
    assert "side by side with the default -10" in g.choice.reason


def test_groups_are_tuned_in_turn(gpu):
    k = _kernel(TWO_GROUPS)
    report = autotune(k, dict(M=256, N=64), max_candidates=3, db=False)
    assert len(report.groups) == 2 and all(g.winner is not None for g in report.groups)
    assert set(k._launcher.overrides) == {0, 1}


def test_peers_on_a_matmul(gpu):
    k = _kernel(MATMUL)
    report = autotune(k, dict(M=64, N=32, K=48), max_candidates=3, db=False, peers=("cublas", "cupy", "triton"))
    names = [p.name for p in report.peers]
    assert names == ["cuBLAS (cupy.matmul)", "CuPy, unfused", "Triton"]
    assert report.peers[0].seconds is not None and report.peers[0].error < 2e-3
    assert report.peers[2].seconds is None and "n/a" in report.peers[2].note
    text = report.table()
    assert "vs cuBLAS (cupy.matmul)" in text and "TFLOP/s" in text


def test_kernel_autotune_from_python(gpu, tmp_path):
    k = _kernel()
    x = np.zeros((64, 256), np.float32)        # only its shape matters: the tuner draws its own inputs
    report = k.autotune(x, db=tmp_path / "api.json", max_candidates=6)
    assert report.groups[0].winner is not None and k._launcher.overrides == report.winners
    assert all(c.error < 1e-5 for c in report.groups[0].by_status("timed"))


def test_cli_autotune_and_bench_on_the_pretend_gpu(gpu, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "_gpu_available", lambda: (True, ""))
    real_compile = cli.compile_program

    def with_fake_launcher(*a, **kw):
        program = real_compile(*a, **kw)
        for kern in (program if isinstance(program, tiledsl.Module) else [program]):
            kern._launcher = fake_gpu.FakeLauncher(kern)
        return program
    monkeypatch.setattr(cli, "compile_program", with_fake_launcher)
    src = tmp_path / "softmax.tdsl"
    src.write_text(SOFTMAX)
    out_json = tmp_path / "report.json"
    rc = cli.main(["autotune", str(src), "--shape", "M=64,N=256", "--max-candidates", "4", "--db",
                   str(tmp_path / "cli.json"), "--json", str(out_json), "-q"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "WINNER" in out and "vs CuPy, unfused" in out and "Triton: n/a" in out
    data = json.loads(out_json.read_text())
    assert data[0]["groups"][0]["winner"] and len(data[0]["groups"][0]["candidates"]) == 4
    rc = cli.main(["autotune", str(src), "--shape", "M=64,N=256", "--db", str(tmp_path / "cli.json"), "-q"])
    out, _ = capsys.readouterr()
    assert rc == 0 and "database" in out
    rc = cli.main(["bench", str(src), "--shape", "M=64,N=256", "--vs", "cupy,cublas,triton"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "tiledsl" in out and "CuPy, unfused" in out and "not a plain a @ b" in out


def test_progress_counts_reach_the_stream(gpu, tmp_path):
    import io
    stream = io.StringIO()
    autotune(_kernel(), EXT, max_candidates=4, db=False, progress=True, stream=stream)
    last = stream.getvalue().strip().splitlines()[-1]
    assert "4/4 candidates" in last and "timed 4" in last and "compiled" in last


def test_cli_run_reports_the_roofline_of_a_matmul(gpu, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "_gpu_available", lambda: (True, ""))
    real_compile = cli.compile_program

    def with_fake_launcher(*a, **kw):
        program = real_compile(*a, **kw)
        program._launcher = fake_gpu.FakeLauncher(program)
        return program
    monkeypatch.setattr(cli, "compile_program", with_fake_launcher)
    src = tmp_path / "mm.tdsl"
    src.write_text(MATMUL)
    rc = cli.main(["run", str(src), "--shape", "M=64,N=32,K=48"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert re.search(r"GPU: [\d.]+ us  [\d.]+ TFLOP/s \([\d.]+% of the roofline: H200 SXM tensor-core peak 989 "
                     r"TFLOP/s, bandwidth 4000 GB/s\)", out), out
    src.write_text(SOFTMAX)
    rc = cli.main(["run", str(src), "--shape", "M=64,N=32"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "of the roofline: measured copy bandwidth 4000 GB/s" in out


def test_when_nothing_passes_the_default_stays_and_nothing_is_stored(gpu, tmp_path):
    probe = autotune(_kernel(), EXT, max_candidates=3, db=False)
    tags = {c.tag for c in probe.groups[0].candidates}
    db = tmp_path / "none.json"
    k = _kernel(fail_tags=tags)
    report = autotune(k, EXT, max_candidates=3, db=db)
    [g] = report.groups
    assert g.winner is None and {c.status for c in g.candidates} == {"failed"}
    assert "no candidate gave a correct, timed result" in report.warnings[0]
    assert not report.stored and not db.exists() and k._launcher.overrides == {}
    assert "warning: group 0" in report.table()


def test_the_search_space_centres_on_the_default_this_gpus_bandwidth_picks(gpu, monkeypatch):
    """The tuner reads the GPU's peak memory bandwidth as the launcher does: on an H100's
    (2619 MHz x 5120 bits, 3352 GB/s) layernorm's default, timed first, is the late-load row."""
    from tiledsl.runtime import launcher
    layernorm = (EXAMPLES / "layernorm.tdsl").read_text()
    ext = dict(M=8448, N=1536)       # 64 rows per SM of 132 (rows under 4096 bytes, 5898 at 4.9 TB/s, take a warp each)
    report = autotune(_kernel(layernorm), ext, max_candidates=1, db=False)
    assert report.groups[0].default.tag.endswith("_p_x32")         # the fake H200: 4.9 TB/s
    attrs = {36: 2_619_000, 37: 5120}
    real = gpu.cuda.runtime.deviceGetAttribute
    monkeypatch.setattr(gpu.cuda.runtime, "deviceGetAttribute", lambda a, d: attrs.get(a) or real(a, d))
    monkeypatch.setattr(launcher, "_HBM_GBPS", {})
    assert abs(launcher.hbm_bandwidth(0) - 3352.3) < 0.1
    report = autotune(_kernel(layernorm), ext, max_candidates=1, db=False)
    [g] = report.groups
    assert g.default.tag.endswith("_nh_r40_x32") and g.winner is not None and g.winner.is_default


def test_the_default_is_timed_at_the_splits_an_untuned_call_launches(gpu):
    """A split along rows that an untuned call cuts, once compiled, into the splits filling
    every SM's room (Launcher.launched_default; 2 blocks of 512 an SM here: 264) is timed as
    the default at that count, once: the candidate of that count becomes the default, the
    rules' count (132) is gone from the search, and the tuned time is compared with it; a
    database that stored it answers with it as the default."""
    from tiledsl.schedule.columns import splits_filling_room
    src = "kernel f(x: f32[N]) -> f32 { return max(x) }"
    ext = dict(N=1 << 23)
    plain = autotune(_kernel(src), ext, db=False)
    [g] = plain.groups
    assert g.default.kind == "reduce_split" and g.default.splits == 132 and g.candidates[0].is_default
    k = _kernel(src, cost=lambda tag: 1e-4 if "_sp264" in tag else 2e-4)    # the launched count fastest
    k._launcher.resident = 2
    report = autotune(k, ext)
    [g] = report.groups
    want = splits_filling_room(g.problem, plain.groups[0].default, 2)
    assert want.splits == 264 and g.default == want
    defaults = [c for c in g.candidates if c.is_default]
    assert defaults == [g.candidates[0]] and defaults[0].schedule == want and defaults[0].status == "timed"
    assert defaults[0].tag == config_label(want) and "_sp264" in defaults[0].tag
    assert [c.schedule for c in g.candidates].count(want) == 1
    assert plain.groups[0].default not in [c.schedule for c in g.candidates]
    assert len(g.candidates) == len(plain.groups[0].candidates) - 1
    assert report.default_seconds == defaults[0].median
    assert g.winner is defaults[0] and report.stored
    again = autotune(k, ext)        # a warm database's answer is still called the default
    assert again.origin == "database" and again.groups[0].winner.is_default
