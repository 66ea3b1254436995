"""IPUMS CPS code tables of the numeric columns: NIU/missing codes and the DWS numeric recodes.

Facts from spec 00_common.md 1.6 and 20_tasks_labor_macro.md 0.5 (the reference's
`mappings/cps_missing_codes.csv`). The label maps of the categorical columns are in
hhx.surveys.cps.labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from hhx.errors import DataError

# --------------------------------------------------------------------------------------------
# NIU / missing codes: these raw values become NA in the intermediate (uppercase columns).
# Exactly the reference table `scripts/1_preprocessing/mappings/cps_missing_codes.csv`: it does
# not list DURUNEMP 999, AHRSWORKT 999, EARNWEEK 9999.99 or HOURWAGE 999.99, so those stay in the
# intermediate (the task builders drop them through numeric bounds). `EXTRA_MISSING_CODES` adds
# them (survey option `cps_extra_missing_codes`, off by default).

MISSING_CODES: dict[str, tuple[float, ...]] = {
    "HHTENURE": (0,),
    "GQTYPE": (99,),
    "METRO": (9,),
    "FAMINC": (995, 999),
    "UCAPLAST": (98, 99),
    "UCNOMAIN": (98, 99),
    "UCNORECLAST": (98, 99),
    "UCNORECWK": (98, 99),
    "UCRECLAST": (98, 99),
    "UCRECWK": (98, 99),
    "UCUNION": (98, 99),
    "UCWHYNOELG": (98, 99),
    "UCSUPFLG": (99,),
    "RELATE": (9900, 9999),
    "SEX": (9,),
    "RACE": (999,),
    "MARST": (9,),
    "ASIAN": (99,),
    "VETSTAT": (0, 9),
    "FAMSIZE": (0,),
    "FTYPE": (9,),
    "FAMREL": (9,),
    "BPL": (96000, 99999),
    "YRIMMIG": (0,),
    "CITIZEN": (9,),
    "NATIVITY": (0,),
    "HISPAN": (902,),
    "EMPSTAT": (0,),
    "LABFORCE": (0,),
    "OCC2010": (9999,),
    "OCC1990": (999,),
    "IND1990": (0, 998),
    "OCC1950": (997, 999),
    "IND1950": (0,),
    "CLASSWKR": (0, 99),
    "UHRSWORKT": (999,),
    "UHRSWORK1": (999,),
    "UHRSWORK2": (998, 999),
    "AHRSWORK1": (999,),
    "AHRSWORK2": (999,),
    "ABSENT": (0,),
    "DURUNEM2": (99,),
    "WHYUNEMP": (0,),
    "WHYABSNT": (0,),
    "WHYPTLWK": (0, 1),
    "WNFTLOOK": (0,),
    "WNLOOK": (999,),
    "WKSTAT": (99,),
    "EMPSAME": (99,),
    "MULTJOB": (0,),
    "NUMJOB": (0,),
    "PAIDEMP1": (99,),
    "PAIDEMP1N": (99,),
    "PAIDEMP2": (99,),
    "PAIDEMP2N": (99,),
    "PROFCERT": (99,),
    "STATECERT": (99,),
    "JOBCERT": (99,),
    "WRKOFFER": (99,),
    "NILFACT": (99,),
    "ACTSAME": (99,),
    "EDUC": (0, 1, 999),
    "EDUC99": (0,),
    "EDCYC": (99,),
    "EDDIPGED": (99,),
    "EDHGCGED": (99,),
    "SCHLCOLL": (0,),
    "DIFFHEAR": (0,),
    "DIFFEYE": (0,),
    "DIFFREM": (0,),
    "DIFFPHYS": (0,),
    "DIFFMOB": (0,),
    "DIFFCARE": (0,),
    "DIFFANY": (0,),
    "DWLOSTJOB": (98, 99),
    "DWSTAT": (99,),
    "DWREAS": (98, 99),
    "DWRECALL": (98, 99),
    "DWNOTICE": (98, 99),
    "DWLASTWRK": (98, 99),
    "DWFULLTIME": (98, 99),
    "DWUNION": (98, 99),
    "DWBEN": (98, 99),
    "DWEXBEN": (98, 99),
    "DWHI": (98, 99),
    "DWCLASS": (98, 99),
    "DWIND1990": (0, 998),
    "DWOCC1990": (999,),
    "DWMOVE": (98, 99),
    "DWHINOW": (98, 99),
    "PAIDHOUR": (0,),
    "UNION": (0,),
    "OTPAY": (99,),
}

# IPUMS NIU codes the reference table lacks (hhx's earlier default; now opt-in).
EXTRA_MISSING_CODES: dict[str, tuple[float, ...]] = {
    "DURUNEMP": (999,),
    "AHRSWORKT": (999,),
    "EARNWEEK": (9999.99,),
    "HOURWAGE": (999.99,),
}


# --------------------------------------------------------------------------------------------
# DWS numeric companions: (lowercase out, missing codes, minimum, maximum exclusive, integer).
# The reference writes the harmonised values into the raw column too (DWWEEKC, DWWEEKL, DWYEARS,
# DWJOBSINCE, DWWKSUN); survey option `cps_raw_dws_columns` keeps the raw codes there instead.


@dataclass(frozen=True)
class NumericRecode:
    source: str
    out: str
    missing: tuple[float, ...]
    minimum: float
    maximum_exclusive: float
    integer: bool


DWS_NUMERIC: tuple[NumericRecode, ...] = (
    NumericRecode("DWWEEKC", "dwweekc", (9999.98, 9999.99), 0, 9999.98, False),
    NumericRecode("DWWEEKL", "dwweekl", (9999.96, 9999.97, 9999.98, 9999.99), 0, 9999.96, False),
    NumericRecode("DWYEARS", "dwyears", (99.96, 99.97, 99.98, 99.99), 0, 99.96, False),
    NumericRecode("DWJOBSINCE", "dwjobsince", (95, 96, 97, 98, 99), 0, 95, True),
    NumericRecode("DWWKSUN", "dwwksun", (996, 997, 998, 999), 0, 996, True),
)


# --------------------------------------------------------------------------------------------
# Vectorised application


def recode_numeric(values: pd.Series, recode: NumericRecode, where: str) -> pd.Series:
    """DWS numeric companion: special codes -> NA; values outside the domain are an error."""
    x = values.astype("Float64")
    x = x.mask(x.isin(recode.missing))
    bad = x.notna() & ((x < recode.minimum) | (x >= recode.maximum_exclusive))
    if bad.any():
        raise DataError(
            f"{where}: column {recode.source} has values outside "
            f"[{recode.minimum:g}, {recode.maximum_exclusive:g}): {sorted(set(x[bad]))[:5]}"
        )
    if recode.integer:
        frac = x.notna() & (x != x.round())
        if frac.any():
            raise DataError(f"{where}: column {recode.source} has non-integer values")
        return x.round().astype("Int32")
    return x
