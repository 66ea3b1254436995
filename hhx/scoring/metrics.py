"""Official metrics, fixed by target type (spec 00_common.md section 8).

numeric: RelMAE against the no-change baseline (nMAE diagnostic); categorical: macro-F1 over all
labels and accuracy; distribution: mean total variation. Sums use Python's built-in `sum` and
means `statistics.fmean`/`pstdev`, as the reference does, so results agree to the last bit.
Rows are answer lists in the task's answer order, as `parse_answer` returns them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from statistics import fmean, pstdev
from typing import Any

from hhx.config import TaskConfig
from hhx.scoring.parser import AnswerSpec, answer_spec

NUMERIC_DIAGNOSTICS = ["nmae_by_target", "mean_nmae"]


def official_metrics(task: TaskConfig | AnswerSpec) -> list[str]:
    kind = answer_spec(task).target_type
    return {"numeric": ["relmae"], "categorical": ["macro_f1", "accuracy"],
            "distribution": ["total_variation"]}[kind]


def diagnostic_metrics(task: TaskConfig | AnswerSpec) -> list[str]:
    return ["nmae"] if answer_spec(task).target_type == "numeric" else []


# --------------------------------------------------------------------------------------------
# Atomic metrics (one field)


def _same_length(a: Sequence[Any], b: Sequence[Any]) -> None:
    if len(a) != len(b):
        raise ValueError(
            f"predictions and references must have equal length ({len(a)} != {len(b)})")


def relmae(preds: Sequence[float], refs: Sequence[float], naives: Sequence[float],
           name: str = "value") -> float:
    """Σ|pred − ref| / Σ|naive − ref|; a zero denominator makes the field unscorable."""
    _same_length(preds, refs)
    _same_length(naives, refs)
    model_error = sum(abs(p - r) for p, r in zip(preds, refs))
    naive_error = sum(abs(b - r) for b, r in zip(naives, refs))
    if naive_error == 0:
        raise ValueError(f"{name}:zero_naive_baseline_error")
    return model_error / naive_error


def nmae(preds: Sequence[float], refs: Sequence[float]) -> float | None:
    """MAE / population SD of the references; None when the references are constant."""
    _same_length(preds, refs)
    if not refs:
        return None
    mae = sum(abs(p - r) for p, r in zip(preds, refs)) / len(refs)
    sd = pstdev(refs)
    return mae / sd if sd > 0 else None


def accuracy(preds: Sequence[Any], refs: Sequence[Any]) -> float:
    """Share of exact matches; NaN for no rows."""
    _same_length(preds, refs)
    if not preds:
        return math.nan
    return sum(p == r for p, r in zip(preds, refs)) / len(preds)


def macro_f1(preds: Sequence[Any], refs: Sequence[Any], labels: Sequence[Any]) -> float:
    """Mean F1 over ALL `labels`, absent ones included (F1 = 0 when 2TP+FP+FN = 0); NaN if empty."""
    _same_length(preds, refs)
    if not preds:
        return math.nan
    pred_n, ref_n = Counter(preds), Counter(refs)
    tp_n = Counter(p for p, r in zip(preds, refs) if p == r)
    scores = []
    for label in labels:
        tp = tp_n[label]
        denominator = 2 * tp + (pred_n[label] - tp) + (ref_n[label] - tp)
        scores.append(2 * tp / denominator if denominator else 0.0)
    return fmean(scores)


def total_variation(p: Sequence[float], q: Sequence[float]) -> float:
    """0.5 × Σ|p_k − q_k|."""
    if len(p) != len(q):
        raise ValueError(f"probability vectors must have equal length ({len(p)} != {len(q)})")
    return 0.5 * sum(abs(a - b) for a, b in zip(p, q))


# --------------------------------------------------------------------------------------------
# Per-target dictionaries


def _column(rows: Sequence[Sequence[Any]], j: int) -> list[Any]:
    return [row[j] for row in rows]


def relmae_by_field(task: TaskConfig | AnswerSpec, preds: Sequence[Sequence[float]],
                    refs: Sequence[Sequence[float]], naives: Sequence[Sequence[float]]
                    ) -> dict[str, float]:
    spec = answer_spec(task)
    return {name: relmae([float(v) for v in _column(preds, j)],
                         [float(v) for v in _column(refs, j)],
                         [float(v) for v in _column(naives, j)], name)
            for j, name in enumerate(spec.names)}


def nmae_by_field(task: TaskConfig | AnswerSpec, preds: Sequence[Sequence[float]],
                  refs: Sequence[Sequence[float]]) -> dict[str, float | None]:
    spec = answer_spec(task)
    return {name: nmae([float(v) for v in _column(preds, j)], [float(v) for v in _column(refs, j)])
            for j, name in enumerate(spec.names)}


def _empty(kind: str) -> dict[str, Any]:
    if kind == "numeric":
        return {"metric_category": "numeric", "primary_metric": "mean_relmae",
                "primary_score": None, "score_direction": "lower_is_better",
                "relmae_by_target": {}, "mean_relmae": None, "nmae_by_target": {},
                "mean_nmae": None, "diagnostic_metrics": list(NUMERIC_DIAGNOSTICS)}
    if kind == "categorical":
        return {"metric_category": "categorical", "primary_metric": "mean_macro_f1",
                "primary_score": None, "score_direction": "higher_is_better",
                "macro_f1_by_target": {}, "mean_macro_f1": None, "accuracy_by_target": {},
                "mean_accuracy": None}
    return {"metric_category": "distribution", "primary_metric": "mean_total_variation",
            "primary_score": None, "score_direction": "lower_is_better",
            "tv_by_distribution": {}, "mean_total_variation": None}


def compute_metrics(task: TaskConfig | AnswerSpec, preds: list[list], refs: list[list],
                    naives: list[list] | None = None) -> dict[str, Any]:
    """Task metrics over the valid rows; keys exactly as the reference scorer's `metrics`.

    Numeric tasks need one naive row per scored row; other tasks must not get any.
    No rows -> `primary_score: None` and empty per-target dicts.
    """
    spec = answer_spec(task)
    kind = spec.target_type
    _same_length(preds, refs)
    if kind == "numeric":
        if naives is None or len(naives) != len(refs):
            raise ValueError(
                f"{spec.task}: numeric tasks require one naive baseline per scored example")
    elif naives is not None:
        raise ValueError(f"{spec.task}: naive baselines are only accepted for numeric task scoring")
    if not preds:
        return _empty(kind)
    out = _empty(kind)

    if kind == "numeric":
        assert naives is not None
        rel = relmae_by_field(spec, preds, refs, naives)
        nm = nmae_by_field(spec, preds, refs)
        usable = [v for v in nm.values() if v is not None]
        out.update(relmae_by_target=rel, mean_relmae=fmean(rel.values()), nmae_by_target=nm,
                   mean_nmae=fmean(usable) if usable else None)
        out["primary_score"] = out["mean_relmae"]
    elif kind == "categorical":
        f1 = {name: macro_f1(_column(preds, j), _column(refs, j), spec.labels[j])
              for j, name in enumerate(spec.names)}
        acc = {name: accuracy(_column(preds, j), _column(refs, j))
               for j, name in enumerate(spec.names)}
        out.update(macro_f1_by_target=f1, mean_macro_f1=fmean(f1.values()),
                   accuracy_by_target=acc, mean_accuracy=fmean(acc.values()))
        out["primary_score"] = out["mean_macro_f1"]
    else:
        tv = {name: fmean(total_variation(p[j], r[j]) for p, r in zip(preds, refs))
              for j, name in enumerate(spec.names)}
        out.update(tv_by_distribution=tv, mean_total_variation=fmean(tv.values()))
        out["primary_score"] = out["mean_total_variation"]
    return out
