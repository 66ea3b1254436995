"""Seeded synthetic BLS CE Interview packages (`intrvwYY.zip`) in the public-use FMLI layout.

Demo data only: consumer units (CUs), their characteristics and spending are drawn from simple
models (spending rises with income, family size and, for health, age; cars and furniture are
lumpy; levels near the CE's 2019 means; 3% of CUs report almost no income and 2% of interviews
almost no spending, so the builder's screens have cases); nothing computed from them is a
finding about households.

This module assembles the packages and their truth and holds the public entry points; the parts
live beside it: `cex_interview_panel` (the CU panel, its spending and its rebate / stimulus
payments), `cex_interview_fmli` (the FMLI layout by quarter, its rows and their truth) and
`cex_interview_addenda` (the 2001 rebate and 2008 stimulus addenda).

Packages. `intrvwYY.zip` holds `intrvwYY/fmliYY1x.csv`, `fmliYY2.csv`, `fmliYY3.csv`,
`fmliYY4.csv` and the next year's first quarter `fmli<YY+1>1.csv`, plus `mtbiYYQ[x].csv` rent
lines (UCC 210110) of renters in the MTBI header of BLS's layout stub. A first quarter is
therefore published twice, by consecutive packages; the later copy has recalibrated weights
(FINLWT21), everything else equal. Package 2001 also holds the tax rebate addendum
(TAX013/TAX014), package 2008 the stimulus file `expn08/rbt08.csv`.
"""

from __future__ import annotations

import functools
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from hhx.errors import ConfigError
from hhx.io import atomic_path
from hhx.surveys.synthetic import generator_label, write_sidecar
from hhx.surveys.synthetic.cex.interview_addenda import _stimulus_file, _tax_addendum
from hhx.surveys.synthetic.cex.interview_fmli import (
    MTBI_COLUMNS,
    _csv,
    _fmli_row,
    _money,
    _truth_row,
    fmli_columns,
)
from hhx.surveys.synthetic.cex.interview_fmli import SUMMARY_BASES as SUMMARY_BASES  # tests
from hhx.surveys.synthetic.cex.interview_panel import _qi, _Record, _simulate

GENERATOR = generator_label("cex_interview")


def _check(years: Iterable[int], n_cu_per_quarter: int) -> list[int]:
    out = sorted({int(y) for y in years})
    if not out:
        raise ConfigError("synthetic CEX Interview: years is empty")
    bad = [y for y in out if y < 1980 or y in (1982, 1983)]
    if bad:
        raise ConfigError(
            f"synthetic CEX Interview: no Interview package exists for {bad[0]} (BLS packages: "
            "1980, 1981, 1984 on)"
        )
    if n_cu_per_quarter < 1:
        raise ConfigError("synthetic CEX Interview: n_cu_per_quarter must be at least 1")
    return out


def _members(year: int) -> list[tuple[int, str]]:
    """(quarter index, member name) of package `year`."""
    yy, ny = year % 100, (year + 1) % 100
    names = [(_qi(year, 1), f"fmli{yy:02d}1x")]
    names += [(_qi(year, q), f"fmli{yy:02d}{q}") for q in (2, 3, 4)]
    names.append((_qi(year + 1, 1), f"fmli{ny:02d}1"))
    return names


@functools.lru_cache(maxsize=1)  # writing and truth of the same arguments share one draw
def _generate(seed: int, years: tuple[int, ...], n: int) -> tuple[
    dict[int, dict[str, bytes]], pd.DataFrame, dict[str, pd.DataFrame]
]:
    quarters = {q for y in years for q in range(_qi(y, 1), _qi(y + 1, 1) + 1)}
    records = _simulate(seed, quarters, n)
    by_q: dict[int, list[_Record]] = {}
    for rec in records:
        by_q.setdefault(rec.q, []).append(rec)
    files: dict[int, dict[str, bytes]] = {}
    packages: dict[tuple[str, int, int], list[int]] = {}
    truth_rows: dict[tuple[str, int, int], dict[str, Any]] = {}
    for year in years:
        yy = year % 100
        files[year] = {}
        for q, stem in _members(year):
            layout_q = min(q, _qi(year, 4))
            columns = fmli_columns(layout_q)
            later_copy = 1 if q == _qi(year, 1) else 0  # fmliYY1x = second publication
            recs = by_q.get(q, [])
            rows = [_fmli_row(rec, layout_q, later_copy) for rec in recs]
            files[year][f"intrvw{yy:02d}/{stem}.csv"] = _csv(columns, rows)
            mtbi = [
                {"NEWID": rec.newid, "COST": _money(c), "PUBFLAG": "2", "UCC": "210110",
                 "REF_MO": f"{m:02d}", "REF_YR": str(y)}
                for rec in recs for c, m, y in rec.rent
            ]  # fmt: skip
            files[year][f"intrvw{yy:02d}/{stem.replace('fmli', 'mtbi')}.csv"] = _csv(
                MTBI_COLUMNS, mtbi
            )
            for rec, row in zip(recs, rows, strict=True):
                key = (rec.newid, rec.year, rec.month)
                packages.setdefault(key, []).append(year)
                if key in truth_rows and truth_rows[key]["cex_retained_package_year"] > year:
                    continue
                truth_rows[key] = _truth_row(rec, row, layout_q, year, stem)
    truth = pd.DataFrame(list(truth_rows.values()))
    keys = list(zip(truth["newid"], truth["interview_year"], truth["interview_month"],
                    strict=True))
    truth["cex_first_release_year"] = [min(packages[k]) for k in keys]
    truth["cex_overlap_versions"] = [len(packages[k]) for k in keys]
    truth = truth.sort_values(["newid", "interview_year", "interview_month"]).reset_index(
        drop=True
    )
    addenda: dict[str, pd.DataFrame] = {}
    if 2001 in years:
        tax_files, addenda["rebate_2001"] = _tax_addendum(seed, by_q)
        files[2001].update(tax_files)
    if 2008 in years:
        rbt_files, addenda["stimulus_2008"] = _stimulus_file(seed, by_q)
        files[2008].update(rbt_files)
    return files, truth, addenda


def synthetic_cex_interview_truth(
    *, seed: int, years: Iterable[int], n_cu_per_quarter: int
) -> pd.DataFrame:
    """One row per record written (newid, interview_year, interview_month): the values of the
    copy a builder should keep (latest package), the packages holding it, and the generator's
    3-month spending totals `cons_*` (dollars), frame and CU attributes."""
    ys = _check(years, n_cu_per_quarter)
    return _generate(int(seed), tuple(ys), int(n_cu_per_quarter))[1].copy()


def synthetic_cex_addenda_truth(
    *, seed: int, years: Iterable[int], n_cu_per_quarter: int
) -> dict[str, pd.DataFrame]:
    """What the generator wrote into the rebate addenda of packages 2001 / 2008 (keys
    "rebate_2001", "stimulus_2008", present when that year is generated).

    rebate_2001: one row per TAX013/TAX014 record: newid, cex_quarter_token, the reporting
    interview (interview_year, interview_month, cex_panel_id), each field's value (`taxq1`,
    `taxmo1`, `taxamt1`, ...: float, None = blank), flag (`taxq1_flag`) and what the flag means
    (`taxq1_intent`: valid / valid_blank / invalid), and `true_amount`, the rebates the CU
    received in the interview's reference months (what a perfect report would hold).
    stimulus_2008: one row per rbt08.csv row: newid, cuid, the drawn payment (rbtmo, rbtamt,
    chckeft 1 check / 2 EFT), howused, the reporting interview and `drop_reason` (None, or the
    keep rule the row was written to fail: bad_month, nonpositive_amount)."""
    ys = _check(years, n_cu_per_quarter)
    addenda = _generate(int(seed), tuple(ys), int(n_cu_per_quarter))[2]
    return {name: frame.copy() for name, frame in addenda.items()}


def write_synthetic_cex_interview(
    out_dir: str | Path, *, seed: int, years: Iterable[int], n_cu_per_quarter: int
) -> list[Path]:
    """Write one `intrvwYY.zip` per package year into `out_dir` (with a synthetic sidecar each);
    the same arguments give byte-identical archives. Returns the paths."""
    ys = _check(years, n_cu_per_quarter)
    files, _, _ = _generate(int(seed), tuple(ys), int(n_cu_per_quarter))
    out = Path(out_dir)
    paths = []
    for year in ys:
        target = out / f"intrvw{year % 100:02d}.zip"
        with atomic_path(target) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in files[year].items():
                info = zipfile.ZipInfo(name, date_time=(max(year, 1980), 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, data)
        write_sidecar(
            target,
            generator=GENERATOR,
            note="seeded synthetic CE Interview package; not BLS data",
            seed=int(seed),
            years=ys,
            n_cu_per_quarter=int(n_cu_per_quarter),
        )
        paths.append(target)
    return paths
