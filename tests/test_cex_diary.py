"""CEX Diary reader: real BLS 2020 files, seeded round trips, and error messages.

Expected values are computed here from the raw CSV rows with plain csv code, or taken from BLS's
own weekly summaries in FMLD (FOODHOME, FOODAWAY, ALCBEV), never from the module's output.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import shutil
import zipfile
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import DataError
from hhx.surveys import cex_diary
from hhx.surveys.synthetic import cex_diary as synth

SHARED = Path(__file__).resolve().parents[2] / "shared"
DIARY20 = SHARED / "data" / "cex_diary" / "diary20"
DICTIONARY = SHARED / "data" / "cex_meta" / "ce-data-dict.xlsx"


def _real() -> Path:
    if not DIARY20.is_dir():
        pytest.skip("shared/data/cex_diary/diary20 is absent")
    return DIARY20


def _build(path: Path, out: Path) -> tuple[pd.DataFrame, cex_diary.BuildReport]:
    survey = SurveyConfig(name="cex_diary", raw={"diary": str(path)})
    report = cex_diary.build(survey, Path("/nonexistent"), out)
    return pd.read_parquet(report.outputs["cex_diary_daily"]), report


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _package_rows(path: Path, family: str) -> list[dict[str, str]]:
    """All rows of one family from a zip or a folder, read with the csv module."""
    rows: list[dict[str, str]] = []
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as zf:
            for name in sorted(zf.namelist()):
                if Path(name).name.startswith(family):
                    rows += _csv_rows(zf.read(name).decode("latin-1"))
    else:
        for f in sorted(path.glob(f"{family}*.csv")):
            rows += _csv_rows(f.read_text(encoding="latin-1"))
    return rows


# Spec 10_tasks section 6 food definitions, written out independently of the module.
def _is_home(ucc: int) -> bool:
    return 10110 <= ucc <= 180710 or ucc in (200110, 200111, 200112) or 200210 <= ucc <= 200410


def _is_away(ucc: int, year: int) -> bool:
    if year <= 1997:
        top = 200530 if year <= 1993 else 200536
        return 190110 <= ucc <= 190320 or ucc in (190901, 190902) or 200510 <= ucc <= top
    return 190000 <= ucc <= 199999 or 200510 <= ucc <= 200599


def _day_of(row: dict[str, str]) -> int | None:
    """Diary day of an EXPD row straight from its date field (None = no day)."""
    if "QREDATE" in row:
        return int(row["QREDATE"][0]) if row["QREDATE"].strip() else None
    return int(row["EXPNSQDY"]) if row["EXPNSQDY"].strip() else None


def _expected_days(path: Path, year: int) -> dict[tuple[str, int], list[float]]:
    """(NEWID, day) -> [total, food at home, food away, records] from the raw EXPD rows."""
    sums: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for row in _package_rows(path, "expd"):
        day = _day_of(row)
        if day is None:
            continue
        cost, ucc = float(row["COST"]), int(row["UCC"])
        s = sums[(row["NEWID"], day)]
        s[0] += cost
        s[1] += cost if _is_home(ucc) else 0.0
        s[2] += cost if _is_away(ucc, year) else 0.0
        s[3] += 1
    return sums


# --------------------------------------------------------------------------------------------
# Real BLS files (2020 Q2-Q3, as published)


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    return _build(_real(), tmp_path_factory.mktemp("real"))


@pytest.fixture(scope="module")
def real_expd() -> pd.DataFrame:
    return pd.DataFrame(_package_rows(_real(), "expd"))


def test_real_grid_has_seven_days_per_diary_week(real):
    daily, report = real
    fmld = _package_rows(DIARY20, "fmld")
    assert len(daily) == 7 * len(fmld) == report.rows["cex_diary_daily"]
    assert daily["source_day_id"].is_unique
    assert set(daily["cu_id"]) == {f"2020:{r['NEWID'][:7]}" for r in fmld}
    row = daily.iloc[0]
    assert row["source_day_id"] == f"{row['source_week_id']}:D{row['diary_day']}"
    assert row["source_week_id"] == f"2020:{row['newid']}"
    assert sorted(daily["diary_day"].unique()) == list(range(1, 8))
    # characteristics come through per week
    ages = {r["NEWID"]: int(r["AGE_REF"]) for r in fmld}
    assert (daily["age_ref"] == daily["newid"].map(ages)).all()


def test_real_daily_totals_match_hand_sums_from_expd(real, real_expd):
    daily, report = real
    expected = _expected_days(DIARY20, 2020)
    got = daily.set_index(["newid", "diary_day"])
    # every (unit, day) with purchases, and a few checked explicitly with food both ways
    food_units = [k for k, v in expected.items() if v[1] > 0 and v[2] > 0][:5]
    for key in food_units:
        total, home, away, n = expected[key]
        assert got.loc[key, "daily_total_expenditure"] == pytest.approx(total, abs=1e-9)
        assert got.loc[key, "daily_food_at_home"] == pytest.approx(home, abs=1e-9)
        assert got.loc[key, "daily_food_away_from_home"] == pytest.approx(away, abs=1e-9)
        assert got.loc[key, "daily_records"] == n
    table = _expected_table(DIARY20, 2020)
    joined = table.join(got, how="left")
    assert (joined["total"] - joined["daily_total_expenditure"]).abs().max() < 1e-8
    assert (joined["home"] - joined["daily_food_at_home"]).abs().max() < 1e-8
    assert (joined["away"] - joined["daily_food_away_from_home"]).abs().max() < 1e-8
    # days without purchases are zeros, not missing
    assert got["daily_total_expenditure"].notna().all()
    assert got.loc[~got.index.isin(table.index), "daily_total_expenditure"].eq(0).all()
    # purchases without a day are counted, not dropped
    blank = int((real_expd["EXPNSQDY"].str.strip() == "").sum())
    assert report.rows["expd_unallocated_records"] == blank > 0
    weekly = daily.drop_duplicates("source_week_id")["week_unallocated_records"].sum()
    assert weekly == blank


def test_real_food_splits_reproduce_bls_weekly_summaries(real):
    daily, _ = real
    weeks = daily.groupby("newid").agg(
        food=("daily_food_at_home", "sum"),
        away=("daily_food_away_from_home", "sum"),
        unallocated=("week_unallocated_records", "first"),
    )
    fmld = pd.DataFrame(_package_rows(DIARY20, "fmld")).set_index("NEWID")
    bls = fmld[["FOODHOME", "FOODAWAY", "ALCBEV"]].astype(float).sum(axis=1)
    complete = weeks[weeks["unallocated"] == 0]
    diff = (complete["food"] + complete["away"] - bls.reindex(complete.index)).abs()
    assert len(complete) > 4000
    assert diff.max() < 0.01


def test_real_dates_are_consistent_with_purchase_fields(real, real_expd):
    daily, _ = real
    exact = daily[daily["date_status"] == "exact"]
    assert exact["diary_date"].notna().all() and len(exact) > 0
    assert daily.loc[daily["date_status"] != "exact", "diary_date"].isna().all()
    weekday = exact["diary_date"].dt.dayofweek.map(lambda d: (d + 1) % 7 + 1)
    assert (exact["diary_weekday"] == weekday).all()
    first = exact[exact["diary_day"] == 1]
    assert (first["diary_date"].dt.month == first["strtmnth"]).all()
    expd = real_expd[real_expd["EXPNSQDY"] != ""]
    expd = expd.assign(newid=expd["NEWID"], diary_day=expd["EXPNSQDY"].astype(int))
    checked = expd.merge(exact[["newid", "diary_day", "diary_date"]], on=["newid", "diary_day"])
    assert len(checked) > 1000
    assert (checked["diary_date"].dt.month == checked["EXPNMO"].astype(int)).all()
    weekday = checked["diary_date"].dt.dayofweek.map(lambda d: (d + 1) % 7 + 1)
    assert (weekday == checked["EXPNWKDY"].astype(int)).all()


def test_real_fingerprints_name_every_input(real):
    _, report = real
    files = sorted(DIARY20.glob("*.csv"))
    assert set(report.inputs) == {str(f) for f in files}
    f = files[0]
    assert report.inputs[str(f)] == hashlib.sha256(f.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def dictionary():
    if not DICTIONARY.is_file():
        pytest.skip("shared/data/cex_meta/ce-data-dict.xlsx is absent")
    sheets = pd.read_excel(DICTIONARY, sheet_name=["Variables", "Codes "], dtype=str)
    codes = sheets["Codes "]
    codes.columns = [c.strip() for c in codes.columns]
    return sheets["Variables"], codes[codes["Survey"] == "DIARY"]


@pytest.mark.slow
def test_codebook_constants_equal_the_data_dictionary(dictionary):
    _, codes = dictionary
    for column, allowed in cex_diary.CODEBOOK.items():
        listed = codes[codes["Variable"].str.strip() == column]["Code value"]
        assert {int(c) for c in listed} == set(allowed), column


@pytest.mark.slow
def test_generator_uccs_are_defined_for_their_years(dictionary):
    _, codes = dictionary
    ucc = codes[(codes["File"] == "EXPD") & (codes["Variable"].str.strip() == "UCC")]
    spans = defaultdict(list)
    for _, r in ucc.iterrows():
        last = int(float(r["Last year"])) if isinstance(r["Last year"], str) else 9999
        spans[r["Code value"].zfill(6)].append((int(float(r["First year"])), last))
    for year in (1990, 1995, 2000, 2011, 2020, 2023):
        for code, *_ in synth.ucc_table(year):
            assert any(a <= year <= b for a, b in spans[code]), (code, year)


def test_generator_2020_layout_equals_real_headers(tmp_path):
    real_dir = _real()
    (path,) = synth.write_synthetic_cex_diary(tmp_path, seed=1, years=[2020], n_cu_per_quarter=2)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert "diary20/fmld202.csv" in names and "diary20/dtid204.csv" in names
        for family in ("fmld", "memd", "expd", "dtbd", "dtid"):
            header = zf.read(f"diary20/{family}202.csv").split(b"\r\n")[0]
            real_header = (real_dir / f"{family}202.csv").read_bytes().split(b"\r\n")[0]
            assert header == real_header, family


# --------------------------------------------------------------------------------------------
# Seeded synthetic packages: generate -> build recovers what the files hold


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    raw = tmp_path_factory.mktemp("raw")
    paths = synth.write_synthetic_cex_diary(raw, seed=11, years=[1995, 2020], n_cu_per_quarter=25)
    daily, report = _build(raw, tmp_path_factory.mktemp("out"))
    return paths, daily, report


def _expected_table(path: Path, year: int) -> pd.DataFrame:
    rows = [(k[0], k[1], *v) for k, v in _expected_days(path, year).items()]
    columns = ["newid", "diary_day", "total", "home", "away", "n"]
    return pd.DataFrame(rows, columns=columns).set_index(["newid", "diary_day"])


def test_round_trip_daily_totals(synthetic):
    paths, daily, report = synthetic
    assert report.rows["expd_unallocated_records"] > 0
    for path in paths:
        year = 1995 if "95" in path.name else 2020
        part = daily[daily["cex_data_year"] == year].set_index(["newid", "diary_day"])
        assert len(part) == 7 * len(_package_rows(path, "fmld"))
        expected = _expected_table(path, year)
        joined = expected.join(part, how="left")
        assert (joined["total"] - joined["daily_total_expenditure"]).abs().max() < 1e-8
        assert (joined["home"] - joined["daily_food_at_home"]).abs().max() < 1e-8
        assert (joined["away"] - joined["daily_food_away_from_home"]).abs().max() < 1e-8
        assert (joined["n"] == joined["daily_records"]).all()
        assert part["daily_records"].sum() == expected["n"].sum()
        assert joined["home"].sum() > 0 and joined["away"].sum() > 0


def test_round_trip_food_matches_generator_weekly_summaries(synthetic):
    paths, daily, _ = synthetic
    for path in paths:
        fmld = pd.DataFrame(_package_rows(path, "fmld")).set_index("NEWID")
        bls = fmld[["FOODHOME", "FOODAWAY", "ALCBEV"]].astype(float).sum(axis=1)
        weeks = (
            daily[daily["newid"].isin(fmld.index)]
            .groupby("newid")
            .agg(
                food=("daily_food_at_home", "sum"),
                away=("daily_food_away_from_home", "sum"),
                unallocated=("week_unallocated_records", "first"),
            )
        )
        complete = weeks[weeks["unallocated"] == 0]
        assert len(complete) > 0.8 * len(weeks)
        diff = complete["food"] + complete["away"] - bls.reindex(complete.index)
        assert diff.abs().max() < 1e-6


def test_round_trip_legacy_dates_and_members(synthetic):
    paths, daily, _ = synthetic
    (legacy,) = [p for p in paths if p.name == "diary95.zip"]
    part = daily[daily["cex_data_year"] == 1995]
    assert (part["date_status"] == "exact").all()
    starts = {
        r["NEWID"]: dt.date(int(r["STRTYEAR"]), int(r["STRTMNTH"]), int(r["STRTDAY"]))
        for r in _package_rows(legacy, "fmld")
    }
    expected = [
        pd.Timestamp(starts[n] + dt.timedelta(days=k - 1))
        for n, k in zip(part["newid"], part["diary_day"], strict=True)
    ]
    assert list(part["diary_date"]) == expected
    ssinc = defaultdict(int)
    for r in _package_rows(legacy, "memd"):
        if r["CU_CODE1"] in ("1", "2") and r["ANYSSINC"] == "1":
            ssinc[r["NEWID"]] = 1
    weekly = part.drop_duplicates("newid").set_index("newid")["ssinc_ref_or_spouse"]
    assert weekly.to_dict() == {n: ssinc[n] for n in weekly.index}
    assert weekly.sum() > 0


def test_unzipped_folder_reads_like_the_zip(synthetic, tmp_path):
    paths, daily, _ = synthetic
    (legacy,) = [p for p in paths if p.name == "diary95.zip"]
    with zipfile.ZipFile(legacy) as zf:
        zf.extractall(tmp_path)
    folder, _, _ = cex_diary.read_cex_diary([tmp_path / "diary95"])
    part = daily[daily["cex_data_year"] == 1995].reset_index(drop=True)
    pd.testing.assert_frame_equal(folder, part)


def test_generator_is_seeded(tmp_path):
    a = synth.write_synthetic_cex_diary(tmp_path / "a", seed=5, years=[2001], n_cu_per_quarter=3)
    b = synth.write_synthetic_cex_diary(tmp_path / "b", seed=5, years=[2001], n_cu_per_quarter=3)
    c = synth.write_synthetic_cex_diary(tmp_path / "c", seed=6, years=[2001], n_cu_per_quarter=3)
    assert a[0].read_bytes() == b[0].read_bytes()
    assert a[0].read_bytes() != c[0].read_bytes()


# --------------------------------------------------------------------------------------------
# Errors: one line naming the file, column or code


@pytest.fixture
def small_folder(tmp_path) -> Path:
    (path,) = synth.write_synthetic_cex_diary(tmp_path, seed=2, years=[1999], n_cu_per_quarter=2)
    with zipfile.ZipFile(path) as zf:
        zf.extractall(tmp_path)
    return tmp_path / "diary99"


def _edit(path: Path, change) -> None:
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    change(frame)
    frame.to_csv(path, index=False)


def test_missing_raw_path_names_path_and_source(tmp_path):
    with pytest.raises(DataError, match=r"nowhere.*https://www\.bls\.gov/cex/pumd\.htm") as err:
        _build(tmp_path / "nowhere", tmp_path)
    assert "\n" not in str(err.value)


def test_missing_member_is_named(small_folder):
    (small_folder / "expd993.csv").unlink()
    with pytest.raises(DataError, match=r"expd993\.csv not found.*pumd\.htm"):
        cex_diary.read_cex_diary([small_folder])


def test_absent_column_names_file_and_column(small_folder):
    _edit(small_folder / "fmld992.csv", lambda f: f.drop(columns=["FAM_SIZE"], inplace=True))
    with pytest.raises(DataError, match=r"fmld992\.csv: column FAM_SIZE not found"):
        cex_diary.read_cex_diary([small_folder])


def test_code_outside_codebook_names_column_and_code(small_folder):
    def bad_sex(f: pd.DataFrame) -> None:
        f.loc[0, "SEX_REF"] = "7"

    _edit(small_folder / "fmld994.csv", bad_sex)
    with pytest.raises(DataError, match=r"fmld994\.csv: column SEX_REF has code 7"):
        cex_diary.read_cex_diary([small_folder])


def test_malformed_ucc_is_an_error(small_folder):
    def bad_ucc(f: pd.DataFrame) -> None:
        f.loc[0, "UCC"] = "19O110"

    _edit(small_folder / "expd991.csv", bad_ucc)
    with pytest.raises(DataError, match=r"expd991\.csv: column UCC has value '19O110'"):
        cex_diary.read_cex_diary([small_folder])


def test_same_year_twice_is_an_error(small_folder, tmp_path):
    other = tmp_path / "copy" / "diary99"
    shutil.copytree(small_folder, other)
    with pytest.raises(DataError, match="Diary year 1999 is given twice"):
        cex_diary.read_cex_diary([small_folder, other])
