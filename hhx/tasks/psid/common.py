"""Shared PSID mechanics of the five PSID task builders (spec 10_tasks_cons_house_income.md 7,
20_tasks_labor_macro.md 6; facts from the reference's scripts/utils/psid.py and the tasks'
01_make_table.py / 02_render_prompts.py).

Panels, from `psid_main` (hhx.surveys.psid.shelf):
- waves: annual 1968-1997, biennial 1999-2021; rows of other waves are dropped. The contiguous
  next (previous) wave of a row is the adjacent wave of that schedule (a gap of 1 or 2 years);
- family panel: rows with response == 0 and is_reference_person (one row per reference person
  id x wave: a "family" is followed through its reference person's id); person panel: rows with
  response == 0 and sample_person. Each row needs release_date and release_date_source (an error
  names the wave otherwise). Rows are ordered by id, then wave (stable);
- history: up to three contiguous earlier waves of the same id, nearest first (lag 1 = the
  previous wave), stopping at the first gap;
- outlier cutoffs: per survey year over the whole panel (before task filters), p01 and p99 by
  pandas' linear quantile over the non-missing values; a year with p01 == p99 is an error. Trims
  keep values strictly inside (p01, p99); a history value is trimmed with its own year's cutoffs;
- macro context: origin quarter year * 4 + 1, i.e. the four quarters ending Q4 of the year
  before the wave.
Prompt pieces shared by the three panel tasks (phrases for sex, race, region, metro; "N years
ago" with number words up to ten) are the reference renderers' wording.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TargetType, TaskConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS, attach_macro_context
from hhx.surveys.psid.main_study import EXPECTED_WAVES
from hhx.tasks.context import BuildContext

INTERMEDIATE = "psid_main"
WAVES: tuple[int, ...] = EXPECTED_WAVES
NEXT_WAVE = dict(zip(WAVES[:-1], WAVES[1:], strict=True))
PREV_WAVE = dict(zip(WAVES[1:], WAVES[:-1], strict=True))
MAX_HISTORY = 3

# --------------------------------------------------------------------------------------------
# Build report


class Steps:
    """Rows kept after each filter (the build report, `table.attrs["construction_steps"]`)."""

    def __init__(self, step: str, rows: int) -> None:
        self.rows: list[dict[str, Any]] = [{"step": step, "rows": int(rows), "dropped": 0}]

    def note(self, step: str, rows: int) -> None:
        before = self.rows[-1]["rows"]
        self.rows.append({"step": step, "rows": int(rows), "dropped": int(before - rows)})

    def apply(self, keep: np.ndarray, filters: Sequence[tuple[str, Any]]) -> np.ndarray:
        """AND each (name, mask) into `keep`, one report row per filter."""
        keep = keep.copy()
        for name, mask in filters:
            keep &= np.asarray(mask, dtype=bool)
            self.note(name, int(keep.sum()))
        return keep


# --------------------------------------------------------------------------------------------
# Panels


def load_panel(ctx: BuildContext, kind: str, columns: Sequence[str]) -> pd.DataFrame:
    """The family (`kind="family"`) or person panel with `columns`, ordered by id and wave."""
    flag = {"family": "is_reference_person", "person": "sample_person"}[kind]
    wanted = list(dict.fromkeys(["id", "year", "release_date", "release_date_source", *columns]))
    ctx.intermediate_path(INTERMEDIATE, [*wanted, "response", flag])  # all named in one line
    keys = ctx.intermediate(INTERMEDIATE, columns=["year", "response", flag])
    keep = (keys["response"].eq(0).fillna(False) & keys[flag].fillna(False).astype(bool)
            & keys["year"].isin(WAVES)).to_numpy(dtype=bool)
    del keys
    panel = ctx.intermediate(INTERMEDIATE, columns=wanted, rows=np.flatnonzero(keep))
    panel = panel.reset_index(drop=True)
    no_date = panel["release_date"].isna() | panel["release_date_source"].isna()
    if no_date.any():
        wave = int(panel.loc[no_date, "year"].iloc[0])
        raise DataError(
            f"{INTERMEDIATE}: no release_date for wave {wave} ({int(no_date.sum())} {kind}-panel "
            "rows); build survey psid with raw.release_dates (release_dates/release_psid.csv)"
        )
    panel["id"] = panel["id"].astype("int64")
    panel["year"] = panel["year"].astype("int64")
    if panel.duplicated(["id", "year"]).any():
        raise DataError(f"{INTERMEDIATE}: the {kind} panel repeats an id in a wave")
    return panel.sort_values(["id", "year"], kind="mergesort").reset_index(drop=True)


@dataclass
class PanelStart:
    """What the three panel tasks start from: the panel with its macro context, the build report
    opened on it, the per-year cutoffs of the trimmed variables, each row's history positions, and
    the output frame's first columns (`_year`, `id`, `time` = the wave's 1 January)."""

    panel: pd.DataFrame
    steps: Steps
    cuts: dict[str, pd.DataFrame]
    lags: list[np.ndarray]
    out: pd.DataFrame

    @property
    def ids(self) -> np.ndarray:
        return self.panel["id"].to_numpy()

    @property
    def years(self) -> np.ndarray:
        return self.panel["year"].to_numpy()


def start_panel_table(ctx: BuildContext, task: str, kind: str, columns: Sequence[str],
                      trimmed: Sequence[str], optional_macro: Sequence[str] = ()) -> PanelStart:
    """Load the `kind` panel with `columns`, attach the macro context (`optional_macro` may be
    missing at attach), and open the table every panel task builds on."""
    panel = load_panel(ctx, kind, columns)
    panel = attach_macro(panel, panel["year"], ctx, optional=optional_macro)
    universe = {"family": "family-panel waves (reference persons, response 0)",
                "person": "person-panel waves (sample persons, response 0)"}[kind]
    steps = Steps(universe, len(panel))
    cuts = {v: year_cutoffs(panel, v, task) for v in trimmed}
    years = panel["year"].to_numpy()
    lags = history_positions(panel["id"].to_numpy(), years)
    out = pd.DataFrame({"_year": years})
    out["id"] = panel["id"].astype(str)
    out["time"] = panel["year"].astype(str) + "-01-01"
    return PanelStart(panel, steps, cuts, lags, out)


def _waves(years: np.ndarray, table: dict[int, int]) -> np.ndarray:
    return np.array([table.get(int(y), -1) for y in years], dtype=np.int64)


def next_positions(ids: np.ndarray, years: np.ndarray) -> np.ndarray:
    """Position of each row's contiguous next wave of the same id (rows sorted), else -1."""
    n = len(ids)
    out = np.full(n, -1, dtype=np.int64)
    if n < 2:
        return out
    ok = (ids[1:] == ids[:-1]) & (years[1:] == _waves(years[:-1], NEXT_WAVE))
    out[:-1][ok] = np.arange(1, n)[ok]
    return out


def history_positions(ids: np.ndarray, years: np.ndarray,
                      depth: int = MAX_HISTORY) -> list[np.ndarray]:
    """Positions of lag 1..depth (contiguous earlier waves, nearest first), -1 after a gap."""
    n = len(ids)
    prev = np.full(n, -1, dtype=np.int64)
    if n > 1:
        ok = (ids[:-1] == ids[1:]) & (years[:-1] == _waves(years[1:], PREV_WAVE))
        prev[1:][ok] = np.arange(0, n - 1)[ok]
    lags, cursor = [], np.arange(n)
    for _ in range(depth):
        cursor = np.where(cursor >= 0, prev[np.maximum(cursor, 0)], -1)
        lags.append(cursor.copy())
    return lags


def take(values: pd.Series | np.ndarray, positions: np.ndarray) -> pd.Series:
    """values[positions] with missing where a position is -1 (values keep their dtype)."""
    series = values if isinstance(values, pd.Series) else pd.Series(values)
    series = series.reset_index(drop=True)
    picked = series.take(np.maximum(positions, 0)).reset_index(drop=True)
    return picked.where(pd.Series(positions >= 0))


# --------------------------------------------------------------------------------------------
# Outlier cutoffs


def year_cutoffs(panel: pd.DataFrame, variable: str, task: str) -> pd.DataFrame:
    """year, p01, p99 of `variable` over the panel's non-missing values (linear quantile)."""
    values = pd.to_numeric(panel[variable], errors="coerce")
    reference = pd.DataFrame({"year": panel["year"], variable: values})[values.notna()]
    if reference.empty:
        return pd.DataFrame({"year": pd.Series(dtype="int64"), "p01": pd.Series(dtype=float),
                             "p99": pd.Series(dtype=float)})
    cut = reference.groupby("year")[variable].quantile([0.01, 0.99]).unstack()
    cut = cut.rename(columns={0.01: "p01", 0.99: "p99"}).reset_index()
    bad = cut["p01"].eq(cut["p99"])
    if bad.any():
        raise DataError(
            f"task {task}: degenerate annual cutoffs for {variable} in years "
            f"{cut.loc[bad, 'year'].astype(int).tolist()} (p01 == p99)"
        )
    return cut


def cutoffs_at(cut: pd.DataFrame, years: pd.Series | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p01, p99) for each year (NaN where the year has no cutoffs or is missing)."""
    table = cut.set_index("year")
    index = pd.Index(pd.to_numeric(pd.Series(years), errors="coerce"))
    return (table["p01"].reindex(index).to_numpy(np.float64),
            table["p99"].reindex(index).to_numpy(np.float64))


def strictly_inside(values: Any, p01: np.ndarray, p99: np.ndarray) -> np.ndarray:
    x = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(np.float64)
    with np.errstate(invalid="ignore"):
        return (x > p01) & (x < p99)


def half_even_int(values: Any) -> pd.Series:
    """int(round(x)) of the reference (round half to even), missing stays missing."""
    x = pd.to_numeric(pd.Series(values), errors="coerce").astype("float64")
    return pd.Series(np.round(x.to_numpy()), index=x.index).astype("Int64")


# --------------------------------------------------------------------------------------------
# Macro context and the public table


def attach_macro(frame: pd.DataFrame, years: pd.Series, ctx: BuildContext,
                 optional: Sequence[str] = ()) -> pd.DataFrame:
    """Core macro (required) and `optional` columns for the wave's origin quarter year*4 + 1."""
    origin = pd.Series(years).astype("int64") * 4 + 1
    out = attach_macro_context(frame, origin, ctx.macro_context, list(CORE_MACRO_COLUMNS),
                               optional=list(optional))
    return out.rename(columns={"macro_reference_q_index": "_macro_reference_q_index"})


def text(values: pd.Series) -> pd.Series:
    """Labels as text (categoricals included); missing stays missing."""
    series = pd.Series(values)
    return series.astype(object).where(series.notna()).astype("string")


def public_table(frame: pd.DataFrame, task: TaskConfig, module: str, *,
                 integer_columns: Sequence[str]) -> pd.DataFrame:
    """The task's public columns in order, then the frame's internal `_` columns.

    The five reference PSID scripts collect their rows as Python values and let pandas type
    each column (no cast before the CSV): a value read from a float64 column of psid_main (or
    of the event layers built from it: amounts, ages, years of schooling, family size, hours),
    a sum of such values, a `float(...)` and a target are floats, written `3.0` even when every
    value is whole. The targets are floats too where the script rounds them to ints, because the
    frame also holds rows without a target (None) until the target filter. Only the columns a
    script builds as ints on every row (`integer_columns`: years since a history wave, the
    forecast horizon) are written as integers (`2`; with a missing value they are floats too,
    which the release writer's `csvnum.is_integer_column` rule already gives). So
    `attrs["float_columns"]` lists every other numeric public column.
    """
    public = ["id", "time", "release_date", *task.targets, *task.prompt_predictors]
    unknown = [c for c in public if c not in frame.columns]
    if unknown:
        raise ConfigError(
            f"task {task.name}: columns {unknown} are not built by {module}; check "
            f"conf/task/{task.name}.yaml"
        )
    internal = [c for c in frame.columns if str(c).startswith("_") and c not in public]
    table = frame[public + internal].reset_index(drop=True)
    text = {"id", "time", "release_date", *task.categorical_predictors}
    if task.target_type is TargetType.categorical:
        text |= set(task.targets)
    integers = set(integer_columns)
    table.attrs["float_columns"] = [c for c in public if c not in text and c not in integers]
    return table


# --------------------------------------------------------------------------------------------
# Prompt pieces

SEX_PHRASES = {"Male": "man", "Female": "woman"}
RACE_PHRASES = {"White": "White", "Black": "Black", "Hispanic": "Hispanic",
                "Other race": "other race or ethnicity"}
REGION_PHRASES = {
    "Northeast": "the Northeast", "Midwest": "the Midwest", "South": "the South",
    "West": "the West", "Alaska or Hawaii": "Alaska or Hawaii",
    "Country outside the United States": "a country outside the United States",
}
METRO_PHRASES = {"Yes, metropolitan area": "metropolitan area",
                 "No, non-metropolitan area": "non-metropolitan area"}
NUMBER_WORDS = {1: "One", 2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven",
                8: "Eight", 9: "Nine", 10: "Ten"}
PARTNERED = "Yes, reference person has a spouse or partner in the family unit"
NOT_PARTNERED = "No, reference person has no spouse or partner in the family unit"
MARRIED = "Yes, reference person is legally married to a spouse in the family unit"
NOT_MARRIED = "No, reference person is not legally married to a spouse in the family unit"


def has_value(value: Any) -> bool:
    if value is None or value is pd.NA:
        return False
    try:
        return not (isinstance(value, float | np.floating) and math.isnan(value))
    except TypeError:
        return True


def number(row: Mapping[str, Any], column: str, task: str) -> float:
    value: Any = row.get(column)
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if not math.isfinite(x):
        raise DataError(f"task {task} id {row.get('id')!r}: {column} is missing ({value!r})")
    return x


def whole(row: Mapping[str, Any], column: str, task: str) -> int:
    """int(round(float(value))) as the renderers write it (half to even)."""
    return int(round(number(row, column, task)))


def phrase(row: Mapping[str, Any], column: str, phrases: Mapping[str, str], task: str) -> str:
    """The wording of a required label; a missing or unknown label is an error."""
    value = row.get(column)
    label = str(value).strip() if has_value(value) else ""
    if label not in phrases:
        raise DataError(f"task {task} id {row.get('id')!r}: {column} label {value!r} has no "
                        "prompt wording")
    return phrases[label]


def optional_phrase(row: Mapping[str, Any], column: str, phrases: Mapping[str, str],
                    task: str) -> str | None:
    """As `phrase`, but None for a missing label or one starting with "N/A"."""
    value = row.get(column)
    if not has_value(value):
        return None
    label = str(value).strip()
    if not label or label.startswith("N/A"):
        return None
    return phrase(row, column, phrases, task)


def years_ago(value: Any, task: str, *, lower: bool = False) -> str:
    """"Two years ago" (number words to ten, digits beyond)."""
    n = int(round(float(value)))
    if n <= 0:
        raise DataError(f"task {task}: elapsed years must be positive, got {n}")
    text_ = f"{NUMBER_WORDS.get(n, str(n))} {'year' if n == 1 else 'years'} ago"
    return text_.lower() if lower else text_


def people(n: int) -> str:
    return f"{n} {'person' if n == 1 else 'people'}"
