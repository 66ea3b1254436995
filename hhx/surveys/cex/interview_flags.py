"""CEX Interview household screens per cex_panel_id (int8 on every row, computed, not applied).

Screens: `flag_hh_income_lt_1000_ever`, `flag_hh_cons_total_lt_250_ever` (Parker total),
`flag_hh_food_annualized_gt_mean_income`,
`flag_hh_qoq_{income,cons_total}_change_{bottom,top}_1pct_ever` (adjacent-quarter % changes at
or beyond the pooled 1st/99th percentiles; all 0 when no adjacent pair exists), and
`flag_hh_any_screen`.

Log records keep the builder's logger name, hhx.surveys.cex.interview.
"""

from __future__ import annotations

import logging

import pandas as pd

log = logging.getLogger("hhx.surveys.cex.interview")  # the builder's logger, as before the split

FLAG_COLUMNS = [
    "flag_hh_income_lt_1000_ever",
    "flag_hh_cons_total_lt_250_ever",
    "flag_hh_food_annualized_gt_mean_income",
    "flag_hh_qoq_income_change_bottom_1pct_ever",
    "flag_hh_qoq_income_change_top_1pct_ever",
    "flag_hh_qoq_cons_total_change_bottom_1pct_ever",
    "flag_hh_qoq_cons_total_change_top_1pct_ever",
    "flag_hh_any_screen",
]
QOQ_QUANTILE = 0.01


def _qoq_changes(panel: pd.DataFrame, column: str) -> pd.DataFrame:
    """% change between interviews of one panel in adjacent quarters (previous value > 0)."""
    p = panel[["cex_panel_id", "q_index", column]].sort_values(
        ["cex_panel_id", "q_index"], kind="mergesort"
    )
    g = p.groupby("cex_panel_id", sort=False)
    lag_q = g["q_index"].shift(1)
    lag = g[column].shift(1)
    ok = (p["q_index"] - lag_q == 1) & p[column].notna() & lag.notna() & (lag > 0)
    return pd.DataFrame(
        {"cex_panel_id": p.loc[ok, "cex_panel_id"],
         "pct": 100.0 * (p.loc[ok, column] - lag[ok]) / lag[ok]}
    )  # fmt: skip


def add_quality_flags(frame: pd.DataFrame) -> None:
    """Household screens per cex_panel_id (spec 1.5), int8 on every row; not applied."""
    g = frame.groupby("cex_panel_id", sort=False)
    flags = pd.DataFrame(index=pd.Index(frame["cex_panel_id"].unique(), name="cex_panel_id"))
    flags[FLAG_COLUMNS[0]] = g["income_before_tax"].min() < 1000
    flags[FLAG_COLUMNS[1]] = g["cons_parker_total"].min() < 250
    food = frame.dropna(subset=["cons_food"]).groupby("cex_panel_id")["cons_food"]
    annual_food = food.sum() * 4.0 / food.size()  # the reference's arithmetic (ties to the ulp)
    flags[FLAG_COLUMNS[2]] = annual_food > g["income_before_tax"].mean().reindex(
        annual_food.index)
    for column, bottom, top in (
        ("income_before_tax", FLAG_COLUMNS[3], FLAG_COLUMNS[4]),
        ("cons_parker_total", FLAG_COLUMNS[5], FLAG_COLUMNS[6]),
    ):
        changes = _qoq_changes(frame, column)
        if changes.empty:  # the reference stops here; a tiny extract just gets no flags
            flags[bottom] = False
            flags[top] = False
            continue
        low = changes["pct"].quantile(QOQ_QUANTILE)
        high = changes["pct"].quantile(1.0 - QOQ_QUANTILE)
        log.debug("cex_interview screen %s: p1 %.4f, p99 %.4f", column, low, high)
        flags[bottom] = (changes["pct"] <= low).groupby(changes["cex_panel_id"]).any()
        flags[top] = (changes["pct"] >= high).groupby(changes["cex_panel_id"]).any()
    flags = flags.fillna(False).astype(bool)
    flags[FLAG_COLUMNS[-1]] = flags[FLAG_COLUMNS[:-1]].any(axis=1)
    joined = flags.astype("int8").reindex(frame["cex_panel_id"])
    for column in FLAG_COLUMNS:
        frame[column] = joined[column].to_numpy()
