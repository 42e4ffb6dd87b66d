"""Shared benchmark machinery: CUDA-event timing, L2-proof input rotation, copy
bandwidth, the result table, launch overhead and compile time.

Importable without a GPU: CuPy, torch and Triton are imported inside functions.
Everything here runs on CuPy's current stream (the legacy default stream
unless the caller changes it); torch and Triton launch on torch's current
stream, which is the same legacy default stream in a default setup, so CUDA
events recorded by CuPy bracket their work too (checked by `streams_note`).
"""
from __future__ import annotations

import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

MIN_L2_BYTES = 60 << 20          # assume at least 60 MB of L2 when sizing input rotation
FLUSH_BYTES = 256 << 20          # the L2 flush buffer


def ensure_repo_on_path() -> None:
    """Let `python benchmarks/bench_memory.py` import tiledsl from this checkout."""
    root = str(ROOT)
    if root not in sys.path:
        sys.path.insert(0, root)


# ---- what is installed ---------------------------------------------------------------


def import_cupy():
    import cupy
    return cupy


def optional_torch():
    """torch when it imports and has CUDA, else None."""
    from tiledsl.runtime.arrays import torch_with_cuda
    return torch_with_cuda()


def _version(module: str) -> str:
    try:
        mod = __import__(module)
        return str(getattr(mod, "__version__", "?"))
    except Exception as err:  # noqa: BLE001
        return f"not available ({type(err).__name__})"


def versions() -> dict:
    cupy = import_cupy()
    out = {"python": platform.python_version(), "numpy": _version("numpy"),
           "cupy": cupy.__version__, "torch": _version("torch"), "triton": _version("triton")}
    try:
        ensure_repo_on_path()
        import tiledsl
        out["tiledsl"] = tiledsl.__version__
    except Exception as err:  # noqa: BLE001
        out["tiledsl"] = f"not importable ({err})"
    try:
        rt = cupy.cuda.runtime
        out["cuda_runtime"] = _cuda_version_text(rt.runtimeGetVersion())
        out["cuda_driver"] = _cuda_version_text(rt.driverGetVersion())
    except Exception:  # noqa: BLE001
        pass
    return out


def _cuda_version_text(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def device_info() -> dict:
    cupy = import_cupy()
    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props.get("name", b"?")
    name = name.decode() if isinstance(name, bytes) else str(name)
    info = {"id": int(dev.id), "name": name, "sm_count": int(props.get("multiProcessorCount", 0)),
            "l2_bytes": int(props.get("l2CacheSize", 0)),
            "memory_bytes": int(props.get("totalGlobalMem", 0)),
            "compute_capability": f"{props.get('major', '?')}.{props.get('minor', '?')}"}
    clock_khz, bus_bits = props.get("memoryClockRate"), props.get("memoryBusWidth")
    if clock_khz and bus_bits:       # removed from cudaDeviceProp in CUDA 13; optional
        info["peak_dram_gbps"] = 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9
    return info


def now_text() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def streams_note() -> str:
    """Whether torch's current stream is CuPy's (so CuPy's events time torch/Triton work)."""
    cupy = import_cupy()
    torch = optional_torch()
    if torch is None:
        return "torch not available"
    t = int(torch.cuda.current_stream().cuda_stream)
    c = int(cupy.cuda.get_current_stream().ptr)
    if t == c or (t == 0 and c in (0, 1)) or (c == 0 and t in (0, 1)):
        return "torch and CuPy share the default stream"
    return (f"WARNING: torch stream {t:#x} is not CuPy's {c:#x}: CuPy's events do not bracket "
            f"torch/Triton work, so their times are not reliable")


def synchronize() -> None:
    cupy = import_cupy()
    cupy.cuda.Device().synchronize()


def host_us_per_call(fn: Callable[[], Any], calls: int) -> float:
    """Wall microseconds a call of fn() over `calls` calls issued back to back (after one
    more, untimed), the launch queue drained before and after: the host's cost a call where
    the GPU keeps up, else the GPU's."""
    fn()
    synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def best_host_us(lines: list, calls: int, rounds: int) -> dict:
    """label -> the best of `rounds` host_us_per_call(fn, calls) of each (label, fn) of
    `lines`, the rounds going round-robin over the lines: a slow stretch of the host costs
    every line a round, not one line its result."""
    best = {label: float("inf") for label, _ in lines}
    for _ in range(rounds):
        for label, fn in lines:
            best[label] = min(best[label], host_us_per_call(fn, calls))
    return best


def free_pools() -> None:
    cupy = import_cupy()
    synchronize()
    cupy.get_default_memory_pool().free_all_blocks()
    torch = optional_torch()
    if torch is not None:
        torch.cuda.empty_cache()


# ---- timing --------------------------------------------------------------------------


@dataclass
class Timing:
    median_us: float
    min_us: float
    max_us: float
    repeats: int
    samples_us: list = field(default_factory=list, repr=False)


class L2Flusher:
    """Writes a 256 MB buffer (more than any current L2) so the next kernel starts cold."""

    def __init__(self, nbytes: int = FLUSH_BYTES):
        cupy = import_cupy()
        self.buf = cupy.empty(nbytes, dtype=cupy.uint8)
        self.i = 0

    def __call__(self) -> None:
        self.i += 1
        self.buf.fill(self.i & 0xFF)


def input_sets_needed(bytes_per_set: int, l2_bytes: int = 0, *, min_sets: int = 2,
                      budget_bytes: int = 8 << 30) -> int:
    """How many distinct input sets to rotate through so that consecutive runs never
    find their inputs in L2: together they exceed 3x the L2 (at least 3x 60 MB)."""
    target = 3 * max(l2_bytes, MIN_L2_BYTES)
    n = max(min_sets, math.ceil(target / max(1, bytes_per_set)))
    cap = max(1, budget_bytes // max(1, bytes_per_set))
    return int(max(1, min(n, cap, 64)))


def time_cuda(fn: Callable[[int], Any], *, n_sets: int = 1, warmup: int = 3, repeats: int = 20,
              flush: Optional[Callable[[], None]] = None, warmup_ms: float = 0.0) -> Timing:
    """Median of `repeats` timings of fn(i) with CUDA events on the current stream.

    fn(i) enqueues one run on input set i % n_sets (rotation keeps inputs out of L2);
    `flush`, when given, runs before each timed run (not timed: it is queued before the
    start event). Events are recorded on CuPy's current stream; work that fn queues on
    another stream is not covered (see streams_note). The warm-up is `warmup` runs and,
    with `warmup_ms`, more until that much wall time has passed: a GPU that idled while
    the host prepared inputs takes milliseconds to raise its clocks again, and a few
    short runs leave the first implementation timed at the lower clock (H100 softmax
    f32 32768x781: 84.6 us against 72.9 warm).
    """
    cupy = import_cupy()
    for i in range(warmup):
        fn(i % n_sets)
    synchronize()
    t0, i = time.perf_counter(), warmup
    while (time.perf_counter() - t0) * 1e3 < warmup_ms:
        for _ in range(8):
            fn(i % n_sets)
            i += 1
        synchronize()
    starts = [cupy.cuda.Event() for _ in range(repeats)]
    ends = [cupy.cuda.Event() for _ in range(repeats)]
    for r in range(repeats):
        if flush is not None:
            flush()
        starts[r].record()
        fn((warmup + r) % n_sets)
        ends[r].record()
    ends[-1].synchronize()
    samples = [cupy.cuda.get_elapsed_time(s, e) * 1e3 for s, e in zip(starts, ends)]
    return Timing(statistics.median(samples), min(samples), max(samples), repeats, samples)


def copy_bandwidth(nbytes: int = 1 << 30, repeats: int = 10, warmup: int = 2, *, rotate: bool = False,
                   warmup_ms: float = 0.0) -> dict:
    """Device-to-device copy bandwidth, (bytes read + bytes written) / time, of a
    cudaMemcpyAsync and of CuPy's elementwise copy kernel; `gbps` is the better one.
    With `rotate`, copies rotate among buffer pairs as the benchmarks' inputs do, so
    a copy smaller than the L2 is not served from it."""
    cupy = import_cupy()
    n = nbytes // 4
    n_sets = input_sets_needed(2 * n * 4) if rotate else 1
    pairs = [(cupy.arange(n, dtype=cupy.float32), cupy.empty(n, dtype=cupy.float32)) for _ in range(n_sets)]
    size = pairs[0][0].nbytes

    def memcpy(i):
        a, b = pairs[i]
        b.data.copy_from_device_async(a.data, size)

    def kernel(i):
        a, b = pairs[i]
        cupy.copyto(b, a)

    t_memcpy = time_cuda(memcpy, n_sets=n_sets, warmup=warmup, repeats=repeats, warmup_ms=warmup_ms)
    t_kernel = time_cuda(kernel, n_sets=n_sets, warmup=warmup, repeats=repeats, warmup_ms=warmup_ms)
    gbps_memcpy = 2 * size / (t_memcpy.median_us * 1e-6) / 1e9
    gbps_kernel = 2 * size / (t_kernel.median_us * 1e-6) / 1e9
    del pairs
    free_pools()
    return {"bytes": int(size), "memcpy_us": t_memcpy.median_us, "memcpy_gbps": gbps_memcpy,
            "copy_kernel_us": t_kernel.median_us, "copy_kernel_gbps": gbps_kernel,
            "gbps": max(gbps_memcpy, gbps_kernel)}


def nbytes_of(*arrays) -> int:
    """Bytes of the array arguments (scalars count 0): inputs read once, outputs written once."""
    total = 0
    for a in arrays:
        if a is None or isinstance(a, (int, float, bool)):
            continue
        if hasattr(a, "nbytes"):
            total += int(a.nbytes)
        elif hasattr(a, "element_size"):          # torch
            total += int(a.numel() * a.element_size())
    return total


# ---- the table -----------------------------------------------------------------------


@dataclass
class Row:
    workload: str
    shape: str
    dtype: str
    impl: str
    time_us: Optional[float] = None
    bytes: int = 0
    rel_err: Optional[float] = None
    note: str = ""
    gbps: Optional[float] = None
    vs_copy: Optional[float] = None
    vs_best_peer: Optional[float] = None
    min_us: Optional[float] = None
    vs_same_copy: Optional[float] = None     # over a copy that moves the same bytes (`same_size_copies`)

    def to_dict(self) -> dict:
        return asdict(self)


def add_run_options(p, quick_repeats: int, quick_warmup: int, warmup_ms: float = 0.0) -> None:
    """The options every benchmark script takes: repeats, warm-up, seed, tuning database."""
    p.add_argument("--repeats", type=int, default=None,
                   help=f"timed runs per measurement (default 30; quick {quick_repeats})")
    p.add_argument("--warmup", type=int, default=None, help=f"untimed runs first (default 5; quick {quick_warmup})")
    p.add_argument("--warmup-ms", type=float, default=warmup_ms,
                   help=f"then more untimed runs until this many milliseconds have passed (default {warmup_ms:g}): "
                        "the GPU's clocks back up after the host's pauses")
    p.add_argument("--rounds", type=int, default=3,
                   help="timing rounds per workload, every implementation in each (default 3): the median of "
                        "the rounds' medians")
    p.add_argument("--seed", type=int, default=None, help="input seed (default: fresh)")
    p.add_argument("--tuning-db", default="off", metavar="PATH",
                   help="tuning database tiledsl's calls read (default off: the untuned defaults are measured)")


def round_orders(n: int, rounds: int) -> list[list[int]]:
    """The order n implementations are timed in, round by round: each round all of them, a
    different one first. The GPU's clock drifts (a host pause, sustained power), and a median
    of the rounds' medians leaves no implementation timed only at one end of the drift."""
    return [[(r + i) % n for i in range(n)] for r in range(rounds)] if n else []


def parse_run_options(p, argv):
    """Parsed arguments; tiledsl's calls in this process then read --tuning-db."""
    args = p.parse_args(argv)
    os.environ["TILEDSL_TUNING_DB"] = args.tuning_db
    return args


def ran_schedules(kernel) -> str:
    """The schedules of a tiledsl kernel's most recently planned call, each with
    where it came from when that is not the default rule (a tuning database)."""
    launcher = getattr(kernel, "_launcher", None)
    plans = list(getattr(launcher, "_plans", {}).values())
    if not plans:
        return ""
    choices = getattr(plans[-1], "choices", {})
    return " + ".join(s.tag + ("" if origin == "default" else f" ({origin})")
                      for _, (s, origin) in sorted(choices.items()))


def is_tiledsl(impl: str) -> bool:
    return impl.startswith("tiledsl")


def finalize(rows: Sequence[Row], copy_gbps: Optional[float]) -> None:
    """Fill GB/s, the fraction of copy bandwidth, and the speed relative to the best peer
    (best peer time / this time: above 1 is faster than every non-tiledsl implementation)."""
    groups: dict[tuple, list[Row]] = {}
    for r in rows:
        groups.setdefault((r.workload, r.shape, r.dtype), []).append(r)
        if r.time_us and r.bytes:
            r.gbps = r.bytes / (r.time_us * 1e-6) / 1e9
            if copy_gbps:
                r.vs_copy = r.gbps / copy_gbps
    for group in groups.values():
        peers = [r.time_us for r in group if not is_tiledsl(r.impl) and r.time_us]
        if not peers:
            continue
        best = min(peers)
        for r in group:
            if r.time_us:
                r.vs_best_peer = best / r.time_us


def same_size_copies(rows: Sequence[Row], copy_gbps: float, *, repeats: int, warmup: int,
                     warmup_ms: float) -> list[dict]:
    """What a copy moving each workload's bytes reaches (half read, half written,
    buffers rotated as the inputs are): a short kernel pays its launch, ramp-up and
    last wave as a copy of its size does, which the 1 GiB reference does not show.
    Fills each row's `vs_same_copy`; one record per shape."""
    out, seen = [], {}
    for r in rows:
        if r.workload == "copy" or not r.bytes or not r.gbps:
            continue
        key = (r.workload, r.shape, r.dtype)
        if key not in seen:
            c = copy_bandwidth(r.bytes // 2, repeats=repeats, warmup=warmup, rotate=True, warmup_ms=warmup_ms)
            seen[key] = {"workload": r.workload, "shape": r.shape, "dtype": r.dtype, "bytes": r.bytes,
                         "copy_gbps": c["gbps"], "vs_reference_copy": c["gbps"] / copy_gbps}
            out.append(seen[key])
        rec = seen[key]
        r.vs_same_copy = r.gbps / rec["copy_gbps"]
        if is_tiledsl(r.impl):
            rec["tiledsl"] = max(rec.get("tiledsl") or 0.0, r.vs_same_copy)
        else:
            rec["best_peer"] = max(rec.get("best_peer") or 0.0, r.vs_same_copy)
    return out


def _fmt(v, spec: str, none: str = "—") -> str:
    return none if v is None else format(v, spec)


def markdown_table(rows: Sequence[Row]) -> str:
    head = ["workload", "shape", "dtype", "impl", "time (µs)", "GB/s", "× copy BW",
            "× best peer", "rel. error", "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * 4 + ["---:"] * 5 + ["---"]) + "|"]
    for r in rows:
        cells = [r.workload, r.shape, r.dtype, r.impl, _fmt(r.time_us, ".1f"), _fmt(r.gbps, ".0f"),
                 _fmt(r.vs_copy, ".2f"), _fmt(r.vs_best_peer, ".2f"), _fmt(r.rel_err, ".1e"),
                 r.note.replace("|", "/").replace("\n", " ")[:120]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def simple_table(head: Sequence[str], rows: Sequence[Sequence]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


def short_error(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"error: {type(err).__name__}: {text[0] if text else ''}"[:200]


def device_rel_error(result, ref64) -> float:
    """‖result − ref‖ / ‖ref‖ in float64 on the device; inf when NaN appears."""
    cupy = import_cupy()
    r = cupy.asarray(result).astype(cupy.float64)
    if r.shape != ref64.shape:
        return float("inf")
    if bool(cupy.isnan(r).any()) and not bool(cupy.isnan(ref64).any()):
        return float("inf")
    num = float(cupy.linalg.norm((r - ref64).ravel()))
    den = float(cupy.linalg.norm(ref64.ravel()))
    return num / den if den else num


# ---- launch overhead ---------------------------------------------------------------------

TINY_TDSL = """
kernel tiny_add(x: f32[N], y: f32[N]) -> f32[N] {
    return x + y
}
"""

RAW_ADD_SRC = r"""
extern "C" __global__ void tiny_add(const float* __restrict__ x, const float* __restrict__ y,
                                    float* __restrict__ out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
"""

LAUNCH_SIZES = tuple(range(1000, 1064))


def _loop_us(call: Callable[[int], Any], n_calls: int, rounds: int = 5) -> float:
    """Wall-clock µs per call for n_calls calls cycling through the 64 sizes, stream synced
    at the end (so the queue has drained: the number is launch throughput); the best of
    `rounds` rounds, as timeit does: the host's own noise (other tenants, clock changes)
    only ever adds time, and a single round measured 8.5 to 556 µs for the same loop."""
    cupy = import_cupy()
    stream = cupy.cuda.get_current_stream()
    torch = optional_torch()
    nsz = len(LAUNCH_SIZES)
    best = float("inf")
    for _ in range(rounds):
        stream.synchronize()
        t0 = time.perf_counter()
        for i in range(n_calls):
            call(i % nsz)
        stream.synchronize()
        if torch is not None:
            torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / n_calls * 1e6)
    return best


def launch_overhead(n_calls: int = 10_000, triton_peers=None) -> list[dict]:
    """Per-call cost of a tiny pointwise kernel called from Python, with a different size
    on each call (1000..1063, arrays preallocated): tiledsl with out= and with allocation,
    CuPy RawKernel, cupy.add, torch.add, and Triton. tiledsl is warmed up on ONE size
    only, so a recompilation per size would show in its first pass over the 64 sizes."""
    import numpy as np
    cupy = import_cupy()
    ensure_repo_on_path()
    rows: list[dict] = []
    xs = [cupy.random.standard_normal(n, dtype=cupy.float32) for n in LAUNCH_SIZES]
    ys = [cupy.random.standard_normal(n, dtype=cupy.float32) for n in LAUNCH_SIZES]
    outs = [cupy.empty(n, dtype=cupy.float32) for n in LAUNCH_SIZES]

    def add_row(impl, mode, fn, note=""):
        try:
            us = fn()
            rows.append({"impl": impl, "mode": mode, "us_per_call": us, "calls": n_calls, "note": note})
        except Exception as err:  # noqa: BLE001
            rows.append({"impl": impl, "mode": mode, "us_per_call": None, "calls": n_calls,
                         "note": short_error(err)})

    # tiledsl
    try:
        import tiledsl
        k = tiledsl.compile(TINY_TDSL)
        k(xs[0], ys[0], out=outs[0])             # compile + warm up on one size only
        synchronize()
        ok = bool(cupy.allclose(outs[0], xs[0] + ys[0]))

        # Each of 63 sizes never seen, timed alone: the median, and the slowest, which include
        # compiling the alignment classes the warm-up size did not have (N odd: no vectors;
        # N even: 8-byte ones) unless the disk cache has them.
        times = []
        for j in range(1, len(LAUNCH_SIZES)):
            cupy.cuda.get_current_stream().synchronize()
            t0 = time.perf_counter()
            k(xs[j], ys[j], out=outs[j])
            times.append((time.perf_counter() - t0) * 1e6)
        times.sort()
        rows.append({"impl": "tiledsl", "mode": "out=, first call at each of 63 new sizes",
                     "us_per_call": times[len(times) // 2], "calls": len(times),
                     "note": f"median of 63; the slowest {times[-1] / 1e3:.1f} ms, {times[-2] / 1e3:.1f} ms "
                             f"(a new alignment class compiles once, unless the disk cache has it)"})
        ok = ok and all(bool(cupy.allclose(outs[j], xs[j] + ys[j])) for j in range(len(LAUNCH_SIZES)))
        add_row("tiledsl", "out=", lambda: _loop_us(lambda j: k(xs[j], ys[j], out=outs[j]), n_calls),
                "" if ok else "WRONG RESULTS")
        add_row("tiledsl", "allocating", lambda: _loop_us(lambda j: k(xs[j], ys[j]), n_calls))
    except Exception as err:  # noqa: BLE001
        rows.append({"impl": "tiledsl", "mode": "out=", "us_per_call": None, "calls": n_calls,
                     "note": short_error(err)})

    # CuPy RawKernel
    def raw_loop():
        raw = cupy.RawKernel(RAW_ADD_SRC, "tiny_add")
        sizes = [np.int64(n) for n in LAUNCH_SIZES]
        grids = [((n + 255) // 256,) for n in LAUNCH_SIZES]
        raw(grids[0], (256,), (xs[0], ys[0], outs[0], sizes[0]))
        synchronize()
        return _loop_us(lambda j: raw(grids[j], (256,), (xs[j], ys[j], outs[j], sizes[j])), n_calls)

    add_row("cupy.RawKernel", "out (preallocated)", raw_loop)
    add_row("cupy.add", "out=", lambda: _loop_us(lambda j: cupy.add(xs[j], ys[j], out=outs[j]), n_calls))
    add_row("cupy.add", "allocating", lambda: _loop_us(lambda j: cupy.add(xs[j], ys[j]), n_calls))

    torch = optional_torch()
    if torch is not None:
        txs = [torch.randn(n, device="cuda") for n in LAUNCH_SIZES]
        tys = [torch.randn(n, device="cuda") for n in LAUNCH_SIZES]
        touts = [torch.empty(n, device="cuda") for n in LAUNCH_SIZES]
        add_row("torch.add", "out=", lambda: _loop_us(lambda j: torch.add(txs[j], tys[j], out=touts[j]),
                                                     n_calls))
        add_row("torch.add", "allocating", lambda: _loop_us(lambda j: torch.add(txs[j], tys[j]), n_calls))
        if triton_peers is not None and triton_peers.available()[0]:
            def triton_loop():
                for j in range(len(LAUNCH_SIZES)):       # Triton specializes on n % 16: warm all
                    triton_peers.add(txs[j], tys[j], out=touts[j])
                torch.cuda.synchronize()
                return _loop_us(lambda j: triton_peers.add(txs[j], tys[j], out=touts[j]), n_calls)
            add_row("triton", "out (preallocated)", triton_loop)
        elif triton_peers is not None:
            rows.append({"impl": "triton", "mode": "—", "us_per_call": None, "calls": 0,
                         "note": triton_peers.available()[1]})
    else:
        rows.append({"impl": "torch/triton", "mode": "—", "us_per_call": None, "calls": 0,
                     "note": "torch with CUDA not available"})
    del xs, ys, outs
    free_pools()
    return rows


# ---- compile time ----------------------------------------------------------------------

_CHILD = r"""
import json, os, sys, time
t_start = time.perf_counter()
import numpy as np
import cupy
sys.path.insert(0, {root!r})
import tiledsl
t_imported = time.perf_counter()
spec = json.loads({spec!r})
cupy.cuda.Device(0).use()
args = []
for a in spec["args"]:
    if a["kind"] == "scalar":
        args.append(a["value"])
    else:
        args.append(cupy.random.standard_normal(tuple(a["shape"]), dtype=cupy.float32).astype(a["dtype"]))
cupy.cuda.Device().synchronize()          # CUDA context and CuPy kernels ready before timing
t0 = time.perf_counter()
k = tiledsl.compile(spec["src"])
t1 = time.perf_counter()
y = k(*args)
cupy.cuda.get_current_stream().synchronize()
t2 = time.perf_counter()
y = k(*args)
cupy.cuda.get_current_stream().synchronize()
t3 = time.perf_counter()
print("RESULT " + json.dumps({{"import_s": t_imported - t_start, "parse_check_ms": (t1 - t0) * 1e3,
                               "first_call_ms": (t2 - t1) * 1e3, "second_call_ms": (t3 - t2) * 1e3}}))
"""


def _run_child(spec: dict, env: dict, timeout: float = 240) -> dict:
    code = _CHILD.format(root=str(ROOT), spec=json.dumps(spec))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (proc.stderr or proc.stdout).strip().splitlines()
    raise RuntimeError(f"child exited {proc.returncode}: {tail[-1] if tail else 'no output'}")


def compile_times(cases: Sequence[tuple[str, dict]]) -> list[dict]:
    """Cold compile and warm-disk-cache first launch, each in a fresh Python process.

    cases: (label, spec) with spec = {"src": tdsl text, "args": [{"kind": "array",
    "shape": [...], "dtype": "float32"} | {"kind": "scalar", "value": 1.0}]}.
    The cold run gets empty TILEDSL_CACHE_DIR, CUPY_CACHE_DIR and XDG_CACHE_HOME
    directories, so neither tiledsl's nor CuPy's disk cache can help it; the warm run
    reuses the same directories in another fresh process (the in-memory cache is gone).
    first_call_ms is the time from after tiledsl.compile() to the first kernel completing.
    """
    # A pip-installed tiledsl has its bytecode compiled at install time; a source tree run
    # with PYTHONDONTWRITEBYTECODE (as some images set) would otherwise recompile the
    # modules a first call imports (code generation, cache, toolchain: ~30 ms) every time.
    import compileall
    import tiledsl
    compileall.compile_dir(os.path.dirname(tiledsl.__file__), quiet=1)
    rows = []
    for label, spec in cases:
        with tempfile.TemporaryDirectory(prefix="tiledsl-bench-") as tmp:
            env = dict(os.environ)
            env.update({"TILEDSL_CACHE_DIR": os.path.join(tmp, "tiledsl"),
                        "CUPY_CACHE_DIR": os.path.join(tmp, "cupy"),
                        "XDG_CACHE_HOME": os.path.join(tmp, "xdg")})
            for phase in ("cold", "warm disk cache"):
                try:
                    r = _run_child(spec, env)
                    rows.append({"kernel": label, "phase": phase, **r, "note": ""})
                except Exception as err:  # noqa: BLE001
                    rows.append({"kernel": label, "phase": phase, "import_s": None,
                                 "parse_check_ms": None, "first_call_ms": None,
                                 "second_call_ms": None, "note": short_error(err)})
    return rows


def save_json(path: str, payload: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump(payload, f, indent=2, default=str)
