"""Runs a one-kernel program's generated CUDA on the CPU (host_cuda.h beside this
file): the rendered source is compiled by the host C++ compiler into a shared
library and called through ctypes, in a child process, with the arguments the
launcher would pass (`kernel_params`) and the grid it would launch (`launches`).
Outputs start poisoned and every buffer sits between guard regions, so elements
never written and writes out of bounds show; a read out of bounds that crashes
fails the launch. For tests of index arithmetic, tails, shuffles and shared-memory
combines without a GPU; not for timing, and not for tensor-core kernels (their
inline PTX stays device-only)."""
from __future__ import annotations

import atexit
import ctypes
import faulthandler
import functools
import hashlib
import mmap
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from tiledsl.codegen import partition_at
from tiledsl.codegen.cuda import render
from tiledsl.codegen.params import kernel_params
from tiledsl.schedule.choose import launches
from tiledsl.schedule.problem import problem
from tiledsl.schedule.layout import plan_layout
from tiledsl.schedule.partition import partition_of
from tiledsl.schedule.schedules import combine_lanes

HERE = Path(__file__).parent
CXX = shutil.which("g++") or shutil.which("c++")
_BUILD = Path(tempfile.mkdtemp(prefix="tdsl_host_"))
atexit.register(shutil.rmtree, _BUILD, True)
_LIBRARIES: dict[str, ctypes.CDLL] = {}


@functools.lru_cache(maxsize=None)
def available() -> bool:
    """Whether a host C++ compiler takes host_cuda.h and the helpers' _Float16 (GCC 12+)."""
    if CXX is None:
        return False
    _BUILD.mkdir(parents=True, exist_ok=True)
    probe = _BUILD / "probe.cpp"
    probe.write_text("inline float half_trip(float f) { return (float)(_Float16)f; }\n"
                     "int probe() { __syncthreads(); return (int)half_trip(1.5f); }\n")
    done = subprocess.run([CXX, "-std=c++17", "-fsyntax-only", "-include", str(HERE / "host_cuda.h"), str(probe)],
                          capture_output=True, text=True)
    return done.returncode == 0


COMPILE_FLAGS = ("-std=c++17", "-O1", "-fPIC", "-w")


def _header() -> Path:
    """The header every host compile includes: under GCC, a copy of host_cuda.h beside its
    precompiled form, built once a process with the compiles' own flags (CI compiles some
    4000 kernels, and parsing the header's standard library took a third of each: 0.61 ->
    0.39 s a compile, 2026-12-07); elsewhere, or where that build fails, host_cuda.h itself.
    GCC reads a copy's text wherever its .gch does not match the compile."""
    copy = _BUILD / "pch" / "host_cuda.h"
    gch = copy.parent / "host_cuda.h.gch"
    if copy.exists() and gch.exists():
        return copy
    if not _gcc():
        return HERE / "host_cuda.h"
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(HERE / "host_cuda.h", copy)
    part = gch.with_name(gch.name + ".part")
    done = subprocess.run([CXX, *COMPILE_FLAGS, "-x", "c++-header", str(copy), "-o", str(part)],
                          capture_output=True, text=True)
    if done.returncode:
        return HERE / "host_cuda.h"
    os.replace(part, gch)
    return copy


@functools.lru_cache(maxsize=None)
def _gcc() -> bool:
    done = subprocess.run([CXX, "--version"], capture_output=True, text=True)
    return done.returncode == 0 and "Free Software Foundation" in done.stdout


def _argument_cast(decl: str, i: int) -> str:
    """How the wrapper passes argument i of a kernel parameter declared `decl`."""
    if "*" in decl:
        return f"({decl.rsplit('*', 1)[0].strip()}*)a[{i}]"
    ctype = decl.rsplit(None, 1)[0]
    return f"*({ctype}*)a[{i}]"


def _library(source: str, name: str, decls: list[str]) -> ctypes.CDLL:
    key = hashlib.sha256(source.encode()).hexdigest()[:20]
    lib = _LIBRARIES.get(key)
    if lib is None:
        casts = ", ".join(_argument_cast(d, i) for i, d in enumerate(decls))
        text = (source + "\n\nstatic void tdsl_body(void* p) {\n    void** a = (void**)p;\n"
                f"    {name}({casts});\n}}\n"
                'extern "C" int tdsl_run(void** args, unsigned gx, unsigned gy, unsigned gz, unsigned threads, '
                'unsigned shared) {\n'
                "    return tdsl_host::launch(tdsl_host::Dim3{gx, gy, gz}, threads, shared, tdsl_body, args);\n}\n")
        _BUILD.mkdir(parents=True, exist_ok=True)       # (a cleaner of /tmp may have taken it)
        src, out = _BUILD / f"{key}.cpp", _BUILD / f"{key}.so"
        src.write_text(text)
        done = subprocess.run([CXX, *COMPILE_FLAGS, "-shared", "-include", str(_header()), str(src), "-o", str(out)],
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"host compile of {name} failed:\n{done.stderr[-4000:]}")
        lib = ctypes.CDLL(str(out))
        lib.tdsl_run.restype = ctypes.c_int
        _LIBRARIES[key] = lib
    return lib


GUARD = 4096      # bytes either side of every buffer, checked after each launch


class Buffers:
    """Arrays in memory shared with the process a launch runs in (a crash there, an
    out-of-bounds read, fails the test instead of the test run), each between two
    guard regions that a write out of bounds would change."""

    def __init__(self):
        self.guards = []

    def array(self, shape, dtype, poison: bool = True) -> np.ndarray:
        """An array; poisoned (NaN for floats, -1 for integers) unless told otherwise,
        so that an element never written shows."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        raw = np.frombuffer(mmap.mmap(-1, nbytes + 2 * GUARD), np.uint8)
        raw[:] = 0xA5
        if poison:
            raw[GUARD:GUARD + nbytes] = 0xFF
        self.guards += [raw[:GUARD], raw[GUARD + nbytes:]]
        return raw[GUARD:GUARD + nbytes].view(dtype).reshape(shape)

    def intact(self) -> bool:
        return all((g == 0xA5).all() for g in self.guards)


def _launch(lib, pointers, grid, threads: int, name: str, shared: int = 0) -> None:
    """One launch, in a child process (`shared`: its dynamic shared memory, bytes)."""
    pid = os.fork()
    if pid == 0:
        faulthandler.disable()      # a crash is the parent's to report
        os._exit(lib.tdsl_run(pointers, *grid, threads, shared))
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status))
        why = "a vector access not aligned to its size" if sig == signal.SIGILL else "an access out of bounds"
        raise RuntimeError(f"{name} crashed ({sig.name}): {why}")
    if os.WEXITSTATUS(status):
        raise RuntimeError(f"{name}: threads of a block waited at different barriers")


class Unsupported(Exception):
    """A kernel the host cannot run: tensor cores, TMA (inline PTX), split-K, blocks in
    a cluster (they run together; the host runs one block at a time)."""


def run_on_host(kernel, extents: dict, args: list, schedules=None, sm_count: int = 4,
                mode: str | None = None) -> list[np.ndarray]:
    """The results of a program (`kernel`: tiledsl.compile's) for NumPy `args`, each
    group's launches run on the CPU in order, under `schedules` ({group: Schedule},
    or one Schedule for group 0; the rest: the defaults, rows a cluster's blocks would
    share taken as without clusters). The groups are those of partition `mode` ("",
    "spread" or "columns"); by default, as the launcher picks them: the partition the
    call class runs (codegen.partition_at) where no schedule is given, else the fused
    one. Results and temporaries
    start poisoned, so an element never written shows. Raises Unsupported for a
    group the host cannot run."""
    from tiledsl.schedule.choose import default
    graph = kernel.graph
    if schedules is not None and not isinstance(schedules, dict):
        schedules = {0: schedules}
    buffers = Buffers()
    results = [buffers.array(tuple(extents[d] for d in r.dims), r.dtype.numpy) for r in graph.results]
    arrays = {}                                 # value id -> its buffer (parameters, results, temporaries)
    for v, r in zip(graph.outputs, results):
        if v.op != "param":
            arrays.setdefault(v.id, r)
    if mode is None and schedules is None:
        groups, layouts, _ = partition_at(graph, extents, sm_count, "sm_90a")
    else:
        groups = partition_of(graph, mode or "")
        layouts = [plan_layout(g, graph) for g in groups]
    for group, layout in zip(groups, layouts):
        p = problem(group, layout, extents, frozenset(), sm_count, "sm_90a")
        schedule = (schedules or {}).get(group.index) or default(p, kernel.hints, clusters=False)
        if schedule.mma or schedule.wgmma or (schedule.kind == "matmul" and schedule.splits) or schedule.cluster > 1:
            raise Unsupported(f"group {group.index}: {schedule.tag}")
        for op in layout.inputs:
            if op.value.id not in arrays:        # a parameter (temporaries come from earlier groups)
                host = np.asarray(args[op.value.attr("index")], dtype=op.dtype.numpy)
                arrays[op.value.id] = buffers.array(host.shape, host.dtype, poison=False)
                arrays[op.value.id][...] = host
        for op in layout.outputs:
            if op.value.id not in arrays:        # a temporary for a later group
                arrays[op.value.id] = buffers.array(tuple(extents[d] for d in op.dims), op.dtype.numpy)
        reduces = [v for v in group.values if v.op == "reduce"]
        rows = int(np.prod([p.loops[l] for l in layout.kept_loops])) if layout.kept_loops else 1
        # a split's partials, held as the kernel holds the reduction (codegen.reg_type: f16 and
        # bf16 as float; integers as themselves: an i64 sum's partials are 8 bytes)
        parts = [buffers.array((max(1, schedule.splits), rows), np.float64 if r.dtype.name == "f64" else
                               np.float32 if r.dtype.is_float else r.dtype.numpy) for r in reduces]
        scalars = {v.attr("index"): v for v in group.inputs if v.op == "param" and not v.dims}
        for launch in launches(p, schedule):
            decls, kinds = kernel_params(group, layout, schedule, launch.stage)
            text = render(graph, group, layout, schedule, launch.stage)
            keep = []
            for kind, i in kinds:
                if kind == "in":
                    keep.append(arrays[layout.inputs[i].value.id])
                elif kind == "out":
                    keep.append(arrays[layout.outputs[i].value.id])
                elif kind == "part":
                    keep.append(parts[i])
                elif kind == "extent":
                    keep.append(np.array([p.loops[i]], np.int64))
                elif kind == "splits":
                    keep.append(np.array([schedule.splits], np.int64))
                elif kind == "lanes":
                    keep.append(np.array([combine_lanes(schedule)], np.int64))
                elif kind == "counter":     # (zero before, and zero again after: checked below)
                    counter = np.zeros(1, np.uint32)
                    keep.append(counter)
                elif kind == "scalar":
                    v = scalars[i]
                    ctype = np.float64 if v.dtype.is_float else (np.bool_ if v.dtype.is_bool else np.int64)
                    keep.append(np.array([args[i]], ctype))
                else:
                    raise Unsupported(f"a {kind} argument")
            pointers = (ctypes.c_void_p * len(keep))(*[a.ctypes.data for a in keep])
            _launch(_library(text.source, text.name, decls), pointers, launch.grid, schedule.block, text.name,
                    launch.shared_bytes)
            if not buffers.intact():
                raise RuntimeError(f"{text.name} wrote out of bounds (a guard region changed)")
            if ("counter", 0) in kinds and counter[0] != 0:
                raise RuntimeError(f"{text.name} left its counter of finished blocks at {counter[0]}, not 0")
    # a result that is a parameter, or a value returned twice: as the launcher copies them
    return [np.asarray(args[v.attr("index")], r.dtype) if v.op == "param" else np.array(arrays[v.id])
            for v, r in zip(graph.outputs, results)]
