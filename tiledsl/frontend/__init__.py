"""Front end: text → syntax tree (parser) → checked IR (checker) → IR passes."""
from __future__ import annotations

from ..errors import Loc, TdslError
from ..ir.passes import run_passes
from .checker import check_program
from .parser import parse


def compile_source(text: str, file: str = "<string>"):
    """Parse, check and optimise a program; returns (graphs, hints by kernel name)."""
    try:
        program = parse(text, file)
        graphs, hints = check_program(program)
        return [run_passes(g) for g in graphs], hints
    except RecursionError:
        raise TdslError("program nested too deeply to compile", Loc(file, 1, 1, 2, text)) from None
