"""Markdown tables and one self-contained HTML report (figures embedded as base64 PNG)."""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.io import write_text_atomic
from hhx.leaderboard.tables import Leaderboard

SYNTHETIC_BANNER = (
    "SYNTHETIC DEMO DATA: every run in this leaderboard was evaluated on seeded synthetic "
    "surveys. The numbers test the pipeline; they are not findings about households."
)
MAX_HTML_ROWS = 300  # analyses tables longer than this are shown in part (full CSVs beside)
CAPTIONS = {
    "leaderboard": "Average rank across tasks with bootstrap intervals.",
    "relmae_by_task": "RelMAE relative to no-change by numeric task; hatched bars are "
                      "policy-response tasks.",
    "type_summary": "Mean official metric per target type, baseline vs policy-response tasks.",
    "bias": "Over/under-prediction on numeric targets; majority-class over-prediction on "
            "categorical tasks.",
    "class_shares": "Predicted vs true class shares per categorical field.",
    "persistence": "Probability tasks: reports that changed vs did not change from the previous "
                   "report (the no-change prediction).",
    "cutoff": "Rows released on/before vs after each model's knowledge cutoff.",
    "over_time": "Official metric by release period.",
}


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
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        cells = [fmt(v).replace("|", "\\|") for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _html_table(df: pd.DataFrame, index: bool = False) -> str:
    if index:
        df = df.reset_index()
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(fmt(v))}</td>" for v in row) + "</tr>"
        for row in df.itertuples(index=False)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}
table{border-collapse:collapse;font-size:12px;margin:1em 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#eee} td:first-child,th:first-child{text-align:left}
.banner{background:#fff3cd;border:2px solid #c90;padding:1em;font-weight:bold}
img{max-width:100%;border:1px solid #ddd} figure{margin:1.5em 0}
"""


def write_html(
    lb: Leaderboard, figures: dict[str, Path], path: Path, meta: dict[str, object]
) -> Path:
    """The report: notes, leaderboard, per-type and per-task tables, comparisons, analyses."""
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
        f"paired bootstrap intervals, {lb.settings.n_resamples} resamples per task.</p>",
        _html_table(lb.leaderboard),
        "<h2>Per-type summaries</h2>", _html_table(lb.summary),
        "<h2>Official metric by task</h2>", _html_table(lb.matrix, index=True),
        "<h2>Per task and model</h2>", _html_table(lb.task_metrics.drop(columns=["source"])),
        "<h2>Differences to no-change and XGBoost (rows valid for both)</h2>",
        _html_table(lb.comparisons),
        "<h2>Figures</h2>",
    ]
    for name, png in figures.items():
        parts.append(f"<figure>{_img(png, name)}<figcaption>{html.escape(CAPTIONS.get(name, name))}"
                     "</figcaption></figure>")
    parts.append("<h2>Analyses</h2>")
    for name, df in lb.analyses.items():
        parts.append(f"<h3>{html.escape(name)}</h3>")
        if len(df) > MAX_HTML_ROWS:
            parts.append(f"<p>First {MAX_HTML_ROWS} of {len(df)} rows; all of them are in "
                         f"analyses/{html.escape(name)}.csv.</p>")
        parts.append(_html_table(df.head(MAX_HTML_ROWS)))
    parts.append("</body></html>")
    return write_text_atomic(path, "\n".join(parts))
