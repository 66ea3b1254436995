"""FRED-QD and the monthly CPI groups -> the quarterly macro context every task attaches.

Facts: shared/spec/00_common.md section 3. One row per *eligible origin quarter*: a task row in
calendar quarter Q gets the row keyed Q, whose values describe the four most recently completed
quarters Q-1 ... Q-4 (lag1 = Q-1) and the five years ending in Q-1.
Quarter index q = year*4 + quarter.

As the reference's scripts/1_preprocessing/macro_context.py: the CPI groups (survey `cpi`) are
always joined: each quarter is the mean of its three months, missing unless all three are
present; a CPI frame with a repeated or a missing month is an error. Growth = 100 x (level /
previous level - 1); five-year compound growth only with all 20 quarterly changes present; rate
means over 20 quarters; rows kept where the 20 core columns are present; columns in the
reference's order (keys, the twelve growth series, the three rates).
"""

from __future__ import annotations

import csv
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.io import write_parquet_atomic
from hhx.surveys.base import (
    BuildReport,
    finish_report,
    has_synthetic_sidecar,
    input_sha256,
    require_file,
)

SOURCE_URL = "https://www.stlouisfed.org/research/economists/mccracken/fred-databases"
OUTPUT_NAME = "householdbench_macro_context"

# FRED-QD level series read by the build (published column names, `S&P 500` with its space).
FRED_LEVEL_COLUMNS: list[str] = [
    "GDPC1",
    "UNRATE",
    "CPIAUCSL",
    "FEDFUNDS",
    "USSTHPI",
    "S&P 500",
    "MORTGAGE30US",
]
# Rows of the published file that carry metadata instead of a date.
_METADATA_ROWS = {"factors", "transform"}

# Monthly CPI-U groups (FRED series id -> column of the `cpi_major_groups` intermediate).
CPI_FRED_SERIES: dict[str, str] = {
    "CPIAUCSL": "cpi_all_items",
    "CPIFABSL": "cpi_food_beverages",
    "CPIHOSSL": "cpi_housing",
    "CPIAPPSL": "cpi_apparel",
    "CPITRNSL": "cpi_transportation",
    "CPIMEDSL": "cpi_medical_care",
    "CPIRECSL": "cpi_recreation",
    "CPIEDUSL": "cpi_education_communication",
    "CPIOGSSL": "cpi_other_goods_services",
}
CPI_GROUP_COLUMNS: list[str] = [c for c in CPI_FRED_SERIES.values() if c != "cpi_all_items"]

# Growth prefixes (100 x q/q change of a level) and rate prefixes (the level itself),
# in output order.
GROWTH_SERIES: dict[str, str] = {
    "gdp_growth_qoq": "GDPC1",
    "headline_cpi_qoq": "CPIAUCSL",
    **{f"{c}_qoq": c for c in CPI_GROUP_COLUMNS},
    "house_price_growth_qoq": "USSTHPI",
    "sp500_growth_qoq": "S&P 500",
}
RATE_SERIES: dict[str, str] = {
    "unemployment_rate": "UNRATE",
    "fedfunds_rate": "FEDFUNDS",
    "mortgage30us_rate": "MORTGAGE30US",
}
CATEGORY_CPI_PREFIXES: list[str] = [f"{c}_qoq" for c in CPI_GROUP_COLUMNS]


def _growth_block(prefix: str) -> list[str]:
    return [*(f"{prefix}_lag{k}" for k in range(1, 5)), f"{prefix}_5y_compound"]


def _rate_block(prefix: str) -> list[str]:
    return [*(f"{prefix}_lag{k}" for k in range(1, 5)), f"{prefix}_5y_mean"]


# Section 3.3 column sets (registry order).
CORE_MACRO_COLUMNS: list[str] = [
    *_growth_block("gdp_growth_qoq"),
    *_rate_block("unemployment_rate"),
    *_growth_block("headline_cpi_qoq"),
    *_rate_block("fedfunds_rate"),
]
CATEGORY_CPI_MACRO_COLUMNS: list[str] = [c for p in CATEGORY_CPI_PREFIXES for c in _growth_block(p)]
PSID_ASSET_MACRO_COLUMNS: list[str] = [
    *_growth_block("house_price_growth_qoq"),
    *_growth_block("sp500_growth_qoq"),
    *_rate_block("mortgage30us_rate"),
]
MORTGAGE_MACRO_COLUMNS: list[str] = ["mortgage30us_rate_lag1"]
# Census only; built from the state macro panel, not from this module.
STATE_MACRO_COLUMNS: list[str] = [
    "state_unemployment_rate_origin",
    "us_unemployment_rate_origin",
    "state_pcpi_growth_origin",
    "us_pcpi_growth_origin",
    "state_house_price_growth_origin",
    "us_house_price_growth_origin",
]
KEY_COLUMNS: list[str] = [
    "eligible_origin_q_index",
    "macro_reference_q_index",
    "macro_reference_year",
    "macro_reference_quarter",
    "macro_reference_date",
]

FIVE_YEARS = 20  # quarters


# --------------------------------------------------------------------------------------------
# Quarter helpers


def q_index(year: int, quarter: int) -> int:
    """Quarter index as the reference defines it: year*4 + quarter (quarter 1..4)."""
    return int(year) * 4 + int(quarter)


def q_label(index: int) -> str:
    """`8077` -> `2019Q1` (inverse of q_index)."""
    year, rem = divmod(int(index) - 1, 4)
    return f"{year}Q{rem + 1}"


def parse_quarter(text: str) -> int:
    """`2019Q1` -> q_index; a bad label is a ConfigError-style DataError naming it."""
    s = str(text).strip().upper()
    try:
        year_s, quarter_s = s.split("Q")
        year, quarter = int(year_s), int(quarter_s)
    except ValueError:
        raise DataError(f"bad quarter {text!r}: use the form 2019Q1") from None
    if not 1 <= quarter <= 4:
        raise DataError(f"bad quarter {text!r}: the quarter must be 1-4")
    return q_index(year, quarter)


# --------------------------------------------------------------------------------------------
# Readers


_VINTAGE_NAME = re.compile(r"(\d{4})-(\d{2})-QD\.csv$", re.IGNORECASE)


def _check_not_cut(p: Path, n_fields: int, data: pd.DataFrame) -> None:
    """A cut file (the official reader takes it, then the series just end) is an error: the
    published file ends with a line break after a complete last row, and a vintage named
    `YYYY-MM-QD.csv` runs to the quarter before its month's (one quarter of slack)."""
    with p.open("rb") as fh:
        fh.seek(max(0, p.stat().st_size - (1 << 16)))
        tail = fh.read()
    last = tail.rstrip(b"\r\n").rsplit(b"\n", 1)[-1].decode("utf-8", "replace")
    fields = next(csv.reader([last]), [])
    if not tail.endswith(b"\n") or len(fields) < n_fields:
        raise DataError(
            f"{p}: the file ends early: its last row ({fields[0] if fields else ''!r}) stops "
            f"after {len(fields)} of {n_fields} fields; download the vintage again")
    name = _VINTAGE_NAME.search(p.name)
    if name and len(data) and not has_synthetic_sidecar(p):
        year, month = int(name.group(1)), int(name.group(2))
        expected = q_index(year, (month - 1) // 3 + 1) - 1
        if 1 <= month <= 12 and int(data["q_index"].iloc[-1]) < expected - 1:
            raise DataError(
                f"{p}: the file ends early, at {q_label(int(data['q_index'].iloc[-1]))}; a "
                f"{year}-{month:02d} vintage runs to {q_label(expected)}; download it again")


def read_fred_qd(path: str | Path) -> pd.DataFrame:
    """Read a FRED-QD file in its published layout (header, `factors`, `transform`, then dates).

    Returns one row per quarter, sorted, with `sasdate` (datetime), `year`, `quarter`, `q_index`
    and every series as float. Metadata rows are dropped; any other row whose `sasdate` is not
    M/D/YYYY, a missing series column, a non-numeric value, or a duplicate/gap quarter is an error.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: FRED-QD file not found; download it from {SOURCE_URL}")
    try:
        raw = pd.read_csv(p, dtype=str, keep_default_na=False)
    except Exception as exc:  # pandas parser errors are multi-line
        raise DataError(f"{p}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    raw.columns = [str(c).strip() for c in raw.columns]
    for column in ["sasdate", *FRED_LEVEL_COLUMNS]:
        if column not in raw.columns:
            raise DataError(
                f"{p}: column {column!r} missing; use a FRED-QD vintage in its published layout "
                f"({SOURCE_URL})"
            )
    label = raw["sasdate"].str.strip()
    dates = pd.to_datetime(label, format="%m/%d/%Y", errors="coerce")
    blank = label.eq("") & raw.drop(columns="sasdate").apply(lambda s: s.str.strip().eq("")).all(
        axis=1
    )
    meta = label.str.lower().isin(_METADATA_ROWS) | blank
    bad = dates.isna() & ~meta
    if bad.any():
        first = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"{p}: row {first + 2} has sasdate {label.iloc[first]!r}, not M/D/YYYY; "
            "fix or remove that row"
        )
    keep = dates.notna().to_numpy()
    sasdate = dates[keep].reset_index(drop=True)
    cols: dict[str, pd.Series] = {
        "sasdate": sasdate,
        "year": sasdate.dt.year.astype("int64"),
        "quarter": sasdate.dt.quarter.astype("int64"),
    }
    cols["q_index"] = cols["year"] * 4 + cols["quarter"]
    series_columns = [c for c in raw.columns if c != "sasdate"]
    for column in series_columns:
        text = raw.loc[keep, column].str.strip().reset_index(drop=True)
        values = pd.to_numeric(text.where(text.ne("")), errors="coerce")
        if column in FRED_LEVEL_COLUMNS:
            junk = values.isna() & text.ne("")
            if junk.any():
                where = sasdate[junk].iloc[0].strftime("%m/%d/%Y")
                raise DataError(
                    f"{p}: column {column!r} has non-numeric value "
                    f"{text[junk].iloc[0]!r} at {where}"
                )
        cols[column] = values.astype("float64")
    data = pd.DataFrame(cols)
    data = data.sort_values("q_index", kind="mergesort").reset_index(drop=True)
    dup = data["q_index"].duplicated()
    if dup.any():
        raise DataError(
            f"{p}: quarter {q_label(data.loc[dup, 'q_index'].iloc[0])} appears more than once; "
            "keep one row per quarter"
        )
    steps = data["q_index"].diff().iloc[1:]
    if (steps != 1).any():
        i = int(np.flatnonzero((steps != 1).to_numpy())[0]) + 1
        raise DataError(
            f"{p}: quarters jump from {q_label(data['q_index'].iloc[i - 1])} to "
            f"{q_label(data['q_index'].iloc[i])}; the file must have every quarter"
        )
    if data.empty:
        raise DataError(f"{p}: no dated rows; is this a FRED-QD file?")
    _check_not_cut(p, len(raw.columns), data)
    return data


def read_fred_cpi_csvs(directory: str | Path) -> pd.DataFrame:
    """The monthly CPI-U groups (`cpi_major_groups` frame) from a folder of FRED CSVs or BLS
    flat files — the CPI builder's reader (hhx.surveys.macro.cpi), so both sources parse one way."""
    from hhx.surveys.macro.cpi import read_cpi_groups

    return read_cpi_groups(directory)[0]


def _quarterly_cpi(cpi_groups: pd.DataFrame) -> pd.DataFrame:
    """Quarterly mean of each monthly group; NA unless all three months are present."""
    if "date" not in cpi_groups.columns:
        raise DataError("CPI groups frame needs a `date` column (first day of each month)")
    missing = [c for c in CPI_GROUP_COLUMNS if c not in cpi_groups.columns]
    if missing:
        raise DataError(
            f"CPI groups frame lacks columns {missing}; read it with read_fred_cpi_csvs"
        )
    dates = pd.to_datetime(cpi_groups["date"], errors="coerce")
    if dates.isna().any():
        raise DataError("CPI groups frame has rows without a valid `date`")
    months = dates.dt.to_period("M")
    if months.duplicated().any():
        raise DataError(f"CPI groups frame repeats month {months[months.duplicated()].iloc[0]}")
    ordinal = months.sort_values().map(lambda p: p.ordinal).to_numpy()
    if len(ordinal) > 1 and (step := np.diff(ordinal)).max() > 1:  # the reference refuses gaps
        at = int(np.flatnonzero(step > 1)[0])
        raise DataError(
            f"CPI groups frame has no row for the months after {months.sort_values().iloc[at]}; "
            "the monthly grid must be complete (rebuild survey cpi)"
        )
    values = cpi_groups[CPI_GROUP_COLUMNS].apply(pd.to_numeric, errors="raise").astype("float64")
    key = (dates.dt.year * 4 + dates.dt.quarter).rename("q_index")
    grouped = values.groupby(key)
    means = grouped.mean()
    counts = grouped.count()
    return means.where(counts.eq(3))


def build_macro_context(fred: pd.DataFrame, cpi_groups: pd.DataFrame | None = None) -> pd.DataFrame:
    """Section 3.1: lags, five-year summaries and keys, one row per eligible origin quarter.

    `fred` is `read_fred_qd`'s frame. Without `cpi_groups` the category-CPI columns are absent
    (attaching them then fails with a message saying how to add them).
    """
    need = ["q_index", "year", "quarter", "sasdate", *FRED_LEVEL_COLUMNS]
    missing = [c for c in need if c not in fred.columns]
    if missing:
        raise DataError(f"FRED-QD frame lacks columns {missing}; read the file with read_fred_qd")
    levels = fred[need].sort_values("q_index", kind="mergesort").reset_index(drop=True)
    if levels["q_index"].duplicated().any() or (levels["q_index"].diff().iloc[1:] != 1).any():
        raise DataError("FRED-QD frame must have exactly one row per quarter with no gaps")
    growth_series = dict(GROWTH_SERIES)
    if cpi_groups is None:
        for prefix in CATEGORY_CPI_PREFIXES:
            growth_series.pop(prefix)
    else:
        quarterly = _quarterly_cpi(cpi_groups)
        levels = levels.join(quarterly, on="q_index")

    out: dict[str, pd.Series] = {
        "eligible_origin_q_index": (levels["q_index"] + 1).astype("int64"),
        "macro_reference_q_index": levels["q_index"].astype("int64"),
        "macro_reference_year": levels["year"].astype("int64"),
        "macro_reference_quarter": levels["quarter"].astype("int64"),
        "macro_reference_date": levels["sasdate"],
    }
    for prefix, source in growth_series.items():
        level = levels[source].astype("float64")
        growth = (level / level.shift(1) - 1.0) * 100.0
        for k in range(1, 5):
            out[f"{prefix}_lag{k}"] = growth.shift(k - 1)
        # Compound average over 20 quarters, kept only when all 20 quarterly changes exist.
        complete = growth.notna().astype("int64").rolling(FIVE_YEARS).sum().eq(FIVE_YEARS)
        compound = ((level / level.shift(FIVE_YEARS)) ** (1.0 / FIVE_YEARS) - 1.0) * 100.0
        out[f"{prefix}_5y_compound"] = compound.where(complete)
    for prefix, source in RATE_SERIES.items():
        level = levels[source].astype("float64")
        for k in range(1, 5):
            out[f"{prefix}_lag{k}"] = level.shift(k - 1)
        out[f"{prefix}_5y_mean"] = level.rolling(FIVE_YEARS, min_periods=FIVE_YEARS).mean()
    frame = pd.DataFrame(out)
    frame = frame.loc[frame[CORE_MACRO_COLUMNS].notna().all(axis=1)].reset_index(drop=True)
    if frame.empty:
        raise DataError("FRED-QD covers too few quarters for any macro context row (needs 21+)")
    return frame


# --------------------------------------------------------------------------------------------
# Join


def attach_macro_context(
    df: pd.DataFrame,
    origin_q_index: pd.Series,
    macro: pd.DataFrame,
    columns: list[str] | None = None,
    *,
    optional: list[str] | None = None,
    suffix: str = "",
) -> pd.DataFrame:
    """Section 3.2: left-join macro rows on origin quarter = `eligible_origin_q_index`.

    `columns` (default the 20 CORE) must be non-null for every row; `optional` columns are
    attached as they are (NA allowed). `macro_reference_q_index` always comes along. `suffix`
    renames every attached column (e.g. `_m12`). Returns a copy with the same rows, order and index.
    """
    required = list(CORE_MACRO_COLUMNS if columns is None else columns)
    extra = [c for c in (optional or []) if c not in required]
    wanted = [
        "macro_reference_q_index",
        *[c for c in required + extra if c != "macro_reference_q_index"],
    ]
    _check_context(macro, wanted)
    names = {c: f"{c}{suffix}" for c in wanted}
    collisions = sorted(set(names.values()) & set(df.columns))
    if collisions:
        raise DataError(
            f"attaching macro context would overwrite columns {collisions}; "
            "rename them or pass a suffix"
        )
    keys = _origin_keys(origin_q_index, len(df))
    table = macro.set_index("eligible_origin_q_index")[wanted]
    positions = _context_rows(table, keys, required)
    attached = table.iloc[positions].rename(columns=names)
    attached.index = df.index
    return pd.concat([df, attached], axis=1)


def _check_context(macro: pd.DataFrame, wanted: list[str]) -> None:
    """The context table holds the wanted columns and one row per eligible origin quarter."""
    absent = [c for c in wanted if c not in macro.columns]
    if absent:
        hint = (
            "; the macro context was built without CPI groups: rebuild it with `survey=fred_qd`"
            if set(absent) & set(CATEGORY_CPI_MACRO_COLUMNS)
            else "; rebuild it with hhx.surveys.macro.fred_qd.build_macro_context"
        )
        raise DataError(f"macro context lacks columns {absent}{hint}")
    if "eligible_origin_q_index" not in macro.columns:
        raise DataError(
            "macro context lacks `eligible_origin_q_index`; build it with build_macro_context"
        )
    if macro["eligible_origin_q_index"].duplicated().any():
        raise DataError("macro context repeats an eligible_origin_q_index; rebuild it")


def _origin_keys(origin_q_index: pd.Series, n_rows: int) -> np.ndarray:
    """The origin quarters (year*4 + quarter) as int64, checked: one whole number a row."""
    # Positional: the caller's Series index need not match df's.
    origin = pd.Series(origin_q_index).reset_index(drop=True)
    if len(origin) != n_rows:
        raise DataError(f"origin quarter index has {len(origin)} values for {n_rows} rows")
    numeric = pd.to_numeric(origin, errors="coerce")
    if numeric.isna().any():
        raise DataError(
            f"origin quarter index is missing or non-numeric for {int(numeric.isna().sum())} row(s)"
        )
    if (numeric % 1 != 0).any():
        raise DataError("origin quarter index must hold whole numbers (year*4 + quarter)")
    return numeric.astype("int64").to_numpy()


def _context_rows(table: pd.DataFrame, keys: np.ndarray, required: list[str]) -> np.ndarray:
    """Each origin quarter's row in the context table; every one present, its required columns
    filled."""
    positions = table.index.get_indexer(keys)
    no_row = positions < 0
    if no_row.any():
        quarters = sorted(set(keys[no_row].tolist()))
        shown = ", ".join(q_label(q) for q in quarters[:6]) + (" ..." if len(quarters) > 6 else "")
        refs = f"{q_label(quarters[0] - 1)}-{q_label(quarters[-1] - 1)}"
        covered = (
            f"{q_label(int(table.index.min()))}-{q_label(int(table.index.max()))}"
            if len(table)
            else "none"
        )
        raise DataError(
            f"no macro context for origin quarter(s) {shown} ({int(no_row.sum())} rows; "
            "context covers "
            f"{covered}); use a FRED-QD vintage covering reference quarters {refs} (data.fred_qd)"
        )
    # Null checks on the small table, then mapped to rows: cheap for millions of rows.
    null_cells = table[required].isna()
    bad_rows = null_cells.any(axis=1).to_numpy()[positions]
    if bad_rows.any():
        used = null_cells.iloc[np.unique(positions[bad_rows])]
        bad_cols = [c for c in required if used[c].any()]
        bad_q = sorted(set(keys[bad_rows].tolist()))
        shown = ", ".join(q_label(q) for q in bad_q[:6]) + (" ..." if len(bad_q) > 6 else "")
        raise DataError(
            f"required macro columns {bad_cols[:4]}{' ...' if len(bad_cols) > 4 else ''} are "
            f"empty for origin quarter(s) {shown}; use source series covering those quarters "
            "or drop those rows"
        )
    return positions


# --------------------------------------------------------------------------------------------
# Survey build entry point


def _raw_path(raw_dir: Path, value: str) -> Path:
    p = Path(value).expanduser()
    return p if p.is_absolute() else raw_dir / p


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read `survey.raw.fred_qd` and the CPI groups (`cpi_major_groups.parquet` in `out_dir`,
    built by `survey=cpi`: the reference always joins them) and write
    `<out_dir>/householdbench_macro_context.parquet` atomically."""
    started = time.perf_counter()
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    if "fred_qd" not in survey.raw:
        raise DataError(f"survey {survey.name}: raw.fred_qd is not set; point it at a FRED-QD CSV")
    source = survey.source_url or SOURCE_URL
    fred_path = require_file(_raw_path(raw_dir, survey.raw["fred_qd"]),  # type: ignore[arg-type]
                             "FRED-QD file", source)  # (raw.fred_qd checked just above)
    from hhx.surveys.macro.cpi import OUTPUT_NAME as CPI_OUTPUT

    cpi_path = out_dir / f"{CPI_OUTPUT}.parquet"
    if not cpi_path.is_file():
        raise DataError(
            f"{cpi_path}: CPI groups not built; the macro context joins them (spec 3.1): run "
            "`python -m hhx stage=build survey=cpi` first (stage=build survey=fred_qd does it)"
        )
    inputs = {str(fred_path): input_sha256(fred_path), str(cpi_path): input_sha256(cpi_path)}
    macro = build_macro_context(read_fred_qd(fred_path), pd.read_parquet(cpi_path))
    target = write_parquet_atomic(out_dir / f"{OUTPUT_NAME}.parquet", macro)
    return finish_report(survey, {OUTPUT_NAME: target}, {OUTPUT_NAME: len(macro)}, inputs, started)
