"""Advice on a checked program: well-formed code that will run slowly as written.

Notes, not errors: the program is valid and runs; `tiledsl check` prints them
and `Kernel.notes` lists them. Before/after, for an MLP's hidden layer:

    h = relu(x @ w1 + b1)      # f32: arithmetic on f16 values is f32
    return h @ w2              # note: f32 @ f32 (w2 widened): CUDA cores
    h = f16(relu(x @ w1 + b1)) # both operands f16: tensor cores
"""
from __future__ import annotations

from ..errors import located
from ..ir.graph import Graph, Value, stored_copy, unpermuted
from ..ir.passes import from_parameters_only


def _widened_16_bit(v: Value) -> bool:
    """A 16-bit float tensor cast up to f32 (by promotion or by the user), maybe transposed."""
    v = unpermuted(v)
    return v.op == "cast" and v.dtype.name == "f32" and v.operands[0].dtype.name in ("f16", "bf16")


def _plain_once_16_bit(graph: Graph, v: Value) -> bool:
    """Whether `v`, cast to 16 bits, would reach the product as a plain input: a
    parameter, or stored by the group that computes it (a pointwise kernel of its
    own where it comes from parameters only). Otherwise it would stay
    in the product's prologue, whose tensor-core tiles load element by element:
    no faster than f32 on the CUDA cores (attention's probabilities before the
    reduce group stored them: H100 2026-11-23, scripts/probe_attention.py)."""
    from ..schedule.partition import stored_by_its_producer
    return unpermuted(v).op == "param" or stored_by_its_producer(graph, v, itemsize=2)


def _tf32_ready(graph: Graph, product: Value, v: Value) -> bool:
    """Whether operand `v` can reach `product` as the warpgroup tensor cores read
    TF32 (plain inputs laid out along K): a parameter or a value computed from
    parameters only (`ir.passes.tf32_operands_along_k` copies it laid out along
    K where needed), or a value that another product or a reduction computes and
    its group stores, laid out along the contracted dim."""
    if stored_copy(v) is not None:
        return True
    base = unpermuted(v)
    if from_parameters_only(base):
        return True
    from ..schedule.partition import stored_by_its_producer
    return base.dims[-1:] == (product.attr("contract"),) and stored_by_its_producer(graph, v)


# The kinds of kernel part (partition's group kinds) whose schedules read each directive
# (schedule/choose.py and its rules); a directive that none of a program's parts reads changes nothing.
DIRECTIVE_READERS = {"tile": {"matmul"}, "microtile": {"matmul"}, "split_k": {"matmul"}, "group": {"matmul"},
                     "tf32": {"matmul"}, "stages": {"matmul", "reduce"}, "warps": {"matmul", "pointwise"},
                     "threads": {"pointwise", "reduce"}, "vector": {"pointwise", "reduce"},
                     "cluster": {"reduce"}}
_PARTS = {"matmul": "a product (@)", "pointwise": "an elementwise part", "reduce": "a reduction"}


def ignored_directives(graph: Graph, hints) -> list[str]:
    """Notes for the directives of `hints` (a schedule block) that no part of `graph` reads,
    and for tf32(true) where no product multiplies f32 operands."""
    from ..schedule.partition import partition
    kinds = {g.kind for g in partition(graph)}
    notes = []
    for name, readers in DIRECTIVE_READERS.items():
        value = getattr(hints, name)
        if value in (None, (), False) or readers & kinds:
            continue
        wanted = " or ".join(_PARTS[k] for k in sorted(readers))
        notes.append(located("note", f"{name}() changes nothing in this kernel: it applies to {wanted}, "
                             f"and the kernel has none", hints.loc))
    if hints.tf32 and "matmul" in kinds and not any(
            v.op == "matmul" and all(o.dtype.name == "f32" for o in v.operands) for v in graph.values):
        notes.append(located("note", "tf32(true) changes nothing in this kernel: TF32 is for products of "
                             "f32 operands, and this kernel's are 16-bit or integer", hints.loc))
    return notes


def advice(graph: Graph, hints=None) -> list[str]:
    """Rendered notes (location, message, the line with a caret) for `graph` under its
    schedule block's `hints` (schedule.hints.Hints, or None)."""
    tf32 = bool(hints is not None and hints.tf32)
    notes = ignored_directives(graph, hints) if hints is not None and hints.directives else []
    for m in graph.values:
        if m.op != "matmul" or not all(o.dtype.name == "f32" for o in m.operands):
            continue
        if tf32:
            for o in m.operands:
                copy = stored_copy(o)
                base = unpermuted(copy.operands[0]) if copy is not None else None
                if base is not None and base.op == "param":
                    name, k = graph.params[base.attr("index")].name, m.attr("contract")
                    along_k = ", ".join([d for d in base.dims if d != k] + [k])
                    notes.append(located("note", f"tf32(true) copies '{name}' laid out along {k} on every call "
                                         f"(the tensor cores read TF32 operands with the contracted dim "
                                         f"innermost): one more pass over it per call (20-55 us at 4096^3 on "
                                         f"an H100, against 410 for the product); declared [{along_k}] it is "
                                         f"read in place", m.loc))
            off = [side for side, o in zip(("left", "right"), m.operands) if not _tf32_ready(graph, m, o)]
            if off:
                which = "neither operand is" if len(off) == 2 else f"the {off[0]} operand is not"
                notes.append(located("note", f"tf32(true) leaves this product exact f32 on the CUDA cores: "
                                     f"TF32 reads parameters and values computed from them (copied laid out "
                                     f"along K first where needed), but a value that another product or a "
                                     f"reduction computes only where its kernel stores it laid out along the "
                                     f"contracted dim, and {which}; make both operands 16-bit for the tensor "
                                     f"cores, or lay that value out along the contracted dim", m.loc))
            continue
        widened = [_widened_16_bit(o) for o in m.operands]
        if any(widened) and all(w or _plain_once_16_bit(graph, o) for w, o in zip(widened, m.operands)):
            notes.append(located("note", "this product multiplies f32 by f32 on the CUDA cores: an f16/bf16 "
                                 "operand is widened to match an f32 one (arithmetic on 16-bit values is "
                                 "f32 until cast); make both operands 16-bit with f16(...) or bf16(...) to "
                                 "multiply on the tensor cores, or opt in to TF32 with "
                                 "`schedule <kernel> { tf32(true) }`", m.loc))
    return notes
