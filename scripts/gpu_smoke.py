"""Quick GPU correctness pass over the memory-bound examples (device runs)."""
import time, traceback
import numpy as np
import cupy as cp
import tiledsl
from tiledsl.inputs import random_arguments, relative_error, TOLERANCE

CASES = [
    ("examples/add_scale_bias_relu.tdsl", [dict(N=1), dict(N=1000), dict(N=4099), dict(N=1 << 20)]),
    ("examples/sincos.tdsl", [dict(N=1), dict(N=77), dict(N=100003)]),
    ("examples/softmax.tdsl", [dict(M=1, N=1), dict(M=3, N=7), dict(M=17, N=1000), dict(M=129, N=1023),
                               dict(M=64, N=4096), dict(M=8, N=16384), dict(M=4, N=100000), dict(M=33, N=781)]),
    ("examples/layernorm.tdsl", [dict(M=1, N=1), dict(M=5, N=1000), dict(M=64, N=4096), dict(M=3, N=70000)]),
    ("examples/rmsnorm.tdsl", [dict(M=1, N=1), dict(M=9, N=1023), dict(M=64, N=4096)]),
    ("examples/column_sum.tdsl", [dict(M=1, N=1), dict(M=1000, N=3), dict(M=100, N=100000), dict(M=77, N=1024)]),
    ("examples/gelu_bias.tdsl", [dict(B=1, T=1, C=1), dict(B=2, T=3, C=768), dict(B=3, T=5, C=1001)]),
]
EXTRA = {
  "mean_var": ("kernel mv(x: f32[M, N]) -> (f32[M], f32[M]) {\n mu = mean(x, axis=N)\n return mu, mean((x - mu) * (x - mu), axis=N)\n}", [dict(M=7, N=300), dict(M=1000, N=64)]),
  "full": ("kernel total(x: f32[M, N]) -> f32 { return sum(x) }", [dict(M=1, N=1), dict(M=300, N=1000)]),
  "two_kernels": ("kernel tk(x: f32[M, N]) -> f32[M] { return sum((x - mean(x, axis=M)) ** 2, axis=N) }", [dict(M=5, N=9), dict(M=300, N=1000)]),
  "transposed": ("kernel tr(x: f32[M, N], b: f32[M]) -> f32[N, M] { return x * 2 + b }", [dict(M=3, N=5), dict(M=300, N=1000)]),
  "mask": ("kernel mask(x: f32[M, N]) -> f32[M, N] { return where(idx(N) <= idx(M), x, 0.0) }", [dict(M=9, N=9), dict(M=100, N=130)]),
  "middle": ("kernel mid(x: f16[B, T, C]) -> f32[B, C] { return sum(x, axis=T) }", [dict(B=2, T=3, C=5), dict(B=4, T=100, C=768)]),
  "ints": ("kernel ints(x: i32[M, N]) -> i64[M] { return sum(x * 3 - 1, axis=N) }", [dict(M=3, N=5), dict(M=100, N=1000)]),
  "lse": ("kernel lse(x: f32[M, N]) -> f32[M] {\n m = max(x, axis=N)\n return m + log(sum(exp(x - m), axis=N))\n}", [dict(M=3, N=5), dict(M=1000, N=2048)]),
  "softmax_outer": ("kernel so(x: f32[M, N]) -> f32[M, N] {\n e = exp(x - max(x, axis=M))\n return e / sum(e, axis=M)\n}", [dict(M=3, N=5), dict(M=1000, N=300)]),
}

def run(kernel, extents, label):
    host = random_arguments(kernel.graph, extents)
    dev = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host]
    want = kernel.reference(*host, compute="f64")
    want = want if isinstance(want, tuple) else (want,)
    for mode in ("alloc", "out"):
        if mode == "out":
            outs = tuple(cp.full(tuple(extents[d] for d in r.dims), np.nan if r.dtype.is_float else -7,
                                 dtype=r.dtype.numpy) for r in kernel.graph.results)
            got = kernel(*dev, out=outs if len(outs) > 1 else outs[0])
            got = outs
        else:
            got = kernel(*dev)
            got = got if isinstance(got, tuple) else (got,)
        cp.cuda.runtime.deviceSynchronize()
        for i, (g, w, r) in enumerate(zip(got, want, kernel.graph.results)):
            err = relative_error(cp.asnumpy(g), w)
            ok = err <= TOLERANCE[r.dtype.name]
            print(f"{'ok ' if ok else 'BAD'} {label:28s} {str(extents):40s} {mode:5s} out{i} {r.dtype} err={err:.2e}", flush=True)
            if not ok:
                global failures
                failures += 1

failures = 0
for path, shapes in CASES:
    k = tiledsl.compile(path)
    for ext in shapes:
        try:
            run(k, ext, path.split("/")[-1])
        except Exception:
            failures += 1
            print("EXC", path, ext); traceback.print_exc()
for name, (src, shapes) in EXTRA.items():
    try:
        k = tiledsl.compile(src)
    except Exception:
        failures += 1; traceback.print_exc(); continue
    for ext in shapes:
        try:
            run(k, ext, name)
        except Exception:
            failures += 1
            print("EXC", name, ext); traceback.print_exc()
print("FAILURES", failures)

# The fast path (repeated call classes, ctypes launches): many calls, sizes and modes.
k = tiledsl.compile("kernel axpb(x: f32[N], y: f32[N], a: f32, b: f16[N]) -> (f32[N], f16[N]) {\n"
                    " return a * x + y, b * 2 }")
rng = np.random.default_rng()
bad = 0
for i in range(300):
    n = [1, 7, 1000, 4096, 100003][i % 5]
    x, y = cp.asarray(rng.standard_normal(n, dtype=np.float32)), cp.asarray(rng.standard_normal(n, dtype=np.float32))
    b = cp.asarray(rng.standard_normal(n).astype(np.float16))
    a = float(rng.standard_normal())
    if i % 2:
        o1, o2 = cp.full(n, np.nan, cp.float32), cp.full(n, np.nan, cp.float16)
        r1, r2 = k(x, y, a, b, out=(o1, o2))
        assert r1 is o1 and r2 is o2
    else:
        r1, r2 = k(x, y, a, b)
    e1 = relative_error(cp.asnumpy(r1), np.float32(a) * cp.asnumpy(x).astype(np.float64) + cp.asnumpy(y))
    e2 = relative_error(cp.asnumpy(r2), cp.asnumpy(b).astype(np.float64) * 2)
    if e1 > 1e-5 or e2 > 2e-3:
        bad += 1
print("fast path: 300 calls,", bad, "wrong; launcher classes:", len(k._launcher._fast))
failures += bad
print("FAILURES", failures)

# Calls that leave scalars to their defaults take the fast path too.
k = tiledsl.compile("examples/layernorm.tdsl")
x = cp.asarray(rng.standard_normal((64, 1000)).astype(np.float16))
w, b = cp.asarray(rng.standard_normal(1000, dtype=np.float32)), cp.asarray(rng.standard_normal(1000, dtype=np.float32))
for _ in range(3):
    got = k(x, w, b)
err = relative_error(cp.asnumpy(got), k.reference(cp.asnumpy(x), cp.asnumpy(w), cp.asnumpy(b), compute="f64"))
print("defaults via the fast path:", len(k._launcher._fast), "classes, err %.1e" % err)
import time as _t
slow_us = []
for _ in range(200):
    t0 = _t.perf_counter(); k(x, w, b, eps=1e-5); slow_us.append(_t.perf_counter() - t0)
print("checked (keyword) path: %.1f us per call" % (1e6 * sorted(slow_us)[100]))

# Split reductions: few rows, long reductions; checked, then timed against CuPy.
from benchmarks.common import time_cuda
import tiledsl.codegen
SPLIT = [
    ("kernel total(x: f32[M, N]) -> f32 { return sum(x) }", dict(M=4096, N=4096), lambda x: x.sum()),
    ("kernel colsum(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }", dict(M=16384, N=1024), lambda x: x.sum(axis=0)),
    ("kernel mv(x: f16[M, N]) -> (f32[N], f32[N]) { return mean(x, axis=M), max(x, axis=M) }", dict(M=100000, N=64), None),
    ("kernel rs(x: f32[M, N], e: f32) -> f32[M] { return rsqrt(mean(x * x, axis=N) + e) }", dict(M=4, N=1000000), None),
    ("kernel tiny(x: f32[M, N]) -> f32 { return max(abs(x)) }", dict(M=3, N=5000), None),
]
for src, ext, peer in SPLIT:
    k = tiledsl.compile(src)
    try:
        run(k, ext, k.name)
        host = random_arguments(k.graph, ext)
        dev = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host]
        t = time_cuda(lambda i: k(*dev), repeats=20).median_us
        extra = ""
        if peer is not None:
            extra = " cupy %.1f us" % time_cuda(lambda i: peer(dev[0]), repeats=20).median_us
        nbytes = sum(a.nbytes for a in host if isinstance(a, np.ndarray))
        tags = [st.schedule.tag for st in tiledsl.codegen.sources_for(k, ext)]
        print(f"split {k.name:8s} {str(ext):28s} tiledsl {t:.1f} us ({nbytes / t / 1e3:.0f} GB/s){extra}  {tags}")
    except Exception:
        failures += 1; traceback.print_exc()
print("FAILURES", failures)
