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
    CPS_FAQ_URL,
    CPS_OFFICIAL_SOURCE,
    CPS_PROXY_SOURCE,
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


# Provenance the reference's readers require on every row (source_url and comments are
# placeholders naming the generator, except the CPS and SCE URLs, which those readers check).
_COMMENT = "synthetic placeholder written by hhx.surveys.synthetic.release_dates"
CEX_URL = "https://www.bls.gov/cex/pumd_data.htm"
CENSUS_URL = "https://usa.ipums.org/usa/sampdesc.shtml"
MICH_URL = "https://data.sca.isr.umich.edu/"
PSID_URL = "https://psidonline.isr.umich.edu/"
SCE_URLS = {
    "core": "https://www.newyorkfed.org/microeconomics/sce",
    "household_spending": "https://www.newyorkfed.org/microeconomics/sce/household-spending",
    "labor_market": "https://www.newyorkfed.org/microeconomics/sce/labor-market",
    "public_policy": "https://www.newyorkfed.org/microeconomics/sce/public-policy",
    "housing": "https://www.newyorkfed.org/microeconomics/sce/housing",
    "job_search": "https://www.newyorkfed.org/microeconomics/databank.html",
}


def _cps_archive_url(year: int) -> str:
    return f"https://www.census.gov/data/what-is-data-census-gov/latest-releases/{year}.html"


def synthetic_psid_crosswalk(*, seed: int) -> pd.DataFrame:
    """The PSID crosswalk alone, from its own stream: the psid demo writes it too, and both
    writers must write the same bytes."""
    rng = np.random.default_rng([int(seed), 6])
    return pd.DataFrame(
        [(w, dt.date(w + 2, int(rng.integers(3, 13)), 1).isoformat(), "Inferred from official rule",
          PSID_URL, _COMMENT) for w in PSID_WAVES],
        columns=["year", "release_date", "source", "source_url", "comments"])


def synthetic_crosswalks(*, seed: int, cps_start: str = "1976-01", cps_end: str = "2026-06",
                         mich_start: str = "1978-01", mich_end: str = "2026-02",
                         sce_start: str = "2013-06", sce_end: str = "2025-12",
                         ) -> dict[str, pd.DataFrame]:
    """The six crosswalks as frames, in the order and columns written."""
    rng = np.random.default_rng(int(seed))
    cps = []
    for y, m in _months(cps_start, cps_end):
        if y < 2020:
            cps.append(("basic", y, m, proxy_release_date(y, m), CPS_PROXY_SOURCE, CPS_FAQ_URL,
                        _COMMENT, PROXY_RULE_ID))
        else:  # "official": a Thursday or Friday 2-4 weeks after the month
            end = dt.date(y + m // 12, m % 12 + 1, 1)
            day = end + dt.timedelta(days=int(rng.integers(14, 29)))
            cps.append(("basic", y, m, day.isoformat(), CPS_OFFICIAL_SOURCE,
                        _cps_archive_url(day.year), _COMMENT, "census_annual_release_archive"))
    cex = [(y, dt.date(y + 1, 9, int(rng.integers(5, 26))).isoformat(),
            "Official release date" if y >= 1996 else
            "Inferred from official rule" if y >= 1984 else "Latest survey date in release",
            CEX_URL, _COMMENT)
           for y in CEX_YEARS]
    census = [(year, sample, dt.date(year + 5, int(rng.integers(1, 13)), 1).isoformat(),
               "Project release assumption", CENSUS_URL, _COMMENT)
              for sample, year in CENSUS_SAMPLES.items()]
    mich = []
    for y, m in _months(mich_start, mich_end):
        end = dt.date(y + m // 12, m % 12 + 1, 1)
        mich.append((y * 100 + m, (end + dt.timedelta(days=int(rng.integers(0, 21)))).isoformat(),
                     "Project release assumption", MICH_URL, _COMMENT))
    sce = []
    for module in SCE_LAG_MONTHS:
        for y, m in _months(sce_start, sce_end):
            proxy = dt.date(y + m // 12, m % 12 + 1, 1).isoformat()  # aggregates: next month
            sce.append((module, y, m, sce_inferred_release_date(module, y, m),
                        "inferred_from_collection_month_and_official_lag", SCE_URLS[module],
                        _COMMENT, proxy, SCE_LAG_MONTHS[module]))
    text = ["source", "source_url", "comments"]
    return {
        "cps": pd.DataFrame(cps, columns=["partition", "year", "month", "release_date", *text,
                                          "release_rule_id"]),
        "cex": pd.DataFrame(cex, columns=["cex_data_year", "release_date", *text]),
        "census": pd.DataFrame(census, columns=["year", "sample", "release_date", *text]),
        "mich": pd.DataFrame(mich, columns=["yyyymm", "release_date", *text]),
        "psid": synthetic_psid_crosswalk(seed=seed),
        "sce": pd.DataFrame(sce, columns=["module", "survey_year", "survey_month", "release_date",
                                          *text, "aggregate_release_date_proxy",
                                          "microdata_release_lag_months"]),
    }


def write_crosswalk(path: str | Path, frame: pd.DataFrame, *, seed: int) -> Path:
    """One crosswalk CSV with its synthetic sidecar."""
    path = write_csv_atomic(Path(path), frame)
    write_sidecar(path, "hhx.surveys.synthetic.release_dates",
                  "synthetic release dates (placeholders, not the official dates)", seed=int(seed))
    return path


def write_synthetic_release_dates(out_dir: str | Path, *, seed: int, **spans: str
                                  ) -> dict[str, Path]:
    """Write `release_<source>.csv` for the six sources into `out_dir`; returns their paths."""
    return {source: write_crosswalk(Path(out_dir) / f"release_{source}.csv", frame, seed=seed)
            for source, frame in synthetic_crosswalks(seed=seed, **spans).items()}
