"""University of Michigan Surveys of Consumers (cross-section archive) -> `mich.parquet`.

Facts: shared/spec/00_common.md 1.2 (Michigan row), 1.3 (Michigan row), 1.11, and the reference's
`scripts/1_preprocessing/mich.py` (Jn-Huang/householdbench_eval @148abfb), whose output this
builder reproduces column by column. The tasks income_mich_finance (10_tasks 20) and
macro_mich_outlook (20_tasks 11) read it.

Inputs
- `survey.raw.mich`: `mich.csv` as the SCA archive serves it (comma-delimited, one header line,
  numeric codes, blank = not asked). The extract must hold the 118 variables of the request
  (`mich_variables.csv` here = the reference's `mappings/mich_variables.csv`); a column that is
  not numeric is an error (the pandas default NA strings count as blank, as the reference reads
  them). Numbers are typed as pandas types the stripped text: a column of integer literals is
  Int64, any decimal point or exponent makes it Float64 (all blank: Float64).
- `survey.raw.release_dates`: the reference's `release_mich.csv` crosswalk (yyyymm,
  release_date, source, source_url, comments; every field filled, one row per month; it must
  cover every survey month).

Output columns, in order: the CSV's columns; raw snapshots `<VAR>_raw` (before the missing rules,
sorted by name) of PAGO PEXP BUS12 BUS5 DUR PX1 PX5 INCOME POLAFF METHOD SAMPLE WT; then
- the missing-value rules of `mich_missing_rules.csv` (the reference's table, 101 rules: a code
  matching `condition_variable operator value` is set missing; audit per rule in
  `mich_missing_rule_application.parquet`);
- `<VAR>_label` for SEX REGION MARRY EDUC PAGO BAGO GOVT DUR HOM CAR SHOM BUS12 PEXP INEXQ1 from
  `mich_labels.csv` (the reference's label texts, label set = variable name); a code without a
  label is an error (e.g. MARRY 2: the codebook labels 1, 3, 4, 5), categories ordered by code;
- year, month, quarter, survey_date, year_month, methodology_regime (landline_rdd_waksberg
  197801-199309, landline_rdd_list_assisted -201206, dual_frame_cell_plus_landline -201412,
  cell_phone_rdd_only -202403, transition_phone_web -202406, web_abs_only after, else unknown),
  mode_by_method (METHOD 1, 3 phone, 2 web, 4 in_person, else unknown), mode_effective (METHOD's
  mode in the transition months, else phone before 202404 and web after 202406),
  web_respondent, sample_type_label (SAMPLE 1-8);
- index recodes BUS12_rep/BUS5_rep (2->1, 4->5), `<Q>_valid_rep` (code in 1, 3, 5), `<Q>_dk_na`
  (raw 8/9; BUS5 raw 98/99), PX1/PX5_outlier_abs_gt25, income_topcoded_500k_flag (== 500,000),
  income_anomaly_gt_500k_flag (> 500,000), income_sentinel_999998_999999_flag, wt_positive;
- panel links: prev_caseid = CASEID of the interview whose (YYYYMM, ID) equals this row's
  (DATEPR, IDPREV) (the first such interview when the key repeats), panel_link_expected
  (DATEPR and IDPREV given), panel_link_ok (found), months_since_prev (month index of YYYYMM
  minus that of DATEPR, Float64), panel_id / panel_wave (root CASEID of the chain and depth, 1 =
  root), panel_chain_cycle_flag, panel_wave_from_sample (SAMPLE 1,3,6 -> 1; 2,4,7 -> 2; 5,8 -> 3),
  panel_wave_consistent_with_sample; a chain that loops makes each of its rows its own root (wave
  1), the row whose walk found the loop flagged, as the reference resolves rows in file order;
- release_date (ISO) and release_date_source (the crosswalk's `source`).
Indicator columns are Int64, as the reference writes them.
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
_HERE = Path(__file__).resolve().parent
VARIABLES_PATH = _HERE / "mich_variables.csv"
RULES_PATH = _HERE / "mich_missing_rules.csv"
LABELS_PATH = _HERE / "mich_labels.csv"

RAW_SNAPSHOTS = ["PAGO", "PEXP", "BUS12", "BUS5", "DUR", "PX1", "PX5", "INCOME", "POLAFF",
                 "METHOD", "SAMPLE", "WT"]  # fmt: skip
LABELLED = ["SEX", "REGION", "MARRY", "EDUC", "PAGO", "BAGO", "GOVT", "DUR", "HOM", "CAR",
            "SHOM", "BUS12", "PEXP", "INEXQ1"]  # fmt: skip
REGIMES: list[tuple[int, int, str]] = [
    (197801, 199309, "landline_rdd_waksberg"),
    (199310, 201206, "landline_rdd_list_assisted"),
    (201207, 201412, "dual_frame_cell_plus_landline"),
    (201501, 202403, "cell_phone_rdd_only"),
    (202404, 202406, "transition_phone_web"),
    (202407, 10**8, "web_abs_only"),
]
MODE_BY_METHOD = {1: "phone", 2: "web", 3: "phone", 4: "in_person"}
SAMPLE_LABELS = {
    1: "landline_rdd_interview", 2: "landline_rdd_reinterview", 3: "cell_rdd_interview",
    4: "cell_rdd_reinterview", 5: "cell_rdd_second_reinterview", 6: "fresh_abs_web_interview",
    7: "first_abs_web_reinterview", 8: "second_abs_web_reinterview",
}  # fmt: skip
WAVE_FROM_SAMPLE = {1: 1, 2: 2, 3: 1, 4: 2, 5: 3, 6: 1, 7: 2, 8: 3}
CROSSWALK_COLUMNS = ["yyyymm", "release_date", "source", "source_url", "comments"]
# pandas' default NA strings: the reference reads them as blank.
_NA_TEXT = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
            "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"}
_OPS = {"==": np.equal, ">=": np.greater_equal, "<=": np.less_equal, ">": np.greater,
        "<": np.less}  # fmt: skip


def extract_variables() -> list[str]:
    """The 118 variables of the reference's extract request, in its order."""
    return pd.read_csv(VARIABLES_PATH, dtype=str, keep_default_na=False)["variable"].tolist()


def missing_rules() -> dict[str, list[tuple[str, str, float]]]:
    """variable -> [(condition variable, operator, value)], in the table's order."""
    table = pd.read_csv(RULES_PATH, dtype=str, keep_default_na=False)
    rules: dict[str, list[tuple[str, str, float]]] = {}
    for row in table.itertuples(index=False):
        rules.setdefault(row.variable, []).append(
            (row.condition_variable, row.operator, float(row.value)))
    return rules


def value_labels() -> dict[str, dict[int, str]]:
    table = pd.read_csv(LABELS_PATH, dtype=str, keep_default_na=False)
    out: dict[str, dict[int, str]] = {}
    for row in table.itertuples(index=False):
        out.setdefault(row.label_set, {})[int(row.code)] = row.label
    return out


# --------------------------------------------------------------------------------------------
# Reading


def numeric_column(text: pd.Series) -> tuple[pd.Series, np.ndarray]:
    """Text -> (Int64 when every value is an integer literal, else Float64; blank = NA) and the
    positions holding something that is not a number."""
    stripped = text.str.strip()
    blank = stripped.isin(_NA_TEXT).to_numpy()
    values = pd.to_numeric(stripped.mask(blank), errors="coerce").astype("float64")
    junk = np.isnan(values.to_numpy()) & ~blank
    if not blank.all() and stripped[~blank].str.fullmatch(r"[+-]?[0-9]+").all():
        try:
            exact = pd.to_numeric(stripped.mask(blank, "0"), errors="raise").astype("int64")
            return exact.astype("Int64").mask(blank), junk
        except (ValueError, OverflowError):
            pass  # beyond int64: pandas types it Float64 too
    return values.astype("Float64"), junk


def read_mich_csv(path: str | Path) -> pd.DataFrame:
    """The archive CSV as numbers, columns in file order (CASEID and YYYYMM complete)."""
    p = require_file(Path(path), "Michigan Surveys of Consumers extract mich.csv", SOURCE_URL)
    try:
        raw = pd.read_csv(p, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{p}: unreadable Michigan CSV ({str(exc).splitlines()[0]})") from None
    if raw.columns.duplicated().any():
        raise DataError(f"{p}: column {raw.columns[raw.columns.duplicated()][0]} repeats")
    absent = [c for c in extract_variables() if c not in raw.columns]
    if absent:
        raise DataError(
            f"{p}: column {absent[0]} not found ({len(absent)} of the 118 requested variables "
            f"missing); download the extract again from {SOURCE_URL} with the full variable list"
        )
    out = {}
    for column in raw.columns:
        values, junk = numeric_column(raw[column])
        if junk.any():
            row = int(np.flatnonzero(junk)[0])
            raise DataError(f"{p}: column {column} holds non-numeric value "
                            f"{raw[column].iloc[row]!r} (data row {row + 1}); expected codes")
        out[column] = values
    frame = pd.DataFrame(out, index=raw.index)
    for column in ("CASEID", "YYYYMM"):
        if frame[column].isna().any() or (frame[column] % 1 != 0).any():
            raise DataError(f"{p}: column {column} is blank or not an integer in some row")
    ym = frame["YYYYMM"].astype("int64")
    bad = ~(ym % 100).between(1, 12) | (ym < 190001)
    if bad.any():
        raise DataError(f"{p}: column YYYYMM holds {int(ym[bad].iloc[0])}, not a YYYYMM month")
    if frame["CASEID"].duplicated().any():
        dup = int(frame.loc[frame["CASEID"].duplicated(), "CASEID"].iloc[0])
        raise DataError(f"{p}: CASEID {dup} repeats; the extract must have one row per interview")
    return frame


def read_release_crosswalk(path: str | Path) -> pd.DataFrame:
    """release_mich.csv -> yyyymm (int), release_date (ISO), source; fields as the reference
    requires them (all present, no duplicate month)."""
    p = require_file(Path(path), "Michigan release-date crosswalk release_mich.csv",
                     "the reference repository's data/raw/release_dates/")
    table = pd.read_csv(p, dtype=str, keep_default_na=False)
    absent = [c for c in CROSSWALK_COLUMNS if c not in table.columns]
    if absent:
        raise DataError(f"{p}: column {absent[0]} missing; release_mich.csv needs "
                        f"{', '.join(CROSSWALK_COLUMNS)}")
    table = table[CROSSWALK_COLUMNS].apply(lambda s: s.str.strip())
    yyyymm = pd.to_numeric(table["yyyymm"], errors="coerce")
    if yyyymm.isna().any() or (yyyymm % 1 != 0).any():
        raise DataError(f"{p}: yyyymm {table['yyyymm'][yyyymm.isna()].iloc[0]!r} is not a month")
    dates = pd.to_datetime(table["release_date"].mask(table["release_date"] == ""),
                           errors="coerce", format="mixed")
    if dates.isna().any():
        raise DataError(f"{p}: release_date {table['release_date'][dates.isna()].iloc[0]!r} of "
                        f"{int(yyyymm[dates.isna()].iloc[0])} is not a date")
    for column in ("source", "source_url", "comments"):
        empty = table[column] == ""
        if empty.any():
            raise DataError(f"{p}: column {column} is empty for yyyymm "
                            f"{int(yyyymm[empty].iloc[0])}; every month needs it")
    out = pd.DataFrame({"yyyymm": yyyymm.astype("int64"),
                        "release_date": dates.dt.strftime("%Y-%m-%d"),
                        "source": table["source"]})
    if out["yyyymm"].duplicated().any():
        raise DataError(f"{p}: yyyymm {int(out.loc[out['yyyymm'].duplicated(), 'yyyymm'].iloc[0])}"
                        " appears twice")
    return out


# --------------------------------------------------------------------------------------------
# Cleaning steps


def apply_missing_rules(frame: pd.DataFrame) -> pd.DataFrame:
    """Apply the rules in place, in table order; return the reference's audit (one row per
    rule; one row with applied 0 for a variable the extract lacks)."""
    audit = []
    for target, rules in missing_rules().items():
        if target not in frame.columns:
            audit.append({"target_variable": target, "rule_lhs": "", "rule_operator": "",
                          "rule_rhs": np.nan, "applied": 0, "rows_set_missing": 0,
                          "missing_before": np.nan, "missing_after": np.nan})
            continue
        before = int(frame[target].isna().sum())
        for lhs, op, rhs in rules:
            row = {"target_variable": target, "rule_lhs": lhs, "rule_operator": op,
                   "rule_rhs": rhs, "applied": 0, "rows_set_missing": 0,
                   "missing_before": before}
            if lhs in frame.columns:
                values = frame[lhs].to_numpy(dtype="float64", na_value=np.nan)
                hit = _OPS[op](values, rhs)
                row["applied"] = 1
                row["rows_set_missing"] = int((hit & frame[target].notna().to_numpy()).sum())
                frame.loc[hit, target] = pd.NA
            row["missing_after"] = int(frame[target].isna().sum())
            audit.append(row)
    return pd.DataFrame(audit, columns=["target_variable", "rule_lhs", "rule_operator",
                                        "rule_rhs", "applied", "rows_set_missing",
                                        "missing_before", "missing_after"])


def add_labels(frame: pd.DataFrame, path: Path) -> None:
    """`<VAR>_label` (categorical, categories in code order) for the 14 labelled variables."""
    labels = value_labels()
    for variable in LABELLED:
        codebook = labels[variable]
        values = frame[variable]
        whole = values.notna() & (values % 1 == 0).fillna(False)
        unknown = values.notna() & (~whole | ~values.isin(list(codebook)))
        if unknown.any():
            code = values[unknown].iloc[0]
            raise DataError(
                f"{path}: column {variable} holds code {code:g}, which has no label in the "
                f"Michigan codebook (codes {sorted(codebook)}); re-download it from {SOURCE_URL}"
            )
        text = values.astype("Int64").map(codebook)
        categories = list(dict.fromkeys(codebook[k] for k in sorted(codebook)))
        frame[f"{variable}_label"] = pd.Categorical(text, categories=categories)


def _flag(mask: pd.Series) -> pd.Series:
    return mask.fillna(False).astype(bool).astype("Int64")


def add_derived(frame: pd.DataFrame) -> None:
    ym = frame["YYYYMM"].astype("int64")
    frame["year"] = (ym // 100).astype("Int64")
    frame["month"] = (ym % 100).astype("Int64")
    frame["quarter"] = ((frame["month"] - 1) // 3 + 1).astype("Int64")
    frame["survey_date"] = pd.to_datetime(
        pd.DataFrame({"year": ym // 100, "month": ym % 100, "day": 1})).astype("datetime64[ns]")
    frame["year_month"] = frame["survey_date"].dt.strftime("%Y-%m").astype(object)
    regime = pd.Series("unknown", index=frame.index, dtype="string")
    for first, last, name in REGIMES:
        regime[(ym >= first) & (ym <= last)] = name
    frame["methodology_regime"] = regime
    method = frame["METHOD"].astype("Int64").map(MODE_BY_METHOD).fillna("unknown")
    frame["mode_by_method"] = method.astype("string")
    by_date = np.where(ym < 202404, "phone", np.where(ym > 202406, "web", "transition"))
    effective = np.where(regime == "transition_phone_web", frame["mode_by_method"], by_date)
    frame["mode_effective"] = pd.Series(effective, index=frame.index, dtype="string")
    frame["web_respondent"] = _flag(frame["mode_effective"] == "web")
    frame["sample_type_label"] = frame["SAMPLE"].astype("Int64").map(SAMPLE_LABELS).astype(
        "string")
    for q in ("BUS12", "BUS5"):
        frame[f"{q}_rep"] = frame[q].replace({2: 1, 4: 5})
    for q, column in (("PAGO", "PAGO"), ("PEXP", "PEXP"), ("BUS12", "BUS12_rep"),
                      ("BUS5", "BUS5_rep"), ("DUR", "DUR")):
        frame[f"{q}_valid_rep"] = _flag(frame[column].isin([1, 3, 5]))
    for q in ("PAGO", "PEXP", "DUR", "BUS12"):
        frame[f"{q}_dk_na"] = _flag(frame[f"{q}_raw"].isin([8, 9]))
    frame["BUS5_dk_na"] = _flag(frame["BUS5_raw"].isin([98, 99]))
    for q in ("PX1", "PX5"):
        frame[f"{q}_outlier_abs_gt25"] = _flag(frame[q].abs() > 25)
    frame["income_topcoded_500k_flag"] = _flag(frame["INCOME"] == 500_000)
    frame["income_anomaly_gt_500k_flag"] = _flag(frame["INCOME"] > 500_000)
    frame["income_sentinel_999998_999999_flag"] = _flag(frame["INCOME"].isin([999_998, 999_999]))
    frame["wt_positive"] = _flag(frame["WT"] > 0)


def _month_index(values: pd.Series) -> pd.Series:
    v = values.astype("Float64")
    return (v // 100) * 12 + v % 100


def resolve_chains(case: np.ndarray, prev: dict[int, int]) -> tuple[dict, dict, dict]:
    """Root, depth and loop flag per CASEID, walking predecessor links in file order (the
    reference's resolution: a loop makes every row walked its own root at depth 1)."""
    root: dict[int, int] = {}
    depth: dict[int, int] = {}
    loop: dict[int, int] = {}
    for start in case:
        if start in root:
            loop.setdefault(start, 0)
            continue
        chain: list[int]
        chain, seen, cur = [], set(), start
        while True:
            if cur in root:
                r, d = root[cur], depth[cur] + 1
                break
            if cur in seen:
                for node in chain:
                    root[node], depth[node] = node, 1
                loop[start] = 1
                chain = []
                break
            seen.add(cur)
            chain.append(cur)
            if cur not in prev:
                r, d = cur, 1
                break
            cur = prev[cur]
        for node in reversed(chain):
            root[node], depth[node] = r, d
            d += 1
        loop.setdefault(start, 0)
    return root, depth, loop


def link_panel(frame: pd.DataFrame) -> None:
    """prev_caseid ... panel_wave_consistent_with_sample (see the module docstring)."""
    keyed = frame.loc[frame["ID"].notna(), ["YYYYMM", "ID", "CASEID"]]
    keyed = keyed[~keyed.duplicated(["YYYYMM", "ID"])]
    lookup = pd.Series(keyed["CASEID"].astype("int64").to_numpy(),
                       index=pd.MultiIndex.from_arrays([keyed["YYYYMM"].astype("float64"),
                                                        keyed["ID"].astype("float64")]))
    expected = frame["DATEPR"].notna() & frame["IDPREV"].notna()
    want = pd.MultiIndex.from_arrays([frame["DATEPR"].astype("float64"),
                                      frame["IDPREV"].astype("float64")])
    found = np.array(lookup.reindex(want).to_numpy(dtype="float64"))
    found[~expected.to_numpy()] = np.nan
    frame["prev_caseid"] = pd.array(found, dtype="Float64").astype("Int64")
    frame["panel_link_expected"] = expected.astype("Int64")
    ok = frame["prev_caseid"].notna() & expected
    frame["panel_link_ok"] = ok.astype("Int64")
    frame["months_since_prev"] = _month_index(frame["YYYYMM"]) - _month_index(frame["DATEPR"])

    case = frame["CASEID"].astype("int64").to_numpy()
    prev = dict(zip(case[ok.to_numpy()].tolist(),
                    frame.loc[ok, "prev_caseid"].astype("int64").tolist(), strict=True))
    root, depth, loop = resolve_chains(case.tolist(), prev)
    frame["panel_id"] = pd.array([root[c] for c in case.tolist()], dtype="Int64")
    frame["panel_wave"] = pd.array([depth[c] for c in case.tolist()], dtype="Int64")
    frame["panel_chain_cycle_flag"] = pd.array([loop[c] for c in case.tolist()], dtype="Int64")
    frame["panel_wave_from_sample"] = frame["SAMPLE"].astype("Int64").map(
        WAVE_FROM_SAMPLE).astype("Int64")
    frame["panel_wave_consistent_with_sample"] = _flag(
        frame["panel_wave_from_sample"].notna() & (frame["panel_wave"] ==
                                                   frame["panel_wave_from_sample"]))


def add_release_dates(frame: pd.DataFrame, crosswalk: pd.DataFrame, path: Path) -> None:
    table = crosswalk.set_index("yyyymm")
    ym = frame["YYYYMM"].astype("int64")
    hole = ~ym.isin(table.index)
    if hole.any():
        months = sorted(set(ym[hole].tolist()))
        raise DataError(f"{path}: no release date for survey month(s) {months[:10]} "
                        f"({int(hole.sum())} interviews); add them to the crosswalk")
    frame["release_date"] = ym.map(table["release_date"]).astype("string")
    frame["release_date_source"] = ym.map(table["source"]).astype("string")


def clean_mich(path: str | Path, crosswalk_path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """mich.csv (+ release_mich.csv) -> (the `mich` frame, the missing-rule audit)."""
    p = Path(path)
    frame = read_mich_csv(p)
    crosswalk = read_release_crosswalk(crosswalk_path)
    csv_columns = list(frame.columns)
    snapshots = {f"{c}_raw": frame[c].copy() for c in RAW_SNAPSHOTS if c in frame.columns}
    frame = pd.concat([frame, pd.DataFrame(snapshots, index=frame.index)], axis=1)
    audit = apply_missing_rules(frame)
    add_labels(frame, p)
    add_derived(frame)
    link_panel(frame)
    add_release_dates(frame, crosswalk, Path(crosswalk_path))
    raw_cols = sorted(snapshots)
    derived = [c for c in frame.columns if c not in set(csv_columns) | set(raw_cols)]
    return frame[csv_columns + raw_cols + derived], audit


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Read `survey.raw.mich` and `raw.release_dates`; write `mich.parquet` (+ the rule audit)."""
    started = time.perf_counter()
    path = raw_path(survey, "mich", raw_dir, hint="micro/mich/mich.csv")
    crosswalk = raw_path(survey, "release_dates", raw_dir,
                         hint="release_dates/release_mich.csv")
    frame, audit = clean_mich(path, crosswalk)
    return write_outputs(survey, out_dir, {OUTPUT_NAME: frame, AUDIT_NAME: audit},
                         [path, crosswalk], started)
