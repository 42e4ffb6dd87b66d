"""The `tiledsl` command line: check, emit, run, --help and --version (CPU only)."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

import tiledsl
from tiledsl import cli

from conftest import EXAMPLE_FILES, EXAMPLES, ROOT


def run_cli(capsys, *argv):
    """(exit code, stdout, stderr) of `tiledsl ARGV`, whether it returns or exits."""
    try:
        rc = cli.main(list(argv))
    except SystemExit as exit_:
        rc = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    out, err = capsys.readouterr()
    return rc, out, err


def test_check_all_examples(capsys, in_repo_root):
    paths = [f"examples/{p.name}" for p in EXAMPLE_FILES]
    rc, out, err = run_cli(capsys, "check", *paths)
    assert rc == 0, err
    assert err == ""
    for p in paths:
        assert f"{p}: ok: " in out
    # one line per kernel; attention.tdsl has two
    assert out.count(": ok: ") == len(paths) + 1
    assert "examples/attention.tdsl: ok: causal_attention(q: f16[T, D], k: f16[S, D], " \
           "v: f16[S, D], scale: f32) -> f16[T, D]" in out
    assert "examples/layernorm.tdsl: ok: layernorm(x: f16[M, N], w: f32[N], b: f32[N], " \
           "eps: f32 = 1e-05) -> f16[M, N]" in out


MLP_F32_HIDDEN = ("kernel mlp(x: f16[M, D], w1: f16[D, H], w2: f16[H, E]) -> f16[M, E] {\n"
                  "    h = relu(x @ w1)\n"
                  "    return h @ w2\n"
                  "}\n")


def test_check_notes_a_product_that_leaves_the_tensor_cores(capsys, tmp_path):
    """Valid but slow as written: an f16 operand widened to meet an f32 one. A note with the
    product's location and a caret on stderr; the check still passes."""
    path = tmp_path / "mlp.tdsl"
    path.write_text(MLP_F32_HIDDEN)
    rc, out, err = run_cli(capsys, "check", str(path))
    assert rc == 0 and f"{path}: ok: mlp(" in out
    assert err.count("note:") == 1 and f"{path}:3:12: note: this product multiplies f32 by f32 on the CUDA " \
        "cores" in err and "f16(...)" in err
    assert "        return h @ w2\n               ^~~~~~" in err
    # the fix the note names, TF32 opted in, or f32 operands throughout: no note
    assert tiledsl.compile(MLP_F32_HIDDEN.replace("h = relu(x @ w1)", "h = f16(relu(x @ w1))")).notes == []
    assert tiledsl.compile(MLP_F32_HIDDEN + "schedule mlp { tf32(true) }\n").notes == []
    assert tiledsl.compile("kernel mm(a: f32[M, K], b: f32[K, N]) -> f32[M, N] { return a @ b }").notes == []
    assert len(tiledsl.compile("kernel mm(a: f32[M, K], b: bf16[N, K]) -> f32[M, N] { return a @ b.T }").notes) == 1
    # attention's probabilities in f32: cast to f16, the softmax kernel would store them
    text = (EXAMPLES / "attention.tdsl").read_text()
    assert "f16(p / sum(p, axis=S)) @ v" in text
    assert all(len(k.notes) == 1 for k in tiledsl.compile(text.replace("f16(p / sum(p, axis=S))", "(p / sum(p, axis=S))")))
    # ... but where they would stay in the product's prologue, whose tensor-core tiles load element by
    # element (slower than f32 tiles split over K, H100 2026-11-23), no note: here the statistics come
    # from a reduction over another dim than the product's
    odd = text.replace("f16(p / sum(p, axis=S)) @ v", "(p / sum(p, axis=T)) @ v")
    assert all(k.notes == [] for k in tiledsl.compile(odd))
    # -q prints errors only
    assert run_cli(capsys, "check", "-q", str(path)) == (0, "", "")


@pytest.mark.parametrize("src,ignored", [
    ("kernel s(x: f32[M, N]) -> f32[M, N] { return x * 2.0 }\nschedule s { tile(M=64, N=64) cluster(4) vector(4) }",
     ["tile()", "cluster()"]),
    ("kernel m(a: f16[M, K], b: f16[K, N]) -> f16[M, N] { return a @ b }\nschedule m { tf32(true) threads(32) }",
     ["threads()", "tf32(true)"]),
    ("kernel s(x: f32[M, N]) -> f32[M, N] { return x - max(x, axis=N) }\nschedule s { cluster(2) stages(2) }", []),
    ("kernel m(a: f32[M, K], b: f32[K, N]) -> f32[M, N] { return a @ b }\nschedule m { tf32(true) warps(4) }", []),
])
def test_check_notes_directives_that_change_nothing(src, ignored):
    """A schedule directive that no part of the kernel reads (tile() without a product,
    cluster() without a reduction, tf32(true) on 16-bit products) is accepted, with a
    note at the schedule block saying it changes nothing."""
    notes = [n for n in tiledsl.compile(src).notes if "changes nothing" in n]
    assert [n.split("note: ")[1].split(" ")[0] for n in notes] == ignored, notes
    assert all(n.startswith("<string>:2:1: note:") for n in notes), notes

@pytest.mark.parametrize("src", [
    "kernel mm(a: f32[M, K], w: f32[N, K]) -> f32[M, N] { return a @ w.T }",
    "kernel mm(a: f32[M, K], w: f32[K, N]) -> f32[M, N] { return a @ w }",
    "kernel mm(at: f32[K, M], w: f32[K, N]) -> f32[M, N] { return at.T @ w }",
    "kernel mm(at: f32[K, M], w: f32[N, K]) -> f32[M, N] { return at.T @ w.T }",
    "kernel mm(a: f32[M, K], w: f32[N, K]) -> f32[M, N] { return exp(a) @ w.T }",
    "kernel mm(a: f32[B, M, K], w: f32[N, K]) -> f32[B, M, N] { return a @ w.T }",
    "kernel mm(x: f16[M, D], w1: f16[D, H], w2: f32[E, H]) -> f32[M, E] {\n  h = relu(x @ w1)\n  return h @ w2.T }",
    "kernel mm(x: f16[M, D], w1: f16[D, H], w2: f16[H, E]) -> f32[M, E] {\n  h = relu(x @ w1)\n  return h @ w2 }",
    "kernel mm(x: f32[M, K], w1: f32[K, H], w2: f32[M, E]) -> f32[H, E] {\n  h = relu(x @ w1)\n  return h.T @ w2 }",
], ids=["linear", "b-along-n", "a-along-m", "a-along-m-linear", "computed", "batched", "stored-by-a-product",
        "widened-weight", "product-along-m"])
def test_the_tf32_note_says_where_tf32_does_not_apply(src):
    """With tf32(true), a note exactly where the Hopper schedule still multiplies exact f32 on the CUDA cores."""
    from tiledsl.codegen import sources_for
    k = tiledsl.compile(src + "\nschedule mm { tf32(true) }")
    e = dict(M=2048, N=2048, K=2048, B=2, D=2048, H=2048, E=2048)
    last = sources_for(k, e, arch="sm_90a")[-1].schedule
    tf32 = last.wgmma and last.vec == 4
    off = [n for n in k.notes if "tf32(true) leaves this product exact f32" in n]
    assert len(off) == (0 if tf32 else 1), (k.notes, last.tag)
    assert all("the left operand is not" in n for n in off)
    # no copy for an operand whose product stays off TF32 anyway
    from tiledsl.ir.graph import stored_copy, unpermuted
    last_product = [v for v in k.graph.values if v.op == "matmul"][-1]
    assert tf32 or not any(stored_copy(o) for o in last_product.operands)
    # a parameter copied laid out along K for TF32 is named, once per copy
    copied = [unpermuted(stored_copy(o).operands[0]) for v in k.graph.values if v.op == "matmul"
              for o in v.operands if stored_copy(o) is not None]
    copied = [k.graph.params[c.attr("index")].name for c in copied if c.op == "param"]
    notes = [n for n in k.notes if "tf32(true) copies" in n]
    assert [n.split("'")[1] for n in notes] == copied
    assert len(notes) + len(off) == len(k.notes)


def test_check_quiet(capsys, in_repo_root):
    rc, out, err = run_cli(capsys, "check", "-q", *[str(p) for p in EXAMPLE_FILES])
    assert (rc, out, err) == (0, "", "")


def test_check_bad_file_exits_1_with_caret(capsys, tmp_path):
    bad = tmp_path / "bad.tdsl"
    bad.write_text("kernel k(x: f32[M, N]) -> f32[M] {\n    return sum(x, axis=K)\n}\n")
    rc, out, err = run_cli(capsys, "check", str(bad))
    assert rc == 1
    lines = err.splitlines()
    assert lines[0] == f"{bad}:2:24: error: unknown dim 'K' (this kernel's dims: M, N)"
    assert lines[1] == "        return sum(x, axis=K)"
    assert lines[2] == " " * 27 + "^"


def test_version(capsys):
    rc, out, err = run_cli(capsys, "--version")
    assert rc == 0
    assert out.strip() == f"tiledsl {tiledsl.__version__}"
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", tiledsl.__version__)


def test_no_command_prints_help(capsys):
    rc, out, err = run_cli(capsys)
    assert rc == 2
    assert "usage: tiledsl" in out


def test_help(capsys):
    rc, out, err = run_cli(capsys, "--help")
    assert rc == 0
    for sub in ("check", "emit", "run"):
        assert re.search(rf"^\s+{sub}\s+\S", out, re.M), f"'{sub}' not listed in --help"
    assert "--version" in out


@pytest.mark.parametrize("sub,words", [
    ("check", ["FILE", "--quiet", "file:line:col"]),
    ("emit", ["FILE", "--stage", "--shape", "--kernel", "ir"]),
    ("run", ["FILE", "--shape", "--cpu", "--seed", "--kernel"]),
])
def test_subcommand_help(capsys, sub, words):
    rc, out, err = run_cli(capsys, sub, "--help")
    assert rc == 0
    assert out.startswith(f"usage: tiledsl {sub}")
    for w in words:
        assert w in out, f"{sub} --help does not mention {w}"


def test_unknown_subcommand_is_a_usage_error(capsys):
    rc, out, err = run_cli(capsys, "frobnicate")
    assert rc == 2
    assert "invalid choice" in err


def test_emit_ir(capsys, in_repo_root):
    rc, out, err = run_cli(capsys, "emit", "examples/softmax.tdsl", "--stage", "ir")
    assert rc == 0, err
    assert out.startswith("kernel softmax(x: f32[M, N]) -> (f32[M, N]) {")
    assert "%0 = param x : f32[M, N]" in out
    assert re.search(r"%\d+ = reduce %\d+ axes=\(N\) kind=max : f32\[M\]", out)
    assert re.search(r"%\d+ = reduce %\d+ axes=\(N\) kind=sum : f32\[M\]", out)
    assert re.search(r"^  return %\d+$", out, re.M)


def test_emit_ir_is_the_default_stage_and_kernel_selects(capsys, in_repo_root):
    rc, out, err = run_cli(capsys, "emit", "examples/attention.tdsl", "--kernel", "causal_attention")
    assert rc == 0, err
    assert "kernel causal_attention(" in out
    assert "kernel attention(" not in out
    assert "%0 = param q : f16[T, D]" in out
    assert re.search(r"= idx dim=S : i64\[S\]", out)
    rc, out, err = run_cli(capsys, "emit", "examples/attention.tdsl")
    assert out.count("%0 = param q") == 2


def test_emit_unknown_kernel(capsys, in_repo_root):
    rc, out, err = run_cli(capsys, "emit", "examples/attention.tdsl", "--kernel", "atention")
    assert rc == 1
    assert "has no kernel 'atention'" in err and "attention, causal_attention" in err


def test_emit_gpu_stage_without_codegen_is_a_clear_error(capsys, in_repo_root):
    rc, out, err = run_cli(capsys, "emit", "examples/softmax.tdsl", "--stage", "cuda",
                           "--shape", "M=4,N=4")
    if rc == 0:      # code generation exists: it must print CUDA C++
        assert "__global__" in out
    else:
        assert rc == 1 and err.startswith("error: ") and "Traceback" not in err


def test_emit_schedule_follows_the_given_memory_bandwidth(capsys, in_repo_root):
    """The layernorm rule reads the GPU's bandwidth per SM; --hbm-gbps lets the CPU show an H100's choice."""
    args = ("emit", "examples/layernorm.tdsl", "--stage", "schedule", "--shape", "M=16384,N=4096")
    rc, h100, err = run_cli(capsys, *args, "--hbm-gbps", "3352")
    assert rc == 0, err
    rc, unknown, err = run_cli(capsys, *args)
    assert rc == 0, err
    assert "_nh_r40_x32" in h100 and "min_blocks=6" in h100
    assert "_p_x32" in unknown and "prefetch=True" in unknown
    rc, out, err = run_cli(capsys, *args, "--hbm-gbps", "lots")
    assert rc == 2 and "invalid float value" in err


def test_emit_schedule_shows_the_groups_a_call_runs(capsys, in_repo_root):
    """A softmax of one long row runs spread: emit's schedule stage lists those groups
    (two reductions, then a pointwise group) and their kernels, not the fused one's."""
    args = ("emit", "examples/softmax.tdsl", "--stage", "schedule")
    rc, one_row, err = run_cli(capsys, *args, "--shape", "M=1,N=4194304")
    assert rc == 0, err
    rc, many_rows, err = run_cli(capsys, *args, "--shape", "M=4096,N=4096")
    assert rc == 0, err
    assert re.findall(r"^group \d+: (\w+)", one_row, re.M) == ["reduce", "reduce", "pointwise"]
    assert "_g2_pw_" in one_row and "reduce_split" in one_row
    assert re.findall(r"^group \d+: (\w+)", many_rows, re.M) == ["reduce"]


def test_emit_schedule_says_a_split_along_rows_is_filled_at_launch(capsys, tmp_path):
    """A split along rows shows the rules' splits and says the launcher, on a GPU, takes as
    many as fill every SM's room (columns.splits_filling_room); a column split says nothing."""
    rows = tmp_path / "rows.tdsl"
    rows.write_text("kernel f(x: f16[N]) -> f16 { return max(x) }\n")
    cols = tmp_path / "cols.tdsl"
    cols.write_text("kernel cm(x: f16[R, C]) -> f32[C] { return mean(x, axis=R) }\n")
    rc, out, err = run_cli(capsys, "emit", str(rows), "--stage", "schedule", "--shape", "N=67108864")
    assert rc == 0, err
    assert re.search(r"\(splits=\d+ by the rules; on the GPU the launcher takes as many as fill every SM's room", out)
    rc, out, err = run_cli(capsys, "emit", str(cols), "--stage", "schedule", "--shape", "R=65536,C=64")
    assert rc == 0, err
    assert "reduce_split" in out and "splits_filling_room" not in out


def test_run_cpu(capsys, in_repo_root):
    rc, out, err = run_cli(capsys, "run", "examples/softmax.tdsl", "--shape", "M=3,N=7", "--cpu")
    assert rc == 0, err
    assert "softmax [M=3, N=7]" in out
    assert "reference (NumPy, f64)" in out
    assert re.search(r"GPU: not run \(--cpu given\)", out)
    m = re.search(r"result 0: f32\[3, 7\] mean (\S+) min (\S+) max (\S+)", out)
    assert m, out
    # softmax rows sum to one: the mean of a row-softmax over N=7 is 1/7
    assert float(m.group(1)) == pytest.approx(1 / 7, rel=1e-5)
    assert 0 < float(m.group(2)) <= float(m.group(3)) < 1


def test_run_cpu_is_reproducible_with_seed(capsys, in_repo_root):
    args = ("run", "examples/layernorm.tdsl", "--shape", "M=5,N=9", "--cpu", "--seed", "7")
    _, out1, _ = run_cli(capsys, *args)
    _, out2, _ = run_cli(capsys, *args)
    strip = lambda s: re.sub(r"\d+\.\d+ ms", "", s)   # noqa: E731 - timings differ
    assert strip(out1) == strip(out2)
    assert "result 0: f16[5, 9]" in out1


def test_run_module_runs_every_kernel(capsys, in_repo_root):
    rc, out, err = run_cli(capsys, "run", "examples/attention.tdsl", "--shape", "T=3,S=4,D=5",
                           "--cpu")
    assert rc == 0, err
    assert out.count("GPU: not run") == 2
    assert "attention [" in out and "causal_attention [" in out


def test_run_without_gpu_says_so(capsys, in_repo_root, monkeypatch):
    monkeypatch.setattr(cli, "_gpu_available", lambda: (False, "no CUDA device found"))
    rc, out, err = run_cli(capsys, "run", "examples/sincos.tdsl", "--shape", "N=11")
    assert rc == 0, err
    assert "GPU: not run (no CUDA device found)" in out
    assert "result 1: f32[11]" in out


@pytest.mark.parametrize("shape,message", [
    ("M=3,N=x", "--shape takes NAME=SIZE pairs"),
    ("M=3;N=4", "--shape takes NAME=SIZE pairs"),
    ("M=-3,N=4", "--shape takes NAME=SIZE pairs"),
    ("M=3", "--shape must give N for softmax"),
    ("M=3,N=4,Q=2", "'Q' is not a dim of softmax; its dims are M, N"),
])
def test_run_bad_shape(capsys, in_repo_root, shape, message):
    rc, out, err = run_cli(capsys, "run", "examples/softmax.tdsl", "--shape", shape, "--cpu")
    assert rc == 1
    assert message in err
    assert err.startswith("error: ")
    assert "Traceback" not in err


def test_run_missing_shape(capsys, in_repo_root):
    rc, out, err = run_cli(capsys, "run", "examples/softmax.tdsl", "--cpu")
    assert rc == 1
    assert "--shape must give M, N for softmax" in err


def test_run_zero_extent_does_not_crash(capsys, in_repo_root):
    rc, out, err = run_cli(capsys, "run", "examples/softmax.tdsl", "--shape", "M=0,N=4", "--cpu")
    assert rc in (0, 1)
    if rc == 1:
        assert err.startswith("error: ")


def test_run_fixed_dim_from_literal(capsys, tmp_path):
    src = tmp_path / "fixed.tdsl"
    src.write_text("kernel k(x: f32[4, N]) -> f32[N] {\n    return sum(x, axis=4)\n}\n")
    rc, out, err = run_cli(capsys, "run", str(src), "--shape", "N=3", "--cpu")
    assert rc == 0, err
    assert "result 0: f32[3]" in out


@pytest.mark.parametrize("module", ["tiledsl.cli", "tiledsl"])
def test_console_script_entry_point(module):
    """`python -m tiledsl.cli` and `python -m tiledsl` behave as the installed `tiledsl` script."""
    proc = subprocess.run([sys.executable, "-m", module, "check", "-q",
                           str(ROOT / "examples" / "softmax.tdsl")],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([sys.executable, "-m", module, "check",
                           str(ROOT / "tests" / "golden" / "syntax_unexpected_token.tdsl")],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 1
    assert ":2:16: error: unexpected '*'" in proc.stderr
    assert proc.stdout == ""


def test_file_arguments_are_paths_whatever_their_name_and_dash_is_stdin(capsys, tmp_path, monkeypatch):
    """A FILE is read as a file even without the .tdsl suffix (before, 'prog.txt' or
    /dev/stdin was parsed as program text: "unexpected '/'"); '-' reads standard input."""
    import io
    src = "kernel twice(x: f32[N]) -> f32[N] {\n    return x * 2\n}\n"
    plain = tmp_path / "prog.txt"
    plain.write_text(src)
    assert run_cli(capsys, "check", str(plain)) == (0, f"{plain}: ok: twice(x: f32[N]) -> f32[N]\n", "")
    monkeypatch.setattr("sys.stdin", io.StringIO(src))
    assert run_cli(capsys, "check", "-")[:2] == (0, "-: ok: twice(x: f32[N]) -> f32[N]\n")
    monkeypatch.setattr("sys.stdin", io.StringIO(src.replace("x * 2", "y * 2")))
    rc, _, err = run_cli(capsys, "check", "-")
    assert rc == 1 and err.startswith("<stdin>:2:12: error: unknown name 'y'")
    rc, _, err = run_cli(capsys, "check", str(tmp_path / "missing"))
    assert rc == 1 and "cannot read" in err
