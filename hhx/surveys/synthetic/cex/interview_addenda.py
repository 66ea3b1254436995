"""Rebate addenda of the seeded synthetic CE Interview packages: the 2001 tax rebate
(TAX013/TAX014 in intrvw01.zip) and the 2008 stimulus payments (rbt08.csv in intrvw08.zip).

The payments themselves (who gets what, when) are drawn per CU by `cex_interview_panel`; what
is reported of them is drawn here, from the addenda's own report streams.

Package 2001 also holds `intrvw01/intrvw01/Addendum - Tax Rebate/TAX013.csv` and `TAX014.csv`
(the reference's path): about 2/3 of CUs got a 2001 rebate ($600 married, $500 single parent,
$300 other; a second $300 check for half the CUs with another adult), paid July-September
mostly, a few October-December; 96% of 2001Q3/Q4 interviews have an addendum record; TAXQ1 1/2
by whether a check falls in the reference months, the checks in TAXMO1-5 / TAXAMT1-5; flags D
(valid), A (valid blank), and some B/C (2% lead-in refused or don't know, 2% month not reported,
4% amount don't know).
Package 2008 also holds `expn08/rbt08.csv`: 85% of CUs got a stimulus payment ($300 or $600 per
adult filer by income, + $300 per child), EFT (40%) in May-June, checks May-July, a few later;
90% report it in the interview whose reference months hold the payment month (USDINTMO/YR =
that interview); 3% of rows lack the month, 3% the amount (flag C), which the keep rule drops.
The layout (column order, NA for missing) of these files is not taken from real files.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hhx.surveys.synthetic.cex.interview_fmli import _csv
from hhx.surveys.synthetic.cex.interview_panel import (
    _payment_plan,
    _qi,
    _Record,
    _stimulus_plan,
)

# --------------------------------------------------------------------------------------------
# Rebate addenda: 2001 tax rebate (TAX013/TAX014 in intrvw01.zip), 2008 stimulus (rbt08.csv)

TAX_MEMBER = "intrvw01/intrvw01/Addendum - Tax Rebate/TAX01{q}.csv"  # the reference's path
RBT_MEMBER = "expn08/rbt08.csv"
TAX_COLUMNS = ["NEWID", "TAXQ1", "TAXQ1_", "TAXQ3", "TAXQ3_"] + [
    c for i in range(1, 6) for c in (f"TAXMO{i}", f"TAXMO{i}_", f"TAXAMT{i}", f"TAXAMT{i}_")
]
RBT_COLUMNS = ["NEWID", "CUID", "RBTMO", "RBTMO_", "RBTAMT", "RBTAMT_", "CHCKEFT", "CHCKEFT_",
               "HOWUSED", "HOWUSED_", "USDINTMO", "USDINTYR"]


def _window(rec: _Record) -> list[tuple[int, int]]:
    """(year, month) of the three reference months before the interview month."""
    out = []
    for back in (3, 2, 1):
        m, y = rec.month - back, rec.year
        if m < 1:
            m, y = m + 12, y - 1
        out.append((y, m))
    return out


def _field(row: dict[str, str], truth: dict[str, object], var: str, value: str | None,
           flag: str) -> None:
    """Write a value and its flag; truth keeps the value and what the flag means."""
    row[var], row[f"{var}_"] = ("NA" if value is None else value), flag
    truth[var.lower()] = None if value is None else float(value)
    truth[f"{var.lower()}_flag"] = flag
    truth[f"{var.lower()}_intent"] = ("valid" if flag == "D" else
                                      "valid_blank" if flag == "A" else "invalid")


def _tax_addendum(seed: int, by_q: dict[int, list[_Record]]) -> tuple[dict[str, bytes],
                                                                      pd.DataFrame]:
    """TAX013/TAX014 of package 2001 and its truth (one row per record written)."""
    rng = np.random.default_rng([int(seed), 77, 2001])
    files, truth_rows = {}, []
    for quarter in (3, 4):
        rows = []
        for rec in by_q.get(_qi(2001, quarter), []):
            cu = rec.cu
            checks = [(m, a) for y, m, a in _payment_plan(seed, cu) if y == 2001]
            if rng.random() >= 0.96:  # the addendum was not completed
                continue
            window = [m for y, m in _window(rec) if y == 2001]
            mine = [c for c in checks if c[0] in window]
            row: dict[str, str] = {"NEWID": rec.newid}
            t: dict[str, object] = {"newid": rec.newid, "cex_quarter_token": f"01{quarter}",
                                    "interview_year": rec.year, "interview_month": rec.month,
                                    "cex_panel_id": f"{cu.frame}:{cu.cu_id:07d}",
                                    "true_amount": float(sum(a for _, a in mine))}
            lead = rng.random()
            if lead < 0.02:  # refused / don't know: invalid blank lead-in
                _field(row, t, "TAXQ1", None, "B" if lead < 0.012 else "C")
            else:
                _field(row, t, "TAXQ1", "1" if mine else "2", "D")
            if row["TAXQ1"] == "1":
                _field(row, t, "TAXQ3", "1" if rng.random() < 0.1 else "2", "D")
            else:
                _field(row, t, "TAXQ3", None, "A")
            for i in range(1, 6):
                if i <= len(mine) and row["TAXQ1"] != "NA":
                    month, amount = mine[i - 1]
                    if rng.random() < 0.02:
                        _field(row, t, f"TAXMO{i}", None, "B")  # month not reported
                    else:
                        _field(row, t, f"TAXMO{i}", str(month), "D")
                    if rng.random() < 0.04:
                        _field(row, t, f"TAXAMT{i}", None, "C")  # amount: don't know
                    else:
                        _field(row, t, f"TAXAMT{i}", str(amount), "D")
                else:
                    _field(row, t, f"TAXMO{i}", None, "A")
                    _field(row, t, f"TAXAMT{i}", None, "A")
            rows.append(row)
            truth_rows.append(t)
        files[TAX_MEMBER.format(q=quarter)] = _csv(TAX_COLUMNS, rows)
    return files, pd.DataFrame(truth_rows)


def _stimulus_file(seed: int, by_q: dict[int, list[_Record]]) -> tuple[dict[str, bytes],
                                                                       pd.DataFrame]:
    """expn08/rbt08.csv of package 2008 (interviews 2008Q2-2009Q1) and its truth (every row
    written, with the keep rule's outcome the generator intended)."""
    rng = np.random.default_rng([int(seed), 77, 2008])
    rows, truth_rows = [], []
    for q in range(_qi(2008, 2), _qi(2009, 1) + 1):
        for rec in by_q.get(q, []):
            cu = rec.cu
            pay = _stimulus_plan(seed, cu)
            if pay is None or (2008, pay[0]) not in _window(rec) or rng.random() >= 0.9:
                continue
            month, amount, mode = pay
            defect = rng.random()
            row = {"NEWID": rec.newid, "CUID": f"{cu.cu_id:07d}", "RBTMO": str(month),
                   "RBTMO_": "D", "RBTAMT": str(amount), "RBTAMT_": "D", "CHCKEFT": str(mode),
                   "CHCKEFT_": "D", "USDINTMO": str(rec.month), "USDINTYR": str(rec.year)}
            drop = None
            if defect < 0.03:  # month not reported
                row["RBTMO"], row["RBTMO_"], drop = "NA", "C", "bad_month"
            elif defect < 0.06:  # amount not reported
                row["RBTAMT"], row["RBTAMT_"], drop = "NA", "C", "nonpositive_amount"
            if rng.random() < 0.92:
                row["HOWUSED"] = str(int(rng.choice([1, 2, 3], p=[0.3, 0.3, 0.4])))
                row["HOWUSED_"] = "D"
            else:
                row["HOWUSED"], row["HOWUSED_"] = "NA", "B"
            rows.append(row)
            truth_rows.append({
                "newid": rec.newid, "cuid": f"{cu.cu_id:07d}", "rbtmo": month,
                "rbtamt": float(amount), "chckeft": mode,
                "howused": None if row["HOWUSED"] == "NA" else int(row["HOWUSED"]),
                "interview_year": rec.year, "interview_month": rec.month,
                "cex_panel_id": f"{cu.frame}:{cu.cu_id:07d}", "drop_reason": drop,
            })  # fmt: skip
    return {RBT_MEMBER: _csv(RBT_COLUMNS, rows)}, pd.DataFrame(truth_rows)
