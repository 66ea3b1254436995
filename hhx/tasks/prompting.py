"""Shared prompt-rendering toolkit for the task renderers, and the checks every prompt passes
(the forbidden-text rules: hhx.tasks.forbidden_text).

Facts: shared/spec/00_common.md sections 3.4 and 4.3-4.7. Wording of the shared sentences
(macro paragraphs, month note, response structure, closing sentences) is the reference's, so
prompts rebuilt by hhx match the official release text. The numbers formatted here are those the
official renderer reads back from the published table (`hhx.tasks.build` hands every renderer
the values of pandas 2.2.3's converter, `hhx.bench.csvnum`): `5.1049999999999995` shows `5.11`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from hhx.config import TargetType, TaskConfig
from hhx.errors import ConfigError, DataError
from hhx.tasks.contract import prompt_rules
from hhx.tasks.forbidden_text import (
    ANY_NOTE_PATTERN,
    DOLLAR_CLAUSE,
    MONTH_NAMES,
    WEEKDAYS,
    check_forbidden,
)
from hhx.tasks.registry import as_task

DOLLAR_NOTE = "Note that $ denotes amounts in U.S. dollars."

# Personas shared across tasks (section 4.3); other personas live in their task renderers.
HOUSING_SYSTEM_PROMPT = (
    "You are an American adult making decisions about housing and residential location."
)
LABOR_SYSTEM_PROMPT = (
    "You are an American person answering questions about your work, job search, "
    "and labor-force situation."
)
# Which tasks use the housing persona, go without a month note, or end differently is each
# task's own (its builder's PROMPT_RULES, hhx.tasks.contract.PromptRules).

# --------------------------------------------------------------------------------------------
# Small formatting helpers


def article(age: int) -> str:
    """Indefinite article before a spoken age: "an" for 8, 11, 18 and 80-89, else "a"."""
    age = int(age)
    return "an" if age in (8, 11, 18) or 80 <= age <= 89 else "a"


def month_name(month: int) -> str:
    if not 1 <= int(month) <= 12:
        raise DataError(f"month {month!r} is not 1-12")
    return MONTH_NAMES[int(month) - 1]


def month_note(month: int, currency: bool) -> str:
    """The one current-month sentence; with `currency` it also says what $ denotes."""
    return f"Note that the current month is {month_name(month)}{DOLLAR_CLAUSE if currency else ''}."


def _ordinal(day: int) -> str:
    if 11 <= day % 100 <= 13:
        return f"{day}th"
    return f"{day}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th') }"


def day_note(weekday: str, day: int, month: int) -> str:
    """Day-level note of the daily-diary task: weekday, ordinal day, month, and the $ clause."""
    if weekday not in WEEKDAYS:
        raise DataError(f"weekday {weekday!r} is not one of {', '.join(WEEKDAYS)}")
    if not 1 <= int(day) <= 31:
        raise DataError(f"day {day!r} is not 1-31")
    return f"Note that today is {weekday}, {_ordinal(int(day))} {month_name(month)}{DOLLAR_CLAUSE}."


def format_dollars(x: float, decimals: int = 0) -> str:
    """`$1,234` / `-$1,234` (0 or 2 decimals); never `$-`. Rounds as Python's round()."""
    if decimals not in (0, 2):
        raise ConfigError(f"dollar amounts use 0 or 2 decimals, not {decimals}")
    value = float(x)
    if not math.isfinite(value):
        raise DataError(f"cannot render dollar amount {x!r}")
    rounded = round(value, decimals)
    body = f"{abs(rounded):,.{decimals}f}"
    return f"-${body}" if rounded < 0 else f"${body}"


def join_list(items: Iterable[str]) -> str:
    """ "a", "a and b", "a, b, and c" (serial comma)."""
    parts = [str(i) for i in items]
    if not parts:
        raise DataError("join_list needs at least one item")
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return f"{parts[0]} and {parts[1]}"
    return ", ".join(parts[:-1]) + f", and {parts[-1]}"


_NUMBER_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)


def _count_word(n: int) -> str:
    return _NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else str(n)


# --------------------------------------------------------------------------------------------
# Macro paragraphs (section 3.4)


def _value(row: Mapping[str, Any], column: str) -> float:
    try:
        value = row[column]
    except KeyError:
        raise DataError(f"cannot render the macro paragraph: column {column!r} is absent") from None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise DataError(
            f"cannot render the macro paragraph: {column} is missing ({value!r}); "
            "attach macro context with hhx.surveys.macro.fred_qd.attach_macro_context"
        )
    return number


def _present(row: Mapping[str, Any], column: str) -> bool:
    try:
        return math.isfinite(float(row[column]))
    except (KeyError, TypeError, ValueError):
        return False


def _path(row: Mapping[str, Any], prefix: str, suffix: str = "") -> str:
    """Four completed quarters oldest -> newest (lag4, lag3, lag2, lag1), `x.xx%` each."""
    return join_list(f"{_value(row, f'{prefix}_lag{k}{suffix}'):.2f}%" for k in (4, 3, 2, 1))


def render_macro_paragraph(row: Mapping[str, Any], *, suffix: str = "") -> str:
    """The core macro paragraph: exactly the 20 CORE values, no dates or quarter labels.

    `suffix` reads suffixed columns (e.g. `_m12` for the context at an earlier interview).
    """

    def five(col: str) -> str:
        return f"{_value(row, col + suffix):.2f}%"

    return (
        "You are also aware of recent national economic conditions. Over the four most recently "
        "completed calendar quarters, listed from oldest to most recent, U.S. real GDP changed by "
        f"{_path(row, 'gdp_growth_qoq', suffix)} quarter over quarter; the unemployment rate was "
        f"{_path(row, 'unemployment_rate', suffix)}; overall consumer prices changed by "
        f"{_path(row, 'headline_cpi_qoq', suffix)} quarter over quarter; and the effective federal "
        f"funds rate was {_path(row, 'fedfunds_rate', suffix)}. Over the five years ending in the "
        "most recently completed quarter, compound average quarterly real GDP growth was "
        f"{five('gdp_growth_qoq_5y_compound')}, the average unemployment rate was "
        f"{five('unemployment_rate_5y_mean')}, compound average quarterly CPI inflation was "
        f"{five('headline_cpi_qoq_5y_compound')}, and the average effective federal funds rate was "
        f"{five('fedfunds_rate_5y_mean')}."
    )


CATEGORY_CPI_LABELS: tuple[tuple[str, str], ...] = (
    ("cpi_food_beverages_qoq", "food and beverages"),
    ("cpi_housing_qoq", "housing"),
    ("cpi_apparel_qoq", "apparel"),
    ("cpi_transportation_qoq", "transportation"),
    ("cpi_medical_care_qoq", "medical care"),
    ("cpi_recreation_qoq", "recreation"),
    ("cpi_education_communication_qoq", "education and communication"),
    ("cpi_other_goods_services_qoq", "other goods and services"),
)


def render_category_cpi_paragraph(row: Mapping[str, Any]) -> str | None:
    """Eight CPI groups' four-quarter paths; None if any of the 32 lag values is missing.
    The five-year sentence is added only when all eight five-year values are present."""
    lags = [f"{p}_lag{k}" for p, _ in CATEGORY_CPI_LABELS for k in range(1, 5)]
    if not all(_present(row, c) for c in lags):
        return None
    paths = [
        f"{_path(row, p)} quarter over quarter for {label}" for p, label in CATEGORY_CPI_LABELS
    ]
    text = (
        "You are also aware of changes in prices for specific spending categories. Over the same "
        "four quarters, listed from oldest to most recent, prices changed by "
        + "; ".join(paths[:-1])
        + f"; and {paths[-1]}."
    )
    fives = [f"{p}_5y_compound" for p, _ in CATEGORY_CPI_LABELS]
    if not all(_present(row, c) for c in fives):
        return text
    refs = [
        f"{_value(row, f'{p}_5y_compound'):.2f}% for {label}" for p, label in CATEGORY_CPI_LABELS
    ]
    return (
        text
        + " Over the same five-year period, compound average quarterly inflation was "
        + join_list(refs)
        + "."
    )


def render_asset_paragraph(row: Mapping[str, Any]) -> str:
    """House prices, S&P 500 and the 30-year mortgage rate; the five-year sentence only when
    the house-price five-year value is present."""
    text = (
        "You are also aware of recent financial and housing-market conditions. Over the same four "
        "completed quarters, listed from oldest to most recent, U.S. house prices changed by "
        f"{_path(row, 'house_price_growth_qoq')} quarter over quarter; the S&P 500 changed by "
        f"{_path(row, 'sp500_growth_qoq')} quarter over quarter; and the average 30-year mortgage "
        f"rate was {_path(row, 'mortgage30us_rate')}."
    )
    if not _present(row, "house_price_growth_qoq_5y_compound"):
        return text
    return (
        text + " Over the same five-year period, compound average quarterly house-price growth was "
        f"{_value(row, 'house_price_growth_qoq_5y_compound'):.2f}%, compound average quarterly "
        f"S&P 500 growth was {_value(row, 'sp500_growth_qoq_5y_compound'):.2f}%, and the average "
        f"30-year mortgage rate was {_value(row, 'mortgage30us_rate_5y_mean'):.2f}%."
    )


# --------------------------------------------------------------------------------------------
# Response instruction (section 4.5)

CLOSING_KEYS_TEXT = "Do not include keys or explanatory text."  # (a), the default
CLOSING_TEXT_ONLY = "Do not include explanatory text."  # (b)
CLOSING_NO_DOLLAR = "Do not include a dollar sign, commas, keys, or explanatory text."  # (c)
CLOSING_NO_DOLLARS = "Do not include dollar signs, commas, keys, or explanatory text."  # (c')
CLOSING_ONE_INTEGER = (  # (d)
    "Return only a valid JSON array containing exactly one integer, with no explanatory text."
)


def _answer_count(task: TaskConfig) -> int:
    n = len(task.distributions) if task.target_type is TargetType.distribution else len(task.fields)
    if n == 0:
        raise ConfigError(f"task {task.name}: no fields or distributions to answer")
    return n


def _tokens(
    letter: str, n: int, prefix: str = "", long_from: int = 7, ellipsis_head: int = 2
) -> str:
    """Placeholder list; long ones are shortened as the registry writes them: arrays of up to
    six are listed in full, twelve as `v_1, v_2, ..., v_12`, ten-bin vectors as
    `p_1_1, ..., p_1_10`."""
    names = [f"{letter}_{prefix}{i}" for i in range(1, n + 1)]
    if n >= long_from:
        names = [*names[:ellipsis_head], "...", names[-1]]
    return ", ".join(names)


def skeleton(task: TaskConfig) -> str:
    """The placeholder array: `["s_1"]`, `[v_1, v_2, v_3]`, `[v_1, v_2, ..., v_12]`,
    `[[p_1_1, p_1_2]]`, `[[p_1_1, ..., p_1_10], ...]`."""
    task = as_task(task)
    n = _answer_count(task)
    if task.target_type is TargetType.numeric:
        return f"[{_tokens('v', n)}]"
    if task.target_type is TargetType.categorical:
        names = [f'"s_{i}"' for i in range(1, n + 1)]
        if n >= 7:
            names = [*names[:2], "...", names[-1]]
        return f"[{', '.join(names)}]"
    vectors = [
        f"[{_tokens('p', len(d.labels), prefix=f'{i}_', long_from=5, ellipsis_head=1)}]"
        for i, d in enumerate(task.distributions, start=1)
    ]
    return f"[{', '.join(vectors)}]"


def replacement_instruction(task: TaskConfig) -> str:
    task = as_task(task)
    own = prompt_rules(task).replacement
    if own is not None:
        return own
    return {
        TargetType.numeric: "Replace every v placeholder with a single number.",
        TargetType.categorical: "Replace every s placeholder with one of the permitted strings.",
        TargetType.distribution: "Replace every p placeholder with a number from 0 to 1.",
    }[task.target_type]


def closing_sentence(task: TaskConfig) -> str:
    """The task's own variant (its PROMPT_RULES), else: single-field categorical tasks use (b);
    default (a)."""
    task = as_task(task)
    own = prompt_rules(task).closing
    if own is not None:
        return own
    if task.target_type is TargetType.categorical and len(task.fields) == 1:
        return CLOSING_TEXT_ONLY
    return CLOSING_KEYS_TEXT


def response_insertion(task: TaskConfig) -> str:
    """Lead-in + skeleton + ". " + replacement instruction (checked to appear exactly once)."""
    task = as_task(task)
    return (
        f"Your output must follow this exact array structure: {skeleton(task)}. "
        f"{replacement_instruction(task)}"
    )


def _phrase(name: str) -> str:
    return name.replace("_", " ").strip()


def _quoted(labels: Iterable[str]) -> str:
    return ", ".join(f'"{label}"' for label in labels)


def response_lead(task: TaskConfig) -> str:
    """Task-specific first sentences: what the array holds, in which order, which values."""
    task = as_task(task)
    n = _answer_count(task)
    if task.target_type is TargetType.numeric:
        names = [_phrase(f.name) for f in task.fields]
        if n == 1:
            return f"Return exactly one valid JSON array containing one number: the {names[0]}."
        return (
            f"Return exactly one valid JSON array containing {_count_word(n)} numbers, in this "
            f"order: {'; '.join(names)}."
        )
    if task.target_type is TargetType.categorical:
        fields = task.fields
        if n == 1:
            return (
                "Return exactly one valid JSON array containing one string, using one of: "
                f"{_quoted(fields[0].labels or [])}."
            )
        head = (
            f"Return exactly one valid JSON array containing {_count_word(n)} strings, in this "
            f"order: {'; '.join(_phrase(f.name) for f in fields)}."
        )
        label_sets = {tuple(f.labels or []) for f in fields}
        if len(label_sets) == 1:
            return f"{head} Each string must be one of: {_quoted(fields[0].labels or [])}."
        per_field = "; ".join(
            f"for {_phrase(f.name)}, one of: {_quoted(f.labels or [])}" for f in fields
        )
        return f"{head} Use {per_field}."
    dists = task.distributions
    kinds = "two-element probability" if all(len(d.labels) == 2 for d in dists) else "probability"
    if n == 1:
        head = (
            f"Return only a valid JSON array containing exactly one {kinds} distribution "
            f"for {_phrase(dists[0].name)}."
        )
    else:
        head = (
            f"Return only a valid JSON array containing exactly {_count_word(n)} {kinds} "
            f"distributions, in this order: {'; '.join(_phrase(d.name) for d in dists)}."
        )
    parts = [head]
    if any(len(d.labels) == 2 for d in dists):
        which = "each two-element distribution" if n > 1 else "the distribution"
        parts.append(f"Within {which}, use this order: event does not occur, event occurs.")
    for d in dists:
        if len(d.labels) != 2:
            parts.append(
                f"The {_count_word(len(d.labels))}-element distribution for {_phrase(d.name)} "
                "gives, in order, the probabilities of: "
                f"{'; '.join(_phrase(lb) for lb in d.labels)}."
            )
    parts.append(
        "Express each probability as a number from 0 to 1. Each distribution must sum to 1."
    )
    return " ".join(parts)


def response_instruction(task: TaskConfig, *, lead: str | None = None) -> str:
    """The full last paragraph: lead, then insertion + " " + closing (closing first where the
    task's rules say so). `lead` replaces the generated lead (e.g. a renderer's exact wording)."""
    task = as_task(task)
    first = (lead if lead is not None else response_lead(task)).strip()
    ending = response_ending(task)
    return f"{first} {ending}" if first else ending


def response_ending(task: TaskConfig) -> str:
    """Structure insertion and closing sentence, in the task's order."""
    insertion, closing = response_insertion(task), closing_sentence(task)
    if prompt_rules(task).closing_first:
        return f"{closing} {insertion}"
    return f"{insertion} {closing}"


def check_response_contract(user: str, task: TaskConfig) -> None:
    """Insertion exactly once, closing sentence exactly once, and the prompt ends with them."""
    task = as_task(task)
    insertion, closing = response_insertion(task), closing_sentence(task)
    ending = response_ending(task)
    if user.count(insertion) != 1:
        raise DataError(
            f"task {task.name}: the response structure {insertion!r} must appear exactly once "
            f"(found {user.count(insertion)}); end the prompt with response_instruction(task)"
        )
    if user.count(closing) != 1:
        raise DataError(
            f"task {task.name}: the closing sentence {closing!r} must appear exactly once "
            f"(found {user.count(closing)})"
        )
    if not user.endswith(ending):
        raise DataError(
            f"task {task.name}: the prompt must end with {ending[-80:]!r}; "
            f"it ends with {user[-80:]!r}"
        )


def check_month_note(user: str, task: TaskConfig, month: int | None) -> None:
    """Section 4.6: the note contract for the task's `prompt_month` rule."""
    task = as_task(task)
    notes = ANY_NOTE_PATTERN.findall(user)
    if not prompt_rules(task).month_note:
        standalone = f"\n\n{DOLLAR_NOTE}\n\n" in f"\n\n{user}\n\n"
        if notes or user.count(DOLLAR_NOTE) != 1 or standalone:
            raise DataError(
                f"task {task.name}: expected no month note and exactly one dollar note embedded in "
                f"a paragraph (found {len(notes)} month notes, "
                f"{user.count(DOLLAR_NOTE)} dollar notes)"
            )
    elif task.prompt_month is not None:
        fixed = task.prompt_month.fixed_month
        if fixed is None and month is None:
            raise DataError(
                f"task {task.name}: the month of `time` is needed to check the month note"
            )
        expected = month_note(
            fixed if fixed is not None else int(month),  # type: ignore[arg-type]  # set: above
            task.prompt_month.currency
        )
        if notes != [expected]:
            raise DataError(
                f"task {task.name}: expected exactly one note {expected!r}, found {notes}"
            )
        if DOLLAR_NOTE in user:
            raise DataError(f"task {task.name}: standalone dollar note next to the month note")
    if "$-" in user:
        i = user.index("$-")
        raise DataError(
            f"task {task.name}: invalid dollar notation in {user[max(0, i - 30) : i + 30]!r}"
        )


def check_prompt(system: str, user: str, task: TaskConfig, month: int | None) -> None:
    """Every check a rendered record must pass: forbidden text in both messages, the month
    note contract, the housing persona, and the response contract. `month` = month of `time`."""
    task = as_task(task)
    if not system.strip() or not user.strip():
        raise DataError(f"task {task.name}: empty system or user prompt")
    fixed = task.prompt_month.fixed_month if task.prompt_month is not None else None
    shown = fixed if fixed is not None else month
    check_forbidden(system, field=f"{task.name} system prompt")
    check_forbidden(
        user,
        allowed_month=month_name(shown) if shown is not None else None,
        field=f"{task.name} user prompt",
    )
    check_month_note(user, task, month)
    if prompt_rules(task).housing_persona and system != HOUSING_SYSTEM_PROMPT:
        raise DataError(
            f"task {task.name}: housing tasks use the shared persona {HOUSING_SYSTEM_PROMPT!r}"
        )
    check_response_contract(user, task)
