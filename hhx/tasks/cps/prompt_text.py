"""The CPS tasks' prompt text (spec 20_tasks_labor_macro.md 0.5): reading a row's values for a
prompt, the shared sentences and phrase tables, the background paragraph and the macro paragraph.

Facts (reference `scripts/utils/cps.py` and the CPS task scripts): the background paragraph gives
age (article "an" for 8, 11, 18, 80-89), race, sex, education phrase; a marital clause with state,
metro and region; household size and own children; an origin sentence (collapsed when not
Hispanic, U.S.-born citizen and not a veteran). Which labels each renderer checks, and small
wording differences (retire's "and you live", the income task's household sentence), are
parameters of `Background`. The table mechanics (links, filters, predictors) are in common.py.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from hhx.errors import DataError
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.tasks.cps.common import BLANKS
from hhx.tasks.prompting import article, render_macro_paragraph

# --------------------------------------------------------------------------------------------
# Prompt helpers


def is_missing(value: Any) -> bool:
    """None, NaN, pd.NA or a blank / 'nan' / '<NA>' text (how the renderers read a missing cell)."""
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return str(value).strip().lower() in BLANKS


def text(row: Mapping[str, Any], col: str, task: str) -> str:
    value = row.get(col)
    if is_missing(value):
        raise DataError(f"{task}: {col} is missing for id {row.get('id')!r}")
    return str(value).strip()


def optional_text(row: Mapping[str, Any], col: str) -> str | None:
    value = row.get(col)
    return None if is_missing(value) else str(value).strip()


def pick(table: Mapping[Any, str], key: Any, col: str, row: Mapping[str, Any], task: str) -> str:
    if key not in table:
        raise DataError(
            f"{task}: {col} {key!r} has no prompt wording (id {row.get('id')!r}); "
            f"known: {sorted(map(str, table))}"
        )
    return table[key]


def whole(row: Mapping[str, Any], col: str, task: str) -> int:
    """int(round(x)) of a numeric cell; missing is an error naming the column and id."""
    return int(round(number(row, col, task)))


def number(row: Mapping[str, Any], col: str, task: str) -> float:
    """A numeric cell as float; missing or not finite is an error naming the column and id."""
    try:
        value = float(row[col])
    except (KeyError, TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise DataError(f"{task}: {col} is missing for id {row.get('id')!r}")
    return value


def hours_text(value: float) -> str:
    """Whole hours as an integer, else one decimal (separation)."""
    r = round(value)
    return str(int(r)) if abs(value - r) < 1e-6 else f"{value:.1f}"


def week_count(weeks: int) -> str:
    return "1 week" if weeks == 1 else f"{weeks} weeks"


LF_QUESTION_DEFINITIONS = (
    'For this question, "employed" means working for pay or profit or being temporarily absent '
    'from a job, "unemployed" means not employed but available for work and actively searching '
    'or on temporary layoff, and "not_in_labor_force" means neither employed nor unemployed.'
)
WKSTAT_SENTENCE = {
    "unemployed, seeking full-time work": (
        "You are currently unemployed and are seeking full-time work."
    ),
    "unemployed, seeking part-time work": (
        "You are currently unemployed and are seeking part-time work."
    ),
}
WNFTLOOK_PHRASE = {
    "less than 5 years ago": "less than 5 years ago",
    "within the last 12 months": "within the last 12 months",
    "one to five years ago": "one to five years ago",
    "more than 12 months ago": "more than 12 months ago",
    "more than 5 years ago": "more than 5 years ago",
    "never worked": "never",
    "never worked full-time for 2 or more weeks": "never",
    "never worked at all": "never",
}
_RECENT = "In your most recent job, you"
RECENT_JOB_SENTENCE = {  # jobfind and ui: the most recent job's worker class
    "private for-profit wage and salary worker": f"{_RECENT} worked in the private sector.",
    "private wage and salary worker": f"{_RECENT} worked in the private sector.",
    "private nonprofit wage and salary worker": (
        f"{_RECENT} worked for a private nonprofit employer."
    ),
    "state government employee": f"{_RECENT} worked for state government.",
    "federal government employee": f"{_RECENT} worked for the federal government.",
    "local government employee": f"{_RECENT} worked for local government.",
    "government wage and salary worker": f"{_RECENT} worked for the government.",
    "self-employed": f"{_RECENT} were self-employed.",
    "self-employed, incorporated": f"{_RECENT} were self-employed in an incorporated business.",
    "self-employed, not incorporated": (
        f"{_RECENT} were self-employed in an unincorporated business."
    ),
    "wage or salary worker": f"{_RECENT} worked as a wage and salary worker.",
    "unpaid family worker": f"{_RECENT} worked without pay in a family business or farm.",
    "armed forces": f"{_RECENT} served in the armed forces.",
}
CURRENT_EMPLOYER_PHRASE = {  # separation and retire: "You are currently employed <phrase>."
    "private for-profit wage and salary worker": "by a private for-profit employer",
    "private wage and salary worker": "in the private sector",
    "private nonprofit wage and salary worker": "by a private nonprofit employer",
    "state government employee": "by state government",
    "federal government employee": "by the federal government",
    "local government employee": "by local government",
    "government wage and salary worker": "by the government",
    "self-employed": "as self-employed",
    "self-employed, incorporated": "as self-employed in an incorporated business",
    "self-employed, not incorporated": "as self-employed in an unincorporated business",
    "wage or salary worker": "as a wage and salary worker",
    "unpaid family worker": "without pay in a family business or farm",
    "armed forces": "in the armed forces",
}

# --------------------------------------------------------------------------------------------
# Background paragraph

EDUC_PHRASE = {
    "high school or less": "high school education or less",
    "high school diploma or GED": "a high school diploma or GED",
    "some college or associate degree": "some college or an associate degree",
    "bachelor's degree": "a bachelor's degree",
    "graduate or professional education": "graduate or professional education",
}
MARITAL_CLAUSE = {
    "married, spouse present": "are married, your spouse is present",
    "married, spouse absent": "are married, your spouse is absent",
    "separated": "are separated",
    "divorced": "are divorced",
    "widowed": "are widowed",
    "never married": "have never been married",
    "widowed or divorced": "are widowed or divorced",
}
HISPAN_SENTENCE = {
    "not Hispanic": "You are not Hispanic.",
    "Mexican origin": "You are of Mexican origin.",
    "Puerto Rican": "You are Puerto Rican.",
    "Cuban": "You are Cuban.",
    "Dominican": "You are Dominican.",
    "other Hispanic": "You are Hispanic, with another Hispanic origin.",
}
NATIVITY_CITIZEN_SENTENCE = {
    (
        "native-born",
        "U.S.-born citizen",
    ): "You were born in the United States and are a U.S. citizen.",
    ("native-born", "not a U.S. citizen"): "You are native-born and are not a U.S. citizen.",
    (
        "foreign-born",
        "U.S.-born citizen",
    ): "You were born outside the United States and are a U.S. citizen.",
    (
        "foreign-born",
        "naturalized citizen",
    ): "You were born outside the United States and are a naturalized U.S. citizen.",
    (
        "foreign-born",
        "not a U.S. citizen",
    ): "You were born outside the United States and are not a U.S. citizen.",
}
# labor_cps_ui's renderer knows four pairs (no native-born non-citizen).
UI_NATIVITY_CITIZEN_SENTENCE = {
    k: v for k, v in NATIVITY_CITIZEN_SENTENCE.items() if k != ("native-born", "not a U.S. citizen")
}
VETERAN_SENTENCE = {"not a veteran": "You are not a veteran.", "veteran": "You are a veteran."}
RACES = (
    "White",
    "Black",
    "American Indian",
    "Asian or Pacific Islander",
    "other race",
    "multiracial",
)
RELATES = (
    "reference person",
    "spouse",
    "child",
    "parent",
    "sibling",
    "grandchild",
    "other relative",
    "partner",
    "housemate or roommate",
    "foster child",
    "other nonrelative",
)
# Label sets a renderer checks (an unlisted value stops the official render).
CHECKED_VALUES: dict[str, tuple[str, ...]] = {
    "sex": ("man", "woman"),
    "race": RACES,
    "relate": RELATES,
    "region": ("Northeast", "Midwest", "South", "West"),
    "metro": ("metropolitan area", "non-metropolitan area"),
}


def household_sentence(famsize: int, nchild: int) -> str:
    people = f"{famsize} {'person' if famsize == 1 else 'people'}"
    head = f"There {'is' if famsize == 1 else 'are'} {people} in your household"
    if nchild == 0:
        return head + ", and you do not live with any of your own children."
    return head + f", including {nchild} of your own children."


@dataclass(frozen=True)
class Background:
    """How one task's renderer writes (and checks) the background paragraph."""

    task: str
    checked: frozenset[str] = frozenset({"sex", "race", "relate"})
    pairs: Mapping[tuple[str, str], str] = field(default_factory=lambda: NATIVITY_CITIZEN_SENTENCE)
    household: Callable[[int, int], str] = household_sentence
    and_you_live: bool = False  # retire: "You are married, ..., and you live in"

    def paragraph(self, row: Mapping[str, Any]) -> str:
        t = self.task
        for col in sorted(self.checked):
            value = text(row, col, t)
            if value not in CHECKED_VALUES[col]:
                raise DataError(
                    f"{t}: {col} {value!r} has no prompt wording (id {row.get('id')!r}); "
                    f"known: {list(CHECKED_VALUES[col])}"
                )
        age, famsize, nchild = (
            whole(row, "age", t),
            whole(row, "famsize", t),
            whole(row, "nchild", t),
        )
        educ = pick(EDUC_PHRASE, text(row, "educ", t), "educ", row, t)
        marital = pick(MARITAL_CLAUSE, text(row, "marst", t), "marst", row, t)
        joint = ", and you live" if self.and_you_live else ", and live"
        live = joint if "," in marital else " and live"
        location = (
            f"You {marital}{live} in {text(row, 'state', t)}, in a {text(row, 'metro', t)} "
            f"in the {text(row, 'region', t)}."
        )
        hispan, nativity = text(row, "hispan", t), text(row, "nativity", t)
        citizen, vetstat = text(row, "citizen", t), text(row, "vetstat", t)
        hispan_sentence = pick(HISPAN_SENTENCE, hispan, "hispan", row, t)
        veteran_sentence = pick(VETERAN_SENTENCE, vetstat, "vetstat", row, t)
        origin_sentence = pick(self.pairs, (nativity, citizen), "nativity/citizen", row, t)
        if (hispan, nativity, citizen, vetstat) == (
            "not Hispanic",
            "native-born",
            "U.S.-born citizen",
            "not a veteran",
        ):
            origin = (
                "You are not Hispanic, were born in the United States, are a U.S. citizen, "
                "and are not a veteran."
            )
        else:
            origin = f"{hispan_sentence} {origin_sentence} {veteran_sentence}"
        return (
            "Here is some background information about yourself and your household. "
            f"You are {article(age)} {age}-year-old {text(row, 'race', t)} {text(row, 'sex', t)} "
            f"with {educ}. {location} {self.household(famsize, nchild)} {origin}"
        )


def background_paragraph(row: Mapping[str, Any], task: str = "labor_cps_jobfind") -> str:
    """The jobfind / separation / displace background (sex, race and relate checked)."""
    return Background(task).paragraph(row)


# --------------------------------------------------------------------------------------------
# The macro paragraph


def macro_paragraph(row: Mapping[str, Any]) -> str:
    """The core macro paragraph, rendered once per distinct set of the 20 values (rows of one
    quarter share them)."""
    try:
        values = tuple(float(row[c]) for c in CORE_MACRO_COLUMNS)
    except (KeyError, TypeError, ValueError):
        return render_macro_paragraph(row)  # let the shared renderer name the problem
    # The signs join the key: 0.0 == -0.0 as cache keys, but `-0.00%` is not `0.00%`.
    return _macro_paragraph(values, tuple(math.copysign(1.0, v) for v in values))


@functools.lru_cache(maxsize=4096)
def _macro_paragraph(values: tuple[float, ...], _signs: tuple[float, ...]) -> str:
    return render_macro_paragraph(dict(zip(CORE_MACRO_COLUMNS, values, strict=True)))
