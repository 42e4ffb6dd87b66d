"""The autotuner: search a kernel's schedules on the GPU, keep the winners.

    select.py    the deterministic, noise-aware choice (pure)
    db.py        the tuning database (JSON, locked, merged, atomic)
"""
from .db import TuningDB, default_db_path, resolve_db_path

__all__ = ["TuningDB", "default_db_path", "resolve_db_path"]
