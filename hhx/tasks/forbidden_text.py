"""The model-facing text rules every prompt passes (spec 00_common section 4.7): forbidden words,
dates and placeholders, and month names only inside the current-month (or day) note.

hhx.tasks.prompting renders the notes with the calendar words defined here and runs
`check_forbidden` on every record (`check_prompt`).
"""

from __future__ import annotations

import re

from hhx.errors import ConfigError, DataError

MONTH_NAMES: tuple[str, ...] = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
WEEKDAYS: tuple[str, ...] = (
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
)
DOLLAR_CLAUSE = ", and that $ denotes amounts in U.S. dollars"


_MONTHS = "|".join(MONTH_NAMES)
FORBIDDEN_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "survey/respondent word",
        re.compile(r"\b(?:surveys?|surveyed|interviewed respondents?|respondents?)\b", re.I),
    ),
    ("panel word", re.compile(r"\b(?:panels?|panelists?|panel month)\b", re.I)),
    ("benchmark word", re.compile(r"\bbenchmarks?\b", re.I)),
    ("task-construction jargon", re.compile(r"\bParker-style\b", re.I)),
    ("dataset acronym", re.compile(r"\b(?:CPS|SCE|CEX|PSID|Census)\b")),
    (
        "survey name",
        re.compile(
            r"\b(?:Michigan Surveys? of Consumers|Survey of Consumer Expectations|"
            r"Current Population "
            r"Survey|Consumer Expenditures?(?: Survey)?|Panel Study of Income Dynamics)\b",
            re.I,
        ),
    ),
    (
        "named policy event",
        re.compile(r"\b(?:Economic Stimulus Payments?|federal income-tax rebates?)\b", re.I),
    ),
    ("absolute date", re.compile(r"\b\d{4}-\d{2}(?:-\d{2})?\b")),
    (
        "year range",
        re.compile(r"\b(?:19|20)\d{2}\s*(?:through|to|-|–|—)\s*(?:19|20)?\d{2}\b", re.I),
    ),
    (
        "calendar-year phrase",
        re.compile(
            r"\b(?:in|during|from|through|since|before|after|year|month)\s+(?:19|20)\d{2}\b", re.I
        ),
    ),
    ("month name outside the current-month note", re.compile(rf"\b(?:{_MONTHS})\b")),
    ("abbreviation qoq", re.compile(r"\bqoq\b", re.I)),
    ("Q-<n> lag label", re.compile(r"\bQ-\d+\b")),
    (
        "missing-value placeholder",
        re.compile(r"\b(?:unknown|not available|not reported|missing)\b", re.I),
    ),
    # No trailing \b: ")" is not a word character, so "job(s) " must still match.
    ("(s) plural placeholder", re.compile(r"\b(?:day|month|year|job)\(s\)", re.I)),
    ("'1 people'", re.compile(r"\b1 people\b", re.I)),
    ("'1 children'", re.compile(r"\b1 children\b", re.I)),
    (
        "survey-like phrase",
        re.compile(
            r"\b(?:you say|reported reason|retrospective report|numeracy classification|"
            r"work-status indicators)\b",
            re.I,
        ),
    ),
)
_MONTH_RULE = "month name outside the current-month note"

# Cheap necessary conditions, one per rule: a rule's regex can only match text that contains one
# of its literals (lower-cased literals are looked up in the lower-cased text, the others as is),
# or that the digit pattern finds. Rules without an entry always run. The regexes are what decide;
# this only skips the ones that cannot match (tests check it never skips a match).
_DIGITS4 = re.compile(r"\d{4}")
_PREFILTERS: dict[str, tuple[bool, tuple[str, ...]] | re.Pattern[str]] = {
    "survey/respondent word": (True, ("survey", "respondent")),
    "panel word": (True, ("panel",)),
    "benchmark word": (True, ("benchmark",)),
    "task-construction jargon": (True, ("parker-style",)),
    "dataset acronym": (False, ("CPS", "SCE", "CEX", "PSID", "Census")),
    "survey name": (True, ("michigan survey", "survey of consumer", "current population",
                           "consumer expenditure", "panel study")),
    "named policy event": (True, ("economic stimulus payment", "federal income-tax rebate")),
    "absolute date": _DIGITS4,
    "year range": _DIGITS4,
    "calendar-year phrase": _DIGITS4,
    "abbreviation qoq": (True, ("qoq",)),
    "Q-<n> lag label": (False, ("Q-",)),
    "missing-value placeholder": (True, ("unknown", "not available", "not reported",
                                         "missing")),
    "(s) plural placeholder": (True, ("(s)",)),
    "'1 people'": (True, ("1 people",)),
    "'1 children'": (True, ("1 children",)),
    "survey-like phrase": (True, ("you say", "reported reason", "retrospective report",
                                  "numeracy classification", "work-status indicators")),
}


def _may_match(rule: str, text: str, lower: str | None) -> bool:
    """`lower` is the lower-cased text when it is ASCII, else None: Unicode case folding lets
    e.g. the long s match "s" under re.IGNORECASE, so non-ASCII text runs every folded rule."""
    pre = _PREFILTERS.get(rule)
    if pre is None:
        return True
    if isinstance(pre, re.Pattern):
        return pre.search(text) is not None
    folded, literals = pre
    if folded and lower is None:
        return True
    haystack = (lower or "") if folded else text
    return any(lit in haystack for lit in literals)


def _note_pattern(month: str) -> re.Pattern[str]:
    m = re.escape(month)
    return re.compile(
        rf"Note that the current month is {m}(?:{re.escape(DOLLAR_CLAUSE)})?\."
        rf"|Note that today is (?:{'|'.join(WEEKDAYS)}), (?:[1-9]|[12]\d|3[01])(?:st|nd|rd|th) "
        rf"{m}{re.escape(DOLLAR_CLAUSE)}\."
    )


ANY_NOTE_PATTERN = re.compile(
    rf"Note that the current month is (?:{_MONTHS})(?:{re.escape(DOLLAR_CLAUSE)})?\."
    rf"|Note that today is (?:{'|'.join(WEEKDAYS)}), (?:[1-9]|[12]\d|3[01])(?:st|nd|rd|th) "
    rf"(?:{_MONTHS}){re.escape(DOLLAR_CLAUSE)}\."
)


def check_forbidden(text: str, *, allowed_month: str | None = None, field: str = "prompt") -> None:
    """Raise DataError naming the first rule the text breaks and the offending snippet.

    Month names are allowed only inside a current-month (or day) note naming `allowed_month`.
    """
    if allowed_month is not None and allowed_month not in MONTH_NAMES:
        raise ConfigError(f"allowed_month {allowed_month!r} is not an English month name")
    lower = text.lower() if text.isascii() else None
    for rule, pattern in FORBIDDEN_RULES:
        if not _may_match(rule, text, lower):
            continue
        searched = text
        if rule == _MONTH_RULE and allowed_month is not None:
            searched = _note_pattern(allowed_month).sub("", text)
        match = pattern.search(searched)
        if match:
            lo, hi = max(0, match.start() - 40), min(len(searched), match.end() + 40)
            raise DataError(
                f"forbidden text in {field} ({rule}): {match.group(0)!r} in {searched[lo:hi]!r}"
            )
