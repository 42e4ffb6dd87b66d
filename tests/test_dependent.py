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
    second (a sum: the same kernel) waits for the first's end and writes (ACQBULK): on
    sm_90a; neither for sm_80."""
    src, extents = SPLITS[label]
    sources = sources_for(tiledsl.compile(src), extents, arch=arch)
    if label == "wgmma" and arch == "sm_80":
        pytest.skip("wgmma is sm_90a's")
    first, final = sources[0], sources[-1]
    assert first.schedule.splits > 1, [s.name for s in sources]
    # a sum of one row is one kernel, finished by its last block (Schedule.last_block): it both
    # lets the next kernel start and waits for the one before it
    assert len(sources) == (1 if label == "sum" else 2) and (final.name.endswith("_s2") or label == "sum")
    for ks, instruction in ((first, "PREEXIT"), (final, "ACQBULK")):
        compiled = toolchain.compile_cuda(ks.source, arch=arch)
        assert (instruction in toolchain.sass_opcodes(toolchain.sass(compiled.cubin))) == (arch == "sm_90a")
        assert compiled.resources[ks.name].local_bytes == 0


# one program of every template: pointwise, tiled (a transposed store), rows, columns, a
# one-kernel GEMM of each kind (SIMT f32, mma.sync with cp.async tiles, wgmma with TMA)
ONE_KERNEL = {
    "pointwise": ("kernel f(x: f32[N], y: f32[N]) -> f32[N] { return relu(x + y) }", dict(N=4096)),
    "tiled": ("kernel t(x: f32[M, N]) -> f32[N, M] { return x.T * 2.0 }", dict(M=512, N=512)),
    "rows": ("kernel sm(x: f32[M, N]) -> f32[M, N] { e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N) }",
             dict(M=1024, N=1024)),
    "f32 GEMM": ("kernel mm(a: f32[M, K], b: f32[K, N]) -> f32[M, N] { return a @ b }", dict(M=512, N=512, K=512)),
    "mma": ("kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }", dict(M=1000, N=1000, K=1002)),
    "wgmma": ("kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }", dict(M=1024, N=1024, K=1024)),
}


@pytest.mark.parametrize("label", list(ONE_KERNEL))
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_every_kernel_waits_for_the_one_before_then_lets_the_next_start(label, arch):
    """Any kernel may follow another in its program (the next fusion group), so every one
    starts by waiting for the kernel before it (ACQBULK) and then allowing the one after it
    (PREEXIT), before any other statement: on sm_90a; neither for sm_80."""
    src, extents = ONE_KERNEL[label]
    if label == "wgmma" and arch == "sm_80":
        pytest.skip("wgmma is sm_90a's")
    for ks in sources_for(tiledsl.compile(src), extents, arch=arch):
        body = ks.source.split('extern "C"')[1]
        assert body.split("{", 1)[1].split(";")[1].strip() == "tdsl::follow_in_stream()", ks.name
        compiled = toolchain.compile_cuda(ks.source, arch=arch)
        opcodes = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
        assert ("ACQBULK" in opcodes, "PREEXIT" in opcodes) == (arch == "sm_90a",) * 2, ks.name


def test_the_warm_call_launches_each_later_step_to_overlap_the_one_before(monkeypatch):
    """A program of two kernels: the warm call launches the first the usual way and the
    second through cuLaunchKernelEx with the overlap attribute, on the current stream, its
    own grid and arguments; where the driver refuses, the usual launch instead."""
    from types import SimpleNamespace as NS
    import numpy as np
    from tiledsl.dtypes import DTYPES
    from tiledsl.runtime.launcher import _FastCall
    usual, overlapping, answer = [], [], [0]

    def driver(config_address, function, params, extra):
        config = _LaunchConfig.from_address(config_address)
        attribute = dependent._LaunchAttribute.from_address(config.attrs)
        values = (ctypes.c_int64 * 3).from_address(ctypes.c_int64.from_address(params).value)
        overlapping.append((function, (config.grid_x, config.grid_y, config.grid_z, config.block_x, config.shared_bytes),
                            config.stream, config.num_attrs, attribute.id, attribute.value[0], values[0], extra))
        return answer[0]
    monkeypatch.setattr(dependent, "_launch_ex", driver)
    cupy = NS(ndarray=lambda shape, dtype: NS(data=NS(ptr=0x7000)),
              cuda=NS(runtime=NS(getDevice=lambda: 0), get_current_stream=lambda device: NS(ptr=0x55),
                      driver=NS(launchKernel=lambda *a: usual.append(a[:9])), Device=lambda d: NS(use=lambda: None)))
    launcher = NS(_cupy=cupy, _call=None, graph=NS(params=()))
    program = NS(slots=(1, 1, 1, 1), counted=False, constants=[1000], scalar_params=[], array_args=[0],
                 out_shapes=[((1000,), DTYPES["f32"])], temps=[((8,), np.float32)], pointwise_only=False,
                 steps=[(NS(ptr=0xA), (8,), (256,), (1, 3, 0), 0), (NS(ptr=0xB), (4,), (128,), (3, 2, 0), 0)],
                 maps=[(), ()], dependent=[False, True])
    views = {0: NS(shape=(1000,), dtype=np.dtype("float32"))}
    fast = _FastCall(launcher, program, views, 0, 1, True).__call__
    fast((None,), "o", 0x1000, 0x2000)
    assert usual == [(0xA, 8, 1, 1, 256, 1, 1, 0, 0x55)]
    assert overlapping == [(0xB, (4, 1, 1, 128, 0), 0x55, 1, dependent.PROGRAMMATIC_STREAM_SERIALIZATION, 1,
                            0x7000, None)]
    answer[0] = 1                   # refused: the usual launch of the same kernel
    fast((None,), "o", 0x1000, 0x2000)
    assert len(overlapping) == 2 and usual[-1] == (0xB, 4, 1, 1, 128, 1, 1, 0, 0x55)
    assert not dependent.available("90")     # and no class planned from now on asks


@pytest.mark.parametrize("blocks, resident, spreads", [
    (1, 4, True),           # a single block has nowhere to crowd
    (132, 1, True), (264, 2, True), (396, 3, True), (528, 4, True), (4096, 3, True),   # every SM's room filled
    (136, 2, False), (264, 3, False), (396, 4, False), (132, 2, False), (2, 8, False),
    (136, 0, True), (136, None, True),     # residency unknown: overlapping, as before the rule
])
def test_a_grid_overlaps_the_kernel_before_only_where_its_blocks_still_spread(blocks, resident, spreads):
    """spreads_when_overlapping (H200, scripts/probe_placement.py): blocks placed while the
    kernel before still runs crowd the SMs that have room, so a grid between one block and
    every SM's room (resident x SMs) is launched the usual way."""
    assert dependent.spreads_when_overlapping(blocks, resident or None, 132) is spreads


@pytest.mark.parametrize("kind, stage, blocks, resident, overlaps", [
    ("reduce_split", 1, 136, 2, False), ("reduce_split", 1, 264, 2, True), ("reduce_row", 1, 40, 8, False),
    ("pointwise", 1, 100000, 16, True), ("reduce_col", 1, 1, 8, True),
    ("reduce_split", 2, 64, 8, True),     # a combining kernel: light, overlapping as before
    ("matmul", 1, 136, 2, True), ("matmul", 2, 16, 4, True),      # a GEMM's kernels: as before
])
def test_memory_bound_first_kernels_overlap_only_where_they_spread(kind, stage, blocks, resident, overlaps):
    assert dependent.overlaps_the_kernel_before(kind, stage, blocks, resident, 132) is overlaps


def test_residency_the_driver_cannot_give_is_unknown(monkeypatch):
    """resident_blocks_per_sm: the driver's occupancy query, None where it fails or is absent."""
    def query(count, function, block, shared):
        count._obj.value = 3 if block == 512 else 0
        return 0 if shared == 0 else 1
    monkeypatch.setattr(dependent, "_occupancy", query)
    assert dependent.resident_blocks_per_sm(0xF00, 512, 0) == 3
    assert dependent.resident_blocks_per_sm(0xF00, 512, 1024) is None     # an error from the driver
    assert dependent.resident_blocks_per_sm(0xF00, 256, 0) is None        # no block fits
