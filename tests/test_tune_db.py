"""The tuning database (CPU): location, atomic merged writes, concurrent
writers, damaged files, bucket lookup, stale records, the launcher's lookup."""
from __future__ import annotations

import json
import multiprocessing
import os
import warnings

import pytest

import tiledsl
from tiledsl.schedule.choose import candidates, default, fits
from tiledsl.schedule.problem import problem
from tiledsl.schedule.layout import plan_layout
from tiledsl.schedule.partition import partition
from tiledsl.tune import db as tdb

SOFTMAX = "kernel softmax(x: f32[M, N]) -> f32[M, N] { e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N) }"
MATMUL = "kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }"
DEVICE, CC = "NVIDIA H200", "90"


def _problem(kernel, extents):
    group = partition(kernel.graph)[0]
    return problem(group, plan_layout(group, kernel.graph), extents)


def _other(p, kernel, avoid):
    """A candidate that fits p and is not `avoid` (so a test can tell records apart)."""
    return next(s for s in candidates(p, kernel.hints) if s != avoid and not fits(p, s))


def _record(kernel, extents, schedule, group=0, device=DEVICE, cc=CC, **extra):
    return tdb.make_record(kernel, group, extents, device, cc, schedule, seconds=1e-3, **extra)


@pytest.fixture
def softmax():
    return tiledsl.compile(SOFTMAX)


# -- where it lives ------------------------------------------------------------------

def test_location_flag_env_and_cache_dir(tmp_path, monkeypatch):
    monkeypatch.delenv(tdb.ENV_VAR, raising=False)
    monkeypatch.setenv("TILEDSL_CACHE_DIR", str(tmp_path / "cache"))
    assert tdb.resolve_db_path() == tmp_path / "cache" / "tuning.json"
    assert tdb.resolve_db_path(tmp_path / "mine.json") == tmp_path / "mine.json"
    assert tdb.resolve_db_path(False) is None
    monkeypatch.setenv(tdb.ENV_VAR, str(tmp_path / "env.json"))
    assert tdb.resolve_db_path() == tmp_path / "env.json"
    assert tdb.resolve_db_path(str(tmp_path / "flag.json")) == tmp_path / "flag.json"   # the flag wins
    for off in ("off", "0", "OFF", "false"):
        monkeypatch.setenv(tdb.ENV_VAR, off)
        assert tdb.resolve_db_path() is None


def test_default_location_without_cache_dir_is_the_compile_cache_folder(tmp_path, monkeypatch):
    from tiledsl.runtime.cache import _default_root
    monkeypatch.delenv(tdb.ENV_VAR, raising=False)
    monkeypatch.delenv("TILEDSL_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert tdb.resolve_db_path() == _default_root() / "tuning.json"


# -- records and schedules -------------------------------------------------------------

def test_config_round_trips_through_json_for_every_schedule_kind(softmax):
    mm = tiledsl.compile(MATMUL)
    schedules = candidates(_problem(mm, dict(M=512, N=512, K=512)), mm.hints)
    schedules += candidates(_problem(softmax, dict(M=64, N=4096)), softmax.hints)
    assert any(s.tile for s in schedules)
    for s in schedules:
        config = json.loads(json.dumps(tdb.schedule_config(s)))
        assert tdb.schedule_from_config(config) == s


def test_fingerprint_is_stable_and_tells_kernels_and_hints_apart(softmax):
    again = tiledsl.compile(SOFTMAX)
    assert tdb.kernel_fingerprint(softmax) == tdb.kernel_fingerprint(again)
    other = tiledsl.compile(SOFTMAX.replace("exp(", "exp2("))
    assert tdb.kernel_fingerprint(other) != tdb.kernel_fingerprint(softmax)
    hinted = tiledsl.compile(SOFTMAX + "\nschedule softmax { threads(128) }")
    assert tdb.kernel_fingerprint(hinted) != tdb.kernel_fingerprint(softmax)
    assert tdb.dtypes_text(softmax.graph) == "f32->f32"


def test_fingerprint_holds_only_the_hints_given_so_new_directives_keep_old_keys(softmax):
    """A kernel's key holds the directives its schedule block gives, not every Hints field:
    a directive added to the language later (a field at its default) leaves the keys of
    kernels that do not use it, and the databases holding them, as they were."""
    from dataclasses import dataclass
    from typing import Optional
    from tiledsl.schedule.hints import Hints

    @dataclass(frozen=True)
    class Later(Hints):
        newer: Optional[int] = None
    assert Hints().given == Later().given == ""
    assert Later(threads=128, stages=2).given == Hints(threads=128, stages=2).given == "stages=2, threads=128"
    assert Later(newer=3).given == "newer=3"
    hinted = tiledsl.compile(SOFTMAX + "\nschedule softmax { cluster(4) }")
    assert hinted.hints.given == "cluster=4" and "None" not in softmax.hints.given


def test_buckets_round_to_the_nearest_power_of_two():
    assert [tdb.shape_bucket(n) for n in (1, 2, 3, 781, 1000, 1024, 1500, 4096, 0)] == \
        [0, 1, 2, 10, 10, 10, 11, 12, -1]
    assert tdb.bucket_distance({"M": 4096, "N": 1024}, {"M": 4000, "N": 2048}) == 1


# -- writing ---------------------------------------------------------------------------

def test_store_merges_replaces_by_key_and_leaves_no_temp_files(tmp_path, softmax):
    path = tmp_path / "sub" / "tuning.json"
    db = tdb.TuningDB(path)
    ext1, ext2 = dict(M=4096, N=1024), dict(M=8192, N=1024)
    p1 = _problem(softmax, ext1)
    s1 = default(p1, softmax.hints)
    s2 = _other(p1, softmax, s1)
    db.store([_record(softmax, ext1, s1)])
    db.store([_record(softmax, ext2, s1)])
    assert len(db.records()) == 2
    db.store([_record(softmax, ext1, s2)])            # same key: replaced, not added
    records = db.records()
    assert len(records) == 2
    assert tdb.schedule_from_config(next(r for r in records if r["extents"] == ext1)["config"]) == s2
    assert sorted(os.listdir(path.parent)) == ["tuning.json", "tuning.json.lock"]
    data = json.loads(path.read_text())
    assert data["format"] == tdb.FORMAT and len(data["records"]) == 2


def test_unwritable_location_is_a_tdsl_error(tmp_path, softmax):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    db = tdb.TuningDB(blocker / "tuning.json")
    ext = dict(M=64, N=64)
    with pytest.raises(tiledsl.TdslError, match="cannot write the tuning database"):
        db.store([_record(softmax, ext, default(_problem(softmax, ext), softmax.hints))])


def _writer(path: str, worker: int, count: int) -> None:
    import time
    real = tdb._write_atomic

    def slow_write(*args):      # widen the read-merge-write window, so a missing lock loses records
        time.sleep(0.005)
        real(*args)
    tdb._write_atomic = slow_write
    kernel = tiledsl.compile(SOFTMAX)
    db = tdb.TuningDB(path)
    for i in range(count):
        ext = dict(M=1 + worker * 1000 + i, N=1024)
        db.store([_record(kernel, ext, default(_problem(kernel, ext), kernel.hints))])


def test_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "tuning.json")
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 15)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    records = tdb.TuningDB(path).records()
    assert len(records) == 60
    assert len({tdb.record_key(r) for r in records}) == 60


# -- damaged files -------------------------------------------------------------------

@pytest.mark.parametrize("content", ["", "{", '{"records": [', "[1, 2]", '{"records": 3}', "\x00\xff garbage",
                                     '{"format": "x", "records": [{"kernel_hash": 1}]}'])
def test_damaged_file_warns_and_reads_as_empty_then_is_rewritten(tmp_path, softmax, content):
    path = tmp_path / "tuning.json"
    path.write_bytes(content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content)
    db = tdb.TuningDB(path)
    ext = dict(M=4096, N=1024)
    p = _problem(softmax, ext)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert db.lookup(tdb.kernel_fingerprint(softmax), DEVICE, CC, 0, ext, p) is None
    if "kernel_hash" not in content:          # a well-formed file with a bad record: skipped quietly
        assert any("tuning database" in str(w.message) for w in caught)
    db.store([_record(softmax, ext, default(p, softmax.hints))])
    assert len(tdb.TuningDB(path).records()) == 1


def test_truncated_file_is_survived(tmp_path, softmax):
    path = tmp_path / "tuning.json"
    ext = dict(M=4096, N=1024)
    tdb.TuningDB(path).store([_record(softmax, ext, default(_problem(softmax, ext), softmax.hints))])
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.warns(RuntimeWarning, match="damaged"):
        assert tdb.TuningDB(path).records() == []


# -- lookup ------------------------------------------------------------------------------

def _lookup(db, kernel, ext, **kw):
    return db.lookup(tdb.kernel_fingerprint(kernel), kw.get("device", DEVICE), kw.get("cc", CC),
                     kw.get("group", 0), ext, _problem(kernel, ext), kw.get("dtypes"))


def test_records_of_another_partition_never_answer_the_fused_one(tmp_path, softmax):
    """Group 0 of the spread or columns partition is another group than the fused partition's
    group 0: a record names its partition (none: the fused one, as records written before
    had), the two are stored side by side, and each lookup finds only its own."""
    db = tdb.TuningDB(tmp_path / "t.json")
    ext = dict(M=4096, N=1024)
    p = _problem(softmax, ext)
    fused_pick = default(p, softmax.hints)
    spread_pick = _other(p, softmax, fused_pick)
    db.store([_record(softmax, ext, fused_pick), _record(softmax, ext, spread_pick, partition="spread")])
    records = db.records()
    assert sorted(r.get("partition", "") for r in records) == ["", "spread"]
    fp = tdb.kernel_fingerprint(softmax)
    assert db.lookup(fp, DEVICE, CC, 0, ext, p)[0] == fused_pick
    assert db.lookup(fp, DEVICE, CC, 0, ext, p, partition="spread")[0] == spread_pick
    assert db.lookup(fp, DEVICE, CC, 0, ext, p, partition="columns") is None


def test_lookup_exact_then_nearest_bucket_then_none(tmp_path, softmax):
    db = tdb.TuningDB(tmp_path / "t.json")
    tuned = dict(M=4096, N=1024)
    p = _problem(softmax, tuned)
    s_default = default(p, softmax.hints)
    s_tuned = _other(p, softmax, s_default)
    s_near = _other(p, softmax, s_tuned) if _other(p, softmax, s_tuned) != s_default else s_default
    db.store([_record(softmax, tuned, s_tuned), _record(softmax, dict(M=16384, N=1024), s_near)])
    hit = _lookup(db, softmax, tuned)
    assert hit is not None and hit[0] == s_tuned and hit[2] == "exact"
    near = _lookup(db, softmax, dict(M=4000, N=1024))      # same bucket as 4096, nearest record
    assert near is not None and near[0] == s_tuned and near[2] == "nearest"
    near = _lookup(db, softmax, dict(M=12000, N=1024))     # bucket 14 of 16384 beats 12 of 4096
    assert near is not None and near[0] == s_near and near[2] == "nearest"
    assert _lookup(db, softmax, dict(M=64, N=1024)) is None           # 6 buckets away: default
    assert _lookup(db, softmax, tuned, device="NVIDIA A100") is None
    assert _lookup(db, softmax, tuned, cc="80") is None
    assert _lookup(db, softmax, tuned, group=1) is None
    assert _lookup(db, softmax, tuned, dtypes="f16->f16") is None
    other = tiledsl.compile(SOFTMAX.replace("exp(", "exp2("))
    assert _lookup(db, other, tuned) is None


def test_stale_records_are_skipped_not_fatal(tmp_path, softmax):
    path = tmp_path / "t.json"
    ext = dict(M=4096, N=1024)
    p = _problem(softmax, ext)
    good = default(p, softmax.hints)
    db = tdb.TuningDB(path)
    db.store([_record(softmax, ext, good)])
    data = json.loads(path.read_text())
    base = data["records"][0]
    removed_field = json.loads(json.dumps(base))
    removed_field["config"]["no_such_field"] = 3               # a field the Schedule lost
    removed_field["extents"] = dict(M=4096, N=1024 + 0)        # same key as base: keep it distinct below
    removed_field["extents"]["M"] = 4097
    invalid = json.loads(json.dumps(base))
    invalid["config"]["block"] = 33                            # no longer a valid schedule
    invalid["extents"] = dict(M=4098, N=1024)
    unfit = json.loads(json.dumps(base))
    unfit["config"]["vec"] = 8 if good.vec != 8 else 2          # valid, but does not fit this problem
    unfit["extents"] = dict(M=4099, N=1024)
    data["records"] = [removed_field, invalid, unfit, base]
    path.write_text(json.dumps(data))
    db = tdb.TuningDB(path)
    for m in (4097, 4098, 4099):
        hit = _lookup(db, softmax, dict(M=m, N=1024))
        assert hit is not None and hit[0] == good and hit[2] == "nearest", m   # the stale exact one skipped
    only_stale = tdb.TuningDB(tmp_path / "stale.json")
    data["records"] = [removed_field, invalid, unfit]
    only_stale.path.write_text(json.dumps(data))
    for m in (4097, 4098, 4099):
        assert _lookup(only_stale, softmax, dict(M=m, N=1024)) is None


@pytest.mark.parametrize("field,value", [("block", 128.0), ("unroll", 4.0), ("vec", "4"), ("keep", 1),
                                         ("tile", [64.0, 64, 32])])
def test_a_record_whose_numbers_are_not_integers_is_refused(softmax, field, value):
    """A database is a file a user may hand over (--db): its numbers reach the generated
    CUDA, so a float, a string or an int where a bool belongs makes no schedule."""
    p = _problem(softmax, dict(M=4096, N=1024))
    config = tdb.schedule_config(default(p, softmax.hints))
    assert tdb.schedule_from_config(config) == default(p, softmax.hints)
    assert tdb.schedule_from_config(dict(config, **{field: value})) is None
    with pytest.raises(tiledsl.TdslError, match="integer|true or false|tuples of integers"):
        type(default(p, softmax.hints))(**dict(config, **{field: tuple(value) if field == "tile" else value}))


def test_reads_are_cached_until_the_file_changes(tmp_path, softmax, monkeypatch):
    path = tmp_path / "t.json"
    ext = dict(M=4096, N=1024)
    db = tdb.TuningDB(path)
    db.store([_record(softmax, ext, default(_problem(softmax, ext), softmax.hints))])
    calls = []
    real = tdb._read
    monkeypatch.setattr(tdb, "_read", lambda *a, **k: calls.append(1) or real(*a, **k))
    for _ in range(5):
        assert _lookup(db, softmax, ext) is not None
    assert len(calls) == 1
    db.store([_record(softmax, dict(M=8192, N=1024), default(_problem(softmax, ext), softmax.hints))])
    assert _lookup(db, softmax, ext) is not None
    assert len(calls) == 3      # the merge read it, then the lookup saw a new file


# -- the launcher's side -----------------------------------------------------------------

def test_launcher_plans_with_the_database_and_can_opt_out(tmp_path, softmax, monkeypatch):
    from tiledsl.runtime import launcher as L
    path = tmp_path / "t.json"
    ext = dict(M=4096, N=1024)
    p = _problem(softmax, ext)
    tuned = _other(p, softmax, default(p, softmax.hints))
    tdb.TuningDB(path).store([_record(softmax, ext, tuned)])
    monkeypatch.setattr(L, "_device_identity", lambda device: (DEVICE, CC))
    monkeypatch.setenv(tdb.ENV_VAR, str(path))
    launcher = L.Launcher(softmax)
    assert launcher._tuned(0, p, ext, 0) == (tuned, "db exact")
    assert launcher._tuned(0, p, dict(M=4000, N=1024), 0) == (tuned, "db nearest")
    assert launcher._tuned(0, p, dict(M=8, N=8), 0) == (None, "default")
    launcher.tuning_db = False
    assert launcher._tuned(0, p, ext, 0) == (None, "default")
    launcher.tuning_db = None
    monkeypatch.setenv(tdb.ENV_VAR, "off")
    assert launcher._tuned(0, p, ext, 0) == (None, "default")


def test_launcher_falls_back_to_the_default_on_a_broken_database(tmp_path, softmax, monkeypatch):
    from tiledsl.runtime import launcher as L
    path = tmp_path / "t.json"
    path.write_text("{ not json")
    monkeypatch.setattr(L, "_device_identity", lambda device: (DEVICE, CC))
    launcher = L.Launcher(softmax)
    launcher.tuning_db = path
    ext = dict(M=4096, N=1024)
    with pytest.warns(RuntimeWarning, match="damaged"):
        assert launcher._tuned(0, _problem(softmax, ext), ext, 0) == (None, "default")
