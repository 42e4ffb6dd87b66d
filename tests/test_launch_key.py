"""The launcher's call-class key (no GPU): what a warm call is matched on.

A warm call skips the checks its class already passed, so every property that
changes the plan or the checks' outcome must change the key (or send the call
down the checked path), and nothing else may."""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace as NS

import numpy as np
import pytest

import tiledsl
from tiledsl.dtypes import DTYPES
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
        self.ndim, self.size = len(self.shape), int(np.prod(self.shape))

    def __len__(self):
        return self.shape[0]


SRC = "kernel f(x: f32[M, N], w: f32[N], s: f32 = 2.0) -> f32[M, N] { return x * w * s }"
TWO = "kernel g(x: f32[N]) -> (f32[N], f32[N]) { return sin(x), cos(x) }"


def stand_in_cupy(launch=lambda *a: 0, ndarray=None, current_stream=lambda: NS(ptr=0), device=None,
                  device_count: int = 1, **more):
    """The parts of CuPy a warm call touches: the current device (0) and stream, the driver's
    launch, a device context, the count of GPUs; `more` adds module attributes (zeros, ...)."""
    runtime = NS(getDevice=lambda: 0, getDeviceCount=lambda: device_count)
    return NS(ndarray=ndarray, cuda=NS(runtime=runtime, get_current_stream=lambda d: current_stream(),
                                       driver=NS(launchKernel=launch), Device=device or (lambda d: NS(use=lambda: None))),
              **more)


def warm_call(cupy, program, views: dict, args: int = 2, out: bool = True):
    """The warm call _FastCall builds for `program` (a stand-in Program) on device 0."""
    from tiledsl.runtime.launcher import _FastCall
    return _FastCall(NS(_cupy=cupy, _call=None, graph=NS(params=())), program, views, 0, args, out).__call__


def stand_in_program(steps: list, out_shapes: list, **fields):
    """A Program's fields a warm call reads, one kernel of x + y by default: `steps` are
    (function, grid, block, slots, shared bytes), `out_shapes` (shape, dtype) pairs."""
    defaults = dict(slots=(1, 2, 1, 0), counted=False, constants=[8], scalar_params=[], array_args=[0, 1],
                    temps=[], pointwise_only=True, maps=[()] * len(steps), dependent=[False] * len(steps))
    return NS(steps=steps, out_shapes=out_shapes, **{**defaults, **fields})


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


def test_the_key_fixes_each_arrays_shape_without_reading_it_as_a_tuple(launcher):
    """A rank-1 array is keyed by its size and a rank-2 one by its length and size (ints,
    cheaper to read and hash than CuPy's shape tuple); so the rank itself is checked, and an
    empty rank-2 array, whose size leaves its row length open, takes the checked path."""
    k2 = launcher._key_function(2)
    w = FakeArray((8,))
    assert k2((FakeArray((4, 8)), w), None) != k2((FakeArray((2, 16)), w), None)      # same size
    assert k2((FakeArray((4, 8)), w), None) != k2((FakeArray((4, 8)), FakeArray((4,))), None)
    assert k2((FakeArray((32,)), w), None) is None              # rank 1 for rank 2, same size
    assert k2((FakeArray((4, 8)), FakeArray((1, 8))), None) is None     # rank 2 for rank 1
    assert k2((FakeArray((0, 8)), w), None) is None             # empty: (0, 8) or (0, 9)?
    assert k2((FakeArray((4, 8)), w), FakeArray((32,), ptr=1 << 25)) is None    # out= of rank 1
    cube = Launcher(tiledsl.compile("kernel c(x: f32[A, B, C]) -> f32[A, B, C] { return x + 1.0 }"))
    cube._ndarray = FakeArray
    k1 = cube._key_function(1)
    assert k1((FakeArray((2, 3, 4)),), None) != k1((FakeArray((3, 2, 4)),), None)
    assert k1((FakeArray((0, 3, 4)),), None) != k1((FakeArray((0, 4, 3)),), None)


def test_with_one_gpu_a_warm_call_reads_no_device(launcher, monkeypatch):
    """Where the process sees one GPU every array is on it and it is current: the key holds
    no device and the warm call asks for none; with two it checks both, as before."""
    from tiledsl.runtime import launcher as L
    sources = {}
    for count in (1, 2):
        monkeypatch.setattr(L, "_ONE_GPU", [])
        launcher._cupy = stand_in_cupy(device_count=count)
        lines = "\n".join(launcher._key_lines(2, fail="return None", then=["return key"]))
        x, w = FakeArray((4, 8)), FakeArray((8,), ptr=4096)
        key = launcher._key_function(2)((x, w), None)
        program = stand_in_program([(NS(ptr=1234), (1,), (256,), (1, 2, 3, 0), 0)], [((8,), DTYPES["f32"])])
        views = {i: NS(shape=(8,), dtype=np.dtype("float32")) for i in (0, 1)}
        fast = warm_call(launcher._cupy, program, views)
        sources[count] = (lines, key, fast.source, set(fast.bound))
    (one_lines, one_key, one_fast, one_bound), (two_lines, two_key, two_fast, two_bound) = sources[1], sources[2]
    assert "device_id" not in one_lines and "get_device()" not in one_fast
    assert two_bound - one_bound == {"get_device", "slow"}      # (nothing bound that the text never reads)
    assert two_lines.count("device_id") == 2 + 3 and "get_device() != DEV" in two_fast
    assert len(two_key) == len(one_key) + 1 and two_key[:-1] == one_key


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
    launched = []
    cupy = stand_in_cupy(launch=lambda *a: launched.append(a), ndarray=lambda shape, dtype: NS(data=NS(ptr=1 << 30)),
                         current_stream=lambda: NS(ptr=77))

    def program(n):
        return stand_in_program([(NS(ptr=1234), (-(-n // 256),), (256,), (0, 1, 2, 3), 0)], [((n,), DTYPES["f32"])],
                                constants=[n])
    views = {i: NS(shape=(1000,), dtype=np.dtype("float32")) for i in (0, 1)}
    small = warm_call(cupy, program(1000), views)
    large = warm_call(cupy, program(5000), views)
    assert small.__code__ is large.__code__
    assert "1000" not in small.source and "5000" not in small.source
    assert small((None, None), "o", 1 << 20, 1 << 21, 1 << 22) == "o"
    large((None, None), "o", 1 << 20, 1 << 21, 1 << 22)
    assert [a[:8] for a in launched] == [(1234, 4, 1, 1, 256, 1, 1, 0), (1234, 20, 1, 1, 256, 1, 1, 0)]
    assert all(a[8] == 77 for a in launched)


def _template_encoder(calls: list, address_in_word0: bool = True):
    """cuTensorMapEncodeTiled's stand-in: the address in the first 8 bytes (as the
    driver has it) or, for the fallback, folded into a later word too."""
    import ctypes

    def encode(out, dtype, rank, ptr, dims, strides, box, elem, interleave, swizzle, l2, oob):
        calls.append(ptr.value)
        words = [ptr.value] + [0x46310 + i for i in range(15)]
        if not address_in_word0:
            words[3] = ptr.value >> 4
        ctypes.memmove(out.value, b"".join(w.to_bytes(8, "little") for w in words), 128)
        return 0
    return encode


def test_a_map_for_a_new_pointer_is_the_template_with_its_address():
    """The driver encodes the first map and, as a check, one 16 bytes on; every later
    pointer's map is the template with that pointer in front, with no driver call.
    Where more than the first word follows the address, each pointer is encoded."""
    import ctypes
    from tiledsl.codegen.params import MapSpec
    from tiledsl.runtime.tma import MapCache
    spec = MapSpec((64, 64), 128, (64, 64), "f16")
    calls = []
    cache = MapCache(spec, encoder=_template_encoder(calls))
    first = cache.address(0x10000)
    assert calls == [0x10000, 0x10010] and cache.template is not None
    later = cache.address(0x7F0000020000)
    assert calls == [0x10000, 0x10010]
    assert ctypes.string_at(later, 128) == (0x7F0000020000).to_bytes(8, "little") + ctypes.string_at(first, 128)[8:]
    calls2 = []
    folded = MapCache(spec, encoder=_template_encoder(calls2, address_in_word0=False))
    folded.address(0x10000)
    folded.address(0x20000)
    assert folded.template is None and calls2 == [0x10000, 0x10010, 0x20000]


@pytest.mark.parametrize("patchable", [True, False], ids=["template", "encoded"])
def test_the_warm_call_hands_the_driver_each_calls_maps(patchable):
    """A TMA launch's first two parameters are tensor maps: from a thread's copy of
    the template with this call's address written in, or the cached map of this
    call's pointer; the rest are packed after them as always."""
    import ctypes
    from tiledsl.codegen.params import MapSpec
    from tiledsl.runtime.tma import MapCache
    calls, launched = [], []
    caches = [MapCache(MapSpec((64, 64), 128, (64, 64), "f16"),
                       encoder=_template_encoder(calls, address_in_word0=patchable)) for _ in range(2)]
    for c in caches:
        c.address(0x1000)       # the checked path's first call made one

    def launch(*a):             # what the driver would read: the parameter pointers, then through them
        params = np.frombuffer((ctypes.c_int64 * 5).from_address(a[9]), dtype=np.int64)
        launched.append(([ctypes.string_at(int(params[j]), 8) for j in range(2)],
                         [ctypes.c_int64.from_address(int(params[j])).value for j in range(2, 5)]))
    program = stand_in_program([(NS(ptr=1234), (1, 1), (128,), (1, 2, 3, 0), 0)], [((64, 64), DTYPES["f16"])],
                               constants=[64], pointwise_only=False, maps=[((1, caches[0]), (2, caches[1]))])
    views = {i: NS(shape=(64, 64), dtype=np.dtype("float16")) for i in (0, 1)}
    fast = warm_call(stand_in_cupy(launch=launch), program, views)
    assert ("pack('Q', blk[0][3][0]" in fast.source) == patchable
    for a, b, o in ((0x7F00000A0000, 0x7F00000B0000, 0x7F00000C0000), (0x7F00000D0000, 0x7F00000E0000, 0x7F00000F0000)):
        fast((None, None), "o", a, b, o)
        maps, rest = launched[-1]
        assert maps == [a.to_bytes(8, "little"), b.to_bytes(8, "little")] and rest == [a, b, o]
    assert len(calls) == (4 if patchable else 8)    # two pointers each: the first map and its check, then new ones


def test_the_checked_path_launches_maps_first_then_eight_byte_slots(monkeypatch):
    """A TMA kernel's first call (Program.run) launches through the driver: the maps'
    addresses lead kernelParams, then each value in 8 bytes, doubles for floats,
    int64 for pointers, sizes and bools, as the warm call packs them."""
    import ctypes
    import struct
    from tiledsl.runtime import launcher as L
    seen = []

    def launch(fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        p = (ctypes.c_void_p * 6).from_address(params)
        seen.append(((fn, gx, gy, gz, bx, by, bz, shared, stream), [p[0], p[1]],
                     struct.unpack("<qqdq", b"".join(ctypes.string_at(p[j], 8) for j in range(2, 6)))))
    fake = NS(cuda=NS(driver=NS(launchKernel=launch), get_current_stream=lambda: NS(ptr=99)))
    monkeypatch.setattr(L, "_cupy", lambda: fake)
    L._launch_with_maps(NS(ptr=7), (3, 2), (256,), 4096, [0xA000, 0xB000], [1 << 40, 4096, 0.5, True])
    assert seen == [((7, 3, 2, 1, 256, 1, 1, 4096, 99), [0xA000, 0xB000], (1 << 40, 4096, 0.5, 1))]


def test_a_kernel_call_goes_to_the_warm_dispatch_or_the_launcher():
    """Kernel is a functools.partial (vectorcall); its call still reaches the launcher's
    dispatcher for the argument count, else the launcher's checked path."""
    import copy
    import pickle
    k = tiledsl.compile(SRC)
    calls = []

    class Recorder:
        _dispatchers: dict = {}

        def __call__(self, args, kwargs, out):
            calls.append((args, kwargs, out))
            return "checked"
    k._launcher = Recorder()
    assert k(1, 2, out=3) == "checked" and calls == [((1, 2), {}, 3)]
    k._launcher._dispatchers[2] = lambda args, out: ("warm", args, out)
    assert k(1, 2) == ("warm", (1, 2), None)
    assert k(1, w=2) == "checked" and calls[-1] == ((1,), {"w": 2}, None)    # keywords: checked
    assert k(1, 2, 3) == "checked"                                          # no dispatcher for 3

    class Model:
        kernel = k
    assert Model().kernel is k                  # a class attribute, not a bound method
    with pytest.raises(TypeError, match="cannot be pickled or copied"):
        pickle.dumps(k)
    with pytest.raises(TypeError, match="cannot be pickled or copied"):
        copy.copy(k)


def test_a_few_long_rows_are_planned_by_a_spread_launcher(monkeypatch):
    """The launcher hands a call class with few long rows (schedule.problem.runs_spread) to a
    second launcher of the spread partition, made once, which reads the tuning database the
    fused launcher names for records of the spread partition's groups; not where the rows are
    short, where schedules are pinned, or from the spread launcher itself. Pinning its
    schedules forgets the fused launcher's planned calls (which it hands over)."""
    import tiledsl
    import tiledsl.runtime.launcher as L
    monkeypatch.setattr(L, "_sm_count", lambda device: 132)
    monkeypatch.setattr(L, "device_arch", lambda device: "sm_90a")
    launcher = L.Launcher(tiledsl.compile("kernel share(x: f32[N]) -> f32[N] { return x / sum(x) }"))
    assert launcher._other_for(dict(N=1 << 12), 0) == ("", None) and not launcher._others
    mode, spread = launcher._other_for(dict(N=1 << 22), 0)
    assert mode == "spread" and spread.spread and spread.partition_mode == "spread"
    assert spread is launcher.partition_launcher("spread") and launcher.partition_launcher("") is launcher
    assert [g.kind for g in spread.groups] == ["reduce", "pointwise"]
    assert launcher._other_for(dict(N=(1 << 22) + 1), 0) == ("spread", spread)
    assert spread._other_for(dict(N=1 << 22), 0) == ("", None)
    seen = []
    monkeypatch.setattr(L, "_device_identity", lambda device: ("H100", "90"))
    monkeypatch.setattr("tiledsl.tune.db.tuned_schedule", lambda *a: seen.append((a[6], a[5])))
    monkeypatch.setattr("tiledsl.tune.paths.resolve_db_path", lambda where: __import__("pathlib").Path(__file__))
    launcher.tuning_db = "somewhere"
    assert spread._tuned(0, None, dict(N=1 << 22), 0) == (None, "default") and seen[-1][0] == "spread"
    launcher.tuning_db = False
    assert spread._tuned(0, None, dict(N=1 << 22), 0) == (None, "default") and len(seen) == 1
    launcher._plans[("spread", 1)] = launcher._fast[1] = object()
    L.set_overrides(spread, {})
    assert not launcher._plans and not launcher._fast
    launcher.overrides = {0: None}
    assert launcher._other_for(dict(N=1 << 22), 0) == ("", None)


def test_short_columns_are_planned_by_a_columns_launcher(monkeypatch):
    """Where runs_columns says so (turned on here: problem.COLUMNS_MAX_ROWS), the launcher hands
    the call class to a second launcher of the columns partition, made once, whose one group
    writes the softmax; not for long columns, where schedules are pinned, or
    from that launcher itself. Its kernels' keys hash an IR text marked apart from the split
    ones' (group 0 of both may take the same schedule)."""
    import tiledsl
    import tiledsl.runtime.launcher as L
    import tiledsl.schedule.problem as problem_module
    monkeypatch.setattr(L, "_sm_count", lambda device: 132)
    monkeypatch.setattr(L, "device_arch", lambda device: "sm_90a")
    monkeypatch.setattr(problem_module, "COLUMNS_MAX_ROWS", 1023)
    launcher = L.Launcher(tiledsl.compile("kernel cs(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=M))\n"
                                          " return e / sum(e, axis=M)\n}"))
    assert [g.kind for g in launcher.groups] == ["reduce", "pointwise"]
    assert launcher._other_for(dict(M=4096, N=4096), 0) == ("", None)
    mode, columns = launcher._other_for(dict(M=64, N=4096), 0)
    assert mode == "columns" and columns.columns and columns.partition_mode == "columns"
    assert [g.kind for g in columns.groups] == ["reduce"]
    assert columns.ir_text == launcher.ir_text + "\n# columns"
    assert launcher._other_for(dict(M=1023, N=7), 0) == ("columns", columns)
    assert columns._other_for(dict(M=64, N=4096), 0) == ("", None)
    launcher.overrides = {0: None}
    assert launcher._other_for(dict(M=64, N=4096), 0) == ("", None)
    monkeypatch.setattr(problem_module, "COLUMNS_MAX_ROWS", 0)
    launcher.overrides = {}
    assert launcher._other_for(dict(M=64, N=4096), 0) == ("", None)


def test_the_tuners_winners_are_pinned_for_the_call_class_tuned(monkeypatch):
    """Schedules installed by the tuner (set_overrides with extents) are for the call class it
    tuned: a call at other sizes plans as though nothing were pinned (the database, else the
    rules: a winner pinned for short rows may not fit long ones), and the fused launcher pinned
    for one size still hands a few long rows to the spread one. Pins without extents (tests,
    probes, the tuner while it times) hold for every call."""
    import tiledsl
    import tiledsl.runtime.launcher as L
    monkeypatch.setattr(L, "_sm_count", lambda device: 132)
    monkeypatch.setattr(L, "device_arch", lambda device: "sm_90a")
    launcher = L.Launcher(tiledsl.compile("kernel share(x: f32[N]) -> f32[N] { return x / sum(x) }"))
    pinned = {0: "a schedule"}
    L.set_overrides(launcher, pinned, dict(N=4096))
    assert launcher._pins(dict(N=4096)) == pinned and launcher._pins(dict(N=4097)) == {}
    assert launcher._other_for(dict(N=1 << 22), 0)[0] == "spread"
    L.set_overrides(launcher, pinned)
    assert launcher._pins(dict(N=4097)) == pinned and launcher._other_for(dict(N=1 << 22), 0) == ("", None)


def test_an_empty_call_plans_no_launch_and_compiles_nothing(monkeypatch):
    """Zero rows: nothing launches, so the launcher's compile-time steps (a spilling prefetch
    dropped, a split's room filled) have no kernel to look at and leave the empty plan as it
    is (they read its first launch: an IndexError on the GPU before 2026-12-06); the tuner's
    default there is the rules' default."""
    import tiledsl.runtime.launcher as L
    from tiledsl.schedule.choose import default, plan
    from tiledsl.schedule.problem import problem
    monkeypatch.setattr(L, "device_arch", lambda device: "sm_90a")
    monkeypatch.setattr(L, "_sm_count", lambda device: 132)
    launcher = L.Launcher(tiledsl.compile(open("examples/softmax.tdsl").read()))
    p = problem(launcher.groups[0], launcher.layouts[0], dict(M=0, N=100), frozenset(), 132, "sm_90a", 3352.0)
    assert plan(p, launcher.kernel.hints) == []
    assert launcher._compiled_default(0, p, [], 0, "default") == []
    assert launcher.launched_default(0, p, 0) == default(p, launcher.kernel.hints)


def test_a_warm_call_keeps_small_temporaries_per_thread_and_stream():
    """A program of two kernels and a temporary between them: the warm call allocates it at
    a thread's first call on a stream and hands the same pointer to every later call there
    (stream order keeps calls apart); another stream or thread gets its own, up to KEPT_PAIRS
    of them, and past that every call allocates; temporaries over KEPT_TEMP_BYTES are allocated
    every call, as before."""
    import ctypes
    import threading
    from tiledsl.runtime.launcher import KEPT_PAIRS, KEPT_TEMP_BYTES
    allocated, launched, stream = [], [], [NS(ptr=0x55)]

    def ndarray(shape, dtype):
        allocated.append(shape)
        return NS(data=NS(ptr=0x10000 * len(allocated)))
    cupy = stand_in_cupy(launch=lambda *a: launched.append(a), ndarray=ndarray, current_stream=lambda: stream[0])

    def program(n):
        # slots: constant n, input, output, temporary; kernel 1 writes the temporary, kernel 2 reads it
        return stand_in_program([(NS(ptr=0xA), (1,), (256,), (1, 3, 0), 0), (NS(ptr=0xB), (1,), (256,), (3, 2, 0), 0)],
                                [((n,), DTYPES["f32"])], slots=(1, 1, 1, 1), constants=[n], array_args=[0],
                                temps=[((n,), np.float32)], pointwise_only=False)

    def temp_pointers(fast, calls=1):
        del launched[:]
        for _ in range(calls):
            fast((None,), "o", 1 << 24, 1 << 28)
        words = [np.frombuffer((ctypes.c_int64 * 3).from_address(a[9]), dtype=np.int64) for a in launched]
        return [int(ctypes.c_int64.from_address(int(w[1 if a[0] == 0xA else 0])).value)
                for w, a in zip(words, launched)]
    views = {0: NS(shape=(1000,), dtype=np.dtype("float32"))}
    fast = warm_call(cupy, program(1000), views, args=1)
    first = temp_pointers(fast, calls=3)
    assert len(allocated) == 1 and len(set(first)) == 1 and len(first) == 6
    stream[0] = NS(ptr=0x66)
    other_stream = temp_pointers(fast)
    assert len(allocated) == 2 and set(other_stream) != set(first)
    stream[0] = NS(ptr=0x55)
    assert temp_pointers(fast) == first[:2] and len(allocated) == 2
    seen = []
    worker = threading.Thread(target=lambda: seen.append(temp_pointers(fast)))
    worker.start()
    worker.join()
    assert len(allocated) == 3 and set(seen[0]) != set(first)
    for n in range(KEPT_PAIRS - 3):             # pairs up to the cap are kept; past it, allocated each call
        stream[0] = NS(ptr=0x100 + n)
        temp_pointers(fast, calls=2)
    assert len(allocated) == KEPT_PAIRS
    stream[0] = NS(ptr=0x999)
    temp_pointers(fast, calls=3)
    assert len(allocated) == KEPT_PAIRS + 3
    stream[0] = NS(ptr=0x55)
    assert temp_pointers(fast) == first[:2]     # the first stream's, still kept
    big = KEPT_TEMP_BYTES // 4 + 1
    fast = warm_call(cupy, program(big), {0: NS(shape=(big,), dtype=np.dtype("float32"))}, args=1)
    del allocated[:]
    temp_pointers(fast, calls=3)
    assert allocated == [(big,)] * 3


def test_a_warm_call_passes_its_streams_counter_of_finished_blocks(monkeypatch):
    """A split finished by its last block (Schedule.last_block) takes a zeroed word of the
    call's device and stream (launcher.done_counter): made at a stream's first call, the
    same word at its next, another for another stream; read from the stream the warm call
    already looked up."""
    from contextlib import nullcontext
    from tiledsl.runtime import launcher as L

    class _UsableDevice(nullcontext):
        def use(self):
            pass
    monkeypatch.setattr(L, "_DONE_COUNTERS", {})
    made = []
    stream = NS(ptr=77)

    def zeros(n, dtype):
        made.append(n)
        return NS(data=NS(ptr=(1 << 32) + 256 * len(made)))
    cupy = stand_in_cupy(ndarray=lambda shape, dtype: NS(data=NS(ptr=1 << 30)), current_stream=lambda: stream,
                         device=lambda d: _UsableDevice(), zeros=zeros, uint32="uint32")
    program = stand_in_program([(NS(ptr=1234), (1, 8, 1), (512,), (1, 2, 0, 3), 0)], [((), DTYPES["f32"])],
                               slots=(1, 1, 1, 0), counted=True, constants=[4096], array_args=[0],
                               pointwise_only=False)
    views = {0: NS(shape=(4096,), dtype=np.dtype("float32"))}
    call = warm_call(cupy, program, views, args=1)
    assert "done = DONE(CUPY, DEV, S)[1]" in call.source and call.source.count("DONE(") == 1
    call((None,), "o", 1 << 20, 1 << 21)
    call((None,), "o", 1 << 20, 1 << 21)
    assert made == [1] and list(L._DONE_COUNTERS) == [(0, 77)]
    stream.ptr = 78
    call((None,), "o", 1 << 20, 1 << 21)
    assert made == [1, 1] and L._DONE_COUNTERS[(0, 77)][1] != L._DONE_COUNTERS[(0, 78)][1]
