"""The CPU-side toolchain: NVRTC compiles, resources and SASS, all without a GPU."""
import contextlib
import sys

import pytest

pytest.importorskip("cuda.bindings")

from tiledsl.errors import TdslCompileError, TdslRuntimeError  # noqa: E402
from tiledsl.runtime import toolchain  # noqa: E402

if not toolchain.available():
    pytest.skip("NVRTC cannot be loaded", allow_module_level=True)

needs_cuobjdump = pytest.mark.skipif(
    toolchain._find_tool("cuobjdump") is None or toolchain._find_tool("nvdisasm") is None,
    reason="nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm not installed")

ARCHS = ["sm_80", "sm_90a"]

COPY4 = r"""
extern "C" __global__ void copy4(const float4* a, float4* b, int n) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = i < n ? a[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    tile[threadIdx.x] = v.x;
    __syncthreads();
    v.y += tile[255 - threadIdx.x];
    if (i < n) b[i] = v;
}
"""

LOCAL_ARRAY = r"""
extern "C" __global__ void dynamic_index(const float* in, float* out, const int* idx) {
    float buf[32];
    for (int j = 0; j < 32; ++j) buf[j] = in[j];
    for (int j = 0; j < 32; ++j) buf[idx[j] & 31] += 1.f;  // run-time index: local memory
    out[threadIdx.x] = buf[threadIdx.x & 31];
}
"""

MANY_LIVE = r"""
extern "C" __global__ void many_live(const float* in, float* out) {
    float v[48];
    #pragma unroll
    for (int j = 0; j < 48; ++j) v[j] = in[j * blockDim.x + threadIdx.x];
    float s = 0.f;
    #pragma unroll
    for (int j = 0; j < 48; ++j) s += v[j] * v[47 - j] + v[(j * 7) % 48];
    out[threadIdx.x] = s;
}
"""

MMA = r"""
extern "C" __global__ void mma(const unsigned* a, const unsigned* b, float* c) {
    int t = threadIdx.x;
    float d0, d1, d2, d3;
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
        : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
        : "r"(a[4*t]), "r"(a[4*t+1]), "r"(a[4*t+2]), "r"(a[4*t+3]),
          "r"(b[2*t]), "r"(b[2*t+1]),
          "f"(c[4*t]), "f"(c[4*t+1]), "f"(c[4*t+2]), "f"(c[4*t+3]));
    c[4*t] = d0; c[4*t+1] = d1; c[4*t+2] = d2; c[4*t+3] = d3;
}
"""


@pytest.fixture(scope="module", params=ARCHS)
def copy4(request):
    return toolchain.compile_cuda(COPY4, arch=request.param)


def test_version():
    major, minor = toolchain.nvrtc_version()
    assert major >= 12


def test_cubin_and_resources(copy4):
    assert copy4.cubin and copy4.ptx and ".entry copy4" in copy4.ptx
    usage = copy4.resources["copy4"]
    assert usage.registers > 0
    assert usage.shared_bytes == 1024
    assert (usage.local_bytes, usage.spill_stores, usage.spill_loads) == (0, 0, 0)


@needs_cuobjdump
def test_sass_has_128_bit_loads(copy4):
    text = toolchain.sass(copy4.cubin)
    ops = toolchain.sass_opcodes(text)
    assert ops["LDG.E.128"] == 1 and ops["STG.E.128"] == 1
    assert toolchain.has_instruction(text, "LDG.E.128")
    assert not toolchain.has_instruction(text, "LDG.E.64")


@needs_cuobjdump
def test_resource_usage_from_cubin(copy4):
    usage = toolchain.resource_usage(copy4.cubin)["copy4"]
    assert usage.registers == copy4.resources["copy4"].registers
    assert usage.local_bytes == 0 and usage.spill_stores is None
    # sm_90+ cubins count the 1 KiB of shared memory reserved per block.
    assert usage.shared_bytes == (2048 if copy4.arch == "sm_90a" else 1024)


def test_ptx_only():
    out = toolchain.compile_cuda(COPY4, arch="sm_90a", want="ptx")
    assert out.cubin is None and out.resources == {}
    assert ".target sm_90a" in out.ptx


def test_include_dirs(tmp_path):
    (tmp_path / "helper.cuh").write_text("__device__ inline float twice(float x) { return 2 * x; }\n")
    src = '#include "helper.cuh"\nextern "C" __global__ void k(float* p) { p[0] = twice(p[0]); }\n'
    out = toolchain.compile_cuda(src, arch="sm_80", include_dirs=(str(tmp_path),))
    assert "k" in out.resources


def test_syntax_error_reports_log():
    src = 'extern "C" __global__ void broken(float* p) {\n    p[0] = ;\n}\n'
    with pytest.raises(TdslCompileError) as info:
        toolchain.compile_cuda(src, arch="sm_80", name="gen.cu")
    message = str(info.value)
    assert "internal tiledsl bug" in message
    assert "gen.cu(2): error: expected an expression" in message


@pytest.mark.parametrize("arch", ARCHS)
def test_dynamic_indexing_uses_local_memory(arch):
    usage = toolchain.compile_cuda(LOCAL_ARRAY, arch=arch).resources["dynamic_index"]
    assert usage.local_bytes == 32 * 4 and usage.spill_stores == 0


@pytest.mark.parametrize("arch", ARCHS)
def test_register_cap_forces_spills(arch):
    free = toolchain.compile_cuda(MANY_LIVE, arch=arch).resources["many_live"]
    assert free.spill_stores == 0 and free.local_bytes == 0
    capped = toolchain.compile_cuda(MANY_LIVE, arch=arch, options=("--maxrregcount=24",))
    usage = capped.resources["many_live"]
    assert usage.registers <= 24
    assert usage.spill_stores > 0 and usage.spill_loads > 0 and usage.local_bytes > 0


@needs_cuobjdump
@pytest.mark.parametrize("arch", ARCHS)
def test_inline_mma_becomes_hmma(arch):
    out = toolchain.compile_cuda(MMA, arch=arch)
    assert out.resources["mma"].spill_stores == 0
    text = toolchain.sass(out.cubin)
    assert toolchain.has_instruction(text, "HMMA")
    assert any(op.startswith("HMMA.16816.F32") for op in toolchain.sass_opcodes(text))


def test_parse_ptxas_log_skips_device_functions():
    log = (
        "ptxas info    : Function properties for helper\n"
        "ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
        "ptxas info    : Function properties for k\n"
        "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 255 registers, used 1 barriers, 24 bytes cumulative stack size, "
        "512 bytes smem, 372 bytes cmem[0]\n")
    assert toolchain.parse_ptxas_log(log) == {"k": toolchain.ResourceUsage(
        registers=255, shared_bytes=512, local_bytes=24, spill_stores=4, spill_loads=4)}


def test_missing_inspection_tools_name_the_packages(monkeypatch):
    monkeypatch.setattr(toolchain, "_find_tool", lambda name: None)
    with pytest.raises(TdslRuntimeError, match="nvidia-cuda-cuobjdump"):
        toolchain.sass(b"")


def test_missing_nvrtc_names_the_packages(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)  # makes the import fail
    toolchain._nvrtc.cache_clear()
    try:
        assert not toolchain.available()
        with pytest.raises(TdslRuntimeError, match="cuda-bindings nvidia-cuda-nvrtc"):
            toolchain.compile_cuda(COPY4)
    finally:
        toolchain._nvrtc.cache_clear()


def _functions_loaded(monkeypatch, src, extents, arch, origin="default"):
    """The warnings a launcher gives as it loads the kernels of `src` at `extents` for
    `arch`: compiled for real by NVRTC, their loading onto a GPU left out."""
    import warnings

    import tiledsl
    from tiledsl.runtime import launcher as launcher_module
    from tiledsl.runtime import launcher_for
    from tiledsl.schedule.choose import plan
    from tiledsl.schedule.problem import problem
    monkeypatch.setattr(launcher_module, "_load", lambda *a, **k: object())
    monkeypatch.setattr(launcher_module, "device_arch", lambda device: arch)
    monkeypatch.setattr(launcher_module, "_WARNED", set())
    k = tiledsl.compile(src)
    launcher = launcher_for(k)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i, (g, lay) in enumerate(zip(launcher.groups, launcher.layouts)):
            for launch in plan(problem(g, lay, extents, frozenset(), 108, arch), k.hints):
                launcher._function(i, launch, 0, origin)
    return [w for w in caught if issubclass(w.category, tiledsl.TdslPerformanceWarning)]


def test_a_pinned_schedule_that_spills_is_warned_of(monkeypatch):
    """examples/linear.tdsl pins a 128x256 tile for Hopper; on sm_80 it takes the mma.sync
    path, whose registers spill there. The kernel runs right, slower than it could: the
    launcher warns once, naming the kernel, the bytes, and the schedule block with its
    location. Without the block the default does not spill: no warning."""
    from conftest import EXAMPLES
    src = (EXAMPLES / "linear.tdsl").read_text()
    extents = dict(M=1000, N=1000, K=1000)
    [w] = _functions_loaded(monkeypatch, src, extents, "sm_80")
    text = str(w.message)
    assert "spills registers to local memory on sm_80" in text and "bytes a thread" in text
    assert "the schedule block (tile(M=128, N=256, K=64), stages(4), warps(8)) at " in text, text
    unpinned = src[:src.index("schedule linear_relu")]
    assert _functions_loaded(monkeypatch, unpinned, extents, "sm_80") == []
    assert _functions_loaded(monkeypatch, src, extents, "sm_90a") == []


def test_spill_messages_name_where_the_schedule_came_from():
    from tiledsl.runtime.launcher import spill_message
    from tiledsl.runtime.toolchain import ResourceUsage
    spills = ResourceUsage(registers=255, shared_bytes=0, local_bytes=24, spill_stores=6, spill_loads=6)
    stack = ResourceUsage(registers=40, shared_bytes=0, local_bytes=16, spill_stores=0, spill_loads=0)
    unknown = ResourceUsage(registers=40, shared_bytes=0, local_bytes=16, spill_stores=None, spill_loads=None)
    assert spill_message("k", stack, "sm_90a", "t", "the tuning database") == ""     # a stack frame, no spill
    assert spill_message("k", None, "sm_90a", "t", "the tuning database") == ""
    assert "24 bytes a thread at 255 registers" in spill_message("k", spills, "sm_80", "t", "the tuning database")
    assert "16 bytes" in spill_message("k", unknown, "sm_80", "t", "the tuning database")
    assert "please report it" in spill_message("k", spills, "sm_80", "t", "tiledsl's default rules")


def test_a_kernel_opts_in_to_shared_memory_past_48_kb_counting_its_static_bytes(monkeypatch):
    """launcher._load asks the driver for more dynamic shared memory than a block gets unasked
    (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) once its dynamic and static bytes together
    pass 48 KB: 48 KB of dynamic beside a cluster's few hundred static bytes failed to launch
    (CUDA_ERROR_INVALID_VALUE, H100 2026-12-06); 48 KB alone needs nothing; a row copied into
    shared memory (sized by the call) opts in to all a block can have beside its static bytes;
    more than the GPU gives is refused by name."""
    import types
    import tiledsl.runtime.launcher as launcher_module
    asked = []
    module = types.SimpleNamespace(load=lambda cubin: None,
                                   get_function=lambda name: types.SimpleNamespace(ptr=7, name=name))
    cuda = types.SimpleNamespace(
        Device=lambda device: contextlib.nullcontext(),
        function=types.SimpleNamespace(Module=lambda: module),
        runtime=types.SimpleNamespace(deviceGetAttribute=lambda attr, device: 232448 if attr == 97 else 0),
        driver=types.SimpleNamespace(funcSetAttribute=lambda ptr, attr, value: asked.append((ptr, attr, value))))
    monkeypatch.setattr(launcher_module, "_cupy", lambda: types.SimpleNamespace(cuda=cuda))
    load = launcher_module._load
    load(b"", "k", 0, 48 * 1024)
    load(b"", "k", 0, 40 * 1024, 8 * 1024)
    assert asked == []
    load(b"", "k", 0, 48 * 1024, 672)
    assert asked == [(7, 8, 48 * 1024)]
    load(b"", "k", 0, 16 * 1024, 672, sized=True)
    assert asked[-1] == (7, 8, 232448 - 672)
    with pytest.raises(TdslRuntimeError, match="needs 256 KB of shared memory"):
        load(b"", "k", 0, 256 * 1024, 672)
