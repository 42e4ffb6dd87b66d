"""The launcher's call-class key (no GPU): what a warm call is matched on.

A warm call skips the checks its class already passed, so every property that
changes the plan or the checks' outcome must change the key (or send the call
down the checked path), and nothing else may."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import tiledsl
from tiledsl.runtime.launcher import Launcher


@dataclass
class _Memory:
    ptr: int
    device_id: int = 0


class FakeArray:
    """The attributes of a cupy.ndarray the key reads."""

    def __init__(self, shape, dtype="float32", ptr=1 << 20, device=0, contiguous=True):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.data, self._c_contiguous = _Memory(ptr, device), contiguous


SRC = "kernel f(x: f32[M, N], w: f32[N], s: f32 = 2.0) -> f32[M, N] { return x * w * s }"
TWO = "kernel g(x: f32[N]) -> (f32[N], f32[N]) { return sin(x), cos(x) }"


@pytest.fixture
def launcher():
    lau = Launcher(tiledsl.compile(SRC))
    lau._ndarray = FakeArray
    return lau


def test_the_same_class_gives_the_same_key(launcher):
    k2, k3 = launcher._key_function(2), launcher._key_function(3)
    a = k2((FakeArray((4, 8)), FakeArray((8,), ptr=4096)), None)
    b = k2((FakeArray((4, 8), ptr=1 << 30), FakeArray((8,), ptr=8192)), None)
    assert a is not None and a == b and hash(a) == hash(b)
    assert k3((FakeArray((4, 8)), FakeArray((8,)), 1.5), None) == k3((FakeArray((4, 8)), FakeArray((8,)), 3.0), None)


@pytest.mark.parametrize("change", ["shape", "dtype", "alignment", "device", "scalar type", "out", "out shape"])
def test_what_changes_the_plan_changes_the_key(launcher, change):
    k3 = launcher._key_function(3)
    x, w, s, out = FakeArray((4, 8)), FakeArray((8,)), 1.5, FakeArray((4, 8), ptr=1 << 25)
    base = k3((x, w, s), out)
    if change == "shape":
        x = FakeArray((8, 4))
    elif change == "dtype":
        w = FakeArray((8,), "float16")
    elif change == "alignment":
        w = FakeArray((8,), ptr=(1 << 20) + 4)
    elif change == "device":
        x = FakeArray((4, 8), device=1)
    elif change == "scalar type":
        s = 2
    elif change == "out":
        out = None
    else:
        out = FakeArray((4, 9))
    assert k3((x, w, s), out) != base


def test_anything_unusual_takes_the_checked_path(launcher):
    k2, k3 = launcher._key_function(2), launcher._key_function(3)
    x, w = FakeArray((4, 8)), FakeArray((8,))
    assert k2((FakeArray((4, 8), contiguous=False), w), None) is None         # strided input
    assert k2((x, w), FakeArray((4, 8), contiguous=False)) is None            # strided out=
    assert k2((x, np.ones(8, np.float32)), None) is None                      # host array
    assert k3((x, w, np.float32(2)), None) is None                            # NumPy scalar
    assert k3((x, w, FakeArray(())), None) is None                            # array for a scalar
    assert k2((1.0, w), None) is None                                         # scalar for an array
    assert k2((x, w), [FakeArray((4, 8))]) is None                            # a list as out=
    assert k2((x, w), (FakeArray((4, 8)),)) is None                           # a 1-tuple for one result
    assert launcher._key_function(1)((x,), None) is None                      # too few arguments
    assert launcher._key_function(4)((x, w, 1.0, 2.0), None) is None          # too many


def test_a_tuple_of_outputs_has_its_own_key():
    lau = Launcher(tiledsl.compile(TWO))
    lau._ndarray = FakeArray
    k1 = lau._key_function(1)
    x = FakeArray((100,))
    pair = (FakeArray((100,), ptr=1 << 24), FakeArray((100,), ptr=1 << 26))
    assert k1((x,), pair) is not None and k1((x,), pair) == k1((FakeArray((100,), ptr=64),), pair)
    assert k1((x,), pair) != k1((x,), None)
    assert k1((x,), pair[0]) is None           # one array for two results: the checked path says why
    assert k1((x,), (pair[0], FakeArray((100,), contiguous=False))) is None


def test_a_new_size_binds_new_values_to_the_same_compiled_warm_call():
    """A warm call's text holds no sizes (grids, byte counts and pointers are bound
    parameters), so a first call at a new size compiles no Python: the same code object
    serves both sizes and each launches its own grid."""
    from types import SimpleNamespace as NS
    from tiledsl.dtypes import DTYPES
    from tiledsl.runtime.launcher import _FastCall
    launched = []
    stream = NS(ptr=77)
    cupy = NS(ndarray=lambda shape, dtype: NS(data=NS(ptr=1 << 30)),
              cuda=NS(runtime=NS(getDevice=lambda: 0), get_current_stream=lambda: stream,
                      driver=NS(launchKernel=lambda *a: launched.append(a)),
                      Device=lambda d: NS(use=lambda: None)))
    launcher = NS(_cupy=cupy, _call=None, graph=NS(params=()))

    def program(n):
        return NS(slots=(1, 2, 1, 0), constants=[n], scalar_params=[], array_args=[0, 1],
                  out_shapes=[((n,), DTYPES["f32"])], temps=[], pointwise_only=True,
                  steps=[(NS(ptr=1234), (-(-n // 256),), (256,), (0, 1, 2, 3), 0)], maps=[()])
    views = {i: NS(shape=(1000,), dtype=np.dtype("float32")) for i in (0, 1)}
    small = _FastCall(launcher, program(1000), views, 0, 2, True).__call__
    large = _FastCall(launcher, program(5000), views, 0, 2, True).__call__
    assert small.__code__ is large.__code__
    assert "1000" not in small.source and "5000" not in small.source
    assert small((None, None), "o", 1 << 20, 1 << 21, 1 << 22) == "o"
    large((None, None), "o", 1 << 20, 1 << 21, 1 << 22)
    assert [a[:8] for a in launched] == [(1234, 4, 1, 1, 256, 1, 1, 0), (1234, 20, 1, 1, 256, 1, 1, 0)]
    assert all(a[8] == 77 for a in launched)
