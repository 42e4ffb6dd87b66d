"""Launching a loaded kernel through the CUDA driver, with prebuilt arguments.

CuPy converts every argument of every launch into a fresh object; here each
launch owns a fixed argument buffer and its array of pointers, so a call only
stores numbers into the buffer and calls cuLaunchKernel (ctypes). Where the
driver library cannot be loaded, CuPy's own launch is used instead.
"""
from __future__ import annotations

import ctypes
import sys
import threading
from functools import lru_cache
from typing import Optional

from ..errors import TdslRuntimeError


@lru_cache(maxsize=1)
def _cu_launch_kernel():
    names = ["nvcuda.dll"] if sys.platform == "win32" else ["libcuda.so.1", "libcuda.so"]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        fn = lib.cuLaunchKernel
        fn.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p,
                                                                  ctypes.POINTER(ctypes.c_void_p),
                                                                  ctypes.c_void_p]
        fn.restype = ctypes.c_int
        return fn
    return None


@lru_cache(maxsize=1)
def current_stream_getter():
    """A cheap way to read CuPy's current stream as a pointer."""
    import cupy
    getter = getattr(cupy.cuda.stream, "get_current_stream_ptr", None)
    if getter is not None:
        return getter
    return lambda: cupy.cuda.get_current_stream().ptr


_CTYPES = {"i64": ctypes.c_int64, "f64": ctypes.c_double, "bool": ctypes.c_bool}


class Launch:
    """One kernel launch with a fixed grid and argument layout.

    `kinds` gives each argument's C type ('i64' for pointers and long long,
    'f64' for double, 'bool'). Calls are serialized by a lock because the
    argument buffer is shared; the driver copies the arguments at launch.
    """

    def __init__(self, function, grid: int, block: int, kinds: list[str]):
        self.function, self.grid, self.block = function, grid, block
        self.launch = _cu_launch_kernel()
        n = max(1, len(kinds))
        self.buffer = (ctypes.c_int64 * n)()
        base = ctypes.addressof(self.buffer)
        self.slots = [_CTYPES[k].from_buffer(self.buffer, 8 * i) for i, k in enumerate(kinds)]
        self.argv = (ctypes.c_void_p * n)(*[base + 8 * i for i in range(n)])
        self.handle = getattr(function, "ptr", None)
        self.lock = threading.Lock()
        if self.handle is None:
            self.launch = None

    def __call__(self, values, stream: int) -> None:
        if self.launch is None:
            self.function((self.grid,), (self.block,), tuple(values), stream=_Stream(stream))
            return
        with self.lock:
            for slot, value in zip(self.slots, values):
                slot.value = value
            status = self.launch(self.handle, self.grid, 1, 1, self.block, 1, 1, 0, stream,
                                 self.argv, None)
        if status:
            raise TdslRuntimeError(f"cuLaunchKernel failed with CUDA error {status} "
                                   f"(grid {self.grid}, block {self.block})")


class _Stream:
    """The `stream=` argument CuPy's Function accepts: anything with .ptr."""

    def __init__(self, ptr: int):
        self.ptr = ptr


def stream_ptr() -> int:
    return current_stream_getter()()


def available() -> Optional[bool]:
    return _cu_launch_kernel() is not None
