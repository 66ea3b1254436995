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


class Interrupted(HhxError):
    """The user pressed Ctrl-C: what is kept and how to resume, in one line."""

    exit_code = 130
    exit_now = True
