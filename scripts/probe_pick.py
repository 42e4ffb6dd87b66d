"""The schedule a probe's label names, for scripts/probe_sustained.py and probe_kernels.py:
  REGEX          the first candidate whose tag it finds
  REGEX@N        ... split K N ways
  REGEX@N/S      ... split N ways, in S stages (any valid count, not only the space's)
  make:BMxBNsS[pst][ws][c2][g8]   a warpgroup tile built directly: BM x BN, S stages,
                 persistent (pst), with a producer warpgroup (ws), in pairs (c2), grouped 8 tile rows (g8)
None where nothing matches; the label a result is printed under."""
import re
from dataclasses import replace

import tiledsl
from tiledsl.runtime import launcher_for
from tiledsl.runtime.launcher import set_overrides
from tiledsl.schedule.choose import candidates, default
from tiledsl.schedule.problem import problem
from tiledsl.schedule.matmul import wgmma_schedule, with_producer

# f16 products the probes time: a @ b, and a @ b.T (B kept [N, K])
SOURCES = {"ab": "kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }",
           "abT": "kernel mm(a: f16[M, K], b: f16[N, K]) -> f16[M, N] { return a @ b.T }"}


def pick(p, hints, label):
    made = re.fullmatch(r"make:(\d+)x(\d+)s(\d+)((?:_?(?:pst|ws|c2|g8))*)", label)
    if made:
        bm, bn, stages = map(int, made.groups()[:3])
        flags = made.group(4)
        s = wgmma_schedule(p, bm, bn, stages, group=8 if "g8" in flags else 0)
        if "ws" in flags:
            s = with_producer(s, persistent="pst" in flags)
        elif "pst" in flags:
            s = replace(s, persistent=True)
        return replace(s, cluster=2) if "c2" in flags else s
    pattern, _, splits = label.partition("@")
    splits, _, stages = splits.partition("/")
    s = next((s for s in candidates(p, hints) if re.search(pattern, s.tag)
              and (not splits or stages or s.splits == int(splits))), None)
    if s is not None and stages:
        s = replace(s, splits=int(splits), stages=int(stages))
    return s


def name(s):
    return s.tag + (f"@{s.splits}" if s.splits else "")


def pinned(kind, m, n, k, label):
    """(a kernel of SOURCES[kind] whose GEMM runs the schedule `label` names at M x N x K
    on a 132-SM sm_90a GPU, the label its results go under, the default schedule there);
    (None, None, default) where the label names nothing."""
    kern = tiledsl.compile(SOURCES[kind])
    launcher = launcher_for(kern)
    p = problem(launcher.groups[0], launcher.layouts[0], dict(M=m, N=n, K=k), frozenset(), 132, "sm_90a", 3352)
    base = default(p, kern.hints)
    chosen = base if label == "default" else pick(p, kern.hints, label)
    if chosen is None:
        return None, None, base
    if label != "default":
        set_overrides(launcher, {0: chosen})
    kern._launcher = launcher
    return kern, "default" if label == "default" else name(chosen), base
