"""Probe (device run): long 16-bit rows whose length breaks 16-byte alignment and whose weights
over N are heavier than the row (f32 weight and bias beside f16 rows: peel_weights_fit says no),
so the default reads them element by element and looped (the layernorm of x + r at 1001x40003:
0.36x copy, H200 2026-12-04). Each case's default beside the six fastest of the tuner's
candidates (all compiled in parallel, timed once, checked against float64 in rank order), then
three interleaved rounds, median us and the ratio to copy. The candidates include peeled rows
with their weights gathered a lane at a time (_pe) and read in vectors shifted by each row's
head (_pe_sw, Schedule.shift: written 2026-12-04 with no GPU lent, not yet timed). Then rows
with 16-bit weights, which the default peels with their lanes gathered (rmsnorm bf16 16384x1299:
35.8 us, 0.56x copy, H200 2026-11-29), each default beside its twin with the weights shifted
(2026-12-05, 16-bit lanes funnel-shifted at odd heads; not yet timed). Rows read element by element
(rows.element_stream, the default since 2026-12-05: 256 threads with many rows, unrolled at most half a
thread's trips) beside the same walking guarded chunks ("default gd", Schedule.guarded; not yet timed),
and beside the default as if the weights let the row be peeled ("peeled", gathered lane by lane: it
won 9-12% at three shapes whose weights take twice the row's bytes, H200 2026-12-05 05:46) and as if
weights heavier than the row kept it from being peeled ("unpeeled": the default before
rows.held_peel_weights_fit, 2026-12-06, which peels rows of 8192 or more beside twice their bytes:
two of its schedules were among those timed). Since rows.shifted_where_heavier (2026-12-06: weights
heavier than the row shifted where that fits; rows over 64 KB copied into shared memory peeled beside
twice their bytes of weights; longer ones copied by a cluster's blocks, rows.copied_cluster_share)
each default that moved is timed beside the one before ("before") and beside itself with its weights
gathered ("gathered").

    python scripts/probe_heavy_weights.py [names to keep]      (w32 or w16: one half; each case reported when done)
"""
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import row_probe  # noqa: E402
from dataclasses import replace  # noqa: E402
from tiledsl.schedule import rows  # noqa: E402
from tiledsl.schedule.choose import default, fits  # noqa: E402

LN = open("examples/layernorm.tdsl").read()
LN16 = LN.replace("f32[N]", "f16[N]")
RMS = open("examples/rmsnorm.tdsl").read()
LN_RES = ("kernel f(x: f16[M, N], r: f16[M, N], w: f32[N], b: f32[N]) -> (f16[M, N], f16[M, N]) {\n"
          " h = x + r\n c = h - mean(h, axis=N)\n return c * rsqrt(mean(c * c, axis=N) + 1e-5) * w + b, h\n}")
RMS32 = ("kernel f(x: f16[M, N], w: f32[N]) -> f16[M, N] "
         "{ return x * rsqrt(mean(f32(x) * f32(x), axis=N) + 1e-6) * w }")
CASES = [   # (w32: f32 weights beside 16-bit rows; w16: 16-bit weights. HEAVY="w32" or "w16" runs half;
         # first the cases that decide rows.held_peel_weights_fit and Schedule.guarded)
         ("w32 residual layernorm 8193", LN_RES, {"M": 4096, "N": 8193}),
         ("w32 rmsnorm 20001", RMS32, {"M": 4096, "N": 20001}),
         ("w16 layernorm 8193", LN16, {"M": 8192, "N": 8193}),
         ("w16 layernorm 40001", LN16, {"M": 2048, "N": 40001}),
         ("w32 residual layernorm 40003", LN_RES, {"M": 1001, "N": 40003}),
         ("w32 residual layernorm 20001", LN_RES, {"M": 4096, "N": 20001}),
         ("w32 rmsnorm 8193", RMS32, {"M": 8192, "N": 8193}),
         ("w32 rmsnorm 40001", RMS32, {"M": 2048, "N": 40001}),
         ("w32 residual layernorm 4096x40003", LN_RES, {"M": 4096, "N": 40003}),    # (rows no SM holds
         ("w32 residual layernorm 300x40003", LN_RES, {"M": 300, "N": 40003}),      # two copies of)
         ("w32 residual layernorm 40960", LN_RES, {"M": 1001, "N": 40960}),     # (aligned rows a cluster's blocks
         ("w32 residual layernorm 32768", LN_RES, {"M": 1001, "N": 32768}),     # held; since 2026-12-06 copied
         ("w32 residual layernorm 49152", LN_RES, {"M": 2048, "N": 49152}),     # by one block of 1024 up to 225 KB:
         ("w32 residual layernorm 65536", LN_RES, {"M": 512, "N": 65536}),      # rows.shared_row_alone)
         ("w32 layernorm 4097", LN, {"M": 16384, "N": 4097}),
         ("w32 layernorm 8193", LN, {"M": 8192, "N": 8193}),
         ("w32 layernorm 12001", LN, {"M": 4096, "N": 12001}),
         ("w32 layernorm 20001", LN, {"M": 4096, "N": 20001}),
         ("w32 layernorm 40001", LN, {"M": 2048, "N": 40001}),
         ("w16 rmsnorm bf16 1299", RMS.replace("f16", "bf16"), {"M": 16384, "N": 1299}),
         ("w16 rmsnorm f16 4097", RMS, {"M": 16384, "N": 4097}),
         ("w16 rmsnorm f16 40001", RMS, {"M": 2048, "N": 40001})]


def _default_with(case, **rules):
    """The default with the rows functions named in `rules` replaced by the functions given."""
    with row_probe.constants(rows, **rules):
        return default(case.problem, case.kernel.hints)


def peeled_default(case):
    """The default as if the weights did not keep a row from being peeled (rows.peel_weights_fit
    true): with its weights shifted, the rule to write where that wins."""
    return _default_with(case, peel_weights_fit=lambda p: True, held_peel_weights_fit=lambda p: True)


def unpeeled_default(case):
    """The default as if weights heavier than the row kept it from being peeled everywhere (the
    rule before rows.held_peel_weights_fit)."""
    fit = lambda p: not rows.weights_outweigh_row(p)    # noqa: E731
    return _default_with(case, peel_weights_fit=fit, held_peel_weights_fit=fit)


def before_default(case):
    """The default before rows.shifted_where_heavier: weights gathered lane by lane, and rows
    beside heavier weights never copied into shared memory peeled."""
    copied = rows.shared_row_schedule

    def unpeeled_copies(p, hints, clusters=True):
        s = copied(p, hints, clusters)
        return None if s is not None and s.peel and rows.weights_outweigh_row(p) else s
    return _default_with(case, shifted_where_heavier=lambda p, s: s, copied_cluster_share=lambda p, vec: None,
                         shared_row_schedule=unpeeled_copies)


def shifted(case, s) -> dict:
    twin = rows.shifted_twin(s)
    return twin if twin and not fits(case.problem, twin) else None


def shifted_share(case, s):
    """`s` with its weights shifted; a held share refused that (registers.SHIFTED_HELD_WORDS) by the
    fewest more threads whose shifted share fits."""
    twin = shifted(case, s)
    threads = s.block * 2
    while twin is None and s.items and threads <= 1024:
        held = rows.held_row_share(case.problem, s.vec, threads, peel=True)
        twin = shifted(case, held) if held else None
        threads *= 2
    return twin


def variants(case, d) -> dict:
    _, fastest = row_probe.fastest_candidates(case, 6)
    peeled = peeled_default(case)
    rule = shifted_share(case, peeled)
    guarded = replace(d, guarded=True) if rows.guards_chunks(d) else None
    element = d.kind == "reduce_row" and d.vec == 1 and d.items == 0     # (before 2026-12-05: 512 threads, the rule's unroll)
    old = replace(d, block=512, row_threads=512, unroll=0) if element else None
    extra = {"before": before_default(case), "gathered": replace(d, shift=False),
             "default sw": shifted(case, d), "peeled": peeled, "unpeeled": unpeeled_default(case), "peeled sw": rule,
             "default gd": guarded, "old b512": old}
    return {"default": d, **{k: s for k, s in extra.items() if s and s not in fastest and s != d},
            **{f"cand {n}": s for n, s in enumerate(fastest)}}


if __name__ == "__main__":
    row_probe.run(CASES, variants, label_width=8, each=True)
