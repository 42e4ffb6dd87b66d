"""Where the tuning database lives (standard library only: the launcher
checks for the file before it imports the database code)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union

ENV_VAR = "TILEDSL_TUNING_DB"
_OFF = {"off", "0", "false", "no", "none", "disable", "disabled"}


def default_db_path() -> Path:
    """$TILEDSL_CACHE_DIR/tuning.json, else tuning.json in the user cache
    folder the compilation cache uses."""
    from ..runtime.cache import _default_root
    return _default_root() / "tuning.json"


def resolve_db_path(given: Union[None, bool, str, os.PathLike] = None) -> Optional[Path]:
    """The database file to use: `given` (a path, or False for none), else
    $TILEDSL_TUNING_DB (a path, or 'off'), else default_db_path()."""
    if given is False:
        return None
    if given not in (None, True, ""):
        return Path(given).expanduser()
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return None if env.lower() in _OFF else Path(env).expanduser()
    try:
        return default_db_path()
    except RuntimeError:      # no home folder
        return None
