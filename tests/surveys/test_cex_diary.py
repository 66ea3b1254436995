"""CEX Diary builder: the real BLS 2020 files, the ICPSR fixed-width archives (generated), the
reference's allocation rules on hand-built rows, and damaged inputs.

Expected values are computed here from the raw rows (csv module; fixed-width slices at the
positions of the layout table), never from the builder's output.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import zipfile
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys.cex import diary as cex_diary
from hhx.surveys.cex import diary_icpsr as cex_diary_icpsr
from hhx.surveys.synthetic.cex import diary as synth
from tests.helpers.cex_raw import crosswalk, diary_package, qredate

SHARED = Path(__file__).resolve().parents[3] / "shared"
DIARY20 = SHARED / "data" / "cex_diary" / "diary20"


def _build(raw: dict[str, Path], out: Path, **kw) -> pd.DataFrame:
    survey = SurveyConfig(name="cex_diary", raw={k: str(v) for k, v in raw.items()})
    report = cex_diary.build(survey, out, out, **kw)
    return pd.read_parquet(report.outputs["cex_diary_daily"])


# --------------------------------------------------------------------------------------------
# Real BLS 2020 files (Q2-Q3 as published; from 2012 hhx dates weeks from the purchase fields)


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> pd.DataFrame:
    if not DIARY20.is_dir():
        pytest.skip("shared/data/cex_diary/diary20 is absent")
    return _build({"diary": DIARY20}, tmp_path_factory.mktemp("real"),
                  require_all_quarters=False)


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="latin-1"))))


@pytest.mark.slow
def test_real_days_keys_labels_and_general_sums(real):
    weeks = [r for q in (2, 3) for r in _rows(DIARY20 / f"fmld20{q}.csv")]
    assert len(real) == 7 * len(weeks)
    first = weeks[0]
    assert real["source_week_id"].iloc[0] == f"BLS:2020:diary20:Q2:{first['NEWID']}"
    assert real["source_day_id"].iloc[6] == f"BLS:2020:diary20:Q2:{first['NEWID']}:D7"
    assert real["cu_id"].iloc[0] == f"2020:{first['NEWID'][:7]}"
    region = {"1": "Northeast", "2": "Midwest", "3": "South", "4": "West", "": "not reported"}
    got = real.groupby("newid")["region"].first()
    for week in weeks[:300]:
        assert got[week["NEWID"]] == region[week["REGION"]]
    sums: dict[tuple[str, int], float] = defaultdict(float)
    for q in (2, 3):
        for row in _rows(DIARY20 / f"expd20{q}.csv"):
            if row["EXPNSQDY"].strip():
                sums[(row["NEWID"], int(row["EXPNSQDY"]))] += float(row["COST"])
    dated = real.loc[real["diary_date"].notna()]
    assert len(dated) > 0.05 * len(real)  # weeks whose start day the purchases pin down
    for row in dated.head(2000).itertuples():
        assert row.daily_total_expenditure == pytest.approx(
            sums.get((row.newid, row.diary_day_sequence), 0.0), abs=1e-6)
        assert row.diary_date == row.diary_week_start + pd.Timedelta(days=row.diary_day_sequence
                                                                     - 1)
    assert real.loc[real["diary_date"].isna(), "daily_total_expenditure"].isna().all()


# --------------------------------------------------------------------------------------------
# ICPSR archives, generated in their fixed-width layout


@pytest.fixture(scope="module")
def icpsr(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    tmp = tmp_path_factory.mktemp("icpsr")
    synth.write_synthetic_cex_diary(tmp / "bls", seed=5, years=[1986], n_cu_per_quarter=6,
                                    icpsr_dir=tmp / "icpsr")
    daily = _build({"icpsr": tmp / "icpsr",
                    "release_crosswalk": crosswalk(tmp / "rd", range(1982, 2012))}, tmp / "out")
    return tmp / "icpsr" / "ICPSR_09114-V1.zip", daily


def _slice(line: bytes, year: int, family: str) -> dict[str, str]:
    """Fields of one fixed-width record at the table's 1-based positions (read independently)."""
    out = {}
    with cex_diary_icpsr.LAYOUT_FILE.open() as fh:
        for row in csv.DictReader(r for r in fh if not r.startswith("#")):
            if int(row["source_year"]) == year and row["file_family"] == family and row["start"]:
                out[row["field"]] = line[int(row["start"]) - 1:int(row["end"])].decode().strip()
    return out


def test_layout_table_holds_the_reference_positions():
    fields = cex_diary_icpsr.layout()
    assert fields[(1986, "FMLY")][0] == ("NEWID", 0, 8)
    assert ("STRTDAY", 646, 648) in fields[(1986, "FMLY")]
    assert ("BLS_URBN", None, None) in fields[(1982, "FMLY")]  # 1982-83: urban sample only
    assert ("US_SUPP", 225, 226) in fields[(1989, "MEMB")]
    assert fields[(1987, "EXPD")] == [("NEWID", 0, 8), ("COST", 9, 21), ("QREDATE", 23, 31),
                                      ("UCC", 32, 38)]


@pytest.mark.slow
def test_icpsr_round_trip_reads_the_documented_columns(icpsr):
    path, daily = icpsr
    with zipfile.ZipFile(path) as zf:
        fmly = [_slice(line, 1986, "FMLY") for m in ("DS0001", "DS0005", "DS0009", "DS0013")
                for line in zf.read(f"ICPSR_09114/{m}/09114-{m[2:]}-Data.txt").splitlines()]
        expd = [_slice(line, 1986, "EXPD") for m in ("DS0003", "DS0007", "DS0011", "DS0015")
                for line in zf.read(f"ICPSR_09114/{m}/09114-{m[2:]}-Data.txt").splitlines()]
        q4 = zf.read("ICPSR_09114/DS0015/09114-0015-Data.txt").splitlines()
    assert {len(line) for line in q4} == {80}  # 1986's Q4 EXPD member: 80-byte lines
    assert len(daily) == 7 * len(fmly)
    weeks = daily.drop_duplicates("newid").set_index("newid")
    for week in fmly:
        row = weeks.loc[week["NEWID"]]
        assert row["age_ref"] == float(week["AGE_REF"])
        assert row["annual_income_before_tax"] == float(week["FINCBEFX"])
        start = dt.date(1900 + int(week["STRTYEAR"]), int(week["STRTMNTH"]),
                        int(week["STRTDAY"]))
        assert row["diary_week_start"].date() == start
        assert row["source_week_id"].startswith("ICPSR:1986:ICPSR_09114-V1.zip:Q")
    sums: dict[tuple[str, dt.date], float] = defaultdict(float)
    for purchase in expd:
        code = purchase["QREDATE"]
        if code:
            day = dt.date(1900 + int(code[6:8]), int(code[2:4]), int(code[4:6]))
            sums[(purchase["NEWID"], day)] += float(purchase["COST"])
    for row in daily.itertuples():
        expected = sums.get((row.newid, row.diary_date.date()), 0.0)
        assert row.daily_total_expenditure_legacy_strict_v1 == pytest.approx(expected, abs=1e-6)


@pytest.mark.slow
def test_icpsr_damaged_archives_are_named(icpsr, tmp_path):
    path, _ = icpsr
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}

    def rewrite(change) -> Path:
        folder = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        target = folder / path.name
        with zipfile.ZipFile(target, "w") as zf:
            for name, data in change(dict(members)).items():
                zf.writestr(name, data)
        return folder

    def cut(m):  # the last FMLY record of Q1 lost
        name = "ICPSR_09114/DS0001/09114-0001-Data.txt"
        m[name] = b"".join(m[name].splitlines(keepends=True)[:-1])
        return m

    def drop_doc(m):
        m.pop("ICPSR_09114/09114-Documentation.txt")
        return m

    def short(m):  # the last record cut inside the line
        name = "ICPSR_09114/DS0003/09114-0003-Data.txt"
        m[name] = m[name][:-30]
        return m

    for change, message in ((cut, "records, but the archive's manifest lists"),
                            (drop_doc, "09114-Documentation.txt is missing"),
                            (short, "records, but the archive's manifest lists|ends early")):
        folder = rewrite(change)
        with pytest.raises(DataError, match=message):
            _build({"icpsr": folder}, tmp_path / "out")


# --------------------------------------------------------------------------------------------
# The reference's allocation rules on hand-built 1996 rows


@pytest.fixture(scope="module")
def rules_1996(tmp_path_factory) -> pd.DataFrame:
    tmp = tmp_path_factory.mktemp("rules")
    start = dt.date(1996, 3, 3)  # a Sunday
    week = {"NEWID": "05555551", "STRTDAY": "03", "STRTMNTH": "03", "STRTYEAR": "1996",
            "WEEKI": "1", "WEEKN": "1", "REGION": "4", "FINLWT21": "100.5", "PICK_UP": "01",
            "RESPSTAT": "1", "EDUC_REF": "13", "FAM_SIZE": "2", "PERSLT18": "0"}
    d2 = start + dt.timedelta(days=1)
    purchases = [
        {"NEWID": "05555551", "COST": "10.00", "UCC": "010210", "QREDATE": qredate(start, 1, True)},
        # 8 digits in 1996: allocated (general), not strict (1996 files write 10)
        {"NEWID": "05555551", "COST": "3.00", "UCC": "010210", "QREDATE": qredate(d2, 2, False)},
        # wrong weekday: general, not strict
        {"NEWID": "05555551", "COST": "5.00", "UCC": "190110",
         "QREDATE": "21" + qredate(d2, 2, True)[2:]},
        # day sequence 3 but dated day 2: neither
        {"NEWID": "05555551", "COST": "7.00", "UCC": "190110", "QREDATE": qredate(d2, 3, True)},
    ]
    members = [{"NEWID": "05555551", "MEMBNO": "1", "CU_CODE1": "1", "ANYSSINC": "1"}]
    diary_package(tmp / "bls", 1996, [week], members, purchases)
    return _build({"diary": tmp / "bls"}, tmp / "out")


@pytest.mark.slow
def test_general_and_strict_allocation_follow_the_reference(rules_1996):
    days = rules_1996.set_index("diary_day_sequence")
    assert days.loc[1, "daily_total_expenditure"] == 10.0
    assert days.loc[2, "daily_total_expenditure"] == 8.0  # the 8-digit and wrong-weekday ones
    assert days.loc[1, "daily_total_expenditure_legacy_strict_v1"] == 10.0
    assert days.loc[2, "daily_total_expenditure_legacy_strict_v1"] == 0.0
    assert days.loc[1, "daily_food_at_home_legacy_strict_v1"] == 10.0
    assert days.loc[3, "daily_total_expenditure"] == 0.0
    assert not days["expenditure_complete"].any()  # one usable purchase left unallocated
    assert (days["region"] == "West").all() and (days["education"] == "some college").all()
    assert (days["source_week_id"] == "BLS:1996:diary96.zip:Q1:05555551").all()


# --------------------------------------------------------------------------------------------
# Damaged BLS packages


@pytest.mark.slow
def test_missing_quarter_and_truncated_member_are_named(tmp_path):
    synth.write_synthetic_cex_diary(tmp_path / "bls", seed=2, years=[1995], n_cu_per_quarter=3)
    path = tmp_path / "bls" / "diary95.zip"
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}

    def write(folder: Path, m: dict[str, bytes]) -> Path:
        folder.mkdir()
        with zipfile.ZipFile(folder / "diary95.zip", "w") as zf:
            for name, data in m.items():
                zf.writestr(name, data)
        return folder

    gone = {n: d for n, d in members.items() if not n.endswith("expd953.csv")}
    with pytest.raises(DataError, match=r"expd953.csv \(quarter 3\) not found"):
        _build({"diary": write(tmp_path / "a", gone)}, tmp_path / "o1")
    cut = dict(members)
    cut["diary95/fmld952.csv"] = members["diary95/fmld952.csv"][:-40]
    with pytest.raises(DataError, match=r"fmld952.csv: ends early at line \d+"):
        _build({"diary": write(tmp_path / "b", cut)}, tmp_path / "o2")


def test_generator_is_seeded_and_refuses_years_without_a_release(tmp_path):
    a = synth.write_synthetic_cex_diary(tmp_path / "a", seed=4, years=[1989, 1990],
                                        n_cu_per_quarter=2)
    b = synth.write_synthetic_cex_diary(tmp_path / "b", seed=4, years=[1989, 1990],
                                        n_cu_per_quarter=2)
    assert [p.name for p in a] == ["ICPSR_09714-V1.zip", "diary90.zip"]
    assert all(x.read_bytes() == y.read_bytes() for x, y in zip(a, b, strict=True))
    with pytest.raises(Exception, match="no Diary release for 1981"):
        synth.write_synthetic_cex_diary(tmp_path / "c", seed=4, years=[1981], n_cu_per_quarter=2)
