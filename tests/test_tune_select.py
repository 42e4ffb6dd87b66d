"""The autotuner's choice on synthetic timings (pure, CPU): noise ties go to
the cheapest schedule, and the winner does not depend on order or jitter."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tiledsl.tune.select import (NOISE_CAP, NOISE_FLOOR, Timed, choose, confirm, noise_band, relative_spread,
                                 resource_key)


def T(tag, ms, spread=0.004, block=256, tile=(), stages=1, regs=32, smem=0):
    return Timed(tag, ms * 1e-3, spread, resource_key(block, tile, stages, regs, smem))


def test_a_clear_winner_wins_whatever_its_resources():
    timed = [T("big", 1.00, block=1024, regs=200), T("small", 1.10, block=64, regs=16)]
    c = choose(timed)
    assert c.winner.tag == "big" and c.fastest.tag == "big" and c.tied == ("big",)
    assert c.reason == "fastest"


def test_ties_within_the_noise_go_to_the_fewest_resources():
    timed = [T("fast_big", 1.000, block=256, tile=(128, 128, 32), stages=4),
             T("close_small_tile", 1.004, block=256, tile=(64, 64, 32), stages=4),
             T("close_fewer_stages", 1.003, block=256, tile=(128, 128, 32), stages=2),
             T("slow_tiny", 1.2, block=128, tile=(32, 32, 32))]
    c = choose(timed)
    assert c.fastest.tag == "fast_big"
    assert c.winner.tag == "close_small_tile"
    assert set(c.tied) == {"fast_big", "close_small_tile", "close_fewer_stages"}
    assert "fewer resources" in c.reason


def test_the_default_wins_a_tie_and_only_a_tie():
    timed = [T("fast_big", 1.000, block=1024, stages=4), T("cheap", 1.003, block=64),
             T("default", 1.004, block=512), T("slow", 1.2, block=32)]
    c = choose(timed, default="default")
    assert c.winner.tag == "default" and c.tied[0] == "default"
    assert "the default" in c.reason and "+0.4%" in c.reason
    c = choose(timed, default="slow")              # out of the band: the rule as usual
    assert c.winner.tag == "cheap" and "fewer resources" in c.reason
    c = choose(timed, default="fast_big")          # fastest and the default
    assert c.winner.tag == "fast_big" and "the default first" in c.reason


def test_side_by_side_the_winner_must_still_beat_the_default_by_the_band():
    default = T("default", 1.05, spread=0.01, block=512)
    c = choose([T("fast", 1.00, spread=0.01), default, T("slow", 1.3, spread=0.01)], default="default")
    assert c.winner.tag == "fast" and c.band == pytest.approx(0.01)
    kept = confirm(c, default, default_median=1.05e-3, challenger_median=1.00e-3)
    assert kept.winner.tag == "fast" and not kept.overruled and "side by side with the default -4.8%" in kept.reason
    lost = confirm(c, default, default_median=1.005e-3, challenger_median=1.00e-3)    # within the band
    assert lost.winner.tag == "default" and lost.overruled and lost.challenger == "fast"
    assert lost.reason.startswith("the default: fast timed side by side with it took -0.5%")


def test_side_by_side_the_winner_must_beat_the_default_in_every_round():
    """A long kernel drifts from round to round: pooled medians can favour the
    challenger while a round timed back to back does not."""
    default = T("default", 1.05, spread=0.01, block=512)
    c = choose([T("fast", 1.00, spread=0.01), default], default="default")
    rounds = [(1.10e-3, 1.00e-3), (1.00e-3, 0.995e-3), (1.10e-3, 1.00e-3)]    # round 2: within the band
    lost = confirm(c, default, default_median=1.10e-3, challenger_median=1.00e-3, rounds=rounds)
    assert lost.winner.tag == "default" and lost.overruled and (lost.lost_round, lost.rounds) == (2, 3)
    assert lost.reason == ("the default: fast timed side by side with it took -9.1%, "
                           "but not beyond the 1.0% noise in round 2 of 3")
    rounds[1] = (1.05e-3, 1.00e-3)
    kept = confirm(c, default, default_median=1.10e-3, challenger_median=1.00e-3, rounds=rounds)
    assert kept.winner.tag == "fast" and not kept.overruled and kept.lost_round == 0
    slower = confirm(c, default, default_median=1.00e-3, challenger_median=1.02e-3, rounds=rounds[:1])
    assert slower.overruled and "not beyond the 1.0% noise" in slower.reason and "round" not in slower.reason


def test_resource_rule_order_block_then_tile_then_stages_then_registers_then_tag():
    base = dict(ms=1.0)
    assert choose([T("a", block=512, **base), T("b", block=256, regs=255, **base)]).winner.tag == "b"
    assert choose([T("a", tile=(128, 128, 16), **base), T("b", tile=(64, 128, 64), **base)]).winner.tag == "b"
    assert choose([T("a", tile=(64, 64, 32), **base), T("b", tile=(64, 64, 16), **base)]).winner.tag == "b"
    assert choose([T("a", stages=4, **base), T("b", stages=3, regs=200, **base)]).winner.tag == "b"
    assert choose([T("a", regs=40, **base), T("b", regs=39, smem=1 << 15, **base)]).winner.tag == "b"
    assert choose([T("b", **base), T("a", **base)]).winner.tag == "a"     # all equal: the tag decides


def test_noise_band_is_the_median_spread_clamped():
    assert noise_band([T("a", 1, spread=0.0)]) == NOISE_FLOOR
    assert noise_band([T("a", 1, spread=0.5)]) == NOISE_CAP
    assert noise_band([T("a", 1, spread=0.008), T("b", 1, spread=0.01), T("c", 1, spread=0.9)]) == 0.01
    assert noise_band([T("a", 1, spread=math.nan), T("b", 1, spread=0.009)]) == 0.009
    # a candidate just outside the band is not a tie
    c = choose([T("fast", 1.0, spread=0.0, block=1024), T("cheap", 1.0 + 1.5 * NOISE_FLOOR, spread=0.0, block=32)])
    assert c.winner.tag == "fast"


def test_winner_is_never_more_than_the_cap_slower_than_the_fastest():
    rng = np.random.default_rng(1)
    for _ in range(200):
        timed = [T(f"c{i}", float(rng.uniform(1, 1.05)), spread=float(rng.uniform(0, 0.2)),
                   block=int(rng.choice([64, 128, 256, 512]))) for i in range(12)]
        c = choose(timed)
        assert c.winner.median <= c.fastest.median * (1 + NOISE_CAP) + 1e-15


def test_same_winner_for_every_order():
    rng = np.random.default_rng(7)
    timed = [T(f"s{i}", float(rng.uniform(1.0, 1.03)), spread=0.01, block=int(rng.choice([64, 128, 256])),
               tile=(int(rng.choice([64, 128])), 128, 32), stages=int(rng.integers(1, 5)),
               regs=int(rng.integers(32, 200))) for i in range(30)]
    first = choose(timed)
    for _ in range(50):
        order = list(rng.permutation(len(timed)))
        assert choose([timed[i] for i in order]) == first


def test_two_noisy_runs_of_the_same_space_pick_the_same_winner():
    """Timings jittered by less than the band (as two tuning runs are) keep the winner."""
    rng = np.random.default_rng(3)
    truth = {f"s{i}": 1.0 + 0.002 * i for i in range(5)}     # five near-equal schedules (band 1.2%)
    truth.update({f"slow{i}": 1.05 + 0.1 * i for i in range(6)})
    blocks = {tag: int(b) for tag, b in zip(truth, rng.choice([64, 128, 256, 512], len(truth)))}
    winners = set()
    for _ in range(40):
        run = [T(tag, ms * float(1 + rng.uniform(-0.001, 0.001)), spread=0.012, block=blocks[tag])
               for tag, ms in truth.items()]
        winners.add(choose(run).winner.tag)
    assert len(winners) == 1
    # ...and it is the cheapest of the near-equal ones, not merely the fastest
    near = [t for t in truth if not t.startswith("slow")]
    assert winners.pop() == min(near, key=lambda t: (blocks[t], t))


def test_nothing_timed_means_no_winner():
    c = choose([])
    assert c.winner is None and "no candidate" in c.reason
    assert choose([Timed("nan", math.nan), Timed("zero", 0.0)]).winner is None


def test_relative_spread():
    assert relative_spread([1.0]) == 0.0
    assert relative_spread([1.0] * 10) == 0.0
    assert relative_spread([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2.0 / 3.0)
