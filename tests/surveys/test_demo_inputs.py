"""The demo writes every input the reference's builders require, in the form their checks accept:
the CPS and SCE release-date crosswalks (checked here by the reference's rules, written out
independently of hhx's reader), the SCE housing months, and a synthetic PSID whose married-in
spouses carry their family's lineage (the reference's split groups need every partner of an SRC
adult to be an SRC adult). Without a crosswalk, a build says in one line which rule it uses."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from hhx.config import SurveyConfig
from hhx.surveys.cps import ipums as ipums_cps
from hhx.surveys.synthetic.cps.ipums import write_synthetic_cps
from hhx.surveys.synthetic.demo import WRITERS
from hhx.surveys.synthetic.macro.release_dates import (
    write_synthetic_crosswalk,
    write_synthetic_release_dates,
)
from hhx.surveys.synthetic.psid import shelf as synth

CONF = Path(__file__).resolve().parents[2] / "conf" / "survey"
SEED = 7
# The reference's CPS reader (scripts/1_preprocessing/cps.py, load_cps_release_date_crosswalk).
CPS_COLUMNS = ["partition", "year", "month", "release_date", "source", "source_url", "comments"]
ARCHIVE = re.compile(r"^https://www\.census\.gov/data/what-is-data-census-gov/latest-releases/"
                     r"\d{4}\.html$")
FAQ = "https://www.census.gov/programs-surveys/cps/about/faqs.html"
# The reference's SCE reader (scripts/1_preprocessing/sce.py) and lags.
SCE_COLUMNS = ["module", "survey_year", "survey_month", "release_date", "source", "source_url",
               "comments", "aggregate_release_date_proxy", "microdata_release_lag_months"]
SCE_LAGS = {"core": 9, "household_spending": 18, "labor_market": 18, "public_policy": 9,
            "housing": 18, "job_search": 9}


def survey(name: str) -> SurveyConfig:
    node = OmegaConf.merge(OmegaConf.structured(SurveyConfig), OmegaConf.load(CONF / f"{name}.yaml"))
    return OmegaConf.to_object(node)


def months(start: str, end: str, extra: list[str] = ()) -> set[tuple[int, int]]:
    spans = [*pd.period_range(start, end, freq="M"), *(pd.Period(m, "M") for m in extra)]
    return {(p.year, p.month) for p in spans}


def reference_cps_check(path: Path) -> pd.DataFrame:
    """The reference reader's checks, each an assert; returns the basic rows."""
    table = pd.read_csv(path, dtype={c: "string" for c in ("partition", "source", "source_url",
                                                             "comments")})
    assert set(CPS_COLUMNS) <= set(table.columns)
    table = table[table["partition"].str.strip().eq("basic")].copy()
    assert len(table)
    table["year"] = pd.to_numeric(table["year"], errors="coerce").astype("Int64")
    table["month"] = pd.to_numeric(table["month"], errors="coerce").astype("Int64")
    assert table[["year", "month"]].notna().all().all()
    assert not table.duplicated(["partition", "year", "month"]).any()
    assert pd.to_datetime(table["release_date"], errors="coerce").notna().all()
    for column in ("source", "source_url", "comments"):
        values = table[column].str.strip()
        assert values.notna().all() and values.ne("").all(), column
    official = table["year"] >= 2020
    assert table.loc[official, "source"].eq("Official release date").all()
    assert table.loc[official, "source_url"].str.match(ARCHIVE).all()
    assert table.loc[~official, "source"].eq("Project conservative proxy").all()
    assert table.loc[~official, "source_url"].eq(FAQ).all()
    return table


def test_cps_demo_writes_the_crosswalk_the_reference_accepts_and_covers_its_months(tmp_path):
    cps = survey("cps")
    assert cps.raw["release_crosswalk"] == "release_dates/release_cps.csv"  # the reference's path
    path = tmp_path / "release_dates" / "release_cps.csv"
    write_synthetic_crosswalk(path, "cps", seed=SEED)
    table = reference_cps_check(path)
    have = set(zip(table["year"].astype(int), table["month"].astype(int), strict=True))
    wanted = months(cps.demo["start"], cps.demo["end"], cps.demo.get("extra_months", []))
    assert wanted <= have, sorted(wanted - have)[:3]
    assert (table["year"] >= 2020).any() and (table["year"] < 2020).any()  # both rules used
    # The CPS demo writes the same bytes as the release_dates demo, so either may run first.
    other = write_synthetic_release_dates(tmp_path / "all", seed=SEED)["cps"]
    assert other.read_bytes() == path.read_bytes()


def test_sce_demo_crosswalk_covers_every_module_month_incl_housing(tmp_path):
    sce = survey("sce")
    assert sce.raw["release_crosswalk"] == "release_dates/release_sce.csv"
    path = write_synthetic_crosswalk(tmp_path / "release_sce.csv", "sce", seed=SEED)
    table = pd.read_csv(path)
    assert set(SCE_COLUMNS) <= set(table.columns)
    assert not table.duplicated(["module", "survey_year", "survey_month"]).any()
    assert table["microdata_release_lag_months"].eq(table["module"].map(SCE_LAGS)).all()
    for column in ("source", "source_url", "comments"):
        assert table[column].astype(str).str.strip().ne("").all()
    have = set(zip(table["module"], table["survey_year"], table["survey_month"], strict=True))
    span = months("2013-06", sce.demo["end"])  # the demo's core months, every module
    for module in SCE_LAGS:
        lack = {(y, m) for y, m in span if (module, y, m) not in have}
        assert not lack, (module, sorted(lack)[:3])
    # house_sce_financing's script needs exactly one housing row for February 2014.
    feb14 = table[table["module"].eq("housing") & table["survey_year"].eq(2014)
                  & table["survey_month"].eq(2)]
    assert len(feb14) == 1 and feb14["release_date"].iloc[0] == "2015-08-01"


@pytest.mark.parametrize("name,source", [("cps", "cps"), ("sce", "sce"),
                                         ("sce_financing", "sce")])
def test_demo_writers_put_the_crosswalk_where_the_config_reads_it(tmp_path, name, source):
    from hhx.surveys.synthetic.demo import _crosswalk

    config = survey(name)
    written = _crosswalk(config, tmp_path, SEED, "release_crosswalk", source)
    assert written == [tmp_path / config.raw["release_crosswalk"]]
    assert written[0].read_bytes() == write_synthetic_crosswalk(
        tmp_path / "again.csv", source, seed=SEED).read_bytes()
    assert name in WRITERS


# --------------------------------------------------------------------------------------------
# CPS build: with the crosswalk, without it (one notice line)


@pytest.fixture(scope="module")
def extract(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cps") / "micro" / "cps_basic.csv.gz"
    path.parent.mkdir(parents=True)
    return write_synthetic_cps(path, seed=SEED, n_households=150, start="2019-11",
                               end="2020-02", skip_months=())


def _build(extract: Path, out: Path, crosswalk: str | None) -> pd.DataFrame:
    raw = extract.parents[1]
    config = SurveyConfig(name="cps", raw={"cps_basic": "micro/cps_basic.csv.gz",
                                           "release_crosswalk": crosswalk})
    ipums_cps.build(config, raw, out)
    return pd.read_parquet(out / "cps_basic.parquet", columns=["YEAR", "MONTH", "release_date",
                                                               "release_date_source"])


def test_cps_build_takes_dates_and_sources_from_the_crosswalk(extract, tmp_path, caplog):
    rel = "release_dates/release_cps.csv"
    write_synthetic_crosswalk(extract.parents[1] / rel, "cps", seed=SEED)
    table = pd.read_csv(extract.parents[1] / rel)
    with caplog.at_level(logging.INFO):
        got = _build(extract, tmp_path, rel)
    assert not [r for r in caplog.records if "proxy rule" in r.getMessage()]
    want = got[["YEAR", "MONTH"]].merge(table, left_on=["YEAR", "MONTH"],
                                        right_on=["year", "month"], how="left")
    assert got["release_date"].astype(str).tolist() == want["release_date"].tolist()
    assert got["release_date_source"].astype(str).tolist() == want["source"].tolist()
    assert set(got["release_date_source"].astype(str)) == {"Official release date",
                                                           "Project conservative proxy"}


@pytest.mark.parametrize("crosswalk", ["release_dates/absent.csv", None])
def test_cps_build_without_crosswalk_says_so_in_one_line(extract, tmp_path, caplog, crosswalk):
    with caplog.at_level(logging.INFO):
        got = _build(extract, tmp_path, crosswalk)
    notes = [r for r in caplog.records if "proxy rule" in r.getMessage()]
    assert len(notes) == 1 and notes[0].levelno < logging.ERROR
    text = notes[0].getMessage()
    assert "\n" not in text and "cps_basic_collection_completion_plus_30_lower_bound" in text
    assert ("absent.csv not found" if crosswalk else "survey.raw.release_crosswalk") in text
    assert set(got["release_date_source"].astype(str)) == {
        "proxy:cps_basic_collection_completion_plus_30_lower_bound"}
    jan = got[(got["YEAR"] == 2020) & (got["MONTH"] == 1)]["release_date"].astype(str)
    assert set(jan) == {"2020-02-24"}  # Sun 19 Jan -> Sat 25 Jan + 30 days


# --------------------------------------------------------------------------------------------
# Synthetic PSID lineage


@pytest.fixture(scope="module")
def shelf() -> pd.DataFrame:
    return synth.synthetic_psid(seed=SEED, n_families=60).shelf


def test_married_in_spouses_carry_the_lineage_of_the_family_they_join(shelf):
    current = shelf[(shelf["panel_current"] == 1) & shelf["fuid"].notna()]
    spouses = current[(current["rel"] == 2) & (current["sampstat"] == 0)]
    assert len(spouses) > 20  # the check below has cases to check
    heads = current[current["rel"] == 1].drop_duplicates(["year", "fuid"], keep=False)
    pairs = spouses.merge(heads[["year", "fuid", "lineage"]], on=["year", "fuid"],
                          suffixes=("", "_head"))
    assert len(pairs) > 20
    assert pairs["lineage"].notna().all()
    assert (pairs["lineage"] == pairs["lineage_head"]).all()
    assert shelf["lineage"].notna().all()  # as in PSID-SHELF: every person has a lineage


def test_reference_split_groups_can_be_formed_on_the_built_panel(tmp_path):
    """The reference's grouping: union-find over the SRC adults of 1968-1992 (current members,
    rel 1/2, ambiguous family-waves dropped), each linked to their partner; a partner outside
    that set is a KeyError there."""
    from hhx.surveys.psid import shelf as psid

    long_zip, main_zip = tmp_path / "l.zip", tmp_path / "m.zip"
    synth.write_synthetic_psid(long_zip, main_zip, seed=SEED, n_families=60)
    psid.build(SurveyConfig(name="psid", raw={"shelf_long": str(long_zip),
                                              "main_study": str(main_zip)}),
               tmp_path, tmp_path / "inter")
    panel = pd.read_parquet(tmp_path / "inter" / "psid_main.parquet",
                            columns=["id", "year", "fuid", "rel", "panel_current", "subsample",
                                     "reference_person_id", "spouse_person_id"])
    adults = panel[panel["year"].between(1968, 1992) & panel["panel_current"].eq(1)
                   & panel["subsample"].astype(str).eq("src") & panel["fuid"].notna()
                   & panel["rel"].isin([1, 2])]
    dup = adults.duplicated(["year", "fuid", "rel"], keep=False)
    bad = set(map(tuple, adults.loc[dup, ["year", "fuid"]].to_numpy().tolist()))
    adults = adults[[k not in bad for k in map(tuple, adults[["year", "fuid"]].to_numpy().tolist())]]
    partner = np.where(adults["rel"].eq(1), adults["spouse_person_id"].astype("float64"),
                       adults["reference_person_id"].astype("float64"))
    people = set(adults["id"].astype("int64"))
    linked = partner[~np.isnan(partner)].astype("int64")
    assert len(linked) > 20
    outside = sorted(set(linked) - people)
    assert not outside, f"{len(outside)} partners are not SRC adults, e.g. {outside[:3]}"


def test_sce_without_crosswalk_says_it_uses_the_lag_rule(tmp_path, caplog):
    from hhx.surveys.macro.release_dates import optional_crosswalk

    with caplog.at_level(logging.INFO):
        found = optional_crosswalk(survey("sce"), "release_crosswalk", tmp_path, "SCE",
                                   "the lag rule (survey month + the module's lag)")
    assert found is None
    [note] = [r.getMessage() for r in caplog.records]
    assert "release_sce.csv not found" in note and "the lag rule" in note and "\n" not in note
    write_synthetic_crosswalk(tmp_path / "release_dates" / "release_sce.csv", "sce", seed=SEED)
    assert optional_crosswalk(survey("sce"), "release_crosswalk", tmp_path, "SCE", "x") == (
        tmp_path / "release_dates" / "release_sce.csv")


def test_listing_does_not_call_an_optional_crosswalk_missing(tmp_path):
    from hhx.stages.listing import _missing_raw

    missing = {p.name for p in _missing_raw("labor_cps_jobfind", tmp_path)}
    assert "cps_basic.csv.gz" in missing and "release_cps.csv" not in missing
    assert "release_sce.csv" not in {p.name for p in _missing_raw("house_sce_financing", tmp_path)}
