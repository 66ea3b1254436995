"""CPI-U major groups: real FRED CSVs, seeded BLS flat files, mixed sources and error messages.

Expected values are read here from the raw files with the csv module, not from the reader.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd
import pytest

from hhx.config import SurveyConfig
from hhx.errors import ConfigError, DataError
from hhx.surveys.macro import cpi
from hhx.surveys.synthetic.macro.cpi import write_synthetic_cpi

SHARED = Path(__file__).resolve().parents[3] / "shared"
CPI_FRED = SHARED / "data" / "cpi_fred"

# Spec 00_common 1.3: the exact output columns, in order.
SPEC_COLUMNS = [
    "date", "year", "month", "quarter", "year_quarter", "cpi_all_items", "cpi_food_beverages",
    "cpi_housing", "cpi_apparel", "cpi_transportation", "cpi_medical_care", "cpi_recreation",
    "cpi_education_communication", "cpi_other_goods_services",
]  # fmt: skip
FRED_IDS = {
    "cpi_all_items": "CPIAUCSL", "cpi_food_beverages": "CPIFABSL", "cpi_housing": "CPIHOSSL",
    "cpi_apparel": "CPIAPPSL", "cpi_transportation": "CPITRNSL", "cpi_medical_care": "CPIMEDSL",
    "cpi_recreation": "CPIRECSL", "cpi_education_communication": "CPIEDUSL",
    "cpi_other_goods_services": "CPIOGSSL",
}  # fmt: skip


def _build(folder: Path, out: Path) -> pd.DataFrame:
    survey = SurveyConfig(name="cpi", raw={"cpi": str(folder)})
    report = cpi.build(survey, Path("/nonexistent"), out)
    assert report.rows["cpi_major_groups"] == len(
        pd.read_parquet(report.outputs["cpi_major_groups"])
    )
    return pd.read_parquet(report.outputs["cpi_major_groups"])


def _fred_values(path: Path) -> dict[str, float]:
    with path.open() as fh:
        rows = list(csv.reader(fh))[1:]
    return {d[:7]: float(v) for d, v in rows if v not in ("", ".")}


def _bls_values(path: Path, series_id: str) -> dict[str, float]:
    out = {}
    with path.open() as fh:
        next(fh)
        for line in fh:
            sid, year, period, value, _ = line.rstrip("\n").split("\t")
            if sid.strip() == series_id and period.startswith("M") and period != "M13":
                out[f"{year.strip()}-{period[1:]}"] = float(value)
    return out


def _assert_complete_grid(frame: pd.DataFrame) -> None:
    months = frame["date"].dt.to_period("M")
    assert (months.diff().iloc[1:].map(lambda d: d.n) == 1).all()
    assert (frame["date"].dt.day == 1).all()
    assert (
        frame["year_quarter"] == frame["year"].astype(str) + "Q" + frame["quarter"].astype(str)
    ).all()
    assert (frame["quarter"] == (frame["month"] - 1) // 3 + 1).all()


def _assert_matches(frame: pd.DataFrame, column: str, expected: dict[str, float]) -> None:
    got = dict(zip(frame["date"].dt.strftime("%Y-%m"), frame[column], strict=True))
    for month, value in got.items():
        if month in expected:
            assert value == expected[month], (column, month)
        else:
            assert math.isnan(value), (column, month)
    assert set(expected) <= set(got)


def test_real_fred_csvs_give_the_spec_columns_on_a_complete_grid(tmp_path):
    if not CPI_FRED.is_dir():
        pytest.skip("shared/data/cpi_fred is absent")
    frame = _build(CPI_FRED, tmp_path)
    assert list(frame.columns) == SPEC_COLUMNS
    _assert_complete_grid(frame)
    assert frame["date"].iloc[0] == pd.Timestamp("1947-01-01")
    assert frame["date"].iloc[-1] == pd.Timestamp("2023-11-01")
    for column, fred_id in FRED_IDS.items():
        _assert_matches(frame, column, _fred_values(CPI_FRED / f"{fred_id}.csv"))
    first_recreation = frame.loc[frame["cpi_recreation"].notna(), "date"].iloc[0]
    assert first_recreation == pd.Timestamp("1993-01-01")


@pytest.fixture
def bls_folder(tmp_path) -> Path:
    folder = tmp_path / "cpi"
    write_synthetic_cpi(folder, seed=4, start="1990-01", end="1999-12")
    return folder


def test_synthetic_bls_files_round_trip(bls_folder, tmp_path):
    frame = _build(bls_folder, tmp_path / "out")
    assert list(frame.columns) == SPEC_COLUMNS
    _assert_complete_grid(frame)
    assert len(frame) == 120
    for series in cpi.CPI_SERIES:
        path = bls_folder / f"{series.bls_file}.txt"
        _assert_matches(frame, series.column, _bls_values(path, series.series_id))
    # the files also hold NSA, annual (M13) and half-year rows the reader must skip
    text = (bls_folder / "cu.data.1.AllItems.txt").read_text()
    assert "CUUR0000SA0" in text and "\tM13\t" in text and "\tS01\t" in text
    assert frame.loc[frame["cpi_recreation"].notna(), "date"].iloc[0] == pd.Timestamp("1993-01-01")
    dec97 = frame.loc[frame["date"] == "1997-12-01", "cpi_recreation"].iloc[0]
    assert dec97 == pytest.approx(100.0, abs=1e-3)


def test_fred_csv_and_bls_file_of_a_series_agree(bls_folder, tmp_path):
    before = cpi.read_cpi_groups(bls_folder)[0]
    series = cpi.CPI_SERIES[3]  # apparel
    bls_file = bls_folder / f"{series.bls_file}.txt"
    values = _bls_values(bls_file, series.series_id)
    bls_file.unlink()
    lines = ["observation_date," + series.fred_id]
    for month, value in sorted(values.items()):
        lines.append(f"{month}-01," + ("." if month == "1995-06" else f"{value:.3f}"))
    (bls_folder / f"{series.fred_id}.csv").write_text("\n".join(lines) + "\n")
    after, inputs = cpi.read_cpi_groups(bls_folder)
    assert str(bls_folder / f"{series.fred_id}.csv") in inputs
    june = after["date"] == "1995-06-01"
    assert math.isnan(after.loc[june, series.column].iloc[0])
    pd.testing.assert_frame_equal(after[~june], before[~june])


def test_missing_series_file_names_both_sources(bls_folder):
    (bls_folder / "cu.data.15.USMedical.txt").unlink()
    with pytest.raises(
        DataError, match=r"cpi_medical_care.*cu\.data\.15\.USMedical\.txt.*CPIMEDSL"
    ):
        cpi.read_cpi_groups(bls_folder)


def test_bls_file_without_the_series_names_it(bls_folder):
    path = bls_folder / "cu.data.12.USHousing.txt"
    lines = [line for line in path.read_text().splitlines(True) if "CUSR0000SAH" not in line]
    path.write_text("".join(lines))
    with pytest.raises(DataError, match=r"USHousing\.txt: series CUSR0000SAH not found"):
        cpi.read_cpi_groups(bls_folder)


def test_repeated_month_and_junk_value_are_errors(bls_folder):
    path = bls_folder / "cu.data.13.USApparel.txt"
    lines = path.read_text().splitlines(True)
    path.write_text("".join(lines + [lines[1]]))
    with pytest.raises(DataError, match=r"USApparel\.txt: month 1990-01 of CUSR0000SAA repeats"):
        cpi.read_cpi_groups(bls_folder)
    path.write_text("".join(lines[:1] + [lines[1].replace(".", "x", 1)] + lines[2:]))
    with pytest.raises(DataError, match=r"USApparel\.txt: non-numeric value"):
        cpi.read_cpi_groups(bls_folder)


def test_unset_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="raw.cpi is not set"):
        cpi.build(SurveyConfig(name="cpi", raw={}), tmp_path, tmp_path)
    with pytest.raises(DataError, match=r"CPI folder not found.*download\.bls\.gov"):
        cpi.build(SurveyConfig(name="cpi", raw={"cpi": "absent"}), tmp_path, tmp_path)
