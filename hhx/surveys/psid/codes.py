"""PSID-SHELF code tables: subsample lineages, the label text of the coded columns and the
broad occupation groups of the three occupation codings (spec 1.10, 10_tasks 7).
"""

from __future__ import annotations

import pandas as pd

# (subsample, first lineage, last lineage), spec 1.10; anything else is "unknown".
SUBSAMPLE_RANGES: tuple[tuple[str, int, int], ...] = (
    ("src", 1, 2930),
    ("immigrant_1997_1999", 3001, 3511),
    ("immigrant_2017_2019", 4001, 4851),
    ("seo", 5001, 6872),
    ("latino", 7001, 9308),
)

# Spec 10_tasks 7: the label text the PSID task prompts are built from.
LABELS: dict[str, dict[int, str]] = {
    "demo_sex": {1: "Male", 2: "Female"},
    "race_eth_maj_col": {1: "White", 2: "Black", 3: "Other race", 4: "Hispanic"},
    "geo_region": {
        1: "Northeast", 2: "Midwest", 3: "South", 4: "West", 5: "Alaska or Hawaii",
        6: "Country outside the United States",
    },
    "geo_metro": {0: "No, non-metropolitan area", 1: "Yes, metropolitan area",
                  9: "N/A, not classified"},
    "edu_level_max": {
        0: "Did not complete high school",
        1: "Completed high school, did not attend college",
        2: "Attended college, no bachelor's degree",
        3: "Bachelor's degree, no postgraduate degree",
        4: "Postgraduate degree",
    },
    "emp_work": {0: "Not currently working", 1: "Currently working"},
    "home_stat": {1: "Owns home", 2: "Pays rent", 3: "Neither owns home nor pays rent"},
    "fam_partnered": {
        0: "No, reference person has no spouse or partner in the family unit",
        1: "Yes, reference person has a spouse or partner in the family unit",
    },
    "fam_married": {
        0: "No, reference person is not legally married to a spouse in the family unit",
        1: "Yes, reference person is legally married to a spouse in the family unit",
    },
}  # fmt: skip

OCC_LABELS = {
    "professional_managerial": "Professional or managerial occupation",
    "sales_office_service": "Sales, office, or service occupation",
    "farming_construction_repair": "Farming, construction, or repair occupation",
    "production_transport_labor": "Production, transport, or labor occupation",
    "military_other": "Military or other occupation",
}
# Code ranges (inclusive) of each coding scheme, in the order occupation is taken from.
OCC_RANGES: dict[str, tuple[tuple[int, int, str], ...]] = {
    "occ_2010c_1m": (
        (10, 3540, "professional_managerial"), (3600, 5940, "sales_office_service"),
        (6000, 7630, "farming_construction_repair"), (7700, 9750, "production_transport_labor"),
        (9800, 9830, "military_other"),
    ),
    "occ_2000c_1m": (
        (10, 354, "professional_managerial"), (360, 593, "sales_office_service"),
        (600, 762, "farming_construction_repair"), (770, 975, "production_transport_labor"),
        (980, 983, "military_other"),
    ),
    "occ_1970c": (
        (1, 245, "professional_managerial"), (250, 395, "sales_office_service"),
        (401, 444, "farming_construction_repair"), (500, 785, "production_transport_labor"),
        (801, 846, "farming_construction_repair"), (901, 965, "sales_office_service"),
        (980, 983, "military_other"),
    ),
}  # fmt: skip


def derive_subsample(lineage: pd.Series) -> pd.Series:
    out = pd.Series("unknown", index=lineage.index, dtype="string")
    for name, low, high in SUBSAMPLE_RANGES:
        out[((lineage >= low) & (lineage <= high)).fillna(False)] = name
    return out


def harmonize_occupation(frame: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Broad occupation group and the variable it came from (first scheme whose code maps)."""
    group = pd.Series(pd.NA, index=frame.index, dtype="string")
    source = pd.Series(pd.NA, index=frame.index, dtype="string")
    for column, ranges in OCC_RANGES.items():
        codes = frame[column]
        mapped = pd.Series(pd.NA, index=frame.index, dtype="string")
        for low, high, name in ranges:
            mapped[((codes >= low) & (codes <= high)).fillna(False)] = name
        take = group.isna() & mapped.notna()
        group[take] = mapped[take]
        source[take] = column
    return group, source
