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
from .db import TuningDB, default_db_path, resolve_db_path
from .report import TuneReport
from .runner import autotune, dry_run

__all__ = ["autotune", "dry_run", "TuneReport", "TuningDB", "default_db_path", "resolve_db_path"]
