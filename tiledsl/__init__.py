"""tiledsl: a small tile-oriented kernel language for NVIDIA GPUs.

    import tiledsl
    k = tiledsl.compile("examples/softmax.tdsl")
    y = k(x)                      # on the GPU (CuPy arrays)
    y_ref = k.reference(x_host)   # NumPy reference, no GPU needed

The pipeline, one stage per folder: frontend (parse, check) → ir → schedule →
codegen (render CUDA) → runtime (compile, cache, launch) → tune.
"""
from .api import Kernel, Module, compile
from .errors import (TdslArgumentError, TdslCompileError, TdslError, TdslNameError,
                     TdslPerformanceWarning, TdslRuntimeError, TdslScheduleError, TdslShapeError,
                     TdslSyntaxError, TdslTypeError)

__version__ = "0.1.0"

__all__ = ["compile", "Kernel", "Module", "TdslError", "TdslSyntaxError", "TdslNameError",
           "TdslShapeError", "TdslTypeError", "TdslArgumentError", "TdslScheduleError",
           "TdslCompileError", "TdslRuntimeError", "TdslPerformanceWarning", "__version__"]
