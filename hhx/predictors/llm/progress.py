"""Progress of a run's requests, with an ETA, on a terminal and off it.

On a terminal: a tqdm bar on stderr. Otherwise (piped through `tee`, a log file, a batch job):
plain lines at intervals, a first one when requests start and a last one when they end, e.g.

    smollm2_135m: 40/200 requests (20%) in 1m02s, 0.64/s, ETA 4m10s; errors 0, failed 0

Lines go to the `hhx.progress` logger when logging is configured (the Hydra app: its console and
`<run dir>/app.log`), else to stderr.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

from tqdm.auto import tqdm

log = logging.getLogger("hhx.progress")
INTERVAL_S = 20.0


def duration(seconds: float) -> str:
    """`42s`, `3m05s`, `2h07m`."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def logging_configured() -> bool:
    return logging.getLogger().hasHandlers()


def _emit(line: str) -> None:
    if logging_configured():
        log.info(line)
    else:
        print(line, file=sys.stderr, flush=True)


class Progress:
    """`update(n)` as requests finish, `note(**counts)` for the status, `close()` at the end.

    `enabled`: None = a bar on a terminal, plain lines otherwise; False = silent; True = a bar.
    """

    def __init__(
        self,
        label: str,
        total: int,
        enabled: bool | None = None,
        interval_s: float = INTERVAL_S,
        unit: str = "requests",
        clock: Any = time.monotonic,
    ) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.counts: dict[str, Any] = {}
        self.unit = unit
        self.interval_s = interval_s
        self._clock = clock
        self._start = clock()
        self._last = self._start
        self._silent = enabled is False
        terminal = bool(getattr(sys.stderr, "isatty", lambda: False)())
        self._bar: tqdm | None = None
        if not self._silent and (enabled is True or terminal):
            self._bar = tqdm(total=total, desc=label, unit="req", mininterval=0.5,
                             dynamic_ncols=True, file=sys.stderr)
        elif not self._silent:
            _emit(f"{label}: {total} {unit} to send")

    def note(self, **counts: Any) -> None:
        self.counts.update(counts)
        if self._bar is not None:
            self._bar.set_postfix(refresh=False, **counts)

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            return
        now = self._clock()
        if not self._silent and now - self._last >= self.interval_s and self.done < self.total:
            self._last = now
            _emit(self.line(now))

    def line(self, now: float | None = None) -> str:
        now = self._clock() if now is None else now
        elapsed = now - self._start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        pct = 100.0 * self.done / self.total if self.total else 100.0
        text = (f"{self.label}: {self.done}/{self.total} {self.unit} ({pct:.0f}%) in "
                f"{duration(elapsed)}, {rate:.2f}/s")
        if self.done < self.total:
            eta = (self.total - self.done) / rate if rate > 0 else None
            text += f", ETA {duration(eta) if eta is not None else 'unknown'}"
        if self.counts:
            text += "; " + ", ".join(f"{k} {v}" for k, v in self.counts.items())
        return text

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif not self._silent:
            _emit(self.line())
        self._silent = True
