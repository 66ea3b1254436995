"""Shared mechanics of the four CEX Interview task builders (cons_cex_total, cons_cex_categories,
cons_cex_rebate01, cons_cex_stimulus08): facts from shared/spec/10_tasks_cons_house_income.md
section 1 and the reference's `scripts/2_tasks/cons_cex_*/01_make_table.py` and
`02_render_prompts.py` (Jn-Huang/householdbench_eval), reproduced as rules, not code.

Panel (`load_panel`): every row of `cex_interview.parquet`; ids stripped, NEWID 8 digits;
`q_index` = year*4 + quarter, `interview_month_index` = year*12 + month, `n_adults` =
max(fam_size - n_kids, 0). The label columns are the intermediate's `sex_ref_label`,
`race_ref_harmonized`, `educ_ref_harmonized`, `marital1_label`, `region_label`,
`bls_urbn_label`, renamed to the public names. A missing id, release date or release-date
source, two interviews of one panel id in one month or one quarter are errors (the reference
stops there too).

Cutoffs (`attach_cutoffs`): p01 and p99 (pandas linear quantile of each group, as the
reference computes them) of `income_before_tax` and `cons_parker_total` per (interview_year,
quarter) over all panel rows with the value present, before any task filter; p01 >= p99 is an
error. Lags carry their own quarter's cutoffs.

Lags (`add_lags`): rows sorted by (cex_panel_id, interview_month_index,
interview_position_harmonized); lag k = the panel's k-th previous row. Lag k is usable only if
its month index is exactly 3k months earlier, its required history columns are present and
lags 1..k-1 are usable (prefix rule); unusable lags are blanked, all their columns.

Filters (`validity_filters`, `trim_filters`): current income >= 1000, current Parker total >= 250,
each listed amount >= 0; for each present lag: Parker total >= 250, each listed amount >= 0. Trim:
strictly inside the period's (p01, p99) for current income, current Parker total and each
present lag's Parker total. The build report lists each step with rows kept and dropped and,
below it, each filter with the rows it fails on its own (the reference's drop details).

Numbers in the public table: the reference writes the table from its frame, whose dtypes come
from its intermediate's CSV round trip: an Interview column is integer there only when every
record has an integral value (age_ref, fam_size, n_kids and n_adults usually are), so
`float_columns` (the release writer's hint) lists a column when the intermediate holds a missing
or fractional value; spending, lags and macro values are always floats there.

Prompt pieces: the reference renderers' sentences (persona, background, spending history with
"between three and six months ago" labels oldest first, the month note, income) and the
answers: each amount `int(numpy.round(x))` (half to even).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS, attach_macro_context
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import article, format_dollars, month_note

INTERVIEW = "cex_interview"
SYSTEM_PROMPT = (
    "You are the head of an American household making decisions and forming "
    "expectations about income, spending, and saving."
)
LAG_LABELS = {
    1: "between three and six months ago",
    2: "between six and nine months ago",
    3: "between nine and twelve months ago",
}
LAGS = (1, 2, 3)
EXPENDITURES = ["cons_parker_total", "cons_nondurables", "cons_durables"]
RENAMES = {
    "sex_ref_label": "sex_ref",
    "marital1_label": "marital1",
    "region_label": "region",
    "bls_urbn_label": "bls_urbn",
}
LABEL_COLUMNS = ["sex_ref", "race_ref_harmonized", "educ_ref_harmonized", "marital1", "region",
                 "bls_urbn"]
DEMOGRAPHICS = ["age_ref", "sex_ref", "race_ref_harmonized", "educ_ref_harmonized", "marital1",
                "n_kids", "fam_size", "region", "bls_urbn"]
KEYS = ["newid", "cu_id", "cex_panel_id", "interview_year", "interview_month", "quarter"]
PANEL_INPUTS = [
    "newid", "cu_id", "cex_panel_id", "interview_year", "interview_month", "quarter",
    "interview_position_harmonized", "age_ref", "sex_ref_label", "race_ref_harmonized",
    "educ_ref_harmonized", "marital1_label", "n_kids", "fam_size", "region_label",
    "bls_urbn_label", "income_before_tax", "release_date", "release_date_source",
]  # fmt: skip
TRIMMED = ["income_before_tax", "cons_parker_total"]
CUTOFF_COLUMNS = [f"{v}_{p}" for v in TRIMMED for p in ("p01", "p99")]
# Columns whose dtype follows the intermediate (integer there when always integral).
DATA_TYPED = ["age_ref", "fam_size", "n_kids", "income_before_tax"]


# --------------------------------------------------------------------------------------------
# Build report


class Steps:
    """Construction steps (rows kept, dropped) and, below each, its filters' own fail counts."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def step(self, label: str, before: int, after: int) -> None:
        self.rows.append({"step": label, "rows": int(after), "dropped": int(before - after),
                          "filter": "", "fails": pd.NA})

    def detail(self, filter_id: str, mask: pd.Series, unread: int = 0) -> pd.Series:
        self.rows.append({"step": "", "rows": pd.NA, "dropped": pd.NA, "filter": filter_id,
                          "fails": int((~mask).sum()) + unread})
        return mask

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["step", "rows", "dropped", "filter", "fails"])


def apply(frame: pd.DataFrame, steps: Steps, label: str,
          filters: Iterable[tuple[str, pd.Series]],
          unread: tuple[int, Mapping[str, int]] = (0, {})) -> pd.DataFrame:
    """Keep the rows passing every filter; the step and each filter go to the report.
    `unread`: entering rows that were never read (all failing a filter) and, by filter, how many
    of them fail it; the report counts them as if read and dropped."""
    n_unread, unread_fails = unread
    keep = pd.Series(True, index=frame.index)
    for filter_id, mask in filters:
        keep &= steps.detail(filter_id, mask.fillna(False).astype(bool),
                             unread_fails.get(filter_id, 0))
    out = frame.loc[keep].copy()
    steps.step(label, len(frame) + n_unread, len(out))
    return out


# --------------------------------------------------------------------------------------------
# Panel


def _rebuild_hint(ctx: BuildContext) -> str:
    return f"rebuild it with `python -m hhx stage=build task={ctx.task.name}`"


def load_panel(ctx: BuildContext, extra: Sequence[str] = ()) -> pd.DataFrame:
    """Every interview with the columns the task reads, typed as the module notes say."""
    path = ctx.intermediate_dir / f"{INTERVIEW}.parquet"
    columns = list(dict.fromkeys([*PANEL_INPUTS, *extra]))
    cex = ctx.intermediate(INTERVIEW, columns=columns).rename(columns=RENAMES)
    text = {"newid", "cu_id", "cu_id_raw", "cex_panel_id", "release_date", "release_date_source",
            *LABEL_COLUMNS}
    for column in cex.columns:
        if column in text:
            cex[column] = cex[column].astype("string")
        else:
            cex[column] = pd.to_numeric(cex[column], errors="coerce")
    for column in [c for c in ("newid", "cu_id", "cu_id_raw", "cex_panel_id") if c in cex]:
        cex[column] = cex[column].str.strip()
        if (cex[column].isna() | cex[column].eq("")).any():
            raise DataError(f"{path}: column {column} has missing values; {_rebuild_hint(ctx)}")
    cex["newid"] = cex["newid"].str.zfill(8)
    release = pd.to_datetime(cex["release_date"], errors="coerce")
    if release.isna().any():
        raise DataError(
            f"{path}: {int(release.isna().sum())} interviews have no release_date; set "
            "survey.raw.release_crosswalk of cex_interview (the reference's release_cex.csv) "
            f"and {_rebuild_hint(ctx)}"
        )
    cex["release_date"] = release
    source = cex["release_date_source"]
    if (source.isna() | source.str.strip().eq("")).any():
        raise DataError(f"{path}: release_date_source is missing; give the crosswalk a source "
                        "column and rebuild")
    for column in ("interview_year", "interview_month", "quarter"):
        if cex[column].isna().any():
            raise DataError(f"{path}: column {column} has missing values; {_rebuild_hint(ctx)}")
        cex[column] = cex[column].astype("int64")
    cex["q_index"] = cex["interview_year"] * 4 + cex["quarter"]
    cex["interview_month_index"] = cex["interview_year"] * 12 + cex["interview_month"]
    cex["n_adults"] = (cex["fam_size"] - cex["n_kids"]).clip(lower=0)
    for key, what in ((["cex_panel_id", "interview_month_index"], "one interview month"),
                      (["cex_panel_id", "interview_year", "quarter"], "one interview quarter")):
        dup = cex.duplicated(key, keep=False)
        if dup.any():
            row = cex.loc[dup].iloc[0]
            raise DataError(f"{path}: cex_panel_id {row['cex_panel_id']} has two interviews in "
                            f"{what} ({row['interview_year']}-{row['interview_month']:02d})")
    cex.attrs["float_columns"] = float_data_columns(cex)
    return cex


def float_data_columns(cex: pd.DataFrame) -> list[str]:
    """The DATA_TYPED columns the reference holds as floats (a missing or fractional value)."""
    out = []
    for column in DATA_TYPED:
        values = cex[column].to_numpy(dtype="float64", na_value=np.nan)
        if np.isnan(values).any() or (values % 1 != 0).any():
            out.append(column)
    if {"fam_size", "n_kids"} & set(out):
        out.append("n_adults")
    return out


def attach_cutoffs(cex: pd.DataFrame, task: str) -> pd.DataFrame:
    """Per (interview_year, quarter) p01/p99 of income and Parker total over all panel rows."""
    out = cex
    for variable in TRIMMED:
        reference = cex.loc[cex[variable].notna(), ["interview_year", "quarter", variable]]
        cutoffs = reference.groupby(["interview_year", "quarter"])[variable].agg(
            p01=lambda values: values.quantile(0.01),
            p99=lambda values: values.quantile(0.99),
        ).reset_index()
        bad = cutoffs["p01"].ge(cutoffs["p99"])
        if bad.any():
            row = cutoffs.loc[bad].iloc[0]
            raise DataError(
                f"task {task}: {variable} cutoffs of {int(row['interview_year'])}Q"
                f"{int(row['quarter'])} are degenerate (p01 {row['p01']} >= p99 {row['p99']}); "
                "the quarter has too few distinct values"
            )
        cutoffs = cutoffs.rename(columns={"p01": f"{variable}_p01", "p99": f"{variable}_p99"})
        out = out.merge(cutoffs, on=["interview_year", "quarter"], how="left",
                        validate="many_to_one")
    out.index = cex.index
    return out


def attach_macro(cex: pd.DataFrame, ctx: BuildContext,
                 optional: Sequence[str] = ()) -> pd.DataFrame:
    """The core macro columns (required for every interview) by interview quarter."""
    return attach_macro_context(cex, cex["q_index"], ctx.macro_context,
                                optional=list(optional))


def add_lags(cex: pd.DataFrame, lagged: Sequence[str], required: Sequence[str]) -> pd.DataFrame:
    """Lags 1-3 of `lagged` (plus interview_month_index) under the prefix rule of the notes;
    `required` are the columns each usable lag must have."""
    cex = cex.sort_values(["cex_panel_id", "interview_month_index",
                           "interview_position_harmonized"], kind="mergesort")
    cex = cex.reset_index(drop=True)
    grouped = cex.groupby("cex_panel_id", sort=False)
    columns = list(dict.fromkeys([*lagged, "interview_month_index"]))
    shifted = {f"{c}_lag{k}": grouped[c].shift(k) for k in LAGS for c in columns}
    cex = pd.concat([cex, pd.DataFrame(shifted, index=cex.index)], axis=1)
    usable = pd.Series(True, index=cex.index)
    for k in LAGS:
        gap = (cex["interview_month_index"] - cex[f"interview_month_index_lag{k}"]).eq(3 * k)
        complete = cex[[f"{c}_lag{k}" for c in required]].notna().all(axis=1)
        usable &= gap & complete
        blank = [f"{c}_lag{k}" for c in columns]
        cex.loc[~usable, blank] = np.nan
    return cex


def validity_filters(pool: pd.DataFrame, nonnegative: Sequence[str]
                     ) -> list[tuple[str, pd.Series]]:
    """The reference's logical and validity filters (module notes), in its order."""
    out = [("current_income_before_tax_minimum", pool["income_before_tax"].ge(1000.0)),
           ("current_cons_parker_total_minimum", pool["cons_parker_total"].ge(250.0))]
    out += [(f"current_{c}_nonnegative", pool[c].ge(0)) for c in nonnegative]
    for k in LAGS:
        parker = pool[f"cons_parker_total_lag{k}"]
        out.append((f"lag{k}_cons_parker_total_minimum", parker.isna() | parker.ge(250.0)))
        for c in nonnegative:
            lag = pool[f"{c}_lag{k}"]
            out.append((f"lag{k}_{c}_nonnegative", lag.isna() | lag.ge(0)))
    return out


def trim_filters(pool: pd.DataFrame, task: str) -> list[tuple[str, pd.Series]]:
    """Strictly inside the period (p01, p99): current income and Parker total, each present
    lag's Parker total (its own quarter's cutoffs)."""
    out = []
    for timing in ("current", "lag1", "lag2", "lag3"):
        suffix = "" if timing == "current" else f"_{timing}"
        variables = TRIMMED if timing == "current" else ["cons_parker_total"]
        for variable in variables:
            value = pool[f"{variable}{suffix}"]
            low, high = pool[f"{variable}_p01{suffix}"], pool[f"{variable}_p99{suffix}"]
            observed = value.notna()
            if (observed & (low.isna() | high.isna())).any():
                raise DataError(f"task {task}: {variable} {timing} values without cutoffs")
            out.append((f"trim_{variable}_{timing}_strict_inside_period_p01_p99",
                        ~observed | (value.gt(low) & value.lt(high))))
    return out


def check_lag_structure(table: pd.DataFrame, history: Sequence[str], task: str) -> None:
    """Present lags are complete, 3k months back and a prefix (the reference's final checks)."""
    for k in LAGS:
        available = table[f"interview_month_index_lag{k}"].notna()
        cols = [f"{c}_lag{k}" for c in history]
        if table.loc[available, cols].isna().any().any() or \
                table.loc[~available, cols].notna().any().any():
            raise DataError(f"task {task}: lag-{k} history is partly filled")
        gap = table.loc[available, "interview_month_index"] - \
            table.loc[available, f"interview_month_index_lag{k}"]
        if not gap.eq(3 * k).all():
            raise DataError(f"task {task}: lag-{k} interviews are not {3 * k} months back")
        if k > 1 and (available & table[f"interview_month_index_lag{k - 1}"].isna()).any():
            raise DataError(f"task {task}: lag {k} is present without lag {k - 1}")


def public_table(pool: pd.DataFrame, ctx: BuildContext, steps: Steps,
                 internal: Mapping[str, pd.Series] | None = None) -> pd.DataFrame:
    """id, time, release_date, the task's targets and predictors, then internal columns."""
    task = ctx.task
    year, month = pool["interview_year"], pool["interview_month"]
    values: dict[str, Any] = {
        "id": pool["cex_panel_id"].astype("string"),
        "time": year.astype(str) + "-" + month.astype(str).str.zfill(2) + "-01",
        "release_date": pool["release_date"].dt.strftime("%Y-%m-%d"),
    }
    names = [*task.targets, *task.prompt_predictors]
    absent = [c for c in names if c not in pool.columns]
    if absent:
        raise DataError(f"task {task.name}: predictors {absent} are not built by the CEX "
                        f"builder; check conf/task/{task.name}.yaml")
    for column in names:
        values[column] = pool[column]
    table = pd.DataFrame(values, index=pool.index)
    for column in ("age_ref", "fam_size", "n_kids", "n_adults"):
        if column in table and column not in pool.attrs.get("float_columns", []):
            table[column] = table[column].astype("Int64")
    for name, series in (internal or {}).items():
        table[name] = series
    table = table.reset_index(drop=True)
    integral = [c for c in ("age_ref", "fam_size", "n_kids", "n_adults", "income_before_tax")
                if c not in pool.attrs.get("float_columns", [])]
    text = set(task.categorical_predictors)
    table.attrs["float_columns"] = [c for c in names if c not in integral and c not in text]
    steps.step("Export sample", len(pool), len(table))
    table.attrs["construction_steps"] = steps.frame()
    return table


# --------------------------------------------------------------------------------------------
# Prompt pieces


def _text(row: Mapping[str, Any], column: str) -> str:
    value = row.get(column)
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        raise DataError(f"cex: {column} is missing for id {row.get('id')!r}")
    text = str(value).strip()
    if not text:
        raise DataError(f"cex: {column} is blank for id {row.get('id')!r}")
    if text.replace(".", "", 1).isdigit():
        raise DataError(f"cex: {column} holds the code {text!r}, not a label (id "
                        f"{row.get('id')!r}); rebuild the intermediate")
    return text


def whole(row: Mapping[str, Any], column: str) -> int:
    """int(numpy.round(value)), as the renderers read counts and ages."""
    try:
        value = float(row[column])
    except (KeyError, TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise DataError(f"cex: {column} is missing for id {row.get('id')!r}")
    return int(np.round(value))


def education_phrase(label: str) -> str:
    """The reference's CEX education phrase: its article rule on the lower-cased label."""
    if label.startswith(("a ", "an ", "some ", "less ")):
        return label
    return f"{'an' if label[:1] in 'aeiou' else 'a'} {label}"


def background_paragraph(row: Mapping[str, Any]) -> str:
    """Age, race, sex, marital status, education, area, region and household composition."""
    age = whole(row, "age_ref")
    urban = _text(row, "bls_urbn").lower()
    n_kids, fam_size = whole(row, "n_kids"), whole(row, "fam_size")
    n_adults = max(fam_size - n_kids, 0)
    children = "no children" if n_kids == 0 else \
        f"{n_kids} {'child' if n_kids == 1 else 'children'}"
    total = "" if fam_size == 1 else f", for {fam_size} people in total"
    return (
        "Here is some background information about yourself and your household. "
        f"You are {article(age)} {age}-year-old {_text(row, 'race_ref_harmonized').lower()} "
        f"{_text(row, 'sex_ref').lower()}, are currently {_text(row, 'marital1').lower()}, "
        f"and have {education_phrase(_text(row, 'educ_ref_harmonized').lower())}. "
        f"You currently reside in {'an' if urban[:1] in 'aeiou' else 'a'} {urban} area in the "
        f"{_text(row, 'region').rstrip('.')}. "
        f"Your household has {n_adults} {'adult' if n_adults == 1 else 'adults'} and "
        f"{children}{total}."
    )


def present(row: Mapping[str, Any], column: str) -> bool:
    try:
        return math.isfinite(float(row[column]))
    except (KeyError, TypeError, ValueError):
        return False


def available_lags(row: Mapping[str, Any], history: Sequence[str]) -> list[int]:
    """Complete lags, a prefix that starts at lag 1 (else the row is malformed)."""
    lags, gap = [], False
    for k in LAGS:
        have = [present(row, f"{c}_lag{k}") for c in history]
        if any(have) and not all(have):
            raise DataError(f"cex: id {row.get('id')!r} has a partly filled lag-{k} history")
        if all(have):
            if gap:
                raise DataError(f"cex: id {row.get('id')!r} has lag {k} after a missing lag")
            lags.append(k)
        else:
            gap = True
    if not lags:
        raise DataError(f"cex: id {row.get('id')!r} has no lag-1 history")
    return lags


def spending_paragraph(row: Mapping[str, Any], history_sentences: Sequence[str]) -> str:
    """Month note, the history (oldest first), then the past-12-month income."""
    month = int(str(row["time"])[5:7])
    return (
        f"Here are your household's recent spending and income. {month_note(month, True)} "
        + " ".join(history_sentences)
        + " Your before-tax household income over the past 12 months was "
        + f"{format_dollars(float(row['income_before_tax']))}."
    )


def expenditure_sentence(row: Mapping[str, Any], k: int) -> str:
    return (
        f"{LAG_LABELS[k].capitalize()}, your total household expenditure was "
        f"{format_dollars(float(row[f'cons_parker_total_lag{k}']))}, non-durable expenditure was "
        f"{format_dollars(float(row[f'cons_nondurables_lag{k}']))}, and durable expenditure was "
        f"{format_dollars(float(row[f'cons_durables_lag{k}']))}."
    )


EXPENDITURE_QUESTION = (
    "Given this information, what were your total household expenditure, "
    "non-durable expenditure, and durable expenditure during the past three months, "
    "in current U.S. dollars?"
)
EXPENDITURE_LEAD = (
    "Return only a valid JSON array with exactly 3 numeric elements, in this order: "
    "total_expenditure, non_durable_expenditure, durable_expenditure."
)


def rounded(row: Mapping[str, Any], columns: Sequence[str]) -> list[int]:
    """Each amount as int(numpy.round(x)) (the reference's answers and baselines)."""
    out = []
    for column in columns:
        value = float(row[column])
        if not math.isfinite(value):
            raise DataError(f"cex: {column} is missing for id {row.get('id')!r}")
        out.append(int(np.round(value)))
    return out


__all__ = ["CORE_MACRO_COLUMNS"]
