"""The shared prompt toolkit: formatting helpers, macro paragraphs, response contract, checks."""

from __future__ import annotations

import math
import re

import pytest

from hhx.config import (
    DistributionConfig,
    FieldConfig,
    Mode,
    PromptMonthConfig,
    Shape,
    TargetType,
    TaskConfig,
)
from hhx.errors import DataError
from hhx.tasks.forbidden_text import check_forbidden
from hhx.tasks.prompting import (
    DOLLAR_NOTE,
    HOUSING_SYSTEM_PROMPT,
    LABOR_SYSTEM_PROMPT,
    article,
    check_prompt,
    check_response_contract,
    format_dollars,
    join_list,
    month_note,
    render_asset_paragraph,
    render_category_cpi_paragraph,
    render_macro_paragraph,
    response_instruction,
    skeleton,
)
from hhx.tasks.registry import load_task, task_names

CORE_PREFIXES = ["gdp_growth_qoq", "unemployment_rate", "headline_cpi_qoq", "fedfunds_rate"]
FIVE = {
    "gdp_growth_qoq": "gdp_growth_qoq_5y_compound",
    "unemployment_rate": "unemployment_rate_5y_mean",
    "headline_cpi_qoq": "headline_cpi_qoq_5y_compound",
    "fedfunds_rate": "fedfunds_rate_5y_mean",
}


def macro_row() -> dict[str, float]:
    """Distinct values per series and lag: series s, lag k -> s + k/10 + 0.004 (rounds to .x0)."""
    row: dict[str, float] = {}
    for s, prefix in enumerate(CORE_PREFIXES, start=1):
        for k in range(1, 5):
            row[f"{prefix}_lag{k}"] = s + k / 10 + 0.004
        row[FIVE[prefix]] = s * 11.111
    return row


def numeric_task(name: str = "cons_cex_total", n: int = 3) -> TaskConfig:
    # A registered name brings its builder: the task's prompt rules are its builder's.
    return TaskConfig(
        name=name,
        builder=load_task(name).builder if name in task_names() else None,
        topic="Consumption and saving",
        mode=Mode.baseline,
        survey="cex",
        target_type=TargetType.numeric,
        shape=Shape.array,
        fields=[FieldConfig(name=f"amount_{i}") for i in range(1, n + 1)],
        prompt_month=PromptMonthConfig(fixed_month=None, currency=True),
    )


BINS = [
    "inflation_ge_12",
    "inflation_8_12",
    "inflation_4_8",
    "inflation_2_4",
    "inflation_0_2",
    "deflation_0_2",
    "deflation_2_4",
    "deflation_4_8",
    "deflation_8_12",
    "deflation_ge_12",
]


def distribution_task() -> TaskConfig:
    binary = [
        DistributionConfig(name=n, labels=["not_higher", "higher"], columns=[n])
        for n in ["unemployment_higher", "savings_rate_higher", "stock_prices_higher"]
    ]
    return TaskConfig(
        name="macro_sce_uncertainty",
        topic="Macroeconomic conditions",
        mode=Mode.baseline,
        survey="sce",
        target_type=TargetType.distribution,
        shape=Shape.distribution_array,
        distributions=[
            DistributionConfig(name="inflation_1y", labels=BINS, columns=BINS),
            DistributionConfig(name="inflation_2_to_3y", labels=BINS, columns=BINS),
            *binary,
        ],
        prompt_month=PromptMonthConfig(fixed_month=None, currency=True),
    )


def policy_task() -> TaskConfig:
    impact = [
        "very_negative",
        "somewhat_negative",
        "no_impact",
        "somewhat_positive",
        "very_positive",
    ]
    return TaskConfig(
        name="income_sce_policy",
        topic="Income dynamics and household resources",
        mode=Mode.policy,
        survey="sce",
        target_type=TargetType.categorical,
        shape=Shape.array,
        fields=[
            FieldConfig(name=n, labels=impact)
            for n in [
                "welfare_benefits",
                "unemployment_benefits",
                "payroll_tax_rate",
                "average_income_tax_rate",
            ]
        ],
        prompt_month=PromptMonthConfig(fixed_month=None, currency=True),
    )


# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("age", "expected"),
    [
        (8, "an"),
        (11, "an"),
        (18, "an"),
        (80, "an"),
        (89, "an"),
        (7, "a"),
        (28, "a"),
        (90, "a"),
        (79, "a"),
        (1, "a"),
        (81, "an"),
    ],
)
def test_article(age, expected):
    assert article(age) == expected


def test_month_note():
    plain = month_note(3, currency=False)
    assert "March" in plain and "$" not in plain and plain.endswith(".")
    money = month_note(11, currency=True)
    assert "November" in money and "$ denotes amounts in U.S. dollars" in money
    assert money.count(".") >= 1 and money.startswith("Note that")
    with pytest.raises(DataError):
        month_note(13, currency=True)


def test_format_dollars_and_join_list():
    assert format_dollars(1234) == "$1,234"
    assert format_dollars(-1234.4) == "-$1,234"
    assert format_dollars(1234567.891, decimals=2) == "$1,234,567.89"
    assert format_dollars(-0.3) == "$0"  # rounds to zero: no sign, never "$-"
    assert format_dollars(-5.5, decimals=2) == "-$5.50"
    with pytest.raises(DataError):
        format_dollars(math.nan)
    assert join_list(["a"]) == "a"
    assert join_list(["a", "b"]) == "a and b"
    assert join_list(["a", "b", "c"]) == "a, b, and c"


def test_macro_paragraph_lists_oldest_to_newest_with_two_decimals():
    row = macro_row()
    text = render_macro_paragraph(row)
    # Series s: lag4..lag1 = s.40, s.30, s.20, s.10 (the .004 rounds away).
    for s in range(1, 5):
        assert f"{s}.40%, {s}.30%, {s}.20%, and {s}.10%" in text
    for s in range(1, 5):
        assert f"{s * 11.111:.2f}%" in text
    numbers = re.findall(r"-?\d+\.\d+%", text)
    assert len(numbers) == 20 and all(re.fullmatch(r"-?\d+\.\d{2}%", n) for n in numbers)
    assert "qoq" not in text.lower() and not re.search(r"\b(?:19|20)\d{2}\b|Q[1-4]\b", text)
    check_forbidden(text)
    row["fedfunds_rate_lag3"] = float("nan")
    with pytest.raises(DataError, match="fedfunds_rate_lag3"):
        render_macro_paragraph(row)
    del row["fedfunds_rate_lag3"]
    with pytest.raises(DataError, match="fedfunds_rate_lag3"):
        render_macro_paragraph(row)
    suffixed = {f"{k}_m12": v for k, v in macro_row().items()}
    assert render_macro_paragraph(suffixed, suffix="_m12") == render_macro_paragraph(macro_row())


def test_category_and_asset_paragraphs():
    groups = [
        "food_beverages",
        "housing",
        "apparel",
        "transportation",
        "medical_care",
        "recreation",
        "education_communication",
        "other_goods_services",
    ]
    row = {}
    for g in groups:
        for k in range(1, 5):
            row[f"cpi_{g}_qoq_lag{k}"] = k / 100
        row[f"cpi_{g}_qoq_5y_compound"] = 0.5
    full = render_category_cpi_paragraph(row)
    assert (
        full is not None
        and "0.04%, 0.03%, 0.02%, and 0.01% quarter over quarter for housing" in full
    )
    assert "five-year" in full and full.count("0.50%") == 8
    row["cpi_recreation_qoq_5y_compound"] = float("nan")
    assert "five-year" not in render_category_cpi_paragraph(row)
    row["cpi_apparel_qoq_lag2"] = None
    assert render_category_cpi_paragraph(row) is None

    assets = {}
    for p in ["house_price_growth_qoq", "sp500_growth_qoq", "mortgage30us_rate"]:
        for k in range(1, 5):
            assets[f"{p}_lag{k}"] = 10 - k
    assets.update(
        house_price_growth_qoq_5y_compound=1.234,
        sp500_growth_qoq_5y_compound=2.0,
        mortgage30us_rate_5y_mean=6.0,
    )
    text = render_asset_paragraph(assets)
    assert "6.00%, 7.00%, 8.00%, and 9.00%" in text and "1.23%" in text
    assets["house_price_growth_qoq_5y_compound"] = float("nan")
    assert "five-year" not in render_asset_paragraph(assets)
    check_forbidden(text + " " + full)


# --------------------------------------------------------------------------------------------
# Response instruction


def test_skeletons_follow_the_registry_forms():
    assert skeleton(numeric_task(n=1)) == "[v_1]"
    assert skeleton(numeric_task(n=3)) == "[v_1, v_2, v_3]"
    assert skeleton(numeric_task(n=6)) == "[v_1, v_2, v_3, v_4, v_5, v_6]"
    assert skeleton(numeric_task(n=12)) == "[v_1, v_2, ..., v_12]"
    assert skeleton(load_task("labor_cps_jobfind")) == '["s_1"]'
    assert skeleton(policy_task()) == '["s_1", "s_2", "s_3", "s_4"]'
    assert skeleton(distribution_task()) == (
        "[[p_1_1, ..., p_1_10], [p_2_1, ..., p_2_10], [p_3_1, p_3_2], [p_4_1, p_4_2], "
        "[p_5_1, p_5_2]]"
    )


@pytest.mark.parametrize(
    "task",
    [numeric_task(), load_task("labor_cps_jobfind"), policy_task(), distribution_task()],
    ids=["numeric", "categorical", "categorical4", "distribution"],
)
def test_response_instruction_passes_contract(task):
    instruction = response_instruction(task)
    user = "Some background.\n\n" + instruction
    check_response_contract(user, task)
    check_forbidden(instruction)
    with pytest.raises(DataError, match="exactly once"):
        check_response_contract(instruction + "\n\n" + instruction, task)
    with pytest.raises(DataError, match="must end with"):
        check_response_contract(user + " Thanks.", task)


def test_response_instruction_content():
    cat = response_instruction(load_task("labor_cps_jobfind"))
    assert '"employed", "unemployed", "not_in_labor_force"' in cat
    assert cat.endswith(
        'Your output must follow this exact array structure: ["s_1"]. Replace every s '
        "placeholder with one of the permitted strings. Do not include explanatory text."
    )
    num = response_instruction(numeric_task())
    assert "three numbers, in this order: amount 1; amount 2; amount 3." in num
    assert num.endswith("Do not include keys or explanatory text.")
    dist = response_instruction(distribution_task())
    assert "five probability distributions" in dist
    assert "event does not occur, event occurs" in dist and "sum to 1" in dist
    pol = response_instruction(policy_task())
    assert pol.endswith("Do not include keys or explanatory text.")  # variant (a)


def test_closing_variants_and_wealth_order():
    growth = response_instruction(numeric_task("cons_sce_growth", 1))
    assert growth.endswith("single number. Do not include explanatory text.")
    jobloss = response_instruction(numeric_task("cons_psid_jobloss", 1))
    assert jobloss.endswith(
        "[v_1]. Replace v_1 with one number. Do not include a dollar sign, commas, keys, or "
        "explanatory text."
    )
    added = response_instruction(numeric_task("labor_psid_addedworker", 4))
    assert added.endswith("Do not include dollar signs, commas, keys, or explanatory text.")
    wealth_task = numeric_task("cons_psid_wealth", 1)
    wealth = response_instruction(wealth_task)
    assert wealth.endswith(
        "Return only a valid JSON array containing exactly one integer, with no explanatory "
        "text. Your output must follow this exact array structure: [v_1]. Replace every v "
        "placeholder with a single number."
    )
    check_response_contract(wealth, wealth_task)
    # The usual order is wrong for this task.
    with pytest.raises(DataError):
        check_response_contract(
            response_instruction(numeric_task("cons_cex_total", 1)), wealth_task
        )
    custom = response_instruction(numeric_task(), lead="Give three amounts.")
    assert custom.startswith("Give three amounts. Your output must follow")


# --------------------------------------------------------------------------------------------
# Forbidden text and month notes

POSITIVES = [
    ("survey/respondent", "Answer as a survey respondent would."),
    ("panel", "You joined the panel last spring."),
    ("benchmark", "This is a benchmark question."),
    ("jargon", "Parker-style spending was high."),
    ("acronym", "Data come from the CPS."),
    ("acronym", "As recorded by the Census."),
    ("survey name", "the Survey of Consumer Expectations asks"),
    ("survey name", "the Michigan Surveys of Consumers"),
    ("survey name", "the Consumer Expenditure Survey diary"),
    ("survey name", "the Panel Study of Income Dynamics"),
    ("policy event", "You received an Economic Stimulus Payment."),
    ("policy event", "the federal income-tax rebate arrived"),
    ("absolute date", "on 2019-03-01 you"),
    ("absolute date", "in 2019-03 you"),
    ("year range", "between 1990 to 1995 you"),
    ("year range", "over 2008-09 you"),
    ("calendar year", "since 2001 you have"),
    ("calendar year", "during 1998 you"),
    ("month name", "Last March you moved."),
    ("qoq", "GDP qoq growth was 1%."),
    ("Q-n", "At Q-1 income was high."),
    ("placeholder", "Your income is unknown."),
    ("placeholder", "Education: not reported."),
    ("placeholder", "Age missing."),
    ("(s) plural", "You worked 3 job(s) last week."),
    ("(s) plural", "for 2 day(s)."),
    ("1 people", "There are 1 people in your household."),
    ("1 children", "You have 1 children."),
    ("phrase", "What you say matters."),
    ("phrase", "The reported reason was a layoff."),
    ("phrase", "by retrospective report"),
    ("phrase", "Your numeracy classification is high."),
    ("phrase", "Your work-status indicators show"),
]


@pytest.mark.parametrize(("rule", "text"), POSITIVES, ids=[f"{r}:{t[:20]}" for r, t in POSITIVES])
def test_forbidden_rules_catch_examples(rule, text):
    with pytest.raises(DataError, match="forbidden text") as err:
        check_forbidden(text)
    assert "\n" not in str(err.value)


def clean_prompt(month: int = 3) -> tuple[str, str]:
    task = load_task("labor_cps_jobfind")
    user = "\n\n".join(
        [
            "Here is some background information about yourself and your household. You are "
            f"{article(84)} 84-year-old White man with a bachelor's degree. There are 2 people "
            "in your household, including 1 of your own children. You may move.",
            "Here is your current and recent labor-market situation. "
            f"{month_note(month, currency=False)} You have been unemployed for 12 weeks. "
            f"You earned {format_dollars(-2500)} in the last 12 months and your savings are "
            f"{format_dollars(980)}.",
            render_macro_paragraph(macro_row()),
            "Next month, what will be your work status?",
            response_instruction(task),
        ]
    )
    return LABOR_SYSTEM_PROMPT, user


def test_clean_prompt_passes_all_checks():
    system, user = clean_prompt(3)
    check_forbidden(user, allowed_month="March")
    check_prompt(system, user, load_task("labor_cps_jobfind"), month=3)


def test_month_names_allowed_only_inside_the_note():
    note = month_note(3, currency=True)
    check_forbidden(f"Hello. {note} Bye.", allowed_month="March")
    with pytest.raises(DataError, match="month name"):
        check_forbidden(f"Hello. {note} Bye.")  # no month allowed
    with pytest.raises(DataError, match="month name"):
        check_forbidden(f"{note} It rained in March.", allowed_month="March")
    with pytest.raises(DataError, match="month name"):
        check_forbidden(month_note(4, currency=True), allowed_month="March")


def test_month_note_contract():
    task = load_task("labor_cps_jobfind")  # prompt_month: no fixed month, no currency clause
    system, user = clean_prompt(3)
    with pytest.raises(DataError, match="March"):
        check_prompt(system, user, task, month=4)  # note names March, row is April
    without = user.replace(month_note(3, currency=False) + " ", "")
    with pytest.raises(DataError, match="expected exactly one note"):
        check_prompt(system, without, task, month=3)
    twice = user.replace("You have been", month_note(3, currency=False) + " You have been")
    with pytest.raises(DataError, match="expected exactly one note"):
        check_prompt(system, twice, task, month=3)
    with_currency = user.replace(month_note(3, currency=False), month_note(3, currency=True))
    with pytest.raises(DataError, match="expected exactly one note"):
        check_prompt(system, with_currency, task, month=3)
    standalone = user.replace("Next month,", DOLLAR_NOTE + "\n\nNext month,")
    with pytest.raises(DataError, match="standalone dollar note"):
        check_prompt(system, standalone, task, month=3)
    with pytest.raises(DataError, match="invalid dollar notation"):
        check_prompt(system, user.replace("-$2,500", "$-2,500"), task, month=3)


def test_fixed_month_and_no_month_tasks():
    fixed = numeric_task("house_census_move", 1)
    fixed.prompt_month = PromptMonthConfig(fixed_month=4, currency=False)
    body = f"Background. {month_note(4, currency=False)} More.\n\n" + response_instruction(fixed)
    check_prompt(HOUSING_SYSTEM_PROMPT, body, fixed, month=None)
    with pytest.raises(DataError, match="housing tasks use the shared persona"):
        check_prompt(LABOR_SYSTEM_PROMPT, body, fixed, month=None)

    wealth = numeric_task("cons_psid_wealth", 1)
    wealth.prompt_month = None
    ok = f"Your family has savings. {DOLLAR_NOTE} More.\n\n" + response_instruction(wealth)
    check_prompt("You are the head of an American household.", ok, wealth, month=None)
    alone = f"Your family has savings.\n\n{DOLLAR_NOTE}\n\n" + response_instruction(wealth)
    with pytest.raises(DataError, match="embedded"):
        check_prompt("You are the head of an American household.", alone, wealth, month=None)
    with_month = ok.replace("More.", month_note(5, currency=True))
    with pytest.raises(DataError):
        check_prompt("You are the head of an American household.", with_month, wealth, month=5)


def test_forbidden_prefilters_never_skip_a_match(monkeypatch):
    """The literal prefilters only skip rules that cannot match: on random texts made of rule
    fragments in random case, the checker gives the same verdict with and without them."""
    import random

    from hhx.errors import DataError
    from hhx.tasks import forbidden_text

    fragments = [
        "survey", "Surveys", "respondent", "PANEL", "panelist", "benchmark", "Parker-style",
        "CPS", "cps", "Census", "census", "Michigan Survey of Consumers", "consumer expenditures",
        "Economic Stimulus Payment", "federal income-tax rebates", "2020-03", "1999-2001",
        "2019 to 21", "since 2008", "in 1995", "March", "march", "qoq", "Q-4", "q-4", "unknown",
        "not reported", "Missing", "job(s)", "Day(s)", "1 people", "1 children", "You say",
        "reported reason", "work-status indicators", "2.00%", "1,234", "the", "household", ".",
        " ", "\n\n", "ſurvey", "K", "İ", "12", "20", "19", "-",
    ]
    rng = random.Random(7)

    def verdict(text: str) -> str | None:
        try:
            forbidden_text.check_forbidden(text, allowed_month="March")
        except DataError as exc:
            return str(exc)
        return None

    texts = []
    for _ in range(3000):
        parts = [rng.choice(fragments) for _ in range(rng.randint(1, 6))]
        parts = [p.upper() if rng.random() < 0.2 else p for p in parts]
        texts.append(rng.choice([" ", "", "-"]).join(parts))
    with_prefilter = [verdict(t) for t in texts]
    monkeypatch.setattr(forbidden_text, "_PREFILTERS", {})
    without = [verdict(t) for t in texts]
    assert with_prefilter == without
    assert sum(v is None for v in without) > 100 and sum(v is not None for v in without) > 1000
