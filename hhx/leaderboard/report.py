"""Markdown tables and one self-contained HTML report (figures embedded as base64 PNG).

The report never shows a blank figure or a header-only table: what has no data is left out with
one line saying why. Its core is the task x model matrix: each cell the official score with its
bootstrap interval, n, and a link to the run (MLflow UI page or run folder); each column names
the metric and whether higher or lower is better; the best per task, among the runs evaluated on
the task's full example set only, gets ★ where its interval is clear of the runner-up's and of
no-change's (hhx.leaderboard.best), else "tied"; runs on other examples are marked.
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.io import write_text_atomic
from hhx.leaderboard.best import Verdict, verdicts
from hhx.leaderboard.tables import Leaderboard
from hhx.scoring.metric_names import official
from hhx.tracking.ui import MLFLOW_UI_DEFAULT

SYNTHETIC_BANNER = (
    "SYNTHETIC DEMO DATA: every run in this leaderboard was evaluated on seeded synthetic "
    "surveys. The numbers test the pipeline; they are not findings about households."
)
MAX_HTML_ROWS = 300  # analyses tables longer than this are shown in part (full CSVs beside)
CAPTIONS = {
    "leaderboard": "Average rank across tasks with bootstrap intervals.",
    "relmae_by_task": f"{official('numeric').name} relative to no-change by numeric task; "
                      "hatched bars are policy-response tasks.",
    "type_summary": "Mean official metric per target type, baseline vs policy-response tasks.",
    "bias": "Over/under-prediction on numeric targets; majority-class over-prediction on "
            "categorical tasks.",
    "class_shares": "Predicted vs true class shares per categorical field.",
    "persistence": "Probability tasks: reports that changed vs did not change from the previous "
                   "report (the no-change prediction).",
    "cutoff": "Rows released on/before vs after each model's knowledge cutoff.",
    "over_time": "Official metric by release period on a time axis; dashed lines: no-change "
                 "scored on the same rows as the model of the same colour.",
}
ANALYSES = {  # table -> (what it shows, why it can be empty)
    "bias_numeric": ("Signed error and over/under-prediction shares per numeric target.",
                     "no numeric task"),
    "class_shares": ("Predicted vs true class shares per categorical field.",
                     "no categorical task"),
    "majority_overprediction": ("How much the true majority class is over-predicted.",
                                "no categorical task"),
    "persistence": ("Probability reports that changed vs did not change from the previous "
                    "report.", "no probability (distribution) task"),
    "cutoff": ("Rows released on/before vs after each model's knowledge cutoff.",
               "no model records a knowledge cutoff (tag hhx.model_cutoff)"),
    "over_time": ("Official metric per release period.", "no rows with a release date"),
}
DIAGNOSTICS = {"categorical": "Confusion matrices (rows: true label, columns: predicted label; "
                              "counts, shaded by the share of the true label's rows).",
               "numeric": "Predicted vs actual per target (dashed: prediction = actual).",
               "distribution": "Calibration: predicted probabilities grouped in ten, mean "
                               "predicted vs mean reported probability (dashed: perfect)."}
ARROW = {True: "\u2191 higher is better", False: "\u2193 lower is better"}


def fmt(x: object, digits: int = 4) -> str:
    """Numbers as the tables show them: 4 decimals, blanks for missing."""
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return str(x)
    if isinstance(x, (float, np.floating)):
        return "" if math.isnan(x) else f"{x:.{digits}f}"
    return "" if x is None or x is pd.NA else str(x)


def to_markdown(df: pd.DataFrame, index: bool = False) -> str:
    """A GitHub-flavoured Markdown table (no extra dependency)."""
    if index:
        df = df.reset_index()
    if df.empty:  # never a header-only table
        return "(no rows)\n"
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        cells = [fmt(v).replace("|", "\\|") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _html_table(df: pd.DataFrame, index: bool = False, empty: str = "no rows") -> str:
    """A table, or one line saying why there is none (never a header-only table)."""
    if index:
        df = df.reset_index()
    if df.empty:
        return f"<p class='empty'>Not shown: {html.escape(empty)}.</p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(fmt(v))}</td>" for v in row) + "</tr>"
        for row in df.itertuples(index=False)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _link(url: object, text: str) -> str:
    if not isinstance(url, str) or not url:
        return html.escape(text)
    return f"<a href='{html.escape(url, quote=True)}'>{html.escape(text)}</a>"


def best_per_task(lb: Leaderboard) -> dict[str, set[str]]:
    """The best model(s) per task among runs on the task's full example set (ties all best);
    tasks with fewer than two such runs have none."""
    out: dict[str, set[str]] = {}
    tm = lb.task_metrics
    for task, part in tm[tm["same_examples"] & np.isfinite(tm["score"])].groupby("task"):
        if len(part) < 2:  # one comparable run is no contest
            continue
        higher = lb.tds[task].higher_is_better
        best = part["score"].max() if higher else part["score"].min()
        tol = 1e-12 * max(1.0, abs(best))
        out[task] = set(part.loc[(part["score"] - best).abs() <= tol, "model"])
    return out


def _matrix_cell(r: pd.Series, verdict: Verdict | None, model: str) -> str:
    """One cell: score (\u2605 or "tied" for the task's best), interval, n, valid, run link."""
    starred = verdict is not None and verdict.best == model and verdict.starred
    tied = verdict is not None and verdict.best == model and not verdict.starred
    score = f"<b>{fmt(r['score'])}" + (" \u2605" if starred else "") + "</b>"
    if tied and verdict is not None:
        score += f" <span class='tied'>{html.escape(verdict.mark)}</span>"
    n = f"n={int(r['num_examples'])}"
    if not r["same_examples"]:
        n = (f"<span class='warn'>\u26a0 n={int(r['num_examples'])} of "
             f"{int(r['n_task_examples'])}: other examples, not comparable</span>")
    valid = f", {int(r['num_valid'])} valid" if r["num_valid"] != r["num_examples"] else ""
    link = _link(r.get("url"), "run") if isinstance(r.get("url"), str) else "derived"
    cls = (" class='best'" if starred else " class='tied'" if tied
           else " class='other'" if not r["same_examples"] else "")
    return (f"<td{cls}>{score}<br>[{fmt(r['ci_lo'])}, {fmt(r['ci_hi'])}]"
            f"<br>{n}{valid} \u00b7 {link}</td>")


def matrix_html(lb: Leaderboard) -> str:
    """The task x model matrix: score [interval], n, run link; best marked; direction per task."""
    tm = lb.task_metrics.set_index(["model", "task"])
    tasks = list(lb.tds)
    verdict = verdicts(lb)
    conf = f"{lb.settings.confidence:.0%}"
    head = "<th>model</th>" + "".join(
        f"<th>{html.escape(t)}<br><span class='metric'>"
        f"{html.escape(official(lb.tds[t].target_type).name)}, "
        f"{ARROW[lb.tds[t].higher_is_better]}</span></th>" for t in tasks)
    rows = []
    for model in lb.leaderboard["model"]:
        cells = [f"<th>{html.escape(str(model))}</th>"]
        for t in tasks:
            if (model, t) not in tm.index:
                cells.append("<td class='none'>not run</td>")
            else:
                cells.append(_matrix_cell(tm.loc[(model, t)], verdict.get(t), model))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    local = any(isinstance(u, str) and u.startswith(MLFLOW_UI_DEFAULT)
                for u in lb.task_metrics.get("url", []))
    ui = (f"<p>Run links open in the MLflow UI at {MLFLOW_UI_DEFAULT}; start it with "
          "<code>LITELLM_LOCAL_MODEL_COST_MAP=True mlflow ui --backend-store-uri &lt;tracking.uri"
          "&gt; --workers 1</code>.</p>") if local else ""
    return ui + (f"<p>Each cell: the official score on the model's valid rows, its {conf} bootstrap "
            f"interval ({lb.settings.n_resamples} resamples), n = examples evaluated, and the "
            "run. \u2605 best per task among runs on the task's full example set (two or more), "
            f"where the {conf} interval of its paired difference to the runner-up excludes 0 and "
            "it beats no-change clearly (its interval does not cover no-change's score); "
            "otherwise the best cell says tied, and with whom; "
            "\u26a0 the run was evaluated on other examples and is not ranked with the rest "
            "unmarked.</p>"
            f"<table class='matrix'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}"
            "</tbody></table>")


CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px;font-size:16px}
table{border-collapse:collapse;font-size:14px;margin:1em 0;display:block;overflow-x:auto;max-width:100%}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:right;vertical-align:top}
th{background:#eee} td:first-child,th:first-child{text-align:left}
table.matrix td,table.matrix thead th{text-align:center} .metric{font-weight:normal;font-size:13px}
td.best{background:#e3f4e1} td.tied{background:#f3f3e0} .tied{font-size:13px} td.other{background:#fdebd0} td.none{color:#888}
.warn{color:#a04000;font-weight:bold} .empty{color:#555;font-style:italic}
.banner{background:#fff3cd;border:2px solid #c90;padding:1em;font-weight:bold}
img{max-width:100%;border:1px solid #ddd} figure{margin:1.5em 0}
figcaption{font-size:15px}
"""


def _figure(png: Path, name: str, caption: str) -> str:
    return (f"<figure>{_img(png, name)}<figcaption>{html.escape(caption)}</figcaption>"
            "</figure>")


def write_html(
    lb: Leaderboard, figures: dict[str, Path], path: Path, meta: dict[str, object],
    omitted: dict[str, str] | None = None,
) -> Path:
    """The report: notes, leaderboard, matrix, summaries, comparisons, figures, analyses."""
    omitted = omitted or {}
    title = "HouseholdBench leaderboard" + (" [SYNTHETIC]" if lb.synthetic else "")
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>"]
    if lb.synthetic:
        parts.append(f"<p class='banner'>{html.escape(SYNTHETIC_BANNER)}</p>")
    parts.append("<ul>" + "".join(f"<li>{html.escape(k)}: {html.escape(str(v))}</li>"
                                  for k, v in meta.items()) + "</ul>")
    if lb.notes:
        parts.append("<h2>Notes</h2><ul>" +
                     "".join(f"<li>{html.escape(n)}</li>" for n in lb.notes) + "</ul>")
    conf = f"{lb.settings.confidence:.0%}"
    parts += [
        "<h2>Leaderboard (average rank; lower is better)</h2>",
        f"<p>Ranks per task on the official metric, ties sharing their average rank; {conf} "
        f"paired bootstrap intervals, {lb.settings.n_resamples} resamples per task. Models "
        "missing tasks, or evaluated on other examples than the rest (same_examples = no), "
        "are listed last.</p>",
        _html_table(lb.leaderboard),
        "<h2>Scores by task and model</h2>", matrix_html(lb),
        "<h2>Per-type summaries</h2>", _html_table(lb.summary, empty="no tasks"),
        "<h2>Differences to no-change and XGBoost (rows valid for both)</h2>",
        _html_table(lb.comparisons, empty="no model with a no-change or XGBoost comparator"),
        "<h2>Per task and model</h2>",
        _html_table(lb.task_metrics.drop(columns=["source", "url"], errors="ignore")),
        "<h2>Figures</h2>",
    ]
    for name, png in figures.items():
        if name in CAPTIONS:
            parts.append(_figure(png, name, CAPTIONS[name]))
    if omitted:
        parts.append("<p>Not drawn:</p><ul>" + "".join(
            f"<li>{html.escape(name)}: {html.escape(why)}</li>" for name, why in omitted.items())
            + "</ul>")
    diag = [(n, p) for n, p in figures.items() if n.startswith("task_")]
    if diag:
        parts.append("<h2>Per-task diagnostics</h2>")
        for name, png in diag:
            kind = lb.tds[name[len("task_"):]].target_type
            parts.append(_figure(png, name, f"{name[len('task_'):]}: {DIAGNOSTICS[kind]}"))
    parts.append("<h2>Analyses</h2>")
    for name, df in lb.analyses.items():
        what, why = ANALYSES.get(name, (name, "no rows"))
        parts.append(f"<h3>{html.escape(name)}</h3><p>{html.escape(what)}</p>")
        if len(df) > MAX_HTML_ROWS:
            parts.append(f"<p>First {MAX_HTML_ROWS} of {len(df)} rows; all of them are in "
                         f"analyses/{html.escape(name)}.csv.</p>")
        parts.append(_html_table(df.head(MAX_HTML_ROWS), empty=why))
    parts.append("</body></html>")
    return write_text_atomic(path, "\n".join(parts))
