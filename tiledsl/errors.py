"""The TdslError hierarchy: every mistake a user can make ends up here.

An error may carry a `Loc` (file, line, column, and the span's end column);
`str(err)` then renders it compiler-style:

    examples/bad.tdsl:3:17: error: unknown name 'xx'; did you mean 'x'?
        return relu(xx + y)
                    ^~
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable, Optional


@dataclass(frozen=True)
class Loc:
    """A span in a source file: 1-based line and column, end column exclusive."""
    file: str
    line: int
    col: int
    end_col: int = 0
    source: Optional[str] = None   # the whole file text, to quote the line

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def source_line(self) -> Optional[str]:
        if self.source is None:
            return None
        lines = self.source.split("\n")    # Lark counts lines by \n alone
        if 1 <= self.line <= len(lines):
            return lines[self.line - 1].rstrip("\r")
        return None

    def caret(self) -> str:
        text = self.source_line()
        if text is None:
            return ""
        text = text.expandtabs(1)  # keep caret columns aligned with the text
        col = self.col
        width = max(1, (self.end_col or col + 1) - col)
        width = min(width, max(1, len(text) - col + 1), 60)
        if len(text) > 100:   # show a window of a long line around the column
            start = max(0, col - 50)
            text = ("..." if start else "") + text[start:start + 100] + ("..." if start + 100 < len(text) else "")
            col = col - start + (3 if start else 0)
        return f"    {text}\n    {' ' * (col - 1)}^{'~' * (width - 1)}"


def located(kind: str, message: str, loc: Optional[Loc]) -> str:
    """'file:line:col: kind: message' and the line with a caret under the span
    (no location: 'kind: message'). Errors and `tiledsl check`'s notes both read so."""
    if loc is None:
        return f"{kind}: {message}"
    caret = loc.caret()
    return f"{loc}: {kind}: {message}" + (f"\n{caret}" if caret else "")


class TdslPerformanceWarning(UserWarning):
    """What tiledsl compiled runs right but slower than it could: a kernel whose
    registers spill to local memory under the schedule it was given."""


class TdslError(Exception):
    """Base of every error tiledsl raises about a user's program or call."""
    kind = "error"

    def __init__(self, message: str, loc: Optional[Loc] = None, notes: Iterable[str] = ()):
        self.message = message
        self.loc = loc
        self.notes = tuple(notes)
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join([located("error", self.message, self.loc)] + [f"note: {n}" for n in self.notes])

    def __str__(self) -> str:
        return self.render()


class TdslSyntaxError(TdslError):
    """The text is not in the language's grammar."""


class TdslNameError(TdslError):
    """An unknown or duplicated name: variable, parameter, dim, function, kernel."""


class TdslShapeError(TdslError):
    """Dims that do not line up: broadcasting, reductions, @, results, call-time sizes."""


class TdslTypeError(TdslError):
    """A dtype that an operation cannot take, or a conversion that must be explicit."""


class TdslArgumentError(TdslError):
    """A call with the wrong arguments: count, kind, dtype, host vs device, outputs."""


class TdslScheduleError(TdslError):
    """A schedule that is malformed or cannot run on the device."""


class TdslCompileError(TdslError):
    """The CUDA compiler rejected generated code: always a tiledsl bug, reported with the log."""


class TdslRuntimeError(TdslError):
    """A failure while launching or running on the GPU (no GPU, driver errors)."""


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """'; did you mean 'x'?' for the closest candidate, or '' when none is close."""
    match = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return f"; did you mean '{match[0]}'?" if match else ""
