"""State macro panel sources: seeded FHFA / LAUS / BEA files round-trip through their builders,
the joined panel, real FRED-QD U.S. unemployment, and one-line errors on bad input.

Expected values are computed here from the raw files with the csv module, not from the readers.
"""

from __future__ import annotations

import csv
import hashlib
import math
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.macro import bea_sainc, bls_laus, fhfa_hpi
from hhx.surveys.macro import state_panel as state_macro_panel
from hhx.surveys.macro.fred_qd import read_fred_qd
from hhx.surveys.synthetic.macro.fred_qd import write_synthetic_fred_qd
from hhx.surveys.synthetic.macro.state_macro import write_synthetic_state_macro

SHARED = Path(__file__).resolve().parents[3] / "shared"
REAL_FRED_QD = SHARED / "data" / "fred_qd" / "FRED-QD_vintage_to_2025Q2.csv"
# Spec 00_common 1.3: panel columns in order.
PANEL_COLUMNS = [
    "statefip", "state_abbrev", "state_name", "year", "unemployment_rate", "pcpi_nominal",
    "pcpi_growth_1y", "hpi_all_transactions_annual", "hpi_growth_1y", "us_unemployment_rate",
    "us_pcpi_nominal", "us_pcpi_growth_1y", "us_hpi_all_transactions_annual", "us_hpi_growth_1y",
]  # fmt: skip
BUILDERS = {"fhfa_hpi": fhfa_hpi, "bls_laus": bls_laus, "bea_sainc": bea_sainc}


def _build(key: str, raw: Path, out: Path):
    return BUILDERS[key].build(SurveyConfig(name=key, raw={key: str(raw)}), Path("/nonexistent"), out)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("state_macro")
    raw = write_synthetic_state_macro(root / "raw", seed=7)
    fred = write_synthetic_fred_qd(root / "raw" / "qd.csv", seed=7, end="2025Q4")
    out = root / "out"
    reports = {key: _build(key, path, out) for key, path in raw.items()}
    survey = SurveyConfig(name="state_macro_panel", raw={"fred_qd": str(fred)})
    reports["panel"] = state_macro_panel.build(survey, Path("/nonexistent"), out)
    return {"raw": raw, "fred": fred, "out": out, "reports": reports, "root": root}


def _read(built, name: str) -> pd.DataFrame:
    return pd.read_parquet(built["out"] / f"{name}.parquet")


def _pct(new: float, old: float) -> float:
    return (new / old - 1.0) * 100.0


def test_fhfa_round_trip(built):
    quarters = defaultdict(list)
    with built["raw"]["fhfa_hpi"].open() as fh:
        for r in csv.DictReader(fh):
            wanted = (r["hpi_type"], r["hpi_flavor"], r["frequency"]) == (
                "traditional", "all-transactions", "quarterly"
            )  # fmt: skip
            us = r["level"] == "USA or Census Division" and r["place_id"] == "USA"
            if wanted and (r["level"] == "State" or us):
                quarters[(r["place_id"], int(r["yr"]))].append(float(r["index_nsa"]))
    annual = {k: sum(v) / 4 for k, v in quarters.items() if len(v) == 4}
    state = _read(built, "fhfa_hpi_state_annual")
    assert state["state_abbrev"].nunique() == 51
    assert len(state) == sum(1 for k in annual if k[0] != "USA")
    for row in state.sample(40, random_state=0).itertuples():
        assert row.hpi_all_transactions_annual == pytest.approx(annual[(row.state_abbrev, row.year)])
        prev = annual.get((row.state_abbrev, row.year - 1))
        if prev is None:
            assert math.isnan(row.hpi_growth_1y)
        else:
            assert row.hpi_growth_1y == pytest.approx(_pct(annual[(row.state_abbrev, row.year)], prev))
    us = _read(built, "fhfa_hpi_us_annual").set_index("year")
    assert us.loc[2000, "us_hpi_all_transactions_annual"] == pytest.approx(annual[("USA", 2000)])
    assert us.loc[2000, "us_hpi_growth_1y"] == pytest.approx(
        _pct(annual[("USA", 2000)], annual[("USA", 1999)])
    )


def test_fhfa_incomplete_year_is_not_annualised(built, tmp_path):
    lines = built["raw"]["fhfa_hpi"].read_text().splitlines(keepends=True)
    drop = "traditional,all-transactions,quarterly,State,California,CA,1990,3,"
    kept = [line for line in lines if not line.startswith(drop)]
    assert len(kept) == len(lines) - 1
    (tmp_path / "hpi_master.csv").write_text("".join(kept))
    _build("fhfa_hpi", tmp_path / "hpi_master.csv", tmp_path)
    ca = _read({"out": tmp_path}, "fhfa_hpi_state_annual").query("state_abbrev == 'CA'")
    assert 1990 not in set(ca["year"]) and 1989 in set(ca["year"])
    assert math.isnan(ca.set_index("year").loc[1991, "hpi_growth_1y"])


def test_laus_round_trip(built):
    expected = {}
    with built["raw"]["bls_laus"].open() as fh:
        next(fh)
        for line in fh:
            sid, year, period, value, _ = (f.strip() for f in line.rstrip("\n").split("\t"))
            if sid.startswith("LAUST") and sid.endswith("03") and period == "M13":
                expected[(int(sid[5:7]), int(year))] = float(value)
    laus = _read(built, "bls_laus_state_annual")
    assert list(laus.columns) == ["statefip", "state_name", "year", "unemployment_rate"]
    assert len(laus) == 51 * 50 and set(laus["year"]) == set(range(1976, 2026))
    assert 72 not in set(laus["statefip"])  # Puerto Rico is in the file, not in the 51
    got = {(r.statefip, r.year): r.unemployment_rate for r in laus.itertuples()}
    assert got == {k: v for k, v in expected.items() if k[0] != 72}
    assert laus.query("statefip == 11")["state_name"].unique().tolist() == ["District of Columbia"]


def test_bea_round_trip(built):
    values = {}
    with built["raw"]["bea_sainc"].open(newline="") as fh:
        rows = list(csv.reader(fh))
    years = rows[0][8:]
    for r in rows[1:]:
        if len(r) > 8:
            for y, v in zip(years, r[8:]):
                values[(r[0].strip(), int(r[4]), int(y))] = None if v == "(NA)" else float(v)
    state = _read(built, "bea_sainc_state_annual").set_index(["statefip", "year"])
    # The reference drops a state-year whose three lines are all "(NA)" (Alaska, Hawaii early).
    present = {(int(g[:2]), y) for (g, _, y), v in values.items()
               if v is not None and g.endswith("000") and g[:2] not in ("00", "72")
               and int(g[:2]) < 90}
    assert set(state.index) == present and len(state) < 51 * len(years)
    for fips, year in [(1, 1929), (6, 1990), (36, 2025), (56, 1976)]:
        geo = f"{fips:02d}000"
        assert state.loc[(fips, year), "personal_income_millions"] == values[(geo, 1, year)]
        assert state.loc[(fips, year), "population"] == values[(geo, 2, year)]
        assert state.loc[(fips, year), "pcpi_nominal"] == values[(geo, 3, year)]
    assert state.loc[(6, 1990), "pcpi_growth_1y"] == pytest.approx(
        _pct(values[("06000", 3, 1990)], values[("06000", 3, 1989)])
    )
    assert values[("02000", 3, 1949)] is None  # Alaska (NA) before 1950 -> dropped
    assert (2, 1949) not in state.index and (2, 1950) in state.index
    assert math.isnan(state.loc[(2, 1950), "pcpi_growth_1y"])  # first year present
    us = _read(built, "bea_sainc_us_annual").set_index("year")
    assert us.loc[2024, "us_pcpi_nominal"] == values[("00000", 3, 2024)]


def test_panel_joins_and_is_complete(built):
    panel = _read(built, "state_macro_panel")
    assert list(panel.columns) == PANEL_COLUMNS
    assert panel["statefip"].nunique() == 51 and not panel.isna().any().any()
    assert set(panel["year"]) == set(range(1976, 2026))
    assert built["reports"]["panel"].rows["state_macro_panel"] == len(panel)
    unrate = defaultdict(list)
    with built["fred"].open(newline="") as fh:
        rows = list(csv.reader(fh))
    col = rows[0].index("UNRATE")
    for r in rows[3:]:
        unrate[int(r[0].split("/")[2])].append(float(r[col]))
    row = panel.query("statefip == 48 and year == 2009").iloc[0]
    assert row.us_unemployment_rate == pytest.approx(sum(unrate[2009]) / 4)
    laus = _read(built, "bls_laus_state_annual").query("statefip == 48 and year == 2009")
    assert row.unemployment_rate == laus["unemployment_rate"].iloc[0]
    assert row.state_abbrev == "TX" and row.state_name == "Texas"


def test_real_fred_qd_us_unemployment_and_incomplete_year():
    if not REAL_FRED_QD.is_file():
        pytest.skip("shared/ FRED-QD file not available")
    with REAL_FRED_QD.open(newline="") as fh:
        rows = list(csv.reader(fh))
    col = rows[0].index("UNRATE")
    by_year = defaultdict(list)
    for r in rows[1:]:
        if r[0].count("/") == 2 and r[col].strip():
            by_year[int(r[0].split("/")[2])].append(float(r[col]))
    us = state_macro_panel.us_unemployment(read_fred_qd(REAL_FRED_QD)).set_index("year")
    assert us.loc[2009, "us_unemployment_rate"] == pytest.approx(sum(by_year[2009]) / 4)
    # The reference averages the quarters a year has: the vintage ends 2025Q2.
    assert len(by_year[2025]) == 2
    assert us.loc[2025, "us_unemployment_rate"] == pytest.approx(sum(by_year[2025]) / 2)


def test_panel_refuses_a_year_fred_qd_lacks(built, tmp_path):
    short = write_synthetic_fred_qd(tmp_path / "qd.csv", seed=7, end="2024Q4")
    survey = SurveyConfig(name="state_macro_panel", raw={"fred_qd": str(short)})
    with pytest.raises(DataError, match=r"us_unemployment_rate is missing for Alabama 2025"):
        state_macro_panel.build(survey, Path("/nonexistent"), built["out"])


def test_panel_names_the_missing_intermediate(built, tmp_path):
    survey = SurveyConfig(name="state_macro_panel", raw={"fred_qd": str(built["fred"])})
    with pytest.raises(DataError, match=r"build survey=bls_laus first"):
        state_macro_panel.build(survey, Path("/nonexistent"), tmp_path)


@pytest.mark.parametrize("key", ["fhfa_hpi", "bls_laus", "bea_sainc"])
def test_missing_file_names_path_and_source(key, tmp_path):
    with pytest.raises(DataError) as err:
        _build(key, tmp_path / "absent.csv", tmp_path)
    message = str(err.value)
    assert str(tmp_path / "absent.csv") in message and BUILDERS[key].SOURCE_URL in message
    assert "\n" not in message


def _mutated(built, key: str, tmp_path: Path, old: str, new: str, count: int = 1) -> Path:
    text = built["raw"][key].read_text()
    assert old in text
    target = tmp_path / built["raw"][key].name
    target.write_text(text.replace(old, new, count))
    return target


@pytest.mark.parametrize(
    ("key", "old", "new", "pattern"),
    [
        ("fhfa_hpi", "index_nsa,", "index_x,", r"column 'index_nsa' not found"),
        ("fhfa_hpi", "State,Texas,TX,", "State,Puerto Rico,PR,", r"place_id .*'PR'"),
        ("fhfa_hpi", "State,Texas,TX,1990,2,", "State,Texas,TX,1990,7,", r"period .*'7'"),
        ("bls_laus", "\tperiod\t", "\tperiode\t", r"column 'period' not found"),
        ("bls_laus", "\t2001\tM13\t", "\t2001\tM14\t", r"period has code 'M14'"),
        ("bls_laus", "LAUST040000000000003", "LAUST030000000000003", r"series_id .*LAUST03"),
        ("bea_sainc", '"LineCode"', '"Line"', r"column 'LineCode' not found"),
        ("bea_sainc", '"SAINC1",3,', '"SAINC1",4,', r"LineCode has code '4'"),
        ("bea_sainc", '" 05000"', '" 03000"', r"GeoFIPS 05000 lacks LineCode"),  # 03000 ignored
    ],
)
def test_bad_input_is_one_line_naming_column_and_code(built, tmp_path, key, old, new, pattern):
    path = _mutated(built, key, tmp_path, old, new, count=-1 if "TX" in old else 1)
    with pytest.raises(DataError, match=pattern) as err:
        _build(key, path, tmp_path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_laus_incomplete_grid_names_the_series(built, tmp_path):
    text = built["raw"]["bls_laus"].read_text()
    line = next(x for x in text.splitlines(keepends=True) if x.startswith("LAUST060000000000003")
                and "\t1999\tM13\t" in x)  # fmt: skip
    path = tmp_path / "la.data.2.AllStatesU.txt"
    path.write_text(text.replace(line, ""))
    with pytest.raises(DataError, match=r"LAUST060000000000003 in 1999"):
        _build("bls_laus", path, tmp_path)


def test_same_seed_same_bytes(built, tmp_path):
    again = write_synthetic_state_macro(tmp_path, seed=7)
    for key, path in again.items():
        first = hashlib.sha256(built["raw"][key].read_bytes()).hexdigest()
        assert hashlib.sha256(path.read_bytes()).hexdigest() == first, key


@pytest.mark.parametrize("variant", ["utf-8-bom", "latin-1"])
def test_bea_reads_bom_and_latin1_downloads(built, tmp_path, variant):
    text = built["raw"]["bea_sainc"].read_text().replace('" 01000"', '"01000"')
    text += '"Source: U.S. Bureau of Economic Analysis, Régional Data"\r\n'
    path = tmp_path / built["raw"]["bea_sainc"].name
    if variant == "latin-1":
        path.write_bytes(text.encode("latin-1"))
    else:
        path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    _build("bea_sainc", path, tmp_path)
    mine = _read({"out": tmp_path}, "bea_sainc_state_annual")
    pd.testing.assert_frame_equal(mine, _read(built, "bea_sainc_state_annual"))
