"""Device arrays from CuPy, PyTorch, __cuda_array_interface__ or DLPack, as one view.

The launcher needs only a pointer, shape, element strides, dtype and device;
reading those straight off each kind of array avoids a conversion per call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..dtypes import DType, DTYPES, from_numpy
from ..errors import TdslRuntimeError

_TYPESTR = {"<f2": "f16", "<f4": "f32", "<f8": "f64", "|b1": "bool", "|i1": "i8", "<i2": "i16",
            "<i4": "i32", "<i8": "i64", "|u1": "u8", "<u4": "u32"}
_TORCH = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "bool": "bool",
          "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint32": "u32"}


@dataclass
class DeviceArray:
    ptr: int
    shape: tuple
    strides: tuple          # in elements
    dtype: Optional[DType]
    device: int
    owner: Any              # keeps the memory alive; what a result is made from

    @property
    def contiguous(self) -> bool:
        expected = 1
        for extent, stride in zip(reversed(self.shape), reversed(self.strides)):
            if extent != 1 and stride != expected:
                return False
            expected *= extent
        return True

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


def need_cupy():
    """The cupy module, or the error that says how to get it."""
    try:
        import cupy
    except ImportError:
        raise TdslRuntimeError("running a kernel on the GPU needs CuPy: pip install tiledsl[cuda13] "
                               "(or [cuda12]); without a GPU use kernel.reference(...)") from None
    return cupy


def _cupy_view(a) -> DeviceArray:
    itemsize = a.itemsize
    mem = a.data
    return DeviceArray(mem.ptr, a.shape, tuple(s // itemsize for s in a.strides),
                       from_numpy(a.dtype), mem.device_id, a)


def _torch_view(t) -> DeviceArray:
    if t.device.type != "cuda":
        return None
    dtype = DTYPES.get(_TORCH.get(str(t.dtype).replace("torch.", ""), ""))
    return DeviceArray(t.data_ptr(), tuple(t.shape), tuple(t.stride()), dtype, t.device.index, t)


def _cai_view(obj) -> DeviceArray:
    cai = obj.__cuda_array_interface__
    shape = tuple(cai["shape"])
    dtype = DTYPES.get(_TYPESTR.get(cai["typestr"], ""))
    itemsize = int(cai["typestr"][2:])
    strides = cai.get("strides")
    if strides is None:
        strides, acc = [], 1
        for extent in reversed(shape):
            strides.append(acc)
            acc *= extent
        strides = tuple(reversed(strides))
    else:
        strides = tuple(s // itemsize for s in strides)
    ptr = cai["data"][0]
    cupy = need_cupy()
    device = cupy.cuda.runtime.pointerGetAttributes(ptr).device if ptr else cupy.cuda.runtime.getDevice()
    return DeviceArray(ptr, shape, strides, dtype, device, obj)


def torch_with_cuda():
    """The torch module when it imports and has a CUDA device, else None (no error:
    torch is optional everywhere it is used)."""
    try:
        import torch
    except Exception:  # noqa: BLE001 - a broken torch install is the same as none
        return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001
        return None


def dtype_of(array) -> Optional[DType]:
    """The language's dtype of a NumPy, CuPy or torch array, or of an object with only a
    __cuda_array_interface__ (None: none of ours)."""
    dtype = getattr(array, "dtype", None)
    if dtype is None:
        cai = getattr(array, "__cuda_array_interface__", None)
        return DTYPES.get(_TYPESTR.get(cai.get("typestr", ""), "")) if isinstance(cai, dict) else None
    if type(dtype).__module__.startswith("torch"):
        return DTYPES.get(_TORCH.get(str(dtype).replace("torch.", ""), ""))
    return from_numpy(dtype)


def device_view(obj) -> Optional[DeviceArray]:
    """The device view of `obj`, or None when it is not a GPU array."""
    cupy = need_cupy()
    if isinstance(obj, cupy.ndarray):
        return _cupy_view(obj)
    module = type(obj).__module__
    if module.startswith("torch"):
        return _torch_view(obj)
    if hasattr(obj, "__cuda_array_interface__"):
        return _cai_view(obj)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        device_type, _ = obj.__dlpack_device__()
        if device_type in (2, 3, 13):   # kDLCUDA, kDLCUDAHost, kDLCUDAManaged
            return _cupy_view(cupy.from_dlpack(obj))
    return None


def describe(obj) -> str:
    import numpy as np
    if isinstance(obj, np.ndarray):
        return "a NumPy array (host memory)"
    return f"{type(obj).__module__}.{type(obj).__name__}"


def contiguous_copy(view: DeviceArray) -> DeviceArray:
    """A dense row-major copy of a strided view (the kernels read dense operands)."""
    owner = view.owner
    if type(owner).__module__.startswith("torch"):
        return _torch_view(owner.contiguous())
    cupy = need_cupy()
    if not isinstance(owner, cupy.ndarray):
        owner = cupy.asarray(owner)
    return _cupy_view(cupy.ascontiguousarray(owner))
