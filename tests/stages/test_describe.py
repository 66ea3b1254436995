"""`stage=describe`: the task in words (definition, target, official metric with its definition
and direction, no-change rule, splits and sizes, the rows evaluate scores, an example prompt and
its gold answer from the task's files), what to run when the files are not there, and `--json`
for the machine-readable form."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from hhx.config import TaskConfig
from hhx.scoring.metric_names import official
from hhx.stages import describe as stage
from hhx.tasks.registry import load_task

REPO = Path(__file__).resolve().parents[2]
TASK = "labor_cps_jobfind"
SIDECAR = ["id", "time", "release_date", "split", "split_quarter", "within_period_order",
           "split_position"]
ROWS = [  # (id, split, split_position): the file order is not the split's order
    ("a", "train", 0), ("b", "pre_cutoff_test", 7), ("c", "validation", 0),
    ("d", "pre_cutoff_test", 3), ("e", "train", 1),
]


def _record(key: str) -> dict[str, str]:
    return {"id": key, "time": "2020-01-01", "release_date": "2020-02-18",
            "system": "You are a person.", "user": f"Question for {key}?\n\nReturn JSON.",
            "assistant": json.dumps(["employed" if key == "d" else "unemployed"]),
            "naive_baseline": '["unemployed"]'}


def _release(root: Path) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "splits").mkdir()
    with (root / "prompts" / f"{TASK}.jsonl").open("w") as fh:
        for key, _, _ in ROWS:
            fh.write(json.dumps(_record(key)) + "\n")
    with (root / "splits" / f"{TASK}.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(SIDECAR)
        for key, split, pos in ROWS:
            w.writerow([key, "2020-01-01", "2020-02-18", split, "2020Q1", pos, pos])
    return root


def _cfg(root: Path | None, task: TaskConfig, **data) -> object:
    settings = {"source": "demo", "layout": "release", "split": "pre_cutoff_test",
                "max_examples": 200, **data}
    if root is not None:
        settings["root"] = str(root)
    return OmegaConf.create({"task": OmegaConf.structured(task), "data": settings})


def _text(cfg, task) -> str:
    return stage.describe_text(task, stage.release(cfg, task))


def test_built_release_in_words(tmp_path):
    task = load_task(TASK)
    text = _text(_cfg(_release(tmp_path / "hb"), task), task)
    metric = official("categorical")
    assert text.startswith(f"{TASK}: {task.topic} · baseline prediction")
    assert f"official metric: {metric.name} (higher is better)" in text
    assert metric.definition.split()[0] in text and "also reported: mean accuracy" in text
    assert "labor_force_status: one of employed, unemployed, not_in_labor_force" in text
    assert "no-change rule" in text and task.naive_baseline in text
    assert "rows: 5 = train 2 + validation 1 + pre_cutoff_test 2" in text
    assert "scores the first 200 rows of pre_cutoff_test by split_position" in text
    # the example is the split's first row by split_position (d, position 3), with its answers
    assert "id d, time 2020-01-01" in text and "Question for d?" in text
    assert 'gold answer: ["employed"]' in text and 'no-change answer: ["unemployed"]' in text
    assert "{" not in text  # no raw JSON


def test_not_built_says_how_to_build(tmp_path):
    task = load_task(TASK)
    text = _text(_cfg(tmp_path / "nothing", task), task)
    assert "not available here: no prompts/labor_cps_jobfind.jsonl under" in text
    assert f"    python -m hhx stage=build task={TASK}" in text.splitlines()
    raw = _text(_cfg(tmp_path / "nothing", task, source="raw"), task)
    assert f"    python -m hhx stage=build task={TASK} data=raw" in raw.splitlines()
    unset = _text(_cfg(None, task, source="official"), task)
    assert "data.root is not set" in unset and "data=official data.root=<download>" in unset


def test_eval_sample_layout(tmp_path):
    task = load_task(TASK)
    for cell, keys in (("pre_cutoff", "xyz"), ("post_cutoff", "uv")):
        (tmp_path / cell).mkdir()
        (tmp_path / cell / f"{TASK}.jsonl").write_text(
            "".join(json.dumps(_record(k)) + "\n" for k in keys))
    text = _text(_cfg(tmp_path, task, layout="eval_sample", split="post_cutoff"), task)
    assert "rows: 5 = pre_cutoff 3 + post_cutoff 2" in text
    assert "first row of post_cutoff/labor_cps_jobfind.jsonl: id u" in text


@pytest.mark.slow
def test_command_prints_text_and_json_with_the_flag(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "HHX_ROOT": str(tmp_path)}
    env.pop(stage.JSON_ENV, None)
    base = [sys.executable, "-m", "hhx", "stage=describe", f"task={TASK}", "tracking=none"]
    text = subprocess.run(base, env=env, capture_output=True, text=True, timeout=300)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"{TASK}: ") and "official metric: mean macro-F1" in text.stdout
    machine = subprocess.run([*base, "--json"], env=env, capture_output=True, text=True,
                             timeout=300)
    assert machine.returncode == 0, machine.stderr
    info = json.loads(machine.stdout)
    assert info["name"] == TASK and info["official_metrics"] == ["macro_f1", "accuracy"]
    assert not (tmp_path / "outputs").exists()  # describe leaves no run folder
