"""Release and eval-sample layouts: round trips, every validation error, eval sample, SFT set."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from hhx.bench import layout as lay
from hhx.bench import splits as sp
from hhx.bench.evalsample import EVAL_MANIFEST_COLUMNS, export_sft, select_eval_sample
from hhx.config import FieldConfig, Mode, Shape, TargetType, TaskConfig
from hhx.errors import ConfigError, DataError

LABELS = ["employed", "unemployed", "not_in_labor_force"]


def toy_task(name: str = "toy_jobfind", mode: Mode = Mode.baseline) -> TaskConfig:
    return TaskConfig(
        name=name,
        topic="Labor supply, job search, and retirement",
        mode=mode,
        survey="toy",
        target_type=TargetType.categorical,
        shape=Shape.array,
        fields=[FieldConfig(name="labor_force_status", labels=LABELS)],
        targets=["target"],
        prompt_predictors=["age", "region"],
        categorical_predictors=["region"],
    )


def toy_keys(n_quarters: int = 16, per_quarter: int = 25, post: int = 60) -> pd.DataFrame:
    rows = []
    for q in range(n_quarters):
        year, month = 2010 + q // 4, 3 * (q % 4) + 1
        for i in range(per_quarter):
            rows.append((f"h{i:03d}", f"{year}-{month:02d}-01", f"{year}-{month + 1:02d}-20"))
    for i in range(post):
        # Alternate early-February releases (post_cutoff_test, not eval sample) and later ones.
        rows.append(
            (f"p{i:03d}", f"2025-{10 + i % 3:02d}-01", "2026-02-10" if i % 3 == 0 else "2026-05-01")
        )
    return pd.DataFrame(rows, columns=["id", "time", "release_date"])


def exported_keys(task: TaskConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the split sidecar, the exported keys in canonical order) of `toy_keys()`."""
    keys = toy_keys()
    sidecar = sp.assign_splits(keys, task)
    canon = sp.canonical_order(keys, task)
    return sidecar, keys.iloc[canon[sidecar["exported"].to_numpy()[canon]]].reset_index(drop=True)


def plain_prompts(pub: pd.DataFrame, targets: pd.Series) -> pd.DataFrame:
    return pd.DataFrame({**{c: pub[c] for c in ("id", "time", "release_date")},
                         "system": "You are a person.", "user": "Question?",
                         "assistant": [json.dumps([t]) for t in targets],
                         "naive_baseline": '["unemployed"]'})


def toy_release(root: Path, task: TaskConfig, *, synthetic: bool = True) -> dict[str, pd.DataFrame]:
    """Publish a small task the way build_task does: exported rows in canonical order."""
    keys = toy_keys()
    sidecar = sp.assign_splits(keys, task)
    canon = sp.canonical_order(keys, task)
    rows = canon[sidecar["exported"].to_numpy()[canon]]
    pub = keys.iloc[rows].reset_index(drop=True)
    n = len(pub)
    table = pd.DataFrame(
        {
            **{c: pub[c] for c in ("id", "time", "release_date")},
            "target": [LABELS[i % 3] for i in range(n)],
            "age": [20.0 + i % 50 if i % 7 else float("nan") for i in range(n)],
            "region": ["NA" if i % 4 == 0 else ("" if i % 5 == 0 else "South") for i in range(n)],
        }
    )
    prompts = pd.DataFrame(
        {
            **{c: pub[c] for c in ("id", "time", "release_date")},
            "system": "You are a person answering questions about your work.",
            "user": [f"Caf\u00e9 question {i}.\n\nAnswer." for i in range(n)],
            "assistant": [json.dumps([t]) for t in table["target"]],
            "naive_baseline": '["unemployed"]',
        }
    )
    lay.write_release_task(root, task, table, prompts, sidecar, synthetic=synthetic)
    return {"table": table, "prompts": prompts, "sidecar": sidecar}


@pytest.fixture
def release(tmp_path: Path) -> tuple[Path, TaskConfig, dict[str, pd.DataFrame]]:
    task = toy_task()
    root = tmp_path / "householdbench"
    made = toy_release(root, task)
    return root, task, made


# --------------------------------------------------------------------------------------------
# Round trip and publication files


def test_float_columns_of_a_typed_table_stay_float_text(tmp_path):
    """build_task types the builder table once (float_columns: the official frame holds those
    as floats); publishing types it again and must keep them: 79000.0, not 79000."""
    task = toy_task()
    sidecar, pub = exported_keys(task)
    n = len(pub)
    raw = pd.DataFrame({**{c: pub[c] for c in ("id", "time", "release_date")},
                        "target": [LABELS[i % 3] for i in range(n)],
                        "age": [79000.0 + i for i in range(n)], "region": "South"})
    typed = lay.coerce_table(raw, task, float_columns=["age"])
    assert typed.attrs["float_columns"] == ["age"]
    prompts = plain_prompts(pub, raw["target"])
    root = tmp_path / "householdbench"
    paths = lay.write_release_task(root, task, typed, prompts, sidecar, synthetic=True)
    lines = Path(paths["table"]).read_text().splitlines()
    assert lines[1].split(",")[4] == "79000.0"
    # Without the typed attrs an integral complete column is an integer column, as before.
    assert lay.coerce_table(raw, task)["age"].dtype == "Int64"


def test_round_trip_equals_what_was_written(release):
    root, task, made = release
    bench = lay.load_bench_task(root, task)
    pd.testing.assert_frame_equal(bench.table, lay.coerce_table(made["table"], task))
    # Literal "NA" labels stay text; empty text and numbers are missing.
    assert (bench.table["region"] == "NA").sum() > 0 and bench.table["region"].isna().sum() > 0
    assert bench.table["age"].dtype == "float64" and bench.table["age"].isna().sum() > 0
    pd.testing.assert_frame_equal(
        bench.prompts, made["prompts"].astype("string"), check_dtype=False
    )
    exported = made["sidecar"][made["sidecar"]["exported"]]
    assert len(bench.splits) == len(exported)
    merged = bench.splits.merge(exported, on=["id", "time"], suffixes=("", "_w"))
    assert (merged["split_position"] == merged["split_position_w"]).all()
    assert (merged["within_period_order"] == merged["within_period_order_w"]).all()
    assert bench.layout == "release" and bench.source == "official"


def test_prompt_lines_are_exact_ascii_records(release):
    root, task, made = release
    lines = (root / "prompts" / f"{task.name}.jsonl").read_bytes().splitlines()
    assert len(lines) == len(made["prompts"])
    first = lines[0].decode("ascii")  # raises if anything is not ASCII
    assert "\\u00e9" in first
    assert list(json.loads(first)) == list(lay.PROMPT_KEYS)


def test_manifests_ready_and_provenance(release):
    root, task, made = release
    manifest = pd.read_csv(root / "manifest.csv", dtype=str, keep_default_na=False)
    assert list(manifest.columns) == lay.MANIFEST_COLUMNS
    row = manifest.iloc[0]
    assert row["task_id"] == task.name and row["mode"] == "Baseline prediction"
    assert int(row["eligible_rows"]) == len(made["sidecar"])
    assert int(row["benchmark_rows"]) == int(made["sidecar"]["exported"].sum())
    assert int(row["post_cutoff_rows"]) == 60 and int(row["tabular_columns"]) == 6
    receipts = pd.read_csv(root / "splits" / "manifest.csv", dtype=str, keep_default_na=False)
    assert list(receipts.columns) == lay.SPLIT_MANIFEST_COLUMNS
    for col, path in (
        ("sidecar_sha256", "splits"),
        ("table_sha256", "tabular"),
        ("prompt_sha256", "prompts"),
    ):
        ext = "jsonl" if path == "prompts" else "csv"
        digest = hashlib.sha256((root / path / f"{task.name}.{ext}").read_bytes()).hexdigest()
        assert receipts.iloc[0][col] == digest
    ready = json.loads((root / "splits" / "READY.json").read_text())
    assert ready["task_count"] == 1 and ready["cutoff_date"] == sp.CUTOFF_DATE
    assert ready["total_records"] == int(made["sidecar"]["exported"].sum())
    prov = json.loads((root / lay.PROVENANCE_FILE).read_text())
    assert prov["synthetic"] is True and prov["tasks"][task.name]["synthetic"] is True
    # A demo build can never load as real data.
    assert lay.load_bench_task(root, task, synthetic=False).synthetic is True


def test_second_task_upserts_manifests_and_real_data_is_kept_apart(release, tmp_path):
    root, task, _ = release
    toy_release(root, toy_task("toy_other"))
    toy_release(root, task)  # rewrite: still one row per task
    manifest = pd.read_csv(root / "manifest.csv", dtype=str)
    assert manifest["task_id"].tolist() == ["toy_jobfind", "toy_other"]
    assert json.loads((root / "splits" / "READY.json").read_text())["task_count"] == 2
    with pytest.raises(DataError, match="separate data.root"):
        toy_release(root, toy_task("toy_real"), synthetic=False)
    real_root = tmp_path / "real"
    toy_release(real_root, task, synthetic=False)
    assert lay.load_bench_task(real_root, task).synthetic is False


# --------------------------------------------------------------------------------------------
# Validation errors


def _rewrite_prompt_line(path: Path, index: int, edit) -> None:
    lines = path.read_text().splitlines()
    record = json.loads(lines[index])
    lines[index] = edit(record)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: json.dumps({**r, "extra": "x"}), r":3: prompt record keys .*extra \['extra'\]"),
        (
            lambda r: json.dumps({k: v for k, v in r.items() if k != "user"}),
            r":3: .*missing \['user'\]",
        ),
        (
            lambda r: json.dumps({**r, "assistant": '{"a": 1}'}),
            r":3: assistant must decode to a JSON list",
        ),
        (
            lambda r: json.dumps({**r, "naive_baseline": "[NaN]"}),
            r":3: naive_baseline is not valid JSON",
        ),
        (lambda r: json.dumps({**r, "release_date": "2026-3-01"}), r":3: release_date"),
        (lambda r: json.dumps({**r, "time": 20100101}), r":3: time must be a string"),
        (lambda r: json.dumps(r).replace("}", ', "x": NaN}'), r":3: invalid JSON"),
    ],
)
def test_read_prompts_rejects_bad_records_with_line_numbers(release, edit, message):
    root, task, _ = release
    path = root / "prompts" / f"{task.name}.jsonl"
    _rewrite_prompt_line(path, 2, edit)
    with pytest.raises(DataError, match=message):
        lay.read_prompts(path)


def _edit_table(path: Path, row: int, column: str, value: str) -> int:
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.loc[row, column] = value
    df.to_csv(path, index=False)
    return row + 2  # file line


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        (
            "time",
            "2010-13-01",
            "column time line {line}: '2010-13-01' is not a valid YYYY-MM-DD date",
        ),
        ("release_date", "", "column release_date is empty at line {line}"),
        ("age", "inf", "column age line {line}: infinite value"),
        ("age", "-inf", "column age line {line}: infinite value"),
        ("age", "forty", "column age line {line}: 'forty' is not a number"),
        ("target", "retired", "column target line {line}: 'retired' is not a label"),
    ],
)
def test_read_table_names_file_column_and_line(release, column, value, message):
    root, task, _ = release
    path = root / "tabular" / f"{task.name}.csv"
    line = _edit_table(path, 4, column, value)
    with pytest.raises(DataError, match=message.format(line=line).replace("(", r"\(")) as err:
        lay.read_table(path, task)
    assert str(path) in str(err.value)


def test_read_table_rejects_duplicate_keys_and_wrong_header(release):
    root, task, _ = release
    path = root / "tabular" / f"{task.name}.csv"
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.loc[5, ["id", "time"]] = df.loc[4, ["id", "time"]].to_numpy()
    df.to_csv(path, index=False)
    with pytest.raises(DataError, match=r"duplicate \(id, time\) .* at line 7"):
        lay.read_table(path, task)
    df[["age", "region"]] = df[["region", "age"]].to_numpy()
    df.rename(columns={"age": "region", "region": "age"}).to_csv(path, index=False)
    with pytest.raises(DataError, match="column 5 is 'region', expected 'age'"):
        lay.read_table(path, task)


def test_load_rejects_prompt_order_different_from_table_and_sidecar(release):
    root, task, _ = release
    path = root / "prompts" / f"{task.name}.jsonl"
    lines = path.read_text().splitlines()
    lines[3], lines[4] = lines[4], lines[3]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="row 3: prompts id=.* but table id="):
        lay.load_bench_task(root, task)


def test_load_names_missing_files_and_the_layout(tmp_path):
    with pytest.raises(
        DataError, match=r"tabular/toy_jobfind.csv: not found; the official release layout"
    ):
        lay.load_bench_task(tmp_path, toy_task())
    with pytest.raises(
        DataError, match=r"pre_cutoff/toy_jobfind.jsonl: eval-sample file not found"
    ):
        lay.load_bench_task(tmp_path, toy_task(), layout="eval_sample", split="pre_cutoff")


def test_write_refuses_prompts_out_of_table_order(tmp_path):
    task = toy_task()
    made = toy_release(tmp_path / "a", task)
    prompts = made["prompts"].iloc[::-1].reset_index(drop=True)
    with pytest.raises(DataError, match="must list the same rows in the same order"):
        lay.write_release_task(
            tmp_path / "b", task, made["table"], prompts, made["sidecar"], synthetic=True
        )
    assert not (tmp_path / "b" / "prompts").exists()


# --------------------------------------------------------------------------------------------
# Examples and training frames


def test_eval_examples_and_split_frame(release):
    root, task, _ = release
    bench = lay.load_bench_task(root, task)
    ex = bench.eval_examples("train", 12)
    assert list(ex.columns) == [*lay.PROMPT_KEYS, "split", "split_position"]
    assert sorted(ex["split_position"]) == list(range(1, 13)) and (ex["split"] == "train").all()
    rows = bench.prompts.reset_index().merge(ex, on=["id", "time"])["index"]
    assert rows.is_monotonic_increasing  # prompt-file order
    frame = bench.split_frame("train", 12)
    assert frame["split"].eq("train").all() and len(frame) == 12
    first = bench.splits[bench.splits["split_position"].eq(1) & bench.splits["split"].eq("train")]
    assert frame["id"].iloc[0] == first["id"].iloc[0]
    assert (
        len(bench.split_frame("validation", None)) == (bench.splits["split"] == "validation").sum()
    )
    with pytest.raises(ConfigError, match="not a split"):
        bench.eval_examples("test", None)


# --------------------------------------------------------------------------------------------
# Eval sample and SFT set


def test_select_eval_sample_copies_records_and_matches_release(release, tmp_path):
    root, task, _ = release
    out = tmp_path / "evalsample"
    manifest = select_eval_sample(root, out, [task.name], rows_per_task=20)
    assert list(manifest.columns) == EVAL_MANIFEST_COLUMNS
    assert manifest.set_index("split")["rows"].to_dict() == {"pre_cutoff": 20, "post_cutoff": 20}
    source = (root / "prompts" / f"{task.name}.jsonl").read_bytes().splitlines(keepends=True)
    bench = lay.load_bench_task(root, task)
    for cell, split in (("pre_cutoff", "pre_cutoff_test"), ("post_cutoff", "post_cutoff_test")):
        got = (out / cell / f"{task.name}.jsonl").read_bytes()
        expected = bench.eval_examples(cell, 20)
        idx = bench.prompts.reset_index().merge(expected[["id", "time"]])["index"].sort_values()
        assert got == b"".join(source[i] for i in idx)  # byte-for-byte, file order
        assert (expected["split"] == split).all()
        row = manifest.set_index("split").loc[cell]
        assert row["prompt_sha256"] == hashlib.sha256(got).hexdigest()
        # The eval-sample layout serves the same examples as the full release.
        sample = lay.load_bench_task(out, task, layout="eval_sample", split=cell)
        assert sample.synthetic  # sampled from a demo build
        pd.testing.assert_frame_equal(
            sample.eval_examples(cell, None)[[*lay.PROMPT_KEYS, "split"]],
            expected[[*lay.PROMPT_KEYS, "split"]],
        )
    post = pd.read_json(out / "post_cutoff" / f"{task.name}.jsonl", lines=True, dtype=False)
    assert (post["release_date"] > sp.EVAL_POST_CUTOFF_DATE).all()


def test_eval_sample_layout_refusals(release, tmp_path):
    root, task, _ = release
    out = tmp_path / "evalsample"
    select_eval_sample(root, out, [task.name], rows_per_task=20)
    sample = lay.load_bench_task(out, task, layout="eval_sample", split="pre_cutoff_test")
    assert len(sample.eval_examples("pre_cutoff_test", 200)) == 20
    with pytest.raises(ConfigError, match="no split_position"):
        sample.eval_examples("pre_cutoff", 5)
    with pytest.raises(ConfigError, match="set data.split=post_cutoff"):
        lay.load_bench_task(out, task, layout="eval_sample", split="post_cutoff_test")
    with pytest.raises(
        DataError, match="the eval-sample layout has no training rows; point data.root"
    ):
        sample.split_frame("train", 10)


def test_select_eval_sample_refuses_stale_outputs_and_sources(release, tmp_path):
    root, task, _ = release
    out = tmp_path / "evalsample"
    (out / "pre_cutoff").mkdir(parents=True)
    (out / "pre_cutoff" / "old_task.jsonl").write_text("{}\n")
    with pytest.raises(DataError, match="stale eval-sample file"):
        select_eval_sample(root, out, [task.name], rows_per_task=20)
    assert not (out / "pre_cutoff" / f"{task.name}.jsonl").exists()
    prompts = root / "prompts" / f"{task.name}.jsonl"
    prompts.write_bytes(prompts.read_bytes().replace(b"question 7.", b"question 8."))
    with pytest.raises(DataError, match="SHA-256 differs"):
        select_eval_sample(root, tmp_path / "fresh", [task.name], rows_per_task=20)


def test_export_sft_first_train_rows_as_chat(release, tmp_path, capsys, monkeypatch):
    root, task, _ = release
    toy_release(root, toy_task("toy_policy", mode=Mode.policy))
    monkeypatch.setenv("HHX_PROGRESS_INTERVAL", "0")
    monkeypatch.delenv("HHX_PROGRESS", raising=False)
    counts = export_sft(root, tmp_path / "sft.jsonl", [task.name], n=10)
    assert counts.to_dict("records") == [{"task_id": task.name, "rows": 10}]
    # progress off a terminal: a plain line per task with the rows so far
    assert "SFT export: tasks' train rows: 1/1 tasks (100%), 0:00 elapsed, 10 rows" in (
        capsys.readouterr().err)
    records = [json.loads(line) for line in (tmp_path / "sft.jsonl").read_text().splitlines()]
    bench = lay.load_bench_task(root, task)
    firsts = bench.split_frame("train", 10)
    assert [r["id"] for r in records] == firsts["id"].tolist()  # split_position order
    assert [m["role"] for m in records[0]["messages"]] == ["system", "user", "assistant"]
    assert all(r["synthetic"] is True for r in records)
    gold = bench.prompts.set_index(["id", "time"]).loc[(records[0]["id"], records[0]["time"])]
    assert records[0]["messages"][2]["content"] == gold["assistant"]
    with pytest.raises(ConfigError, match="baseline tasks only"):
        export_sft(root, tmp_path / "x.jsonl", ["toy_policy"])


def test_demo_build_refuses_a_root_holding_an_official_download(release, tmp_path):
    root, task, _ = release
    (root / lay.PROVENANCE_FILE).unlink()  # as downloaded: no hhx provenance
    assert lay.load_bench_task(root, task).synthetic is False
    with pytest.raises(DataError, match="already holds real-data builds"):
        toy_release(root, toy_task("toy_demo"), synthetic=True)


def test_a_wide_table_reads_back_unfragmented(tmp_path):
    """Many numeric columns (CEX tasks have 100+): reading must give pandas one block per
    dtype, or every column added later (the split, the prompt month) warns "highly fragmented"
    on the user's console."""
    import dataclasses
    import warnings

    wide = [f"x{i:03d}" for i in range(120)]
    task = dataclasses.replace(toy_task(), prompt_predictors=["age", "region", *wide])
    sidecar, pub = exported_keys(task)
    n = len(pub)
    table = pd.DataFrame({**{c: pub[c] for c in ("id", "time", "release_date")},
                          "target": [LABELS[i % 3] for i in range(n)],
                          "age": [20.5 + i % 50 for i in range(n)], "region": "South",
                          **{c: [0.25 * (i % 9) for i in range(n)] for c in wide}})
    prompts = plain_prompts(pub, table["target"])
    root = tmp_path / "householdbench"
    lay.write_release_task(root, task, table, prompts, sidecar, synthetic=True)
    bench = lay.load_bench_task(root, task)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.PerformanceWarning)
        frame = bench.split_frame("train", None)
        frame["extra"] = 1.0
    assert frame[wide].to_numpy().sum() > 0
