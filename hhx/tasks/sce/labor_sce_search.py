"""labor_sce_search: job-finding probabilities of active job seekers (spec 20_tasks 10).

Facts (reference `scripts/2_tasks/labor_sce_search/`):
- Universe: Core respondent-months with Q15 == 1 (currently looking for work). The lags are
  taken before the universe is restricted, so the previous month need not be a search month.
- Targets `Q17new__clean` (find an acceptable job within 12 months) and `Q18new__clean` (within
  3 months), published /100; no-change answer: last month's two values.
- Filters as labor_sce_risk (hhx.tasks.sce.labor_sce_risk.probability_table);
  `Q16_prompt_clean` = Q16 (months unemployed) when 0-240.
- Prompt: labor persona; background; finances paragraph without the month note; work and
  search paragraph with it ("You are currently looking for a job" has no full stop of its own
  when nothing is appended to it: the reference's wording, kept); macro; question; instruction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from hhx.config import TaskConfig
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import month_note, render_macro_paragraph, response_instruction
from hhx.tasks.sce import common as c
from hhx.tasks.sce.labor_sce_risk import probability_table

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, labor_sce_search).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "labor_sce_search"
TARGETS = ["Q17new__clean", "Q18new__clean"]
LAGS = ["lag1_find_12m_probability", "lag1_find_3m_probability"]
READ = [*c.CONTEXT, "Q1", "Q2", "Q10_1", "Q10_2", "Q10_3", "Q10_4", "Q10_5", "Q15", "Q16",
        *TARGETS, *c.CORE_LABELS.values()]  # fmt: skip
QUESTION = (
    "What probability do you think there is that you will find an acceptable job within the "
    "coming 12 months? What probability do you think there is that you will find an acceptable "
    "job within the coming 3 months?"
)
LEAD = (
    "Return only a valid JSON array containing exactly two two-element probability "
    "distributions, in this order: acceptable job finding within the coming 12 months; "
    "acceptable job finding within the coming 3 months. Within each distribution, use this "
    "order: event does not occur, event occurs. Express each probability as a number from 0 "
    "to 1. Each distribution must sum to 1."
)


def build_table(ctx: BuildContext) -> pd.DataFrame:
    universe = [("currently_looking_for_work", lambda f: c.numeric(f, "Q15").eq(1))]
    return probability_table(ctx, TARGETS, LAGS, READ, universe=universe, lag_filter="search",
                             q16_prompt=True)


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    sentences = c.finance_sentences(row, TASK, "remain")
    finances = "Here are your household finances, work situation, and expectations. " + " ".join(
        sentences)
    search: list[str] = []
    labels = c.work_labels(row, TASK)
    if labels:
        if labels == ["not working but would like to work"]:
            search.append("You are not working but would like to work.")
        else:
            search.append(f"Your current work situation includes {', '.join(labels)}.")
    looking = c.optional_label(row, "Q15", c.YES_NO, TASK)
    if looking:
        search.append("You are currently looking for a job" if looking == "yes"
                      else "You are not currently looking for a job")
    months = c.count_between(row, "Q16_prompt_clean", float("-inf"), float("inf"))
    if months is not None:
        spell = f"unemployed for {c.plural(months, 'month')}"
        if len(search) >= 2:
            search[-1] += f" and have been {spell}."
        else:
            search.append(f"You have been {spell}.")
    search.append(
        "One month ago, you assigned probability "
        f"{float(row[LAGS[0]]):.3f} to finding an acceptable job within the following 12 months "
        f"and probability {float(row[LAGS[1]]):.3f} to finding one within the following 3 months."
    )
    situation = ("Here is your current work and job-search situation. "
                 f"{month_note(int(str(row['time'])[5:7]), True)} " + " ".join(search))
    user = "\n\n".join([c.background(row, TASK), finances, situation,
                        render_macro_paragraph(row), QUESTION,
                        response_instruction(task, lead=LEAD)])
    return c.LABOR_PERSONA, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return [c.binary_vector(row[t]) for t in TARGETS]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: last month's two job-finding probabilities."""
    return [c.binary_vector(row[lag]) for lag in LAGS]
