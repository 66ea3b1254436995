"""CEX Interview labels: the label and harmonized categoricals of the coded characteristics.

Labels (pandas categoricals): `region_label`, `bls_urbn_label`, `sex_ref_label`, `sex2_label`,
`marital1_label`, `tenure_harmonized`, `race_ref_harmonized`, `race2_harmonized`,
`educ_ref_harmonized`, `educ2_harmonized` (ordered). Codes come from the CE data dictionary
(union over its years); a code outside it is a DataError naming package, member, column, code
(checked on reading, hhx.surveys.cex.interview_fmli). Race keeps the code number (the reference's
choice: 1984-2003 code 4 "Asian or Pacific Islander" -> Asian, 1996-2003 code 5 "Other" ->
Pacific Islander); education maps the 1980-95 codes 1-7 and the 1996+ codes 0, 10-17 onto 8
levels; EDUCA2 code 0 in 1980-81 means "don't know" (NA).
"""

from __future__ import annotations

import pandas as pd

SEX_LABELS = {1: "Man", 2: "Woman"}
RACE_LABELS = {
    1: "White",
    2: "Black",
    3: "Native American",
    4: "Asian",
    5: "Pacific Islander",
    6: "Multiracial",
}
EDUCATION_LABELS = {
    1: "No formal schooling",
    2: "Elementary school",
    3: "Some high school",
    4: "High school diploma",
    5: "Some college",
    6: "Associate degree",
    7: "Bachelor's degree",
    8: "Graduate or professional degree",
}
MARITAL_LABELS = {1: "Married", 2: "Widowed", 3: "Divorced", 4: "Separated", 5: "Never married"}
TENURE_LABELS = {
    1: "Owned with mortgage",
    2: "Owned without mortgage",
    3: "Owned mortgage not reported",
    4: "Rented",
    5: "Occupied without payment of cash rent",
    6: "Student housing",
}
REGION_LABELS = {1: "Northeast", 2: "Midwest", 3: "South", 4: "West"}
URBAN_LABELS = {1: "Urban", 2: "Rural"}
# 1980-95 codes 1-7 and 1996+ codes 0, 10-17 -> the 8 education levels.
EDUCATION_MAP = {
    0: 1, 1: 2, 2: 3, 3: 4, 4: 5, 5: 7, 6: 8, 7: 1,
    10: 2, 11: 3, 12: 4, 13: 5, 14: 6, 15: 7, 16: 8, 17: 8,
}  # fmt: skip


def _categorical(codes: pd.Series, labels: dict[int, str], ordered: bool = False) -> pd.Series:
    return pd.Series(
        pd.Categorical(codes.map(labels), categories=list(labels.values()), ordered=ordered),
        index=codes.index,
    )


def add_labels(frame: pd.DataFrame) -> None:
    """Label and harmonized categoricals (codes were checked against the codebook on reading)."""
    for column, labels in (("region", REGION_LABELS), ("bls_urbn", URBAN_LABELS),
                           ("sex_ref", SEX_LABELS), ("sex2", SEX_LABELS),
                           ("marital1", MARITAL_LABELS)):  # fmt: skip
        frame[f"{column}_label"] = _categorical(frame[column], labels)
    frame["tenure_harmonized"] = _categorical(frame["tenure"], TENURE_LABELS)
    frame["race_ref_harmonized"] = _categorical(frame["race_ref"], RACE_LABELS)
    frame["race2_harmonized"] = _categorical(frame["race2"], RACE_LABELS)
    frame["educ_ref_harmonized"] = _categorical(
        frame["educ_ref"].map(EDUCATION_MAP), EDUCATION_LABELS, ordered=True
    )
    # EDUCA2 code 0 is "don't know" in the 1980-81 files, "never attended" later.
    educ2 = frame["educ2"].map(EDUCATION_MAP)
    educ2 = educ2.where(~((frame["educ2"] == 0) & (frame["interview_year"] <= 1981)))
    frame["educ2_harmonized"] = _categorical(educ2, EDUCATION_LABELS, ordered=True)
