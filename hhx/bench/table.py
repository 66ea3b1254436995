"""The public task table (`tabular/<task>.csv`, spec 4.1): column order, typing, validation,
and how its numbers are written and read back (`csvnum`).

Text columns are id, time, release_date, the categorical predictors and (categorical tasks)
the targets; every other column is numeric. Written: integer columns as integers, the others as
pandas writes float64. Read: float64 through the converter of the reference's pandas 2.2.3, so
hhx sees the values the official renderers and baselines see.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.config import TargetType, TaskConfig
from hhx.errors import DataError

from . import csvnum
from . import splits as sp

_LAYOUT_HINT = (
    "the official release layout is tabular/<task>.csv, prompts/<task>.jsonl and "
    "splits/<task>.csv under data.root"
)


def table_columns(task: TaskConfig) -> list[str]:
    """Public table columns in their exact order."""
    return ["id", "time", "release_date", *task.targets, *task.prompt_predictors]


def text_columns(task: TaskConfig) -> list[str]:
    """Columns read as text; every other public column is float64."""
    cols = ["id", "time", "release_date", *task.categorical_predictors]
    if task.target_type is TargetType.categorical:
        cols += list(task.targets)
    return cols


def target_domains(task: TaskConfig) -> dict[str, list[str]]:
    """Allowed values of each categorical target column (registry domain, else labels)."""
    if task.target_type is not TargetType.categorical:
        return {}
    return {
        col: list(f.domain or f.labels or [])
        for col, f in zip(task.targets, task.fields, strict=True)
    }


def _first(mask: pd.Series | np.ndarray) -> int:
    return int(np.flatnonzero(np.asarray(mask, dtype=bool))[0])


def _validate_table(df: pd.DataFrame, task: TaskConfig, where: str, line0: int) -> None:
    """Typed-table rules; `line0` maps row i to `line i+line0` (2 for a CSV with a header)."""

    def at(i: int) -> str:
        return f"line {i + line0}" if line0 else f"row {i}"

    for col in ("id", "time", "release_date"):
        empty = df[col].isna() | (df[col].astype("string").str.strip() == "").fillna(True)
        if empty.any():
            raise DataError(f"{where}: column {col} is empty at {at(_first(empty))}")
        if col != "id":
            bad = sp.invalid_iso_dates(df[col])
            if bad.any():
                i = _first(bad)
                raise DataError(
                    f"{where}: column {col} {at(i)}: {df[col].iloc[i]!r} "
                    "is not a valid YYYY-MM-DD date"
                )
    text = set(text_columns(task))
    for col in df.columns:
        if col in text:
            continue
        values = df[col].to_numpy(dtype=np.float64, na_value=np.nan)
        inf = np.isinf(values)
        if inf.any():
            i = _first(inf)
            raise DataError(
                f"{where}: column {col} {at(i)}: infinite value {values[i]!r} (±inf is not allowed)"
            )
    for col, domain in target_domains(task).items():
        outside = ~df[col].isin(domain)
        if outside.any():
            i = _first(outside)
            raise DataError(
                f"{where}: column {col} {at(i)}: {df[col].iloc[i]!r} is not a label of task "
                f"{task.name} (allowed: {', '.join(domain)})"
            )
    if task.target_type is not TargetType.categorical:
        for col in task.targets:
            missing = df[col].isna()
            if missing.any():
                raise DataError(f"{where}: target column {col} is missing at {at(_first(missing))}")
    for col in task.required_predictors:  # the official reader rejects these when missing
        missing = df[col].isna()
        if missing.any():
            i = _first(missing)
            raise DataError(
                f"{where}: task {task.name} required predictor {col} is missing at {at(i)} "
                f"(id {df['id'].iloc[i]!r}, time {df['time'].iloc[i]!r})"
            )
    dup = df.duplicated(["id", "time"])
    if dup.any():
        i = _first(dup)
        raise DataError(
            f"{where}: duplicate (id, time) = ({df['id'].iloc[i]}, {df['time'].iloc[i]}) "
            f"at {at(i)}; (id, time) must be unique"
        )


def coerce_table(
    df: pd.DataFrame, task: TaskConfig, where: str = "", float_columns: Sequence[str] = ()
) -> pd.DataFrame:
    """A builder's public table in the release typing, validated: text columns as strings,
    integer columns as Int64 (written `2`), other numeric columns as float64 (written as pandas
    writes floats). A numeric column is an integer column when `csvnum.is_integer_column` says
    so, unless the builder lists it in `float_columns` (the official frame held it as float).
    The result's `attrs["float_columns"]` names its float64 columns, so that typing it again
    (`write_release_task`) keeps them float."""
    where = where or f"task {task.name} table"
    expected = table_columns(task)
    if list(df.columns) != expected:
        _column_mismatch(list(df.columns), expected, where)
    text = set(text_columns(task))
    unknown = sorted(set(float_columns) - (set(expected) - text))
    if unknown:
        raise DataError(f"{where}: float_columns {unknown} are not numeric public columns")
    out = {}
    for col in expected:
        values = df[col].reset_index(drop=True)
        if col in text:
            text_values = values.astype("string").astype("str")
            # A CSV cannot tell "" from missing; make the frame equal what read_table returns.
            out[col] = text_values.mask(text_values == "")
            continue
        if pd.api.types.is_bool_dtype(values):
            values = values.astype("Int64")
        numeric = pd.to_numeric(values, errors="coerce")
        bad = numeric.isna() & values.notna()
        if values.dtype == object or pd.api.types.is_string_dtype(values):
            bad &= values.astype("string").str.strip().fillna("") != ""
        if bad.any():
            i = _first(bad)
            raise DataError(f"{where}: column {col} row {i}: {values.iloc[i]!r} is not a number")
        if col not in float_columns and csvnum.is_integer_column(numeric):
            floats = numeric.to_numpy(dtype=np.float64, na_value=np.nan)
            if pd.api.types.is_integer_dtype(numeric):
                out[col] = numeric.astype("Int64")
            else:
                out[col] = pd.array(np.round(floats), dtype="Int64")
        else:
            out[col] = numeric.astype("float64")
    table = pd.DataFrame(out, columns=expected)
    _validate_table(table, task, where, line0=0)
    table.attrs["float_columns"] = [c for c in expected if c not in text
                                    and table[c].dtype == np.float64]
    return table


def official_values(table: pd.DataFrame, task: TaskConfig) -> pd.DataFrame:
    """The table as the official renderers and baselines read it back from its CSV: numeric
    columns float64 through pandas 2.2.3's converter (`csvnum`), text columns unchanged."""
    out = table.copy()
    text = set(text_columns(task))
    for col in table.columns:
        if col in text or col not in set(table_columns(task)):
            continue
        values = table[col].to_numpy(dtype=np.float64, na_value=np.nan)
        if pd.api.types.is_integer_dtype(table[col]):
            out[col] = values  # written as integers: read back exactly
            continue
        try:
            out[col] = csvnum.reread_floats(values)
        except ValueError as exc:
            raise DataError(f"task {task.name} column {col}: {exc}; the official reader "
                            "rejects it") from None
    return out


def _column_mismatch(actual: list[str], expected: list[str], where: str) -> None:
    for i, (a, e) in enumerate(zip(actual, expected, strict=False)):
        if a != e:
            raise DataError(
                f"{where}: column {i + 1} is {a!r}, expected {e!r} (public columns: {expected})"
            )
    if len(actual) < len(expected):
        raise DataError(f"{where}: missing column(s) {expected[len(actual) :]}")
    raise DataError(f"{where}: unexpected extra column(s) {actual[len(expected) :]}")


def read_table(path: str | Path, task: TaskConfig) -> pd.DataFrame:
    """Read `tabular/<task>.csv` with the release typing; every violation is a one-line error."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: task table not found; {_LAYOUT_HINT}")
    with p.open(encoding="utf-8", newline="") as fh:
        header = next(csv.reader(fh), None)
    expected = table_columns(task)
    if header != expected:
        _column_mismatch(header or [], expected, str(p))
    text = set(text_columns(task))
    dtypes = {c: (str if c in text else "float64") for c in expected}
    # Text keeps literal "NA"/"None" labels; only an empty field is missing.
    na = {c: ([""] if c in text else ["", "nan", "NaN", "NA", "N/A", "null"]) for c in expected}
    # Exact conversion first (pandas >= 3 has no other), then the official reader's values.
    exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    try:
        df = pd.read_csv(
            p, dtype=dtypes, keep_default_na=False, na_values=na, encoding="utf-8", **exact
        )
    except ValueError:
        _locate_bad_number(p, [c for c in expected if c not in text])
        raise
    columns = {}
    for col in expected:
        if col in text:
            columns[col] = df[col]
            continue
        try:
            columns[col] = csvnum.reread_floats(df[col].to_numpy())
        except ValueError as exc:
            raise DataError(f"{p}: column {col}: {exc}; the official reader rejects it") from None
    # one new frame, not a column replaced at a time: that leaves pandas a block per column,
    # and every later column added (the split, the prompt month) warns "highly fragmented"
    df = pd.DataFrame(columns, index=df.index)
    _validate_table(df, task, str(p), line0=2)
    return df


def _locate_bad_number(path: Path, numeric: list[str]) -> None:
    raw = pd.read_csv(path, dtype=str, keep_default_na=False, usecols=numeric)
    for col in numeric:
        values = raw[col].str.strip()
        parsed = pd.to_numeric(values.replace({"": None}), errors="coerce")
        bad = parsed.isna() & (values != "") & ~values.isin(["nan", "NaN", "NA", "N/A", "null"])
        if bad.any():
            i = _first(bad)
            raise DataError(
                f"{path}: column {col} line {i + 2}: {values.iloc[i]!r} is not a number"
            )
