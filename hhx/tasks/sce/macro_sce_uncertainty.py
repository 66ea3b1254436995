"""macro_sce_uncertainty: inflation densities and macro-event probabilities (spec 20_tasks 13).

Facts (reference `scripts/2_tasks/macro_sce_uncertainty/`):
- Unit: a Core respondent-month with a contiguous previous month. Targets: the ten
  `Q9_bin*__clean` (inflation over the next 12 months, from >= 12% inflation down to >= 12%
  deflation), the ten `Q9c_bin*__clean` (the 12 months two to three years ahead), and
  `Q4new__clean` (unemployment higher), `Q5new__clean` (savings rate higher), `Q6new__clean`
  (stock prices higher). No-change answer: the previous month's values.
- Cutoffs: survey-month p01 / p99 of `Q9_iqr` and `Q9c_iqr` over all Core rows (auxiliary,
  not public); a month with p01 == p99 is an error.
- Filters: the 23 targets and both IQRs numeric; income label, Core context, macro and the 23
  lags present; contiguous lag with every lag in 0-100 and last month's Q9 and Q9c densities
  valid; this month's densities valid (`Q9__task_valid`, `Q9c__task_valid`); targets in 0-100;
  age 18-100; both IQRs strictly inside their month's p01 / p99.
- Published: each ten-bin vector (current and lag) normalised (hhx.tasks.sce.common
  `normalize_bins`); the three event items /100. The gold bin vectors are the table values as
  they are; the binary items are rounded to 3 decimals.
- Prompt: household-economy persona; background; finances, work and expectations paragraph with
  the month note and last month's vectors printed as Python lists; macro; question;
  instruction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from hhx.config import TaskConfig
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import month_note, render_macro_paragraph, response_instruction
from hhx.tasks.sce import common as c

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, macro_sce_uncertainty).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "macro_sce_uncertainty"
Q9 = [f"Q9_bin{i}__clean" for i in range(1, 11)]
Q9C = [f"Q9c_bin{i}__clean" for i in range(1, 11)]
EVENTS = ["Q4new__clean", "Q5new__clean", "Q6new__clean"]
TARGETS = Q9 + Q9C + EVENTS
EVENT_LAGS = ["lag1_unemployment_higher_probability", "lag1_savings_rate_higher_probability",
              "lag1_stock_prices_higher_probability"]  # fmt: skip
LAGS = [f"lag1_{col}" for col in Q9 + Q9C] + EVENT_LAGS
IQRS = ["Q9_iqr", "Q9c_iqr"]
READ = [*c.CONTEXT, "Q1", "Q2", "Q10_1", "Q10_2", "Q10_3", "Q10_4", "Q10_5", "Q11", "Q12new",
        "Q15", "Q16", "Q19", *TARGETS, *IQRS, "Q9__task_valid", "Q9c__task_valid",
        *c.CORE_LABELS.values()]  # fmt: skip
BIN_ORDER = (
    "inflation at least 12 percent, inflation 8 to 12 percent, inflation 4 to 8 percent, "
    "inflation 2 to 4 percent, inflation 0 to 2 percent, deflation 0 to 2 percent, "
    "deflation 2 to 4 percent, deflation 4 to 8 percent, deflation 8 to 12 percent, "
    "deflation at least 12 percent"
)
QUESTION = (
    "Now think about the different things that may happen to inflation. For each of the "
    "following ten ranges, what probability do you think there is that inflation over the next "
    f"12 months will fall in that range? Use this order: {BIN_ORDER}. Then, for the 12-month "
    "period two to three years from now, what probability do you think there is that inflation "
    "will fall in each of the same ranges? Finally, what probability do you think there is that "
    "12 months from now the U.S. unemployment rate will be higher than it is now, that the "
    "average interest rate on savings accounts will be higher than it is now, and that U.S. "
    "stock prices will be higher than they are now?"
)
LEAD = (
    "Return only a valid JSON array containing exactly five probability distributions, in "
    "this order: the ten-element one-year inflation distribution; the ten-element "
    "two-to-three-year inflation distribution; the two-element higher-unemployment "
    "distribution; the two-element higher-savings-rate distribution; the two-element "
    "higher-stock-price distribution. Preserve the inflation-bin order stated above. Within "
    "each two-element distribution, use this order: event does not occur, event occurs. "
    "Express each probability as a number from 0 to 1. Each distribution must sum to 1."
)


def build_table(ctx: BuildContext) -> pd.DataFrame:
    core = c.read_core(ctx, READ)
    for iqr in IQRS:  # source-wide monthly cutoffs, before any filter
        core = c.attach_cutoffs(core, c.monthly_cutoffs(core, iqr), iqr)
    steps = c.Steps(len(core))
    core = c.attach_macro(core, ctx)
    steps.step("Attach additional sources", len(core), len(core))
    core = c.add_lag1(core, {"Q9__task_valid": "lag1_Q9__task_valid",
                             "Q9c__task_valid": "lag1_Q9c__task_valid",
                             **dict(zip(TARGETS, LAGS, strict=True))})
    steps.step("Construct leads and lags", len(core), len(core))
    steps.step("Restrict universe", len(core), len(core))
    core = steps.filter(core, "Require observed targets",
                        [(f"target_{t}_numeric", c.numeric(core, t).notna())
                         for t in TARGETS + IQRS])
    need = ["_HH_INC_DETAILED__label", *c.CONTEXT, *CORE_MACRO_COLUMNS, *LAGS]
    lag_ok = (c.contiguous_lag1(core, LAGS) & core["lag1_Q9__task_valid"].eq(True)
              & core["lag1_Q9c__task_valid"].eq(True))
    core = steps.filter(core, "Require observed predictors", [
        *c.observed(core, need, "predictor"),
        ("predictor_complete_contiguous_lag1_uncertainty_distributions", lag_ok),
    ])
    core = steps.filter(core, "Apply logical and validity filters", [
        ("Q9__task_valid_true", core["Q9__task_valid"].eq(True)),
        ("Q9c__task_valid_true", core["Q9c__task_valid"].eq(True)),
        *[(f"{t}_between_0_and_100", c.numeric(core, t).between(0, 100)) for t in TARGETS],
        ("age_years_between_18_and_100", core["age_years"].between(18, 100)),
    ])
    core = steps.filter(core, "Apply outlier trimming", [
        (f"trim_{iqr}_target_strict_inside_month_p01_p99", c.inside(core, iqr)) for iqr in IQRS
    ])
    table = c.use_labels(c.keys(core))
    for columns in (Q9, Q9C, LAGS[:10], LAGS[10:20]):
        table = c.normalize_bins(table, columns)
    table = c.to_unit(table, EVENTS + EVENT_LAGS)
    steps.step("Export sample", len(table), len(table))
    return c.finish(table, ctx.task, steps, internal=["_macro_reference_q_index", *IQRS])


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    sentences = c.finance_sentences(row, TASK, "contrast")
    c.work_sentences(sentences, row, TASK)
    one_year = [float(row[lag]) for lag in LAGS[:10]]
    three_year = [float(row[lag]) for lag in LAGS[10:20]]
    sentences.append(
        "One month ago, your probabilities for inflation over the following 12 months, in the "
        f"same ten-bin order used below, were {one_year}. Your probabilities for the 12-month "
        f"period two to three years ahead were {three_year}. You assigned probability "
        f"{float(row[EVENT_LAGS[0]]):.3f} to the U.S. unemployment rate being higher 12 months "
        f"later, probability {float(row[EVENT_LAGS[1]]):.3f} to the average interest rate on "
        f"savings accounts being higher, and probability {float(row[EVENT_LAGS[2]]):.3f} to "
        "U.S. stock prices being higher."
    )
    situation = ("Here are your household finances, work situation, and expectations. "
                 f"{month_note(int(str(row['time'])[5:7]), True)} " + " ".join(sentences))
    user = "\n\n".join([c.background(row, TASK), situation, render_macro_paragraph(row),
                        QUESTION, response_instruction(task, lead=LEAD)])
    return c.HOUSEHOLD_ECONOMY_PERSONA, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return [[float(row[col]) for col in Q9], [float(row[col]) for col in Q9C],
            *[c.binary_vector(row[col]) for col in EVENTS]]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: last month's two densities and three event probabilities."""
    return [[float(row[lag]) for lag in LAGS[:10]], [float(row[lag]) for lag in LAGS[10:20]],
            *[c.binary_vector(row[lag]) for lag in EVENT_LAGS]]
