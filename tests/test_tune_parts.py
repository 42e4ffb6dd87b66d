"""Small parts of the autotuner on the CPU: roofline arithmetic, the safety
check's error on NumPy, the CuPy evaluator (run with NumPy) against the
reference, peers, the progress bar's plain-text fallback, the CLI without a GPU."""
from __future__ import annotations

import io

import numpy as np
import pytest

import tiledsl
from tiledsl import cli
from tiledsl.inputs import TOLERANCE, random_arguments, relative_error as reference_error
from tiledsl.tune import peers, roofline, safety
from tiledsl.tune.cupy_eval import Evaluator
from tiledsl.tune.progress import Progress
from tiledsl.tune.timing import input_sets_needed, repeats_for

from conftest import EXAMPLES, ROOT

MATMUL = "kernel mm(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }"


# -- roofline -------------------------------------------------------------------------

def test_work_of_a_matmul_and_of_layernorm():
    w = roofline.work(tiledsl.compile(MATMUL).graph, dict(M=4096, N=4096, K=4096))
    assert w.flops == 2 * 4096 ** 3 and w.bytes == 3 * 4096 * 4096 * 2
    assert w.matmul and w.tensor_cores
    ln = tiledsl.compile(str(EXAMPLES / "layernorm.tdsl"))
    w = roofline.work(ln.graph, dict(M=1024, N=4096))
    assert not w.matmul and w.bytes == 1024 * 4096 * 2 * 2 + 4096 * 4 * 2
    f32 = roofline.work(tiledsl.compile(MATMUL.replace("f16", "f32")).graph, dict(M=8, N=8, K=8))
    assert f32.matmul and not f32.tensor_cores


def test_peaks_and_rates():
    assert roofline.peak_for("NVIDIA H200").name == "H200 SXM"
    assert roofline.peak_for("NVIDIA H100 80GB HBM3").name == "H100 SXM"
    assert roofline.peak_for("NVIDIA H100 PCIe").name == "H100 PCIe"
    assert roofline.peak_for("Some Future GPU") is None
    mm = roofline.work(tiledsl.compile(MATMUL).graph, dict(M=4096, N=4096, K=4096))
    h200 = roofline.peak_for("NVIDIA H200")
    r = roofline.rate(2 * 4096 ** 3 / 494.7e12, mm, h200, 4.0e12)
    assert r.unit == "TFLOP/s" and r.value == pytest.approx(494.7e12) and r.fraction == pytest.approx(0.5)
    assert r.columns() == ("494.70", "50.0%")
    assert roofline.rate(1.0, mm, None, 4.0e12).fraction is None
    mem = roofline.Work(flops=0, bytes=2e9, matmul=False, tensor_cores=False)
    r = roofline.rate(1e-3, mem, None, 4.0e12)
    assert r.unit == "TB/s" and r.fraction == pytest.approx(0.5)
    assert roofline.rate(0.0, mem, None, 4e12).columns() == ("-", "-")
    # a thin matmul is bound by bandwidth: intensity x bandwidth is its roof
    thin = roofline.work(tiledsl.compile(MATMUL).graph, dict(M=16, N=8192, K=8192))
    assert roofline.roof(thin, h200, 4.0e12) == pytest.approx(thin.intensity * 4.0e12)


# -- the safety check's arithmetic ------------------------------------------------------

@pytest.mark.parametrize("case", ["equal", "close", "nan_in_result", "nan_in_both", "inf_match", "inf_mismatch",
                                  "zero_reference", "shape"])
def test_device_relative_error_matches_the_projects_definition(case, rng):
    ref = rng.standard_normal((7, 5))
    got = ref.copy()
    if case == "close":
        got = ref + 1e-4 * rng.standard_normal(ref.shape)
    elif case == "nan_in_result":
        got[2, 3] = np.nan
    elif case == "nan_in_both":
        ref[1, 1] = got[1, 1] = np.nan
        got[0, 0] += 0.5
    elif case == "inf_match":
        ref[0, 0] = got[0, 0] = np.inf
    elif case == "inf_mismatch":
        ref[0, 0] = np.inf
    elif case == "zero_reference":
        ref[:] = 0
        got = ref + 1e-3
    elif case == "shape":
        got = got[:, :4]
    mine = safety.relative_error(np, got, ref)
    with np.errstate(invalid="ignore"):
        want = reference_error(got, ref)
    assert (mine == want) or mine == pytest.approx(want, rel=1e-12)


def test_results_of_few_elements_are_judged_on_positive_inputs():
    """A scalar sum of zero-mean terms can land near zero by chance, where its relative
    error says nothing about the kernel: such kernels draw positive inputs, and so do
    kernels whose result has at most FEW_ELEMENTS elements at the call's extents (a
    column sum of 1000x1 failed 1e-5 once so). Larger results keep zero-mean inputs
    (their norm does not vanish by chance)."""
    from tiledsl.inputs import FEW_ELEMENTS
    columns = tiledsl.compile("kernel c(x: f32[M, N]) -> f32[N] { return sum(x, axis=M) }")
    (one,) = random_arguments(columns.graph, dict(M=1000, N=1))
    (few,) = random_arguments(columns.graph, dict(M=1000, N=FEW_ELEMENTS))
    (many,) = random_arguments(columns.graph, dict(M=1000, N=FEW_ELEMENTS + 1))
    assert (one > 0).all() and (few > 0).all() and (many < 0).any()
    dot = tiledsl.compile("kernel d(x: f32[K], y: f32[K]) -> f32 { return x @ y }")
    rows = tiledsl.compile("kernel r(x: f32[M, K], y: f32[K]) -> f32[M] { return x @ y }")
    x, y = random_arguments(dot.graph, dict(K=4096))
    assert (x > 0).all() and (y > 0).all() and len(np.unique(x)) > 4000
    a, v = random_arguments(rows.graph, dict(M=64, K=4096))
    assert (a < 0).any() and (v < 0).any()
    # divided by a sum of few elements: x / sum(x) over 2^18 normal f32 once missed 1e-5
    share = tiledsl.compile("kernel s(x: f32[M, N]) -> f32[M, N] { return x / -f32(sum(x, axis=N)) }")
    (few_rows,) = random_arguments(share.graph, dict(M=FEW_ELEMENTS, N=1 << 18))
    (many_rows,) = random_arguments(share.graph, dict(M=FEW_ELEMENTS + 1, N=1 << 18))
    assert (few_rows > 0).all() and (many_rows < 0).any()


def test_poison_and_corrupt_on_numpy_arrays():
    f = np.ones(20, np.float16)
    safety.poison(f)
    assert np.isnan(f).all()
    i = np.ones(20, np.int32)
    safety.poison(i)
    assert (i.view(np.uint8) == 0xAB).all()
    x = np.arange(1, 22, dtype=np.float32)
    y = x.copy()
    safety.corrupt(y)
    assert np.isfinite(y).all() and reference_error(y, x) > 0.1
    b = np.zeros(14, bool)
    safety.corrupt(b)
    assert b.sum() == 2


# -- the CuPy evaluator, run with NumPy --------------------------------------------------

@pytest.mark.parametrize("example,extents", [("softmax.tdsl", dict(M=5, N=33)), ("layernorm.tdsl", dict(M=4, N=64)),
                                             ("sincos.tdsl", dict(N=100)), ("gelu_bias.tdsl", None),
                                             ("linear.tdsl", dict(M=9, K=16, N=24)),
                                             ("batched_matmul.tdsl", None), ("column_sum.tdsl", dict(M=7, N=5))])
def test_evaluator_agrees_with_the_reference(example, extents, rng):
    k = tiledsl.compile(str(EXAMPLES / example))
    extents = extents or {d: 6 + i for i, d in enumerate(k.graph.dims)}
    args = random_arguments(k.graph, extents, int(rng.integers(1 << 30)))
    want = k.reference(*args, compute="f64")
    got = Evaluator(k.graph, np)(args, extents)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for g, w, r in zip(got, want, k.graph.results):
        assert g.dtype == r.dtype.numpy
        # a result stored in bf16 may land one ulp apart where f32 and f64 round a tie
        # differently (gelu_bias, seed 3145588239863972706: 5.421875 rounds up in f32 and
        # down in f64); f16 matmul products are rounded to f16 once (cuBLAS-style)
        assert reference_error(g, w) <= (1e-2 if r.dtype.name == "f16" else TOLERANCE[r.dtype.name])


def test_plain_matmul_detection():
    assert peers.plain_matmul(tiledsl.compile(MATMUL).graph) == (0, 1)
    assert peers.plain_matmul(tiledsl.compile(MATMUL.replace("-> f16", "-> f32")).graph) == (0, 1)
    assert peers.plain_matmul(tiledsl.compile(str(EXAMPLES / "batched_matmul.tdsl")).graph) is not None
    for src in ("kernel t(a: f16[M, K], b: f16[N, K]) -> f16[M, N] { return a @ b.T }",
                "kernel r(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return relu(a @ b) }",
                "kernel s(a: f16[M, K], b: f16[K, N]) -> f16[N, M] { return a @ b }",
                "kernel x(a: f32[M, N]) -> f32[M, N] { return a * 2 }"):
        assert peers.plain_matmul(tiledsl.compile(src).graph) is None, src
    assert peers.parse_peers("cupy, TRITON,cupy") == ["cupy", "triton"]
    with pytest.raises(tiledsl.TdslArgumentError, match="unknown peer torch"):
        peers.parse_peers("torch")


# -- timing arithmetic, progress ---------------------------------------------------------

def test_input_rotation_and_repeats():
    l2 = 50 << 20
    assert input_sets_needed(1 << 30, l2) == 1
    assert input_sets_needed(96 << 20, l2) == 2
    assert input_sets_needed(1 << 20, l2) == 16
    assert input_sets_needed(1 << 20, l2, free_bytes=8 << 20) == 2
    assert repeats_for(1e-3) == 50 and repeats_for(1.0) == 10 and repeats_for(1e-7) == 200


def test_progress_plain_text_fallback():
    out = io.StringIO()
    p = Progress(5, "autotune t", stream=out, use_tqdm=False)
    p.count("pruned")
    p.set_phase("compiling")
    p.count("compiled", finished=False)
    p.count("timed")
    p.count("wrong")
    p.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "autotune t: 1/5 candidates [compiling]: compiled 0 pruned 1 failed 0 timed 0"
    assert lines[-1] == "autotune t: 3/5 candidates [compiling]: compiled 1 pruned 1 failed 0 timed 1 wrong 1"
    quiet = io.StringIO()
    q = Progress(2, stream=quiet, enabled=False)
    q.count("timed")
    q.close()
    assert quiet.getvalue() == ""


# -- the command line without a GPU -----------------------------------------------------------

def _cli(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_autotune_and_bench_without_a_gpu_exit_2(capsys, monkeypatch):
    monkeypatch.setattr(cli, "_gpu_available", lambda: (False, "CuPy is not installed"))
    path = str(EXAMPLES / "softmax.tdsl")
    rc, out, err = _cli(capsys, "autotune", path, "--shape", "M=64,N=64")
    assert rc == 2 and "needs an NVIDIA GPU (CuPy is not installed)" in err and "--dry-run" in err
    rc, out, err = _cli(capsys, "bench", path, "--shape", "M=64,N=64", "--vs", "cupy")
    assert rc == 2 and "needs an NVIDIA GPU" in err


def test_autotune_bad_input_is_a_located_error(capsys):
    path = str(EXAMPLES / "softmax.tdsl")
    rc, _, err = _cli(capsys, "autotune", path, "--shape", "M=64", "--dry-run")
    assert rc == 1 and "--shape must give N" in err
    rc, _, err = _cli(capsys, "autotune", path, "--shape", "M=64,N=64", "--vs", "torch", "--dry-run")
    assert rc == 1 and "unknown peer torch" in err
    rc, _, err = _cli(capsys, "autotune", path, "--shape", "M=64,N=64", "--budget", "0")
    assert rc == 1 and "--budget takes a positive number" in err
    rc, _, err = _cli(capsys, "autotune", path, "--shape", "M=64,N=64", "--kernel", "nope", "--dry-run")
    assert rc == 1 and "no kernel 'nope'" in err


def test_autotune_dry_run_lists_the_space_with_reasons(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEDSL_CACHE_DIR", str(tmp_path))
    out_json = tmp_path / "dry.json"
    rc, out, err = _cli(capsys, "autotune", str(EXAMPLES / "softmax.tdsl"), "--shape", "M=100,N=4099",
                        "--dry-run", "--max-candidates", "3", "--json", str(out_json), "-q")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == "softmax [M=100, N=4099] on sm_90a (no GPU: compiled, not run)"
    assert lines[1].startswith("group 0 (reduce): 3 candidates: ")
    assert "(default)" in out and "dry run:" in out
    import json
    data = json.loads(out_json.read_text())
    assert data[0]["origin"] == "dry run" and len(data[0]["groups"][0]["candidates"]) == 3
    assert all(c["status"] in ("compiled", "pruned") for c in data[0]["groups"][0]["candidates"])


def test_plot_without_matplotlib_says_how_to_get_it(monkeypatch):
    import builtins
    from tiledsl.tune.plot import roofline_plot
    real_import = builtins.__import__

    def no_matplotlib(name, *a, **k):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(tiledsl.TdslRuntimeError, match="pip install matplotlib"):
        roofline_plot(object(), "x.png")


def test_the_readme_documents_the_tuning_commands():
    text = (ROOT / "README.md").read_text()
    for needle in ("tiledsl autotune", "tiledsl bench", "TILEDSL_TUNING_DB", "--dry-run", "tuning.json"):
        assert needle in text, needle
