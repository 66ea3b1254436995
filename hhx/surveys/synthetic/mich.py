"""Seeded synthetic Michigan Surveys of Consumers extract (`mich.csv`) in the archive's format.

Demo data only, not findings about households. Layout as the SCA data archive serves it:
comma-delimited, one header line of upper-case variable names, numeric codes, blank cells for
questions not asked (no quoting). The column set is the variables hhx reads plus a few archive
companions (YYYYQ, YYYY, IDPREV2, DATEPR2, SAMPLE, METHOD, ICS, ICC, ICE, BUS5, UNEMP, RATEX,
INEX); the real 118-variable extract has more, which the reader passes through.

Design: rotating panel as the SCA runs it: each month a fresh cross-section; part of it is
reinterviewed 6 (sometimes 7 or 8) months later, part of those a third time. Panels may have
begun before `start`, so some first rows in the file point (DATEPR, IDPREV) at interviews the
file lacks. Missing codes are written as the codebook does (8/9 DK/NA for 1-3-5 items; -97, 96,
98, 99 for PX1/PX5; out-of-range household counts), and `synthetic_mich_frames` returns the
truth (clean values and true links) next to the raw frame so tests can check a build against it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import ConfigError
from hhx.io import write_text_atomic
from hhx.surveys.synthetic import month_index, write_sidecar

COLUMNS = [
    "CASEID", "YYYYMM", "YYYYQ", "YYYY", "ID", "IDPREV", "DATEPR", "IDPREV2", "DATEPR2",
    "SAMPLE", "METHOD", "ICS", "ICC", "ICE", "PAGO", "PEXP", "BAGO", "BUS12", "BUS5", "UNEMP",
    "GOVT", "RATEX", "PX1", "PX5", "INEXQ1", "INEXQ2", "INEX", "DUR", "HOM", "SHOM", "CAR",
    "AGE", "REGION", "SEX", "MARRY", "NUMKID", "NUMADT", "EDUC", "INCOME", "WT",
]  # fmt: skip
_ITEMS_135 = ["PAGO", "PEXP", "BAGO", "UNEMP", "GOVT", "RATEX", "INEX", "DUR", "HOM", "SHOM", "CAR"]
_MISSING_SHARE = 0.04


def _month_index(text: str, what: str) -> int:
    return month_index(text, what, "Michigan")


def _panels(rng: np.random.Generator, first: int, last: int, per_month: int) -> pd.DataFrame:
    """One row per interview written: panel, wave among written rows, month index, true parent."""
    rows = []
    panel = 0
    for start in range(first - 8, last + 1):  # panels begun up to 8 months before the file
        for _ in range(rng.poisson(per_month)):
            waves = rng.choice([1, 2, 3], p=[0.6, 0.3, 0.1])
            months = [start]
            for _ in range(waves - 1):
                months.append(months[-1] + int(rng.choice([6, 7, 8], p=[0.8, 0.12, 0.08])))
            for k, m in enumerate(months):
                if first <= m <= last:
                    rows.append((panel, k, m, months[k - 1] if k else -1))
            panel += 1
    frame = pd.DataFrame(rows, columns=["panel", "wave_all", "month_index", "prev_month_index"])
    return frame.sort_values(["month_index", "panel"], kind="stable").reset_index(drop=True)


def _coded(rng, n, codes, p=None, missing=(8, 9)) -> tuple[np.ndarray, np.ndarray]:
    """(raw codes with some DK/NA codes, clean values with NaN there)."""
    clean = rng.choice(codes, size=n, p=p).astype("float64")
    lost = rng.random(n) < _MISSING_SHARE
    raw = np.where(lost, rng.choice(missing, size=n), clean)
    return raw, np.where(lost, np.nan, clean)


def synthetic_mich_frames(
    *, seed: int, start: str = "2019-01", end: str = "2026-02", per_month: int = 40
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(raw extract as written, truth). Truth columns: CASEID, true_prev_caseid,
    true_panel_id, true_panel_wave, link_expected and the clean value of each coded column."""
    first, last = _month_index(start, "start"), _month_index(end, "end")
    if last < first:
        raise ConfigError(f"synthetic Michigan: end {end} is before start {start}")
    if per_month < 1:
        raise ConfigError(f"synthetic Michigan: per_month must be >= 1, got {per_month}")
    rng = np.random.default_rng(int(seed))
    iv = _panels(rng, first, last, per_month)
    n = len(iv)
    yyyymm = (iv["month_index"] // 12) * 100 + iv["month_index"] % 12 + 1
    iv["YYYYMM"] = yyyymm
    iv["CASEID"] = np.arange(1, n + 1)
    # ID: random order within the month, as the archive numbers interviews per month
    iv["ID"] = iv.groupby("month_index")["panel"].transform(lambda s: rng.permutation(len(s)) + 1)
    key = {(p, w): i for i, (p, w) in enumerate(zip(iv["panel"], iv["wave_all"], strict=True))}
    parent = np.array(
        [key.get((p, w - 1), -1) for p, w in zip(iv["panel"], iv["wave_all"], strict=True)]
    )
    grand = np.array(
        [key.get((p, w - 2), -1) for p, w in zip(iv["panel"], iv["wave_all"], strict=True)]
    )

    def prev_fields(months: np.ndarray, rows: np.ndarray, lag: int) -> tuple:
        has = iv["wave_all"].to_numpy() >= lag
        datepr = np.where(has, (months // 12) * 100 + months % 12 + 1, np.nan)
        # a predecessor outside the file keeps its true date; its ID is drawn
        ids = np.where(rows >= 0, iv["ID"].to_numpy()[np.maximum(rows, 0)], rng.integers(1, 60, n))
        return datepr, np.where(has, ids, np.nan)

    prev_month = iv["prev_month_index"].to_numpy()
    iv["DATEPR"], iv["IDPREV"] = prev_fields(prev_month, parent, 1)
    grand_month = np.where(grand >= 0, iv["month_index"].to_numpy()[np.maximum(grand, 0)], 0)
    iv["DATEPR2"], iv["IDPREV2"] = prev_fields(grand_month, grand, 2)
    iv.loc[grand < 0, ["DATEPR2", "IDPREV2"]] = np.nan  # only kept when the file has wave 1

    raw = pd.DataFrame({"CASEID": iv["CASEID"], "YYYYMM": yyyymm})
    raw["YYYYQ"] = (yyyymm // 100) * 10 + ((yyyymm % 100) - 1) // 3 + 1
    raw["YYYY"] = yyyymm // 100
    for column in ("ID", "IDPREV", "DATEPR", "IDPREV2", "DATEPR2"):
        raw[column] = iv[column]
    raw["SAMPLE"] = np.where(iv["wave_all"] > 0, 2, 1)  # 1 new, 2 reinterview
    raw["METHOD"] = np.where(yyyymm >= 202404, rng.choice([1, 2], size=n, p=[0.2, 0.8]), 1)
    raw.loc[yyyymm >= 202407, "METHOD"] = 2
    month_level = rng.normal(80, 10, last - first + 1)
    offset = iv["month_index"].to_numpy() - first
    raw["ICS"] = np.round(month_level[offset], 1)
    raw["ICC"] = np.round(month_level[offset] * 1.1, 1)
    raw["ICE"] = np.round(month_level[offset] * 0.9, 1)

    truth = pd.DataFrame({"CASEID": iv["CASEID"]})
    truth["true_prev_caseid"] = pd.array(
        np.where(parent >= 0, iv["CASEID"].to_numpy()[np.maximum(parent, 0)], 0), dtype="Int64"
    )
    truth.loc[parent < 0, "true_prev_caseid"] = pd.NA
    first_written = iv.groupby("panel")["CASEID"].transform("min")
    truth["true_panel_id"] = first_written.to_numpy()
    truth["true_panel_wave"] = iv.groupby("panel").cumcount().to_numpy() + 1
    truth["link_expected"] = iv["wave_all"].to_numpy() > 0

    for column in _ITEMS_135:
        raw[column], truth[column] = _coded(rng, n, [1, 3, 5])
    raw["BUS12"], truth["BUS12"] = _coded(rng, n, [1, 2, 3, 4, 5])
    raw["BUS5"], _ = _coded(rng, n, [1, 2, 3, 4, 5])
    raw["INEXQ1"], truth["INEXQ1"] = _coded(rng, n, [1, 2, 3, 5], p=[0.4, 0.15, 0.35, 0.1])
    change = np.abs(np.round(rng.normal(4, 5, n)))
    has_change = np.isin(truth["INEXQ1"], [1, 2, 5])
    raw["INEXQ2"] = np.where(has_change, change, np.nan)
    truth["INEXQ2"] = raw["INEXQ2"]
    for column, centre, spread in (("PX1", 3.5, 5.0), ("PX5", 3.0, 3.0)):
        clean = np.clip(np.round(rng.normal(centre, spread, n)), -95, 95)
        wild = rng.random(n) < 0.02  # outliers beyond |25| that stay valid
        clean = np.where(wild, rng.choice([-40, 30, 50, 95], size=n), clean)
        lost = rng.random(n) < _MISSING_SHARE
        raw[column] = np.where(lost, rng.choice([-97, 96, 98, 99], size=n), clean)
        truth[column] = np.where(lost, np.nan, clean)
    raw["AGE"] = rng.integers(18, 98, n)
    raw["REGION"] = rng.choice([1, 2, 3, 4], size=n)
    raw["SEX"] = rng.choice([1, 2], size=n)
    raw["MARRY"] = rng.choice([1, 2, 3, 4, 5], size=n, p=[0.55, 0.02, 0.13, 0.1, 0.2])
    for column, codes, bad in (("NUMKID", [0, 1, 2, 3, 4], [6, 8]), ("NUMADT", [1, 2, 3, 4], [6])):
        clean = rng.choice(codes, size=n).astype("float64")
        lost = rng.random(n) < 0.02
        raw[column] = np.where(lost, rng.choice(bad, size=n), clean)
        truth[column] = np.where(lost, np.nan, clean)
    raw["EDUC"] = rng.choice([1, 2, 3, 4, 5, 6], size=n)
    income = np.round(np.exp(rng.normal(11.0, 0.8, n)), -2)
    income = np.where(rng.random(n) < 0.01, 500_000, np.minimum(income, 500_000))
    raw["INCOME"] = np.where(rng.random(n) < 0.05, np.nan, income)  # blank: not reported
    raw["WT"] = np.round(rng.lognormal(0, 0.3, n), 4)
    return raw[COLUMNS], truth


def _cells(values: pd.Series) -> pd.Series:
    """Integers without a decimal point, blanks for NaN, decimals as they are."""
    text = values.map(lambda v: "" if pd.isna(v) else (f"{int(v)}" if v == int(v) else f"{v}"))
    return text


def write_synthetic_mich(
    path: str | Path,
    *,
    seed: int,
    start: str = "2019-01",
    end: str = "2026-02",
    per_month: int = 40,
) -> Path:
    """Write a synthetic `mich.csv` (plus its `.synthetic.json` sidecar). Same seed, same bytes."""
    raw, _ = synthetic_mich_frames(seed=seed, start=start, end=end, per_month=per_month)
    lines = [",".join(COLUMNS)]
    cells = pd.DataFrame({c: _cells(raw[c]) for c in COLUMNS})
    lines += cells.apply(",".join, axis=1).tolist()
    p = Path(path)
    write_text_atomic(p, "\n".join(lines) + "\n")
    write_sidecar(p, "hhx.surveys.synthetic.mich",
                  "seeded synthetic data in the Michigan SCA archive CSV format; not survey data",
                  seed=int(seed), start=start, end=end, per_month=int(per_month))
    return p


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--start", default="2019-01")
    parser.add_argument("--end", default="2026-02")
    parser.add_argument("--per-month", type=int, default=40)
    a = parser.parse_args()
    write_synthetic_mich(a.path, seed=a.seed, start=a.start, end=a.end, per_month=a.per_month)


if __name__ == "__main__":
    main()
