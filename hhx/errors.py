"""User-facing errors: one line that names the file, column, task or setting and the fix."""

from __future__ import annotations


class HhxError(Exception):
    """An error caused by input or configuration; printed as one line, without a traceback."""

    exit_code = 2
    exit_now = False  # True: the app exits without interpreter teardown (Ctrl-C)


class ConfigError(HhxError):
    """A setting is missing, misspelt or inconsistent."""


class DataError(HhxError):
    """An input file is missing, malformed or lacks a required column or code."""


class PredictorError(HhxError):
    """A predictor cannot run (bad credentials, unreachable server, missing weights...)."""


class NotSupportedError(HhxError, NotImplementedError):
    """Asked of hhx but not (yet) something it does; the line says what to do instead."""


class Interrupted(HhxError):
    """The user pressed Ctrl-C: what is kept and how to resume, in one line."""

    exit_code = 130
    exit_now = True


_OS_FIXES = {
    "ENOSPC": "the disk is full: free space there (or point paths.root / data.root elsewhere) "
              "and rerun; nothing half-written was kept",
    "EDQUOT": "the disk quota is exhausted: free space and rerun; nothing half-written was kept",
    "EACCES": "permission denied: choose a folder you can write (paths.root=...) or fix its "
              "permissions",
    "EROFS": "the file system is read-only: choose a writable folder (paths.root=...)",
}


def os_error_line(exc: OSError) -> str:
    """An OS error as one line: the path, what happened, the fix."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    path = exc.filename or ""
    if exc.filename2:
        path = f"{path} -> {exc.filename2}"
    what = exc.strerror or str(exc)
    fix = _OS_FIXES.get(name, "")
    parts = [p for p in (str(path), f"{what}" + (f" ({name})" if name else ""), fix) if p]
    return ": ".join(parts)
