"""IPUMS CPS code tables: code -> label maps of the categorical columns (the NIU/missing codes
and DWS numeric recodes: hhx.surveys.cps.codes).

Facts from spec 00_common.md 1.6 and 20_tasks_labor_macro.md 0.5 (the reference's label
specs). Label strings are part of the public task tables, so they must stay byte-identical to
the reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hhx.errors import DataError

# --------------------------------------------------------------------------------------------
# Code -> label maps for the lowercase categorical columns.


@dataclass(frozen=True)
class LabelSpec:
    source: str  # uppercase IPUMS column
    out: str  # lowercase label column
    exact: dict[int, str] = field(default_factory=dict)
    ranges: tuple[tuple[int, int, str], ...] = ()  # inclusive code ranges
    missing: frozenset[int] = frozenset()  # codes that become NA (besides MISSING_CODES)

    def categories(self) -> list[str]:
        """Label order: exact labels first, then range labels (each once)."""
        labels = list(self.exact.values()) + [label for _, _, label in self.ranges]
        return list(dict.fromkeys(labels))


STATE_NAMES: dict[int, str] = {
    1: "Alabama",
    2: "Alaska",
    4: "Arizona",
    5: "Arkansas",
    6: "California",
    8: "Colorado",
    9: "Connecticut",
    10: "Delaware",
    11: "District of Columbia",
    12: "Florida",
    13: "Georgia",
    15: "Hawaii",
    16: "Idaho",
    17: "Illinois",
    18: "Indiana",
    19: "Iowa",
    20: "Kansas",
    21: "Kentucky",
    22: "Louisiana",
    23: "Maine",
    24: "Maryland",
    25: "Massachusetts",
    26: "Michigan",
    27: "Minnesota",
    28: "Mississippi",
    29: "Missouri",
    30: "Montana",
    31: "Nebraska",
    32: "Nevada",
    33: "New Hampshire",
    34: "New Jersey",
    35: "New Mexico",
    36: "New York",
    37: "North Carolina",
    38: "North Dakota",
    39: "Ohio",
    40: "Oklahoma",
    41: "Oregon",
    42: "Pennsylvania",
    44: "Rhode Island",
    45: "South Carolina",
    46: "South Dakota",
    47: "Tennessee",
    48: "Texas",
    49: "Utah",
    50: "Vermont",
    51: "Virginia",
    53: "Washington",
    54: "West Virginia",
    55: "Wisconsin",
    56: "Wyoming",
    # grouped-state codes of the 1970s-80s public files
    61: "Maine-New Hampshire-Vermont",
    65: "Montana-Idaho-Wyoming",
    68: "Alaska-Hawaii",
    69: "Nebraska-North Dakota-South Dakota",
    70: "Maine-Massachusetts-New Hampshire-Rhode Island-Vermont",
    71: "Michigan-Wisconsin",
    72: "Minnesota-Iowa",
    73: "Nebraska-North Dakota-South Dakota-Kansas",
    74: "Delaware-Virginia",
    75: "North Carolina-South Carolina",
    76: "Alabama-Mississippi",
    77: "Arkansas-Oklahoma",
    78: "Arizona-New Mexico-Colorado",
    79: "Idaho-Wyoming-Utah-Montana-Nevada",
    80: "Alaska-Washington-Hawaii",
    81: "New Hampshire-Maine-Vermont-Rhode Island",
    83: "South Carolina-Georgia",
    84: "Kentucky-Tennessee",
    85: "Arkansas-Louisiana-Oklahoma",
    87: "Iowa-N Dakota-S Dakota-Nebraska-Kansas-Minnesota-Missouri",
    88: "Washington-Oregon-Alaska-Hawaii",
    89: "Montana-Wyoming-Colorado-New Mexico-Utah-Nevada-Arizona",
    90: "Delaware-Maryland-Virginia-West Virginia",
    99: "State not identified",
}

_NO_YES = {1: "no", 2: "yes"}
_DW_MISSING = frozenset({96, 97, 98, 99})

LABEL_SPECS: tuple[LabelSpec, ...] = (
    LabelSpec("SEX", "sex", {1: "man", 2: "woman"}),
    LabelSpec(
        "RACE",
        "race",
        {
            100: "White",
            200: "Black",
            300: "American Indian",
            650: "Asian or Pacific Islander",
            651: "Asian or Pacific Islander",
            652: "Asian or Pacific Islander",
            700: "other race",
        },
        ((801, 899, "multiracial"),),
    ),
    LabelSpec(
        "EDUC",
        "educ",
        {73: "high school diploma or GED", 110: "bachelor's degree", 111: "bachelor's degree"},
        (
            (0, 72, "high school or less"),
            (80, 100, "some college or associate degree"),
            (120, 999, "graduate or professional education"),
        ),
    ),
    LabelSpec(
        "MARST",
        "marst",
        {
            1: "married, spouse present",
            2: "married, spouse absent",
            3: "separated",
            4: "divorced",
            5: "widowed",
            6: "never married",
            7: "widowed or divorced",
        },
        missing=frozenset({9}),
    ),
    LabelSpec("STATEFIP", "state", STATE_NAMES),
    LabelSpec(
        "REGION",
        "region",
        {
            11: "Northeast",
            12: "Northeast",
            21: "Midwest",
            22: "Midwest",
            31: "South",
            32: "South",
            33: "South",
            41: "West",
            42: "West",
            97: "State not identified",
        },
    ),
    LabelSpec(
        "METRO",
        "metro",
        {
            1: "non-metropolitan area",
            2: "metropolitan area",
            3: "metropolitan area",
            4: "metropolitan area",
        },
        missing=frozenset({0, 9}),
    ),
    LabelSpec(
        "RELATE",
        "relate",
        {
            101: "reference person",
            201: "spouse",
            202: "spouse",
            203: "spouse",
            301: "child",
            303: "child",
            501: "parent",
            701: "sibling",
            901: "grandchild",
            1001: "other relative",
            1113: "partner",
            1114: "partner",
            1115: "housemate or roommate",
            1116: "partner",
            1117: "partner",
            1241: "housemate or roommate",
            1242: "foster child",
            1260: "other nonrelative",
            9900: "relationship unknown",
        },
        missing=frozenset({9999}),
    ),
    LabelSpec(
        "HISPAN",
        "hispan",
        {0: "not Hispanic", 200: "Puerto Rican", 300: "Cuban", 400: "Dominican"},
        ((100, 199, "Mexican origin"), (500, 699, "other Hispanic")),
        missing=frozenset({901, 902}),
    ),
    LabelSpec(
        "NATIVITY",
        "nativity",
        {1: "native-born", 2: "native-born", 3: "native-born", 4: "native-born", 5: "foreign-born"},
        missing=frozenset({0}),
    ),
    LabelSpec(
        "CITIZEN",
        "citizen",
        {
            1: "U.S.-born citizen",
            2: "U.S.-born citizen",
            3: "U.S.-born citizen",
            4: "naturalized citizen",
            5: "not a U.S. citizen",
        },
    ),
    LabelSpec(
        "VETSTAT",
        "vetstat",
        {1: "not a veteran", 2: "veteran", 9: "Unknown"},
        missing=frozenset({0}),
    ),
    LabelSpec(
        "CLASSWKR",
        "classwkr",
        {
            10: "self-employed",
            13: "self-employed, not incorporated",
            14: "self-employed, incorporated",
            20: "wage or salary worker",
            21: "private wage and salary worker",
            22: "private for-profit wage and salary worker",
            23: "private nonprofit wage and salary worker",
            24: "government wage and salary worker",
            25: "federal government employee",
            26: "armed forces",
            27: "state government employee",
            28: "local government employee",
            29: "unpaid family worker",
        },
        missing=frozenset({0, 99}),
    ),
    LabelSpec(
        "EMPSTAT",
        "empstat",
        {
            1: "armed forces",
            10: "at work",
            12: "has job, not at work last week",
            20: "unemployed",
            21: "unemployed, experienced worker",
            22: "unemployed, new worker",
            30: "not in labor force",
            31: "not in labor force, housework",
            32: "not in labor force, unable to work",
            33: "not in labor force, school",
            34: "not in labor force, other",
            35: "not in labor force, unpaid fewer than 15 hours",
            36: "not in labor force, retired",
        },
        missing=frozenset({0}),
    ),
    LabelSpec(
        "LABFORCE",
        "labforce",
        {1: "not in the labor force", 2: "in the labor force"},
        missing=frozenset({0}),
    ),
    LabelSpec(
        "NILFACT",
        "nilfact",
        {
            1: "disabled",
            2: "ill",
            3: "in school",
            4: "taking care of house or family",
            6: "something else or other",
        },
        missing=frozenset({0, 99}),
    ),
    LabelSpec(
        "WKSTAT",
        "wkstat",
        {
            10: "full-time schedules",
            11: "full-time hours, usually full-time",
            12: "part-time for non-economic reasons, usually full-time",
            13: "not at work, usually full-time",
            14: "full-time hours, usually part-time for economic reasons",
            15: "full-time hours, usually part-time for non-economic reasons",
            20: "part-time for economic reasons",
            21: "part-time for economic reasons, usually full-time",
            22: "part-time hours, usually part-time for economic reasons",
            40: "part-time for non-economic reasons",
            41: "part-time hours, usually part-time for non-economic reasons",
            42: "not at work, usually part-time",
            50: "unemployed, seeking full-time work",
            60: "unemployed, seeking part-time work",
        },
        missing=frozenset({0, 99}),
    ),
    LabelSpec(
        "WNFTLOOK",
        "wnftlook",
        {
            10: "less than 5 years ago",
            11: "within the last 12 months",
            12: "one to five years ago",
            20: "more than 12 months ago",
            30: "more than 5 years ago",
            40: "never worked",
            41: "never worked full-time for 2 or more weeks",
            42: "never worked at all",
        },
        missing=frozenset({0, 99}),
    ),
    LabelSpec("MULTJOB", "multjob", _NO_YES, missing=frozenset({0})),
    LabelSpec(
        "UNION",
        "union",
        {
            1: "no union coverage",
            2: "member of a labor union",
            3: "covered by a union but not a member",
        },
        missing=frozenset({0}),
    ),
    LabelSpec(
        "DWMOVE",
        "dwmove",
        {1: "did_not_move", 2: "moved_not_because_job_loss", 3: "moved_because_job_loss"},
        missing=_DW_MISSING,
    ),
    LabelSpec(
        "DWRESP",
        "dwresp",
        {
            0: "not_eligible",
            1: "eligible_not_interviewed",
            2: "eligible_interviewed",
            6: "refused",
            7: "don't know",
        },
    ),
    LabelSpec(
        "DWSTAT",
        "dwstat",
        {0: "not_displaced_worker", 1: "displaced_worker"},
        missing=frozenset({99}),
    ),
    LabelSpec(
        "DWREAS",
        "dwreas",
        {
            1: "plant or company closed down or moved",
            2: "insufficient work",
            3: "position or shift abolished",
            4: "seasonal job completed",
            5: "self-operated business failed",
            6: "other reason",
        },
        missing=_DW_MISSING,
    ),
    LabelSpec("DWRECALL", "dwrecall", _NO_YES, missing=_DW_MISSING),
    LabelSpec(
        "DWNOTICE",
        "dwnotice",
        {
            1: "no notice",
            2: "less than 1 month notice",
            3: "1 to 2 months notice",
            4: "more than 2 months notice",
            5: "notice given, time period not reported",
        },
        missing=_DW_MISSING,
    ),
    LabelSpec(
        "DWLASTWRK",
        "dwlastwrk",
        {
            0: "this year",
            1: "last year",
            2: "two years ago",
            3: "three years ago",
            4: "four years ago",
            5: "five years ago",
            95: "other timing",
        },
        missing=_DW_MISSING,
    ),
    LabelSpec(
        "DWFULLTIME",
        "dwfulltime",
        {1: "not full time", 2: "full time", 3: "hours varied"},
        missing=_DW_MISSING,
    ),
    LabelSpec("DWUNION", "dwunion", _NO_YES, missing=_DW_MISSING),
    LabelSpec("DWBEN", "dwben", _NO_YES, missing=_DW_MISSING),
    LabelSpec("DWHI", "dwhi", _NO_YES, missing=_DW_MISSING),
    LabelSpec("DWHINOW", "dwhinow", _NO_YES, missing=_DW_MISSING),
    LabelSpec(
        "DWCLASS",
        "dwclass",
        {
            1: "government",
            2: "private for-profit",
            3: "private nonprofit",
            4: "self-employed",
            5: "without pay or family business",
        },
        missing=_DW_MISSING,
    ),
)


# --------------------------------------------------------------------------------------------
# Vectorised application


def _lookup_table(spec: LabelSpec) -> tuple[np.ndarray, list[str]]:
    """Array indexed by code: category index, -1 = NA, -2 = unmapped."""
    cats = spec.categories()
    index = {label: i for i, label in enumerate(cats)}
    top = max([*spec.exact, *(hi for _, hi, _ in spec.ranges), *spec.missing, 0])
    table = np.full(top + 1, -2, dtype=np.int16)
    for lo, hi, label in spec.ranges:
        table[lo : hi + 1] = index[label]
    for code, label in spec.exact.items():
        table[code] = index[label]
    for code in spec.missing:
        table[code] = -1
    return table, cats


def label_codes(codes: pd.Series, spec: LabelSpec, where: str) -> pd.Categorical:
    """Map an integer code column to its labels; NA stays NA; an unmapped code is an error."""
    table, cats = _lookup_table(spec)
    values = codes.to_numpy(dtype="float64", na_value=np.nan)
    present = ~np.isnan(values)
    ints = np.zeros(len(values), dtype=np.int64)
    ints[present] = values[present].astype(np.int64)
    if (ints[present] != values[present]).any():
        bad = values[present][ints[present] != values[present]][0]
        raise DataError(f"{where}: column {spec.source} has non-integer code {bad}")
    in_range = present & (ints >= 0) & (ints < len(table))
    idx = np.full(len(values), -1, dtype=np.int16)
    idx[in_range] = table[ints[in_range]]
    unmapped = (present & ~in_range) | (idx == -2)
    if unmapped.any():
        examples = sorted(set(ints[unmapped].tolist()))[:10]
        raise DataError(
            f"{where}: column {spec.source} has codes with no {spec.out!r} label: {examples}; "
            "check the extract or add them to hhx/surveys/cps/labels.py"
        )
    return pd.Categorical.from_codes(idx, categories=cats)
