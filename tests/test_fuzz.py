"""Fuzzing the front end and the reference: nothing but TdslError, ever.

Random and mutated sources (more than 10,000 per run in total) must either
compile or raise a TdslError; any other exception is a bug, reported with
the run's seed and the offending source. Sources that compile are also run
through `.reference` on small random inputs, where again only TdslError may
escape.

The seed is fresh on every run and printed on failure; replay a failure with
TDSL_FUZZ_SEED=<seed>. TDSL_FUZZ_SCALE=<float> multiplies the case counts.
"""
from __future__ import annotations

import math
import os
import random
import re
import string

import numpy as np
import pytest

import tiledsl
from tiledsl.errors import TdslError
from tiledsl.inputs import random_arguments

from conftest import EXAMPLE_FILES

SEED = int(os.environ.get("TDSL_FUZZ_SEED") or random.randrange(2 ** 32))
SCALE = float(os.environ.get("TDSL_FUZZ_SCALE", "1"))
EXAMPLES_TEXT = [p.read_text() for p in EXAMPLE_FILES]

COUNTS = {"chars": 3600, "tokens": 3000, "soup": 1400, "generated": 1600, "typed": 1500,
          "numbers": 300, "deep": 24, "arguments": 400}

KEYWORDS = ["kernel", "schedule", "return", "true", "false"]
DTYPES = ["f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u32", "bool"]
FUNCS = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "sin", "cos", "tanh", "sigmoid",
         "relu", "gelu", "gelu_tanh", "silu", "erf", "floor", "ceil", "maximum", "minimum",
         "logical_and", "logical_or", "logical_not", "sum", "mean", "max", "min", "where", "idx"]
DIRECTIVES = ["tile", "stages", "warps", "threads", "microtile", "vector", "split_k", "group",
              "tf32", "wraps"]
DIMS = ["M", "N", "K", "B", "T", "S", "D", "H", "1", "4"]
NAMES = ["x", "y", "w", "b", "s", "a", "q", "e", "mu", "inf", "nan", "pi", "T", "axis", "_", "x1"]
PUNCT = ["(", ")", "{", "}", "[", "]", ",", ":", "=", "->", "+", "-", "*", "/", "@", "**", ".",
         "<", "<=", ">", ">=", "==", "!=", ";", "#"]
NUMBERS = ["0", "1", "2", "7", "4096", "1.5", ".5", "3.", "1e-5", "1e6", "1e400", "1e-400",
           "2.5e+3", "65504", "65520", "2147483648", "9223372036854775808", "1" + "0" * 100,
           "9" * 400, "0.000", "00", "007"]
ODD_CHARS = ["\x00", "\t", "\r", "\f", "\v", "\u00a0", "\u200b", "\u2028", "\ufeff", "é", "×",
             "→", "≤", "😀", "\\", "'", '"', "`", "$", "?", "!", "&", "|", "^", "%", "~"]
VOCAB = KEYWORDS + DTYPES + FUNCS + DIRECTIVES + DIMS + NAMES + PUNCT + NUMBERS

TOKEN_RE = re.compile(r"\s+|#[^\n]*|[A-Za-z_]\w*|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|"
                      r"\*\*|<=|>=|==|!=|->|\S")


# Bugs pinned by a strict xfail test elsewhere: the fuzzer counts them instead of failing,
# so that it keeps hunting for new ones. Add an entry (exception type, message regex) when
# such a bug is found; remove it when the bug is fixed.
KNOWN_BUGS: list = []


@pytest.fixture(autouse=True)
def _print_seed():
    print(f"fuzz seed: TDSL_FUZZ_SEED={SEED}")    # shown by pytest when a test fails


def known_bug(err: BaseException) -> bool:
    return any(isinstance(err, t) and re.search(m, str(err)) for t, m in KNOWN_BUGS)


class Fuzzer:
    def __init__(self, name: str):
        self.rnd = random.Random(f"{SEED}-{name}")
        self.name = name
        self.compiled = 0
        self.errors = 0
        self.references = 0
        self.known = 0

    def fail(self, source: str, stage: str, err: BaseException) -> None:
        if known_bug(err):
            self.known += 1
            return
        shown = source if len(source) <= 4000 else source[:2000] + "\n...\n" + source[-1000:]
        pytest.fail(f"{self.name}: {stage} raised {type(err).__name__}: {err}\n"
                    f"replay with TDSL_FUZZ_SEED={SEED}\nsource ({len(source)} chars):\n"
                    f"{shown}\nrepr: {shown!r}", pytrace=False)

    def check(self, source: str) -> None:
        try:
            prog = tiledsl.compile(source)
        except TdslError as err:
            self.errors += 1
            self.check_location(source, err)
            return
        except Exception as err:  # noqa: BLE001 - this is what we hunt for
            self.fail(source, "compile", err)
            return
        self.compiled += 1
        kernels = list(prog) if isinstance(prog, tiledsl.Module) else [prog]
        for k in kernels:
            self.run_reference(source, k)

    def check_location(self, source: str, err: TdslError) -> None:
        """A located error points inside the source and quotes the right line."""
        text = str(err)
        if not text.startswith(f"{err.loc}: error: " if err.loc else "error: "):
            self.fail(source, "rendering", AssertionError(f"bad head: {text[:200]!r}"))
        loc = err.loc
        if loc is None or loc.file != "<string>":
            return
        lines = source.removeprefix("\ufeff").split("\n")   # compile() drops a leading BOM
        if not 1 <= loc.line <= len(lines):
            self.fail(source, "location", AssertionError(f"line {loc.line} of {len(lines)}"))
        line = lines[loc.line - 1]
        if not 1 <= loc.col <= len(line) + 1:
            self.fail(source, "location", AssertionError(f"col {loc.col} on a line of {len(line)}"))
        if loc.source_line() != line.rstrip("\r"):
            self.fail(source, "location", AssertionError(
                f"quotes {loc.source_line()!r} for line {loc.line} {line!r}"))

    def run_reference(self, source: str, k) -> None:
        fixed = dict(k.graph.fixed_extents)
        extents = {d: fixed.get(d, self.rnd.randint(1, 4)) for d in k.graph.dims}
        sizes = [math.prod(extents[d] for d in p.dims) for p in k.graph.params if p.dims]
        if sum(sizes, 0) > 200_000:
            return      # a huge literal dim: allocating inputs is not the point here
        try:
            args = random_arguments(k.graph, extents, seed=self.rnd.randrange(2 ** 32))
            k.reference(*args)
            k.reference(*args, compute="f64")
            self.references += 1
        except TdslError:
            pass
        except Exception as err:  # noqa: BLE001
            self.fail(source, f"{k.name}.reference with extents {extents}", err)


# ---- mutations ------------------------------------------------------------------------
def random_insert(rnd: random.Random) -> str:
    kind = rnd.randrange(7)
    if kind == 0:
        return rnd.choice(ODD_CHARS)
    if kind == 1:
        return chr(rnd.randrange(32, 127))
    if kind == 2:
        return chr(rnd.choice([rnd.randrange(0x80, 0x800), rnd.randrange(0x800, 0xD800),
                               rnd.randrange(0x10000, 0x10FFFF)]))
    if kind == 3:
        return " " + rnd.choice(VOCAB) + " "
    if kind == 4:   # a very long line
        return rnd.choice(["x", " ", "#", "(", "+x", "\t"]) * rnd.choice([200, 5000, 30000])
    if kind == 5:
        return "\n" * rnd.randint(1, 3)
    return "".join(rnd.choice(string.printable) for _ in range(rnd.randint(1, 20)))


def mutate_chars(src: str, rnd: random.Random) -> str:
    for _ in range(rnd.choice([1, 1, 1, 2, 3, 8])):
        n = len(src)
        if n == 0:
            return random_insert(rnd)
        i = rnd.randrange(n)
        j = min(n, i + rnd.choice([1, 1, 2, 5, 20]))
        op = rnd.randrange(6)
        if op == 0:
            src = src[:i] + src[j:]                              # delete
        elif op == 1:
            src = src[:j] + src[i:j] + src[j:]                   # duplicate
        elif op == 2:
            k = rnd.randrange(n)                                 # swap two characters
            a, b = min(i, k), max(i, k)
            if a != b:
                src = src[:a] + src[b] + src[a + 1:b] + src[a] + src[b + 1:]
        elif op == 3:
            src = src[:i] + random_insert(rnd) + src[i:]         # insert
        elif op == 4:
            src = src[:i]                                        # truncate
        else:
            src = src[:i] + rnd.choice(ODD_CHARS) + src[i + 1:]  # replace
    return src


def tokens_of(src: str) -> list[str]:
    return TOKEN_RE.findall(src)


def mutate_tokens(src: str, rnd: random.Random) -> str:
    toks = tokens_of(src)
    for _ in range(rnd.choice([1, 1, 2, 3, 6])):
        if not toks:
            toks = [rnd.choice(VOCAB)]
        i = rnd.randrange(len(toks))
        op = rnd.randrange(6)
        if op == 0:
            del toks[i]
        elif op == 1:
            toks.insert(i, toks[i])
        elif op == 2:
            k = rnd.randrange(len(toks))
            toks[i], toks[k] = toks[k], toks[i]
        elif op == 3:
            toks[i] = rnd.choice(VOCAB)
        elif op == 4:
            toks.insert(i, " " + rnd.choice(VOCAB) + " ")
        else:                          # replace a name or number by something of its kind
            if re.fullmatch(r"[A-Za-z_]\w*", toks[i]):
                toks[i] = rnd.choice(NAMES + DTYPES + FUNCS + DIMS + KEYWORDS
                                     + ["".join(rnd.choices(string.ascii_letters, k=rnd.randint(1, 12)))])
            elif re.fullmatch(r"[\d.]\S*", toks[i]):
                toks[i] = rnd.choice(NUMBERS)
            else:
                toks[i] = rnd.choice(PUNCT)
    return "".join(toks)


def token_soup(rnd: random.Random) -> str:
    n = rnd.choice([1, 3, 10, 30, 100])
    return " ".join(rnd.choice(VOCAB) for _ in range(n))


# ---- near-valid random programs -------------------------------------------------------
class Generator:
    def __init__(self, rnd: random.Random):
        self.rnd = rnd

    def choice(self, seq):
        return self.rnd.choice(seq)

    def type_text(self, dims_pool, scalar_ok=True) -> str:
        dtype = self.choice(DTYPES if self.rnd.random() < 0.97 else ["f33", "float", "T"])
        if scalar_ok and self.rnd.random() < 0.25:
            return dtype
        dims = self.rnd.sample(dims_pool, self.rnd.randint(1, min(3, len(dims_pool))))
        return f"{dtype}[{', '.join(dims)}]"

    def literal(self) -> str:
        return self.choice(["0", "1", "2", "0.5", "3.25", "1e-3", "1e6", "true", "false", "inf",
                            "pi", "-1", "2147483648", "1e400"])

    def expr(self, names, dims, depth) -> str:
        r = self.rnd.random()
        if depth <= 0 or r < 0.25:
            return self.choice(names) if names and self.rnd.random() < 0.75 else self.literal()
        d = depth - 1
        kind = self.rnd.randrange(9)
        if kind == 0:
            op = self.choice(["+", "-", "*", "/", "**", "@", "<", "<=", "==", "!=", ">"])
            return f"({self.expr(names, dims, d)} {op} {self.expr(names, dims, d)})"
        if kind == 1:
            f = self.choice(FUNCS[:18] + DTYPES)
            return f"{f}({self.expr(names, dims, d)})"
        if kind == 2:
            f = self.choice(["sum", "mean", "max", "min"])
            axis = self.rnd.random()
            if axis < 0.3:
                return f"{f}({self.expr(names, dims, d)})"
            if axis < 0.8:
                return f"{f}({self.expr(names, dims, d)}, axis={self.choice(dims)})"
            return f"{f}({self.expr(names, dims, d)}, axis=({', '.join(self.rnd.sample(dims, min(2, len(dims))))}))"
        if kind == 3:
            return f"where({self.expr(names, dims, d)} > {self.expr(names, dims, d)}, " \
                   f"{self.expr(names, dims, d)}, {self.expr(names, dims, d)})"
        if kind == 4:
            return f"{self.choice(['maximum', 'minimum'])}({self.expr(names, dims, d)}, " \
                   f"{self.expr(names, dims, d)})"
        if kind == 5:
            return f"({self.expr(names, dims, d)}).T"
        if kind == 6:
            return f"idx({self.choice(dims)})"
        if kind == 7:
            return f"-{self.expr(names, dims, d)}"
        f = self.choice(["logical_and", "logical_or"])
        return f"{f}({self.expr(names, dims, d)} < 1, {self.expr(names, dims, d)} > 0)"

    def kernel(self, name: str) -> str:
        dims = self.rnd.sample(DIMS, self.rnd.randint(1, 4))
        params, names = [], []
        for i in range(self.rnd.randint(1, 4)):
            pname = self.choice(["x", "y", "w", "b", "s", "q", "v"]) + ("" if self.rnd.random() < 0.7 else str(i))
            t = self.type_text(dims)
            default = ""
            if "[" not in t and self.rnd.random() < 0.5:
                default = " = " + self.choice(["1", "-2", "0.5", "1e-5", "true", "1e6", "300"])
            params.append(f"{pname}: {t}{default}")
            names.append(pname)
        body = []
        for j in range(self.rnd.randint(0, 3)):
            target = self.choice([f"t{j}", "t0", self.choice(names)] if self.rnd.random() < 0.1 else [f"t{j}"])
            body.append(f"    {target} = {self.expr(names, dims, self.rnd.randint(0, 3))}")
            names.append(target)
        n_results = self.rnd.choice([1, 1, 1, 2])
        results = [self.type_text(dims) for _ in range(n_results)]
        rtype = results[0] if n_results == 1 else f"({', '.join(results)})"
        ret = ", ".join(self.expr(names, dims, self.rnd.randint(0, 3)) for _ in range(n_results))
        text = (f"kernel {name}({', '.join(params)}) -> {rtype} {{\n" + "\n".join(body)
                + f"\n    return {ret}\n}}\n")
        if self.rnd.random() < 0.2:
            directives = []
            for _ in range(self.rnd.randint(1, 3)):
                d = self.choice(DIRECTIVES)
                if d in ("tile", "microtile"):
                    args = ", ".join(f"{self.choice(dims + ['Z'])}={self.choice(['1', '16', '128', '5000'])}"
                                     for _ in range(self.rnd.randint(1, 3)))
                else:
                    args = self.choice(["1", "2", "3", "4", "8", "64", "0", "true", "M=4"])
                directives.append(f"    {d}({args})")
            text += f"schedule {self.choice([name, name, 'nope'])} {{\n" + "\n".join(directives) + "\n}\n"
        return text

    def program(self) -> str:
        n = self.rnd.choice([1, 1, 1, 2])
        names = [self.choice(["k", "f", "g"]) for _ in range(n)]
        return "".join(self.kernel(nm) for nm in names)


class TypedGenerator:
    """Programs that are well typed by construction (mostly): every expression's dims and
    kind are tracked, and the result is declared with them, so nearly all compile and the
    reference runs on them, over every dtype (ints, bools, bf16, ...), casts, idx, @."""

    def __init__(self, rnd: random.Random):
        self.rnd = rnd

    @staticmethod
    def bdims(a, b):
        if set(b) <= set(a):
            return a
        if set(a) <= set(b):
            return b
        return a + tuple(d for d in b if d not in a)

    def leaf(self, env):
        if self.rnd.random() < 0.2:
            lit = self.rnd.choice(["1", "2", "0.5", "3", "0.25", "true", "false", "pi"])
            kind = "bool" if lit in ("true", "false") else ("int" if lit.isdigit() else "float")
            return lit, (), kind
        return self.rnd.choice(env)

    def expr(self, env, dims, depth):
        if depth <= 0 or self.rnd.random() < 0.2:
            return self.leaf(env)
        d = depth - 1
        r = self.rnd.randrange(12)
        a = self.expr(env, dims, d)
        if r <= 2 and a[2] != "bool":
            b = self.expr(env, dims, d)
            if b[2] == "bool":
                b = (f"i32({b[0]})", b[1], "int")
            op = self.rnd.choice(["+", "-", "*", "/", "**", "maximum", "minimum"])
            kind = "float" if op in ("/", "**") or "float" in (a[2], b[2]) else "int"
            text = f"{op}({a[0]}, {b[0]})" if op[0] == "m" else f"({a[0]} {op} {b[0]})"
            return text, self.bdims(a[1], b[1]), kind
        if r == 3:
            b = self.expr(env, dims, d)
            if a[2] == "bool" or b[2] == "bool":
                op = self.rnd.choice(["==", "!="]) if a[2] == b[2] == "bool" else None
                if op is None:
                    return f"f32({a[0]})", a[1], "float"
            else:
                op = self.rnd.choice(["<", "<=", ">", ">=", "==", "!="])
            return f"({a[0]} {op} {b[0]})", self.bdims(a[1], b[1]), "bool"
        if r == 4:
            c = self.expr(env, dims, d)
            if c[2] != "bool":
                c = (f"({c[0]} > 0)", c[1], "bool")
            b = self.expr(env, dims, d)
            if (a[2] == "bool") != (b[2] == "bool"):
                a = (f"f32({a[0]})", a[1], "float")
                b = (f"f32({b[0]})", b[1], "float")
            kind = "bool" if a[2] == "bool" else ("float" if "float" in (a[2], b[2]) else "int")
            return f"where({c[0]}, {a[0]}, {b[0]})", self.bdims(self.bdims(a[1], b[1]), c[1]), kind
        if r == 5:
            f = self.rnd.choice(["exp", "tanh", "abs", "relu", "sigmoid", "sqrt", "log", "floor",
                                 "sin", "gelu", "silu", "erf", "rsqrt", "exp2", "ceil", "-"])
            if a[2] == "bool":
                a = (f"i32({a[0]})", a[1], "int")
            kind = a[2] if f in ("abs", "relu", "-") else "float"
            return (f"(-{a[0]})" if f == "-" else f"{f}({a[0]})"), a[1], kind
        if r == 6:
            t = self.rnd.choice(DTYPES)
            kind = "bool" if t == "bool" else ("float" if t[0] in "fb" else "int")
            return f"{t}({a[0]})", a[1], kind
        if r == 7:
            f = self.rnd.choice(["sum", "mean", "max", "min"])
            if a[2] == "bool" and f in ("max", "min"):
                a = (f"i32({a[0]})", a[1], "int")
            kind = "float" if f == "mean" or a[2] == "float" else "int"
            if not a[1] or self.rnd.random() < 0.3:
                return f"{f}({a[0]})", (), kind
            axes = self.rnd.sample(a[1], self.rnd.randint(1, len(a[1])))
            spelled = axes[0] if len(axes) == 1 else "(" + ", ".join(axes) + ")"
            return f"{f}({a[0]}, axis={spelled})", tuple(x for x in a[1] if x not in axes), kind
        if r == 8 and len(a[1]) >= 2:
            return f"{a[0]}.T", a[1][:-2] + (a[1][-1], a[1][-2]), a[2]
        if r == 9:
            dim = self.rnd.choice(dims)
            return f"idx({dim})", (dim,), "int"
        if r == 10 and a[2] != "bool" and a[1]:
            b = self.expr(env, dims, d)
            if b[2] != "bool" and b[1]:
                # @ is float-only; an int operand gets an explicit cast
                ta = a[0] if a[2] == "float" else f"f32({a[0]})"
                tb = b[0] if b[2] == "float" else f"f32({b[0]})"
                k = a[1][-1]
                kb = b[1][-2] if len(b[1]) >= 2 else b[1][-1]
                if k == kb:
                    m = a[1][-2:-1]
                    n = b[1][-1:] if len(b[1]) >= 2 else ()
                    batch = self.bdims(a[1][:-2], b[1][:-2])
                    out = batch + m + n
                    if len(set(out)) == len(out) and k not in batch:
                        return f"({ta} @ {tb})", out, "float"
        if r == 11 and a[2] == "bool":
            b = self.expr(env, dims, d)
            if b[2] == "bool":
                f = self.rnd.choice(["logical_and", "logical_or"])
                return f"{f}({a[0]}, {b[0]})", self.bdims(a[1], b[1]), "bool"
            return f"logical_not({a[0]})", a[1], "bool"
        return a

    def program(self) -> str:
        dims = self.rnd.sample(["M", "N", "K", "B", "4", "1"], self.rnd.randint(1, 4))
        params, env = [], []
        for i in range(self.rnd.randint(1, 4)):
            t = self.rnd.choice(DTYPES)
            kind = "bool" if t == "bool" else ("float" if t[0] in "fb" else "int")
            if self.rnd.random() < 0.2:
                params.append(f"p{i}: {t}")
                env.append((f"p{i}", (), kind))
            else:
                pd = tuple(self.rnd.sample(dims, self.rnd.randint(1, len(dims))))
                params.append(f"p{i}: {t}[{', '.join(pd)}]")
                env.append((f"p{i}", pd, kind))
        body = []
        for j in range(self.rnd.randint(0, 3)):
            text, edims, kind = self.expr(env, dims, self.rnd.randint(1, 3))
            body.append(f"    t{j} = {text}")
            env.append((f"t{j}", edims, kind))
        results = []
        for _ in range(self.rnd.choice([1, 1, 2])):
            text, edims, kind = self.expr(env, dims, self.rnd.randint(0, 4))
            order = list(edims)
            self.rnd.shuffle(order)
            rtype = self.rnd.choice(["f64", "f32", "f16"] if kind != "bool" else ["bool", "f64", "i32"])
            if kind == "int" and self.rnd.random() < 0.5:
                rtype = self.rnd.choice(["i64", "i32"])
            results.append((text, f"{rtype}[{', '.join(order)}]" if order else rtype))
        rtype = results[0][1] if len(results) == 1 else "(" + ", ".join(r for _, r in results) + ")"
        return (f"kernel typed({', '.join(params)}) -> {rtype} {{\n" + "\n".join(body)
                + f"\n    return {', '.join(t for t, _ in results)}\n}}\n")


# ---- the tests ------------------------------------------------------------------------
def count(kind: str) -> int:
    return max(1, int(COUNTS[kind] * SCALE))


def test_at_least_ten_thousand_cases_per_run():
    assert sum(COUNTS.values()) >= 10_000


def test_fuzz_character_mutations():
    fz = Fuzzer("chars")
    for _ in range(count("chars")):
        fz.check(mutate_chars(fz.rnd.choice(EXAMPLES_TEXT), fz.rnd))
    assert fz.errors > 0 and fz.compiled > 0, (fz.errors, fz.compiled)


def test_fuzz_token_mutations():
    fz = Fuzzer("tokens")
    for _ in range(count("tokens")):
        fz.check(mutate_tokens(fz.rnd.choice(EXAMPLES_TEXT), fz.rnd))
    assert fz.errors > 0 and fz.compiled > 0, (fz.errors, fz.compiled)


def test_fuzz_token_soup():
    fz = Fuzzer("soup")
    for _ in range(count("soup")):
        fz.check(token_soup(fz.rnd))
    assert fz.errors > 0


def test_fuzz_generated_programs():
    fz = Fuzzer("generated")
    gen = Generator(fz.rnd)
    for _ in range(count("generated")):
        fz.check(gen.program())
    # the generator is near-valid: a good share compiles and runs on the reference
    assert fz.compiled > count("generated") // 100, (fz.errors, fz.compiled)
    assert fz.references > 0


def test_fuzz_typed_programs():
    fz = Fuzzer("typed")
    gen = TypedGenerator(fz.rnd)
    for _ in range(count("typed")):
        fz.check(gen.program())
    assert fz.compiled > count("typed") // 2, (fz.errors, fz.compiled)
    assert fz.references > count("typed") // 3, fz.references


def test_fuzz_huge_numbers():
    fz = Fuzzer("numbers")
    huge = ["1e400", "1e-400", "10" * 50, "1" + "0" * 100, "9" * 400, "4294967296",
            "9223372036854775807", "9223372036854775808", "18446744073709551616", "65505",
            "3.4028236e38", "1.7976931348623157e308", "0", "00000000001", "1.0e-45"]
    templates = [
        "kernel k(x: f32[{n}]) -> f32[{n}] {{ return x }}",
        "kernel k(x: f32[N]) -> f32[N] {{ return x * {n} }}",
        "kernel k(x: f16[N]) -> f16[N] {{ return x + {n} }}",
        "kernel k(x: i32[N]) -> i32[N] {{ return x + {n} }}",
        "kernel k(x: u8[N]) -> u8[N] {{ return x * {n} }}",
        "kernel k(x: f64[N]) -> f64[N] {{ return x - {n} * {n} }}",
        "kernel k(x: i64[N]) -> i64[N] {{ return maximum(x, -{n}) }}",
        "kernel k(x: f32[N], s: f32 = {n}) -> f32[N] {{ return x * s }}",
        "kernel k(x: f32[N], s: i8 = -{n}) -> f32[N] {{ return x * s }}",
        "kernel k(x: f16[N], s: f16 = {n}) -> f16[N] {{ return x * s }}",
        "kernel k(x: f32[N]) -> i32[N] {{ return i32(x) + i32({n}) }}",
        "kernel k(x: f32[N]) -> f32 {{ return sum(x) / {n} }}",
        "kernel k(x: f32[N]) -> bool[N] {{ return x < {n} }}",
        "kernel k(x: f32[N]) -> f32[N] {{ return where(idx(N) < {n}, x, 0) }}",
        "kernel k(x: f32[M, N]) -> f32[M] {{ return sum(x, axis={n}) }}",
        "kernel k(x: f32[N]) -> f32[N] {{ return x }}\nschedule k {{ tile(N={n}) }}",
        "kernel k(x: f32[N]) -> f32[N] {{ return x }}\nschedule k {{ warps({n}) }}",
    ]
    for t in templates:
        for n in huge:
            fz.check(t.format(n=n))
    for _ in range(max(0, count("numbers") - len(templates) * len(huge))):
        fz.check(fz.rnd.choice(templates).format(n=fz.rnd.choice(huge + NUMBERS)))
    assert fz.errors > 0 and fz.compiled > 0


def deep_source(kind: str, depth: int) -> str:
    head = "kernel k(x: f32[M, N], y: f32[M, N]) -> f32[M, N] {\n    return "
    if kind == "parens":
        body = "(" * depth + "x" + ")" * depth
    elif kind == "neg":
        body = "-" * depth + "x"
    elif kind == "calls":
        body = "exp(" * depth + "x" + ")" * depth
    elif kind == "sum":
        body = " + ".join(["x"] * depth)
    elif kind == "pow":
        body = " ** ".join(["x"] * depth)
    elif kind == "transpose":
        body = "x" + ".T" * depth
    elif kind == "where":
        body = "where(x > 0, " * depth + "y" + ", x)" * depth
    elif kind == "unclosed":
        body = "(" * depth + "x"
    elif kind == "closed_only":
        body = "x" + ")" * depth
    elif kind == "weak":
        body = "x + " + "(" * depth + "1" + " + 1)" * depth
    elif kind == "statements":
        lines = ["t0 = x"] + [f"t{i + 1} = t{i} * 1.5 + y" for i in range(depth)]
        return head.replace("return ", "") + "\n    ".join(lines) + f"\n    return t{depth}\n}}\n"
    else:   # weak statements: a long chain of literal-only names
        lines = ["t0 = 1"] + [f"t{i + 1} = t{i} + 1" for i in range(depth)]
        return head.replace("return ", "") + "\n    ".join(lines) + f"\n    return x + t{depth}\n}}\n"
    return head + body + "\n}\n"


DEEP_KINDS = ["parens", "neg", "calls", "sum", "pow", "transpose", "where", "unclosed",
              "closed_only", "weak", "statements", "weak_statements"]


def test_fuzz_deep_nesting():
    fz = Fuzzer("deep")
    for kind in DEEP_KINDS:                        # every kind at a depth in the thousands
        fz.check(deep_source(kind, 3000 if kind not in ("statements", "weak_statements") else 1500))
    for _ in range(max(0, count("deep") - len(DEEP_KINDS))):
        fz.check(deep_source(fz.rnd.choice(DEEP_KINDS), fz.rnd.choice([150, 199, 200, 201, 250, 1000])))
    assert fz.errors > 0 and fz.compiled > 0


def test_fuzz_reference_arguments():
    """Wrong arguments to .reference: any mix of kinds, dtypes, shapes — only TdslError."""
    fz = Fuzzer("arguments")
    kernels = []
    for p in EXAMPLE_FILES:
        prog = tiledsl.compile(p)
        kernels += list(prog) if isinstance(prog, tiledsl.Module) else [prog]
    dtypes = [np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_, np.uint8,
              np.complex64, object]

    def junk():
        r = fz.rnd.randrange(10)
        if r == 0:
            return None
        if r == 1:
            return fz.rnd.choice([1, -1, 2 ** 70, 1.5, float("nan"), float("inf"), True, "x", 1e300])
        if r == 2:
            return [1.0, 2.0]
        if r == 3:
            return np.float32(2.0)
        shape = tuple(fz.rnd.randint(0, 3) for _ in range(fz.rnd.randint(0, 4)))
        dtype = fz.rnd.choice(dtypes)
        if dtype is object:
            return np.empty(shape, dtype=object)
        return np.zeros(shape, dtype=dtype)

    for _ in range(count("arguments")):
        k = fz.rnd.choice(kernels)
        n = len(k.graph.params) + fz.rnd.choice([-1, 0, 0, 0, 1])
        good = random_arguments(k.graph, {d: fz.rnd.randint(1, 3) for d in k.graph.dims},
                                seed=fz.rnd.randrange(2 ** 32))
        args = [junk() if fz.rnd.random() < 0.3 else (good[i] if i < len(good) else junk())
                for i in range(max(0, n))]
        kwargs = {}
        if fz.rnd.random() < 0.2:
            kwargs[fz.rnd.choice([p.name for p in k.graph.params] + ["nope"])] = junk()
        try:
            k.reference(*args, **kwargs)
        except TdslError:
            pass
        except Exception as err:  # noqa: BLE001
            fz.fail(f"# {k.name}.reference({args!r}, **{kwargs!r})", "reference", err)
