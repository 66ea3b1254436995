"""Progress with an ETA for long work: a tqdm bar on a terminal, plain lines elsewhere.

Piped into `tee`, a log file or a CI console, a redrawn bar is either invisible or a wall of
carriage returns; there `progress` prints one line every `interval` seconds instead
(`desc: 3/16 sources (19%), 0:42 elapsed, ETA 3:00`) and one when done.
`HHX_PROGRESS=0` silences both; `HHX_PROGRESS_INTERVAL` sets the interval. A bar made with
`leave=False` (an inner bar, e.g. one task's prompt rows inside its build) prints no closing
line when it finished before its first interval: short inner steps add no lines to a log.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO


def _clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class LineProgress:
    """The tqdm subset hhx uses (update, set_postfix_str, close, iteration), as plain lines."""

    def __init__(self, iterable: Iterable[Any] | None = None, *, desc: str = "",
                 total: int | None = None, unit: str = "it", interval: float = 30.0,
                 file: TextIO | None = None, disable: bool = False, leave: bool = True):
        self.iterable = iterable
        self.leave = leave
        self.desc, self.unit, self.interval = desc, unit, interval
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.total = total
        self.n = 0
        self.postfix = ""
        self.file = file or sys.stderr
        self.disable = disable
        self.start = self.last = time.monotonic()
        self.closed = False
        self._shown = -1  # n at the last line printed

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        parts = [f"{self.desc}: {self.n:,}" + (f"/{self.total:,}" if self.total else "")
                 + f" {self.unit}s"]
        if self.total:
            parts[0] += f" ({100 * self.n / self.total:.0f}%)"
        parts.append(f"{_clock(elapsed)} elapsed")
        if self.total and 0 < self.n < self.total:
            parts.append(f"ETA {_clock(elapsed / self.n * (self.total - self.n))}")
        if self.postfix:
            parts.append(self.postfix)
        return ", ".join(parts)

    def _emit(self) -> None:
        if not self.disable:
            print(self.line(), file=self.file, flush=True)
        self.last = time.monotonic()
        self._shown = self.n

    def update(self, n: int = 1) -> None:
        self.n += n
        if time.monotonic() - self.last >= self.interval:
            self._emit()

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.postfix = text

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            shown_before = self._shown >= 0
            if (self.n or self.total) and self._shown != self.n and (self.leave or shown_before):
                self._emit()

    def __iter__(self) -> Iterator[Any]:
        assert self.iterable is not None
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress(iterable: Iterable[Any] | None = None, desc: str = "", *, total: int | None = None,
             unit: str = "it", file: TextIO | None = None, leave: bool = True) -> Any:
    """A progress bar with ETA (tqdm on a terminal, `LineProgress` otherwise)."""
    out = file or sys.stderr
    disable = os.environ.get("HHX_PROGRESS", "1") == "0"
    if not disable and getattr(out, "isatty", lambda: False)():
        from tqdm.auto import tqdm

        return tqdm(iterable, desc=desc, total=total, unit=unit, file=out, leave=leave,
                    dynamic_ncols=True)
    interval = float(os.environ.get("HHX_PROGRESS_INTERVAL", "30"))
    return LineProgress(iterable, desc=desc, total=total, unit=unit, interval=interval,
                        file=out, disable=disable, leave=leave)
