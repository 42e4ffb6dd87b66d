"""Choosing the winner from measured times: deterministic and noise-aware.

Timings of one schedule differ from run to run by a percent or so, so "the
fastest" alone would flip between near-equal schedules from one tuning run to
the next. Instead every candidate whose median is within the run's noise of
the best median is a tie, and ties go to the one that uses the fewest
resources (threads per block, tile area, pipeline stages, registers, shared
memory), then to the schedule's tag: two runs pick the same winner unless
their timings differ by more than the noise. The noise band is the median
relative spread of the candidates' repeats, clamped to [NOISE_FLOOR,
NOISE_CAP] so the winner is never more than NOISE_CAP slower than the best.

Pure Python on plain numbers: unit-tested on synthetic timings.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from typing import Optional, Sequence

NOISE_FLOOR = 0.005
NOISE_CAP = 0.015


@dataclass(frozen=True)
class Timed:
    """One candidate's measurement, as the choice sees it."""
    tag: str
    median: float                   # seconds per call
    spread: float = 0.0             # relative spread of its repeats (IQR / median)
    resources: tuple = ()           # resource_key(...): smaller is cheaper


@dataclass(frozen=True)
class Choice:
    winner: Optional[Timed]
    fastest: Optional[Timed]
    band: float                     # relative tolerance used for ties
    tied: tuple = field(default=())  # tags within the band, in rule order
    default: Optional[str] = None   # the untuned default's tag, first among ties
    # (default, challenger) medians when the fastest non-default was timed against the
    # default once more, side by side; `overruled` when it then failed to beat it
    side_by_side: tuple = ()
    challenger: Optional[str] = None
    overruled: bool = False
    # the round (1-based) whose pair did not show the challenger beyond the band, if any
    lost_round: int = 0
    rounds: int = 0

    @property
    def reason(self) -> str:
        if self.winner is None:
            return "no candidate gave a correct, timed result"
        if self.side_by_side:
            d, c = self.side_by_side
            if self.overruled and self.lost_round and c * (1 + self.band) < d:
                return (f"the default: {self.challenger} timed side by side with it took {c / d - 1:+.1%}, "
                        f"but not beyond the {self.band:.1%} noise in round {self.lost_round} of {self.rounds}")
            if self.overruled:
                return (f"the default: {self.challenger} timed side by side with it took {c / d - 1:+.1%}, "
                        f"not beyond the {self.band:.1%} noise")
            return self._search_reason() + f"; side by side with the default {c / d - 1:+.1%}"
        return self._search_reason()

    def _search_reason(self) -> str:
        if self.winner.tag == self.fastest.tag:
            why = "the default first" if self.winner.tag == self.default else "fewest resources"
            return "fastest" + (f" (of {len(self.tied)} within {self.band:.1%} noise: {why})"
                                if len(self.tied) > 1 else "")
        slower = self.winner.median / self.fastest.median - 1
        if self.winner.tag == self.default:
            return f"the default, within {self.band:.1%} noise of the fastest ({slower:+.1%}): kept"
        return (f"within {self.band:.1%} noise of the fastest ({slower:+.1%}) and uses fewer "
                f"resources than {self.fastest.tag}")


def confirm(choice: Choice, default: Timed, default_median: float, challenger_median: float,
            rounds: Sequence[tuple] = ()) -> Choice:
    """The search's winner (not the default) against the default, timed again side
    by side: it stays only if it is faster by more than the band, overall and in
    each round's pair (`rounds`: (default, challenger) medians, timed next to each
    other), else the default wins. The search's own timings of the two were taken
    apart and may have drifted; a long kernel at the board's power limit drifts
    from round to round too (H100, bf16 8192^3: 1494-1631 us), which a pair
    measured back to back shares and pooled medians do not."""
    lost = next((r for r, (d, c) in enumerate(rounds, 1) if not c * (1 + choice.band) < d), 0)
    kept = challenger_median * (1 + choice.band) < default_median and not lost
    return replace(choice, winner=choice.winner if kept else default, overruled=not kept,
                   side_by_side=(default_median, challenger_median), challenger=choice.winner.tag,
                   lost_round=lost, rounds=len(rounds))


def resource_key(block: int = 0, tile: Sequence[int] = (), stages: int = 1, registers: int = 0,
                 shared_bytes: int = 0) -> tuple:
    """Cheaper first: threads per block, tile area then depth, pipeline stages,
    registers per thread, shared memory per block."""
    area = tile[0] * tile[1] if len(tile) >= 2 else 0
    depth = tile[2] if len(tile) >= 3 else 0
    return (block, area, depth, stages, registers, shared_bytes)


def noise_band(timed: Sequence[Timed], floor: float = NOISE_FLOOR, cap: float = NOISE_CAP) -> float:
    spreads = [t.spread for t in timed if t.spread == t.spread]   # drop NaN
    noise = statistics.median(spreads) if spreads else 0.0
    return min(cap, max(floor, noise))


def choose(timed: Sequence[Timed], floor: float = NOISE_FLOOR, cap: float = NOISE_CAP,
           default: Optional[str] = None) -> Choice:
    """The winner among correct, timed candidates (order of `timed` does not matter).
    The `default` schedule (its tag), when tied with the fastest, wins the tie: a
    tuned record must beat what runs untuned by more than the noise."""
    timed = sorted((t for t in timed if t.median > 0 and t.median == t.median),
                   key=lambda t: (t.median, t.resources, t.tag))
    if not timed:
        return Choice(None, None, 0.0)
    fastest = timed[0]
    band = noise_band(timed, floor, cap)
    tied = sorted((t for t in timed if t.median <= fastest.median * (1 + band)),
                  key=lambda t: (t.tag != default, t.resources, t.tag))
    return Choice(tied[0], fastest, band, tuple(t.tag for t in tied), default)


def relative_spread(samples: Sequence[float]) -> float:
    """Interquartile range over median: how much one candidate's repeats disagree."""
    if len(samples) < 2:
        return 0.0
    ordered = sorted(samples)
    q = statistics.quantiles(ordered, n=4, method="inclusive")
    med = statistics.median(ordered)
    return (q[2] - q[0]) / med if med > 0 else 0.0
