"""income_sce_policy: stated impact on the own household of four hypothetical policy changes
with randomized directions (spec 10_tasks 19).

Facts (reference `scripts/2_tasks/income_sce_policy/`):
- Unit: a respondent-month of the Public Policy module (`sce_public_policy`), Core context and
  macro attached.
- Items (suffix): federal welfare benefits (5), unemployment benefits (6), payroll tax rate (9),
  average income tax rate (16). Impacts qp2_<k> coded 1-5 (very_negative, somewhat_negative,
  no_impact, somewhat_positive, very_positive); directions hidqp2_<k> coded 1
  (increase_or_expansion) / 2 (decrease_or_reduction); another code is an error.
- Filters: the four impacts and directions present (order qp2_5, hidqp2_5, qp2_6, ...);
  release_date, income label, common context and macro present; age 18-100. No trim.
- Answer: the four impact labels; no-change answer four "no_impact".
- Prompt: persona "... about spending, work, policy, and the economy."; background; finances
  (income; Q1 / Q2 "and you expect it to be"; inflation; "You work full-time." / "Your current
  work situation includes ..."); macro; "For this question, suppose the following policy
  changes happened. Federal welfare benefits increase, unemployment benefits decrease, the
  payroll tax rate increases, and the average income tax rate decreases."; question with the
  allowed strings; instruction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from hhx.config import TaskConfig
from hhx.surveys.sce.items import DIRECTION, IMPACT
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import render_macro_paragraph, response_instruction
from hhx.tasks.sce import common as c
from hhx.tasks.sce import modules as m

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, income_sce_policy).
OUTPUT_ORDER = ("time:text", "id:text")

TASK = "income_sce_policy"
SOURCE = "sce_public_policy"
# (suffix, the policy as the scenario sentence names it, plural noun)
ITEMS = ((5, "Federal welfare benefits", True), (6, "unemployment benefits", True),
         (9, "the payroll tax rate", False), (16, "the average income tax rate", False))
IMPACTS = frozenset(IMPACT.values())
DIRECTIONS = frozenset(DIRECTION.values())
COLUMNS = [col for k, _, _ in ITEMS for col in (f"qp2_{k}", f"hidqp2_{k}")]
LABELS = {col: f"{col}__label" for col in COLUMNS}
READ = [*COLUMNS, *[f"qp1x{j}_{k}" for k, _, _ in ITEMS for j in (1, 2, 3)],
        *LABELS.values()]  # fmt: skip
PERSONA = ("You are an American adult making household decisions and forming expectations "
           "about spending, work, policy, and the economy.")
QUESTION = ("For each policy change, what impact would it have on your own household? Use one "
            'of "very_negative", "somewhat_negative", "no_impact", "somewhat_positive", or '
            '"very_positive" for each item.')
LEAD = ("Return only a valid JSON array with exactly four string elements, in this order: "
        "welfare benefits; unemployment benefits; payroll tax rate; average income tax rate. "
        'Each element must be one of "very_negative", "somewhat_negative", "no_impact", '
        '"somewhat_positive", or "very_positive".')


def build_table(ctx: BuildContext) -> pd.DataFrame:
    policy = m.read_module(ctx, SOURCE, READ)
    steps = c.Steps(len(policy))
    pool = m.attach_context(policy, ctx, steps)
    for k, _, _ in ITEMS:
        m.check_codes(pool, {f"qp2_{k}": IMPACT, f"hidqp2_{k}": DIRECTION}, TASK)
    steps.step("Construct leads and lags", len(pool), len(pool))
    steps.step("Restrict universe", len(pool), len(pool))
    pool = steps.filter(pool, "Require observed targets", c.observed(pool, COLUMNS, "target"))
    pool = steps.filter(pool, "Require observed predictors",
                        c.observed(pool, m.REQUIRED_BASE, "predictor"))
    pool = steps.filter(pool, "Apply logical and validity filters", [
        ("age_years_between_18_and_100", pool["age_years"].between(18, 100)),
    ])
    steps.step("Apply outlier trimming", len(pool), len(pool))
    table = m.publish(pool, LABELS)
    steps.step("Export sample", len(table), len(table))
    return c.finish(table, ctx.task, steps, internal=["_macro_reference_q_index"])


def _scenario(row: Mapping[str, Any]) -> str:
    parts = []
    for k, name, plural in ITEMS:
        direction = c.checked_label(row[f"hidqp2_{k}"], DIRECTIONS, f"hidqp2_{k}", TASK)
        verb = "increase" if direction == "increase_or_expansion" else "decrease"
        parts.append(f"{name} {verb if plural else verb + 's'}")
    return ("For this question, suppose the following policy changes happened. "
            + ", ".join(parts[:-1]) + f", and {parts[-1]}.")


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    sentences = m.finances_with_work(row, TASK, "it")
    user = "\n\n".join([c.background(row, TASK), m.finances_paragraph(row, sentences),
                        render_macro_paragraph(row), _scenario(row), QUESTION,
                        response_instruction(task, lead=LEAD)])
    return PERSONA, user


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return [c.checked_label(row[f"qp2_{k}"], IMPACTS, f"qp2_{k}", TASK) for k, _, _ in ITEMS]


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    """No change: no impact from any of the four policies."""
    return ["no_impact"] * 4
