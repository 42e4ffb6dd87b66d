"""The autotuner on a real GPU (marker gpu): a full search, a planted wrong
schedule rejected, a warm database answering at once with the same config,
the launcher planning with a database record, and the CLI."""
from __future__ import annotations

import os

import time
import warnings

import numpy as np
import pytest

import tiledsl
from tiledsl import cli
from tiledsl.inputs import random_arguments, relative_error
from tiledsl.tune import autotune
from tiledsl.tune.db import TuningDB, make_record
from tiledsl.tune.space import config_label

from conftest import EXAMPLES
from gpu_helpers import check, gpu_status

_ok, _why = gpu_status()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _ok, reason=_why)]

SOFTMAX = str(EXAMPLES / "softmax.tdsl")
MATMUL = "kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }"


@pytest.fixture(autouse=True)
def private_db(tmp_path, monkeypatch):
    """Every test gets its own tuning database; none reads the user's."""
    monkeypatch.setenv("TILEDSL_TUNING_DB", str(tmp_path / "tuning.json"))
    return tmp_path / "tuning.json"


def _assert_correct_after(k, extents):
    """Calls after tuning run the installed winners and are still right."""
    check(k, random_arguments(k.graph, extents), extents, "out")


def test_full_search_on_softmax(private_db):
    k = tiledsl.compile(SOFTMAX)
    ext = dict(M=4096, N=1024)
    report = autotune(k, ext)
    [g] = report.groups
    timed = g.by_status("timed")
    print(report.table())
    assert report.origin == "search" and len(timed) >= len(g.candidates) // 2
    assert all(c.error <= 1e-5 for c in timed) and not report.wrong
    if os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") == "1":
        # the winner is the fastest within the noise band (only meaningful when no
        # other test process shares the GPU: under pytest -n the timings are not quiet),
        # unless it is the default, kept because the search's fastest did not beat it
        # when the two were timed in turn
        fastest = min(c.median for c in timed)
        assert g.winner.median <= fastest * (1 + g.choice.band) + 1e-12 or (
            g.choice.overruled and g.winner.is_default and g.choice.side_by_side), g.choice.reason
    assert k._launcher.overrides == {0: g.winner.schedule}
    assert report.stored and TuningDB(private_db).records()[0]["tag"] == config_label(g.winner.schedule)
    assert report.copy_bandwidth and 0 < report.work.bytes / g.winner.median < 2 * report.copy_bandwidth
    _assert_correct_after(k, ext)


def test_full_search_on_a_matmul_with_cublas_alongside():
    k = tiledsl.compile(MATMUL)
    ext = dict(M=1024, N=1024, K=512)
    report = autotune(k, ext, peers=("cublas", "cupy", "triton"))
    print(report.table())
    [g] = report.groups
    assert g.winner is not None and not report.wrong
    cublas = report.peers[0]
    assert cublas.seconds and cublas.error < 2e-3
    assert "TFLOP/s" in report.table()
    _assert_correct_after(k, ext)


def test_a_planted_wrong_schedule_is_rejected():
    ext = dict(M=2048, N=2048)
    honest = autotune(tiledsl.compile(SOFTMAX), ext, db=False)
    victim = honest.groups[0].winner.tag
    k = tiledsl.compile(SOFTMAX)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = autotune(k, ext, db=False, fault=victim)
    [g] = report.groups
    bad = next(c for c in g.candidates if c.tag == victim)
    assert bad.status == "wrong" and bad.median is None
    assert g.winner is not None and g.winner.tag != victim
    assert any("WRONG" in str(w.message) and victim in str(w.message) for w in caught)
    assert f"!! REJECTED {victim}" in report.table()
    _assert_correct_after(k, ext)


def test_a_warm_database_reruns_quickly_with_the_same_config(private_db):
    ext = dict(M=512, N=512, K=512)
    first = autotune(tiledsl.compile(MATMUL), ext)
    k = tiledsl.compile(MATMUL)
    t0 = time.perf_counter()
    second = autotune(k, ext)
    assert time.perf_counter() - t0 < 1.0
    assert second.origin == "database" and second.winners == first.winners
    assert k._launcher.overrides == first.winners
    _assert_correct_after(k, ext)


def test_the_launcher_plans_with_a_database_record(private_db, monkeypatch):
    import cupy
    from tiledsl.runtime.launcher import _device_identity
    from tiledsl.tune.space import search_space
    k = tiledsl.compile(SOFTMAX)
    ext = dict(M=4096, N=1024)
    [space] = search_space(k, ext, sm_count=cupy.cuda.runtime.deviceGetAttribute(16, 0))
    pick = next(c.schedule for c in space.candidates if c.status == "pending" and c.schedule != space.default)
    name, cc = _device_identity(0)
    TuningDB(private_db).store([make_record(k, 0, ext, name, cc, pick, seconds=1e-4)])
    x = cupy.asarray(np.random.default_rng(0).standard_normal((4096, 1024)).astype(np.float32))
    y = k(x)
    program = next(iter(k._launcher._plans.values()))
    assert program.choices[0] == (pick, "db exact")
    assert relative_error(cupy.asnumpy(y), k.reference(cupy.asnumpy(x), compute="f64")) <= 1e-5
    k(x[:4000])                       # same bucket, nearest record
    assert [p.choices[0][1] for p in k._launcher._plans.values()] == ["db exact", "db nearest"]
    monkeypatch.setenv("TILEDSL_TUNING_DB", "off")
    k2 = tiledsl.compile(SOFTMAX)
    k2(x)
    assert next(iter(k2._launcher._plans.values())).choices[0] == (space.default, "default")
    _assert_correct_after(k, ext)


def test_cli_autotune_bench_and_run(capsys, tmp_path):
    src = tmp_path / "mm.tdsl"
    src.write_text(MATMUL)
    rc = cli.main(["autotune", str(src), "--shape", "M=512,N=512,K=256", "--db", str(tmp_path / "c.json"),
                   "--budget", "60", "-q"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "WINNER" in out and "vs cuBLAS (cupy.matmul)" in out and "stored in" in out
    rc = cli.main(["bench", str(src), "--shape", "M=512,N=512,K=256", "--db", str(tmp_path / "c.json")])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "cuBLAS (cupy.matmul)" in out and "(db exact)" in out
    rc = cli.main(["run", str(src), "--shape", "M=512,N=512,K=256"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "TFLOP/s" in out and "of the roofline" in out


def test_kernel_autotune_from_python_installs_the_winners():
    import cupy
    k = tiledsl.compile(MATMUL)
    a = cupy.zeros((256, 128), cupy.float16)        # shapes only: the tuner draws its own inputs
    b = cupy.zeros((128, 384), cupy.float16)
    report = k.autotune(a, b, db=False, max_candidates=8)
    assert report.extents == dict(M=256, K=128, N=384)
    assert k._launcher.overrides == report.winners and report.groups[0].winner is not None
    _assert_correct_after(k, report.extents)


def test_the_default_timed_is_the_one_an_untuned_call_launches(monkeypatch):
    """max f16 [2^26]: an untuned call runs its split along rows at the count filling every
    SM's room once compiled (396 on an H100 or H200, not the rules' 132); the tuner's default
    is that schedule, timed, and a winner other than it beat it side by side."""
    import cupy
    monkeypatch.setenv("TILEDSL_TUNING_DB", "off")
    src = "kernel f(x: f16[N]) -> f16 { return max(x) }"
    ext = dict(N=1 << 26)
    x = cupy.asarray(np.random.default_rng().standard_normal(ext["N"]).astype(np.float16))
    k = tiledsl.compile(src)
    k(x)
    [(launched, origin)] = next(iter(k._launcher._plans.values())).choices.values()
    assert origin == "default" and launched.kind == "reduce_split"
    report = autotune(tiledsl.compile(src), ext, db=False, max_candidates=12)
    [g] = report.groups
    print(report.table())
    assert g.default == launched
    [base] = [c for c in g.candidates if c.is_default]
    assert base.schedule == launched and base.status == "timed" and report.default_seconds == base.median
    assert [c.schedule for c in g.candidates].count(launched) == 1
    assert g.winner is base or g.choice.side_by_side, g.choice.reason


def test_a_spread_call_is_tuned_pinned_and_answered_by_the_database(private_db):
    """x / sum(x) over 2^22 runs spread (a reduction split over the GPU, then a pointwise
    kernel): both groups are searched, a call after tuning runs the winners on the spread
    launcher and is right, and a fresh kernel's launcher plans the same call class from the
    database's records of the spread partition."""
    src, ext = "kernel share(x: f32[N]) -> f32[N] { return x / sum(x) }", dict(N=(1 << 22) + 3)
    k = tiledsl.compile(src)
    report = autotune(k, ext, max_candidates=4)
    print(report.table())
    assert report.partition == "spread" and [g.kind for g in report.groups] == ["reduce", "pointwise"]
    assert all(g.by_status("timed") and not g.by_status("wrong") for g in report.groups)
    spread = k._launcher.partition_launcher("spread")
    assert spread.overrides == report.winners and not k._launcher.overrides
    _assert_correct_after(k, ext)
    assert {r.get("partition") for r in TuningDB(private_db).records()} == {"spread"}
    fresh = tiledsl.compile(src)
    _assert_correct_after(fresh, ext)
    [program] = fresh._launcher.partition_launcher("spread")._plans.values()
    assert {i: s for i, (s, _) in program.choices.items()} == report.winners
    assert {origin for _, origin in program.choices.values()} == {"db exact"}
