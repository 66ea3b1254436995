"""Scorer: key matching, response fields, coverage accounting, result layout (spec 7.2-7.4)."""

from __future__ import annotations

import json
import re

import pytest
from omegaconf import OmegaConf

from hhx.config import DistributionConfig, FieldConfig, Mode, Shape, TargetType, TaskConfig
from hhx.errors import DataError
from hhx.scoring import ScoringError, describe, score_files, score_task
from hhx.tasks.registry import load_task

TOTAL = TaskConfig(name="cons_cex_total", topic="t", mode=Mode.baseline, survey="cex",
                   target_type=TargetType.numeric, shape=Shape.array,
                   fields=[FieldConfig(name=n) for n in
                           ("total_expenditure", "non_durable_expenditure", "durable_expenditure")])
GROWTH = TaskConfig(name="cons_sce_growth", topic="t", mode=Mode.baseline, survey="sce",
                    target_type=TargetType.numeric, shape=Shape.array,
                    fields=[FieldConfig(name="monthly_spending_growth_12m")])
LOCKIN = TaskConfig(name="house_sce_lockin", topic="t", mode=Mode.policy, survey="sce",
                    target_type=TargetType.distribution, shape=Shape.distribution_array,
                    distributions=[DistributionConfig(name="move_probability_3y",
                                                      labels=["no_move", "move"],
                                                      columns=["p"])])

RESULT_KEYS = ["task", "mode", "num_examples", "num_predictions", "num_valid", "num_invalid",
               "num_repaired", "valid_response_rate", "coverage_rate", "num_extra_predictions",
               "extra_prediction_ids", "error_counts", "valid_example_ids", "invalid_examples",
               "metrics", "details"]
DETAIL_KEYS = {"id", "valid", "raw_prediction", "parsed_prediction", "reference",
               "naive_baseline", "error", "repaired"}

GOLD = [
    {"id": "a", "assistant": "[1, 2, 3]", "naive_baseline": "[0, 1, 2]"},
    {"id": "b", "assistant": "[2, 4, 6]", "naive_baseline": "[1, 2, 3]"},
]
# Released prompt files repeat an id when a household is seen in several periods.
PANEL = [
    {"id": "h1", "time": "2019-12-01", "assistant": "[1.0]", "naive_baseline": "[0.0]"},
    {"id": "h1", "time": "2020-03-01", "assistant": "[3.0]", "naive_baseline": "[0.0]"},
    {"id": "h2", "time": "2020-03-01", "assistant": "[5.0]", "naive_baseline": "[0.0]"},
]


def test_duplicate_prediction_ids_are_rejected():
    preds = [{"id": "a", "prediction": "[1, 2, 3]"}, {"id": "a", "prediction": "[2, 3, 4]"}]
    with pytest.raises(ValueError, match="Duplicate prediction ids: a"):
        score_task(TOTAL, GOLD, preds)


def test_prediction_without_id_is_rejected():
    with pytest.raises(ScoringError, match="missing required field 'example_id' or 'id'"):
        score_task(TOTAL, GOLD, [{"prediction": "[1, 2, 3]"}])


def test_example_id_is_accepted_as_prediction_key():
    preds = [{"example_id": "a", "prediction": "[1, 2, 3]"},
             {"example_id": "b", "prediction": "[2, 4, 6]"}]
    assert score_task(TOTAL, GOLD, preds)["num_valid"] == 2


def test_field_priority_prefers_prediction_then_falls_back():
    preds = [{"id": "a", "prediction": "[1, 2, 3]", "response": "not json"},
             {"id": "b", "assistant": "nope", "response": "[2, 4, 6]"}]
    result = score_task(TOTAL, GOLD, preds)
    assert result["num_valid"] == 2
    assert [d["raw_prediction"] for d in result["details"]] == ["[1, 2, 3]", "[2, 4, 6]"]


def test_configured_prediction_field_is_strict():
    preds = [{"id": "a", "raw_output": "[1, 2, 3]"}, {"id": "b", "raw_output": "[2, 4, 6]"}]
    assert score_task(TOTAL, GOLD, preds)["num_valid"] == 2
    strict = score_task(TOTAL, GOLD, preds, prediction_field="prediction")
    assert strict["num_valid"] == 0
    assert strict["coverage_rate"] == 1.0  # the rows were matched, just unusable
    assert all("no configured response field 'prediction'" in e["error"]
               for e in strict["invalid_examples"])
    no_field = score_task(TOTAL, GOLD, [{"id": "a", "text": "[1, 2, 3]"}])
    assert no_field["invalid_examples"][0]["error"].startswith(
        "Prediction row has no response field. Accepted fields: prediction, raw_output")


def test_extra_predictions_are_reported_sorted():
    preds = [{"id": "zzz", "prediction": "[9, 9, 9]"}, {"id": "a", "prediction": "[1, 2, 3]"},
             {"id": "b", "prediction": "[2, 4, 6]"}, {"id": "c", "prediction": "[0, 0, 0]"}]
    result = score_task(TOTAL, GOLD, preds)
    assert result["num_extra_predictions"] == 2
    assert result["extra_prediction_ids"] == ["c", "zzz"]
    assert (result["num_valid"], result["num_predictions"], result["coverage_rate"]) == (2, 4, 1.0)


def test_empty_predictions_give_null_score():
    result = score_task(TOTAL, GOLD, [])
    assert result["num_valid"] == 0 and result["coverage_rate"] == 0.0
    assert result["valid_response_rate"] == 0.0
    assert result["metrics"]["primary_score"] is None
    assert result["error_counts"] == {"missing_prediction": 2}


def test_no_gold_rows_gives_zero_rates():
    result = score_task(TOTAL, [], [{"id": "a", "prediction": "[1, 2, 3]"}])
    assert (result["num_examples"], result["valid_response_rate"], result["coverage_rate"]) == (
        0, 0.0, 0.0)
    assert result["extra_prediction_ids"] == ["a"]


def test_coverage_valid_rate_and_invalid_reasons():
    gold = GOLD + [{"id": "c", "assistant": "[3, 6, 9]", "naive_baseline": "[2, 3, 4]"}]
    preds = [{"id": "a", "prediction": "[2, 2, 4]"}, {"id": "b", "prediction": "invalid"}]
    result = score_task(TOTAL, gold, preds)
    # 2 of 3 gold rows have a prediction; only "a" parses.
    assert result["coverage_rate"] == pytest.approx(2 / 3)
    assert result["valid_response_rate"] == pytest.approx(1 / 3)
    assert (result["num_valid"], result["num_invalid"]) == (1, 2)
    assert result["valid_example_ids"] == ["a"]
    assert result["invalid_examples"] == [{"id": "b", "error": "expected_json_array"},
                                          {"id": "c", "error": "missing_prediction"}]
    assert result["error_counts"] == {"expected_json_array": 1, "missing_prediction": 1}
    # Metrics on row "a" only, baseline restricted to it too: |2-1|/|0-1| = 1,
    # |2-2|/|1-2| = 0, |4-3|/|2-3| = 1 -> mean 2/3.
    assert result["metrics"]["relmae_by_target"] == pytest.approx(
        {"total_expenditure": 1.0, "non_durable_expenditure": 0.0, "durable_expenditure": 1.0})
    assert result["metrics"]["primary_score"] == pytest.approx(2 / 3)
    first, second, third = result["details"]
    assert set(first) == DETAIL_KEYS
    assert first["valid"] and first["error"] is None
    assert first["parsed_prediction"] == {"total_expenditure": 2.0,
                                          "non_durable_expenditure": 2.0,
                                          "durable_expenditure": 4.0}
    assert first["naive_baseline"]["total_expenditure"] == 0.0
    assert (second["valid"], second["raw_prediction"], second["parsed_prediction"]) == (
        False, "invalid", None)
    assert (third["raw_prediction"], third["reference"]["durable_expenditure"]) == (None, 9.0)


def test_zero_denominator_is_judged_on_the_valid_rows_only():
    gold = [{"id": "a", "assistant": "[1.0]", "naive_baseline": "[1.0]"},
            {"id": "b", "assistant": "[2.0]", "naive_baseline": "[0.0]"}]
    both = score_task(GROWTH, gold, [{"id": "a", "prediction": "[2]"},
                                     {"id": "b", "prediction": "[2]"}])
    # (|2-1| + |2-2|) / (|1-1| + |0-2|) = 1/2
    assert both["metrics"]["primary_score"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="monthly_spending_growth_12m:zero_naive_baseline_error"):
        score_task(GROWTH, gold, [{"id": "a", "prediction": "[2]"},
                                  {"id": "b", "prediction": "[2, 3]"}])


def test_missing_or_bad_naive_baseline_raises():
    with pytest.raises(ValueError, match=r"^Invalid naive baseline for cons_cex_total.*row 0"):
        score_task(TOTAL, [{"id": "a", "assistant": "[1, 2, 3]"}],
                   [{"id": "a", "prediction": "[1, 2, 3]"}])
    with pytest.raises(ValueError, match=r"^Invalid gold answer for cons_cex_total"):
        score_task(TOTAL, [{"id": "a", "assistant": "[1, 2]", "naive_baseline": "[0, 0, 0]"}], [])


def test_repeated_ids_join_on_id_and_time():
    preds = [{"id": "h2", "time": "2020-03-01", "prediction": "[5.0]"},
             {"id": "h1", "time": "2020-03-01", "prediction": "[3.0]"},
             {"id": "h1", "time": "2019-12-01", "prediction": "[1.0]"}]
    result = score_task(GROWTH, PANEL, preds)
    assert result["num_valid"] == 3
    assert result["valid_example_ids"] == ["h1@2019-12-01", "h1@2020-03-01", "h2@2020-03-01"]
    assert result["metrics"]["primary_score"] == 0.0  # exact predictions
    assert [d["id"] for d in result["details"]] == [
        "h1@2019-12-01", "h1@2020-03-01", "h2@2020-03-01"]
    # exactly the reference's detail keys, in its order: no `time` key although keyed on time
    assert all(list(d) == ["id", "valid", "raw_prediction", "parsed_prediction", "reference",
                           "naive_baseline", "error", "repaired"] for d in result["details"])


def test_repeated_ids_require_time_in_predictions():
    preds = [{"id": row["id"], "prediction": row["assistant"]} for row in PANEL]
    with pytest.raises(ValueError, match="has no 'time'"):
        score_task(GROWTH, PANEL, preds)


def test_repeated_id_time_pairs_in_gold_are_rejected():
    with pytest.raises(ValueError, match="repeat the key 'h1@2019-12-01'"):
        score_task(GROWTH, PANEL + [dict(PANEL[0])], [])


def test_repeated_ids_without_time_are_rejected():
    gold = [{k: v for k, v in row.items() if k != "time"} for row in PANEL]
    with pytest.raises(ValueError, match="repeat the key 'h1'"):
        score_task(GROWTH, gold, [])


def test_partial_example_ids_fall_back_to_id_and_collide():
    # One row has example_id, so all rows key by example_id-else-id: "t:0", "h1", "h1".
    gold = [dict(PANEL[0], example_id="t:0")] + [
        {k: v for k, v in row.items() if k != "time"} for row in PANEL]
    with pytest.raises(ValueError, match="repeat the key 'h1'"):
        score_task(GROWTH, gold, [])


def test_example_id_gold_with_repeated_ids_matches_on_example_id():
    gold = [dict(row, example_id=f"cons_sce_growth:{i:09d}") for i, row in enumerate(PANEL)]
    preds = [{"example_id": r["example_id"], "id": r["id"], "prediction": r["assistant"]}
             for r in gold]
    result = score_task(GROWTH, gold, preds)
    assert result["num_valid"] == 3
    assert result["valid_example_ids"] == [r["example_id"] for r in gold]
    assert "time" not in result["details"][0]


def test_id_only_predictions_match_when_gold_ids_are_unique():
    gold = [dict(row, time="2020-03-01") for row in GOLD]
    preds = [{"id": "a", "prediction": "[1, 2, 3]"},
             {"id": "b", "example_id": "task:000001", "prediction": "[2, 4, 6]"},
             {"id": "q", "prediction": "[2, 4, 6]"}]
    result = score_task(TOTAL, gold, preds)
    assert result["num_valid"] == 2
    assert result["valid_example_ids"] == ["a@2020-03-01", "b@2020-03-01"]
    assert result["extra_prediction_ids"] == ["q"]


def test_wrong_time_is_a_time_mismatch_and_an_extra_prediction():
    gold = [dict(row, time="2020-03-01") for row in GOLD]
    preds = [{"id": "a", "time": "2020-03-01", "prediction": "[1, 2, 3]"},
             {"id": "b", "time": "2020-03-01T00:00:00", "prediction": "[2, 4, 6]"}]
    result = score_task(TOTAL, gold, preds)
    assert result["num_valid"] == 1
    assert result["invalid_examples"] == [{"id": "b@2020-03-01", "error": "time_mismatch"}]
    assert result["extra_prediction_ids"] == ["b@2020-03-01T00:00:00"]
    assert result["coverage_rate"] == 0.5


def test_number_repair_is_counted_and_result_layout_is_exact():
    gold = [{"example_id": "a", "assistant": "[6620, 3800, 2820]",
             "naive_baseline": "[5000, 3000, 2000]"}]
    preds = [{"example_id": "a", "prediction": "[6,620, 3,800, 2,820]"}]
    strict = score_task(TOTAL, gold, preds)
    assert list(strict) == RESULT_KEYS
    assert (strict["num_valid"], strict["num_repaired"]) == (0, 0)
    lenient = score_task(TOTAL, gold, preds, repair_number_formatting=True)
    assert (lenient["num_valid"], lenient["num_repaired"]) == (1, 1)
    assert lenient["details"][0]["repaired"] is True
    assert lenient["metrics"]["primary_score"] == 0.0
    slim = score_task(TOTAL, gold, preds, include_details=False)
    assert list(slim) == RESULT_KEYS[:-1]


def test_distribution_task_and_decoded_list_predictions():
    gold = [{"id": "a", "assistant": "[[0.8, 0.2]]", "naive_baseline": "[[0.7, 0.3]]"},
            {"id": "b", "assistant": "[[0.4, 0.6]]", "naive_baseline": "[[0.5, 0.5]]"}]
    preds = [{"id": "a", "prediction": [[0.6, 0.4]]}, {"id": "b", "prediction": "[0.5, 0.5]"}]
    result = score_task(LOCKIN, gold, preds, repair_distribution_nesting=True)
    # TVs 0.5*(0.2+0.2) = 0.2 and 0.5*(0.1+0.1) = 0.1 -> 0.15; row b needed the nesting repair.
    assert result["metrics"]["tv_by_distribution"]["move_probability_3y"] == pytest.approx(0.15)
    assert (result["mode"], result["num_repaired"]) == ("policy", 1)
    assert result["details"][0]["naive_baseline"] is None  # only numeric tasks use it
    assert result["details"][1]["parsed_prediction"] == {"move_probability_3y": [0.5, 0.5]}


def test_official_prompt_records_for_a_task_loaded_from_disk():
    task = load_task("labor_cps_jobfind")

    def record(i: int, label: str) -> dict:
        return {"id": f"cps_{i}", "time": "2024-01-01", "release_date": "2024-02-02",
                "system": "persona", "user": "question", "assistant": json.dumps([label]),
                "naive_baseline": json.dumps(["unemployed"])}

    gold = [record(1, "employed"), record(2, "unemployed"), record(3, "not_in_labor_force")]
    preds = [{"id": "cps_1", "time": "2024-01-01", "prediction": '["employed"]'},
             {"id": "cps_2", "time": "2024-01-01", "prediction": '["employed"]'},
             {"id": "cps_3", "time": "2024-01-01", "prediction": '["Employed"]'}]
    # A Hydra DictConfig of the task is accepted as well as the dataclass.
    result = score_task(OmegaConf.structured(task), gold, preds)
    # Valid rows 1, 2: preds [employed, employed] vs refs [employed, unemployed].
    # employed F1 2*1/(2+1+0) = 2/3; unemployed 0; not_in_labor_force absent -> 0: mean 2/9.
    assert result["metrics"]["mean_macro_f1"] == pytest.approx(2 / 9)
    assert result["metrics"]["mean_accuracy"] == pytest.approx(1 / 2)
    assert result["mode"] == "baseline"
    assert result["invalid_examples"][0]["error"].startswith(
        "labor_force_status:invalid_label:'Employed';allowed=employed,unemployed,")


def test_score_files_and_errors_name_the_file(tmp_path):
    gold_path, pred_path = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    gold_path.write_text("".join(json.dumps(r) + "\n" for r in GOLD))
    pred_path.write_text('{"id": "a", "prediction": "[1, 2, 3]"}\n\n')
    result = score_files(TOTAL, gold_path, pred_path, include_details=False)
    assert (result["num_valid"], result["num_invalid"]) == (1, 1)
    pred_path.write_text('{"id": "a", "prediction": "[1, 2, 3]"}\n' * 2)
    with pytest.raises(DataError, match=rf"^{re.escape(str(pred_path))}: Duplicate prediction ids"):
        score_files(TOTAL, gold_path, pred_path)
    pred_path.write_text("")
    gold_path.write_text(json.dumps(dict(GOLD[0], assistant="[1]")) + "\n")
    with pytest.raises(DataError, match=rf"^{re.escape(str(gold_path))}: Invalid gold answer"):
        score_files(TOTAL, gold_path, pred_path)


def test_describe():
    d = describe(LOCKIN)
    assert d["official_metrics"] == ["total_variation"] and d["diagnostic_metrics"] == []
    assert d["distributions"] == [{"name": "move_probability_3y", "labels": ["no_move", "move"]}]
    assert (d["output_shape"], d["target_type"], d["mode"], d["fields"]) == (
        "distribution_array", "distribution", "policy", [])
    num = describe(TOTAL)
    assert num["official_metrics"] == ["relmae"] and num["diagnostic_metrics"] == ["nmae"]
    assert num["fields"][0] == {"name": "total_expenditure", "kind": "numeric", "labels": []}
    cat = describe(load_task("labor_cps_jobfind"))
    assert cat["official_metrics"] == ["macro_f1", "accuracy"]
    assert cat["fields"][0]["labels"] == ["employed", "unemployed", "not_in_labor_force"]
    json.dumps(d)  # JSON-able


# --------------------------------------------------------------------------------------------
# The result file, hostile input (stage=score)


def _score_stage(tmp_path, task_name, gold, preds, *, raw_preds: bytes | None = None, **score):
    from hhx.stages import score as stage
    from hhx.tasks.registry import CONF_DIR

    gold_path, pred_path = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    out = tmp_path / "r.json"
    gold_path.write_text("".join(json.dumps(g) + "\n" for g in gold))
    if raw_preds is None:
        pred_path.write_text("".join(json.dumps(p) + "\n" for p in preds))
    else:
        pred_path.write_bytes(raw_preds)
    from hhx.config import TaskConfig as _Task

    task = OmegaConf.merge(OmegaConf.structured(_Task),
                           OmegaConf.load(CONF_DIR / "task" / f"{task_name}.yaml"))
    cfg = OmegaConf.create({
        "task": task,
        "score": {"gold": str(gold_path), "predictions": str(pred_path), "output": str(out),
                  "prediction_field": None, "repair_number_formatting": False,
                  "repair_distribution_nesting": False, "include_details": True, **score},
    })
    stage.run(cfg)
    return out


JOBFIND_GOLD = [{"id": f"p{i}", "time": "2024-01-01", "release_date": "2024-02-15",
                 "system": "s", "user": "u", "assistant": '["employed"]',
                 "naive_baseline": '["unemployed"]'} for i in range(4)]


def test_result_file_is_written_as_the_reference_writes_it(tmp_path):
    preds = [{"id": "p0", "time": "2024-01-01", "prediction": '["employed"]'},
             {"id": "p1", "time": "2024-01-01", "prediction": '["x"]'}]
    out = _score_stage(tmp_path, "labor_cps_jobfind", JOBFIND_GOLD, preds)
    text = out.read_text()
    result = json.loads(text)
    assert text == json.dumps(result, indent=2, sort_keys=True) + "\n"
    assert list(result) == sorted(result) and result["num_valid"] == 1
    assert list(result["details"][0]) == sorted(
        ["id", "valid", "raw_prediction", "parsed_prediction", "reference", "naive_baseline",
         "error", "repaired"])
    no_details = _score_stage(tmp_path, "labor_cps_jobfind", JOBFIND_GOLD, preds,
                              include_details=False)
    assert "details" not in json.loads(no_details.read_text())


def test_nan_predictions_and_overflowing_relmae_are_written_as_python_json_tokens(tmp_path):
    gold = [{"id": f"g{i}", "time": "2024-01-01", "release_date": "2024-02-15", "system": "s",
             "user": "u", "assistant": f"[{i}]", "naive_baseline": "[0]"} for i in range(1, 4)]
    preds = [{"id": "g1", "time": "2024-01-01", "prediction": float("nan")},  # a NaN token
             {"id": "g2", "time": "2024-01-01", "prediction": "[1.7e308]"},
             {"id": "g3", "time": "2024-01-01", "prediction": "[1.7e308]"}]
    out = _score_stage(tmp_path, "cons_sce_growth", gold, preds)
    text = out.read_text()
    assert '"raw_prediction": NaN' in text
    assert '"mean_relmae": Infinity' in text and '"primary_score": Infinity' in text
    result = json.loads(text)
    assert result["error_counts"] == {"expected_json_array": 1} and result["num_valid"] == 2


def test_hostile_answers_through_stage_score_are_classified(tmp_path):
    answers = {
        "p0": "[" * 5000,
        "p1": '["employed"] [' + "9" * 5000 + "]",
        "p2": '\\"' * 20_000,
        "p3": "[" + "7" * 400 + "]",
    }
    preds = [{"id": k, "time": "2024-01-01", "prediction": v} for k, v in answers.items()]
    result = json.loads(_score_stage(tmp_path, "labor_cps_jobfind", JOBFIND_GOLD, preds)
                        .read_text())
    errors = {d["id"].split("@")[0]: d["error"] for d in result["details"]}
    assert errors["p0"] == "nesting_too_deep"
    assert errors["p1"].startswith("Exceeds the limit (4300 digits)")
    assert errors["p2"] == "expected_json_array"
    assert errors["p3"].startswith("labor_force_status:invalid_label:7777")
    assert result["num_valid"] == 0


@pytest.mark.parametrize(("raw", "message"), [
    (b'{"id": "p0", "prediction": "[\\"employed\\"]"}\n{"id": "p1", "prediction": "\xff"}\n',
     r"pred\.jsonl:2: byte 0xff is not UTF-8"),
    (b'{"id": "p0", "prediction": [' + b"9" * 5000 + b"]}\n",
     r"pred\.jsonl:1: Exceeds the limit \(4300 digits\)"),
    (b'{"id": "p0", "prediction": ' + b"[" * 5000 + b"]" * 5000 + b"}\n",
     r"pred\.jsonl:1: a value is nested too deep"),
    (b'{"id": "p0", "prediction": "x"\n', r"pred\.jsonl:1: invalid JSONL row"),
])
def test_unreadable_prediction_files_are_one_line_errors(tmp_path, raw, message):
    with pytest.raises(ScoringError, match=message) as info:
        _score_stage(tmp_path, "labor_cps_jobfind", JOBFIND_GOLD, [], raw_preds=raw)
    assert "\n" not in str(info.value)
