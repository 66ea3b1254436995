"""house_sce_move: probability of moving in the next 12 months (spec 10_tasks 15).

Facts (reference `scripts/2_tasks/house_sce_move/`):
- Unit: a Core respondent-month with a contiguous previous month (hhx.tasks.sce.common
  `contiguous_lag1`); target `Q3` (raw, percent chance of moving to a different primary residence
  in 12 months), published /100 as [not moving, moving]; no-change answer: last month's Q3.
- Filters, in the reference's steps: Q3 numeric; `_HH_INC_DETAILED__label`, the Core context
  (age_years, _NUM_CAT, _REGION_CAT, _EDU_CAT, _HH_INC_DETAILED, panel_month), the 20 macro
  columns and the lag present; contiguous lag with lag Q3 in 0-100; Q3 in 0-100; age 18-100.
  No trim. Q16 and Q19 outside 0-240 are blanked in the table; Q41 / Q42 are shown only when
  0-100 (table values kept).
- Prompt: housing persona; background; finances, work and housing paragraph with the month note
  (the work sentence chains ", and you ..." clauses even without a work label, as the
  reference does); macro; question; instruction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from hhx.config import TaskConfig
from hhx.surveys.macro.fred_qd import CORE_MACRO_COLUMNS
from hhx.tasks.context import BuildContext
from hhx.tasks.contract import PromptRules
from hhx.tasks.prompting import month_note, render_macro_paragraph, response_instruction
from hhx.tasks.sce import common as c

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, house_sce_move).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "house_sce_move"
PROMPT_RULES = PromptRules(housing_persona=True)
READ = [*c.CONTEXT, "Q1", "Q2", "Q3", "Q10_1", "Q10_2", "Q10_3", "Q10_4", "Q10_5", "Q11",
        "Q12new", "Q15", "Q16", "Q19", "Q41", "Q42", "Q43", "Q44", "D3", "Q45b",
        *c.CORE_LABELS.values()]  # fmt: skip
LAG = "lag1_move_probability"
QUESTION = ("What probability do you think there is that over the next 12 months you will move "
            "to a different primary residence?")
LEAD = ("Return only a valid JSON array containing exactly one two-element probability "
        "distribution. Use this order: probability of not moving, probability of moving. Express "
        "each probability as a number from 0 to 1. The distribution must sum to 1.")


def build_table(ctx: BuildContext) -> pd.DataFrame:
    core = c.read_core(ctx, READ)
    steps = c.Steps(len(core))
    core = c.attach_macro(core, ctx)
    steps.step("Attach additional sources", len(core), len(core))
    core = c.add_lag1(core, {"Q3": LAG})
    steps.step("Construct leads and lags", len(core), len(core))
    steps.step("Restrict universe", len(core), len(core))
    core = steps.filter(core, "Require observed targets",
                        [("target_Q3_numeric", c.numeric(core, "Q3").notna())])
    need = ["_HH_INC_DETAILED__label", *c.CONTEXT, *CORE_MACRO_COLUMNS, LAG]
    core = steps.filter(core, "Require observed predictors", [
        *c.observed(core, need, "predictor"),
        ("predictor_complete_contiguous_lag1_move_distribution", c.contiguous_lag1(core, [LAG])),
    ])
    core = core.copy()
    for column in ("Q16", "Q19"):  # durations outside 0-240 months are blanked
        values = c.numeric(core, column)
        core[column] = core[column].mask(values.lt(0) | values.gt(240))
    core = steps.filter(core, "Apply logical and validity filters", [
        ("Q3_between_0_and_100", c.numeric(core, "Q3").between(0, 100)),
        ("age_years_between_18_and_100", core["age_years"].between(18, 100)),
    ])
    steps.step("Apply outlier trimming", len(core), len(core))
    table = c.to_unit(c.use_labels(c.keys(core)), ["Q3", LAG])
    steps.step("Export sample", len(table), len(table))
    return c.finish(table, ctx.task, steps, internal=["_macro_reference_q_index"])


def _housing_sentence(row: Mapping[str, Any]) -> str | None:
    parts: list[str] = []
    tenure = c.optional_label(row, "Q43", c.TENURE, TASK)
    if tenure:
        parts.append({"owns the home": "Your household owns its primary residence",
                      "rents the home": "Your household rents its primary residence"}.get(
            tenure, "Your household has another arrangement for its primary residence"))
    years = c.count_between(row, "Q41", 0, 100)
    if years is not None:
        if parts:
            parts[-1] += f", where you have lived for {c.plural(years, 'year')}"
        else:
            parts.append(f"You have lived in your primary residence for {c.plural(years, 'year')}")
    state = c.count_between(row, "Q42", 0, 100)
    if state is not None:
        parts.append(f"You have lived in your current state for {c.plural(state, 'year')}")
    other = c.optional_label(row, "Q44", c.YES_NO, TASK)
    if other:
        parts.append("You own another home" if other == "yes" else "You do not own another home")
    moved = c.optional_label(row, "D3", c.YES_NO, TASK)
    if moved:
        parts.append("You have moved recently" if moved == "yes"
                     else "You have not moved recently")
    if not parts:
        return None
    if len(parts) >= 3 and parts[1].startswith("You have lived"):
        return f"{parts[0]}. {parts[1]}, " + ", and ".join(parts[2:]) + "."
    return ". ".join(parts) + "."


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    sentences = c.finance_sentences(row, TASK, "connector")
    work = c.work_clause(row, TASK, search=True)
    if work:
        sentences.append(work + ".")
    housing = _housing_sentence(row)
    if housing:
        sentences.append(housing)
    sentences.append("One month ago, you thought the probability that you would move to a "
                     "different primary residence over the following 12 months was "
                     f"{float(row[LAG]):.3f}.")
    situation = ("Here are your household finances, work situation, expectations, and housing. "
                 f"{month_note(int(str(row['time'])[5:7]), True)} " + " ".join(sentences))
    user = "\n\n".join([c.background(row, TASK), situation, render_macro_paragraph(row),
                        QUESTION, response_instruction(task, lead=LEAD)])
    return c.HOUSING_PERSONA, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return [c.binary_vector(row["Q3"])]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: last month's moving probability."""
    return [c.binary_vector(row[LAG])]
