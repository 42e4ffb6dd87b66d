"""benchmarks/tune_check.py on the CPU: its --cpu-smoke mode, and its device
path end to end on the pretend GPU (tests/fake_gpu.py), so the one run on a
device has the best chance to work the first time."""
from __future__ import annotations

import importlib
import json

import pytest

from tiledsl.runtime import toolchain

import fake_gpu

pytestmark = pytest.mark.skipif(not toolchain.available(), reason="NVRTC is not installed")


@pytest.fixture
def tune_check(in_repo_root, monkeypatch, tmp_path):
    module = importlib.import_module("benchmarks.tune_check")
    monkeypatch.setenv("TILEDSL_CACHE_DIR", str(tmp_path / "cache"))    # with --keep-cache: no stray folders
    return module


def test_cpu_smoke(tune_check, tmp_path, capsys):
    out = tmp_path / "smoke.json"
    rc = tune_check.main(["--keep-cache", "--cpu-smoke", "--small", "--max-candidates", "1", "--only", "gemm f16 4096,softmax",
                          "--json", str(out)])
    assert rc == 0, capsys.readouterr().out
    rows = json.loads(out.read_text())["cpu_smoke"]
    assert [r["name"] for r in rows] == ["gemm f16 4096^3", "softmax f32 16384x1024"]
    assert all(r["ok"] and r["default_status"] == "compiled" and r["reference_shapes"] for r in rows)


def test_held_out_shapes_smoke_and_run_alone_on_a_pretend_gpu(tune_check, tmp_path, monkeypatch, capsys):
    """--held-out: shapes the defaults were not fitted on (none of the benchmark's), every one
    up to its first launch on the CPU, then step (3) alone on the pretend GPU."""
    assert not {w[0] for w in tune_check.held_out(False)} & {w[0] for w in tune_check.workloads(False)}
    assert {w[0] for w in tune_check.held_out(True)} <= {w[0] for w in tune_check.held_out(False)}
    smoke = tmp_path / "smoke.json"
    assert tune_check.main(["--keep-cache", "--cpu-smoke", "--held-out", "--small", "--max-candidates", "1",
                            "--json", str(smoke)]) == 0, capsys.readouterr().out
    rows = json.loads(smoke.read_text())["cpu_smoke"]
    assert len(rows) == len(tune_check.held_out(True)) and all(r["ok"] for r in rows)
    assert " + " in next(r["default"] for r in rows if r["name"].startswith("mlp"))    # two products
    _on_a_pretend_gpu(tune_check, monkeypatch)
    out = tmp_path / "held_out.json"
    rc = tune_check.main(["--keep-cache", "--held-out", "--small", "--max-candidates", "3", "--only", "softmax",
                          "--ab-rounds", "1", "--json", str(out)])
    data = json.loads(out.read_text())
    assert rc == 0 and data["ok"] and set(data) >= {"sweep", "summary"} and "search" not in data
    assert [r["name"] for r in data["sweep"]["rows"]] == ["softmax f32 2048x50257"]
    assert "held-out shapes" in data["summary"][0] and "for information" in data["summary"][0]


def test_the_full_size_workloads_are_the_issues():
    tc = importlib.import_module("benchmarks.tune_check")
    names = [w[0] for w in tc.workloads(False)]
    # bench_gemm's 16 GEMM workloads (f16 at eight shapes, bf16, f32 and TF32 cubes, batched, fused), 10 rows
    assert len(names) == 8 + 2 + 2 + 2 + 1 + 1 + 4 + 3 + 3
    assert {"gemm f16 8192x8192x1024", "gemm f16 4000^3", "gemm tf32 8192^3", "bmm f16 32x(512x512x64)",
            "gemm f16 256x256x65536"} <= set(names)
    assert ("gemm f16 4096^3", dict(M=4096, N=4096, K=4096)) == tuple(tc.workloads(False)[0][::2])
    assert set(w[0] for w in tc.workloads(True)) <= set(names)


def _on_a_pretend_gpu(tune_check, monkeypatch) -> None:
    """tune_check's device path with NumPy standing in for the GPU."""
    fake_gpu.install(monkeypatch)
    real = tune_check.compile_kernel

    def compile_with_fake_launcher(src):
        k = real(src)
        k._launcher = fake_gpu.FakeLauncher(k)
        return k
    monkeypatch.setattr(tune_check, "compile_kernel", compile_with_fake_launcher)


def test_device_path_on_a_pretend_gpu(tune_check, tmp_path, monkeypatch, capsys):
    _on_a_pretend_gpu(tune_check, monkeypatch)
    out = tmp_path / "check.json"
    rc = tune_check.main(["--keep-cache", "--small", "--max-candidates", "4", "--only", "gemm f16 4096,softmax",
                          "--exhaustive-seconds", "0.001", "--ab-rounds", "1", "--json", str(out),
                          "--speedup-target", "0.97"])   # a pretend GPU times every schedule alike
    text = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert rc == 0, "\n".join(data.get("summary", [])) + text[-3000:]
    assert data["ok"] and len(data["summary"]) == 5 and all("PASS" in line for line in data["summary"][1:])
    assert data["search"]["winner"] and data["search"]["winner_excess"] <= 0.03
    assert data["warm"]["origin"] == "database" and data["warm"]["same_config"]
    assert [r["name"] for r in data["sweep"]["rows"]] == ["gemm f16 4096^3", "softmax f32 16384x1024"]
    assert data["sweep"]["geomean_speedup"] >= 0.97
    assert data["planted"]["status"] == "wrong" and data["planted"]["warned"]
    assert "== summary" in text and "ALL PASS" in text


def test_summary_fails_what_fails():
    tc = importlib.import_module("benchmarks.tune_check")
    out = {"search": dict(name="g", wall_s=75.0, compile_s=20.0, search_ok=False, candidates=24, counts={},
                          winner="a", winner_excess=0.05, exhaustive_best="b", within_ok=False),
           "warm": dict(wall_s=0.01, origin="database", same_config=True, ok=True),
           "sweep": dict(measured=3, geomean_speedup=1.1, ok=True),
           "planted": dict(planted="a", name="s", status="wrong", reason="r", winner="b", warned=True, ok=True)}
    lines, ok = tc.summary(out)
    assert not ok and "FAIL" in lines[0] and "FAIL" in lines[1] and "PASS" in lines[2]


def test_a_step_that_raises_is_recorded_and_fails(tune_check, monkeypatch, capsys, tmp_path):
    _on_a_pretend_gpu(tune_check, monkeypatch)
    monkeypatch.setattr(tune_check, "warm_rerun", lambda *a, **k: 1 / 0)
    out = tmp_path / "broken.json"
    rc = tune_check.main(["--keep-cache", "--small", "--max-candidates", "2", "--only", "softmax", "--exhaustive-seconds", "0.001",
                          "--ab-rounds", "1", "--json", str(out)])
    data = json.loads(out.read_text())
    assert rc == 1 and not data["ok"]
    assert data["warm"]["error"].startswith("ZeroDivisionError")
    assert data["summary"] == ["(2) warm: FAIL: ZeroDivisionError: division by zero"]
    assert data["planted"]["ok"]                     # the later steps still ran
