"""The tuning database: the autotuner's winners, one JSON file per machine.

One record per (kernel, device, compute capability, dtypes, extents, group):

    {"kernel": "mm", "kernel_hash": "9f2c...", "device": "NVIDIA H200", "cc": "90",
     "dtypes": "f16,f16->f16", "extents": {"M": 4096, ...}, "bucket": {"M": 12, ...},
     "group": 0, "config": {...Schedule fields...}, "tag": "mm_tc_...", "seconds": ...}

The kernel is keyed by a hash of its checked IR text and the schedule directives
it gives (`Hints.given`: a directive added to the language later leaves the keys
of kernels that do not use it, and their records, as they were), not
by tiledsl's source hash: a record is only a hint, rebuilt with
`Schedule(**config)` and re-checked with `fits()` on every lookup, so editing
tiledsl (or its search space) keeps old records usable where they are still
valid and skips them where they are not; a stale but valid record can cost
speed, never correctness (every schedule the compiler accepts is correct).

Lookup (`TuningDB.lookup`): a record for the exact extents, else the nearest
shape bucket (each extent rounded to a power of two; distance = sum of the
bucket differences, at most MAX_BUCKET_DISTANCE), else None: the caller uses
the heuristic default. Nothing here ever tunes.

Writes lock a sidecar file (fcntl, where available), re-read and merge what
is on disk, and publish with os.replace: concurrent writers keep each other's
records and a reader never sees half a file. A damaged file is reported with a
warning and read as empty.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Iterable, Optional, Union

from ..errors import TdslError, TdslRuntimeError
from ..schedule.choose import fits
from ..schedule.problem import Problem
from ..schedule.schedules import Schedule
from .paths import ENV_VAR, default_db_path, resolve_db_path
from .space import config_label

__all__ = ["ENV_VAR", "default_db_path", "resolve_db_path", "TuningDB", "open_db", "tuned_schedule"]

FORMAT = "tiledsl-tuning-db-1"
MAX_BUCKET_DISTANCE = 2


# -- where it lives -------------------------------------------------------------

# -- keys -----------------------------------------------------------------------

def kernel_fingerprint(kernel) -> str:
    """sha256 of the kernel's checked IR text and its schedule hints."""
    cached = getattr(kernel, "_tuning_fingerprint", None)
    if cached is None:
        text = "\n".join(("tiledsl tuning key 2", kernel.ir_text(), kernel.hints.given))
        cached = hashlib.sha256(text.encode()).hexdigest()[:32]
        kernel._tuning_fingerprint = cached
    return cached


def dtypes_text(graph) -> str:
    """'f16,f16,f32->f16': every parameter's dtype, then every result's."""
    return (",".join(p.dtype.name for p in graph.params) + "->"
            + ",".join(r.dtype.name for r in graph.results))


def shape_bucket(extent: int) -> int:
    """The power of two nearest to `extent`, as its exponent (0 → -1)."""
    return -1 if extent <= 0 else int(round(math.log2(extent)))


def buckets(extents: dict) -> dict:
    return {d: shape_bucket(n) for d, n in sorted(extents.items())}


def bucket_distance(a: dict, b: dict) -> float:
    if set(a) != set(b):
        return math.inf
    return sum(abs(shape_bucket(a[d]) - shape_bucket(b[d])) for d in a)


def _log_distance(a: dict, b: dict) -> float:
    return sum(abs(math.log2(max(a[d], 1)) - math.log2(max(b[d], 1))) for d in a)


def record_key(r: dict) -> tuple:
    """What makes a record unique: one winner per kernel, device, dtypes, extents, partition
    and group."""
    return (r["kernel_hash"], r["device"], str(r["cc"]), r.get("dtypes", ""),
            tuple(sorted((str(d), int(n)) for d, n in r["extents"].items())), record_partition(r), int(r["group"]))


def record_partition(r: dict) -> str:
    """The partition whose group a record's schedule is for: "" the fused one (records
    written before other partitions were tuned have no field), "spread" or "columns"."""
    return str(r.get("partition", ""))


# -- schedules in and out -----------------------------------------------------------

def schedule_config(s: Schedule) -> dict:
    return dataclasses.asdict(s)


def schedule_from_config(config: dict) -> Optional[Schedule]:
    """The Schedule a record names, or None when its fields no longer exist or
    no longer make a valid schedule (the search space changed since)."""
    if not isinstance(config, dict):
        return None
    known = {f.name for f in dataclasses.fields(Schedule)}
    if set(config) - known:
        return None
    fields = {k: _tuples(v) for k, v in config.items()}
    try:
        return Schedule(**fields)
    except (TdslError, TypeError, ValueError):
        return None


def _tuples(value):
    """JSON arrays back to the tuples a frozen Schedule holds (at any depth)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def make_record(kernel, group: int, extents: dict, device: str, cc: str, schedule: Schedule,
                partition: str = "", **measured) -> dict:
    from .. import __version__
    from ..runtime.cache import tiledsl_source_hash
    extents = {d: int(n) for d, n in sorted(extents.items())}
    record = {"kernel": kernel.name, "kernel_hash": kernel_fingerprint(kernel), "device": device,
              "cc": str(cc), "dtypes": dtypes_text(kernel.graph), "extents": extents,
              "bucket": buckets(extents), "group": int(group), "config": schedule_config(schedule),
              "tag": config_label(schedule), "tiledsl": __version__, "source_hash": tiledsl_source_hash()[:16],
              "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if partition:
        record["partition"] = partition
    record.update(measured)
    return record


# -- the file ---------------------------------------------------------------------

class TuningDB:
    """One database file. Reads are cached by the file's (mtime, size, inode),
    so looking up a new call class costs a stat, not a parse."""

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = Path(path)
        self._stamp = None
        self._records: list = []
        self._index: dict = {}
        self._lock = threading.Lock()

    # reading
    def records(self) -> list[dict]:
        with self._lock:
            self._refresh()
            return list(self._records)

    def _refresh(self) -> None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._stamp, self._records, self._index = None, [], {}
            return
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self._stamp:
            return
        self._records = _read(self.path)
        self._stamp = stamp
        index: dict = {}
        for r in self._records:
            index.setdefault((r["kernel_hash"], r["device"], str(r["cc"]), record_partition(r), int(r["group"])),
                             []).append(r)
        self._index = index

    def lookup(self, kernel_hash: str, device: str, cc: str, group: int, extents: dict,
               p: Optional[Problem] = None, dtypes: Optional[str] = None, partition: str = ""
               ) -> Optional[tuple[Schedule, dict, str]]:
        """(schedule, record, 'exact' | 'nearest') or None, for group `group` of `partition`
        (launcher.partition_mode). With a problem `p`, records whose schedule no longer fits
        it are passed over."""
        with self._lock:
            self._refresh()
            found = list(self._index.get((kernel_hash, device, str(cc), partition, int(group)), ()))
        if dtypes is not None:
            found = [r for r in found if r.get("dtypes", dtypes) == dtypes]
        extents = {d: int(n) for d, n in extents.items()}
        ranked = sorted(
            (r for r in found if set(r["extents"]) == set(extents)),
            key=lambda r: (r["extents"] != extents, bucket_distance(r["extents"], extents),
                           _log_distance(r["extents"], extents), json.dumps(r["extents"], sort_keys=True)))
        for r in ranked:
            exact = r["extents"] == extents
            if not exact and bucket_distance(r["extents"], extents) > MAX_BUCKET_DISTANCE:
                break
            s = schedule_from_config(r.get("config"))
            if s is None or (p is not None and fits(p, s)):
                continue
            return s, r, "exact" if exact else "nearest"
        return None

    # writing
    def store(self, new: Iterable[dict]) -> None:
        """Add or replace records (by record_key), keeping everything another
        process wrote meanwhile. Raises TdslRuntimeError when the file cannot
        be written."""
        new = list(new)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _file_lock(self.path):
                merged = {record_key(r): r for r in _read(self.path, warn=False)}
                for r in new:
                    merged[record_key(r)] = r
                _write_atomic(self.path, [merged[k] for k in sorted(merged, key=repr)])
        except OSError as err:
            raise TdslRuntimeError(f"cannot write the tuning database {self.path}: "
                                   f"{err.strerror or err}") from None


def _valid_record(r) -> bool:
    try:
        record_key(r)
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    return isinstance(r.get("config"), dict)


def _read(path: Path, warn: bool = True) -> list[dict]:
    """The file's well-formed records; [] (with a warning) when it is damaged."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as err:
        if warn:
            warnings.warn(f"tiledsl: cannot read the tuning database {path} ({err}); "
                          f"treating it as empty", RuntimeWarning, stacklevel=3)
        return []
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("records"), list):
            raise ValueError("no 'records' list")
    except ValueError as err:
        if warn:
            warnings.warn(f"tiledsl: the tuning database {path} is damaged ({err}); treating it "
                          f"as empty (the next autotune rewrites it)", RuntimeWarning, stacklevel=3)
        return []
    return [r for r in data["records"] if isinstance(r, dict) and _valid_record(r)]


def _write_atomic(path: Path, records: list[dict]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"format": FORMAT, "records": records}, f, indent=1, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())      # the rename must not publish an unwritten file
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


@contextlib.contextmanager
def _file_lock(path: Path):
    """An exclusive lock on `path`.lock (a sidecar: the data file itself is
    replaced on every write, so a lock on it would not outlive the write)."""
    try:
        import fcntl
    except ImportError:        # no fcntl (Windows): last writer wins between processes
        yield
        return
    with open(str(path) + ".lock", "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


# -- what the launcher asks ----------------------------------------------------------

_OPEN: dict[Path, TuningDB] = {}
_OPEN_LOCK = threading.Lock()


def open_db(path: Union[str, os.PathLike]) -> TuningDB:
    """The process-wide TuningDB object of a file (its read cache is shared)."""
    path = Path(path)
    with _OPEN_LOCK:
        db = _OPEN.get(path)
        if db is None:
            db = _OPEN[path] = TuningDB(path)
        return db


def tuned_schedule(kernel, group: int, p: Problem, extents: dict, identity: tuple[str, str],
                   where=None, partition: str = "") -> Optional[tuple[Schedule, str]]:
    """(schedule, 'db exact' | 'db nearest') for group `group` of `partition` at these
    extents on the device `identity` = (name, compute capability), or None."""
    path = resolve_db_path(where)
    if path is None:
        return None
    device, cc = identity
    found = open_db(path).lookup(kernel_fingerprint(kernel), device, cc, group, extents, p,
                                 dtypes_text(kernel.graph), partition)
    if found is None:
        return None
    schedule, _, how = found
    return schedule, f"db {how}"
