"""Front end: text → syntax tree (parser) → checked IR (checker) → IR passes."""
from __future__ import annotations

from ..errors import Loc, TdslError
from ..ir.passes import PIPELINE, run_passes, tf32_operands_along_k
from .checker import check_program
from .parser import parse


def compile_source(text: str, file: str = "<string>"):
    """Parse, check and optimise a program; returns (graphs, hints by kernel name)."""
    try:
        program = parse(text, file)
        graphs, hints = check_program(program)
        tf32 = {name for name, h in hints.items() if h.tf32}
        return [run_passes(g, PIPELINE + ((tf32_operands_along_k,) if g.name in tf32 else ())) for g in graphs], hints
    except RecursionError:
        raise TdslError("program nested too deeply to compile", Loc(file, 1, 1, 2, text)) from None
