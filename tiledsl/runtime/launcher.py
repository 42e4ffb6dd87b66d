"""Calling a kernel on the GPU: bind, allocate, pick schedules, compile (cached), launch.

Everything that depends only on the call's *class* (dtypes, extents,
alignment) is planned once and kept in `_plans`; a repeated call does the
binding checks, an allocation if no `out=` is given, and the launches.
"""
from __future__ import annotations

import operator
import threading
from dataclasses import dataclass

import numpy as np
from typing import Any

from ..dtypes import float_max
from ..errors import TdslArgumentError, TdslError, TdslRuntimeError
from ..ir.graph import Graph
from ..schedule.layout import Layout, plan_layout
from ..schedule.partition import Group, partition
from ..signature import bind
from .arrays import DeviceArray, contiguous_copy, describe, device_view
from ..schedule.choose import Launch, plan


def _cupy():
    try:
        import cupy
    except ImportError:
        raise TdslRuntimeError("running a kernel on the GPU needs CuPy: pip install tiledsl[cuda13] "
                               "(or [cuda12]); without a GPU use kernel.reference(...)") from None
    return cupy


def device_arch(device: int) -> str:
    cc = _cupy().cuda.Device(device).compute_capability
    return "sm_90a" if cc == "90" else f"sm_{cc}"


@dataclass
class _Step:
    group: Group
    layout: Layout
    launch: Launch
    function: Any
    args: tuple            # ('in', value id) / ('out', value id) / ('extent', n) / ('scalar', index)


class Launcher:
    def __init__(self, kernel):
        self.kernel = kernel
        self.graph: Graph = kernel.graph
        self.groups = partition(self.graph)
        for g in self.groups:
            if g.kind == "matmul":
                raise TdslError(f"kernel '{self.graph.name}' uses @, which does not run on the GPU yet "
                                f"(matmul code generation is in progress); use "
                                f"{self.graph.name}.reference(...) meanwhile", self.graph.loc)
        self.layouts = [plan_layout(g, self.graph) for g in self.groups]
        self.result_ids = [o.id for o in self.graph.outputs]
        self.temp_values = [v for g in self.groups for v in g.outputs if v.id not in self.result_ids]
        self._plans: dict = {}
        self._fast: dict = {}
        self._ir_text = None
        self.overrides: dict = {}     # group index -> Schedule (the tuner's choice)
        self._n_params = len(self.graph.params)
        try:
            import cupy
            self._cupy, self._ndarray = cupy, cupy.ndarray
        except ImportError:
            self._cupy = self._ndarray = None
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
    def _function(self, index: int, launch: Launch, device: int):
        key = (index, launch.schedule.code, device)
        fn = self._functions.get(key)
        if fn is not None:
            return fn
        with self._lock:
            fn = self._functions.get(key)
            if fn is None:
                from ..codegen.cuda import kernel_params, render
                from ..ir.printer import format_graph
                from .cache import cached_kernel
                group, layout, schedule = self.groups[index], self.layouts[index], launch.schedule
                if self._ir_text is None:
                    self._ir_text = format_graph(self.graph)
                binary = cached_kernel(
                    (self._ir_text, str(index), repr(schedule.code)),
                    lambda: render(self.graph, group, layout, schedule).source, device_arch(device))
                name = schedule.kernel_name(self.graph.name, index)
                fn = (_load(binary.cubin, name, device), kernel_params(group, layout)[1])
                self._functions[key] = fn
        return fn

    # -- call --------------------------------------------------------------------
    def __call__(self, args: tuple, kwargs: dict, out):
        if not kwargs:
            key = self._fast_key(args, out)
            fast = self._fast.get(key) if key is not None else None
            if fast is not None:
                return fast(args, out)
        else:
            key = None
        return self._call(args, kwargs, out, key)

    def _fast_key(self, args: tuple, out):
        """The call's class when every array is a CuPy array: shapes, strides,
        dtypes, 16-byte alignment and device. None sends the call down the slow path."""
        ndarray = self._ndarray
        if ndarray is None or len(args) != self._n_params:
            return None
        parts = []
        for a in args:
            if type(a) is ndarray:
                mem = a.data
                parts.append((a.shape, a.strides, a.dtype.char, mem.ptr & 15, mem.device_id))
            elif type(a) in (float, int, bool):
                parts.append(type(a))
            else:
                return None
        if out is None:
            parts.append(None)
        else:
            for o in (out if type(out) is tuple else (out,)):
                if type(o) is not ndarray:
                    return None
                mem = o.data
                parts.append((o.shape, o.strides, o.dtype.char, mem.ptr & 15, mem.device_id))
        return tuple(parts)

    def _call(self, args: tuple, kwargs: dict, out, key):
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
        buffers: dict[int, DeviceArray] = {}
        for p in self.graph.params:
            if p.index in views:
                buffers[next(v.id for v in self.graph.values if v.op == "param" and
                             v.attr("index") == p.index)] = views[p.index]
        for vid, o in zip(self.result_ids, outputs):
            buffers.setdefault(vid, o)
        steps = self._steps(bound.extents, buffers, device)
        with cupy.cuda.Device(device):
            for t in self.temp_values:
                if t.id not in buffers:
                    shape = tuple(bound.extents[d] for d in t.dims)
                    buffers[t.id] = device_view(_allocate(cupy, shape, t.dtype))
            for step in steps:
                self._launch(step, buffers, bound.values)
        if key is not None and not copied:
            self._fast[key] = _FastCall(self, steps, bound, views, out)
        results = [o.owner for o in outputs]
        return results[0] if len(results) == 1 else tuple(results)

    def _steps(self, extents: dict, buffers: dict, device: int) -> list[_Step]:
        misaligned_ids = frozenset(vid for vid, b in buffers.items() if b.ptr % 16)
        key = (tuple(sorted(extents.items())), misaligned_ids, device, tuple(sorted(self.overrides.items())))
        steps = self._plans.get(key)
        if steps is None:
            steps = []
            sm_count = _sm_count(device)
            for i, (g, lay) in enumerate(zip(self.groups, self.layouts)):
                misaligned = {id(op) for op in lay.inputs + lay.outputs if op.value.id in misaligned_ids}
                launch = plan(g, lay, extents, misaligned, self.kernel.hints, sm_count,
                              self.overrides.get(i))
                if launch is None:
                    continue
                fn, args = self._function(i, launch, device)
                spec = tuple(_arg_source(a, lay) for a in args)
                steps.append(_Step(g, lay, launch, fn, spec))
            if len(self._plans) > 256:
                self._plans.clear()
            self._plans[key] = steps
        return steps

    def _launch(self, step: _Step, buffers: dict, values: list) -> None:
        launch = step.launch
        args = []
        for kind, ref in step.args:
            if kind == "ptr":
                args.append(buffers[ref].ptr)
            elif kind == "extent":
                args.append(launch.loop_extents[ref])
            else:
                value = values[ref]
                args.append(float(value) if isinstance(value, float) else value)
        step.function((launch.grid,), (launch.schedule.block,), tuple(args))


def _arg_source(arg: tuple[str, int], layout: Layout) -> tuple[str, int]:
    kind, k = arg
    if kind == "in":
        return "ptr", layout.inputs[k].value.id
    if kind == "out":
        return "ptr", layout.outputs[k].value.id
    return kind, k


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


def _sm_count(device: int) -> int:
    if device not in _SM_COUNTS:
        runtime = _cupy().cuda.runtime
        _SM_COUNTS[device] = runtime.deviceGetAttribute(
            getattr(runtime, "cudaDevAttrMultiProcessorCount", 16), device)
    return _SM_COUNTS[device]


def _load(cubin: bytes, name: str, device: int):
    """Load a cubin with CuPy's module loader (what cupy.RawModule uses inside)."""
    cupy = _cupy()
    with cupy.cuda.Device(device):
        module = cupy.cuda.function.Module()
        module.load(cubin)
        return module.get_function(name)


class _FastCall:
    """A call class seen before: its checks passed, its schedules are chosen and
    compiled; only pointers, scalars and fresh outputs change.

    Each launch's arguments are picked from one flat list by an itemgetter:
    [extents..., input pointers..., output pointers..., temp pointers..., scalars...].
    """

    def __init__(self, launcher: Launcher, steps: list, bound, views: dict, out):
        graph = launcher.graph
        self.empty = launcher._cupy.empty
        self.params = graph.params
        param_value_id = {v.attr("index"): v.id for v in graph.values if v.op == "param"}
        self.array_args = sorted(views)                       # argument positions of arrays
        self.scalar_args = [p for p in graph.params if p.is_scalar]
        self.out_shapes = [(tuple(bound.extents[d] for d in r.dims), r.dtype.numpy)
                           for r in graph.results]
        self.temps = [(tuple(bound.extents[d] for d in t.dims), t.dtype.numpy)
                      for t in launcher.temp_values]
        self.pointwise_only = all(g.kind == "pointwise" for g in launcher.groups)
        self.in_bytes = [(i, _nbytes(views[i].shape, graph.params[i].dtype.itemsize))
                         for i in self.array_args]
        self.out_bytes = [_nbytes(shape, r.dtype.itemsize)
                          for (shape, _), r in zip(self.out_shapes, graph.results)]
        # In place is allowed where the slow path allows it: a pointwise kernel
        # writing an output laid out exactly like the input it overwrites.
        self.in_place_ok = {(k, j) for k, i in enumerate(self.array_args)
                            for j, (shape, dtype) in enumerate(self.out_shapes)
                            if self.pointwise_only and tuple(views[i].shape) == shape
                            and views[i].dtype == graph.results[j].dtype and views[i].contiguous}
        self.float_limits = {p.index: float_max(p.dtype)
                             for p in self.scalar_args if p.dtype.is_float and p.dtype.name != "f64"}
        # Flat value list layout.
        constants = sorted({n for step in steps for n in step.launch.loop_extents})
        self.constants = constants
        base_in = len(constants)
        base_out = base_in + len(self.array_args)
        base_temp = base_out + len(graph.results)
        base_scalar = base_temp + len(self.temps)
        slot_of_value = {param_value_id[i]: base_in + k for k, i in enumerate(self.array_args)}
        for k, vid in enumerate(launcher.result_ids):
            slot_of_value.setdefault(vid, base_out + k)
        for k, t in enumerate(launcher.temp_values):
            slot_of_value.setdefault(t.id, base_temp + k)
        slot_of_scalar = {p.index: base_scalar + k for k, p in enumerate(self.scalar_args)}
        self.launches = []
        for step in steps:
            picks = []
            for kind, ref in step.args:
                if kind == "ptr":
                    picks.append(slot_of_value[ref])
                elif kind == "extent":
                    picks.append(constants.index(step.launch.loop_extents[ref]))
                else:
                    picks.append(slot_of_scalar[ref])
            getter = operator.itemgetter(*picks)
            single = len(picks) == 1
            self.launches.append((step.function, (step.launch.grid,), (step.launch.schedule.block,),
                                  (lambda values, g=getter: (g(values),)) if single else getter))

    def __call__(self, args: tuple, out):
        values = list(self.constants)
        for i in self.array_args:
            values.append(args[i].data.ptr)
        if out is None:
            outs = [self.empty(shape, dtype) for shape, dtype in self.out_shapes]
        else:
            outs = list(out) if type(out) is tuple else [out]
            self._check_overlap(values, outs)
        for o in outs:
            values.append(o.data.ptr)
        temps = [self.empty(shape, dtype) for shape, dtype in self.temps]
        for t in temps:
            values.append(t.data.ptr)
        for p in self.scalar_args:
            v = args[p.index]
            limit = self.float_limits.get(p.index)
            if limit is not None and type(v) is float and (v > limit or v < -limit) and v - v == 0:
                from ..signature import scalar_value
                scalar_value(p, v)                       # raises the located error
            values.append(v)
        for fn, grid, block, pick in self.launches:
            fn(grid, block, pick(values))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _check_overlap(self, values: list, outs: list) -> None:
        base = len(self.constants)
        spans = [(o.data.ptr, o.data.ptr + n, o) for o, n in zip(outs, self.out_bytes)]
        for k, (a0, a1, _) in enumerate(spans):
            for b0, b1, _ in spans[k + 1:]:
                if a0 < b1 and b0 < a1:
                    raise TdslArgumentError("two outputs overlap in memory")
        for k, (i, n) in enumerate(self.in_bytes):
            x0 = values[base + k]
            for j, (o0, o1, o) in enumerate(spans):
                if x0 < o1 and o0 < x0 + n:
                    if x0 == o0 and (k, j) in self.in_place_ok:
                        continue
                    p = self.params[i]
                    raise TdslArgumentError(f"an output overlaps input '{p.name}'; only a pointwise "
                                            f"kernel may write over an identical input", p.loc)


def _nbytes(shape, itemsize: int) -> int:
    n = itemsize
    for s in shape:
        n *= s
    return max(n, itemsize)


def set_overrides(launcher: "Launcher", overrides: dict) -> None:
    """Pin schedules per group (the tuner's winners); forgets planned calls."""
    launcher.overrides = dict(overrides)
    launcher._fast.clear()
