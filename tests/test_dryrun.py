"""`--multirun ... +dry_run=true` prices the grid before any job starts: nothing is built (no
demo data), nothing is written (no sweep or run folder, no MLflow store), and the table says
where each cell's sizes came from (the release catalog, or the data's own files when there)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hhx.bench.catalog import catalog

REPO = Path(__file__).resolve().parents[1]


def dry(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MLFLOW_TRACKING_URI", None)  # the store would go under paths.root
    return subprocess.run([sys.executable, "-m", "hhx", "--multirun", *args, "+dry_run=true",
                           f"paths.root={tmp_path}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def test_a_dry_run_builds_nothing_writes_nothing_and_prices_every_cell(tmp_path):
    proc = dry(tmp_path, "task=cons_sce_growth,labor_cps_jobfind", "model=gpt_5,no_change")
    assert proc.returncode == 0, proc.stderr
    assert list(tmp_path.iterdir()) == []  # no data/, outputs/, multirun/, mlflow.db
    lines = proc.stdout.splitlines()[1:]  # after "dry run: pricing 4 cells ..."
    assert lines[0].startswith("sweep dry run: 4 cells; would send 400 requests")
    rows = [line.split() for line in lines[2:6]]
    assert {(r[1], r[2]) for r in rows} == {(t, m) for t in ("cons_sce_growth", "labor_cps_jobfind")
                                            for m in ("gpt_5", "no_change")}
    assert all(r[3] == "200" and r[-2] == "catalog" for r in rows)  # the release's 200 rows
    assert "nothing was built, written or sent" in lines[-1]


def test_a_dry_run_reads_the_sizes_of_an_eval_sample_on_disk(tmp_path):
    sample = tmp_path / "sample"
    (sample / "pre_cutoff").mkdir(parents=True)
    record = {"id": "1", "time": "2020-01-01", "release_date": "2020-02-01", "system": "s" * 84,
              "user": "u" * 368, "assistant": "[1.0]", "naive_baseline": "[0.0]"}
    (sample / "pre_cutoff" / "cons_sce_growth.jsonl").write_text(
        "".join(json.dumps({**record, "id": str(i)}) + "\n" for i in range(7)))
    proc = dry(tmp_path, "task=cons_sce_growth", "model=gpt_5,qwen35_4b", "data=official",
               f"data.root={sample}", "data.layout=eval_sample", "data.split=pre_cutoff",
               "data.max_examples=200")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample"]
    rows = [line.split() for line in proc.stdout.splitlines()[3:5]]
    # 7 prompts of 84 + 368 characters and two messages' overhead, ~4 characters a token
    assert all(r[3] == "7" and r[6] == str(int(7 * (84 + 368 + 32) / 4)) for r in rows), rows
    assert all(r[-2] == "files" for r in rows)  # "data files"
    assert catalog()["cons_sce_growth"].test_pre == 200  # the catalog would have said 200
