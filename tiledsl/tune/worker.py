"""A compile worker: `python -m tiledsl.tune.worker`, driven by tune/compile.py.

Reads one JSON request per line on stdin ({"source": ..., "arch": ...}),
compiles it with NVRTC and answers one JSON line: {"cubin": base64,
"resources": {...}, "seconds": ...} or {"error": text}. A plain process
started by the tuner, not a multiprocessing child, so the user's __main__
module is never re-imported and no process that holds a CUDA context forks.
"""
from __future__ import annotations

import base64
import json
import os
import sys
import time
from dataclasses import asdict


def serve(requests, answers) -> None:
    from tiledsl.runtime.toolchain import compile_cuda
    for line in requests:
        if not line.strip():
            continue
        t0 = time.perf_counter()
        try:
            req = json.loads(line)
            compiled = compile_cuda(req["source"], arch=req["arch"], want="cubin")
            answer = {"cubin": base64.b64encode(compiled.cubin).decode(),
                      "resources": {k: asdict(u) for k, u in compiled.resources.items()},
                      "seconds": time.perf_counter() - t0}
        except Exception as err:   # noqa: BLE001 - every failure is an answer, never a crash
            answer = {"error": f"{type(err).__name__}: {err}" if not str(err).startswith("error")
                      else str(err)}
        answers.write((json.dumps(answer) + "\n").encode())
        answers.flush()


def main() -> None:
    # Answers go to the real stdout; anything else printed goes to stderr.
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(sys.stdin, answers)


if __name__ == "__main__":
    main()
