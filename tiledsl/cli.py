"""The `tiledsl` command line: check, emit, run, autotune, bench."""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np

from . import __version__
from .api import Kernel, Module, compile as compile_program
from .errors import TdslArgumentError, TdslError


def _file_kernels(path: str) -> list[Kernel]:
    """The kernels of FILE: a path (any name: /dev/stdin, a.txt), '-' for standard input."""
    if path == "-":
        program = compile_program(sys.stdin.read(), file="<stdin>")
    elif "\n" in path and not path.endswith(".tdsl"):    # program text given in place of a path
        program = compile_program(path)
    else:
        program = compile_program(Path(path), file=path)
    return list(program) if isinstance(program, Module) else [program]


def _chosen(kernels: list[Kernel], path: str, name: Optional[str]) -> list[Kernel]:
    """The kernels --kernel NAME selects (all without it)."""
    if name is None:
        return kernels
    chosen = [k for k in kernels if k.name == name]
    if not chosen:
        raise TdslError(f"{path} has no kernel '{name}'; it has {', '.join(k.name for k in kernels)}")
    return chosen


def _workload(args, sizes_needed: bool = True) -> tuple[list[Kernel], list]:
    """The kernels FILE and --kernel select, and each one's extents from --shape
    (None each when not `sizes_needed`), all checked before anything runs or prints.
    A file's kernels may have different dims, and one --shape serves the whole file,
    with or without --kernel: a name is an error only when it is a dim of none of
    the file's kernels, and each selected kernel must get all of its own dims."""
    from .inputs import extents_for, parse_sizes
    every = _file_kernels(args.file)
    kernels = _chosen(every, args.file, args.kernel)
    if not sizes_needed:
        return kernels, [None] * len(kernels)
    sizes = parse_sizes(args.shape)
    dims = list(dict.fromkeys(d for k in every for d in k.graph.dims))
    for name, size in sizes.items():
        if name not in dims:
            whose = " or ".join(k.name for k in every)
            raise TdslArgumentError(f"--shape: '{name}' is not a dim of {whose}; "
                                    f"{'its' if len(every) == 1 else 'their'} dims are {', '.join(dims) or 'none'}")
        for k in every:
            fixed = dict(k.graph.fixed_extents).get(name)
            if fixed is not None and size != fixed:
                raise TdslArgumentError(f"--shape: dim {name} of {k.name} is the literal {fixed} in its "
                                        f"type; it cannot be set to {size}")
    return kernels, [extents_for(sizes, k.graph) for k in kernels]


def _shape_text(extents: dict[str, int]) -> str:
    return ", ".join(f"{d}={n}" for d, n in extents.items())


# Numeric options: (option, attribute, valid, what it takes). Checked in each command
# after its file and shape, as bad input (exit 1), before any work.
_NUMBER_OPTIONS = (
    ("--hbm-gbps", "hbm_gbps", lambda v: math.isfinite(v) and v >= 0,
     "a bandwidth in GB/s: a finite number, 0 or more (0: unknown)"),
    ("--budget", "budget", lambda v: math.isfinite(v) and v > 0, "a positive number of seconds"),
    ("--max-candidates", "max_candidates", lambda v: v >= 1, "a count of 1 or more"),
    ("--workers", "workers", lambda v: v >= 1, "a count of 1 or more"),
    ("--top", "top", lambda v: v >= 0, "a count of 0 or more"),
    ("--seed", "seed", lambda v: v >= 0, "a non-negative integer"),
)


def _check_numbers(args) -> None:
    for option, attr, valid, takes in _NUMBER_OPTIONS:
        value = getattr(args, attr, None)
        if value is not None and not valid(value):
            raise TdslArgumentError(f"{option} takes {takes}; got {value:g}")


def cmd_check(args) -> int:
    failed = 0
    for path in args.files:
        try:
            kernels = _file_kernels(path)
        except TdslError as err:
            print(err, file=sys.stderr)
            failed += 1
            continue
        if not args.quiet:
            for k in kernels:
                print(f"{path}: ok: {k.signature}")
                for note in k.notes:
                    print(note, file=sys.stderr)
    return 1 if failed else 0


def cmd_emit(args) -> int:
    from .emit import emit_stage
    from .runtime.toolchain import check_arch
    kernels, all_extents = _workload(args, sizes_needed=args.stage != "ir")
    _check_numbers(args)
    check_arch(args.arch)
    for k, extents in zip(kernels, all_extents):
        text = emit_stage(k, args.stage, extents, args.arch, args.hbm_gbps)
        if not text:            # nothing launches at these sizes: say so rather than print a blank line
            text = f"// {k.no_launch_note(extents) or 'no kernel launches at these sizes'}"
        print(text)
    return 0


def _gpu_available() -> tuple[bool, str]:
    try:
        import cupy
        n = cupy.cuda.runtime.getDeviceCount()
        return (n > 0, "no CUDA device found" if n == 0 else "")
    except ImportError:
        return False, "CuPy is not installed"
    except Exception as err:  # noqa: BLE001 - any driver failure means "no GPU here"
        return False, f"no usable CUDA device ({err.__class__.__name__})"


def _host_bytes(kernel: Kernel, extents: dict[str, int]) -> tuple[int, int]:
    """(bytes of the random inputs and float64 results `run` holds in host memory,
    elements of its largest array)."""
    def elements(dims) -> int:
        return math.prod(extents[d] for d in dims)
    tensors = [p for p in kernel.graph.params if not p.is_scalar]
    total = (sum(elements(p.dims) * p.dtype.itemsize for p in tensors)
             + sum(elements(r.dims) * 8 for r in kernel.graph.results))
    largest = max([elements(p.dims) for p in tensors] + [elements(r.dims) for r in kernel.graph.results])
    return total, largest


def _inputs_and_reference(kernel: Kernel, extents: dict[str, int], seed: Optional[int]):
    """Random host inputs and the float64 reference, or a TdslError naming the
    memory they need when the host cannot hold them."""
    from .inputs import random_arguments
    need, largest = _host_bytes(kernel, extents)
    try:
        if need > sys.maxsize or largest * 8 > sys.maxsize:    # past what NumPy can index: it would
            raise MemoryError                                  # raise ValueError, not MemoryError
        host = random_arguments(kernel.graph, extents, seed)
        t0 = time.perf_counter()
        expected = kernel.reference(*host, compute="f64")
        return host, expected, time.perf_counter() - t0
    except MemoryError:
        raise TdslArgumentError(f"{kernel.name} at {_shape_text(extents)} needs {need / 2 ** 30:.3g} GiB "
                                f"({need:,} bytes) of host memory for its random inputs and float64 "
                                f"results, more than this machine could allocate; give smaller sizes") from None


def _stats(out: np.ndarray) -> str:
    """Mean, min and max of a result's values other than NaN, and how many are NaN or
    infinite (inf - inf in the mean is NaN, not a RuntimeWarning on stderr)."""
    values = out[~np.isnan(out)]
    if not values.size:
        return "(all NaN)" if out.size else "(no values)"
    with np.errstate(invalid="ignore", over="ignore"):
        text = f"mean {values.mean():.6g} min {values.min():.6g} max {values.max():.6g}"
    special = [f"{n} {what}" for n, what in ((out.size - values.size, "NaN"),
                                             (int(np.isinf(values).sum()), "infinite")) if n]
    return text + (f" ({', '.join(special)})" if special else "")


def cmd_run(args) -> int:
    from .inputs import TOLERANCE
    kernels, all_extents = _workload(args)
    _check_numbers(args)
    status = 0
    for k, extents in zip(kernels, all_extents):
        host, expected, t_ref = _inputs_and_reference(k, extents, args.seed)
        expected = expected if isinstance(expected, tuple) else (expected,)
        print(f"{k.name} [{_shape_text({d: extents[d] for d in k.graph.dims})}]")
        print(f"  reference (NumPy, f64): {t_ref * 1e3:.1f} ms")
        empty = k.no_launch_note(extents)
        ok, why = _gpu_available()
        if not ok or args.cpu or empty:
            if empty:
                print(f"  note: {empty}")
            else:
                reason = "--cpu given" if args.cpu else why
                print(f"  GPU: not run ({reason}); ran the NumPy reference only")
            for i, (res, out) in enumerate(zip(k.graph.results, expected)):
                out = np.asarray(out, dtype=np.float64)
                print(f"  result {i}: {res.dtype}{list(out.shape)} {_stats(out)}")
            continue
        from .runtime.measure import run_and_time
        report = run_and_time(k, host, expected)
        print(report.text())
        for i, res in enumerate(k.graph.results):
            if report.errors[i] > TOLERANCE[res.dtype.name]:
                status = 1
    return status


NO_GPU_STATUS = 2          # autotune / bench without a GPU
WRONG_STATUS = 3           # autotune rejected a schedule that computed a wrong result


def _db_option(args):
    return False if args.no_db else args.db


def cmd_autotune(args) -> int:
    from .runtime.toolchain import check_arch
    from .tune import autotune, dry_run
    from .tune.peers import parse_peers
    kernels, all_extents = _workload(args)
    peers = parse_peers(args.vs)
    _check_numbers(args)
    check_arch(args.arch)
    if args.plot and not args.dry_run:
        import importlib.util
        if importlib.util.find_spec("matplotlib") is None:     # before a long search, not after
            raise TdslError("--plot needs matplotlib: pip install matplotlib (or pip install "
                            "tiledsl[tune])")
    if not args.dry_run:
        ok, why = _gpu_available()
        if not ok:
            print(f"tiledsl autotune: needs an NVIDIA GPU ({why}). `tiledsl autotune --dry-run` lists "
                  f"and compiles the search space, with the pruning reasons, without one.", file=sys.stderr)
            return NO_GPU_STATUS
    status, results = 0, []
    for k, extents in zip(kernels, all_extents):
        if args.dry_run:
            report = dry_run(k, extents, arch=args.arch, max_candidates=args.max_candidates,
                             workers=args.workers, progress=not args.quiet)
        else:
            report = autotune(k, extents, budget=args.budget, db=_db_option(args), retune=args.retune,
                              progress=not args.quiet, max_candidates=args.max_candidates,
                              workers=args.workers, seed=args.seed, peers=tuple(peers))
        print(report.table(top=args.top))
        if args.plot and not args.dry_run:
            path = args.plot if len(kernels) == 1 else _suffixed(args.plot, k.name)
            print(f"roofline plot: {report.plot(path)}")
        if report.wrong:
            status = WRONG_STATUS
        for line in report.uncompiled_groups() if args.dry_run else ():
            print(f"error: autotune --dry-run: {line}", file=sys.stderr)
            status = status or 1
        results.append(report.to_json())
    if args.json:
        _write_json(args.json, results)
    return status


def cmd_bench(args) -> int:
    from .tune.bench import bench
    from .tune.peers import parse_peers
    kernels, all_extents = _workload(args)      # the input first, then the GPU
    peers = parse_peers(args.vs)
    _check_numbers(args)
    ok, why = _gpu_available()
    if not ok:
        print(f"tiledsl bench: needs an NVIDIA GPU ({why}).", file=sys.stderr)
        return NO_GPU_STATUS
    for k, extents in zip(kernels, all_extents):
        report = bench(k, extents, peers, db=_db_option(args), seed=args.seed)
        print(report.table())
    return 0


def _suffixed(path: str, name: str) -> str:
    stem, dot, ext = path.rpartition(".")
    return f"{stem}_{name}.{ext}" if dot else f"{path}_{name}"


def _write_json(path: str, data) -> None:
    import json
    try:
        with open(path, "w") as f:
            json.dump(data, f, indent=1)
    except OSError as err:
        raise TdslError(f"cannot write {path}: {err.strerror or err}") from None


def _add_workload(p, shape_help: str = "dim sizes, e.g. M=4096,N=1024") -> None:
    """FILE, --shape and --kernel: what emit, run, autotune and bench all take."""
    p.add_argument("file", metavar="FILE")
    p.add_argument("--shape", help=shape_help)
    p.add_argument("--kernel", help="only this kernel of the file")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tiledsl", description="tiledsl: a tile-oriented kernel language for NVIDIA GPUs.")
    parser.add_argument("--version", action="version", version=f"tiledsl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("check", help="parse and type-check .tdsl files",
                       description="Parse and type-check each file. Exit 0 when all are well "
                                   "formed; otherwise print each error with file:line:col and a caret, "
                                   "and exit 1.")
    p.add_argument("files", nargs="+", metavar="FILE", help="a .tdsl file ('-': standard input)")
    p.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("emit", help="print a compiler stage (ir, schedule, cuda, cubin)",
                       description="Print what a compiler stage makes of each kernel of FILE. "
                                   "--stage ir needs no shape; the GPU stages need --shape to pick "
                                   "a schedule.")
    _add_workload(p)
    p.add_argument("--stage", default="ir", choices=("ir", "schedule", "cuda", "ptx", "cubin", "sass"))
    p.add_argument("--arch", default="sm_90a", help="GPU architecture for cubin/sass (default sm_90a)")
    p.add_argument("--hbm-gbps", type=float, default=0.0, metavar="GB/S",
                   help="the GPU's peak memory bandwidth, which some schedule rules read "
                        "(an H100 SXM: 3352, an H200: 4800; default: unknown, which the rules that "
                        "need much bandwidth per SM read as an H100's)")
    p.set_defaults(func=cmd_emit)

    p = sub.add_parser("run", help="run on random inputs, check against the reference, time it",
                       description="Draw random inputs of the given shape, run the kernel on the GPU, "
                                   "compare with the NumPy reference (in float64) and time it. "
                                   "Without a GPU, run the reference only and say so.")
    _add_workload(p)
    p.add_argument("--seed", type=int, default=None, help="random seed (default: fresh)")
    p.add_argument("--cpu", action="store_true", help="run the reference only, even with a GPU")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("autotune", help="search schedules on the GPU, show progress, store the winner",
                       description="Compile every candidate schedule of each kernel (in parallel), prune "
                                   "those that cannot run, check each against the float64 reference and "
                                   "time it on the GPU; print the table, store the winner in the tuning "
                                   "database. A warm database answers at once (--retune searches again). "
                                   "Exit status: 0, 1 on bad input, 2 without a GPU, 3 when a schedule "
                                   "computed a wrong result (a compiler bug; it was rejected).")
    _add_workload(p, "dim sizes, e.g. M=4096,N=4096,K=4096 (dtypes come from the kernel's signature)")
    p.add_argument("--budget", type=float, metavar="SECONDS", help="stop the search after this long")
    p.add_argument("--db", metavar="PATH", help="tuning database file (default: $TILEDSL_TUNING_DB, else "
                                                "tuning.json in the cache folder)")
    p.add_argument("--no-db", action="store_true", help="neither read nor write a tuning database")
    p.add_argument("--retune", action="store_true", help="search even when the database has the answer")
    p.add_argument("--plot", metavar="PNG", help="write a roofline plot of the candidates (needs matplotlib)")
    p.add_argument("--vs", default="cublas,cupy,triton",
                   help="peers to time the winner against (cublas,cupy,triton; '' for none)")
    p.add_argument("--dry-run", action="store_true",
                   help="no GPU needed: list the search space, compiled, with pruning reasons")
    p.add_argument("--arch", default="sm_90a", help="architecture for --dry-run (default sm_90a)")
    p.add_argument("--max-candidates", type=int, default=64, metavar="N", help="per group (default 64)")
    p.add_argument("--workers", type=int, metavar="N", help="compile processes (default: one per core)")
    p.add_argument("--top", type=int, default=10, metavar="N", help="timed rows to show (default 10)")
    p.add_argument("--seed", type=int, default=None, help="random seed of the inputs")
    p.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_autotune)

    p = sub.add_parser("bench", help="time the kernel against cuBLAS / CuPy / Triton",
                       description="Time the kernel (with the schedules its launcher picks: tuning "
                                   "database, else default) side by side with its peers on the same "
                                   "random inputs, each checked against the float64 reference.")
    _add_workload(p)
    p.add_argument("--vs", default="cublas,cupy,triton", help="peers: cublas,cupy,triton")
    p.add_argument("--db", metavar="PATH", help="tuning database to take schedules from")
    p.add_argument("--no-db", action="store_true", help="default schedules only")
    p.add_argument("--seed", type=int, default=None, help="random seed of the inputs")
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except TdslError as err:
        print(err, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:   # output piped into `head`: stop quietly
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
