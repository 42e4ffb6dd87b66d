"""How many clusters of a kernel the GPU holds at once (the driver's
cuOccupancyMaxActiveClusters, through ctypes: CuPy does not wrap it).

A persistent grid of paired blocks (`Schedule.cluster`) must be resident all at
once: a pair left waiting for another to finish its whole loop would double the
kernel's time. A cluster's blocks run on SMs of one GPC, so where a GPC has an odd
count of SMs free, fewer than SMs / 2 pairs fit (an H100 SXM holds 66 pairs of its
132 SMs; another part, or a MIG slice, may hold fewer).
"""
from __future__ import annotations

import ctypes
from typing import Optional


class _LaunchConfig(ctypes.Structure):      # CUlaunchConfig (cuda.h)
    _fields_ = [("grid_x", ctypes.c_uint), ("grid_y", ctypes.c_uint), ("grid_z", ctypes.c_uint),
                ("block_x", ctypes.c_uint), ("block_y", ctypes.c_uint), ("block_z", ctypes.c_uint),
                ("shared_bytes", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p), ("num_attrs", ctypes.c_uint)]


def driver_function(name: str, argtypes: list):
    """The CUDA driver's function `name` (it returns a CUresult) through ctypes; OSError or
    AttributeError where the driver or the function is absent."""
    fn = getattr(ctypes.CDLL("libcuda.so.1"), name)
    fn.restype = ctypes.c_int
    fn.argtypes = argtypes
    return fn


_query = None


def _driver_query():
    global _query
    if _query is None:
        _query = driver_function("cuOccupancyMaxActiveClusters",
                                 [ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.POINTER(_LaunchConfig)])
    return _query


def max_active_clusters(function_ptr: int, grid_x: int, block: int, shared_bytes: int,
                        query=None) -> Optional[int]:
    """Clusters of the kernel at `function_ptr` (its cluster size compiled in) that fit
    on the GPU at once, launched `block` threads a block with `shared_bytes` of dynamic
    shared memory; None where the driver cannot say."""
    try:
        query = query or _driver_query()
        config = _LaunchConfig(grid_x, 1, 1, block, 1, 1, shared_bytes, None, None, 0)
        count = ctypes.c_int(0)
        if query(ctypes.byref(count), ctypes.c_void_p(function_ptr), ctypes.byref(config)) != 0:
            return None
    except (OSError, AttributeError, ctypes.ArgumentError):
        return None
    return count.value if count.value > 0 else None


def resident_grid(grid: tuple, cluster: int, fits: Optional[int]) -> tuple:
    """A persistent grid of clusters of `cluster` blocks cut to the `fits` clusters that
    are resident at once (the kernel takes its tiles by gridDim, so any whole number
    of clusters serves); unchanged where `fits` is unknown."""
    if fits is None or grid[0] <= fits * cluster:
        return grid
    return (fits * cluster,) + tuple(grid[1:])
