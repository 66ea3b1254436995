"""One name per metric for people: display name, one-sentence definition, direction, official.

The scorer's result JSON keys (`mean_relmae`, `relmae_by_target`, ...), the per-target stems
(`relmae.<field>`) and the MLflow metric keys are machine names and never change (they are
compared byte for byte with the reference). Everything a person reads (describe, the console,
the leaderboard's tables, report and figures) names a metric through this table instead, so a
metric has one name there. Definitions follow spec 00_common.md section 8.

`headline(result)` is the evaluate console's line about a scorer result: the official metric, its
direction, and how many rows were scored of how many and why the others were not.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hhx.scoring.parser import error_code


@dataclass(frozen=True)
class MetricName:
    """A metric as people read it, with the machine keys that carry it."""

    key: str  # the result JSON's task-level key (`metrics.<key>`), e.g. "mean_relmae"
    stem: str  # per-target/MLflow stem, e.g. "relmae" (relmae.<field>, relmae_by_target)
    name: str  # the one name people read
    definition: str  # one sentence
    higher_is_better: bool
    target_type: str  # numeric, categorical or distribution
    official: bool  # the task's official (primary) score for its target type

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"

    @property
    def label(self) -> str:
        """`mean RelMAE (lower is better)`: for axes, headers and console lines."""
        return f"{self.name} ({self.direction})"


METRICS: tuple[MetricName, ...] = (
    MetricName("mean_relmae", "relmae", "mean RelMAE",
               "per target, the model's total absolute error divided by the no-change forecast's "
               "on the same rows, averaged over targets (1 = as good as no-change, below 1 "
               "beats it; no-change itself scores exactly 1)", False, "numeric", True),
    MetricName("mean_nmae", "nmae", "mean nMAE",
               "per target, the mean absolute error divided by the population standard deviation "
               "of the true values, averaged over targets (a diagnostic, not ranked)",
               False, "numeric", False),
    MetricName("mean_macro_f1", "macro_f1", "mean macro-F1",
               "per field, the F1 score of every allowed label (0 for a label never predicted "
               "nor true) averaged over all labels, then averaged over fields (0 to 1)",
               True, "categorical", True),
    MetricName("mean_accuracy", "accuracy", "mean accuracy",
               "per field, the share of answers exactly right, averaged over fields (reported, "
               "not ranked)", True, "categorical", False),
    MetricName("mean_total_variation", "tv", "mean TV",
               "per distribution, the total variation distance (half the sum of absolute "
               "differences between predicted and reported probabilities; 0 = identical, 1 = "
               "disjoint) averaged over rows, then averaged over distributions",
               False, "distribution", True),
)

# Other spellings of the same metrics in hhx's machine outputs (console columns, scorer lists).
_ALIASES = {"total_variation": "mean_total_variation", "mean_tv": "mean_total_variation"}
_BY_NAME: dict[str, MetricName] = {}
for _m in METRICS:
    for _k in (_m.key, _m.stem, _m.name):
        _BY_NAME[_k] = _m
for _alias, _key in _ALIASES.items():
    _BY_NAME[_alias] = _BY_NAME[_key]


def metric(name: str) -> MetricName:
    """The metric for any of its names: result key, stem, display name or a known alias."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: "
                       f"{', '.join(m.key for m in METRICS)}") from None


def official(target_type: str) -> MetricName:
    """The official (primary) metric of a target type: numeric, categorical or distribution."""
    kind = str(getattr(target_type, "value", target_type))
    for m in METRICS:
        if m.official and m.target_type == kind:
            return m
    raise KeyError(f"unknown target type {kind!r}; known: numeric, categorical, distribution")


def reported(target_type: str) -> list[MetricName]:
    """Every metric the scorer reports for a target type, the official one first."""
    kind = str(getattr(target_type, "value", target_type))
    return sorted((m for m in METRICS if m.target_type == kind), key=lambda m: not m.official)


# --------------------------------------------------------------------------------------------
# The evaluate console's headline

NO_ANSWER = ("missing_prediction", "time_mismatch")


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def rows_line(n_scored: int, n_total: int, error_counts: Mapping[str, int] | None = None) -> str:
    """`scored 170 of 200 rows; 30 left out: 30 invalid answers (parse_failed 20, ...)`."""
    line = f"scored {n_scored:,} of {_plural(n_total, 'row')}"
    left = n_total - n_scored
    if left <= 0:
        return line + " (every answer valid)"
    families: Counter[str] = Counter()
    for error, count in (error_counts or {}).items():
        families[error_code(str(error))] += int(count)
    missing = sum(families.pop(code, 0) for code in NO_ANSWER)
    invalid = sum(families.values())
    parts = []
    if invalid:
        why = ", ".join(f"{code} {n:,}" for code, n in families.most_common())
        parts.append(f"{_plural(invalid, 'invalid answer')} ({why})")
    if missing:
        parts.append(f"{_plural(missing, 'row')} without an answer")
    if not parts:  # error counts not given: say only how many
        parts.append(_plural(left, "invalid or missing answer"))
    return (f"{line}; {left:,} left out of the score, as the official rule does: "
            + "; ".join(parts))


def headline(result: Mapping[str, Any], width: int = 100) -> str:
    """What a scorer result's numbers mean, for the console under its table: the official
    metric with its direction, its definition (indented, wrapped at `width`), then how many rows
    were scored of how many and why the others were not.

    `result` is `hhx.scoring.score_task`'s output (its `metrics`, `num_examples`, `num_valid`
    and `error_counts`)."""
    m = result["metrics"]
    kind = m.get("metric_category")
    primary = metric(str(m["primary_metric"])) if m.get("primary_metric") else official(kind)
    lines = [f"official metric: {primary.label}",
             *textwrap.wrap(primary.definition, width, initial_indent="  ",
                            subsequent_indent="  "),
             rows_line(int(result["num_valid"]), int(result["num_examples"]),
                       result.get("error_counts"))]
    return "\n".join(lines)
