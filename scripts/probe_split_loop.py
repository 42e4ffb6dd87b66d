"""Probe (device run): a full reduction's main loop, the split's blocks each reading a chunk.
probe_split_epilogue.py's hand-written maxima ran ahead of tiledsl's default (blocks of 512,
each a contiguous chunk, two an SM) by 0.8-1.1 us at 32 and 128 MiB with blocks of 1024 that
stride the grid (H100 2026-12-06 11:55: max f16 2^24 17.04 against 17.86 with the lighter
epilogue patched in). Versions, each its own compiled kernel:

  as is       the default (the launcher's splits, filling every SM's room);
  strided     the same, each block's vectors a grid's stride apart (`c = blockIdx.y * TPR +
              lane; c += gridDim.y * TPR`), text-patched into one-row splits;
  strided x4  the same, its loop unrolled by hand four deep (four 16-byte loads in flight a
              thread, each guarded; SASS: four LDG.E.128 where `strided` has one);
  b1024 sN    blocks of 1024 threads, N splits (a schedule pinned), as is and strided x4.

Each is checked against float64 (output poisoned), then all are timed in turn, three rounds,
median us; a case's rows share its input sets.

H100 2026-12-06 12:19 (us; as is / strided / b1024 s132 / b1024 s264 / best hand): max f16 128 MiB
49.58 / 50.88 / 49.62 / 49.34 / 48.48; max f32 128 MiB 49.33 / 50.72 / 49.41 / 51.26 / 48.56;
sum bf16 128 MiB 48.99 / 48.94 / 49.70 / 50.93; mse f16 128 MiB 49.06 / 49.82 / 49.06 / 51.20;
sum f32 64 MiB 28.58 / 27.68 / 28.27 / 31.07. Striding and blocks of 1024 each lost as often as
they won, so the loop stayed; the hand kernels' lead (four accumulators and four loads in flight
a thread, with both) is 1-2% at 128 MiB. Strided, the loop lost its unrolled loads (one LDG.E.128
in its SASS against four); `strided x4` (written after the device time ran out, not yet run) puts
them back.

    python scripts/probe_split_loop.py [names to keep]
"""
import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cupy  # noqa: E402

import row_probe  # noqa: E402
import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth  # noqa: E402
from probe_split_epilogue import check_and_time, hand_versions  # noqa: E402
from text_patch import install  # noqa: E402
from tiledsl.runtime.launcher import set_overrides  # noqa: E402

LOOP = "for (idx_t c = rbegin + lane; c < rend; c += TPR) {"
STRIDED = {
    "strided": "for (idx_t c = (idx_t)blockIdx.y * TPR + lane; c < rvec; c += (idx_t)gridDim.y * TPR) {",
    "strided4": ("for (idx_t c_first = (idx_t)blockIdx.y * TPR + lane; c_first < rvec;"
                 " c_first += (idx_t)4 * gridDim.y * TPR)\n#pragma unroll\n"
                 "            for (int u_ = 0; u_ < 4; ++u_)"
                 " if (const idx_t c = c_first + (idx_t)u_ * gridDim.y * TPR; c < rvec) {"),
}
PATCHED = {"n": 0}


def patch(src: str, schedule) -> str:
    if "const idx_t nrows = 1;" not in src or src.count(LOOP) != 1:
        return src      # (not a one-row split of one loop: main() stops where no kernel took it)
    PATCHED["n"] += 1
    return src.replace(LOOP, STRIDED[FLAG["on"]])


FLAG = install("split-loop", patch)
K = "kernel f"
CASES = [
    ("max f16 2^26", f"{K}(x: f16[N]) -> f16 {{ return max(x) }}", {"N": 1 << 26}),
    ("max f16 2^24", f"{K}(x: f16[N]) -> f16 {{ return max(x) }}", {"N": 1 << 24}),
    ("max f32 2^25", f"{K}(x: f32[N]) -> f32 {{ return max(x) }}", {"N": 1 << 25}),
    ("sum bf16 2^26", f"{K}(x: bf16[N]) -> f32 {{ return sum(f32(x)) }}", {"N": 1 << 26}),
    ("sum f32 2^24", f"{K}(x: f32[N]) -> f32 {{ return sum(x) }}", {"N": 1 << 24}),
    ("mean f32 2^22", f"{K}(x: f32[N]) -> f32 {{ return mean(x) }}", {"N": 1 << 22}),
    ("mse f16 2^25", f"{K}(x: f16[N], y: f16[N]) -> f32 {{ return mean(f32(x - y) * f32(x - y)) }}",
     {"N": 1 << 25}),
]


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    sms = cupy.cuda.runtime.deviceGetAttribute(16, 0)
    print(f"copy {copy:.0f} GB/s, {sms} SMs", flush=True)
    sources = {name: src for name, src, _ in CASES}
    for case, d in row_probe.prepared_lazily(CASES, sys.argv[1:]):
        if d.kind != "reduce_split":
            print(f"{case.name}: its default {d.tag} is no split; skipped", flush=True)
            continue
        sets, out = case.sets, case.out
        versions = {"as is": (None, False), "strided": (None, "strided"), "strided x4": (None, "strided4")}
        for splits in (sms, 2 * sms):
            pinned = dataclasses.replace(d, block=1024, row_threads=1024, splits=splits)
            versions[f"b1024 s{splits}"] = (pinned, False)
            versions[f"b1024 s{splits} strided x4"] = (pinned, "strided4")
        runs = {}
        for name, (pinned, patched) in versions.items():
            FLAG["on"] = patched
            kv = case.kernel if name == "as is" else tiledsl.compile(sources[case.name])
            if pinned is not None:
                kv(*sets[0], out=out)           # (its launcher made)
                set_overrides(kv._launcher, {0: pinned})
            kv(*sets[0], out=out)               # planned and compiled now, patched or not
            runs[name] = (lambda i, kv=kv: kv(*sets[i], out=out)), out
        FLAG["on"] = False
        if PATCHED["n"] == 0:
            raise SystemExit(f"{case.name}: no kernel was patched (its kernel came from a cache?)")
        runs.update(hand_versions(case))
        check_and_time(case, d, runs, copy, width=22)
        case.sets = case.out = None


if __name__ == "__main__":
    main()
