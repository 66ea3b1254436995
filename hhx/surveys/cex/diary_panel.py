"""One CE Diary survey year -> its consumer-unit-day rows, by the reference's rules
(Jn-Huang/householdbench_eval, scripts/1_preprocessing/cex_diary.py; rules reproduced, not code).

Input per year: the text fields of FMLY (diary weeks), MEMB (members) and EXPD (purchases), each
row with `source_provider` (ICPSR / BLS), `source_archive`, `source_quarter_file` (Q1-Q4) and
`source_member`. Output: 7 rows per diary week (`make_daily`), the columns below.

Weeks (`parse_fmly`): NEWID (digits, a trailing ".0" dropped, 8 digits; otherwise an error);
`week_key` = "<year>:<NEWID>", `cu_id` = "<year>:<first 7 digits>", `source_week_id` =
"<provider>:<year>:<archive>:Q<n>:<NEWID>" (e.g. "BLS:1995:diary95.zip:Q1:70659091");
`diary_week` = NEWID's last digit. Start date from STRTYEAR (0-99 -> 19YY), STRTMNTH, STRTDAY:
`start_date_valid` when it is a date, `legacy_strict_start_date_valid` also in the source year.
Numbers: `age_ref`, `household_size` (FAM_SIZE), `children_under_18` (PERSLT18),
`number_adults` (their difference, valid when both present and >= 0), `analysis_weight` =
`diary_final_weight` (FINLWT21), annual income / Social Security and Railroad income / SSI:
FINCBEFX / FSS_RRX / FSUPPX to 2003, the imputed-or-collected FINCBEFM / FSS_RRXM / FSUPPXM
from 2004. `pickup_status_harmonized`: PICK_UP 1 or PICKCODE 201 complete_interview, 3 / 217
temporarily_absent. Labels (unmatched codes "not reported"): sex male/female; race (to 2002:
White, Black, American Indian Aleut or Eskimo, Asian or Pacific Islander, other race; from 2003
with Asian, Native Hawaiian or Pacific Islander, multiracial); education (1-7 to 1995, 00 and
10-17 from 1996); marital status; region Northeast/Midwest/South/West; urban area / rural area
(1982-83: not_classified_urban_only_source); home tenure; reference-person work status (retired
when the reference person's reason for not working is retirement, code 5 to 1996 and 1 from 1997,
else currently working for EMPLTYP1 1-6, else not currently working). `<FIELD>_raw` keeps each
raw field.

Members (`member_flags`): per CU (both weeks), the reference person or spouse (CU_CODE1 1/2)
answering ANYSSINC / ANYRAIL / US_SUPP = 1: `reference_or_spouse_oasdi`, `_railroad`, `_ssi`,
`_dual_oasdi_ssi`, `_railroad_only`, `_ssi_only`, `_paper_recipient` (OASDI or Railroad),
`likely_social_security_recipients` (members with OASDI), and the same per role
(`reference_person_oasdi_affirmative`, `spouse_ssi_affirmative`, ...).

Purchases (`prepare_expd`): COST a number and UCC 1-6 digits (else an error); QREDATE = day
sequence, weekday (1 = Sunday), month, day, year (2 digits -> 19YY, or 4), 8 or 10 digits:
valid when its date exists and sequence and weekday are 1-7. General allocation: valid QREDATE,
week present, date = week start + sequence - 1. Strict ("legacy strict v1"): also the year is
the source year, the weekday is the date's, and the width is 8 (10 in 1996).
`expenditure_complete`: a valid start and no usable purchase left unallocated.

Quality (1986-1996, `attach_strict_quality`): a week is strictly dated when its start is valid
in the source year and it has strict-dated purchases not all on the start day; per CU:
`stephens_1986_1996_quality_flag_v1` = two weeks numbered 1 and 2, both strictly started and
strictly dated, both PICK_UP 1, both WEEKN 2, starts at least 7 days apart. Per-CU counts for the
task filters (`attach_restriction_inputs`): pickups complete, WEEKN = 2, complete income
(RESPSTAT 1), positive weight, positive Social Security + Railroad income, both week numbers,
two records, non-overlapping starts.

Days (`make_daily`): `diary_day_sequence` 1-7, `source_day_id` = week id + ":D<k>", `diary_date`
(start + k - 1; missing without a valid start), `daily_total_expenditure` (general allocation,
0 on a dated day without purchases), `general_aggregated_transaction_rows`, `observed_zero_day`;
1986-1996 also `daily_total_expenditure_legacy_strict_v1` and the strict food sums (UCC sets:
food at home 010110-180710, 200112, alcohol at home 200110, 200111, 200210-200410; food away
190110-190320, 190901, 190902, alcohol away 200510-200530 to 1993 / -200536 from 1994), 0 on a
strictly dated day without purchases, missing otherwise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hhx.errors import DataError

LEGACY_STRICT_RULE_VERSION = "stephens_1986_1996_strict_v1"
STRICT_YEARS = range(1986, 1997)
SEX = {"1": "male", "2": "female"}
RACE = {"1": "White", "2": "Black", "3": "American Indian, Aleut, or Eskimo",
        "4": "Asian or Pacific Islander", "5": "other race"}
RACE_2003 = {"1": "White", "2": "Black", "3": "American Indian, Aleut, or Eskimo", "4": "Asian",
             "5": "Native Hawaiian or Pacific Islander", "6": "multiracial"}
EDUC = {"1": "elementary school", "2": "some high school", "3": "high school graduate",
        "4": "some college", "5": "college graduate", "6": "more than four years of college",
        "7": "no reported schooling"}
EDUC_1996 = {"00": "no reported schooling", "10": "elementary school", "11": "some high school",
             "12": "high school graduate", "13": "some college",
             "14": "associate degree or some college", "15": "college graduate",
             "16": "master's degree", "17": "doctoral or professional degree"}
MARITAL = {"1": "married", "2": "widowed", "3": "divorced", "4": "separated",
           "5": "never married"}
REGION = {"1": "Northeast", "2": "Midwest", "3": "South", "4": "West"}
URBAN = {"1": "urban area", "2": "rural area"}
TENURE = {"1": "owns a home with a mortgage", "2": "owns a home without a mortgage",
          "3": "owns a home", "4": "rents a home", "5": "occupies housing without cash rent",
          "6": "lives in college housing"}
FMLY_RAW = ["NEWID", "AGE_REF", "BLS_URBN", "CUTENURE", "EDUC_REF", "EMPLTYP1", "FAM_SIZE",
            "FINCBEFX", "FINLWT21", "FSS_RRX", "FSUPPX", "INCLASS", "MARITAL1", "PERSLT18",
            "PICK_UP", "REF_RACE", "REGION", "RESPSTAT", "SEX_REF", "SMSASTAT", "STRTDAY",
            "STRTMNTH", "STRTYEAR", "WEEKI", "WEEKN", "FINCBEFM", "FSS_RRXM", "FSUPPXM"]
MEMB_RAW = ["NEWID", "MEMBNO", "ANYRAIL", "ANYSSINC", "US_SUPP", "SS_RRX", "SUPPX", "CU_CODE1",
            "WHYNOWRK"]
SOURCE = ["source_provider", "source_archive", "source_quarter_file", "source_member"]


def _text(frame: pd.DataFrame, expected: tuple[str, ...] | list[str] = ()) -> pd.DataFrame:
    """Stripped string columns; the expected raw names a file lacks come in as missing."""
    out = frame.copy()
    for column in out.columns:
        if column not in ("source_year",):
            out[column] = out[column].astype("string").str.strip()
    for name in expected:
        if name not in out:
            out[name] = pd.Series(pd.NA, index=out.index, dtype="string")
    return out


def normalize_newid(values: pd.Series) -> tuple[pd.Series, pd.Series]:
    raw = values.astype("string").str.strip().str.replace(r"\.0$", "", regex=True)
    valid = raw.str.fullmatch(r"[0-9]{1,8}").fillna(False).astype(bool)
    return raw.where(valid).str.zfill(8), valid


def _number(values: pd.Series) -> pd.Series:
    """Text -> float64, non-numbers missing (a direct cast first: to_numeric on pyarrow-backed
    text is slow)."""
    try:
        return values.astype("float64")
    except (ValueError, TypeError):
        return pd.to_numeric(values, errors="coerce").astype("float64")


def _label(values: pd.Series, labels: dict[str, str]) -> pd.Series:
    return values.astype("string").map(labels).fillna("not reported").astype("string")


def _date(year: pd.Series, month: pd.Series, day: pd.Series) -> pd.Series:
    """Calendar dates of numeric parts (rounded); impossible or missing parts -> NaT."""
    parts = pd.DataFrame({"year": year, "month": month, "day": day}).astype("float64").round()
    ok = parts.notna().all(axis=1) & parts["year"].between(1, 9999)
    safe = parts.where(ok, 2000.0).astype("int64")
    return pd.to_datetime(safe, errors="coerce").astype("datetime64[ns]").where(ok)


def _week_ids(out: pd.DataFrame, year: int) -> pd.DataFrame:
    out["week_key"] = f"{year}:" + out["newid"]
    out["cu_id"] = f"{year}:" + out["newid"].str.slice(0, 7)
    out["source_week_id"] = (out["source_provider"] + f":{year}:" + out["source_archive"] + ":"
                             + out["source_quarter_file"] + ":" + out["newid"])
    return out


def parse_fmly(frame: pd.DataFrame, year: int) -> pd.DataFrame:
    """Diary weeks: ids, start date, numbers, labels (module notes)."""
    out = _text(frame, FMLY_RAW)
    out["source_year"] = year
    newid, valid = normalize_newid(out["NEWID"])
    if not valid.all():
        bad = out.loc[~valid, "NEWID"].iloc[0]
        where = out.loc[~valid, "source_member"].iloc[0]
        raise DataError(f"{where}: NEWID {bad!r} is not a CE id of up to 8 digits")
    out["newid"] = newid
    out = _week_ids(out, year)
    dup = out["week_key"].duplicated()
    if dup.any():
        raise DataError(f"{out.loc[dup, 'source_member'].iloc[0]}: NEWID "
                        f"{out.loc[dup, 'newid'].iloc[0]} has two diary-week records in {year}")
    numbers = {f"{n}_number": _number(out[n]) for n in
               ("AGE_REF", "FAM_SIZE", "FINCBEFX", "FINLWT21", "FSS_RRX", "FSUPPX", "PERSLT18",
                "PICK_UP", "WEEKN", "FINCBEFM", "FSS_RRXM", "FSUPPXM")}
    out = pd.concat([out, pd.DataFrame(numbers, index=out.index)], axis=1)
    raw_year = _number(out["STRTYEAR"])
    out["start_year"] = np.select([raw_year.between(0, 99), raw_year.between(1900, 2099)],
                                  [1900 + raw_year, raw_year], default=np.nan)
    out["diary_week_start"] = _date(out["start_year"], _number(out["STRTMNTH"]),
                                    _number(out["STRTDAY"]))
    out["start_date_valid"] = out["diary_week_start"].notna()
    out["legacy_strict_start_date_valid"] = out["start_date_valid"] & out["start_year"].eq(year)
    out["diary_week"] = pd.to_numeric(out["newid"].str[-1], errors="coerce").astype("Int64")
    out["analysis_weight"] = out["FINLWT21_number"]
    out["diary_final_weight"] = out["analysis_weight"]
    out["canonical_source_selected"] = True
    out["age_ref"] = out["AGE_REF_number"]
    out["household_size"] = out["FAM_SIZE_number"]
    out["children_under_18"] = out["PERSLT18_number"]
    adults = out["household_size"] - out["children_under_18"]
    out["number_adults_valid"] = (out["household_size"].notna()
                                  & out["children_under_18"].notna() & adults.ge(0))
    out["number_adults"] = adults.where(out["number_adults_valid"])
    modern = year >= 2004
    out["annual_income_before_tax"] = out["FINCBEFM_number" if modern else "FINCBEFX_number"]
    out["annual_social_security_railroad_income"] = out[
        "FSS_RRXM_number" if modern else "FSS_RRX_number"]
    out["annual_ssi_income"] = out["FSUPPXM_number" if modern else "FSUPPX_number"]
    pickup = out["PICK_UP_number"]
    out["pickup_status_harmonized"] = np.select(
        [pickup.isin([1, 201]), pickup.isin([3, 217])],
        ["complete_interview", "temporarily_absent"], default="not_reported_or_unmapped")
    out["sex"] = _label(out["SEX_REF"], SEX)
    out["race"] = _label(out["REF_RACE"], RACE_2003 if year >= 2003 else RACE)
    out["education"] = _label(out["EDUC_REF"], EDUC_1996 if year >= 1996 else EDUC)
    out["marital_status"] = _label(out["MARITAL1"], MARITAL)
    out["region"] = _label(out["REGION"], REGION)
    out["urban_status"] = _label(out["BLS_URBN"], URBAN)
    if year in (1982, 1983):
        out["urban_status"] = "not_classified_urban_only_source"
    out["home_tenure"] = _label(out["CUTENURE"], TENURE)
    out = out.rename(columns={n: f"{n}_raw" for n in FMLY_RAW})
    return out


def parse_memb(frame: pd.DataFrame, year: int) -> pd.DataFrame:
    out = _text(frame, MEMB_RAW)
    out["newid"], out["newid_valid"] = normalize_newid(out["NEWID"])
    out = _week_ids(out, year)
    out["member_number"] = out["MEMBNO"]
    for flag, column in (("anyssinc", "ANYSSINC"), ("anyrail", "ANYRAIL"),
                         ("us_supp", "US_SUPP")):
        out[f"{flag}_affirmative"] = out[column].eq("1")
        out[f"{flag}_missing"] = out[column].isna() | out[column].eq("")
    out["reference_or_spouse"] = out["CU_CODE1"].isin(["1", "2"])
    return out


def _code_set(frame: pd.DataFrame, key: str, column: str) -> pd.Series:
    """Per key, the sorted distinct non-blank values joined by '|' (the reference's code set)."""
    values = frame[[key, column]].dropna()
    values = values[values[column].str.strip().ne("")].drop_duplicates()
    values = values.sort_values([key, column], kind="mergesort")
    size = values.groupby(key, observed=True)[column].transform("size")
    single = values.loc[size.eq(1)].set_index(key)[column]
    multi = values.loc[size.gt(1)].groupby(key, observed=True)[column].agg("|".join)
    return pd.concat([single, multi]).astype("string")


def _flag(values: pd.Series) -> pd.Series:
    """A nullable boolean as float (1, 0, NaN), so group maxima run in compiled code."""
    return values.astype("boolean").astype("Float64").astype("float64")


def _and(*values: pd.Series) -> pd.Series:
    """Three-valued AND of float flags: 0 if any is 0, else NaN if any is NaN, else 1."""
    frame = pd.concat(values, axis=1)
    out = pd.Series(np.where(frame.isna().any(axis=1), np.nan, 1.0), index=frame.index)
    return out.where(~frame.eq(0).any(axis=1), 0.0)


def member_flags(memb: pd.DataFrame, year: int) -> pd.DataFrame:
    """Per CU: the recipient flags of the module notes (pandas' skip-NA maxima, three-valued
    AND / NOT within a person, missing -> False at the end, as the reference computes them)."""
    ref = memb.loc[memb["reference_or_spouse"] & memb["newid_valid"]]
    if ref.empty:
        return pd.DataFrame(columns=["cu_id"])
    flags = pd.DataFrame({"cu_id": ref["cu_id"], "member_number": ref["member_number"],
                          "oasdi": _flag(ref["anyssinc_affirmative"]),
                          "railroad": _flag(ref["anyrail_affirmative"]),
                          "ssi": _flag(ref["us_supp_affirmative"])})
    person = flags.groupby(["cu_id", "member_number"], observed=True, dropna=False)[
        ["oasdi", "railroad", "ssi"]].max().reset_index()
    person["dual"] = _and(person["oasdi"], person["ssi"])
    person["railroad_only"] = _and(1 - person["oasdi"], person["railroad"], 1 - person["ssi"])
    person["ssi_only"] = _and(1 - person["oasdi"], person["ssi"])
    g = person.groupby("cu_id", observed=True)
    out = pd.DataFrame({
        "reference_or_spouse_oasdi": g["oasdi"].max(),
        "reference_or_spouse_railroad": g["railroad"].max(),
        "reference_or_spouse_ssi": g["ssi"].max(),
        "reference_or_spouse_dual_oasdi_ssi": g["dual"].max(),
        "reference_or_spouse_railroad_only": g["railroad_only"].max(),
        "reference_or_spouse_ssi_only": g["ssi_only"].max(),
        "likely_social_security_recipients": g["oasdi"].sum(),
    })
    out["reference_or_spouse_paper_recipient"] = (
        out["reference_or_spouse_oasdi"].eq(1) | out["reference_or_spouse_railroad"].eq(1))
    reason = _code_set(ref.loc[ref["CU_CODE1"].eq("1")], "cu_id", "WHYNOWRK")
    out["reference_person_reason_not_working"] = reason.reindex(out.index)
    for code, prefix in (("1", "reference_person"), ("2", "spouse")):
        role = memb.loc[memb["newid_valid"] & memb["CU_CODE1"].eq(code)]
        parts = {}
        for k, src in (("oasdi", "anyssinc"), ("railroad", "anyrail"), ("ssi", "us_supp")):
            parts[f"{prefix}_{k}_affirmative"] = _flag(role[f"{src}_affirmative"])
            parts[f"{prefix}_{k}_missing"] = role[f"{src}_missing"].astype("float64")
        agg = pd.DataFrame(parts).groupby(role["cu_id"], observed=True).max()
        out = out.join(agg, how="outer")
    out = out.reset_index(names="cu_id")
    for column in out.columns:
        if column.endswith(("_affirmative", "_missing")) or column.startswith(
                "reference_or_spouse_"):
            out[column] = out[column].eq(1)
    out["likely_social_security_recipients"] = (
        out["likely_social_security_recipients"].fillna(0).astype(int))
    out["reference_person_reason_not_working"] = (
        out["reference_person_reason_not_working"].fillna("").astype("string"))
    return out


def attach_members(fml: pd.DataFrame, memb: pd.DataFrame, year: int) -> pd.DataFrame:
    counts = memb.merge(fml[["source_week_id"]], on="source_week_id").groupby(
        "source_week_id", observed=True).size().rename("member_record_count")
    out = fml.join(counts, on="source_week_id")
    out["member_record_count"] = out["member_record_count"].fillna(0).astype(int)
    flags = member_flags(memb, year)
    out = out.merge(flags, on="cu_id", how="left", validate="many_to_one")
    for column in flags.columns:
        if column == "cu_id":
            continue
        if column == "likely_social_security_recipients":
            out[column] = out[column].fillna(0).astype(int)
        elif column == "reference_person_reason_not_working":
            out[column] = out[column].fillna("").astype("string")
        else:
            out[column] = out[column].fillna(False).astype(bool)
    retirement = "1" if year >= 1997 else "5"
    out["reference_person_work_status"] = np.where(
        out["reference_person_reason_not_working"].eq(retirement), "retired",
        np.where(out["EMPLTYP1_raw"].isin(["1", "2", "3", "4", "5", "6"]), "currently working",
                 "not currently working"))
    return out


def parse_qredate(values: pd.Series) -> pd.DataFrame:
    """QREDATE text (module notes) -> its parts, the date and validity, by integer arithmetic."""
    raw = values.astype("string").str.strip().str.replace(r"\.0$", "", regex=True)
    digits = raw.str.fullmatch(r"[0-9]+").fillna(False).astype(bool)
    width = raw.str.len().where(digits, 0).fillna(0).astype("int64")
    width8, width10 = width.eq(8), width.eq(10)
    number = pd.Series(0, index=raw.index, dtype="int64")
    number[width8 | width10] = raw[width8 | width10].astype("int64")
    tail = np.where(width10, 10 ** 4, 10 ** 2)  # year digits: 4 or 2
    head = number // tail  # seq, weekday, month, day
    sequence = (head // 10 ** 5).astype("float64")
    weekday = ((head // 10 ** 4) % 10).astype("float64")
    month = ((head // 100) % 100).astype("float64")
    day = (head % 100).astype("float64")
    year = (number % tail).astype("float64")
    year = year.where(width10, 1900 + year)
    valid_width = width8 | width10
    for part in (sequence, weekday, month, day, year):
        part[~valid_width] = np.nan
    date = _date(year, month, day)
    return pd.DataFrame({
        "diary_day_from_qredate": sequence, "weekday_from_qredate": weekday,
        "qredate_calendar_year": year, "qredate_date": date,
        "qredate_blank": raw.isna() | raw.eq(""), "qredate_width_8": width8,
        "qredate_width_10": width10,
        "qredate_valid_exact_date": (valid_width & sequence.between(1, 7)
                                     & weekday.between(1, 7) & date.notna()),
    }, index=values.index)


def parse_expd(frame: pd.DataFrame, year: int) -> pd.DataFrame:
    out = _text(frame)
    out["newid"], out["newid_valid"] = normalize_newid(out["NEWID"])
    out = _week_ids(out, year)
    out["cost"] = _number(out["COST"])
    ucc = out["UCC"].where(out["UCC"].str.fullmatch(r"[0-9]{1,6}").fillna(False).astype(bool))
    out["ucc"] = ucc.str.zfill(6)
    out["ucc_number"] = _number(out["ucc"])
    bad = out["cost"].isna() | out["ucc"].isna()
    if bad.any():
        row = out.loc[bad].iloc[0]
        raise DataError(f"{row['source_member']}: an EXPD record has COST {row['COST']!r} and UCC "
                        f"{row['UCC']!r}; each purchase needs a cost and a 1-6 digit UCC")
    return out.join(parse_qredate(out["QREDATE"]))


def prepare_expd(exp: pd.DataFrame, fml: pd.DataFrame, year: int
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Allocation flags of each purchase; per-week purchase counts (module notes)."""
    weeks = fml.set_index("source_week_id")
    start = exp["source_week_id"].map(weeks["diary_week_start"])
    valid_start = exp["source_week_id"].map(weeks["start_date_valid"]).astype("boolean")
    strict_start = exp["source_week_id"].map(weeks["legacy_strict_start_date_valid"])
    exists = exp["source_week_id"].isin(weeks.index) & exp["newid_valid"]
    date, seq = exp["qredate_date"], exp["diary_day_from_qredate"]
    on_grid = (exp["qredate_valid_exact_date"] & valid_start.fillna(False).astype(bool)
               & date.eq(start + pd.to_timedelta(seq - 1, unit="D")).fillna(False))
    weekday = (date.dt.dayofweek + 1) % 7 + 1
    exp = exp.assign(
        source_week_exists=exists, diary_week_start=start,
        legacy_strict_start_date_valid=strict_start.fillna(False).astype(bool),
        qredate_weekday_matches_calendar=(exp["qredate_valid_exact_date"]
                                          & weekday.eq(exp["weekday_from_qredate"]).fillna(False)),
        qredate_source_year_matches=exp["qredate_calendar_year"].eq(year).fillna(False),
        legacy_strict_qredate_width_matches=(exp["qredate_width_10"] if year == 1996
                                             else exp["qredate_width_8"]),
    )
    exp["general_transaction_allocated"] = exists & exp["qredate_valid_exact_date"] & on_grid
    exp["legacy_strict_transaction_allocated"] = (
        exp["general_transaction_allocated"] & exp["qredate_source_year_matches"]
        & exp["qredate_weekday_matches_calendar"] & exp["legacy_strict_qredate_width_matches"])
    usable = exists & exp["cost"].notna() & exp["ucc"].notna()
    unalloc = exp.loc[usable & ~exp["general_transaction_allocated"]].groupby(
        "source_week_id", observed=True).size()
    strict_unalloc = exp.loc[usable & ~exp["legacy_strict_transaction_allocated"]].groupby(
        "source_week_id", observed=True).size()
    fml = fml.copy()
    fml["otherwise_usable_unallocatable_expd_rows"] = (
        fml["source_week_id"].map(unalloc).fillna(0).astype(int))
    fml["expenditure_complete"] = (fml["start_date_valid"]
                                   & fml["otherwise_usable_unallocatable_expd_rows"].eq(0))
    fml["legacy_strict_unallocatable_expd_rows"] = (
        fml["source_week_id"].map(strict_unalloc).fillna(0).astype(int))
    fml["legacy_strict_expenditure_complete"] = (
        fml["legacy_strict_start_date_valid"] & fml["legacy_strict_unallocatable_expd_rows"].eq(0))
    counts = exp.groupby("source_week_id", observed=True).agg(
        expd_valid_qredate_rows=("qredate_valid_exact_date", "sum"),
        expd_blank_qredate_rows=("qredate_blank", "sum"),
        expd_general_allocated_rows=("general_transaction_allocated", "sum"))
    fml = fml.join(counts, on="source_week_id")
    for column in counts.columns:
        fml[column] = fml[column].fillna(0).astype(int)
    return exp, fml


def attach_strict_quality(fml: pd.DataFrame, exp: pd.DataFrame, year: int) -> pd.DataFrame:
    """The 1986-1996 strict-dating week and CU flags (module notes); NA in other years."""
    out = fml.copy()
    if year not in STRICT_YEARS:
        out["stephens_1986_1996_quality_flag_v1"] = pd.Series(pd.NA, index=out.index,
                                                              dtype="boolean")
        out["legacy_strict_rule_version"] = pd.Series(pd.NA, index=out.index, dtype="string")
        for column in ("strict_qredate_valid_rows", "legacy_strict_valid_start_week_records",
                       "legacy_strict_valid_dated_week_records"):
            out[column] = pd.Series(pd.NA, index=out.index, dtype="Int64")
        for column in ("strict_all_dated_transactions_on_week_start",
                       "legacy_strict_dated_week_valid"):
            out[column] = pd.Series(pd.NA, index=out.index, dtype="boolean")
        return out
    out["legacy_strict_rule_version"] = LEGACY_STRICT_RULE_VERSION
    dated = exp.loc[exp["source_week_exists"] & exp["qredate_valid_exact_date"]
                    & exp["qredate_source_year_matches"]
                    & exp["legacy_strict_qredate_width_matches"]]
    rows = dated.groupby("source_week_id", observed=True).size()
    on_start = dated["qredate_date"].eq(dated["diary_week_start"]).groupby(
        dated["source_week_id"], observed=True).all()
    out["strict_qredate_valid_rows"] = out["source_week_id"].map(rows).fillna(0).astype("Int64")
    out["strict_all_dated_transactions_on_week_start"] = (
        out["source_week_id"].map(on_start).astype("boolean").fillna(False))
    out["legacy_strict_dated_week_valid"] = (
        out["legacy_strict_start_date_valid"] & out["strict_qredate_valid_rows"].gt(0)
        & ~out["strict_all_dated_transactions_on_week_start"])
    g = out.groupby("cu_id", observed=True)
    weeks = _two_weeks(out)
    quality = pd.DataFrame({
        "observed": g.size(),
        "legacy_strict_valid_start_week_records": g["legacy_strict_start_date_valid"].sum(),
        "legacy_strict_valid_dated_week_records":
            out["legacy_strict_dated_week_valid"].astype(bool).groupby(
                out["cu_id"], observed=True).sum(),
        "pickups": out["PICK_UP_number"].eq(1).groupby(out["cu_id"], observed=True).sum(),
        "two_week": out["WEEKN_number"].eq(2).groupby(out["cu_id"], observed=True).sum(),
        "nonoverlap": weeks["nonoverlap"],
    })
    two = quality["observed"].eq(2) & weeks["numbers"]
    quality["stephens_1986_1996_quality_flag_v1"] = (
        two & quality["legacy_strict_valid_start_week_records"].eq(2)
        & quality["legacy_strict_valid_dated_week_records"].eq(2)
        & quality["pickups"].eq(2) & quality["two_week"].eq(2) & quality["nonoverlap"])
    for column in ("legacy_strict_valid_start_week_records",
                   "legacy_strict_valid_dated_week_records"):
        out[column] = out["cu_id"].map(quality[column]).astype("Int64")
    out["stephens_1986_1996_quality_flag_v1"] = out["cu_id"].map(
        quality["stephens_1986_1996_quality_flag_v1"]).astype("boolean")
    return out


def _two_weeks(weeks: pd.DataFrame) -> pd.DataFrame:
    """Per CU: week numbers exactly {1, 2}; exactly two records with both starts present and at
    least 7 days apart (first and second record in file order)."""
    g = weeks.groupby("cu_id", observed=True)
    week = weeks["diary_week"]
    numbers = (week.eq(1).groupby(weeks["cu_id"], observed=True).any()
               & week.eq(2).groupby(weeks["cu_id"], observed=True).any()
               & ~(week.notna() & ~week.isin([1, 2])).groupby(weeks["cu_id"],
                                                              observed=True).any())
    order = g.cumcount()
    first = weeks.loc[order.eq(0)].set_index("cu_id")["diary_week_start"]
    second = weeks.loc[order.eq(1)].set_index("cu_id")["diary_week_start"]
    gap = (first - second.reindex(first.index)).abs().dt.days
    nonoverlap = g.size().eq(2) & gap.reindex(g.size().index).ge(7)
    return pd.DataFrame({"numbers": numbers.fillna(False).astype(bool),
                         "nonoverlap": nonoverlap.fillna(False).astype(bool)})


def attach_restriction_inputs(fml: pd.DataFrame) -> pd.DataFrame:
    """Per-week conditions and their per-CU counts, unfiltered (the task filters on them)."""
    out = fml.copy()
    out["pickup_complete_week"] = out["pickup_status_harmonized"].eq("complete_interview")
    out["weekn_equals_two"] = out["WEEKN_number"].eq(2)
    out["response_income_complete_week"] = out["RESPSTAT_raw"].eq("1").fillna(False).astype(bool)
    out["positive_diary_final_weight_week"] = out["diary_final_weight"].gt(0)
    out["positive_combined_ss_railroad_income_week"] = (
        out["annual_social_security_railroad_income"].gt(0))
    g = out.groupby("cu_id", observed=True)
    unit = pd.DataFrame({
        "observed_diary_week_records": g.size(),
        "valid_week_start_records": g["start_date_valid"].sum(),
        "pickup_complete_records": g["pickup_complete_week"].sum(),
        "weekn_equals_two_records": g["weekn_equals_two"].sum(),
        "response_income_complete_records": g["response_income_complete_week"].sum(),
        "positive_weight_records": g["positive_diary_final_weight_week"].sum(),
        "positive_combined_ss_railroad_income_records":
            g["positive_combined_ss_railroad_income_week"].sum(),
    })
    weeks = _two_weeks(out)
    unit["nonoverlapping_diary_week_dates"] = weeks["nonoverlap"]
    unit["both_diary_week_numbers_available"] = weeks["numbers"]
    unit["both_diary_week_records_available"] = unit["observed_diary_week_records"].eq(2)
    return out.join(unit, on="cu_id")


def stephens_food(year: int, ucc: pd.Series) -> tuple[pd.Series, pd.Series]:
    """(food at home, food away from home) membership of UCCs by the 1986-1996 rules."""
    home = (ucc.between(10110, 180710) | ucc.eq(200112) | ucc.isin([200110, 200111])
            | ucc.between(200210, 200410))
    away_end = 200530 if year <= 1993 else 200536
    away = (ucc.between(190110, 190320) | ucc.isin([190901, 190902])
            | (ucc.ge(200510) & ucc.le(away_end)))
    return home.fillna(False), away.fillna(False)


def make_daily(fml: pd.DataFrame, exp: pd.DataFrame, year: int) -> pd.DataFrame:
    """Seven rows per week with the general and (1986-1996) strict daily sums."""
    grid = fml.loc[fml.index.repeat(7)].reset_index(drop=True)
    grid.insert(0, "diary_day_sequence", np.tile(np.arange(1, 8), len(fml)))
    grid.insert(0, "source_day_id", grid["source_week_id"] + ":D"
                + grid["diary_day_sequence"].astype(str))
    grid["diary_date"] = grid["diary_week_start"] + pd.to_timedelta(
        grid["diary_day_sequence"] - 1, unit="D")
    grid.loc[~grid["start_date_valid"], "diary_date"] = pd.NaT
    strict_year = year in STRICT_YEARS
    grid["stephens_food_available"] = strict_year
    grid["stephens_food_version"] = (LEGACY_STRICT_RULE_VERSION if strict_year
                                     else "unavailable_outside_1986_1996")
    key = ["source_week_id", "diary_date"]
    general = exp.loc[exp["general_transaction_allocated"]].groupby(
        ["source_week_id", "qredate_date"], observed=True).agg(
        daily_total_expenditure=("cost", "sum"),
        general_aggregated_transaction_rows=("cost", "size"))
    general.index.names = key
    grid = grid.join(general, on=key)
    dated = grid["diary_date"].notna()
    grid["general_aggregated_transaction_rows"] = (
        grid["general_aggregated_transaction_rows"].fillna(0).astype(int))
    grid["daily_total_expenditure"] = grid["daily_total_expenditure"].where(
        ~dated, grid["daily_total_expenditure"].fillna(0.0)).where(dated)
    grid["observed_zero_day"] = (dated & grid["expenditure_complete"]
                                 & grid["general_aggregated_transaction_rows"].eq(0))
    strict_columns = ["daily_total_expenditure_legacy_strict_v1",
                      "daily_food_at_home_legacy_strict_v1",
                      "daily_food_away_from_home_legacy_strict_v1"]
    for column in strict_columns:
        grid[column] = np.nan
    grid["legacy_strict_aggregated_transaction_rows"] = pd.Series(pd.NA, index=grid.index,
                                                                  dtype="Int64")
    if strict_year:
        strict = exp.loc[exp["legacy_strict_transaction_allocated"]]
        home, away = stephens_food(year, strict["ucc_number"])
        sums = pd.DataFrame({
            "source_week_id": strict["source_week_id"], "diary_date": strict["qredate_date"],
            strict_columns[0]: strict["cost"], strict_columns[1]: strict["cost"].where(home, 0.0),
            strict_columns[2]: strict["cost"].where(away, 0.0)})
        agg = sums.groupby(key, observed=True).agg(
            **{c: (c, "sum") for c in strict_columns},
            legacy_strict_aggregated_transaction_rows=(strict_columns[0], "size"))
        grid = grid.drop(columns=[*strict_columns, "legacy_strict_aggregated_transaction_rows"])
        grid = grid.join(agg, on=key)
        ok = grid["legacy_strict_start_date_valid"]
        for column in strict_columns:
            grid[column] = grid[column].where(~ok, grid[column].fillna(0.0)).where(ok)
        grid["legacy_strict_aggregated_transaction_rows"] = (
            grid["legacy_strict_aggregated_transaction_rows"].fillna(0).astype("Int64"))
    return grid
