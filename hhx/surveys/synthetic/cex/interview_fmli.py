"""FMLI (and MTBI rent) members of the seeded synthetic CE Interview packages: the layout of
each quarter, the rows written for a panel record and the truth of what a row holds.

Layout. The first columns are those of BLS's 2021 layout stub (NEWID, FINLWT21, QINTRVMO,
QINTRVYR, WTREP01-44, unquoted, LF line ends, missing values written NA, NEWID with 8 digits,
QINTRVMO with 2). The other columns are the FMLI variables the builder reads, their flag
companions (names from the CE data dictionary: AGE_REF_, CUTE_URE, EDUC0REF, FINCB_XM...,
D = valid, A = valid blank, B = invalid blank) and the other summary variables that make up the
totals (FDHOME, SHELT, PERINS...); their order, the 2-digit QINTRVYR of files before 1996 and
the GROCER*/redesign columns (newer than the dictionary) are not taken from real files. Each
package keeps the layout of its last own quarter (its next-year file too). By the dictionary:
summary variables *CQ/*PQ in 1980-81 and from 1990, Z* summaries (one 3-month amount) in
1984-89; FINCBTAX/FSALARYX except 2004Q2-2005Q4, FINCBTXM/FSALARYM from 2004; INTERI from 2002Q2;
no STATE in 1992 and the legacy 1980-81 state codes; race codes 1-4 (5 = other from 1996) until
2003Q1 and 1-6 after; education codes 1-7 until 1995 (EDUCA2 0 = don't know in 1980-81), 0 and
10-16 from 1996 (17, listed to 2013Q1, is not drawn); CUTENURE 3 from 1996; GROCERCQ/PQ from
2023Q2.
"""

from __future__ import annotations

import csv
import io

from hhx.surveys.synthetic.cex.interview_panel import (
    _CU,
    LEGACY_STATE_CODES,
    STATES,
    _qi,
    _Record,
    _year_of,
)

# Columns of BLS's real 2021 layout stub (intrvw21/fmli212.csv), in order.
STUB_HEAD = ["NEWID", "FINLWT21", "QINTRVMO", "QINTRVYR"] + [f"WTREP{i:02d}" for i in range(1, 45)]
MTBI_COLUMNS = ["NEWID", "COST", "PUBFLAG", "UCC", "REF_MO", "REF_YR"]

# Summary bases written as <base>CQ / <base>PQ, and the 1984-89 Z* name of each.
SUMMARY_BASES: dict[str, str] = {
    "TOTEXP": "ZTOTAL", "FOOD": "ZFOODTOT", "FDHOME": "ZFOODHOM", "FDAWAY": "ZFOODAWY",
    "ALCBEV": "ZALCBEVS", "HOUS": "ZHOUSING", "SHELT": "ZSHELTER", "UTIL": "ZUTILSPS",
    "HOUSOP": "ZHOUSEOP", "APPAR": "ZAPPAREL", "TRANS": "ZTRANPRT", "GASMO": "ZGASMOTO",
    "PUBTRA": "ZPUBTRAN", "HEALTH": "ZHEALTH", "ENTERT": "ZENTRMNT", "PERSCA": "ZPERCARE",
    "READ": "ZREADING", "EDUCA": "ZEDUCATN", "TOBACC": "ZTOBACCO", "MISC": "ZMISCELS",
    "CASHCO": "ZCASHCTB", "LIFINS": "ZLIFOTHR", "RETPEN": "ZRETIRES", "PERINS": "ZPERLINS",
}  # fmt: skip
# Summary base -> truth column (the 3-month total the builder should recover).
TRUTH_COLUMNS: dict[str, str] = {
    "TOTEXP": "cons_total", "FOOD": "cons_food", "HOUS": "cons_housing",
    "TRANS": "cons_transport", "HEALTH": "cons_health", "EDUCA": "cons_education",
    "APPAR": "cons_apparel", "ENTERT": "cons_entertainment", "PERSCA": "cons_personal_care",
    "CASHCO": "cons_cash_contrib", "LIFINS": "cons_life_insurance",
    "RETPEN": "cons_retirement_pension_social_security", "UTIL": "cons_utilities",
    "ALCBEV": "cons_alcohol", "TOBACC": "cons_tobacco", "HOUSOP": "cons_housop",
    "PUBTRA": "cons_pubtra", "GASMO": "cons_gasmo", "MISC": "cons_misc", "READ": "cons_read",
    "FDHOME": "cons_grocery", "FDAWAY": "cons_food_away",
}  # fmt: skip


# --------------------------------------------------------------------------------------------
# Layout by quarter (the package's last own quarter for its next-year file)


def _z_era(layout_q: int) -> bool:
    return _qi(1984, 1) <= layout_q <= _qi(1989, 4)


def _has_fincbtax(layout_q: int) -> bool:
    return not (_qi(2004, 2) <= layout_q <= _qi(2005, 4))


def fmli_columns(layout_q: int) -> list[str]:
    """FMLI header for a file in the layout of quarter `layout_q` (see the module notes)."""
    cols = list(STUB_HEAD if layout_q >= _qi(1990, 1) else STUB_HEAD[:4])
    if layout_q >= _qi(2002, 2):
        cols.append("INTERI")
    if layout_q >= _qi(2002, 1):
        cols.append("CUID")
    pairs = [
        ("AGE_REF", "AGE_REF_"), ("AGE2", "AGE2_"), ("BLS_URBN", None),
        ("CUTENURE", "CUTE_URE"), ("EDUC_REF", "EDUC0REF"), ("EDUCA2", "EDUCA2_"),
        ("FAM_SIZE", "FAM__IZE"), ("FAM_TYPE", "FAM__YPE"),
    ]  # fmt: skip
    if _has_fincbtax(layout_q):
        pairs += [("FINCBTAX", "FINCBT_X")]
    if layout_q >= _qi(2004, 1):
        pairs += [("FINCBTXM", "FINCB_XM")]
    if _has_fincbtax(layout_q):
        pairs += [("FSALARYX", "FSAL_RYX")]
    if layout_q >= _qi(2004, 1):
        pairs += [("FSALARYM", "FSAL_RYM")]
    pairs += [
        ("MARITAL1", "MARI_AL1"), ("PERSLT18", "PERS_T18"), ("RACE2", "RACE2_"),
        ("REF_RACE", "REF__ACE"), ("REGION", None), ("SEX_REF", "SEX_REF_"), ("SEX2", "SEX2_"),
    ]  # fmt: skip
    if _year_of(layout_q) != 1992:
        pairs.append(("STATE", "STATE_" if _qi(1996, 1) <= layout_q <= _qi(2005, 1) else None))
    for var, flag in pairs:
        cols.append(var)
        if flag:
            cols.append(flag)
    if _z_era(layout_q):
        cols += list(SUMMARY_BASES.values())
    else:
        cols += [f"{base}{part}" for base in SUMMARY_BASES for part in ("CQ", "PQ")]
        if layout_q >= _qi(1999, 2):
            cols += ["TFOODTOC", "TFOODTOP"]
        if layout_q >= _qi(2023, 2):
            cols += ["GROCERCQ", "GROCERPQ"]
    return cols


def _race_code(race: int, layout_q: int) -> int:
    """Race 1 White, 2 Black, 3 Native American, 4 Asian, 5 Pacific Islander, 6 multiracial ->
    the code of the era."""
    if layout_q >= _qi(2003, 2):
        return race
    if race == 5:
        return 4  # "Asian or Pacific Islander"
    if race == 6:
        return 5 if layout_q >= _qi(1996, 1) else 1  # "Other" from 1996
    return race


def _educ_code(level: int, layout_q: int) -> str:
    """Education level 1-8 (no schooling ... graduate degree) -> the code text of the era."""
    if layout_q < _qi(1996, 1):
        return str({1: 7, 2: 1, 3: 2, 4: 3, 5: 4, 6: 4, 7: 5, 8: 6}[level])
    code = {1: 0, 2: 10, 3: 11, 4: 12, 5: 13, 6: 14, 7: 15, 8: 16}[level]
    return f"{code:02d}"


def _money(cents: int) -> str:
    return str(cents // 100) if cents % 100 == 0 else f"{cents / 100:.2f}"


# --------------------------------------------------------------------------------------------
# Writing


def _flagged(values: dict[str, str], var: str, flag: str | None, value: str | None,
             blank_flag: str = "A") -> None:
    values[var] = "NA" if value is None else value
    if flag:
        values[flag] = "D" if value is not None else blank_flag


def _fmli_row(rec: _Record, layout_q: int, copy: int) -> dict[str, str]:
    cu = rec.cu
    v: dict[str, str] = {
        "NEWID": rec.newid,
        "FINLWT21": f"{rec.weights[copy]:.3f}",
        "QINTRVMO": f"{rec.month:02d}",
        "QINTRVYR": str(rec.year) if layout_q >= _qi(1996, 1) else f"{rec.year % 100:02d}",
        "INTERI": str(rec.number),
        "CUID": f"{cu.cu_id:07d}",
    }
    for i, w in enumerate(rec.wtrep, start=1):
        v[f"WTREP{i:02d}"] = "NA" if w is None else f"{w:.3f}"
    spouse = cu.married
    _flagged(v, "AGE_REF", "AGE_REF_", str(cu.age))
    _flagged(v, "AGE2", "AGE2_", str(cu.spouse_age) if spouse else None)
    v["BLS_URBN"] = str(cu.urban)
    tenure = cu.tenure if cu.tenure != 3 or layout_q >= _qi(1996, 1) else 1
    _flagged(v, "CUTENURE", "CUTE_URE", str(tenure))
    _flagged(v, "EDUC_REF", "EDUC0REF", _educ_code(cu.educ, layout_q))
    educ2 = _educ_code(cu.educ2, layout_q) if spouse else None
    if spouse and rec.year <= 1981 and rec.educ2_unknown:
        educ2 = "0"  # the 1980-81 files' "don't know"
    _flagged(v, "EDUCA2", "EDUCA2_", educ2)
    _flagged(v, "FAM_SIZE", "FAM__IZE", str(cu.fam_size))
    _flagged(v, "FAM_TYPE", "FAM__YPE", str(cu.fam_type))
    income = f"{rec.income:.0f}"
    _flagged(v, "FINCBTAX", "FINCBT_X", income if rec.income_reported else None, "B")
    _flagged(v, "FINCBTXM", "FINCB_XM", income)
    salary = f"{rec.salary:.0f}"
    _flagged(v, "FSALARYX", "FSAL_RYX", salary if rec.income_reported else None, "B")
    _flagged(v, "FSALARYM", "FSAL_RYM", salary)
    _flagged(v, "MARITAL1", "MARI_AL1", "1" if cu.married else _single_status(cu))
    _flagged(v, "PERSLT18", "PERS_T18", str(cu.kids))
    _flagged(v, "RACE2", "RACE2_", str(_race_code(cu.race2, layout_q)) if spouse else None)
    _flagged(v, "REF_RACE", "REF__ACE", str(_race_code(cu.race, layout_q)))
    v["REGION"] = str(cu.region)
    _flagged(v, "SEX_REF", "SEX_REF_", str(cu.sex))
    _flagged(v, "SEX2", "SEX2_", str(3 - cu.sex) if spouse else None)
    _flagged(v, "STATE", "STATE_", _state_text(cu, layout_q))
    if _z_era(layout_q):
        for base, z in SUMMARY_BASES.items():
            v[z] = _money(rec.cq[base] + rec.pq[base])
    else:
        for base in SUMMARY_BASES:
            v[f"{base}CQ"] = _money(rec.cq[base])
            v[f"{base}PQ"] = _money(rec.pq[base])
        v["TFOODTOC"], v["TFOODTOP"] = _money(rec.trip_food[0]), _money(rec.trip_food[1])
        v["GROCERCQ"], v["GROCERPQ"] = _money(rec.cq["FDHOME"]), _money(rec.pq["FDHOME"])
    return v


def _single_status(cu: _CU) -> str:
    if cu.age >= 70:
        return "2"
    return "5" if cu.age < 35 else ("3" if cu.cu_id % 3 else "4")


def _state_text(cu: _CU, layout_q: int) -> str | None:
    if layout_q <= _qi(1981, 4):
        return cu.legacy_state if cu.state else None
    if cu.state == "29" and cu.missouri_43 and layout_q <= _qi(1989, 4):
        return "43"  # the dictionary's second Missouri code of the 1984+ files
    return cu.state


def _truth_state(cu: _CU, layout_q: int) -> str | None:
    """The state a builder should report: the written code through the reference's legacy map,
    which it applies to every year (a 1984+ 35 New Mexico reads as 55), canonical codes only."""
    written = _state_text(cu, layout_q)
    if written is None:
        return None
    inverse = {old: fips for fips, olds in LEGACY_STATE_CODES.items() for old in olds}
    code = inverse.get(written, written)
    return code if code in STATES else None


def _csv(columns: list[str], rows: list[dict[str, str]]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([row.get(c, "NA") for c in columns])
    return buf.getvalue().encode("ascii")


def _truth_row(rec: _Record, row: dict[str, str], layout_q: int, year: int,
               stem: str) -> dict[str, object]:
    """What the generator put in a record's retained copy (the builder must recover it)."""
    cu = rec.cu

    def num(name: str) -> float:
        return float("nan") if row.get(name, "NA") == "NA" else float(row[name])

    out: dict[str, object] = {
        "newid": rec.newid,
        "interview_year": rec.year,
        "interview_month": rec.month,
        "cu_id_raw": f"{cu.cu_id:07d}",
        "frame": cu.frame,
        "cex_panel_id": f"{cu.frame}:{cu.cu_id:07d}",
        "interview_number": rec.number,
        "interview_position": rec.position,
        "cex_quarter_token": stem[4:7],
        "cex_source_member": stem,
        "cex_retained_package_year": year,
        "weight": float(row["FINLWT21"]),
        "income_before_tax": num("FINCBTXM") if layout_q >= _qi(2004, 1) else num("FINCBTAX"),
        "salary": num("FSALARYM") if layout_q >= _qi(2004, 1) else num("FSALARYX"),
        "state": _truth_state(cu, layout_q),
        "region": cu.region,
        "bls_urbn": cu.urban,
        "fam_size": cu.fam_size,
        "n_kids": cu.kids,
        "age_ref": cu.age,
        "sex_ref": cu.sex,
        "married": cu.married,
        "race_ref_code": int(row["REF_RACE"]),
        "educ_ref_code": int(row["EDUC_REF"]),
        "educ_level": cu.educ,
        "educ2_code": None if row["EDUCA2"] == "NA" else int(row["EDUCA2"]),
        "tenure": int(row["CUTENURE"]),
        "layout_z": _z_era(layout_q),
    }
    for base, column in TRUTH_COLUMNS.items():
        out[column] = (rec.cq[base] + rec.pq[base]) / 100.0
    return out
