"""What `stage=leaderboard` prints: the task x model table of official scores, then the ranks.

One row per task: its official metric with an arrow for its direction, then each model's score
(models in leaderboard order). The task's best gets ★ where it is clearly best
(hhx.leaderboard.best), "tied" where it is not; ⚠ marks a run on other examples than the task's;
— a model without a run of the task.
"""

from __future__ import annotations

import math

from hhx.leaderboard.best import verdicts
from hhx.leaderboard.tables import Leaderboard
from hhx.scoring.metric_names import official

UP, DOWN = "\u2191", "\u2193"
MISSING = "\u2014"


def _cell(score: float, mark: str) -> str:
    text = MISSING if score is None or math.isnan(score) else f"{score:.4f}"
    return f"{text} {mark}" if mark else text


def _align(rows: list[list[str]]) -> list[str]:
    """Left-aligned columns two spaces apart (no pandas: the cells carry marks)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def score_table(lb: Leaderboard) -> str:
    """The task x model table of official scores, with its legend."""
    models = list(lb.leaderboard["model"])
    tm = lb.task_metrics.set_index(["task", "model"])
    verdict = verdicts(lb)
    rows = [["task", "official metric", *models]]
    for task, td in lb.tds.items():
        m = official(td.target_type)
        shown = f"{task} (own task, not official)" if task in lb.own_tasks else task
        cells = [shown, f"{m.name} {UP if m.higher_is_better else DOWN}"]
        v = verdict.get(task)
        for model in models:
            if (task, model) not in tm.index:
                cells.append(MISSING)
                continue
            r = tm.loc[(task, model)]
            mark = "" if v is None or v.best != model else ("\u2605" if v.starred else "tied")
            if not r["same_examples"]:
                mark = "\u26a0"
            cells.append(_cell(float(r["score"]), mark))
        rows.append(cells)
    conf = f"{lb.settings.confidence:.0%}"
    legend = [f"{UP} higher is better, {DOWN} lower is better; \u2605 the task's best: its {conf} "
              "paired bootstrap interval is clear of the runner-up's and of no-change's",
              "tied: the best score, but not clearly better"]
    if not lb.task_metrics["same_examples"].all():
        legend[-1] += "; \u26a0 evaluated on other examples (not compared)"
    return "\n".join(["scores by task (official metric per task):", *_align(rows), *legend])


def rank_table(lb: Leaderboard) -> str:
    """The average rank across tasks with its interval (lower is better)."""
    shown = lb.leaderboard[["model", "avg_rank", "rank_lo", "rank_hi", "n_tasks_ranked",
                            "same_examples"]]
    return ("average rank across tasks (1 = best on every task; lower is better):\n"
            + shown.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
