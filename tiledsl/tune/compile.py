"""Compiling the candidates, in parallel worker processes.

NVRTC holds the GIL (or its own lock) while it compiles: on a 2-core machine
threads compiled 12 GEMM candidates in 4.8 s against 4.5 s serially, worker
processes in 2.7 to 3.5 s. So the kernels missing from the compilation cache
go to worker processes (`python -m tiledsl.tune.worker`, plain subprocesses:
multiprocessing's spawn and forkserver re-import the user's __main__ in every
child, and fork is unsafe in a process holding a CUDA context). Sources are
rendered here (milliseconds each), only text goes to the workers, and each
cubin comes back to be filed in the compilation cache (memory and disk) under
the key the launcher looks up: timing then loads it without compiling.
"""
from __future__ import annotations

import base64
import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ..errors import TdslError
from ..runtime.launcher import kernel_key_parts, partition_ir_text
from ..runtime.toolchain import ResourceUsage
from .space import DeviceLimits, GroupSpace, resource_problem


@dataclass
class _Job:
    key_parts: tuple
    name: str                 # the kernel's entry name in the cubin
    group: int
    partition: str            # whose group (GroupSpace.partition)
    schedule: object
    stage: int
    result: object = None     # CachedBinary once done
    error: str = ""
    seconds: float = 0.0


def _compile_here(source: str, arch: str) -> dict:
    """The worker's answer, computed in this process (one job, or no workers)."""
    import io
    out = io.BytesIO()
    from .worker import serve
    serve([json.dumps({"source": source, "arch": arch})], out)
    return json.loads(out.getvalue())


def default_workers() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:
        n = os.cpu_count() or 1
    return max(1, n)


class WorkerPool:
    """n worker processes, each fed by a thread: submit (job, source), then
    read (job, answer) pairs from `done`. close() ends them all."""

    def __init__(self, n: int):
        self.todo: "queue.Queue" = queue.Queue()
        self.done: "queue.Queue" = queue.Queue()
        self.stopping = False
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parent.parent.parent)   # where this tiledsl imports from
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.procs = [subprocess.Popen([sys.executable, "-m", "tiledsl.tune.worker"], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
                      for _ in range(n)]
        self.threads = [threading.Thread(target=self._feed, args=(p,), daemon=True) for p in self.procs]
        for t in self.threads:
            t.start()

    def submit(self, job, source: str, arch: str) -> None:
        self.todo.put((job, json.dumps({"source": source, "arch": arch}) + "\n"))

    def _feed(self, proc) -> None:
        alive = True
        while not self.stopping:
            item = self.todo.get()
            if item is None:
                return
            job, request = item
            if not alive:                 # hand the job back: it is compiled in the tuner's process
                self.done.put((job, {"error": "no compile worker", "retry_here": True}))
                continue
            try:
                proc.stdin.write(request.encode())
                proc.stdin.flush()
                line = proc.stdout.readline()
                answer = json.loads(line) if line else None
            except (OSError, ValueError):
                answer = None
            if answer is None:            # the worker died (or never started): not the kernel's fault
                alive = False
                answer = {"error": f"the compile worker exited (status {proc.poll()})", "retry_here": True}
            self.done.put((job, answer))

    def close(self) -> None:
        self.stopping = True
        for _ in self.threads:
            self.todo.put(None)
        for p in self.procs:
            try:
                p.stdin.close()
            except OSError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                p.kill()     # mid-compile when the budget ran out
                p.wait()


class Compilation:
    """Compile every unpruned candidate of `spaces`: start(), other work (the
    reference), then finish()."""

    def __init__(self, kernel, spaces: list[GroupSpace], arch: str, workers: Optional[int] = None,
                 limits: DeviceLimits = DeviceLimits()):
        self.kernel, self.spaces, self.arch, self.limits = kernel, spaces, arch, limits
        self.workers = default_workers() if workers is None else max(1, workers)
        self.jobs: dict[tuple, _Job] = {}
        self.cached = 0            # found in the cache, not compiled
        self.compiled = 0          # compiled by this run
        self._queue: list[tuple[_Job, str]] = []   # compiled in this process
        self._pool: Optional[WorkerPool] = None
        self._sources: dict = {}
        self._in_flight = 0
        self._ir_texts = {mode: partition_ir_text(kernel.graph, mode)     # (the launcher's kernel keys)
                          for mode in {space.partition for space in spaces}}
        for space in spaces:
            for c in space.candidates:
                if c.status != "pending":
                    continue
                for parts, stage in self._parts(space, c):
                    if parts not in self.jobs:
                        name = c.schedule.kernel_name(kernel.graph.name, space.index, stage)
                        self.jobs[parts] = _Job(parts, name, space.index, space.partition, c.schedule, stage)

    def _parts(self, space: GroupSpace, c) -> list:
        return [(kernel_key_parts(self._ir_texts[space.partition], space.index, c.schedule, stage), stage)
                for stage in c.stages]

    def start(self) -> "Compilation":
        from ..codegen.cuda import render
        from ..runtime.cache import find_kernel
        from ..schedule.layout import plan_layout
        from ..schedule.partition import partition_of
        graph = self.kernel.graph
        groups = {(mode, g.index): g for mode in {job.partition for job in self.jobs.values()}
                  for g in partition_of(graph, mode)}
        for job in self.jobs.values():
            hit = find_kernel(job.key_parts, self.arch)
            if hit is not None:
                job.result = hit
                self.cached += 1
                continue
            try:
                group = groups[(job.partition, job.group)]
                source = render(graph, group, plan_layout(group, graph), job.schedule, job.stage).source
            except TdslError as err:
                job.error = f"rendering failed (a tiledsl bug): {err.message}"
                continue
            self._queue.append((job, source))
        if len(self._queue) > 1 and self.workers > 1:
            try:
                self._pool = WorkerPool(min(self.workers, len(self._queue)))
            except (OSError, ValueError, TypeError):     # cannot start processes here: compile in this one
                self._pool = None
            else:
                for job, source in self._queue:
                    self._pool.submit(job, source, self.arch)
                self._sources = {id(job): source for job, source in self._queue}
                self._in_flight, self._queue = len(self._queue), []
        return self

    def abort(self) -> None:
        """Stop the workers (the run failed before finish())."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def finish(self, deadline: Optional[float] = None, on_candidate: Callable = lambda c: None) -> None:
        """Wait for the compiles (until `deadline`, a time.monotonic() value),
        then mark each candidate compiled, failed, pruned (resources) or
        skipped (budget); on_candidate(c) after each."""
        try:
            for job, source in self._queue:            # no workers: here, one by one
                if deadline is not None and time.monotonic() > deadline:
                    break
                self._take(job, _compile_here(source, self.arch))
                self._settle(on_candidate)
            self._queue = []
            while self._in_flight:
                timeout = None if deadline is None else deadline - time.monotonic()
                if timeout is not None and timeout <= 0:
                    break                                 # out of budget
                try:
                    job, answer = self._pool.done.get(timeout=timeout)
                except queue.Empty:
                    break
                self._in_flight -= 1
                if answer.get("retry_here"):
                    answer = _compile_here(self._sources[id(job)], self.arch)
                self._take(job, answer)
                self._settle(on_candidate)
        finally:
            if self._pool is not None:
                self._pool.close()
                self._pool = None
        self._settle(on_candidate, final=True)

    def _take(self, job: _Job, answer: dict) -> None:
        from ..runtime.cache import store_kernel
        if "cubin" not in answer:
            job.error = answer.get("error") or "the compile worker gave no answer"
            return
        job.seconds = float(answer.get("seconds", 0.0))
        usage = {k: ResourceUsage(**u) for k, u in answer["resources"].items()}
        job.result = store_kernel(job.key_parts, self.arch, base64.b64decode(answer["cubin"]), usage)
        self.compiled += 1

    def _settle(self, on_candidate: Callable, final: bool = False) -> None:
        """Move every pending candidate whose jobs are all done to its status."""
        for space in self.spaces:
            for c in space.candidates:
                if c.status != "pending":
                    continue
                jobs = [self.jobs[parts] for parts, _ in self._parts(space, c)]
                failed = [j for j in jobs if j.error]
                if failed:
                    c.mark("failed", "compile: " + failed[0].error.strip().splitlines()[0][:300])
                    on_candidate(c)
                    continue
                if any(j.result is None for j in jobs):
                    if final:
                        c.mark("skipped", "budget spent before it compiled")
                        on_candidate(c)
                    continue
                c.usage = [j.result.resources.get(j.name) for j in jobs]
                c.compile_seconds = sum(j.seconds for j in jobs)
                why = ""
                for u in c.usage:
                    why = why or resource_problem(u, c.schedule.block, self.limits)
                c.mark("pruned" if why else "compiled", why)
                on_candidate(c)
