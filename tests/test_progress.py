"""Progress off a terminal (captured stderr is not a tty): a task build and the leaderboard's
paired bootstrap print plain lines with counts and an ETA; HHX_PROGRESS=0 silences them."""

from __future__ import annotations

import re
import sys
import types

import pytest

from hhx.leaderboard import stage
from hhx.progress import progress
from hhx.tasks import build
from tests.leaderboard.test_leaderboard_stage import _cat_task, _cfg, _numeric_task, write_runs
from tests.tasks.test_task_build import BUILDER_SOURCE, context, numeric_task


@pytest.fixture
def every_update(monkeypatch):
    """A line at every update (the interval is 30 s by default)."""
    monkeypatch.setenv("HHX_PROGRESS_INTERVAL", "0")
    monkeypatch.delenv("HHX_PROGRESS", raising=False)


@pytest.fixture
def builder(monkeypatch) -> str:
    module = types.ModuleType("hhx_test_progress_builder")
    exec(compile(BUILDER_SOURCE, module.__name__, "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module.__name__


def test_a_task_build_prints_its_steps_and_prompt_rows(builder, tmp_path, capsys, every_update,
                                                       monkeypatch):
    monkeypatch.setattr(build, "RENDER_CHUNK_ROWS", 50)  # 180 rows: 4 chunks
    task = numeric_task(builder)
    build.build_task(context(task, tmp_path), tmp_path / "hb", synthetic=True)
    lines = capsys.readouterr().err.splitlines()
    steps = [ln for ln in lines if ln.startswith("task toy_cons build: ")]
    assert [re.search(r"build: (\d)/5 steps", ln).group(1) for ln in steps] == list("12345")
    assert "ETA" in steps[0] and steps[0].endswith(", splits")
    assert [ln.rsplit(", ", 1)[1] for ln in steps[1:4]] == ["prompts", "release files",
                                                            "eval sample"]
    assert "(100%)" in steps[-1] and "ETA" not in steps[-1]
    rows = [ln for ln in lines if ln.startswith("task toy_cons prompts: ")]
    assert [ln.split(": ")[1].split(" rows")[0] for ln in rows] == ["45/180", "90/180",
                                                                    "135/180", "180/180"]
    assert "ETA" in rows[0]


def test_a_short_inner_bar_adds_no_closing_line_and_zero_silences(capsys, monkeypatch):
    monkeypatch.delenv("HHX_PROGRESS_INTERVAL", raising=False)  # 30 s: no interval line
    with progress(total=3, desc="inner", unit="row", leave=False) as bar:
        bar.update(3)
    with progress(total=3, desc="outer", unit="step") as bar:
        bar.update(3)
    assert capsys.readouterr().err.splitlines() == [
        "outer: 3/3 steps (100%), 0:00 elapsed"]
    monkeypatch.setenv("HHX_PROGRESS", "0")
    monkeypatch.setenv("HHX_PROGRESS_INTERVAL", "0")
    with progress(total=3, desc="outer", unit="step") as bar:
        bar.update(3)
    assert capsys.readouterr().err == ""


def test_the_leaderboard_bootstrap_prints_resamples_with_an_eta(tmp_path, capsys, every_update,
                                                                 monkeypatch):
    monkeypatch.setattr(stage, "write_figures", lambda lb, out: ({}, {}))
    tasks = [_numeric_task(), _cat_task()]
    write_runs(tmp_path / "runs", tasks)
    stage.run(_cfg(tmp_path, runs_dir=str(tmp_path / "runs"), n_resamples=2500),
              task_configs={t.name: t for t in tasks})
    lines = [ln for ln in capsys.readouterr().err.splitlines()
             if ln.startswith("paired bootstrap: ")]
    counts = [re.search(r": ([\d,]+)/5,000 resamples", ln).group(1) for ln in lines]
    # Chunks of 1,000 resamples per task (1,000, 1,000, 500), two tasks.
    assert counts == ["1,000", "2,000", "2,500", "3,500", "4,500", "5,000"]
    assert "ETA" in lines[0] and "(100%)" in lines[-1]
    shown = [ln.rsplit(", ", 1)[1] for ln in lines]  # the postfix: the task being resampled
    assert shown[:3] == [shown[0]] * 3 and shown[3:] == [shown[3]] * 3
    assert {shown[0], shown[3]} == {t.name for t in tasks}
