"""Probe (device run): the row kernels' per-row 16-byte loads with the
evict-first hint (ld.global.cs) and stores with st.global.cs, text-patched
into the default schedule's kernel, timed in alternation with the unpatched
kernel, for every row-reduction workload of bench_memory.py.

    python scripts/probe_hints.py
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

import tiledsl  # noqa: E402
from benchmarks.common import copy_bandwidth, time_cuda  # noqa: E402
from tiledsl.codegen.cuda import render  # noqa: E402
from tiledsl.runtime import launcher_for, toolchain  # noqa: E402
from tiledsl.runtime.launcher import _load  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_rows import STREAM_HELPER, patched_error, raw_call  # noqa: E402

HELPER = STREAM_HELPER.replace("LDHINT", "ld.global.cs.v4.u32")    # load_hint: evict-first
SIXTEEN = r"(unsigned short, 8|float, 4)"


def hinted(src, load, store):
    out = src
    if load:    # per-row loads: their offset starts at the row (c0); hoisted ones do not
        out = re.sub(r"tdsl::load<" + SIXTEEN + r">\((in\d+ \+ \(c0\))", r"tdsl::load_hint<\1>(\2", out)
    if store:
        out = re.sub(r"tdsl::store<" + SIXTEEN + r">\(", r"tdsl::store_cs<\1>(", out)
    return out.replace('extern "C"', HELPER + '\nextern "C"', 1) if out != src else None


def probe(path, shape, make):
    k = tiledsl.compile(open(path).read())
    L = k._launcher = launcher_for(k)
    sets = [make() for _ in range(2)]
    ref = k(*sets[0])
    nbytes = sum(a.nbytes for a in sets[0] if hasattr(a, "nbytes") and a.size > 10000) + ref.nbytes
    outs = [cp.empty_like(ref) for _ in range(2)]
    [program] = L._plans.values()
    fn, grid, block, picks, shared = program.steps[0]
    schedule = program.choices[0][0]
    src = render(L.graph, L.groups[0], L.layouts[0], schedule, 1).source
    name = schedule.kernel_name(L.graph.name, 0, 1)
    consts = [np.int64(c) for c in program.constants]
    runs = {}
    for label, text in (("base", src), ("ld.cs", hinted(src, True, False)), ("st.cs", hinted(src, False, True)),
                        ("ld.cs+st.cs", hinted(src, True, True))):
        if not text:
            continue
        f = _load(toolchain.compile_cuda(text, arch="sm_90a").cubin, name, 0, shared)
        call = raw_call(f, sets, outs, consts, picks, block, shared)
        run = (lambda call: lambda i: call(i, grid))(call)
        err = patched_error(run, outs, ref)
        assert err < 1e-6, (label, err)
        runs[label] = run
    times = {label: [] for label in runs}
    for _ in range(3):      # alternate, so drift hits every variant alike
        for label, run in runs.items():
            times[label].append(time_cuda(run, n_sets=2, repeats=30).median_us)
    base = np.median(times["base"])
    print(f"{os.path.basename(path)} {shape} {schedule.tag}: " + "  ".join(
        f"{label} {np.median(t):.1f} us ({nbytes / np.median(t) / 1e3 / BW:.3f}x copy, {base / np.median(t):.3f}x)"
        for label, t in times.items()), flush=True)


rs = np.random.default_rng()
BW = copy_bandwidth()["gbps"]
print(f"copy {BW:.0f} GB/s")
f16 = lambda shape: cp.asarray(rs.standard_normal(shape, np.float32)).astype(cp.float16)  # noqa: E731
f32 = lambda shape: cp.asarray(rs.standard_normal(shape, np.float32))  # noqa: E731
for m, n in ((16384, 1024), (8192, 4096), (4096, 16384), (32768, 781)):
    probe("examples/softmax.tdsl", (m, n), lambda: (f32((m, n)),))
for m, n in ((16384, 4096), (65536, 1024), (4096, 8192)):
    probe("examples/layernorm.tdsl", (m, n), lambda: (f16((m, n)), f32(n), f32(n), 1e-5))
    probe("examples/rmsnorm.tdsl", (m, n), lambda: (f16((m, n)), f16(n), 1e-6))
