"""Calling a kernel on the GPU: bind, allocate, pick schedules, compile (cached), launch.

Everything that depends only on the call's *class* (dtypes, extents,
alignment) is planned once and kept in `_plans`; a repeated call does the
binding checks, an allocation if no `out=` is given, and the launches.
"""
from __future__ import annotations

import builtins
import ctypes
import math
import os
import struct
import threading
from typing import Optional

import numpy as np

from ..dtypes import float_max
from ..errors import TdslArgumentError, TdslError, TdslPerformanceWarning, TdslRuntimeError
from ..ir.graph import Graph
from ..schedule.choose import default, plan
from ..schedule.problem import Launch, problem, runs_columns, runs_spread
from ..schedule.layout import plan_layout
from ..schedule.partition import partition
from ..schedule.schedules import combine_lanes
from ..signature import bind, scalar_value
from .arrays import DeviceArray, contiguous_copy, describe, device_view, need_cupy


_cupy = need_cupy      # (the cupy module, or the error that says how to install it)


def device_arch(device: int) -> str:
    cc = _cupy().cuda.Device(device).compute_capability
    return "sm_90a" if cc == "90" else f"sm_{cc}"


def dependent_launches(device: int) -> bool:
    """Whether a launch on this device may overlap the one before it (runtime/dependent.py);
    TILEDSL_DEPENDENT_LAUNCH=0 turns it off (to time the difference)."""
    from .dependent import available
    return os.environ.get("TILEDSL_DEPENDENT_LAUNCH", "1") != "0" and \
        available(_cupy().cuda.Device(device).compute_capability)


class Launcher:
    def __init__(self, kernel, spread: bool = False, columns: bool = False):
        self.kernel = kernel
        self.graph: Graph = kernel.graph
        self.spread = spread        # each reduction level a group of its own (few long rows)
        self.columns = columns      # reductions across memory write their results over whole columns
        self._others: dict[str, "Launcher"] = {}     # "spread" / "columns" -> that partition's launcher
        self._parent: Optional["Launcher"] = None     # the fused partition's launcher, on another's
        self.groups = partition(self.graph, spread, columns)
        self.layouts = [plan_layout(g, self.graph) for g in self.groups]
        self.result_ids = [o.id for o in self.graph.outputs]
        self.temp_values = [v for g in self.groups for v in g.outputs if v.id not in self.result_ids]
        self._plans: dict = {}
        self._fast: dict = {}
        self._dispatchers: dict = {}     # argument count -> dispatch(args, out)
        self._ir_text = None
        self.overrides: dict = {}     # group index -> Schedule (the tuner's choice)
        self.pinned_extents: Optional[dict] = None   # the call class they are for (None: every one)
        # Where tuned schedules are looked up when a call class is planned:
        # None = $TILEDSL_TUNING_DB or the default file, False = never, else a path.
        self.tuning_db = None
        self.param_value_id = {v.attr("index"): v.id for v in self.graph.values if v.op == "param"}
        self._n_params = len(self.graph.params)
        self._n_required = max((p.index + 1 for p in self.graph.params if p.default is None), default=0)
        try:
            import cupy
            self._cupy, self._ndarray = cupy, cupy.ndarray
        except ImportError:
            self._cupy = self._ndarray = None
        if self._ndarray is not None and not hasattr(self._ndarray, "_c_contiguous"):
            self._ndarray = None     # a CuPy without the flag the fast path reads: every call checked in full
        self._functions: dict = {}
        self._lock = threading.Lock()

    # -- arguments -------------------------------------------------------------
    def _views(self, args: tuple, kwargs: dict):
        views: dict[int, DeviceArray] = {}

        def convert(p, value):
            if p.is_scalar:
                return value
            view = device_view(value)
            if view is None:
                raise TdslArgumentError(f"'{p.name}' must be a GPU array; got {describe(value)}", p.loc)
            views[p.index] = view
            return view

        params = self.graph.params
        args = tuple(convert(p, a) for p, a in zip(params, args)) + tuple(args[len(params):])
        kwargs = {k: convert(next(p for p in params if p.name == k), v) if any(p.name == k for p in params)
                  else v for k, v in kwargs.items()}
        bound = bind(self.graph, args, kwargs, dtype_of=lambda v: v.dtype if isinstance(v, DeviceArray) else None,
                     shape_of=lambda v: v.shape if isinstance(v, DeviceArray) else None, describe=describe)
        return bound, views

    def _outputs(self, out, extents, device) -> list[DeviceArray]:
        cupy = _cupy()
        results = self.graph.results
        if out is None:
            arrays = []
            with cupy.cuda.Device(device):
                for r in results:
                    shape = tuple(extents[d] for d in r.dims)
                    arrays.append(_allocate(cupy, shape, r.dtype))
            return [device_view(a) for a in arrays]
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if len(outs) != len(results):
            raise TdslArgumentError(f"out= needs {len(results)} array(s) for {self.graph.name}, got {len(outs)}",
                                    self.graph.loc)
        views = []
        for i, (r, o) in enumerate(zip(results, outs)):
            view = device_view(o)
            shape = tuple(extents[d] for d in r.dims)
            if view is None:
                raise TdslArgumentError(f"out[{i}] must be a GPU array; got {describe(o)}", r.loc)
            if view.dtype != r.dtype:
                raise TdslArgumentError(f"out[{i}] must be {r.dtype}, got {view.dtype or 'another dtype'}", r.loc)
            if tuple(view.shape) != shape:
                raise TdslArgumentError(f"out[{i}] must have shape {shape}, got {tuple(view.shape)}", r.loc)
            if not view.contiguous:
                raise TdslArgumentError(f"out[{i}] must be contiguous (row-major); got strides "
                                        f"{view.strides} (in elements)", r.loc)
            if view.device != device:
                raise TdslArgumentError(f"out[{i}] is on device {view.device}, the inputs on {device}", r.loc)
            views.append(view)
        return views

    def _check_overlap(self, inputs: dict, outputs: list) -> None:
        def span(v: DeviceArray, itemsize: int):
            return v.ptr, v.ptr + max(1, v.size) * itemsize

        spans = [(span(o, r.dtype.itemsize), f"out[{i}]") for i, (o, r) in
                 enumerate(zip(outputs, self.graph.results))]
        for i, (a, name_a) in enumerate(spans):
            for b, name_b in spans[i + 1:]:
                if a[0] < b[1] and b[0] < a[1]:
                    raise TdslArgumentError(f"{name_a} and {name_b} overlap in memory", self.graph.loc)
        only_pointwise = all(g.kind == "pointwise" for g in self.groups)
        for p in self.graph.params:
            if p.index not in inputs:
                continue
            v = inputs[p.index]
            a = span(v, p.dtype.itemsize)
            for (b, name), o in zip(spans, outputs):
                if a[0] < b[1] and b[0] < a[1]:
                    same = v.ptr == o.ptr and tuple(v.shape) == tuple(o.shape) and v.strides == o.strides
                    if not (same and only_pointwise):
                        raise TdslArgumentError(f"{name} overlaps input '{p.name}'; only a pointwise kernel "
                                                f"may write over an identical input", p.loc)

    # -- compile -----------------------------------------------------------------
    def _function(self, index: int, launch: Launch, device: int, origin: str = "default"):
        key = (index, launch.schedule.code, launch.stage, device)
        fn = self._functions.get(key)
        if fn is not None:
            return fn
        with self._lock:
            fn = self._functions.get(key)
            if fn is None:
                from ..codegen.params import kernel_params
                group, layout, schedule = self.groups[index], self.layouts[index], launch.schedule
                arch = device_arch(device)
                binary = self.binary(index, schedule, launch.stage, arch)
                name = schedule.kernel_name(self.graph.name, index, launch.stage)
                usage = binary.resources.get(name)
                fn = (_load(binary.cubin, name, device, launch.shared_bytes,
                            usage.shared_bytes if usage else 4096, sized=schedule.shared_row),
                      kernel_params(group, layout, schedule, launch.stage)[1])
                self._functions[key] = fn
                message = spill_message(name, binary.resources.get(name), arch, schedule.tag,
                                        self._schedule_source(origin))
                if message:
                    _warn_once(message, TdslPerformanceWarning)
        return fn

    def _schedule_source(self, origin: str) -> str:
        """Where a group's schedule came from, in a user's words."""
        if origin == "override":
            return "the schedule given to this kernel"
        if origin.startswith("db"):
            return "the tuning database"
        hints = self.kernel.hints
        if hints.directives:
            return f"the schedule block ({hints.directives})" + (f" at {hints.loc}" if hints.loc else "")
        return DEFAULT_RULES

    @property
    def partition_mode(self) -> str:
        """Which partition this launcher runs: "" the fused one, "spread" or "columns"."""
        return "spread" if self.spread else "columns" if self.columns else ""

    @property
    def ir_text(self) -> str:
        """The IR's text, as kernel keys hash it (partition_ir_text)."""
        if self._ir_text is None:
            self._ir_text = partition_ir_text(self.graph, self.partition_mode)
        return self._ir_text

    def partition_launcher(self, mode: str) -> "Launcher":
        """The launcher of partition `mode` ("" this one), made once: the fused launcher
        hands a call class to it where `_other_for` says, and the tuner pins its schedules
        on it (set_overrides forgets this launcher's planned calls too)."""
        if not mode:
            return self
        launcher = self._others.get(mode)
        if launcher is None:
            launcher = self._others[mode] = Launcher(self.kernel, spread=mode == "spread", columns=mode == "columns")
            launcher._parent = self        # (whose tuning_db it reads: _tuned)
        return launcher

    def binary(self, index: int, schedule, stage: int, arch: str):
        """Group `index` under `schedule`, compiled for `arch` through the caches.
        Needs no GPU: a tuner's worker processes fill the disk cache with it."""
        from ..codegen.cuda import render
        from .cache import cached_kernel
        return cached_kernel(kernel_key_parts(self.ir_text, index, schedule, stage),
                             lambda: render(self.graph, self.groups[index], self.layouts[index],
                                            schedule, stage).source, arch)

    # -- call --------------------------------------------------------------------
    def __call__(self, args: tuple, kwargs: dict, out):
        if not kwargs:
            return (self._dispatchers.get(len(args)) or self._dispatcher(len(args)))(args, out)
        return self._call(args, kwargs, out, None)

    def _dispatcher(self, n_args: int):
        """dispatch(args, out) for calls with this many arguments: the call class's
        key (see `_key_function`) and its warm call, else the checked path (told
        the class, to make it warm). One generated function: every frame and
        attribute read here is paid on each call."""
        lines = self._key_lines(n_args, fail="return checked(args, {}, out, None)", then=[
            "warm = fast_get(key)",
            "return warm(args, out{pointers}) if warm is not None else checked(args, {{}}, out, key)"])
        dispatch = self._generate("dispatch", lines, checked=self._call, fast_get=self._fast.get)
        self._dispatchers[n_args] = dispatch
        return dispatch

    def _key_function(self, n_args: int):
        """key_of(args, out): the call's class, or None where the call must take
        the checked path (dispatch's key, for tests and tools)."""
        return self._generate("key_of", self._key_lines(n_args, fail="return None", then=["return key"]))

    def _generate(self, name: str, body: list, **env):
        env["ndarray"] = self._ndarray
        env.update(self._dtype_names())
        exec("\n".join([f"def {name}(args, out):"] + body), env)   # noqa: S102 - indices only, never the user's text
        return env[name]

    def _dtype_names(self) -> dict:
        """DT<i>: parameter i's NumPy dtype, DR<j>: result j's, which a warm call's
        arrays must have (CuPy keeps NumPy's one object per dtype, so `is` checks
        it). A dtype NumPy cannot name here (bf16 without ml_dtypes) matches no
        array: such calls take the checked path, which says why."""
        def numpy_or_nothing(dtype):
            try:
                return dtype.numpy
            except TdslError:
                return object()
        names = {f"DT{p.index}": numpy_or_nothing(p.dtype) for p in self.graph.params if not p.is_scalar}
        names.update({f"DR{j}": numpy_or_nothing(r.dtype) for j, r in enumerate(self.graph.results)})
        return names

    def _key_lines(self, n_args: int, fail: str, then: list) -> list:
        """Lines that set `key`, the call's class when every array is a C-contiguous
        CuPy array of its declared dtype, all on one device (shapes, 16-byte
        alignment, the device; scalars' types), else run `fail`: the checked path
        (which also copies non-contiguous inputs, names the devices of arrays on
        several and explains a wrong dtype). Written out for this many arguments,
        as attribute reads CuPy answers without building objects; aligned
        pointers, the usual case, add one small int."""
        if self._ndarray is None or not self._n_required <= n_args <= self._n_params:
            return [f"    {fail}"]    # (left-out scalars take their defaults: each count has its own classes)
        params = self.graph.params[:n_args]
        names = ", ".join(f"x{i}" for i in range(n_args)) + ("," if n_args == 1 else "")
        lines = [f"    {names} = args" if n_args else "    pass"]
        parts, arrays = [str(n_args)], []
        for i, p in enumerate(params):
            if p.is_scalar:
                lines += [f"    t{i} = type(x{i})",
                          f"    if t{i} is not float and t{i} is not int and t{i} is not bool: {fail}"]
                parts.append(f"t{i}")
            else:
                check, shape = self._shape_key(f"x{i}", len(p.dims))
                lines.append(f"    if type(x{i}) is not ndarray or not x{i}._c_contiguous or x{i}.dtype is not DT{i}"
                             f"{check}: {fail}")
                parts += shape
                arrays.append(f"x{i}")
        n_out = len(self.graph.results)
        outs = [f"o{j}" for j in range(n_out)]
        one = one_gpu(self._cupy)
        lines.append("    if out is None:")
        lines += self._class_lines(arrays, parts + ["None"], fail, then, one)
        if n_out == 1:      # one result: a bare array (a 1-tuple takes the checked path)
            lines += ["    elif type(out) is ndarray:", "        o0 = out"]
        else:
            lines += [f"    elif type(out) is tuple and len(out) == {n_out}:", f"        {', '.join(outs)} = out"]
        shapes = [self._shape_key(o, len(r.dims)) for o, r in zip(outs, self.graph.results)]
        lines += [f"        if {'' if n_out == 1 else f'type({o}) is not ndarray or '}not {o}._c_contiguous "
                  f"or {o}.dtype is not DR{j}{shapes[j][0]}: {fail}" for j, o in enumerate(outs)]
        lines += self._class_lines(arrays + outs, parts + [part for _, shape in shapes for part in shape],
                                   fail, then, one)
        lines += ["    else:", f"        {fail}"]
        return lines

    @staticmethod
    def _shape_key(array: str, rank: int) -> tuple[str, list]:
        """(more of the array's check, the key's parts) that fix its shape, given its
        declared rank: a rank-1 array's size, a rank-2 one's length and nonzero size (an
        empty one takes the checked path: its size leaves the row length open), else its
        shape. CuPy builds `shape` as a new tuple each read, and the key hashes it: the
        ints cost a warm call about 0.1 us less per array (CPU, CuPy 14)."""
        if rank == 1:
            return f" or {array}.ndim != 1", [f"{array}.size"]
        if rank == 2:
            return f" or {array}.ndim != 2 or not (z{array} := {array}.size)", [f"len({array})", f"z{array}"]
        return "", [f"{array}.shape"]

    @staticmethod
    def _class_lines(arrays: list, parts: list, fail: str, then: list, one_device: bool = False) -> list:
        """(indented for an if-branch) key = (parts..., alignment, device) of these
        arrays, their pointers p0, p1, ... read once; then the lines `then`
        ({pointers}: ', p0, p1, ...'). Where the process sees one GPU, every array
        is on it: the key leaves the device out and nothing reads it."""
        if not arrays:
            return [f"        key = ({', '.join(parts)},)"] + [f"        {t.format(pointers='')}" for t in then]
        if one_device:
            lines = [f"        p{n} = {a}.data.ptr" for n, a in enumerate(arrays)]
        else:
            lines = [f"        m{n} = {a}.data" for n, a in enumerate(arrays)]
            lines.append("        d = m0.device_id")
            lines += [f"        if m{n}.device_id != d: {fail}" for n in range(1, len(arrays))]
            lines += [f"        p{n} = m{n}.ptr" for n in range(len(arrays))]
        lines.append("        al = (" + " | ".join(f"p{n}" for n in range(len(arrays))) + ") & 15")
        lines.append("        if al: al = (" + ", ".join(f"p{n} & 15" for n in range(len(arrays))) + ",)")
        lines.append(f"        key = ({', '.join(parts + ['al'] + ([] if one_device else ['d']))})")
        pointers = "".join(f", p{n}" for n in range(len(arrays)))
        return lines + [f"        {t.format(pointers=pointers)}" for t in then]

    def _call(self, args: tuple, kwargs: dict, out, key):
        """The checked path: every argument validated, then the planned program runs."""
        from ..api import reject_host_arrays
        reject_host_arrays(self.kernel, args, kwargs)
        bound, views = self._views(args, kwargs)
        devices = {v.device for v in views.values()}
        if len(devices) > 1:
            raise TdslArgumentError(f"{self.graph.name}() got arrays on several devices "
                                    f"({sorted(devices)}); move them to one", self.graph.loc)
        cupy = _cupy()
        device = devices.pop() if devices else cupy.cuda.runtime.getDevice()
        copied = False
        for i, v in list(views.items()):
            if not v.contiguous:
                views[i] = contiguous_copy(v)
                copied = True
        outputs = self._outputs(out, bound.extents, device)
        if out is not None:
            self._check_overlap(views, outputs)
        misaligned = frozenset(self.param_value_id[i] for i, v in views.items() if v.ptr % 16)
        misaligned |= frozenset(vid for vid, o in zip(self.result_ids, outputs) if o.ptr % 16)
        mode, other = self._other_for(bound.extents, device)
        if other is None:
            program = self._program(bound.extents, misaligned, device)
        else:           # planned by the other partition's launcher (and kept in sight of tools)
            program = other._program(bound.extents, misaligned, device)
            self._remember((mode, tuple(sorted(bound.extents.items())), misaligned, device), program)
        in_ptrs = [views[i].ptr for i in program.array_args]
        scalars = [bound.values[p.index] for p in program.scalar_params]
        with cupy.cuda.Device(device):
            program.run(in_ptrs, [o.ptr for o in outputs], scalars)
        if key is not None and not copied:
            if len(self._fast) > 256:       # (a warm call may keep small temporaries: _FastCall)
                self._fast.clear()
            self._fast[key] = _FastCall(self, program, views, device, len(args), out is not None).__call__
        results = [o.owner for o in outputs]
        return results[0] if len(results) == 1 else tuple(results)

    def _other_for(self, extents: dict, device: int) -> tuple:
        """(mode, launcher) of the other partition this call class runs: "spread" where it has
        few long rows that it splits (`runs_spread`), "columns" where its reductions across
        memory have short columns (`runs_columns`); else ("", None), and always where
        schedules are pinned for this call (`_pins`)."""
        if self.partition_mode or self._pins(extents):
            return "", None

        def other(mode: str):
            def parts() -> tuple:
                launcher = self.partition_launcher(mode)
                return launcher.groups, launcher.layouts
            return parts
        sm_count, arch = _sm_count(device), device_arch(device)
        if runs_spread(self.groups, self.layouts, other("spread"), extents, sm_count, arch):
            return "spread", self._others["spread"]
        if runs_columns(self.groups, self.layouts, other("columns"), extents, sm_count, arch):
            return "columns", self._others["columns"]
        return "", None

    def _pins(self, extents: dict) -> dict:
        """The schedules pinned for a call at `extents` (set_overrides), by group index."""
        if self.overrides and (self.pinned_extents is None or self.pinned_extents == extents):
            return self.overrides
        return {}

    def _program(self, extents: dict, misaligned: frozenset, device: int) -> "Program":
        pins = self._pins(extents)
        key = (tuple(sorted(extents.items())), misaligned, device, tuple(sorted(pins.items())))
        program = self._plans.get(key)
        if program is None:
            sm_count, hbm_gbps = _sm_count(device), hbm_bandwidth(device)
            launches, choices = [], {}
            for i, (g, lay) in enumerate(zip(self.groups, self.layouts)):
                bad = {id(op) for op in lay.inputs + lay.outputs if op.value.id in misaligned}
                override, origin = pins.get(i), "override"
                arch = device_arch(device)
                p = problem(g, lay, extents, bad, sm_count, arch, hbm_gbps)
                if override is None:
                    override, origin = self._tuned(i, p, extents, device)
                planned = plan(p, self.kernel.hints, override)
                if override is None:
                    planned = self._compiled_default(i, p, planned, device, origin)
                for launch in planned:
                    fn, args = self._function(i, launch, device, origin)
                    launches.append((i, launch, fn, args))
                    choices[i] = (launch.schedule, origin)
            program = Program(self, extents, launches, device)
            program.choices = choices
            self._remember(key, program)
        return program

    def _compiled_default(self, index: int, p, planned: list, device: int, origin: str) -> list:
        """A default as its compiled kernel decides: a prefetch that spills dropped, then a split
        along rows cut into the splits that fill every SM's room (a schedule block's as written;
        none where nothing launches: an empty array)."""
        if self.kernel.hints.directives or not planned:
            return planned
        planned = self._prefetch_in_registers(index, p, planned, device)
        return self._splits_filling_room(index, p, planned, device, origin)

    def _prefetch_in_registers(self, index: int, p, planned: list, device: int) -> list:
        """A default persistent cluster row re-planned without its prefetch where its kernel
        spills (resident.without_spilled_prefetch); the compile needs no GPU."""
        from ..schedule.choose import launches
        from ..schedule.resident import cluster_prefetches, without_spilled_prefetch
        first = planned[0]
        s = first.schedule
        if not cluster_prefetches(s):
            return planned
        binary = self.binary(index, s, first.stage, device_arch(device))
        kept = without_spilled_prefetch(s, binary.resources.get(s.kernel_name(self.graph.name, index, first.stage)))
        return planned if kept == s else launches(p, kept)

    def _splits_filling_room(self, index: int, p, planned: list, device: int, origin: str) -> list:
        """A default split along rows re-planned with as many splits as fill every SM's room
        once its kernel is compiled (columns.splits_filling_room); the splits are an argument,
        not in the kernel's text, so the kernel is the same."""
        first = planned[0]
        s = first.schedule
        if s.kind != "reduce_split" or first.stage != 1:
            return planned
        fn, _ = self._function(index, first, device, origin)
        from ..schedule.choose import launches
        from ..schedule.columns import splits_filling_room
        filled = splits_filling_room(p, s, _resident_blocks(fn, first, device))
        return planned if filled == s else launches(p, filled)

    def launched_default(self, index: int, p, device: int):
        """The schedule an untuned call runs for group `index` of problem `p` on `device`: the
        rules' default, a split along rows cut once compiled into the splits that fill every
        SM's room (_splits_filling_room), a prefetch that spills dropped (_prefetch_in_registers).
        The tuner times its default at this schedule. (Where nothing launches, the rules' default.)"""
        planned = self._compiled_default(index, p, plan(p, self.kernel.hints), device, "default")
        return planned[0].schedule if planned else default(p, self.kernel.hints)

    def _remember(self, key, program: "Program") -> None:
        if len(self._plans) > 256:
            self._plans.clear()
        self._plans[key] = program

    def _tuned(self, index: int, p, extents: dict, device: int):
        """(schedule, 'db exact' | 'db nearest') from the tuning database, else
        (None, 'default'). Runs once per call class, never per call; the
        database is a hint, so a problem reading it warns and falls back."""
        where = (self._parent or self).tuning_db      # (set on the fused launcher: bench, tests)
        if where is False:
            return None, "default"
        from ..tune.paths import resolve_db_path
        try:
            path = resolve_db_path(where)
            if path is None or not path.is_file():    # no database: nothing to import or ask the driver
                return None, "default"
            from ..tune.db import tuned_schedule
            found = tuned_schedule(self.kernel, index, p, extents, _device_identity(device), path,
                                   self.partition_mode)
        except (OSError, ValueError, TypeError, KeyError, TdslError) as err:
            _warn_once(f"tiledsl: the tuning database could not be used ({err}); using default schedules")
            return None, "default"
        return found if found is not None else (None, "default")


def partition_ir_text(graph: Graph, mode: str = "") -> str:
    """The IR's text as kernel keys hash it, marked with the partition (`mode`): another
    partition's group of the same index is another kernel of the same IR."""
    from ..ir.printer import format_graph
    return format_graph(graph) + (f"\n# {mode}" if mode else "")


def kernel_key_parts(ir_text: str, index: int, schedule, stage: int) -> tuple[str, ...]:
    """What fixes a kernel's CUDA text (with tiledsl's own source hash, added
    by the cache): shared by launches and the autotuner's compile workers, so
    a cubin the tuner compiled is found again at launch."""
    return (ir_text, str(index), repr(schedule.code), str(stage))


_IDENTITIES: dict[int, tuple[str, str]] = {}
_WARNED: set = set()


_ONE_GPU: list = []


def one_gpu(cupy) -> bool:
    """Whether the process sees exactly one GPU: every array is on it and it is the current
    device, so a warm call checks neither. False where there are several or no CuPy to ask
    (asked again next time); the count is fixed once CUDA has started in the process."""
    if not _ONE_GPU:
        count = getattr(getattr(getattr(cupy, "cuda", None), "runtime", None), "getDeviceCount", None)
        try:
            _ONE_GPU.append(count() == 1)
        except Exception:   # noqa: BLE001 - a stand-in CuPy, or no driver: several for all we know
            return False
    return _ONE_GPU[0]


def _device_identity(device: int) -> tuple[str, str]:
    """(device name, compute capability) as the tuning database keys them."""
    if device not in _IDENTITIES:
        runtime = _cupy().cuda.runtime
        name = runtime.getDeviceProperties(device)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        _IDENTITIES[device] = (name, str(_cupy().cuda.Device(device).compute_capability))
    return _IDENTITIES[device]


def _warn_once(message: str, category: type = RuntimeWarning) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        import warnings
        warnings.warn(message, category, stacklevel=4)


DEFAULT_RULES = "tiledsl's default rules"     # where a schedule came from, in spill warnings


def default_spills() -> list[str]:
    """The spill warnings given so far (once a process) for schedules of the default rules."""
    return sorted(m for m in _WARNED if DEFAULT_RULES in m)


def spill_message(name: str, usage, arch: str, tag: str, source: str) -> str:
    """A warning for a kernel whose registers spill to local memory ('' for none): it runs
    right, slower than it could. The defaults are checked not to spill (CI's ptxas
    checks), so a spill comes from a pinned schedule, or is a defect of tiledsl's rules."""
    if usage is None or not usage.spills:
        return ""
    advice = ("please report it: the defaults should not spill" if source == DEFAULT_RULES else
              "a smaller tile, fewer stages or fewer items a thread may not; or leave the choice to tiledsl")
    return (f"tiledsl: kernel {name} spills registers to local memory on {arch}: {usage.local_bytes} bytes a "
            f"thread at {usage.registers} registers. It computes right, slower than it could. Its schedule "
            f"{tag} comes from {source}; {advice}")


class Program:
    """A planned call class: its launches and where each argument comes from.

    Every launch picks its arguments from one flat list,
    [loop extents..., input pointers..., output pointers..., temp pointers..., scalars...],
    by the indices in `picks`.
    """

    def __init__(self, launcher: Launcher, extents: dict, launches: list, device: int):
        graph = launcher.graph
        self.empty = launcher._cupy.empty
        self.device = device
        self.extents = dict(extents)
        self.array_args = [p.index for p in graph.params if not p.is_scalar]
        self.scalar_params = [p for p in graph.params if p.is_scalar]
        self.out_shapes = [(tuple(extents[d] for d in r.dims), r.dtype) for r in graph.results]
        self.temps = [(tuple(extents[d] for d in t.dims), t.dtype.numpy) for t in launcher.temp_values]
        temp_keys = [t.id for t in launcher.temp_values]
        for group_index, launch, _, _ in launches:     # a split reduction's (or split-K GEMM's) partials
            if launch.schedule.splits and launch.stage == 1:
                layout = launcher.layouts[group_index]
                rows = 1
                for l in layout.kept_loops:
                    rows *= launch.loop_extents[l]
                reduces = [v for v in launcher.groups[group_index].values if v.op in ("reduce", "matmul")]
                for k, r in enumerate(reduces):
                    self.temps.append(((launch.schedule.splits, rows), r.dtype.numpy))
                    temp_keys.append(("part", group_index, k))
        constants = sorted({n for _, launch, _, _ in launches for n in launch.loop_extents}
                           | {launch.schedule.splits for _, launch, _, _ in launches}
                           | {combine_lanes(launch.schedule) for _, launch, _, _ in launches
                              if launch.schedule.kind == "reduce_split"})
        self.constants = constants
        slot: dict[int, int] = {}
        base = len(constants)
        for k, i in enumerate(self.array_args):
            slot[launcher.param_value_id[i]] = base + k
        base += len(self.array_args)
        for k, vid in enumerate(launcher.result_ids):
            slot.setdefault(vid, base + k)
        base += len(launcher.result_ids)
        for k, t in enumerate(temp_keys):
            slot.setdefault(t, base + k)
        base += len(temp_keys)
        scalar_slot = {p.index: base + k for k, p in enumerate(self.scalar_params)}
        counter_slot = base + len(self.scalar_params)    # (a split finished by its last block: done_counter)
        self.graph_params = graph.params
        self.pointwise_only = all(g.kind == "pointwise" for g in launcher.groups)
        self.steps = []
        self.maps = []             # per step: (value slot of the array's pointer, MapCache) of each tensor map
        self.dependent = []        # per step: launched to overlap the step before (runtime/dependent.py)
        self.kinds = []            # per step: (its schedule's kind, its stage)
        self.choices: dict = {}    # group index -> (Schedule, where it came from)
        self.slots = (len(constants), len(self.array_args), len(launcher.result_ids), len(temp_keys))
        self.counted = False        # whether a kernel takes this stream's counter of finished blocks
        overlap = dependent_launches(device)
        for group_index, launch, fn, args in launches:
            picks, maps = [], []
            layout = launcher.layouts[group_index]
            specs = {}
            if launch.schedule.tma and launch.stage == 1:
                from ..codegen.params import tensor_map_specs
                from .tma import MapCache, ResultMapCache
                specs = dict(tensor_map_specs(launcher.groups[group_index], layout, launch.schedule,
                                              launch.loop_extents))
            for kind, ref in args:
                if kind == "tmap":      # leads the parameters (codegen.kernel_params)
                    maps.append((slot[layout.inputs[ref].value.id], MapCache(specs[ref])))
                elif kind == "tmap_out":    # after the operands' maps
                    maps.append((slot[layout.outputs[ref].value.id], ResultMapCache(specs[("out", ref)])))
                elif kind == "in":
                    picks.append(slot[layout.inputs[ref].value.id])
                elif kind == "out":
                    picks.append(slot[layout.outputs[ref].value.id])
                elif kind == "extent":
                    picks.append(constants.index(launch.loop_extents[ref]))
                elif kind == "part":
                    picks.append(slot[("part", group_index, ref)])
                elif kind == "splits":
                    picks.append(constants.index(launch.schedule.splits))
                elif kind == "lanes":
                    picks.append(constants.index(combine_lanes(launch.schedule)))
                elif kind == "counter":
                    picks.append(counter_slot)
                    self.counted = True
                else:
                    picks.append(scalar_slot[ref])
            grid = launch.grid
            if launch.schedule.cluster > 1 and launch.schedule.persistent:    # every pair resident at once
                from .clusters import max_active_clusters, resident_grid
                with launcher._cupy.cuda.Device(device):
                    fits = max_active_clusters(fn.ptr, grid[0], launch.schedule.block, launch.shared_bytes)
                grid = resident_grid(grid, launch.schedule.cluster, fits)
            self.steps.append((fn, grid, (launch.schedule.block,), tuple(picks), launch.shared_bytes))
            self.maps.append(tuple(maps))
            # a kernel is launched to overlap the kernel before it in the stream (this program's,
            # or the last of whatever ran before the call: tiledsl's, CuPy's, torch's), and waits
            # for that one's end and writes at its first statement (tdsl::follow_in_stream), where
            # its blocks still spread over the SMs so (dependent.overlaps_the_kernel_before)
            self.kinds.append((launch.schedule.kind, launch.stage))
            self.dependent.append(overlap and self._overlaps(fn, grid, launch))

    def _overlaps(self, fn, grid: tuple, launch) -> bool:
        """Whether `grid` of `fn` is launched to overlap the kernel before (dependent.py), from
        the driver's residency of the compiled kernel (asked once, when the call is planned)."""
        from .dependent import overlaps_the_kernel_before
        return overlaps_the_kernel_before(launch.schedule.kind, launch.stage, math.prod(grid),
                                          _resident_blocks(fn, launch, self.device), _sm_count(self.device))

    def run(self, in_ptrs: list, out_ptrs: list, scalars: list) -> None:
        values = self.constants + in_ptrs + out_ptrs
        temps = [self.empty(shape, dtype) for shape, dtype in self.temps]   # kept alive to the end
        values += [t.data.ptr for t in temps]
        values += [float(v) if type(v) is int and p.dtype.is_float else v
                   for v, p in zip(scalars, self.scalar_params)]
        if self.counted:
            cupy = _cupy()
            values.append(done_counter(cupy, self.device, cupy.cuda.get_current_stream().ptr)[0])
        for (fn, grid, block, picks, shared), maps in zip(self.steps, self.maps):
            if maps:
                _launch_with_maps(fn, grid, block, shared, [cache.address(values[i]) for i, cache in maps],
                                  [values[i] for i in picks])
            else:
                fn(grid, block, tuple(values[i] for i in picks), shared_mem=shared)   # CuPy's launch, current stream


def _launch_with_maps(fn, grid, block, shared: int, maps: list, values: list) -> None:
    """The driver's launch of a kernel whose leading parameters are tensor maps
    (passed by their 128 bytes' addresses), the rest 8-byte slots: pointers and
    integers as int64 (a bool reads the low byte), floats as doubles, packed as
    the warm call packs them (`_FastCall`)."""
    cupy = _cupy()
    slots = bytearray(8 * max(1, len(values)))
    struct.pack_into("".join("d" if type(v) is float else "q" for v in values), slots, 0,
                     *[v if type(v) is float else int(v) for v in values])
    base = ctypes.addressof(ctypes.c_char.from_buffer(slots))
    params = (ctypes.c_void_p * (len(maps) + len(values)))(*maps, *[base + 8 * i for i in range(len(values))])
    cupy.cuda.driver.launchKernel(fn.ptr, *_launch_dims(grid, block), shared,
                                  cupy.cuda.get_current_stream().ptr, ctypes.addressof(params), 0)


def _launch_dims(grid, block) -> tuple:
    """cuLaunchKernel's six dims: the grid's three, then the block's (missing ones 1)."""
    return (tuple(grid) + (1, 1))[:3] + (tuple(block) + (1, 1))[:3]


def _allocate(cupy, shape, dtype):
    try:
        return cupy.empty(shape, dtype=dtype.numpy)
    except Exception as err:   # noqa: BLE001 - CuPy without bf16 support
        if dtype.name != "bf16":
            raise
        try:
            import torch
        except ImportError:
            raise TdslRuntimeError(f"this CuPy cannot allocate bf16 arrays ({err}); pass out= with a "
                                   f"bf16 array (e.g. a torch tensor)") from None
        return torch.empty(shape, dtype=torch.bfloat16, device=f"cuda:{cupy.cuda.runtime.getDevice()}")


_SM_COUNTS: dict[int, int] = {}


def _resident_blocks(fn, launch, device: int) -> Optional[int]:
    """Blocks of compiled `fn` an SM of `device` holds at once, launched as `launch` says
    (the driver's occupancy query); None where it cannot say (or `fn` is no driver function)."""
    if not hasattr(fn, "ptr"):
        return None
    from .dependent import resident_blocks_per_sm
    with _cupy().cuda.Device(device):
        return resident_blocks_per_sm(fn.ptr, launch.schedule.block, launch.shared_bytes)


def _sm_count(device: int) -> int:
    if device not in _SM_COUNTS:
        runtime = _cupy().cuda.runtime
        _SM_COUNTS[device] = runtime.deviceGetAttribute(
            getattr(runtime, "cudaDevAttrMultiProcessorCount", 16), device)
    return _SM_COUNTS[device]


_HBM_GBPS: dict[int, float] = {}


def hbm_bandwidth(device: int) -> float:
    """The device's peak memory bandwidth in GB/s from its memory clock and bus
    width (double data rate); 0.0 where the driver does not say."""
    if device not in _HBM_GBPS:
        runtime = _cupy().cuda.runtime
        try:
            khz = runtime.deviceGetAttribute(36, device)      # cudaDevAttrMemoryClockRate
            bits = runtime.deviceGetAttribute(37, device)     # cudaDevAttrGlobalMemoryBusWidth
        except Exception:  # noqa: BLE001 - an attribute this driver lacks: the rules' unknown
            khz = bits = 0
        _HBM_GBPS[device] = 2.0 * khz * 1e3 * bits / 8 / 1e9
    return _HBM_GBPS[device]


def _load(cubin: bytes, name: str, device: int, shared_bytes: int = 0, static_bytes: int = 0,
          sized: bool = False):
    """Load a cubin with CuPy's module loader (what cupy.RawModule uses inside);
    a kernel that asks for more than 48 KB of shared memory, its dynamic bytes and its
    static ones (`static_bytes`) together, opts in (48 KB of dynamic beside a cluster's
    slots failed to launch: CUDA_ERROR_INVALID_VALUE). One whose dynamic shared memory
    follows from the sizes (`sized`: a row copied there) opts in to all a block can have
    beside its static bytes, as one function serves every size."""
    cupy = _cupy()
    with cupy.cuda.Device(device):
        module = cupy.cuda.function.Module()
        module.load(cubin)
        fn = module.get_function(name)
        if shared_bytes + static_bytes > 48 * 1024 or sized:
            limit = cupy.cuda.runtime.deviceGetAttribute(97, device)   # cudaDevAttrMaxSharedMemoryPerBlockOptin
            if shared_bytes > limit:
                raise TdslRuntimeError(f"kernel {name} needs {shared_bytes // 1024} KB of shared memory; "
                                       f"this GPU gives a block at most {limit // 1024} KB")
            # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            cupy.cuda.driver.funcSetAttribute(fn.ptr, 8, limit - static_bytes if sized else shared_bytes)
        return fn


class _FastCall:
    """A call class seen before (CuPy arrays only): its checks passed and its
    program is planned and compiled; only pointers, scalars and fresh outputs
    change from call to call.

    The call is a straight-line Python function written for this class (from
    indices and sizes only, never from the user's text): range-check the
    scalars, allocate or check the outputs, launch: the pointers, sizes and
    scalars packed into this thread's argument blocks for the driver's launch
    (`_ParamBlocks`), or, where CuPy lacks that, handed to CuPy's launch as
    arrays and prebuilt int64 scalars.

    Everything that differs between classes of one structure (grids, sizes,
    byte counts, functions, the device) is a closure cell, not text: the
    text is compiled once per structure (`_warm_call`), a new size only binds
    new values (no Python compiled again: 164-284 us for a first call at a new
    size against 465-700, H100 host 2026-11-22).
    """

    def __init__(self, launcher: "Launcher", program: Program, views: dict, device: int, n_args: int,
                 with_out: bool):
        cupy = launcher._cupy
        params = launcher.graph.params
        val = {"ndarray": cupy.ndarray, "scalar_value": scalar_value, "overlap": _overlap_error, "params": params,
               "DEV": device}

        def name(prefix: str, value) -> str:      # a closure cell bound to value
            val[prefix] = value
            return prefix
        n_const, n_in, n_out, n_temp = program.slots
        blocks = _ParamBlocks.for_program(cupy, program, device)
        for n, c in enumerate(program.constants):
            val[f"C{n}"] = np.int64(c)
        # what each kernel argument slot holds: objects for CuPy's launch, integers for the driver's
        names = [f"C{n}" for n in range(n_const)]
        if blocks is None:
            names += [f"x{k}" for k in range(n_in)] + [f"r{j}" for j in range(n_out)]
            names += [f"t{k}" for k in range(n_temp)]
        else:
            names += [f"a{k}" for k in range(n_in)] + [f"q{j}" for j in range(n_out)]
            names += [f"t{k}" for k in range(n_temp)]      # pointers (the temporaries' lines below)
        names += [f"s{k}" for k in range(len(program.scalar_params))]
        names += ["done"] if program.counted else []      # this stream's counter (done_counter)
        # the dispatcher passes the arrays' pointers it read for the key: inputs, then outputs
        pointers = [f"a{k}" for k in range(n_in)] + ([f"q{j}" for j in range(n_out)] if with_out else [])
        lines = [f"def fast({', '.join(['args', 'out'] + pointers)}):"]
        if not one_gpu(cupy):       # (with one GPU, it is current: no other can be)
            val.update(get_device=cupy.cuda.runtime.getDevice, slow=launcher._call)
            lines += ["    if get_device() != DEV:", "        return slow(args, {}, out, None)"]
        if blocks is None:
            lines += [f"    x{k} = args[{i}]" for k, i in enumerate(program.array_args)]
        for k, p in enumerate(program.scalar_params):
            if p.index >= n_args:          # left out: its default, checked when declared
                lines.append(f"    s{k} = {name(f'D{k}', float(p.default) if p.dtype.is_float else p.default)}")
                continue
            lo, hi = _range_of(p.dtype)
            val[f"P{k}"] = p
            lines.append(f"    s{k} = args[{p.index}]")
            lines.append(f"    if not {lo!r} <= s{k} <= {hi!r}: s{k} = scalar_value(P{k}, s{k})")
            if p.dtype.is_float:
                lines.append(f"    s{k} = float(s{k})")
        results = ", ".join(f"r{j}" for j in range(n_out))
        if not with_out:
            for j, (shape, dtype) in enumerate(program.out_shapes):
                val[f"SH{j}"], val[f"DT{j}"] = shape, dtype.numpy
                lines.append(f"    r{j} = ndarray(SH{j}, DT{j})")
                if blocks is not None:
                    lines.append(f"    q{j} = r{j}.data.ptr")
        else:
            lines.append(f"    {results} = out")
        out_bytes = [name(f"OB{j}", _nbytes(shape, dtype.itemsize)) for j, (shape, dtype) in enumerate(program.out_shapes)]
        for j in range(n_out if with_out else 0):
            for j2 in range(j + 1, n_out):
                lines.append(f"    if q{j} < q{j2} + {out_bytes[j2]} and q{j2} < q{j} + {out_bytes[j]}: "
                             f"overlap(None, None)")
            for k, i in enumerate(program.array_args):
                nb = name(f"IB{k}", _nbytes(views[i].shape, views[i].dtype.itemsize))
                same = (program.pointwise_only and tuple(views[i].shape) == program.out_shapes[j][0]
                        and views[i].dtype == program.out_shapes[j][1])
                allowed = f" and a{k} != q{j}" if same else ""
                lines.append(f"    if a{k} < q{j} + {out_bytes[j]} and q{j} < a{k} + {nb}{allowed}: "
                             f"overlap(params[{i}], 'an output')")
        for k, (shape, dtype) in enumerate(program.temps):
            val[f"TS{k}"], val[f"TD{k}"] = shape, dtype
        kept = blocks is not None and program.temps and \
            sum(_nbytes(shape, np.dtype(dtype).itemsize) for shape, dtype in program.temps) <= KEPT_TEMP_BYTES
        if blocks is None:      # arrays, alive to the end of the call
            lines += [f"    t{k} = ndarray(TS{k}, TD{k})" for k in range(n_temp)]
        elif not kept:          # arrays, alive to the end of the call; their pointers
            lines += [f"    T{k} = ndarray(TS{k}, TD{k})" for k in range(n_temp)]
            lines += [f"    t{k} = T{k}.data.ptr" for k in range(n_temp)]
        if blocks is None and any(program.maps):
            raise TdslRuntimeError("this CuPy has no driver launch (cupy.cuda.driver.launchKernel), "
                                   "which a kernel taking tensor maps (TMA) needs")
        if program.counted:     # this stream's counter: the array for CuPy's launch, its pointer for the driver's
            val.update(DONE=done_counter, CUPY=cupy, stream=cupy.cuda.get_current_stream)
            if blocks is None:
                lines.append("    done = DONE(CUPY, DEV, stream(DEV).ptr)[0]")
        if blocks is None:      # CuPy's launch: arrays and int64 scalars as they are
            for n, (fn, grid, block, picks, shared) in enumerate(program.steps):
                val[f"F{n}"], val[f"G{n}"], val[f"B{n}"] = fn, grid, block
                extra = f", shared_mem={name(f'SM{n}', int(shared))}" if shared else ""
                lines.append(f"    F{n}(G{n}, B{n}, ({', '.join(names[i] for i in picks)},){extra})")
        else:                   # the driver's launch, the arguments packed into this thread's block
            val.update(new_blocks=blocks.make_for_this_thread, this_thread=blocks.thread, pack=struct.pack_into,
                       launch=cupy.cuda.driver.launchKernel, stream=cupy.cuda.get_current_stream)
            if any(program.dependent):
                from .dependent import _driver_launch
                val["launch_ex"] = _driver_launch() or (lambda *refused: 1)     # (refused since planned)
            lines += ["    try:", "        blk = this_thread.blocks", "    except AttributeError:",
                      "        blk = new_blocks()", "    S = stream(DEV).ptr"]      # DEV is current
            if program.counted:
                lines.append("    done = DONE(CUPY, DEV, S)[1]")
            if kept:            # this thread's temporaries on this stream, allocated at its first call
                val.update(KEPT=_KeptTemps(cupy, [shape for shape, _ in program.temps],
                                           [dtype for _, dtype in program.temps]), ident=threading.get_ident)
                lines += ["    kt = KEPT.get((ident(), S))", "    if kt is None: kt = KEPT.make((ident(), S))",
                          f"    {', '.join(f't{k}' for k in range(n_temp))}{',' if n_temp == 1 else ''} = kt"]
            floats = {n_const + n_in + n_out + n_temp + k for k, p in enumerate(program.scalar_params)
                      if p.dtype.is_float}
            for n, ((fn, grid, block, picks, shared), maps) in enumerate(zip(program.steps, program.maps)):
                fmt = "".join("d" if i in floats else "q" for i in picks)
                dims = _launch_dims(grid, block) + (shared,)
                dims = ", ".join(name(f"L{n}_{d}", int(v)) for d, v in enumerate(dims))
                val[f"FP{n}"] = fn.ptr
                for j, (i, cache) in enumerate(maps):
                    if cache.template is not None:    # the array's address into this thread's copy of the map
                        lines.append(f"    pack('Q', blk[{n}][3][{j}], 0, {names[i]})")
                    else:                             # the map slot at the cached map of this pointer
                        val[f"TA{n}_{j}"], val[f"TM{n}_{j}"] = cache.addresses, cache.address
                        lines.append(f"    pack('q', blk[{n}][2][0], {8 * j}, "
                                     f"TA{n}_{j}.get({names[i]}) or TM{n}_{j}({names[i]}))")
                val[f"PK{n}"] = struct.Struct(fmt).pack_into     # (a Struct skips the format's lookup)
                lines.append(f"    PK{n}(blk[{n}][0], 0, {', '.join(names[i] for i in picks)})")
                if program.dependent[n]:    # this thread's launch configuration, overlapping the step before
                    lines += [f"    d{n} = blk[{n}][4]", f"    if d{n}.stream != S: d{n}.config.stream = d{n}.stream = S",
                              f"    if launch_ex(d{n}.address, FP{n}, blk[{n}][1], None): "
                              f"d{n}.refused(FP{n}, S, blk[{n}][1])"]
                else:
                    lines.append(f"    launch(FP{n}, {dims}, S, blk[{n}][1], 0)")
        lines.append(f"    return {results if n_out > 1 else 'r0'}")
        bound = sorted(val)
        source = "\n".join([f"def make({', '.join(bound)}):"] + ["    " + line for line in lines] + ["    return fast"])
        self.__call__ = _warm_call(source, tuple(val[v] for v in bound))
        self.__call__.source, self.__call__.bound = source, {v: val[v] for v in bound}   # (profiling rebinds them)

    def __call__(self, args, out):    # replaced per instance by the generated function
        raise NotImplementedError


# A split reduction finished by its last block (Schedule.last_block) counts its finished
# blocks on a word that is zero before the launch and that the last block zeroes again. A
# stream's kernels run one after another (each waits for the one before at its first
# statement: tdsl::follow_in_stream), so one word a stream serves every such kernel of every
# call and thread on it; two streams have two, as their kernels may run at once.
_DONE_COUNTERS: dict = {}


def done_counter(cupy, device: int, stream: int) -> tuple:
    """(the array, its pointer) of stream `stream`'s counter of finished blocks on `device`."""
    key = (device, stream)
    counter = _DONE_COUNTERS.get(key)
    if counter is None:
        with cupy.cuda.Device(device):
            array = cupy.zeros(1, cupy.uint32)      # (zeroed on the current stream: before the launch)
        counter = _DONE_COUNTERS[key] = (array, array.data.ptr)
    return counter


# A warm call keeps its temporaries (a reduction's per-column values, a split's partials) from
# one call to the next where they total this many bytes or fewer: allocating two each call, softmax
# over M took the host 13.6 us a call, keeping them 9.5 (H200 host 2026-12-02, A/B of
# scripts/probe_launch_multi.py).
KEPT_TEMP_BYTES = 256 << 10
KEPT_PAIRS = 8      # (thread, stream) pairs a warm call keeps temporaries for


class _KeptTemps(dict):
    """(thread, stream) -> the pointers of that pair's temporaries, kept alive here. Reuse
    is safe within one stream: the next call's kernels run after this call's (stream order;
    each waits for the kernel before it at tdsl::follow_in_stream); each thread and stream has
    its own, since two threads' calls on one stream interleave their launches. Past KEPT_PAIRS
    pairs a call gets temporaries of its own (not kept: a dropped set might still be about to
    launch on another thread), alive until the same thread's next such call has them. A graph
    that captured a call holds these pointers: replayed on another stream while calls run on
    this one, it would share them (as it would share any memory CuPy's pool handed out again)."""

    def __init__(self, cupy, shapes: list, dtypes: list):
        super().__init__()
        self._cupy, self._shapes, self._dtypes = cupy, shapes, dtypes
        self._arrays: dict = {}
        self._unkept = threading.local()

    def make(self, key) -> tuple:
        arrays = [self._cupy.ndarray(shape, dtype) for shape, dtype in zip(self._shapes, self._dtypes)]
        pointers = tuple(a.data.ptr for a in arrays)
        if len(self) < KEPT_PAIRS:
            self._arrays[key] = arrays
            self[key] = pointers
        else:       # (this thread's last call has launched all it will: its arrays may go)
            self._unkept.arrays = arrays
        return pointers


_WARM_CODE: dict = {}


def _warm_call(source: str, values: tuple):
    """The warm call `source` defines: `make(values...)` returns `fast`, which
    reads the values as closure cells (a cell costs a call nothing, where each
    parameter default is copied in on every call). The text is compiled once per
    structure of call classes (the same kernels, argument kinds and launch count,
    any sizes); every `fast` of one structure shares its code object."""
    make = _WARM_CODE.get(source)
    if make is None:
        env: dict = {"__builtins__": builtins}
        exec(source, env)   # noqa: S102 - our own integers and names only
        if len(_WARM_CODE) > 512:
            _WARM_CODE.clear()
        make = _WARM_CODE[source] = env["make"]
    return make(*values)


class _ParamBlocks:
    """Argument blocks for cuLaunchKernel, one set per thread (the driver reads a
    block during the launch, with the GIL released): per launch a buffer of
    8-byte slots, one per kernel parameter (pointers, int64 sizes, doubles;
    a bool reads the low byte), and the array of the slots' addresses the
    driver takes. Packing pointers into a kept buffer and calling the driver
    costs 0.4-1.1 us less per launch than CuPy's Function call (H100 hosts,
    2026-11-22; scripts/launch_profile.py).

    A launch that takes tensor maps has them first, 128 bytes each in one
    aligned buffer per block (`tma.map_room`): a copy of its MapCache's template
    where there is one (the warm call writes the array's address into the first
    8), else the slot is pointed at the cached map of the call's pointer."""

    def __init__(self, cupy, sizes: list, templates: list, device: int, dependent: Optional[list] = None):
        self._cupy, self._sizes, self._templates, self._device = cupy, sizes, templates, device
        # per launch: its (grid, block, shared bytes) where it overlaps the launch before, else None
        self._dependent = dependent or [None] * len(sizes)
        self.thread = threading.local()     # .blocks: this thread's (gone with it)

    @classmethod
    def for_program(cls, cupy, program, device: int):
        driver = getattr(cupy.cuda, "driver", None)
        if not hasattr(driver, "launchKernel") or not all(hasattr(s[0], "ptr") for s in program.steps):
            return None
        templates = [[cache.template for _, cache in maps] for maps in program.maps]
        dependent = [(s[1], s[2], s[4]) if dep else None for s, dep in zip(program.steps, program.dependent)]
        return cls(cupy, [len(s[3]) for s in program.steps], templates, device, dependent)

    def make_for_this_thread(self) -> list:
        """A thread's first launch of the class (the warm call reads `thread.blocks`
        after): its blocks, (values, kernelParams address, (the slot addresses, the
        map buffer), [its map copies], its DependentLaunch or None), with the device's
        context made current to it, as CuPy's own launch would, since the driver API
        launches in that context."""
        from .dependent import DependentLaunch
        from .tma import map_room
        self._cupy.cuda.Device(self._device).use()
        out = []
        for size, templates, dependent in zip(self._sizes, self._templates, self._dependent):
            buf = bytearray(8 * max(1, size))
            base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
            room, at = map_room(len(templates))
            maps = [(ctypes.c_char * 128).from_address(at + 128 * j) for j in range(len(templates))]
            for m, template in zip(maps, templates):
                ctypes.memmove(m, template or bytes(128), 128)
            slots = np.array([ctypes.addressof(m) for m in maps] + [base + 8 * i for i in range(max(1, size))],
                             dtype=np.int64)
            overlap = (DependentLaunch(*dependent, self._cupy.cuda.driver.launchKernel)
                       if dependent is not None else None)
            out.append((buf, int(slots.ctypes.data), (slots, room), maps, overlap))  # kept alive with the block
        self.thread.blocks = out
        return out


def _overlap_error(param, what) -> None:
    if param is None:
        raise TdslArgumentError("two outputs overlap in memory")
    raise TdslArgumentError(f"{what} overlaps input '{param.name}'; only a pointwise kernel may "
                            f"write over an identical input", param.loc)


def _range_of(dtype) -> tuple:
    if dtype.is_bool:
        return (False, True)
    if dtype.is_float:
        return (-float_max(dtype), float_max(dtype))
    info = np.iinfo(dtype.numpy)
    return (int(info.min), int(info.max))


def _nbytes(shape, itemsize: int) -> int:
    n = itemsize
    for s in shape:
        n *= s
    return max(n, itemsize)


def set_overrides(launcher: "Launcher", overrides: dict, extents: Optional[dict] = None) -> None:
    """Pin schedules per group index: for calls at `extents` only where given (the tuner's
    winners, installed for the call class tuned; other call classes read the database), else
    for every call (the tuner while it times, tests, probes). Forgets planned calls, and on
    another partition's launcher the fused one's too (which hands it call classes)."""
    launcher.overrides = dict(overrides)
    launcher.pinned_extents = None if extents is None else {d: int(n) for d, n in extents.items()}
    while launcher is not None:
        launcher._fast.clear()
        launcher._plans.clear()
        launcher = launcher._parent
