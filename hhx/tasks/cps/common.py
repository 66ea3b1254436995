"""Shared CPS mechanics for the CPS task builders (spec 20_tasks_labor_macro.md 0.5).

Facts (reference `scripts/utils/cps.py` and the CPS task scripts):
- Status maps: EMPSTAT 10, 12 -> employed; 20-22 -> unemployed; 30-36 -> not_in_labor_force;
  other codes (1 armed forces) and missing -> no status. The older-worker map (retire) checks
  in this order: employed, unemployed, 36 -> nilf_retired, 32 or NILFACT 1 -> nilf_disabled,
  30/31/33/34/35 -> nilf_other.
- A person's record in month t links to the record with the same CPSIDP in month t+k. A key
  is unusable when another record of the same month has the same CPSIDP (both are dropped).
  jobfind/separation accept CPSIDP 0 and need MISH and EMPSTAT on the target record; retire and
  ui need CPSIDP > 0 and nothing else of the target to look it up. The MISH step (t+1: baseline
  MISH 1-3/5-7, target MISH + 1; t+12: baseline MISH 1-4, target MISH + 4) and, for retire/ui,
  same-person checks (CPSIDV equal where both are observed, SEX and RACE codes equal, an age
  change in an allowed set) are applied to the linked pair.
- Common predictors: AGE, FAMSIZE (1-99), NCHILD (0-99) and the labels sex, race, educ, marst,
  state, region, metro, relate, hispan, nativity, citizen, vetstat; a row needs all of them and
  all 20 macro columns of its baseline quarter (year*4 + quarter).
- The prompt text (row readers, sentences, the background and macro paragraphs) is in
  prompt_text.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import LABOR_SYSTEM_PROMPT

INTERMEDIATE = "cps_basic"
LF_LABELS = ("employed", "unemployed", "not_in_labor_force")
CPS_SYSTEM_PROMPT = LABOR_SYSTEM_PROMPT

# --------------------------------------------------------------------------------------------
# Status maps

EMPLOYED_CODES = (10, 12)
UNEMPLOYED_CODES = (20, 21, 22)
NILF_CODES = (30, 31, 32, 33, 34, 35, 36)
LF_CODES = EMPLOYED_CODES + UNEMPLOYED_CODES + NILF_CODES  # codes with a supported status


def lf_status(empstat: pd.Series) -> pd.Series:
    """EMPSTAT -> employed (10, 12) / unemployed (20-22) / not_in_labor_force (30-36); other
    codes (armed forces 1, NIU) -> None."""
    code = pd.to_numeric(empstat, errors="coerce")
    out = pd.Series(np.full(len(empstat), None, dtype=object), index=empstat.index)
    out[code.isin(EMPLOYED_CODES).fillna(False)] = "employed"
    out[code.isin(UNEMPLOYED_CODES).fillna(False)] = "unemployed"
    out[code.isin(NILF_CODES).fillna(False)] = "not_in_labor_force"
    return out


def older_status(empstat: pd.Series, nilfact: pd.Series) -> pd.Series:
    """Retirement-task status: employed, unemployed, nilf_retired (36), nilf_disabled (32 or
    NILFACT 1), nilf_other (30, 31, 33, 34, 35); None otherwise. Precedence as the reference."""
    code = pd.to_numeric(empstat, errors="coerce")
    nilf = pd.to_numeric(nilfact, errors="coerce")
    out = pd.Series(np.full(len(empstat), None, dtype=object), index=empstat.index)
    out[code.isin([30, 31, 33, 34, 35]).fillna(False)] = "nilf_other"
    out[(code.eq(32) | nilf.eq(1)).fillna(False)] = "nilf_disabled"
    out[code.eq(36).fillna(False)] = "nilf_retired"
    out[code.isin([20, 21, 22]).fillna(False)] = "unemployed"
    out[code.isin([10, 12]).fillna(False)] = "employed"
    return out


# --------------------------------------------------------------------------------------------
# Linking t -> t+k on CPSIDP


@dataclass(frozen=True)
class MishRule:
    """Which baseline rotation months may link, and the month-in-sample step to the target."""

    baseline: frozenset[int]
    step: int


ADJACENT_MONTH = MishRule(frozenset({1, 2, 3, 5, 6, 7}), 1)  # t -> t+1 (jobfind, separation, ui)
TWELVE_MONTHS = MishRule(frozenset({1, 2, 3, 4}), 4)  # t -> t+12 (retire)

_MONTH_BITS = 15  # month index year*12+month < 2**15 up to year 2730
_ID_LIMIT = 2**47  # a CPSIDP has at most 14 digits: (CPSIDP, month) packs into one int64


def whole_numbers(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """int64 values (0 where unusable) and a mask of present, whole-number entries."""
    x = pd.to_numeric(values, errors="coerce")
    if pd.api.types.is_integer_dtype(x):
        return x.to_numpy(dtype=np.int64, na_value=0), x.notna().to_numpy()
    f = x.to_numpy(dtype="float64", na_value=np.nan)
    ok = ~np.isnan(f) & (f == np.round(f)) & (np.abs(f) < 2**62)
    return np.where(ok, f, 0).astype(np.int64), ok


def month_keys(df: pd.DataFrame, *, positive_id: bool) -> tuple[np.ndarray, np.ndarray]:
    """Packed (CPSIDP, year*12+month) keys (-1 where the record has no usable key) and a mask
    of records whose key no other record of the same month shares."""
    ident, id_ok = whole_numbers(df["CPSIDP"])
    year, year_ok = whole_numbers(df["YEAR"])
    month, month_ok = whole_numbers(df["MONTH"])
    keyable = id_ok & (ident >= 0) & (ident < _ID_LIMIT) & year_ok & month_ok
    key = np.where(keyable, (ident << _MONTH_BITS) | (year * 12 + month), -1)
    del year, month
    # Sorted keys instead of a hash table: less memory on tens of millions of records.
    rows = np.flatnonzero(keyable)
    rows = rows[np.argsort(key[rows], kind="stable")]
    sk = key[rows]
    dup = np.zeros(len(rows), dtype=bool)
    if len(rows) > 1:
        same = sk[1:] == sk[:-1]
        dup[1:] |= same
        dup[:-1] |= same
    unique = np.zeros(len(df), dtype=bool)
    unique[rows[~dup]] = True
    if positive_id:
        unique &= ident > 0
    return key, unique


def link_months(
    df: pd.DataFrame,
    months_ahead: int,
    mish_rule: MishRule,
    *,
    target_columns: tuple[str, ...] = ("EMPSTAT", "MISH"),
    positive_id: bool = False,
    require: tuple[str, ...] = ("MISH", "EMPSTAT"),
) -> pd.DataFrame:
    """Attach each record's same-CPSIDP record `months_ahead` months later (row-preserving).

    A record's key is usable when CPSIDP is a whole number (> 0 with `positive_id`), YEAR and
    MONTH are present, the `require` columns are present and no other record of the same month
    has that CPSIDP (duplicates are excluded whatever the rest of their record holds).
    Returns a copy of `df` with `<col>_t` for each target column (NA when unlinked), the
    target's row position `_target_pos` (-1) and booleans `_key_ok` (usable baseline key),
    `_linked` (a usable target record exists) and `_mish_ok` (baseline MISH allowed by the
    rule, and target MISH = baseline MISH + step when linked). A row is a valid link when
    `_key_ok & _linked & _mish_ok`.
    """
    if months_ahead < 1:
        raise DataError(f"link_months: months_ahead must be >= 1, got {months_ahead}")
    need = ["CPSIDP", "YEAR", "MONTH", "MISH", *require, *target_columns]
    absent = [c for c in dict.fromkeys(need) if c not in df.columns]
    if absent:
        raise DataError(f"link_months: columns {absent} are missing")
    key, usable = month_keys(df, positive_id=positive_id)
    for col in require:
        usable &= df[col].notna().to_numpy()
    rows = np.flatnonzero(usable)
    rows = rows[np.argsort(key[rows], kind="stable")]
    sorted_keys = key[rows]
    wanted = sorted_keys + months_ahead  # same CPSIDP, `months_ahead` months later
    at = np.minimum(np.searchsorted(sorted_keys, wanted), max(len(sorted_keys) - 1, 0))
    hit = sorted_keys[at] == wanted if len(sorted_keys) else np.zeros(0, dtype=bool)
    target_pos = np.full(len(df), -1, dtype=np.int64)
    target_pos[rows[hit]] = rows[at[hit]]
    del wanted, at, hit, sorted_keys, rows, key
    linked = target_pos >= 0

    out = df.copy(deep=False)  # copy-on-write: the caller's frame is not modified
    take = np.where(linked, target_pos, 0)
    for col in target_columns:
        values = df[col].iloc[take]
        values.index = df.index
        out[f"{col}_t"] = values.where(pd.Series(linked, index=df.index))
    mish, mish_present = whole_numbers(df["MISH"])
    t_mish = np.where(linked, mish[take], -1)
    in_rule = mish_present & np.isin(mish, list(mish_rule.baseline))
    out["_key_ok"] = usable
    out["_linked"] = linked
    out["_mish_ok"] = in_rule & (~linked | (t_mish == mish + mish_rule.step))
    out["_target_pos"] = target_pos
    return out


def same_person(base: pd.DataFrame, target: pd.DataFrame, age_steps: Iterable[int]) -> np.ndarray:
    """The reference's same-person checks on linked pairs (rows aligned by position): CPSIDV
    equal where both are observed, SEX and RACE codes equal (both missing counts as equal),
    both ages present and the age change in `age_steps`."""

    def codes(df: pd.DataFrame, col: str) -> tuple[np.ndarray, np.ndarray]:
        return whole_numbers(df[col].reset_index(drop=True))

    ok = np.ones(len(base), dtype=bool)
    bv, bv_ok = codes(base, "CPSIDV")
    tv, tv_ok = codes(target, "CPSIDV")
    ok &= ~(bv_ok & tv_ok) | (bv == tv)
    for col in ("SEX", "RACE"):
        b, b_ok = codes(base, col)
        t, t_ok = codes(target, col)
        ok &= (b_ok == t_ok) & (~b_ok | (b == t))
    ba, ba_ok = codes(base, "AGE")
    ta, ta_ok = codes(target, "AGE")
    ok &= ba_ok & ta_ok & np.isin(ta - ba, list(age_steps))
    return ok


# --------------------------------------------------------------------------------------------
# Reading the intermediate and recording the construction steps


def apply_filters(
    steps: list[dict], keep: np.ndarray, filters: Sequence[tuple[str, np.ndarray]]
) -> None:
    """AND each filter into `keep` (in place), recording rows kept and dropped per step."""
    for name, mask in filters:
        before = int(keep.sum())
        keep &= np.asarray(mask, dtype=bool)
        steps.append({"step": name, "rows": int(keep.sum()), "dropped": before - int(keep.sum())})


def mask(values: pd.Series | np.ndarray) -> np.ndarray:
    """A boolean mask with missing as False."""
    if isinstance(values, pd.Series):
        return values.fillna(False).to_numpy(dtype=bool)
    return np.asarray(values, dtype=bool)


def read_rows(ctx: BuildContext, columns: Sequence[str], positions: np.ndarray) -> pd.DataFrame:
    """Columns of the records at `positions` (any order, repeats allowed), in that order."""
    positions = np.asarray(positions, dtype=np.int64)
    wanted = np.unique(positions)
    frame = ctx.intermediate(INTERMEDIATE, columns=list(columns), rows=wanted)
    at = np.searchsorted(wanted, positions)
    return frame.iloc[at].reset_index(drop=True)


def month_text(year: pd.Series, month: pd.Series, day: str = "01") -> pd.Series:
    """YYYY-MM-DD strings of integer year and month columns."""
    y = pd.to_numeric(year).astype("int64").astype(str).str.zfill(4)
    m = pd.to_numeric(month).astype("int64").astype(str).str.zfill(2)
    return y + "-" + m + "-" + day


def covered_quarters(macro: pd.DataFrame) -> pd.Series:
    """Origin quarters whose 20 core macro values are all present."""
    if "eligible_origin_q_index" not in macro.columns:
        raise DataError("macro context lacks eligible_origin_q_index; rebuild it (survey=fred_qd)")
    full = macro[CORE_MACRO_COLUMNS].notna().all(axis=1)
    return macro.loc[full, "eligible_origin_q_index"]


def origin_q_index(year: pd.Series, month: pd.Series) -> pd.Series:
    """CPS macro key: the baseline month's calendar quarter, year*4 + quarter."""
    y = pd.to_numeric(year).astype("int64")
    m = pd.to_numeric(month).astype("int64")
    return y * 4 + (m - 1) // 3 + 1


def finish_table(
    table: pd.DataFrame,
    task: TaskConfig,
    steps: list[dict],
    module: str,
    *,
    float_columns: Iterable[str] = (),
) -> pd.DataFrame:
    """Public columns in the task's order, then the internal `_` columns; the construction
    steps and the numeric columns the official frame holds as floats go to `attrs`."""
    public = ["id", "time", "release_date", *task.targets, *task.prompt_predictors]
    unknown = [c for c in public if c not in table.columns]
    if unknown:
        raise ConfigError(
            f"task {task.name}: predictors {unknown} are not built by {module}; "
            f"check conf/task/{task.name}.yaml"
        )
    internal = [c for c in table.columns if str(c).startswith("_") and c not in public]
    out = table[public + internal].reset_index(drop=True)
    out.attrs["construction_steps"] = steps
    floats = [*CORE_MACRO_COLUMNS, *float_columns]
    out.attrs["float_columns"] = [c for c in dict.fromkeys(floats) if c in public]
    return out


# --------------------------------------------------------------------------------------------
# Common predictors (spec 0.5 numeric bounds and label columns)

COMMON_LABELS = (
    "sex",
    "race",
    "educ",
    "marst",
    "state",
    "region",
    "metro",
    "relate",
    "hispan",
    "nativity",
    "citizen",
    "vetstat",
)
COMMON_NUMERIC = ("age", "famsize", "nchild")
COMMON_PREDICTORS = (
    "age",
    "sex",
    "race",
    "educ",
    "marst",
    "state",
    "region",
    "metro",
    "relate",
    "famsize",
    "nchild",
    "hispan",
    "nativity",
    "citizen",
    "vetstat",
)
COMMON_SOURCE_COLUMNS = ("AGE", "FAMSIZE", "NCHILD", *COMMON_LABELS)


def bounded(values: pd.Series, lo: float, hi: float) -> pd.Series:
    """Numeric value inside [lo, hi] as float64, NA (NaN) otherwise."""
    x = pd.to_numeric(values, errors="coerce").astype("float64")
    return x.where((x >= lo) & (x <= hi))


def rounded(values: pd.Series) -> pd.Series:
    """Numeric value rounded to a whole number (the reference's int(round(x))), as float64."""
    return pd.to_numeric(values, errors="coerce").astype("float64").round()


def labels_as_text(values: pd.Series) -> pd.Series:
    """Label column -> object strings (stripped) with None for missing or blank."""
    present = values.notna().to_numpy()
    raw = values.to_numpy(dtype=object)
    out = np.full(len(values), None, dtype=object)
    for i in np.flatnonzero(present):
        label = str(raw[i]).strip()
        if label.lower() not in BLANKS:
            out[i] = label
    return pd.Series(out, index=values.index, dtype=object)


BLANKS = frozenset({"", "nan", "none", "nat", "<na>"})


def common_predictors(df: pd.DataFrame) -> pd.DataFrame:
    """The 15 common CPS predictors from intermediate columns: numeric as float, labels as text."""
    out = pd.DataFrame(index=df.index)
    out["age"] = rounded(df["AGE"])
    out["famsize"] = bounded(df["FAMSIZE"], 1, 99)
    out["nchild"] = bounded(df["NCHILD"], 0, 99)
    for col in COMMON_LABELS:
        out[col] = labels_as_text(df[col])
    return out[list(COMMON_PREDICTORS)]


# --------------------------------------------------------------------------------------------
# The adjacent-month status tasks (jobfind, separation): link, universe, common predictors

ADJACENT_KEY_COLUMNS = ["YEAR", "MONTH", "CPSIDP", "MISH", "AGE", "EMPSTAT", "release_date"]


def adjacent_month_base(
    ctx: BuildContext,
    *,
    baseline_codes: Sequence[int],
    status: str,
    columns: Sequence[str],
) -> tuple[pd.DataFrame, pd.Series, list[dict]]:
    """Records of persons in `status` at t (EMPSTAT in `baseline_codes`, age 16+, MISH 1-3 or
    5-7) with a unique same-CPSIDP record at t+1 (MISH + 1, supported status), their common
    predictors and baseline quarter complete: the frame (key columns, `columns`, `EMPSTAT_t`,
    `release_date_t`), its origin quarters and the construction steps so far."""
    ctx.intermediate_path(INTERMEDIATE, [*ADJACENT_KEY_COLUMNS, *COMMON_SOURCE_COLUMNS, *columns])
    covered = covered_quarters(ctx.macro_context)
    keys = ctx.intermediate(INTERMEDIATE, columns=ADJACENT_KEY_COLUMNS)
    linked = link_months(
        keys, 1, ADJACENT_MONTH, target_columns=("EMPSTAT", "MISH", "release_date")
    )
    del keys
    steps = [{"step": "person-month records", "rows": len(linked), "dropped": 0}]
    keep = np.ones(len(linked), dtype=bool)
    apply_filters(steps, keep, [
        ("baseline MISH in 1-3 or 5-7", mask(linked["MISH"].isin(ADJACENT_MONTH.baseline))),
        ("age 16 or older", mask(linked["AGE"] >= 16)),
        (f"{status} in the baseline month", mask(linked["EMPSTAT"].isin(baseline_codes))),
        ("month t+1 record, if any, has MISH + 1", linked["_mish_ok"].to_numpy()),
        ("unique same-CPSIDP record in month t+1", linked["_linked"].to_numpy()
         | ~linked["_key_ok"].to_numpy()),
        ("t+1 labor-force status supported",
         mask(linked["EMPSTAT_t"].isin(LF_CODES)) | ~linked["_key_ok"].to_numpy()),
        ("baseline CPSIDP valid and unique in its month", linked["_key_ok"].to_numpy()),
    ])  # fmt: skip
    positions = np.flatnonzero(keep)
    base = linked.iloc[positions]
    del linked
    # same file, same order: rows line up by position; only the kept records are read
    wanted = [c for c in dict.fromkeys([*COMMON_SOURCE_COLUMNS, *columns]) if c not in base]
    extra = ctx.intermediate(INTERMEDIATE, columns=wanted, rows=positions)
    base = pd.concat([base, extra.set_axis(base.index)], axis=1)
    origin = origin_q_index(base["YEAR"], base["MONTH"])
    predictors = common_predictors(base)
    keep = np.ones(len(base), dtype=bool)
    apply_filters(steps, keep, [
        ("common predictors present", predictors.notna().all(axis=1).to_numpy()),
        ("macro context for the baseline quarter", mask(origin.isin(covered))),
    ])  # fmt: skip
    base = base.drop(columns=[c for c in predictors.columns if c in base.columns])
    base = pd.concat([base, predictors], axis=1).iloc[np.flatnonzero(keep)]
    return base, origin.iloc[np.flatnonzero(keep)], steps


def status_rows(base: pd.DataFrame, origin: pd.Series, macro: pd.DataFrame) -> pd.DataFrame:
    """id (CPSIDP), time (baseline month), release_date (month t+1's), target (t+1 status),
    the common predictors and the macro context of linked rows; internal `_outcome_month`
    and `_mish`."""
    from hhx.surveys.macro.fred_qd import attach_macro_context

    year, month = base["YEAR"].astype("int64"), base["MONTH"].astype("int64")
    table = pd.DataFrame(
        {
            "id": base["CPSIDP"].astype("int64").astype(str),
            "time": month_text(year, month),
            "release_date": base["release_date_t"].astype(str),
            "target": lf_status(base["EMPSTAT_t"]).astype(str),
            **{c: base[c] for c in COMMON_PREDICTORS},
        },
        index=base.index,
    )
    table = attach_macro_context(table, origin, macro)
    table = table.rename(columns={"macro_reference_q_index": "_macro_reference_q_index"})
    nxt = year * 12 + month  # (year*12 + month - 1) + 1: the outcome month, 0-based
    table["_outcome_month"] = month_text(nxt // 12, nxt % 12 + 1).str[:7]
    table["_mish"] = base["MISH"].astype("int64")
    return table
