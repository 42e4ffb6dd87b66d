"""Timing one candidate: CUDA events after warm-up, the median of repeats,
inputs rotated through several copies so they are not found in L2."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable, Optional

from .select import relative_spread

TARGET_SECONDS = 0.05      # timed work per candidate, split into repeats
MIN_REPEATS, MAX_REPEATS = 10, 200
WARMUP = 3


@dataclass
class Measured:
    median: float                  # seconds
    samples: list = field(default_factory=list)
    spread: float = 0.0            # IQR / median
    cut_short: bool = False        # stopped early: clearly slower than the best so far


def input_sets_needed(bytes_per_set: int, l2_bytes: int, free_bytes: int = 0, max_sets: int = 16) -> int:
    """Copies of the inputs to rotate through: one when a call's working set is
    at least twice the L2, else enough for about three L2s (bounded by a
    quarter of free memory and max_sets)."""
    if bytes_per_set <= 0 or bytes_per_set >= 2 * l2_bytes:
        return 1
    n = math.ceil(3 * l2_bytes / bytes_per_set)
    if free_bytes:
        n = min(n, max(1, free_bytes // 4 // bytes_per_set))
    return int(max(1, min(n, max_sets)))


def repeats_for(seconds_per_call: float, target: float = TARGET_SECONDS) -> int:
    if seconds_per_call <= 0:
        return MAX_REPEATS
    return int(min(MAX_REPEATS, max(MIN_REPEATS, target / seconds_per_call)))


def time_call(fn: Callable[[int], object], n_sets: int = 1, *, repeats: Optional[int] = None,
              warmup: int = WARMUP, slower_than: Optional[float] = None, target: float = TARGET_SECONDS
              ) -> Measured:
    """Median seconds of fn(i) (i: the input set), each call between two CUDA
    events on the current stream. With `slower_than` (the best median so
    far), a candidate whose first timed calls all take over 1.5 times that is
    cut short after 3 repeats: it cannot win, so its exact time matters little."""
    import cupy
    for i in range(warmup):
        fn(i % n_sets)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    fn(warmup % n_sets)
    end.record()
    end.synchronize()
    first = cupy.cuda.get_elapsed_time(start, end) * 1e-3
    count = repeats or repeats_for(first, target)
    starts = [cupy.cuda.Event() for _ in range(count)]
    ends = [cupy.cuda.Event() for _ in range(count)]
    samples: list[float] = []
    cut = False
    k = warmup + 1
    for r in range(count):
        starts[r].record()
        fn(k % n_sets)
        ends[r].record()
        k += 1
        if slower_than and r == 2:
            ends[r].synchronize()
            head = [cupy.cuda.get_elapsed_time(starts[j], ends[j]) * 1e-3 for j in range(3)]
            if min(head) > 1.5 * slower_than:
                samples, cut = head, True
                break
    if not cut:
        ends[count - 1].synchronize()
        samples = [cupy.cuda.get_elapsed_time(s, e) * 1e-3 for s, e in zip(starts, ends)]
    return Measured(statistics.median(samples), samples, relative_spread(samples), cut)
