"""Source text → syntax tree (`ast.Program`), with Lark's errors in our words."""
from __future__ import annotations

import re
from functools import lru_cache

import lark
from lark import Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ..errors import Loc, TdslSyntaxError
from ..resources import resource_dir
from . import ast

# Deeper nesting than this is rejected with a located error rather than
# risking Python's recursion limit in the passes that walk the tree.
MAX_NESTING = 200

# No type holds an integer of more digits (f64's largest is about 1.8e308);
# bounding the text also keeps int() below Python's 4300-digit limit.
MAX_INT_DIGITS = 309

# The longest number at the start of a run-together token such as `1_000`.
_NUMBER_PREFIX = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
_RUN_ON_SUFFIX = re.compile(r"[0-9A-Za-z_.]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@lru_cache(maxsize=1)
def _lark() -> lark.Lark:
    grammar = (resource_dir("grammar") / "tdsl.lark").read_text()
    kwargs = dict(parser="lalr", propagate_positions=True, maybe_placeholders=True)
    try:   # the cache (a pickled parse table in the temp dir) saves ~0.1 s per process
        return lark.Lark(grammar, cache=True, **kwargs)
    except OSError:
        return lark.Lark(grammar, **kwargs)


# How Lark's terminal names read to a user.
_TERMINAL_WORDS = {
    "NAME": "a name", "INT": "a number", "FLOAT": "a number", "SIGN": "'-'",
    "ADD_OP": "'+', '-'", "MUL_OP": "'*', '/', '@'", "POW": "'**'", "NEG": "'-'",
    "COMPARE": "a comparison", "KERNEL": "'kernel'", "SCHEDULE": "'schedule'",
    "RETURN": "'return'", "TRUE": "'true'", "FALSE": "'false'", "$END": "end of file",
}
_EXPRESSION_START = {"NAME", "INT", "FLOAT", "LPAR", "NEG", "TRUE", "FALSE"}
_OPERATORS = {"ADD_OP", "MUL_OP", "POW", "COMPARE", "DOT"}


def _describe_terminal(name: str, parser: lark.Lark) -> str:
    if name in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[name]
    try:
        pattern = parser.get_terminal(name).pattern
        if isinstance(pattern, lark.lexer.PatternStr):
            return f"'{pattern.value}'"
    except KeyError:
        pass
    return name.lower()


def _describe_expected(expected: set[str], parser: lark.Lark) -> str:
    expected = set(expected)
    words = []
    if _EXPRESSION_START <= expected | {"TRUE", "FALSE", "NEG"} and {"NAME", "INT", "LPAR"} <= expected:
        expected -= _EXPRESSION_START
        words.append("an expression")
    if len(expected & _OPERATORS) >= 3:
        expected -= _OPERATORS
        words.append("an operator")
    words += sorted({_describe_terminal(t, parser) for t in expected})   # INT, FLOAT: "a number" once
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _describe_token(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    kind = {"NAME": "name", "INT": "integer", "FLOAT": "number"}.get(token.type)
    return f"{kind} '{token.value}'" if kind else f"'{token.value}'"


def _run_on_number(err: UnexpectedCharacters, file: str, source: str):
    """The error for a number run into other text (`1_000`, `0x10`, `1e`, `1.T`), located at
    that text; None when the unexpected character does not start a number."""
    number = _NUMBER_PREFIX.match(source, err.pos_in_stream)
    if number is None:
        return None
    suffix = _RUN_ON_SUFFIX.match(source, number.end())
    if suffix is None:    # cannot happen: the lexer stopped at the number for this reason
        return None
    text, col = suffix.group(), err.column + len(number.group())
    what = f"name '{text}'" if _IDENTIFIER.fullmatch(text) else f"'{text}'"
    hint = ("an exponent needs digits, as in 1e-5" if text in ("e", "E")
            else "digit separators, hex and C suffixes are not supported")
    return TdslSyntaxError(f"unexpected {what} right after the number '{number.group()}' ({hint})",
                           Loc(file, err.line, col, col + len(text), source))


def _syntax_error(err: UnexpectedInput, file: str, source: str) -> TdslSyntaxError:
    parser = _lark()
    if isinstance(err, UnexpectedCharacters):
        run_on = _run_on_number(err, file, source)
        if run_on is not None:
            return run_on
        char = source[err.pos_in_stream] if err.pos_in_stream < len(source) else "?"
        loc = Loc(file, err.line, err.column, err.column + 1, source)
        shown = repr(char) if char.isprintable() else f"U+{ord(char):04X}"
        expected = _describe_expected(set(err.allowed or ()), parser) if err.allowed else None
        message = f"unexpected character {shown}" + (f"; expected {expected}" if expected else "")
        return TdslSyntaxError(message, loc)
    assert isinstance(err, UnexpectedToken)
    token = err.token
    if token.type == "$END":
        lines = source.rstrip().split("\n")   # point just after the last text
        line, col = len(lines), len(lines[-1]) + 1
        loc = Loc(file, line, col, col + 1, source)
    else:
        loc = Loc(file, token.line, token.column, token.end_column or token.column + 1, source)
    expected = set(err.expected)
    try:   # LALR's expected set is a superset; ask the parser what really fits here
        expected = set(err.interactive_parser.accepts()) or expected
    except Exception:  # noqa: BLE001 - best effort; fall back to Lark's own set
        pass
    if token.type == "COMPARE" and "COMPARE" not in expected:
        return TdslSyntaxError("comparisons cannot be chained; write logical_and(a < b, b < c)", loc)
    expected = _describe_expected(expected, parser)
    return TdslSyntaxError(f"unexpected {_describe_token(token)}; expected {expected}", loc)


class _Builder:
    """Walks Lark's parse tree and builds `ast` nodes with locations."""

    def __init__(self, file: str, source: str):
        self.file, self.source = file, source

    def loc(self, item) -> Loc:
        if isinstance(item, Token):
            line, col = item.line, item.column
            end = item.end_column if item.end_line == item.line else col + len(str(item).split("\n")[0])
        else:
            meta = item.meta
            line, col = meta.line, meta.column
            end = meta.end_column if meta.end_line == meta.line else col + 10_000
        return Loc(self.file, line, col, end, self.source)

    def program(self, tree: Tree) -> ast.Program:
        kernels, schedules = [], []
        for child in tree.children:
            if child.data == "kernel":
                kernels.append(self.kernel(child))
            else:
                schedules.append(self.schedule(child))
        return ast.Program(self.file, self.source, tuple(kernels), tuple(schedules))

    def kernel(self, tree: Tree) -> ast.Kernel:
        children = [c for c in tree.children if c is not None]
        name = children[1]
        params = tuple(self.param(c) for c in children if isinstance(c, Tree) and c.data == "param")
        results_tree = next(c for c in children if isinstance(c, Tree)
                            and c.data in ("single_result", "result_tuple"))
        results = tuple(self.type(c) for c in results_tree.children if c is not None)
        body_start = children.index(results_tree) + 1
        body = tuple(self.stmt(c) for c in children[body_start:])
        end = Loc(self.file, tree.meta.end_line, max(1, tree.meta.end_column - 1),
                  tree.meta.end_column, self.source)
        return ast.Kernel(self.loc(tree), str(name), self.loc(name), params, results,
                          self.loc(results_tree), body, end)

    def param(self, tree: Tree) -> ast.Param:
        name, type_tree, default = tree.children
        return ast.Param(self.loc(tree), str(name), self.type(type_tree),
                         self.default(default) if default is not None else None)

    def default(self, tree: Tree):
        if tree.data == "bool_default":
            return ast.Bool(self.loc(tree), tree.children[0].type == "TRUE")
        sign, token = tree.children
        negative = sign is not None and str(sign) == "-"
        if tree.data == "constant_default":   # checked by the checker: inf, nan, pi
            name = ast.Name(self.loc(token), str(token))
            return ast.Negate(self.loc(tree), name) if negative else name
        value = self.number_value(token)
        return ast.Number(self.loc(tree), -value if negative else value,
                          ("-" if negative else "") + str(token))

    def type(self, tree: Tree) -> ast.TypeDecl:
        dtype, *dims = tree.children
        dims = [d for d in dims if d is not None]
        decls = None
        if dims:
            decls = []
            for d in dims:
                token = d.children[0]
                if d.data == "literal_dim":
                    extent = self.number_value(token)
                    decls.append(ast.DimDecl(self.loc(token), str(extent), extent))
                else:
                    decls.append(ast.DimDecl(self.loc(token), str(token), None))
            decls = tuple(decls)
        return ast.TypeDecl(self.loc(tree), str(dtype), self.loc(dtype), decls)

    def stmt(self, tree: Tree) -> ast.Stmt:
        if tree.data == "assign":
            target, value = tree.children[0], tree.children[1]
            return ast.Assign(self.loc(tree), str(target), self.loc(target), self.expr(value, 0))
        values = tuple(self.expr(c, 0) for c in tree.children[1:] if c is not None)
        return ast.Return(self.loc(tree), values)

    def number_value(self, token: Token):
        text = str(token)
        if token.type == "INT":
            digits = text.lstrip("0") or "0"
            if len(digits) > MAX_INT_DIGITS:
                raise TdslSyntaxError(f"integer literal too large ({len(digits)} digits; no type holds "
                                      f"more than {MAX_INT_DIGITS})", self.loc(token))
            return int(digits)
        return float(text)   # one too large for any type is inf here; the checker rejects it

    def expr(self, item, depth: int) -> ast.Expr:
        if depth > MAX_NESTING:
            raise TdslSyntaxError(f"expression too long or nested too deeply (more than {MAX_NESTING} "
                                  f"levels); split it with intermediate assignments", self.loc(item))
        depth += 1
        if isinstance(item, Token):   # cannot happen with this grammar; kept total
            return ast.Name(self.loc(item), str(item))
        kind, ch = item.data, item.children
        loc = self.loc(item)
        if kind == "name":
            return ast.Name(loc, str(ch[0]))
        if kind in ("int_lit", "float_lit"):
            return ast.Number(loc, self.number_value(ch[0]), str(ch[0]))
        if kind in ("true_lit", "false_lit"):
            return ast.Bool(loc, kind == "true_lit")
        if kind == "negate":
            return ast.Negate(loc, self.expr(ch[1], depth))
        if kind in ("binary", "compare"):
            lhs, op, rhs = ch
            return ast.Binary(loc, str(op), self.loc(op), self.expr(lhs, depth), self.expr(rhs, depth))
        if kind == "attribute":
            return ast.Attribute(loc, self.expr(ch[0], depth), str(ch[1]), self.loc(ch[1]))
        if kind == "call":
            func, *args = ch
            positional, keywords = [], []
            for arg in args:
                if arg is None:
                    continue
                if isinstance(arg, Tree) and arg.data == "kwarg":
                    keywords.append(self.keyword(arg, depth))
                else:
                    positional.append(self.expr(arg, depth))
            return ast.Call(loc, str(func), self.loc(func), tuple(positional), tuple(keywords))
        raise TdslSyntaxError(f"unsupported syntax '{kind}'", loc)   # grammar and builder disagree

    def keyword(self, tree: Tree, depth: int) -> ast.Keyword:
        name, value = tree.children
        if isinstance(value, Tree) and value.data == "tuple":
            items = tuple(self.expr(c, depth) for c in value.children if c is not None)
            value = ast.TupleExpr(self.loc(value), items)
        else:
            value = self.expr(value, depth)
        return ast.Keyword(self.loc(tree), str(name), value)

    def schedule(self, tree: Tree) -> ast.ScheduleBlock:
        _, name, *directives = tree.children
        built = []
        for d in directives:
            dname, *args = d.children
            positional, keywords = [], []
            for arg in args:
                if arg is None:
                    continue
                if isinstance(arg, Tree) and arg.data == "kwarg":
                    keywords.append(self.keyword(arg, 0))
                else:
                    positional.append(self.expr(arg, 0))
            built.append(ast.Directive(self.loc(d), str(dname), tuple(positional), tuple(keywords)))
        return ast.ScheduleBlock(self.loc(tree), str(name), self.loc(name), tuple(built))


def parse(source: str, file: str = "<string>") -> ast.Program:
    """Parse a .tdsl text. Raises TdslSyntaxError with the location of the mistake."""
    try:
        tree = _lark().parse(source)
    except UnexpectedInput as err:
        raise _syntax_error(err, file, source) from None
    try:
        return _Builder(file, source).program(tree)
    except RecursionError:   # Lark's tree is nested as deeply as the text
        raise TdslSyntaxError(f"program nested too deeply to compile "
                              f"(limit {MAX_NESTING})", Loc(file, 1, 1, 2, source)) from None

