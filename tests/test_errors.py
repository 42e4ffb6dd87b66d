"""Golden tests of the rendered error messages.

Each case is a pair in tests/golden/: `<case>.tdsl` (a small bad program) and
`<case>.err` (the exact `str(err)`: `file:line:col: error: ...`, the source
line and the caret line). The case's name starts with its error kind
(syntax_, name_, type_, shape_, argument_, schedule_), which fixes the
TdslError subclass it must raise.

A program whose first line is `# call: EXPR` compiles fine; the error comes
from evaluating EXPR with `k` (the kernel) and `np` in scope, for errors that
only a call can make (argument count, dims bound at call time).

    TDSL_UPDATE_GOLDEN=1 python -m pytest tests/test_errors.py   # rewrite the .err files
"""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

import tiledsl
from tiledsl import cli
from tiledsl.errors import (Loc, TdslArgumentError, TdslError, TdslNameError, TdslScheduleError,
                            TdslShapeError, TdslSyntaxError, TdslTypeError)

from conftest import GOLDEN, ROOT

KINDS = {
    "syntax": TdslSyntaxError, "name": TdslNameError, "type": TdslTypeError,
    "shape": TdslShapeError, "argument": TdslArgumentError, "schedule": TdslScheduleError,
}
CASES = sorted(p.stem for p in GOLDEN.glob("*.tdsl"))
UPDATE = os.environ.get("TDSL_UPDATE_GOLDEN") == "1"


def trigger(case: str) -> TdslError:
    """Compile tests/golden/<case>.tdsl (relative to the repo root) and return its error."""
    rel = f"tests/golden/{case}.tdsl"
    text = (ROOT / rel).read_text()
    call = re.match(r"# call: (.*)\n", text)
    with pytest.raises(TdslError) as info:
        k = tiledsl.compile(rel)
        assert call, f"{rel} compiled without an error"
        eval(call.group(1), {"np": np, "k": k})   # noqa: S307 - test data we wrote
    return info.value


def test_enough_cases_of_every_kind():
    assert len(CASES) >= 25
    for prefix in KINDS:
        assert any(c.startswith(prefix + "_") for c in CASES), f"no golden case for {prefix}"


def test_no_orphan_expected_files():
    orphans = sorted(p.name for p in GOLDEN.glob("*.err") if not p.with_suffix(".tdsl").exists())
    assert not orphans, f"expected output without a program: {orphans}"


@pytest.mark.parametrize("case", CASES)
def test_golden_message(case, in_repo_root):
    err = trigger(case)
    kind = KINDS[case.split("_")[0]]
    assert type(err) is kind, f"{case}: raised {type(err).__name__}, expected {kind.__name__}"
    got = str(err) + "\n"
    expected_path = GOLDEN / f"{case}.err"
    if UPDATE:
        expected_path.write_text(got)
    assert expected_path.exists(), f"missing {expected_path}; run with TDSL_UPDATE_GOLDEN=1"
    assert got == expected_path.read_text()


@pytest.mark.parametrize("case", CASES)
def test_golden_message_shape(case, in_repo_root):
    """Every rendered error names file:line:col, quotes that line and puts a caret under it."""
    err = trigger(case)
    lines = str(err).splitlines()
    m = re.match(r"(tests/golden/\w+\.tdsl):(\d+):(\d+): error: \S", lines[0])
    assert m, lines[0]
    line, col = int(m.group(2)), int(m.group(3))
    source = (ROOT / m.group(1)).read_text().split("\n")[line - 1].expandtabs(1)
    caret = lines[2]
    assert re.fullmatch(r" *\^~*", caret), caret
    if len(source) <= 100:
        assert lines[1] == "    " + source
        assert caret.index("^") == 4 + col - 1
    else:   # a long line is shown as a window around the column
        shown = lines[1][4:]
        assert shown.strip(".") in source and len(shown) <= 106
        assert shown[caret.index("^") - 4] == source[col - 1]
    assert err.loc is not None and (err.loc.line, err.loc.col) == (line, col)


# Where the caret must point: (case, the text that starts at the caret).
POINTS_AT = [
    ("syntax_unexpected_token", "*"),
    ("syntax_unexpected_character", "$"),
    ("syntax_chained_comparison", "<"),
    ("name_unknown_did_you_mean", "xx"),
    ("name_unknown_function", "rleu"),
    ("name_dim_used_as_value", "N"),
    ("name_reassignment", "y"),
    ("name_unknown_axis_dim", "Q"),
    ("name_unknown_attribute", "shape"),
    ("name_schedule_unknown_kernel", "sofmax"),
    ("type_unknown_dtype", "f33"),
    ("type_literal_overflow_f16", "1e6"),
    ("type_literal_overflow_i32", "3000000000"),
    ("type_default_on_tensor", "1.0"),
    ("shape_reduce_missing_dim", "M"),
    ("shape_matmul_mismatch", "@"),
    ("shape_transpose_1d", "T"),
    ("schedule_unknown_directive", "wraps"),
    ("schedule_dim_not_in_kernel", "Q=64"),
    ("schedule_warps_not_power_of_two", "6"),
]


@pytest.mark.parametrize("case,token", POINTS_AT)
def test_caret_points_at_the_token(case, token, in_repo_root):
    err = trigger(case)
    line = err.loc.source_line()
    assert line[err.loc.col - 1:].startswith(token), (line, err.loc.col)


def test_did_you_mean_suggestions(in_repo_root):
    assert "did you mean 'x'?" in str(trigger("name_unknown_did_you_mean"))
    assert "did you mean 'relu'?" in str(trigger("name_unknown_function"))
    assert "did you mean 'f32'?" in str(trigger("type_unknown_dtype"))
    assert "did you mean 'softmax'?" in str(trigger("name_schedule_unknown_kernel"))
    assert "did you mean 'warps'?" in str(trigger("schedule_unknown_directive"))
    assert "maximum(a, b)" in str(trigger("syntax_max_of_two_values"))


# ---- the CLI shows the same thing -----------------------------------------------------
def test_cli_check_bad_file(capsys, in_repo_root):
    rc = cli.main(["check", "tests/golden/name_unknown_did_you_mean.tdsl"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert out == ""
    expected = (GOLDEN / "name_unknown_did_you_mean.err").read_text()
    assert err == expected
    assert "tests/golden/name_unknown_did_you_mean.tdsl:2:17: error: unknown name 'xx'" in err
    assert "    return relu(xx + y)" in err
    assert "\n                    ^~\n" in err


def test_cli_check_good_and_bad_files(capsys, in_repo_root):
    rc = cli.main(["check", "examples/softmax.tdsl", "tests/golden/syntax_unexpected_token.tdsl",
                   "examples/sincos.tdsl"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert "examples/softmax.tdsl: ok: softmax(x: f32[M, N]) -> f32[M, N]" in out
    assert "examples/sincos.tdsl: ok: sincos(x: f32[N]) -> (f32[N], f32[N])" in out
    assert err.startswith("tests/golden/syntax_unexpected_token.tdsl:2:16: error: unexpected '*'")
    assert "^" in err


def test_cli_check_missing_file(capsys, in_repo_root):
    rc = cli.main(["check", "tests/golden/does_not_exist.tdsl"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert "cannot read 'tests/golden/does_not_exist.tdsl'" in err


# ---- the rendering itself -------------------------------------------------------------
def test_render_without_location():
    err = TdslTypeError("something is off")
    assert str(err) == "error: something is off"
    assert isinstance(err, TdslError) and isinstance(err, Exception)


def test_render_notes_and_span():
    src = "a = 1\nbb = foo(a)\n"
    err = TdslNameError("unknown function 'foo'", Loc("f.tdsl", 2, 6, 9, src), notes=["a note"])
    assert str(err) == ("f.tdsl:2:6: error: unknown function 'foo'\n"
                        "    bb = foo(a)\n"
                        "         ^~~\n"
                        "note: a note")


def test_render_long_line_shows_a_window():
    src = "x" * 300 + " bad " + "y" * 300
    err = TdslSyntaxError("bad", Loc("f.tdsl", 1, 302, 305, src))
    _, text, caret = str(err).split("\n")
    assert len(text) < 120
    assert text[caret.index("^"):].startswith("bad")
    assert caret.count("~") == 2


def test_render_tabs_keep_caret_aligned():
    src = "\t\treturn zz\n"
    err = TdslNameError("unknown name 'zz'", Loc("f.tdsl", 1, 10, 12, src))
    _, text, caret = str(err).split("\n")
    assert text[caret.index("^"):].startswith("zz")


def test_syntax_error_location_after_tabs(in_repo_root):
    src = "kernel k(x: f32[N]) -> f32[N] {\n\t\treturn x ? 1\n}\n"
    with pytest.raises(TdslSyntaxError) as info:
        tiledsl.compile(src)
    _, text, caret = str(info.value).split("\n")[:3]
    assert text[caret.index("^")] == "?"


@pytest.mark.parametrize("sep", ["\f", "\u2028"])
def test_quoted_line_after_unusual_line_separator(sep):
    # \f is whitespace in the grammar; \u2028 may sit in a comment (pasted text)
    src = f"# a comment{sep}with a separator\nkernel k(x: f32[N]) -> f32[N] {{\n    return xx\n}}\n"
    with pytest.raises(TdslNameError) as info:
        tiledsl.compile(src)
    err = info.value
    assert (err.loc.line, err.loc.col) == (3, 12)
    assert str(err).split("\n")[1] == "    " + "    return xx"
