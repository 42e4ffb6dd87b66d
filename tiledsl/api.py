"""The Python surface: `tiledsl.compile(src)` → a `Kernel` or a `Module` of kernels."""
from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import Iterator, Optional, Union

from .errors import TdslArgumentError, TdslError, TdslNameError
from .frontend import compile_source
from .ir.graph import Graph
from .ir.printer import format_graph
from .schedule.hints import Hints


def _type_text(dtype, dims) -> str:
    return f"{dtype}[{', '.join(dims)}]" if dims is not None else str(dtype)


class _CallState:
    """What a call reads first: the kernel and its launcher (None until the first GPU call)."""
    __slots__ = ("kernel", "launcher")


def _call(state: _CallState, *args, out=None, **kwargs):
    """A kernel's call: warm calls go straight to the launcher's dispatch for their
    argument count; the first call makes the launcher (importing CuPy)."""
    launcher = state.launcher
    if launcher is not None and not kwargs:
        dispatch = launcher._dispatchers.get(len(args))
        if dispatch is not None:
            return dispatch(args, out)
    kernel = state.kernel
    if launcher is None:
        reject_host_arrays(kernel, args, kwargs)
        from .runtime import launcher_for   # imports CuPy; only a GPU call pays for it
        launcher = state.launcher = launcher_for(kernel)
    return launcher(args, kwargs, out)


class Kernel(functools.partial):
    """One compiled kernel: its signature, IR, reference and (on a GPU) its launcher.

    Called like a function: `k(x, y)` or `k(x, y, out=o)`. It is a functools.partial
    (of `_call`) only because CPython 3.12+ calls a partial, and a subclass that
    does not define __call__, through vectorcall; a class's own __call__ goes
    through a slot that builds an argument tuple and dict on every call (about
    0.12 us more per call on a 3.12 host: the warm launch is a few microseconds)."""

    def __new__(cls, graph: Graph, hints: Optional[Hints] = None, file: str = ""):
        state = _CallState()
        self = super().__new__(cls, _call, state)
        state.kernel, state.launcher = self, None
        return self

    def __init__(self, graph: Graph, hints: Optional[Hints] = None, file: str = ""):
        self.graph = graph
        self.hints = hints or Hints()
        self.file = file

    @property
    def _launcher(self):
        return self.args[0].launcher

    @_launcher.setter
    def _launcher(self, launcher) -> None:
        self.args[0].launcher = launcher

    def __get__(self, obj, objtype=None):
        return self     # a kernel kept as a class attribute is not a method (partial is one from 3.14)

    def __reduce__(self):
        raise TypeError(f"a tiledsl.Kernel ({self.name}) cannot be pickled or copied: compile its source again")

    @property
    def name(self) -> str:
        return self.graph.name

    @property
    def ir(self) -> Graph:
        return self.graph

    @property
    def signature(self) -> str:
        params = ", ".join(f"{p.name}: {_type_text(p.dtype, p.dims)}"
                           + (f" = {p.default!r}".replace("True", "true").replace("False", "false")
                              if p.default is not None else "") for p in self.graph.params)
        results = [_type_text(r.dtype, r.dims or None) for r in self.graph.results]
        result = results[0] if len(results) == 1 else f"({', '.join(results)})"
        return f"{self.name}({params}) -> {result}"

    def __repr__(self) -> str:
        return f"<tiledsl.Kernel {self.signature}>"

    def ir_text(self) -> str:
        return format_graph(self.graph)

    @property
    def notes(self) -> list[str]:
        """Advice on code that is valid but slow as written (`tiledsl check` prints it)."""
        from .frontend.advice import advice
        return advice(self.graph, self.hints)

    def reference(self, *args, compute: str = "exact", **kwargs):
        """Run on the CPU with NumPy, with the language's exact semantics.

        compute="f64" holds every float in float64 instead: the baseline that
        GPU results are compared against.
        """
        from .reference import evaluate
        return evaluate(self.graph, args, kwargs, compute)

    def cuda_source(self, *args, **kwargs) -> str:
        """The CUDA C++ that a call with these arguments runs (needs no GPU:
        only the arguments' shapes are read; NumPy arrays do)."""
        from .codegen import sources_for
        from .signature import bind
        from .runtime.arrays import dtype_of
        bound = bind(self.graph, args, kwargs, dtype_of=dtype_of,
                     shape_of=lambda a: tuple(a.shape) if hasattr(a, "shape") else None,
                     describe=lambda a: type(a).__name__)
        sources = sources_for(self, bound.extents)
        if not sources:     # every result is empty
            return f"// {self.no_launch_note(bound.extents) or 'no kernel launches at these sizes'}"
        return "\n".join(s.source for s in sources)

    def no_launch_note(self, extents: dict) -> Optional[str]:
        """What to say instead of CUDA where every result is empty at `extents` (nothing
        launches), else None."""
        if all(math.prod(extents[d] for d in r.dims) == 0 for r in self.graph.results):
            zero = ", ".join(f"{d}=0" for d, n in extents.items() if n == 0)
            return f"no kernel launches at {zero} (every result of {self.name} is empty)"
        return None

    def autotune(self, *args, budget: Optional[float] = None, db=None, store: bool = True,
                 retune: bool = False, progress: bool = False, max_candidates: int = 64, **kwargs):
        """Search this kernel's schedules at the call class of `args` on the GPU,
        install the winners for later calls of that call class (calls at other
        sizes read the database, else the rules) and store them in the tuning
        database (`db`: a path, False for none, default $TILEDSL_TUNING_DB or
        the cache folder's tuning.json). Only the arguments' shapes, dtypes and
        scalar values are used: every candidate runs on fresh random inputs
        and is checked against the float64 reference before it may win.
        Returns a tiledsl.tune.TuneReport (print it for the table)."""
        from .runtime.arrays import dtype_of
        from .signature import bind
        from .tune import autotune
        if budget is not None and not (isinstance(budget, (int, float)) and 0 < budget < float("inf")):
            raise TdslArgumentError(f"autotune(budget=...) takes seconds, more than 0; got {budget!r}")
        if isinstance(max_candidates, bool) or not isinstance(max_candidates, int) or max_candidates < 1:
            raise TdslArgumentError(f"autotune(max_candidates=...) takes a count of 1 or more; got {max_candidates!r}")
        bound = bind(self.graph, args, kwargs, dtype_of=dtype_of,
                     shape_of=lambda a: tuple(a.shape) if hasattr(a, "shape") else None,
                     describe=lambda a: type(a).__name__)
        scalars = {p.index: bound.values[p.index] for p in self.graph.params if p.is_scalar}
        return autotune(self, bound.extents, budget=budget, db=db, store=store, retune=retune,
                        progress=progress, scalars=scalars, max_candidates=max_candidates)


def reject_host_arrays(kernel: Kernel, args, kwargs) -> None:
    import numpy as np
    for p, value in zip(kernel.graph.params, list(args) + [kwargs.get(p.name) for p in
                                                           kernel.graph.params[len(args):]]):
        if isinstance(value, np.ndarray) and not p.is_scalar:
            raise TdslArgumentError(
                f"'{p.name}' is a NumPy array (host memory); {kernel.name}() runs on the GPU and takes "
                f"CuPy arrays (cupy.asarray(x)) or anything with __cuda_array_interface__/DLPack. "
                f"To run on the CPU, call {kernel.name}.reference(...)", p.loc)


class NoSuchKernelError(TdslNameError, KeyError):
    """`mod["name"]` for a kernel the module does not have: a TdslError naming the
    ones it has, and a KeyError as a failed lookup by key should be (its str is
    TdslError's, not KeyError's quoted repr)."""


class Module:
    """The kernels of a file with several: `mod.softmax(x)`, `mod["softmax"]`."""

    def __init__(self, kernels: dict[str, Kernel], file: str):
        self._kernels = kernels
        self.file = file

    def _missing(self, name) -> str:
        kernels = self.__dict__.get("_kernels", {})
        return (f"module {self.__dict__.get('file', '?')!r} has no kernel {name!r}; "
                f"it has {', '.join(kernels) or 'none'}")

    def __getattr__(self, name: str) -> Kernel:
        kernels = self.__dict__.get("_kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(self._missing(name))

    def __getitem__(self, name: str) -> Kernel:
        try:
            return self._kernels[name]
        except (KeyError, TypeError):     # TypeError: an unhashable key
            raise NoSuchKernelError(self._missing(name)) from None

    def __iter__(self) -> Iterator[Kernel]:
        return iter(self._kernels.values())

    def __len__(self) -> int:
        return len(self._kernels)

    def __contains__(self, name: str) -> bool:
        return name in self._kernels

    @property
    def names(self) -> list[str]:
        return list(self._kernels)

    def __repr__(self) -> str:
        return f"<tiledsl.Module {self.file}: {', '.join(self._kernels)}>"


def _looks_like_path(text: str) -> bool:
    """Whether compile() reads `text` as a path. A program needs '{', so a single
    line without one is a path where it could be one: it names a file or folder,
    ends in .tdsl, or has a '/' and no spaces ('/tmp/nope'), rather than text
    whose syntax error at '/' would hide the missing file. No path holds a NUL."""
    if "\n" in text or "{" in text or "\0" in text:
        return False
    return (os.path.exists(text) or text.endswith(".tdsl")
            or (("/" in text or os.sep in text) and not any(c.isspace() for c in text)))


def read_source(src: Union[str, os.PathLike], file: Optional[str] = None) -> tuple[str, str]:
    """(text, file name) from source text or a path."""
    if isinstance(src, os.PathLike) or (isinstance(src, str) and _looks_like_path(src)):
        path = Path(src)
        try:
            return path.read_text(encoding="utf-8-sig"), file or str(src)
        except OSError as err:
            raise TdslError(f"cannot read {str(src)!r}: {err.strerror or err}") from None
        except UnicodeDecodeError:
            raise TdslError(f"{str(src)!r} is not UTF-8 text") from None
        except ValueError:          # a NUL in a path object: no file can have that name
            raise TdslError(f"cannot read {str(src)!r}: a path cannot hold a NUL character") from None
    if not isinstance(src, str):
        raise TdslError(f"compile() takes source text or a path, not {type(src).__name__}")
    return src, file or "<string>"


def compile(src: Union[str, os.PathLike], *, file: Optional[str] = None) -> Union[Kernel, Module]:
    """Parse and check a .tdsl program (text or path).

    Returns a `Kernel` when the program has one kernel, else a `Module`.
    """
    text, name = read_source(src, file)
    text = text.removeprefix("\ufeff")   # a byte-order mark is not part of the program
    graphs, hints = compile_source(text, name)
    kernels = {g.name: Kernel(g, hints.get(g.name), name) for g in graphs}
    if len(kernels) == 1:
        return next(iter(kernels.values()))
    if not kernels:
        raise TdslError(f"{name}: no kernel in the program")
    return Module(kernels, name)
