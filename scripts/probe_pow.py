"""Does the GPU's ** give exactly the float64 reference's value where that is exact?
(A GPU fuzz failure, 2026-11-27: `where(p2 ** 2 < p4 @ p5 + p0, ...)` flipped at ties.)"""
import numpy as np
import cupy
import tiledsl

values = np.array([k / 4 for k in range(-8, 9)] + [3.0, 5.0, 7.0, 12.5, 0.1, 1e-3, 1e3], dtype=np.float64)
for dtype in ("f64", "f32", "f16"):
    for e in ("2", "3", "0.5", "1.5"):
        k = tiledsl.compile(f"kernel p(x: {dtype}[N]) -> f64[N] {{ return x ** {e} }}")
        x = values.astype({"f64": np.float64, "f32": np.float32, "f16": np.float16}[dtype])
        got = cupy.asnumpy(k(cupy.asarray(x)))
        want = np.asarray(k.reference(x), np.float64)
        bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
        print(f"{dtype} ** {e}: {int(bad.sum())} differ" + "".join(
            f"\n   x={x[i]!r}: gpu {got[i]!r} reference {want[i]!r}" for i in np.flatnonzero(bad)[:6]))
    k = tiledsl.compile(f"kernel p(x: {dtype}) -> f64 {{ return x ** 2 }}")     # a scalar parameter
    for v in values:
        g, w = float(k(float(v))), float(k.reference(float(v)))
        if g != w:
            print(f"   scalar {dtype} {v} ** 2: gpu {g!r} reference {w!r}")

SRC = """kernel prop(p0: f16[M, N, K], p1: f16, p2: f64, p4: f16[M, N], p5: f16[N, K]) -> f64[M, N, K] {
    return where((p2 ** 2 < (p4 @ p5 + p0)), p0, p1)
}"""
k = tiledsl.compile(SRC)
rng = np.random.default_rng(1)
dy = lambda shape: (rng.integers(1, 9, size=shape) / 4 * rng.choice([-1, 1], size=shape))
fails = 0
for trial in range(300):
    M, N, K = 1, 31, 16
    args = [dy((M, N, K)).astype(np.float16), np.float16(dy(())), float(dy(())), dy((M, N)).astype(np.float16),
            dy((N, K)).astype(np.float16)]
    got = cupy.asnumpy(k(*[cupy.asarray(a) if isinstance(a, np.ndarray) and a.ndim else a for a in args]))
    want = np.asarray(k.reference(*args), np.float64)
    bad = got != want
    if bad.any():
        fails += 1
        if fails <= 3:
            i = tuple(np.argwhere(bad)[0])
            t7 = (args[3].astype(np.float64) @ args[4].astype(np.float64))[i[0], i[2]] + float(args[0][i])
            print(f"trial {trial}: {int(bad.sum())} differ; at {i}: p2 {args[2]!r} p2**2 {args[2] ** 2!r} t7 {t7!r}")
print(f"program: {fails} of 300 trials differ")
