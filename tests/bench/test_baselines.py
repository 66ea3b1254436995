"""The official baselines/ publication (hhx/bench/baselines.py): what model=xgboost writes (the
column set, every row in table order, the official JSON and number text, manifest, READY.json,
diagnostics) and what model=official_xgboost reads back and scores."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hhx.bench import baselines as bl
from hhx.bench.layout import load_bench_task
from hhx.config import XGBoostConfig
from hhx.errors import DataError
from hhx.predictors.official_xgboost import OfficialXGBoost
from hhx.predictors.xgboost import XGBoostPredictor
from hhx.scoring import score_task
from hhx.tasks.build import build_task
from hhx.tasks.context import BuildContext
from tests.predictors.test_xgboost_order import builder, make_task  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow
RECORD = ["id", "time", "release_date", "system", "user", "assistant", "naive_baseline"]


def test_canonical_json_is_compact_ascii_and_keeps_float_form():
    assert bl.canonical_json_array([586.0]) == "[586.0]"
    assert bl.canonical_json_array([-0.0, 12]) == "[-0.0,12]"
    assert bl.canonical_json_array(["employed"]) == '["employed"]'
    assert bl.canonical_json_array([[0.25, 0.75], [1.0, 0.0]]) == "[[0.25,0.75],[1.0,0.0]]"
    assert bl.canonical_json_array(["caf\u00e9"]) == '["caf\\u00e9"]'
    with pytest.raises(ValueError):
        bl.canonical_json_array([float("nan")])


@pytest.fixture(scope="module")
def published(builder, tmp_path_factory):  # noqa: F811
    """Two toy tasks built through the real bench layer, fitted and published."""
    tmp = tmp_path_factory.mktemp("baselines")
    root, out = tmp / "bench", tmp / "bench_baselines_output"
    benches, models = {}, {}
    for kind in ("categorical", "numeric"):
        task = make_task(kind, builder)
        build_task(BuildContext(task, tmp, macro_context=pd.DataFrame(), synthetic=True), root,
                   synthetic=True)
        bench = load_bench_task(root, task)
        model = XGBoostPredictor(XGBoostConfig(threads=2, n_estimators=20,
                                               early_stopping_rounds=20)).fit(bench)
        model.publish(bench, root, out)
        benches[kind], models[kind] = bench, model
    return root, out, benches, models


def test_the_table_has_the_official_columns_and_every_row_in_table_order(published):
    root, _, benches, models = published
    for kind, bench in benches.items():
        path = root / "baselines" / f"{bench.spec.name}.csv"
        with path.open(newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh))
        assert header == list(bl.BASELINE_COLUMNS)
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        table = pd.read_csv(root / "tabular" / f"{bench.spec.name}.csv", dtype=str)
        side = pd.read_csv(root / "splits" / f"{bench.spec.name}.csv", dtype=str)
        assert frame["id"].tolist() == table["id"].tolist()  # every row, table order
        assert frame[list(bl.KEY_COLUMNS)].equals(side[list(bl.KEY_COLUMNS)])
        assert {"train", "validation", "pre_cutoff_test"} <= set(frame["split"])
        assert (frame["task_id"] == bench.spec.name).all()
        # the gold and no-change answers: the prompt record's lists, compact
        gold = [bl.canonical_json_array(json.loads(a)) for a in bench.prompts["assistant"]]
        assert frame["actual_answer"].tolist() == gold
        assert not frame["xgb_400k_tuned_direct"].str.contains(" ").any()
        # the predictions are the model's, row for row
        rows = models[kind].predict(bench, bench.prompts)
        assert [json.loads(v) for v in frame["xgb_400k_tuned_direct"]] == [
            r.prediction for r in rows]
    text = (root / "baselines" / "order_categorical.csv").read_text().splitlines()[1]
    assert text.count('""') >= 6 and ',"[""' in text  # CSV-quoted JSON strings
    assert all(v.isdigit() for v in frame["split_position"])  # integers, not 1.0


def test_manifest_ready_and_diagnostics(published):
    root, out, benches, _ = published
    manifest = pd.read_csv(root / "baselines" / "manifest.csv", dtype=str, keep_default_na=False)
    assert list(manifest.columns) == list(bl.MANIFEST_COLUMNS)
    assert manifest["task_id"].tolist() == ["order_categorical", "order_numeric"]  # sorted
    for row in manifest.itertuples(index=False):
        path = root / "baselines" / f"{row.task_id}.csv"
        assert row.prediction_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert int(row.rows) == len(benches[row.task_id.split("_")[1]].prompts)
        assert row.columns == "11" and row.prediction_columns == '["xgb_400k_tuned_direct"]'
        assert row.prediction_file == f"data/householdbench/baselines/{row.task_id}.csv"
    ready = json.loads((root / "baselines" / "READY.json").read_text())
    assert ready["status"] == "READY" and ready["task_count"] == 2
    assert ready["prediction_rows"] == sum(len(b.prompts) for b in benches.values())
    assert ready["output_ready_sha256"] == hashlib.sha256(
        (out / "READY.json").read_bytes()).hexdigest()

    models = pd.read_csv(out / "xgboost_model_manifest.csv", dtype=str, keep_default_na=False)
    assert list(models.columns) == list(bl.MODEL_COLUMNS) and len(models) == 2
    for row in models.itertuples(index=False):
        assert row.model_sha256 == hashlib.sha256((out / row.model_path).read_bytes()).hexdigest()
        assert json.loads(row.parameters)["random_state"] in (7, 99)
    metrics = pd.read_csv(out / "xgboost_metrics_task.csv")
    assert list(metrics.columns) == list(bl.METRIC_COLUMNS)
    assert set(metrics["metric"]) == {"task_macro_f1", "task_relmae"}
    assert (metrics.loc[metrics["metric"] == "task_relmae", "naive_value"] == 1.0).all()
    importance = pd.read_csv(out / "xgboost_feature_importance.csv")
    assert list(importance.columns) == list(bl.IMPORTANCE_COLUMNS)
    shares = importance.groupby("task_id")["gain_share"].sum()
    assert np.allclose(shares, 1.0) and set(importance["feature"]) <= {"x", "group"}


def test_metrics_follow_the_scorer(published):
    """The test-split metric of the diagnostics equals hhx's scorer on the same rows."""
    _, out, benches, _ = published
    metrics = pd.read_csv(out / "xgboost_metrics_task.csv")
    for kind, bench in benches.items():
        reader = OfficialXGBoost().fit(bench)
        examples = bench.eval_examples("pre_cutoff_test", None)
        preds = [r.official() for r in reader.predict(bench, examples)]
        result = score_task(bench.spec, examples[RECORD].to_dict("records"), preds)
        got = metrics.loc[(metrics["task_id"] == bench.spec.name)
                          & (metrics["split"] == "pre_cutoff_test"), "model_value"].item()
        assert got == pytest.approx(result["metrics"]["primary_score"], rel=1e-12)


def test_official_xgboost_reads_the_published_answers(published):
    _, _, benches, models = published
    bench = benches["numeric"]
    examples = bench.eval_examples("validation", 30)
    read = OfficialXGBoost().fit(bench).predict(bench, examples)
    fitted = models["numeric"].predict(bench, examples)
    assert [r.prediction for r in read] == [r.prediction for r in fitted]


def test_a_missing_or_foreign_table_is_one_clear_line(published, tmp_path):
    root, _, benches, _ = published
    bench = benches["numeric"]
    elsewhere = type(bench)(**{**bench.__dict__, "root": tmp_path})
    with pytest.raises(DataError, match=r"baselines/order_numeric.csv: not found; "
                                        r"model=official_xgboost .* model=xgboost"):
        OfficialXGBoost().fit(elsewhere)
    (tmp_path / "baselines").mkdir()
    frame = pd.read_csv(root / "baselines" / "order_numeric.csv", dtype=str)
    frame.drop(columns="xgb_400k_tuned_direct").to_csv(
        tmp_path / "baselines" / "order_numeric.csv", index=False)
    with pytest.raises(DataError, match="lacks the column"):
        OfficialXGBoost().fit(elsewhere)
    frame.iloc[5:].to_csv(tmp_path / "baselines" / "order_numeric.csv", index=False)
    reader = OfficialXGBoost().fit(elsewhere)
    with pytest.raises(DataError, match="no row for id="):
        reader.predict(bench, bench.prompts.iloc[:6])


def test_republishing_a_task_replaces_its_rows(published):
    root, out, benches, models = published
    before = pd.read_csv(out / "xgboost_metrics_task.csv", dtype=str)
    models["numeric"].publish(benches["numeric"], root, out)
    after = pd.read_csv(out / "xgboost_metrics_task.csv", dtype=str)
    assert after.equals(before)
    assert len(pd.read_csv(root / "baselines" / "manifest.csv")) == 2


def test_publication_refuses_a_prediction_count_that_is_not_the_table(published):
    _, _, benches, _ = published
    bench = benches["numeric"]
    with pytest.raises(DataError, match="one per row"):
        bl.baseline_frame("t", bench.splits, bench.prompts, [[1.0]] * 3)
    assert Path(bl.diagnostics_root("/a/householdbench")) == Path(
        "/a/householdbench_baselines_output")
