"""house_census_move: where a person lives now relative to five years ago (1990, 2000 censuses).

Facts: shared/spec/10_tasks_cons_house_income.md 22 and the reference's
`scripts/2_tasks/house_census_move/` (Jn-Huang/householdbench_eval @148abfb).
Unit: a person of the IPUMS USA 1990 or 2000 1% sample. `id` = YEAR-SAMPLE-SERIAL-PERNUM, `time`
= YEAR-01-01, origin year = YEAR - 5. Target from MIGRATE5: 1 stay, 2 move_within_state,
3 move_to_different_state; no-change baseline `["stay"]`. The census has no panel: split by row.

Universe (evaluated together): YEAR 1990 or 2000; AGE - 5 >= 30; MIGRATE5 1, 2 or 3; origin state
(STATEFIP when MIGRATE5 is 1 or 2, MIGPLAC5 when 3) one of the 50 states + DC. Predictors:
age_origin = AGE - 5; sex = SEX label; race_ethnicity = "<RACE label>, <HISPAN label in lower
case>" ("White, not hispanic"), or "<HISPAN label>, Hispanic" when HISPAN is not 0; education =
EDUC label; origin_state = STATEFIP label (stayers, movers within the state) or MIGPLAC5 label;
state and U.S. conditions of year origin - 1 from the state macro panel (unemployment rate,
per-capita income growth, house-price growth); core macro context with origin quarter index
origin_year*4 + 1 (four quarters ending Q4 of origin - 1), required for every universe row.
Rows lacking a state condition or a prompt label are dropped. No trimming.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import STATE_MACRO_COLUMNS, attach_macro_context
from hhx.tasks.context import BuildContext
from hhx.tasks.contract import PromptRules
from hhx.tasks.prompting import HOUSING_SYSTEM_PROMPT, article, month_note, response_instruction

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, house_census_move).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "house_census_move"
PROMPT_RULES = PromptRules(housing_persona=True)
INTERMEDIATE = "census_decennial"
PANEL = "state_macro_panel"
YEARS = (1990, 2000)
VALID_STATES = frozenset({1, 2, 4, 5, 6, 8, 9, 10, 11, 12, 13, 15, 16, 17, 18, 19, 20, 21, 22,
                          23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
                          41, 42, 44, 45, 46, 47, 48, 49, 50, 51, 53, 54, 55, 56})
TARGETS = {1: "stay", 2: "move_within_state", 3: "move_to_different_state"}
USECOLS = ["YEAR", "SAMPLE", "SERIAL", "PERNUM", "AGE", "SEX_label", "RACE_label", "HISPAN",
           "HISPAN_label", "EDUC_label", "STATEFIP", "STATEFIP_label", "MIGRATE5", "MIGPLAC5",
           "MIGPLAC5_label", "release_date", "release_date_source"]
# state macro panel column -> task column
PANEL_COLUMNS = {"unemployment_rate": "state_unemployment_rate_origin",
                 "pcpi_growth_1y": "state_pcpi_growth_origin",
                 "hpi_growth_1y": "state_house_price_growth_origin",
                 "us_unemployment_rate": "us_unemployment_rate_origin",
                 "us_pcpi_growth_1y": "us_pcpi_growth_origin",
                 "us_hpi_growth_1y": "us_house_price_growth_origin"}
PROMPT_LABELS = ["sex", "race_ethnicity", "education", "origin_state"]
UNIVERSE = ["YEAR 1990 or 2000", "age five years ago 30 or older", "MIGRATE5 1, 2 or 3",
            "origin state one of the 50 states + DC"]

SEX_PHRASES = {"female": "woman", "male": "man"}
QUESTION = ("Compared with where you lived five years ago, do you now live at the same "
            "residence, at a different residence in the same state, or in a different state?")
RESPONSE_LEAD = ('Return only a valid JSON array containing exactly one string, using one of: '
                 '"stay", "move_within_state", "move_to_different_state".')


def state_conditions(ctx: BuildContext) -> pd.DataFrame:
    """origin_state_code, state_macro_reference_year and the six conditions (complete)."""
    need = ["statefip", "year", *PANEL_COLUMNS]
    out = ctx.intermediate(PANEL, columns=need)[need].rename(columns={"statefip": "origin_state_code",
                                      "year": "state_macro_reference_year", **PANEL_COLUMNS})
    for column in out.columns:
        out[column] = pd.to_numeric(out[column], errors="coerce")
    if out.isna().any().any():
        raise DataError(f"{PANEL}.parquet has missing values; rebuild survey=state_macro_panel")
    if out.duplicated(["origin_state_code", "state_macro_reference_year"]).any():
        raise DataError(f"{PANEL}.parquet repeats a state-year; rebuild survey=state_macro_panel")
    return out.astype({"origin_state_code": "int64", "state_macro_reference_year": "int64"})


def _text(frame: pd.DataFrame, column: str) -> pd.Series:
    text = frame[column].astype("string").str.strip()
    return text.mask(text == "")


def _batches(ctx: BuildContext) -> Iterator[pd.DataFrame]:
    pf = pq.ParquetFile(ctx.intermediate_path(INTERMEDIATE, USECOLS))
    for group in range(pf.num_row_groups):
        yield pf.read_row_group(group, columns=USECOLS).to_pandas()


def eligible_rows(batch: pd.DataFrame, counts: dict[str, int]) -> pd.DataFrame:
    """The universe rows of one batch with keys, target and prompt labels."""
    keys = {}
    for column in ("YEAR", "SAMPLE", "SERIAL", "PERNUM"):
        values = pd.to_numeric(batch[column], errors="coerce")
        if values.isna().any():
            raise DataError(f"{INTERMEDIATE}.parquet: {column} is missing in some rows")
        keys[column] = values.astype("int64")
    age = pd.to_numeric(batch["AGE"], errors="coerce").round().astype("Int64")
    migrate = pd.to_numeric(batch["MIGRATE5"], errors="coerce").round().astype("Int64")
    state = pd.to_numeric(batch["STATEFIP"], errors="coerce").round().astype("Int64")
    place = pd.to_numeric(batch["MIGPLAC5"], errors="coerce").round().astype("Int64")
    hispan = pd.to_numeric(batch["HISPAN"], errors="coerce").astype("Int64")
    hispan_label = _text(batch, "HISPAN_label")
    race = _text(batch, "RACE_label") + ", " + hispan_label.str.lower()
    race = race.mask((hispan.notna() & (hispan != 0)).fillna(False), hispan_label + ", Hispanic")
    stays = migrate.isin([1, 2]).fillna(False).astype(bool)
    moved = (migrate == 3).fillna(False).astype(bool)
    origin_code = state.where(stays, place.where(moved))
    origin = _text(batch, "STATEFIP_label").where(
        stays, _text(batch, "MIGPLAC5_label").where(moved))
    release = pd.to_datetime(batch["release_date"], errors="coerce")
    source = _text(batch, "release_date_source")
    if release.isna().any() or source.isna().any():
        raise DataError(f"{INTERMEDIATE}.parquet: release_date or its source is missing in some "
                        "rows; rebuild survey=census")
    masks = [keys["YEAR"].isin(YEARS), (age - 5 >= 30).fillna(False), migrate.isin([1, 2, 3]),
             origin_code.isin(sorted(VALID_STATES))]
    keep = np.ones(len(batch), dtype=bool)
    for name, mask in zip(UNIVERSE, masks, strict=True):
        passed = np.asarray(mask.fillna(False), dtype=bool)
        counts[name] = counts.get(name, 0) + int((keep & ~passed).sum())
        keep &= passed
    year = keys["YEAR"][keep]
    out = pd.DataFrame({
        "id": (year.astype(str) + "-" + keys["SAMPLE"][keep].astype(str) + "-"
               + keys["SERIAL"][keep].astype(str) + "-" + keys["PERNUM"][keep].astype(str)),
        "time": year.astype(str) + "-01-01",
        "release_date": release[keep].dt.strftime("%Y-%m-%d"),
        "target": migrate[keep].astype("int64").map(TARGETS),
        "age_origin": (age[keep] - 5).astype("Int64"),
        "sex": _text(batch, "SEX_label")[keep],
        "race_ethnicity": race[keep],
        "education": _text(batch, "EDUC_label")[keep],
        "origin_state": origin[keep],
        "origin_state_code": origin_code[keep].astype("int64"),
        "origin_year": year - 5,
        "_release_date_source": source[keep],
    })
    out["state_macro_reference_year"] = out["origin_year"] - 1
    return out.reset_index(drop=True)


def build_table(ctx: BuildContext) -> pd.DataFrame:
    task = ctx.task
    panel = state_conditions(ctx)
    counts: dict[str, int] = {}
    dropped = {c: 0 for c in [*STATE_MACRO_COLUMNS, *PROMPT_LABELS]}
    source_rows, parts = 0, []
    for batch in _batches(ctx):
        source_rows += len(batch)
        rows = eligible_rows(batch, counts)
        if rows.empty:
            continue
        rows = rows.merge(panel, on=["origin_state_code", "state_macro_reference_year"],
                          how="left", validate="many_to_one")
        rows = attach_macro_context(rows, rows["origin_year"] * 4 + 1, ctx.macro_context)
        keep = np.ones(len(rows), dtype=bool)
        for column in dropped:
            present = rows[column].notna().to_numpy(dtype=bool)
            dropped[column] += int((keep & ~present).sum())
            keep &= present
        parts.append(rows[keep])
    if not parts:
        raise DataError(f"task {TASK}: no person of the 1990 or 2000 samples is in the universe")
    pool = pd.concat(parts, ignore_index=True)
    del parts  # the batches' rows, now copied into the pool
    steps = [{"step": "person records", "rows": source_rows, "dropped": 0}]
    left = source_rows
    for name in UNIVERSE:
        left -= counts.get(name, 0)
        steps.append({"step": name, "rows": left, "dropped": counts.get(name, 0)})
    for column, n in dropped.items():
        left -= n
        steps.append({"step": f"{column} present", "rows": left, "dropped": n})

    pool = pool.rename(columns={"origin_state_code": "_origin_statefip",
                                "state_macro_reference_year": "_state_macro_reference_year",
                                "macro_reference_q_index": "_macro_reference_q_index"})
    public = ["id", "time", "release_date", *task.targets, *task.prompt_predictors]
    absent = [c for c in public if c not in pool.columns]
    if absent:
        raise DataError(f"task {TASK}: the builder makes no column(s) {absent}; check "
                        f"conf/task/{TASK}.yaml")
    internal = ["_origin_statefip", "_state_macro_reference_year", "_macro_reference_q_index",
                "_release_date_source"]
    out = pool[public + internal]
    out.attrs["construction_steps"] = steps
    out.attrs["float_columns"] = [c for c in public[4:]
                                  if pd.api.types.is_float_dtype(out[c])]
    return out


def _lower_initial(text: str) -> str:
    return text[:1].lower() + text[1:]


def _label(row: Mapping[str, Any], column: str) -> str:
    value = row.get(column)
    text = "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
    if not text.strip() or value is pd.NA:
        raise DataError(f"task {TASK}: {column} is missing for id {row.get('id')!r}")
    return text.strip()


def _pct(row: Mapping[str, Any], column: str) -> str:
    return f"{float(row[column]):.2f}%"


def _path(row: Mapping[str, Any], prefix: str) -> str:
    values = [_pct(row, f"{prefix}_lag{k}") for k in (4, 3, 2, 1)]
    return f"{values[0]}, {values[1]}, {values[2]}, and {values[3]}"


def macro_paragraph(row: Mapping[str, Any]) -> str:
    """The core macro values, worded as the quarters before the five-year period began."""
    return (
        "You are also aware of national economic conditions before that five-year period began. "
        "Over the four calendar quarters immediately before that period, listed from oldest to "
        f"most recent, U.S. real GDP changed by {_path(row, 'gdp_growth_qoq')} quarter over "
        f"quarter; the unemployment rate was {_path(row, 'unemployment_rate')}; overall consumer "
        f"prices changed by {_path(row, 'headline_cpi_qoq')} quarter over quarter; and the "
        f"effective federal funds rate was {_path(row, 'fedfunds_rate')}. Over the five years "
        "ending in the last of those four quarters, compound average quarterly real GDP growth "
        f"was {_pct(row, 'gdp_growth_qoq_5y_compound')}, the average unemployment rate was "
        f"{_pct(row, 'unemployment_rate_5y_mean')}, compound average quarterly CPI inflation was "
        f"{_pct(row, 'headline_cpi_qoq_5y_compound')}, and the average effective federal funds "
        f"rate was {_pct(row, 'fedfunds_rate_5y_mean')}."
    )


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    sex = _label(row, "sex").casefold()
    if sex not in SEX_PHRASES:
        raise DataError(f"task {TASK}: unexpected sex label {sex!r} for id {row.get('id')!r}")
    race = _lower_initial(_label(row, "race_ethnicity")).replace("not hispanic", "not Hispanic")
    age = int(round(float(row["age_origin"])))
    background = (
        "Here is some background information about yourself and where you lived five years ago. "
        f"{month_note(4, False)} Five years ago, you were {article(age)} {age}-year-old {race} "
        f"{SEX_PHRASES[sex]} with {_lower_initial(_label(row, 'education'))}. Your state of "
        f"residence five years ago was {_label(row, 'origin_state').title()}."
    )
    conditions = (
        "You are also aware of annual state and national conditions in the completed calendar "
        "year immediately before that five-year period began. Unemployment in your state was "
        f"{_pct(row, 'state_unemployment_rate_origin')}, compared with "
        f"{_pct(row, 'us_unemployment_rate_origin')} nationally; per-capita personal income was "
        f"growing at {_pct(row, 'state_pcpi_growth_origin')} in your state and "
        f"{_pct(row, 'us_pcpi_growth_origin')} nationally; and house prices were growing at "
        f"{_pct(row, 'state_house_price_growth_origin')} in your state and "
        f"{_pct(row, 'us_house_price_growth_origin')} nationally."
    )
    user = "\n\n".join([background, macro_paragraph(row), conditions, QUESTION,
                        response_instruction(task, lead=RESPONSE_LEAD)])
    return HOUSING_SYSTEM_PROMPT, user


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No move: the same residence as five years ago."""
    return ["stay"]
