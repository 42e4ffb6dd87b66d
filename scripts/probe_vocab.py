"""Probe (device run): softmax, log-softmax and logsumexp over a language model's
vocabulary (rows of 128256 to 256000 16-bit or f32 logits: too long for an SM's
registers or shared memory), each under its default, the fastest of its tuner
candidates (VOCAB_ALL=1) and torch, checked against float64 first; median
microseconds and the ratio of the bytes moved to copy, three interleaved rounds.

    python scripts/probe_vocab.py [names to keep]
"""
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
import row_probe  # noqa: E402  (beside this script)
from benchmarks.common import copy_bandwidth, time_cuda  # noqa: E402

SOFTMAX = "kernel f(x: {t}[M, N]) -> {t}[M, N] {{\n e = exp(x - max(x, axis=N))\n return e / sum(e, axis=N)\n}}"
LOG_SOFTMAX = ("kernel f(x: {t}[M, N]) -> {t}[M, N] {{\n m = max(f32(x), axis=N)\n"
               " return {t}(f32(x) - m - log(sum(exp(f32(x) - m), axis=N)))\n}}")
LOGSUMEXP = ("kernel f(x: {t}[M, N]) -> f32[M] {{\n m = max(f32(x), axis=N)\n"
             " return m + log(sum(exp(f32(x) - m), axis=N))\n}}")
CASES = [
    ("softmax bf16", SOFTMAX.format(t="bf16"), {"M": 4096, "N": 128256}),
    ("softmax f16", SOFTMAX.format(t="f16"), {"M": 2048, "N": 128256}),
    ("softmax f32", SOFTMAX.format(t="f32"), {"M": 1024, "N": 128256}),
    ("softmax bf16 qwen", SOFTMAX.format(t="bf16"), {"M": 2048, "N": 151936}),
    ("softmax bf16 gemma", SOFTMAX.format(t="bf16"), {"M": 1024, "N": 256000}),
    ("softmax bf16 few", SOFTMAX.format(t="bf16"), {"M": 256, "N": 128256}),
    ("log-softmax bf16", LOG_SOFTMAX.format(t="bf16"), {"M": 4096, "N": 128256}),
    ("logsumexp bf16", LOGSUMEXP.format(t="bf16"), {"M": 4096, "N": 128256}),
]


def torch_peer(case):
    """torch's own kernel for the case (allocating, as torch's users call it), or None."""
    import torch
    kind = case.name.split()[0]
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
