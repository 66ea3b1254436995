"""The release as the official pipeline writes it: integer columns, manifests, split_config.toml,
READY.json, the eval sample's manifest, reading both the official and hhx's older forms, and
hand-written official tables of three real tasks loaded as `data=official` and scored."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.bench import layout as lay
from hhx.bench import manifests as mf
from hhx.bench.evalsample import eval_sample_root, export_sft, select_eval_sample
from hhx.errors import DataError
from hhx.scoring import score_task
from hhx.tasks.registry import load_task
from tests.bench.test_layout import toy_release, toy_task

READY_KEYS = {
    "created_at", "task_count", "total_records", "cutoff_date", "seed", "python_version",
    "split_config_sha256", "task_registry_sha256", "sampling_rules_sha256",
    "table_schema_sha256", "fallback_tasks", "build_status", "prompt_key_check",
}
ROW_SPLIT_TASKS = ["cons_cex_rebate01", "cons_cex_stimulus08", "house_census_move",
                   "house_sce_financing", "house_sce_lockin"]


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture
def release(tmp_path: Path):
    task = toy_task()
    root = tmp_path / "householdbench"
    return root, task, toy_release(root, task)


# --------------------------------------------------------------------------------------------
# Integer columns


def test_integer_valued_columns_are_written_as_integers_and_both_forms_read(tmp_path):
    task = toy_task()
    table = pd.DataFrame({
        "id": ["a", "b"], "time": ["2020-01-01", "2020-01-01"],
        "release_date": ["2020-02-01", "2020-02-01"], "target": ["employed", "unemployed"],
        "age": [34.0, 25.0], "region": ["South", "West"]})
    assert lay.coerce_table(table, task)["age"].dtype == "Int64"
    path = tmp_path / "t.csv"
    lay.coerce_table(table, task).to_csv(path, index=False)
    assert [r["age"] for r in csv_rows(path)] == ["34", "25"]
    # a float column with a gap stays float (as a frame of Python ints with a None would)
    gap = table.assign(age=[34.0, np.nan])
    lay.coerce_table(gap, task).to_csv(path, index=False)
    assert [r["age"] for r in csv_rows(path)] == ["34.0", ""]
    # an integer dtype is written as integers, gaps empty; float_columns forces floats
    lay.coerce_table(table.assign(age=pd.array([34, None], dtype="Int64")), task).to_csv(
        path, index=False)
    assert [r["age"] for r in csv_rows(path)] == ["34", ""]
    lay.coerce_table(table, task, float_columns=["age"]).to_csv(path, index=False)
    assert [r["age"] for r in csv_rows(path)] == ["34.0", "25.0"]
    with pytest.raises(DataError, match="float_columns"):
        lay.coerce_table(table, task, float_columns=["region"])
    # reading accepts both, and gives what the official reader gets
    path.write_text("id,time,release_date,target,age,region\n"
                    "a,2020-01-01,2020-02-01,employed,34,South\n"
                    "b,2020-01-01,2020-02-01,unemployed,5.1049999999999995,West\n"
                    "c,2020-01-01,2020-02-01,unemployed,25.0,West\n", encoding="utf-8")
    read = lay.read_table(path, task)
    assert read["age"].tolist() == [34.0, 5.105, 25.0]


def test_published_table_has_integers_and_the_reread_values_of_floats(release):
    root, task, made = release
    text = (root / "tabular" / f"{task.name}.csv").read_text()
    ages = [r["age"] for r in csv_rows(root / "tabular" / f"{task.name}.csv")]
    assert "" in ages and all(a == "" or a.endswith(".0") for a in ages)  # gaps: float column
    assert text.startswith("id,time,release_date,target,age,region\n")


# --------------------------------------------------------------------------------------------
# Manifests, split_config.toml, READY.json


def test_manifests_hold_official_project_paths(release):
    root, task, _ = release
    row = csv_rows(root / "manifest.csv")[0]
    assert row["prompt_file"] == f"data/householdbench/prompts/{task.name}.jsonl"
    assert row["tabular_file"] == f"data/householdbench/tabular/{task.name}.csv"
    assert row["split_file"] == f"data/householdbench/splits/{task.name}.csv"
    receipt = csv_rows(root / "splits" / "manifest.csv")[0]
    assert receipt["sidecar_file"] == f"data/householdbench/splits/{task.name}.csv"
    assert receipt["fallback_used"] == "False"
    assert receipt["prompt_key_check"] == "exact_full_jsonl_key_reconciliation"


def test_split_config_and_ready_are_the_official_files(release):
    root, task, made = release
    text = (root / "splits" / "split_config.toml").read_text()
    expected = "\n".join([
        "# Generated from scripts/utils/sampling.py and scripts/2_tasks/task_registry.json.",
        'cutoff_date = "2026-01-31"', "seed = 42", "train_share = 0.8", "validation_share = 0.1",
        "pre_cutoff_test_share = 0.1", "minimum_validation_fallback_rows = 100",
        "minimum_pre_cutoff_test_fallback_rows = 100", "historical_export_cap = 500000",
        "historical_train_budget = 400000", "historical_validation_budget = 50000",
        "historical_pre_cutoff_test_budget = 50000",
        "row_fallback_tasks = " + json.dumps(ROW_SPLIT_TASKS),
        "", f"[tasks.{task.name}]", 'order = "time_typed_id_id"', "typed_id_components = []",
    ]) + "\n"
    assert text == expected
    raw = (root / "splits" / "READY.json").read_text()
    ready = json.loads(raw)
    assert set(ready) == READY_KEYS
    assert raw == json.dumps(ready, indent=2, sort_keys=True) + "\n"
    assert ready["fallback_tasks"] == ROW_SPLIT_TASKS and ready["build_status"] == "complete"
    assert ready["split_config_sha256"] == mf.sha256_file(root / "splits" / "split_config.toml")
    assert ready["total_records"] == int(made["sidecar"]["exported"].sum())
    assert ready["created_at"].endswith("+00:00")


def test_a_second_task_keeps_name_order_in_every_manifest(release):
    root, task, _ = release
    toy_release(root, toy_task("toy_a"))
    assert [r["task_id"] for r in csv_rows(root / "manifest.csv")] == ["toy_a", task.name]
    assert [r["task_id"] for r in csv_rows(root / "splits" / "manifest.csv")] == [
        "toy_a", task.name]
    text = (root / "splits" / "split_config.toml").read_text()
    assert text.index("[tasks.toy_a]") < text.index(f"[tasks.{task.name}]")
    assert json.loads((root / "splits" / "READY.json").read_text())["task_count"] == 2


def test_split_config_lists_a_typed_id_component():
    registry = [load_task("cons_psid_wealth"), load_task("labor_cps_jobfind")]
    orderings = {t.name: mf.task_ordering(t) for t in registry}
    text = mf.split_config_text(orderings, "2026-01-31", 42, registry)
    assert '[tasks.cons_psid_wealth]\norder = "time_typed_id_id"\n' \
        'typed_id_components = ["id:integer"]\n' in text
    assert 'row_fallback_tasks = []' in text  # from the registry given


def test_reading_accepts_hhx_s_older_relative_paths(release, tmp_path):
    root, task, _ = release
    for name, cols in (("manifest.csv", ["prompt_file", "tabular_file", "split_file"]),
                       ("splits/manifest.csv", ["sidecar_file"])):
        frame = pd.read_csv(root / name, dtype=str, keep_default_na=False)
        for col in cols:
            frame[col] = frame[col].str.removeprefix("data/householdbench/")
        frame.to_csv(root / name, index=False)
    assert csv_rows(root / "manifest.csv")[0]["prompt_file"] == f"prompts/{task.name}.jsonl"
    sample = select_eval_sample(root, tmp_path / "sample", rows_per_task=20)
    assert set(sample["source_prompt_file"]) == {
        f"data/householdbench/prompts/{task.name}.jsonl"}
    assert export_sft(root, tmp_path / "sft.jsonl", [task.name], n=5)["rows"].tolist() == [5]
    # the next publication rewrites the older rows in the official form
    toy_release(root, toy_task("toy_b"))
    assert all(r["prompt_file"].startswith("data/householdbench/prompts/")
               for r in csv_rows(root / "manifest.csv"))


def test_manifest_paths_resolve_inside_the_release(tmp_path):
    assert mf.resolve(tmp_path, "data/householdbench/prompts/x.jsonl") == (
        tmp_path / "prompts" / "x.jsonl")
    assert mf.resolve(tmp_path, "prompts/x.jsonl") == tmp_path / "prompts" / "x.jsonl"
    for bad in ("", "/etc/passwd", "data/householdbench/../../x"):
        with pytest.raises(DataError, match="not a file inside"):
            mf.resolve(tmp_path, bad)


# --------------------------------------------------------------------------------------------
# Eval sample


def test_eval_sample_manifest_is_the_official_one(release, tmp_path):
    root, task, _ = release
    out = tmp_path / "householdbench_evalsample"
    select_eval_sample(root, out, rows_per_task=20)
    rows = csv_rows(out / "manifest.csv")
    assert [(r["split"], r["rows"]) for r in rows] == [("pre_cutoff", "20"), ("post_cutoff", "20")]
    for r in rows:
        assert r["source_prompt_file"] == f"data/householdbench/prompts/{task.name}.jsonl"
        assert r["source_split_file"] == f"data/householdbench/splits/{task.name}.csv"
        assert r["prompt_file"] == (
            f"data/householdbench_evalsample/{r['split']}/{task.name}.jsonl")
    assert eval_sample_root(root) == root.parent / "householdbench_evalsample"


def test_update_mode_replaces_one_task_and_keeps_the_others(release, tmp_path):
    root, task, _ = release
    toy_release(root, toy_task("toy_a"))
    out = tmp_path / "sample"
    select_eval_sample(root, out, rows_per_task=20)
    before = (out / "manifest.csv").read_text()
    # re-selecting one task rewrites only its rows and cells, byte for byte the same here
    select_eval_sample(root, out, ["toy_a"], rows_per_task=20, update=True)
    assert (out / "manifest.csv").read_text() == before  # same inputs, same bytes
    (out / "post_cutoff" / "toy_a.jsonl").unlink()  # a cell lost: the update restores it
    select_eval_sample(root, out, ["toy_a"], rows_per_task=20, update=True)
    assert (out / "post_cutoff" / "toy_a.jsonl").is_file()
    with pytest.raises(DataError, match="stale"):  # the official mode refuses foreign files
        (out / "pre_cutoff" / "zzz.jsonl").write_text("{}\n")
        select_eval_sample(root, out, rows_per_task=20)


# --------------------------------------------------------------------------------------------
# Hand-written official tables of three real tasks


def _official_release(root: Path, name: str, n: int = 12) -> None:
    """Write one task's files by hand as the official release holds them (no hhx writer)."""
    task = load_task(name)
    cols = lay.table_columns(task)
    text_cols = set(lay.text_columns(task))
    rng = np.random.default_rng(len(name))
    lines, records = [",".join(cols)], []
    for i in range(n):
        time, release = f"2024-{1 + i % 12:02d}-01", f"2024-{1 + i % 12:02d}-28"
        values = {"id": f"r{i}", "time": time, "release_date": release}
        for col in cols[3:]:
            if col in task.targets and task.target_type.value == "categorical":
                values[col] = task.fields[0].labels[i % len(task.fields[0].labels)]
            elif col in text_cols:
                values[col] = "South" if i % 2 else "West"
            elif col in task.targets:
                values[col] = str(int(rng.integers(0, 100)))  # an integer target: "37"
            else:
                values[col] = "5.1049999999999995" if i % 3 == 0 else str(int(rng.integers(1, 90)))
        lines.append(",".join(values[c] for c in cols))
        if task.target_type.value == "categorical":
            answer = [values[c] for c in task.targets]
            naive = [task.fields[0].labels[0]]
        elif task.target_type.value == "numeric":
            answer = [int(values[c]) for c in task.targets]
            naive = [0] * len(answer)
        else:
            p = int(values[task.targets[0]]) / 100
            answer, naive = [[1 - p, p]], [[0.5, 0.5]]
        records.append({"id": values["id"], "time": time, "release_date": release,
                        "system": "You are an American adult.", "user": f"Question {i}.",
                        "assistant": json.dumps(answer), "naive_baseline": json.dumps(naive)})
    (root / "tabular").mkdir(parents=True, exist_ok=True)
    (root / "prompts").mkdir(exist_ok=True)
    (root / "splits").mkdir(exist_ok=True)
    (root / "tabular" / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "prompts" / f"{name}.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=True) + "\n" for r in records), encoding="utf-8")
    sidecar = ["id,time,release_date,split,split_quarter,within_period_order,split_position"]
    quarter_rank: dict[str, int] = {}
    for i, r in enumerate(records):
        q = f"2024Q{(int(r['time'][5:7]) - 1) // 3 + 1}"
        quarter_rank[q] = quarter_rank.get(q, 0) + 1
        sidecar.append(f"{r['id']},{r['time']},{r['release_date']},pre_cutoff_test,{q},"
                       f"{quarter_rank[q]},{i + 1}")
    (root / "splits" / f"{name}.csv").write_text("\n".join(sidecar) + "\n", encoding="utf-8")


@pytest.mark.parametrize("name", ["labor_cps_jobfind", "cons_sce_growth", "house_sce_move"])
def test_hand_written_official_tables_load_as_data_official_and_score(tmp_path, name):
    root = tmp_path / "download"
    _official_release(root, name)
    bench = lay.load_bench_task(root, load_task(name), source="official")
    task = bench.spec
    numeric = [c for c in lay.table_columns(task) if c not in lay.text_columns(task)]
    assert all(bench.table[c].dtype == "float64" for c in numeric)
    shown = bench.table[numeric[-1]].tolist()
    assert 5.105 in shown and 5.1049999999999995 not in shown  # the official reader's values
    examples = bench.eval_examples("pre_cutoff_test", None)
    gold = examples[list(lay.PROMPT_KEYS)].to_dict("records")
    preds = [{"id": g["id"], "time": g["time"], "prediction": g["assistant"]} for g in gold]
    result = score_task(task, gold, preds)
    assert result["num_valid"] == len(gold) == 12
    best = {"numeric": 0.0, "categorical": 1.0, "distribution": 0.0}[task.target_type.value]
    assert result["metrics"]["primary_score"] == pytest.approx(best)
