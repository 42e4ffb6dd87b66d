"""Shared helpers for the CPU test suite.

Random inputs are fresh on every run; each test that draws them prints its
seed (shown by pytest when the test fails) so a failure can be replayed with
TDSL_TEST_SEED=<seed>.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.tdsl"))


def fresh_seed() -> int:
    """TDSL_TEST_SEED when set, else a fresh random seed."""
    env = os.environ.get("TDSL_TEST_SEED")
    if env:
        return int(env)
    return int(np.random.SeedSequence().entropy % (2 ** 63))


@pytest.fixture
def rng(request) -> np.random.Generator:
    """An unseeded-per-run generator whose seed is printed (visible on failure)."""
    seed = fresh_seed()
    print(f"[{request.node.nodeid}] rng seed: {seed} (replay with TDSL_TEST_SEED={seed})")
    return np.random.default_rng(seed)


@pytest.fixture
def in_repo_root(monkeypatch):
    """Run with the repository root as the working directory (stable relative paths)."""
    monkeypatch.chdir(ROOT)
    return ROOT


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One compilation cache per test module, so each kernel compiles once there."""
    root = tmp_path_factory.mktemp("tdsl-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TILEDSL_CACHE_DIR", str(root))
        mp.delenv("TILEDSL_CACHE", raising=False)
        yield root


@pytest.fixture(autouse=True)
def _defaults_do_not_spill(request):
    """A GPU test fails where a kernel planned by tiledsl's default rules spills registers:
    it computes right, slowly, and the launcher's TdslPerformanceWarning (kept once a
    process in launcher._WARNED) says so. Schedules a test pins may spill."""
    if request.node.get_closest_marker("gpu") is None:
        yield
        return
    from tiledsl.runtime.launcher import default_spills
    before = set(default_spills())
    yield
    spills = [m for m in default_spills() if m not in before]
    if spills:
        pytest.fail("a default schedule spills: " + "; ".join(spills), pytrace=False)


# On the lent GPU machine a command may run 10 minutes, and a timed-out pytest prints no
# summary: `TDSL_TEST_SHARD=i/n` keeps every n-th test from the i-th (the same split on every
# worker), and `TDSL_FAILURE_LOG=path` appends each failure's report to path the moment it
# fails (scripts/device_pass.sh, gpumem1 and gpumem2).
def pytest_collection_modifyitems(config, items):
    shard = os.environ.get("TDSL_TEST_SHARD")
    if not shard:
        return
    index, count = (int(part) for part in shard.split("/"))
    if not 0 <= index < count:
        raise pytest.UsageError(f"TDSL_TEST_SHARD={shard}: want i/n with 0 <= i < n")
    kept = [item for n, item in enumerate(items) if n % count == index]
    config.hook.pytest_deselected(items=[item for n, item in enumerate(items) if n % count != index])
    items[:] = kept


def pytest_runtest_logreport(report):
    path = os.environ.get("TDSL_FAILURE_LOG")
    if path and report.failed and not hasattr(report, "node"):    # (once: where it ran, not again on xdist's controller)
        with open(path, "a") as log:
            log.write(f"FAILED {report.nodeid} ({report.when})\n{report.longreprtext}\n\n")
