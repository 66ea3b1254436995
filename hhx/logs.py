"""A quiet console, a complete log: what hhx's logging sends where.

By default the console shows hhx's own progress lines and results (its loggers at INFO and up,
as the bare message) and every library's warnings and errors; libraries' INFO chatter (MLflow's
table creation, matplotlib's font cache, Hydra's internals) and hhx's own detail (its DEBUG lines:
per-survey row counts, screening thresholds) go only to the run's log file (`app.log` in the run
folder, every line with its time, logger and level). `hhx -v` (or `HHX_VERBOSE=1`, which sweep
jobs inherit) shows everything on the console too, in the log file's format.

Hydra installs this through conf/hydra/job_logging/hhx.yaml and conf/hydra/hydra_logging/hhx.yaml;
`c_stderr_to_log` does the same for what C libraries (llama.cpp) print straight to file
descriptor 2.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import tempfile
from collections.abc import Iterator

VERBOSE_ENV = "HHX_VERBOSE"
VERBOSE_FLAGS = ("-v", "--verbose")
# Loggers whose lines are hhx's own (Hydra's launch lines are the sweep's progress).
OWN = ("hhx", "hydra", "hydra_plugins", "__main__")
FILE_FORMAT = "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENV, "") not in ("", "0", "false")


def take_verbose_flag(args: list[str]) -> list[str]:
    """`-v` / `--verbose` removed from the command line (Hydra has no such flag) and recorded in
    the environment, so jobs in other processes (joblib, submitit) are verbose too."""
    if any(a in VERBOSE_FLAGS for a in args):
        os.environ[VERBOSE_ENV] = "1"
    return [a for a in args if a not in VERBOSE_FLAGS]


def _own(name: str) -> bool:
    return any(name == o or name.startswith(o + ".") for o in OWN)


class ConsoleFilter(logging.Filter):
    """Passes hhx's INFO and up and everyone's WARNING and up, except the warnings of `quiet`
    loggers (messages that need no action, e.g. matplotlib's "building the font cache");
    everything when verbose."""

    def __init__(self, quiet: list[str] | None = None) -> None:
        super().__init__()
        self.quiet = tuple(quiet or ())
        self.verbose = verbose()

    def filter(self, record: logging.LogRecord) -> bool:
        if self.verbose:
            return True
        name = record.name
        if any(name == q or name.startswith(q + ".") for q in self.quiet):
            return record.levelno >= logging.ERROR
        if record.levelno >= logging.WARNING:
            return True
        return record.levelno >= logging.INFO and _own(name)


class ConsoleFormatter(logging.Formatter):
    """hhx's INFO lines as the bare message, warnings with their level (and the library's
    name); verbose: the log file's full format."""

    def __init__(self) -> None:
        super().__init__(FILE_FORMAT)
        self.verbose = verbose()

    def format(self, record: logging.LogRecord) -> str:
        if self.verbose:
            return super().format(record)
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        if record.levelno < logging.WARNING:
            return text
        level = record.levelname.lower()
        return f"{level}: {text}" if _own(record.name) else f"{level} ({record.name}): {text}"


@contextlib.contextmanager
def c_stderr_to_log(logger: str) -> Iterator[None]:
    """What a C library prints to stderr inside the block, straight to file descriptor 2 or
    through Python's `sys.stderr` (llama-cpp-python's log callback), goes to `logger` at INFO
    (the log file) instead of the console; if the block raises, it is written back to the
    console as it was (it may say why). Verbose, or with no usable descriptor 2: a no-op."""
    if verbose():
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    python_level = io.StringIO()
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        failed = True
        try:
            with contextlib.redirect_stderr(python_level):
                yield
            failed = False
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            text = capture.read().decode("utf-8", "replace") + python_level.getvalue()
            if failed:
                sys.stderr.write(text)
                sys.stderr.flush()
            else:
                for line in text.splitlines():
                    if line.strip():
                        logging.getLogger(logger).info(line)
