"""Release-date crosswalks: generated files in the reference layout round-trip through the
builder; every rule of spec 2 that a crosswalk can break is refused with a one-line error."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.macro import release_dates as rd
from hhx.surveys.synthetic.macro.release_dates import write_synthetic_release_dates


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    return write_synthetic_release_dates(tmp_path_factory.mktemp("raw") / "release_dates", seed=3)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def rewrite(path: Path, out: Path, change) -> Path:
    data = rows(path)
    change(data)
    with out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(data[0]))
        writer.writeheader()
        writer.writerows(data)
    return out


def test_build_writes_every_crosswalk_as_read(files, tmp_path):
    survey = SurveyConfig(name="release_dates",
                          raw={s: f"release_dates/release_{s}.csv" for s in rd.CROSSWALK_KEYS})
    report = rd.build(survey, files["cps"].parents[1], tmp_path)
    assert report.synthetic and len(report.inputs) == 6
    for source, path in files.items():
        raw = rows(path)
        out = pd.read_parquet(report.outputs[f"release_dates_{source}"])
        assert report.rows[f"release_dates_{source}"] == len(raw) == len(out), source
        by_key = {tuple(str(r[k]) for k in rd.CROSSWALK_KEYS[source]): r["release_date"]
                  for r in raw}
        got = {tuple(str(v) for v in key): d for key, d in
               zip(out[rd.CROSSWALK_KEYS[source]].itertuples(index=False), out["release_date"],
                   strict=True)}
        assert got == by_key, source
    assert sorted(pd.read_parquet(report.outputs["release_dates_psid"])["year"]) == rd.PSID_WAVES


def test_skipping_a_source_and_configuring_none(files, tmp_path):
    raw = files["cps"].parents[1]
    only = SurveyConfig(name="release_dates", raw={"cps": "release_dates/release_cps.csv",
                                                    "sce": None})
    assert list(rd.build(only, raw, tmp_path).outputs) == ["release_dates_cps"]
    with pytest.raises(ConfigError, match="no crosswalk configured"):
        rd.build(SurveyConfig(name="release_dates", raw={}), raw, tmp_path)


def test_rules_generated_files_follow(files):
    cps = rd.read_release_crosswalk("cps", files["cps"])
    before = cps[cps["year"] < 2020]
    assert (before["release_date"] == [rd.proxy_release_date(y, m) for y, m in
                                       zip(before["year"], before["month"], strict=True)]).all()
    sce = rd.read_release_crosswalk("sce", files["sce"])
    march = sce[(sce["survey_year"] == 2020) & (sce["survey_month"] == 3)]
    assert dict(zip(march["module"], march["release_date"], strict=True)) == {
        "core": "2020-12-01", "household_spending": "2021-09-01", "labor_market": "2021-09-01",
        "public_policy": "2020-12-01", "housing": "2021-09-01", "job_search": "2020-12-01"}


def test_lookup_dates_rows_and_refuses_unknown_keys(files):
    table = rd.read_release_crosswalk("mich", files["mich"])
    frame = pd.DataFrame({"YYYYMM": [197801, 202001, 197801]})
    got = rd.lookup_release_dates(frame, table, "mich", on={"yyyymm": "YYYYMM"})
    expected = {int(r["yyyymm"]): r["release_date"] for r in rows(files["mich"])}
    assert got.tolist() == [expected[197801], expected[202001], expected[197801]]
    with pytest.raises(DataError, match=r"release_mich.csv has no release date for \{'yyyymm': "
                                        r"203001\} \(2 rows\)"):
        rd.lookup_release_dates(pd.DataFrame({"yyyymm": [203001, 203001]}), table, "mich")
    audit = rd.coverage_audit("mich", "crosswalk", got)
    assert audit["rows"].sum() == 3 and audit["unmatched_rows"].sum() == 0


@pytest.mark.parametrize(
    ("source", "change", "message"),
    [
        ("cex", lambda d: d[0].update(release_date="1980-06-01"), "precedes the end"),
        ("cex", lambda d: d[1].update(source="Guess"), "source 'Guess' is not one of"),
        ("cex", lambda d: d[1].update(cex_data_year=d[0]["cex_data_year"]), "appears twice"),
        ("cps", lambda d: d[0].update(release_date="20/02/1976"), r":2: bad key or date"),
        ("psid", lambda d: d.pop(3), r"missing \[1971\]"),
        ("psid", lambda d: d[-1].update(year="2022"), r"not waves \[2022\]"),
        # the reference's reader keeps the two samples' rows only: the 1990 one is now missing
        ("census", lambda d: d[0].update(sample="199005"), "no row for sample 199002"),
        ("census", lambda d: d[1].update(year="1990"), "sample 200007 with year 1990"),
        ("cex", lambda d: d[2].update(comments=" "), r":4: comments is empty"),
        ("mich", lambda d: d[0].update(source_url=""), r":2: source_url is empty"),
        ("psid", lambda d: d[5].update(source=""), r":7: source is empty"),
        ("cps", lambda d: d[0].update(source="Official release date"),
         "CPS 1976-01: basic rows before 2020 need source 'Project conservative proxy'"),
        ("cps", lambda d: d[-1].update(source_url="https://example.org"),
         r"basic rows from January 2020 must cite https://www\.census\.gov/data/"),
        ("sce", lambda d: d[0].update(microdata_release_lag_months="12"),
         "microdata_release_lag_months 12 for module core; its lag is 9"),
        ("sce", lambda d: d[0].update(aggregate_release_date_proxy="soon"), "bad key or date"),
        ("sce", lambda d: d.__setitem__(slice(None), [r for r in d if r["module"] != "housing"]), "no row for SCE "
         "module housing"),
        ("sce", lambda d: d[0].update(module="spending"), "module 'spending' unknown"),
        ("mich", lambda d: d[0].update(yyyymm="197813"), "bad key or date"),
    ],
)
def test_broken_crosswalks_are_refused(files, tmp_path, source, change, message):
    bad = rewrite(files[source], tmp_path / f"release_{source}.csv", change)
    with pytest.raises(DataError, match=message) as err:
        rd.read_release_crosswalk(source, bad)
    assert str(bad) in str(err.value) and "\n" not in str(err.value)


def test_missing_file_and_column_are_named(files, tmp_path):
    with pytest.raises(DataError, match="psid release-date crosswalk not found"):
        rd.read_release_crosswalk("psid", tmp_path / "nope.csv")
    bad = tmp_path / "release_psid.csv"
    bad.write_text("wave,release_date\n1968,1970-01-01\n")
    with pytest.raises(DataError, match="column year is missing; release_psid.csv needs year, "
                                        "release_date"):
        rd.read_release_crosswalk("psid", bad)


@pytest.mark.parametrize(
    ("source", "column"),
    [("psid", "comments"), ("cex", "source_url"), ("cps", "partition"), ("mich", "source"),
     ("census", "comments"), ("sce", "aggregate_release_date_proxy"),
     ("sce", "microdata_release_lag_months")],
)
def test_columns_the_reference_reader_requires(files, tmp_path, source, column):
    """Each crosswalk needs the columns its reference reader (load_*_release_date_crosswalk)
    requires; the generator writes all of them."""
    table = pd.read_csv(files[source], dtype=str, keep_default_na=False)
    assert column in table.columns
    bad = tmp_path / f"release_{source}.csv"
    table.drop(columns=column).to_csv(bad, index=False)
    with pytest.raises(DataError, match=f"column {column} is missing; release_{source}.csv needs"):
        rd.read_release_crosswalk(source, bad)


def test_provenance_columns_are_kept(files, tmp_path):
    sce = rd.read_release_crosswalk("sce", files["sce"])
    assert {"release_date_source", "source_url", "comments", "aggregate_release_date_proxy",
            "microdata_release_lag_months"} <= set(sce.columns)
    row = sce[(sce["module"] == "housing") & (sce["survey_year"] == 2020)
              & (sce["survey_month"] == 3)].iloc[0]
    assert (row["aggregate_release_date_proxy"], row["microdata_release_lag_months"]) == (
        "2020-04-01", 18)
    census = pd.read_csv(files["census"], dtype=str)
    extra = pd.concat([census, census.iloc[[0]].assign(sample="199005")])
    extra.to_csv(tmp_path / "release_census.csv", index=False)
    assert len(rd.read_release_crosswalk("census", tmp_path / "release_census.csv")) == 2
