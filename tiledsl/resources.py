"""Where the grammar and the CUDA templates live.

In the repository they are the top-level folders `grammar/` and `templates/`;
a wheel carries them inside the package as `tiledsl/_data/...` (see
pyproject.toml), so a non-editable install finds them there.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def resource_dir(name: str) -> Path:
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"tiledsl is installed without its '{name}' folder")
