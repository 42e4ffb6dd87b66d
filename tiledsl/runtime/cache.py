"""The compilation cache: NVRTC output kept in memory and on disk.

A kernel is compiled once per machine, not once per process: `compile_cached`
looks in a process-wide dict, then in a `DiskCache`, and only then runs NVRTC,
storing what it gets in both. The key hashes everything the output depends
on: the CUDA source, arch, options, the NVRTC version, and the tiledsl sources
themselves (`tiledsl_source_hash`), so upgrading or editing tiledsl, including
this file's entry format, never reads a stale binary.

The disk cache is best effort. It lives in `$TILEDSL_CACHE_DIR`, else the
platform's user cache folder; `TILEDSL_CACHE=0` turns it off. An I/O error
costs a warning (once) and a recompile, never an exception, and a damaged
entry is detected by its checksum and dropped.

Entry file format (`<root>/<key[:2]>/<key>`), integers little-endian:

    b"TDSLCACHE1"  10-byte magic
    u64            payload length
    32 bytes       sha256 of the payload
    payload

A compiled entry's payload is `u32 n` + n bytes of JSON metadata (the ptxas
resource report) + the cubin.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import struct
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional, Union

from tiledsl.resources import resource_dir
from tiledsl.runtime import toolchain
from tiledsl.runtime.toolchain import ResourceUsage

_PACKAGE = Path(__file__).resolve().parent.parent

MAGIC = b"TDSLCACHE1"
_HEADER = struct.Struct(f"<{len(MAGIC)}sQ32s")
_META_LEN = struct.Struct("<I")
# Keys become file names: keep them to characters that are safe everywhere.
_KEY_RE = re.compile(r"[0-9A-Za-z_-]{2,128}")


# --------------------------------------------------------------------------
# Keys

@lru_cache(maxsize=None)
def tiledsl_source_hash() -> str:
    """sha256 of the tiledsl package's *.py files, templates and grammar.

    Any change to the code that renders or compiles CUDA may change the
    binary, so all of it goes into every key. Relative paths are hashed along
    with contents so that renaming or moving a file changes the hash too.
    """
    h = hashlib.sha256()
    groups = [("tiledsl", _PACKAGE, "*.py")]
    for name in ("templates", "grammar"):
        try:
            groups.append((name, resource_dir(name), "*"))
        except FileNotFoundError:
            pass  # a broken install: the other parts still key the cache
    for label, root, pattern in groups:
        files = sorted((p.relative_to(root).as_posix(), p) for p in root.rglob(pattern)
                       if p.is_file() and "__pycache__" not in p.parts)
        for rel, path in files:
            _update(h, f"{label}/{rel}".encode())
            _update(h, path.read_bytes())
    return h.hexdigest()


def cache_key(*parts: Union[str, bytes]) -> str:
    """sha256 hex of `parts`; each is length-prefixed so ("ab", "c") != ("a", "bc")."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, str):
            part = part.encode()
        elif not isinstance(part, (bytes, bytearray, memoryview)):
            raise TypeError(f"cache_key: parts must be str or bytes, not {type(part).__name__}")
        _update(h, bytes(part))
    return h.hexdigest()


def _update(h, data: bytes) -> None:
    h.update(struct.pack("<Q", len(data)))
    h.update(data)


# --------------------------------------------------------------------------
# Where the cache lives

def _default_root() -> Path:
    env = os.environ.get("TILEDSL_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    home = Path.home()
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        return (Path(local) if local else home / "AppData" / "Local") / "tiledsl" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "tiledsl"
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG spec says to ignore a relative XDG_CACHE_HOME.
    base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".cache"
    return base / "tiledsl"


def cache_dir() -> Path:
    """The cache folder, created if missing; raises OSError if it cannot be.

    `$TILEDSL_CACHE_DIR`, else `$XDG_CACHE_HOME/tiledsl` or `~/.cache/tiledsl`
    (Linux), `~/Library/Caches/tiledsl` (macOS), `%LOCALAPPDATA%\\tiledsl\\Cache`
    (Windows). DiskCache turns the OSError into a warning.
    """
    root = _default_root()
    root.mkdir(parents=True, exist_ok=True)
    return root


def disk_cache_enabled() -> bool:
    return os.environ.get("TILEDSL_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


# --------------------------------------------------------------------------
# The disk cache

class DiskCache:
    """Checksummed files under `root` (default: cache_dir()), one per key.

    Writers publish with os.replace, which is atomic on one file system, so a
    concurrent reader sees the old or the new file whole, never a mix; the
    checksum covers what atomic rename cannot (a crash or power loss before the
    data reached the disk, a partial copy, bit rot). No operation raises on an
    I/O error: get() then misses and put() skips, with one warning per cache.
    """

    def __init__(self, root: Optional[Path] = None):
        self._given = Path(root) if root is not None else None
        self._root: Optional[Path] = None
        self._unusable = False
        self._warned = False

    @property
    def root(self) -> Path:
        return self._given if self._given is not None else _default_root()

    def get(self, key: str) -> Optional[bytes]:
        path = self._path(key)
        if path is None:
            return None
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._warn(f"cannot read {path} ({exc})")
            return None
        payload = _unwrap(blob)
        if payload is None:
            # Damaged: drop it so the next put() rewrites it. A writer may have
            # replaced it meanwhile, in which case we delete a good entry; that
            # only costs a recompile.
            try:
                os.unlink(path)
            except OSError:
                pass
        return payload

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        if path is None:
            return
        tmp = None
        try:
            path.parent.mkdir(exist_ok=True)
            # Same folder as the target, so os.replace stays a rename on one
            # file system; the dot prefix keeps it from ever being read as a key.
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(_HEADER.pack(MAGIC, len(data), hashlib.sha256(data).digest()))
                f.write(data)
            # No fsync: after a crash the checksum catches an unwritten file.
            os.replace(tmp, path)
            tmp = None
        except OSError as exc:
            self._warn(f"cannot write to {path.parent} ({exc}); the compiled code is "
                       f"kept in memory only")
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def _path(self, key: str) -> Optional[Path]:
        if not _KEY_RE.fullmatch(key):
            raise ValueError(f"DiskCache: bad key {key!r}")
        if self._unusable:
            return None
        if self._root is None:
            try:
                root = self.root
                root.mkdir(parents=True, exist_ok=True)
            except (OSError, RuntimeError) as exc:   # RuntimeError: no home dir
                self._unusable = True
                self._warn(f"cannot create the cache folder ({exc}); compiled code is "
                           f"kept in memory only (set TILEDSL_CACHE_DIR to choose "
                           f"another folder)")
                return None
            self._root = root
        return self._root / key[:2] / key

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(f"tiledsl cache: {message}", RuntimeWarning, stacklevel=3)


def _unwrap(blob: bytes) -> Optional[bytes]:
    """The payload of an entry file, or None if it is damaged or foreign."""
    if len(blob) < _HEADER.size:
        return None
    magic, length, digest = _HEADER.unpack_from(blob)
    payload = blob[_HEADER.size:]
    if magic != MAGIC or length != len(payload) or hashlib.sha256(payload).digest() != digest:
        return None
    return payload


# --------------------------------------------------------------------------
# Compiling through the cache

@dataclass(frozen=True)
class CachedBinary:
    cubin: bytes
    resources: dict[str, ResourceUsage]   # per kernel, as ptxas reported it
    key: str
    from_disk: bool   # read from the disk cache rather than compiled by this process


_lock = threading.Lock()                      # guards the two dicts below
_memory: dict[str, CachedBinary] = {}
_key_locks: dict[str, threading.Lock] = {}    # one compile per key at a time
_disks: dict[Path, DiskCache] = {}            # one per root: one warning per root


def compile_cached(source: str, arch: str, options: tuple[str, ...] = (),
                   include_dirs: tuple[str, ...] = ()) -> CachedBinary:
    """The cubin and resource report for `source`, compiled at most once.

    Headers under `include_dirs` are not hashed, only the folders' names: the
    ones tiledsl includes are its templates, already in tiledsl_source_hash().
    """
    options, include_dirs = tuple(options), tuple(include_dirs)
    major, minor = toolchain.nvrtc_version()
    key = cache_key("cubin", tiledsl_source_hash(), f"nvrtc {major}.{minor}", arch,
                    json.dumps(options), json.dumps(include_dirs), source)
    return _get_or_build(key, lambda: toolchain.compile_cuda(
        source, arch=arch, options=options, include_dirs=include_dirs, want="cubin"))


def cached_kernel(key_parts: tuple[str, ...], make_source, arch: str) -> CachedBinary:
    """A kernel found by what determines its source, not by the source itself.

    `key_parts` (the kernel's IR and schedule) plus tiledsl's own source hash
    fix the rendered text, so a warm cache hit renders nothing and never loads
    NVRTC: `make_source()` runs only on a miss.
    """
    key = kernel_key(key_parts, arch)
    return _get_or_build(key, lambda: toolchain.compile_cuda(make_source(), arch=arch, want="cubin"))


def kernel_key(key_parts: tuple[str, ...], arch: str) -> str:
    """The cache key `cached_kernel` files a kernel under."""
    return cache_key("kernel", tiledsl_source_hash(), arch, *key_parts)


def find_kernel(key_parts: tuple[str, ...], arch: str) -> Optional[CachedBinary]:
    """What `cached_kernel` would return without compiling: from memory or
    disk, else None (the autotuner compiles the misses in worker processes)."""
    return _cached(kernel_key(key_parts, arch))


def _cached(key: str) -> Optional[CachedBinary]:
    """The entry under `key` from memory, else from disk (then kept in memory)."""
    with _lock:
        hit = _memory.get(key)
    if hit is not None:
        return hit
    disk = _disk()
    entry = _decode(disk.get(key), key) if disk is not None else None
    if entry is not None:
        with _lock:
            entry = _memory.setdefault(key, entry)
    return entry


def store_kernel(key_parts: tuple[str, ...], arch: str, cubin: bytes,
                 resources: dict[str, ResourceUsage]) -> CachedBinary:
    """File a kernel compiled elsewhere (a worker process) under the key
    `cached_kernel` looks up, in memory and on disk, so launches load it as is."""
    return _file(kernel_key(key_parts, arch), cubin, resources)


def _file(key: str, cubin: bytes, resources: dict) -> CachedBinary:
    """A freshly compiled kernel, kept on disk and in memory under `key`."""
    entry = CachedBinary(cubin=bytes(cubin), resources=dict(resources), key=key, from_disk=False)
    disk = _disk()
    if disk is not None:
        disk.put(key, _encode(entry))
    with _lock:
        _memory[key] = entry
    return entry


def _get_or_build(key: str, build) -> CachedBinary:
    with _lock:
        hit = _memory.get(key)
        if hit is not None:
            return hit
        key_lock = _key_locks.setdefault(key, threading.Lock())
    # Only this key waits: another thread compiling it fills _memory for us.
    with key_lock:
        entry = _cached(key)
        if entry is not None:
            return entry
        compiled = build()
        return _file(key, compiled.cubin, compiled.resources)


def compile_cubin(source: str, arch: str, options: tuple[str, ...] = (),
                  include_dirs: tuple[str, ...] = ()) -> bytes:
    return compile_cached(source, arch, options, include_dirs).cubin


def _disk() -> Optional[DiskCache]:
    if not disk_cache_enabled():
        return None
    try:
        root = _default_root()
    except RuntimeError:   # no home folder: DiskCache() warns about it
        return DiskCache()
    with _lock:
        return _disks.setdefault(root, DiskCache(root))


def _encode(entry: CachedBinary) -> bytes:
    meta = json.dumps({"resources": {name: dataclasses.asdict(usage)
                                     for name, usage in entry.resources.items()}}).encode()
    return _META_LEN.pack(len(meta)) + meta + entry.cubin


def _decode(payload: Optional[bytes], key: str) -> Optional[CachedBinary]:
    if payload is None:
        return None
    try:
        (n,) = _META_LEN.unpack_from(payload)
        meta = json.loads(payload[_META_LEN.size:_META_LEN.size + n])
        resources = {name: ResourceUsage(**usage) for name, usage in meta["resources"].items()}
        cubin = payload[_META_LEN.size + n:]
    except (struct.error, ValueError, KeyError, TypeError):
        return None   # checksummed but not ours: recompile and overwrite
    if not cubin:
        return None
    return CachedBinary(cubin=cubin, resources=resources, key=key, from_disk=True)


def _clear_memory_cache() -> None:
    """Forget what this process compiled or read (for tests)."""
    with _lock:
        _memory.clear()
        _key_locks.clear()
        _disks.clear()
