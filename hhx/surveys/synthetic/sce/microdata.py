"""Seeded synthetic NY Fed SCE public microdata: the nine workbooks of spec 00_common.md 1.8.

Demo data only, not survey answers. Written in the NY Fed layouts hhx reads (hhx.surveys.sce.microdata):
the exact file names under `core/`, `household_spending/`, `labor_market/`, `public_policy/`,
`housing/`, `job_search/`; sheet `Data` with one title row above the header (core, spending,
labor market), ten title/note rows (public policy) or none (job search); housing sheets
`Data {year}` with `Codebook {year}` sheets for 2014-2024 (code in column B, label in column C);
integer codes, blank cells for questions not asked.

This module assembles the nine workbooks and their truth and holds the public entry points; the
parts live beside it: `sce_core` (the core panel, the answer building blocks and the `Sheet`
record) and `sce_topical` (the topical modules: household spending, labor market, public
policy, housing, job search).

Design
- Every workbook and sheet holds rows (the reference refuses empty ones); a span or size that
  would leave one empty is an error naming it.
- Only the columns the builders and the reference's SCE tasks read are written (the NY Fed
  files have many more), which keeps the workbooks small; they are written by
  hhx.surveys.synthetic.sce.xlsx.

`synthetic_sce(...)` returns the sheets as written and, per module, the truth a build must
recover (clean values and statuses the generator drew before writing codes, age and income
rule, the weight copy kept, reservation wage, labels).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hhx.errors import ConfigError
from hhx.io import atomic_path
from hhx.surveys.sce.items import BY_KEY
from hhx.surveys.synthetic import generator_label, month_index, write_sidecar
from hhx.surveys.synthetic.sce.core import CORE_FILE_YEARS, Sheet, _core
from hhx.surveys.synthetic.sce.core import LOCKIN_YEARS as LOCKIN_YEARS  # tests
from hhx.surveys.synthetic.sce.core import _panel as _panel  # tests
from hhx.surveys.synthetic.sce.topical import _housing, _job_search, _labor, _policy, _spending
from hhx.surveys.synthetic.sce.topical import _housing_names as _housing_names  # tests
from hhx.surveys.synthetic.sce.xlsx import write_xlsx

GENERATOR = generator_label("sce")
NOTE = "seeded synthetic data in the NY Fed SCE public microdata workbook layout; not survey data"
TITLE = ("Survey of Consumer Expectations, \u00a9 2013-{year} Federal Reserve Bank of New York "
         "(FRBNY). The SCE data are available without charge at www.newyorkfed.org/"
         "microeconomics/sce and may be used subject to license terms posted there.")


@dataclass
class SyntheticSCE:
    sheets: dict[str, list[Sheet]]  # raw key -> sheets in workbook order
    truth: dict[str, pd.DataFrame]  # module -> expected values, keyed like the build


def _month_index(text: str, what: str) -> int:
    return month_index(text, what, "SCE")


# ---------------------------------------------------------------------------------------------
# Assemble and write


def synthetic_sce(*, seed: int, start: str = "2013-06", end: str = "2026-06",
                  new_per_month: int = 12, lockin_entrants: int = 0) -> SyntheticSCE:
    """The nine workbooks' sheets and the truth, without writing anything."""
    first, last = _month_index(start, "start"), _month_index(end, "end")
    if last < first:
        raise ConfigError(f"synthetic SCE: end {end} is before start {start}")
    if new_per_month < 1:
        raise ConfigError(f"synthetic SCE: new_per_month must be >= 1, got {new_per_month}")
    rng = np.random.default_rng(int(seed))
    if lockin_entrants < 0:
        raise ConfigError(f"synthetic SCE: lockin_entrants must be >= 0, got {lockin_entrants}")
    files, core_truth, context = _core(rng, first, last, new_per_month, lockin_entrants)
    sheets: dict[str, list[Sheet]] = {}
    for key in CORE_FILE_YEARS:
        hi = min(CORE_FILE_YEARS[key][1], last // 12)
        sheets[key] = [Sheet("Data", [[TITLE.format(year=hi)]], files[key])]
    spending, spending_truth = _spending(rng, context, first)
    labor, labor_truth = _labor(rng, context, first)
    policy, policy_truth = _policy(rng, context, first)
    housing, housing_truth = _housing(rng, context, first)
    jobs, jobs_truth = _job_search(rng, context, first)
    title = [[TITLE.format(year=last // 12)]]
    sheets["household_spending"] = [Sheet("Data", title, spending)]
    sheets["labor_market"] = [Sheet("Data", title, labor)]
    policy_notes = [
        ["SCE Public Policy Survey: respondent-level public microdata"],
        [TITLE.format(year=last // 12)],
        [],
        ["Notes:"],
        ["qp1x1_N, qp1x2_N, qp1x3_N: percent chance of an increase, no change, a decrease in "
         "policy N; qp1x4_N = 1 if the respondent has no idea what policy N is."],
        ["hidqp2_N: direction of the hypothetical change shown (1 increase/expansion, "
         "2 decrease/reduction)."],
        ["qp2_N: expected impact on the household (1 very negative ... 5 very positive)."],
        ["Policies: 1 gasoline tax, 5 federal welfare benefits, 6 unemployment benefits, "
         "9 payroll tax rate, 16 average income tax rate, ..."],
        ["Blank cells: question not asked."],
        [],
    ]
    sheets["public_policy"] = [Sheet("Data", policy_notes, policy)]
    sheets["housing"] = [Sheet("Disclaimer", rows=[[TITLE.format(year=2024)]]), *housing]
    sheets["job_search"] = [
        Sheet("Disclaimer", rows=[[TITLE.format(year=last // 12)]]),
        Sheet("Notes", rows=[["SCE Job Search: October Labor Market Survey microdata"],
                             ["Codes 999992-999999 are documented special answers."]]),
        Sheet("Data", frame=jobs),
    ]
    truth = {"core": core_truth, "household_spending": spending_truth, "labor_market": labor_truth,
             "public_policy": policy_truth, "housing": housing_truth, "job_search": jobs_truth}
    empty = [f"{key} sheet {sh.name}" for key, group in sheets.items() for sh in group
             if sh.frame is not None and sh.frame.empty]
    if empty:  # the reference refuses a workbook or sheet without rows
        raise ConfigError(
            f"synthetic SCE {start} to {end} with new_per_month={new_per_month} leaves "
            f"{', '.join(empty)} without rows; use a span covering 2013-12 to 2025-01 (every "
            "core workbook, February housing waves 2014-2024, October job search) and more "
            "respondents")
    return SyntheticSCE(sheets, truth)


def _cell(v: Any) -> Any:
    """Python value for the workbook: blank for NaN/None, ints for whole-number codes."""
    if v is None:
        return None
    if isinstance(v, (float, np.floating)):
        if np.isnan(v):
            return None
        return int(v) if float(v).is_integer() and abs(float(v)) < 2**53 else float(v)
    if isinstance(v, np.integer):
        return int(v)
    return v


def _frame_rows(frame: pd.DataFrame) -> list[list]:
    columns = [[_cell(v) for v in frame[c].tolist()] for c in frame.columns]
    return [list(r) for r in zip(*columns, strict=True)] if len(frame) else []


def write_workbook(path: Path, sheets: list[Sheet]) -> Path:
    """One workbook (hhx.surveys.synthetic.sce.xlsx, much faster than openpyxl), atomically."""
    def rows(sheet: Sheet) -> list[list]:
        out = [*sheet.preamble]
        if sheet.frame is not None:
            out += [list(sheet.frame.columns), *_frame_rows(sheet.frame)]
        return out + sheet.rows

    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        write_xlsx(tmp, [(sheet.name, rows(sheet)) for sheet in sheets])
    return path


def write_synthetic_sce(sce_dir: str | Path, *, seed: int, start: str = "2013-06",
                        end: str = "2026-06", new_per_month: int = 12,
                        lockin_entrants: int = 0) -> dict[str, Path]:
    """Write the nine workbooks under `sce_dir` (the reference's data/raw/micro/sce) with
    their `.synthetic.json` sidecars; returns raw key -> path. Same seed, same content."""
    data = synthetic_sce(seed=seed, start=start, end=end, new_per_month=new_per_month,
                         lockin_entrants=lockin_entrants)
    out: dict[str, Path] = {}
    for key, sheets in data.sheets.items():
        path = Path(sce_dir) / Path(BY_KEY[key].path).relative_to("micro/sce")
        out[key] = write_workbook(path, sheets)
        write_sidecar(path, GENERATOR, NOTE, seed=int(seed), start=start, end=end,
                      new_per_month=int(new_per_month), lockin_entrants=int(lockin_entrants))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sce_dir", type=Path, help="folder that gets core/, housing/, ...")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--start", default="2013-06")
    parser.add_argument("--end", default="2026-06")
    parser.add_argument("--new-per-month", type=int, default=12)
    a = parser.parse_args()
    write_synthetic_sce(a.sce_dir, seed=a.seed, start=a.start, end=a.end,
                        new_per_month=a.new_per_month)


if __name__ == "__main__":
    main()
