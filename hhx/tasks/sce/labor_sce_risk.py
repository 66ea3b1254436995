"""labor_sce_risk: job-loss, voluntary-leave and job-finding probabilities (spec 20_tasks 9).

Facts (reference `scripts/2_tasks/labor_sce_risk/`):
- Unit: a Core respondent-month with a contiguous previous month; targets `Q13new__clean`
  (lose the job in 12 months), `Q14new__clean` (leave it voluntarily in 12 months),
  `Q22new__clean` (find an acceptable job within 3 months if the job were lost), published /100;
  no-change answer: last month's three values (`lag1_*_probability`, also published /100).
- Filters: targets present and numeric; income label, Core context, macro and the three lags
  present; contiguous lag with every lag in 0-100; targets in 0-100; age 18-100. No employment
  filter, no trim.
- Prompt: labor persona; background; finances and work paragraph with the month note (a single
  work item reads "You work <item without 'working '>", kept as the reference has it); macro;
  question; instruction.
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
# hhx/tasks/output_order.csv, labor_sce_risk).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "labor_sce_risk"
TARGETS = ["Q13new__clean", "Q14new__clean", "Q22new__clean"]
LAGS = ["lag1_job_loss_probability", "lag1_voluntary_leave_probability",
        "lag1_job_find_probability"]  # fmt: skip
READ = [*c.CONTEXT, "Q1", "Q2", "Q10_1", "Q10_2", "Q10_3", "Q10_4", "Q10_5", "Q11", "Q12new",
        *TARGETS, *c.CORE_LABELS.values()]  # fmt: skip
QUESTION = (
    "For your current or main job, what probability do you think there is that each of the "
    "following will happen: you lose the job in the next 12 months; you voluntarily leave the "
    "job in the next 12 months; and you find an acceptable job within 3 months if you lose the "
    "job this month?"
)
LEAD = (
    "Return only a valid JSON array containing exactly three two-element probability "
    "distributions, in this order: job loss in the next 12 months; voluntary job leaving in "
    "the next 12 months; acceptable job finding within 3 months conditional on job loss. "
    "Within each distribution, use this order: event does not occur, event occurs. Express "
    "each probability as a number from 0 to 1. Each distribution must sum to 1."
)


def probability_table(ctx: BuildContext, targets: list[str], lags: list[str], read: list[str],
                      universe: list[tuple[str, Any]] | None = None,
                      lag_filter: str = "risk", q16_prompt: bool = False) -> pd.DataFrame:
    """The shared construction of the lagged binary-probability tasks (risk, search)."""
    core = c.read_core(ctx, read)
    steps = c.Steps(len(core))
    core = c.attach_macro(core, ctx)
    steps.step("Attach additional sources", len(core), len(core))
    core = c.add_lag1(core, dict(zip(targets, lags, strict=True)))
    steps.step("Construct leads and lags", len(core), len(core))
    if universe:
        core = steps.filter(core, "Restrict universe", [(n, m(core)) for n, m in universe])
    else:
        steps.step("Restrict universe", len(core), len(core))
    core = steps.filter(core, "Require observed targets", [
        *c.observed(core, targets, "target"),
        *[(f"target_{t}_numeric", c.numeric(core, t).notna()) for t in targets],
    ])
    need = ["_HH_INC_DETAILED__label", *c.CONTEXT, *CORE_MACRO_COLUMNS, *lags]
    core = steps.filter(core, "Require observed predictors", [
        *c.observed(core, need, "predictor"),
        (f"predictor_complete_contiguous_lag1_{lag_filter}_distributions",
         c.contiguous_lag1(core, lags)),
    ])
    core = steps.filter(core, "Apply logical and validity filters", [
        *[(f"{t}_between_0_and_100", c.numeric(core, t).between(0, 100)) for t in targets],
        ("age_years_between_18_and_100", core["age_years"].between(18, 100)),
    ])
    steps.step("Apply outlier trimming", len(core), len(core))
    table = c.keys(core)
    if q16_prompt:  # labor_sce_search shows unemployment spells of 0-240 months
        q16 = c.numeric(table, "Q16")
        table["Q16_prompt_clean"] = q16.where(q16.between(0, 240))
    table = c.to_unit(c.use_labels(table), [*targets, *lags])
    steps.step("Export sample", len(table), len(table))
    return c.finish(table, ctx.task, steps, internal=["_macro_reference_q_index"])


def build_table(ctx: BuildContext) -> pd.DataFrame:
    return probability_table(ctx, TARGETS, LAGS, READ)


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    sentences = c.finance_sentences(row, TASK, "connector")
    work = c.work_clause(row, TASK, search=False)
    if work:
        sentences.append(work + ".")
    sentences.append(
        "One month ago, you assigned probability "
        f"{float(row[LAGS[0]]):.3f} to losing your current or main job in the following 12 "
        f"months, probability {float(row[LAGS[1]]):.3f} to voluntarily leaving that job in the "
        f"following 12 months, and probability {float(row[LAGS[2]]):.3f} to finding an "
        "acceptable job within 3 months if you lost the job that month."
    )
    situation = ("Here are your household finances, work situation, and expectations. "
                 f"{month_note(int(str(row['time'])[5:7]), True)} " + " ".join(sentences))
    user = "\n\n".join([c.background(row, TASK), situation, render_macro_paragraph(row),
                        QUESTION, response_instruction(task, lead=LEAD)])
    return c.LABOR_PERSONA, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return [c.binary_vector(row[t]) for t in TARGETS]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: last month's three probabilities."""
    return [c.binary_vector(row[lag]) for lag in LAGS]
