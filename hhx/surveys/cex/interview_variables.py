"""CEX Interview variable tables: the canonical FMLI variables and their raw sources (spec 1.5),
the spending variables, the quarters and code lists of the CE data dictionary, the state maps.

Each canonical variable takes the first present of its raw sources: the required ids, date and
weight (NEWID, QINTRVYR, QINTRVMO, FINLWT21/FINLWT), the consumer-unit characteristics, and per
`cons_X` the current-quarter sources (*CQ, or the 1984-89 Z* summary) and the previous-quarter
ones (*PQ), with the parts of food in the redesigned regime (GROCER, FDAWAY). DICTIONARY_RANGES
are the quarters the dictionary lists each source for (the column checks of
hhx.surveys.cex.interview_fmli), CODEBOOK its code lists, LEGACY_STATE / CANONICAL_STATES its
state codes. Also the record keys, SOURCE_URL and the year helpers (`full_year`, `qi`) that the
reader's modules (hhx.surveys.cex_interview_*) share.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE_URL = "https://www.bls.gov/cex/pumd.htm"
RECORD_KEY = ["newid", "interview_year", "interview_month"]
PANEL_KEY = ["cex_panel_id", "interview_year", "interview_month"]


def full_year(yy: int) -> int:
    """Two-digit year of a file name or QINTRVYR -> four digits (CE data start in 1980)."""
    return 1900 + yy if yy >= 80 else 2000 + yy


def qi(year: int, quarter: int) -> int:
    """Quarter index year*4 + quarter (spec q_index)."""
    return year * 4 + quarter


# --------------------------------------------------------------------------------------------
# Variables: canonical name -> raw sources (first present wins), from spec 1.5


@dataclass(frozen=True)
class Variable:
    name: str
    sources: tuple[str, ...]
    kind: str  # "code" / "count" (Int64), "amount" (float64), "text" (state)


REQUIRED = [
    Variable("newid", ("NEWID",), "text"),
    Variable("interview_year", ("QINTRVYR",), "count"),
    Variable("interview_month", ("QINTRVMO",), "count"),
    Variable("weight", ("FINLWT21", "FINLWT"), "amount"),
]
CHARACTERISTICS = [
    Variable("state", ("STATE", "STATE_"), "text"),
    Variable("region", ("REGION",), "code"),
    Variable("bls_urbn", ("BLS_URBN",), "code"),
    Variable("fam_size", ("FAM_SIZE",), "count"),
    Variable("fam_type", ("FAM_TYPE",), "code"),
    Variable("age_ref", ("AGE_REF",), "count"),
    Variable("age2", ("AGE2",), "count"),
    Variable("sex_ref", ("SEX_REF",), "code"),
    Variable("sex2", ("SEX2",), "code"),
    Variable("marital1", ("MARITAL1",), "code"),
    Variable("tenure", ("CUTENURE",), "code"),
    Variable("race_ref", ("REF_RACE",), "code"),
    Variable("race2", ("RACE2",), "code"),
    Variable("educ_ref", ("EDUC_REF", "EDUC0REF"), "code"),
    Variable("educ2", ("EDUCA2",), "code"),
    Variable("n_kids", ("PERSLT18",), "count"),
    Variable("income_before_tax", ("FINCBTXM", "FINCBTAX"), "amount"),
    Variable("salary", ("FSALARYM", "FSALARYX"), "amount"),
]

# cons_X <- (current-quarter sources, previous-quarter sources); Z* = 1984-89 summaries.
CONSUMPTION: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "cons_total": (("TOTEXPCQ", "ZTOTAL"), ("TOTEXPPQ",)),
    "cons_food": (("FOODCQ", "ZFOODTOT"), ("FOODPQ",)),
    "cons_housing": (("HOUSCQ", "ZHOUSING"), ("HOUSPQ",)),
    "cons_transport": (("TRANSCQ", "ZTRANPRT"), ("TRANSPQ",)),
    "cons_health": (("HEALTHCQ", "ZHEALTH"), ("HEALTHPQ",)),
    "cons_education": (("EDUCACQ", "ZEDUCATN"), ("EDUCAPQ",)),
    "cons_apparel": (("APPARCQ", "ZAPPAREL"), ("APPARPQ",)),
    "cons_entertainment": (("ENTERTCQ", "ZENTRMNT"), ("ENTERTPQ",)),
    "cons_personal_care": (("PERSCACQ", "ZPERCARE"), ("PERSCAPQ",)),
    "cons_cash_contrib": (("CASHCOCQ", "ZCASHCTB"), ("CASHCOPQ",)),
    "cons_life_insurance": (("LIFINSCQ", "ZLIFOTHR"), ("LIFINSPQ",)),
    "cons_retirement_pension_social_security": (("RETPENCQ", "ZRETIRES"), ("RETPENPQ",)),
    "cons_utilities": (("UTILCQ", "ZUTILSPS"), ("UTILPQ",)),
    "cons_alcohol": (("ALCBEVCQ", "ZALCBEVS"), ("ALCBEVPQ",)),
    "cons_tobacco": (("TOBACCCQ", "ZTOBACCO"), ("TOBACCPQ",)),
    "cons_housop": (("HOUSOPCQ", "ZHOUSEOP"), ("HOUSOPPQ",)),
    "cons_pubtra": (("PUBTRACQ", "ZPUBTRAN"), ("PUBTRAPQ",)),
    "cons_gasmo": (("GASMOCQ", "ZGASMOTO"), ("GASMOPQ",)),
    "cons_misc": (("MISCCQ", "ZMISCELS"), ("MISCPQ",)),
    "cons_read": (("READCQ", "ZREADING"), ("READPQ",)),
}
# Parts of food in the redesigned regime (GROCER is newer than the dictionary at hand; the
# reference falls back to trip food TFOODTO* when FDAWAY* is absent).
REDESIGN_PARTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "grocery": (("GROCERCQ",), ("GROCERPQ",)),
    "food_away": (("FDAWAYCQ", "TFOODTOC"), ("FDAWAYPQ", "TFOODTOP")),
}


def _spending_variables() -> list[Variable]:
    out = []
    for name, (cq, pq) in {**CONSUMPTION, **REDESIGN_PARTS}.items():
        base = name.removeprefix("cons_")
        out += [Variable(f"{base}_cq", cq, "amount"), Variable(f"{base}_pq", pq, "amount")]
    return out


SPENDING = _spending_variables()
EXTRA_SOURCES = ("INTERI",)

# Quarter ranges (q_index, None = still published) in which the CE data dictionary lists each
# FMLI source (adjacent ranges merged). Sources absent here (GROCER*) are never required.
_Q80_81 = (qi(1980, 1), qi(1981, 4))
_ALWAYS = (_Q80_81, (qi(1984, 1), None))
_SUMMARY = (_Q80_81, (qi(1990, 1), None))
_Z_ERA = ((qi(1984, 1), qi(1989, 4)),)
DICTIONARY_RANGES: dict[str, tuple[tuple[int, int | None], ...]] = {
    **{
        v: _ALWAYS
        for v in (
            "NEWID QINTRVYR QINTRVMO FINLWT21 REGION BLS_URBN FAM_SIZE FAM_TYPE AGE_REF AGE2 "
            "SEX_REF SEX2 MARITAL1 CUTENURE REF_RACE RACE2 EDUC_REF EDUCA2 PERSLT18"
        ).split()
    },
    "STATE": (_Q80_81, (qi(1984, 1), qi(1991, 4)), (qi(1993, 1), None)),
    "FINCBTXM": ((qi(2004, 1), None),),
    "FINCBTAX": (_Q80_81, (qi(1984, 1), qi(2004, 1)), (qi(2006, 1), None)),
    "FSALARYM": ((qi(2004, 1), None),),
    "FSALARYX": (_Q80_81, (qi(1984, 1), qi(2004, 1)), (qi(2006, 1), None)),
    "INTERI": ((qi(2002, 2), None),),
    "TFOODTOC": ((qi(1999, 2), None),),
    "TFOODTOP": ((qi(1999, 2), None),),
    **{src: _SUMMARY for cq, pq in CONSUMPTION.values() for src in (cq[0], pq[0])},
    "FDAWAYCQ": _SUMMARY,
    "FDAWAYPQ": _SUMMARY,
    **{cq[1]: _Z_ERA for cq, _ in CONSUMPTION.values()},
}

# Code lists of the CE data dictionary (Interview FMLI; union over the years it lists).
CODEBOOK: dict[str, frozenset[int]] = {
    "sex_ref": frozenset({1, 2}),
    "sex2": frozenset({1, 2}),
    "race_ref": frozenset(range(1, 7)),
    "race2": frozenset(range(1, 7)),
    "educ_ref": frozenset({*range(0, 8), *range(10, 18)}),
    "educ2": frozenset({*range(0, 8), *range(10, 18)}),
    "marital1": frozenset(range(1, 6)),
    "tenure": frozenset(range(1, 7)),
    "region": frozenset(range(1, 5)),
    "bls_urbn": frozenset({1, 2}),
}

# Legacy (1980-81) STATE codes of the dictionary -> FIPS, and FIPS codes it lists from 1984.
LEGACY_STATE = {
    "14": "25", "16": "16", "21": "21", "22": "22", "23": "23", "31": "31", "32": "32",
    "33": "33", "34": "34", "35": "55", "41": "41", "42": "42", "43": "29", "47": "47",
    "52": "24", "53": "53", "54": "51", "55": "55", "56": "37", "58": "13", "59": "12",
    "61": "21", "62": "47", "63": "01", "72": "22", "74": "48", "84": "08", "86": "04",
    "91": "53", "92": "41", "93": "06", "95": "15",
}  # fmt: skip
CANONICAL_STATES = frozenset(
    "01 02 04 05 06 08 09 10 11 12 13 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 "
    "34 35 36 37 39 40 41 42 44 45 46 47 48 49 51 53 54 55".split()
)
