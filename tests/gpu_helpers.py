"""Helpers for the GPU test suite (tests/test_gpu_memory.py).

Importable on any machine: CuPy and torch are imported inside the functions
that need them, never at module import, so collecting the GPU tests on a
machine without a GPU costs nothing and skips cleanly.

What the helpers assume about the tiledsl GPU API (see the report in
benchmarks/README.md, "Assumptions about the tiledsl API"):

* `k(*args)` returns one device array for a one-result kernel and a tuple of
  them for a kernel with several results; a scalar result (`-> f32`) is a 0-d
  device array.
* `k(*args, out=buf)` (or `out=(buf0, buf1, ...)` for several results) writes
  into the caller's buffers; if it returns something, it returns those same
  buffers.
* Device arrays are CuPy arrays, torch CUDA tensors, or anything with
  `__cuda_array_interface__` / DLPack; bf16 arrays are CuPy bf16 arrays (CuPy
  with ml_dtypes) or torch bfloat16 tensors.
"""
from __future__ import annotations

import functools
import os
from typing import Iterable, Optional, Sequence

import numpy as np
import pytest

from tiledsl.dtypes import DType, from_numpy
from tiledsl.runtime.arrays import torch_with_cuda
from tiledsl.inputs import TOLERANCE, random_arguments, relative_error

# ---- what is available ---------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def gpu_status() -> tuple[bool, str]:
    """(True, '') when CuPy imports and sees at least one CUDA device, else (False, why)."""
    try:
        import cupy
    except Exception as err:  # noqa: BLE001 - ImportError, or a broken CUDA install
        return False, f"CuPy is not importable ({type(err).__name__}: {err})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # noqa: BLE001 - no driver, no device
        return False, f"no usable CUDA device ({type(err).__name__}: {err})"
    if n == 0:
        return False, "CuPy sees no CUDA device"
    return True, ""


def gpu_available() -> bool:
    return gpu_status()[0]


def device_count() -> int:
    if not gpu_available():
        return 0
    import cupy
    return int(cupy.cuda.runtime.getDeviceCount())


@functools.lru_cache(maxsize=None)
def torch_cuda():
    """The torch module when it imports and has CUDA, else None (asked once)."""
    return torch_with_cuda()


def require_torch():
    torch = torch_cuda()
    if torch is None:
        pytest.skip("torch with CUDA is not available")
    return torch


def _is_bf16(dtype) -> bool:
    try:
        return np.dtype(dtype).name == "bfloat16"
    except TypeError:
        return False


def bf16_numpy() -> np.dtype:
    import ml_dtypes
    return np.dtype(ml_dtypes.bfloat16)


@functools.lru_cache(maxsize=None)
def cupy_supports_bf16() -> bool:
    """Whether this CuPy holds ml_dtypes bfloat16 arrays (CuPy >= 14 with ml_dtypes)."""
    if not gpu_available():
        return False
    import cupy
    try:
        host = np.array([1.5, -2.0], dtype=bf16_numpy())
        dev = cupy.asarray(host)
        if dev.dtype.name != "bfloat16":
            return False
        back = dev.get()
        return bool(np.array_equal(back.astype(np.float32), host.astype(np.float32)))
    except Exception:  # noqa: BLE001 - TypeError/NotImplementedError on older CuPy
        return False


# ---- seeds ---------------------------------------------------------------------------


def fresh_seed() -> int:
    """TDSL_TEST_SEED when set (to replay a failure), else a fresh random seed."""
    env = os.environ.get("TDSL_TEST_SEED")
    if env:
        return int(env)
    return int(np.random.SeedSequence().entropy % (2 ** 63))


def host_arguments(kernel, extents: dict, seed: Optional[int] = None) -> list:
    """tiledsl.inputs.random_arguments with a fresh, printed seed (pytest shows it on failure)."""
    seed = fresh_seed() if seed is None else seed
    print(f"{kernel.name} {extents}: random_arguments seed {seed} (replay with TDSL_TEST_SEED={seed})")
    return random_arguments(kernel.graph, extents, seed)


def draw(rng: np.random.Generator, shape, dtype, kind: str = "normal", scale: float = 1.0) -> np.ndarray:
    """One random host array.

    kind: 'normal' (N(0, scale)), 'offset' (N(1, scale): sums without heavy
    cancellation), 'positive' (uniform in [0.25, 2)), 'int' (integers in [-8, 8]).
    """
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if kind == "int" or dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -8
        return rng.integers(lo, 9, size=shape).astype(dtype)
    if kind == "positive":
        values = rng.uniform(0.25, 2.0, shape)
    elif kind == "offset":
        values = 1.0 + scale * rng.standard_normal(shape)
    else:
        values = scale * rng.standard_normal(shape)
    return np.asarray(values).astype(dtype)


# ---- moving arrays -------------------------------------------------------------------


def to_device(a, lib: str = "cupy"):
    """A host array on the current GPU; Python scalars pass through unchanged.

    lib="cupy" gives a CuPy array (bf16 through torch when this CuPy has no
    bf16); lib="torch" gives a torch CUDA tensor.
    """
    if not isinstance(a, np.ndarray):
        return a
    if lib == "torch":
        torch = require_torch()
        if _is_bf16(a.dtype):
            return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).cuda().view(torch.bfloat16)
        return torch.from_numpy(np.ascontiguousarray(a)).cuda()
    import cupy
    if _is_bf16(a.dtype) and not cupy_supports_bf16():
        torch = torch_cuda()
        if torch is None:
            pytest.skip("bf16 on the GPU needs CuPy with ml_dtypes bf16 support, or torch")
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).cuda().view(torch.bfloat16)
    return cupy.asarray(a)


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _is_cupy(x) -> bool:
    return type(x).__module__.startswith("cupy") and hasattr(x, "get")


def to_host(arr) -> np.ndarray:
    """A device result on the host as NumPy (torch bf16 → float32, which is exact)."""
    if arr is None or isinstance(arr, np.ndarray):
        return arr
    if _is_torch(arr):
        t = arr.detach()
        if str(t.dtype) == "torch.bfloat16":
            return t.float().cpu().numpy()
        return t.cpu().numpy()
    if _is_cupy(arr):
        return arr.get()
    import cupy
    if hasattr(arr, "__cuda_array_interface__"):
        return cupy.asarray(arr).get()
    if hasattr(arr, "__dlpack__"):
        return cupy.from_dlpack(arr).get()
    if isinstance(arr, (int, float, bool, np.generic)):
        return np.asarray(arr)
    raise TypeError(f"cannot bring a {type(arr).__module__}.{type(arr).__name__} to the host")


def dtype_name(arr) -> Optional[str]:
    """The tiledsl dtype name ('f32', 'bf16', ...) of a device array, or None."""
    if _is_torch(arr):
        return {"torch.float16": "f16", "torch.bfloat16": "bf16", "torch.float32": "f32",
                "torch.float64": "f64", "torch.int8": "i8", "torch.int16": "i16",
                "torch.int32": "i32", "torch.int64": "i64", "torch.uint8": "u8",
                "torch.bool": "bool"}.get(str(arr.dtype))
    dt = getattr(arr, "dtype", None)
    if dt is None:
        return None
    found = from_numpy(dt)
    return found.name if found is not None else None


def shape_of(arr) -> tuple:
    return tuple(int(s) for s in arr.shape)


def data_ptr(arr) -> int:
    if _is_torch(arr):
        return int(arr.data_ptr())
    if _is_cupy(arr):
        return int(arr.data.ptr)
    return int(arr.__cuda_array_interface__["data"][0])


def synchronize() -> None:
    import cupy
    cupy.cuda.Device().synchronize()


def free_memory() -> None:
    """Return CuPy's (and torch's) pooled memory to the driver between big tests."""
    if not gpu_available():
        return
    import cupy
    synchronize()
    cupy.get_default_memory_pool().free_all_blocks()
    torch = torch_cuda()
    if torch is not None:
        torch.cuda.empty_cache()


# ---- poisoned output buffers ---------------------------------------------------------

BOOL_POISON_BYTE = 0xA5   # not a valid bool (0 or 1): an unwritten bool element shows


def int_sentinel(np_dtype) -> int:
    info = np.iinfo(np_dtype)
    return int(info.max - 7) if info.min == 0 else int(info.min + 7)


def _tdsl_dtype(dtype) -> DType:
    if isinstance(dtype, DType):
        return dtype
    from tiledsl.dtypes import DTYPES
    if isinstance(dtype, str) and dtype in DTYPES:
        return DTYPES[dtype]
    found = from_numpy(dtype)
    if found is None:
        raise TypeError(f"no tiledsl dtype for {dtype!r}")
    return found


def poison(shape, dtype, lib: str = "cupy"):
    """A device buffer of `shape`/`dtype` that no correct kernel result can equal
    everywhere: NaN for floats, a sentinel near the type's limit for integers,
    the byte 0xA5 for bool. `dtype` is a tiledsl DType, its name, or a NumPy dtype."""
    d = _tdsl_dtype(dtype)
    shape = tuple(int(s) for s in shape)
    if d.name == "bf16" and (lib == "torch" or not cupy_supports_bf16()):
        torch = torch_cuda()
        if torch is None:
            pytest.skip("bf16 output buffers need CuPy bf16 support or torch")
        return torch.full(shape, float("nan"), dtype=torch.bfloat16, device="cuda")
    if lib == "torch":
        torch = require_torch()
        tdt = {"f16": torch.float16, "f32": torch.float32, "f64": torch.float64,
               "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
               "u8": torch.uint8, "bool": torch.bool}[d.name]
        if d.is_float:
            return torch.full(shape, float("nan"), dtype=tdt, device="cuda")
        if d.is_bool:
            t = torch.empty(shape, dtype=torch.bool, device="cuda")
            t.view(torch.uint8).fill_(BOOL_POISON_BYTE)
            return t
        return torch.full(shape, int_sentinel(d.numpy), dtype=tdt, device="cuda")
    import cupy
    if d.name == "bf16":
        raw = cupy.full(shape, 0x7FC0, dtype=cupy.uint16)   # a bf16 quiet NaN
        return raw.view(bf16_numpy())
    if d.is_float:
        return cupy.full(shape, np.nan, dtype=d.numpy)
    if d.is_bool:
        buf = cupy.empty(shape, dtype=cupy.bool_)
        buf.view(cupy.uint8).fill(BOOL_POISON_BYTE)
        return buf
    return cupy.full(shape, int_sentinel(d.numpy), dtype=d.numpy)


def _raw_view(host: np.ndarray) -> np.ndarray:
    """The bytes of a host array as unsigned integers of its item size."""
    return host.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[host.dtype.itemsize])


def still_poisoned(buf) -> bool:
    """Whether `buf` (made by poison) holds nothing but its poison: nothing was written."""
    host = to_host(buf)
    if host.size == 0:
        return True
    if host.dtype.kind == "f" or _is_bf16(host.dtype):
        return bool(np.all(np.isnan(host.astype(np.float32))))
    if host.dtype == np.bool_:
        return bool(np.all(host.view(np.uint8) == BOOL_POISON_BYTE))
    return bool(np.all(host == int_sentinel(host.dtype)))


# ---- running and judging a kernel ----------------------------------------------------


def as_list(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def result_shapes(kernel, extents: dict) -> list[tuple]:
    return [tuple(int(extents[d]) for d in res.dims) for res in kernel.graph.results]


def device_arguments(host_args: Sequence, lib: str = "cupy") -> list:
    return [to_device(a, lib) for a in host_args]


def check(kernel, host_args: Sequence, extents: dict, out_kind: str = "alloc", *,
          device_args: Optional[Sequence] = None, host_kwargs: Optional[dict] = None,
          device_kwargs: Optional[dict] = None, out_lib: str = "cupy", label: str = "",
          tolerance: Optional[float] = None) -> list[float]:
    """Run `kernel` on the GPU and compare every result with its float64 reference.

    Draws nothing itself: `host_args` are the NumPy arguments (scalars as
    Python numbers); `device_args` defaults to them copied to the GPU.
    out_kind="alloc" lets the kernel allocate; out_kind="out" passes
    NaN/sentinel-poisoned buffers as out=, so an element the kernel never
    writes fails the NaN (or sentinel) check. Each result must have the
    declared shape and dtype, no NaN where the reference has none, and a
    relative error (tiledsl.inputs.relative_error) within
    tiledsl.inputs.TOLERANCE for its dtype; integer and bool results must be
    exact. Returns the relative errors, one per result.
    """
    if out_kind not in ("alloc", "out"):
        raise ValueError(f"out_kind must be 'alloc' or 'out', not {out_kind!r}")
    host_kwargs = dict(host_kwargs or {})
    expected = as_list(kernel.reference(*host_args, compute="f64", **host_kwargs))
    results = kernel.graph.results
    shapes = result_shapes(kernel, extents)
    assert len(expected) == len(results)
    if device_args is None:
        device_args = device_arguments(host_args)
    if device_kwargs is None:
        device_kwargs = {k: to_device(v) for k, v in host_kwargs.items()}

    what = f"{kernel.name} {label or extents} [{out_kind}]"
    if out_kind == "alloc":
        got = as_list(kernel(*device_args, **device_kwargs))
    else:
        outs = [poison(shape, res.dtype, out_lib) for shape, res in zip(shapes, results)]
        returned = kernel(*device_args, out=outs[0] if len(outs) == 1 else tuple(outs),
                          **device_kwargs)
        if returned is not None:
            returned = as_list(returned)
            assert len(returned) == len(outs), \
                f"{what}: out= call returned {len(returned)} arrays for {len(outs)} results"
            for i, (r, o) in enumerate(zip(returned, outs)):
                assert data_ptr(r) == data_ptr(o), \
                    f"{what}: result {i} returned by an out= call is not the out= buffer"
        got = outs
    assert len(got) == len(results), f"{what}: {len(got)} results for {len(results)} declared"
    synchronize()

    errors = []
    for i, (g, ref, res, shape) in enumerate(zip(got, expected, results, shapes)):
        ref = np.asarray(ref)
        name = f"{what} result {i} ({res.dtype}[{', '.join(res.dims)}])"
        assert shape_of(g) == shape == ref.shape, \
            f"{name}: shape {shape_of(g)}, declared {shape}, reference {ref.shape}"
        assert dtype_name(g) == res.dtype.name, f"{name}: dtype {dtype_name(g)}, declared {res.dtype}"
        host = to_host(g)
        if res.dtype.is_bool:
            raw = host.view(np.uint8)
            bad = int(np.count_nonzero(raw > 1))
            assert bad == 0, f"{name}: {bad} elements are not 0/1 (never written: {BOOL_POISON_BYTE:#x})"
            mismatch = int(np.count_nonzero(host != ref.astype(bool)))
            print(f"{name}: {mismatch} mismatches")
            assert mismatch == 0, f"{name}: {mismatch} of {ref.size} elements differ from the reference"
            errors.append(0.0)
            continue
        if res.dtype.is_integer:
            mismatch = ~np.equal(host, ref)
            count = int(np.count_nonzero(mismatch))
            print(f"{name}: {count} mismatches")
            if count:
                where = np.argwhere(mismatch)[:5].tolist() if ref.ndim else []
                sentinel = int(np.count_nonzero(host == int_sentinel(host.dtype)))
                raise AssertionError(f"{name}: {count} of {ref.size} elements differ (first at "
                                     f"{where}; {sentinel} still hold the out= sentinel)")
            errors.append(0.0)
            continue
        h64 = host.astype(np.float64)
        r64 = ref.astype(np.float64)
        stray_nan = np.isnan(h64) & ~np.isnan(r64)
        count = int(np.count_nonzero(stray_nan))
        if count:
            where = np.argwhere(stray_nan)[:5].tolist() if ref.ndim else []
            raise AssertionError(f"{name}: {count} of {ref.size} elements are NaN where the reference "
                                 f"is not (first at {where}); with out= that includes elements never "
                                 f"written")
        err = relative_error(host, ref)
        tol = TOLERANCE[res.dtype.name] if tolerance is None else tolerance
        print(f"{name}: relative error {err:.3g} (tolerance {tol:g})")
        assert err <= tol, f"{name}: relative error {err:.3g} > {tol:g}"
        errors.append(err)
    return errors


def sample_positions(n: int, stride: int, ends: int = 4096,
                     around: Iterable[int] = ()) -> np.ndarray:
    """Positions to spot-check in a huge 1-D result: every `stride`-th, both ends, and
    a window around each position in `around` (e.g. 2**31)."""
    parts = [np.arange(0, n, stride, dtype=np.int64),
             np.arange(0, min(ends, n), dtype=np.int64),
             np.arange(max(0, n - ends), n, dtype=np.int64)]
    for p in around:
        parts.append(np.arange(max(0, p - ends), min(n, p + ends), dtype=np.int64))
    return np.unique(np.concatenate(parts))


__all__ = ["gpu_status", "gpu_available", "device_count", "torch_cuda", "require_torch",
           "cupy_supports_bf16", "fresh_seed", "host_arguments", "draw", "to_device", "to_host",
           "dtype_name", "shape_of", "data_ptr", "synchronize", "free_memory", "poison",
           "still_poisoned", "int_sentinel", "as_list", "result_shapes", "device_arguments",
           "check", "sample_positions", "bf16_numpy"]


def planned_launches(kernel, overlap: str = "1") -> list:
    """Every program `kernel`'s launchers planned (the spread and columns ones' too), each step checked:
    launched to overlap the kernel before exactly where dependent.overlaps_the_kernel_before
    says from the driver's residency (nowhere with TILEDSL_DEPENDENT_LAUNCH=0, `overlap`
    "0"). Returns [(program, [(blocks, resident) of each step])]."""
    from tiledsl.runtime.dependent import overlaps_the_kernel_before, resident_blocks_per_sm
    from tiledsl.runtime.launcher import _sm_count
    launchers = [kernel._launcher] + list(kernel._launcher._others.values())
    out = []
    for program in [p for ln in launchers for p in ln._plans.values()]:
        assert len(program.kinds) == len(program.steps) == len(program.dependent)
        facts = []
        for (fn, grid, block, _, shared), overlaps, (kind, stage) in zip(program.steps, program.dependent,
                                                                          program.kinds):
            blocks, resident = int(np.prod(grid)), resident_blocks_per_sm(fn.ptr, block[0], shared)
            wanted = overlaps_the_kernel_before(kind, stage, blocks, resident, _sm_count(0))
            assert overlaps == (overlap == "1" and wanted), (kind, stage, grid, block, resident, overlaps)
            facts.append((blocks, resident))
        out.append((program, facts))
    return out
