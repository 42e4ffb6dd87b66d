"""Programmatic dependent launch (runtime/dependent.py): the driver's structures, the
launch with a stand-in driver, and the kernels' halves of it (CPU; the GPU half is in
test_gpu_matmul.py)."""
from __future__ import annotations

import ctypes

import pytest

import tiledsl
from tiledsl.codegen import sources_for
from tiledsl.runtime import dependent, toolchain
from tiledsl.runtime.clusters import _LaunchConfig

SPLIT = "kernel mm(a: f16[M, K], b: f16[K, N], bias: f32[N]) -> f16[M, N] { return relu(a @ b + bias) }"


def test_the_structures_match_cuda_h():
    """CUlaunchAttribute: a 4-byte id padded to 8, then a 64-byte union; CUlaunchConfig:
    seven 32-bit dims and sizes, then the stream, the attributes and their count."""
    assert ctypes.sizeof(dependent._LaunchAttribute) == 72
    assert dependent._LaunchAttribute.value.offset == 8
    assert (_LaunchConfig.stream.offset, _LaunchConfig.attrs.offset, _LaunchConfig.num_attrs.offset) == (32, 40, 48)


def test_a_dependent_launch_passes_the_overlap_attribute_and_falls_back_when_refused(monkeypatch):
    seen, usual = [], []

    def driver(config_address, function, params, extra):
        config = _LaunchConfig.from_address(config_address)
        attribute = dependent._LaunchAttribute.from_address(config.attrs)
        seen.append(((config.grid_x, config.grid_y, config.grid_z, config.block_x, config.shared_bytes),
                     config.stream, config.num_attrs, attribute.id, attribute.value[0], function, params))
        return 0 if len(seen) == 1 else 1      # the second launch is refused

    monkeypatch.setattr(dependent, "_launch_ex", driver)
    launch = dependent.DependentLaunch((171, 1, 1), (384,), 0, lambda *a: usual.append(a))
    launch(0xF00, 0x5, 0xA00)
    assert seen == [((171, 1, 1, 384, 0), 0x5, 1, dependent.PROGRAMMATIC_STREAM_SERIALIZATION, 1, 0xF00, 0xA00)]
    assert usual == []
    launch(0xF00, 0, 0xA00)                    # refused: the usual launch, on the same stream
    assert usual == [(0xF00, 171, 1, 1, 384, 1, 1, 0, 0, 0xA00, 0)]
    launch(0xF00, 0, 0xA00)                    # and from then on without asking again
    assert len(seen) == 2 and len(usual) == 2


def test_only_hopper_and_later_overlap_launches(monkeypatch):
    monkeypatch.setattr(dependent, "_launch_ex", lambda *a: 0)
    assert dependent.available("90") and dependent.available("100") and not dependent.available("80")
    monkeypatch.setattr(dependent, "_launch_ex", False)    # no cuLaunchKernelEx in this driver
    assert not dependent.available("90")


SPLITS = {"wgmma": (SPLIT, dict(M=256, N=256, K=65536)),
          "f32 GEMM": ("kernel mm(a: f32[M, K], b: f32[K, N]) -> f32[M, N] { return a @ b }",
                       dict(M=256, N=256, K=65536)),
          "sum": ("kernel total(x: f32[N]) -> f32 { return sum(x) }", dict(N=1 << 24)),
          "column means": ("kernel cm(x: f16[R, C]) -> f32[C] { return mean(x, axis=R) }", dict(R=65536, C=64))}


@pytest.mark.parametrize("label", list(SPLITS))
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_a_split_lets_its_second_kernel_start_and_that_kernel_waits(label, arch):
    """A split's first kernel allows its dependents at its start (SASS PREEXIT), its
    second waits for the first's end and writes (ACQBULK): on sm_90a; neither for sm_80."""
    src, extents = SPLITS[label]
    sources = sources_for(tiledsl.compile(src), extents, arch=arch)
    if label == "wgmma" and arch == "sm_80":
        pytest.skip("wgmma is sm_90a's")
    first, final = sources
    assert first.schedule.splits > 1 and final.name.endswith("_s2"), [s.name for s in sources]
    for ks, instruction in ((first, "PREEXIT"), (final, "ACQBULK")):
        compiled = toolchain.compile_cuda(ks.source, arch=arch)
        assert (instruction in toolchain.sass_opcodes(toolchain.sass(compiled.cubin))) == (arch == "sm_90a")
        assert compiled.resources[ks.name].local_bytes == 0


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_kernels_that_are_not_split_neither_allow_nor_wait(arch):
    k = tiledsl.compile("kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }")
    only, = sources_for(k, dict(M=1024, N=1024, K=1024), arch=arch)
    assert "allow_dependents();" not in only.source.split('extern "C"')[1]
    assert "wait_for_primary();" not in only.source.split('extern "C"')[1]
