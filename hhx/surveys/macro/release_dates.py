"""Public release dates of survey files (spec 00_common.md section 2): the CPS proxy rule, and
the six release-date crosswalks of the reference, validated (survey `release_dates`).

A task row carries the release date of its outcome month: the row could not be known before
that file was public. Two sources:

* a crosswalk CSV in the reference layout (`data/raw/release_dates/release_cps.csv`,
  `survey.raw.release_crosswalk` of conf/survey/cps.yaml), validated as the reference's
  `load_cps_release_date_crosswalk` (scripts/1_preprocessing/cps.py) validates it: columns
  partition, year, month, release_date, source, source_url, comments (source, source_url and
  comments non-empty); only partition `basic` rows are used; unique (year, month); basic rows
  from January 2020 have source `Official release date` and cite a Census annual release
  archive (`https://www.census.gov/data/what-is-data-census-gov/latest-releases/<year>.html`),
  earlier rows source `Project conservative proxy` citing the CPS FAQ
  (`https://www.census.gov/programs-surveys/cps/about/faqs.html`). A row's
  `release_date_source` is its `source` text, as the reference copies it. The reference stops
  before reading any data when the file is missing ("Missing CPS release-date crosswalk");
  hhx logs one notice line (`optional_crosswalk`) and uses:
* without a crosswalk, the reference's proxy rule
  `cps_basic_collection_completion_plus_30_lower_bound`
  for every month: collection ends on the Saturday of the interview week, i.e. the Sunday-to-
  Saturday week that contains the 19th of the month (the week after the reference week, which
  contains the 12th); the release date is that Saturday plus 30 days. Example: January 2026 ->
  interview week Sun 18 - Sat 24 January -> release 2026-02-23. The reference uses official
  Census dates from January 2020 on; only a crosswalk supplies those.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.base import BuildReport, raw_path, write_outputs

log = logging.getLogger(__name__)

PROXY_RULE_ID = "cps_basic_collection_completion_plus_30_lower_bound"
CROSSWALK_RULE = "crosswalk"


def proxy_release_date(year: int, month: int) -> str:
    """The documented proxy: Saturday ending the week that contains the 19th, plus 30 days."""
    day19 = dt.date(year, month, 19)
    # weekday(): Monday=0 .. Sunday=6; days until Saturday (5) within a Sunday-start week
    saturday = day19 + dt.timedelta(days=(5 - day19.weekday()) % 7)
    return (saturday + dt.timedelta(days=30)).isoformat()


@dataclass(frozen=True)
class CpsCrosswalk:
    """A validated CPS crosswalk, read once: (year, month) -> (release date, `source` text)."""

    path: Path
    rows: dict[tuple[int, int], tuple[str, str]]

    @classmethod
    def read(cls, path: Path) -> CpsCrosswalk:
        table = read_release_crosswalk("cps", Path(path))
        return cls(Path(path), {
            (int(y), int(m)): (d, s) for y, m, d, s in zip(
                table["year"], table["month"], table["release_date"],
                table["release_date_source"], strict=True)})


def read_crosswalk(path: Path) -> dict[tuple[int, int], str]:
    """(year, month) -> ISO release date from a CPS crosswalk (validated as the others are)."""
    return {key: date for key, (date, _) in CpsCrosswalk.read(path).rows.items()}


def cps_month_releases(
    year: pd.Series, month: pd.Series, crosswalk: Path | CpsCrosswalk | None = None
) -> pd.DataFrame:
    """Each (year, month)'s `release_date` (ISO) and `release_date_source`: the crosswalk's row
    (its `source` text, as the reference's builder copies it) when a crosswalk is given, else
    the proxy rule (source `proxy:<rule id>`). A month the crosswalk lacks is an error."""
    y = pd.to_numeric(year, errors="coerce")
    m = pd.to_numeric(month, errors="coerce")
    bad = y.isna() | m.isna() | ~m.between(1, 12)
    if bad.any():
        raise DataError(
            f"release dates need YEAR and MONTH 1-12; got {y[bad].iloc[0]!r}/{m[bad].iloc[0]!r}"
        )
    keys = pd.DataFrame({"y": y.astype("int64"), "m": m.astype("int64")}, index=year.index)
    unique = keys.drop_duplicates()
    if isinstance(crosswalk, (str, Path)):
        crosswalk = CpsCrosswalk.read(Path(crosswalk))
    found: dict[tuple[int, int], tuple[str, str]] = {}
    for yy, mm in zip(unique["y"].tolist(), unique["m"].tolist(), strict=True):
        if crosswalk is None:
            found[(yy, mm)] = (proxy_release_date(yy, mm), f"proxy:{PROXY_RULE_ID}")
        elif (yy, mm) in crosswalk.rows:
            found[(yy, mm)] = crosswalk.rows[(yy, mm)]
        else:
            raise DataError(f"{crosswalk.path}: no release date for CPS month {yy}-{mm:02d}; "
                            "add a row")
    idx = pd.MultiIndex.from_frame(keys)
    columns = {}
    for i, name in enumerate(("release_date", "release_date_source")):
        lookup = pd.Series({k: v[i] for k, v in found.items()})  # MultiIndex (year, month)
        columns[name] = pd.Series(lookup.reindex(idx).to_numpy(), index=year.index, dtype="str")
    return pd.DataFrame(columns, index=year.index)


def cps_release_dates(
    year: pd.Series, month: pd.Series, crosswalk: Path | CpsCrosswalk | None = None
) -> pd.Series:
    """ISO release date of each (year, month): from `crosswalk` when given, else the proxy."""
    return cps_month_releases(year, month, crosswalk)["release_date"]


def optional_crosswalk(survey: SurveyConfig, key: str, raw_dir: Path, what: str,
                       fallback: str) -> Path | None:
    """The crosswalk `survey.raw.<key>` names when that file exists. Otherwise None, after one
    notice line naming the file and the rule used instead: the reference's builder stops
    without its crosswalk, hhx goes on with the documented rule (not an error)."""
    rel = survey.raw.get(key)
    path = raw_path(survey, key, raw_dir) if rel else None
    if path is not None and path.is_file():
        return path
    where = (f"{path} not found" if path is not None
             else f"survey.raw.{key} is not set")
    log.warning("%s: %s release-date crosswalk %s; release dates follow %s (the reference's "
                "builder needs the crosswalk: place its %s there for its dates)", survey.name,
                what, where, fallback, f"release_{what.lower()}.csv")
    return None


# --------------------------------------------------------------------------------------------
# The six crosswalks of the reference (`data/raw/release_dates/release_<source>.csv`, spec 2)

# Keys of each crosswalk (integers unless noted). Every crosswalk also needs `release_date` (ISO)
# and the provenance columns the reference's readers require (scripts/1_preprocessing/
# {census,cex,cps,mich,psid,sce}.py `load_*_release_date_crosswalk`): non-empty `source`,
# `source_url` and `comments`; CPS a `partition` (only `basic` rows are used); SCE also
# `aggregate_release_date_proxy` (ISO date) and `microdata_release_lag_months` (the module's lag).
CROSSWALK_KEYS: dict[str, list[str]] = {
    "census": ["year", "sample"],
    "cex": ["cex_data_year"],
    "cps": ["year", "month"],
    "mich": ["yyyymm"],
    "psid": ["year"],
    "sce": ["module", "survey_year", "survey_month"],  # module is text
}
PROVENANCE_COLUMNS = ("source", "source_url", "comments")
LEADING_REQUIRED: dict[str, tuple[str, ...]] = {"cps": ("partition",)}
TRAILING_REQUIRED: dict[str, tuple[str, ...]] = {
    "sce": ("aggregate_release_date_proxy", "microdata_release_lag_months")}
CEX_SOURCES = {"Official release date", "Inferred from official rule",
               "Latest survey date in release"}
CENSUS_SAMPLES = {199002: 1990, 200007: 2000}
SCE_LAG_MONTHS = {"core": 9, "household_spending": 18, "labor_market": 18, "public_policy": 9,
                  "housing": 18, "job_search": 9}
# CPS basic rows: from January 2020 official Census dates citing the annual release archive,
# before it the project's proxy citing the CPS FAQ (the reference's reader checks both).
CPS_OFFICIAL_SOURCE = "Official release date"
CPS_PROXY_SOURCE = "Project conservative proxy"
CPS_RELEASE_ARCHIVE_URL = re.compile(
    r"^https://www\.census\.gov/data/what-is-data-census-gov/latest-releases/\d{4}\.html$")
CPS_FAQ_URL = "https://www.census.gov/programs-surveys/cps/about/faqs.html"
# PSID waves: annual 1968-1997, biennial 1999-2021 (spec 1.10).
PSID_WAVES = [*range(1968, 1998), *range(1999, 2022, 2)]
_KEPT = {"source": "release_date_source", "source_url": "source_url", "comments": "comments",
         "release_rule_id": "release_rule_id",
         "aggregate_release_date_proxy": "aggregate_release_date_proxy",
         "microdata_release_lag_months": "microdata_release_lag_months"}


def sce_inferred_release_date(module: str, year: int, month: int) -> str:
    """The reference's SCE rule: first day of the collection month plus the module's lag."""
    if module not in SCE_LAG_MONTHS:
        raise DataError(
            f"SCE module {module!r} has no release lag; known: {sorted(SCE_LAG_MONTHS)}")
    index = year * 12 + month - 1 + SCE_LAG_MONTHS[module]
    return dt.date(index // 12, index % 12 + 1, 1).isoformat()


def _period_end(source: str, row: dict) -> dt.date:
    """Last day of the period a crosswalk row covers: no file is public before it ends."""
    if source in ("cps", "mich", "sce"):
        if source == "mich":
            year, month = divmod(int(row["yyyymm"]), 100)
        elif source == "sce":
            year, month = int(row["survey_year"]), int(row["survey_month"])
        else:
            year, month = int(row["year"]), int(row["month"])
        if not 1 <= month <= 12:
            raise ValueError(f"month {month}")
        nxt = dt.date(year + month // 12, month % 12 + 1, 1)
        return nxt - dt.timedelta(days=1)
    year = int(row["cex_data_year"] if source == "cex" else row["year"])
    return dt.date(year, 12, 31) if source != "psid" else dt.date(year, 1, 1)


def read_release_crosswalk(source: str, path: Path) -> pd.DataFrame:
    """One crosswalk, validated as the reference's reader validates it, and more: key columns,
    ISO dates not before the period they cover, unique keys, non-empty provenance columns and
    the source's own rules (CEX source labels, CPS sources and URLs, the two Census samples,
    exactly the PSID schedule, SCE modules and lags). Returns key columns + release_date +
    provenance columns (`source` as `release_date_source`)."""
    if source not in CROSSWALK_KEYS:
        raise DataError(f"unknown release-date source {source!r}; known: {sorted(CROSSWALK_KEYS)}")
    if not path.is_file():
        raise DataError(f"{path}: {source} release-date crosswalk not found (reference layout "
                        f"data/raw/release_dates/release_{source}.csv)")
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    table.columns = [c.strip().lower() for c in table.columns]
    keys = CROSSWALK_KEYS[source]
    required = [*LEADING_REQUIRED.get(source, ()), *keys, "release_date", *PROVENANCE_COLUMNS,
                *TRAILING_REQUIRED.get(source, ())]
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise DataError(f"{path}: column {missing[0]} is missing; release_{source}.csv needs "
                        f"{', '.join(required)} (as the reference's reader)")
    if source == "cps":
        table = table[table["partition"].str.strip() == "basic"]
        if table.empty:
            raise DataError(f"{path}: no rows with partition 'basic'")
    if source == "census":  # the reader keeps the two samples' rows only
        table = table[table["sample"].str.strip().isin([str(s) for s in CENSUS_SAMPLES])]
    kept = {c: _KEPT[c] for c in table.columns if c in _KEPT}
    out = table[[*keys, "release_date", *kept]].rename(columns=kept)
    out = out.loc[:, ~out.columns.duplicated()].copy()
    for column in ("release_date_source", "source_url", "comments"):
        out[column] = out[column].str.strip()
        empty = out[column].eq("")
        if empty.any():
            line = int(empty.to_numpy().argmax()) + 2
            raise DataError(f"{path}:{line}: {'source' if column == 'release_date_source' else column}"
                            " is empty; every row needs source, source_url and comments")
    for i, row in enumerate(out.to_dict("records"), start=2):
        try:
            for k in keys:
                if k != "module":
                    int(row[k])
            date = dt.date.fromisoformat(row["release_date"].strip()[:10])
            end = _period_end(source, row)
            if source == "sce":
                dt.date.fromisoformat(row["aggregate_release_date_proxy"].strip()[:10])
                int(row["microdata_release_lag_months"])
        except ValueError:
            shown = ", ".join(f"{k}={row[k]!r}" for k in [*keys, "release_date"])
            raise DataError(f"{path}:{i}: bad key or date ({shown}); dates are YYYY-MM-DD") from None
        if date < end:
            raise DataError(f"{path}:{i}: release_date {date} precedes the end of the period it "
                            f"covers ({end}); a file cannot be public before its data exist")
    for k in keys:
        if k != "module":
            out[k] = out[k].astype("int64")
    out["release_date"] = out["release_date"].str.strip().str[:10].map(
        lambda s: dt.date.fromisoformat(s).isoformat())
    if source == "sce":
        out["aggregate_release_date_proxy"] = out["aggregate_release_date_proxy"].str.strip(
            ).str[:10].map(lambda s: dt.date.fromisoformat(s).isoformat())
        out["microdata_release_lag_months"] = out["microdata_release_lag_months"].astype("int64")
    dup = out.duplicated(keys)
    if dup.any():
        first = out.loc[dup, keys].iloc[0].tolist()
        raise DataError(f"{path}: key {dict(zip(keys, first, strict=True))} appears twice")
    _check_source_rules(source, out, path)
    return out.sort_values(keys, kind="stable").reset_index(drop=True)


def _check_source_rules(source: str, table: pd.DataFrame, path: Path) -> None:
    if source == "cex":
        bad = sorted(set(table["release_date_source"]) - CEX_SOURCES)
        if bad:
            raise DataError(f"{path}: source {bad[0]!r} is not one of {sorted(CEX_SOURCES)}")
    if source == "cps":
        official = table["year"] >= 2020
        for when, mask, want, url_ok in (
            ("from January 2020", official, CPS_OFFICIAL_SOURCE,
             table["source_url"].str.match(CPS_RELEASE_ARCHIVE_URL)),
            ("before 2020", ~official, CPS_PROXY_SOURCE, table["source_url"].eq(CPS_FAQ_URL)),
        ):
            wrong = mask & table["release_date_source"].ne(want)
            if wrong.any():
                y, m = table.loc[wrong, ["year", "month"]].iloc[0].tolist()
                raise DataError(f"{path}: CPS {y}-{m:02d}: basic rows {when} need source "
                                f"{want!r}")
            wrong = mask & ~url_ok.fillna(False).astype(bool)
            if wrong.any():
                y, m = table.loc[wrong, ["year", "month"]].iloc[0].tolist()
                cite = (CPS_FAQ_URL if want == CPS_PROXY_SOURCE else
                        "https://www.census.gov/data/what-is-data-census-gov/latest-releases/"
                        "<year>.html")
                raise DataError(f"{path}: CPS {y}-{m:02d}: basic rows {when} must cite {cite}")
    if source == "census":
        for sample, year in zip(table["sample"], table["year"], strict=True):
            if CENSUS_SAMPLES.get(int(sample)) != int(year):
                raise DataError(f"{path}: sample {sample} with year {year}; the samples are "
                                f"{', '.join(f'{s} ({y})' for s, y in CENSUS_SAMPLES.items())}")
        lack: list = sorted(set(CENSUS_SAMPLES) - set(table["sample"].tolist()))
        if lack:
            raise DataError(f"{path}: no row for sample {lack[0]} ({CENSUS_SAMPLES[lack[0]]}); "
                            "the crosswalk must date both samples")
    if source == "psid":
        have = set(table["year"].tolist())
        if have != set(PSID_WAVES):
            extra, lack = sorted(have - set(PSID_WAVES)), sorted(set(PSID_WAVES) - have)
            raise DataError(f"{path}: must cover exactly the PSID waves 1968-1997 and 1999-2021 "
                            f"(every other year); missing {lack[:5]}, not waves {extra[:5]}")
    if source == "sce":
        bad = sorted(set(table["module"]) - set(SCE_LAG_MONTHS))
        if bad:
            raise DataError(f"{path}: module {bad[0]!r} unknown; modules are "
                            f"{', '.join(SCE_LAG_MONTHS)}")
        lack = [m for m in SCE_LAG_MONTHS if m not in set(table["module"])]
        if lack:
            raise DataError(f"{path}: no row for SCE module {lack[0]}; the reference's reader "
                            f"needs every module ({', '.join(SCE_LAG_MONTHS)})")
        lags = table["module"].map(SCE_LAG_MONTHS)
        wrong = table["microdata_release_lag_months"].ne(lags)
        if wrong.any():
            row = table.loc[wrong].iloc[0]
            raise DataError(f"{path}: microdata_release_lag_months {row['microdata_release_lag_months']}"
                            f" for module {row['module']}; its lag is {SCE_LAG_MONTHS[row['module']]}")


def lookup_release_dates(frame: pd.DataFrame, crosswalk: pd.DataFrame, source: str,
                         on: dict[str, str] | None = None) -> pd.Series:
    """Each row's release date from a validated crosswalk. `on` maps crosswalk key -> frame
    column (default: the same names). A row whose key the crosswalk lacks is an error naming the
    first such key and how many rows it affects: no row is left undated or silently dropped."""
    keys = CROSSWALK_KEYS[source]
    on = on or {k: k for k in keys}
    left = pd.DataFrame({k: frame[on[k]].to_numpy() for k in keys}, index=frame.index)
    merged = left.merge(crosswalk[[*keys, "release_date"]], on=keys, how="left")
    hole = merged["release_date"].isna().to_numpy()
    if hole.any():
        first = left[hole].iloc[0].to_dict()
        raise DataError(f"release_{source}.csv has no release date for {first} ({int(hole.sum())} "
                        "rows); add the row to the crosswalk")
    return pd.Series(merged["release_date"].to_numpy(), index=frame.index, name="release_date")


def coverage_audit(dataset: str, rule_id: str, dates: pd.Series) -> pd.DataFrame:
    """The reference's coverage audit rows (dataset, release_rule_id, microdata_release_date,
    rows, unmatched_rows) for one dataset's dated rows."""
    counts = dates.fillna("").value_counts(sort=False).sort_index()
    return pd.DataFrame({
        "dataset": dataset, "release_rule_id": rule_id,
        "microdata_release_date": [d or None for d in counts.index],
        "rows": counts.to_numpy(), "unmatched_rows": [n if not d else 0
                                                      for d, n in counts.items()],
    })


def build(survey: SurveyConfig, raw_dir: Path, out_dir: Path) -> BuildReport:
    """Validate each configured crosswalk (`survey.raw.<source>`) and write it as
    `release_dates_<source>.parquet`. A source set to null is skipped; CPS without a crosswalk
    uses the proxy rule at build time, SCE the lag rule."""
    started = time.perf_counter()
    frames, inputs = {}, []
    for source in CROSSWALK_KEYS:
        if not survey.raw.get(source):
            continue
        path = raw_path(survey, source, raw_dir)
        frames[f"release_dates_{source}"] = read_release_crosswalk(source, path)
        inputs.append(path)
    if not frames:
        raise ConfigError(f"survey {survey.name}: no crosswalk configured; set raw.<source> for "
                          f"some of {', '.join(CROSSWALK_KEYS)}")
    return write_outputs(survey, out_dir, frames, inputs, started)
