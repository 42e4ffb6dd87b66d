"""The tensor memory accelerator path of the warpgroup GEMM, on the CPU: when the
schedule takes it, what the kernel compiles to, the maps the launcher asks the
driver for (through a stand-in encoder), and their cache."""
from __future__ import annotations

import ctypes

import pytest

import tiledsl
from tiledsl.codegen.cuda import render
from tiledsl.codegen.params import MapSpec, kernel_params, tensor_map_specs
from tiledsl.errors import TdslRuntimeError, TdslScheduleError
from tiledsl.runtime import toolchain
from tiledsl.runtime.tma import MapCache, encode
from tiledsl.schedule.choose import candidates, default, fits
from tiledsl.schedule.problem import problem
from tiledsl.schedule.layout import plan_layout
from tiledsl.schedule.partition import partition
from tiledsl.schedule.schedules import Schedule

AB = "kernel mm(a: f16[M, K], b: f16[K, N], bias: f32[N]) -> f16[M, N] { return relu(a @ b + bias) }"
ABT = "kernel mm(a: bf16[M, K], bt: bf16[N, K]) -> f32[M, N] { return a @ bt.T }"
ABT16 = "kernel mm(a: f16[M, K], bt: f16[N, K]) -> f16[M, N] { return a @ bt.T }"
BMM = "kernel bmm(a: f16[B, M, K], b: f16[B, K, N]) -> f16[B, M, N] { return a @ b }"
TF32 = ("kernel lin(x: f32[M, K], w: f32[N, K]) -> f32[M, N] { return x @ w.T }\n"
        "schedule lin { tf32(true) }")


def _problem(src, extents, arch="sm_90a", misaligned=frozenset()):
    k = tiledsl.compile(src)
    g = partition(k.graph)[0]
    lay = plan_layout(g, k.graph)
    return k, g, lay, problem(g, lay, extents, misaligned, 132, arch, 3352.0)


@pytest.mark.parametrize("src,extents", [(AB, dict(M=4096, N=4096, K=4096)), (ABT, dict(M=1000, N=1000, K=1000)),
                                         (AB, dict(M=256, N=256, K=65536)), (AB, dict(M=64, N=4096, K=16384)),
                                         (TF32, dict(M=4096, N=4096, K=4096))])
def test_the_warpgroup_default_copies_by_tma_where_operands_allow(src, extents):
    k, g, lay, p = _problem(src, extents)
    s = default(p, k.hints)
    assert s.wgmma and s.tma and "_tma_" in s.tag
    assert fits(p, s) == ""


def test_skinny_products_in_64x64_tiles_keep_cp_async():
    """16x8192x8192 streams B through 64x64 tiles: TMA took 57 us there against cp.async's 38 (H200)."""
    k, g, lay, p = _problem(AB, dict(M=16, N=8192, K=8192))
    s = default(p, k.hints)
    assert s.wgmma and s.tile[:2] == (64, 64) and not s.tma
    assert fits(p, Schedule(**{**s.__dict__, "tma": True})) == ""      # the tuner may still try it


PART = "kernel bmm(a: f16[B, H, M, K], b: f16[H, K, N]) -> f16[B, H, M, N] { return a @ b }"


@pytest.mark.parametrize("src,extents,why", [
    (AB, dict(M=100, N=100, K=100), "rows of 200 bytes: no 16-byte vectors"),
    (PART, dict(B=2, H=4, M=512, N=512, K=512), "b has one of the product's two batch dims"),
])
def test_no_tma_where_operands_do_not_allow(src, extents, why):
    k, g, lay, p = _problem(src, extents)
    s = default(p, k.hints)
    assert not s.tma, why
    assert all(not c.tma for c in candidates(p, k.hints)), why


def test_no_tma_for_a_misaligned_operand_and_fits_refuses_it():
    k, g, lay, p = _problem(AB, dict(M=4096, N=4096, K=4096))
    tma = default(p)
    # an input whose pointer is not 16-byte aligned (its operand in the problem's set) moves no vectors
    misaligned = problem(g, lay, dict(M=4096, N=4096, K=4096), frozenset({id(lay.inputs[0])}), 132, "sm_90a")
    assert not default(misaligned).tma
    assert "TMA" in fits(misaligned, tma)
    part = _problem(PART, dict(B=2, H=4, M=512, N=512, K=512))[3]
    assert "TMA" in fits(part, Schedule("matmul", block=256, tile=(128, 256, 64), micro=(64, 256), mma=True,
                                        wgmma=True, vec=8, stages=4, tma=True))


def test_the_tuner_also_times_the_usual_tiles_by_cp_async():
    k, g, lay, p = _problem(AB, dict(M=4096, N=4096, K=4096))
    cands = candidates(p, k.hints)
    by_copy = [s for s in cands if s.wgmma and not s.splits and s.tile[:2] in ((128, 256), (128, 128), (64, 64))]
    assert by_copy and {s for s in by_copy if s.tma} == {Schedule(**{**s.__dict__, "tma": True}) for s in by_copy}
    assert any(not s.tma for s in by_copy) and len(set(cands)) == len(cands)
    assert all(s.tma for s in cands if s.wgmma and s.tile[:2] not in ((128, 256), (128, 128), (64, 64)))


@pytest.mark.parametrize("bad,why", [
    (dict(wgmma=False, mma=True, tile=(128, 128, 32), micro=(64, 32), block=256, stages=3), "only the warpgroup"),
])
def test_schedule_validation_refuses_tma_elsewhere(bad, why):
    fields = dict(block=256, tile=(128, 256, 64), micro=(64, 256), mma=True, wgmma=True, vec=8, stages=4, tma=True)
    fields.update(bad)
    with pytest.raises(TdslScheduleError, match=why):
        Schedule("matmul", **fields)
    with pytest.raises(TdslScheduleError, match="only the warpgroup"):
        Schedule("pointwise", block=256, vec=4, tma=True)


@pytest.mark.parametrize("src", [AB, ABT, TF32])
def test_the_tma_kernel_compiles_to_bulk_tensor_copies_without_spills(src):
    """One thread's UTMALDG copies replace every thread's LDGSTS, and the chunk
    addresses and predicates leave the registers (219 to 154 for a plain a @ b at 4096^3).
    K = 8192: the plain kernel's default (shorter K takes a producer warpgroup)."""
    k, g, lay, p = _problem(src, dict(M=4096, N=4096, K=8192))
    s = default(p, k.hints)
    usage, ops = {}, {}
    for label, sched in (("tma", s), ("cp.async", Schedule(**{**s.__dict__, "tma": False}))):
        ks = render(k.graph, g, lay, sched)
        compiled = toolchain.compile_cuda(ks.source, arch="sm_90a")
        usage[label] = compiled.resources[ks.name]
        ops[label] = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
        assert usage[label].spill_stores == 0 and usage[label].local_bytes == 0
    count = lambda label, prefix: sum(n for op, n in ops[label].items() if op.startswith(prefix))  # noqa: E731
    assert count("tma", "UTMALDG") >= 2 and count("tma", "LDGSTS") == 0
    assert count("cp.async", "UTMALDG") == 0 and count("cp.async", "LDGSTS") > 0
    assert count("tma", "HGMMA") == count("cp.async", "HGMMA")
    assert usage["tma"].registers <= usage["cp.async"].registers     # (the epilogue may set the peak)


def test_the_launch_passes_two_maps_first_then_the_usual_parameters():
    k, g, lay, p = _problem(ABT, dict(M=1000, N=1000, K=1000))
    s = default(p, k.hints)
    decls, args = kernel_params(g, lay, s)
    assert decls[:2] == ["const __grid_constant__ tdsl::TmaMap map_a", "const __grid_constant__ tdsl::TmaMap map_b"]
    assert args[:2] == [("tmap", 0), ("tmap", 1)] and ("tmap", 0) not in args[2:]
    plain, plain_args = kernel_params(g, lay, Schedule(**{**s.__dict__, "tma": False}))
    assert decls[2:] == plain and args[2:] == plain_args


def test_map_specs_follow_the_template_boxes():
    bm = 128
    for src, b_spec in ((AB, lambda bn: ((1000, 520), 2000, (64, 64))), (ABT, lambda bn: ((520, 1000), 1040, (64, bn)))):
        k, g, lay, p = _problem(src, dict(M=700, N=1000, K=520))
        s = Schedule("matmul", block=256, tile=(bm, 256, 64), micro=(64, 256), mma=True, wgmma=True, vec=8,
                     stages=4, tma=True)
        loops = tuple(p.loops)
        (ia, a), (ib, b) = tensor_map_specs(g, lay, s, loops)
        assert (ia, ib) == (0, 1)
        assert a == MapSpec((520, 700), 1040, (64, bm), a.dtype) and a.dtype in ("f16", "bf16")
        assert (b.dims, b.row_bytes, b.box) == b_spec(256)


class _Encoder:
    """cuTensorMapEncodeTiled's stand-in: records its arguments, writes a marker."""

    def __init__(self, result=0):
        self.calls, self.result = [], result

    def __call__(self, out, dtype, rank, ptr, dims, strides, box, elem, interleave, swizzle, l2, oob):
        r = rank.value
        self.calls.append(dict(dtype=dtype.value, rank=r, ptr=ptr.value, dims=list(dims[:r]), strides=list(strides[:r - 1]),
                               box=list(box[:r]), elem=list(elem[:r]), swizzle=swizzle.value, oob=oob.value))
        assert out.value % 64 == 0, "the driver wants the map 64-byte aligned"
        ctypes.memmove(out.value, (ptr.value & 0xFFFFFFFF).to_bytes(4, "little") * 32, 128)
        return self.result


def test_f32_maps_are_tf32_maps():
    """TF32 GEMM tiles: 32 K values (128 bytes) a row, the map's type TFLOAT32."""
    k, g, lay, p = _problem(TF32, dict(M=700, N=1000, K=520))
    s = default(p, k.hints)
    assert s.tma and s.vec == 4
    (_, a), (_, b) = tensor_map_specs(g, lay, s, tuple(p.loops))
    assert a == MapSpec((520, 700), 2080, (32, s.tile[0]), "f32") and b.box == (32, s.tile[1])
    enc = _Encoder()
    encode(0x1000, a, enc)
    assert enc.calls[0]["dtype"] == 11      # CU_TENSOR_MAP_DATA_TYPE_TFLOAT32


def test_encode_asks_the_driver_for_a_swizzled_zero_filled_tiled_map():
    enc = _Encoder()
    spec = MapSpec((520, 700), 1040, (64, 128), "bf16")
    blob = encode(0x7F0000001000, spec, enc)
    assert len(blob) == 128 and blob[:4] == (0x1000).to_bytes(4, "little")
    [call] = enc.calls
    assert call == dict(dtype=9, rank=2, ptr=0x7F0000001000, dims=[520, 700], strides=[1040], box=[64, 128],
                        elem=[1, 1], swizzle=3, oob=0)


def test_a_refused_map_is_a_runtime_error_naming_it():
    with pytest.raises(TdslRuntimeError, match="refused a tensor map"):
        encode(0x1000, MapSpec((8, 8), 16, (64, 64), "f16"), _Encoder(result=1))


def test_the_map_cache_makes_a_map_once_per_pointer_and_stays_bounded():
    enc = _Encoder()
    cache = MapCache(MapSpec((64, 64), 128, (64, 64), "f16"), limit=4, encoder=enc)
    first = cache.address(0x1000)
    assert first % 64 == 0 and cache.address(0x1000) == first and cache.addresses[0x1000] == first
    assert ctypes.string_at(first, 4) == (0x1000).to_bytes(4, "little")
    assert len(enc.calls) == 2      # the map, and one 16 bytes on to check for a template (none here)
    assert cache.template is None
    for ptr in (0x2000, 0x3000, 0x4000, 0x5000):
        cache.address(ptr)
    assert len(cache.addresses) <= 4 and 0x5000 in cache.addresses
    assert ctypes.string_at(cache.address(0x5000), 4) == (0x5000).to_bytes(4, "little")
    # a map dropped at the restart stays readable (another thread may be launching with it)
    assert 0x1000 not in cache.addresses and cache._retired[0x1000].address == first
    assert ctypes.string_at(first, 4) == (0x1000).to_bytes(4, "little")


def test_the_tuner_times_persistent_loops_of_the_tma_tiles():
    from tiledsl.schedule.matmul import PERSISTENT_TILES
    k, g, lay, p = _problem(AB, dict(M=4096, N=4096, K=4096))
    cands = candidates(p, k.hints)
    loops = [s for s in cands if s.persistent and not s.specialized]
    assert {(s.tile[0], s.tile[1], s.stages, s.group) for s in loops} == \
        {(bm, bn, st, grp) for bm, bn, st in PERSISTENT_TILES for grp in (0, 8)}
    assert all(s.tma and not s.splits and "_pst_" in s.tag for s in loops)
    assert {Schedule(**{**s.__dict__, "persistent": False}) for s in loops} <= set(cands)
    assert not default(p, k.hints).persistent or default(p, k.hints).specialized   # (a producer's loop)
    for src, extents in ((BMM, dict(B=4, M=512, N=512, K=512)), (AB, dict(M=100, N=100, K=100))):
        k2, _, _, p2 = _problem(src, extents)
        assert not any(s.persistent for s in candidates(p2, k2.hints))


def test_the_tuner_times_the_tma_tiles_with_a_producer_warpgroup():
    """The tiles of SPECIALIZED_TILES again with a warpgroup more (the producer), a block
    a tile and persistent, grouped or not; one product only; the default up to K = 2048 only."""
    from tiledsl.schedule.matmul import SPECIALIZED_TILES
    k, g, lay, p = _problem(AB, dict(M=4096, N=4096, K=4096))
    cands = candidates(p, k.hints)
    ws = [s for s in cands if s.specialized]
    assert {(s.tile[0], s.tile[1], s.stages, s.group, s.persistent) for s in ws} == \
        {(bm, bn, st, grp, pst) for bm, bn, st in SPECIALIZED_TILES for grp in (0, 8) for pst in (False, True)}
    assert all(s.tma and not s.splits and "_ws_" in s.tag and s.block == 128 * (s.tile[0] // 64 + 1) for s in ws)
    assert {Schedule(**{**s.__dict__, "specialized": False, "persistent": False, "block": s.block - 128,
                        "cluster": 1}) for s in ws} <= set(cands)
    assert not default(p, k.hints).specialized
    assert default(_problem(AB, dict(M=4096, N=4096, K=2048))[3], k.hints).specialized
    for src, extents in ((BMM, dict(B=4, M=512, N=512, K=512)), (AB, dict(M=100, N=100, K=100))):
        k2, _, _, p2 = _problem(src, extents)
        assert not any(s.specialized for s in candidates(p2, k2.hints))


@pytest.mark.parametrize("src,extents,specialized", [
    (AB, dict(M=8192, N=8192, K=1024), True), (AB, dict(M=4096, N=4096, K=512), True),
    (AB, dict(M=4096, N=4096, K=1040), True), (AB, dict(M=8192, N=8192, K=2048), True),
    (AB, dict(M=4096, N=4096, K=2112), False),      # K of 33 tiles: the plain kernel
    (AB, dict(M=4096, N=4096, K=4096), False), (AB, dict(M=4096, N=4096, K=8192), False),
    (AB, dict(M=4096, N=4096, K=256), False),       # 4 K tiles: two 128x128 blocks an SM
    (AB, dict(M=1024, N=1024, K=1024), False),      # under two waves of 128x256 tiles
    (ABT, dict(M=8192, N=8192, K=1024), True),      # f32 results, 64 columns at a time
    (TF32, dict(M=8192, N=8192, K=1024), True), (TF32, dict(M=8192, N=8192, K=2048), True),
    (TF32, dict(M=8192, N=8192, K=2080), False),
    (BMM, dict(B=8, M=2048, N=2048, K=512), False),  # a batch
])
def test_products_up_to_k_2048_default_to_a_persistent_block_with_a_producer(src, extents, specialized):
    k, g, lay, p = _problem(src, extents)
    s = default(p, k.hints)
    assert s.specialized == s.persistent == specialized and s.cluster == 1, s.tag
    if specialized:
        assert s.tag.endswith("m128n256k64_s4_tma_pst_ws_g8_x32" if src != TF32 else
                              "m128n256k32_s4_tma_pst_ws_g8_x32") and fits(p, s) == ""


@pytest.mark.parametrize("src,extents,paired", [
    (AB, dict(M=3000, N=3000, K=3000), True),       # rows of 6000 bytes: 16 past a multiple of 32
    (ABT16, dict(M=3000, N=3000, K=3000), True), (AB, dict(M=5000, N=3000, K=2000), True),   # (B's rows alone)
    (AB, dict(M=4096, N=4096, K=3000), True),       # A's rows alone
    (AB, dict(M=2056, N=2056, K=2056), True),       # a wave and a bit of 128x256 tiles
    (AB, dict(M=8192, N=8192, K=8192), True), (AB, dict(M=6144, N=6144, K=6144), True),   # 8 waves or more
    (AB, dict(M=8192, N=8192, K=2048), False),      # K <= 2048: the producer loop alone
    (AB, dict(M=4096, N=4096, K=8192), False),      # under 8 waves, rows a multiple of 32 bytes
    (AB, dict(M=4000, N=4000, K=4000), False),      # rows of 8000 bytes
    (AB, dict(M=1000, N=1000, K=1000), False),      # under a wave: 64x128 tiles
    (TF32, dict(M=8192, N=8192, K=8192), False),    # TF32 lost
    (BMM, dict(B=8, M=3000, N=3000, K=3000), False),   # a batch
])
def test_large_products_and_rows_off_32_bytes_default_to_paired_blocks(src, extents, paired):
    """The producer loop with its blocks in pairs sharing B (cluster 2), where an operand's
    rows are 16 bytes past a multiple of 32, or over eight waves of tiles and K > 2048."""
    k, g, lay, p = _problem(src, extents)
    s = default(p, k.hints)
    assert (s.cluster == 2) == paired, s.tag
    if paired:      # on the tile the rule for the last wave picks: 128x192 at 3000^3 and 2056^3
        bn = 192 if extents["M"] in (3000, 2056) else 256
        assert s.tag == f"mm_wg_m128n{bn}k64_s4_tma_pst_ws_c2_g8_x32" and fits(p, s) == "", s.tag


@pytest.mark.parametrize("why,fields", [
    ("cluster is 1", dict(cluster=3)), ("cluster is 1", dict(cluster=0)),
    ("pairs its blocks", dict(specialized=False, block=256)),
])
def test_only_a_specialized_gemm_pairs_its_blocks(why, fields):
    good = dict(kind="matmul", block=384, tile=(128, 256, 64), micro=(64, 256), mma=True, wgmma=True, vec=8,
                stages=4, tma=True, specialized=True, persistent=True, cluster=2)
    assert "_ws_c2_" in Schedule(**good).tag and "_c2" not in Schedule(**{**good, "cluster": 1}).tag
    assert Schedule(**{**good, "tile": (128, 192, 64), "micro": (64, 192)}).cluster == 2
    with pytest.raises(TdslScheduleError, match=why):
        Schedule(**{**good, **fields})


def test_the_tuner_times_paired_blocks_of_the_grouped_producer_tiles():
    """Every grouped producer tile in pairs too (a batch: none)."""
    k, g, lay, p = _problem(AB, dict(M=4096, N=4096, K=4096))
    cands = candidates(p, k.hints)
    pairs = [s for s in cands if s.cluster == 2]
    assert {(s.tile[:2], s.stages, s.persistent) for s in pairs} == \
        {(t, st, pst) for t, st in (((128, 256), 4), ((128, 256), 3), ((128, 128), 4), ((128, 128), 6),
                                    ((64, 128), 8), ((64, 128), 6), ((128, 192), 4)) for pst in (False, True)}
    assert all(s.group == 8 and s.specialized for s in pairs)
    assert {Schedule(**{**s.__dict__, "cluster": 1}) for s in pairs} <= set(cands)
    k2, _, _, p2 = _problem(BMM, dict(B=4, M=512, N=512, K=512))
    assert not any(s.cluster > 1 for s in candidates(p2, k2.hints))


@pytest.mark.parametrize("src,bn,b_box,copies", [(AB, 256, (64, 32), 4), (ABT, 256, (64, 128), 1),
                                                 (AB, 192, (64, 32), 3), (ABT, 192, (64, 96), 1)])
def test_paired_blocks_each_copy_half_of_b_to_both(src, bn, b_box, copies):
    """Each block of a pair copies half of the B tile by multicast TMA copies, boxes half as
    tall (B kept [K, N]: half the K tile of each of its 64-column boxes; B kept [N, K]: one
    box of half its rows) and its whole A tile alone; the pairs' barriers and the cluster's
    sync; no spills, and no more registers than the unpaired kernel. The grid: a pair per two
    tile rows (the last pair's second tile past the end), or 66 pairs looping."""
    from dataclasses import replace
    from tiledsl.schedule.choose import launches
    k, g, lay, p = _problem(src, dict(M=3000, N=3000, K=3000))
    s = next(c for c in candidates(p, k.hints) if c.tag == f"mm_wg_m128n{bn}k64_s4_tma_pst_ws_c2_g8_x32")
    usage, ops = {}, {}
    for label, sched in (("paired", s), ("alone", replace(s, cluster=1))):
        ks = render(k.graph, g, lay, sched)
        compiled = toolchain.compile_cuda(ks.source, arch="sm_90a")
        usage[label] = compiled.resources[ks.name]
        assert usage[label].spill_stores == 0 and usage[label].local_bytes == 0, (label, usage[label])
        ops[label] = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
        if label == "paired":
            assert "__cluster_dims__(2, 1, 1)" in ks.source and "mapa.shared::cluster" in ks.source
    count = lambda label, prefix: sum(n for op, n in ops[label].items() if op.startswith(prefix))  # noqa: E731
    assert count("paired", "UTMALDG.2D.MULTICAST") == copies
    assert count("paired", "UTMALDG") - count("paired", "UTMALDG.2D.MULTICAST") == 1     # A's one box
    assert count("alone", "UTMALDG.2D.MULTICAST") == 0 and count("paired", "UCGABAR_WAIT") >= 1
    assert count("paired", "HGMMA") == count("alone", "HGMMA")
    assert usage["paired"].registers <= usage["alone"].registers
    a_spec, b_spec = (spec for _, spec in tensor_map_specs(g, lay, s, tuple(p.loops))[:2])
    assert a_spec.box == (64, 128) and b_spec.box == b_box
    assert [launch.grid for launch in launches(p, s)] == [(132, 1, 1)]
    assert [launch.grid for launch in launches(p, replace(s, persistent=False))] == [(2 * 12 * -(-3000 // bn), 1, 1)]
    tiny = _problem(src, dict(M=8, N=8, K=8))[3]
    assert [launch.grid for launch in launches(tiny, s)] == [(2, 1, 1)]


@pytest.mark.parametrize("src,size", [(AB, 2), (ABT, 4)])
def test_a_specialized_tile_of_192_columns_stages_them_in_pieces_that_divide_it(src, size):
    """256 bytes of a row at a time would be 128 f16 columns, which do not divide 192:
    64 at a time then (one box each), 64 f32 columns as ever (the buffer's width)."""
    from dataclasses import replace
    from tiledsl.codegen.params import staged_columns
    from tiledsl.schedule.matmul import with_producer
    assert (staged_columns(192, 2), staged_columns(192, 4), staged_columns(256, 2), staged_columns(128, 4)) == \
        (64, 64, 128, 64)
    k, g, lay, p = _problem(src, dict(M=4096, N=4096, K=4096))
    plain = replace(default(p, k.hints), specialized=False, persistent=False, block=256, tile=(128, 192, 64),
                    micro=(64, 192))
    ks = render(k.graph, g, lay, with_producer(plain))
    compiled = toolchain.compile_cuda(ks.source, arch="sm_90a")
    assert compiled.resources[ks.name].spill_stores == 0
    ops = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
    assert sum(n for op, n in ops.items() if op.startswith("UTMASTG")) == 192 * size // 128



@pytest.mark.parametrize("src,extents,specialized", [
    (AB, dict(M=1024, N=1024, K=8192), True), (AB, dict(M=1024, N=1024, K=2048), True),
    (AB, dict(M=128, N=4096, K=4096), True), (ABT, dict(M=1024, N=1024, K=8192), True),
    (AB, dict(M=1024, N=1024, K=1024), False),      # under 32 K tiles: 5 stages, no producer
    (ABT16, dict(M=1024, N=1000, K=4096), False),   # result rows of 2000 bytes: 16 past a multiple of 32
    (BMM, dict(B=2, M=1024, N=1024, K=4096), False),
])
def test_few_tiles_over_a_long_k_take_a_producer_beside_one_multiplying_warpgroup(src, extents, specialized):
    """The 64x128 tile with 8 stages (few tiles, K of 32 tiles or more) takes a producer
    warpgroup, a block a tile, where its result rows are a multiple of 32 bytes."""
    k, g, lay, p = _problem(src, extents)
    s = default(p, k.hints)
    assert s.specialized == specialized and not s.persistent, s.tag
    if specialized:
        assert s.tile[:2] == (64, 128) and s.stages == 8 and s.block == 256 and fits(p, s) == "", s.tag
        assert "_tma_ws_" in s.tag
        ks = render(k.graph, g, lay, s)
        compiled = toolchain.compile_cuda(ks.source, arch="sm_90a")
        usage = compiled.resources[ks.name]
        assert usage.spill_stores == 0 and usage.local_bytes == 0, usage
        ops = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
        result_bytes = 4 if src == ABT else 2
        assert sum(n for op, n in ops.items() if op.startswith("UTMASTG")) == 128 * result_bytes // 128


@pytest.mark.parametrize("why,fields", [
    ("specialized", dict(tma=False)), ("persistent", dict(splits=4, persistent=True)),
    ("one more starts the copies", dict(block=256)), ("shared memory", dict(stages=5)),
])
def test_only_an_unsplit_tma_gemm_with_a_warpgroup_more_is_specialized(why, fields):
    good = dict(kind="matmul", block=384, tile=(128, 256, 64), micro=(64, 256), mma=True, wgmma=True, vec=8,
                stages=4, tma=True, specialized=True)
    # the stages, their alignment, two barriers a stage, the results' buffer (128 columns) and its
    # alignment to TMA's swizzle
    assert Schedule(**good).shared_bytes == 4 * 384 * 128 + 1024 + 16 * 4 + 128 * 128 * 2 + 1024
    # split K ways, a block a tile and chunk stores f32 partials from its threads: no results' buffer
    assert Schedule(**good, splits=4).shared_bytes == 4 * 384 * 128 + 1024 + 16 * 4
    with pytest.raises(TdslScheduleError, match=why):
        Schedule(**{**good, **fields})


@pytest.mark.parametrize("src,b_box", [(AB, (64, 32)), (ABT, (64, 64))])
def test_the_tuner_times_split_tiles_with_a_producer_alone_and_in_pairs(src, b_box):
    """Few tiles over a long K: every TMA-fed split tile is timed again with a producer
    warpgroup (a block a tile and chunk), alone and in pairs sharing B. A pair's grid is a
    pair per two tile rows by the chunks; its chunks store partials for the combining
    kernel (no result map); the kernel copies half of B to both blocks and spills nothing."""
    from tiledsl.schedule.choose import launches
    k, g, lay, p = _problem(src, dict(M=256, N=256, K=65536))
    cands = candidates(p, k.hints)
    split = [s for s in cands if s.tma and s.splits and not s.specialized]
    for s in split:
        twin = Schedule(**{**s.__dict__, "specialized": True, "block": s.block + 128})
        assert twin in cands and Schedule(**{**twin.__dict__, "cluster": 2}) in cands, s.tag
    s = next(c for c in cands if c.tag == "mm_wg_m128n128k64_s4_tma_ws_c2_sk_x32" and c.splits == 32)
    assert [launch.grid for launch in launches(p, s)] == [(4, 1, 32), (-(-256 * 256 // 384), 1, 1)]
    assert [spec for _, spec in tensor_map_specs(g, lay, s, tuple(p.loops))][1].box == b_box
    assert len(tensor_map_specs(g, lay, s, tuple(p.loops))) == 2     # A's and B's maps, no result map
    ks = render(k.graph, g, lay, s)
    compiled = toolchain.compile_cuda(ks.source, arch="sm_90a")
    usage = compiled.resources[ks.name]
    assert usage.spill_stores == 0 and usage.local_bytes == 0, usage
    ops = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
    assert sum(n for op, n in ops.items() if op.startswith("UTMALDG.2D.MULTICAST")) >= 1
    assert not any(op.startswith("UTMASTG") for op in ops) and "part0" in ks.source


@pytest.mark.parametrize("src", [AB, ABT, TF32])
def test_a_specialized_kernel_copies_from_one_warpgroup_and_multiplies_in_the_others(src):
    """A producer warpgroup beside the multiplying ones: the same multiplies, TMA copies,
    no block-wide barrier in the K loop (one, after the barriers' setup), no spills,
    and a block a tile or a persistent grid. The results leave through shared memory
    (STS), each warpgroup's own buffer, 256 bytes of a row at a time, stored from there
    by TMA in boxes of 128 bytes by 64 rows (UTMASTG)."""
    from dataclasses import replace
    from tiledsl.schedule.choose import launches
    k, g, lay, p = _problem(src, dict(M=4096, N=4096, K=8192))
    s = replace(default(p, k.hints), splits=0)
    ops = {}
    for label, sched in (("plain", s), ("specialized", replace(s, specialized=True, block=s.block + 128))):
        ks = render(k.graph, g, lay, sched)
        compiled = toolchain.compile_cuda(ks.source, arch="sm_90a")
        usage = compiled.resources[ks.name]
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (label, usage)
        ops[label] = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
        if label == "specialized":
            assert "mbarrier.arrive.shared::cta.b64" in ks.source
            [launch] = launches(p, sched)
            assert launch.grid == (32 * (4096 // s.tile[1]), 1, 1)
            [launch] = launches(p, replace(sched, persistent=True))
            assert launch.grid == (132, 1, 1)
    count = lambda label, prefix: sum(n for op, n in ops[label].items() if op.startswith(prefix))  # noqa: E731
    assert count("specialized", "HGMMA") == count("plain", "HGMMA")
    assert count("specialized", "UTMALDG") >= 2 and count("specialized", "LDGSTS") == 0
    # the barriers' setup; two for each 256 bytes of the staged rows (128 2-byte or 64 4-byte results)
    assert count("specialized", "BAR.SYNC.DEFER_BLOCKING") == 1 + 2 * (s.tile[1] // (128 if src == AB else 64))
    assert count("specialized", "STS") > 0
    result_bytes = 2 if src == AB else 4
    assert count("specialized", "UTMASTG") == s.tile[1] * result_bytes // 128 and count("plain", "UTMASTG") == 0


def test_a_specialized_launch_passes_the_result_map_third_and_its_spec():
    """The result's map follows the operands' (the launcher's maps lead the parameters in
    this order): raw 2- or 4-byte words, no TF32 rounding, a box of 128 bytes by 64 rows."""
    from dataclasses import replace
    from tiledsl.codegen.params import tma_stored_result
    for src, word in ((AB, "u16"), (ABT, "u32"), (TF32, "u32")):
        k, g, lay, p = _problem(src, dict(M=700, N=1000, K=520))
        s = replace(default(p, k.hints), splits=0)
        ws = replace(s, specialized=True, block=s.block + 128)
        decls, args = kernel_params(g, lay, ws)
        assert decls[2] == "const __grid_constant__ tdsl::TmaMap map_c" and args[:3] == [("tmap", 0), ("tmap", 1),
                                                                                          ("tmap_out", 0)]
        assert kernel_params(g, lay, s)[0][2:] == decls[3:] and tma_stored_result(lay, s) is None
        *_, (key, out) = tensor_map_specs(g, lay, ws, tuple(p.loops))
        size = 2 if word == "u16" else 4
        assert key == ("out", 0) and out == MapSpec((1000, 700), 1000 * size, (128 // size, 64), word)
        enc = _Encoder()
        encode(0x1000, out, enc)
        assert enc.calls[0]["dtype"] == {"u16": 1, "u32": 2}[word] and enc.calls[0]["swizzle"] == 3


def test_a_result_map_is_zeros_where_the_kernel_stores_from_its_threads():
    """Rows not a whole number of 16 bytes, or a pointer off 16 bytes: the driver would
    refuse the map, and the kernel (which checks the same) never reads it."""
    from tiledsl.runtime.tma import ResultMapCache
    enc = _Encoder()
    ragged = ResultMapCache(MapSpec((1001, 700), 2002, (64, 64), "u16"), encoder=enc)
    assert ragged.template == bytes(128) and ctypes.string_at(ragged.address(0x1000), 128) == bytes(128)
    whole = ResultMapCache(MapSpec((1000, 700), 2000, (64, 64), "u16"), encoder=enc)
    assert ctypes.string_at(whole.address(0x1002), 128) == bytes(128) and not enc.calls
    assert ctypes.string_at(whole.address(0x1000), 4) == (0x1000).to_bytes(4, "little") and enc.calls


@pytest.mark.parametrize("bad", [dict(tma=False), dict(splits=4)])
def test_only_an_unsplit_tma_gemm_is_persistent(bad):
    fields = dict(block=256, tile=(128, 256, 64), micro=(64, 256), mma=True, wgmma=True, vec=8, stages=4,
                  tma=True, persistent=True)
    Schedule("matmul", **fields)
    with pytest.raises(TdslScheduleError, match="persistent"):
        Schedule("matmul", **{**fields, **bad})


@pytest.mark.parametrize("extents,tiles", [(dict(M=8192, N=8192, K=1024), 64 * 32), (dict(M=200, N=264, K=128), 4)])
def test_a_persistent_grid_is_a_block_per_sm_or_one_per_tile(extents, tiles):
    from dataclasses import replace
    from tiledsl.schedule.choose import launches
    k, g, lay, p = _problem(AB, extents)
    s = replace(default(p, k.hints), tile=(128, 256, 64), micro=(64, 256), block=256, stages=4, splits=0,
                group=8, persistent=True, specialized=False)
    [launch] = launches(p, s)
    assert launch.grid == (min(tiles, 132), 1, 1)


@pytest.mark.parametrize("src", [AB, TF32])
def test_a_persistent_kernel_keeps_the_copies_and_multiplies_and_stages_2_byte_results(src):
    """The persistent loop keeps the plain kernel's copies and multiplies and adds no
    spills. The plain kernel's results leave through its spent stages (STS); a
    persistent block's 2-byte results too, each warpgroup's 64 rows in a spent stage
    of its own, and its f32 results (TF32), twice as large, from registers."""
    from dataclasses import replace
    k, g, lay, p = _problem(src, dict(M=4096, N=4096, K=8192))
    s = replace(default(p, k.hints), splits=0)
    ops = {}
    for label, sched in (("plain", s), ("persistent", replace(s, persistent=True))):
        ks = render(k.graph, g, lay, sched)
        compiled = toolchain.compile_cuda(ks.source, arch="sm_90a")
        usage = compiled.resources[ks.name]
        assert usage.spill_stores == 0 and usage.local_bytes == 0, (label, usage)
        ops[label] = toolchain.sass_opcodes(toolchain.sass(compiled.cubin))
    count = lambda label, prefix: sum(n for op, n in ops[label].items() if op.startswith(prefix))  # noqa: E731
    assert count("persistent", "HGMMA") == count("plain", "HGMMA")
    assert count("persistent", "UTMALDG") >= 2 and count("persistent", "LDGSTS") == 0
    assert count("plain", "STS") > 0
    assert (count("persistent", "STS") > 0) == (src == AB)


SHARED_W = "kernel lin(x: f16[B, M, K], w: f16[K, N]) -> f16[B, M, N] { return x @ w }"


@pytest.mark.parametrize("src,a_spec,b_spec", [
    # both operands batched: a third dim of 3 products, 200 x 264 and 264 x 136 values apart
    (BMM, MapSpec((264, 200, 3), 528, (64, 64, 1), "f16", 200 * 264 * 2),
     MapSpec((136, 264, 3), 272, (64, 64, 1), "f16", 264 * 136 * 2)),
    # a weight shared by the batch keeps its 2-D map
    (SHARED_W, MapSpec((264, 200, 3), 528, (64, 64, 1), "f16", 200 * 264 * 2), MapSpec((136, 264), 272, (64, 64), "f16")),
])
def test_a_batched_operand_has_a_3d_map_whose_third_coordinate_is_the_product(src, a_spec, b_spec):
    from dataclasses import replace
    k, g, lay, p = _problem(src, dict(B=3, M=200, N=136, K=264))
    s = replace(default(p, k.hints), tile=(64, 64, 64), micro=(64, 64), block=128, stages=4, splits=0, tma=True)
    assert fits(p, s) == "" and a_spec.strides == (528, 200 * 264 * 2) and b_spec.strides[0] == 272
    [(_, a), (_, b)] = tensor_map_specs(g, lay, s, (3, 200, 136, 264))
    assert (a, b) == (a_spec, b_spec)
    ks = render(k.graph, g, lay, s)
    ops = toolchain.sass_opcodes(toolchain.sass(toolchain.compile_cuda(ks.source, arch="sm_90a").cubin))
    assert ops.get("UTMALDG.3D", 0) >= 1 and ops.get("LDGSTS", 0) == 0
    assert (ops.get("UTMALDG.2D", 0) >= 1) == (len(b_spec.dims) == 2)


def test_a_batch_takes_tma_by_default_but_no_persistent_loop():
    from dataclasses import replace
    k, g, lay, p = _problem(BMM, dict(B=32, M=512, N=512, K=512))
    s = default(p, k.hints)
    assert s.wgmma and s.tma
    assert not any(c.persistent for c in candidates(p, k.hints))
    assert "persistent" in fits(p, replace(s, persistent=True, splits=0))


def test_encode_passes_a_3d_maps_two_strides_and_deep_box():
    enc = _Encoder()
    encode(0x2000, MapSpec((264, 200, 3), 528, (64, 64, 1), "f16", 105600), enc)
    (call,) = enc.calls
    assert call["rank"] == 3 and call["dims"] == [264, 200, 3] and call["strides"] == [528, 105600]
    assert call["box"] == [64, 64, 1]


@pytest.mark.parametrize("k_extent,tma", [(64, False), (128, True)])
def test_a_single_k_tile_keeps_cp_async(k_extent, tma):
    """32 products of 512x512x64 (one K tile each): cp.async 11.2 us against TMA's 12.8 (H100)."""
    k, g, lay, p = _problem(BMM, dict(B=32, M=512, N=512, K=k_extent))
    s = default(p, k.hints)
    assert s.wgmma and s.min_blocks == 2 and s.tma == tma


def test_a_persistent_grid_of_pairs_is_cut_to_the_pairs_resident_at_once():
    """The driver says how many clusters fit at once (an odd count of free SMs in a GPC
    leaves one idle); a persistent grid of pairs beyond that is cut to whole pairs, and
    kept where the driver cannot say."""
    from tiledsl.runtime.clusters import max_active_clusters, resident_grid
    assert resident_grid((132, 1, 1), 2, 66) == (132, 1, 1)
    assert resident_grid((132, 1, 1), 2, 57) == (114, 1, 1)
    assert resident_grid((132, 1, 1), 2, None) == (132, 1, 1)
    assert resident_grid((40, 1, 1), 2, 66) == (40, 1, 1)
    seen = []

    def query(count, function, config):
        cfg = config._obj
        seen.append((function.value, cfg.grid_x, cfg.block_x, cfg.shared_bytes, cfg.num_attrs))
        count._obj.value = 61
        return 0
    assert max_active_clusters(0x1234, 132, 384, 200_000, query=query) == 61
    assert seen == [(0x1234, 132, 384, 200_000, 0)]     # the cluster size comes from the kernel
    assert max_active_clusters(0x1234, 132, 384, 200_000, query=lambda *a: 1) is None     # an error
    assert max_active_clusters(0x1234, 132, 384, 200_000, query=lambda *a: 0) is None     # none fits: unknown
