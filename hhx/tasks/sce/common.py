"""Shared mechanics of the 13 SCE task builders (spec 20_tasks 0.6, 10_tasks 12).

Facts are the reference's task scripts (`scripts/2_tasks/<task>/01_make_table.py`,
`02_render_prompts.py`) and `scripts/1_preprocessing/sce.py`; the text below is hhx's own.

What every SCE builder shares, and how a builder uses it:

Table side
- `read_core(ctx, columns)`: the `sce_core` intermediate with `survey_date` / `release_date` as
  dates, only Core rows, sorted by (survey_date, respondent_id) as the reference starts; a
  column the intermediate lacks is an error naming it. Module tasks (issue 16) read their module
  the same way with `read_sce(ctx, "sce_household_spending", columns)` and left-join the Core
  context with `join_core(module, core, columns)` on (respondent_id, survey_year, survey_month).
- `attach_macro(frame, ctx)`: the 20 core macro columns for the survey-date quarter (origin =
  year * 4 + quarter, so lag1 = the last completed quarter); every row must be covered.
- `add_lag1(frame, {source: lag})`: the respondent's previous Core row (rows sorted by
  respondent_id, survey_date) as `lag1_*` columns plus `lag1_survey_date`, `lag1_panel_month`,
  `lag1_survey_month_index`; `contiguous_lag1(frame, lags)` is the reference's validity rule:
  panel_month and calendar month both exactly one apart and every lag value within 0-100
  (house_sce_move, labor_sce_risk, labor_sce_search, macro_sce_uncertainty).
- `monthly_cutoffs(frame, column, by)`: survey-month p01 / p99 (pandas linear quantiles) over
  every row holding a number; a month whose p01 equals its p99 is an error, as in the reference.
  Rows are kept strictly inside (`inside(values, p01, p99)`).
- `Steps`: the build report, every step and every filter with rows kept and dropped (the
  reference's `01_sample_construction_steps.csv` and drop-detail counts in one list).
- `CORE_LABELS` / `use_labels(frame)`: public categorical columns carry the `__label` text
  (`_HH_INC_DETAILED` -> "$50,000 to $59,999", `Q10_1` -> "yes", ...).
- Probabilities: single 0-100 items are published divided by 100 (`to_unit`); density bins
  (`normalize_bins`) are divided by their sum, rounded to 3 decimals with numpy (as pandas'
  `round`), and the rounding residual is added to the first largest bin so each vector sums
  to 1. Validity of densities (`Q9__task_valid` ...) and probabilities (`__clean`) comes from
  the survey builder (hhx.surveys.sce.microdata).
- `finish(frame, task, steps)`: the builder table in the release contract: id, time,
  release_date, targets, predictors, then internal `_` columns; `attrs["float_columns"]` lists
  numeric public columns held as floats (written `2.0` as the reference does).

Prompt side (wording is the reference renderers')
- Personas `LABOR_PERSONA`, `ECONOMY_PERSONA`, `HOUSEHOLD_ECONOMY_PERSONA`, `HOUSING_PERSONA`.
- `background(row)`: age (article rule), education, region, numeracy.
- `income_sentence(row)`: "between $X and $Y" / "less than $10,000" / "$200,000 or more".
- `finance_sentence(q1, q2, style)`: the Q1/Q2 sentence in the three styles the renderers use
  ("connector": "but" after worse -> same; "remain"; "contrast": both "about the same" special,
  otherwise "but", one-sided variants). The "about the same than" wording is kept (spec 12.1).
- `work_labels(row)` (Q10_1..5 "yes" items); `work_clause(row, task, search=...)`, the one
  chained work sentence of move / risk / income growth; `work_sentences(sentences, row, task)`,
  the separate work, job, employer, search and spell sentences of uncertainty / revision.
- `checked_label(value, allowed, column, task)`: the renderers' label check (lower-cased,
  whitespace collapsed).
- `binary_vector(p)`: `[round(1 - round(p, 3), 3), round(p, 3)]`, the answer and no-change
  vector of every binary probability item.

`suffix` arguments read the month-12 columns of macro_sce_revision (`_m12`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.macro.fred_qd import attach_macro_context
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import HOUSING_SYSTEM_PROMPT, LABOR_SYSTEM_PROMPT, article

CORE = "sce_core"
KEYS = ["respondent_id", "survey_year", "survey_month"]
STRUCTURAL = ["module", "respondent_id", "survey_year", "survey_month", "survey_date",
              "release_date", "release_date_source", "panel_month"]  # fmt: skip
# Raw code -> label column the public table shows (reference CORE_LABEL_OUTPUT_COLUMNS).
CORE_LABELS: dict[str, str] = {
    c: f"{c}__label"
    for c in ("_NUM_CAT", "_REGION_CAT", "_EDU_CAT", "_HH_INC_DETAILED", "Q1", "Q2", "Q10_1",
              "Q10_2", "Q10_3", "Q10_4", "Q10_5", "Q12new", "Q15", "Q43", "Q44", "D3", "Q45b")
}  # fmt: skip
CONTEXT = ["age_years", "_NUM_CAT", "_REGION_CAT", "_EDU_CAT", "_HH_INC_DETAILED", "panel_month"]

LABOR_PERSONA = LABOR_SYSTEM_PROMPT
HOUSING_PERSONA = HOUSING_SYSTEM_PROMPT
ECONOMY_PERSONA = (
    "You are an American adult making household decisions and forming expectations "
    "about your finances, work, and the economy."
)
HOUSEHOLD_ECONOMY_PERSONA = (
    "You are an American adult making household decisions and forming expectations "
    "about your finances, work, housing, and the economy."
)
EDUCATION_TEXT = {
    "High School": "have a high-school education",
    "Some College": "have some college education",
    "College": "have a college education or more",
}
REGION_TEXT = {"Midwest": "the Midwest", "Northeast": "the Northeast", "South": "the South",
               "West": "the West"}  # fmt: skip
NUMERACY_TEXT = {"High": "high", "Low": "low"}
FINANCE_CHANGE = frozenset({"much worse off", "somewhat worse off", "about the same",
                            "somewhat better off", "much better off"})  # fmt: skip
SELF_EMPLOYMENT = frozenset({"work for someone else", "are self-employed"})
YES_NO = frozenset({"yes", "no"})
TENURE = frozenset({"owns the home", "rents the home", "has another arrangement"})
WORK_STATUS = (
    ("Q10_1", "working full-time"),
    ("Q10_2", "working part-time"),
    ("Q10_3", "not working but would like to work"),
    ("Q10_4", "temporarily laid off or on leave from work"),
    ("Q10_5", "another current work attachment"),
)
BACKGROUND_INTRO = "Here is some background information about yourself and your household."


# --------------------------------------------------------------------------------------------
# Build report


class Steps:
    """Construction steps and their filters: rows kept and dropped (`table.attrs` report)."""

    def __init__(self, rows: int) -> None:
        self.rows: list[dict[str, Any]] = [
            {"step": "1 Start from source observations", "rows": int(rows), "dropped": 0}
        ]
        self.number = 1

    def step(self, label: str, before: int, after: int) -> None:
        self.number += 1
        self.rows.append({"step": f"{self.number} {label}", "rows": int(after),
                          "dropped": int(before) - int(after)})  # fmt: skip

    def filter(self, frame: pd.DataFrame, label: str,
               masks: Sequence[tuple[str, pd.Series | np.ndarray]]) -> pd.DataFrame:
        """Keep rows passing every mask; one report row per mask (counted on the step's input,
        as the reference's drop details) and one for the step."""
        keep = np.ones(len(frame), dtype=bool)
        details: list = []
        for name, mask in masks:
            m = _as_bool(mask)
            keep &= m
            details.append({"step": f"{self.number + 1}.{len(details) + 1} {name}",
                            "rows": int(m.sum()), "dropped": int((~m).sum())})  # fmt: skip
        self.step(label, len(frame), int(keep.sum()))
        self.rows[-1:-1] = details
        return frame.loc[keep]


def _as_bool(mask: pd.Series | np.ndarray) -> np.ndarray:
    if isinstance(mask, pd.Series):
        return mask.fillna(False).to_numpy(dtype=bool)
    return np.asarray(mask, dtype=bool)


# --------------------------------------------------------------------------------------------
# Reading and joining


def read_sce(ctx: BuildContext, name: str, columns: Iterable[str],
             structural: Sequence[str] = STRUCTURAL) -> pd.DataFrame:
    """One SCE intermediate's columns (structural ones included); dates parsed. Module tables
    without `tenure` have no panel_month: pass `structural` without it."""
    wanted = list(dict.fromkeys([*structural, *columns]))
    path = ctx.intermediate_dir / f"{name}.parquet"
    frame = ctx.intermediate(name, columns=wanted)
    for column in ("survey_date", "release_date"):
        frame[column] = pd.to_datetime(frame[column], errors="coerce")
        if frame[column].isna().any():
            raise DataError(f"{path}: column {column} is missing or not a date in some row; "
                            "rebuild it (survey=sce)")
    return frame


def read_core(ctx: BuildContext, columns: Iterable[str]) -> pd.DataFrame:
    """Core rows sorted by (survey_date, respondent_id), the reference's starting order."""
    frame = read_sce(ctx, CORE, columns)
    if not frame["module"].eq("core").all():
        raise DataError(f"{CORE}: holds rows of another module; rebuild it (survey=sce)")
    dup = frame.duplicated(KEYS)
    if dup.any():
        row = frame[dup].iloc[0]
        raise DataError(f"{CORE}: respondent {row['respondent_id']} appears twice in "
                        f"{row['survey_year']}-{int(row['survey_month']):02d}; rebuild it")
    return frame.sort_values(["survey_date", "respondent_id"], kind="mergesort").reset_index(
        drop=True)


def join_core(module: pd.DataFrame, core: pd.DataFrame, columns: Iterable[str],
              suffix: str = "") -> pd.DataFrame:
    """Left-join Core columns on the respondent-month (row count and order kept)."""
    cols = [c for c in dict.fromkeys(columns) if c not in KEYS]
    right = core[KEYS + cols].rename(columns={c: f"{c}{suffix}" for c in cols})
    out = module.merge(right, on=KEYS, how="left", validate="many_to_one",
                       suffixes=("", "_core"))
    if len(out) != len(module):
        raise DataError("joining the Core context changed the row count")
    return out


def origin_quarter(dates: pd.Series) -> pd.Series:
    return dates.dt.year * 4 + dates.dt.quarter


def attach_macro(frame: pd.DataFrame, ctx: BuildContext, dates: str = "survey_date",
                 suffix: str = "") -> pd.DataFrame:
    """The 20 core macro columns of the quarter before `dates`' quarter, for every row."""
    out = attach_macro_context(frame.reset_index(drop=True), origin_quarter(frame[dates]),
                               ctx.macro_context, suffix=suffix)
    return out.rename(columns={f"macro_reference_q_index{suffix}":
                               f"_macro_reference_q_index{suffix}"})


def month_index(dates: pd.Series) -> pd.Series:
    return dates.dt.year * 12 + dates.dt.month


# --------------------------------------------------------------------------------------------
# One-month lags


def add_lag1(frame: pd.DataFrame, lags: Mapping[str, str]) -> pd.DataFrame:
    """Previous row of the same respondent (rows sorted by respondent_id, survey_date)."""
    out = frame.sort_values(["respondent_id", "survey_date"], kind="mergesort").copy()
    out["survey_month_index"] = month_index(out["survey_date"])
    same = out["respondent_id"].to_numpy()
    prev = np.r_[False, same[1:] == same[:-1]]
    sources = {"survey_date": "lag1_survey_date", "panel_month": "lag1_panel_month",
               "survey_month_index": "lag1_survey_month_index", **lags}  # fmt: skip
    for source, lag in sources.items():
        shifted = out[source].shift(1)
        out[lag] = shifted.where(pd.Series(prev, index=out.index))
    return out


def contiguous_lag1(frame: pd.DataFrame, lag_columns: Iterable[str]) -> pd.Series:
    """Previous row one panel month and one calendar month earlier, lags within 0-100."""
    panel = pd.to_numeric(frame["panel_month"], errors="coerce").astype("float64")
    lag_panel = pd.to_numeric(frame["lag1_panel_month"], errors="coerce").astype("float64")
    ok = (frame["lag1_survey_date"].notna() & (panel - lag_panel).eq(1)
          & (frame["survey_month_index"] - frame["lag1_survey_month_index"]).eq(1))
    for column in lag_columns:
        ok &= pd.to_numeric(frame[column], errors="coerce").between(0, 100)
    return ok


def observed(frame: pd.DataFrame, columns: Iterable[str], what: str) -> list[tuple[str, Any]]:
    """`<what>_<col>_not_missing` masks (the reference's notna filters)."""
    return [(f"{what}_{c}_not_missing", frame[c].notna()) for c in columns]


def numeric(frame: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(frame[column], errors="coerce")


# --------------------------------------------------------------------------------------------
# Outlier cutoffs


def monthly_cutoffs(frame: pd.DataFrame, column: str,
                    by: Sequence[str] = ("survey_year", "survey_month"),
                    where: str = CORE) -> pd.DataFrame:
    """p01 / p99 per survey month over every row holding a number (one row per month)."""
    values = pd.to_numeric(frame[column], errors="coerce")
    ref = pd.DataFrame({k: frame[k] for k in by}).assign(_v=values)
    ref = ref[ref[list(by)].notna().all(axis=1) & ref["_v"].notna()]
    grouped = ref.groupby(list(by))["_v"]
    out = grouped.agg(n_reference="size", p01=lambda v: v.quantile(0.01),
                      p99=lambda v: v.quantile(0.99)).reset_index()
    if out.empty or out[["p01", "p99"]].isna().any().any():
        raise DataError(f"{where}: no survey-month cutoffs for {column} (no numeric values)")
    flat = out["p01"].eq(out["p99"])
    if flat.any():
        row = out[flat].iloc[0]
        raise DataError(
            f"{where}: {column} has the same 1st and 99th percentile ({row['p01']:g}) in "
            f"{int(row[by[0]])}-{int(row[by[1]]):02d} ({int(row['n_reference'])} values), so "
            "the outlier trim of the reference is undefined there; check that month's data"
        )
    return out


def attach_cutoffs(frame: pd.DataFrame, cutoffs: pd.DataFrame, column: str,
                   by: Sequence[str] = ("survey_year", "survey_month")) -> pd.DataFrame:
    names = {"p01": f"{column}_p01", "p99": f"{column}_p99"}
    small = cutoffs[[*by, "p01", "p99"]].rename(columns=names)
    out = frame.merge(small, on=list(by), how="left", validate="many_to_one")
    out.index = frame.index
    return out


def inside(frame: pd.DataFrame, column: str) -> pd.Series:
    """Strictly between the row's month p01 and p99 (a month without cutoffs is an error)."""
    low, high = frame[f"{column}_p01"], frame[f"{column}_p99"]
    if low.isna().any() or high.isna().any():
        raise DataError(f"{column}: eligible rows of a survey month without cutoffs")
    values = pd.to_numeric(frame[column], errors="coerce")
    return values.gt(low) & values.lt(high)


# --------------------------------------------------------------------------------------------
# Public values


def use_labels(frame: pd.DataFrame, labels: Mapping[str, str] = CORE_LABELS,
               suffix: str = "") -> pd.DataFrame:
    """Public categorical columns show the label text of their codes."""
    out = frame.copy()
    for column, label in labels.items():
        if f"{label}{suffix}" in out.columns:
            out[f"{column}{suffix}"] = out[f"{label}{suffix}"].astype("string")
    return out


def to_unit(frame: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """0-100 probabilities -> 0-1 (the published form of single probability items)."""
    out = frame.copy()
    for column in columns:
        out[column] = pd.to_numeric(out[column], errors="coerce") / 100
        if not out[column].between(0, 1).all():
            raise DataError(f"{column}: a probability outside 0-100 reached the table")
    return out


def normalize_bins(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Divide a density's bins by their sum, round to 3 decimals, put the residual on the first
    largest bin (sums taken left to right, as pandas does on these frames)."""
    values = np.column_stack([pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype="float64")
                              for c in columns])
    total = values[:, 0].copy()
    for j in range(1, values.shape[1]):
        total = total + values[:, j]
    if (total <= 0).any() or np.isnan(total).any():
        raise DataError(f"{columns[0]}...: a probability vector without a positive total")
    scaled = np.round(values / total[:, None], 3)
    summed = scaled[:, 0].copy()
    for j in range(1, scaled.shape[1]):
        summed = summed + scaled[:, j]
    residual = np.round(1 - summed, 3)
    top = np.argmax(scaled, axis=1)
    scaled[np.arange(len(scaled)), top] += residual
    out = frame.copy()
    for j, column in enumerate(columns):
        out[column] = scaled[:, j]
    check = out[list(columns)].sum(axis=1)
    if not ((out[list(columns)] >= 0) & (out[list(columns)] <= 1)).all().all() or not (
            (check - 1).abs() <= 1e-9).all():
        raise DataError(f"{columns[0]}...: normalised vector outside [0, 1] or not summing to 1")
    return out


def finish(frame: pd.DataFrame, task: TaskConfig, steps: Steps,
           internal: Iterable[str] = ()) -> pd.DataFrame:
    """Builder table: id, time, release_date, targets, predictors, then internal columns."""
    public = ["id", "time", "release_date", *task.targets, *task.prompt_predictors]
    absent = [c for c in public if c not in frame.columns]
    if absent:
        raise ConfigError(f"task {task.name}: columns {absent} are not built by its builder; "
                          f"check conf/task/{task.name}.yaml")
    extra = [c for c in internal if c not in public and c in frame.columns]
    renamed = {c: c if c.startswith("_") else f"_{c}" for c in extra}
    out = frame[public + extra].rename(columns=renamed).reset_index(drop=True)
    text = {"id", "time", "release_date", *task.categorical_predictors}
    out.attrs["construction_steps"] = steps.rows
    out.attrs["float_columns"] = [c for c in public if c not in text
                                  and pd.api.types.is_float_dtype(out[c])]
    return out


def keys(frame: pd.DataFrame, respondent: str = "respondent_id", date: str = "survey_date",
         release: str = "release_date") -> pd.DataFrame:
    """Public id (respondent id text), time and release_date (ISO dates)."""
    out = frame.copy()
    out["id"] = out[respondent].astype("string")
    out["time"] = out[date].dt.strftime("%Y-%m-%d")
    out["release_date"] = pd.to_datetime(out[release]).dt.strftime("%Y-%m-%d")
    return out


# --------------------------------------------------------------------------------------------
# Rendering


def present(value: Any) -> bool:
    if value is None or value is pd.NA:
        return False
    try:
        return not (isinstance(value, float) and math.isnan(value)) and not pd.isna(value)
    except (TypeError, ValueError):
        return True


def checked_label(value: Any, allowed: frozenset[str], column: str, task: str) -> str:
    label = " ".join(str(value).strip().split()).lower()
    if label not in allowed:
        raise DataError(f"{task}: {column} label {value!r} has no prompt wording "
                        f"(expected one of {sorted(allowed)})")
    return label


def optional_label(row: Mapping[str, Any], column: str, allowed: frozenset[str],
                   task: str) -> str | None:
    value = row.get(column)
    return checked_label(value, allowed, column, task) if present(value) else None


def _mapped(row: Mapping[str, Any], column: str, table: Mapping[str, str], task: str) -> str:
    value = str(row.get(column))
    if value not in table:
        raise DataError(f"{task}: {column} {row.get(column)!r} has no prompt wording "
                        f"(id {row.get('id')!r})")
    return table[value]


def background(row: Mapping[str, Any], task: str, suffix: str = "") -> str:
    """Age, education, region and numeracy sentence after the background intro."""
    age = int(round(float(row[f"age_years{suffix}"])))
    education = _mapped(row, f"_EDU_CAT{suffix}", EDUCATION_TEXT, task)
    region = _mapped(row, f"_REGION_CAT{suffix}", REGION_TEXT, task)
    numeracy = _mapped(row, f"_NUM_CAT{suffix}", NUMERACY_TEXT, task)
    return (f"{BACKGROUND_INTRO} You are {article(age)} {age}-year-old, {education}, "
            f"live in {region}, and have a {numeracy} numeracy score.")


def income_clause(label: str) -> str:
    if label == "Less than $10,000":
        return "less than $10,000"
    if label == "$200,000 or more":
        return "$200,000 or more"
    if " to " in label:
        lower, upper = label.split(" to ", maxsplit=1)
        return f"between {lower} and {upper}"
    raise DataError(f"unexpected detailed household-income label {label!r}")


def income_sentence(row: Mapping[str, Any], suffix: str = "") -> str:
    clause = income_clause(str(row[f"_HH_INC_DETAILED{suffix}"]))
    return f"Your household's total pre-tax income over the past 12 months was {clause}."


def finance_sentence(q1: str | None, q2: str | None, style: str) -> str | None:
    """The Q1 (vs 12 months ago) / Q2 (in 12 months) sentence; None when it is not shown."""
    if style == "contrast":
        if q1 and q2:
            if q1 == "about the same" and q2 == "about the same":
                return ("Your household is about as well off as it was 12 months ago, and you "
                        "expect your household finances to remain about the same 12 months "
                        "from now.")
            return (f"Your household is {q1} than it was 12 months ago, but you expect your "
                    f"household finances to be {q2} 12 months from now.")
        if q1:
            return f"Your household is {q1} than it was 12 months ago."
        if q2:
            return f"You expect your household finances to be {q2} 12 months from now."
        return None
    if not (q1 and q2):
        return None
    if style == "remain":
        return (f"Your household is {q1} than it was 12 months ago, and you expect it to remain "
                f"{q2} 12 months from now.")
    if style == "connector":
        connector = "but" if "worse" in q1 and "same" in q2 else "and"
        return (f"Your household is {q1} than it was 12 months ago, {connector} you expect your "
                f"household finances to be {q2} 12 months from now.")
    raise ConfigError(f"unknown finance sentence style {style!r}")


def finance_labels(row: Mapping[str, Any], task: str, suffix: str = ""
                   ) -> tuple[str | None, str | None]:
    return (optional_label(row, f"Q1{suffix}", FINANCE_CHANGE, task),
            optional_label(row, f"Q2{suffix}", FINANCE_CHANGE, task))


def finance_sentences(row: Mapping[str, Any], task: str, style: str, suffix: str = ""
                      ) -> list[str]:
    """The income sentence, then the Q1/Q2 sentence in `style` when it is shown."""
    q1, q2 = finance_labels(row, task, suffix)
    finance = finance_sentence(q1, q2, style)
    return [income_sentence(row, suffix), *([finance] if finance else [])]


def work_labels(row: Mapping[str, Any], task: str, suffix: str = "") -> list[str]:
    """The Q10 work-status items answered "yes", in questionnaire order."""
    out = []
    for column, label in WORK_STATUS:
        value = row.get(f"{column}{suffix}")
        if present(value) and checked_label(value, YES_NO, column, task) == "yes":
            out.append(label)
    return out


def count_between(row: Mapping[str, Any], column: str, low: float, high: float,
                  include_high: bool = True) -> int | None:
    """Rounded whole number when the value lies in [low, high] (or [low, high))."""
    value: Any = row.get(column)
    if not present(value):
        return None
    x = float(value)
    if x < low or (x > high if include_high else x >= high):
        return None
    return int(round(x))


def plural(n: int, word: str) -> str:
    return f"{n} {word if n == 1 else word + 's'}"


def binary_vector(p: float) -> list[float]:
    """[no event, event] from a 0-1 probability, as the renderers round it."""
    event = round(float(p), 3)
    return [round(1 - event, 3), event]


def work_clause(row: Mapping[str, Any], task: str, *, search: bool) -> str:
    """The chained work sentence of move / risk / income growth (no full stop): the work item
    ("You work full-time", several items listed), the job count (0 <= Q11 < 20), the employer
    type; with `search` also ", and you are [not] currently looking for a job" and the months
    unemployed (Q16) and out of work (Q19) when 0-240, appended even to an empty sentence as
    the reference does."""
    labels = work_labels(row, task)
    sentence = ""
    if labels:
        sentence = (f"You work {labels[0].replace('working ', '')}" if len(labels) == 1
                    else f"Your current work situation includes {', '.join(labels)}")
    jobs = count_between(row, "Q11", 0, 20, include_high=False)
    if jobs is not None:
        have = f"currently have {plural(jobs, 'paid job')}"
        sentence = f"{sentence} and {have}" if sentence else f"You {have}"
    employer = optional_label(row, "Q12new", SELF_EMPLOYMENT, task)
    if employer and sentence:
        sentence += f", and you {employer}"
    if not search:
        return sentence
    looking = optional_label(row, "Q15", YES_NO, task)
    if looking:
        sentence += (", and you are currently looking for a job" if looking == "yes"
                     else ", and you are not currently looking for a job")
    unemployed = count_between(row, "Q16", 0, 240)
    if unemployed is not None:
        sentence += f", and you have been unemployed for {plural(unemployed, 'month')}"
    out_of_work = count_between(row, "Q19", 0, 240)
    if out_of_work is not None:
        sentence += f", and you have been out of work for {plural(out_of_work, 'month')}"
    return sentence


def work_sentences(sentences: list[str], row: Mapping[str, Any], task: str,
                   suffix: str = "") -> None:
    """Append the work sentences of macro_sce_uncertainty / macro_sce_revision to `sentences`:
    "You work full-time" / "You work part-time" (no full stop unless the job count follows, as
    the reference writes it) or the item list; the job count; "For the relevant job, you ...";
    the search answer; months unemployed (Q16) and out of work (Q19) when 0-240."""
    labels = work_labels(row, task, suffix)
    if labels == ["working part-time"]:
        sentences.append("You work part-time")
    elif labels == ["working full-time"]:
        sentences.append("You work full-time")
    elif labels:
        sentences.append(f"Your current work situation includes {', '.join(labels)}")
    jobs = count_between(row, f"Q11{suffix}", 0, 20, include_high=False)
    if jobs is not None:
        have = f"currently have {plural(jobs, 'paid job')}."
        if sentences[-1].startswith("You work"):
            sentences[-1] += f" and {have}"
        else:
            sentences.append(f"You {have}")
    employer = optional_label(row, f"Q12new{suffix}", SELF_EMPLOYMENT, task)
    if employer:
        sentences.append(f"For the relevant job, you {employer}.")
    looking = optional_label(row, f"Q15{suffix}", YES_NO, task)
    if looking:
        sentences.append("You are currently looking for a job." if looking == "yes"
                         else "You are not currently looking for a job.")
    unemployed = count_between(row, f"Q16{suffix}", 0, 240)
    if unemployed is not None:
        sentences.append(f"You have been unemployed for {plural(unemployed, 'month')}.")
    out_of_work = count_between(row, f"Q19{suffix}", 0, 240)
    if out_of_work is not None:
        sentences.append(f"You have been out of work for {plural(out_of_work, 'month')}.")
