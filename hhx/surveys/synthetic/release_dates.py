"""Seeded synthetic release-date crosswalks in the reference layout
(`data/raw/release_dates/release_{census,cex,cps,mich,psid,sce}.csv`).

Placeholder dates for demos and tests, never the official ones: each follows its source's
documented rule where there is one (CPS proxy rule before 2020, SCE collection month + lag) and
otherwise a plausible lag after the period ends (CEX a year's data in the September after it,
Michigan within weeks, PSID about two years after the wave, Census samples years later).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd

from hhx.io import write_csv_atomic
from hhx.surveys.release_dates import (
    CENSUS_SAMPLES,
    PROXY_RULE_ID,
    PSID_WAVES,
    SCE_LAG_MONTHS,
    proxy_release_date,
    sce_inferred_release_date,
)
from hhx.surveys.synthetic import write_sidecar

CEX_YEARS = [1980, 1981, *range(1984, 2025)]


def _months(start: str, end: str) -> list[tuple[int, int]]:
    return [(p.year, p.month) for p in pd.period_range(start, end, freq="M")]


def synthetic_crosswalks(*, seed: int, cps_start: str = "1976-01", cps_end: str = "2026-06",
                         mich_start: str = "1978-01", mich_end: str = "2026-02",
                         sce_start: str = "2013-06", sce_end: str = "2025-12",
                         ) -> dict[str, pd.DataFrame]:
    """The six crosswalks as frames, in the order and columns written."""
    rng = np.random.default_rng(int(seed))
    cps = []
    for y, m in _months(cps_start, cps_end):
        if y < 2020:
            cps.append(("basic", y, m, proxy_release_date(y, m), "Project conservative proxy",
                        PROXY_RULE_ID))
        else:  # "official": a Thursday or Friday 2-4 weeks after the month
            end = dt.date(y + m // 12, m % 12 + 1, 1)
            day = end + dt.timedelta(days=int(rng.integers(14, 29)))
            cps.append(("basic", y, m, day.isoformat(), "Official release date",
                        "census_annual_release_archive"))
    cex = [(y, dt.date(y + 1, 9, int(rng.integers(5, 26))).isoformat(),
            "Official release date" if y >= 1996 else
            "Inferred from official rule" if y >= 1984 else "Latest survey date in release")
           for y in CEX_YEARS]
    census = [(year, sample, dt.date(year + 5, int(rng.integers(1, 13)), 1).isoformat())
              for sample, year in CENSUS_SAMPLES.items()]
    mich = []
    for y, m in _months(mich_start, mich_end):
        end = dt.date(y + m // 12, m % 12 + 1, 1)
        mich.append((y * 100 + m, (end + dt.timedelta(days=int(rng.integers(0, 21)))).isoformat()))
    psid = [(w, dt.date(w + 2, int(rng.integers(3, 13)), 1).isoformat()) for w in PSID_WAVES]
    sce = [(module, y, m, sce_inferred_release_date(module, y, m),
            "inferred_from_collection_month_and_official_lag")
           for module in SCE_LAG_MONTHS for y, m in _months(sce_start, sce_end)]
    return {
        "cps": pd.DataFrame(cps, columns=["partition", "year", "month", "release_date", "source",
                                          "release_rule_id"]),
        "cex": pd.DataFrame(cex, columns=["cex_data_year", "release_date", "source"]),
        "census": pd.DataFrame(census, columns=["year", "sample", "release_date"]),
        "mich": pd.DataFrame(mich, columns=["yyyymm", "release_date"]),
        "psid": pd.DataFrame(psid, columns=["year", "release_date"]),
        "sce": pd.DataFrame(sce, columns=["module", "survey_year", "survey_month",
                                          "release_date", "source"]),
    }


def write_synthetic_release_dates(out_dir: str | Path, *, seed: int, **spans: str
                                  ) -> dict[str, Path]:
    """Write `release_<source>.csv` for the six sources into `out_dir`; returns their paths."""
    paths = {}
    for source, frame in synthetic_crosswalks(seed=seed, **spans).items():
        path = write_csv_atomic(Path(out_dir) / f"release_{source}.csv", frame)
        write_sidecar(path, "hhx.surveys.synthetic.release_dates",
                      "synthetic release dates (placeholders, not the official dates)",
                      seed=int(seed))
        paths[source] = path
    return paths
