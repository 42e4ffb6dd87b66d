"""The schedule a probe's label names, for scripts/probe_sustained.py and probe_kernels.py:
  REGEX          the first candidate whose tag it finds
  REGEX@N        ... split K N ways
  REGEX@N/S      ... split N ways, in S stages (any valid count, not only the space's)
  make:BMxBNsS[pst][ws][c2][g8]   a warpgroup tile built directly: BM x BN, S stages,
                 persistent (pst), with a producer warpgroup (ws), in pairs (c2), grouped 8 tile rows (g8)
None where nothing matches; the label a result is printed under."""
import re
from dataclasses import replace

from tiledsl.schedule.choose import candidates, wgmma_schedule, with_producer


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
