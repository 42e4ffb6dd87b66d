"""`schedule NAME { ... }` blocks: the user's pinned choices, validated here.

A block is data separate from the algorithm. This module only checks that
each directive is known and well formed and refers to the kernel's own dims;
whether the pinned schedule fits a device is decided when it is applied.

    schedule linear_relu {
        tile(M=128, N=128, K=32)   # block tile per dim
        stages(3)                  # cp.async pipeline depth (1 = none)
        warps(8)                   # warps per block
    }
    schedule softmax {
        cluster(4)                 # a row shared by 4 blocks (sm_90a; 1: a block a row)
    }
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Optional

from ..errors import Loc, TdslNameError, TdslScheduleError, did_you_mean
from ..frontend import ast


@dataclass(frozen=True)
class Hints:
    """What a schedule block pins; None means 'the tuner decides'."""
    tile: tuple[tuple[str, int], ...] = ()          # (dim, extent) pairs
    stages: Optional[int] = None
    warps: Optional[int] = None
    threads: Optional[int] = None
    microtile: tuple[tuple[str, int], ...] = ()
    vector: Optional[int] = None
    split_k: Optional[int] = None
    group: Optional[int] = None
    tf32: Optional[bool] = None
    cluster: Optional[int] = None                   # row reductions: blocks sharing a long row (1: none)
    loc: Optional[Loc] = field(default=None, compare=False, repr=False)    # the schedule block's

    def tile_of(self, dim: str) -> Optional[int]:
        return dict(self.tile).get(dim)

    @property
    def given(self) -> str:
        """The directives given, as 'name=value' in field order ('' for none): what keys a
        kernel's tuning records, so that a directive added to the language later leaves
        the keys of kernels that do not use it as they were."""
        return ", ".join(f"{name}={value!r}" for name, value in self._set())

    @property
    def directives(self) -> str:
        """The directives given, as the schedule block writes them ('tile(M=128, N=64), warps(4)')."""
        def args(value) -> str:
            if isinstance(value, tuple):
                return ", ".join(f"{dim}={n}" for dim, n in value)
            return "true" if value is True else "false" if value is False else str(value)
        return ", ".join(f"{name}({args(value)})" for name, value in self._set())

    def _set(self) -> list[tuple[str, object]]:
        """(directive, value) for each directive the block gives, in field order."""
        return [(f.name, getattr(self, f.name)) for f in fields(self)
                if f.name != "loc" and getattr(self, f.name) != f.default]


# directive → (kind of arguments, allowed values or bounds)
_SCALAR_DIRECTIVES = {
    "stages": (1, 8), "warps": (1, 32), "threads": (32, 1024), "vector": (1, 16),
    "split_k": (1, 64), "group": (1, 64), "cluster": (1, 8),
}
_POW2 = {"warps", "vector", "threads", "cluster"}
_DIM_DIRECTIVES = {"tile": (1, 4096), "microtile": (1, 32)}
_BOOL_DIRECTIVES = {"tf32"}
DIRECTIVES = set(_SCALAR_DIRECTIVES) | set(_DIM_DIRECTIVES) | _BOOL_DIRECTIVES


def _int_arg(expr, name: str, lo: int, hi: int) -> int:
    if not isinstance(expr, ast.Number) or not isinstance(expr.value, int):
        raise TdslScheduleError(f"{name}() takes an integer", expr.loc)
    value = expr.value
    if not lo <= value <= hi:
        raise TdslScheduleError(f"{name}({value}) is out of range: it takes {lo} to {hi}", expr.loc)
    if name in _POW2 and value & (value - 1):
        raise TdslScheduleError(f"{name}({value}) must be a power of two", expr.loc)
    return value


def _directive(d: ast.Directive, dims: set[str], contracted: set[str]) -> tuple[str, object]:
    if d.name not in DIRECTIVES:
        raise TdslScheduleError(f"unknown schedule directive '{d.name}'"
                                f"{did_you_mean(d.name, DIRECTIVES)} (directives: "
                                f"{', '.join(sorted(DIRECTIVES))})", d.loc)
    if d.name in _SCALAR_DIRECTIVES:
        if len(d.args) != 1 or d.kwargs:
            raise TdslScheduleError(f"{d.name}() takes one integer, e.g. {d.name}(4)", d.loc)
        return d.name, _int_arg(d.args[0], d.name, *_SCALAR_DIRECTIVES[d.name])
    if d.name in _BOOL_DIRECTIVES:
        if len(d.args) != 1 or d.kwargs or not isinstance(d.args[0], ast.Bool):
            raise TdslScheduleError(f"{d.name}() takes true or false", d.loc)
        return d.name, d.args[0].value
    lo, hi = _DIM_DIRECTIVES[d.name]
    if d.args or not d.kwargs:
        raise TdslScheduleError(f"{d.name}() takes dims by name, e.g. {d.name}(M=64, N=64)", d.loc)
    pairs = []
    for kw in d.kwargs:
        if kw.name not in dims | contracted:
            raise TdslScheduleError(f"{d.name}(): '{kw.name}' is not a dim of this kernel"
                                    f"{did_you_mean(kw.name, dims | contracted)}", kw.loc)
        if any(kw.name == n for n, _ in pairs):
            raise TdslScheduleError(f"{d.name}(): dim {kw.name} is given twice", kw.loc)
        pairs.append((kw.name, _int_arg(kw.value, d.name, lo, hi)))
    return d.name, tuple(pairs)


def check_hints(program: ast.Program, graphs: dict) -> dict[str, Hints]:
    hints: dict[str, Hints] = {}
    for block in program.schedules:
        if block.kernel not in graphs:
            raise TdslNameError(f"schedule for unknown kernel '{block.kernel}'"
                                f"{did_you_mean(block.kernel, graphs)}", block.kernel_loc)
        if block.kernel in hints:
            raise TdslScheduleError(f"kernel '{block.kernel}' has two schedule blocks", block.loc)
        graph = graphs[block.kernel]
        dims = set(graph.dims)
        contracted = {v.attr("contract") for v in graph.values if v.op == "matmul"}
        fields: dict[str, object] = {}
        for d in block.directives:
            key, value = _directive(d, dims, contracted)
            if key in fields:
                raise TdslScheduleError(f"directive {key}() is given twice", d.loc)
            fields[key] = value
        hints[block.kernel] = Hints(**fields, loc=block.loc)
    return hints
