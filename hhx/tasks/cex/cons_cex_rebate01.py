"""cons_cex_rebate01 (2001 tax rebates): the builder of this task. The table, prompt and answers are built by
the mechanics it shares with its sibling policy task (hhx.tasks.cex.policy, whose `RULES` hold
this task's window, payment source and history)."""

from __future__ import annotations

from hhx.tasks.cex.policy import OUTPUT_ORDER, build_table, naive_baseline, reference_answer, render

TASK = "cons_cex_rebate01"

__all__ = ["OUTPUT_ORDER", "TASK", "build_table", "naive_baseline", "reference_answer", "render"]
