"""The schedule a probe's label names, for scripts/probe_sustained.py and probe_kernels.py:
  REGEX          the first candidate whose tag it finds
  REGEX@N        ... split K N ways
  REGEX@N/S      ... split N ways, in S stages (any valid count, not only the space's)
  make:BMxBNsS[ws][c2][g8]   a warpgroup tile built directly: BM x BN, S stages, with a
                 producer warpgroup (ws), in pairs (c2), grouped 8 tile rows (g8)
None where nothing matches; the label a result is printed under."""
import re
from dataclasses import replace

from tiledsl.schedule.choose import candidates, wgmma_schedule, with_producer


def pick(p, hints, label):
    made = re.fullmatch(r"make:(\d+)x(\d+)s(\d+)(ws)?(c2)?(g8)?", label)
    if made:
        bm, bn, stages = map(int, made.groups()[:3])
        s = wgmma_schedule(p, bm, bn, stages, group=8 if made.group(6) else 0)
        if made.group(4):
            s = with_producer(s)
        return replace(s, cluster=2) if made.group(5) else s
    pattern, _, splits = label.partition("@")
    splits, _, stages = splits.partition("/")
    s = next((s for s in candidates(p, hints) if re.search(pattern, s.tag)
              and (not splits or stages or s.splits == int(splits))), None)
    if s is not None and stages:
        s = replace(s, splits=int(splits), stages=int(stages))
    return s


def name(s):
    return s.tag + (f"@{s.splits}" if s.splits else "")
