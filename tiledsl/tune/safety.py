"""The autotuner's safety check: a schedule may win only if its result matches
the float64 reference.

Each candidate writes into fresh output buffers poisoned before the launch
(NaN for floats, 0xAB bytes otherwise), so a kernel that skips elements
cannot pass on a previous candidate's values; the comparison is the project's
relative error (inputs.relative_error: NaN never passes) with the tolerance
of the result's dtype (inputs.TOLERANCE), computed on the GPU.

A candidate that fails it is a compiler bug: the report says so loudly.
`TILEDSL_TUNE_FAULT=<schedule tag>` (tests only) makes the tuner corrupt the
output of that candidate's every launch, to prove the check rejects it.
"""
from __future__ import annotations

import os
from typing import Optional

import numpy as np

FAULT_ENV = "TILEDSL_TUNE_FAULT"


def fault_tag(explicit: Optional[str] = None) -> Optional[str]:
    return explicit or os.environ.get(FAULT_ENV) or None


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def to_device(host, like_dtype=None):
    """A NumPy array on the GPU (CuPy; a torch tensor for bf16, which CuPy lacks)."""
    import cupy
    try:
        return cupy.asarray(host)
    except (TypeError, ValueError):
        if "bfloat16" not in str(host.dtype):
            raise
        import torch
        bits = torch.from_numpy(np.ascontiguousarray(host).view(np.int16))
        return bits.cuda().view(torch.bfloat16)


def copy_of(arr):
    """A second device array with the same contents (an input set for rotation)."""
    if _is_torch(arr):
        return arr.clone()
    return arr.copy()


def poison(arr) -> None:
    """Fill an output buffer with values no correct kernel leaves there."""
    if _is_torch(arr):
        if arr.is_floating_point():
            arr.fill_(float("nan"))
        else:
            arr.view(-1).view(__import__("torch").uint8).fill_(0xAB)
        return
    if arr.dtype.kind == "f":
        arr.fill(np.nan)
    else:
        arr.view(np.uint8).fill(0xAB)


def as_float64(arr):
    """A CuPy float64 copy of a device array (CuPy or torch)."""
    import cupy
    if _is_torch(arr):
        arr = cupy.asarray(arr.double())
    return arr.astype(cupy.float64)


def relative_error(xp, result, reference) -> float:
    """inputs.relative_error for arrays of any array module `xp` (NumPy or
    CuPy): ‖result − reference‖ / ‖reference‖ over the reference's finite
    values; inf where NaN or inf differ from the reference's."""
    r = result.astype(xp.float64)
    ref = reference.astype(xp.float64)
    if r.shape != ref.shape:
        return float("inf")
    ref_nan = xp.isnan(ref)
    if bool(xp.any(xp.isnan(r) != ref_nan)):
        return float("inf")
    if bool(xp.any(xp.isinf(ref) & (r != ref))):
        return float("inf")
    finite = ~ref_nan & xp.isfinite(ref)
    with np.errstate(invalid="ignore"):          # inf - inf where the reference is inf: masked
        diff = xp.where(finite, r - ref, 0.0)
    diff = xp.where(xp.isnan(diff), 0.0, diff)
    ref_f = xp.where(finite, ref, 0.0)
    d = float(xp.sqrt(xp.sum(diff * diff)))
    n = float(xp.sqrt(xp.sum(ref_f * ref_f)))
    if n == 0:
        return d
    return d / n


def corrupt(arr) -> None:
    """Fault injection: make a result wrong without making it NaN (every
    7th element scaled by 1.5 and shifted by one)."""
    if _is_torch(arr):
        flat = arr.view(-1)
        flat[::7] = flat[::7] * 1.5 + 1
        return
    flat = arr.reshape(-1)
    if arr.dtype.kind == "b":
        flat[::7] = ~flat[::7]
    else:
        flat[::7] = flat[::7] * 3 // 2 + 1 if arr.dtype.kind in "iu" else flat[::7] * 1.5 + 1
