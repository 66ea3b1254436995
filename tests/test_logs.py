"""hhx/logs.py: what reaches the console by default, with -v, and C-level stderr into the log."""

from __future__ import annotations

import logging
import os

import pytest

from hhx import logs


def record(name: str, level: int, msg: str = "m") -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, None, None)


def test_the_console_shows_hhx_progress_and_every_warning_but_no_library_chatter(monkeypatch):
    monkeypatch.delenv(logs.VERBOSE_ENV, raising=False)
    shown = logs.ConsoleFilter(quiet=["matplotlib.font_manager"]).filter
    assert shown(record("hhx.stages.evaluate", logging.INFO))
    assert shown(record("hydra._internal.core_plugins.basic_launcher", logging.INFO))
    assert not shown(record("hhx.tasks.sources", logging.DEBUG))  # hhx's detail: the log only
    for library in ("mlflow.store.db.utils", "alembic.runtime.migration", "llama.cpp",
                    "matplotlib.font_manager", "hhxtra"):
        assert not shown(record(library, logging.INFO)), library
    assert shown(record("mlflow.tracking", logging.WARNING))
    assert not shown(record("matplotlib.font_manager", logging.WARNING))  # asks nothing
    assert shown(record("matplotlib.font_manager", logging.ERROR))
    fmt = logs.ConsoleFormatter()
    assert fmt.format(record("hhx.stages.evaluate", logging.INFO, "evaluating 5")) == "evaluating 5"
    assert fmt.format(record("hhx.x", logging.WARNING, "w")) == "warning: w"
    assert fmt.format(record("mlflow.x", logging.ERROR, "e")) == "error (mlflow.x): e"


def test_verbose_shows_everything_in_the_log_format(monkeypatch):
    monkeypatch.delenv(logs.VERBOSE_ENV, raising=False)  # restored after the test
    args = logs.take_verbose_flag(["task=a", "-v", "model=b"])
    assert args == ["task=a", "model=b"] and os.environ[logs.VERBOSE_ENV] == "1"
    assert logs.ConsoleFilter().filter(record("alembic.runtime.migration", logging.INFO))
    line = logs.ConsoleFormatter().format(record("alembic.runtime.migration", logging.INFO, "x"))
    assert line.endswith("[alembic.runtime.migration][INFO] - x")
    monkeypatch.setenv(logs.VERBOSE_ENV, "0")
    assert logs.take_verbose_flag(["task=a"]) == ["task=a"] and not logs.verbose()


def test_c_level_stderr_goes_to_the_log_and_back_to_the_console_on_failure(
        monkeypatch, capfd, caplog):
    monkeypatch.delenv(logs.VERBOSE_ENV, raising=False)
    caplog.set_level("INFO", logger="c.lib")
    with logs.c_stderr_to_log("c.lib"):
        os.write(2, b"tensor 1 of 2\n\ntensor 2 of 2\n")  # as C code does, below Python
    assert [r.getMessage() for r in caplog.records] == ["tensor 1 of 2", "tensor 2 of 2"]
    assert capfd.readouterr().err == ""
    caplog.clear()
    with pytest.raises(RuntimeError), logs.c_stderr_to_log("c.lib"):
        os.write(2, b"cannot open the file\n")
        raise RuntimeError("load failed")
    assert capfd.readouterr().err == "cannot open the file\n"  # the reason stays visible
    assert caplog.records == []
    os.write(2, b"after\n")  # descriptor 2 is the console again
    assert capfd.readouterr().err == "after\n"
