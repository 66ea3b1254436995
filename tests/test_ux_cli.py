"""The command line as a user meets it: a quick `--help`, one-line errors, no run folder for runs
that produced nothing, OS errors (a full disk) as one line naming the path."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hhx import io as hio
from hhx.errors import os_error_line

REPO = Path(__file__).resolve().parents[1]


def hhx(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "PYTHONPATH": str(REPO)}
    env.pop("HHX_ROOT", None)
    return subprocess.run([sys.executable, "-m", "hhx", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_help_lists_stages_groups_and_examples_without_heavy_imports():
    code = ("import sys; sys.argv = ['hhx', '--help']; from hhx.app import main; main(); "
            "heavy = [m for m in ('hydra', 'mlflow', 'xgboost', 'pandas') if m in sys.modules]; "
            "print('HEAVY', heavy)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for stage in ("evaluate", "build", "score", "describe", "list", "leaderboard"):
        assert f"\n  {stage} " in out
    for group in ("task", "model", "data", "tracking", "aggregation", "paths"):
        assert f"\n  {group} " in out
    assert "Examples:" in out and "hhx stage=list" in out and "-sc install=bash" in out
    assert "HEAVY []" in out


@pytest.mark.slow
def test_misspelt_key_is_one_line_and_leaves_no_run_folder(tmp_path):
    proc = hhx(tmp_path, "stage=describe", "+data.maxexamples=10", "tracking=none")
    assert proc.returncode == 2
    errors = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert errors == ["hhx: error: unknown setting data.maxexamples; did you mean "
                      "data.max_examples?"]
    ok = hhx(tmp_path, "stage=describe", "tracking=none", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["name"] == "labor_cps_jobfind"
    assert not (tmp_path / "outputs").exists()  # neither run produced anything


def full_disk(monkeypatch):
    def replace(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device", str(src))

    monkeypatch.setattr(hio.os, "replace", replace)


def test_a_full_disk_names_the_file_and_leaves_nothing_half_written(tmp_path, monkeypatch):
    full_disk(monkeypatch)
    target = tmp_path / "result" / "x.json"
    with pytest.raises(OSError) as info:
        hio.write_json_atomic(target, {"a": 1})
    line = os_error_line(info.value)
    assert line.startswith(f"{target}: No space left on device (ENOSPC): the disk is full")
    assert "\n" not in line
    assert list((tmp_path / "result").iterdir()) == []  # no target, no temporary file


def test_app_turns_a_full_disk_into_one_line(tmp_path, monkeypatch, capsys):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from hhx.app import _job
    from hhx.paths import conf_dir
    from hhx.predictors.base import register_schemas

    row = {"id": "1", "time": "2020-01", "release_date": "2020-02-01", "system": "s",
           "user": "u", "assistant": '["employed"]', "naive_baseline": '["employed"]'}
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps(row) + "\n")
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"id": "1", "time": "2020-01", "prediction": ["employed"]}) + "\n")
    out = tmp_path / "scored" / "result.json"
    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(str(conf_dir()), version_base="1.3"):
        cfg = compose("config", overrides=[
            "stage=score", f"score.gold={gold}", f"score.predictions={preds}",
            f"score.output={out}", "tracking=none"])
    full_disk(monkeypatch)
    with pytest.raises(SystemExit) as info:
        _job(cfg)
    assert info.value.code == 1
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith(f"hhx: error: {out}: No space left on device")
    assert not out.exists() and list(out.parent.iterdir()) == []
