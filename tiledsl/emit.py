"""`tiledsl emit`: what each compiler stage makes of a kernel, as text."""
from __future__ import annotations

from typing import Optional

from .errors import TdslError


def emit_stage(kernel, stage: str, shape: Optional[str], arch: str) -> str:
    if stage == "ir":
        return kernel.ir_text()
    raise TdslError(f"--stage {stage} is not available yet: GPU code generation is not built")
