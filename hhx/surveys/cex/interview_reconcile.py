"""CEX Interview: the candidate records of every package -> one row per record (the latest
package's copy), its sample design and harmonized interview position.

Overlaps: a record (newid, year, month) found in several packages keeps the latest package's
copy. Sample design (cex_sample_design), by interview quarter: pre_1986 <= 1986Q1; frame_1986
1986Q2-1995Q4; frame_1996 1996Q2-2004Q4; frame_2005 2005Q2-2014Q4; frame_2015 >= 2015Q2. The
first quarters of 1996, 2005 and 2015 (tokens 961, 051, 151) go by the package whose copy is
kept: the old frame if it is the previous year's package (the record is only there), the new
frame if it is the year's own package. A record matching no design, or two, is a DataError.

Interview position (`interview_position_harmonized`): interview years to 2014 number the public
interviews 2-5 -> 1-4; from 2015 1-4 are kept.
"""

from __future__ import annotations

import pandas as pd

from hhx.errors import DataError
from hhx.surveys.cex.interview_variables import RECORD_KEY, full_year, qi

# Design of the sample frame: (name, first q_index, last q_index); boundary tokens below.
DESIGNS = [
    ("pre_1986", None, qi(1986, 1)),
    ("frame_1986", qi(1986, 2), qi(1995, 4)),
    ("frame_1996", qi(1996, 2), qi(2004, 4)),
    ("frame_2005", qi(2005, 2), qi(2014, 4)),
    ("frame_2015", qi(2015, 2), None),
]
# Boundary token -> (old design if kept from the package of the year before, new design).
BOUNDARY_TOKENS = {
    "961": ("frame_1986", "frame_1996"),
    "051": ("frame_1996", "frame_2005"),
    "151": ("frame_2005", "frame_2015"),
}


# --------------------------------------------------------------------------------------------
# All packages -> one row per interview


def reconcile(candidates: pd.DataFrame) -> pd.DataFrame:
    """Keep the latest package's copy of each record; first release year and version count."""
    per_package = candidates.groupby([*RECORD_KEY, "cex_retained_package_year"], sort=False)
    members = per_package["cex_source_member"].nunique()
    if (members > 1).any():
        key = members[members > 1].index[0]
        raise DataError(
            f"Interview package {key[3]}: NEWID {key[0]} ({key[1]}-{key[2]:02d}) appears in "
            "two FMLI members of the package; keep the unmodified BLS package"
        )
    grouped = candidates.groupby(RECORD_KEY, sort=False)["cex_retained_package_year"]
    candidates = candidates.assign(
        cex_first_release_year=grouped.transform("min").astype("int64"),
        cex_overlap_versions=grouped.transform("nunique").astype("int64"),
    )
    candidates = candidates.sort_values(
        [*RECORD_KEY, "cex_retained_package_year"], kind="mergesort"
    )
    return candidates[~candidates.duplicated(RECORD_KEY, keep="last")].reset_index(drop=True)


def sample_design(frame: pd.DataFrame) -> pd.Series:
    """Frame of each record by interview quarter, boundary tokens by kept package (notes)."""
    q = frame["q_index"]
    token = frame["cex_quarter_token"]
    package = frame["cex_retained_package_year"]
    design = pd.Series(pd.NA, index=frame.index, dtype="object")
    matches = pd.Series(0, index=frame.index)
    for name, first, last in DESIGNS:
        hit = pd.Series(True, index=frame.index)
        if first is not None:
            hit &= q >= first
        if last is not None:
            hit &= q <= last
        for tok, (old, new) in BOUNDARY_TOKENS.items():
            year = full_year(int(tok[:2]))
            if name == old:
                hit |= (token == tok) & (package == year - 1)
            if name == new:
                hit |= (token == tok) & (package == year)
        design = design.where(~hit, name)
        matches += hit.astype(int)
    bad = matches != 1
    if bad.any():
        row = frame[bad].iloc[0]
        raise DataError(
            f"{row['cex_source_package']}:{row['cex_source_member']}: NEWID {row['newid']} "
            f"({row['interview_year']}-{row['interview_month']:02d}, token "
            f"{row['cex_quarter_token']}) matches {int(matches[bad].iloc[0])} sample designs; "
            "an interview quarter must fall in exactly one (spec 1.5)"
        )
    return design.astype("string")


def interview_position(number: pd.Series, year: pd.Series) -> pd.Series:
    """Interview years to 2014 number public interviews 2-5 (-> 1-4); from 2015 1-4 (kept)."""
    out = pd.Series(pd.NA, index=number.index, dtype="Int64")
    pre = (year <= 2014) & number.isin([2, 3, 4, 5])
    post = (year >= 2015) & number.isin([1, 2, 3, 4])
    out[pre] = number[pre] - 1
    out[post] = number[post]
    return out
