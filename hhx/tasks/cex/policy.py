"""cons_cex_rebate01 (2001 tax rebates) and cons_cex_stimulus08 (2008 stimulus payments): the
three spending targets of cons_cex_total with the payments received in each interview's
reference window (spec 10_tasks sections 4-5; the reference's scripts/2_tasks/cons_cex_rebate01
and cons_cex_stimulus08). Panel mechanics: hhx.tasks.cex.common.

Payments come from the addendum intermediates of survey cex_interview (`cex_rebate_2001`: the
TAX013/TAX014 records of intrvw01.zip; `cex_stimulus_2008`: the kept rows of intrvw08.zip's
expn08/rbt08.csv). Each report's NEWID must match exactly one interview of the panel (any year;
else an error, as in the reference). Payment year = the reporting interview's year, minus one
when the payment month is later than the interview month. A payment goes to the same panel's
interview whose 3-month reference window holds the payment month (offset 1, 2 or 3 months
before the interview month; the smallest offset wins); none -> unassigned (counted).

2001 (rebate01). Valid flags D-G, T-W. Lead-in TAXQ1: valid 1 = yes, 2 = no, else unresolved.
Per check i (1-5): month valid = valid flag and 1-12; amount valid = valid flag and > 0. Report
status: resolved; unresolved_lead_in; contradictory_no_with_check (no, a month reported);
contradictory_yes_without_check (yes, no month); invalid_or_zero_amount (a valid month without
a valid amount); invalid_positive_month (a valid amount without a valid month): later rules
override earlier ones, in that order. Valid checks (both valid, report resolved) are assigned;
recall shift: a check assigned to another interview whose own lead-in was a valid "no", while the
reporting interview has no check of its own period, moves to the reporting interview. Interview
status: valid_positive (assigned total > 0); valid_zero (lead-in valid, report resolved, no
payment; or the panel is in the addendum and the window ends by 2001-06 or starts from 2001-10,
with no payment); a non-resolved report's status overrides; a panel with any
invalid_positive_month report is invalid everywhere; otherwise unresolved_no_module_data. Amount:
total if valid_positive, 0 if valid_zero, missing otherwise; the amount and its lags are
written as integers (`0`, `600`) when every TAXAMT of the addendum is whole, as the reference's
text read gives them (`_whole_amounts`). Universe: interviews 2001-01 to
2002-03 of panels in the addendum with a resolved status; lags need the rebate amount too; the
current income and Parker total are always trimmed.

2008 (stimulus08). Every kept payment row is valid; its CUID must equal the matched interview's
CU id. Amount per interview = assigned total, 0 without payments. Late (Parker): a check paid
after 2008-08 or an EFT / unknown method after 2008-06; panel flags reported_any, late_any and
the timing group are internal columns. Universe: interviews 2007-09 to 2009-03 of panels
interviewed at least once in 2008-06 to 2009-03. Lags as cons_cex_total, rebate amount lagged
along.

Prompt: the cons_cex_total paragraphs plus a policy paragraph after the macro one: the program
sentence, the current window's amount (or "no ... is recorded"), and the amounts of each present
lag, newest first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hhx.config import TaskConfig
from hhx.errors import DataError
from hhx.tasks.cex import common as cx
from hhx.tasks.context import BuildContext
from hhx.tasks.prompting import format_dollars, render_macro_paragraph, response_instruction

# Publication order of the rows: the official script's sort keys (facts and source:
# hhx/tasks/output_order.csv, cons_cex_rebate01, cons_cex_stimulus08).
OUTPUT_ORDER = ("id:text", "time:text")

VALID_FLAGS = ("D", "E", "F", "G", "T", "U", "V", "W")
REBATE = "rebate_amount_total"
LAGGED = ["income_before_tax", *cx.EXPENDITURES, "cons_food", *cx.CUTOFF_COLUMNS, REBATE,
          "interview_month_index"]
CURRENT = [*cx.DEMOGRAPHICS, "n_adults", "income_before_tax", "release_date",
           "release_date_source"]


def _month(year: int, month: int) -> int:
    return year * 12 + month


RULES = {
    "cons_cex_rebate01": {
        "addendum": "cex_rebate_2001", "package": "intrvw01.zip",
        "window": (_month(2001, 1), _month(2002, 3)),
        "history": [*cx.EXPENDITURES, REBATE],
        "intro": "The federal government has recently implemented a policy of sending tax "
                 "rebates to households who satisfy certain criteria.",
        "none": "Over the past three months, no tax rebate is recorded for your household.",
        "noun": "tax-rebate",
    },
    "cons_cex_stimulus08": {
        "addendum": "cex_stimulus_2008", "package": "intrvw08.zip",
        "window": (_month(2007, 9), _month(2009, 3)),
        "fielding": (_month(2008, 6), _month(2009, 3)),
        "history": list(cx.EXPENDITURES),
        "intro": "The federal government has recently implemented a policy of sending stimulus "
                 "payments to households who satisfy certain criteria.",
        "none": "Over the past three months, no stimulus payment is recorded for your household.",
        "noun": "stimulus-payment",
    },
}


def _rules(task: TaskConfig) -> dict[str, Any]:
    if task.name not in RULES:
        raise DataError(f"task {task.name}: hhx.tasks.cex.policy builds only {sorted(RULES)}")
    return RULES[task.name]


def _addendum(ctx: BuildContext, rules: Mapping[str, Any]) -> pd.DataFrame:
    path = ctx.intermediate_dir / f"{rules['addendum']}.parquet"
    if not path.is_file():
        raise DataError(
            f"{path}: not built; the CEX Interview inputs must include {rules['package']} (its "
            f"addendum), then `python -m hhx stage=build task={ctx.task.name}`"
        )
    return pd.read_parquet(path)


def _report_rows(reports: pd.DataFrame, cex: pd.DataFrame, what: str) -> np.ndarray:
    """Position in `cex` of each report's interview (its NEWID, any year); unmatched or
    ambiguous NEWIDs are errors."""
    index = pd.Series(np.arange(len(cex)), index=cex["newid"].to_numpy())
    counts = index.index.value_counts()
    newid = reports["newid"].astype("string").str.zfill(8)
    many = newid[newid.map(counts).fillna(0).gt(1).to_numpy()]
    if len(many):
        raise DataError(f"{what}: NEWID {many.iloc[0]} matches several cleaned interviews")
    missing = newid[~newid.isin(index.index)]
    if len(missing):
        raise DataError(
            f"{what}: NEWID(s) {missing.head(5).tolist()} match no interview of "
            "cex_interview.parquet; build the Interview packages that hold them"
        )
    return index.reindex(newid.to_numpy()).to_numpy(dtype=np.int64)


def _payment_index(cex: pd.DataFrame, rows: np.ndarray, month: pd.Series) -> np.ndarray:
    year = cex["interview_year"].to_numpy()[rows]
    interview_month = cex["interview_month"].to_numpy()[rows]
    month = month.to_numpy(dtype=np.int64)
    return (year - (month > interview_month)) * 12 + month


def _assign(cex: pd.DataFrame, payments: pd.DataFrame) -> np.ndarray:
    """Row of the panel's interview whose window holds each payment month (smallest offset);
    -1 when none."""
    key = pd.Series(np.arange(len(cex)), index=pd.MultiIndex.from_arrays(
        [cex["cex_panel_id"].to_numpy(), cex["interview_month_index"].to_numpy()]))
    out = np.full(len(payments), -1, dtype=np.int64)
    for offset in (3, 2, 1):  # the smallest offset is written last and wins
        target = pd.MultiIndex.from_arrays([payments["cex_panel_id"].to_numpy(),
                                            payments["payment_month_index"].to_numpy() + offset])
        hit = key.reindex(target).to_numpy(dtype="float64")
        ok = ~np.isnan(hit)
        out[ok] = hit[ok].astype(np.int64)
    return out


def _aggregate(cex: pd.DataFrame, payments: pd.DataFrame, extra: Mapping[str, tuple] | None = None
               ) -> pd.DataFrame:
    assigned = payments[payments["assigned"] >= 0]
    agg = {REBATE: ("amount", "sum"), "rebate_record_count": ("amount", "size"),
           "rebate_month_unique_count": ("payment_month", "nunique"),
           "rebate_month_first": ("payment_month", "min"),
           "rebate_month_last": ("payment_month", "max"), **(extra or {})}
    table = assigned.groupby("assigned").agg(**agg)
    out = table.reindex(np.arange(len(cex)))
    out.index = cex.index
    return out


def rebate_2001(cex: pd.DataFrame, reports: pd.DataFrame, what: str
                ) -> tuple[pd.DataFrame, dict[str, int]]:
    """Interview-level rebate status and amount (module notes)."""
    rows = _report_rows(reports, cex, what)
    panel = cex["cex_panel_id"].to_numpy()
    module_panels = set(panel[rows])

    def valid(flag: str) -> pd.Series:
        return reports[f"{flag}_flag"].fillna("").str.strip().str.upper().isin(VALID_FLAGS)

    q1 = pd.to_numeric(reports["taxq1"], errors="coerce")
    lead = pd.Series("unresolved_lead_in", index=reports.index)
    lead[valid("taxq1") & q1.eq(1)] = "valid_yes"
    lead[valid("taxq1") & q1.eq(2)] = "valid_no"
    checks, any_month = [], pd.Series(False, index=reports.index)
    pos_bad_month = pd.Series(False, index=reports.index)
    month_bad_amount = pd.Series(False, index=reports.index)
    for i in range(1, 6):
        month = pd.to_numeric(reports[f"taxmo{i}"], errors="coerce")
        amount = pd.to_numeric(reports[f"taxamt{i}"], errors="coerce")
        month_ok = valid(f"taxmo{i}") & month.between(1, 12)
        amount_ok = valid(f"taxamt{i}") & amount.gt(0)
        any_month |= month.notna()
        pos_bad_month |= amount_ok & ~month_ok
        month_bad_amount |= month_ok & ~amount_ok
        checks.append(pd.DataFrame({"report": np.arange(len(reports)), "month": month,
                                    "amount": amount, "ok": month_ok & amount_ok}))
    status = pd.Series("resolved_report", index=reports.index)
    status[lead.eq("unresolved_lead_in")] = "unresolved_lead_in"
    status[lead.eq("valid_no") & any_month] = "contradictory_no_with_check"
    status[lead.eq("valid_yes") & ~any_month] = "contradictory_yes_without_check"
    status[month_bad_amount] = "invalid_or_zero_amount"
    status[pos_bad_month] = "invalid_positive_month"
    invalid_panels = set(panel[rows[pos_bad_month.to_numpy()]])

    pay = pd.concat(checks, ignore_index=True)
    resolved_report = (status.to_numpy() == "resolved_report")[pay["report"].to_numpy()]
    pay = pay[pay["ok"].to_numpy() & resolved_report]
    reported = rows[pay["report"].to_numpy()]
    pay = pay.assign(reported=reported, cex_panel_id=panel[reported],
                     payment_month=pay["month"].astype("int64"))
    pay["payment_month_index"] = _payment_index(cex, reported, pay["month"])
    pay["assigned"] = _assign(cex, pay)
    # Recall shift: moved to the reporting interview (module notes).
    lead_by_row = pd.Series(lead.to_numpy(), index=rows)
    target_lead = lead_by_row.reindex(pay["assigned"].to_numpy()).to_numpy()
    own_period = set(pay.loc[pay["assigned"].eq(pay["reported"]), "reported"])
    shift = (pay["assigned"].ge(0) & pay["assigned"].ne(pay["reported"])
             & (target_lead == "valid_no") & ~pay["reported"].isin(own_period))
    pay.loc[shift, "assigned"] = pay.loc[shift, "reported"]
    counts = {"valid_checks": len(pay), "assigned_checks": int(pay["assigned"].ge(0).sum()),
              "recall_shifted_checks": int(shift.sum())}
    out = _aggregate(cex, pay)
    report_status = pd.Series(pd.NA, index=cex.index, dtype="object")
    report_lead = pd.Series(pd.NA, index=cex.index, dtype="object")
    report_status.iloc[rows] = status.to_numpy()
    report_lead.iloc[rows] = lead.to_numpy()
    positive = out[REBATE].gt(0).fillna(False)
    state = pd.Series("unresolved_no_module_data", index=cex.index)
    state[positive] = "valid_positive"
    state[report_lead.isin(["valid_no", "valid_yes"]) & report_status.eq("resolved_report")
          & ~positive] = "valid_zero"
    in_module = cex["cex_panel_id"].isin(module_panels)
    end, start = cex["interview_month_index"] - 1, cex["interview_month_index"] - 3
    state[in_module & (end.le(_month(2001, 6)) | start.ge(_month(2001, 10))) & ~positive] = \
        "valid_zero"
    invalid_row = report_status.notna() & report_status.ne("resolved_report")
    state[invalid_row] = report_status[invalid_row]
    state[cex["cex_panel_id"].isin(invalid_panels)] = "invalid_positive_month_household"
    resolved = state.isin(["valid_positive", "valid_zero"])
    out[REBATE] = out[REBATE].where(resolved)
    out.loc[state.eq("valid_zero"), REBATE] = 0.0
    out["rebate_status"] = state
    out["_in_module"] = in_module
    return out, counts


def stimulus_2008(cex: pd.DataFrame, rows_in: pd.DataFrame, what: str
                  ) -> tuple[pd.DataFrame, dict[str, int]]:
    """Interview-level stimulus amounts and the Parker timing flags (module notes)."""
    rows = _report_rows(rows_in, cex, what)
    cu = cex["cu_id_raw"].to_numpy()[rows]
    cuid = rows_in["cuid"].astype("string").str.zfill(7).to_numpy()
    if (cu != cuid).any():
        i = int(np.flatnonzero(cu != cuid)[0])
        raise DataError(f"{what}: CUID {cuid[i]} of NEWID {rows_in['newid'].iloc[i]} differs "
                        f"from the interview's CU id {cu[i]}")
    panel = cex["cex_panel_id"].to_numpy()
    method = pd.to_numeric(rows_in["chckeft"], errors="coerce").to_numpy(dtype="float64")
    pay = pd.DataFrame({"reported": rows, "cex_panel_id": panel[rows],
                        "amount": rows_in["rbtamt"].to_numpy(dtype="float64"),
                        "payment_month": rows_in["rbtmo"].to_numpy(dtype="int64")})
    pay["payment_month_index"] = _payment_index(cex, rows, pay["payment_month"])
    pay["late"] = ((method == 1) & (pay["payment_month_index"] > _month(2008, 8))) | (
        (np.isnan(method) | (method == 2)) & (pay["payment_month_index"] > _month(2008, 6)))
    pay["assigned"] = _assign(cex, pay)
    out = _aggregate(cex, pay, {"stimulus_payment_late_in_period": ("late", "max")})
    out[REBATE] = out[REBATE].fillna(0.0)
    out["rebate_record_count"] = out["rebate_record_count"].fillna(0).astype(int)
    out["stimulus_payment_late_in_period"] = out["stimulus_payment_late_in_period"].eq(True).astype(
        int)
    late_any = pay.groupby("cex_panel_id")["late"].max()
    reported_any = cex["cex_panel_id"].isin(late_any.index).fillna(False).astype(bool)
    late = cex["cex_panel_id"].map(late_any).eq(True).fillna(False).astype(bool)
    out["stimulus_payment_reported_any"] = reported_any.astype(int)
    out["stimulus_late_reported_any"] = late.astype(int)
    out["stimulus_timing_group"] = np.select(
        [late, reported_any], ["late_payment_reporter", "on_time_only_payment_reporter"],
        "no_positive_payment_reported")
    counts = {"valid_payments": len(pay), "assigned_payments": int(pay["assigned"].ge(0).sum())}
    return out, counts


def build_table(ctx: BuildContext) -> pd.DataFrame:
    task = ctx.task
    rules = _rules(task)
    steps = cx.Steps()
    cex = cx.load_panel(ctx, [*cx.EXPENDITURES, "cons_food", "cu_id_raw"])
    attrs = dict(cex.attrs)
    cex = cx.attach_cutoffs(cex, task.name).reset_index(drop=True)
    steps.step("Start from source observations", len(cex), len(cex))
    before = len(cex)
    cex = cx.attach_macro(cex, ctx)
    addendum = _addendum(ctx, rules)
    where = f"{ctx.intermediate_dir / rules['addendum']}.parquet"
    if task.name == "cons_cex_rebate01":
        policy, counts = rebate_2001(cex, addendum, where)
    else:
        policy, counts = stimulus_2008(cex, addendum, where)
    cex = pd.concat([cex, policy], axis=1)
    steps.step("Attach additional sources", before, len(cex))
    cex = cx.add_lags(cex, LAGGED, rules["history"])
    steps.step("Construct leads and lags", len(cex), len(cex))
    first, last = rules["window"]
    in_window = cex["interview_month_index"].between(first, last)
    if task.name == "cons_cex_rebate01":
        universe = [("interview_in_paper_window", in_window),
                    ("cu_observed_in_rebate_module", cex["_in_module"]),
                    ("rebate_status_resolved",
                     cex["rebate_status"].isin(["valid_positive", "valid_zero"]))]
    else:
        lo, hi = rules["fielding"]
        fielding = set(cex.loc[cex["interview_month_index"].between(lo, hi), "cex_panel_id"])
        universe = [("interview_in_history_window", in_window),
                    ("cu_observed_in_stimulus_fielding_window",
                     cex["cex_panel_id"].isin(fielding))]
    cex = cx.apply(cex, steps, "Restrict universe", universe)
    cex = cx.apply(cex, steps, "Require observed targets",
                   [(f"target_{c}_not_missing", cex[c].notna()) for c in cx.EXPENDITURES])
    pool = cx.apply(cex, steps, "Require observed predictors", [
        (f"predictor_{c}_not_missing", cex[c].notna())
        for c in [*CURRENT, *[f"{h}_lag1" for h in rules["history"]]]
    ])
    pool = cx.apply(pool, steps, "Apply logical and validity filters",
                    cx.validity_filters(pool, cx.EXPENDITURES))
    pool = cx.apply(pool, steps, "Apply outlier trimming", cx.trim_filters(pool, task.name))
    cx.check_lag_structure(pool, rules["history"], task.name)
    pool.attrs.update(attrs)
    for name, count in counts.items():
        steps.step(f"(payments) {name}", count, count)
    internal = {"_newid": pool["newid"]}
    for column in ("rebate_status", "stimulus_timing_group", "stimulus_payment_reported_any",
                   "stimulus_late_reported_any", "stimulus_payment_late_in_period",
                   "rebate_record_count"):
        if column in pool:
            internal[f"_{column}"] = pool[column]
    table = cx.public_table(pool, ctx, steps, internal)
    if task.name == "cons_cex_rebate01" and _whole_amounts(addendum):
        table = _integer_amounts(table)
    return table


def _whole_amounts(reports: pd.DataFrame) -> bool:
    """Whether every TAXAMT1-5 value of the 2001 addendum is a whole number. The reference
    reads TAX013/TAX014 as text and converts them with pd.to_numeric, which gives Int64 when
    every text is an integer; the sums, the zeros of valid_zero interviews and the lags then
    stay Int64 (written `0`, `600`). hhx's intermediate holds the amounts as float64, so an
    integral text written with a decimal point (`600.0`, Float64 there) cannot be told apart."""
    x = reports[[f"taxamt{i}" for i in range(1, 6)]].to_numpy(dtype="float64", na_value=np.nan)
    x = x[~np.isnan(x)]
    return bool(np.all(x == np.round(x)))


def _integer_amounts(table: pd.DataFrame) -> pd.DataFrame:
    """The rebate amount and its lags as integers (missing stays missing: the lags of a row
    without that history are blank)."""
    amounts = [REBATE, *(f"{REBATE}_lag{k}" for k in (1, 2, 3))]
    for column in amounts:
        table[column] = table[column].round().astype("Int64")
    table.attrs["float_columns"] = [c for c in table.attrs["float_columns"] if c not in amounts]
    return table


def policy_paragraph(row: Mapping[str, Any], lags: list[int], rules: Mapping[str, Any]) -> str:
    amount = float(row[REBATE])
    current = (
        "Over the past three months, your household received a total of "
        f"{format_dollars(amount)} as part of the program." if amount > 0 else rules["none"]
    )
    parts = [f"{format_dollars(float(row[f'{REBATE}_lag{k}']))} {cx.LAG_LABELS[k]}" for k in lags]
    noun = rules["noun"]
    if len(parts) == 1:
        history = f"Before this, the {noun} amount recorded for your household was {parts[0]}."
    else:
        listed = f"{parts[0]} and {parts[1]}" if len(parts) == 2 else \
            ", ".join(parts[:-1]) + f", and {parts[-1]}"
        history = f"Before this, the {noun} amounts recorded for your household were {listed}."
    return " ".join([rules["intro"], current, history])


def render(row: Mapping[str, Any], task: TaskConfig) -> tuple[str, str]:
    rules = _rules(task)
    lags = cx.available_lags(row, [*cx.EXPENDITURES, REBATE])
    if any(float(row[f"{REBATE}_lag{k}"]) < 0 for k in lags) or float(row[REBATE]) < 0:
        raise DataError(f"task {task.name}: negative payment amount for id {row.get('id')!r}")
    history = [cx.expenditure_sentence(row, k) for k in reversed(lags)]
    user = "\n\n".join([
        cx.background_paragraph(row),
        cx.spending_paragraph(row, history),
        render_macro_paragraph(row),
        policy_paragraph(row, lags, rules),
        cx.EXPENDITURE_QUESTION,
        response_instruction(task, lead=cx.EXPENDITURE_LEAD),
    ])
    return cx.SYSTEM_PROMPT, user


def naive_baseline(row: Mapping[str, Any], task: TaskConfig) -> list:
    return cx.rounded(row, [f"{c}_lag1" for c in task.targets])


def reference_answer(row: Mapping[str, Any], task: TaskConfig) -> list:
    return cx.rounded(row, task.targets)
