"""The autotuner's progress bar: tqdm when installed (`pip install
tiledsl[tune]`), else a plain line of text. Counts compiled / pruned /
failed / timed (and wrong, the safety check's rejections)."""
from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

COUNTS = ("compiled", "pruned", "failed", "timed", "wrong", "skipped")


class Progress:
    def __init__(self, total: int, desc: str = "autotune", enabled: bool = True,
                 stream: Optional[TextIO] = None, use_tqdm: Optional[bool] = None):
        self.total, self.desc, self.enabled = total, desc, enabled
        self.stream = stream if stream is not None else sys.stderr
        self.counts = dict.fromkeys(COUNTS, 0)
        self.done = 0
        self.phase = ""
        self._bar = None
        self._last = 0.0
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        if enabled and use_tqdm is not False:
            try:
                from tqdm import tqdm
                self._bar = tqdm(total=total, desc=desc, file=self.stream, leave=True, dynamic_ncols=True)
            except ImportError:
                self._bar = None

    def text(self) -> str:
        counts = " ".join(f"{k} {v}" for k, v in self.counts.items() if v or k in COUNTS[:4])
        phase = f" [{self.phase}]" if self.phase else ""
        return f"{self.desc}: {self.done}/{self.total} candidates{phase}: {counts}"

    def count(self, what: str, finished: bool = True) -> None:
        """One more candidate `what` (a COUNTS name); finished ones advance the bar."""
        self.counts[what] = self.counts.get(what, 0) + 1
        self.done += finished
        self._show()                     # postfix first, so the bar's redraw shows it
        if finished and self._bar is not None:
            self._bar.update(1)

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        self._show(force=not self._tty)

    def _show(self, force: bool = False) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_postfix_str(" ".join(f"{k} {v}" for k, v in self.counts.items() if v)
                                      + (f" [{self.phase}]" if self.phase else ""), refresh=True)
            return
        now = time.monotonic()
        if self._tty and (force or now - self._last > 0.1):
            self._last = now
            self.stream.write("\r" + self.text() + "\x1b[K")
            self.stream.flush()
        elif not self._tty and force:       # a log file: one line per phase, not per candidate
            self.stream.write(self.text() + "\n")
            self.stream.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.close()
            return
        self.stream.write(("\r" if self._tty else "") + self.text() + ("\x1b[K" if self._tty else "") + "\n")
        self.stream.flush()
