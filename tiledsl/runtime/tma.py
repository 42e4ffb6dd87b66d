"""Tensor maps for the tensor memory accelerator (TMA, sm_90): the driver encodes
a 128-byte descriptor of a global array (address, extents, row pitch) and of the
box one copy moves into shared memory; a kernel takes it as a __grid_constant__
parameter (`tdsl::TmaMap`).

A map holds its array's address, so it is made for each new pointer: through
libcuda's cuTensorMapEncodeTiled (ctypes; CuPy does not wrap it), kept per call
class by pointer (`MapCache`): a map describes only memory, so one made for an
address stays right for any array later allocated there with the same extents.
"""
from __future__ import annotations

import ctypes
from typing import Optional

from ..codegen.params import MapSpec
from ..errors import TdslRuntimeError

# CUtensorMapDataType, CUtensorMapSwizzle, CUtensorMapL2promotion (cuda.h)
# f32 as TFLOAT32: wgmma reads it as TF32; u16, u32: results stored as they are
DATA_TYPES = {"f16": 6, "bf16": 9, "f32": 11, "u16": 1, "u32": 2}
SWIZZLE_128B = 3
L2_PROMOTE = 2      # 128 bytes: 256 measured slower at 4096^3, 3000^3, 1000^3 (H200)


def map_room(count: int = 1) -> tuple:
    """Room for `count` maps of 128 bytes, 64-byte aligned as the driver wants them:
    (the buffer, to keep alive, and the first map's address)."""
    room = ctypes.create_string_buffer(128 * count + 64)
    return room, (ctypes.addressof(room) + 63) & ~63


class TensorMap:
    """One encoded map; `address` is where its 128 bytes are (64-byte aligned)."""
    __slots__ = ("_buffer", "address")

    def __init__(self, encoded: bytes):
        self._buffer, self.address = map_room()
        ctypes.memmove(self.address, encoded, 128)


_encode_function = None


def _driver_encode():
    global _encode_function
    if _encode_function is None:
        try:
            fn = ctypes.CDLL("libcuda.so.1").cuTensorMapEncodeTiled
        except (OSError, AttributeError) as e:
            raise TdslRuntimeError(f"this CUDA driver does not encode tensor maps (cuTensorMapEncodeTiled): {e}")
        fn.restype = ctypes.c_int
        _encode_function = fn
    return _encode_function


def encode(ptr: int, spec: MapSpec, encoder=None) -> bytes:
    """The 128 bytes of the map of `spec` at address `ptr`: 128-byte swizzle (the
    layout wgmma reads), out-of-bounds elements read as zeros."""
    encoder = encoder or _driver_encode()
    out, at = map_room()
    rank = len(spec.dims)
    err = encoder(ctypes.c_void_p(at), ctypes.c_int(DATA_TYPES[spec.dtype]), ctypes.c_uint32(rank),
                  ctypes.c_void_p(ptr), (ctypes.c_uint64 * rank)(*spec.dims),
                  (ctypes.c_uint64 * (rank - 1))(*spec.strides), (ctypes.c_uint32 * rank)(*spec.box),
                  (ctypes.c_uint32 * rank)(*([1] * rank)), ctypes.c_int(0), ctypes.c_int(SWIZZLE_128B),
                  ctypes.c_int(L2_PROMOTE), ctypes.c_int(0))
    if err:
        raise TdslRuntimeError(f"the driver refused a tensor map of {spec} at {ptr:#x} (CUresult {err})")
    return ctypes.string_at(at, 128)


def _address_word(blob: bytes) -> int:
    return int.from_bytes(blob[:8], "little")


class MapCache:
    """Maps of one spec by pointer: `addresses[ptr]` is the address of the map made
    for `ptr`, `address(ptr)` makes it on a pointer's first call.

    Encoding takes the driver about 10 us (H100, through ctypes). The driver keeps
    the array's address in the map's first 8 bytes and nothing else depends on it;
    that is checked on the first map (a second one, 16 bytes on, must differ only
    there), and then `template` holds the map's other bytes: a new pointer's map is
    those with its address in front, and a warm call writes the address into its
    own copy of the template (launcher._ParamBlocks) with no map made at all. Where
    the check fails, `template` stays None and every new pointer is encoded.

    Bounded: past `limit` pointers it starts again, keeping the maps it drops alive
    until the next time (a thread may have read an address just before: the driver
    copies a launch's parameters when the launch is issued, microseconds later)."""

    def __init__(self, spec: MapSpec, limit: int = 1024, encoder=None):
        self.spec, self.limit, self._encoder = spec, limit, encoder
        self.addresses: dict[int, int] = {}
        self.template: Optional[bytes] = None
        self._checked = False
        self._maps: dict[int, TensorMap] = {}
        self._retired: dict[int, TensorMap] = {}

    def map_bytes(self, ptr: int) -> bytes:
        if self.template is not None:
            return ptr.to_bytes(8, "little") + self.template[8:]
        blob = encode(ptr, self.spec, self._encoder)
        if not self._checked:
            self._checked = True
            other = encode(ptr + 16, self.spec, self._encoder)
            if (_address_word(blob), _address_word(other)) == (ptr, ptr + 16) and blob[8:] == other[8:]:
                self.template = blob
        return blob

    def address(self, ptr: int) -> int:
        found = self.addresses.get(ptr)
        if found is not None:
            return found
        if len(self._maps) >= self.limit:
            self._retired, self._maps = self._maps, {}
            self.addresses.clear()
        m = self._maps[ptr] = TensorMap(self.map_bytes(ptr))
        self.addresses[ptr] = m.address
        return m.address


class ResultMapCache(MapCache):
    """Maps of a result a kernel stores by TMA (codegen.tma_stored_result) where it
    can: a 16-byte aligned pointer and rows a multiple of 16 bytes, which the kernel
    checks itself before it reads the map. Elsewhere its threads store the result,
    and the map's slot holds zeros (the driver would refuse to encode it)."""

    def __init__(self, spec: MapSpec, limit: int = 1024, encoder=None):
        super().__init__(spec, limit, encoder)
        self.storable = spec.row_bytes % 16 == 0
        if not self.storable:
            self.template, self._checked = bytes(128), True

    def map_bytes(self, ptr: int) -> bytes:
        if not self.storable or ptr % 16:
            return bytes(128)
        return super().map_bytes(ptr)
