"""University of Michigan Surveys of Consumers (cross-section archive) -> `mich.parquet`.

Facts: shared/spec/00_common.md 1.2 (Michigan row), 1.3 (Michigan row), 1.11; the tasks
income_mich_finance (10_tasks 20) and macro_mich_outlook (20_tasks 11) read the output.

Input `survey.raw.mich`: `mich.csv` as downloaded from the SCA data archive: comma-delimited,
a header line of upper-case variable names, numeric codes, blank = not asked/not available.
Every column of the file is kept (numbers as float64, CASEID/YYYYMM as int64); the columns in
REQUIRED_COLUMNS must be present. Then
- the missing-value rules of MISSING_RULES set matching codes to NaN (counts per rule go to
  `mich_missing_rule_application.parquet`);
- coded variables of CODEBOOK must hold a listed code (else a DataError naming column and code)
  and get a `<VAR>_label` column;
- panel links (DATEPR, IDPREV) -> (YYYYMM, ID) give prev_caseid, panel_link_expected,
  panel_link_ok, months_since_prev, panel_id (root CASEID of the chain), panel_wave (1 = root),
  panel_chain_cycle_flag;
- derived year, month, quarter, survey_date, methodology_regime, mode flags, PX1/PX5 outlier
  flags and the INCOME top-code flag.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.base import BuildReport, raw_path, require_file, write_outputs

SOURCE_URL = "https://data.sca.isr.umich.edu"
OUTPUT_NAME = "mich"
AUDIT_NAME = "mich_missing_rule_application"
INCOME_TOPCODE = 500_000

# Identifiers, links and the variables the builder and the two Michigan tasks use.
REQUIRED_COLUMNS = [
    "CASEID", "YYYYMM", "ID", "IDPREV", "DATEPR", "WT",
    "AGE", "SEX", "REGION", "MARRY", "EDUC", "NUMADT", "NUMKID", "INCOME",
    "PAGO", "BAGO", "GOVT", "DUR", "HOM", "CAR", "SHOM", "BUS12", "PEXP",
    "INEXQ1", "INEXQ2", "PX1", "PX5",
]  # fmt: skip

# (variable, operator, value): rows where the condition holds are set to NaN (spec 1.11; the
# DK/NA codes 8/9 of the other 1-3-5 items follow the same codebook convention as PAGO).
MISSING_RULES: list[tuple[str, str, float]] = [
    ("PAGO", ">=", 8), ("BAGO", ">=", 8), ("GOVT", ">=", 8), ("DUR", ">=", 8),
    ("HOM", ">=", 8), ("CAR", ">=", 8), ("SHOM", ">=", 8), ("BUS12", ">=", 8),
    ("PEXP", ">=", 8), ("INEXQ1", ">=", 8),
    ("PX1", "==", -97), ("PX1", ">=", 96), ("PX1", ">", 95), ("PX1", "<", -95),
    ("PX5", "==", -97), ("PX5", ">=", 96), ("PX5", ">", 95), ("PX5", "<", -95),
    ("NUMKID", ">", 5), ("NUMKID", "<", 0),
    ("NUMADT", ">", 5), ("NUMADT", "<", 0),
]  # fmt: skip

_BETTER_SAME_WORSE = {1: "Better now", 3: "Same", 5: "Worse now"}
_GOOD_PRO_BAD = {1: "Good", 3: "Pro-con", 5: "Bad"}
# Value labels (SCA codebook) for the variables that get a `<VAR>_label` column.
CODEBOOK: dict[str, dict[int, str]] = {
    "SEX": {1: "Male", 2: "Female"},
    "REGION": {1: "West", 2: "North Central", 3: "Northeast", 4: "South"},
    "MARRY": {
        1: "Married/partner",
        2: "Separated",
        3: "Divorced",
        4: "Widowed",
        5: "Never married",
    },
    "EDUC": {
        1: "Grade 0-8 no hs diploma",
        2: "Grade 9-12 no hs diploma",
        3: "Grade 0-12 w/ hs diploma",
        4: "Grade 13-17 no col degree",
        5: "Grade 13-16 w/ col degree",
        6: "Grade 17 W/ col degree",
    },
    "PAGO": _BETTER_SAME_WORSE,
    "BAGO": {1: "Better now", 3: "About the same", 5: "Worse now"},
    "GOVT": {1: "Good job", 3: "Only fair", 5: "Poor job"},
    "DUR": _GOOD_PRO_BAD,
    "HOM": _GOOD_PRO_BAD,
    "CAR": _GOOD_PRO_BAD,
    "SHOM": _GOOD_PRO_BAD,
    "BUS12": {
        1: "Good times",
        2: "Good with qualifications",
        3: "Pro-con",
        4: "Bad with qualifications",
        5: "Bad times",
    },
    "PEXP": {1: "Will be better off", 3: "Same", 5: "Will be worse off"},
    "INEXQ1": {1: "Higher", 2: "Higher at same rate as now", 3: "About the same", 5: "Lower"},
}

# (last YYYYMM of the regime, name); web_abs_only from 202407 on.
METHODOLOGY_REGIMES: list[tuple[int, str]] = [
    (199309, "landline_rdd_waksberg"),
    (201206, "landline_rdd_list_assisted"),
    (201412, "dual_frame_cell_plus_landline"),
    (202403, "cell_phone_rdd_only"),
    (202406, "transition_phone_web"),
]
LAST_REGIME = "web_abs_only"

_OPS = {
    "==": np.equal,
    ">=": np.greater_equal,
    ">": np.greater,
    "<": np.less,
    "<=": np.less_equal,
}


def read_mich_csv(path: str | Path) -> pd.DataFrame:
    """The archive CSV as numbers: every column float64, CASEID and YYYYMM int64."""
    p = require_file(Path(path), "Michigan Surveys of Consumers extract mich.csv", SOURCE_URL)
    try:
        raw = pd.read_csv(p, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{p}: unreadable Michigan CSV ({str(exc).splitlines()[0]})") from None
    raw.columns = [str(c).strip().upper() for c in raw.columns]
    for column in REQUIRED_COLUMNS:
        if column not in raw.columns:
            raise DataError(
                f"{p}: column {column} not found; download the extract again from {SOURCE_URL} "
                "with the full variable list (numeric codes, comma-delimited)"
            )
    if raw.columns.duplicated().any():
        raise DataError(f"{p}: column {raw.columns[raw.columns.duplicated()][0]} repeats")
    out = {}
    for column in raw.columns:
        text = raw[column].str.strip()
        blank = text == ""
        values = pd.to_numeric(text.mask(blank), errors="coerce")
        junk = values.isna() & ~blank
        if junk.any():
            row = int(np.flatnonzero(junk.to_numpy())[0])
            raise DataError(
                f"{p}: column {column} holds non-numeric value {text.iloc[row]!r} "
                f"(data row {row + 1}); expected numeric codes"
            )
        out[column] = values.astype("float64")
    frame = pd.DataFrame(out)
    for column in ("CASEID", "YYYYMM"):
        values = frame[column]
        bad = values.isna() | (values != values.round())
        if bad.any():
            raise DataError(f"{p}: column {column} is blank or not an integer in some row")
        frame[column] = values.astype("int64")
    month = frame["YYYYMM"] % 100
    if ((month < 1) | (month > 12) | (frame["YYYYMM"] < 190001)).any():
        bad = frame.loc[(month < 1) | (month > 12) | (frame["YYYYMM"] < 190001), "YYYYMM"]
        raise DataError(f"{p}: column YYYYMM holds {int(bad.iloc[0])}, not a YYYYMM month")
    if frame["CASEID"].duplicated().any():
        dup = int(frame.loc[frame["CASEID"].duplicated(), "CASEID"].iloc[0])
        raise DataError(f"{p}: CASEID {dup} repeats; the extract must have one row per interview")
    return frame


def apply_missing_rules(frame: pd.DataFrame) -> pd.DataFrame:
    """Set rule-matching codes to NaN in place; return the audit (one row per rule)."""
    audit, hits = [], []
    for variable, op, value in MISSING_RULES:
        if variable not in frame.columns:
            continue
        # Conditions are evaluated on the raw codes (NaN compares False), then applied together.
        hit = _OPS[op](frame[variable].to_numpy(), value)
        hits.append((variable, hit))
        audit.append(
            {"variable": variable, "operator": op, "value": float(value), "rows": int(hit.sum())}
        )
    for variable, hit in hits:
        frame.loc[hit, variable] = np.nan
    return pd.DataFrame(audit, columns=["variable", "operator", "value", "rows"])


def add_labels(frame: pd.DataFrame, path: Path) -> None:
    """`<VAR>_label` for each CODEBOOK variable; a code outside the codebook is an error."""
    for variable, labels in CODEBOOK.items():
        values = frame[variable]
        unknown = values.notna() & ~values.isin(list(labels))
        if unknown.any():
            code = values[unknown].iloc[0]
            raise DataError(
                f"{path}: column {variable} holds code {code:g}, which is not in the Michigan "
                f"codebook ({sorted(labels)} or a missing code); re-download it from {SOURCE_URL}"
            )
        codes = values.astype("Int64")
        frame[f"{variable}_label"] = codes.map(labels).astype("string")


def link_panel(frame: pd.DataFrame, path: Path) -> None:
    """Predecessor interview by (DATEPR, IDPREV) == (YYYYMM, ID), and the chain to its root."""
    ids = frame["ID"]
    keyed = frame.loc[ids.notna(), ["YYYYMM", "ID", "CASEID"]]
    dup = keyed.duplicated(["YYYYMM", "ID"])
    if dup.any():
        row = keyed[dup].iloc[0]
        raise DataError(
            f"{path}: (YYYYMM, ID) = ({int(row['YYYYMM'])}, {row['ID']:g}) repeats, so panel "
            "links (DATEPR, IDPREV) are ambiguous"
        )
    expected = frame["DATEPR"].notna() & frame["IDPREV"].notna()
    lookup = pd.Series(
        np.arange(len(frame))[ids.notna().to_numpy()],
        index=pd.MultiIndex.from_arrays([keyed["YYYYMM"].astype("float64"), keyed["ID"]]),
    )
    want = pd.MultiIndex.from_arrays([frame["DATEPR"], frame["IDPREV"]])
    parent = lookup.reindex(want).to_numpy()
    parent = np.where(expected.to_numpy() & ~np.isnan(parent), parent, -1).astype("int64")
    caseid = frame["CASEID"].to_numpy()

    frame["panel_link_expected"] = expected.astype("int8")
    frame["panel_link_ok"] = (parent >= 0).astype("int8")
    frame["prev_caseid"] = (
        pd.Series(caseid[np.maximum(parent, 0)], dtype="Int64").where(parent >= 0, pd.NA).array
    )
    dated = frame["DATEPR"].where(expected)
    index_now = (frame["YYYYMM"] // 100) * 12 + frame["YYYYMM"] % 100
    index_prev = (dated // 100) * 12 + dated % 100
    frame["months_since_prev"] = (index_now - index_prev).astype("Int64")

    # Pointer doubling: roots point to themselves with distance 0; after enough rounds every
    # acyclic row points at its root, and a row still pointing at a non-root is on a cycle.
    n = len(frame)
    jump = np.where(parent >= 0, parent, np.arange(n))
    dist = (parent >= 0).astype("int64")
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))) + 1)):
        dist = dist + dist[jump]
        jump = jump[jump]
        dist = np.minimum(dist, n + 1)
    cycle = parent[jump] >= 0
    frame["panel_chain_cycle_flag"] = cycle.astype("int8")
    frame["panel_id"] = pd.Series(caseid[jump], dtype="Int64").where(~cycle, pd.NA).array
    frame["panel_wave"] = pd.Series(dist + 1, dtype="Int64").where(~cycle, pd.NA).array


def methodology_regime(yyyymm: pd.Series) -> pd.Series:
    """Sampling/mode regime by survey month (spec 1.11)."""
    out = pd.Series(LAST_REGIME, index=yyyymm.index, dtype="string")
    for last, name in reversed(METHODOLOGY_REGIMES):
        out[yyyymm <= last] = name
    return out


def add_derived(frame: pd.DataFrame) -> None:
    frame["year"] = (frame["YYYYMM"] // 100).astype("int64")
    frame["month"] = (frame["YYYYMM"] % 100).astype("int64")
    frame["quarter"] = ((frame["month"] - 1) // 3 + 1).astype("int64")
    frame["survey_date"] = pd.to_datetime(
        pd.DataFrame({"year": frame["year"], "month": frame["month"], "day": 1})
    ).astype("datetime64[ns]")
    regime = methodology_regime(frame["YYYYMM"])
    frame["methodology_regime"] = regime
    frame["mode_phone"] = regime.isin(
        [name for _, name in METHODOLOGY_REGIMES[:4]] + ["transition_phone_web"]
    ).astype("int8")
    frame["mode_web"] = regime.isin(["transition_phone_web", LAST_REGIME]).astype("int8")
    for variable in ("PX1", "PX5"):
        frame[f"{variable}_outlier_abs_gt25"] = (frame[variable].abs() > 25).astype("int8")
    frame["INCOME_topcoded"] = (frame["INCOME"] >= INCOME_TOPCODE).astype("int8")


def clean_mich(path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """mich.csv -> (the `mich` frame, the missing-rule audit)."""
    p = Path(path)
    frame = read_mich_csv(p)
    audit = apply_missing_rules(frame)
    add_labels(frame, p)
    link_panel(frame, p)
    add_derived(frame)
    return frame, audit


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read `survey.raw.mich` and write `mich.parquet` (+ the rule audit) atomically."""
    started = time.perf_counter()
    path = raw_path(survey, "mich", raw_dir, hint="micro/mich/mich.csv")
    frame, audit = clean_mich(path)
    return write_outputs(survey, out_dir, {OUTPUT_NAME: frame, AUDIT_NAME: audit}, [path],
                         started)