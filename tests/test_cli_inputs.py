"""Bad command-line and Python-API input: a one-line `error: ...` and a non-zero exit,
never a traceback (CPU only; no NVRTC compiles)."""
from __future__ import annotations

import pytest

import tiledsl
from tiledsl import cli
from tiledsl.errors import TdslArgumentError

from conftest import EXAMPLES

SOFTMAX = str(EXAMPLES / "softmax.tdsl")
TWO = "kernel a(x: f32[N]) -> f32[N] {\n    return x\n}\nkernel b(y: f32[M]) -> f32[M] {\n    return y\n}\n"
LITERAL = "kernel k(x: f32[N, 3], y: f32[3]) -> f32[N, 3] { return x + y }\n"


def run_cli(capsys, *argv):
    """(exit code, stdout, stderr) of `tiledsl ARGV`, whether it returns or exits."""
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exit_:
        rc = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return rc, out, err


def fails(capsys, *argv, words=()):
    """Run ARGV, which must fail cleanly with an error mentioning each of `words`."""
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 1, (rc, out, err)
    assert "Traceback" not in err and err.startswith("error: "), err
    for w in words:
        assert w in err, (w, err)
    return err


@pytest.fixture
def two(tmp_path):
    path = tmp_path / "two.tdsl"
    path.write_text(TWO)
    return path


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(cli, "_gpu_available", lambda: (False, "no CUDA device found"))


# -- --shape ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,words", [
    ("M=²,N=3", ["NAME=SIZE", "'M=²'"]),                     # str.isdigit() takes '²'; int() does not
    ("M=١٢,N=3", ["NAME=SIZE", "'M=١٢'"]),                   # was silently read as 12
    ("=3,M=2,N=2", ["NAME=SIZE"]),
    ("M=99999999999999999999,N=3", ["too large", "2^63"]),   # NumPy "Maximum allowed dimension exceeded"
    ("M=9223372036854775808,N=3", ["too large", "2^63"]),
    ("M=4,N=3,N=5", ["gives N twice", "N=3", "N=5"]),       # the last value silently won
])
def test_bad_shapes_are_clean_errors(capsys, no_gpu, shape, words):
    fails(capsys, "run", SOFTMAX, "--shape", shape, words=words)
    fails(capsys, "emit", SOFTMAX, "--stage", "cuda", "--shape", shape, words=words)


def test_a_run_too_large_for_host_memory_says_how_much_it_needs(capsys, no_gpu):
    # past what NumPy can index (it raised "array is too big"); 100000 x 100000 ran out of memory
    err = fails(capsys, "run", SOFTMAX, "--shape", f"M={2 ** 40},N={2 ** 40}",
                words=["host memory", "GiB", "bytes", f"M={2 ** 40}"])
    assert err.count("\n") == 1


def test_a_literal_dim_cannot_be_set(capsys, tmp_path):
    path = tmp_path / "lit.tdsl"
    path.write_text(LITERAL)
    fails(capsys, "emit", path, "--stage", "cuda", "--shape", "N=2,3=5", words=["dim 3", "literal 3"])
    rc, out, err = run_cli(capsys, "emit", path, "--stage", "cuda", "--shape", "N=2,3=3")
    assert rc == 0 and "__global__" in out, err


def test_one_shape_serves_every_kernel_of_a_file(capsys, no_gpu, two):
    rc, out, err = run_cli(capsys, "run", two, "--shape", "N=4,M=3")
    assert rc == 0, err
    assert "a [N=4]" in out and "b [M=3]" in out
    # --kernel: a dim of a sibling kernel is not an error
    rc, out, err = run_cli(capsys, "run", two, "--shape", "N=4,M=3", "--kernel", "b")
    assert rc == 0 and "b [M=3]" in out and "a [" not in out, err
    rc, out, err = run_cli(capsys, "emit", two, "--stage", "cuda", "--shape", "N=4,M=3", "--kernel", "b")
    assert rc == 0 and "tdsl_b_" in out and "tdsl_a_" not in out, err
    # a dim of no kernel, and a kernel missing its own dim, are still errors
    fails(capsys, "run", two, "--shape", "N=4,M=3,Q=1", words=["'Q' is not a dim of a or b", "N, M"])
    fails(capsys, "run", two, "--shape", "N=4", "--kernel", "b", words=["must give M for b"])


def test_emit_checks_every_kernel_before_printing_any(capsys, two):
    rc, out, err = run_cli(capsys, "emit", two, "--stage", "cuda", "--shape", "N=4")
    assert rc == 1 and out == "" and "must give M for b" in err


# -- numeric options, --arch -----------------------------------------------------------------

@pytest.mark.parametrize("argv,words", [
    (["run", SOFTMAX, "--shape", "M=2,N=2", "--seed", "-1"], ["--seed", "non-negative"]),
    (["emit", SOFTMAX, "--stage", "schedule", "--shape", "M=2,N=2", "--hbm-gbps", "-5"], ["--hbm-gbps"]),
    (["emit", SOFTMAX, "--stage", "schedule", "--shape", "M=2,N=2", "--hbm-gbps", "nan"], ["--hbm-gbps"]),
    (["emit", SOFTMAX, "--stage", "schedule", "--shape", "M=2,N=2", "--hbm-gbps", "inf"], ["--hbm-gbps"]),
    (["autotune", SOFTMAX, "--shape", "M=2,N=2", "--budget", "nan"], ["--budget", "positive"]),
    (["autotune", SOFTMAX, "--shape", "M=2,N=2", "--dry-run", "--max-candidates", "0"], ["--max-candidates"]),
    (["autotune", SOFTMAX, "--shape", "M=2,N=2", "--dry-run", "--max-candidates", "-1"], ["--max-candidates"]),
    (["autotune", SOFTMAX, "--shape", "M=2,N=2", "--dry-run", "--workers", "0"], ["--workers"]),
    (["autotune", SOFTMAX, "--shape", "M=2,N=2", "--dry-run", "--workers", "-3"], ["--workers"]),
    (["autotune", SOFTMAX, "--shape", "M=2,N=2", "--dry-run", "--top", "-1"], ["--top"]),
    (["bench", SOFTMAX, "--shape", "M=2,N=2", "--seed", "-1"], ["--seed"]),
])
def test_numeric_options_out_of_range(capsys, no_gpu, argv, words):
    fails(capsys, *argv, words=words)


@pytest.mark.parametrize("arch", ["foo", "compute_90", "SM_90a", "sm_90a -DX", "sm_70", "sm_90A", "sm_86a"])
def test_unsupported_arch_is_named_with_what_is_supported(capsys, arch):
    # was a ValueError traceback from toolchain.compile_cuda, or "internal tiledsl bug: NVRTC rejected ..."
    words = [f"unsupported architecture {arch!r}", "sm_80", "sm_90a"]
    fails(capsys, "emit", SOFTMAX, "--stage", "cubin", "--shape", "M=4,N=4", "--arch", arch, words=words)
    fails(capsys, "autotune", SOFTMAX, "--shape", "M=4,N=4", "--dry-run", "--arch", arch, words=words)


def test_check_arch_accepts_what_tiledsl_targets():
    from tiledsl.runtime.toolchain import check_arch, compile_cuda, supported_archs
    for arch in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"):
        assert arch in supported_archs() and check_arch(arch) == arch
    with pytest.raises(tiledsl.TdslArgumentError, match="did you mean 'sm_90a'"):
        check_arch("SM_90a")
    with pytest.raises(tiledsl.TdslArgumentError, match="unsupported architecture"):
        compile_cuda("", arch="sm_70")


def test_a_dry_run_where_nothing_compiled_fails(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEDSL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("tiledsl.tune.compile._compile_here", lambda source, arch: {"error": "error: NVRTC said no"})
    rc, out, err = run_cli(capsys, "autotune", SOFTMAX, "--shape", "M=64,N=64", "--dry-run",
                           "--max-candidates", "2", "--workers", "1", "-q")
    assert rc == 1 and "Traceback" not in err
    assert "no candidate of softmax's group 0" in err and "2 failed" in err and "NVRTC said no" in err
    assert "softmax [M=64, N=64]" in out      # the table still shows every candidate


# -- what is checked before the GPU ----------------------------------------------------------

def test_bench_and_autotune_check_the_input_before_the_gpu(capsys, no_gpu):
    fails(capsys, "bench", SOFTMAX, "--shape", "M=64", words=["must give N"])
    fails(capsys, "autotune", SOFTMAX, "--shape", "M=64", words=["must give N"])
    fails(capsys, "autotune", EXAMPLES / "nope.tdsl", "--shape", "M=64,N=64", "--vs", "torch",
          words=["cannot read"])
    rc, _, err = run_cli(capsys, "bench", SOFTMAX, "--shape", "M=64,N=64")
    assert rc == 2 and "needs an NVIDIA GPU" in err


# -- run's output: infinities, empty results -------------------------------------------------

def test_run_statistics_of_infinite_results_print_no_warnings(capsys, tmp_path, recwarn):
    path = tmp_path / "inf.tdsl"
    path.write_text("kernel k(x: f32[N]) -> f32[N] { return x / 0 }\n")
    rc, out, err = run_cli(capsys, "run", path, "--shape", "N=8", "--cpu", "--seed", "1")
    assert rc == 0 and err == "", err
    assert "min -inf max inf (8 infinite)" in out
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_empty_results_say_that_nothing_launches(capsys, no_gpu):
    rc, out, err = run_cli(capsys, "emit", SOFTMAX, "--stage", "cubin", "--shape", "M=0,N=5")
    assert rc == 0 and out.strip() == "// no kernel launches at M=0 (every result of softmax is empty)", err
    rc, out, err = run_cli(capsys, "run", SOFTMAX, "--shape", "M=0,N=5")
    assert rc == 0 and "note: no kernel launches at M=0" in out and "result 0: f32[0, 5] (no values)" in out
    import numpy as np
    k = tiledsl.compile("kernel k(x: f32[N]) -> f32[N] { return x * 2 }")
    assert k.cuda_source(np.zeros(0, np.float32)) == "// no kernel launches at N=0 (every result of k is empty)"


# -- the Python API ----------------------------------------------------------------------------

def test_module_lookup_by_key_names_the_kernels(two):
    m = tiledsl.compile(two)
    for key in ("nope", 0):
        with pytest.raises(KeyError) as info:
            m[key]
        assert isinstance(info.value, tiledsl.TdslError)
        assert str(info.value) == f"error: module '{two}' has no kernel {key!r}; it has a, b"
    assert m["b"] is m.b


def test_compile_reads_a_one_line_path_as_a_path(tmp_path):
    for path, why in ((tmp_path, "Is a directory"), (tmp_path / "nope", "No such file"),
                      (tmp_path / "nope.tdsl", "No such file")):
        with pytest.raises(tiledsl.TdslError, match=f"cannot read '{path}': {why}"):
            tiledsl.compile(str(path))
    # source text stays source text
    assert tiledsl.compile("kernel k(x: f32[N]) -> f32[N] { return x / 2 }").name == "k"
    with pytest.raises(tiledsl.TdslSyntaxError):
        tiledsl.compile("kernel k(x: f32[N]) -> f32[N]\n")


@pytest.mark.parametrize("options,says", [(dict(budget=0), "budget"), (dict(budget=float("nan")), "budget"),
                                          (dict(max_candidates=0), "max_candidates"),
                                          (dict(max_candidates=2.5), "max_candidates")])
def test_kernel_autotune_from_python_checks_its_options_first(options, says):
    """Kernel.autotune's budget and candidate count are checked before anything else (the
    arguments, CuPy, the GPU), as the command line's are."""
    k = tiledsl.compile("kernel s(x: f32[N]) -> f32[N] { return x * 2.0 }")
    with pytest.raises(TdslArgumentError, match=f"autotune\\({says}="):
        k.autotune(None, **options)
