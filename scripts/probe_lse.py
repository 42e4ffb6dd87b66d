"""Probe (device run): why a row's logsumexp trails a copy, where a row sum of the same bytes
does not.

For each case, the default and the three fastest tuner candidates, each rendered as
  plain  the compiler's kernel (exp on ex2.approx.ftz where the error is hidden: 2 instructions)
  expf   the exps of the logsumexp on expf (8 instructions), as before 2026-12-03
checked against the float64 reference, then timed in three interleaved rounds beside
torch.logsumexp and the row sum of the same input (what reading the bytes costs).

    python scripts/probe_lse.py [case names to keep | dtype:MxN ...]
    (LSE_MODES="plain": the compiler's kernels only; LSE_TOP=6: the six fastest candidates)
"""
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, time_cuda  # noqa: E402
from row_probe import fastest_candidates, prepare  # noqa: E402
from text_patch import install, mode_errors, time_modes  # noqa: E402

K = "kernel lse"
LSE = {"f32": f"{K}(x: f32[M, N]) -> f32[M] {{\n m = max(x, axis=N)\n return m + log(sum(exp(x - m), axis=N))\n}}",
       "bf16": f"{K}(x: bf16[M, N]) -> f32[M] {{\n m = max(f32(x), axis=N)\n"
               " return m + log(sum(exp(f32(x) - m), axis=N))\n}",
       "f16": f"{K}(x: f16[M, N]) -> f32[M] {{\n m = max(f32(x), axis=N)\n"
              " return m + log(sum(exp(f32(x) - m), axis=N))\n}"}
LSE["lsm-bf16"] = ("kernel lsm(x: bf16[M, N]) -> bf16[M, N] {\n m = max(f32(x), axis=N)\n"
                   " return bf16(f32(x) - m - log(sum(exp(f32(x) - m), axis=N)))\n}")
LSE["lsm-f32"] = ("kernel lsm(x: f32[M, N]) -> f32[M, N] {\n m = max(x, axis=N)\n"
                  " return x - m - log(sum(exp(x - m), axis=N))\n}")
ROWSUM = {"f32": "kernel rs(x: f32[M, N]) -> f32[M] { return sum(x, axis=N) }",
          "bf16": "kernel rs(x: bf16[M, N]) -> f32[M] { return sum(f32(x), axis=N) }",
          "f16": "kernel rs(x: f16[M, N]) -> f32[M] { return sum(f32(x), axis=N) }"}
CASES = [("f32", 16384, 1024), ("bf16", 4096, 32000), ("bf16", 1024, 128256), ("f32", 4096, 32000),
         ("f16", 8192, 8192), ("f32", 65536, 1024), ("bf16", 16384, 4096)]
MODES = tuple(os.environ.get("LSE_MODES", "plain expf").split())
TOP = int(os.environ.get("LSE_TOP", "3"))


def transform(src: str, mode: str) -> str:
    """The kernel's exps back on expf (the helpers above the kernel untouched)."""
    at = src.index('extern "C"')
    body = src[at:].replace("tdsl::exp_narrow(", "tdsl::exp(").replace("online_add_chunk<true>(", "online_add_chunk(")
    return src[:at] + body


MODE = install("lse", lambda src, schedule: transform(src, MODE["on"]))


def use(mode: str) -> None:
    MODE["on"] = False if mode == "plain" else mode


def main() -> None:
    named = [a.split(":") for a in sys.argv[1:] if ":" in a]
    only = [a for a in sys.argv[1:] if ":" not in a]
    cases = [(dt, *map(int, mn.split("x"))) for dt, mn in named] or CASES
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    import torch
    for dt, m, n in cases:
        label = f"lse-{dt}-{m}x{n}"
        if only and not any(o in label for o in only):
            continue
        use("plain")
        case = prepare(label, LSE[dt], dict(M=m, N=n))
        base, fastest = fastest_candidates(case, TOP, 1e-5)
        chosen = list(dict.fromkeys([base] + fastest))
        kernels = {mode: tiledsl.compile(LSE[dt] + f"\n# mode {mode}\n") for mode in MODES}
        runs = mode_errors(case, kernels, chosen, use)
        use("plain")
        rs = tiledsl.compile(ROWSUM[dt.split("-")[-1]])
        rs_out = rs(*case.sets[0])
        xs = [torch.from_dlpack(st[0]) for st in case.sets]
        if dt.startswith("lsm"):        # log-softmax: torch's, and a copy of the bytes in place of a row sum
            tout = torch.empty_like(xs[0])
            peers = {"copy of the bytes": lambda i: case.out.__setitem__(Ellipsis, case.sets[i][0]),
                     "torch.log_softmax": lambda i: torch.log_softmax(xs[i], dim=1)}
        else:
            tout = torch.empty((m,), dtype=xs[0].dtype, device=xs[0].device)
            peers = {"row sum (tiledsl)": lambda i: rs(*case.sets[i], out=rs_out),
                     "torch.logsumexp": lambda i: torch.logsumexp(xs[i], dim=1, out=tout)}
        peer_t = {p: [] for p in peers}
        for _ in range(3):
            time_modes(case, kernels, runs, use)
            use("plain")
            for p, fn in peers.items():
                peer_t[p].append(time_cuda(fn, n_sets=len(case.sets), repeats=20, warmup_ms=15).median_us)
        print(f"## {label} ({case.nbytes / 1e6:.0f} MB)", flush=True)
        for p, ts in peer_t.items():
            us = statistics.median(ts)
            print(f"  {p:44s} {us:7.1f} us {case.nbytes / us / 1e3 / copy:5.3f}x copy", flush=True)
        for (s, mode), (err, *ts) in runs.items():
            us = statistics.median(ts)
            print(f"  {s.tag:38s} {mode:5s} {us:7.1f} us {case.nbytes / us / 1e3 / copy:5.3f}x copy "
                  f"err {err:.1e} [{' '.join('%.1f' % t for t in ts)}]{' DEFAULT' if s == base else ''}", flush=True)
        case.sets = case.want = None


if __name__ == "__main__":
    main()
