"""Probe (device run): softmax, log-softmax and logsumexp over a language model's
vocabulary (rows of 128256 to 256000 16-bit or f32 logits: too long for an SM's
registers or shared memory), each under its default, the fastest of its tuner
candidates (VOCAB_ALL=1), those whose tags match VOCAB_MATCH, the default before rows
copied by a cluster's blocks (VOCAB_BEFORE=1) and torch, checked against float64 first; median
microseconds and the ratio of the bytes moved to copy, three interleaved rounds.

    python scripts/probe_vocab.py [names to keep]
"""
import os
import re
import statistics
import sys

sys.path.insert(0, os.getcwd())
import row_probe  # noqa: E402  (beside this script)
from benchmarks.common import copy_bandwidth, time_cuda  # noqa: E402
from tiledsl.schedule import choose, rows  # noqa: E402

SOFTMAX = "kernel f(x: {t}[M, N]) -> {t}[M, N] {{\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}}"
LOG_SOFTMAX = ("kernel f(x: {t}[M, N]) -> {t}[M, N] {{\n m = max(f32(x), axis=N)\n"
               " return {t}(f32(x) - m - log(sum(exp(f32(x) - m), axis=N)))\n}}")
LOGSUMEXP = ("kernel f(x: {t}[M, N]) -> f32[M] {{\n m = max(f32(x), axis=N)\n"
             " return m + log(sum(exp(f32(x) - m), axis=N))\n}}")
CASES = [     # (rows few enough that checking every schedule's result in float64 takes seconds)
    ("softmax bf16", SOFTMAX.format(t="bf16"), {"M": 1024, "N": 128256}),
    ("softmax f32", SOFTMAX.format(t="f32"), {"M": 512, "N": 128256}),
    ("softmax bf16 qwen", SOFTMAX.format(t="bf16"), {"M": 1024, "N": 151936}),
    ("softmax bf16 gemma", SOFTMAX.format(t="bf16"), {"M": 512, "N": 256000}),
    ("log-softmax bf16", LOG_SOFTMAX.format(t="bf16"), {"M": 1024, "N": 128256}),
    ("logsumexp bf16", LOGSUMEXP.format(t="bf16"), {"M": 1024, "N": 128256}),
    # the reach of the rule (rows.shared_cluster_schedule): few rows, rows just past two an SM,
    # f32 rows held by 4 blocks of 512 before, and the norms
    ("softmax bf16 300", SOFTMAX.format(t="bf16"), {"M": 300, "N": 128256}),
    ("softmax f16 120 KB", SOFTMAX.format(t="f16"), {"M": 2048, "N": 60000}),
    ("softmax f32 256 KB", SOFTMAX.format(t="f32"), {"M": 1024, "N": 65536}),
    ("rmsnorm bf16", "kernel r(x: bf16[M, N], w: bf16[N]) -> bf16[M, N] "
     "{ return x * rsqrt(mean(x * x, axis=N) + 1e-6) * w }", {"M": 1024, "N": 131072}),
    ("layernorm bf16", "kernel n(x: bf16[M, N], w: f32[N], b: f32[N]) -> bf16[M, N] {\n m = mean(x, axis=N)\n"
     " d = x - m\n return bf16(d * rsqrt(mean(d * d, axis=N) + 1e-5) * w + b)\n}", {"M": 1024, "N": 100000}),
]


def torch_peer(case):
    """torch's own kernel for the case (allocating, as torch's users call it), or None."""
    import torch
    kind = case.name.split()[0]
    if kind not in ("softmax", "log-softmax", "logsumexp"):
        return None
    if "bf16" in case.name:     # (CuPy holds bf16 as 2-byte voids: torch takes their bits)
        views = [[torch.as_tensor(a.view("uint16"), device="cuda").view(torch.bfloat16) for a in s] for s in case.sets]
    else:
        views = [[torch.as_tensor(a, device="cuda") for a in s] for s in case.sets]
    fn = {"softmax": lambda x: torch.softmax(x, dim=-1), "log-softmax": lambda x: torch.log_softmax(x, dim=-1),
          "logsumexp": lambda x: torch.logsumexp(x.float(), dim=-1)}[kind]
    return lambda i: fn(views[i][0])


def main() -> None:
    copy = copy_bandwidth()["gbps"]
    print(f"copy {copy:.0f} GB/s", flush=True)
    cases = []
    for case, d in row_probe.prepared(CASES, sys.argv[1:]):
        case.variants = {"default": d}
        if os.environ.get("VOCAB_BEFORE"):     # the default before rows.shared_cluster_schedule
            with row_probe.constants(rows, shared_cluster_schedule=lambda p, alone: None):
                case.variants["before"] = choose.default(case.problem, case.kernel.hints)
        # VOCAB_MATCH="regex": every tuner candidate whose tag matches it, beside the default
        if os.environ.get("VOCAB_MATCH"):
            case.variants.update({s.tag: s for s in choose.candidates(case.problem, case.kernel.hints)
                                  if re.search(os.environ["VOCAB_MATCH"], s.tag)})
        if os.environ.get("VOCAB_ALL"):
            _, fastest = row_probe.fastest_candidates(case, 4, bound=1e-2)
            case.variants.update({f"cand {n}": s for n, s in enumerate(fastest) if s != d})
        case.variants = row_probe.exact(case, row_probe.distinct(case.variants), bound=1e-2)
        cases.append(case)
        print(f"{case.name}: {len(case.variants)} schedules", flush=True)
    row_probe.time_and_report(cases, copy, label_width=8, tag_width=40)
    import cupy as cp
    for case in cases:      # torch beside, and a copy of the same bytes
        peer = torch_peer(case)
        if peer is None:
            continue
        half = case.nbytes // 2
        src, dst = cp.ones(half, cp.uint8), cp.empty(half, cp.uint8)
        times = {"torch": [], "copy of the bytes": []}
        for _ in range(3):
            times["torch"].append(time_cuda(peer, n_sets=len(case.sets), repeats=20, warmup_ms=20).median_us)
            times["copy of the bytes"].append(time_cuda(lambda i: cp.copyto(dst, src), repeats=20,
                                                        warmup_ms=20).median_us)
        for label, ts in times.items():
            us = statistics.median(ts)
            print(f"{case.name} {label:20s} {us:8.1f} us {case.nbytes / us / 1e3 / copy:5.2f}x copy", flush=True)


if __name__ == "__main__":
    main()
