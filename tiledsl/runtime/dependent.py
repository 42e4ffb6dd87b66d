"""Launches that overlap the kernel before them: programmatic dependent launch (sm_90),
cuLaunchKernelEx with PROGRAMMATIC_STREAM_SERIALIZATION through ctypes (CuPy's launch
takes no attributes).

Every warm launch is made this way: a program's later kernels (a split's second kernel, the
next fusion group's) and its first, after whatever kernel ran before it in the stream
(tiledsl's, CuPy's, torch's). The kernel is scheduled while the one before it still runs (once
each of that one's blocks has passed `tdsl::follow_in_stream`, every tiledsl kernel's first
statement, or, for another library's kernel, at its end or its own trigger) and waits at that
statement for that one's end and its writes, so the launch's microsecond or so between the two
overlaps the first. The result is the same launched either way: launched the usual way, the
wait is a no-op. Where the driver has no cuLaunchKernelEx, or refuses the launch, the usual
launch runs.
"""
from __future__ import annotations

import ctypes
from typing import Callable, Optional

from .clusters import _LaunchConfig, driver_function

PROGRAMMATIC_STREAM_SERIALIZATION = 6       # CUlaunchAttributeID (cuda.h)


class _LaunchAttribute(ctypes.Structure):   # CUlaunchAttribute: an id, padding, a 64-byte union
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int * 16)]


_launch_ex = None


def _driver_launch() -> Optional[Callable]:
    global _launch_ex
    if _launch_ex is None:
        try:
            _launch_ex = driver_function("cuLaunchKernelEx", [ctypes.c_void_p] * 4)
        except (OSError, AttributeError):
            _launch_ex = False
            return None
    return _launch_ex or None


_occupancy = None


def resident_blocks_per_sm(function_ptr: int, block: int, shared_bytes: int) -> Optional[int]:
    """Blocks of the kernel at `function_ptr` that one SM holds at once, launched `block`
    threads a block with `shared_bytes` of dynamic shared memory (the driver's occupancy
    query, in the current context); None where the driver cannot say."""
    global _occupancy
    try:
        if _occupancy is None:
            _occupancy = driver_function("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                                         [ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t])
        count = ctypes.c_int(0)
        if _occupancy(ctypes.byref(count), ctypes.c_void_p(function_ptr), block, shared_bytes) != 0:
            return None
    except (OSError, AttributeError, ctypes.ArgumentError):
        return None
    return count.value if count.value > 0 else None


def spreads_when_overlapping(blocks: int, resident: Optional[int], sm_count: int) -> bool:
    """Whether a grid of `blocks` launched to overlap the kernel before it still spreads
    over every SM. Its blocks are placed while that kernel runs or drains, each into room
    as it frees, an SM taking as many as it holds: a grid that fills every SM's room
    (`resident` blocks an SM, or more, in waves) lands evenly, and a single block has
    nowhere to crowd; a grid between leaves SMs idle while others hold several of its
    blocks. H200 2026-12-04 (scripts/probe_placement.py, a split sum of 128 MiB, 60
    launches in a row): 136 blocks where an SM holds 2, 62 of 132 SMs idle, 52.9 us
    against 45.9 launched the usual way (after the kernel before has ended, blocks go
    round the SMs); 264 of 3, 19 idle, 41.5 against 33.8; 396 of 4, 8 idle, 38.7 against
    30.3; 132, or a whole 264 of 2, 396 of 3, 528 of 4: level either way. Unknown
    residency counts as filled (the launch overlaps, as before the rule)."""
    return blocks <= 1 or resident is None or blocks >= resident * sm_count


def overlaps_the_kernel_before(kind: str, stage: int, blocks: int, resident: Optional[int], sm_count: int) -> bool:
    """Whether a warm call launches a kernel to overlap the one before it: a memory-bound
    kernel (the one-wave grids measured above: splits, rows, columns) where its blocks
    still spread (spreads_when_overlapping); a GEMM's kernels and any combining kernel (a
    second stage, light: it adds partials) always, as before the rule, where overlapping
    was measured to gain (H100 2026-11-26: attention 2048x2048x128 29.2 -> 26.4 us, column
    means then a subtraction 91.8 -> 89.5, split-K 512x512x16384 a further 7%)."""
    return kind == "matmul" or stage != 1 or spreads_when_overlapping(blocks, resident, sm_count)


def available(compute_capability: str) -> bool:
    """Whether launches on a device of this compute capability ('90', ...) may overlap."""
    return int(compute_capability) >= 90 and _driver_launch() is not None


class DependentLaunch:
    """One kernel's launch configuration (grid, block, dynamic shared memory) with the
    overlap attribute, kept for every launch of it by one thread (the driver reads it
    during the call, the GIL released); the stream is set per call. `fallback` is
    cuLaunchKernel's signature (CuPy's driver.launchKernel).

    The warm call makes the launch itself (`launcher._FastCall`): it sets `config.stream`
    where the stream changed, calls the driver's function with `address`, and `refused`
    where that returns an error. Made through a method of this class, a launch cost the
    host 3.56 us; inline 3.17, CuPy's launch 3.24 (H100 host, 2026-11-26,
    scripts/probe_launch_ex.py)."""

    def __init__(self, grid: tuple, block: tuple, shared_bytes: int, fallback: Callable):
        self.attribute = _LaunchAttribute(PROGRAMMATIC_STREAM_SERIALIZATION)
        self.attribute.value[0] = 1                 # programmaticStreamSerializationAllowed
        self.dims = (tuple(grid) + (1, 1))[:3] + (tuple(block) + (1, 1))[:3] + (shared_bytes,)
        self.config = _LaunchConfig(*self.dims, None, ctypes.addressof(self.attribute), 1)
        self.address = ctypes.addressof(self.config)
        self.stream = None                          # the stream in `config` (set only when it changes)
        self.fallback = fallback

    def refused(self, function_ptr: int, stream_ptr: int, params_ptr: int) -> None:
        """The driver refused the overlapping launch: the usual one, and no call class
        planned from now on asks again (those planned retry, then launch the usual way)."""
        global _launch_ex
        _launch_ex = False
        self.fallback(function_ptr, *self.dims, stream_ptr, params_ptr, 0)
