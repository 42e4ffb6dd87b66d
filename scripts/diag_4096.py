"""Why do 4096x8192 norms time slower in the benchmark than in the sweep? (device run)"""
import sys, time
sys.path.insert(0, ".")
import cupy as cp
import tiledsl
import tiledsl.runtime.launcher as L
import benchmarks.bench_memory as bm

calls = {"slow": 0}
orig = L.Launcher._call
def counting(self, *a, **k):
    calls["slow"] += 1
    return orig(self, *a, **k)
L.Launcher._call = counting
sys.argv = ["bench", "--only", "rmsnorm", "--impl", "tiledsl", "--skip-launch", "--skip-compile"]
bm.main()
print("slow-path calls during the rmsnorm family:", calls["slow"])
k = tiledsl.compile("examples/rmsnorm.tdsl")
x = cp.random.randn(4096, 8192).astype(cp.float16); w = cp.random.randn(8192).astype(cp.float16)
o = cp.empty_like(x)
k(x, w, out=o); cp.cuda.runtime.deviceSynchronize()
t = time.perf_counter()
for _ in range(1000):
    k(x, w, out=o)
host = (time.perf_counter() - t) / 1000 * 1e6
cp.cuda.runtime.deviceSynchronize()
t = time.perf_counter()
for _ in range(1000):
    k(x, w, out=o)
cp.cuda.runtime.deviceSynchronize()
print(f"host time per call {host:.1f} us, wall per call incl. GPU {(time.perf_counter() - t) / 1000 * 1e6:.1f} us")
print("fast classes:", len(k._launcher._fast), "slow calls total:", calls["slow"])
