"""Seeded synthetic BLS CPI flat files (`cu.data.<n>.<Name>.txt`) in the published layout.

Demo data only: each group index follows a random walk with a drift near its long-run U.S.
inflation rate, and all items moves with a weighted mean of the groups; not U.S. history.

Layout: tab-separated `series_id year period value footnote_codes` with a header line, fields
padded with spaces (series id to 30 characters, value right-aligned in 12; readers strip the
padding, so exact widths do not matter), several series per file: the seasonally adjusted U.S.
series the reader uses (CUSR0000<item>, monthly M01-M12), its not seasonally adjusted twin
CUUR0000<item> with M13 annual averages, and a regional series CUUR0100<item> with S01/S02
half-year values, so readers must pick the right rows. Recreation and education and
communication start in 1993-01, as the real series do (base December 1997).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hhx.errors import ConfigError
from hhx.io import write_text_atomic
from hhx.surveys.macro.cpi import CPI_SERIES
from hhx.surveys.synthetic import generator_label, write_sidecar

# Annual drift (%) and relative-importance weight of each group; all items is their mix.
_GROUPS: dict[str, tuple[float, float]] = {
    "cpi_food_beverages": (2.7, 0.15),
    "cpi_housing": (2.9, 0.42),
    "cpi_apparel": (0.4, 0.03),
    "cpi_transportation": (2.4, 0.16),
    "cpi_medical_care": (4.0, 0.08),
    "cpi_recreation": (1.2, 0.06),
    "cpi_education_communication": (1.6, 0.06),
    "cpi_other_goods_services": (3.3, 0.04),
}
_LATE_START = {"cpi_recreation": "1993-01", "cpi_education_communication": "1993-01"}


def _months(start: str, end: str) -> pd.DatetimeIndex:
    try:
        first, last = pd.Period(start, "M"), pd.Period(end, "M")
    except ValueError:
        raise ConfigError(f"write_synthetic_cpi: start/end must be YYYY-MM, got {start!r}, {end!r}")
    if last < first:
        raise ConfigError(f"write_synthetic_cpi: end {end} precedes start {start}")
    return pd.period_range(first, last, freq="M").to_timestamp()


def _levels(months: pd.DatetimeIndex, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = len(months)
    growth = {}
    common = rng.normal(0.0, 0.0015, n)  # shared inflation shocks
    for column, (drift, _) in _GROUPS.items():
        own = np.zeros(n)
        shocks = rng.normal(0.0, 0.002, n)
        for t in range(1, n):  # AR(1) group-specific deviations
            own[t] = 0.6 * own[t - 1] + shocks[t]
        growth[column] = drift / 1200.0 + common + own
    weights = np.array([w for _, w in _GROUPS.values()])
    mix = np.vstack([growth[c] for c in _GROUPS]).T @ (weights / weights.sum())
    growth["cpi_all_items"] = mix + rng.normal(0.0, 0.0003, n)
    years_from_base = (months.year - 1983).to_numpy()
    levels = {}
    for column, g in growth.items():
        start = 100.0 * 1.03 ** years_from_base[0] * rng.uniform(0.85, 1.15)
        levels[column] = start * np.exp(np.cumsum(g) - g[0])
    return levels


def _line(series_id: str, year: int, period: str, value: float) -> str:
    return f"{series_id:<30}\t{year}\t{period}\t{value:>12.3f}\t\n"


def write_synthetic_cpi(out_dir: str | Path, *, seed: int, start: str, end: str) -> list[Path]:
    """Write the 9 BLS flat files for months `start`..`end` (YYYY-MM) into `out_dir`."""
    months = _months(start, end)
    rng = np.random.default_rng(int(seed))
    levels = _levels(months, rng)
    out = Path(out_dir)
    paths = []
    for series in CPI_SERIES:
        item = series.series_id[len("CUSR0000") :]
        level = levels[series.column]
        first = pd.Timestamp(_LATE_START.get(series.column, "1900-01"))
        if series.column in _LATE_START:  # rebased to December 1997 = 100, as BLS publishes
            dec97 = months.get_indexer([pd.Timestamp("1997-12-01")])[0]
            level = level / level[dec97] * 100.0 if dec97 >= 0 else level
        keep = months >= first
        lines = ["series_id                     \tyear\tperiod\t       value\tfootnote_codes\n"]
        frame = pd.DataFrame({"date": months[keep], "sa": level[keep]})
        frame["nsa"] = frame["sa"] * (1 + 0.004 * np.sin(2 * np.pi * frame["date"].dt.month / 12))
        frame["year"] = frame["date"].dt.year
        for row in frame.itertuples():
            lines.append(_line(f"CUSR0000{item}", row.year, f"M{row.date.month:02d}", row.sa))
        for year, grp in frame.groupby("year"):
            for row in grp.itertuples():
                lines.append(_line(f"CUUR0000{item}", year, f"M{row.date.month:02d}", row.nsa))
            if len(grp) == 12:
                lines.append(_line(f"CUUR0000{item}", year, "M13", grp["nsa"].mean()))
        for year, grp in frame.groupby("year"):
            for half, months_of_half in (
                ("S01", grp[grp["date"].dt.month <= 6]),
                ("S02", grp[grp["date"].dt.month > 6]),
            ):
                if len(months_of_half) == 6:
                    value = months_of_half["nsa"].mean() * 1.01
                    lines.append(_line(f"CUUR0100{item}", year, half, value))
        paths.append(write_text_atomic(out / f"{series.bls_file}.txt", "".join(lines)))
        write_sidecar(paths[-1], generator_label("cpi"), "synthetic CPI-U flat file",
                      seed=int(seed), start=start, end=end)
    return paths
