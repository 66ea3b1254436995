"""Seeded synthetic FRED-QD (and FRED CPI group) files in the exact published layouts.

Demo data only: the series follow plausible business-cycle dynamics (expansions and recessions,
Okun's law, a Taylor rule) so the demo's macro context varies across quarters; they are not
U.S. history and nothing computed from them is a finding.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import ConfigError
from hhx.io import atomic_path
from hhx.surveys.macro.fred_qd import CPI_FRED_SERIES, parse_quarter
from hhx.surveys.synthetic import generator_label, write_sidecar

# Published column order of the real file (a subset), with its `factors` and `transform` codes.
_COLUMNS: list[tuple[str, int, int]] = [
    ("GDPC1", 0, 5),
    ("PCECC96", 0, 5),
    ("INDPRO", 0, 5),
    ("PAYEMS", 0, 5),
    ("UNRATE", 0, 2),
    ("HOUST", 0, 5),
    ("CPIAUCSL", 0, 6),
    ("FEDFUNDS", 1, 2),
    ("GS10", 0, 2),
    ("MORTGAGE30US", 0, 2),
    ("USSTHPI", 1, 5),
    ("S&P 500", 1, 5),
]
# As in the real file, these series start later than 1959 (blank cells before).
_FIRST_QUARTER = {"MORTGAGE30US": "1971Q2", "USSTHPI": "1975Q1"}


def _quarters(start: str, end: str) -> np.ndarray:
    first, last = parse_quarter(start), parse_quarter(end)
    if last < first:
        raise ConfigError(f"synthetic FRED-QD: end {end} is before start {start}")
    return np.arange(first, last + 1)


def _simulate(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Quarterly levels for every column; one pass so each series reacts to the cycle."""
    out = {name: np.empty(n) for name, _, _ in _COLUMNS}
    recession = False
    u, infl, ff, mort, gs10 = 5.8, 0.6, 2.6, 7.0, 4.0
    levels = {
        "GDPC1": 3350.0,
        "PCECC96": 2040.0,
        "INDPRO": 22.4,
        "PAYEMS": 52700.0,
        "CPIAUCSL": 29.0,
        "USSTHPI": 60.0,
        "S&P 500": 55.5,
    }
    recent_infl = [infl] * 4
    for t in range(n):
        # Markov regime: expansions last ~6 years on average, recessions ~4 quarters.
        recession = rng.random() < (0.75 if recession else 0.04)
        g = (-0.9 if recession else 0.75) + 0.45 * rng.standard_normal()
        u = float(
            np.clip(
                u - 0.35 * (g - 0.7) + 0.04 * (5.5 - u) + 0.1 * rng.standard_normal(), 3.4, 10.8
            )
        )
        infl = float(
            np.clip(
                0.6 + 0.88 * (infl - 0.6) - 0.12 * recession + 0.22 * rng.standard_normal(),
                -1.0,
                3.2,
            )
        )
        recent_infl = [*recent_infl[1:], infl]
        annual_infl = 4.0 * float(np.mean(recent_infl))
        target = 1.0 + annual_infl + 0.5 * (annual_infl - 2.0) - 0.5 * (u - 5.0)
        ff = float(np.clip(0.75 * ff + 0.25 * target + 0.15 * rng.standard_normal(), 0.05, 18.0))
        mort = float(
            np.clip(0.8 * mort + 0.2 * (ff + 2.6) + 0.1 * rng.standard_normal(), 2.7, 18.0)
        )
        gs10 = float(
            np.clip(0.8 * gs10 + 0.2 * (ff + 1.3) + 0.1 * rng.standard_normal(), 0.5, 16.0)
        )
        growth = {
            "GDPC1": g,
            "PCECC96": g + 0.1 + 0.25 * rng.standard_normal(),
            "INDPRO": 1.5 * g - 0.4 + 0.6 * rng.standard_normal(),
            "PAYEMS": 0.45 + 0.6 * (g - 0.7) + 0.15 * rng.standard_normal(),
            "CPIAUCSL": infl,
            "USSTHPI": 1.1 + 0.5 * (g - 0.7) + 0.7 * rng.standard_normal(),
            "S&P 500": 1.8 + 2.5 * (g - 0.7) + 6.5 * rng.standard_normal(),
        }
        for name, rate in growth.items():
            if t > 0:
                levels[name] *= 1.0 + rate / 100.0
            out[name][t] = levels[name]
        out["UNRATE"][t] = u
        out["FEDFUNDS"][t] = ff
        out["MORTGAGE30US"][t] = mort
        out["GS10"][t] = gs10
        out["HOUST"][t] = max(
            400.0, 1500.0 + 250.0 * (g - 0.7) - 60.0 * (mort - 7.0) + 80.0 * rng.standard_normal()
        )
    return out


def _cell(value: float) -> str:
    if not np.isfinite(value):
        return ""
    return f"{value:.4f}".rstrip("0").rstrip(".")


def write_synthetic_fred_qd(
    path: str | Path, *, seed: int, start: str = "1959Q1", end: str = "2026Q2"
) -> Path:
    """Write a FRED-QD file (header, `factors`, `transform`, M/D/YYYY rows) for start..end.

    Rows are dated like the published file: the first day of each quarter's last month
    (3/1, 6/1, 9/1, 12/1). Same seed, same bytes.
    """
    quarters = _quarters(start, end)
    series = _simulate(len(quarters), np.random.default_rng(seed))
    for name, first in _FIRST_QUARTER.items():
        series[name][quarters < parse_quarter(first)] = np.nan
    target = Path(path)
    with atomic_path(target) as tmp, tmp.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\r\n")  # the published file uses CRLF
        writer.writerow(["sasdate", *(name for name, _, _ in _COLUMNS)])
        writer.writerow(["factors", *(str(f) for _, f, _ in _COLUMNS)])
        writer.writerow(["transform", *(str(t) for _, _, t in _COLUMNS)])
        for i, q in enumerate(quarters):
            year, rem = divmod(int(q) - 1, 4)
            writer.writerow(
                [f"{3 * (rem + 1)}/1/{year}", *(_cell(series[name][i]) for name, _, _ in _COLUMNS)]
            )
    write_sidecar(target, generator_label("fred_qd"), "synthetic FRED-QD vintage",
                  seed=int(seed), start=start, end=end)
    return target


# Monthly CPI group files, FRED CSV layout; education and recreation start in 1993 as in BLS data.
_CPI_DRIFT = {  # extra monthly drift (percent) relative to all items, so groups differ
    "CPIAUCSL": 0.0,
    "CPIFABSL": 0.01,
    "CPIHOSSL": 0.03,
    "CPIAPPSL": -0.2,
    "CPITRNSL": 0.0,
    "CPIMEDSL": 0.12,
    "CPIRECSL": -0.08,
    "CPIEDUSL": 0.0,
    "CPIOGSSL": 0.08,
}
_CPI_START = {"CPIRECSL": "1993-01", "CPIEDUSL": "1993-01"}


def write_synthetic_cpi_fred(
    directory: str | Path, *, seed: int, start: str = "1967-01", end: str = "2026-06"
) -> list[Path]:
    """Write `<SERIES>.csv` (`"Date","<SERIES>"`, YYYY-MM-01 rows) for the 9 CPI-U series that
    `hhx.surveys.macro.fred_qd.read_fred_cpi_csvs` reads. Same seed, same bytes."""
    months = pd.date_range(f"{start}-01", f"{end}-01", freq="MS")
    if len(months) == 0:
        raise ConfigError(f"synthetic CPI: end {end} is before start {start}")
    rng = np.random.default_rng(seed)
    # A common monthly inflation process with slow swings, plus group noise.
    common = np.empty(len(months))
    level = 0.3
    for t in range(len(months)):
        level = 0.3 + 0.95 * (level - 0.3) + 0.06 * rng.standard_normal()
        common[t] = level
    paths: list[Path] = []
    d = Path(directory)
    for series in CPI_FRED_SERIES:
        rates = common + _CPI_DRIFT[series] + 0.15 * rng.standard_normal(len(months))
        values = 35.0 * np.cumprod(1.0 + rates / 100.0)
        first = pd.Timestamp(f"{_CPI_START.get(series, start)}-01")
        target = d / f"{series}.csv"
        with atomic_path(target) as tmp, tmp.open("w", newline="", encoding="utf-8") as fh:
            fh.write(f'"Date","{series}"\n')
            for month, value in zip(months, values, strict=True):
                if month >= first:
                    fh.write(f"{month:%Y-%m-%d},{value:.3f}\n")
        write_sidecar(target, generator_label("fred_qd"), "synthetic CPI-U (FRED CSV)",
                      seed=int(seed), start=start, end=end)
        paths.append(target)
    return paths
