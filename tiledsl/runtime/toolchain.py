"""The CPU side of the CUDA toolchain: NVRTC to compile, cuobjdump to inspect.

Nothing here needs a GPU, so code generation can be tested (registers, spills,
which SASS instructions came out) on any machine. Only pip wheels are used,
never a system CUDA toolkit, so what a user gets does not depend on what else
is installed: NVRTC through `cuda-bindings` + `nvidia-cuda-nvrtc`, and for
inspection `nvidia-cuda-cuobjdump` + `nvidia-cuda-nvdisasm` (cuobjdump runs
nvdisasm to print SASS). Imports are lazy so that this module imports without
them; a function that needs a missing piece raises a TdslRuntimeError naming
the packages to install.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

from tiledsl.errors import TdslArgumentError, TdslCompileError, TdslRuntimeError, did_you_mean

_NVRTC_PACKAGES = "pip install cuda-bindings nvidia-cuda-nvrtc"
_DEV_PACKAGES = ("pip install tiledsl[dev] (or: pip install "
                 "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")


@dataclass(frozen=True)
class ResourceUsage:
    """What ptxas allotted one kernel.

    `local_bytes` is the per-thread stack frame (local memory: dynamically
    indexed arrays and spills), what the driver calls LOCAL_SIZE_BYTES.
    `shared_bytes` is the static shared memory the kernel declares; when it
    comes from cuobjdump rather than the compile log, on sm_90 and newer it
    also counts the 1 KiB per block that ptxas reserves for the system there.
    Spill counts are None when unknown (cuobjdump does not report them).
    """
    registers: int
    shared_bytes: int
    local_bytes: int
    spill_stores: Optional[int]
    spill_loads: Optional[int]

    @property
    def spills(self) -> bool:
        """Whether registers spill to local memory (where the counts are unknown, whether the
        kernel keeps a stack frame at all)."""
        if self.spill_stores is None:
            return bool(self.local_bytes)
        return bool(self.spill_stores or self.spill_loads)


@dataclass(frozen=True)
class CompiledCuda:
    arch: str
    cubin: Optional[bytes]
    ptx: Optional[str]
    log: str
    resources: dict[str, ResourceUsage] = field(default_factory=dict)


@lru_cache(maxsize=None)
def _nvrtc():
    # Importing cuda.bindings succeeds even without libnvrtc; the library is
    # loaded on the first call, so probe it once here.
    try:
        from cuda.bindings import nvrtc
        _check(nvrtc, nvrtc.nvrtcVersion())
    except Exception as exc:
        raise TdslRuntimeError(
            f"the CUDA compiler NVRTC is not available ({exc}); install it with: "
            f"{_NVRTC_PACKAGES}") from exc
    return nvrtc


def _check(nvrtc, result):
    """Unwrap a cuda-bindings (status, values...) tuple, raising on failure."""
    status, *values = result
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise TdslRuntimeError(f"NVRTC call failed: {status.name}")
    return values[0] if len(values) == 1 else tuple(values) or None


def available() -> bool:
    """Whether NVRTC can be loaded, i.e. whether compile_cuda can work."""
    try:
        _nvrtc()
    except TdslRuntimeError:
        return False
    return True


def nvrtc_version() -> tuple[int, int]:
    nvrtc = _nvrtc()
    return _check(nvrtc, nvrtc.nvrtcVersion())


# The generated code needs Ampere (cp.async, ldmatrix, mma.sync); arch-specific
# targets ("sm_90a": wgmma, TMA multicast) exist from Hopper on.
OLDEST_ARCH = 80
_ARCH = re.compile(r"sm_([0-9]+)(a?)")


@lru_cache(maxsize=None)
def _nvrtc_compute_capabilities() -> Optional[frozenset]:
    """The compute capabilities the installed NVRTC compiles for (80, 86, 90, 100, ...),
    or None when NVRTC is not available (the CUDA text stages do not need it)."""
    try:
        nvrtc = _nvrtc()
        return frozenset(_check(nvrtc, nvrtc.nvrtcGetSupportedArchs()))
    except (TdslRuntimeError, AttributeError):
        return None


def supported_archs() -> list[str]:
    """The --arch values tiledsl accepts here: sm_80 and newer that NVRTC knows, and
    the arch-specific sm_XXa from sm_90a on."""
    ccs = sorted(cc for cc in (_nvrtc_compute_capabilities() or (80, 86, 87, 89, 90, 100, 120))
                 if cc >= OLDEST_ARCH)
    return [a for cc in ccs for a in ([f"sm_{cc}", f"sm_{cc}a"] if cc >= 90 else [f"sm_{cc}"])]


def check_arch(arch: str) -> str:
    """`arch` when tiledsl can compile for it, else a TdslArgumentError that lists
    what it can (NVRTC would reject it with an opaque 'invalid option')."""
    match = _ARCH.fullmatch(arch) if isinstance(arch, str) else None
    if match is not None:
        cc = int(match.group(1))
        known = _nvrtc_compute_capabilities()
        if cc >= OLDEST_ARCH and (not match.group(2) or cc >= 90) and (known is None or cc in known):
            return arch
    hint = "" if match is not None else did_you_mean(str(arch).strip().lower(), supported_archs())
    raise TdslArgumentError(f"unsupported architecture {arch!r}; tiledsl targets sm_{OLDEST_ARCH} and "
                            f"newer: {', '.join(supported_archs())}{hint}")


def compile_cuda(source: str, *, arch: str = "sm_90a", name: str = "tiledsl.cu",
                 options: tuple[str, ...] = (), include_dirs: tuple[str, ...] = (),
                 want: str = "cubin") -> CompiledCuda:
    """Compile CUDA C++ for `arch` ("sm_90a", "sm_80", ...) with NVRTC.

    want="cubin" gives the cubin, its PTX and per-kernel resources (ptxas runs
    verbose and its report is parsed from the log); want="ptx" only runs the
    front end, for the virtual architecture of `arch`. Generated code that
    fails to compile is a tiledsl bug, so the TdslCompileError says so.
    """
    if want not in ("cubin", "ptx"):
        raise ValueError(f"compile_cuda: want is 'cubin' or 'ptx', not {want!r}")
    check_arch(arch)
    target = arch if want == "cubin" else "compute_" + arch.removeprefix("sm_")
    args = [f"--gpu-architecture={target}", "-std=c++17"]
    if want == "cubin":
        args.append("--ptxas-options=-v")
    args += [f"--include-path={d}" for d in include_dirs]
    args += options

    nvrtc = _nvrtc()
    prog = _check(nvrtc, nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []))
    try:
        encoded = [a.encode() for a in args]
        status, = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        log = _read(nvrtc, prog, nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog)
        log = log.rstrip(b"\0").decode(errors="replace")
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise TdslCompileError(
                f"internal tiledsl bug: NVRTC rejected the CUDA code generated for "
                f"{arch} ({status.name}); please report it with this log:\n{log.rstrip()}")
        ptx = _read(nvrtc, prog, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
        ptx = ptx.rstrip(b"\0").decode()
        cubin = None
        if want == "cubin":
            cubin = _read(nvrtc, prog, nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)

    resources = parse_ptxas_log(log)
    if cubin is not None and not resources and _find_tool("cuobjdump"):
        resources = resource_usage(cubin)
    return CompiledCuda(arch=arch, cubin=cubin, ptx=ptx, log=log, resources=resources)


def _read(nvrtc, prog, get_size, get) -> bytes:
    buf = b" " * _check(nvrtc, get_size(prog))
    _check(nvrtc, get(prog, buf))
    return buf


def parse_ptxas_log(log: str) -> dict[str, ResourceUsage]:
    """Per-kernel resources from the `ptxas info` lines of a verbose compile.

    Only entry functions are returned; a non-inlined device function's own
    stack frame is already in its callers' cumulative stack size.
    """
    frames: dict[str, tuple[int, int, int]] = {}
    entries: dict[str, ResourceUsage] = {}
    entry = props = None
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '([^']+)'", line):
            entry = m.group(1)
        elif m := re.search(r"Function properties for (\S+)", line):
            props = m.group(1)
        elif m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                            r"(\d+) bytes spill loads", line):
            frames[props] = tuple(int(g) for g in m.groups())
        elif entry and (m := re.search(r"Used (\d+) registers", line)):
            stack, stores, loads = frames.get(entry, (0, 0, 0))
            if c := re.search(r"(\d+) bytes cumulative stack size", line):
                stack = int(c.group(1))
            smem = re.search(r"(\d+) bytes smem", line)
            entries[entry] = ResourceUsage(
                registers=int(m.group(1)), shared_bytes=int(smem.group(1)) if smem else 0,
                local_bytes=stack, spill_stores=stores, spill_loads=loads)
            entry = None
    return entries


def _find_tool(name: str) -> Optional[str]:
    """A CUDA binary from NVIDIA's pip wheels (`nvidia/cu13/bin`), or None."""
    try:
        import nvidia  # namespace package shared by NVIDIA's wheels
    except ImportError:
        return None
    for root in nvidia.__path__:
        found = shutil.which(name, path=os.path.join(root, "cu13", "bin"))
        if found:
            return found
    return None


def _cuobjdump(flag: str, cubin: bytes) -> str:
    exe = _find_tool("cuobjdump")
    if exe is None:
        raise TdslRuntimeError(f"cuobjdump is not installed; install it with: {_DEV_PACKAGES}")
    env = dict(os.environ)
    if flag == "--dump-sass":
        disasm = _find_tool("nvdisasm")
        if disasm is None:
            raise TdslRuntimeError(
                f"printing SASS needs nvdisasm, which is not installed; install it with: "
                f"{_DEV_PACKAGES}")
        env["NVDISASM_PATH"] = os.path.dirname(disasm)
    with tempfile.TemporaryDirectory(prefix="tiledsl-") as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        run = subprocess.run([exe, flag, path], capture_output=True, text=True, env=env)
    if run.returncode != 0:
        raise TdslRuntimeError(f"cuobjdump {flag} failed:\n{(run.stderr or run.stdout).strip()}")
    return run.stdout


def sass(cubin: bytes) -> str:
    """The SASS of a cubin, as `cuobjdump --dump-sass` prints it."""
    return _cuobjdump("--dump-sass", cubin)


def resource_usage(cubin: bytes) -> dict[str, ResourceUsage]:
    """Per-kernel resources read back from a cubin (see ResourceUsage)."""
    text = _cuobjdump("--dump-resource-usage", cubin)
    usage = {}
    for kernel, fields in re.findall(r"Function (\S+):\s*\n\s*(.*)", text):
        value = {k: int(v) for k, v in re.findall(r"(\w+):(\d+)", fields)}
        usage[kernel] = ResourceUsage(
            registers=value["REG"], shared_bytes=value["SHARED"],
            local_bytes=value["STACK"] + value["LOCAL"], spill_stores=None, spill_loads=None)
    return usage


_SASS_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", re.M)


def sass_opcodes(sass_text: str) -> Counter:
    """How often each full mnemonic ('LDG.E.128.CONSTANT', 'HMMA.16816.F32') occurs."""
    return Counter(_SASS_LINE.findall(sass_text))


def has_instruction(sass_text: str, prefix: str) -> bool:
    """Whether some mnemonic is `prefix` or extends it by '.'-separated modifiers.

    'LDG.E.128' matches 'LDG.E.128.CONSTANT'; 'LDG' does not match 'LDGSTS'.
    """
    return any(op == prefix or op.startswith(prefix + ".") for op in sass_opcodes(sass_text))
