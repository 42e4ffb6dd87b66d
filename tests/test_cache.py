"""The compilation cache: entry files, damage detection, concurrency, compile_cached."""
import multiprocessing
import os
import re
import sys
import warnings
from pathlib import Path

import pytest

from tiledsl.runtime import cache
from tiledsl.runtime.cache import DiskCache, cache_key

KERNEL = r'extern "C" __global__ void k(float* x){ x[threadIdx.x] *= 2.0f; }'


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own cache folder and an empty in-memory cache."""
    root = tmp_path / "cache"
    monkeypatch.setenv("TILEDSL_CACHE_DIR", str(root))
    monkeypatch.delenv("TILEDSL_CACHE", raising=False)
    cache._clear_memory_cache()
    yield root
    cache._clear_memory_cache()


def entry_file(root: Path, key: str) -> Path:
    return root / key[:2] / key


# ---------------------------------------------------------------- keys, dirs

def test_source_hash_is_stable_hex():
    h = cache.tiledsl_source_hash()
    assert re.fullmatch(r"[0-9a-f]{64}", h)
    cache.tiledsl_source_hash.cache_clear()   # recomputed from the files: same
    assert cache.tiledsl_source_hash() == h


def test_cache_key_is_unambiguous():
    assert re.fullmatch(r"[0-9a-f]{64}", cache_key("a"))
    assert cache_key("ab", "c") != cache_key("a", "bc")
    assert cache_key("a", "") != cache_key("a")
    assert cache_key("x", b"y") == cache_key(b"x", "y")
    with pytest.raises(TypeError):
        cache_key(1)


def test_cache_dir_env_and_platform_defaults(tmp_path, monkeypatch, isolated_cache):
    assert cache.cache_dir() == isolated_cache and isolated_cache.is_dir()
    monkeypatch.delenv("TILEDSL_CACHE_DIR")
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "tiledsl"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache._default_root() == Path.home() / ".cache" / "tiledsl"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert cache._default_root() == Path.home() / "Library" / "Caches" / "tiledsl"
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "local"))
    assert cache._default_root() == tmp_path / "local" / "tiledsl" / "Cache"


# ---------------------------------------------------------------- DiskCache

def test_round_trip_and_fresh_instance_reads_disk(isolated_cache):
    key = cache_key("round trip")
    assert DiskCache().get(key) is None
    DiskCache().put(key, b"payload \x00\xff")
    assert entry_file(isolated_cache, key).is_file()
    assert DiskCache().get(key) == b"payload \x00\xff"   # a new object: read from disk
    DiskCache(isolated_cache).put(key, b"")              # empty payloads are fine too
    assert DiskCache(isolated_cache).get(key) == b""
    assert [p.name for p in entry_file(isolated_cache, key).parent.iterdir()] == [key]


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "bad magic"])
def test_damaged_entry_is_a_miss_and_removed(isolated_cache, damage):
    key = cache_key(damage)
    data = os.urandom(1000)
    DiskCache().put(key, data)
    path = entry_file(isolated_cache, key)
    blob = bytearray(path.read_bytes())
    if damage == "truncate":
        blob = blob[:-10]
    elif damage == "flip":
        blob[-500] ^= 0x01
    elif damage == "garbage":
        blob = bytearray(b"not a cache entry at all" * 10)
    elif damage == "empty":
        blob = bytearray()
    else:
        blob[0:10] = b"TDSLCACHE9"
    path.write_bytes(blob)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # damage is not worth a warning
        assert DiskCache().get(key) is None
    assert not path.exists()
    DiskCache().put(key, data)               # and the entry can be rewritten
    assert DiskCache().get(key) == data


def test_bad_keys_are_rejected():
    for key in ("../x", "a/b", "", "x"):
        with pytest.raises(ValueError):
            DiskCache().get(key)


def _hammer(root: str, key: str, me: int, payloads: list, rounds: int):
    """Write my payload `rounds` times, reading after each write; return bad reads."""
    disk = DiskCache(Path(root))
    bad = []
    for _ in range(rounds):
        disk.put(key, payloads[me])
        for _ in range(2):
            got = disk.get(key)
            if got is not None and got not in payloads:
                bad.append(len(got))
    return bad


def test_concurrent_writers_and_readers(isolated_cache):
    key = cache_key("contended")
    # Big enough that a torn write would be likely to be seen if there were one.
    payloads = [bytes([i]) * (64 * 1024 + i) for i in range(8)]
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(8) as pool:
        results = pool.starmap(_hammer, [(str(isolated_cache), key, i, payloads, 50)
                                         for i in range(8)])
    assert results == [[]] * 8
    assert DiskCache(isolated_cache).get(key) in payloads
    leftovers = [p.name for p in entry_file(isolated_cache, key).parent.iterdir()]
    assert leftovers == [key]   # no temp files left behind


def test_unwritable_cache_dir_degrades_with_one_warning(tmp_path, monkeypatch):
    # Running as root makes chmod useless, so make mkdir fail instead: the
    # cache folder would be under a regular file.
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("TILEDSL_CACHE_DIR", str(blocker / "cache"))
    disk = DiskCache()
    with pytest.warns(RuntimeWarning, match="memory only") as caught:
        assert disk.get(cache_key("x")) is None
        disk.put(cache_key("x"), b"data")
        assert disk.get(cache_key("x")) is None
        disk.put(cache_key("y"), b"data")
    assert len(caught) == 1
    with pytest.raises(OSError):
        cache.cache_dir()


def test_put_failure_is_skipped_with_one_warning(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    key = cache_key("k")
    (root / key[:2]).write_text("")   # the shard folder's name is taken by a file
    disk = DiskCache(root)
    with pytest.warns(RuntimeWarning) as caught:
        disk.put(key, b"1")
        disk.put(key, b"2")
    assert len(caught) == 1
    assert disk.get(key) is None


# ---------------------------------------------------------------- compile_cached

@pytest.fixture
def nvrtc():
    pytest.importorskip("cuda.bindings")
    from tiledsl.runtime import toolchain
    if not toolchain.available():
        pytest.skip("NVRTC cannot be loaded")
    return toolchain


@pytest.fixture
def count_compiles(nvrtc, monkeypatch):
    calls = []
    real = nvrtc.compile_cuda

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)
    monkeypatch.setattr(nvrtc, "compile_cuda", counting)
    return calls


def test_compile_cached_memory_then_disk(count_compiles, isolated_cache):
    first = cache.compile_cached(KERNEL, "sm_90a")
    assert not first.from_disk and first.cubin.startswith(b"\x7fELF")
    assert first.resources["k"].registers > 0
    assert entry_file(isolated_cache, first.key).is_file()

    again = cache.compile_cached(KERNEL, "sm_90a")
    assert again is first and len(count_compiles) == 1     # from memory

    cache._clear_memory_cache()
    from_disk = cache.compile_cached(KERNEL, "sm_90a")
    assert from_disk.from_disk and len(count_compiles) == 1
    assert from_disk.cubin == first.cubin
    assert from_disk.resources == first.resources and from_disk.key == first.key
    assert cache.compile_cubin(KERNEL, "sm_90a") == first.cubin

    changed = cache.compile_cached(KERNEL.replace("2.0f", "3.0f"), "sm_90a")
    assert changed.key != first.key and len(count_compiles) == 2


def test_key_covers_arch_and_options(count_compiles):
    base = cache.compile_cached(KERNEL, "sm_90a")
    variants = [cache.compile_cached(KERNEL, "sm_80"),
                cache.compile_cached(KERNEL, "sm_90a", options=("-lineinfo",)),
                cache.compile_cached(KERNEL, "sm_90a", include_dirs=("/nowhere",))]
    assert len({base.key, *(v.key for v in variants)}) == 4


def test_cache_off_keeps_disk_untouched(count_compiles, isolated_cache, monkeypatch):
    monkeypatch.setenv("TILEDSL_CACHE", "0")
    first = cache.compile_cached(KERNEL, "sm_90a")
    assert not isolated_cache.exists()
    cache._clear_memory_cache()
    assert not cache.compile_cached(KERNEL, "sm_90a").from_disk
    assert len(count_compiles) == 2 and first.key


def test_compile_cached_survives_unusable_dir(count_compiles, tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("TILEDSL_CACHE_DIR", str(blocker / "cache"))
    with pytest.warns(RuntimeWarning, match="memory only") as caught:
        a = cache.compile_cached(KERNEL, "sm_90a")
        b = cache.compile_cached(KERNEL.replace("2.0f", "4.0f"), "sm_90a")
    assert len(caught) == 1 and a.cubin and b.cubin
    assert cache.compile_cached(KERNEL, "sm_90a") is a


def test_damaged_compiled_payload_recompiles(count_compiles, isolated_cache):
    first = cache.compile_cached(KERNEL, "sm_90a")
    # A checksummed entry whose payload is not a compiled entry is a miss.
    DiskCache().put(first.key, b"\xff\xff\xff\xff{}")
    cache._clear_memory_cache()
    again = cache.compile_cached(KERNEL, "sm_90a")
    assert not again.from_disk and again.cubin == first.cubin and len(count_compiles) == 2
