"""The autotuner: search a kernel's schedules on the GPU, keep the winners.

    space.py     the candidates per group and the static pruning (fits, limits, cubin resources)
    compile.py   parallel NVRTC compilation into the compilation cache (worker.py: the worker process)
    workload.py  random inputs, the float64 reference, input rotation past the L2, output buffers
    timing.py    CUDA-event timing: warm-up, median of repeats
    safety.py    poisoned outputs, the float64 check, test-only fault injection
    select.py    the deterministic, noise-aware choice (pure)
    db.py        the tuning database (JSON, locked, merged, atomic) and the launcher's lookup
    runner.py    autotune() and dry_run(): the search itself
    report.py    TuneReport: table, JSON; plot.py: the roofline plot
    roofline.py  work from the IR, device peaks, % of the roofline
    peers.py     cuBLAS / CuPy unfused (cupy_eval.py) / Triton; bench.py: `tiledsl bench`
"""
__all__ = ["autotune", "dry_run", "TuneReport", "TuningDB", "default_db_path", "resolve_db_path"]

# Loaded on first use: a launch that only looks up the database (tune.db) must
# not pay for importing the search, the compile workers and the reports.
_HOMES = {"autotune": "runner", "dry_run": "runner", "TuneReport": "report", "TuningDB": "db",
          "default_db_path": "paths", "resolve_db_path": "paths"}


def __getattr__(name: str):
    if name in _HOMES:
        import importlib
        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
