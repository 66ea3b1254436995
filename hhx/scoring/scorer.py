"""Join gold prompt records with predictions, parse, and score (spec 00_common.md 7.2-7.4).

Invalid or missing answers are excluded from the metrics (never imputed) and reported with
their reason; numeric baselines are restricted to the same valid rows. The result dictionary has
the reference scorer's fields, so official and hhx result files can be compared key by key.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hhx.bounds import enum_text
from hhx.config import TaskConfig
from hhx.io import write_text_atomic
from hhx.scoring.metrics import compute_metrics, diagnostic_metrics, official_metrics
from hhx.scoring.parser import (
    AnswerSpec,
    ScoringError,
    answer_spec,
    parse_answer,
    parse_gold,
    parse_naive_baseline,
)

PREDICTION_FIELDS = ("prediction", "raw_output", "response", "model_output", "assistant")

# (row, row_index, require_key) -> the string that joins gold and prediction rows.
RowKey = Callable[[dict[str, Any], int, bool], str]


# --------------------------------------------------------------------------------------------
# Row keys


def _key_example_id(row: dict[str, Any], index: int, require_key: bool = False) -> str:
    for name in ("example_id", "id"):
        if row.get(name) is not None:
            return str(row[name])
    if require_key:
        raise ScoringError(
            f"Prediction row {index} is missing required field 'example_id' or 'id'",
            side="predictions")
    return str(index)


def _key_id(row: dict[str, Any], index: int, require_key: bool = False) -> str:
    if row.get("id") is not None:
        return str(row["id"])
    return _key_example_id(row, index, require_key)


def _key_id_time(gold_rows: list[dict[str, Any]]) -> RowKey:
    """Key "<id>@<time>"; a prediction without time maps by id only if gold ids are unique."""
    ids = [str(row["id"]) for row in gold_rows]
    unique = len(set(ids)) == len(ids)
    key_of_id = {str(r["id"]): f"{r['id']}@{r['time']}" for r in gold_rows} if unique else {}

    def key(row: dict[str, Any], index: int, require_key: bool = False) -> str:
        if row.get("id") is None:
            return _key_example_id(row, index, require_key)
        if row.get("time") is not None:
            return f"{row['id']}@{row['time']}"  # exact string: "2020-03-01T00:00:00" differs
        if not unique:
            raise ScoringError(
                f"Prediction row {index} (id {row['id']!r}) has no 'time': this task's gold rows "
                "repeat ids across periods, so predictions need both 'id' and 'time'",
                side="predictions")
        return key_of_id.get(str(row["id"]), str(row["id"]))

    return key


def select_row_key(gold_rows: list[dict[str, Any]]) -> tuple[RowKey, bool]:
    """Choose the join key from the gold rows and check gold keys are unique.

    Any `example_id` -> example_id (fallback id, then row index); else every row with id and
    time -> "<id>@<time>"; else id (fallback row index). Returns (key function, keyed on time).
    """
    key: RowKey
    if any(row.get("example_id") is not None for row in gold_rows):
        key, on_time = _key_example_id, False
    elif gold_rows and all(r.get("id") is not None and r.get("time") is not None
                           for r in gold_rows):
        key, on_time = _key_id_time(gold_rows), True
    else:
        key, on_time = _key_id, False
    seen: set[str] = set()
    for index, row in enumerate(gold_rows):
        k = key(row, index, False)
        if k in seen:
            raise ScoringError(
                f"Gold rows repeat the key {k!r} (row {index}); every gold row needs a unique "
                "example_id, id, or (id, time)", side="gold")
        seen.add(k)
    return key, on_time


def _index_predictions(rows: list[dict[str, Any]], key: RowKey) -> dict[str, dict[str, Any]]:
    indexed: dict[str, dict[str, Any]] = {}
    duplicates: set[str] = set()
    for index, row in enumerate(rows):
        k = key(row, index, True)
        if k in indexed:
            duplicates.add(k)
        indexed[k] = row
    if duplicates:
        shown = ", ".join(sorted(duplicates)[:10])
        raise ScoringError(f"Duplicate prediction ids: {shown}", side="predictions")
    return indexed


def raw_prediction(row: dict[str, Any], prediction_field: str | None = None) -> Any:
    """The response of a prediction row; raises ValueError (a per-row error) if absent."""
    if prediction_field is not None:
        if prediction_field not in row:
            raise ValueError(
                f"Prediction row has no configured response field {prediction_field!r}")
        return row[prediction_field]
    for name in PREDICTION_FIELDS:
        if name in row:
            return row[name]
    raise ValueError(
        f"Prediction row has no response field. Accepted fields: {', '.join(PREDICTION_FIELDS)}")


# --------------------------------------------------------------------------------------------
# Scoring


def _as_record(spec: AnswerSpec, value: list | None) -> dict[str, Any] | None:
    # Details carry {field: value} records, as the reference result files do.
    return None if value is None else dict(zip(spec.names, value))


def score_task(
    task: TaskConfig,
    gold_rows: list[dict[str, Any]],
    pred_rows: list[dict[str, Any]],
    *,
    prediction_field: str | None = None,
    repair_number_formatting: bool = False,
    repair_distribution_nesting: bool = False,
    include_details: bool = True,
) -> dict[str, Any]:
    """Score one task's predictions against its gold prompt records (result fields of 7.3)."""
    spec = answer_spec(task)
    numeric = spec.target_type == "numeric"
    key, on_time = select_row_key(gold_rows)
    predictions = _index_predictions(pred_rows, key)
    predicted_ids = {str(row["id"]) for row in pred_rows if row.get("id") is not None}

    valid_preds: list[list] = []
    valid_refs: list[list] = []
    valid_naives: list[list] = []
    valid_ids: list[str] = []
    invalid: list[dict[str, str]] = []
    details: list[dict[str, Any]] = []
    errors: Counter[str] = Counter()
    matched: set[str] = set()
    repaired = 0

    for index, gold in enumerate(gold_rows):
        example = key(gold, index, False)
        try:
            reference = parse_gold(spec, gold.get("assistant"))
            naive = parse_naive_baseline(spec, gold.get("naive_baseline")) if numeric else None
        except ScoringError as exc:
            raise ScoringError(f"{exc} (gold row {index}, key {example!r})", side="gold") from None

        pred_row = predictions.get(example)
        if pred_row is None:
            error: str | None = (
                "time_mismatch" if on_time and str(gold.get("id")) in predicted_ids
                else "missing_prediction")
            raw, parsed, was_repaired = None, None, False
        else:
            matched.add(example)
            error, raw, parsed, was_repaired = _judge(
                spec, pred_row, prediction_field, repair_number_formatting,
                repair_distribution_nesting)

        if error is None:
            assert parsed is not None
            valid_preds.append(parsed)
            valid_refs.append(reference)
            if naive is not None:
                valid_naives.append(naive)
            valid_ids.append(example)
            repaired += int(was_repaired)
        else:
            errors[error] += 1
            invalid.append({"id": example, "error": error})
        if include_details:
            details.append(_detail(spec, example, error, raw, parsed, reference, naive,
                                   was_repaired))

    try:
        metrics = compute_metrics(spec, valid_preds, valid_refs, valid_naives if numeric else None)
    except ValueError as exc:
        if "zero_naive_baseline_error" not in str(exc):
            raise
        raise ScoringError(
            f"{spec.task}: {exc}: the no-change baseline is exact on every valid row for this "
            "field, so RelMAE is undefined and the task cannot be scored") from None

    out = _counts(task, spec.task, gold_rows, pred_rows, predictions, matched, valid_ids,
                  repaired)
    out.update({"error_counts": dict(errors), "valid_example_ids": valid_ids,
                "invalid_examples": invalid, "metrics": metrics})
    if include_details:
        out["details"] = details
    return out


def _judge(spec: Any, pred_row: dict[str, Any], prediction_field: str | None,
           repair_number_formatting: bool, repair_distribution_nesting: bool,
           ) -> tuple[str | None, Any, list | None, bool]:
    """One prediction read and parsed strictly: (error or None, raw text, parsed answer,
    repaired)."""
    try:
        raw = raw_prediction(pred_row, prediction_field)
    except ValueError as exc:
        return str(exc), None, None, False
    result = parse_answer(spec, raw, repair_number_formatting=repair_number_formatting,
                          repair_distribution_nesting=repair_distribution_nesting)
    error = None if result.valid else (result.error if result.error is not None else "parse_failed")
    return error, raw, result.value, result.repaired


def _detail(spec: Any, example: str, error: str | None, raw: Any, parsed: list | None,
            reference: list, naive: list | None, repaired: bool) -> dict[str, Any]:
    """One example's details row: exactly the reference's keys, in its order."""
    return {
        "id": example,
        "valid": error is None,
        "raw_prediction": raw,
        "parsed_prediction": _as_record(spec, parsed),
        "reference": _as_record(spec, reference),
        "naive_baseline": _as_record(spec, naive),
        "error": error,
        "repaired": repaired,
    }


def _counts(task: Any, name: str, gold_rows: list[dict[str, Any]],
            pred_rows: list[dict[str, Any]], predictions: dict[str, Any], matched: set[str],
            valid_ids: list[str], repaired: int) -> dict[str, Any]:
    """The result's head: counts and rates, in the reference's key order."""
    total = len(gold_rows)
    extra = sorted(set(predictions) - matched)
    return {
        "task": name,
        "mode": _mode(task),
        "num_examples": total,
        "num_predictions": len(pred_rows),
        "num_valid": len(valid_ids),
        "num_invalid": total - len(valid_ids),
        "num_repaired": repaired,
        "valid_response_rate": len(valid_ids) / total if total else 0.0,
        "coverage_rate": len(matched) / total if total else 0.0,
        "num_extra_predictions": len(extra),
        "extra_prediction_ids": extra,
    }


def _mode(task: Any) -> str:
    return enum_text(getattr(task, "mode", ""))


def load_jsonl(path: str | os.PathLike[str], side: str) -> list[dict[str, Any]]:
    """The reference's JSONL reading (lines stripped, blank lines skipped, one object per line),
    where every failure is one line naming the file and line: invalid JSON, an integer beyond
    Python's digit limit, nesting too deep to decode, a byte that is not UTF-8."""
    p = Path(path)
    if not p.is_file():
        raise ScoringError(f"{p}: file not found", side=side)
    rows: list[dict[str, Any]] = []
    try:
        with p.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                text = line.strip()
                if not text:
                    continue
                try:
                    row = json.loads(text)
                except json.JSONDecodeError as exc:
                    raise ScoringError(f"{p}:{lineno}: invalid JSONL row: {exc}", side) from None
                except RecursionError:
                    raise ScoringError(
                        f"{p}:{lineno}: a value is nested too deep to decode", side) from None
                except ValueError as exc:  # int() digit limit
                    raise ScoringError(f"{p}:{lineno}: {str(exc).split(';')[0]}", side) from None
                if not isinstance(row, dict):
                    raise ScoringError(f"{p}:{lineno}: expected JSON object row", side)
                rows.append(row)
    except UnicodeDecodeError:
        raise ScoringError(_utf8_error(p), side) from None
    return rows


def _utf8_error(path: Path) -> str:
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return (f"{path}:{line}: byte 0x{data[exc.start]:02x} is not UTF-8; "
                "save the file as UTF-8")
    return f"{path}: not UTF-8; save the file as UTF-8"


def result_json(result: dict[str, Any]) -> str:
    """The result as the reference scorer writes it: `json.dump(indent=2, sort_keys=True)` plus
    a newline; NaN and infinite numbers as Python's NaN / Infinity / -Infinity tokens."""
    return json.dumps(result, indent=2, sort_keys=True) + "\n"


def write_result(path: str | os.PathLike[str], result: dict[str, Any]) -> Path:
    """Write `result_json(result)` atomically."""
    return write_text_atomic(Path(path), result_json(result))


def score_files(
    task: TaskConfig,
    gold_path: str | os.PathLike[str],
    pred_path: str | os.PathLike[str],
    **kw: Any,
) -> dict[str, Any]:
    """`score_task` on two JSONL files; input errors name the file at fault."""
    gold, preds = load_jsonl(gold_path, "gold"), load_jsonl(pred_path, "predictions")
    try:
        return score_task(task, gold, preds, **kw)
    except ScoringError as exc:
        where = {"gold": gold_path, "predictions": pred_path}.get(exc.side or "")
        if where is None:
            raise
        raise ScoringError(f"{where}: {exc}", side=exc.side) from None


def describe(task: TaskConfig) -> dict[str, Any]:
    """The task's answer format as the reference `describe` prints it, plus its metrics."""
    spec = answer_spec(task)
    kind = "categorical" if spec.target_type == "categorical" else "numeric"
    is_dist = spec.target_type == "distribution"
    fields = [] if is_dist else [
        {"name": n, "kind": kind, "labels": list(lab)} for n, lab in zip(spec.names, spec.labels)]
    dists = [{"name": n, "labels": list(lab)} for n, lab in zip(spec.names, spec.labels)] \
        if is_dist else []
    return {
        "name": spec.task,
        "mode": _mode(task),
        "output_shape": spec.shape,
        "target_type": spec.target_type,
        "fields": fields,
        "distributions": dists,
        "summary": getattr(task, "description", ""),
        "official_metrics": official_metrics(spec),
        "diagnostic_metrics": diagnostic_metrics(spec),
    }
